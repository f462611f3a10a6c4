// test_grid.cpp — one numerics on every CPU path: the teaching path and the fast path pass the
// correctness rule in full (every element) over the grid of grid.hpp, forward and backward, in
// fp32 and fp64. FLASHDEMO_GRID_REPORT=1 prints each case's worst error / bound.
#include <doctest/doctest.h>

#include <cstdlib>

#include "flashdemo/fast/fast_attention.hpp"
#include "flashdemo/teaching/flash_backward.hpp"
#include "grid/grid.hpp"

using namespace fd;

namespace {

template <class T>
test::Outputs<T> teaching(const test::Problem<T>& p) {
  const TileSizes tiles{16, 24};
  const ForwardResult<T> f = flash_forward(p.Q, p.K, p.V, p.params, tiles);
  const BackwardResult<T> b = flash_backward(p.Q, p.K, p.V, f, p.dO, p.params, tiles);
  return {f.O, f.L, b.dQ, b.dK, b.dV};
}

template <class T>
test::Outputs<T> fast_path(const test::Problem<T>& p) {
  const index_t n = p.Q.rows(), m = p.K.rows(), d = p.Q.cols();
  test::Outputs<T> out{Mat<T>(n, d), Vec<T>(n), Mat<T>(n, d), Mat<T>(m, d), Mat<T>(m, d)};
  Vec<T> L_lo(n), D(n);
  const fast::Shape s{1, 1, n, m, d};
  const fast::Options o{2, {64, 128}};
  fast::forward(s, p.params, o, p.Q.data(), p.K.data(), p.V.data(), out.O.data(), out.L.data(),
                L_lo.data());
  fast::backward(s, p.params, o, p.Q.data(), p.K.data(), p.V.data(), out.O.data(), out.L.data(),
                 L_lo.data(), p.dO.data(), out.dQ.data(), out.dK.data(), out.dV.data(), D.data());
  return out;
}

}  // namespace

TEST_CASE_TEMPLATE("the grid: every CPU path passes the correctness rule in full", T, float,
                   double) {
  test::for_each_grid_case([](const test::GridCase& c) {
    INFO(c.name());
    const test::Problem<T> p = test::grid_problem<T>(c);
    const test::Expected<T> e(p);
    const test::Outputs<T> a = teaching(p), b = fast_path(p);
    if (std::getenv("FLASHDEMO_GRID_REPORT"))
      MESSAGE(c.name() << "  teaching " << test::worst_ratio(a, e) << "  fast "
                       << test::worst_ratio(b, e));
    test::check_outputs(a, e, "teaching");
    test::check_outputs(b, e, "fast");
  });
}
