// backward.hpp — `flashdemo backward`: FlashAttention-2 backward with recomputation (demo 3).
#pragma once

#include <CLI/CLI.hpp>

#include "attention_cli.hpp"

namespace fd::demos {
void setup_backward(CLI::App& app);
void run_backward(AttentionOptions& o);
}  // namespace fd::demos
