// mistakes.cpp — the lab's catalogue of classic mistakes (see flashdemo/teaching/variant.hpp); the words
// are in messages/mistakes.inc.
#include "ui/mistakes.hpp"

namespace fd::ui {

const std::vector<MistakeInfo>& mistakes() {
  static const std::vector<MistakeInfo> all = {
      {Mistake::no_max, "no-max", Msg::mistake_no_max, Msg::mistake_no_max_why, false},
      {Mistake::no_rescale, "no-rescale", Msg::mistake_no_rescale, Msg::mistake_no_rescale_why,
       false},
      {Mistake::l_starts_at_1, "l-starts-at-1", Msg::mistake_l1, Msg::mistake_l1_why, false},
      {Mistake::finite_mask, "finite-mask", Msg::mistake_finite_mask, Msg::mistake_finite_mask_why,
       false},
      {Mistake::no_d, "no-d", Msg::mistake_no_d, Msg::mistake_no_d_why, true},
      {Mistake::wrong_align, "wrong-align", Msg::mistake_wrong_align, Msg::mistake_wrong_align_why,
       false},
  };
  return all;
}

const MistakeInfo& info(Mistake mistake) {
  for (const MistakeInfo& m : mistakes())
    if (m.mistake == mistake) return m;
  return mistakes().front();
}

}  // namespace fd::ui
