// fast_attention.cpp — the fast CPU path (see fast_attention.hpp for the equations), built once
// per x86-64 level in the level's namespace (kernels.hpp); its table `kernels` is what levels.cpp
// calls.
#include "flashdemo/fast/fast_attention.hpp"

#include <omp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "flashdemo/fast/exp_row.hpp"
#include "flashdemo/fast/kernels.hpp"
#include "flashdemo/fast/level_namespace.hpp"
#include "flashdemo/fast/tile_product.hpp"
#include "flashdemo/fast/vector_exp.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/tile_math.hpp"

namespace fd::fast {
inline namespace FD_FAST_LEVEL {
namespace {

template <class T>
using Tile = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapC = Eigen::Map<const Tile<T>>;
template <class T>
using Map = Eigen::Map<Tile<T>>;
template <class T>
using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

// The largest (kMax) or smallest of S[0, keep), read only (-inf or +inf for keep = 0).
template <bool kMax, class T>
T extreme(const T* S, index_t keep) {
  using V = typename Simd<T>::V;
  const index_t W = Simd<T>::W;
  const T start = kMax ? neg_inf<T>() : -neg_inf<T>();
  const auto pick = [](auto a, auto b) { return kMax ? (a > b ? a : b) : (a < b ? a : b); };
  V top = V{} + start;
  index_t k = 0;
  for (; k + W <= keep; k += W) top = pick(top, Simd<T>::load(S + k));
  T out = start;
  for (index_t x = 0; x < W; ++x) out = pick(out, top[x]);
  for (; k < keep; ++k) out = pick(out, S[k]);
  return out;
}

// The largest of round(scale S[k]) over k < keep, without writing S: rounding is monotone, so it
// is round(scale max S) for scale >= 0 and round(scale min S) below (-inf for keep = 0). The scale
// is applied where P is formed (exp_row), which saves the row a store and a reload.
template <class T>
T scaled_max(const T* S, index_t keep, T scale) {
  if (keep == 0) return neg_inf<T>();
  return scale * (scale >= T(0) ? extreme<true>(S, keep) : extreme<false>(S, keep));
}

// One row of a score tile, in place:
//   m_new = max(m, rowmax scale S);  P = exp(scale S - m_new) on the `keep` visible keys, 0 on the
//   rest;  returns rowsum P and sets m to m_new, alpha to exp(m_old - m_new) (0 while m_old =
//   -inf).
template <class T>
T softmax_row(T* S, index_t keep, index_t cols, T scale, T& m, T& alpha) {
  const T row_max = scaled_max(S, keep, scale);
  const T m_new = keep > 0 ? std::max(m, row_max) : m;
  // A row still at -inf (fully masked so far) is shifted by 0: exp(-inf) = 0, never NaN.
  const T shift = m_new == neg_inf<T>() ? T(0) : m_new;
  alpha = std::exp(m - shift);
  m = m_new;
  return exp_row<false>(S, keep, cols, scale, shift, T(0), [](index_t, auto) {});
}

// Memory that no one zeroes, grown on demand and kept: every entry is written before it is read,
// by the threads that will use it, so the first touch of a page (its fault, the kernel's zeroing)
// happens in parallel, where one thread zero-filling a K^T pack kept the others waiting. Small
// buffers come from malloc, which hands the same pages back on the next call; from `huge` bytes
// on, 2 MiB pages where the kernel allows them (MADV_HUGEPAGE): a 4 KiB page fault for each
// fresh page of a backward's partials (128 MiB at n = 8192, d = 128) took most of its time.
template <class T>
struct Buffer {
  static constexpr std::size_t huge = std::size_t(32) << 20, page = std::size_t(2) << 20;
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T[], Free> data;
  std::size_t capacity = 0;
  // Room for count entries (their contents undefined when the buffer grows).
  T* ensure(index_t count) {
    if (std::size_t(count) <= capacity && data) return data.get();
    const std::size_t want = std::max<std::size_t>(1, std::size_t(count)) * sizeof(T);
    const std::size_t align = want < huge ? 64 : page;
    const std::size_t bytes = (want + align - 1) / align * align;
    data.reset(static_cast<T*>(std::aligned_alloc(align, bytes)));
    if (!data) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
    if (align == page) madvise(data.get(), bytes, MADV_HUGEPAGE);  // advice: 4 KiB pages if refused
#endif
    capacity = bytes / sizeof(T);
    return data.get();
  }
  T* operator+(index_t k) const {
    return data.get() + k;
  }
};

// One head's operands laid out for tile_product, once per head:
//   Kt (or Vt): per key tile j, K_j^T (d x Bc', Bc' = Bc padded to whole vectors, zeros past m)
//       in panels of P = kPanelColumns keys (tile_product.hpp), each d x P row-major: key c,
//       dimension x at (c / P) d P + x P + c % P. A panel is the product's column block, its
//       d rows one run of memory.
//   Xp: Q, K, V or dO with d' = d padded to whole vectors (zero columns): in panels of P
//       columns where d' is two or more whole panels (d' > P, P | d'), each rows x P: row r,
//       column x at (x / P) rows P + r P + x % P (floats on AVX-512, P = 64: d = 128, where a
//       row of 512 bytes put a column block's rows on half of L1's sets); else rows x d'
//       row-major, the caller's array itself when d = d' (floats on AVX-512: d = 64; d = 80
//       stays row-major, since a part-filled panel read 16 of its 64). On AVX-512 only (32
//       doubles: d = 64 in panels too): on AVX2 and SSE a panel's row is a cache line or less, and
//       the rows in panels measured 0.95x to 0.98x there (the copy, for no L1 gain).
template <class T>
struct Packed {
  static constexpr index_t P = kPanelColumns<T>;
  index_t d, dp, bcp;      // d, d', Bc'
  index_t panel_size = 0;  // entries from one panel to the next (d P for Kt, Vt; rows P for Xp)
  Buffer<T> data;
  const T* base = nullptr;  // data, or (Xp) the caller's array where it is row-major already
  index_t tile_size() const { return ceil_div(bcp, P) * panel_size; }
  const T* tile(index_t j) const { return base + j * tile_size(); }  // for Kt, Vt
  // Xp in whole panels, where a panel's row is 4 cache lines or more (AVX-512)
  bool panels() const { return dp > P && dp % P == 0 && P * index_t(sizeof(T)) >= 256; }
  const T* rows(index_t r) const { return base + r * (panels() ? P : dp); }  // for Xp
  // tile_product's strides for B = this tile (Kt, Vt) against A (a_row, a_inner) and C (ldc)
  Strides b_of(index_t a_row, index_t a_inner, index_t ldc) const {
    return {a_row, a_inner, P, ldc, panel_size};
  }
  // the same for B = rows of Xp (from rows(r))
  Strides b_rows(index_t a_row, index_t a_inner, index_t ldc) const {
    return panels() ? Strides{a_row, a_inner, P, ldc, panel_size}
                    : Strides{a_row, a_inner, dp, ldc};
  }
};

// Both packs are called by every thread of a parallel region (or outside one): one thread sizes
// the buffer, then the threads share the copying.
template <class T>
void pack_transposed(const T* X, const Tiling& t, index_t d, Packed<T>& out) {
  constexpr index_t P = Packed<T>::P;
#pragma omp single
  {
    out.d = d, out.dp = padded<T>(d), out.bcp = padded<T>(t.Bc), out.panel_size = d * P;
    out.base = out.data.ensure(t.Tc() * out.tile_size());
  }
#pragma omp for schedule(static)
  for (index_t j = 0; j < t.Tc(); ++j) {
    const Range cols = t.cols(j);
    T* tile = out.data + j * out.tile_size();
    // In strips of kStrip dimensions: a key's strip is one cache line read, and the strip's
    // kStrip rows of the panel stay in L1 while every key writes its column (key by key over all
    // d dimensions, each write touched another line: 7 % of a one-thread forward at d = 128).
    constexpr index_t kStrip = 64 / index_t(sizeof(T));
    for (index_t x0 = 0; x0 < d; x0 += kStrip) {
      const index_t x1 = std::min(d, x0 + kStrip);
      for (index_t c = 0; c < cols.size(); ++c) {
        T* column = tile + c / P * out.panel_size + c % P;
        for (index_t x = x0; x < x1; ++x) column[x * P] = X[(cols.begin + c) * d + x];
      }
    }
    // zeros past the tile's last key, to Bc' (a product reads no column past it)
    for (index_t c = cols.size(); c < out.bcp; ++c) {
      T* column = tile + c / P * out.panel_size + c % P;
      for (index_t x = 0; x < d; ++x) column[x * P] = T(0);
    }
  }
}

template <class T>
void pack_rows(const T* X, index_t rows, index_t d, Packed<T>& out) {
  constexpr index_t P = Packed<T>::P;
#pragma omp single
  {
    out.d = d, out.dp = padded<T>(d), out.bcp = 0, out.panel_size = rows * P;
    const bool copy = d != out.dp || out.panels();
    out.base = copy ? out.data.ensure(rows * out.dp) : X;  // (whole panels: the same size)
  }
  if (d == out.dp && !out.panels()) return;  // X itself
#pragma omp for schedule(static)
  for (index_t r = 0; r < rows; ++r) {
    if (!out.panels()) {
      T* row = out.data + r * out.dp;
      std::copy(X + r * d, X + (r + 1) * d, row);
      std::fill(row + d, row + out.dp, T(0));
      continue;
    }
    for (index_t x0 = 0; x0 < out.dp; x0 += P) {  // the row's part in each panel
      T* part = out.data + x0 / P * out.panel_size + r * P;
      const index_t filled = std::min(d, x0 + P) - x0;  // > 0: d' - d is less than a vector
      std::copy(X + r * d + x0, X + r * d + x0 + filled, part);
      std::fill(part + filled, part + P, T(0));
    }
  }
}

// The keys of `cols` that query row `row` sees: all of them, or a prefix (causal).
index_t visible_in(const Mask& mask, TileKind kind, index_t row, Range cols) {
  if (kind == TileKind::full) return cols.size();
  const index_t visible = mask.visible_keys(row) - cols.begin;
  return visible < 0 ? 0 : (visible > cols.size() ? cols.size() : visible);
}

// L = m + log l from l summed in double, as L + lo to twice T's precision (online_softmax.hpp):
// for float the sum in double is already that exact; for double, TwoSum.
template <class T>
SplitL<T> split_lse(T m, double l) {
  if (!(l > 0)) return {};
  if constexpr (std::is_same_v<T, float>) {
    const double L = double(m) + std::log(l);
    const float hi = float(L);
    return {hi, float(L - double(hi))};
  } else {
    return two_sum(m, std::log(l));
  }
}

// One query tile of one head: the online softmax over its key tiles. S: Br x Bc', Oi: Br x d'.
// L_lo may be null.
template <class T>
void forward_tile(const Mask& mask, const Tiling& t, T scale, const T* Q, const Packed<T>& Kt,
                  const Packed<T>& Vp, T* O, T* L, T* L_lo, index_t i, std::vector<T>& S,
                  std::vector<T>& Oi) {
  const Range rows = t.rows(i);
  const index_t br = rows.size(), d = Kt.d, dp = Vp.dp, bcp = Kt.bcp;
  std::fill(Oi.begin(), Oi.end(), T(0));
  std::vector<T> m(std::size_t(br), neg_inf<T>());
  // l in double, and L = m + log l kept with its rounding error: the backward's P = exp(S - L)
  // would feel L's rounding in every entry of a row.
  std::vector<double> l(std::size_t(br), 0.0);
  for (index_t j = 0; j < t.Tc(); ++j) {
    const TileKind kind = t.classify(mask, i, j);
    if (kind == TileKind::skipped) continue;
    const Range cols = t.cols(j);
    // The keys the tile's last row sees, the most of any row (a causal mask's rows see prefixes
    // that grow with the row): on the diagonal, the keys past them are masked for every row, and
    // neither product computes them (with Bc = 4 Br, the last 3/4, 2/4, 1/4 of the four diagonal
    // tiles that share a key tile). A row's product still takes the 0 x V terms of keys up to
    // `seen` that it does not see itself.
    const index_t seen = visible_in(mask, kind, rows.end - 1, cols), bcv = padded<T>(seen);
    tile_product(br, bcv, d, Q + rows.begin * d, Kt.tile(j), S.data(),  // S = Q_i K_j^T
                 Kt.b_of(d, 1, bcp), false);
    for (index_t r = 0; r < br; ++r) {
      T alpha;
      const index_t keep = visible_in(mask, kind, rows.begin + r, cols);
      const T rowsum = softmax_row(&S[r * bcp], keep, bcv, scale, m[r], alpha);
      l[r] = double(alpha) * l[r] + double(rowsum);
      // O_i's row rescaled; by alpha = 0 (a new max beyond exp's range), +0 where negative
      // sums times 0 would give -0: O_i never holds -0, so the 0 x V terms of the keys past a row's
      // own (which the tile's other rows decide) never change its bits.
      if (alpha == T(0))
        std::fill(&Oi[r * dp], &Oi[r * dp] + dp, T(0));
      else
        Row<T>(&Oi[r * dp], dp) *= alpha;
    }
    tile_product(br, dp, seen, S.data(), Vp.rows(cols.begin), Oi.data(),  // O_i += P V_j
                 Vp.b_rows(bcp, 1, dp), true);
  }
  for (index_t r = 0; r < br; ++r) {
    const double inv = l[r] > 0 ? 1.0 / l[r] : 0.0;  // O = O_i / l, rounded once
    for (index_t x = 0; x < d; ++x) O[(rows.begin + r) * d + x] = T(inv * double(Oi[r * dp + x]));
    const SplitL<T> lse = split_lse(m[r], l[r]);
    L[rows.begin + r] = lse.L;
    if (L_lo) L_lo[rows.begin + r] = lse.lo;
  }
}

// One row of the backward, in place, in one pass: P = exp((scale S - L) - L_lo) on the visible
// keys, the scale rounded as the forward rounded it, 0 on the rest (L = -inf, a row that sees no
// key, has keep = 0: shift 0); and dS = P (dP - D) over dP's row (bc keys, in whole vectors), where
// a second pass reread P.
template <class T>
void p_and_ds_row(T* P, T* dP, index_t keep, index_t bc, T scale, T L, T L_lo, T D) {
  using S = Simd<T>;
  if (L == neg_inf<T>()) L = T(0), L_lo = T(0);
  const auto ds = [&](index_t k, typename S::V p) { S::store(dP + k, p * (S::load(dP + k) - D)); };
  exp_row<true>(P, keep, bc, scale, L, L_lo, ds);
  for (index_t k = padded<T>(keep); k < bc; k += S::W) ds(k, S::load(P + k));  // P = 0 here
}

// A thread's tiles in the backward: P and dP, then dS in dP's place (Br x Bc'), dK_j and dV_j (Bc x
// d', only where d' > d: else they are summed in the partials' rows, backward_tile), dQ_i (Br x
// d').
template <class T>
struct BackwardScratch {
  std::vector<T> P, dP, dKj, dVj, dQi;
  BackwardScratch(const Tiling& t, index_t d)
      : P(std::size_t(t.Br * padded<T>(t.Bc))),
        dP(P.size()),
        dKj(std::size_t(padded<T>(d) > d ? t.Bc * padded<T>(d) : 0)),
        dVj(dKj.size()),
        dQi(std::size_t(t.Br * padded<T>(d))) {}
};

// One head's operands for the backward.
template <class T>
struct BackwardPacks {
  Packed<T> Kt, Vt, Qp, Kp, dOp;
};

// The backward's work, cut from the shape alone (never from the thread count, so that every sum
// below is grouped the same way whatever the threads): key tiles in `bands`, query tiles in
// `chunks`; one item is (head, band, chunk). An item owns dK_j, dV_j of its band's key tiles for
// its chunk's rows (a partial) and dQ of its chunk's rows for its band's keys (a partial): the
// partials are summed at the end in band and chunk order. About 64 items in all (16 threads x 4):
// a head alone gives up to 8 x 8, where key tiles alone (Tc = 32 at n = 8192) left 16 threads half
// idle. Every partial goes through memory (written once, read once), so h heads take about 64 / h
// items each, by fewer bands: a chunk's dK_j, dV_j are summed in T over its query tiles, so the
// chunks stay as a head alone has them (dK and dV the same bits for any h), while dQ is summed in
// double whatever the bands. 16 heads: 1 band x 8 chunks, partials of 72 n d bytes a head where
// 8 x 8 took 128.
struct Split {
  index_t bands, chunks;
};

Split split_for(const Tiling& t, index_t heads) {
  const index_t bands = std::clamp<index_t>(t.Tc(), 1, 8);  // one (empty) band when m = 0
  const index_t chunks = std::min(t.Tr(), ceil_div(64, bands));
  const index_t want = ceil_div(64, std::max<index_t>(1, heads));  // items a head
  return {std::clamp<index_t>(ceil_div(want, std::max<index_t>(1, chunks)), 1, bands), chunks};
}

// Part k of `count` things cut into `parts` nearly equal runs.
Range part(index_t count, index_t parts, index_t k) {
  return {k * count / parts, (k + 1) * count / parts};
}

// What the mask leaves of each (band, chunk): its computed (not skipped) tiles, the same for every
// head. A pair with none (under a causal mask, a band of keys that no row of the chunk sees)
// contributes nothing: its item does not run, its partials are never written (their buffers hold
// an earlier call's sums), and the sums pass over it (reduce_partials). That gives the bits that
// adding its zeros gave: a sum that starts at +0 is never -0, and adding +0 leaves it as it is.
struct Costs {
  Split sp;
  std::vector<index_t> tiles;      // bands x chunks: tiles[b * chunks + c]
  std::vector<index_t> chunk_row;  // per query tile i, the chunk that holds it
  std::vector<index_t> band_col;   // per key tile j, the band that holds it
  index_t of(index_t b, index_t c) const { return tiles[std::size_t(b * sp.chunks + c)]; }
};

Costs costs_for(const Tiling& t, const Mask& mask, Split sp) {
  Costs costs{sp, std::vector<index_t>(std::size_t(sp.bands * sp.chunks)),
              std::vector<index_t>(std::size_t(t.Tr())), std::vector<index_t>(std::size_t(t.Tc()))};
  for (index_t b = 0; b < sp.bands; ++b) {
    const Range keys = part(t.Tc(), sp.bands, b);
    for (index_t j = keys.begin; j < keys.end; ++j) costs.band_col[std::size_t(j)] = b;
    for (index_t c = 0; c < sp.chunks; ++c) {
      const Range queries = part(t.Tr(), sp.chunks, c);
      for (index_t i = queries.begin; i < queries.end; ++i) {
        costs.chunk_row[std::size_t(i)] = c;
        for (index_t j = keys.begin; j < keys.end; ++j)
          costs.tiles[std::size_t(b * sp.chunks + c)] +=
              t.classify(mask, i, j) != TileKind::skipped;
      }
    }
  }
  return costs;
}

// One work item of the backward, and its cost in computed tiles.
struct Item {
  index_t x, band, chunk, cost;
};

// The items of a group of g heads that compute something, the most tiles first: a causal item's
// cost ranges from 0 to its whole band x chunk, and the longest must not start last.
std::vector<Item> backward_items(const Costs& costs, index_t g) {
  std::vector<Item> items;
  for (index_t x = 0; x < g; ++x)
    for (index_t b = 0; b < costs.sp.bands; ++b)
      for (index_t c = 0; c < costs.sp.chunks; ++c)
        if (costs.of(b, c) > 0) items.push_back({x, b, c, costs.of(b, c)});
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.cost > b.cost; });
  return items;
}

// The partial sums of one group of heads: per head, per band, dQ (n x d, double), and per chunk,
// dK and dV (m x d, unscaled), in buffers the caller keeps (Workspace).
template <class T>
struct Partials {
  index_t n, m, d;
  Split sp;
  double* dQ;
  T *dK, *dV;
  double* dQ_of(index_t x, index_t b) const { return dQ + (x * sp.bands + b) * n * d; }
  T* dK_of(index_t x, index_t c) const { return dK + (x * sp.chunks + c) * m * d; }
  T* dV_of(index_t x, index_t c) const { return dV + (x * sp.chunks + c) * m * d; }
};

// What a call needs beyond each thread's tiles, kept by the calling thread for its next call and
// grown on demand: its first touch (a page fault per fresh page, the kernel zeroing it) was paid
// on every call, 7 % of a one-thread forward at n = 4096, d = 128 (the K^T packs) and more of a
// backward (its partials, 64 MiB there). Held until the thread ends: at most what the largest call
// so far needed.
template <class T>
struct Workspace {
  std::vector<Packed<T>> Kt, Vp;        // the forward's packs, per head of a group
  std::vector<BackwardPacks<T>> packs;  // the backward's
  Buffer<double> dQ;                    // the backward's partials
  Buffer<T> dK, dV;
};

template <class T>
Workspace<T>& workspace() {
  static thread_local Workspace<T> kept;
  return kept;
}

// Room for G heads' packs in a kept list (the packs keep their buffers).
template <class P>
std::vector<P>& packs_for(std::vector<P>& kept, index_t G) {
  if (kept.size() < std::size_t(G)) kept.resize(std::size_t(G));
  return kept;
}

template <class T>
Partials<T> partials_in(Workspace<T>& ws, index_t G, index_t n, index_t m, index_t d, Split sp) {
  return {n,
          m,
          d,
          sp,
          ws.dQ.ensure(G * sp.bands * n * d),
          ws.dK.ensure(G * sp.chunks * m * d),
          ws.dV.ensure(G * sp.chunks * m * d)};
}

// One key tile j of one head against the query tiles `queries`: dK_j and dV_j over those rows
// (unscaled, into dK, dV at j's keys), and dQ += dS K_j for them (unscaled, in double).
template <class T>
void backward_tile(const Mask& mask, const Tiling& t, T scale, const T* Q, const T* dO,
                   const BackwardPacks<T>& pk, const T* L, const T* L_lo, const T* D, double* dQ,
                   T* dK, T* dV, index_t j, Range queries, BackwardScratch<T>& w) {
  const Range cols = t.cols(j);
  const index_t bc = cols.size(), d = pk.Kt.d, dp = pk.Kp.dp, bcp = pk.Kt.bcp;
  // dK_j, dV_j summed over the query tiles in T: in the partials' own rows where a row is whole
  // vectors (d = d': no copy, no zeroing), else in the thread's tiles, copied out at the end. The
  // first product writes them (C = A B), the rest add (the same bits as adding to zeros).
  const bool in_place = dp == d;
  T* dKj = in_place ? dK + cols.begin * d : w.dKj.data();
  T* dVj = in_place ? dV + cols.begin * d : w.dVj.data();
  bool first = true;
  for (index_t i = queries.begin; i < queries.end; ++i) {
    const TileKind kind = t.classify(mask, i, j);
    if (kind == TileKind::skipped) continue;
    const Range rows = t.rows(i);
    const index_t br = rows.size(), bcv = padded<T>(bc);
    // S formed exactly as the forward formed it, so that exp(S - L) matches the saved L.
    tile_product(br, bcv, d, Q + rows.begin * d, pk.Kt.tile(j), w.P.data(),  // S = Q_i K_j^T
                 pk.Kt.b_of(d, 1, bcp), false);
    tile_product(br, bcv, d, dO + rows.begin * d, pk.Vt.tile(j), w.dP.data(),  // dP = dO_i V_j^T
                 pk.Vt.b_of(d, 1, bcp), false);
    for (index_t r = 0; r < br; ++r)  // P = exp(S - L), and dS = P (dP - D) in dP's place
      p_and_ds_row(&w.P[r * bcp], &w.dP[r * bcp], visible_in(mask, kind, rows.begin + r, cols), bc,
                   scale, L[rows.begin + r], L_lo ? L_lo[rows.begin + r] : T(0), D[rows.begin + r]);
    const T* dS = w.dP.data();
    tile_product(bc, dp, br, w.P.data(), pk.dOp.rows(rows.begin), dVj,  // dV += P^T dO
                 pk.dOp.b_rows(1, bcp, dp), !first);
    tile_product(bc, dp, br, dS, pk.Qp.rows(rows.begin), dKj,  // dK += dS^T Q
                 pk.Qp.b_rows(1, bcp, dp), !first);
    tile_product(br, dp, bc, dS, pk.Kp.rows(cols.begin), w.dQi.data(),  // dQ_i = dS K_j
                 pk.Kp.b_rows(bcp, 1, dp), false);
    for (index_t r = 0; r < br; ++r)  // dQ += dS K, summed across key tiles in double
      for (index_t x = 0; x < d; ++x) dQ[(rows.begin + r) * d + x] += double(w.dQi[r * dp + x]);
    first = false;
  }
  if (first) {  // no query tile sees key tile j: zeros
    std::fill(dKj, dKj + bc * dp, T(0));
    std::fill(dVj, dVj + bc * dp, T(0));
  }
  if (in_place) return;
  for (index_t c = 0; c < bc; ++c)
    for (index_t x = 0; x < d; ++x) {
      dK[(cols.begin + c) * d + x] = w.dKj[c * dp + x];
      dV[(cols.begin + c) * d + x] = w.dVj[c * dp + x];
    }
}

// One item: its band's key tiles, in order, against its chunk's query tiles. Its dQ partial (the
// chunk's rows of band b) starts at 0 here; only items that compute a tile run (backward_items).
template <class T>
void backward_item(const Mask& mask, const Tiling& t, T scale, const T* Q, const T* dO,
                   const BackwardPacks<T>& pk, const T* L, const T* L_lo, const T* D,
                   Partials<T>& part_sums, const Item& it, BackwardScratch<T>& w) {
  const Range keys = part(t.Tc(), part_sums.sp.bands, it.band);
  const Range queries = part(t.Tr(), part_sums.sp.chunks, it.chunk);
  const index_t d = part_sums.d;
  double* dQ = part_sums.dQ_of(it.x, it.band);
  const index_t r0 = t.rows(queries.begin).begin,
                r1 = queries.size() ? t.rows(queries.end - 1).end : r0;
  std::fill(dQ + r0 * d, dQ + r1 * d, 0.0);
  for (index_t j = keys.begin; j < keys.end; ++j)
    backward_tile(mask, t, scale, Q, dO, pk, L, L_lo, D, dQ, part_sums.dK_of(it.x, it.chunk),
                  part_sums.dV_of(it.x, it.chunk), j, queries, w);
}

// dQ = scale sum_b dQ_b,  dK = scale sum_c dK_c,  dV = sum_c dV_c: in double, in band and chunk
// order, each rounded once; rows shared between the threads (called inside a parallel region).
// A row's d sums run side by side (whole rows of each partial, in vectors), each entry still
// summed from 0 in band or chunk order.
// The partials of a (band, chunk) that computes nothing (Costs) were never written: passed over.
template <class T>
void reduce_partials(Partials<T>& ps, const Costs& costs, const Tiling& t, index_t g, T scale,
                     T* dQ, T* dK, T* dV) {
  const index_t d = ps.d;
  std::vector<double> sk(static_cast<std::size_t>(d)), sv(static_cast<std::size_t>(d));
#pragma omp for schedule(static)
  for (index_t r = 0; r < g * ps.n; ++r) {
    const index_t x = r / ps.n, row = r % ps.n, c = costs.chunk_row[std::size_t(row / t.Br)];
    std::fill(sk.begin(), sk.end(), 0.0);
    for (index_t b = 0; b < ps.sp.bands; ++b) {
      if (costs.of(b, c) == 0) continue;
      const double* part = ps.dQ_of(x, b) + row * d;
      for (index_t k = 0; k < d; ++k) sk[std::size_t(k)] += part[k];
    }
    for (index_t k = 0; k < d; ++k)
      dQ[r * d + k] = T(double(scale) * sk[std::size_t(k)]);  // dQ = scale dS K
  }
#pragma omp for schedule(static)
  for (index_t r = 0; r < g * ps.m; ++r) {
    const index_t x = r / ps.m, row = r % ps.m, b = costs.band_col[std::size_t(row / t.Bc)];
    std::fill(sk.begin(), sk.end(), 0.0);
    std::fill(sv.begin(), sv.end(), 0.0);
    for (index_t c = 0; c < ps.sp.chunks; ++c) {
      if (costs.of(b, c) == 0) continue;
      const T *part_k = ps.dK_of(x, c) + row * d, *part_v = ps.dV_of(x, c) + row * d;
      for (index_t k = 0; k < d; ++k) {
        sk[std::size_t(k)] += double(part_k[k]);
        sv[std::size_t(k)] += double(part_v[k]);
      }
    }
    for (index_t k = 0; k < d; ++k) {
      dK[r * d + k] = T(double(scale) * sk[std::size_t(k)]);  // dK = scale dS^T Q
      dV[r * d + k] = T(sv[std::size_t(k)]);
    }
  }
}

// How many heads to take at once: enough that every thread has `per_thread` items to work on
// (one head when a head alone has that many), so many small heads still use all the threads.
// The packs and partials are per head of a group.
index_t group_size(index_t heads, index_t items_per_head, index_t threads, index_t per_thread) {
  items_per_head = std::max<index_t>(1, items_per_head);  // n = 0: no items, one head at a time
  const index_t want = (per_thread * threads + items_per_head - 1) / items_per_head;
  return std::max<index_t>(1, std::min(heads, want));
}

// Items a thread of the forward has in each group of heads. Each group ends at a barrier (the
// next group's K and V are packed first), where a thread that the machine preempted holds the
// rest; 16 rather than 4 read 1.11x (d = 64) and 1.08x (d = 128) at 16 threads and 16 heads on a
// shared 16-core Xeon (docs/performance.md). The backward keeps 4: its items are longer.
constexpr index_t kForwardItemsPerThread = 16, kBackwardItemsPerThread = 4;

int thread_count(index_t threads) {
  return int(threads < 1 ? 1 : threads);
}

}  // namespace

// Heads in groups (group_size): the threads pack the group's K and V, then share its
// (head, query tile) items, the last query tiles first: under a causal mask they see the most keys,
// so the longest items start first and the short ones fill the tail.
template <class T>
void forward(const Shape& s, const AttnParams& p, const Options& o, const T* Q, const T* K,
             const T* V, T* O, T* L, T* L_lo) {
  const Tiling t{s.n, s.m, o.tiles.Br, o.tiles.Bc};
  const Mask mask = p.mask_for(s.n, s.m);
  const T scale = T(p.scale_for(s.d));
  const index_t G = group_size(s.heads(), t.Tr(), thread_count(o.threads), kForwardItemsPerThread);
  Workspace<T>& ws = workspace<T>();
  std::vector<Packed<T>>&Kt = packs_for(ws.Kt, G), &Vp = packs_for(ws.Vp, G);
#pragma omp parallel num_threads(thread_count(o.threads))
  {
    std::vector<T> S(std::size_t(t.Br * padded<T>(t.Bc))), Oi(std::size_t(t.Br * padded<T>(s.d)));
    for (index_t h0 = 0; h0 < s.heads(); h0 += G) {
      const index_t g = std::min(G, s.heads() - h0);
      for (index_t x = 0; x < g; ++x) {
        pack_transposed(K + (h0 + x) * s.m * s.d, t, s.d, Kt[std::size_t(x)]);
        pack_rows(V + (h0 + x) * s.m * s.d, s.m, s.d, Vp[std::size_t(x)]);
      }
#pragma omp for schedule(dynamic, 1)
      for (index_t w = 0; w < g * t.Tr(); ++w) {
        const index_t x = w % g, head = h0 + x, q0 = head * s.n * s.d, i = t.Tr() - 1 - w / g;
        forward_tile(mask, t, scale, Q + q0, Kt[std::size_t(x)], Vp[std::size_t(x)], O + q0,
                     L + head * s.n, L_lo ? L_lo + head * s.n : nullptr, i, S, Oi);
      }
    }
  }
}

// Heads in groups, as in the forward; within a group the threads take the (head, band, chunk)
// items of split_for as they come (the results do not depend on who took what), then sum the
// partials in a fixed order: dQ, dK and dV are the same bits for any thread count.
template <class T>
void backward(const Shape& s, const AttnParams& p, const Options& o, const T* Q, const T* K,
              const T* V, const T* O, const T* L, const T* L_lo, const T* dO, T* dQ, T* dK, T* dV,
              T* D) {
  const Tiling t{s.n, s.m, o.tiles.Br, o.tiles.Bc};
  const Mask mask = p.mask_for(s.n, s.m);
  const T scale = T(p.scale_for(s.d));
  const index_t rows = s.heads() * s.n, threads = thread_count(o.threads);
  const Split sp = split_for(t, s.heads());
  const Costs costs = costs_for(t, mask, sp);
  const index_t G = group_size(s.heads(), sp.bands * sp.chunks, threads, kBackwardItemsPerThread);
  Workspace<T>& ws = workspace<T>();
  std::vector<BackwardPacks<T>>& packs = packs_for(ws.packs, G);
  Partials<T> partials = partials_in(ws, G, s.n, s.m, s.d, sp);
  std::vector<Item> items;
#pragma omp parallel num_threads(int(threads))
  {
    // D = rowsum(dO * O) in T, one fused multiply-add after the other, as the tile kernel sums
    // dP = dO V^T: where P is one-hot (scores far apart), O is a row of V and dP - D must cancel
    // to exactly 0.
#pragma omp for schedule(static)
    for (index_t r = 0; r < rows; ++r) D[r] = row_D(dO + r * s.d, O + r * s.d, s.d);
    BackwardScratch<T> w(t, s.d);
    for (index_t h0 = 0; h0 < s.heads(); h0 += G) {
      const index_t g = std::min(G, s.heads() - h0);
      for (index_t x = 0; x < g; ++x) {
        const index_t q0 = (h0 + x) * s.n * s.d, k0 = (h0 + x) * s.m * s.d;
        BackwardPacks<T>& pk = packs[std::size_t(x)];
        pack_transposed(K + k0, t, s.d, pk.Kt);
        pack_transposed(V + k0, t, s.d, pk.Vt);
        pack_rows(Q + q0, s.n, s.d, pk.Qp);
        pack_rows(K + k0, s.m, s.d, pk.Kp);
        pack_rows(dO + q0, s.n, s.d, pk.dOp);
      }
#pragma omp single
      items = backward_items(costs, g);
#pragma omp for schedule(dynamic, 1)
      for (std::size_t k = 0; k < items.size(); ++k) {
        const index_t x = items[k].x, head = h0 + x, q0 = head * s.n * s.d;
        backward_item(mask, t, scale, Q + q0, dO + q0, packs[std::size_t(x)], L + head * s.n,
                      L_lo ? L_lo + head * s.n : nullptr, D + head * s.n, partials, items[k], w);
      }
      reduce_partials(partials, costs, t, g, scale, dQ + h0 * s.n * s.d, dK + h0 * s.m * s.d,
                      dV + h0 * s.m * s.d);
    }
  }
}

// Each thread multiplies its rows alone: Eigen parallelizes a product itself, over all the
// machine's cores, when it is not inside a team of two or more, so a one-thread GEMM would have
// run on every core (or, on a busy machine, far slower than on one) without omp_set_num_threads(1).
template <class T>
void gemm(index_t rows, index_t inner, index_t cols, const T* A, const T* B, T* C,
          index_t threads) {
  const int n = thread_count(threads);
  const index_t chunk = (rows + n - 1) / n;
#pragma omp parallel num_threads(n)
  {
    omp_set_num_threads(1);  // this thread's own setting, for the products it starts
#pragma omp for schedule(static, 1)
    for (int k = 0; k < n; ++k) {
      const index_t r0 = k * chunk, r1 = std::min(rows, r0 + chunk);
      if (r0 >= r1) continue;
      Map<T>(C + r0 * cols, r1 - r0, cols).noalias() =
          MapC<T>(A + r0 * inner, r1 - r0, inner) * MapC<T>(B, inner, cols);
    }
  }
}

namespace {

// The building blocks as the table gives them to their tests.
void exp_floats(const float* x, float* out, index_t count) {
  using S = Simd<float>;
  for (index_t k = 0; k < count; k += S::W) S::store(out + k, exp_vector(S::load(x + k)));
}

template <class T>
void product(index_t rows, index_t N, index_t K, const T* A, index_t a_row, index_t a_inner,
             const T* B, index_t ldb, index_t b_panel, T* C, index_t ldc, bool accumulate) {
  tile_product<T>(rows, N, K, A, B, C, Strides{a_row, a_inner, ldb, ldc, b_panel}, accumulate);
}

}  // namespace

// This level's table (kernels.hpp): the instructions it was compiled for and its entry points.
constexpr const char* isa() {
#if defined(__AVX512F__)
  return "AVX-512";
#elif defined(__AVX2__) && defined(__FMA__)
  return "AVX2, FMA";
#elif defined(__AVX__)
  return "AVX";
#elif defined(__SSE4_2__)
  return "SSE4.2";
#elif defined(__SSE2__)
  return "SSE2";
#else
  return "the compiler's vectors";
#endif
}

extern const Kernels kernels = {
    isa(),
    kSimdBytes,
    kBlockRows,
    kBlockVectors,
    {&forward<float>, &backward<float>, &gemm<float>, &product<float>},
    {&forward<double>, &backward<double>, &gemm<double>, &product<double>},
    &exp_floats,
};

}  // namespace FD_FAST_LEVEL
}  // namespace fd::fast
