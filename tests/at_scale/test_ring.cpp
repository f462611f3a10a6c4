// test_ring.cpp — ring attention (ring.hpp) with P ranks simulated in one process
// (ring_transport.hpp: InProcessRing): the blocks cover every position once; the schedule (the
// block each rank holds at each step, the pairs skipped under a causal mask, the zigzag's balance,
// the bytes sent); the fold of two parts is merge_splits's; forward and backward on 1, 2, 3 and 4
// ranks, P dividing n or not, n != m, causal or not in both alignments, both layouts, against
// the reference by the 2x rule; a failed rank wakes the others; the transport's broadcast.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <thread>
#include <vector>

#include "check.hpp"
#include "flashdemo/at_scale/ring.hpp"
#include "flashdemo/at_scale/ring_transport.hpp"
#include "flashdemo/at_scale/split_kv.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/io/random.hpp"

using namespace fd;

namespace {

Mask causal_mask(index_t n, index_t m, CausalAlign align = CausalAlign::top_left) {
  return Mask{true, align, n, m};
}

// Every position 0 .. count - 1 in exactly one block.
void require_cover(const std::vector<RingBlock>& blocks, index_t count) {
  std::vector<int> seen(std::size_t(count), 0);
  for (const RingBlock& b : blocks)
    for (const Range& r : b.parts)
      for (index_t x = r.begin; x < r.end; ++x) ++seen[std::size_t(x)];
  CHECK(std::all_of(seen.begin(), seen.end(), [](int c) { return c == 1; }));
}

template <class T>
Mat<T> draw(TorchGenerator& gen, index_t rows, index_t cols) {
  const std::vector<double> x = gen.randn(rows * cols);
  Mat<T> out(rows, cols);
  for (index_t k = 0; k < out.size(); ++k) out.data()[k] = T(x[std::size_t(k)]);
  return out;
}

template <class T>
Mat<T> as_mat(const std::vector<T>& x, index_t rows, index_t cols) {
  return Eigen::Map<const Mat<T>>(x.data(), rows, cols);
}

// The ring's outputs against the reference, every array by the rule.
template <class T>
void check_ring(index_t n, index_t m, index_t d, index_t P, const AttnParams& p, RingLayout layout,
                RingPass pass) {
  TorchGenerator gen(7);
  test::Problem<T> pr{draw<T>(gen, n, d), draw<T>(gen, m, d), draw<T>(gen, m, d),
                      pass == RingPass::bwd ? draw<T>(gen, n, d) : Mat<T>(), p};
  const RingSchedule s = ring_schedule(n, m, d, P, layout, p.mask_for(n, m));
  const RingInputs<T> in{pr.Q.data(), pr.K.data(), pr.V.data(),
                         pass == RingPass::bwd ? pr.dO.data() : nullptr};
  const RingResult<T> r = ring_in_process(s, p, pass, in);
  test::Expected<T> e(pr);
  e.merged(m, merges_ring(P));  // P parts folded one at a time
  test::Outputs<T> got{as_mat(r.O, n, d), Eigen::Map<const Vec<T>>(r.L.data(), n), {}, {}, {}};
  if (pass == RingPass::bwd)
    got.dQ = as_mat(r.dQ, n, d), got.dK = as_mat(r.dK, m, d), got.dV = as_mat(r.dV, m, d);
  test::check_outputs(got, e, "ring");
  REQUIRE(r.forward.size() == std::size_t(P));
  CHECK(r.forward[0].step.size() == std::size_t(P));
  CHECK(r.backward.size() == (pass == RingPass::bwd ? std::size_t(P) : 0));
}

}  // namespace

TEST_CASE("ring: the blocks cover every position once; zigzag holds chunks r and 2P - 1 - r") {
  for (index_t P = 1; P <= 5; ++P)
    for (index_t count : {5, 8, 13, 64})
      for (RingLayout layout : {RingLayout::contiguous, RingLayout::zigzag}) {
        if (count < P) continue;
        std::vector<RingBlock> blocks;
        for (index_t r = 0; r < P; ++r) blocks.push_back(ring_block(count, P, layout, r));
        INFO("P = " << P << ", count = " << count);
        require_cover(blocks, count);
      }
  const RingBlock b = ring_block(16, 4, RingLayout::zigzag, 1);  // chunks 1 and 6 of 8
  REQUIRE(b.parts.size() == 2);
  CHECK(b.parts[0].begin == 2);
  CHECK(b.parts[0].end == 4);
  CHECK(b.parts[1].begin == 12);
  CHECK(b.parts[1].end == 14);
  CHECK(b.size() == 4);
  CHECK(b.offset(1) == 2);
  const RingBlock ragged = ring_block(10, 3, RingLayout::contiguous, 2);  // [6, 10)
  CHECK(ragged.parts[0].begin == 6);
  CHECK(ragged.parts[0].end == 10);
}

TEST_CASE("ring: at step s rank r holds the K/V block of rank (r - s) mod P") {
  const RingSchedule s = ring_schedule(12, 12, 4, 4, RingLayout::contiguous, Mask{});
  for (index_t r = 0; r < 4; ++r)
    for (index_t t = 0; t < 4; ++t) {
      CHECK(s.at(r, t).block == (r - t + 4) % 4);
      CHECK(s.at(r, t).computed == 1);  // no mask: every pair computed
      CHECK(s.at(r, t).skipped == 0);
    }
  CHECK(s.bytes_sent(0, 0, RingPass::fwd, 4) == 2.0 * 3 * 4 * 4);  // K and V: 3 keys x d = 4
  CHECK(s.bytes_sent(0, 3, RingPass::fwd, 4) == 0);                // the last step sends nothing
  CHECK(s.bytes_sent(0, 0, RingPass::bwd, 4) == 4.0 * 3 * 4 * 4);  // K, V, dK, dV
  CHECK(s.bytes_sent(0, 3, RingPass::bwd, 4) == 2.0 * 3 * 4 * 4);  // dK, dV home
  // The GPU ring's bf16 keys and values with fp32 dK, dV.
  CHECK(s.bytes_sent(0, 0, RingPass::fwd, 2, 4) == 2.0 * 3 * 4 * 2);
  CHECK(s.bytes_sent(0, 0, RingPass::bwd, 2, 4) == 2.0 * 3 * 4 * 2 + 2.0 * 3 * 4 * 4);
  CHECK(s.bytes_sent(0, 3, RingPass::bwd, 2, 4) == 2.0 * 3 * 4 * 4);
}

TEST_CASE("ring: contiguous causal blocks idle on the future, the zigzag balances them") {
  const index_t n = 16;
  const RingSchedule c = ring_schedule(n, n, 4, 4, RingLayout::contiguous, causal_mask(n, n));
  // Rank r computes blocks 0 .. r only: rank 0 holds blocks 3, 2, 1 at steps 1, 2, 3, all skipped.
  for (index_t r = 0; r < 4; ++r) CHECK(c.computed(r) == r + 1);
  for (index_t t = 1; t < 4; ++t) {
    CHECK(c.at(0, t).computed == 0);
    CHECK(c.at(0, t).skipped == 1);
  }
  CHECK(c.at(0, 0).pairs[0].kind == TileKind::partial);  // the diagonal
  CHECK(c.at(3, 1).pairs[0].kind == TileKind::full);     // block 2, in rank 3's past
  // Zigzag: with n = m every rank computes 2P + 1 of its 4P pairs (3 on the diagonal step, 2 on
  // every other), and no step is wholly skipped.
  for (index_t P = 1; P <= 6; ++P)
    for (index_t count : {2 * P, 2 * P + 3, index_t(37), index_t(64)}) {
      for (CausalAlign align : {CausalAlign::top_left, CausalAlign::bottom_right}) {
        const RingSchedule z =
            ring_schedule(count, count, 4, P, RingLayout::zigzag, causal_mask(count, count, align));
        INFO("P = " << P << ", n = m = " << count);
        index_t lo = z.computed(0), hi = lo;
        for (index_t r = 0; r < P; ++r) {
          lo = std::min(lo, z.computed(r)), hi = std::max(hi, z.computed(r));
          for (index_t t = 0; t < P; ++t) CHECK(z.at(r, t).computed >= 1);
        }
        CHECK(hi - lo <= 1);
        if (count % (2 * P) == 0) CHECK(lo == 2 * P + 1);
        CHECK(z.computed(0) + z.skipped(0) == 4 * P);
      }
    }
  // n != m: the skipped pairs listed, the balance within one pair.
  const RingSchedule br = ring_schedule(24, 40, 4, 3, RingLayout::zigzag,
                                        causal_mask(24, 40, CausalAlign::bottom_right));
  index_t lo = br.computed(0), hi = lo, skipped = 0;
  for (index_t r = 0; r < 3; ++r) {
    lo = std::min(lo, br.computed(r)), hi = std::max(hi, br.computed(r));
    skipped += br.skipped(r);
    for (index_t t = 0; t < 3; ++t)
      for (const RingPair& pair : br.at(r, t).pairs)
        if (pair.kind == TileKind::skipped) CHECK(pair.keys.begin > pair.rows.end - 1 + 16);
  }
  CHECK(hi - lo <= 1);
  CHECK(skipped > 0);
}

TEST_CASE("ring: fold_part is merge_splits of the two parts, bit for bit") {
  const std::vector<float> O = {0.25f, -1.5f, 2.0f, 0.75f, 0.5f, -0.125f};  // two parts, d = 3
  for (const auto& [L0, L1] : {std::pair{1.5f, 0.25f}, std::pair{-INFINITY, 2.0f},
                               std::pair{3.0f, -INFINITY}, std::pair{-INFINITY, -INFINITY}}) {
    const float L[2] = {L0, L1};
    float merged[3], folded[3] = {O[0], O[1], O[2]};
    if (L0 == -INFINITY) std::fill(folded, folded + 3, 0.0f);  // a row that saw nothing: O = 0
    const float L_all = merge_splits(O.data(), 3, L, 1, 2, 3, merged);
    const SplitL<float> f = fold_part(folded, L0, O.data() + 3, L1, 3);
    CHECK((f.L == L_all || (std::isinf(f.L) && std::isinf(L_all))));
    CHECK(std::memcmp(merged, folded, sizeof merged) == 0);
  }
}

TEST_CASE_TEMPLATE("ring: fold_row takes a row's first part whole, L's rounding error kept", T,
                   float, double) {
  // One part of a row (scores s, values v): its state after update_row, as a step leaves it.
  T s[3] = {T(41.3), T(40.9), T(38.2)};  // (update_row turns them into P)
  const T v[3] = {T(0.5), T(-1.25), T(2.0)};
  RowState<T> st;
  T o_s[1] = {T(0)};
  update_row(st, s, v, 1, 3, 1, o_s);
  T o_ref[1] = {o_s[0]};
  const SplitL<T> L_s = finalize_row(st, o_ref, 1);
  REQUIRE(L_s.lo != T(0));  // m + log l rounds here: the part's L has an error to keep
  // Nothing folded yet (L = -inf): the part itself, bit for bit, with its rounding error.
  T O[1] = {T(0)}, L = neg_inf<T>(), L_lo = T(0);
  RowState<T> first = st;
  T o1[1] = {o_s[0]};
  fold_row(first, o1, O, L, L_lo, 1);
  CHECK(O[0] == o_ref[0]);
  CHECK(L == L_s.L);
  CHECK(L_lo == L_s.lo);
  // A later part that saw no key changes nothing, L_lo included.
  RowState<T> none;
  T o2[1] = {T(0)};
  fold_row(none, o2, O, L, L_lo, 1);
  CHECK(O[0] == o_ref[0]);
  CHECK(L == L_s.L);
  CHECK(L_lo == L_s.lo);
  // A second part that saw keys: the merge of the two (fold_part), as merge_splits gives it.
  RowState<T> second = st;
  T o3[1] = {o_s[0]}, O_before[1] = {O[0]};
  fold_row(second, o3, O, L, L_lo, 1);
  T O_expect[1] = {O_before[0]};
  const SplitL<T> merged = fold_part(O_expect, L_s.L, o_ref, L_s.L, 1);
  CHECK(O[0] == O_expect[0]);
  CHECK(L == merged.L);
  CHECK(L_lo == merged.lo);
}

// One rank: the ring is the tiled forward and backward of the whole row. Before fold_row kept the
// part's L_lo, its backward recomputed P from L rounded alone: at scale 10, d = 3 in fp32, dV was
// 6x the naive error and 1.4x to 2.1x the bound in many draws (docs/at-scale.md, the ring's fold).
TEST_CASE_TEMPLATE("ring: one rank at scale 10 is as accurate as the tiled path", T, float,
                   double) {
  AttnParams p;
  p.scale = 10.0;
  const index_t n = 100, m = 60, d = 3;
  for (std::uint32_t seed : {4u, 12u, 28u}) {
    TorchGenerator gen(seed);
    test::Problem<T> pr{draw<T>(gen, n, d), draw<T>(gen, m, d), draw<T>(gen, m, d),
                        draw<T>(gen, n, d), p};
    const RingSchedule s = ring_schedule(n, m, d, 1, RingLayout::contiguous, p.mask_for(n, m));
    const RingResult<T> r = ring_in_process<T>(
        s, p, RingPass::bwd, {pr.Q.data(), pr.K.data(), pr.V.data(), pr.dO.data()});
    const test::Expected<T> e(pr);  // one part: no merge to admit (merges_ring(1) = 0)
    const test::Outputs<T> got{as_mat(r.O, n, d), Eigen::Map<const Vec<T>>(r.L.data(), n),
                               as_mat(r.dQ, n, d), as_mat(r.dK, m, d), as_mat(r.dV, m, d)};
    INFO("seed " << seed);
    test::check_outputs(got, e, "ring, one rank");
  }
}

TEST_CASE_TEMPLATE("ring: forward and backward match the reference", T, float, double) {
  const AttnParams none{};
  const AttnParams top{true, CausalAlign::top_left, {}};
  const AttnParams bottom{true, CausalAlign::bottom_right, {}};
  for (index_t P = 1; P <= 4; ++P)
    for (const auto& nm : {std::pair<index_t, index_t>{16, 16}, {13, 13}, {13, 9}, {9, 21}})
      for (const AttnParams* p : {&none, &top, &bottom})
        for (RingLayout layout : {RingLayout::contiguous, RingLayout::zigzag}) {
          const index_t n = nm.first, m = nm.second;  // not a structured binding: INFO's lambda
          if (P > std::min(n, m)) continue;           // captures them, which clang 14 refuses
          INFO("P = " << P << ", n = " << n << ", m = " << m << ", causal " << p->causal
                      << (p->align == CausalAlign::top_left ? " top-left" : " bottom-right")
                      << (layout == RingLayout::zigzag ? ", zigzag" : ", contiguous"));
          check_ring<T>(n, m, 8, P, *p, layout, RingPass::bwd);
        }
  check_ring<T>(70, 70, 16, 3, top, RingLayout::zigzag, RingPass::fwd);  // several key tiles
  check_ring<T>(150, 130, 4, 4, none, RingLayout::contiguous, RingPass::bwd);
}

TEST_CASE_TEMPLATE("ring: large scores (scale 3 to 100) pass the rule, forward and backward", T,
                   float, double) {
  // |L| grows with the scale; the P - 1 folds through L cost each weight about u |L| apiece
  // (floor_magnitudes), which the naive yardstick never pays.
  const AttnParams base{};
  const AttnParams causal{true, CausalAlign::top_left, {}};
  for (double scale : {3.0, 5.0, 10.0, 30.0, 100.0})
    for (index_t P : {2, 3, 4, 8})
      for (const AttnParams* p : {&base, &causal}) {
        AttnParams scaled = *p;
        scaled.scale = scale;
        INFO("scale " << scale << ", P = " << P << ", causal " << p->causal);
        check_ring<T>(40, 40, 8, P, scaled, RingLayout::zigzag, RingPass::bwd);
        check_ring<T>(37, 45, 8, P, scaled, RingLayout::contiguous, RingPass::bwd);
      }
}

TEST_CASE_TEMPLATE("ring: folds that go wrong still fail the rule at large scores", T, float,
                   double) {
  // The ring's fold (fold_part) over P parts of the keys, emulated from split-KV partials (the
  // parts' (O_s, L_s)): folded right it passes with merges_ring(P); a part left out, or the heavier
  // weight of a fold off by 256 times what rounding may cost it, fails.
  const index_t n = 8, m = 256, d = 16, P = 4;
  for (double scale : {3.0, 10.0, 30.0, 100.0}) {
    TorchGenerator gen(9);
    const AttnParams params{false, CausalAlign::top_left, scale};
    test::Problem<T> pr{draw<T>(gen, n, d), draw<T>(gen, m, d), draw<T>(gen, m, d), {}, params};
    SplitKvResult<T> parts;
    split_kv_forward(DecodeShape{1, n, m, d}, params, P, 1, pr.Q.data(), pr.K.data(), pr.V.data(),
                     parts, TileSizes{4, 16});
    test::Expected<T> e(pr);
    e.merged(m, merges_ring(P));
    const double Lambda = double(e.R.L.maxCoeff());
    const double off =
        256 * double(2 + merges_ring(P)) * accumulator_unit(precision_of<T>()) * Lambda;
    for (int how : {0, 1, 2}) {  // 0: right, 1: the last part left out, 2: a weight off
      Mat<T> O = Mat<T>::Zero(n, d);
      Vec<T> L(n);
      for (index_t q = 0; q < n; ++q) {
        T Lq = neg_inf<T>();
        for (index_t s = 0; s < P - (how == 1 ? 1 : 0); ++s) {
          const T* O_s = parts.O_part.data() + (s * n + q) * d;
          const T L_s = parts.L_part[std::size_t(s * n + q)];
          if (how == 2 && s == P - 1) {  // the last fold, its heavier weight off by (1 + off)
            const SplitL<T> merged =
                merge_lse(std::array<T, 2>{Lq, L_s}.data(), 2, 1).finalize_split();
            const T w = split_weight(Lq, merged.L), w_s = split_weight(L_s, merged.L);
            const bool mine = w >= w_s;
            for (index_t x = 0; x < d; ++x)
              O(q, x) = T(double(w) * (mine ? 1 + off : 1)) * O(q, x) +
                        T(double(w_s) * (mine ? 1 : 1 + off)) * O_s[x];
            Lq = merged.L;
            continue;
          }
          Lq = fold_part(O.row(q).data(), Lq, O_s, L_s, d).L;
        }
        L(q) = Lq;
      }
      const RuleVerdict v = judge(precision_of<T>(), O, e.rf.O, e.nf.O, e.R.O, Held::in_p);
      INFO("scale " << scale << ", fold " << how << ": O error " << v.err << " bound " << v.bound);
      CHECK(v.pass() == (how == 0));
      if (how == 0) CHECK(judge(precision_of<T>(), L, e.rf.L, e.nf.L, e.R.L, Held::wide).pass());
    }
  }
}

TEST_CASE("ring: the transport's broadcast gives every rank rank 0's bytes") {
  const RingResult<float> r = ring_threads<float>(3, [](RingTransport& net) {
    unsigned char id[128];
    for (int k = 0; k < 128; ++k) id[k] = (unsigned char)(net.rank() == 0 ? k : 0);
    net.broadcast(id, sizeof id);
    bool same = true;
    for (int k = 0; k < 128; ++k) same = same && id[k] == (unsigned char)k;
    RingResult<float> out;
    out.L = {same ? 1.0f : 0.0f};
    std::vector<float> all(net.rank() == 0 ? 3 : 0);
    net.gather(out.L.data(), sizeof(float), all.data(),
               {sizeof(float), sizeof(float), sizeof(float)});
    out.O = all;
    return out;
  });
  CHECK(r.O == std::vector<float>{1.0f, 1.0f, 1.0f});
}

TEST_CASE("ring: a rank that fails wakes the one waiting on it") {
  InProcessRing ring(2);
  bool aborted = false;
  std::thread waiter([&] {
    InProcessRank net(ring, 1);
    float send = 1, recv = 0;
    const int id = net.start_shift(&send, sizeof send, &recv, sizeof recv, 0);
    try {
      net.wait(id);  // rank 0 never sends
    } catch (const RingAborted&) {
      aborted = true;
    }
  });
  ring.abort();
  waiter.join();
  CHECK(aborted);
}
