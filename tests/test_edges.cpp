// test_edges.cpp — numbers at the edges: scores up to +-1e4, n = m = d = 1, d = 256, n != m,
// fully masked rows, on the teaching path and the fast path: no NaN, the reference's answer.
#include <doctest/doctest.h>

#include <initializer_list>

#include "check.hpp"
#include "flashdemo/fast/fast_attention.hpp"
#include "flashdemo/flash_backward.hpp"
#include "flashdemo/random.hpp"
#include "flashdemo/reference.hpp"

using namespace fd;

namespace {

struct Edge {
  index_t n, m, d;
  double scale;  // large scales push the scores toward +-1e4
};

const Edge kEdges[] = {{1, 1, 1, 1.0},   {1, 1, 1, 1e4},     {7, 5, 256, 0.0625},
                       {12, 30, 4, 1e3}, {30, 12, 4, 2.5e3}, {16, 16, 2, 5e3}};

}  // namespace

TEST_CASE_TEMPLATE("large scores and tiny shapes: no NaN, the reference's answer", T, float,
                   double) {
  for (const Edge& e : kEdges) {
    for (bool causal : {false, true}) {
      const AttnParams p{causal, CausalAlign::bottom_right, e.scale};
      TorchGenerator gen(4);
      const Mat<T> Q = gen.randn_matrix<T>(e.n, e.d), K = gen.randn_matrix<T>(e.m, e.d),
                   V = gen.randn_matrix<T>(e.m, e.d);
      INFO("n=" << e.n << " m=" << e.m << " d=" << e.d << " scale=" << e.scale
                << " causal=" << causal);
      const auto ref = reference_forward<double>(
          Q.template cast<double>(), K.template cast<double>(), V.template cast<double>(), p);
      const auto naive = reference_forward<T>(Q, K, V, p);
      const double bound =
          test::tolerance<T>(ref.O.cwiseAbs().maxCoeff(), max_abs_error(naive.O, ref.O).value);
      const auto tiled = flash_forward<T>(Q, K, V, p, {3, 4});
      CHECK_FALSE(tiled.O.hasNaN());
      test::check_close(tiled.O, ref.O, bound, "O (teaching)");
      Mat<T> O(e.n, e.d);
      Vec<T> L(e.n);
      fast::forward<T>({1, 1, e.n, e.m, e.d}, p, {2, {4, 8}}, Q.data(), K.data(), V.data(),
                       O.data(), L.data());
      CHECK_FALSE(O.hasNaN());
      test::check_close(O, ref.O, bound, "O (fast)");
      const auto g = flash_backward<T>(Q, K, V, tiled.O, tiled.L, Q, p, {3, 4});
      CHECK_FALSE(g.dQ.hasNaN());
      CHECK_FALSE(g.dK.hasNaN());
      // The fast backward, from its own forward (dO = Q): never NaN; against the fp64 reference
      // where the scale is moderate. Past scale ~1e3 the gradients are ill-conditioned: the
      // rounding of q.k (6e-8 |q||k| in fp32, 1e-16 in fp64) moves S by scale times as much and
      // dQ = scale dS K multiplies again, so any two summation orders differ by more than the
      // rule allows (measured in fp64 at scale 1e3 and 2.5e3: dQ and dK 1.0e-12 to 1.5e-12 off,
      // against a bound of 1e-12, on the teaching path as on the fast one; in fp32 one dV entry
      // of the fast path above its bound of 2.5e-6).
      Mat<T> dQ(e.n, e.d), dK(e.m, e.d), dV(e.m, e.d);
      Vec<T> D(e.n);
      fast::backward<T>({1, 1, e.n, e.m, e.d}, p, {2, {4, 8}}, Q.data(), K.data(), V.data(),
                        O.data(), L.data(), Q.data(), dQ.data(), dK.data(), dV.data(), D.data());
      const auto rb =
          reference_backward<double>(Q.template cast<double>(), K.template cast<double>(),
                                     V.template cast<double>(), Q.template cast<double>(), p);
      const auto nb = reference_backward<T>(Q, K, V, Q, p);
      auto expect = [&](const Mat<T>& got, const Mat<double>& want, const Mat<T>& low,
                        const char* what) {
        CHECK_FALSE(got.hasNaN());
        if (e.scale <= 1.0) test::check_rule<T>(got, want, low, what);
      };
      expect(dQ, rb.dQ, nb.dQ, "dQ (fast)");
      expect(dK, rb.dK, nb.dK, "dK (fast)");
      expect(dV, rb.dV, nb.dV, "dV (fast)");
    }
  }
}
