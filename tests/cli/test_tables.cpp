// test_mistakes.cpp — the --break mistakes are one table (FD_MISTAKES,
// flashdemo/teaching/variant.hpp): what `flashdemo forward|backward --break list` prints is its
// rows, in order, and the hand lists in the docs (the "break" field of docs/trace-format.md, the
// --break rows of docs/forward.md and docs/backward.md) name exactly those rows.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <sys/wait.h>

#include "flashdemo/judge/grade.hpp"
#include "flashdemo/teaching/variant.hpp"

namespace {

// `flashdemo ARGS` in the C locale: its exit code and what it printed (stdout, then stderr when
// `err`).
struct Output {
  int code = -1;
  std::string text;
};
Output run_tool(const std::string& args, bool err = false) {
  const std::string cmd = std::string("LC_ALL=C LANG=C '") + FLASHDEMO_EXE + "' " + args +
                          (err ? " 2>&1 >/dev/null" : " 2>/dev/null");
  Output out;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[4096];
    for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, p)) > 0;) out.text.append(buf, got);
    const int status = ::pclose(p);
    out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return out;
}
std::string output_of(const std::string& args) {
  return run_tool(args).text;
}

// The names `--break list` prints: the first word of each indented line.
std::vector<std::string> listed(const char* subcommand) {
  std::vector<std::string> names;
  std::istringstream lines(output_of(std::string(subcommand) + " --break list"));
  for (std::string line; std::getline(lines, line);)
    if (line.starts_with("  ")) names.push_back(line.substr(2, line.find(' ', 2) - 2));
  return names;
}

// The table's names, those of the backward only left out for `forward`.
std::vector<std::string> table(bool backward) {
  std::vector<std::string> names;
  for (const fd::MistakeRow& row : fd::kMistakes)
    if (backward || !row.backward_only) names.push_back(row.name);
  return names;
}

// The line of a document that starts with `start`.
std::string doc_line(const std::string& doc, const std::string& start) {
  std::ifstream f(std::string(FLASHDEMO_TESTS) + "/../docs/" + doc);
  for (std::string line; std::getline(f, line);)
    if (line.starts_with(start)) return line;
  return "";
}

// The names a line of a document quotes as `pattern` matches them (group 1), in order.
std::vector<std::string> quoted(const std::string& line, const std::string& pattern) {
  std::vector<std::string> names;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(line.begin(), line.end(), re); it != std::sregex_iterator();
       ++it)
    names.push_back((*it)[1]);
  return names;
}

}  // namespace

TEST_CASE("--break list prints the table's rows, in order; forward leaves out the backward's") {
  CHECK(listed("backward") == table(true));
  CHECK(listed("forward") == table(false));
  CHECK(table(true).size() > table(false).size());
}

TEST_CASE("every mistake has its own name, diagnosis and row") {
  for (const fd::MistakeRow& row : fd::kMistakes) {
    INFO(row.name);
    CHECK(fd::mistake_row(row.mistake) == &row);
    CHECK(std::string(fd::mistake_name(row.mistake)) == row.name);
    CHECK(fd::diagnosis_of(row.mistake) != fd::Diagnosis::none);
    for (const fd::MistakeRow& other : fd::kMistakes)
      if (&other != &row) {
        CHECK(std::string(other.name) != row.name);
        CHECK(fd::diagnosis_of(other.mistake) != fd::diagnosis_of(row.mistake));
        CHECK((row.regraded == 0 || other.regraded != row.regraded));
      }
  }
  CHECK(fd::mistake_row(fd::Mistake::none) == nullptr);
  CHECK(fd::diagnosis_of(fd::Mistake::none) == fd::Diagnosis::none);
}

TEST_CASE("the docs' lists of --break mistakes are the table's") {
  // trace-format.md: the problem event's "break" field quotes every value, as the program lists.
  const std::string field = doc_line("trace-format.md", "| `break` |");
  REQUIRE(!field.empty());
  CHECK(quoted(field, "`\"([a-z0-9-]+)\"`") == listed("backward"));
  // forward.md and backward.md: the --break row names each mistake its subcommand takes.
  for (const char* sub : {"forward", "backward"}) {
    INFO(sub);
    const std::string row = doc_line(std::string(sub) + ".md", "| `--break M` |");
    REQUIRE(!row.empty());
    std::vector<std::string> names = quoted(row, "`([a-z0-9]+(?:-[a-z0-9]+)+)`");
    std::vector<std::string> expected = listed(sub);
    std::sort(names.begin(), names.end());
    std::sort(expected.begin(), expected.end());
    CHECK(names == expected);
  }
}

TEST_CASE("bench --impl: tiled is the CPU's teaching path; a refusal names what was given") {
  // The JSON contract: the CPU's teaching path is "tiled", by default and when named.
  for (const char* args : {"", " --impl tiled"}) {
    const Output r = run_tool(std::string("bench --n 32 --d 8 --reps 1 --json") + args);
    INFO(args);
    REQUIRE(r.code == 0);
    CHECK(r.text.find("\"impl\":\"tiled\"") != std::string::npos);
  }
  // A name given for the other device is refused by that name, listing the device's names.
  const Output tiled = run_tool("bench --device cuda --impl tiled", true);
  CHECK(tiled.code == 2);
  CHECK(tiled.text ==
        "flashdemo: error: --impl tiled does not run on --device cuda (choose teaching, simt, tc, "
        "mma, hopper)\n");
  const Output teaching = run_tool("bench --impl teaching", true);
  CHECK(teaching.code == 2);
  CHECK(teaching.text.find("--impl teaching does not run on --device cpu (choose reference, "
                           "tiled, fast, gemm)") != std::string::npos);
  // Without --impl the device's own teaching path runs: on CUDA no --impl is blamed (without a
  // GPU the device is the reason, exit 5).
  const Output cuda = run_tool("bench --device cuda --n 64 --reps 1", true);
  CHECK(cuda.text.find("--impl") == std::string::npos);
  if (cuda.code != 0) {
    CHECK(cuda.code == 5);
    CHECK(cuda.text.find("--device cuda") != std::string::npos);
  }
}
