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

void print_row_map(const std::vector<bool>& off, const std::string& label) {
  constexpr std::size_t kPerLine = 50, kMaxMarks = 200;
  const std::size_t n = off.size(), per = (n + kMaxMarks - 1) / kMaxMarks;
  if (n == 0) return;
  say_raw(per == 1 ? tr(Msg::row_map_title, label) : tr(Msg::row_map_title_grouped, label, per));
  const std::size_t marks = (n + per - 1) / per;
  for (std::size_t line = 0; line * kPerLine < marks; ++line) {
    std::string text = fmt::format("  {:>7}  ", line * kPerLine * per);
    for (std::size_t k = line * kPerLine; k < std::min(marks, (line + 1) * kPerLine); ++k) {
      bool any = false;
      for (std::size_t r = k * per; r < std::min(n, (k + 1) * per); ++r) any = any || off[r];
      text += any ? paint("█", Paint::changed) : "·";
    }
    say_raw(text + "\n");
  }
}

}  // namespace fd::ui
