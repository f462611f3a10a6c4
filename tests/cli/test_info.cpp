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

// The fast path's kernels: info names the build that runs and why; FLASHDEMO_FAST_LEVEL chooses
// each level this CPU runs (forward --impl fast passes with it); a name that is no level, or a
// level above the CPU's, is one line and exit 2 from a run of the fast path and from info. The
// choice without the variable is read with it unset, so that the suite also passes when it is run
// with one level forced (FLASHDEMO_FAST_LEVEL=x86-64-v3 ctest: the kernels of an AVX2 machine).
TEST_CASE("info names the fast path's kernels; FLASHDEMO_FAST_LEVEL chooses them") {
  const auto info = json_lines(in_dir(".", "unset FLASHDEMO_FAST_LEVEL; $FD info --json").out);
  REQUIRE(info.size() == 1);
  const Run plain = in_dir(".", "unset FLASHDEMO_FAST_LEVEL; $FD info");
  CHECK(has(plain.out, "fast path: " + info[0]["fast_level"].get<std::string>() + " kernels ("));
  CHECK(has(plain.out, info[0]["fast_levels_built"] == "native" ? "the one build of them"
                                                                : "the highest this CPU runs"));
  CHECK(has(run("info --help").out, "FLASHDEMO_FAST_LEVEL=x86-64-v3 flashdemo info"));
  const int cpu = info[0]["cpu_level"].get<int>();
  const std::string built = info[0]["fast_levels_built"].get<std::string>();
  for (int level = 1; level <= 4; ++level) {
    const std::string name = level == 1 ? "x86-64" : "x86-64-v" + std::to_string(level);
    if (built.find(name + ",") == std::string::npos && !built.ends_with(name)) continue;
    INFO(name);
    const std::string env = "FLASHDEMO_FAST_LEVEL=" + name + " ";
    if (level > cpu) {  // a level above the CPU's: refused in one line
      const Run r = in_dir(".", env + "$FD info");
      CHECK(r.code == 2);
      CHECK(has(r.err, "this CPU lacks that level"));
      CHECK(r.out.empty());
      continue;
    }
    const Run i = in_dir(".", env + "$FD info");
    CHECK(has(i.out, "fast path: " + name + " kernels"));
    CHECK(has(i.out, "by FLASHDEMO_FAST_LEVEL=" + name + "\n"));
    const Run f = in_dir(".", env + "$FD forward --impl fast --n 77 --m 50 --d 24 --causal --json");
    CHECK(f.code == 0);
    CHECK(has(f.out, "\"pass\":true"));
  }
  // A name that is no level: every run of the fast path (and info) refuses it, nothing else does.
  for (const char* cmd : {"forward --impl fast --n 8 --d 4", "backward --impl fast --n 8 --d 4",
                          "bench --impl fast --n 64", "bench --impl gemm --n 64", "info"}) {
    INFO(cmd);
    const Run bad = in_dir(".", std::string("FLASHDEMO_FAST_LEVEL=avx512 $FD ") + cmd);
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
    CHECK(lines(bad.err).size() == 1);
    CHECK(has(bad.err, "FLASHDEMO_FAST_LEVEL=avx512: not a level this build has (it has "));
  }
  for (const char* cmd : {"softmax", "forward --n 8 --d 4", "--help", "--version"})
    CHECK(in_dir(".", std::string("FLASHDEMO_FAST_LEVEL=avx512 $FD ") + cmd).code == 0);
  const Run zh = in_dir(".", "FLASHDEMO_FAST_LEVEL=avx512 $FD forward --impl fast --lang zh");
  CHECK(zh.code == 2);
  CHECK(has(zh.err, "本构建没有这一级"));
}
