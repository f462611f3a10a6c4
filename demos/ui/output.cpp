// output.cpp — text destinations and colour (see output.hpp).
#include "ui/output.hpp"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace fd::ui {

Settings& settings() {
  static Settings s;
  return s;
}

bool color_wanted(ColorMode mode) {
  if (mode == ColorMode::always) return true;
  if (mode == ColorMode::never) return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  const char* term = std::getenv("TERM");
  if (term && std::strcmp(term, "dumb") == 0) return false;
  return isatty(STDOUT_FILENO) == 1;
}

std::string paint(const std::string& text, Paint style) {
  if (!settings().color) return text;
  switch (style) {
    case Paint::current:
      return fmt::format(fmt::fg(fmt::terminal_color::black) |
                             fmt::bg(fmt::terminal_color::yellow) | fmt::emphasis::bold,
                         "{}", text);
    case Paint::dim:
      return fmt::format(fmt::fg(fmt::terminal_color::bright_black), "{}", text);
    case Paint::changed:
      return fmt::format(fmt::fg(fmt::terminal_color::cyan) | fmt::emphasis::bold, "{}", text);
    case Paint::good:
      return fmt::format(fmt::fg(fmt::terminal_color::green), "{}", text);
    case Paint::bad:
      return fmt::format(fmt::fg(fmt::terminal_color::red) | fmt::emphasis::bold, "{}", text);
    case Paint::heading:
      return fmt::format(fmt::emphasis::bold, "{}", text);
    case Paint::emphasis:
      return fmt::format(fmt::fg(fmt::terminal_color::blue), "{}", text);
  }
  return text;
}

void say_raw(const std::string& line) {
  if (!settings().quiet && !settings().json) fmt::print("{}", line);
}

void result_raw(const std::string& line) {
  if (!settings().json) fmt::print("{}", line);
}

}  // namespace fd::ui
