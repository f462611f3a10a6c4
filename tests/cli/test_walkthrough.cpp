// test_walkthrough.cpp — flashdemo walkthrough: every screen fits the projected terminal.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runner.hpp"

using namespace cli;

TEST_CASE("walkthrough: every screen fits 100 columns and 30 rows, in English and Chinese") {
  for (const char* lang : {"en", "zh"}) {
    const Run r = run(std::string("walkthrough --no-pause --lang ") + lang);
    INFO("lang " << lang);
    REQUIRE(r.code == 0);
    const std::string marker = std::string(lang) == "en" ? "── step " : "── 第 ";
    std::vector<std::vector<std::string>> screens;
    for (const auto& line : lines(r.out)) {
      if (line.rfind(marker, 0) == 0) screens.emplace_back();
      if (!screens.empty()) screens.back().push_back(line);
      CHECK(display_columns(line) <= 100);
    }
    CHECK(screens.size() == 12);
    for (const auto& screen : screens) CHECK(screen.size() <= 30);
  }
  const Run back = run("walkthrough --no-pause --section backward");
  CHECK(has(back.out, "step 7/12"));
  CHECK_FALSE(has(back.out, "step 6/12"));
  CHECK(has(back.out, "$ flashdemo backward"));
  const Run piped = run("walkthrough --section memory < /dev/null");  // not a terminal: no wait
  CHECK(piped.code == 0);
  CHECK(has(piped.out, "step 12/12"));
}
