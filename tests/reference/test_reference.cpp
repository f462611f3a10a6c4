// test_reference.cpp — standard attention on cases small enough to check by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <initializer_list>

#include "check.hpp"
#include "flashdemo/reference/reference.hpp"

using namespace fd;

TEST_CASE("one query, two keys: O is the softmax-weighted mix of V") {
  Mat<double> Q(1, 1), K(2, 1), V(2, 2);
  Q << 1;
  K << 0, 2;
  V << 1, 0, 0, 1;
  const auto r = reference_forward(Q, K, V, AttnParams{false, CausalAlign::top_left, 1.0});
  const double p1 = std::exp(2.0) / (1 + std::exp(2.0));
  CHECK(r.S(0, 1) == 2.0);
  CHECK(r.P(0, 1) == doctest::Approx(p1));
  CHECK(r.O(0, 0) == doctest::Approx(1 - p1));
  CHECK(r.O(0, 1) == doctest::Approx(p1));
  CHECK(r.L(0) == doctest::Approx(std::log(1 + std::exp(2.0))));
}

TEST_CASE("rows of P sum to 1; masked entries are -inf in S and 0 in P") {
  Mat<double> Q = Mat<double>::Random(5, 3), K = Mat<double>::Random(5, 3);
  Mat<double> V = Mat<double>::Random(5, 3);
  const auto r = reference_forward(Q, K, V, AttnParams{true, CausalAlign::top_left, {}});
  for (index_t q = 0; q < 5; ++q) {
    CHECK(r.P.row(q).sum() == doctest::Approx(1.0));
    for (index_t k = q + 1; k < 5; ++k) {
      CHECK(is_neg_inf(r.S(q, k)));
      CHECK(r.P(q, k) == 0.0);
    }
  }
  CHECK(r.S(0, 0) == doctest::Approx(Q.row(0).dot(K.row(0)) / std::sqrt(3.0)));
}

TEST_CASE("a fully masked row gives O = 0 and L = -inf") {
  Mat<double> Q = Mat<double>::Random(4, 2), K = Mat<double>::Random(2, 2);
  Mat<double> V = Mat<double>::Random(2, 2);
  const auto r = reference_forward(Q, K, V, AttnParams{true, CausalAlign::bottom_right, {}});
  for (index_t q = 0; q < 2; ++q) {  // offset m - n = -2: rows 0, 1 see nothing
    CHECK(is_neg_inf(r.L(q)));
    CHECK(r.O.row(q).isZero(0));
  }
  CHECK(std::isfinite(r.L(2)));
  CHECK(r.O.allFinite());
}

TEST_CASE("float and double references agree to float precision") {
  Mat<double> Q = Mat<double>::Random(9, 4), K = Mat<double>::Random(7, 4);
  Mat<double> V = Mat<double>::Random(7, 4);
  const AttnParams p{true, CausalAlign::bottom_right, {}};
  const auto rd = reference_forward(Q, K, V, p);
  const auto rf = reference_forward<float>(Q.cast<float>(), K.cast<float>(), V.cast<float>(), p);
  test::check_close(rf.O, rd.O, 1e-5, "O");
  test::check_close(rf.L, rd.L, 1e-5, "L");
}

TEST_CASE("the floor's magnitudes: sqrt(m) / 4 over a sum of more than 16 terms, merges added") {
  CHECK(long_sum_scale(1) == 1);
  CHECK(long_sum_scale(16) == 1);  // 4 u R covers a short sum
  CHECK(long_sum_scale(64) == 2);  // sqrt(64) u R = 2 (4 u R)
  CHECK(long_sum_scale(5000) == doctest::Approx(std::sqrt(5000.0) / 4));
  const index_t n = 64, m = 256, d = 3;  // s_m = 4, s_n = 2
  Magnitudes<double> R;
  R.O = R.dQ = Mat<double>::Constant(n, d, 2.0);
  R.dK = R.dV = Mat<double>::Constant(m, d, 3.0);
  R.D = Vec<double>::Constant(n, 5.0);
  R.L = Vec<double>::Constant(n, 7.0);
  R.L.head(4) << 0.5, 2.0, 7.0, 0.0;  // row 3 sees no key: R(L) = 0
  const Magnitudes<double> F = floor_magnitudes(R, n, m);
  CHECK((F.O.array() == 8.0).all());
  CHECK((F.dQ.array() == 8.0).all());
  CHECK((F.D.array() == 20.0).all());
  CHECK((F.dK.array() == 6.0).all());
  CHECK((F.dV.array() == 6.0).all());
  CHECK(F.L(0) == 4.0);  // l's relative rounding, sqrt(m) u, in L = log l: R(L) >= sqrt(m) / 4
  CHECK(F.L(1) == 4.0);
  CHECK(F.L(2) == 7.0);
  CHECK(F.L(3) == 4.0);
  // A short sum: nothing grows but an L below sqrt(m) / 4 (here 1 / 2, which f_p covers anyway).
  const Magnitudes<double> S = floor_magnitudes(R, 16, 4);
  CHECK(S.O == R.O);
  CHECK(S.dK == R.dK);
  CHECK(S.D == R.D);
  CHECK(S.L(0) == 0.5);
  CHECK(S.L(3) == 0.5);
  // One merge (split-KV): k = 3 weights' roundings of Lambda_q = R(L)_q + log(m) each, added to
  // the long sum's factor; dK and dV take Lambda = max_q Lambda_q.
  const Magnitudes<double> G = floor_magnitudes(R, n, m, 1);
  const double log_m = std::log(double(m)), Lambda0 = 0.5 + log_m, Lambda = 7.0 + log_m;
  CHECK(G.O(0, 0) == doctest::Approx(2.0 * (4.0 + 3.0 / 4 * Lambda0)));
  CHECK(G.dQ(2, 1) == doctest::Approx(2.0 * (4.0 + 3.0 / 4 * Lambda)));
  CHECK(G.D(0) == doctest::Approx(5.0 * (4.0 + 3.0 / 4 * Lambda0)));
  CHECK(G.L(0) == doctest::Approx(4.0 + 2.0 / 4 * Lambda0));
  CHECK(G.L(2) == doctest::Approx(7.0 + 2.0 / 4 * Lambda));
  CHECK(G.dK(5, 2) == doctest::Approx(3.0 * (2.0 + 3.0 / 4 * Lambda)));
  CHECK(G.dV(0, 0) == doctest::Approx(3.0 * (2.0 + 3.0 / 4 * Lambda)));
  // The forward's magnitudes alone: the gradients' stay empty.
  Magnitudes<double> forward_only;
  forward_only.O = R.O, forward_only.L = R.L;
  const Magnitudes<double> H = floor_magnitudes(forward_only, n, m, 2);
  CHECK(H.O.rows() == n);
  CHECK(H.dQ.size() == 0);
  CHECK(H.dK.size() == 0);
  CHECK(H.D.size() == 0);
}
