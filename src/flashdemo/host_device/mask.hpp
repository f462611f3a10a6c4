// mask.hpp — the one causal mask, used by the reference, the CPU tiles and the CUDA kernels.
//
// Query q (0 <= q < n) may attend to key k (0 <= k < m) unless the mask is causal and
//   k > q + offset,   offset = 0        for top-left alignment (the lecture, PyTorch is_causal)
//                     offset = m - n    for bottom-right alignment (FlashAttention-2 >= 2.1).
// The two agree when n == m. With bottom-right and n > m the first n - m rows see no key at all.
// A tile of rows [q0, q1) x keys [k0, k1) is
//   skipped  when every entry is masked:  k0 > (q1 - 1) + offset
//   full     when no entry is masked:     (k1 - 1) <= q0 + offset
//   partial  otherwise (the tiles the diagonal crosses).
#pragma once

#include "flashdemo/host_device/base.hpp"

namespace fd {

enum class CausalAlign { top_left, bottom_right };
enum class TileKind { full, partial, skipped };

struct Mask {
  bool causal = false;
  CausalAlign align = CausalAlign::top_left;
  index_t n = 0;  // queries
  index_t m = 0;  // keys

  FD_HOST_DEVICE index_t offset() const { return align == CausalAlign::bottom_right ? m - n : 0; }

  FD_HOST_DEVICE bool masked(index_t q, index_t k) const { return causal && k > q + offset(); }

  // Keys [0, visible_keys(q)) are visible to query q (0 when the row is fully masked).
  FD_HOST_DEVICE index_t visible_keys(index_t q) const {
    if (!causal) return m;
    const index_t last = q + offset();  // last visible key
    return last < 0 ? 0 : (last + 1 < m ? last + 1 : m);
  }

  FD_HOST_DEVICE TileKind classify(index_t q0, index_t q1, index_t k0, index_t k1) const {
    if (!causal) return TileKind::full;
    if (k0 > (q1 - 1) + offset()) return TileKind::skipped;
    if ((k1 - 1) <= q0 + offset()) return TileKind::full;
    return TileKind::partial;
  }
};

}  // namespace fd
