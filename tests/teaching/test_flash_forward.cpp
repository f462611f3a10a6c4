// test_flash_forward.cpp — the tiled forward against the fp64 reference over odd shapes, both
// alignments, causal and not; fully masked rows; skipped tiles never computed.
#include <doctest/doctest.h>

#include <initializer_list>

#include "check.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/teaching/flash_forward.hpp"

using namespace fd;

namespace {

struct ForwardShape {
  index_t n, m, d, Br, Bc;
};

// n, m not multiples of the tiles; tiles larger than n; n != m both ways; n = 1; m = 1; d = 1.
const ForwardShape kForwardShapes[] = {
    {100, 100, 32, 16, 24}, {37, 53, 5, 8, 16}, {5, 5, 3, 16, 16},
    {1, 7, 4, 3, 2},        {9, 1, 3, 2, 2},    {13, 13, 1, 4, 4},
    {20, 9, 4, 3, 5},       {9, 20, 4, 3, 5},   {16, 16, 8, 1, 1}};

template <class T>
void check_forward_against_reference(const ForwardShape& s, const AttnParams& p) {
  TorchGenerator gen(3);
  const Mat<double> Q = gen.randn_matrix<double>(s.n, s.d), K = gen.randn_matrix<double>(s.m, s.d),
                    V = gen.randn_matrix<double>(s.m, s.d);
  // The reference sees exactly the inputs the path saw (rounded to T), in a wider type.
  const test::Problem<T> pr{Q.cast<T>(), K.cast<T>(), V.cast<T>(), {}, p};
  const auto out = flash_forward<T>(pr.Q, pr.K, pr.V, p, TileSizes{s.Br, s.Bc});
  CHECK(out.O.allFinite());
  test::check_outputs<T>({out.O, out.L, {}, {}, {}}, test::Expected<T>(pr), "teaching");
}

class ForwardCounter : public TraceSink {
 public:
  void on(const TileEvent& e) override {
    ++computed;
    partial += e.kind == TileKind::partial;
  }
  void on(const TileSkippedEvent&) override { ++skipped; }
  void on(const RowsFinalEvent&) override { ++finished; }
  index_t computed = 0, partial = 0, skipped = 0, finished = 0;
};

}  // namespace

TEST_CASE_TEMPLATE("tiled forward matches the reference over odd shapes", T, float, double) {
  for (const ForwardShape& s : kForwardShapes) {
    for (bool causal : {false, true}) {
      for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
        INFO("s.n=" << s.n << " "
                    << "s.m=" << s.m << " "
                    << "s.d=" << s.d << " "
                    << "s.Br=" << s.Br << " "
                    << "s.Bc=" << s.Bc);
        INFO("causal=" << causal << " "
                       << "int(align)=" << int(align));
        check_forward_against_reference<T>(s, AttnParams{causal, align, {}});
      }
    }
  }
}

TEST_CASE_TEMPLATE("an explicit scale is used, including large scores", T, float, double) {
  check_forward_against_reference<T>({17, 23, 4, 5, 6},
                                     AttnParams{true, CausalAlign::top_left, 0.5});
  check_forward_against_reference<T>({17, 23, 4, 5, 6},
                                     AttnParams{false, CausalAlign::top_left, 40.0});
}

TEST_CASE_TEMPLATE("fully masked rows give O = 0, L = -inf, no NaN", T, float, double) {
  TorchGenerator gen(1);
  const Mat<T> Q = gen.randn_matrix<T>(11, 3), K = gen.randn_matrix<T>(4, 3),
               V = gen.randn_matrix<T>(4, 3);
  const auto out =
      flash_forward<T>(Q, K, V, AttnParams{true, CausalAlign::bottom_right, {}}, TileSizes{3, 2});
  for (index_t q = 0; q < 11; ++q) {
    CAPTURE(q);
    CHECK_FALSE(out.O.row(q).hasNaN());
    CHECK(std::isnan(double(out.L(q))) == false);
    if (q < 7) {  // offset m - n = -7
      CHECK(is_neg_inf(out.L(q)));
      CHECK(out.O.row(q).isZero(0));
    } else {
      CHECK(std::isfinite(double(out.L(q))));
    }
  }
}

TEST_CASE("skipped tiles are never computed: the trace counts what the tiling predicts") {
  for (const ForwardShape& s : kForwardShapes) {
    for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
      TorchGenerator gen(2);
      const Mat<double> Q = gen.randn_matrix<double>(s.n, s.d),
                        K = gen.randn_matrix<double>(s.m, s.d),
                        V = gen.randn_matrix<double>(s.m, s.d);
      const AttnParams p{true, align, {}};
      ForwardCounter counter;
      flash_forward(Q, K, V, p, TileSizes{s.Br, s.Bc}, &counter);
      const TileCounts c = count_tiles(Tiling{s.n, s.m, s.Br, s.Bc}, p.mask_for(s.n, s.m));
      INFO("s.n=" << s.n << " "
                  << "s.m=" << s.m << " "
                  << "int(align)=" << int(align));
      CHECK(counter.computed == c.computed());
      CHECK(counter.partial == c.partial);
      CHECK(counter.skipped == c.skipped);
      CHECK(counter.finished == Tiling{s.n, s.m, s.Br, s.Bc}.Tr());
    }
  }
}

TEST_CASE("the trace does not change the result") {
  TorchGenerator gen(5);
  const Mat<double> Q = gen.randn_matrix<double>(30, 6), K = gen.randn_matrix<double>(30, 6),
                    V = gen.randn_matrix<double>(30, 6);
  const AttnParams p{true, CausalAlign::top_left, {}};
  ForwardCounter counter;
  const auto a = flash_forward(Q, K, V, p, TileSizes{7, 4});
  const auto b = flash_forward(Q, K, V, p, TileSizes{7, 4}, &counter);
  CHECK(a.O == b.O);
  CHECK(a.L == b.L);
}
