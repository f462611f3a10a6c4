// test_forward.cpp — flashdemo forward: the lecture's demo 2, the fp32 run under the 2x rule, the
// tile and row traces, fully masked rows (O = 0, L = -inf), --causal-align, --show-p (a row of P
// from L), --trace-json, --quiet and --color.
#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "runner.hpp"

using namespace cli;

TEST_CASE("forward reproduces the lecture's demo 2 and fits one 100-column screen") {
  for (const char* args : {"forward", "forward --causal"}) {
    const Run r = run(args);
    INFO("args: " << std::string(args));
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    CHECK(has(r.out, "Q: 100 x 32,  K, V: 100 x 32,  fp64"));
    CHECK(has(r.out, "tiles Br = 16, Bc = 24"));
    CHECK(has(r.out, "max |O - O_ref| = "));
    CHECK(has(r.out, "max |L - L_ref| = "));
    const auto ls = lines(r.out);
    CHECK(ls.size() <= 30);
    for (const auto& line : ls) CHECK(columns(line) <= 100);
  }
  const Run causal = run("forward --causal");
  CHECK(has(causal.out, "tiles computed: 21 of 35 (12 full, 9 partial), skipped: 14"));
  CHECK(has(causal.out, "80-bit long double"));  // an fp64 run is judged against a wider type
  CHECK(has(causal.out, "naive fp64"));
  CHECK(has(causal.out, ": pass"));
  CHECK_FALSE(has(causal.out, "FAIL"));
}

TEST_CASE("forward in fp32 passes the 2x rule; traces print tiles and rows") {
  const Run f32 = run("forward --dtype f32 --causal");
  REQUIRE(f32.code == 0);
  CHECK(has(f32.out, "fp32"));
  CHECK(has(f32.out, ": pass"));
  CHECK_FALSE(has(f32.out, "FAIL"));
  const Run tiles = run("forward --causal --trace tiles");
  CHECK(has(tiles.out, "(0,0)    0-15   0-23   partial"));
  CHECK(has(tiles.out, "(0,1..4) 0-15   24-99  skipped 4 tiles"));  // the columns line up
  CHECK(has(tiles.out, "(0,1..4)"));
  const Run rows =
      run("forward --n 6 --m 9 --d 2 --block-q 4 --block-k 3 --causal "
          "--causal-align bottom-right --trace rows");
  REQUIRE(rows.code == 0);
  CHECK(has(rows.out, "q    5:  L = "));
  const Run none = run("forward --trace none");
  CHECK_FALSE(has(none.out, "Tile map"));
}

TEST_CASE("fully masked rows print O = 0 and L = -inf without NaN") {
  const Run r = run("forward --n 8 --m 3 --d 2 --causal --causal-align bottom-right --trace rows");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "L = -inf + log(0.0000) = -inf"));
  CHECK_FALSE(has(r.out, "nan"));
  CHECK(has(r.out, ": pass"));
  CHECK_FALSE(has(r.out, "FAIL"));
}

TEST_CASE("--trace rows refuses a trace too long to read, before anything runs") {
  const Run big = run("forward --n 5000 --trace rows");
  CHECK(big.code == 2);
  CHECK(big.out.empty());
  CHECK(
      has(big.err, "--trace rows would print about 1,051,672 lines (84.1 MB), more than 200,000"));
  CHECK(run("backward --n 5000 --trace rows").code == 2);
  CHECK(run("forward --n 1000 --trace rows").code == 0);  // 45,728 lines
  CHECK(run("forward --n 5000 --trace tiles").code == 0);
}

TEST_CASE("--causal-align implies --causal, and says so") {
  const Run f = run("forward --causal-align bottom-right --m 60 --trace none");
  REQUIRE(f.code == 0);
  CHECK(has(f.out, "mask: causal (implied by --causal-align), bottom-right"));
  CHECK(has(run("forward --causal --causal-align top-left --trace none").out,
            "mask: causal, top-left"));
  write_inputs(16, 16, 4);
  REQUIRE(run("forward " + kQKV + " --causal --save-o o.npy --trace none").code == 0);
  const Run c = run("check " + kQKV + " --causal-align top-left --o o.npy");
  CHECK(c.code == 0);
  CHECK(has(c.out, "(implied by --causal-align)"));
}

TEST_CASE("--show-p recovers a row of P from L; softmax reads a .npy vector") {
  const Run r = run("forward --show-p 99 --causal --trace none");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "Row 99 of P, recovered from the saved L"));
  CHECK(has(r.out, "sum over k = 1.0000000000000"));
  std::string command = "softmax --input ";  // appended, not +: GCC 12 misreads the temporaries
  command.append(FLASHDEMO_FIXTURES).append("/numpy_f4_vec5.npy");  // (-Warray-bounds, PR 105651)
  const Run s = run(command);
  REQUIRE(s.code == 0);
  CHECK(has(s.out, "(5 values, fp32)"));
}

TEST_CASE("--trace-json writes the events to a file while the terminal shows text") {
  std::remove("trace.jsonl");
  const Run r = run("forward --causal --trace-json trace.jsonl");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "Tile map"));
  std::ifstream f("trace.jsonl");
  std::stringstream ss;
  ss << f.rdbuf();
  const auto events = json_lines(ss.str());
  CHECK(count_events(events, "tile") == 21);
}

TEST_CASE("--quiet prints only the results; --color always colours, never and pipes do not") {
  const Run q = run("forward --causal --quiet");
  REQUIRE(q.code == 0);
  CHECK_FALSE(has(q.out, "Tile map"));
  CHECK(has(q.out, "max |O - O_ref|"));
  CHECK(lines(q.out).size() <= 3);
  CHECK_FALSE(has(run("forward").out, "\033["));
  CHECK(has(run("forward --color always").out, "\033["));
  CHECK(has(run("forward --causal --trace tiles --color always").out, "\033["));
  CHECK_FALSE(has(run("forward --color never").out, "\033["));
}
