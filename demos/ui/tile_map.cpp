// tile_map.cpp — draws the tile grid and its counts.
#include "ui/tile_map.hpp"

#include <fmt/core.h>

#include "ui/format.hpp"

namespace fd::ui {
namespace {

constexpr index_t kMaxDrawnRows = 24;
constexpr index_t kMaxDrawnCols = 32;

const char* glyph(TileKind kind) {
  switch (kind) {
    case TileKind::full:
      return "█";
    case TileKind::partial:
      return "◩";
    case TileKind::skipped:
      return "·";
  }
  return "?";
}

void draw(const Tiling& t, const Mask& mask) {
  fmt::print("  {:>22}", "key tile j:");
  for (index_t j = 0; j < t.Tc(); ++j) fmt::print("{:>3}", j);
  fmt::print("\n");
  for (index_t i = 0; i < t.Tr(); ++i) {
    fmt::print("  {:>8} {:>4} {:<8}", i == 0 ? "tile i =" : "", i, "q " + range(t.rows(i)));
    for (index_t j = 0; j < t.Tc(); ++j) fmt::print("  {}", glyph(t.classify(mask, i, j)));
    fmt::print("\n");
  }
}

}  // namespace

void print_tile_map(const Tiling& t, const Mask& mask) {
  fmt::print(
      "  Tile map: {} query tiles (Br = {}) x {} key tiles (Bc = {})     "
      "█ full  ◩ partial  · skipped\n",
      t.Tr(), t.Br, t.Tc(), t.Bc);
  if (t.Tr() <= kMaxDrawnRows && t.Tc() <= kMaxDrawnCols)
    draw(t, mask);
  else
    fmt::print("  (too many tiles to draw: at most {} x {} are drawn; larger tiles make it fit)\n",
               kMaxDrawnRows, kMaxDrawnCols);
  const TileCounts c = count_tiles(t, mask);
  fmt::print("  tiles computed: {} of {} ({} full, {} partial), skipped: {}\n", c.computed(),
             c.total, c.full, c.partial, c.skipped);
  fmt::print("  score entries computed: {} of {} ({:.1f}%), of which {} are unmasked\n",
             grouped(c.entries_computed), grouped(c.entries_total),
             100.0 * c.entries_computed / c.entries_total, grouped(c.entries_visible));
}

}  // namespace fd::ui
