// ladder.hpp — `flashdemo ladder`: every GPU rung (flashdemo/impl.hpp, kGpuRungs) on one case, one
// table: the idea each rung adds, its time, TFLOP/s, share of the bf16 GEMM ceiling, speed-up.
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_ladder(CLI::App& app);
}
