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
    }
  }
}
