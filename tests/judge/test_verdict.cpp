// test_verdict.cpp — the verdict of a run (verdict.hpp; the 2x rule under it is test_compare.cpp):
// right answers pass, wrong ones fail, no yardstick is never a pass, heads fold to the worst.
#include <doctest/doctest.h>

#include <cmath>

#include "flashdemo/io/random.hpp"
#include "flashdemo/judge/verdict.hpp"
#include "flashdemo/teaching/flash_backward.hpp"
#include "flashdemo/teaching/flash_forward.hpp"

using namespace fd;

TEST_CASE("a run's outcome: any used fail fails, then no verdict, never a pass without a bound") {
  const RuleVerdict pass{Outcome::pass, 1e-7, 1e-7, 1e-6, 1e-6};
  const RuleVerdict fail{Outcome::fail, 1e-3, 1e-7, 1e-6, 1e-6};
  const RuleVerdict none{Outcome::no_verdict, 1e-7, INFINITY, INFINITY, 1e-6};
  RunVerdict v;
  v.add("O", pass);
  v.add("L", pass);
  CHECK(v.outcome() == Outcome::pass);
  v.add("D", fail);
  CHECK(v.outcome() == Outcome::fail);
  CHECK(v.failing() == "D");
  v.set_used("D", false);  // --break no-d: D shown, not judged
  CHECK(v.outcome() == Outcome::pass);
  CHECK_FALSE(v.used("D"));
  v.add("dQ", none);
  CHECK(v.outcome() == Outcome::no_verdict);
  CHECK_FALSE(v.pass());
  CHECK_THROWS(v["dK"]);
}

TEST_CASE("heads fold array by array: each keeps the worse of the two") {
  RunVerdict a, b;
  a.add("O", {Outcome::pass, 1e-7, 1e-7, 1e-6, 1e-6});
  a.add("L", {Outcome::pass, 5e-7, 1e-7, 1e-6, 1e-6});
  b.add("O", {Outcome::fail, 2e-6, 1e-7, 1e-6, 1e-6});
  b.add("L", {Outcome::pass, 1e-7, 1e-7, 1e-6, 1e-6});
  RunVerdict all;
  all.fold(a);
  all.fold(b);
  CHECK(all["O"].outcome == Outcome::fail);
  CHECK(all["O"].err == 2e-6);
  CHECK(all["L"].err == 5e-7);  // the larger share of its bound
  CHECK(all.failing() == "O");
}

TEST_CASE_TEMPLATE("forward: the tiled run passes; an O off by more than rounding fails", T, float,
                   double) {
  TorchGenerator gen(3);
  const index_t n = 37, m = 29, d = 8;
  const Mat<T> Q = gen.randn_matrix<T>(n, d), K = gen.randn_matrix<T>(m, d),
               V = gen.randn_matrix<T>(m, d);
  for (bool causal : {false, true}) {
    const AttnParams params{causal, CausalAlign::bottom_right, {}};
    const ForwardJudge<T> j = forward_judge<T>(Q, K, V, params, precision_of<T>());
    const ForwardResult<T> out = flash_forward(Q, K, V, params, TileSizes{8, 5});
    const RunVerdict v = judge_forward(j, view(out.O), view(out.L), precision_of<T>());
    CHECK(v.pass());
    Mat<T> O = out.O;
    O(n - 1, d - 1) += T(1e-3);
    CHECK(judge_forward(j, view(O), view(out.L), precision_of<T>()).failing() == "O");
    Vec<T> L = out.L;
    L(n - 1) = T(NAN);
    CHECK(judge_forward(j, view(out.O), view(L), precision_of<T>()).failing() == "L");
    CHECK(first_nonfinite(L, j.ref.L) == n - 1);
    CHECK(first_nonfinite(out.L, j.ref.L) == -1);
  }
}

TEST_CASE_TEMPLATE("backward: the FlashAttention-2 run passes; a wrong dQ fails; dO = 2 O", T,
                   float, double) {
  TorchGenerator gen(5);
  const index_t n = 23, m = 31, d = 6;
  const Mat<T> Q = gen.randn_matrix<T>(n, d), K = gen.randn_matrix<T>(m, d),
               V = gen.randn_matrix<T>(m, d), dO = gen.randn_matrix<T>(n, d);
  const AttnParams params{true, CausalAlign::top_left, {}};
  const ForwardResult<T> fwd = flash_forward(Q, K, V, params, TileSizes{4, 8});
  for (bool given : {true, false}) {
    const BackwardJudge<T> j =
        backward_judge<T>(Q, K, V, given ? &dO : nullptr, params, precision_of<T>());
    const Mat<T> up = given ? dO : Mat<T>(T(2) * fwd.O);
    const BackwardResult<T> g = flash_backward(Q, K, V, fwd, up, params, TileSizes{4, 8});
    const RunVerdict v =
        judge_backward(j, view(g.dQ), view(g.dK), view(g.dV), view(g.D), precision_of<T>());
    CHECK(v.pass());
    CHECK(v.arrays().size() == 4);
    Mat<T> dQ = g.dQ;
    dQ(n / 2, 0) *= T(1.001);
    dQ(n / 2, 0) += T(1e-4);
    CHECK(judge_backward(j, view(dQ), view(g.dK), view(g.dV), view(g.D), precision_of<T>())
              .failing() == "dQ");
  }
}

TEST_CASE_TEMPLATE("backward: the floors admit the error of O that D, and with dO = 2 O dO, carry",
                   T, float, double) {
  TorchGenerator gen(6);
  const index_t n = 9, m = 12, d = 2;
  const Mat<T> Q = gen.randn_matrix<T>(n, d), K = gen.randn_matrix<T>(m, d),
               V = gen.randn_matrix<T>(m, d), dO = gen.randn_matrix<T>(n, d);
  const AttnParams params{};
  using W = wider_t<T>;
  const Mat<W> Qw = Q.template cast<W>(), Kw = K.template cast<W>(), Vw = V.template cast<W>();
  const Precision p = precision_of<T>();
  const double u4 = 4 * accumulator_unit(p);
  for (bool given : {true, false}) {
    const BackwardJudge<T> j = backward_judge<T>(Q, K, V, given ? &dO : nullptr, params, p);
    const Mat<W> up = given ? Mat<W>(dO.template cast<W>()) : Mat<W>(W(2) * j.forward.ref.O);
    const Magnitudes<W> R =
        floor_magnitudes(reference_magnitudes<W>(Qw, Kw, Vw, up, j.forward.ref, params), n, m);
    // O's verdict bound, from its naive error and its floor (no merge, no storage tolerance here).
    const double naive_O = max_abs_error(j.forward.naive.O, j.forward.ref.O).value;
    const double bound_O = 2 * naive_O + rule_floor(p, max_finite_abs(j.forward.R.O));
    CHECK(forward_o_bound(j.forward, p) == bound_O);
    INFO("dO " << (given ? "given" : "= 2 O"));
    for (index_t q = 0; q < n; ++q) {
      // |dO| bound_O through O, and with dO = 2 O, 2 |O| bound_O more through dO.
      double carried = 0;
      for (index_t x = 0; x < d; ++x)
        carried += double(std::abs(up(q, x))) +
                   (given ? 0.0 : 2.0 * double(std::abs(j.forward.ref.O(q, x))));
      CHECK(double(j.R.D(q)) ==
            doctest::Approx(double(R.D(q)) + carried * bound_O / u4).epsilon(1e-12));
    }
    // dV = P^T dO takes O's error through dO = 2 O only: 2 e colsum(P) per key.
    for (index_t k = 0; k < m; ++k) {
      const double colsum = double(j.forward.ref.P.col(k).sum());
      const double want = given ? 0.0 : 2 * bound_O * colsum / u4;
      for (index_t x = 0; x < d; ++x)
        CHECK(double(j.R.dV(k, x) - R.dV(k, x)) == doctest::Approx(want).epsilon(1e-9));
    }
    // dQ and dK take it through dS = P (dP - D): never less than they were, more where P is.
    CHECK((j.R.dQ.array() > R.dQ.array()).all());
    CHECK((j.R.dK.array() >= R.dK.array()).all());
  }
  // In bf16 and fp16, D is formed from O as accumulated in fp32: R(D) is left as it is (the
  // storage tolerance admits what D takes from dO held in p).
  if constexpr (std::is_same_v<T, float>) {
    const BackwardJudge<T> j = backward_judge<T>(Q, K, V, &dO, params, Precision::bf16);
    const Magnitudes<W> R = floor_magnitudes(
        reference_magnitudes<W>(Qw, Kw, Vw, dO.template cast<W>(), j.forward.ref, params), n, m);
    CHECK(j.R.D == R.D);
  }
}
