// test_backward.cpp — flashdemo backward: the lecture's demo 3 (dQ, dK, dV, D against the reference
// and finite differences) and the lecture's random draws, saved with --save-q/k/v/do.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"
#include "runner.hpp"

using namespace cli;

TEST_CASE("backward reproduces the lecture's demo 3: reference and finite differences") {
  for (const char* args : {"backward", "backward --causal", "backward --dtype fp32 --causal"}) {
    const Run r = run(args);
    INFO("args: " << std::string(args));
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    CHECK(has(r.out, "Q: 70 x 16,  K, V: 70 x 16"));
    CHECK(has(r.out, "Br = 16, Bc = 16"));
    for (const char* g : {"max |dQ - dQ_ref|", "max |dK - dK_ref|", "max |dV - dV_ref|",
                          "max |D - D_ref|", "dQ(0,0)", "dK(35,8)", "dV(69,15)"})
      CHECK(has(r.out, g));
    CHECK_FALSE(has(r.out, "FAIL"));
    CHECK_FALSE(has(r.out, "nan"));
    for (const auto& line : lines(r.out)) CHECK(columns(line) <= 100);
  }
  CHECK(has(run("backward").out, "naive fp64"));
  const Run tiles = run("backward --causal --trace tiles --n 40");
  CHECK(has(tiles.out, "→ key tile 2 done: dK and dV of keys 32-39 are final"));
  const Run rows =
      run("backward --n 8 --m 3 --d 2 --causal --causal-align bottom-right "
          "--trace rows --block-q 4 --block-k 2");
  REQUIRE(rows.code == 0);
  CHECK(has(rows.out, "D = "));
  CHECK_FALSE(has(rows.out, "nan"));
}

// The lecture's backward loop draws fresh Q, K, V for causal=True: the second triple of the stream.
TEST_CASE("backward --causal uses the lecture's second draw; --save-q/k/v/do write what it used") {
  REQUIRE(run("backward --n 7 --d 3 --save-q bq.npy --save-do bdo.npy --trace none").code == 0);
  REQUIRE(run("backward --n 7 --d 3 --causal --save-q cq.npy --save-k ck.npy --save-v cv.npy "
              "--trace none")
              .code == 0);
  fd::TorchGenerator gen(0);
  std::vector<std::vector<double>> draws;  // Q, K, V, then Q, K, V again: one call each
  for (int k = 0; k < 6; ++k) draws.push_back(gen.randn(7 * 3));
  const fd::NpyArray bq = fd::read_npy("bq.npy"), cq = fd::read_npy("cq.npy"),
                     ck = fd::read_npy("ck.npy"), cv = fd::read_npy("cv.npy");
  REQUIRE(cq.data.size() == 21);
  for (std::size_t k = 0; k < 21; ++k) {
    CHECK(bq.data[k] == doctest::Approx(draws[0][k]).epsilon(1e-6));
    CHECK(cq.data[k] == doctest::Approx(draws[3][k]).epsilon(1e-6));
    CHECK(ck.data[k] == doctest::Approx(draws[4][k]).epsilon(1e-6));
    CHECK(cv.data[k] == doctest::Approx(draws[5][k]).epsilon(1e-6));
  }
  CHECK(fd::read_npy("bdo.npy").shape == std::vector<fd::index_t>{7, 3});
}

// The backward from a forward's own O and L (--o, --lse): judged first against the reference
// forward, then used (P from that L, D from that O); a wrong L makes the gradients fail.
TEST_CASE("backward --o --lse starts from the given O and L") {
  write_inputs(30, 22, 6);
  const std::string causal = " --causal --causal-align bottom-right --do in_do.npy";
  REQUIRE(run("forward " + kQKV +
              " --causal --causal-align bottom-right --save-o fo.npy "
              "--save-lse fl.npy --quiet")
              .code == 0);
  const Run ok = run("backward " + kQKV + causal + " --o fo.npy --lse fl.npy");
  CHECK(ok.code == 0);
  CHECK(ok.err.empty());
  CHECK(has(ok.out, "Your O and L (--o fo.npy, --lse fl.npy) against the reference forward"));
  CHECK(has(ok.out, "P = exp(S - L) with your L"));
  CHECK_FALSE(has(ok.out, "FAIL"));
  const Run same = run("backward " + kQKV + causal + " --save-dq a.npy --quiet");
  const Run from =
      run("backward " + kQKV + causal + " --o fo.npy --lse fl.npy --save-dq b.npy --quiet");
  REQUIRE(same.code == 0);
  REQUIRE(from.code == 0);
  // The run's own O and L, given back: the same dQ but for L's low part (L + L_lo is m + log l to
  // twice fp64's precision in the run; a file holds L alone).
  const fd::NpyArray a = fd::read_npy("a.npy"), b = fd::read_npy("b.npy");
  REQUIRE(a.data.size() == b.data.size());
  for (std::size_t k = 0; k < a.data.size(); ++k) CHECK(std::abs(a.data[k] - b.data[k]) < 1e-14);

  // L off by 0.5 in row 20 (rows 0-7 see no key: L = -inf there): L fails, and so do the
  // gradients computed from it.
  fd::NpyArray L = fd::read_npy("fl.npy");
  L.data[20] += 0.5;
  fd::write_npy("fl_bad.npy", L.data.data(), L.shape);
  const Run bad = run("backward " + kQKV + causal + " --o fo.npy --lse fl_bad.npy");
  CHECK(bad.code == 1);
  CHECK(has(bad.out, "FAIL"));
  // Usage and file problems: one line, nothing written.
  struct Case {
    std::string args;
    int code;
  };
  fd::write_npy("fl_2d.npy", L.data.data(), std::vector<fd::index_t>{2, 15});
  const Case cases[] = {{kQKV + " --o fo.npy", 2},
                        {"--lse fl.npy --o fo.npy", 2},
                        {kQKV + " --o fo.npy --lse fl_2d.npy", 4},
                        {kQKV + " --o in_k.npy --lse fl.npy", 4}};
  for (const Case& c : cases) {
    const Run r = run("backward " + c.args);
    INFO(c.args << " | " << r.err);
    CHECK(r.code == c.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
  }
  CHECK(has(run("backward " + kQKV + " --o fo.npy --lse fl_2d.npy").err,
            "fl_2d.npy: L has shape (2, 15), expected (30,) or (30, 1)"));
}
