// test_edges.cpp — numbers at the edges: scores up to +-1e4, n = m = d = 1, d = 256, n != m,
// fully masked rows, on the teaching path and the fast path: no NaN, the reference's answer.
#include <doctest/doctest.h>

#include <initializer_list>

#include "check.hpp"
#include "flashdemo/fast/fast_attention.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/teaching/flash_backward.hpp"

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
      const test::Problem<T> pr{Q, K, V, Q, p};  // dO = Q
      const test::Expected<T> expected(pr);
      // Both paths, forward and backward, at every scale: L is kept to twice T's precision
      // (L + L_lo), so P = exp(S - L) loses nothing to L's rounding even where |L| is in the
      // thousands; the floor follows the magnitude of the terms where the gradients cancel.
      const auto tiled = flash_forward<T>(Q, K, V, p, {3, 4});
      const auto g = flash_backward<T>(Q, K, V, tiled, Q, p, {3, 4});
      const test::Outputs<T> teaching{tiled.O, tiled.L, g.dQ, g.dK, g.dV};
      test::Outputs<T> fast{Mat<T>(e.n, e.d), Vec<T>(e.n), Mat<T>(e.n, e.d), Mat<T>(e.m, e.d),
                            Mat<T>(e.m, e.d)};
      Vec<T> L_lo(e.n), D(e.n);
      fast::forward<T>({1, 1, e.n, e.m, e.d}, p, {2, {4, 8}}, Q.data(), K.data(), V.data(),
                       fast.O.data(), fast.L.data(), L_lo.data());
      fast::backward<T>({1, 1, e.n, e.m, e.d}, p, {2, {4, 8}}, Q.data(), K.data(), V.data(),
                        fast.O.data(), fast.L.data(), L_lo.data(), Q.data(), fast.dQ.data(),
                        fast.dK.data(), fast.dV.data(), D.data());
      for (const test::Outputs<T>* out : {&teaching, static_cast<const test::Outputs<T>*>(&fast)}) {
        CHECK_FALSE(out->O.hasNaN());
        CHECK_FALSE(out->dQ.hasNaN());
        CHECK_FALSE(out->dK.hasNaN());
        CHECK_FALSE(out->dV.hasNaN());
      }
      test::check_outputs(teaching, expected, "teaching");
      test::check_outputs(fast, expected, "fast");
    }
  }
}
