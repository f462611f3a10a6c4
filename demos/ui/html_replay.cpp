// html_replay.cpp — fills the replay page's placeholders: title, language, events and the page's
// words (see html_replay.hpp).
#include "ui/html_replay.hpp"

#include "flashdemo/io/file_io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace fd::ui {
namespace {

constexpr std::string_view kEventsMark = "/*FLASHDEMO_EVENTS*/[]";
constexpr std::string_view kTextMark = "/*FLASHDEMO_TEXT*/{}";
constexpr std::string_view kTitleMark = "FLASHDEMO_TITLE";
constexpr std::string_view kLangMark = "FLASHDEMO_LANG";
constexpr std::string_view kPagePrefix = "html_";

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

// JSON as a JS literal that is also valid JSON. "<" only occurs inside strings, so "</" -> "<\/"
// and "<!--" -> "\u003c!--" keep the HTML parser inside the script element.
std::string script_literal(const std::string& json) {
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

std::string script_literal(const nlohmann::json& value) {
  return script_literal(value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// JSON texts as the text of one JSON array.
std::string json_array(const std::vector<std::string>& items) {
  std::size_t size = 2;
  for (const std::string& item : items) size += item.size() + 1;
  std::string out = "[";
  out.reserve(size);
  for (const std::string& item : items) {
    if (out.size() > 1) out += ',';
    out += item;
  }
  return out + "]";
}

// The page's words: every html_ message, keyed without the prefix, in `lang`.
nlohmann::json page_text(Lang lang) {
  nlohmann::json words = nlohmann::json::object();
  for (int k = 0; k < int(Msg::count_); ++k) {
    const std::string_view key = key_name(Msg(k));
    if (key.substr(0, kPagePrefix.size()) == kPagePrefix)
      words[std::string(key.substr(kPagePrefix.size()))] = text(Msg(k), lang);
  }
  return words;
}

}  // namespace

std::string html_replay(const std::string& title, const std::vector<std::string>& events,
                        Lang lang) {
  // One pass over the template, so that no substitution can rewrite another's text.
  const std::string_view page(kReplayTemplate);
  const std::pair<std::string_view, std::string> marks[] = {
      {kEventsMark, script_literal(json_array(events))},
      {kTextMark, script_literal(page_text(lang))},
      {kTitleMark, html_escape(title)},
      {kLangMark, lang == Lang::zh ? "zh-CN" : "en"}};
  std::string out;
  out.reserve(page.size() + 64 * events.size() + 16384);
  std::size_t k = 0;
  while (k < page.size()) {
    bool replaced = false;
    for (const auto& [mark, value] : marks) {
      if (page.compare(k, mark.size(), mark) != 0) continue;
      out += value;
      k += mark.size();
      replaced = true;
      break;
    }
    if (!replaced) out += page[k++];
  }
  return out;
}

}  // namespace fd::ui
