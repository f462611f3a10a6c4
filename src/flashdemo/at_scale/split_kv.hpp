// split_kv.hpp — split-KV attention ("flash-decoding") on the CPU: a few query rows against a long
// KV cache, the keys cut into S splits computed independently, then merged exactly.
//
// One head, query row q, split s of S: the split holds key tiles [t_s, t_{s+1}) of Bc keys,
// t_s = floor(s Tc / S), Tc = ceil(m / Bc), so the keys K_s = [t_s Bc, min(t_{s+1} Bc, m)), and
//   L_s = logsumexp_{k in K_s} S_qk                 (-inf when the mask hides all of K_s from q)
//   O_s = sum_{k in K_s} exp(S_qk - L_s) V_k          (normalized; 0 when L_s = -inf)
// computed with the tile math (tile_math.hpp: score_row, update_row, finalize_row) over the
// split's key tiles, with global key indices for the mask (none, or causal with either
// alignment; bottom-right is decoding's: the new rows are the last ones). The merge
// (merge_splits in online_softmax.hpp), in split order:
//   L = logsumexp_s L_s = max_s L_s + log sum_s exp(L_s - max_s L_s),   O = sum_s exp(L_s - L) O_s
// A split that sees no key has weight 0; a row that sees no key at all gives O = 0, L = -inf.
//
// The plan, as FlashAttention's num_splits heuristic chooses it: U = heads * ceil(n / Br)
// independent (head, query tile) units, W workers (threads). S splits make U S work items, and the
// share of the workers the waves of items keep busy is
//   eff(S) = U S / (ceil(U S / W) W).
// S ranges over 1 .. Smax, Smax = min(floor(Tc / t), kMaxSplits), at least 1: every split keeps at
// least t key tiles (t = 1 on the CPU; on the GPU t = gpu_min_split_tiles(Bc), kGpuMinSplitKeys
// keys, where a block that streams only a few keys spends its time starting and ending: at
// m = 65536, h = 8 the H200 took 0.090 ms with 98 splits of 669 keys and 0.085 with 48 or 64,
// docs/at-scale.md);
// the plan takes the smallest S with eff(S) >= 0.85 max_S eff(S): as few splits as keep the
// workers almost as busy as the best count would (each split costs a partial output and a merge).
// A forced S (--splits) must lie in 1 .. Tc.
//
// Parallel: OpenMP over the U S (unit, split) items, each written by one thread into its own
// partial (O_s, L_s); then the merge over (head, row), each row in split order. So for a given S
// the result is bit-identical whatever the number of threads.
#pragma once

#include <cstddef>
#include <vector>

#include "flashdemo/host_device/split_keys.hpp"
#include "flashdemo/host_device/tiling.hpp"
#include "flashdemo/params.hpp"

namespace fd {

inline constexpr double kSplitEfficiency = 0.85;  // of the best efficiency, to be good enough
inline constexpr TileSizes kDecodeTiles{16, 128};
inline constexpr index_t kGpuMinSplitKeys = 1024;  // keys a split keeps at least on the GPU
// t on the GPU, whose key tiles are Bc keys (16 for the decode kernel): kGpuMinSplitKeys in tiles.
constexpr index_t gpu_min_split_tiles(index_t Bc) {
  return Bc <= 0 || Bc >= kGpuMinSplitKeys ? 1 : kGpuMinSplitKeys / Bc;
}

// b * h heads of n query rows against m keys, head dimension d.
struct DecodeShape {
  index_t heads = 1, n = 1, m = 1, d = 1;
};

struct SplitPlan {
  index_t splits = 1;              // S
  index_t units = 1;               // U: (head, query tile) pieces
  index_t workers = 1;             // W: threads
  index_t key_tiles = 1;           // Tc
  index_t min_tiles = 1;           // t: key tiles a split keeps at least (when there are that many)
  index_t max_splits = 1;          // Smax = min(floor(Tc / t), kMaxSplits), at least 1
  bool forced = false;             // S given, not chosen
  std::vector<double> efficiency;  // eff(S) for S = 1 .. Smax
  double best = 0;                 // max_S eff(S)
};

// eff(S) = U S / (ceil(U S / W) W).
double split_efficiency(index_t units, index_t splits, index_t workers);

// The heuristic above.
SplitPlan plan_splits(index_t units, index_t workers, index_t key_tiles, index_t min_tiles = 1);

// S as given; the efficiencies are filled in as for the heuristic. Needs 1 <= S <= key_tiles
// (throws std::invalid_argument otherwise).
SplitPlan forced_splits(index_t units, index_t workers, index_t key_tiles, index_t splits,
                        index_t min_tiles = 1);

// The tiling a run uses: tiles of Br x Bc, none larger than the problem.
Tiling decode_tiling(const DecodeShape& s, TileSizes tiles = kDecodeTiles);

// (head, query tile) units of that tiling.
index_t decode_units(const DecodeShape& s, TileSizes tiles = kDecodeTiles);

// split_keys(tiling, S, s), the keys of split s, and kMaxSplits: host_device/split_keys.hpp.

// The bytes of K and V the run must read: for each head, the keys some row sees (all m without a
// mask), d values of each, K and V.
double kv_bytes(const DecodeShape& s, const Mask& mask, std::size_t bytes_per_element);

// Everything one run writes, reused from run to run (sized by split_kv_forward).
template <class T>
struct SplitKvResult {
  index_t splits = 0;
  std::vector<T> O, L;            // heads x n x d, heads x n: the merged rows
  std::vector<T> O_part, L_part;  // heads x S x n x d, heads x S x n: each split's (O_s, L_s)
};

// Q: heads x n x d, K, V: heads x m x d, row-major, one head after another. S splits of the keys
// (1 <= S <= Tc), on `threads` threads, with tiles Br x Bc.
template <class T>
void split_kv_forward(const DecodeShape& s, const AttnParams& p, index_t num_splits,
                      index_t threads, const T* Q, const T* K, const T* V, SplitKvResult<T>& out,
                      TileSizes tiles = kDecodeTiles);

}  // namespace fd
