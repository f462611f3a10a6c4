// test_info.cpp — flashdemo info: every line translated in Chinese.
#include <doctest/doctest.h>

#include "runner.hpp"

using namespace cli;

// Every line of `flashdemo info` in Chinese, from --lang zh or from LANG: each has Chinese words,
// and none of the English of the catalog's reasons for no GPU is left.
TEST_CASE("info in Chinese: every line it prints is translated, the reason for no GPU too") {
  const Run flag = run("info --lang zh");
  const Run env = in_dir(".", "LC_ALL= LANG=zh_CN.UTF-8 $FD info");
  for (const Run& r : {flag, env}) {
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(lines(r.out).size() >= 4);
    for (const auto& line : lines(r.out)) CHECK(display_columns(line) > columns(line));
    for (const char* english : {"built without CUDA", "no NVIDIA driver", "no CUDA device",
                                "CUDA error:", "none (", "hardware threads", "unknown compiler"})
      CHECK_FALSE(has(r.out, english));
    CHECK(has(r.out, "GPU："));
  }
  CHECK(flag.out == env.out);
  CHECK(has(run("info").out, "GPU: "));
  CHECK(has(run("info --lang zh --help").out, "示例："));
}
