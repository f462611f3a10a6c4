// i18n.cpp — the message catalog (see i18n.hpp).
#include "ui/i18n.hpp"

#include <cstdlib>
#include <cstring>

namespace fd::ui {
namespace {

struct Entry {
  const char* key;
  const char* en;
  const char* zh;
};

const Entry kCatalog[] = {
#define FD_MSG(key, en, zh) {#key, en, zh},
#include "ui/messages/all.inc"
#undef FD_MSG
};

Lang g_lang = Lang::en;

bool starts_with_zh(const char* s) {
  return s && std::strncmp(s, "zh", 2) == 0;
}

}  // namespace

Lang detect_lang(int argc, char** argv) {
  const char* given = nullptr;  // the last --lang, as the option itself keeps the last value
  for (int k = 1; k < argc; ++k) {
    const char* a = argv[k];
    if (std::strcmp(a, "--lang") == 0 && k + 1 < argc) given = argv[k + 1];
    if (std::strncmp(a, "--lang=", 7) == 0) given = a + 7;
  }
  if (given) return starts_with_zh(given) ? Lang::zh : Lang::en;
  for (const char* var : {"LC_ALL", "LC_MESSAGES", "LANG"}) {
    const char* v = std::getenv(var);
    if (v && *v) return starts_with_zh(v) ? Lang::zh : Lang::en;
  }
  return Lang::en;
}

void set_lang(Lang lang) {
  g_lang = lang;
}
Lang lang() {
  return g_lang;
}

const char* text(Msg m, Lang lang) {
  const Entry& e = kCatalog[int(m)];
  return lang == Lang::zh && *e.zh ? e.zh : e.en;
}

const char* text(Msg m) {
  return text(m, g_lang);
}

const char* key_name(Msg m) {
  return kCatalog[int(m)].key;
}

std::string spoken_list(const std::vector<int>& items) {
  std::string out;
  for (std::size_t k = 0; k < items.size(); ++k) {
    if (k > 0) out += text(k + 1 == items.size() ? Msg::list_and : Msg::list_comma);
    out += std::to_string(items[k]);
  }
  return out;
}

}  // namespace fd::ui
