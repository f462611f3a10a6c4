// test_i18n.cpp — the message catalog is complete in both languages, the translations keep
// every {} field of the English, in the same order, and no Chinese message holds an English word
// (beside the terms listed below); the errno values the catalog words, in the C library's English.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "no_english.hpp"
#include "ui/file_errors.hpp"
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

namespace {

// The words the Chinese catalogue keeps as they are: names a user types or reads in code, not
// prose. A word of English in a Chinese message that is none of these fails the test below.
// clang-format off
const std::set<std::string> kCatalogTerms = {
    // subcommands, and values of options (--impl, --trace, --color, --pass, --lang, completion)
    "backward", "bench", "check", "completion", "decode", "forward", "info", "ladder", "manpage",
    "memory", "ring", "softmax", "walkthrough", "all", "auto", "always", "never", "none",
    "summary", "tiles", "rows", "cpu", "cuda", "fast", "teaching", "tiled", "reference", "gemm",
    "simt", "tc", "mma", "hopper", "fwd", "bwd", "en", "zh", "bash", "zsh", "true", "false",
    // values of a JSON field (decode's feed)
    "ahead", "bulk",
    // placeholders of --help and the keys of the walkthrough
    "FILE", "NAME", "ROW", "SCALE", "LANG", "Home", "End", "Enter", "Esc",
    // symbols and functions of the formulas (as the lecture writes them)
    "Br", "Bc", "Tc", "Smax", "Kj", "dP", "dS", "alpha", "exp", "log", "ln", "max", "min", "sum",
    "rowsum", "sqrt", "ceil", "floor", "mod", "eff", "merge", "logsumexp", "scale", "loss",
    // names of hardware, software, units and formats
    "CPU", "GPU", "CUDA", "HBM", "SRAM", "SM", "SIMD", "FMA", "TMA", "GEMM", "GFLOP", "FLOPs", "NaN",
    "JSON", "Lines", "HTML", "MPI", "NCCL", "NVIDIA", "OpenMP", "PyTorch", "Eigen", "CMake",
    "cmake", "cuBLAS", "cudaMemcpy", "nvcc", "wgmma", "warp", "mpirun", "ulimit", "man", "roff",
    "shell", "source", "fpath", "ms", "KV", "XL",
    // terms of the field, kept in Chinese texts: the method's names, a C type, an MPI rank,
    // the lecture's causal run, the dimensions of a batch
    "FlashAttention", "Flash", "flash", "Dao", "softmax", "transformer", "token", "rank",
    "zigzag", "attention", "long", "double", "causal", "batch", "heads",
    // a section title of docs/reliability.md, quoted as the document spells it
    "Determinism",
};
// clang-format on

}  // namespace

TEST_CASE("no Chinese message holds an English word: only names, symbols and the terms above") {
  for (int k = 0; k < int(Msg::count_); ++k) {
    const Msg m = Msg(k);
    const std::vector<std::string> english = cli::english_words(text(m, Lang::zh), kCatalogTerms);
    INFO("key " << std::string(key_name(m)) << ": " << text(m, Lang::zh));
    for (const std::string& w : english) FAIL_CHECK("English word '" << w << "'");
  }
}

TEST_CASE("the helper finds English words, and lets names, options, paths and numbers pass") {
  CHECK(cli::english_words("flashdemo：错误：o.npy：无法打开：文件或目录不存在").empty());
  CHECK(cli::english_words("--save-o /tmp/a b/o.npy：是一个目录，float64 '<f8' bf16 1e-6 dQ")
            .empty());
  CHECK(cli::english_words("--trace：'xx' 不是可选值 none、rows 之一", {"none", "rows"}).empty());
  CHECK(cli::english_words("flashdemo：错误：o.npy: cannot open: No such file or directory") ==
        std::vector<std::string>{"cannot", "open", "No", "such", "file", "or", "directory"});
  CHECK(cli::english_words("--n 需要一个值 (batch, heads)") ==
        std::vector<std::string>{"batch", "heads"});
}

// The errno values the catalog words (FD_ERRNO_WORDED, ui/file_errors.hpp), each an entry
// errno_<NAME> of files.inc: ENOENT, EACCES, EPERM, EISDIR, ENOTDIR, ENOSPC, EROFS, EEXIST,
// EFBIG, EDQUOT, EIO, EMFILE, ENFILE, ENAMETOOLONG, ELOOP, EBADF, EPIPE, EAGAIN, ENOMEM, ETXTBSY,
// EBUSY, ENXIO, ENODEV, EINVAL, EXDEV, EINTR. Any other errno is shown as strerror gives it.
TEST_CASE("the errno values flashdemo words: Chinese of their own, English as the C library's") {
  struct Worded {
    int error;
    Msg message;
    const char* name;
  };
  const Worded worded[] = {
#define FD_ERRNO_ROW(name) {name, Msg::errno_##name, #name},
      FD_ERRNO_WORDED(FD_ERRNO_ROW)
#undef FD_ERRNO_ROW
  };
  CHECK(std::size(worded) == 26);  // the list above, in the comment and the report
  std::set<int> values;
  for (const Worded& w : worded) {
    INFO(w.name);
    CHECK(values.insert(w.error).second);  // no errno twice (EAGAIN is EWOULDBLOCK)
    CHECK(std::string(key_name(w.message)) == std::string("errno_") + w.name);
    CHECK(cli::english_words(text(w.message, Lang::zh)).empty());
#if defined(__GLIBC__)
    CHECK(std::string(text(w.message, Lang::en)) == std::strerror(w.error));
#endif
  }
}
