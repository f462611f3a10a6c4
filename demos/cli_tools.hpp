// cli_tools.hpp — `flashdemo completion bash|zsh` and `flashdemo manpage`: both are
// generated from the command line's own definition (subcommands, options, choices, help), so
// they can never disagree with it.
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_completion(CLI::App& app);
void setup_manpage(CLI::App& app);
}  // namespace fd::demos
