// test_fast.cpp — the fast CPU path against the fp64 reference (the 2x rule), over odd shapes,
// both alignments, fully masked rows and several heads, with the kernels of every x86-64 level
// that this CPU runs (levels.hpp); its determinism.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <thread>

#include "check.hpp"
#include "flashdemo/fast/fast_attention.hpp"
#include "flashdemo/fast/levels.hpp"
#include "flashdemo/io/random.hpp"

using namespace fd;

namespace {

struct FastCase {
  index_t b, h, n, m, d, Br, Bc;
};

const FastCase kFastCases[] = {
    {1, 1, 100, 100, 32, 16, 24},
    {2, 3, 37, 53, 5, 8, 16},
    {1, 1, 5, 5, 3, 16, 16},
    {1, 2, 1, 7, 4, 4, 4},
    {1, 1, 20, 9, 4, 4, 8},
    {2, 1, 9, 20, 64, 8, 8},
    {1, 1, 300, 260, 16, 128, 256},
    // one tile a head, 2 threads: the forward takes heads 32 at a time (16 items a thread), the
    // backward 8 (4 a thread). 10 heads: the forward one group, the backward groups of 8 and 2;
    // 39 heads: the forward groups of 32 and 7, the backward four of 8 and one of 7
    {2, 5, 9, 11, 8, 16, 16},
    {3, 13, 9, 11, 8, 16, 16},
    // rows of d' = 128 and 192 in panels of the block's width (2 and 3 on AVX-512 floats, 4 and
    // 6 in doubles; row-major at the other levels), a key tile of 100 keys (its K^T panels part
    // filled), and d = 80 (rows kept row-major)
    {1, 2, 150, 170, 128, 32, 64},
    {1, 1, 70, 90, 192, 16, 100},
    {1, 1, 70, 90, 80, 16, 64},
    // tiles_for's forward tiles where a step fits L2: Bc = 4 Br = 512, m not a multiple of it
    {1, 1, 700, 1100, 64, 128, 512}};

template <class T>
std::vector<T> draw(TorchGenerator& gen, index_t count) {
  const auto x = gen.randn(count);
  return std::vector<T>(x.begin(), x.end());
}

template <class T>
Mat<T> head(const std::vector<T>& x, index_t h, index_t rows, index_t d) {
  return Eigen::Map<const Mat<T>>(x.data() + h * rows * d, rows, d);
}

// Each build of the kernels that this CPU runs, chosen as FLASHDEMO_FAST_LEVEL would.
template <class T>
void check_cases_at(const fast::Level& level) {
  INFO("kernels: " << std::string(level.name) << " (" << std::string(level.kernels->isa) << ")");
  struct Chosen {  // back to the automatic choice however the case ends
    explicit Chosen(const fast::Level& l) { fast::use_level(&l); }
    ~Chosen() { fast::use_level(nullptr); }
  } chosen(level);
  for (const FastCase& c : kFastCases) {
    for (bool causal : {false, true}) {
      for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
        INFO("b=" << c.b << " h=" << c.h << " n=" << c.n << " m=" << c.m << " d=" << c.d
                  << " causal=" << causal << " align=" << int(align));
        const AttnParams p{causal, align, {}};
        TorchGenerator gen(31);
        const index_t H = c.b * c.h;
        const auto Q = draw<T>(gen, H * c.n * c.d), K = draw<T>(gen, H * c.m * c.d),
                   V = draw<T>(gen, H * c.m * c.d), dO = draw<T>(gen, H * c.n * c.d);
        std::vector<T> O(Q.size()), L(std::size_t(H * c.n)), L_lo(L.size()), dQ(Q.size()),
            dK(K.size()), dV(K.size()), D(L.size());
        const fast::Shape s{c.b, c.h, c.n, c.m, c.d};
        const fast::Options o{2, {c.Br, c.Bc}};
        fast::forward(s, p, o, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data());
        fast::backward(s, p, o, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data(),
                       dO.data(), dQ.data(), dK.data(), dV.data(), D.data());
        for (index_t h = 0; h < H; ++h) {
          const test::Problem<T> one{head(Q, h, c.n, c.d), head(K, h, c.m, c.d),
                                     head(V, h, c.m, c.d), head(dO, h, c.n, c.d), p};
          const test::Outputs<T> got{
              head(O, h, c.n, c.d), Eigen::Map<const Vec<T>>(L.data() + h * c.n, c.n),
              head(dQ, h, c.n, c.d), head(dK, h, c.m, c.d), head(dV, h, c.m, c.d)};
          test::check_outputs(got, test::Expected<T>(one), "fast");
        }
      }
    }
  }
}

}  // namespace

TEST_CASE_TEMPLATE("fast forward and backward match the reference at every level this CPU runs", T,
                   float, double) {
  index_t checked = 0;
  for (const fast::Level* level : fast::levels_here()) {
    check_cases_at<T>(*level);
    ++checked;
  }
  CHECK(checked >= 1);  // the lowest level built runs on any CPU this binary starts on
}

// Every output is the same bits on a rerun and for any thread count: each query tile of the
// forward is one thread's work, and the backward's partials are cut by the shape alone and summed
// in a fixed order. The second shape has key tiles in bands of 4 and query tiles in chunks of 4;
// the third, with 3 heads, its 13 key tiles in 3 bands (split_for: about 64 items in all).
TEST_CASE("fast forward and backward: bit-identical across reruns and thread counts") {
  struct Det {
    index_t h, n, d, tile;
    bool causal;
  };
  for (const Det c :
       {Det{2, 333, 32, 64, true}, Det{1, 1000, 16, 32, true}, Det{3, 200, 8, 16, false}}) {
    INFO("h=" << c.h << " n=" << c.n << " d=" << c.d << " tile=" << c.tile);
    TorchGenerator gen(2);
    const index_t size = c.h * c.n * c.d;
    const fast::Shape s{1, c.h, c.n, c.n, c.d};
    const auto Q = draw<float>(gen, size), K = draw<float>(gen, size), V = draw<float>(gen, size),
               dO = draw<float>(gen, size);
    const AttnParams p{c.causal, CausalAlign::top_left, {}};
    auto run = [&](index_t threads) {
      std::vector<float> O(Q.size()), L(std::size_t(c.h * c.n)), L_lo(L.size()), dQ(Q.size()),
          dK(K.size()), dV(K.size()), D(L.size());
      const fast::Options o{threads, {c.tile, c.tile}};
      fast::forward(s, p, o, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data());
      fast::backward(s, p, o, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data(),
                     dO.data(), dQ.data(), dK.data(), dV.data(), D.data());
      return std::vector<std::vector<float>>{O, L, dQ, dK, dV};
    };
    const auto a = run(2);
    CHECK(a == run(2));
    for (index_t threads : {1, 3, 16}) {
      INFO("threads=" << threads);
      const auto other = run(threads);
      CHECK(a[0] == other[0]);  // O
      CHECK(a[1] == other[1]);  // L
      CHECK(a[2] == other[2]);  // dQ
      CHECK(a[3] == other[3]);  // dK
      CHECK(a[4] == other[4]);  // dV
    }
  }
}

// With many heads the backward takes fewer bands a head (about 64 items in all), never fewer
// chunks: a head's dK and dV are summed in the same groups whatever the heads beside it (the same
// bits); its dQ, summed in double in other groups, rounds to within one unit of the last place.
TEST_CASE("fast backward: a head's dK and dV do not depend on the heads beside it") {
  const index_t H = 16, n = 300, d = 16, tile = 32, x = 5;  // 10 key tiles: 8 bands alone, 1 of 16
  TorchGenerator gen(7);
  const index_t size = H * n * d;
  const auto Q = draw<float>(gen, size), K = draw<float>(gen, size), V = draw<float>(gen, size),
             dO = draw<float>(gen, size);
  const AttnParams p{true, CausalAlign::top_left, {}};
  auto run = [&](index_t heads, index_t first) {
    const std::size_t count = std::size_t(heads * n * d), at = std::size_t(first * n * d);
    auto part = [&](const std::vector<float>& X) {
      return std::vector<float>(X.begin() + long(at), X.begin() + long(at + count));
    };
    const auto q = part(Q), k = part(K), v = part(V), o_grad = part(dO);
    std::vector<float> O(count), L(std::size_t(heads * n)), L_lo(L.size()), dQ(count), dK(count),
        dV(count), D(L.size());
    const fast::Shape s{1, heads, n, n, d};
    const fast::Options o{2, {tile, tile}};
    fast::forward(s, p, o, q.data(), k.data(), v.data(), O.data(), L.data(), L_lo.data());
    fast::backward(s, p, o, q.data(), k.data(), v.data(), O.data(), L.data(), L_lo.data(),
                   o_grad.data(), dQ.data(), dK.data(), dV.data(), D.data());
    return std::vector<std::vector<float>>{dQ, dK, dV};
  };
  const auto all = run(H, 0), alone = run(1, x);
  const std::size_t at = std::size_t(x * n * d);
  for (std::size_t e = 0; e < alone[0].size(); ++e) {
    INFO("entry " << e);
    REQUIRE(alone[1][e] == all[1][at + e]);  // dK
    REQUIRE(alone[2][e] == all[2][at + e]);  // dV
    const float q1 = alone[0][e], q16 = all[0][at + e];
    REQUIRE(std::abs(q1 - q16) <= std::abs(q1) * 0x1p-23f);  // dQ
  }
}

// Under a causal mask a (band, chunk) whose keys no row of the chunk sees computes nothing: its
// item does not run, its partials are never written, and the sums pass over them. The partials'
// buffers are kept from call to call, so a call that reads one would read the last call's sums:
// here a full (not causal) call fills every partial first, and the causal calls after it must give
// the bits of the same calls in a fresh thread (fresh buffers), and pass the rule. Tiles of 16 rows
// and 24 keys. One head of n = 100: each chunk one query tile, each band one key tile. Three heads
// of n = 300: 19 query tiles in 8 chunks and 3 bands of several key tiles (split_for), so a row's
// chunk and a key's band are not its tile. Eight heads of 3 x 2 tiles: two heads a group, so the
// partials of a group's second head are read and skipped too. Bottom-right with n > m leaves rows
// that see no key (dQ = 0), top-left with m > n keys that no row sees (dK = dV = 0).
TEST_CASE("fast backward: the partials of (band, chunk) pairs the mask skips are never read") {
  struct Case {
    index_t h, n, m;
  };
  const index_t d = 8;
  for (const Case c : {Case{1, 100, 100}, Case{1, 100, 61}, Case{1, 100, 150}, Case{3, 300, 300},
                       Case{3, 300, 170}, Case{3, 300, 410}, Case{8, 40, 40}, Case{8, 40, 30}}) {
    for (auto align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
      INFO("h=" << c.h << " n=" << c.n << " m=" << c.m << " align=" << int(align));
      TorchGenerator gen(11);
      const auto Q = draw<double>(gen, c.h * c.n * d), K = draw<double>(gen, c.h * c.m * d),
                 V = draw<double>(gen, c.h * c.m * d), dO = draw<double>(gen, c.h * c.n * d);
      auto run = [&](const AttnParams& p) {
        std::vector<double> O(Q.size()), L(static_cast<std::size_t>(c.h * c.n)), L_lo(L.size()),
            dQ(Q.size()), dK(K.size()), dV(K.size()), D(L.size());
        const fast::Shape s{1, c.h, c.n, c.m, d};
        const fast::Options o{2, {16, 24}};
        fast::forward(s, p, o, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data());
        fast::backward(s, p, o, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data(),
                       dO.data(), dQ.data(), dK.data(), dV.data(), D.data());
        return std::vector<std::vector<double>>{O, L, dQ, dK, dV};
      };
      const AttnParams causal{true, align, {}};
      std::vector<std::vector<double>> fresh;
      std::thread([&] { fresh = run(causal); }).join();
      run(AttnParams{});  // every partial written, none of them zero
      const auto after = run(causal);
      CHECK(after[2] == fresh[2]);  // dQ
      CHECK(after[3] == fresh[3]);  // dK
      CHECK(after[4] == fresh[4]);  // dV
      for (index_t h = 0; h < c.h; ++h) {
        const test::Problem<double> one{head(Q, h, c.n, d), head(K, h, c.m, d), head(V, h, c.m, d),
                                        head(dO, h, c.n, d), causal};
        const test::Outputs<double> got{
            head(after[0], h, c.n, d),
            Eigen::Map<const Vec<double>>(after[1].data() + h * c.n, c.n),
            head(after[2], h, c.n, d), head(after[3], h, c.m, d), head(after[4], h, c.m, d)};
        test::check_outputs(got, test::Expected<double>(one), "fast");
      }
    }
  }
}

// No rows, or no keys: nothing to divide among the threads, and no abort. n = 0: dK = dV = 0
// (no row sees a key). m = 0: every row sees no key, O = 0, L = -inf, dQ = 0.
TEST_CASE("fast forward and backward: n = 0 or m = 0") {
  const index_t d = 8;
  for (const index_t n : {0, 5}) {
    const index_t m = 5 - n;
    for (const bool causal : {false, true}) {
      INFO("n=" << n << " m=" << m << " causal=" << causal);
      const fast::Shape s{2, 3, n, m, d};
      std::vector<double> Q(std::size_t(6 * n * d), 0.5), K(std::size_t(6 * m * d), 0.25), V(K),
          dO(Q), O(Q.size(), 7.0), L(std::size_t(6 * n), 7.0), L_lo(L), dQ(Q.size(), 7.0),
          dK(K.size(), 7.0), dV(K.size(), 7.0), D(L);
      const AttnParams p{causal, CausalAlign::bottom_right, {}};
      const fast::Options o{2, {16, 24}};
      fast::forward(s, p, o, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data());
      fast::backward(s, p, o, Q.data(), K.data(), V.data(), O.data(), L.data(), L_lo.data(),
                     dO.data(), dQ.data(), dK.data(), dV.data(), D.data());
      for (const double x : O) CHECK(x == 0.0);
      for (const double x : L) CHECK(x == -std::numeric_limits<double>::infinity());
      for (const double x : dQ) CHECK(x == 0.0);
      for (const double x : dK) CHECK(x == 0.0);
      for (const double x : dV) CHECK(x == 0.0);
    }
  }
}

// tiles_for lets the forward's Br follow the threads: its outputs must not depend on Br (each row
// is computed alone, its products summed in k order whatever block of rows it falls in).
TEST_CASE("fast forward: the same bits for every Br (and Bc fixed)") {
  const index_t n = 301, m = 277, d = 40;
  TorchGenerator gen(4);
  const auto Q = draw<float>(gen, n * d), K = draw<float>(gen, m * d), V = draw<float>(gen, m * d);
  for (const AttnParams& p : {AttnParams{}, AttnParams{true, CausalAlign::top_left, {}},
                              AttnParams{true, CausalAlign::bottom_right, {}}}) {
    auto run = [&](index_t Br) {
      std::vector<float> O(Q.size()), L(static_cast<std::size_t>(n)), L_lo(L.size());
      fast::forward(fast::Shape{1, 1, n, m, d}, p, fast::Options{2, {Br, 64}}, Q.data(), K.data(),
                    V.data(), O.data(), L.data(), L_lo.data());
      return std::vector<std::vector<float>>{O, L, L_lo};
    };
    const auto a = run(128);
    for (index_t Br : {1, 5, 6, 32, 64, 301}) {
      INFO("Br=" << Br << " causal=" << p.causal);
      CHECK(a == run(Br));
    }
  }
}

// The same for a zero's sign, which == does not see. Row 4 meets key 4's score 1000 after four
// scores of 0: its rescale exp(0 - 1000) is 0, and O_i's negative sums times 0 are -0; V_4 = -0
// adds -0. Keys 5 to 7 are masked for row 4, but the rows below it in its tile see some of them, so
// how many of their 0 x V terms row 4's product takes depends on Br: O_i must hold +0 there, never
// -0.
TEST_CASE("fast forward: the same bits for every Br, a zero's sign too") {
  const index_t n = 8, d = 1;
  const std::vector<float> Q(8, 1.0f), K{0, 0, 0, 0, 1000, 0, 0, 0},
      V{-1, -1, -1, -1, -0.0f, 1, 1, 1};
  auto run = [&](index_t Br) {
    std::vector<float> O(Q.size()), L(static_cast<std::size_t>(n)), L_lo(L.size());
    fast::forward(fast::Shape{1, 1, n, n, d}, AttnParams{true, CausalAlign::top_left, {}},
                  fast::Options{1, {Br, 4}}, Q.data(), K.data(), V.data(), O.data(), L.data(),
                  L_lo.data());
    return O;
  };
  const auto a = run(8);
  for (index_t Br : {1, 2, 3}) {
    INFO("Br=" << Br);
    const auto b = run(Br);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
  CHECK_FALSE(std::signbit(a[4]));  // 0 x (-1) rescaled, + 1 x (-0): the value is 0, written +0
}
