// fuzz_cli.cpp — libFuzzer target for the command line: the input is argv, one argument per
// line (at most 16 of at most 64 bytes), run in-process through fd::demos::run, the code behind
// the flashdemo executable. Besides crashes and sanitizer reports, every run must keep the
// promises of README's "Exit codes":
//   - the exit code is a documented one, and not 70 (an internal error is a bug);
//   - a failing run prints exactly one line on stderr, "flashdemo: error: ..." (or its Chinese
//     prefix), and nothing on stdout.
// Skipped inputs, so that a run stays quick and inside the working directory: an argument with
// a '/' (no files written or read elsewhere: the fuzzer runs as whatever user CI is), a number of
// four or more digits or in hex, binary or octal notation (a size the tool accepts would be
// slow, not wrong; tests/test_cli.cpp covers the huge and negative ones), and `bench` (it times).
// Build: cmake -DFLASHDEMO_FUZZ=ON with clang; run it in a scratch directory holding a few .npy
// files (.ci/run copies tests/fixtures): build/fuzz/fuzz_cli tests/fuzz/corpus/cli
#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "app.hpp"

namespace {

bool acceptable(const std::string& arg) {
  if (arg.find('/') != std::string::npos || arg == "bench") return false;
  int digits = 0;
  for (std::size_t k = 0; k < arg.size(); ++k) {
    const char c = arg[k];
    digits = std::isdigit(static_cast<unsigned char>(c)) ? digits + 1 : 0;
    if (digits >= 4) return false;
    if (c == '0' && k + 1 < arg.size() && std::strchr("xXbBoO", arg[k + 1])) return false;
  }
  return true;
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
  return args.size() <= 16;
}

struct Captured {
  int code;
  std::string out, err;
};

// One run with stdout and stderr captured (the FILE* the tool prints through; what goes through
// std::cout, --help and JSON traces, lands in /dev/null).
Captured run_captured(std::vector<std::string>& args) {
  std::vector<char*> argv{const_cast<char*>("flashdemo")};
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  char *out_buf = nullptr, *err_buf = nullptr;
  std::size_t out_len = 0, err_len = 0;
  FILE *out = open_memstream(&out_buf, &out_len), *err = open_memstream(&err_buf, &err_len);
  FILE *saved_out = stdout, *saved_err = stderr;
  stdout = out, stderr = err;
  const int code = fd::demos::run(int(argv.size() - 1), argv.data());
  stdout = saved_out, stderr = saved_err;
  std::fclose(out);
  std::fclose(err);
  Captured c{code, std::string(out_buf, out_len), std::string(err_buf, err_len)};
  std::free(out_buf);
  std::free(err_buf);
  return c;
}

void expect(bool ok, const char* what, const Captured& c) {
  if (ok) return;
  std::fprintf(stderr, "fuzz_cli: %s (exit %d)\nstdout: %s\nstderr: %s\n", what, c.code,
               c.out.c_str(), c.err.c_str());
  __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const int null = open("/dev/null", O_WRONLY);  // std::cout (help, JSON traces) goes nowhere
  if (null >= 0) dup2(null, STDOUT_FILENO);
  setenv("NO_COLOR", "1", 1);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> args;
  if (!split(data, size, args)) return 0;
  const Captured c = run_captured(args);
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
