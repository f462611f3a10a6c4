// test_tile_math.cpp — the per-row tile functions on hand-checked numbers.
#include <doctest/doctest.h>

#include <limits>

#include <initializer_list>

#include <vector>

#include "flashdemo/host_device/tile_math.hpp"

using namespace fd;

TEST_CASE_TEMPLATE("score_row: scaled dot products, -inf where masked", T, float, double) {
  const std::vector<T> q{T(1), T(2)};
  const std::vector<T> K{T(1), T(0), T(0), T(1), T(1), T(1)};  // 3 keys, d = 2
  std::vector<T> s(3);
  const Mask mask{true, CausalAlign::top_left, 3, 3};
  score_row(q.data(), K.data(), 2, 0, 3, 2, T(0.5), mask, 1, s.data());
  CHECK(s[0] == T(0.5));
  CHECK(s[1] == T(1));
  CHECK(is_neg_inf(s[2]));  // key 2 is in query 1's future
}

TEST_CASE_TEMPLATE("update_row then finalize_row gives softmax(s) V and L", T, float, double) {
  const std::vector<T> V{T(1), T(0), T(0), T(1), T(2), T(2)};  // 3 keys, d = 2
  const std::vector<T> scores{T(0), T(1), T(-1)};
  RowState<T> st;
  std::vector<T> o(2, T(0));
  for (index_t k = 0; k < 3; ++k) {  // one key per tile: three rescales
    std::vector<T> s{scores[std::size_t(k)]};
    update_row(st, s.data(), V.data() + 2 * k, 2, 1, 2, o.data());
  }
  const SplitL<T> L = finalize_row(st, o.data(), 2);
  const double z = 1 + std::exp(1.0) + std::exp(-1.0);
  CHECK(double(L.L) == doctest::Approx(std::log(z)));
  CHECK(L.L + L.lo == L.L);  // lo is below half an ulp of L
  CHECK(double(o[0]) == doctest::Approx((1 + 2 * std::exp(-1.0)) / z));
  CHECK(double(o[1]) == doctest::Approx((std::exp(1.0) + 2 * std::exp(-1.0)) / z));
}

TEST_CASE_TEMPLATE("a row that saw no key finalizes to O = 0, L = -inf", T, float, double) {
  RowState<T> st;
  std::vector<T> s{neg_inf<T>(), neg_inf<T>()};
  const std::vector<T> V{T(3), T(4)};
  std::vector<T> o{T(0)};
  update_row(st, s.data(), V.data(), 1, 2, 1, o.data());
  const SplitL<T> L = finalize_row(st, o.data(), 1);
  CHECK(is_neg_inf(L.L));
  CHECK(L.lo == T(0));
  CHECK(o[0] == T(0));
}

TEST_CASE_TEMPLATE("backward formulas: P from L, dS = P (dP - D)", T, float, double) {
  CHECK(double(recompute_p(T(1), T(1))) == doctest::Approx(1.0));
  CHECK(double(recompute_p(T(0), T(1))) == doctest::Approx(std::exp(-1.0)));
  CHECK(recompute_p(neg_inf<T>(), neg_inf<T>()) == T(0));  // fully masked row: no NaN
  CHECK(recompute_p(neg_inf<T>(), T(2)) == T(0));
  CHECK(softmax_grad(T(0.5), T(3), T(1)) == T(1));
}

TEST_CASE_TEMPLATE("L keeps its rounding error: L + L_lo is m + log l to twice T's precision", T,
                   float, double) {
  // A large m and an l whose log is not a multiple of ulp(m): the rounding of L alone would cost
  // ulp(m) / 2 on every P = exp(S - L); with L_lo, P of the max entry is 1 / l to T's precision.
  RowState<T> st;
  st.m = T(12345.678), st.l = T(1.37);
  const SplitL<T> L = st.finalize_split();
  CHECK(L.L == st.finalize());
  const long double exact = (long double)(st.m) + std::log((long double)(st.l));
  CHECK(double(std::abs(((long double)(L.L) + (long double)(L.lo)) - exact)) <
        1e-4 * double(std::numeric_limits<T>::epsilon()) * 12345.678);
  const T p_max = recompute_p(st.m, L.L, L.lo);  // exp(m - L) = 1 / l
  CHECK(std::abs(double(p_max) * double(st.l) - 1.0) <=
        2 * double(std::numeric_limits<T>::epsilon()));
}
