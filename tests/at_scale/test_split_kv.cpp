// test_split_kv.cpp — split-KV attention (split_kv.hpp) and its merge (online_softmax.hpp:
// merge_lse, split_weight, merge_splits): the merge against the unsplit result; every S from 1 to
// the number of key tiles by the 2x rule; rows that see no key; causal in both alignments; several
// rows and heads, m not a multiple of Bc; the same bits on any number of threads; the plan.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "flashdemo/at_scale/split_kv.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/judge/compare.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/teaching/flash_forward.hpp"

using namespace fd;

namespace {

template <class T>
struct Problem {
  DecodeShape s;
  AttnParams p;
  TileSizes tiles;
  std::vector<T> Q, K, V;
};

template <class T>
Problem<T> draw(DecodeShape s, AttnParams p, TileSizes tiles, std::uint32_t seed = 3) {
  TorchGenerator gen(seed);
  auto take = [&](index_t count) {
    const std::vector<double> x = gen.randn(count);
    return std::vector<T>(x.begin(), x.end());
  };
  Problem<T> pr{s, p, tiles, {}, {}, {}};
  pr.Q = take(s.heads * s.n * s.d), pr.K = take(s.heads * s.m * s.d);
  pr.V = take(s.heads * s.m * s.d);
  return pr;
}

template <class T>
SplitKvResult<T> run(const Problem<T>& pr, index_t num_splits, index_t threads = 2) {
  SplitKvResult<T> r;
  split_kv_forward(pr.s, pr.p, num_splits, threads, pr.Q.data(), pr.K.data(), pr.V.data(), r,
                   pr.tiles);
  return r;
}

template <class T>
Mat<T> head_matrix(const std::vector<T>& x, index_t head, index_t rows, index_t cols) {
  return Eigen::Map<const Mat<T>>(x.data() + head * rows * cols, rows, cols);
}

// One head's reference in the wider type, the naive run in T and the magnitudes of a run merged
// from `splits` parts (floor_magnitudes: what the judge of a merged run uses).
template <class T>
struct HeadExpected {
  using W = wider_t<T>;
  ReferenceForward<W> ref;
  ReferenceForward<T> naive;
  Magnitudes<W> R;
};

template <class T>
HeadExpected<T> expected(const Problem<T>& pr, index_t head, index_t splits) {
  using W = wider_t<T>;
  const auto [H, n, m, d] = pr.s;
  const Mat<T> Q = head_matrix(pr.Q, head, n, d), K = head_matrix(pr.K, head, m, d),
               V = head_matrix(pr.V, head, m, d);
  const Mat<W> Qw = Q.template cast<W>(), Kw = K.template cast<W>(), Vw = V.template cast<W>();
  HeadExpected<T> e{
      reference_forward<W>(Qw, Kw, Vw, pr.p), reference_forward<T>(Q, K, V, pr.p), {}};
  e.R = floor_magnitudes(reference_magnitudes<W>(Qw, Kw, Vw, {}, e.ref, pr.p), n, m,
                         merges_split_kv(splits));
  return e;
}

// The rule on O and L of every head, against the reference in the wider type.
template <class T>
void require_rule(const Problem<T>& pr, const SplitKvResult<T>& r) {
  const auto [H, n, m, d] = pr.s;
  for (index_t head = 0; head < H; ++head) {
    const HeadExpected<T> e = expected(pr, head, r.splits);
    const Mat<T> O = head_matrix(r.O, head, n, d);
    const Vec<T> L = Eigen::Map<const Vec<T>>(r.L.data() + head * n, n);
    const RuleVerdict vO = judge(precision_of<T>(), O, e.ref.O, e.naive.O, e.R.O, Held::in_p);
    const RuleVerdict vL = judge(precision_of<T>(), L, e.ref.L, e.naive.L, e.R.L, Held::wide);
    INFO("head " << head << ", S = " << r.splits << ": O error " << vO.err << " bound " << vO.bound
                 << ", L error " << vL.err << " bound " << vL.bound);
    CHECK(vO.pass());
    CHECK(vL.pass());
  }
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

}  // namespace

TEST_CASE_TEMPLATE("merge_splits: two normalized parts make the whole, with -inf guards", T, float,
                   double) {
  // Part a: L_a = log 1, O_a = (1, 0); part b: L_b = log 3, O_b = (0, 1). The whole has
  // L = log 4 and O = (1/4, 3/4).
  const T O[] = {1, 0, 0, 1};
  const T L[] = {T(0), T(std::log(3.0))};
  T o[2];
  const T L_all = merge_splits(O, 2, L, 1, 2, 2, o);
  CHECK(double(L_all) == doctest::Approx(std::log(4.0)).epsilon(1e-6));
  CHECK(double(o[0]) == doctest::Approx(0.25).epsilon(1e-6));
  CHECK(double(o[1]) == doctest::Approx(0.75).epsilon(1e-6));
  // merge_lse is merge() of the states (L_s, 1): the same m and l.
  const RowState<T> a{L[0], T(1)}, b{L[1], T(1)};
  const RowState<T> two = merge(a, b), all = merge_lse(L, 2, 1);
  CHECK(two.m == all.m);
  CHECK(double(two.l) == doctest::Approx(double(all.l)).epsilon(1e-7));
  // A part that saw no key: weight 0, its O never read (NaN there changes nothing).
  const T nan = std::numeric_limits<T>::quiet_NaN();
  const T O2[] = {nan, nan, T(2), T(5)};
  const T L2[] = {neg_inf<T>(), T(1.5)};
  CHECK(merge_splits(O2, 2, L2, 1, 2, 2, o) == T(1.5));
  CHECK(o[0] == T(2));
  CHECK(o[1] == T(5));
  CHECK(split_weight(neg_inf<T>(), T(1.5)) == T(0));
  // No part saw a key: O = 0, L = -inf, no NaN.
  const T L3[] = {neg_inf<T>(), neg_inf<T>()};
  CHECK(is_neg_inf(merge_splits(O2, 2, L3, 1, 2, 2, o)));
  CHECK(o[0] == T(0));
  CHECK(o[1] == T(0));
}

// The GPU's merge reads 16 parts before it adds any (decode.cuh, kMergeInFlight): the same sums in
// the same order as one part at a time, so the same bits, over counts that are not whole batches,
// parts that saw no key (NaN in their O, never read) and parts too small to weigh anything.
TEST_CASE_TEMPLATE("merge_splits: parts read in batches give the bits of one at a time", T, float,
                   double) {
  TorchGenerator gen(41);
  const index_t d = 5;
  for (index_t count : {1, 15, 16, 17, 37, 128}) {
    std::vector<double> x = gen.randn(count * (d + 1));
    std::vector<T> O(static_cast<std::size_t>(count * d)), L(static_cast<std::size_t>(count));
    for (index_t s = 0; s < count; ++s) {
      for (index_t c = 0; c < d; ++c) O[std::size_t(s * d + c)] = T(x[std::size_t(s * d + c)]);
      L[std::size_t(s)] = T(4 * x[std::size_t(count * d + s)]);
      if (s % 7 == 3) {  // no key seen
        L[std::size_t(s)] = neg_inf<T>();
        for (index_t c = 0; c < d; ++c)
          O[std::size_t(s * d + c)] = std::numeric_limits<T>::quiet_NaN();
      } else if (s % 11 == 5) {
        L[std::size_t(s)] = T(-200);  // a weight that underflows to 0 in float
      }
    }
    const auto columns = static_cast<std::size_t>(d);
    std::vector<T> one(columns), four(columns), sixteen(columns);
    const T L1 = merge_splits(O.data(), d, L.data(), 1, count, d, one.data());
    const T L4 = merge_splits<4>(O.data(), d, L.data(), 1, count, d, four.data());
    const T L16 = merge_splits<16>(O.data(), d, L.data(), 1, count, d, sixteen.data());
    INFO("count " << count);
    CHECK(std::memcmp(&L1, &L4, sizeof(T)) == 0);
    CHECK(std::memcmp(&L1, &L16, sizeof(T)) == 0);
    CHECK(same_bits(one, four));
    CHECK(same_bits(one, sixteen));
    for (T v : one) CHECK(std::isfinite(double(v)));
  }
}

TEST_CASE_TEMPLATE("every S from 1 to Tc: the rule against the reference, close to S = 1", T, float,
                   double) {
  // 2 heads x 3 rows, m = 100 keys in tiles of 16 (Tc = 7, the last tile 4 keys), d = 8.
  const Problem<T> pr = draw<T>({2, 3, 100, 8}, AttnParams{}, {2, 16});
  REQUIRE(decode_tiling(pr.s, pr.tiles).Tc() == 7);
  const SplitKvResult<T> one = run(pr, 1);
  const double tol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
  for (index_t num_splits = 1; num_splits <= 7; ++num_splits) {
    const SplitKvResult<T> r = run(pr, num_splits);
    CHECK(r.splits == num_splits);
    require_rule(pr, r);
    for (std::size_t k = 0; k < r.O.size(); ++k) CHECK(std::abs(r.O[k] - one.O[k]) <= tol);
    for (std::size_t k = 0; k < r.L.size(); ++k) CHECK(std::abs(r.L[k] - one.L[k]) <= tol);
  }
  CHECK_THROWS_AS(run(pr, 8), std::invalid_argument);
  CHECK_THROWS_AS(run(pr, 0), std::invalid_argument);
}

TEST_CASE_TEMPLATE("S = 1 is the teaching forward, bit for bit", T, float, double) {
  const Problem<T> pr =
      draw<T>({2, 5, 70, 6}, AttnParams{true, CausalAlign::bottom_right, {}}, {2, 16});
  const SplitKvResult<T> r = run(pr, 1);
  for (index_t head = 0; head < 2; ++head) {
    const auto f = flash_forward(head_matrix(pr.Q, head, 5, 6), head_matrix(pr.K, head, 70, 6),
                                 head_matrix(pr.V, head, 70, 6), pr.p, pr.tiles);
    for (index_t q = 0; q < 5; ++q) {
      CHECK(r.L[std::size_t(head * 5 + q)] == f.L(q));
      for (index_t x = 0; x < 6; ++x) CHECK(r.O[std::size_t((head * 5 + q) * 6 + x)] == f.O(q, x));
    }
  }
}

TEST_CASE_TEMPLATE("rows that see no key: O = 0, L = -inf for every S, no NaN", T, float, double) {
  // Bottom-right with n = 5 > m = 3: rows 0 and 1 see no key; keys in tiles of 1 (Tc = 3).
  const Problem<T> pr =
      draw<T>({1, 5, 3, 4}, AttnParams{true, CausalAlign::bottom_right, {}}, {4, 1});
  for (index_t num_splits = 1; num_splits <= 3; ++num_splits) {
    const SplitKvResult<T> r = run(pr, num_splits);
    for (index_t q = 0; q < 2; ++q) {
      CHECK(is_neg_inf(r.L[std::size_t(q)]));
      for (index_t x = 0; x < 4; ++x) CHECK(r.O[std::size_t(q * 4 + x)] == T(0));
    }
    for (T v : r.O) CHECK_FALSE(std::isnan(v));
    require_rule(pr, r);
  }
}

TEST_CASE_TEMPLATE("causal, both alignments, several rows and heads: every S by the rule", T, float,
                   double) {
  for (CausalAlign align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
    // top-left with n = 4 << m: each row sees 1 .. 4 keys, every split but the first is empty.
    const Problem<T> pr = draw<T>({3, 4, 50, 5}, AttnParams{true, align, {}}, {3, 8});
    const index_t Tc = decode_tiling(pr.s, pr.tiles).Tc();
    REQUIRE(Tc == 7);
    for (index_t num_splits = 1; num_splits <= Tc; ++num_splits) {
      INFO("align " << (align == CausalAlign::top_left ? "top-left" : "bottom-right"));
      const SplitKvResult<T> r = run(pr, num_splits);
      require_rule(pr, r);
      if (align == CausalAlign::top_left &&
          num_splits > 1)  // split 1 starts at key >= 7: no row sees it
        for (index_t q = 0; q < 4; ++q) CHECK(is_neg_inf(r.L_part[std::size_t(1 * 4 + q)]));
    }
  }
}

TEST_CASE_TEMPLATE("a given S gives the same bits on 1, 2, 3 or 7 threads", T, float, double) {
  const Problem<T> pr =
      draw<T>({3, 5, 200, 8}, AttnParams{true, CausalAlign::bottom_right, {}}, {2, 16});
  for (index_t num_splits : {1, 4, 13}) {
    const SplitKvResult<T> base = run(pr, num_splits, 1);
    for (index_t threads : {2, 3, 7}) {
      const SplitKvResult<T> r = run(pr, num_splits, threads);
      INFO("S = " << num_splits << ", threads " << threads);
      CHECK(same_bits(r.O, base.O));
      CHECK(same_bits(r.L, base.L));
      CHECK(same_bits(r.L_part, base.L_part));
    }
  }
}

TEST_CASE_TEMPLATE("large scores (--scale 3 to 100): every merged S passes the rule", T, float,
                   double) {
  // |L| grows with the scale (about 3 |S| here); each merge weight exp(L_s - L) then carries
  // about u (|L_s| + |L|) of rounding the naive yardstick never makes (floor_magnitudes).
  for (double scale : {3.0, 5.0, 10.0, 30.0, 100.0})
    for (bool causal : {false, true}) {
      const Problem<T> pr =
          draw<T>({2, 8, 256, 16}, AttnParams{causal, CausalAlign::bottom_right, scale}, {4, 16},
                  std::uint32_t(scale));
      for (index_t num_splits : {2, 5, 16}) {
        INFO("scale " << scale << ", causal " << causal);
        require_rule(pr, run(pr, num_splits));
      }
    }
}

namespace {

// Row q of head 0 merged from the partials of r the wrong way `how`, into o (d values); returns L.
enum class WrongMerge { drop_heaviest, max_for_L, heavy_weight_off };

template <class T>
T wrong_merge(const SplitKvResult<T>& r, index_t n, index_t d, index_t q, WrongMerge how,
              double off, T* o) {
  const index_t num_splits = r.splits;
  const T* L_s = r.L_part.data() + q;  // split s at L_s[s * n]
  const T* O_s = r.O_part.data() + q * d;
  const T L = merge_lse(L_s, num_splits, n).finalize();
  index_t heaviest = 0;
  for (index_t s = 1; s < num_splits; ++s)
    if (L_s[s * n] > L_s[heaviest * n]) heaviest = s;
  const T M = L_s[heaviest * n];
  for (index_t x = 0; x < d; ++x) o[x] = T(0);
  for (index_t s = 0; s < num_splits; ++s) {
    T w = split_weight(L_s[s * n], L);
    if (how == WrongMerge::drop_heaviest && s == heaviest) continue;    // a split left out
    if (how == WrongMerge::max_for_L) w = split_weight(L_s[s * n], M);  // exp(L_s - m): no 1/l
    if (how == WrongMerge::heavy_weight_off && s == heaviest) w = T(double(w) * (1 + off));
    for (index_t x = 0; x < d; ++x) o[x] = fmadd(w, O_s[s * n * d + x], o[x]);
  }
  return how == WrongMerge::max_for_L ? M : L;
}

}  // namespace

TEST_CASE_TEMPLATE("large scores: a wrong merge still fails the rule for merged runs", T, float,
                   double) {
  const index_t n = 8, m = 256, d = 16, num_splits = 4;
  for (double scale : {3.0, 10.0, 30.0, 100.0}) {
    // The keys (and values) of splits 1 and 3 repeat those of splits 0 and 2: every row's weight
    // is shared by two splits, so a wrong merge cannot hide behind one split that carries it all
    // (at large scores one split of random keys often does, and then L = m_s + log 1).
    Problem<T> pr = draw<T>({1, n, m, d}, AttnParams{false, {}, scale}, {4, 16}, 5);
    const index_t part = m / num_splits * d;
    for (std::vector<T>* X : {&pr.K, &pr.V})
      for (index_t s : {0, 2})
        std::copy(X->begin() + s * part, X->begin() + (s + 1) * part, X->begin() + (s + 1) * part);
    const SplitKvResult<T> r = run(pr, num_splits);
    const HeadExpected<T> e = expected(pr, 0, num_splits);
    // A weight off by 256 times what the merge's rounding may cost it (k u Lambda, k = 3).
    const double Lambda = double(e.R.L.maxCoeff());  // R'(L) >= Lambda_q
    const double off = 256 * 3 * accumulator_unit(precision_of<T>()) * Lambda;
    for (WrongMerge how :
         {WrongMerge::drop_heaviest, WrongMerge::max_for_L, WrongMerge::heavy_weight_off}) {
      Mat<T> O(n, d);
      Vec<T> L(n);
      for (index_t q = 0; q < n; ++q) L(q) = wrong_merge(r, n, d, q, how, off, O.row(q).data());
      const RuleVerdict vO = judge(precision_of<T>(), O, e.ref.O, e.naive.O, e.R.O, Held::in_p);
      const RuleVerdict vL = judge(precision_of<T>(), L, e.ref.L, e.naive.L, e.R.L, Held::wide);
      INFO("scale " << scale << ", wrong merge " << int(how) << " (weight off by " << off
                    << "): O error " << vO.err << " bound " << vO.bound << ", L error " << vL.err
                    << " bound " << vL.bound);
      CHECK_FALSE(vO.pass());
      if (how == WrongMerge::max_for_L) CHECK_FALSE(vL.pass());
    }
    // The same partials merged right pass (the yardstick of the checks above).
    Mat<T> O(n, d);
    for (index_t q = 0; q < n; ++q)
      merge_splits(r.O_part.data() + q * d, n * d, r.L_part.data() + q, n, num_splits, d,
                   O.row(q).data());
    CHECK(judge(precision_of<T>(), O, e.ref.O, e.naive.O, e.R.O, Held::in_p).pass());
  }
}

TEST_CASE("the plan: the smallest S within 85% of the best efficiency, at most Tc and 128") {
  CHECK(split_efficiency(3, 1, 2) == 0.75);
  CHECK(split_efficiency(1, 3, 2) == 0.75);
  CHECK(split_efficiency(5, 3, 16) == 15.0 / 16);
  struct Case {
    index_t units, workers, key_tiles, splits;
  };
  const Case cases[] = {
      {1, 1, 512, 1},      // one worker: nothing to gain
      {1, 2, 512, 2},      // one head, two threads: 50% -> 100%
      {3, 2, 512, 2},      // 75% is below 85% of 100%
      {8, 2, 512, 1},      // enough units already
      {5, 16, 512, 3},     // 15 of 16 workers busy: 94% >= 85%
      {1, 16, 512, 14},    // 14 / 16 = 87.5% is the first within 85%
      {1, 16, 4, 4},       // only 4 key tiles: the best is 4 splits (25%)
      {1, 256, 512, 109},  // the cap of 128 splits: best 50%, 109 / 256 >= 42.5%
      {2, 2, 1, 1},        // one key tile: one split
  };
  for (const Case& c : cases) {
    INFO("units " << c.units << ", workers " << c.workers << ", tiles " << c.key_tiles);
    const SplitPlan plan = plan_splits(c.units, c.workers, c.key_tiles);
    CHECK(plan.splits == c.splits);
    CHECK_FALSE(plan.forced);
    CHECK(plan.max_splits == std::min<index_t>(c.key_tiles, kMaxSplits));
    CHECK(index_t(plan.efficiency.size()) == plan.max_splits);
  }
  // The GPU's plan: every split keeps at least kGpuMinSplitKeys keys, in the decode kernel's
  // tiles of 16 keys (cuda::decode_tiles). H200-like workers (132 SMs x 7 blocks): h = 8 at
  // m = 65536 (4096 tiles) took 98 splits of 42 tiles; now at most 64 of 64, and the most busy
  // blocks among those (55: 440 of 924, 85 % of 64's).
  static_assert(gpu_min_split_tiles(16) == 64 && gpu_min_split_tiles(128) == 8 &&
                gpu_min_split_tiles(4096) == 1);
  const index_t t16 = gpu_min_split_tiles(16);
  CHECK(plan_splits(8, 924, 4096).splits == 98);
  const SplitPlan gpu = plan_splits(8, 924, 4096, t16);
  CHECK(gpu.min_tiles == t16);
  CHECK(gpu.max_splits == 64);
  CHECK(gpu.splits == 55);
  CHECK(plan_splits(32, 924, 4096, t16).splits == 25);  // unchanged: 25 of 164 tiles
  CHECK(plan_splits(8, 924, 65536, t16).splits == 98);  // m = 2^20: unchanged
  CHECK(plan_splits(8, 924, 63, t16).max_splits == 1);  // fewer than t tiles: one
  for (index_t tiles : {1, 7, 8, 9, 100, 512, 8192})
    for (index_t t : {1, 8}) {
      const SplitPlan q = plan_splits(3, 100, tiles, t);
      CHECK(q.max_splits >= 1);
      CHECK((q.max_splits == 1 || tiles / q.max_splits >= t));  // each split keeps t tiles
      CHECK(q.splits <= q.max_splits);
    }
  // A forced S may exceed Smax (it must only lie within the key tiles).
  const SplitPlan beyond = forced_splits(1, 2, 4096, 200, gpu_min_split_tiles(16));
  CHECK(beyond.splits == 200);
  CHECK(beyond.max_splits == 64);
  const SplitPlan forced = forced_splits(1, 2, 10, 10);
  CHECK(forced.splits == 10);
  CHECK(forced.forced);
  CHECK_THROWS_AS(forced_splits(1, 2, 10, 11), std::invalid_argument);
  CHECK_THROWS_AS(forced_splits(1, 2, 10, 0), std::invalid_argument);
  CHECK(decode_units({4, 33, 100, 8}, {16, 64}) == 4 * 3);
}

TEST_CASE("split_keys covers the keys in order, every split at least one tile; kv_bytes") {
  const Tiling t = decode_tiling({1, 1, 1000, 4}, {16, 128});  // Tc = 8, the last tile 104 keys
  for (index_t num_splits = 1; num_splits <= t.Tc(); ++num_splits) {
    index_t next = 0;
    for (index_t s = 0; s < num_splits; ++s) {
      const Range r = split_keys(t, num_splits, s);
      CHECK(r.begin == next);
      CHECK(r.size() >= 1);
      CHECK(r.begin % t.Bc == 0);
      next = r.end;
    }
    CHECK(next == 1000);
  }
  const DecodeShape s{2, 1, 1000, 4};
  CHECK(kv_bytes(s, Mask{false, CausalAlign::top_left, 1, 1000}, 4) == 2.0 * 2 * 1000 * 4 * 4);
  CHECK(kv_bytes(s, Mask{true, CausalAlign::top_left, 1, 1000}, 4) == 2.0 * 2 * 1 * 4 * 4);
  CHECK(kv_bytes(s, Mask{true, CausalAlign::bottom_right, 1, 1000}, 8) == 2.0 * 2 * 1000 * 4 * 8);
}
