// mistakes.hpp — the lab's catalogue of classic mistakes: names, what each does, why it drifts.
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
  bool backward_only;
};

const std::vector<MistakeInfo>& mistakes();
const MistakeInfo& info(Mistake mistake);

}  // namespace fd::ui
