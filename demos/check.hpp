// check.hpp — `flashdemo check`: grade someone's O, L, dQ, dK, dV against the fp64 reference.
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_check(CLI::App& app);
}
