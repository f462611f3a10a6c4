// test_i18n.cpp — the message catalog is complete in both languages and the translations keep
// every {} field of the English, in the same order.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ui/i18n.hpp"

using namespace fd::ui;

namespace {

// The replacement fields of a format string, "{}" and "{:.3f}" alike, in order.
std::vector<std::string> fields(const std::string& s) {
  std::vector<std::string> out;
  for (std::size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '{' && k + 1 < s.size() && s[k + 1] == '{') {
      ++k;
      continue;
    }
    if (s[k] != '{') continue;
    const std::size_t end = s.find('}', k);
    out.push_back(s.substr(k, end - k + 1));
    k = end;
  }
  return out;
}

}  // namespace

TEST_CASE("every message exists in English and Chinese with the same fields") {
  int missing = 0;
  for (int k = 0; k < int(Msg::count_); ++k) {
    const Msg m = Msg(k);
    const std::string en = text(m, Lang::en), zh = text(m, Lang::zh);
    INFO("key " << std::string(key_name(m)));
    CHECK_FALSE(en.empty());
    if (zh == en && !en.empty() &&
        en.find_first_of("abcdefghijklmnopqrstuvwxyz") != std::string::npos) {
      // Untranslated: text(m, zh) falls back to English only when the Chinese is missing.
      ++missing;
      FAIL_CHECK("no Chinese text for " << std::string(key_name(m)));
    }
    CHECK(fields(en) == fields(zh));
    CHECK(fmt::formatted_size(fmt::runtime("{}"), en) > 0);
  }
  CHECK(missing == 0);
}

TEST_CASE("the language comes from --lang, then LC_ALL / LC_MESSAGES / LANG") {
  char prog[] = "flashdemo", lang[] = "--lang", zh[] = "zh", en_eq[] = "--lang=en";
  char* a1[] = {prog, lang, zh};
  CHECK(detect_lang(3, a1) == Lang::zh);
  char* a2[] = {prog, en_eq};
  CHECK(detect_lang(2, a2) == Lang::en);
}
