// split_keys.hpp — the one piece of split-KV decoding (at_scale/split_kv.hpp) that the GPU decode
// kernel shares with the CPU: which keys split s of S covers.
//   S splits of the Tc key tiles; split s takes tiles [t_s, t_{s+1}), t_s = floor(s Tc / S),
//   so keys [t_s Bc, min(t_{s+1} Bc, m)); 1 <= S <= min(Tc, kMaxSplits)
#pragma once

#include "flashdemo/host_device/base.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd {

inline constexpr index_t kMaxSplits = 128;  // FlashAttention's cap on the splits

// The keys of split s of S (split-KV decoding: at_scale/split_kv.hpp): [t_s Bc, min(t_{s+1} Bc,
// m)), on the CPU and in the GPU decode kernel alike.
FD_HOST_DEVICE Range split_keys(const Tiling& t, index_t splits, index_t s) {
  const index_t Tc = t.Tc();
  return {fmin2(t.m, s * Tc / splits * t.Bc), fmin2(t.m, (s + 1) * Tc / splits * t.Bc)};
}

}  // namespace fd
