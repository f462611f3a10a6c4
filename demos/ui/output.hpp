// output.hpp — where a subcommand's text goes, and how it looks.
//
//   say(...)     narration and traces: hidden by --quiet and by --json
//   result(...)  the numbers a run exists for: hidden only by --json (which prints JSON Lines)
//   out()        where both go: held in memory until the run has ended well, then written by
//                flush_stdout() (a failing run prints nothing but its error line, and an output
//                file that cannot be written leaves no report behind); live for the walkthrough,
//                which talks to a person
//   error(...)   the one error line on stderr: never throws, whatever stderr is (closed, full, a
//                reader gone: the line is dropped, the exit code stays), control characters in
//                it escaped so it stays one line
//   paint(...)   colour through fmt, on only when stdout is a terminal, NO_COLOR is unset or
//                empty, TERM is not "dumb", and --color is not "never" (--color always forces it).
//                Under Open MPI's mpirun (OMPI_COMM_WORLD_RANK set) a rank's stdout is a
//                pseudo-terminal whatever mpirun's own is, so there "a terminal" means mpirun's
//                standard output, where the ranks' output really goes: colour when it is a
//                terminal, none when it is redirected or mpirun is not this process's ancestor
//                (a rank started by a daemon on another node)
#pragma once

#include <fmt/color.h>
#include <fmt/format.h>

#include <ostream>
#include <string>

#include "ui/i18n.hpp"

namespace fd::ui {

enum class ColorMode { auto_, always, never };

struct Settings {
  bool color = false;
  bool quiet = false;
  bool json = false;
  bool paged = false;  // on a terminal, output taller than it is shown a page at a time (pager.hpp)
};

Settings& settings();

// Decides colour from the mode and the environment (see above).
bool color_wanted(ColorMode mode);

enum class Paint { current, dim, changed, good, bad, heading, emphasis };
std::string paint(const std::string& text, Paint style);

// Standard output: the held buffer, or std::cout once set_live(true).
std::ostream& out();
void set_live(bool live);
// Starts a run with an empty buffer (and not live).
void reset_stdout();
// Writes what the buffer holds to standard output; the reason it could not, in the user's words
// ("" when it could, "closed pipe" when the reader has gone, which ends quietly).
std::string flush_stdout();
// The file descriptor flush_stdout writes to (1; the command-line fuzzer captures it elsewhere).
void set_stdout_fd(int fd);
bool stdout_is_fd1();
// What the buffer holds; take_held() also empties it (the pager writes it itself).
std::string held_text();
std::string take_held();

template <class... A>
void say(Msg m, A&&... args) {
  if (!settings().quiet && !settings().json) out() << tr(m, std::forward<A>(args)...);
}

// Writes "flashdemo: error: MESSAGE" (in the run's language) to stderr, or drops it when stderr
// cannot take it; never throws.
void error(const std::string& message) noexcept;
// `text` with every control character written as an escape (\n, \x1b, ...): one line.
std::string one_line(const std::string& text);

// Pre-formatted narration (a table row built from pieces).
void say_raw(const std::string& line);

template <class... A>
void result(Msg m, A&&... args) {
  if (!settings().json) out() << tr(m, std::forward<A>(args)...);
}
void result_raw(const std::string& line);

}  // namespace fd::ui
