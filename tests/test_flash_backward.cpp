// test_flash_backward.cpp — the FlashAttention-2 backward against the fp64 reference and
// central finite differences, float and double, odd shapes, causal with both alignments,
// fully masked rows; D = rowsum(P * dP); skipped tiles never computed.
#include <doctest/doctest.h>

#include <initializer_list>

#include "check.hpp"
#include "flashdemo/flash_backward.hpp"
#include "flashdemo/gradcheck.hpp"
#include "flashdemo/random.hpp"
#include "flashdemo/reference.hpp"

using namespace fd;

namespace {

struct Shape {
  index_t n, m, d, Br, Bc;
};

const Shape kShapes[] = {{70, 70, 16, 16, 16}, {37, 53, 5, 8, 16}, {5, 5, 3, 16, 16},
                         {1, 7, 4, 3, 2},      {9, 1, 3, 2, 2},    {13, 13, 1, 4, 4},
                         {20, 9, 4, 3, 5},     {9, 20, 4, 3, 5}};

template <class T>
struct Case {
  Mat<T> Q, K, V, dO;
};

template <class T>
Case<T> make_case(const Shape& s, std::uint32_t seed) {
  TorchGenerator gen(seed);
  return {gen.randn_matrix<T>(s.n, s.d), gen.randn_matrix<T>(s.m, s.d),
          gen.randn_matrix<T>(s.m, s.d), gen.randn_matrix<T>(s.n, s.d)};
}

template <class T>
void check_against_reference(const Shape& s, const AttnParams& p) {
  const Case<T> c = make_case<T>(s, 11);
  const auto fwd = flash_forward<T>(c.Q, c.K, c.V, p, TileSizes{s.Br, s.Bc});
  const auto g = flash_backward<T>(c.Q, c.K, c.V, fwd, c.dO, p, TileSizes{s.Br, s.Bc});
  const test::Problem<T> pr{c.Q, c.K, c.V, c.dO, p};
  const test::Expected<T> e(pr);
  test::check_outputs<T>({fwd.O, fwd.L, g.dQ, g.dK, g.dV}, e, "teaching");
  test::check_rule<T>(g.D, e.rb.D, e.nb.D, e.R.D, "D (rowsum(dO * O) against rowsum(P * dP))");
}

class Counter : public TraceSink {
 public:
  void on(const BackwardTileEvent& e) override {
    ++tiles;
    row_pairs += e.rows.size();
  }
  void on(const KeysDoneEvent&) override { ++key_tiles; }
  index_t tiles = 0, row_pairs = 0, key_tiles = 0;
};

}  // namespace

TEST_CASE_TEMPLATE("tiled backward matches the reference over odd shapes", T, float, double) {
  for (const Shape& s : kShapes) {
    for (bool causal : {false, true}) {
      for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
        INFO("n=" << s.n << " m=" << s.m << " d=" << s.d << " Br=" << s.Br << " Bc=" << s.Bc
                  << " causal=" << causal << " align=" << int(align));
        check_against_reference<T>(s, AttnParams{causal, align, {}});
      }
    }
  }
}

TEST_CASE("gradients of sum(O^2) agree with central finite differences") {
  for (bool causal : {false, true}) {
    for (const Shape& s : {Shape{12, 9, 3, 5, 4}, Shape{7, 7, 2, 3, 3}}) {
      const Case<double> c = make_case<double>(s, 4);
      const AttnParams p{causal, CausalAlign::bottom_right, {}};
      const auto fwd = flash_forward(c.Q, c.K, c.V, p, TileSizes{s.Br, s.Bc});
      const auto g =
          flash_backward<double>(c.Q, c.K, c.V, fwd, 2.0 * fwd.O, p, TileSizes{s.Br, s.Bc});
      const Mat<double>* grads[] = {&g.dQ, &g.dK, &g.dV};
      for (const GradSample& fd_sample : finite_difference_grads(c.Q, c.K, c.V, p)) {
        INFO("operand " << int(fd_sample.operand) << " at " << fd_sample.row << "," << fd_sample.col
                        << " causal=" << causal);
        const double mine = (*grads[int(fd_sample.operand)])(fd_sample.row, fd_sample.col);
        CHECK(mine == doctest::Approx(fd_sample.value).epsilon(1e-6).scale(1.0));
      }
    }
  }
}

TEST_CASE_TEMPLATE("fully masked rows get zero gradients and no NaN", T, float, double) {
  const Shape s{11, 4, 3, 3, 2};
  const Case<T> c = make_case<T>(s, 8);
  const AttnParams p{true, CausalAlign::bottom_right, {}};  // rows 0..6 see no key
  const auto fwd = flash_forward<T>(c.Q, c.K, c.V, p, TileSizes{s.Br, s.Bc});
  const auto g = flash_backward<T>(c.Q, c.K, c.V, fwd, c.dO, p, TileSizes{s.Br, s.Bc});
  CHECK(g.dQ.allFinite());
  CHECK(g.dK.allFinite());
  CHECK(g.dV.allFinite());
  for (index_t q = 0; q < 7; ++q) {
    CHECK(g.dQ.row(q).isZero(0));
    CHECK(g.D(q) == T(0));
  }
}

TEST_CASE("the backward skips exactly the tiles the forward skips") {
  for (const Shape& s : kShapes) {
    for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
      const Case<double> c = make_case<double>(s, 2);
      const AttnParams p{true, align, {}};
      const auto fwd = flash_forward(c.Q, c.K, c.V, p, TileSizes{s.Br, s.Bc});
      Counter counter;
      flash_backward<double>(c.Q, c.K, c.V, fwd, c.dO, p, TileSizes{s.Br, s.Bc}, &counter);
      const Tiling t{s.n, s.m, s.Br, s.Bc};
      CHECK(counter.tiles == count_tiles(t, p.mask_for(s.n, s.m)).computed());
      CHECK(counter.key_tiles == t.Tc());
    }
  }
}
