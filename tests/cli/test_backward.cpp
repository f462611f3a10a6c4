// test_backward.cpp — flashdemo backward: the lecture's demo 3 (dQ, dK, dV, D against the reference
// and finite differences) and the lecture's random draws, saved with --save-q/k/v/do.
#include <doctest/doctest.h>

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
