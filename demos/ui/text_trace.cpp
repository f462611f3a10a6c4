// text_trace.cpp — prints trace events as aligned text lines (words from the catalog).
#include "ui/text_trace.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "ui/format.hpp"
#include "ui/output.hpp"

namespace fd::ui {
namespace {

std::string kind_label(TileKind kind) {
  switch (kind) {
    case TileKind::full:
      return tr(Msg::kind_full);
    case TileKind::partial:
      return tr(Msg::kind_partial);
    case TileKind::skipped:
      return tr(Msg::kind_skipped);
  }
  return "?";
}

// The strongest rescale of a tile: the smallest alpha among rows that had summed something.
std::string strongest_rescale(const TileEvent& e) {
  index_t worst = -1;
  for (std::size_t r = 0; r < e.alpha.size(); ++r) {
    if (std::isinf(e.m_old[r])) continue;
    if (worst < 0 || e.alpha[r] < e.alpha[std::size_t(worst)]) worst = index_t(r);
  }
  if (worst < 0) return tr(Msg::alpha_first);
  if (e.alpha[std::size_t(worst)] == 1.0) return "1";
  return fmt::format("{:.3f} q{}", e.alpha[std::size_t(worst)], e.rows.begin + worst);
}

index_t rows_with_new_max(const TileEvent& e) {
  index_t count = 0;
  for (std::size_t r = 0; r < e.m_old.size(); ++r) count += e.m_new[r] > e.m_old[r];
  return count;
}

// Pads to width first, then colours: escape codes must not count as columns.
std::string cell(const std::string& text, std::size_t width, bool changed, bool left = true) {
  const std::string padded =
      left ? fmt::format("{:<{}}", text, width) : fmt::format("{:>{}}", text, width);
  return changed ? paint(padded, Paint::changed) : padded;
}

std::string tile_name(index_t i, index_t j) {
  return fmt::format("({},{})", i, j);
}

}  // namespace

SoftmaxTable::SoftmaxTable(const std::vector<double>& x) : x_(x) {
  for (double v : x_) {
    before_ = std::max(before_, fixed(v, 3).size());
    after_ = std::max(after_, fixed(v, 3).size());
  }
}

void SoftmaxTable::print_header() const {
  say_raw(fmt::format("  {:<5}  {:<26}  {:>{}} → {:<{}}  {:<24}  {}\n", tr(Msg::col_block),
                      tr(Msg::col_values), tr(Msg::col_m_before), before_, tr(Msg::col_after),
                      after_, tr(Msg::col_rescale), tr(Msg::col_l_after)));
}

void SoftmaxTable::on(const SoftmaxBlockEvent& e) {
  const std::vector<double> values(x_.begin() + e.range.begin, x_.begin() + e.range.end);
  const std::string alpha =
      std::isinf(e.m_old) ? tr(Msg::nothing_summed) : fmt::format("{:.4f}", e.alpha);
  say_raw(fmt::format("  {:<5}  {:<26}  {:>{}} → {}  {:<24}  {:.4f}\n", e.block,
                      list(values, 2, 26), fixed(e.m_old, 3), before_,
                      cell(fixed(e.m_new, 3), after_, e.m_new != e.m_old), alpha, e.l));
}

namespace {

std::size_t digits(index_t v) {
  return fmt::format("{}", v).size();
}

}  // namespace

TraceColumns::TraceColumns(const Tiling& t, const Mask& mask, std::size_t least)
    : tile(least), rows(least), keys(least) {
  for (index_t i = 0; i < t.Tr(); ++i) {  // the widest label: a tile, or a run of skipped ones
    index_t first = -1;
    for (index_t j = 0; j <= t.Tc(); ++j) {
      const bool skipped = j < t.Tc() && t.classify(mask, i, j) == TileKind::skipped;
      if (skipped && first < 0) first = j;
      if (skipped) continue;
      if (first >= 0 && j - 1 > first)
        tile = std::max(tile, fmt::format("({},{}..{})", i, first, j - 1).size());
      first = -1;
    }
  }
  tile = std::max(tile, tile_name(t.Tr() - 1, t.Tc() - 1).size());
  rows = std::max(rows, 2 * digits(t.n - 1) + 1);
  keys = std::max(keys, 2 * digits(t.m - 1) + 1);
  alpha = std::max(alpha, 7 + digits(t.n - 1));  // "0.358 q96"
}

namespace {

// The tile, rows and keys cells of a trace line, each padded to its column.
std::string lead(const TraceColumns& w, const std::string& tile, Range rows, Range keys) {
  return fmt::format("{:<{}} {:<{}} {:<{}}", tile, w.tile, range(rows), w.rows, range(keys),
                     w.keys);
}

}  // namespace

void ForwardTrace::print_header() const {
  if (level_ < TraceLevel::tiles) return;
  say_raw(fmt::format("  {:<{}} {:<{}} {:<{}} {:<7} {:>15} → {:<15} {:>7}  {:<{}} {}\n",
                      tr(Msg::col_tile), w_.tile, tr(Msg::col_rows), w_.rows, tr(Msg::col_keys),
                      w_.keys, tr(Msg::col_kind), tr(Msg::col_m_before), tr(Msg::col_m_after),
                      tr(Msg::col_new_max), tr(Msg::col_min_alpha), w_.alpha,
                      tr(Msg::col_l_after)));
}

void ForwardTrace::on(const TileEvent& e) {
  if (level_ < TraceLevel::tiles) return;
  flush_skipped();
  const index_t grew = rows_with_new_max(e);
  say_raw(fmt::format("  {} {:<7} {:>15} → {} {}  {:<{}} {}\n",
                      lead(w_, tile_name(e.i, e.j), e.rows, e.cols), kind_label(e.kind),
                      span(e.m_old, 3), cell(span(e.m_new, 3), 15, grew > 0),
                      cell(fmt::format("{}/{}", grew, e.m_old.size()), 7, grew > 0, false),
                      strongest_rescale(e), w_.alpha, span(e.l, 2)));
  if (level_ < TraceLevel::rows) return;
  for (std::size_t r = 0; r < e.m_old.size(); ++r) {
    const bool grew_row = e.m_new[r] > e.m_old[r];
    say_raw(fmt::format(fmt::runtime(text(Msg::row_state)), e.rows.begin + index_t(r),
                        fixed(e.m_old[r], 4), cell(fixed(e.m_new[r], 4), 8, grew_row),
                        fixed(e.alpha[r], 4), fixed(e.l[r], 4)));
  }
}

void ForwardTrace::on(const TileSkippedEvent& e) {
  if (level_ < TraceLevel::tiles) return;
  if (skipped_ && skipped_->i == e.i && skipped_->j + skipped_count_ == e.j) {
    ++skipped_count_;
    skipped_->cols.end = e.cols.end;
    return;
  }
  flush_skipped();
  skipped_ = e;
  skipped_count_ = 1;
}

void ForwardTrace::flush_skipped() {
  if (!skipped_) return;
  const TileSkippedEvent& e = *skipped_;
  const std::string tiles = skipped_count_ == 1
                                ? tile_name(e.i, e.j)
                                : fmt::format("({},{}..{})", e.i, e.j, e.j + skipped_count_ - 1);
  const std::string count =
      skipped_count_ == 1 ? tr(Msg::one_tile) : tr(Msg::n_tiles, skipped_count_);
  say_raw(paint(fmt::format("  {} {:<7} {}", lead(w_, tiles, e.rows, e.cols),
                            kind_label(TileKind::skipped), tr(Msg::skipped_tiles, count)),
                Paint::dim) +
          "\n");
  skipped_.reset();
}

void ForwardTrace::on(const RowsFinalEvent& e) {
  if (level_ < TraceLevel::tiles) return;
  flush_skipped();
  say_raw(tr(Msg::query_tile_done, e.i, e.i, e.i, span(e.L, 4)));
  if (level_ < TraceLevel::rows) return;
  for (std::size_t r = 0; r < e.L.size(); ++r)
    say_raw(tr(Msg::row_final, e.rows.begin + index_t(r), fixed(e.m[r], 4), fixed(e.l[r], 4),
               fixed(e.L[r], 4)));
}

void BackwardTrace::print_header() const {
  if (level_ < TraceLevel::tiles) return;
  say_raw(fmt::format("  {:<{}} {:<{}} {:<{}} {:<7}  {:<22} {:<20} {}\n", tr(Msg::col_tile),
                      w_.tile, tr(Msg::col_rows), w_.rows, tr(Msg::col_keys), w_.keys,
                      tr(Msg::col_kind), tr(Msg::col_p), tr(Msg::col_d_used), tr(Msg::col_ds)));
}

void BackwardTrace::on(const BackwardTileEvent& e) {
  if (level_ < TraceLevel::tiles) return;
  std::vector<double> p_all(e.p_min), ds_all(e.ds_min);
  p_all.insert(p_all.end(), e.p_max.begin(), e.p_max.end());
  ds_all.insert(ds_all.end(), e.ds_max.begin(), e.ds_max.end());
  say_raw(fmt::format("  {} {:<7}  {:<22} {:<20} {}\n",
                      lead(w_, tile_name(e.i, e.j), e.rows, e.cols), kind_label(e.kind),
                      span(p_all, 4), span(e.D, 4), span(ds_all, 4)));
  if (level_ < TraceLevel::rows) return;
  for (std::size_t r = 0; r < e.L.size(); ++r)
    say_raw(tr(Msg::row_backward, e.rows.begin + index_t(r), fixed(e.L[r], 4), fixed(e.D[r], 4),
               span({e.p_min[r], e.p_max[r]}, 4), span({e.ds_min[r], e.ds_max[r]}, 4)));
}

void BackwardTrace::on(const KeysDoneEvent& e) {
  if (level_ < TraceLevel::tiles) return;
  say_raw(tr(Msg::key_tile_done, e.j, range(e.cols)));
}

}  // namespace fd::ui
