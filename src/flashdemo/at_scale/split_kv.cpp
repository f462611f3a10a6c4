// split_kv.cpp — split-KV attention on the CPU (split_kv.hpp has the equations and the plan).
#include "flashdemo/at_scale/split_kv.hpp"

#include <algorithm>
#include <stdexcept>

#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/tile_math.hpp"

namespace fd {

double split_efficiency(index_t units, index_t splits, index_t workers) {
  const index_t items = units * splits;
  return double(items) / double(ceil_div(items, workers) * workers);
}

namespace {

SplitPlan plan_with_efficiencies(index_t units, index_t workers, index_t key_tiles,
                                 index_t min_tiles) {
  SplitPlan plan;
  plan.units = std::max<index_t>(1, units);
  plan.workers = std::max<index_t>(1, workers);
  plan.key_tiles = std::max<index_t>(1, key_tiles);
  plan.min_tiles = std::max<index_t>(1, min_tiles);
  plan.max_splits = std::clamp<index_t>(plan.key_tiles / plan.min_tiles, 1, kMaxSplits);
  for (index_t num_splits = 1; num_splits <= plan.max_splits; ++num_splits) {
    plan.efficiency.push_back(split_efficiency(plan.units, num_splits, plan.workers));
    plan.best = std::max(plan.best, plan.efficiency.back());
  }
  return plan;
}

}  // namespace

SplitPlan plan_splits(index_t units, index_t workers, index_t key_tiles, index_t min_tiles) {
  SplitPlan plan = plan_with_efficiencies(units, workers, key_tiles, min_tiles);
  for (index_t num_splits = 1; num_splits <= plan.max_splits; ++num_splits)
    if (plan.efficiency[std::size_t(num_splits - 1)] >= kSplitEfficiency * plan.best) {
      plan.splits = num_splits;
      break;
    }
  return plan;
}

SplitPlan forced_splits(index_t units, index_t workers, index_t key_tiles, index_t splits,
                        index_t min_tiles) {
  if (splits < 1 || splits > key_tiles)
    throw std::invalid_argument("splits must lie in 1 .. the number of key tiles");
  SplitPlan plan = plan_with_efficiencies(units, workers, key_tiles, min_tiles);
  plan.splits = splits;
  plan.forced = true;
  return plan;
}

Tiling decode_tiling(const DecodeShape& s, TileSizes tiles) {
  return Tiling{s.n, s.m, std::min(tiles.Br, s.n), std::min(tiles.Bc, s.m)};
}

index_t decode_units(const DecodeShape& s, TileSizes tiles) {
  return s.heads * decode_tiling(s, tiles).Tr();
}

double kv_bytes(const DecodeShape& s, const Mask& mask, std::size_t bytes_per_element) {
  const index_t keys = s.n > 0 ? mask.visible_keys(s.n - 1) : 0;  // the last row sees the most
  return 2.0 * double(s.heads) * double(keys) * double(s.d) * double(bytes_per_element);
}

namespace {

template <class T>
struct Problem {
  DecodeShape shape;
  Tiling tiling;
  Mask mask;
  T scale;
  index_t splits;
};

// One work item: query tile i of one head against the key tiles of split s. Key tiles outer, rows
// inner, so a tile of K and V serves every row of the query tile while it is in cache. A row skips
// a key tile it sees none of (its scores would all be -inf: update_row would leave it as it is).
template <class T>
void split_item(const Problem<T>& p, index_t i, index_t s, const T* Q, const T* K, const T* V,
                T* O_part, T* L_part, std::vector<RowState<T>>& st, std::vector<T>& scores) {
  const index_t d = p.shape.d, Tc = p.tiling.Tc();
  const Range rows = p.tiling.rows(i);
  for (index_t q = rows.begin; q < rows.end; ++q) {
    st[std::size_t(q - rows.begin)] = RowState<T>{};
    std::fill(O_part + q * d, O_part + (q + 1) * d, T(0));
  }
  const index_t seen = p.mask.visible_keys(rows.end - 1);  // keys the tile's last row sees
  for (index_t j = s * Tc / p.splits; j < (s + 1) * Tc / p.splits; ++j) {
    const Range c = p.tiling.cols(j);
    if (c.begin >= seen) break;  // every later tile is masked for every row
    for (index_t q = rows.begin; q < rows.end; ++q) {
      if (c.begin >= p.mask.visible_keys(q)) continue;
      score_row(Q + q * d, K + c.begin * d, d, c.begin, c.size(), d, p.scale, p.mask, q,
                scores.data());  // S row q, tile j (masked: -inf)
      update_row(st[std::size_t(q - rows.begin)], scores.data(), V + c.begin * d, d, c.size(), d,
                 O_part + q * d);  // (m, l, O_s) <- tile j
    }
  }
  for (index_t q = rows.begin; q < rows.end; ++q)
    L_part[q] = finalize_row(st[std::size_t(q - rows.begin)], O_part + q * d, d).L;
}

}  // namespace

template <class T>
void split_kv_forward(const DecodeShape& s, const AttnParams& p, index_t num_splits,
                      index_t threads, const T* Q, const T* K, const T* V, SplitKvResult<T>& out,
                      TileSizes tiles) {
  const Tiling t = decode_tiling(s, tiles);
  if (num_splits < 1 || num_splits > t.Tc())
    throw std::invalid_argument("splits must lie in 1 .. the number of key tiles");
  const Problem<T> prob{s, t, p.mask_for(s.n, s.m), T(p.scale_for(s.d)), num_splits};
  const index_t H = s.heads, n = s.n, m = s.m, d = s.d, Tr = t.Tr();
  out.splits = num_splits;
  out.O.resize(std::size_t(H * n * d)), out.L.resize(std::size_t(H * n));
  out.O_part.resize(std::size_t(H * num_splits * n * d)),
      out.L_part.resize(std::size_t(H * num_splits * n));
  T* O_part = out.O_part.data();
  T* L_part = out.L_part.data();
#pragma omp parallel num_threads(int(std::max <index_t>(1, threads)))
  {
    std::vector<RowState<T>> st(std::size_t(t.Br));
    std::vector<T> scores(std::size_t(t.Bc));
    // (head, query tile, split) items; each writes only its own rows of its split's partials.
#pragma omp for schedule(dynamic, 1)
    for (index_t w = 0; w < H * Tr * num_splits; ++w) {
      const index_t head = w / (Tr * num_splits), i = (w / num_splits) % Tr, sp = w % num_splits;
      const index_t part = head * num_splits + sp;
      split_item(prob, i, sp, Q + head * n * d, K + head * m * d, V + head * m * d,
                 O_part + part * n * d, L_part + part * n, st, scores);
    }
    // The merge: each row alone, its splits in order.
#pragma omp for schedule(static)
    for (index_t r = 0; r < H * n; ++r) {
      const index_t head = r / n, q = r % n;
      const index_t first = head * num_splits;
      out.L[std::size_t(r)] =
          merge_splits(O_part + (first * n + q) * d, n * d, L_part + first * n + q, n, num_splits,
                       d, out.O.data() + r * d);
    }
  }
}

template void split_kv_forward(const DecodeShape&, const AttnParams&, index_t, index_t,
                               const float*, const float*, const float*, SplitKvResult<float>&,
                               TileSizes);
template void split_kv_forward(const DecodeShape&, const AttnParams&, index_t, index_t,
                               const double*, const double*, const double*, SplitKvResult<double>&,
                               TileSizes);

}  // namespace fd
