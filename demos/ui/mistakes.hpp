// mistakes.hpp — the lab's catalogue of classic mistakes: names, what each does, why it drifts.
#pragma once

#include <string>
#include <vector>

#include "flashdemo/variant.hpp"

namespace fd::ui {

struct MistakeInfo {
  Mistake mistake;
  const char* name;     // the --break value
  const char* summary;  // one line
  const char* why;      // a few lines: why it breaks, and when it does not show
  bool backward_only;
};

const std::vector<MistakeInfo>& mistakes();
const MistakeInfo& info(Mistake mistake);

}  // namespace fd::ui
