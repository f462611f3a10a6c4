// tiling.hpp — how n queries and m keys are cut into tiles of Br rows and Bc columns.
//
//   Tr = ceil(n / Br) query tiles,  Tc = ceil(m / Bc) key tiles
//   query tile i covers rows [i*Br, min((i+1)*Br, n)),  key tile j keys [j*Bc, min((j+1)*Bc, m))
// The last tile of each kind may be short; a tile may be larger than n or m.
// With a causal mask, query tile i computes key tiles j < J_i and skips the rest, where J_i is
// the first tile starting after the last key visible to its last row; of the computed tiles
// the first F_i are full (no entry masked) and the rest partial (the diagonal crosses them).
#pragma once

#include "flashdemo/host_device.hpp"
#include "flashdemo/mask.hpp"

namespace fd {

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

// Closed form per query tile, O(Tr): instant even when Tr x Tc is huge.
inline TileCounts count_tiles(const Tiling& t, const Mask& mask) {
  TileCounts c;
  c.total = t.Tr() * t.Tc();
  c.entries_total = double(t.n) * double(t.m);
  for (index_t i = 0; i < t.Tr(); ++i) {
    const Range r = t.rows(i);
    index_t computed = t.Tc(), full = t.Tc();
    if (mask.causal) {
      const index_t last_of_last = r.end - 1 + mask.offset();  // last key row r.end-1 sees
      const index_t last_of_first = r.begin + mask.offset();   // last key row r.begin sees
      computed = last_of_last < 0 ? 0 : fmin2(t.Tc(), last_of_last / t.Bc + 1);
      full = last_of_first + 1 >= t.m ? t.Tc() : fmax2<index_t>(0, (last_of_first + 1) / t.Bc);
      full = fmin2(full, computed);
    }
    c.full += full;
    c.partial += computed - full;
    c.skipped += t.Tc() - computed;
    c.entries_computed += double(r.size()) * double(fmin2(t.m, computed * t.Bc));
    for (index_t q = r.begin; q < r.end; ++q) c.entries_visible += double(mask.visible_keys(q));
  }
  return c;
}

}  // namespace fd
