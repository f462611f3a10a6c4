// test_output.cpp — what every subcommand prints: JSON Lines only under --json, Chinese words with
// the same numbers, every line within 100 display columns in both languages.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner.hpp"

using namespace cli;

TEST_CASE("--json on every subcommand prints JSON Lines only") {
  write_inputs(12, 12, 3);
  const std::vector<std::string> commands = {
      "softmax",
      "forward --causal",
      "backward --causal",
      "memory",
      "check --q in_q.npy --k in_k.npy --v in_v.npy --o in_q.npy",
      "walkthrough --section memory",
      "info",
      "bench --n 64 --d 16 --reps 1",
      "decode --m 1000 --d 16 --threads 2 --reps 1",
      "ring --n 16 --d 8 --ranks 2"};
  check_every_subcommand(commands,
                         {{"ladder", "GPU kernels only: tests/json_schema_test.py, with a GPU"},
                          {"completion", "prints a shell script, no events"},
                          {"manpage", "prints roff, no events"}});
  for (const std::string& cmd : commands) {
    const Run r = run(cmd + " --json");
    INFO("command: " << cmd << " stderr: " << r.err);
    CHECK((r.code == 0 || r.code == 1));
    CHECK_FALSE(json_lines(r.out).empty());
  }
  const auto fwd = json_lines(run("forward --causal --json").out);
  REQUIRE(fwd.front()["event"] == "problem");
  CHECK(fwd.front()["Tr"] == 7);
  CHECK(count_events(fwd, "tile") == 21);  // the computed tiles of the lecture's causal run
  CHECK(count_events(fwd, "tile_skipped") == 14);
  CHECK(count_events(fwd, "rows_final") == 7);
  CHECK(fwd.back()["event"] == "result");
  CHECK(fwd.back()["err_O"].get<double>() < 1e-14);
  const auto soft = json_lines(run("softmax --json").out);
  CHECK(count_events(soft, "softmax_block") == 4);
  CHECK(soft.back()["l"].get<double>() == doctest::Approx(1.0410).epsilon(1e-4));
  const auto tl =
      json_lines(run("forward --n 5 --m 2 --causal --causal-align bottom-right --json").out);
  CHECK(tl.front()["grid"].is_array());
  bool minus_inf = false;  // fully masked rows: L = -inf travels as a string
  for (const auto& j : tl)
    if (j["event"] == "rows_final") minus_inf = minus_inf || j["L"][0] == "-inf";
  CHECK(minus_inf);
}

TEST_CASE("Chinese output: the same numbers, Chinese words, aligned within 100 columns") {
  const Run zh = run("softmax --lang zh");
  REQUIRE(zh.code == 0);
  CHECK(has(zh.out, "7.705"));
  CHECK(has(zh.out, "1.0410"));
  CHECK(has(zh.out, "在线"));
  const Run env = run("memory --lang=zh");
  CHECK(has(env.out, "17,180"));
  CHECK(has(run("forward --help --lang zh").out, "查询"));
  const Run err = run("forward --n 0 --lang zh");
  CHECK(err.code == 2);
  CHECK(lines(err.err).size() == 1);
}

// A projected terminal is 100 columns: every line of every subcommand's output fits, in both
// languages (a Chinese character takes two columns), for the defaults and the common variants.
TEST_CASE("every line of every subcommand fits 100 display columns, in English and Chinese") {
  write_inputs(16, 16, 4);
  REQUIRE(run("forward " + kQKV + " --save-o w_o.npy --trace none").code == 0);
  const std::vector<std::string> commands = {"softmax",
                                             "softmax --values=1000,1001,999 --block 1",
                                             "softmax --dtype fp64",
                                             "forward",
                                             "forward --causal",
                                             "forward --precision bf16",
                                             "forward --precision fp16 --causal",
                                             "forward --dtype fp32",
                                             "forward --trace tiles",
                                             "forward --causal --trace tiles",
                                             "forward --trace rows",
                                             "forward --show-p 3 --causal",
                                             "forward --impl fast",
                                             "backward",
                                             "backward --causal",
                                             "backward --precision bf16",
                                             "backward --precision fp16 --causal",
                                             "backward --trace rows",
                                             "backward --causal --trace tiles",
                                             "backward --impl fast",
                                             "memory",
                                             "memory --quiet",
                                             "check " + kQKV + " --o w_o.npy",
                                             "bench --n 64 --reps 1",
                                             "bench --n 64 --reps 1 --dtype bf16",
                                             "forward --dtype fp16 --causal",
                                             "info",
                                             "decode --m 4096 --reps 1",
                                             "decode --m 2000 --n 6 --d 8 --splits 16 --reps 1",
                                             "decode --n 3 --m 2 --d 4 --causal --reps 1",
                                             "forward --break no-max",
                                             "forward --break finite-mask",
                                             "forward --break wrong-align",
                                             "forward --break no-rescale",
                                             "forward --break l-starts-at-1",
                                             "backward --break no-d",
                                             "ring --n 64 --d 8",
                                             "ring --n 64 --d 8 --ranks 3 --causal --pass bwd",
                                             "ring --n 40 --m 30 --d 4 --layout contiguous"};
  check_every_subcommand(
      commands, {{"walkthrough", "every screen, both languages: test_walkthrough.cpp"},
                 {"ladder", "GPU kernels only: without a GPU one line on stderr (test_ladder.cpp)"},
                 {"completion", "a shell script, read by the shell, not a terminal"},
                 {"manpage", "roff, laid out by man (test_completion.cpp)"}});
  for (const char* lang : {"en", "zh"})
    for (const std::string& cmd : commands) {
      const Run r = run(cmd + " --lang " + lang);
      INFO(cmd << " --lang " << lang);
      CHECK(r.code == 0);
      for (const auto& line : lines(r.out)) {
        INFO(line);
        CHECK(display_columns(line) <= 100);
      }
    }
}
