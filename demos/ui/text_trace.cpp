// text_trace.cpp — prints trace events as aligned text lines.
#include "ui/text_trace.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "ui/format.hpp"

namespace fd::ui {
namespace {

const char* kind_name(TileKind kind) {
  switch (kind) {
    case TileKind::full:
      return "full";
    case TileKind::partial:
      return "partial";
    case TileKind::skipped:
      return "skipped";
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
  if (worst < 0) return "0 (first)";
  if (e.alpha[std::size_t(worst)] == 1.0) return "1";
  return fmt::format("{:.3f} q{}", e.alpha[std::size_t(worst)], e.rows.begin + worst);
}

index_t rows_with_new_max(const TileEvent& e) {
  index_t count = 0;
  for (std::size_t r = 0; r < e.m_old.size(); ++r) count += e.m_new[r] > e.m_old[r];
  return count;
}

}  // namespace

void SoftmaxTable::print_header() const {
  fmt::print("  {:<5}  {:<26}  {:>8} → {:<7}  {:<24}  {}\n", "block", "values", "m before", "after",
             "rescale exp(m_old-m_new)", "l after");
}

void SoftmaxTable::on(const SoftmaxBlockEvent& e) {
  const std::vector<double> values(x_.begin() + e.range.begin, x_.begin() + e.range.end);
  const std::string alpha =
      std::isinf(e.m_old) ? "0 (nothing summed yet)" : fmt::format("{:.4f}", e.alpha);
  fmt::print("  {:<5}  {:<26}  {:>8} → {:<7}  {:<24}  {:.4f}\n", e.block, list(values, 2, 26),
             fixed(e.m_old, 3), fixed(e.m_new, 3), alpha, e.l);
}

void ForwardTrace::print_header() const {
  if (level_ < TraceLevel::tiles) return;
  fmt::print("  {:<7} {:<7} {:<7} {:<7} {:>16} → {:<16} {:>7}  {:<11} {}\n", "tile", "rows", "keys",
             "kind", "m before", "m after", "new max", "min alpha", "l after");
}

void ForwardTrace::on(const TileEvent& e) {
  if (level_ < TraceLevel::tiles) return;
  flush_skipped();
  fmt::print("  {:<7} {:<7} {:<7} {:<7} {:>16} → {:<16} {:>7}  {:<11} {}\n",
             fmt::format("({},{})", e.i, e.j), range(e.rows), range(e.cols), kind_name(e.kind),
             span(e.m_old, 3), span(e.m_new, 3),
             fmt::format("{}/{}", rows_with_new_max(e), e.m_old.size()), strongest_rescale(e),
             span(e.l, 3));
  if (level_ < TraceLevel::rows) return;
  for (std::size_t r = 0; r < e.m_old.size(); ++r) {
    fmt::print("      q {:>4}:  m {:>8} → {:<8}  alpha = {:<8}  l = {}\n",
               e.rows.begin + index_t(r), fixed(e.m_old[r], 4), fixed(e.m_new[r], 4),
               std::isinf(e.m_old[r]) ? "0" : fixed(e.alpha[r], 4), fixed(e.l[r], 4));
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
                                ? fmt::format("({},{})", e.i, e.j)
                                : fmt::format("({},{}..{})", e.i, e.j, e.j + skipped_count_ - 1);
  fmt::print("  {:<7} {:<7} {:<7} {:<7} {} wholly in the masked future: not computed\n", tiles,
             range(e.rows), range(e.cols), "skipped",
             skipped_count_ == 1 ? "1 tile" : fmt::format("{} tiles", skipped_count_));
  skipped_.reset();
}

void ForwardTrace::on(const RowsFinalEvent& e) {
  if (level_ < TraceLevel::tiles) return;
  flush_skipped();
  fmt::print("  → query tile {} done: O_{} = O_{} / l, L = m + log(l) in {}\n", e.i, e.i, e.i,
             span(e.L, 4));
  if (level_ < TraceLevel::rows) return;
  for (std::size_t r = 0; r < e.L.size(); ++r) {
    fmt::print("      q {:>4}:  L = {} + log({}) = {}\n", e.rows.begin + index_t(r),
               fixed(e.m[r], 4), fixed(e.l[r], 4), fixed(e.L[r], 4));
  }
}

void BackwardTrace::print_header() const {
  if (level_ < TraceLevel::tiles) return;
  fmt::print("  {:<7} {:<7} {:<7} {:<7}  {:<22} {:<20} {}\n", "tile", "rows", "keys", "kind",
             "P = exp(S - L)", "D used", "dS = P (dP - D)");
}

void BackwardTrace::on(const BackwardTileEvent& e) {
  if (level_ < TraceLevel::tiles) return;
  std::vector<double> p_all(e.p_min), ds_all(e.ds_min);
  p_all.insert(p_all.end(), e.p_max.begin(), e.p_max.end());
  ds_all.insert(ds_all.end(), e.ds_max.begin(), e.ds_max.end());
  fmt::print("  {:<7} {:<7} {:<7} {:<7}  {:<22} {:<20} {}\n", fmt::format("({},{})", e.i, e.j),
             range(e.rows), range(e.cols), kind_name(e.kind), span(p_all, 4), span(e.D, 4),
             span(ds_all, 4));
  if (level_ < TraceLevel::rows) return;
  for (std::size_t r = 0; r < e.L.size(); ++r) {
    fmt::print("      q {:>4}:  L = {:<8}  D = {:<8}  P in {:<18}  dS in {}\n",
               e.rows.begin + index_t(r), fixed(e.L[r], 4), fixed(e.D[r], 4),
               span({e.p_min[r], e.p_max[r]}, 4), span({e.ds_min[r], e.ds_max[r]}, 4));
  }
}

void BackwardTrace::on(const KeysDoneEvent& e) {
  if (level_ < TraceLevel::tiles) return;
  fmt::print("  → key tile {} done: dK and dV of keys {} are final\n", e.j, range(e.cols));
}

}  // namespace fd::ui
