// pager.hpp — output longer than the terminal, shown one screen at a time: the walkthrough's
// steps, and the held output of a subcommand that asks for pages (Settings::paged: memory,
// backward), as the walkthrough pauses: one key, no Enter (ui/keys.hpp).
//
//   can_pause()       stdin and stdout are terminals (stdout the process's own, fd 1), and not
//                     --json: a person reads it and can press a key
//   wait_for_key(..)  the hint at the pause, the full list of keys after a key it does not know;
//                     the hint line is cleared before it returns; a failed write to stdout quits
//   leave_pause()     after quitting at a pause: a newline, so the shell's prompt starts a line
//   split_pages(..)   text cut into pages of at most `rows` terminal rows of `cols` columns (a
//                     line wider than cols takes several rows; colour codes take none): between
//                     sections (a line at column 0 after a blank line) where they fit, else
//                     between paragraphs (at blank lines), else between lines
//   page_held()       on a terminal, held output taller than the screen minus the hint's row is
//                     shown a page at a time, each on a cleared screen, the hint below it; Enter,
//                     space, n or the right arrow go on, b or the left arrow go back, q, Esc or
//                     Ctrl-D quit, Ctrl-C quits with exit code 130; the last page ends it with no
//                     pause. `shown` is called once the first page is written (the run's files
//                     are settled then: a signal at a pause leaves nothing half done). Piped or
//                     redirected output, or output that fits, is left for flush_stdout, whole.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ui/i18n.hpp"
#include "ui/keys.hpp"

namespace fd::ui {

bool can_pause();

Key wait_for_key(const std::string& hint, const std::string& keys);

void leave_pause();

std::vector<std::string> split_pages(const std::string& text, std::size_t rows, std::size_t cols);

enum class Paged { no, shown, quit, interrupted };

// What happened: no (nothing paged: flush_stdout writes it all), shown (to the last page), quit,
// interrupted (Ctrl-C: exit code 130).
Paged page_held(const std::function<void()>& shown);

}  // namespace fd::ui
