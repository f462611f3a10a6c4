// forward.hpp — `flashdemo forward`: exact tiled attention with online softmax (lecture demo 2).
#pragma once

#include <CLI/CLI.hpp>

#include "attention_cli.hpp"

namespace fd::demos {
void setup_forward(CLI::App& app);
void run_forward(AttentionOptions& o);
}  // namespace fd::demos
