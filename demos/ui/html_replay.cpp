// html_replay.cpp — fills the replay page's two placeholders and writes it (see html_replay.hpp).
#include "ui/html_replay.hpp"

#include "flashdemo/file_io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>

namespace fd::ui {
namespace {

constexpr std::string_view kEventsMark = "/*FLASHDEMO_EVENTS*/[]";
constexpr std::string_view kTitleMark = "FLASHDEMO_TITLE";

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// The events as a JS array literal that is also valid JSON. "<" only occurs inside strings, so
// "</" -> "<\/" and "<!--" -> "\u003c!--" keep the HTML parser inside the script element.
std::string events_literal(const std::vector<nlohmann::json>& events) {
  const nlohmann::json array(events);
  const std::string json = array.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out;
  out.reserve(json.size() + json.size() / 64);
  for (std::size_t k = 0; k < json.size(); ++k) {
    if (json[k] == '<' && json.compare(k, 2, "</") == 0) {
      out += "<\\/";
      ++k;
    } else if (json[k] == '<' && json.compare(k, 4, "<!--") == 0) {
      out += "\\u003c";
    } else {
      out += json[k];
    }
  }
  return out;
}

}  // namespace

std::string html_replay(const std::string& title, const std::vector<nlohmann::json>& events) {
  // One pass over the template, so that neither substitution can rewrite the other's text.
  const std::string_view page(kReplayTemplate);
  const std::string safe_title = html_escape(title);
  std::string out;
  out.reserve(page.size() + 64 * events.size());
  std::size_t k = 0;
  while (k < page.size()) {
    if (page.substr(k, kEventsMark.size()) == kEventsMark) {
      out += events_literal(events);
      k += kEventsMark.size();
    } else if (page.substr(k, kTitleMark.size()) == kTitleMark) {
      out += safe_title;
      k += kTitleMark.size();
    } else {
      out += page[k++];
    }
  }
  return out;
}

}  // namespace fd::ui
