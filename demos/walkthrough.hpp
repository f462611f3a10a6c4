// walkthrough.hpp — `flashdemo walkthrough`: the lecture in one command, for a projector.
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_walkthrough(CLI::App& app);
}
