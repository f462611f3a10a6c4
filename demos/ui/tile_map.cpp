// tile_map.cpp — draws the tile grid and its counts.
#include "ui/tile_map.hpp"

#include <fmt/core.h>

#include "ui/format.hpp"
#include "ui/output.hpp"

namespace fd::ui {
namespace {

constexpr index_t kMaxDrawnRows = 24;
constexpr index_t kMaxDrawnCols = 32;

std::string glyph(TileKind kind, bool current) {
  const char* g = kind == TileKind::full ? "█" : kind == TileKind::partial ? "◩" : "·";
  if (current) return paint(g, Paint::current);
  return kind == TileKind::skipped ? paint(g, Paint::dim) : g;
}

void draw(const Tiling& t, const Mask& mask, index_t ci, index_t cj) {
  std::string out = fmt::format("  {:>22}", tr(Msg::map_key_tile));
  for (index_t j = 0; j < t.Tc(); ++j) out += fmt::format("{:>3}", j);
  out += "\n";
  for (index_t i = 0; i < t.Tr(); ++i) {
    out += fmt::format("  {:>8} {:>4} {:<8}", i == 0 ? tr(Msg::map_tile_i) : "", i,
                       "q " + range(t.rows(i)));
    for (index_t j = 0; j < t.Tc(); ++j)
      out += "  " + glyph(t.classify(mask, i, j), i == ci && j == cj);
    out += "\n";
  }
  say_raw(out);
}

}  // namespace

void print_tile_map(const Tiling& t, const Mask& mask, index_t current_i, index_t current_j) {
  say(Msg::map_title, t.Tr(), t.Br, t.Tc(), t.Bc);
  if (t.Tr() <= kMaxDrawnRows && t.Tc() <= kMaxDrawnCols)
    draw(t, mask, current_i, current_j);
  else
    say(Msg::map_too_large, kMaxDrawnRows, kMaxDrawnCols);
  const TileCounts c = count_tiles(t, mask);
  say(Msg::map_tiles, c.computed(), c.total, c.full, c.partial, c.skipped);
  say(Msg::map_entries, grouped(c.entries_computed), grouped(c.entries_total),
      100.0 * c.entries_computed / c.entries_total, grouped(c.entries_visible));
}

}  // namespace fd::ui
