// output.hpp — where a subcommand's text goes, and how it looks.
//
//   say(...)     narration and traces: hidden by --quiet and by --json
//   result(...)  the numbers a run exists for: hidden only by --json (which prints JSON Lines)
//   paint(...)   colour through fmt, on only when stdout is a terminal, NO_COLOR is unset or
//                empty, TERM is not "dumb", and --color is not "never" (--color always forces it)
#pragma once

#include <fmt/color.h>
#include <fmt/format.h>

#include <string>

#include "ui/i18n.hpp"

namespace fd::ui {

enum class ColorMode { auto_, always, never };

struct Settings {
  bool color = false;
  bool quiet = false;
  bool json = false;
};

Settings& settings();

// Decides colour from the mode and the environment (see above).
bool color_wanted(ColorMode mode);

enum class Paint { current, dim, changed, good, bad, heading, emphasis };
std::string paint(const std::string& text, Paint style);

template <class... A>
void say(Msg m, A&&... args) {
  if (!settings().quiet && !settings().json) fmt::print("{}", tr(m, std::forward<A>(args)...));
}

// Pre-formatted narration (a table row built from pieces).
void say_raw(const std::string& line);

template <class... A>
void result(Msg m, A&&... args) {
  if (!settings().json) fmt::print("{}", tr(m, std::forward<A>(args)...));
}
void result_raw(const std::string& line);

}  // namespace fd::ui
