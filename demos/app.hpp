// app.hpp — the whole command line as a function: parses argv, runs the subcommand, prints, and
// returns the exit code (README, "Exit codes"). Errors end as one line on stderr; nothing throws
// out of it.
#pragma once

namespace fd::demos {

int run(int argc, char** argv);

}  // namespace fd::demos
