// i18n.hpp — one message catalog for every human-facing string, in English and Chinese.
//
// Each message is one line of an X-macro list in demos/ui/messages/*.inc:
//   FD_MSG(key, "English text with {} fields", "中文，字段 {} 相同")
// Both languages must be present with the same {} fields (tests/cli/test_i18n.cpp checks).
// Text goes through fmt, whose widths count a CJK character as two columns, so tables stay
// aligned in Chinese.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

namespace fd::ui {

enum class Lang { en, zh };

enum class Msg {
#define FD_MSG(key, en, zh) key,
#include "ui/messages/all.inc"
#undef FD_MSG
  count_
};

// The language: --lang when given, else LC_ALL, LC_MESSAGES or LANG starting with "zh", else en.
Lang detect_lang(int argc, char** argv);
void set_lang(Lang lang);
Lang lang();

const char* text(Msg m);             // in the current language
const char* text(Msg m, Lang lang);  // in a given one
const char* key_name(Msg m);         // "forward_title", for tests

// A list as the current language says it: "64 and 128", "64, 128 and 256"; "64 和 128".
std::string spoken_list(const std::vector<int>& items);

template <class... A>
std::string tr(Msg m, A&&... args) {
  return fmt::format(fmt::runtime(text(m)), std::forward<A>(args)...);
}

}  // namespace fd::ui
