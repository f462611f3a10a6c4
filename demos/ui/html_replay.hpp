// html_replay.hpp — the --html page: one self-contained HTML file (inline CSS and JS, nothing
// fetched) that replays a run's recorded events: the tile grid, the current tile's Q, K and O
// blocks, and the state each step changed. The page is demos/ui/replay.html; CMake embeds it as
// kReplayTemplate. The events are the JSON objects of json_trace.hpp, in order, "problem" first.
// Its words are the html_ messages of demos/ui/messages/html.inc, in the run's language.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "ui/i18n.hpp"

namespace fd::ui {

// The text of demos/ui/replay.html (defined in a file CMake generates from it).
extern const char kReplayTemplate[];

// The template with the events (each one's JSON text) as a JSON array (each "</" written "<\/"
// so that no string can close the script), the page's words in `lang`, and the title,
// HTML-escaped. Pure: no files.
std::string html_replay(const std::string& title, const std::vector<std::string>& events,
                        Lang lang);

}  // namespace fd::ui
