// bench.hpp — `flashdemo bench`: time one case of one implementation, verified first.
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_bench(CLI::App& app);
}
