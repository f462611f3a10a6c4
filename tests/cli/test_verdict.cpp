// test_verdict.cpp — one judge, one exit-code policy on every subcommand: merges through L (decode,
// ring) pass at large scales, a verdict that is not a pass exits 1, no NaN is saved or passed.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "flashdemo/attention.hpp"
#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"
#include "runner.hpp"

using namespace cli;

// One judge, one exit-code policy (issue 28, section 2 and 3): a verdict that is not a pass exits 1
// on every subcommand; merges through L pass their own rule at any scale; nothing non-finite made
// from finite inputs is written or shown beside a pass.
TEST_CASE("the verdict: merges pass at large scales, FAIL exits 1, no NaN is saved or passed") {
  for (const char* dtype : {"fp64", "fp32"}) {
    for (const char* scale : {"3", "10", "60"}) {
      const std::string tail = std::string(" --scale ") + scale + " --dtype " + dtype;
      const Run d = run("decode --m 300 --splits 3 --threads 2 --reps 1 --quiet" + tail);
      INFO(tail << "\n" << d.out << d.err);
      CHECK(d.code == 0);
      const Run r = run("ring --n 96 --ranks 4 --pass bwd --causal --quiet" + tail);
      INFO(r.out << r.err);
      CHECK(r.code == 0);
    }
  }
  // --break: the FAIL is the lesson (exit 0); the D that no-d drops is shown, not judged.
  const Run br = run("backward --break no-d --trace none");
  CHECK(br.code == 0);
  CHECK(has(br.out, "FAIL"));
  CHECK(has(br.out, "not used in this run"));
  const Run bj = run("backward --break no-d --json");
  CHECK(has(bj.out, "\"verdict_D\":\"not used\""));
  // softmax in fp64: draws beyond fp64 are refused up front, never printed as m = inf.
  const Run sm = run("softmax --dtype fp64 --scale 1e308");
  CHECK(sm.code == 2);
  CHECK(sm.out.empty());
  CHECK(has(sm.err, "x = randn * --scale"));
  // fp32 dot products that overflow although every input fits: exit 1, nothing written.
  write_inputs(12, 12, 4);
  fd::Mat<double> q = fd::TorchGenerator(9).randn_matrix<double>(12, 4);
  q(3, 1) = 3.0e38;
  q(3, 2) = 3.0e38;
  fd::write_npy("in_qbig.npy", q);
  std::filesystem::remove("out_nan_o.npy");
  const Run ov =
      run("forward --q in_qbig.npy --k in_k.npy --v in_v.npy --dtype fp32 --trace none"
          " --save-o out_nan_o.npy --save-lse out_nan_l.npy");
  INFO(ov.out << ov.err);
  CHECK(ov.code != 0);
  CHECK_FALSE(std::filesystem::exists("out_nan_o.npy"));
  CHECK_FALSE(std::filesystem::exists("out_nan_l.npy"));
  CHECK_FALSE(has(ov.out, ": pass"));
  CHECK(std::count(ov.err.begin(), ov.err.end(), '\n') == 1);
}

// A correct run: exit 0, no array failed.
static void check_passes(const char* command) {
  const Run x = run(command);
  INFO(command << "\n" << x.out << x.err);
  CHECK(x.code == 0);
  CHECK_FALSE(has(x.out, "FAIL"));
}

// Runs that exited 1 with one array 1.1x to 10x over its bound, found by random sweeps of small
// problems: correct ones that the rule failed before it had the storage tolerance (bf16, fp16)
// and D's factor (fp64 at d <= 3) (docs/correctness.md, section 2), and the ring at one rank,
// whose fold dropped L's rounding error (docs/at-scale.md).
TEST_CASE("small problems: correct runs that a random sweep found failing pass") {
  const char* runs[] = {
      "backward --n 1 --m 7 --d 64 --precision fp16 --block-q 32 --block-k 11 --seed 258543 "
      "--trace none",
      "backward --n 1 --m 700 --d 2 --precision fp16 --block-q 37 --block-k 20 --seed 96453"
      " --causal-align bottom-right --trace none",
      "backward --n 2 --m 700 --d 2 --precision bf16 --block-q 32 --block-k 18 --seed 285602"
      " --causal --trace none",
      "backward --n 5 --m 2 --d 32 --precision bf16 --block-q 22 --block-k 36 --seed 20429"
      " --causal-align bottom-right --trace none",
      "backward --n 3 --m 3 --d 3 --precision fp16 --block-q 33 --block-k 13 --seed 710317"
      " --causal-align bottom-right --trace none",
      "backward --n 64 --m 128 --d 2 --seed 474763 --trace none",
      "backward --n 300 --m 257 --d 1 --seed 126182 --trace none",
      // The ring at one rank: L's rounding error was dropped at the fold (ring_math.hpp).
      "ring --n 100 --m 60 --d 3 --ranks 1 --pass bwd --dtype fp32 --seed 497869 --scale 10"};
  for (const char* r : runs) check_passes(r);
}

// Correct fp64 runs over 5,000 keys that the rule failed when its floor allowed 4 u R for a sum of
// any length (1.0004x to 1.37x over the bound): a random walk of roundings, about sqrt(m) u R apart
// between two summation orders (floor_magnitudes; docs/correctness.md, section 2). Found by
// `verdict_sweep.py --kind long-rows` and by seeds 7919 s, s = 1 to 200, at the shape below.
TEST_CASE("long rows: correct fp64 runs that the rule failed before the long-sum floor pass") {
  const char* runs[] = {
      "decode --n 5 --m 5000 --d 8 --h 3 --splits 1 --reps 1 --dtype fp64 --scale 2.0"
      " --seed 772762",
      "forward --impl teaching --n 5 --m 5000 --d 8 --dtype fp64 --scale 2.0 --seed 1282878"
      " --trace none",
      "forward --impl teaching --n 5 --m 5000 --d 8 --dtype fp64 --scale 2.0 --seed 1369987"
      " --trace none",
      "forward --impl fast --n 5 --m 5000 --d 8 --dtype fp64 --scale 2.0 --seed 293003"
      " --trace none"};
  for (const char* r : runs) check_passes(r);
}
