// trace.hpp — what the teaching paths report while they run, and the interface that receives it.
//
// Each event is the state one step changed, in the paper's symbols:
//   SoftmaxBlockEvent  one block of a vector folded into (m, l): m_old -> m_new, alpha, l
//   TileEvent          tile (i, j) of the forward: per row m_old -> m_new, alpha, l after
//   TileSkippedEvent   tile (i, j) lies wholly in the masked future: not computed
//   RowsFinalEvent     query tile i finished: per row m, l and L = m + log(l)
//   BackwardTileEvent  tile (i, j) of the backward: per row L and D used, range of the
//                      recomputed P and of dS
//   KeysDoneEvent      key tile j finished: dK_j and dV_j are final
// Values travel as double whatever the path's precision. The library never formats them; the
// sinks in demos/ui do. A path given no sink (nullptr) builds no event: tracing costs nothing.
#pragma once

#include <vector>

#include "flashdemo/host_device/base.hpp"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd {

struct SoftmaxBlockEvent {
  index_t block = 0;  // block number
  Range range;        // positions [begin, end) of the vector
  double m_old = 0, m_new = 0, alpha = 0, l = 0;
};

struct TileEvent {
  index_t i = 0, j = 0;  // query tile, key tile
  Range rows, cols;      // query rows, key columns
  TileKind kind = TileKind::full;
  std::vector<double> m_old, m_new, alpha, l;  // one entry per row of the tile, l after
};

struct TileSkippedEvent {
  index_t i = 0, j = 0;
  Range rows, cols;
};

struct RowsFinalEvent {
  index_t i = 0;
  Range rows;
  std::vector<double> m, l, L;  // per row; L = m + log(l)
};

struct BackwardTileEvent {
  index_t i = 0, j = 0;
  Range rows, cols;
  TileKind kind = TileKind::full;
  std::vector<double> L, D;                          // per row, as used
  std::vector<double> p_min, p_max, ds_min, ds_max;  // per row, over the tile's keys
};

struct KeysDoneEvent {
  index_t j = 0;
  Range cols;
};

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void on(const SoftmaxBlockEvent&) {}
  virtual void on(const TileEvent&) {}
  virtual void on(const TileSkippedEvent&) {}
  virtual void on(const RowsFinalEvent&) {}
  virtual void on(const BackwardTileEvent&) {}
  virtual void on(const KeysDoneEvent&) {}
};

}  // namespace fd
