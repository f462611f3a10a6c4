// mistakes.hpp — the lab's catalogue of classic mistakes: each row of FD_MISTAKES
// (flashdemo/teaching/variant.hpp) with its words from the message catalogue (what it does, why
// it drifts, the hint `check` gives when it names it).
#pragma once

#include <vector>

#include "flashdemo/teaching/variant.hpp"
#include "ui/i18n.hpp"

namespace fd::ui {

struct MistakeInfo {
  Mistake mistake;
  const char* name;  // the --break value
  Msg summary;       // one line
  Msg why;           // a few lines: why it breaks, and when it does not show
  Msg hint;          // check's line when a submitted array matches it
  bool backward_only;
};

const std::vector<MistakeInfo>& mistakes();
const MistakeInfo& info(Mistake mistake);

}  // namespace fd::ui
