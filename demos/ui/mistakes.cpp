// mistakes.cpp — the lab's catalogue of classic mistakes, one entry per row of FD_MISTAKES
// (see flashdemo/teaching/variant.hpp); the words are in messages/mistakes.inc.
#include "ui/mistakes.hpp"

namespace fd::ui {

const std::vector<MistakeInfo>& mistakes() {
  static const std::vector<MistakeInfo> all = {
#define FD_MISTAKE_INFO(id, name, backward_only, ...) \
  {Mistake::id, name, Msg::mistake_##id, Msg::mistake_##id##_why, Msg::hint_##id, backward_only},
      FD_MISTAKES(FD_MISTAKE_INFO)
#undef FD_MISTAKE_INFO
  };
  return all;
}

const MistakeInfo& info(Mistake mistake) {
  for (const MistakeInfo& m : mistakes())
    if (m.mistake == mistake) return m;
  return mistakes().front();
}

}  // namespace fd::ui
