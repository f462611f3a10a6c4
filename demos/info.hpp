// info.hpp — `flashdemo info`: the build (CUDA, compiler, SIMD, threads) and the GPU found.
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_info(CLI::App& app);
}
