// test_help.cpp — --help and --version: every subcommand's examples, the list of subcommands.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runner.hpp"

using namespace cli;

namespace {

// The example lines under "Examples:" (or "示例：") of a --help text.
std::vector<std::string> example_lines(const std::string& help) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& line : lines(help)) {
    if (line == "Examples:" || line == "示例：")
      in = true;
    else if (in && line.rfind("  ", 0) == 0 && has(line, "flashdemo"))
      out.push_back(line);
  }
  return out;
}

}  // namespace

TEST_CASE("every subcommand's --help shows its own examples, in English and Chinese") {
  const std::vector<std::string> app_examples = example_lines(run("--help").out);
  REQUIRE_FALSE(app_examples.empty());
  for (const std::string& sub : listed_subcommands()) {  // the program's own list
    for (const char* lang : {"en", "zh"}) {
      const Run help = run(sub + " --help --lang " + lang);
      INFO(sub << " " << lang << "\n" << help.out);
      CHECK(help.code == 0);
      const auto examples = example_lines(help.out);
      CHECK(examples.size() >= 2);
      for (const std::string& line : examples) {
        CHECK(has(line + " ", "flashdemo " + sub + " "));
        CHECK(columns(line) <= 100);
      }
      if (std::string(lang) == "en") CHECK(examples != app_examples);
    }
  }
}

TEST_CASE("--help lists every subcommand the missing-subcommand error names, manpage too") {
  const std::vector<std::string> listed = listed_subcommands();
  std::string joined;
  for (const std::string& name : listed) joined += (joined.empty() ? "" : ", ") + name;
  const Run none = run("");
  CHECK(has(none.err, "choose one of " + joined + " (flashdemo --help)"));
  CHECK(has(joined, "manpage"));
  CHECK(has(run("manpage --help").out, "Print the man page"));
}

TEST_CASE("--help and --version exit 0") {
  CHECK(run("--help").code == 0);
  CHECK(run("forward --help").code == 0);
  const Run v = run("--version");
  CHECK(v.code == 0);
  CHECK(has(v.out, "flashdemo "));
}
