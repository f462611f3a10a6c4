// text_trace.hpp — trace sinks that print events as aligned text lines.
#pragma once

#include <optional>
#include <vector>

#include "flashdemo/trace.hpp"

namespace fd::ui {

enum class TraceLevel { none, summary, tiles, rows };

// Online softmax of one vector: a table row per block.
class SoftmaxTable : public TraceSink {
 public:
  explicit SoftmaxTable(const std::vector<double>& x);
  void print_header() const;
  void on(const SoftmaxBlockEvent& e) override;

 private:
  std::vector<double> x_;
  std::size_t before_ = 8, after_ = 7;  // column widths: every m is some x_i, 3 decimals
};

// Tiled forward: a line per tile (level tiles), and each row's state after it (level rows).
class ForwardTrace : public TraceSink {
 public:
  explicit ForwardTrace(TraceLevel level) : level_(level) {}
  void print_header() const;
  void on(const TileEvent& e) override;
  void on(const TileSkippedEvent& e) override;
  void on(const RowsFinalEvent& e) override;

 private:
  void flush_skipped();  // consecutive skipped tiles of a row print as one line

  TraceLevel level_;
  std::optional<TileSkippedEvent> skipped_;
  index_t skipped_count_ = 0;
};

// Backward: a line per tile (range of recomputed P, D used, dS), each row at level rows.
class BackwardTrace : public TraceSink {
 public:
  explicit BackwardTrace(TraceLevel level) : level_(level) {}
  void print_header() const;
  void on(const BackwardTileEvent& e) override;
  void on(const KeysDoneEvent& e) override;

 private:
  TraceLevel level_;
};

}  // namespace fd::ui
