// fuzz_cli.cpp — libFuzzer target for the command line: the input is argv, one argument per
// line (at most 16 of at most 64 bytes), run in-process through fd::demos::run, the code behind
// the flashdemo executable. Besides crashes and sanitizer reports, every run must keep the
// promises of README's "Exit codes":
//   - the exit code is a documented one, and not 70 (an internal error is a bug);
//   - a failing run prints exactly one line on stderr, "flashdemo: error: ..." (or its Chinese
//     prefix), and nothing on stdout;
//   - every file the scratch directory held before the run is byte for byte intact, unless the
//     run succeeded and named it on its command line (an output it was asked for), and no
//     temporary is left behind.
// Skipped inputs, so that a run stays quick and inside the scratch directory: an absolute path or
// one through '..' (the fuzzer runs as whatever user CI is), a number of four or more digits or
// in hex, binary or octal notation, a command line asking for much work (small_enough below;
// tests/cli/test_usage.cpp covers the huge and negative sizes), and `bench` (it times).
// Build: cmake -DFLASHDEMO_FUZZ=ON with clang; run it in a scratch directory holding a few .npy
// files (.ci/run copies tests/fuzz/files): build/fuzz/fuzz_cli tests/fuzz/corpus/cli
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "app.hpp"
#include "ui/output.hpp"

namespace {

bool acceptable(const std::string& arg) {
  if (arg.find("..") != std::string::npos || arg.find("/") == 0 ||
      arg.find("=/") != std::string::npos || arg.find("~") != std::string::npos || arg == "bench")
    return false;
  int digits = 0;
  for (std::size_t k = 0; k < arg.size(); ++k) {
    const char c = arg[k];
    digits = std::isdigit(static_cast<unsigned char>(c)) ? digits + 1 : 0;
    if (digits >= 4) return false;
    if (c == '0' && k + 1 < arg.size() && std::strchr("xXbBoO", arg[k + 1])) return false;
  }
  return true;
}

// The most work a run is given, so that every run is quick under the fuzz tree's sanitizers (a
// size the tool accepts would be slow, not wrong: `ring --n 400 --m 400 --d 64 --pass bwd` took
// 14 s, `backward --n 999 --d 2` 17 s, a default-sized `decode` 27 s; .ci/run's timeout, which
// is there to catch a hang, is 30 s, and what is left runs in under 10 s):
//   - no number above kLargest (n = 999 gives the tile demos thousands of traced tiles);
//   - the numbers multiply to at most kMostWork (n m d, times b h or ranks where given; a run of
//     digits counts as at least 1): 2^20 is n = m = 128, d = 64;
//   - ring and decode only with the size they default large given (--n 1024 for ring, --m 65536
//     for decode).
constexpr double kLargest = 256, kMostWork = 1 << 20;

bool small_enough(const std::vector<std::string>& args) {
  double product = 1;
  for (const std::string& arg : args)
    for (std::size_t k = 0; k < arg.size();) {
      std::size_t end = k;
      while (end < arg.size() && std::isdigit(static_cast<unsigned char>(arg[end]))) ++end;
      const double number = end > k ? std::stod(arg.substr(k, end - k)) : 1;
      if (number > kLargest) return false;
      product *= std::max(1.0, number);
      k = std::max(end, k + 1);
    }
  const auto given = [&](const std::string& option) {
    for (const std::string& arg : args)
      if (arg == option || arg.rfind(option + "=", 0) == 0) return true;
    return false;
  };
  const auto runs = [&](const std::string& sub) {
    return std::find(args.begin(), args.end(), sub) != args.end();
  };
  if (runs("ring") && !given("--n")) return false;
  if (runs("decode") && !given("--m")) return false;
  return product <= kMostWork;
}

// The arguments, one per line; false when the input is not one we run (see above).
bool split(const std::uint8_t* data, std::size_t size, std::vector<std::string>& args) {
  std::string cur;
  for (std::size_t k = 0; k <= size; ++k) {
    if (k == size || data[k] == '\n') {
      if (!acceptable(cur) || cur.size() > 64) return false;
      args.push_back(cur);
      cur.clear();
    } else {
      if (data[k] == '\0') return false;  // argv strings cannot hold one
      cur += char(data[k]);
    }
  }
  return args.size() <= 16 && small_enough(args);
}

struct Captured {
  int code;
  std::string out, err;
};

// One run with stdout (held by the tool, written to a memory file) and stderr (the FILE* it
// prints errors through) captured; --help goes through std::cout, to /dev/null.
Captured run_captured(std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>("flashdemo")};
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const int out = memfd_create("fuzz_cli_stdout", 0);
  fd::ui::set_stdout_fd(out);
  char* err_buf = nullptr;
  std::size_t err_len = 0;
  FILE *err = open_memstream(&err_buf, &err_len), *saved_err = stderr;
  stderr = err;
  const int code = fd::demos::run(int(argv.size() - 1), argv.data());
  stderr = saved_err;
  std::fclose(err);
  Captured c{code, {}, std::string(err_buf, err_len)};
  std::free(err_buf);
  char buf[4096];
  ::lseek(out, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(out, buf, sizeof buf)) > 0;) c.out.append(buf, std::size_t(n));
  ::close(out);
  fd::ui::set_stdout_fd(STDOUT_FILENO);
  return c;
}

// The scratch directory's files before the first run: path -> bytes.
std::map<std::string, std::string>& before() {
  static std::map<std::string, std::string> files;
  return files;
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::map<std::string, std::string> snapshot() {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator("."))
    if (e.is_regular_file()) files[e.path().lexically_normal().string()] = slurp(e.path());
  return files;
}

bool named(const std::vector<std::string>& args, const std::string& path) {
  for (const std::string& a : args) {
    const std::string value = a.find('=') == std::string::npos ? a : a.substr(a.find('=') + 1);
    if (std::filesystem::path(value).lexically_normal().string() == path) return true;
  }
  return false;
}

void expect(bool ok, const char* what, const Captured& c) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_cli: %s (exit %d)\nstdout: %s\nstderr: %s\n", what, c.code,
               c.out.c_str(), c.err.c_str());
  __builtin_trap();
}

// The shape of file_io's temporaries: ".NAME.XXXXXX" beside the output NAME.
bool looks_temporary(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  return name.size() > 8 && name[0] == '.' && name[name.size() - 7] == '.';
}

// After every run: the files that were there are intact (an output the run succeeded in writing
// is put back), the run's new files are removed, and no temporary is left.
void check_files(const std::vector<std::string>& args, const Captured& c) {
  const auto now = snapshot();
  for (const auto& [path, bytes] : now) {
    const auto was = before().find(path);
    expect(was != before().end() || named(args, path) || !looks_temporary(path),
           "a temporary was left behind", c);
    if (was == before().end()) {
      std::filesystem::remove(path);
      continue;
    }
    if (bytes == was->second) continue;
    expect(c.code == 0 && named(args, path), "a file that was there changed", c);
    std::ofstream(path, std::ios::binary) << was->second;
  }
  for (const auto& [path, bytes] : before())
    if (!now.count(path)) {
      expect(c.code == 0 && named(args, path), "a file that was there is gone", c);
      std::ofstream(path, std::ios::binary) << bytes;
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const int null = open("/dev/null", O_WRONLY);  // std::cout (help) goes nowhere
  if (null >= 0) dup2(null, STDOUT_FILENO);
  setenv("NO_COLOR", "1", 1);
  before() = snapshot();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  if (!split(data, size, args)) return 0;
  const Captured c = run_captured(args);
  check_files(args, c);
  const int known[] = {0, 1, 2, 3, 4, 5};
  bool documented = false;
  for (int k : known) documented = documented || c.code == k;
  expect(c.code != 70, "an internal error: a bug", c);
  expect(documented, "an exit code README does not list", c);
  if (c.code == 0 || c.code == 1) return 0;  // 1: check's grade table on stdout, by design
  const bool one_line = !c.err.empty() && c.err.find('\n') == c.err.size() - 1;
  const bool prefixed = c.err.rfind("flashdemo", 0) == 0;  // ": error: " or "：错误："
  expect(one_line && prefixed, "a failing run must print one line, flashdemo: error: ...", c);
  expect(c.out.empty(), "a failing run must print nothing on stdout", c);
  return 0;
}
