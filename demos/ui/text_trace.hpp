// text_trace.hpp — trace sinks that print events as aligned text lines.
#pragma once

#include <optional>
#include <vector>

#include "flashdemo/host_device/tiling.hpp"
#include "flashdemo/teaching/trace.hpp"

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
// The widths of the tile, rows and keys columns: wide enough for the largest of the run, so that
// no line shifts (a group of skipped tiles "(3,4..9)" included).
struct TraceColumns {
  std::size_t tile = 6, rows = 6, keys = 6, alpha = 9;
  TraceColumns(const Tiling& t, const Mask& mask, std::size_t least);
};

class ForwardTrace : public TraceSink {
 public:
  ForwardTrace(TraceLevel level, const Tiling& tiling, const Mask& mask)
      : level_(level), w_(tiling, mask, 6) {}
  void print_header() const;
  void on(const TileEvent& e) override;
  void on(const TileSkippedEvent& e) override;
  void on(const RowsFinalEvent& e) override;

 private:
  void flush_skipped();  // consecutive skipped tiles of a row print as one line

  TraceLevel level_;
  TraceColumns w_;
  std::optional<TileSkippedEvent> skipped_;
  index_t skipped_count_ = 0;
};

// Backward: a line per tile (range of recomputed P, D used, dS), each row at level rows.
class BackwardTrace : public TraceSink {
 public:
  BackwardTrace(TraceLevel level, const Tiling& tiling, const Mask& mask)
      : level_(level), w_(tiling, mask, 7) {}
  void print_header() const;
  void on(const BackwardTileEvent& e) override;
  void on(const KeysDoneEvent& e) override;

 private:
  TraceLevel level_;
  TraceColumns w_;
};

}  // namespace fd::ui
