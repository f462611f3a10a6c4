// softmax.hpp — `flashdemo softmax`: online softmax of one vector (lecture demo 1).
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_softmax(CLI::App& app);
}
