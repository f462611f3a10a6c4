// tiling.hpp — how n queries and m keys are cut into tiles of Br rows and Bc columns.
//
//   Tr = ceil(n / Br) query tiles,  Tc = ceil(m / Bc) key tiles
//   query tile i covers rows [i*Br, min((i+1)*Br, n)),  key tile j keys [j*Bc, min((j+1)*Bc, m))
// The last tile of each kind may be short; a tile may be larger than n or m.
// With a causal mask, query tile i computes key tiles j < J_i and skips the rest, where J_i is
// the first tile starting after the last key visible to its last row; of the computed tiles
// the first F_i are full (no entry masked) and the rest partial (the diagonal crosses them).
#pragma once

#include "flashdemo/host_device/base.hpp"
#include "flashdemo/host_device/mask.hpp"

namespace fd {

struct TileSizes {
  index_t Br = 16;  // query rows per tile
  index_t Bc = 16;  // key columns per tile
};

struct Range {
  index_t begin = 0;
  index_t end = 0;
  FD_HOST_DEVICE index_t size() const { return end - begin; }
};

struct Tiling {
  index_t n = 0, m = 0;    // queries, keys
  index_t Br = 1, Bc = 1;  // tile rows (queries), tile columns (keys)

  FD_HOST_DEVICE index_t Tr() const { return ceil_div(n, Br); }
  FD_HOST_DEVICE index_t Tc() const { return ceil_div(m, Bc); }
  FD_HOST_DEVICE Range rows(index_t i) const { return {i * Br, fmin2(n, (i + 1) * Br)}; }
  FD_HOST_DEVICE Range cols(index_t j) const { return {j * Bc, fmin2(m, (j + 1) * Bc)}; }
  FD_HOST_DEVICE TileKind classify(const Mask& mask, index_t i, index_t j) const {
    const Range r = rows(i), c = cols(j);
    return mask.classify(r.begin, r.end, c.begin, c.end);
  }
};

// How many tiles a causal mask lets the forward skip, and how many score entries it computes.
struct TileCounts {
  index_t total = 0, full = 0, partial = 0, skipped = 0;
  double entries_total = 0;     // n * m
  double entries_computed = 0;  // entries of S inside computed tiles (masked ones included)
  double entries_visible = 0;   // entries not masked: what attention really needs
  index_t computed() const { return full + partial; }
};

// The key tiles 0 .. J - 1 that rows [q0, q1) compute, for any rows (closed form): J = 0 when
// none of them lies before n (padding) or none sees a key, Tc without a mask.
FD_HOST_DEVICE index_t key_tiles_of_rows(const Tiling& t, const Mask& mask, index_t q0,
                                         index_t q1) {
  if (q0 >= t.n) return 0;
  if (!mask.causal) return t.Tc();
  const index_t last = fmin2(q1, t.n) - 1 + mask.offset();  // last key its last row sees
  return last < 0 ? 0 : fmin2(t.Tc(), last / t.Bc + 1);
}

// J_i: query tile i computes key tiles 0 .. J_i - 1 and skips the rest.
FD_HOST_DEVICE index_t computed_key_tiles(const Tiling& t, const Mask& mask, index_t i) {
  return key_tiles_of_rows(t, mask, i * t.Br, (i + 1) * t.Br);
}

// F_i: of those, the first F_i are full (no entry masked).
FD_HOST_DEVICE index_t full_key_tiles(const Tiling& t, const Mask& mask, index_t i) {
  if (!mask.causal) return t.Tc();
  const index_t last = t.rows(i).begin + mask.offset();  // last key its first row sees
  const index_t full = last + 1 >= t.m ? t.Tc() : fmax2<index_t>(0, (last + 1) / t.Bc);
  return fmin2(full, computed_key_tiles(t, mask, i));
}

// The first query tile that sees key tile j: tiles i0 .. Tr - 1 compute it (masking is monotone:
// a later row sees every key an earlier one does); Tr when none does (the backward's order).
FD_HOST_DEVICE index_t first_query_tile(const Tiling& t, const Mask& mask, index_t j) {
  index_t i0 = 0;
  while (i0 < t.Tr() && t.classify(mask, i0, j) == TileKind::skipped) ++i0;
  return i0;
}

// Keys inside the computed tiles of query tile i: min(m, J_i * Bc).
inline index_t computed_keys(const Tiling& t, const Mask& mask, index_t i) {
  return fmin2(t.m, computed_key_tiles(t, mask, i) * t.Bc);
}

// Closed form per query tile, O(Tr): instant even when Tr x Tc is huge.
inline TileCounts count_tiles(const Tiling& t, const Mask& mask) {
  TileCounts c;
  c.total = t.Tr() * t.Tc();
  c.entries_total = double(t.n) * double(t.m);
  for (index_t i = 0; i < t.Tr(); ++i) {
    const Range r = t.rows(i);
    const index_t computed = computed_key_tiles(t, mask, i), full = full_key_tiles(t, mask, i);
    c.full += full;
    c.partial += computed - full;
    c.skipped += t.Tc() - computed;
    c.entries_computed += double(r.size()) * double(computed_keys(t, mask, i));
    for (index_t q = r.begin; q < r.end; ++q) c.entries_visible += double(mask.visible_keys(q));
  }
  return c;
}

}  // namespace fd
