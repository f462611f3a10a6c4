// test_softmax.cpp — flashdemo softmax: the lecture's demo 1, typed values and their rescale, and
// where the naive softmax overflows (inf, nan) beside the online one.
#include <doctest/doctest.h>

#include "runner.hpp"

using namespace cli;

TEST_CASE("softmax reproduces the lecture's demo 1") {
  const Run r = run("softmax");
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK(has(r.out, "x = [7.70, -1.47, -10.89, 2.84, -5.42, -6.99, 2.02, 4.19, -3.60, -2.02]"));
  CHECK(has(r.out, "m = 7.705, l = 1.0410"));
  CHECK(has(r.out, "max |online - three-pass softmax| = 1.2e-07"));
  CHECK(has(r.out, "m + log(l) = 7.74521,  computed directly: 7.74521"));
  CHECK(has(r.out, "l = exp(m_a - m) l_a + exp(m_b - m) l_b = 1.0410"));
  CHECK(lines(r.out).size() >= 4 + 4);  // one table line per block
}

TEST_CASE("softmax takes typed values and shows a rescale") {
  const Run r = run("softmax --values=1000,1001,999 --block 1 --dtype fp64");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "1000.000 → 1001.000"));
  CHECK(has(r.out, "0.3679"));  // alpha = exp(1000 - 1001)
}

// Why m is subtracted: with large (or very negative) values the naive softmax breaks, shown.
TEST_CASE("softmax shows the naive softmax's inf and nan where it breaks, and only there") {
  const Run big = run("softmax --values=1000,1001,999 --block 1");
  REQUIRE(big.code == 0);
  CHECK(has(big.out, "exp(1000.00) = inf: in fp32, exp(x) overflows for x > 88.72"));
  CHECK(has(big.out, "softmax_0 = inf / inf = nan;  3 of 3 outputs are nan or inf"));
  CHECK(has(big.out, "  x[0:1] → m_a = 1000.000"));
  CHECK(has(big.out, "       -inf → 1000.000  0 (nothing summed yet)"));
  const Run small = run("softmax --values=-1000,-1001,5000 --dtype fp64");
  CHECK(has(small.out, "exp(5000.00) = inf: in fp64, exp(x) overflows for x > 709.78"));
  const Run under = run("softmax --values=-1000,-1001");
  CHECK(has(under.out, "exp(-1000.00) = 0: in fp32, exp(x) underflows to 0 for x < -103.28"));
  CHECK(has(under.out, "2 of 2 outputs are nan or inf"));
  CHECK_FALSE(has(run("softmax").out, "naive"));
}
