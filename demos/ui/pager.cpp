// pager.cpp — pauses between screens on a terminal, and pages of held output (see pager.hpp).
#include "ui/pager.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>

#include "ui/format.hpp"
#include "ui/output.hpp"

namespace fd::ui {
namespace {

// The hint at the pause, in place of whatever the cursor's line holds.
void show_hint(const std::string& hint) {
  out() << "\r\033[K" << hint;
  out().flush();
}

// `line` without its colour codes (ESC [ ... final byte), as wide as the terminal draws it.
std::size_t drawn_width(const std::string& line) {
  std::string plain;
  for (std::size_t k = 0; k < line.size(); ++k) {
    if (line[k] == '\033' && k + 1 < line.size() && line[k + 1] == '[') {
      k += 2;
      while (k < line.size() && (line[k] < 0x40 || line[k] > 0x7e)) ++k;
      continue;
    }
    plain += line[k];
  }
  return display_width(plain);
}

bool blank(const std::string& line) {
  return drawn_width(line) == 0;
}

// A section's first line: at column 0 after a blank line (a heading, as ui::section prints it).
bool heading_at(const std::vector<std::string>& lines, std::size_t k) {
  if (k == 0 || !blank(lines[k - 1]) || blank(lines[k])) return false;
  const std::string& l = lines[k];
  std::size_t c = 0;
  while (c + 1 < l.size() && l[c] == '\033' && l[c + 1] == '[') {  // colour codes first
    c += 2;
    while (c < l.size() && (l[c] < 0x40 || l[c] > 0x7e)) ++c;
    ++c;
  }
  return c < l.size() && l[c] != ' ';
}

}  // namespace

bool can_pause() {
  return stdout_is_fd1() && isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1 &&
         !settings().json;
}

Key wait_for_key(const std::string& hint, const std::string& keys) {
  show_hint(hint);
  for (;;) {
    if (!out()) return Key::quit;
    const Key key = read_key(STDIN_FILENO);
    if (key != Key::other) {
      out() << "\r\033[K";
      return key;
    }
    show_hint(keys);
  }
}

void leave_pause() {
  out() << "\n";
  out().flush();
}

std::vector<std::string> split_pages(const std::string& text, std::size_t rows, std::size_t cols) {
  cols = std::max<std::size_t>(cols, 1);
  std::vector<std::string> lines;
  for (std::size_t a = 0; a < text.size();) {
    const std::size_t b = std::min(text.find('\n', a), text.size());
    lines.push_back(text.substr(a, b - a));
    a = b + 1;
  }
  const std::size_t n = lines.size();
  std::vector<std::size_t> height(n);  // rows each line takes
  std::vector<int> rank(n + 1, 0);     // a page may end before line k: 2 section, 1 paragraph
  for (std::size_t k = 0; k < n; ++k) {
    height[k] = std::max<std::size_t>(1, (drawn_width(lines[k]) + cols - 1) / cols);
    if (heading_at(lines, k))
      rank[k - 1] = 2;  // the blank line before it goes with the section it opens
    else if (blank(lines[k]))
      rank[k] = 1;  // a paragraph: the next page starts at its blank line
  }
  rank[n] = 3;
  std::vector<std::string> pages;
  for (std::size_t start = 0; start < n;) {
    // [start, end): the lines that fit, one at least.
    std::size_t end = start + 1, used = height[start];
    while (end < n && used + height[end] <= rows) used += height[end++];
    // Where to end: the best-ranked place in (start, end] that leaves the page at least half
    // full, the later of equals (end itself always counts).
    std::size_t best = end, sum = 0;
    int best_rank = -1;
    for (std::size_t k = start + 1; k <= end; ++k) {
      sum += height[k - 1];  // the rows of [start, k)
      if (2 * sum < rows && k != end) continue;
      if (rank[k] >= best_rank) best = k, best_rank = rank[k];
    }
    std::string page;
    for (std::size_t k = start; k < best; ++k) page += lines[k] + "\n";
    pages.push_back(page);
    start = best;
  }
  return pages;
}

Paged page_held(const std::function<void()>& shown) {
  if (!settings().paged || !can_pause()) return Paged::no;
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_row < 8 || ws.ws_col < 20)
    return Paged::no;
  const std::vector<std::string> pages = split_pages(held_text(), ws.ws_row - 1u, ws.ws_col);
  if (pages.size() < 2) return Paged::no;
  RawKeys keys(STDIN_FILENO);  // the terminal reads key by key until this goes
  if (!keys.active()) return Paged::no;
  take_held();
  set_live(true);
  bool first = true;
  for (std::size_t k = 0;;) {
    out() << "\033[2J\033[H" << pages[k];
    out().flush();
    if (!out()) return Paged::shown;  // flush_stdout reports it
    if (first) shown(), first = false;
    if (k + 1 == pages.size()) return Paged::shown;
    const Key key = wait_for_key(tr(Msg::page_prompt, k + 1, pages.size()), text(Msg::walk_keys));
    if (key == Key::quit || key == Key::interrupt) {
      leave_pause();
      return key == Key::quit ? Paged::quit : Paged::interrupted;
    }
    k = key == Key::back ? (k > 0 ? k - 1 : 0) : k + 1;
  }
}

}  // namespace fd::ui
