// test_gpu.cpp — the CUDA kernels against the CPU reference: the teaching kernels in fp32 and
// fp64, the rungs above them (simt fp32; tc and mma bf16 and fp16, graded against naive attention
// in that precision); odd shapes, both alignments, fully masked rows, several heads; each
// kernel's trace against the CPU path's, event by event; the split-KV decode in bf16, fp16 and
// fp32; the GPU ring (one rank, and several ranks sharing this GPU with the blocks passed through
// the host) in fp32, bf16 and fp16. Exits 77 (ctest: skipped) without a GPU.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <initializer_list>

#include "check.hpp"
#include "cuda/host/cuda_api.hpp"
#include "cuda/host/decode_api.hpp"
#include "cuda/host/ring_api.hpp"
#include "cuda/host/rungs_api.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/teaching/flash_backward.hpp"
#include "grid/grid.hpp"

using namespace fd;

namespace {

struct Case {
  index_t b, h, n, m, d, Br, Bc;
};

const Case kCases[] = {{1, 1, 100, 100, 32, 16, 24}, {2, 3, 37, 53, 5, 8, 16},
                       {1, 2, 5, 5, 3, 16, 16},      {1, 1, 1, 7, 4, 4, 4},
                       {1, 1, 20, 9, 4, 4, 8},       {2, 1, 9, 20, 64, 8, 8},
                       {1, 1, 33, 33, 128, 16, 16},  {1, 1, 17, 30, 256, 8, 8}};

template <class T>
struct Heads {
  std::vector<T> Q, K, V, dO;
};

template <class T>
Heads<T> random_heads(const Case& c, std::uint32_t seed) {
  TorchGenerator gen(seed);
  auto draw = [&](index_t count) {
    const auto x = gen.randn(count);
    return std::vector<T>(x.begin(), x.end());
  };
  const index_t H = c.b * c.h;
  return {draw(H * c.n * c.d), draw(H * c.m * c.d), draw(H * c.m * c.d), draw(H * c.n * c.d)};
}

template <class T>
Mat<T> head(const std::vector<T>& x, index_t h, index_t rows, index_t d) {
  return Eigen::Map<const Mat<T>>(x.data() + h * rows * d, rows, d);
}

template <class T>
void check_case(const Case& c, const AttnParams& p, bool deterministic) {
  const Heads<T> in = random_heads<T>(c, 17);
  const cuda::Shape s{c.b, c.h, c.n, c.m, c.d};
  const index_t H = c.b * c.h;
  std::vector<T> O(in.Q.size()), L(std::size_t(H * c.n)), L_lo(L.size()), dQ(in.Q.size()),
      dK(in.K.size()), dV(in.K.size()), D(L.size());
  cuda::forward<T>(s, p, {c.Br, c.Bc}, {}, Impl::teaching, in.Q.data(), in.K.data(), in.V.data(),
                   O.data(), L.data(), L_lo.data());
  cuda::backward<T>(s, p, {c.Br, c.Bc}, {}, Impl::teaching, deterministic, in.Q.data(), in.K.data(),
                    in.V.data(), O.data(), L.data(), L_lo.data(), in.dO.data(), dQ.data(),
                    dK.data(), dV.data(), D.data());
  for (index_t h = 0; h < H; ++h) {
    const test::Problem<T> one{head(in.Q, h, c.n, c.d), head(in.K, h, c.m, c.d),
                               head(in.V, h, c.m, c.d), head(in.dO, h, c.n, c.d), p};
    const test::Outputs<T> got{head(O, h, c.n, c.d),
                               Eigen::Map<const Vec<T>>(L.data() + h * c.n, c.n),
                               head(dQ, h, c.n, c.d), head(dK, h, c.m, c.d), head(dV, h, c.m, c.d)};
    test::check_outputs(got, test::Expected<T>(one), "cuda teaching");
  }
}

// One grid case through the kernels: the forward, then the backward with atomics and the
// deterministic one, each graded in full.
template <class T>
void check_grid_case(const test::GridCase& c, const test::Problem<T>& p,
                     const test::Expected<T>& e) {
  const cuda::Shape s{1, 1, c.n, c.m, c.d};
  const TileSizes tiles = cuda::default_tiles(c.d, sizeof(T));
  test::Outputs<T> out{Mat<T>(c.n, c.d), Vec<T>(c.n), Mat<T>(c.n, c.d), Mat<T>(c.m, c.d),
                       Mat<T>(c.m, c.d)};
  Vec<T> L_lo(c.n), D(c.n);
  cuda::forward<T>(s, p.params, tiles, {}, Impl::teaching, p.Q.data(), p.K.data(), p.V.data(),
                   out.O.data(), out.L.data(), L_lo.data());
  for (bool deterministic : {false, true}) {
    cuda::backward<T>(s, p.params, tiles, {}, Impl::teaching, deterministic, p.Q.data(), p.K.data(),
                      p.V.data(), out.O.data(), out.L.data(), L_lo.data(), p.dO.data(),
                      out.dQ.data(), out.dK.data(), out.dV.data(), D.data());
    test::check_outputs(out, e, deterministic ? "cuda teaching (deterministic)" : "cuda teaching");
  }
}

// The rungs above the teaching kernel (simt in fp32, tc and mma in bf16 and fp16): the forward,
// graded head by head against naive attention in the same precision.
struct RungCase {
  index_t b, h, n, m, d;
};
// (the last two: many key tiles, so that hopper's two stages wrap round several times)
const RungCase kRungCases[] = {{1, 1, 1, 1, 64},    {1, 1, 64, 64, 128},  {2, 3, 37, 53, 64},
                               {1, 1, 20, 9, 128},  {1, 2, 130, 250, 64}, {1, 1, 257, 64, 128},
                               {2, 1, 200, 77, 64}, {1, 1, 96, 300, 128}, {1, 2, 300, 1030, 128},
                               {2, 2, 515, 700, 64}};

std::vector<float> rounded(const std::vector<float>& x, Precision p) {
  std::vector<float> out(x.size());
  for (std::size_t k = 0; k < x.size(); ++k) out[k] = round_to(p, x[k]);
  return out;
}

void check_rung(Impl impl, Precision prec, const RungCase& c, const AttnParams& p) {
  const Case shape{c.b, c.h, c.n, c.m, c.d, 64, 64};
  Heads<float> in = random_heads<float>(shape, 23);
  for (auto* x : {&in.Q, &in.K, &in.V, &in.dO}) *x = rounded(*x, prec);
  const index_t H = c.b * c.h;
  std::vector<float> O(in.Q.size()), L(std::size_t(H * c.n)), L_lo(L.size(), 1.0f);
  cuda::forward<float>({c.b, c.h, c.n, c.m, c.d}, p,
                       cuda::problem_tiles(impl, c.n, c.m, c.d, p.mask_for(c.n, c.m)),
                       Variant{prec, Mistake::none}, impl, in.Q.data(), in.K.data(), in.V.data(),
                       O.data(), L.data(), L_lo.data());
  for (float lo : L_lo) CHECK(lo == 0.0f);
  for (index_t h = 0; h < H; ++h) {
    const test::Problem<float> one{head(in.Q, h, c.n, c.d), head(in.K, h, c.m, c.d),
                                   head(in.V, h, c.m, c.d), head(in.dO, h, c.n, c.d), p};
    const test::Outputs<float> got{head(O, h, c.n, c.d),
                                   Eigen::Map<const Vec<float>>(L.data() + h * c.n, c.n),
                                   Mat<float>(), Mat<float>(), Mat<float>()};
    test::check_outputs(got, test::Expected<float>(one, prec), impl_name(impl), prec);
  }
}

// A rung's backward (mma, hopper), graded head by head against the naive backward in the same
// precision: the forward on the same rung first (O rounded as the kernel stores it, L in fp32),
// then the backward.
struct RungGradients {
  std::vector<float> O, L, dQ, dK, dV, D;
};
RungGradients rung_gradients(Impl impl, Precision prec, const RungCase& c, const AttnParams& p,
                             const Heads<float>& in, bool deterministic) {
  const cuda::Shape s{c.b, c.h, c.n, c.m, c.d};
  RungGradients g{
      std::vector<float>(in.Q.size()), std::vector<float>(std::size_t(s.heads() * c.n)),
      std::vector<float>(in.Q.size()), std::vector<float>(in.K.size()),
      std::vector<float>(in.K.size()), std::vector<float>(std::size_t(s.heads() * c.n))};
  const Variant v{prec, Mistake::none};
  cuda::forward<float>(s, p, cuda::problem_tiles(impl, c.n, c.m, c.d, p.mask_for(c.n, c.m)), v,
                       impl, in.Q.data(), in.K.data(), in.V.data(), g.O.data(), g.L.data());
  cuda::backward<float>(s, p, cuda::kernel_tiles(impl, c.d, cuda::Pass::bwd), v, impl,
                        deterministic, in.Q.data(), in.K.data(), in.V.data(), g.O.data(),
                        g.L.data(), nullptr, in.dO.data(), g.dQ.data(), g.dK.data(), g.dV.data(),
                        g.D.data());
  return g;
}

// Every head's O, L, dQ, dK, dV against the naive backward in precision prec, by the 2x rule.
void grade_heads(const Heads<float>& in, const RungGradients& g, const RungCase& c,
                 const AttnParams& p, Precision prec, const std::string& what) {
  for (index_t h = 0; h < c.b * c.h; ++h) {
    const test::Problem<float> one{head(in.Q, h, c.n, c.d), head(in.K, h, c.m, c.d),
                                   head(in.V, h, c.m, c.d), head(in.dO, h, c.n, c.d), p};
    const test::Outputs<float> got{
        head(g.O, h, c.n, c.d), Eigen::Map<const Vec<float>>(g.L.data() + h * c.n, c.n),
        head(g.dQ, h, c.n, c.d), head(g.dK, h, c.m, c.d), head(g.dV, h, c.m, c.d)};
    test::check_outputs(got, test::Expected<float>(one, prec), what, prec);
  }
}

void check_rung_backward(Impl impl, Precision prec, const RungCase& c, const AttnParams& p,
                         bool deterministic) {
  const Case shape{c.b, c.h, c.n, c.m, c.d, 64, 64};
  Heads<float> in = random_heads<float>(shape, 29);
  for (auto* x : {&in.Q, &in.K, &in.V, &in.dO}) *x = rounded(*x, prec);
  const RungGradients g = rung_gradients(impl, prec, c, p, in, deterministic);
  grade_heads(in, g, c, p, prec, std::string(impl_name(impl)) + " backward");
}

// Every event of a forward trace, flattened to numbers, in order.
class Flatten : public TraceSink {
 public:
  void on(const TileEvent& e) override {
    add({double(e.i), double(e.j), double(int(e.kind))});
    add(e.m_old), add(e.m_new), add(e.alpha), add(e.l);
  }
  void on(const TileSkippedEvent& e) override { add({-1.0, double(e.i), double(e.j)}); }
  void on(const RowsFinalEvent& e) override {
    add({-2.0, double(e.i)}), add(e.m), add(e.l), add(e.L);
  }
  std::vector<double> v;

 private:
  void add(const std::vector<double>& x) { v.insert(v.end(), x.begin(), x.end()); }
};

}  // namespace

TEST_CASE_TEMPLATE("kernels match the reference: odd shapes, masks, heads", T, float, double) {
  for (const Case& c : kCases) {
    for (bool causal : {false, true}) {
      for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
        if (!causal && align == CausalAlign::bottom_right) continue;
        for (bool det : {false, true}) {
          INFO("b=" << c.b << " h=" << c.h << " n=" << c.n << " m=" << c.m << " d=" << c.d
                    << " Br=" << c.Br << " Bc=" << c.Bc << " causal=" << causal
                    << " align=" << int(align) << " deterministic=" << det);
          check_case<T>(c, AttnParams{causal, align, {}}, det);
        }
      }
    }
  }
}

TEST_CASE_TEMPLATE("the grid: the kernels pass the correctness rule in full", T, float, double) {
  for (const auto& entry : test::grid_with_references<T>()) {
    INFO(entry.c.name());
    check_grid_case<T>(entry.c, entry.p, *entry.e);
  }
}

TEST_CASE("fully masked rows: O = 0, L = -inf, zero gradients, no NaN") {
  const Case c{1, 2, 11, 4, 8, 4, 2};
  const Heads<double> in = random_heads<double>(c, 3);
  const AttnParams p{true, CausalAlign::bottom_right, {}};
  std::vector<double> O(in.Q.size()), L(22), dQ(in.Q.size()), dK(in.K.size()), dV(in.K.size()),
      D(22);
  cuda::forward<double>({1, 2, 11, 4, 8}, p, {4, 2}, {}, Impl::teaching, in.Q.data(), in.K.data(),
                        in.V.data(), O.data(), L.data());
  cuda::backward<double>({1, 2, 11, 4, 8}, p, {4, 2}, {}, Impl::teaching, false, in.Q.data(),
                         in.K.data(), in.V.data(), O.data(), L.data(), nullptr, in.dO.data(),
                         dQ.data(), dK.data(), dV.data(), D.data());
  for (index_t h = 0; h < 2; ++h)
    for (index_t q = 0; q < 7; ++q) {
      CHECK(std::isinf(L[std::size_t(h * 11 + q)]));
      for (index_t x = 0; x < 8; ++x) {
        CHECK(O[std::size_t((h * 11 + q) * 8 + x)] == 0.0);
        CHECK(dQ[std::size_t((h * 11 + q) * 8 + x)] == 0.0);
      }
    }
  for (double v : dK) CHECK_FALSE(std::isnan(v));
}

TEST_CASE("the kernel's trace equals the CPU path's, event by event") {
  for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
    const Case c{1, 1, 19, 23, 4, 8, 6};
    const Heads<double> in = random_heads<double>(c, 5);
    const AttnParams p{true, align, {}};
    const Mat<double> Q = head(in.Q, 0, 19, 4), K = head(in.K, 0, 23, 4), V = head(in.V, 0, 23, 4);
    Flatten cpu, gpu;
    flash_forward(Q, K, V, p, {8, 6}, &cpu);
    std::vector<double> O(in.Q.size()), L(19);
    cuda::KernelTrace trace;
    cuda::forward<double>({1, 1, 19, 23, 4}, p, {8, 6}, {}, Impl::teaching, in.Q.data(),
                          in.K.data(), in.V.data(), O.data(), L.data(), nullptr, &trace);
    cuda::replay(trace, p.mask_for(19, 23), L, gpu);
    REQUIRE(cpu.v.size() == gpu.v.size());
    for (std::size_t k = 0; k < cpu.v.size(); ++k) {
      INFO("value " << k);
      CHECK(abs_error(gpu.v[k], cpu.v[k]) <= 1e-12 * std::max(1.0, std::abs(cpu.v[k])));
    }
  }
}

TEST_CASE("the rungs pass the correctness rule: odd shapes, both alignments, heads") {
  const std::pair<Impl, Precision> rungs[] = {
      {Impl::simt, Precision::fp32},   {Impl::tc, Precision::bf16},
      {Impl::mma, Precision::bf16},    {Impl::mma, Precision::fp16},
      {Impl::hopper, Precision::bf16}, {Impl::hopper, Precision::fp16}};
  for (const auto& rung : rungs)  // not a structured binding: INFO captures it (clang 14 refuses)
    for (const RungCase& c : kRungCases)
      for (bool causal : {false, true})
        for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
          if (!causal && align == CausalAlign::bottom_right) continue;
          const Impl impl = rung.first;
          const Precision prec = rung.second;
          INFO(impl_name(impl) << " " << precision_name(prec) << " b=" << c.b << " h=" << c.h
                               << " n=" << c.n << " m=" << c.m << " d=" << c.d
                               << " causal=" << causal << " align=" << int(align));
          check_rung(impl, prec, c, AttnParams{causal, align, {}});
        }
}

namespace {

// hopper's forward on each case in bf16 and fp16, not causal and causal with both alignments.
template <std::size_t N>
void check_hopper_forward(const RungCase (&cases)[N]) {
  for (Precision prec : {Precision::bf16, Precision::fp16})
    for (const RungCase& c : cases)
      for (bool causal : {false, true})
        for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
          if (!causal && align == CausalAlign::bottom_right) continue;
          INFO(std::string(precision_name(prec))
               << " b=" << c.b << " h=" << c.h << " n=" << c.n << " m=" << c.m
               << " causal=" << causal << " align=" << int(align));
          check_rung(Impl::hopper, prec, c, AttnParams{causal, align, {}});
        }
}

}  // namespace

// hopper's forward at d = 256 (the one rung compiled for it: 128 x 64 tiles, the ordinary grid),
// graded as the rungs are: the odd shapes at d = 256 (ragged key tiles of 64, rows past n, n < m
// and n > m, many key tiles so the two stages wrap), causal with both alignments, bf16 and fp16.
TEST_CASE(
    "hopper's forward at d = 256 passes the correctness rule: odd shapes, alignments, heads") {
  const RungCase cases[] = {{1, 1, 1, 1, 256},      {2, 3, 37, 53, 256},  {1, 1, 20, 9, 256},
                            {1, 2, 130, 250, 256},  {1, 1, 257, 64, 256}, {2, 1, 200, 77, 256},
                            {1, 2, 300, 1030, 256}, {2, 2, 515, 700, 256}};
  check_hopper_forward(cases);
}

// hopper's forward at d = 128 either side of where its grid changes (HopperDefaults: the
// persistent grid with O sent by TMA up to 32 key tiles, the ordinary grid past them), in both
// types, causal with both alignments: 32 key tiles exactly, 33 with a ragged last one, and more.
TEST_CASE(
    "hopper's forward at d = 128 passes the rule on both grids of its choice (32 key tiles)") {
  const RungCase cases[] = {{1, 1, 130, 4096, 128},
                            {1, 1, 130, 4097, 128},
                            {2, 1, 70, 5000, 128},
                            {1, 2, 300, 4200, 128}};
  check_hopper_forward(cases);
}

// hopper's forward at d = 64 either side of where its grid changes (HopperDefaults: the persistent
// grid up to 16 key tiles, or 64 on causal rows; the ordinary grid past them), in both types,
// causal with both alignments: 16 key tiles and 17, 64 and 65 (the last ragged).
TEST_CASE(
    "hopper's forward at d = 64 passes the rule on both grids of its choice (16 key tiles, 64 "
    "causal)") {
  const RungCase cases[] = {
      {1, 1, 130, 2048, 64}, {2, 1, 200, 2049, 64}, {1, 2, 300, 8192, 64}, {1, 1, 70, 8193, 64}};
  check_hopper_forward(cases);
}

const Impl kBackwardRungs[] = {Impl::mma, Impl::hopper};

TEST_CASE(
    "the rungs: mma's and hopper's backward pass the correctness rule: odd shapes, alignments, "
    "heads") {
  for (Impl impl : kBackwardRungs)
    for (bool deterministic : {false, true})
      for (Precision prec : {Precision::bf16, Precision::fp16})
        for (const RungCase& c : kRungCases)
          for (bool causal : {false, true})
            for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
              if (!causal && align == CausalAlign::bottom_right) continue;
              INFO(impl_name(impl)
                   << " " << precision_name(prec) << " b=" << c.b << " h=" << c.h << " n=" << c.n
                   << " m=" << c.m << " d=" << c.d << " causal=" << causal
                   << " align=" << int(align) << " deterministic=" << deterministic);
              check_rung_backward(impl, prec, c, AttnParams{causal, align, {}}, deterministic);
            }
}

TEST_CASE(
    "the rungs: mma's and hopper's backward give rows that see no key zero gradients; "
    "--deterministic is bit-identical") {
  for (Impl impl : kBackwardRungs) {
    INFO(std::string(impl_name(impl)));
    const RungCase c{1, 2, 90, 20, 64};  // bottom-right, n > m: rows 0 .. 69 see no key
    const AttnParams p{true, CausalAlign::bottom_right, {}};
    Heads<float> in = random_heads<float>(Case{1, 2, 90, 20, 64, 64, 64}, 31);
    for (auto* x : {&in.Q, &in.K, &in.V, &in.dO}) *x = rounded(*x, Precision::bf16);
    for (bool deterministic : {false, true}) {
      INFO("deterministic=" << deterministic);
      const RungGradients a = rung_gradients(impl, Precision::bf16, c, p, in, deterministic);
      for (index_t h = 0; h < 2; ++h)
        for (index_t q = 0; q < 70; ++q)
          for (index_t x = 0; x < 64; ++x)
            REQUIRE(a.dQ[std::size_t((h * 90 + q) * 64 + x)] == 0.0f);
      for (const auto* g : {&a.dQ, &a.dK, &a.dV})
        for (float v : *g) REQUIRE(std::isfinite(v));
    }
    // Many key tiles add into each dQ row, so the order of the atomics could show; not here.
    const RungCase big{2, 3, 1000, 1100, 128};
    Heads<float> x = random_heads<float>(Case{2, 3, 1000, 1100, 128, 64, 64}, 37);
    for (auto* y : {&x.Q, &x.K, &x.V, &x.dO}) *y = rounded(*y, Precision::bf16);
    const AttnParams none{false, {}, {}};
    const RungGradients a = rung_gradients(impl, Precision::bf16, big, none, x, true);
    const RungGradients b = rung_gradients(impl, Precision::bf16, big, none, x, true);
    CHECK(a.dQ == b.dQ);
    CHECK(a.dK == b.dK);
    CHECK(a.dV == b.dV);
  }
}

// Keys past m (the last tile's zero rows) carry P = 0, even for a row whose exp(-L) overflows fp16
// in dS: all scores of row 0 are -24 (K's rows all ones, Q's row 0 = -3), so L is about -19.
TEST_CASE(
    "the rungs: mma's and hopper's backward ignore the rows past the last key, whatever L is") {
  for (Impl impl : kBackwardRungs) {
    const index_t n = 10, m = 100, d = 64;
    Heads<float> in = random_heads<float>(Case{1, 1, n, m, d, 64, 64}, 41);
    std::fill(in.K.begin(), in.K.end(), 1.0f);
    std::fill(in.Q.begin(), in.Q.begin() + d, -3.0f);
    for (auto* x : {&in.Q, &in.K, &in.V, &in.dO}) *x = rounded(*x, Precision::fp16);
    const AttnParams none{false, {}, {}};
    for (bool deterministic : {false, true}) {
      INFO(std::string(impl_name(impl)) << " deterministic=" << deterministic);
      const RungGradients g =
          rung_gradients(impl, Precision::fp16, RungCase{1, 1, n, m, d}, none, in, deterministic);
      for (const auto* x : {&g.dQ, &g.dK, &g.dV})
        for (float v : *x) REQUIRE(std::isfinite(v));
      const test::Problem<float> one{head(in.Q, 0, n, d), head(in.K, 0, m, d), head(in.V, 0, m, d),
                                     head(in.dO, 0, n, d), none};
      const test::Outputs<float> got{head(g.O, 0, n, d),
                                     Eigen::Map<const Vec<float>>(g.L.data(), n),
                                     head(g.dQ, 0, n, d), head(g.dK, 0, m, d), head(g.dV, 0, m, d)};
      test::check_outputs(got, test::Expected<float>(one, Precision::fp16),
                          std::string(impl_name(impl)) + " backward", Precision::fp16);
    }
  }
}

TEST_CASE("the rungs: fully masked rows give O = 0 and L = -inf") {
  for (Impl impl : {Impl::simt, Impl::tc, Impl::mma, Impl::hopper}) {
    const Precision prec = impl == Impl::simt ? Precision::fp32 : Precision::bf16;
    const Case c{1, 2, 90, 20, 64, 64, 64};  // bottom-right, n > m: rows 0 .. 69 see no key
    const Heads<float> in = random_heads<float>(c, 3);
    std::vector<float> O(in.Q.size()), L(180);
    cuda::forward<float>(
        {1, 2, 90, 20, 64}, AttnParams{true, CausalAlign::bottom_right, {}},
        cuda::problem_tiles(impl, 90, 20, 64, Mask{true, CausalAlign::bottom_right, 90, 20}),
        Variant{prec, Mistake::none}, impl, rounded(in.Q, prec).data(), rounded(in.K, prec).data(),
        rounded(in.V, prec).data(), O.data(), L.data());
    for (index_t h = 0; h < 2; ++h)
      for (index_t q = 0; q < 90; ++q) {
        INFO(impl_name(impl) << " head " << h << " row " << q);
        const float Lq = L[std::size_t(h * 90 + q)];
        CHECK((q < 70 ? std::isinf(Lq) && Lq < 0 : std::isfinite(Lq)));
        for (index_t x = 0; x < 64; ++x) {
          const float v = O[std::size_t((h * 90 + q) * 64 + x)];
          CHECK((q < 70 ? v == 0.0f : std::isfinite(v)));
        }
      }
  }
}

// Two shapes: at d = 64 hopper's Br is 192 on the first (150 x 100) and 128 on the second
// (256 x 256 causal: 192 would compute twice the tile products; problem_tiles), so both of its
// traced kernels at d = 64 are compared; and hopper's at d = 256 (128 x 64 tiles).
TEST_CASE("the rungs' traces equal the CPU path's, event by event (the same tile math)") {
  struct Size {
    index_t n, m;
  };
  for (Size z : {Size{150, 100}, Size{256, 256}})
    for (Impl impl : {Impl::simt, Impl::tc, Impl::mma, Impl::hopper})
      for (index_t d : {64, 128, 256})
        for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
          if (d == 256 && impl != Impl::hopper) continue;  // (hopper alone is built for 256)
          const Precision prec = impl == Impl::simt ? Precision::fp32 : Precision::bf16;
          const Case c{1, 2, z.n, z.m, d, 64, 64};  // two heads: the trace is head 0's alone
          const Heads<float> in = random_heads<float>(c, 5);
          const AttnParams p{true, align, {}};
          const std::vector<float> q = rounded(in.Q, prec), k = rounded(in.K, prec),
                                   v = rounded(in.V, prec);
          const Mat<float> Q = head(q, 0, z.n, d), K = head(k, 0, z.m, d), V = head(v, 0, z.m, d);
          const TileSizes tiles = cuda::problem_tiles(impl, z.n, z.m, d, p.mask_for(z.n, z.m));
          Flatten cpu, gpu;
          flash_forward(Q, K, V, p, tiles, &cpu, Variant{prec, Mistake::none});
          std::vector<float> O(q.size()), L(std::size_t(2 * z.n));
          cuda::KernelTrace trace;
          cuda::forward<float>({1, 2, z.n, z.m, d}, p, tiles, Variant{prec, Mistake::none}, impl,
                               q.data(), k.data(), v.data(), O.data(), L.data(), nullptr, &trace);
          cuda::replay(trace, p.mask_for(z.n, z.m), std::vector<double>(L.begin(), L.begin() + z.n),
                       gpu);
          INFO(impl_name(impl) << " n " << z.n << " m " << z.m << " d " << d << " align "
                               << int(align) << " Br " << tiles.Br);
          REQUIRE(cpu.v.size() == gpu.v.size());
          int off = 0;
          for (std::size_t x = 0; x < cpu.v.size(); ++x)  // sums in another order: fp32 rounding
            if (!(abs_error(gpu.v[x], cpu.v[x]) <= 2e-5 * std::max(1.0, std::abs(cpu.v[x]))) &&
                ++off <= 5)
              MESSAGE("value " << x << ": gpu " << gpu.v[x] << ", cpu " << cpu.v[x]);
          CHECK(off == 0);
        }
}

TEST_CASE("deterministic mode is bit-reproducible") {
  const Case c{1, 2, 64, 64, 32, 16, 16};
  const Heads<float> in = random_heads<float>(c, 9);
  const cuda::Shape s{1, 2, 64, 64, 32};
  std::vector<float> O(in.Q.size()), L(128), D(128);
  cuda::forward<float>(s, AttnParams{}, {16, 16}, {}, Impl::teaching, in.Q.data(), in.K.data(),
                       in.V.data(), O.data(), L.data());
  std::vector<float> a(in.Q.size()), b(in.Q.size()), k(in.K.size()), v(in.K.size());
  cuda::backward<float>(s, AttnParams{}, {16, 16}, {}, Impl::teaching, true, in.Q.data(),
                        in.K.data(), in.V.data(), O.data(), L.data(), nullptr, in.dO.data(),
                        a.data(), k.data(), v.data(), D.data());
  cuda::backward<float>(s, AttnParams{}, {16, 16}, {}, Impl::teaching, true, in.Q.data(),
                        in.K.data(), in.V.data(), O.data(), L.data(), nullptr, in.dO.data(),
                        b.data(), k.data(), v.data(), D.data());
  CHECK(a == b);
}

// The GPU decode (cuda/at_scale/decode.cuh): split-KV with the group's last block merging, graded
// head by head by the rule in bf16, fp16 and fp32 (the inputs hold values of that format); every
// split's L_s against the logsumexp of the reference's scores over the split's keys, -inf exactly
// where the mask hides them all.
struct DecodeCase {
  index_t heads, n, m, d;
};
const DecodeCase kDecodeCases[] = {{1, 1, 1, 64},    {2, 1, 37, 128},    {1, 3, 1000, 64},
                                   {2, 3, 37, 64},   {3, 3, 70001, 128}, {2, 1, 70001, 64},
                                   {2, 5, 1000, 128}};

// log sum_{k in keys} exp(S(q, k)) in double (-inf when every score is).
double split_lse(const Mat<double>& S, index_t q, Range keys) {
  double mx = -INFINITY, sum = 0;
  for (index_t k = keys.begin; k < keys.end; ++k) mx = std::max(mx, S(q, k));
  if (std::isinf(mx)) return mx;
  for (index_t k = keys.begin; k < keys.end; ++k) sum += std::exp(S(q, k) - mx);
  return mx + std::log(sum);
}

void check_decode_parts(const DecodeCase& c, const cuda::DecodeRun& r, index_t num_splits,
                        index_t head, const Mat<double>& scores) {
  const Tiling t = decode_tiling({c.heads, c.n, c.m, c.d}, cuda::decode_tiles(c.n));
  REQUIRE(r.L_part.size() == std::size_t(c.heads * num_splits * c.n));
  REQUIRE(r.O_part.size() == std::size_t(c.heads * num_splits * c.n * c.d));
  int off = 0;
  for (index_t s = 0; s < num_splits; ++s)
    for (index_t q = 0; q < c.n; ++q) {
      const double want = split_lse(scores, q, split_keys(t, num_splits, s));
      const double got = r.L_part[std::size_t((head * num_splits + s) * c.n + q)];
      const bool ok =
          std::isinf(want) ? got == want : std::abs(got - want) <= 1e-4 * (1 + std::abs(want));
      if (!ok && ++off <= 5)
        MESSAGE("split " << s << " row " << q << ": L_s " << got << ", want " << want);
    }
  CHECK(off == 0);
}

void check_decode(const DecodeCase& c, Precision prec, const AttnParams& p) {
  const index_t H = c.heads;
  Heads<float> in = random_heads<float>(Case{1, H, c.n, c.m, c.d, 1, 1}, 43);
  for (auto* x : {&in.Q, &in.K, &in.V}) *x = rounded(*x, prec);
  const DecodeShape shape{H, c.n, c.m, c.d};
  const Tiling t = decode_tiling(shape, cuda::decode_tiles(c.n));
  const cuda::DecodeWorkers w = cuda::decode_workers(prec, c.d, c.n);
  const index_t units = decode_units(shape, cuda::decode_tiles(c.n));
  // the plan without the GPU's minimum split (more splits at small m), and flashdemo decode's
  const index_t plan = plan_splits(units, w.workers(), t.Tc()).splits;
  const index_t cli_plan =
      plan_splits(units, w.workers(), t.Tc(), gpu_min_split_tiles(t.Bc)).splits;
  std::vector<test::Expected<float>> expected;
  for (index_t h = 0; h < H; ++h) {
    const test::Problem<float> one{head(in.Q, h, c.n, c.d), head(in.K, h, c.m, c.d),
                                   head(in.V, h, c.m, c.d), Mat<float>(), p};
    expected.emplace_back(one, prec);
  }
  const cuda::DecodeInputs inputs{in.Q.data(), in.K.data(), in.V.data(), 0};
  for (index_t num_splits : {index_t(1), index_t(2), index_t(7), plan, cli_plan}) {
    if (num_splits > t.Tc()) continue;
    const cuda::KvFeed feed = cuda::decode_feed(c.m, num_splits);  // as flashdemo decode feeds
    INFO("splits " << num_splits << " (the plans: " << plan << ", " << cli_plan << "), feed "
                   << cuda::kv_feed_name(feed));
    const cuda::DecodeRun r = cuda::decode(shape, p, prec, num_splits, inputs, {}, 0, 0, feed);
    for (index_t h = 0; h < H; ++h) {
      INFO("head " << h);
      const test::Outputs<float> got{head(r.O, h, c.n, c.d),
                                     Eigen::Map<const Vec<float>>(r.L.data() + h * c.n, c.n),
                                     Mat<float>(), Mat<float>(), Mat<float>()};
      test::check_outputs(got, expected[std::size_t(h)], "decode", prec);
      check_decode_parts(c, r, num_splits, h, expected[std::size_t(h)].rf.S);
    }
  }
}

TEST_CASE("decode: split-KV on the GPU passes the rule, every split's L_s is its keys' logsumexp") {
  for (Precision prec : {Precision::bf16, Precision::fp16, Precision::fp32})
    for (const DecodeCase& c : kDecodeCases)
      for (bool causal : {false, true})
        for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
          if (!causal && align == CausalAlign::bottom_right) continue;
          INFO(std::string(precision_name(prec))
               << " heads=" << c.heads << " n=" << c.n << " m=" << c.m << " d=" << c.d
               << " causal=" << causal << " align=" << int(align));
          check_decode(c, prec, AttnParams{causal, align, {}});
        }
}

TEST_CASE("decode: the inputs drawn on the GPU come back as the kernel read them; reps are timed") {
  const DecodeShape shape{3, 2, 500, 64};
  const AttnParams p{true, CausalAlign::bottom_right, {}};
  const cuda::DecodeRun r = cuda::decode(
      shape, p, Precision::bf16, 3, cuda::DecodeInputs{nullptr, nullptr, nullptr, 5}, {0, 2}, 1, 4);
  REQUIRE(r.Q.size() == std::size_t(2 * 2 * 64));
  REQUIRE(r.K.size() == std::size_t(2 * 500 * 64));
  CHECK(r.ms.size() == 4);
  double sum = 0, sq = 0;
  for (float x : r.K) sum += x, sq += double(x) * x;
  CHECK(std::abs(sum / double(r.K.size())) < 0.05);  // normal draws: mean 0, variance 1
  CHECK(std::abs(sq / double(r.K.size()) - 1) < 0.05);
  for (index_t k = 0; k < 2; ++k) {  // heads 0 and 2, graded by the rule
    const index_t h = k * 2;
    const test::Problem<float> one{head(r.Q, k, 2, 64), head(r.K, k, 500, 64),
                                   head(r.V, k, 500, 64), Mat<float>(), p};
    const test::Outputs<float> got{head(r.O, h, 2, 64),
                                   Eigen::Map<const Vec<float>>(r.L.data() + h * 2, 2),
                                   Mat<float>(), Mat<float>(), Mat<float>()};
    test::check_outputs(got, test::Expected<float>(one, Precision::bf16), "decode (drawn)",
                        Precision::bf16);
  }
}

// The loads a step ahead and the bulk copies through shared memory (KvFeed) compute the same
// arithmetic in the same order: the same bits as the plain kernel, every split's parts too.
TEST_CASE("decode: every feed of K and V gives the plain kernel's bits") {
  for (Precision prec : {Precision::bf16, Precision::fp16, Precision::fp32})
    for (const DecodeCase& c : kDecodeCases)
      for (bool causal : {false, true}) {
        const DecodeShape shape{c.heads, c.n, c.m, c.d};
        const AttnParams p{causal, CausalAlign::bottom_right, {}};
        const index_t Tc = decode_tiling(shape, cuda::decode_tiles(c.n)).Tc();
        for (index_t num_splits : {index_t(1), index_t(3)}) {
          if (num_splits > Tc) continue;
          const cuda::DecodeInputs drawn{nullptr, nullptr, nullptr, 11};
          const cuda::DecodeRun plain =
              cuda::decode(shape, p, prec, num_splits, drawn, {}, 0, 0, cuda::KvFeed::plain);
          for (cuda::KvFeed feed : {cuda::KvFeed::ahead, cuda::KvFeed::bulk}) {
            INFO(std::string(precision_name(prec))
                 << " heads=" << c.heads << " n=" << c.n << " m=" << c.m << " d=" << c.d
                 << " causal=" << causal << " splits=" << num_splits
                 << " feed=" << std::string(cuda::kv_feed_name(feed)));
            const cuda::DecodeRun other =
                cuda::decode(shape, p, prec, num_splits, drawn, {}, 0, 0, feed);
            CHECK(plain.O == other.O);
            CHECK(plain.L == other.L);
            CHECK(plain.O_part == other.O_part);
            CHECK(plain.L_part == other.L_part);
          }
        }
      }
}

TEST_CASE("decode: the feed by the splits' length, bulk from 4096 keys a split on sm_90") {
  const cuda::KvFeed long_feed =
      cuda::gpu_info().cc_major >= 9 ? cuda::KvFeed::bulk : cuda::KvFeed::ahead;
  CHECK(cuda::decode_feed(65536, 29) == cuda::KvFeed::ahead);  // 2259 keys a split
  CHECK(cuda::decode_feed(65536, 16) == long_feed);            // 4096
  CHECK(cuda::decode_feed(65535, 16) == cuda::KvFeed::ahead);  // 4095
  CHECK(cuda::decode_feed(1048576, 29) == long_feed);
  CHECK(cuda::decode_feed(1000, 1) == cuda::KvFeed::ahead);
}

// Not a test (-tc="decode speed*" --no-skip): the three feeds of K and V (plain, ahead, bulk), each
// with the plan for its occupancy (capped at 2 blocks an SM, with the GPU's minimum split, as
// flashdemo decode plans; flashdemo decode then runs decode_feed's choice of the two), at
// decode_compare.py's cases, beside a device-to-device copy (bytes read + written) of the K and V
// bytes: TB/s = 2 h m d 2 bytes / median time of 50.
TEST_CASE("decode speed, printed" * doctest::skip()) {
  for (index_t m : {65536, 1048576})
    for (index_t h : {8, 32})
      for (index_t d : {64, 128}) {
        const DecodeShape shape{h, 1, m, d};
        const double bytes = 2.0 * double(h * m * d) * 2;
        const cuda::CopyBandwidth copy = cuda::copy_bandwidth(bytes, 20);
        for (cuda::KvFeed feed : {cuda::KvFeed::plain, cuda::KvFeed::ahead, cuda::KvFeed::bulk}) {
          const cuda::DecodeWorkers w = cuda::decode_workers(Precision::bf16, d, 1, feed);
          const Tiling t = decode_tiling(shape, cuda::decode_tiles(1));
          const index_t splits = plan_splits(decode_units(shape, cuda::decode_tiles(1)),
                                             w.workers(), t.Tc(), gpu_min_split_tiles(t.Bc))
                                     .splits;  // the plan flashdemo decode runs
          cuda::DecodeRun r =
              cuda::decode(shape, AttnParams{}, Precision::bf16, splits,
                           cuda::DecodeInputs{nullptr, nullptr, nullptr, 3}, {}, 3, 50, feed);
          std::sort(r.ms.begin(), r.ms.end());
          const double ms = r.ms[r.ms.size() / 2], tbps = bytes / (ms * 1e-3) / 1e12;
          MESSAGE("decode m=" << m << " h=" << h << " d=" << d
                              << " feed=" << std::string(cuda::kv_feed_name(feed))
                              << " S=" << splits << " blocks/SM=" << w.blocks_per_sm << ": " << ms
                              << " ms, " << tbps << " TB/s, " << 100 * tbps / copy.tbps
                              << " % of the copy's " << copy.tbps << " TB/s");
        }
      }
}

// The GPU ring (cuda/host/ring_api.hpp) on P ranks sharing this GPU: threads of this process, the
// blocks passed through the host (RingLink::host; P = 1 passes none: the one-GPU run of
// `flashdemo ring --device cuda`). The same schedule, steps and merge as over NCCL, only the link
// differs. Every array by the rule against the reference, in the run's precision (bf16, fp16:
// against naive attention storing S, P and the outputs in it); the CPU ring is held to the same
// rule on the same kinds of shapes (test_ring.cpp).
void check_gpu_ring(index_t n, index_t m, index_t d, index_t P, const AttnParams& p,
                    RingLayout layout, RingPass pass, Precision prec) {
  TorchGenerator gen(29);
  auto draw = [&](index_t rows) {
    const std::vector<double> x = gen.randn(rows * d);
    Mat<float> out(rows, d);
    for (index_t k = 0; k < out.size(); ++k)
      out.data()[k] = round_to(prec, float(x[std::size_t(k)]));
    return out;
  };
  const bool bwd = pass == RingPass::bwd;
  const test::Problem<float> pr{draw(n), draw(m), draw(m), bwd ? draw(n) : Mat<float>(), p};
  const RingSchedule s = ring_schedule(n, m, d, P, layout, p.mask_for(n, m));
  const RingInputs<float> in{pr.Q.data(), pr.K.data(), pr.V.data(), bwd ? pr.dO.data() : nullptr};
  const RingResult<float> r = cuda::ring_in_process(s, p, pass, prec, in);
  const Precision stored = prec == Precision::fp32 ? Precision::fp64 : prec;
  auto mat = [d](const std::vector<float>& x, index_t rows) {
    return Mat<float>(Eigen::Map<const Mat<float>>(x.data(), rows, d));
  };
  REQUIRE(r.O.size() == std::size_t(n * d));
  REQUIRE(r.L.size() == std::size_t(n));
  test::Outputs<float> got{mat(r.O, n), Eigen::Map<const Vec<float>>(r.L.data(), n), {}, {}, {}};
  if (bwd) {
    REQUIRE(r.dQ.size() == std::size_t(n * d));
    REQUIRE(r.dK.size() == std::size_t(m * d));
    REQUIRE(r.dV.size() == std::size_t(m * d));
    got.dQ = mat(r.dQ, n), got.dK = mat(r.dK, m), got.dV = mat(r.dV, m);
  }
  test::check_outputs(got, test::Expected<float>(pr, stored), "gpu ring", prec);
  REQUIRE(r.forward.size() == std::size_t(P));
  REQUIRE(r.backward.size() == (bwd ? std::size_t(P) : 0));
  for (const auto* times : {&r.forward, &r.backward})
    for (const RingTimes& t : *times) {
      CHECK(t.compute.size() == std::size_t(P));
      CHECK(t.step.size() == std::size_t(P));
      CHECK(t.wait.size() == std::size_t(P));
      CHECK(t.comm.size() == std::size_t(P));
      for (std::size_t k = 0; k < t.step.size(); ++k) {
        CHECK(t.compute[k] >= 0);
        CHECK(t.step[k] >= t.compute[k] * 0.99);  // the step holds its compute (event rounding)
      }
    }
}

TEST_CASE("ring: the GPU ring passes the rule, one rank and 2 to 4 sharing this GPU") {
  const AttnParams none{};
  const AttnParams top{true, CausalAlign::top_left, {}};
  const AttnParams bottom{true, CausalAlign::bottom_right, {}};
  struct Shape {
    index_t n, m, d;
  };
  // Odd sizes, not multiples of the tiles (64 x 64 up to d = 64, 32 x 32 at d = 128, 16 x 16 at
  // d = 256), n != m both ways, one row; the last two several tiles in a rank's block.
  const Shape shapes[] = {{61, 61, 16}, {37, 53, 64},   {53, 30, 128}, {1, 9, 8},
                          {7, 3, 256},  {300, 261, 64}, {515, 515, 32}};
  for (Precision prec : {Precision::fp32, Precision::bf16, Precision::fp16})
    for (index_t P = 1; P <= 4; ++P)
      for (const Shape& sh : shapes)
        for (const AttnParams* p : {&none, &top, &bottom})
          for (RingLayout layout : {RingLayout::contiguous, RingLayout::zigzag}) {
            if (P > std::min(sh.n, sh.m)) continue;
            // std::string: doctest prints a const char* as a pointer.
            INFO(std::string(precision_name(prec))
                 << " P = " << P << ", n = " << sh.n << ", m = " << sh.m << ", d = " << sh.d
                 << ", causal " << p->causal
                 << std::string(p->align == CausalAlign::top_left ? " top-left" : " bottom-right")
                 << std::string(layout == RingLayout::zigzag ? ", zigzag" : ", contiguous"));
            check_gpu_ring(sh.n, sh.m, sh.d, P, *p, layout, RingPass::bwd, prec);
          }
}

TEST_CASE("ring: the GPU ring's forward alone; a scale; one rank passes nothing") {
  const AttnParams scaled{true, CausalAlign::top_left, 0.5};
  for (Precision prec : {Precision::fp32, Precision::bf16})
    for (index_t P : {1, 3}) {
      INFO(std::string(precision_name(prec)) << " P = " << P);
      check_gpu_ring(200, 170, 64, P, scaled, RingLayout::zigzag, RingPass::fwd, prec);
    }
  const RingSchedule s = ring_schedule(40, 40, 8, 1, RingLayout::zigzag, Mask{});
  const std::vector<float> x(40 * 8, 0.25f);
  const RingResult<float> r = cuda::ring_in_process(s, AttnParams{}, RingPass::bwd, Precision::fp32,
                                                    {x.data(), x.data(), x.data(), x.data()});
  for (const auto* times : {&r.forward, &r.backward}) {
    REQUIRE(times->size() == 1);
    CHECK((*times)[0].comm[0] == 0.0);
  }
  CHECK_THROWS_AS(cuda::ring_in_process(s, AttnParams{}, RingPass::fwd, Precision::fp64,
                                        {x.data(), x.data(), x.data(), nullptr}),
                  cuda::CudaError);
}

// Not a test (skipped unless asked: -tc="rung speed*" --no-skip): each rung's forward time at
// FlashAttention's benchmark shape, for a quick look while developing; `flashdemo ladder` is the
// measurement.
TEST_CASE("rung speed, printed" * doctest::skip()) {
  for (index_t d : {64, 128})
    for (bool causal : {false, true}) {
      const index_t n = 4096, b = 4, h = 2048 / d;
      const Case c{b, h, n, n, d, 64, 64};
      const Heads<float> in = random_heads<float>(c, 1);
      const double flops =
          4.0 * double(b * h) * double(n) * double(n) * double(d) / (causal ? 2 : 1);
      for (Impl impl : {Impl::teaching, Impl::simt, Impl::tc, Impl::mma, Impl::hopper}) {
        const Precision prec = tensor_cores(impl) ? Precision::bf16 : Precision::fp32;
        const std::vector<float> q = rounded(in.Q, prec), k = rounded(in.K, prec),
                                 v = rounded(in.V, prec);
        const TileSizes tiles =
            impl == Impl::teaching
                ? cuda::default_tiles(d, 4)
                : cuda::problem_tiles(impl, n, n, d, AttnParams{causal, {}, {}}.mask_for(n, n));
        auto t = cuda::time_kernels<float>({b, h, n, n, d}, AttnParams{causal, {}, {}}, tiles,
                                           Variant{prec, Mistake::none}, impl, cuda::Pass::fwd,
                                           false, q.data(), k.data(), v.data(), q.data(), 2,
                                           impl == Impl::teaching ? 3 : 10);
        std::sort(t.ms.begin(), t.ms.end());
        const double ms = t.ms[t.ms.size() / 2];
        MESSAGE(std::string(impl_name(impl)) << " d=" << d << " causal=" << causal << ": " << ms
                                             << " ms, " << flops / ms / 1e9 << " TFLOP/s");
      }
    }
}

// Not a test either (-tc="hopper steps speed*" --no-skip): hopper's forward with each overlap
// step on and off on the ordinary grid, and on the persistent grid, side by side, at n = 1024,
// 4096 and 16384.
TEST_CASE("hopper steps speed, printed" * doctest::skip()) {
  for (index_t n : {1024, 4096, 16384})
    for (index_t d : {64, 128, 256})
      for (bool causal : {false, true}) {
        const index_t b = 16384 / n, h = 2048 / d;
        const Heads<float> in = random_heads<float>(Case{b, h, n, n, d, 64, 64}, 1);
        const double flops =
            4.0 * double(b * h) * double(n) * double(n) * double(d) / (causal ? 2 : 1);
        const std::vector<float> q = rounded(in.Q, Precision::bf16),
                                 k = rounded(in.K, Precision::bf16),
                                 v = rounded(in.V, Precision::bf16);
        // ping-pong, overlap, persistent, consumers, O staged (-1: the rung's)
        using F = cuda::HopperFwdSteps;
        for (F steps : {F{0, 0, 0, 2}, F{0, 1, 0, 2}, F{1, 0, 0, 2}, F{1, 1, 0, 2}, F{0, -1, 1, 2},
                        F{0, 0, 0, 3}, F{0, 1, 0, 3}, F{0, 0, 1, 3}, F{0, 1, 1, 3},
                        F{-1, -1, -1, -1, 0}, F{-1, -1, -1, -1, 1}}) {
          if (steps.consumers == 3 && d != 64) continue;  // (three consumer warpgroups: d = 64)
          if ((steps.persistent == 1 || steps.stage_o == 1) && !cuda::hopper_forward_room(d))
            continue;  // (d = 256: neither fits shared memory)
          auto t = cuda::hopper_time_steps<float>({b, h, n, n, d}, AttnParams{causal, {}, {}},
                                                  Variant{Precision::bf16, Mistake::none}, steps,
                                                  q.data(), k.data(), v.data(), 3, 20);
          std::sort(t.ms.begin(), t.ms.end());
          const double ms = t.ms[t.ms.size() / 2];
          MESSAGE("hopper n=" << n << " d=" << d << " causal=" << causal
                              << " ping_pong=" << steps.ping_pong << " overlap=" << steps.overlap
                              << " persistent=" << steps.persistent
                              << " consumers=" << steps.consumers << " stage_o=" << steps.stage_o
                              << ": " << ms << " ms, " << flops / ms / 1e9 << " TFLOP/s");
        }
      }
}

namespace {

// Random Q, K, V, dO of the speed printouts, rounded to bf16 (seed 1), and the backward's FLOPs
// (2.5 times the forward's 4 heads n n d, halved when causal).
Heads<float> bf16_heads(const Case& c) {
  Heads<float> in = random_heads<float>(c, 1);
  for (auto* x : {&in.Q, &in.K, &in.V, &in.dO}) *x = rounded(*x, Precision::bf16);
  return in;
}
double backward_flops(index_t heads, index_t n, index_t d, bool causal) {
  return 2.5 * 4.0 * double(heads) * double(n) * double(n) * double(d) / (causal ? 2 : 1);
}

}  // namespace

// Every forward setting `flashdemo ladder --steps` times, and at d = 64 the three consumer
// warpgroups on both grids with and without the overlap, is graded as the rung is (check_rung's
// rule, head by head): bf16, both head dims, causal bottom-right and not; and at each d a case
// of 512 work items, several a block on the persistent grid (its stages' phases run on across
// them: with the overlap, d = 128's, as without), with rows that see no key; and at each d one
// whose first query tiles see no key at all (n - m = 400, causal: items the producer skips; at
// Br = 192, tiles 0 and 1). O staged for the TMA store on each grid, with and without the
// overlap; and d = 256 (its own tiles, the ordinary grid).
TEST_CASE("hopper's steps: every forward setting passes the correctness rule") {
  const RungCase cases[] = {{2, 3, 333, 290, 64},    {2, 3, 333, 290, 128},
                            {4, 16, 1000, 900, 64},  {4, 16, 1000, 900, 128},
                            {4, 16, 1000, 600, 128}, {4, 16, 1000, 600, 64},
                            {2, 3, 333, 290, 256},   {2, 4, 1000, 600, 256}};
  for (const RungCase& c : cases)
    for (bool causal : {false, true}) {
      const AttnParams p{causal, causal ? CausalAlign::bottom_right : CausalAlign::top_left, {}};
      Heads<float> in = random_heads<float>(Case{c.b, c.h, c.n, c.m, c.d, 64, 64}, 29);
      for (auto* x : {&in.Q, &in.K, &in.V}) *x = rounded(*x, Precision::bf16);
      const index_t H = c.b * c.h;
      std::vector<test::Expected<float>> expected;  // each head's reference, once (no backward)
      for (index_t h = 0; h < H; ++h)
        expected.emplace_back(test::Problem<float>{head(in.Q, h, c.n, c.d), head(in.K, h, c.m, c.d),
                                                   head(in.V, h, c.m, c.d), Mat<float>(), p},
                              Precision::bf16);
      // ladder --steps' settings, and at d = 64 the three consumer warpgroups (Br = 192, the
      // rung's there but on short causal rows) on each grid, with the overlap and without, and
      // two on the persistent grid (the rung's on short causal rows)
      std::vector<cuda::HopperFwdSteps> settings;
      for (cuda::HopperStep step : cuda::hopper_steps(cuda::Pass::fwd, c.d, Precision::bf16))
        settings.push_back(cuda::hopper_fwd_setting(step));
      if (c.d == 64) {
        for (int persistent : {0, 1})
          for (int overlap : {0, 1}) settings.push_back({0, overlap, persistent, 3});
        settings.push_back({0, 0, 1, 2});  // two on the persistent grid without the overlap
        settings.push_back({0, 1, 1, 2});  // and with it: short causal rows' choice
        // 1 in 8 or 1 in 4 of the exps on the FMA pipe, on each grid with either consumer count
        // (the steps themselves take the rung's grid: here the persistent one, short rows)
        for (int persistent : {0, 1})
          for (int consumers : {2, 3})
            for (int share : {8, 4}) settings.push_back({0, 0, persistent, consumers, 0, share});
        // four K, V stages (the persistent grid) with either consumer count, and with the
        // prefetch of the next item beside them
        for (int consumers : {2, 3})
          for (int prefetch : {0, 2}) settings.push_back({0, 0, 1, consumers, 0, 0, prefetch, 4});
        // three consumers whose warpgroups idle on the tiles their rows do not see (padded rows,
        // past their diagonal: the rung's) and compute them, on each grid
        for (int persistent : {0, 1})
          for (int idle : {0, 1}) settings.push_back({0, 0, persistent, 3, 0, 0, -1, -1, -1, idle});
      }
      // O staged and sent by TMA on both grids, with the overlap and without (the step itself
      // takes the rung's grid and overlap), at the problem's Br
      if (cuda::hopper_forward_room(c.d))
        for (int persistent : {0, 1})
          for (int overlap : {0, 1}) settings.push_back({0, overlap, persistent, -1, 1});
      // The persistent grid's L2 prefetch of the next item (a hint: the same bits) with and
      // without the overlap (at d = 64 with the overlap, two consumers: three have no prefetch
      // there), and asking for more key tiles than the problem has
      if (cuda::hopper_forward_room(c.d))
        for (int overlap : {0, 1})
          for (int tiles : {1, 9})
            settings.push_back({0, overlap, 1, c.d == 64 && overlap ? 2 : -1, -1, 0, tiles});
      for (const cuda::HopperFwdSteps& setting : settings) {
        INFO("n " << c.n << " d " << c.d << " causal " << causal << " ping_pong "
                  << setting.ping_pong << " overlap " << setting.overlap << " persistent "
                  << setting.persistent << " consumers " << setting.consumers << " stage_o "
                  << setting.stage_o << " exp_fma " << setting.exp_fma << " prefetch "
                  << setting.prefetch << " stages " << setting.stages << " idle_padding "
                  << setting.idle_padding);
        std::vector<float> O(in.Q.size()), L(std::size_t(H * c.n));
        cuda::hopper_forward_steps<float>(
            {c.b, c.h, c.n, c.m, c.d}, p, Variant{Precision::bf16, Mistake::none}, setting,
            in.Q.data(), in.K.data(), in.V.data(), O.data(), L.data());
        for (index_t h = 0; h < H; ++h) {
          const test::Outputs<float> got{head(O, h, c.n, c.d),
                                         Eigen::Map<const Vec<float>>(L.data() + h * c.n, c.n),
                                         Mat<float>(), Mat<float>(), Mat<float>()};
          test::check_outputs(got, expected[std::size_t(h)], "hopper forward step",
                              Precision::bf16);
        }
      }
    }
}

// Every backward setting `flashdemo ladder --steps` times is graded as the rung is: bf16, both
// head dims, causal bottom-right and not, against the naive backward by the 2x rule (O and L from
// the rung's own forward).
TEST_CASE("hopper's steps: every backward setting passes the correctness rule") {
  for (index_t d : {64, 128})
    for (bool causal : {false, true}) {
      const RungCase c{2, 3, 333, 290, d};
      const AttnParams p{causal, causal ? CausalAlign::bottom_right : CausalAlign::top_left, {}};
      Heads<float> in = random_heads<float>(Case{c.b, c.h, c.n, c.m, c.d, 64, 64}, 31);
      for (auto* x : {&in.Q, &in.K, &in.V, &in.dO}) *x = rounded(*x, Precision::bf16);
      RungGradients g = rung_gradients(Impl::hopper, Precision::bf16, c, p, in, false);
      for (cuda::HopperStep step : cuda::hopper_steps(cuda::Pass::bwd, d, Precision::bf16)) {
        INFO("d " << d << " causal " << causal << " step " << int(step));
        cuda::hopper_backward_steps<float>(
            {c.b, c.h, c.n, c.m, c.d}, p, Variant{Precision::bf16, Mistake::none},
            cuda::hopper_bwd_setting(step), in.Q.data(), in.K.data(), in.V.data(), g.O.data(),
            g.L.data(), in.dO.data(), g.dQ.data(), g.dK.data(), g.dV.data());
        grade_heads(in, g, c, p, Precision::bf16, "hopper backward step");
      }
    }
}

// The backward's persistent grid with more (key tile, head) items than SMs (32 heads x 9 key
// tiles: a block takes two or three, and its stages' phases run on across them), causal or not,
// graded as the rung is.
TEST_CASE("hopper's steps: the persistent backward passes the rule over several items a block") {
  for (index_t d : {64, 128})
    for (bool causal : {false, true}) {
      const RungCase c{2, 16, 1000, 1100, d};
      const AttnParams p{causal, CausalAlign::top_left, {}};
      Heads<float> in = random_heads<float>(Case{c.b, c.h, c.n, c.m, c.d, 64, 64}, 43);
      for (auto* x : {&in.Q, &in.K, &in.V, &in.dO}) *x = rounded(*x, Precision::bf16);
      RungGradients g = rung_gradients(Impl::hopper, Precision::bf16, c, p, in, false);
      INFO("d " << d << " causal " << causal);
      cuda::hopper_backward_steps<float>(
          {c.b, c.h, c.n, c.m, c.d}, p, Variant{Precision::bf16, Mistake::none},
          cuda::hopper_bwd_setting(cuda::HopperStep::bwd_persistent), in.Q.data(), in.K.data(),
          in.V.data(), g.O.data(), g.L.data(), in.dO.data(), g.dQ.data(), g.dK.data(), g.dV.data());
      grade_heads(in, g, c, p, Precision::bf16, "hopper persistent backward");
    }
}

// What `flashdemo ladder --steps` times: every setting cuda::hopper_steps lists runs on a small
// case (the rung's choice first; the backward's variants in bf16 only, each d its own).
TEST_CASE("hopper's steps: every setting ladder --steps lists is a kernel that runs") {
  using S = cuda::HopperStep;
  // d = 64: the choice, the four overlaps, three consumers, the persistent grid, its prefetch, the
  // persistent grid with two consumers and the overlap, and three computing every tile (the
  // choice's warpgroups idle on padded rows and past their diagonal)
  CHECK(cuda::hopper_steps(cuda::Pass::fwd, 64, Precision::fp16).size() == 10);
  // d = 128: the choice, the four overlaps, the persistent grid, its prefetch, O from registers
  CHECK(cuda::hopper_steps(cuda::Pass::fwd, 128, Precision::fp16).size() == 8);
  // d = 256: no persistent grid, no O staging (shared memory): the choice and the four overlaps
  CHECK(cuda::hopper_steps(cuda::Pass::fwd, 256, Precision::bf16).size() == 5);
  CHECK(cuda::hopper_steps(cuda::Pass::bwd, 128, Precision::fp16) ==
        std::vector<S>{S::rung_choice, S::bwd_atomics});
  CHECK(cuda::hopper_steps(cuda::Pass::bwd, 64, Precision::bf16).back() == S::bwd_persistent);
  CHECK(cuda::hopper_steps(cuda::Pass::bwd, 128, Precision::bf16).back() == S::bwd_persistent);
  for (cuda::Pass pass : {cuda::Pass::fwd, cuda::Pass::bwd})
    for (index_t d : {64, 128, 256})
      for (Precision prec : {Precision::bf16, Precision::fp16}) {
        if (pass == cuda::Pass::bwd && d == 256) continue;  // (the backward: d = 64 and 128)
        const Heads<float> in = bf16_heads(Case{1, 2, 300, 300, d, 64, 64});
        for (S step : cuda::hopper_steps(pass, d, prec)) {
          INFO("pass " << int(pass) << " d " << d << " " << precision_name(prec) << " step "
                       << int(step));
          const cuda::Timing t = cuda::hopper_time_step<float>(
              step, pass, {1, 2, 300, 300, d}, AttnParams{true, {}, {}},
              Variant{prec, Mistake::none}, in.Q.data(), in.K.data(), in.V.data(), in.dO.data(), 1,
              2);
          REQUIRE(t.ms.size() == 2);
          CHECK(t.ms[0] > 0);
        }
      }
}

// Not a test either (-tc="hopper backward steps speed*" --no-skip): hopper's backward steps
// (cuda::HopperBwdSteps) each off beside the rung's choice, at gpu_compare.py's shapes.
TEST_CASE("hopper backward steps speed, printed" * doctest::skip()) {
  for (index_t n : {1024, 4096, 16384})
    for (index_t d : {64, 128})
      for (bool causal : {false, true}) {
        const index_t b = 16384 / n, h = 2048 / d;
        const Heads<float> in = bf16_heads(Case{b, h, n, n, d, 64, 64});
        const double flops = backward_flops(b * h, n, d, causal);
        const std::vector<float>&q = in.Q, &k = in.K, &v = in.V, &o = in.dO;
        using W = cuda::HopperBwdSteps;
        // (Br -1: the rung's, 128 at d = 64; Br 64 at d = 64: its old choice and its variants)
        for (W way :
             {W{false, -1, -1, -1}, W{true, 0, -1, -1}, W{true, 1, -1, -1}, W{true, -1, 0, -1},
              W{true, -1, 1, -1}, W{true, -1, 2, -1}, W{true, -1, 3, -1}, W{true, -1, -1, -1, 0, 1},
              W{true, -1, 1, 64}, W{true, -1, 4, 64}, W{true, -1, 5, 64}, W{true, -1, -1, 64, 1},
              W{true, -1, -1, 64, 2}, W{true, 1, -1, 64, 0, 0}, W{true, 1, -1, 64, 0, 1},
              W{true, 1, 3, 64, 0, 1}, W{true, -1, 35, -1}, W{true, -1, 323, -1},
              W{true, -1, -1, -1, 0, -1, 1}}) {
          if (way.dq_by_columns >= 0 && way.staging < 0 && d != 128) continue;
          if (way.dq_by_columns >= 0 && way.staging >= 0 && d != 64) continue;
          if (way.overlap >= 4 && way.overlap < 32 && d != 64) continue;    // (pipeline: d = 64)
          if (way.overlap >= 32 && way.overlap < 64 && d != 128) continue;  // (three stages)
          if (way.overlap >= 256 && d != 128) continue;  // (two sets of dQ's staging)
          if (way.held > 0 && d != 64) continue;         // (K_j, V_j held: d = 64 only)
          if (way.Br > 0 && d != 64) continue;           // (d = 128: Br = 64 only)
          auto t = cuda::hopper_time_backward_steps<float>(
              {b, h, n, n, d}, AttnParams{causal, {}, {}}, Variant{Precision::bf16, Mistake::none},
              way, q.data(), k.data(), v.data(), o.data(), 3, 20);
          std::sort(t.ms.begin(), t.ms.end());
          const double ms = t.ms[t.ms.size() / 2];
          MESSAGE("hopper backward n="
                  << n << " d=" << d << " causal=" << causal << " bulk_dq=" << way.bulk_dq
                  << " by_columns=" << way.dq_by_columns << " overlap=" << way.overlap
                  << " Br=" << way.Br << " held=" << way.held << " staging=" << way.staging
                  << " persistent=" << way.persistent << ": " << ms << " ms, " << flops / ms / 1e9
                  << " TFLOP/s");
        }
      }
}

// Not a test either (-tc="rung backward speed*" --no-skip): mma's and hopper's backward at the
// same shapes, FLOPs counted as 2.5 times the forward's.
TEST_CASE("rung backward speed, printed" * doctest::skip()) {
  for (Impl impl : kBackwardRungs)
    for (index_t d : {64, 128})
      for (bool causal : {false, true})
        for (bool deterministic : {false, true}) {
          const index_t n = 4096, b = 4, h = 2048 / d;
          const Heads<float> in = bf16_heads(Case{b, h, n, n, d, 64, 64});
          const double flops = backward_flops(b * h, n, d, causal);
          const std::vector<float>&q = in.Q, &k = in.K, &v = in.V, &o = in.dO;
          auto t = cuda::time_kernels<float>(
              {b, h, n, n, d}, AttnParams{causal, {}, {}},
              cuda::kernel_tiles(impl, d, cuda::Pass::bwd), Variant{Precision::bf16, Mistake::none},
              impl, cuda::Pass::bwd, deterministic, q.data(), k.data(), v.data(), o.data(), 2, 10);
          std::sort(t.ms.begin(), t.ms.end());
          const double ms = t.ms[t.ms.size() / 2];
          MESSAGE(std::string(impl_name(impl)) << " backward d=" << d << " causal=" << causal
                                               << " deterministic=" << deterministic << ": " << ms
                                               << " ms, " << flops / ms / 1e9 << " TFLOP/s");
        }
}

int main(int argc, char** argv) {
  const cuda::GpuInfo g = cuda::gpu_info();
  if (!g.present) {
    std::printf("no GPU (%s): the GPU tests are skipped\n", g.why.c_str());
    return 77;
  }
  std::printf("GPU: %s\n", g.name.c_str());
  doctest::Context context(argc, argv);
  return context.run();
}
