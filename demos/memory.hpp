// memory.hpp — `flashdemo memory`: the memory and IO table, formula and counted (demo 4).
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_memory(CLI::App& app);
}
