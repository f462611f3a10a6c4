// test_vector_exp.cpp — exp_vector against exp in double, in the build of every x86-64 level
// this CPU runs (through its kernels' table, kernels.hpp): within 1 unit in the last place over
// the whole range it serves, exactly 1 at 0, 0 below -86.5 and at -inf, the same in every lane.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "flashdemo/fast/levels.hpp"

using namespace fd;

namespace {

// exp of x in lane 0 of a vector of one level's kernels (the other lanes: x too).
float exp_at(const fast::Kernels& k, float x) {
  const index_t W = k.simd_bytes / 4;
  std::vector<float> in(static_cast<std::size_t>(W), x), out(static_cast<std::size_t>(W));
  k.exp_floats(in.data(), out.data(), W);
  return out[0];
}

template <class F>
void at_every_level(F check) {
  for (const fast::Level* l : fast::levels_here()) {
    INFO("kernels: " << l->name << " (" << l->kernels->isa << ")");
    check(*l->kernels);
  }
}

}  // namespace

TEST_CASE("exp_vector: within 1 ulp of exp on [-86.5, 88.5]") {
  at_every_level([](const fast::Kernels& k) {
    double worst = 0;
    float at = 0;
    for (float x = -86.5f; x <= 88.5f; x = std::nextafter(x + 1e-3f * std::abs(x), 100.0f)) {
      const float got = exp_at(k, x);
      const float want = float(std::exp(double(x)));
      const double ulp =
          double(std::nextafter(want, std::numeric_limits<float>::infinity())) - double(want);
      const double err = std::abs(double(got) - std::exp(double(x))) / ulp;
      if (err > worst) worst = err, at = x;
    }
    INFO("worst " << worst << " ulp at x = " << at);
    CHECK(worst <= 1.0);
  });
}

TEST_CASE("exp_vector: exact points, underflow to 0, all lanes alike") {
  at_every_level([](const fast::Kernels& k) {
    CHECK(exp_at(k, 0.0f) == 1.0f);
    CHECK(exp_at(k, -86.6f) == 0.0f);
    CHECK(exp_at(k, -1e4f) == 0.0f);
    CHECK(exp_at(k, -std::numeric_limits<float>::infinity()) == 0.0f);
    CHECK(exp_at(k, -86.4f) > 0.0f);
    const index_t W = k.simd_bytes / 4;
    std::vector<float> in(static_cast<std::size_t>(W)), out(static_cast<std::size_t>(W));
    for (index_t x = 0; x < W; ++x) in[std::size_t(x)] = -0.37f * float(x);
    k.exp_floats(in.data(), out.data(), W);
    for (index_t x = 0; x < W; ++x) CHECK(out[std::size_t(x)] == exp_at(k, in[std::size_t(x)]));
  });
}
