// replay.cpp — a kernel's recorded tile states, replayed as the CPU path's trace events.
#include <cmath>

#include "cuda/host/cuda_api.hpp"

namespace fd::cuda {

void replay(const KernelTrace& t, const Mask& mask, const std::vector<double>& L, TraceSink& sink) {
  const Tiling& g = t.tiling;
  for (index_t i = 0; i < g.Tr(); ++i) {
    const Range rows = g.rows(i);
    for (index_t j = 0; j < g.Tc(); ++j) {
      const std::size_t tile = std::size_t(i * g.Tc() + j);
      if (!t.computed[tile]) {
        sink.on(TileSkippedEvent{i, j, rows, g.cols(j)});
        continue;
      }
      TileEvent e{i, j, rows, g.cols(j), g.classify(mask, i, j), {}, {}, {}, {}};
      for (index_t r = 0; r < rows.size(); ++r) {
        const std::size_t k = tile * std::size_t(g.Br) + std::size_t(r);
        e.m_old.push_back(t.m_old[k]), e.m_new.push_back(t.m_new[k]);
        e.alpha.push_back(t.alpha[k]), e.l.push_back(t.l[k]);
      }
      sink.on(e);
    }
    RowsFinalEvent fin{i, rows, {}, {}, {}};
    for (index_t q = rows.begin; q < rows.end; ++q) {
      fin.m.push_back(t.final_m[std::size_t(q)]), fin.l.push_back(t.final_l[std::size_t(q)]);
      fin.L.push_back(L[std::size_t(q)]);
    }
    sink.on(fin);
  }
}

}  // namespace fd::cuda
