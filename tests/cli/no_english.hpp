// no_english.hpp — the check that a message in Chinese holds no English: english_words(text)
// lists the English words left in it, beside the tokens every language shares.
//
// A token is a run of printable ASCII between spaces, non-ASCII text (Chinese, "：", "（") and
// the punctuation ( ) [ ] { } , ; : ! ? " `. These pass whole, as names rather than words:
//   'quoted'                    a value quoted from the user's input ('xx', 'descr', '<i4')
//   --q, -x                     options
//   a/b.npy, x.npy, np.save     paths, file names, code (a '/', '.', '_', '=', '$', '\', '<',
//   no-d, top-left, Ctrl-C      '>', '^', '*', '+', '|', '#', '~', '@', '%', '&' or '-' inside:
//                               option values and key names are hyphenated, prose here is not)
//   0, 1e-6, fp32, float64      numbers, and names with a digit (dtypes: bf16, <f8, float16)
// What is left is a word of letters. It passes when it is a single letter (n, d, Q), one of
// kShared (the program's name, the arrays, nan and inf, units of size), or one of `allowed` (the
// caller's: the choices of an option, a technical term the Chinese keeps). Every other word is
// English, and returned.
#pragma once

#include <set>
#include <string>
#include <vector>

namespace cli {

// The words a Chinese message may hold in any context.
inline const std::set<std::string> kShared = {
    "flashdemo",  // the program, in every error line
    "Q",         "K",   "V",  "O",  "L",   "dO",  "dQ",  "dK",  "dV",  // the arrays
    "nan",       "inf",                                                // values
    "KB",        "MB",  "GB", "TB", "KiB", "MiB", "GiB", "TiB",        // units of size
};

inline std::vector<std::string> english_words(const std::string& text,
                                              const std::set<std::string>& allowed = {}) {
  const std::string apart = "()[]{},;:!?\"`", code = "/._=$\\<>^*+|#~@%&-";
  std::vector<std::string> found;
  auto judge = [&](std::string token) {
    if (token.size() >= 2 && token.front() == '\'' && token.back() == '\'') return;  // quoted
    while (!token.empty() && token.front() == '\'') token.erase(0, 1);
    while (!token.empty() && token.back() == '\'') token.pop_back();
    if (token.empty() || token.find_first_of(code) != std::string::npos) return;  // '-': options
    if (token.find_first_of("0123456789") != std::string::npos) return;
    if (token.size() > 1 && !kShared.count(token) && !allowed.count(token)) found.push_back(token);
  };
  std::string token;
  for (const char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u > 0x20 && u < 0x7f && apart.find(c) == std::string::npos) {
      token += c;
      continue;
    }
    judge(token);
    token.clear();
  }
  judge(token);
  return found;
}

}  // namespace cli
