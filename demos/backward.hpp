// backward.hpp — `flashdemo backward`: FlashAttention-2 backward with recomputation (demo 3).
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_backward(CLI::App& app);
}
