// test_online_softmax.cpp — RowState against the three-pass softmax; merge.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>

#include <random>
#include <vector>

#include "flashdemo/host_device/online_softmax.hpp"

using fd::RowState;

namespace {

// Three-pass logsumexp in long double: the ground truth for (m, l).
long double exact_lse(const std::vector<double>& x) {
  long double M = -INFINITY, Z = 0;
  for (double v : x) M = std::max<long double>(M, v);
  if (std::isinf(M)) return M;
  for (double v : x) Z += std::exp((long double)v - M);
  return M + std::log(Z);
}

template <class T>
RowState<T> scan(const std::vector<double>& x, std::size_t block) {
  RowState<T> s;
  for (std::size_t b = 0; b < x.size(); b += block) {
    std::vector<T> chunk(x.begin() + b, x.begin() + std::min(x.size(), b + block));
    s.update(chunk.data(), fd::index_t(chunk.size()));
  }
  return s;
}

std::vector<double> cases(int which) {
  std::mt19937 gen(7);
  std::normal_distribution<double> normal(0.0, 5.0);
  switch (which) {
    case 0: {
      std::vector<double> x(37);
      for (double& v : x) v = normal(gen);
      return x;
    }
    case 1:
      return std::vector<double>(9, 2.5);  // all equal
    case 2:
      return {0.0, -1.0, 80.0, 0.5, 1.0};  // one huge value
    case 3:
      return {-INFINITY, 1.0, -INFINITY, -2.0, -INFINITY};  // masked entries
    case 4:
      return {3.25};  // length 1
    default:
      return {-INFINITY, -INFINITY, -INFINITY, 0.0};  // masked first block
  }
}

}  // namespace

TEST_CASE_TEMPLATE("RowState gives the logsumexp of the three-pass softmax", T, float, double) {
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-14;
  for (int which = 0; which < 6; ++which) {
    const std::vector<double> x = cases(which);
    const long double lse = exact_lse(x);
    for (std::size_t block : {1u, 2u, 3u, 7u, 64u}) {
      CAPTURE(which);
      CAPTURE(block);
      const RowState<T> s = scan<T>(x, block);
      CHECK(std::isfinite(double(s.m)));
      CHECK(double(s.finalize()) == doctest::Approx(double(lse)).epsilon(tol));
    }
  }
}

TEST_CASE_TEMPLATE("update returns alpha = exp(m_old - m_new), 0 on the first block", T, float,
                   double) {
  RowState<T> s;
  std::vector<T> a{T(1), T(2)}, b{T(4), T(0)}, c{T(-1)};
  CHECK(s.update(a.data(), 2) == T(0));  // nothing summed yet
  CHECK(a[1] == T(1));                   // p = exp(2 - 2)
  CHECK(double(s.update(b.data(), 2)) == doctest::Approx(std::exp(2.0 - 4.0)));
  CHECK(s.update(c.data(), 1) == T(1));  // max unchanged: no rescale
  CHECK(s.m == T(4));
}

TEST_CASE_TEMPLATE("a fully masked block leaves the state unchanged", T, float, double) {
  RowState<T> s;
  std::vector<T> masked{fd::neg_inf<T>(), fd::neg_inf<T>()};
  CHECK(s.update(masked.data(), 2) == T(1));
  CHECK(fd::is_neg_inf(s.m));
  CHECK(s.l == T(0));
  CHECK(masked[0] == T(0));  // p = 0, not NaN
  CHECK(fd::is_neg_inf(s.finalize()));
  std::vector<T> x{T(1)};
  s.update(x.data(), 1);
  std::vector<T> again{fd::neg_inf<T>()};
  const RowState<T> before = s;
  CHECK(s.update(again.data(), 1) == T(1));
  CHECK(s.m == before.m);
  CHECK(s.l == before.l);
}

TEST_CASE_TEMPLATE("merge is order-independent and equals one pass", T, float, double) {
  const double tol = std::is_same_v<T, float> ? 2e-6 : 1e-14;
  const std::vector<double> x = cases(0);
  for (std::size_t cut : {1u, 10u, 20u, 36u}) {
    const RowState<T> a = scan<T>({x.begin(), x.begin() + cut}, 3);
    const RowState<T> b = scan<T>({x.begin() + cut, x.end()}, 3);
    const RowState<T> ab = fd::merge(a, b), ba = fd::merge(b, a);
    CHECK(ab.m == ba.m);
    CHECK(ab.l == ba.l);
    CHECK(double(ab.finalize()) == doctest::Approx(double(exact_lse(x))).epsilon(tol));
  }
  const RowState<T> empty;
  const RowState<T> one = scan<T>({1.0}, 1);
  CHECK(fd::merge(empty, one).l == one.l);
  CHECK(fd::merge(one, empty).m == one.m);
  CHECK(fd::merge(empty, empty).l == T(0));
}

// exp2_fma: the GPU softmax's exponential on the FMA pipe (hopper's steps fwd_exp_fma8,
// fwd_exp_fma4), checked against exp2 in double at every 997th float of [-126, 0] (about a million
// points) and at its edges: 0 below -126 and for a masked score, NaN kept.
TEST_CASE("exp2_fma is within 4e-6 of 2^x on [-126, 0], 0 below, NaN kept") {
  double worst = 0.0;
  const std::uint32_t last = fd::float_bits(-126.0f);  // negative floats grow in bits as x falls
  for (std::uint32_t u = fd::float_bits(-0.0f); u <= last; u += 997) {
    const float x = fd::bits_float(u);
    const double want = std::exp2(double(x));
    worst = std::max(worst, std::abs(double(fd::exp2_fma(x)) - want) / want);
  }
  CHECK(worst <= 4e-6);
  for (float x : {0.0f, -0.5f, -1.0f, -1.5f, -7.25f, -125.9f, -126.0f}) {
    INFO("x = " << x);
    CHECK(std::abs(double(fd::exp2_fma(x)) / std::exp2(double(x)) - 1.0) <= 4e-6);
  }
  for (float x : {-126.01f, -126.5f, -127.0f, -127.5f, -200.0f, fd::neg_inf<float>()}) {
    INFO("x = " << x);
    CHECK(fd::float_bits(fd::exp2_fma(x)) == 0u);  // +0, exactly
  }
  CHECK(std::isnan(fd::exp2_fma(std::nanf(""))));
  CHECK(std::isnan(fd::exp2_fma(-std::nanf(""))));
}
