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
    // On a terminal the pause prompt takes one more row: 29 lines and the prompt fill 30.
    for (const auto& screen : screens) CHECK(screen.size() <= 29);
  }
  // Step 1 asks the class to watch m and the rescale column: the lecture's x (its numbers, its
  // max first: every rescale 1.0000), then a short x whose max grows, where the rescales are not 1.
  for (const char* lang : {"en", "zh"}) {
    const std::string out = run(std::string("walkthrough --no-pause --lang ") + lang).out;
    const std::string step1 =
        out.substr(0, out.find(std::string(lang) == "en" ? "step 2/12" : "第 2/12 步"));
    INFO("lang " << lang);
    CHECK(has(step1, "x = [7.70, -1.47, -10.89, 2.84, -5.42, -6.99, 2.02, 4.19, -3.60, -2.02]"));
    CHECK(has(step1, "m = 7.705"));
    CHECK(has(step1, "l = 1.0410"));
    CHECK(has(step1, "7.705 → 7.705    1.0000                    1.0410"));
    CHECK(has(step1, "  $ flashdemo softmax --values=1,3,2,6,0,8 --block 2\n"));
    CHECK(has(step1, "3.000 → 6.000    0.0498                    1.0748"));
    CHECK(has(step1, "6.000 → 8.000    0.1353                    1.1458"));
  }
  const Run back = run("walkthrough --no-pause --section backward");
  CHECK(has(back.out, "step 7/12"));
  CHECK_FALSE(has(back.out, "step 6/12"));
  CHECK(has(back.out, "$ flashdemo backward"));
  const Run piped = run("walkthrough --section memory < /dev/null");  // not a terminal: no wait
  CHECK(piped.code == 0);
  CHECK(has(piped.out, "step 12/12"));
}
