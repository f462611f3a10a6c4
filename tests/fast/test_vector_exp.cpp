// test_vector_exp.cpp — exp_vector against exp in double: within 1 unit in the last place over
// the whole range it serves, exactly 1 at 0, 0 below -86.5 and at -inf, the same in every lane.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "flashdemo/fast/vector_exp.hpp"

using namespace fd;
using fast::Simd;

namespace {

// Through memory, so that the compiler cannot fold a constant argument at compile time (where it
// would round x * log2e + magic in two steps instead of the one FMA the code runs).
Simd<float>::V exp_of(float x) {
  volatile float through = x;
  Simd<float>::V v{};
  v += through;
  return fast::exp_vector(v);
}

}  // namespace

TEST_CASE("exp_vector: within 1 ulp of exp on [-86.5, 88.5]") {
  double worst = 0;
  float at = 0;
  for (float x = -86.5f; x <= 88.5f; x = std::nextafter(x + 1e-3f * std::abs(x), 100.0f)) {
    const float got = exp_of(x)[0];
    const float want = float(std::exp(double(x)));
    const double ulp =
        double(std::nextafter(want, std::numeric_limits<float>::infinity())) - double(want);
    const double err = std::abs(double(got) - std::exp(double(x))) / ulp;
    if (err > worst) worst = err, at = x;
  }
  INFO("worst " << worst << " ulp at x = " << at);
  CHECK(worst <= 1.0);
}

TEST_CASE("exp_vector: exact points, underflow to 0, all lanes alike") {
  CHECK(exp_of(0.0f)[0] == 1.0f);
  CHECK(exp_of(-86.6f)[0] == 0.0f);
  CHECK(exp_of(-1e4f)[0] == 0.0f);
  CHECK(exp_of(-std::numeric_limits<float>::infinity())[0] == 0.0f);
  CHECK(exp_of(-86.4f)[0] > 0.0f);
  Simd<float>::V v;
  volatile float step = -0.37f;
  for (int k = 0; k < int(Simd<float>::W); ++k) v[k] = step * float(k);
  const Simd<float>::V e = fast::exp_vector(v);
  for (int k = 0; k < int(Simd<float>::W); ++k) CHECK(e[k] == exp_of(v[k])[0]);
}
