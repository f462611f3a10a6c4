// decode.cuh — split-KV decoding on the GPU ("flash-decoding"): a few query rows of each head
// against a long KV cache, the keys cut into S splits, one thread block per (head, query-row
// group, split), each giving its normalized part in fp32, merged exactly by the group's last block.
//
// Block (unit = (head, row group g), split s): rows q of the group (Br <= R of them), the keys
// K_s = split_keys(tiling, S, s) (host_device/split_keys.hpp), each row up to the last key the mask
// lets it see (mask.hpp). Per row, in base 2 with c = scale log2(e) (online_softmax.hpp:
// rescale_factor2, exp2_shift, finalize2):
//   S2_qk = c <Q_q, K_k>
//   m2' = max(m2, max_k S2_qk),  alpha = 2^(m2 - m2'),  l = alpha l + sum_k 2^(S2_qk - m2'),
//   O = alpha O + sum_k 2^(S2_qk - m2') V_k
// and at the end of the split
//   L_s = m2 ln 2 + log l,   O_s = O / l            (0 and -inf when the row saw no key of it)
// written to the partials (fp32: heads x S x n x d and heads x S x n). The last block of the unit
// to finish (a counter per unit, which it resets) merges the S parts, one column per thread
// (online_softmax.hpp: merge_splits):
//   L = logsumexp_s L_s,   O = sum_s exp(L_s - L) O_s           (O stored in E, L in fp32)
//
// Threads: 4 warps. A key row of d elements of E is G = d / (16 / sizeof E) 16-byte chunks:
// lane = G j + c reads chunk c of key j of every warp-wide load (32 / G keys, 512 contiguous
// bytes), U = 4 loads of K and 4 of V in flight per lane before any arithmetic. Each lane keeps
// chunk c of the group's q rows in fp32 registers; its part of each dot product is summed over
// the G lanes of the key by shuffles; each group of G lanes keeps its own online-softmax state
// per row (m2, l, the same in its G lanes) and chunk c of O. At the end the 32 / G states of a
// warp merge by shuffles, the 4 warps' through shared memory, with the same rescale factors.
//
// How a step's K and V reach the lanes (KvFeed, decode_api.hpp): each lane's own loads, issued
// when the step starts (plain) or a step earlier (ahead); or the copy engine (bulk): one thread
// sends a step's K rows and V rows, contiguous in memory (kStepKeys x d elements each: 8 KiB at
// any E and d), into one of kStages stages of shared memory by cp.async.bulk, completing on the
// stage's `full` mbarrier; the lanes read the same 16-byte chunks from there, and every thread
// arrives on the stage's `empty` mbarrier when it has read them, before the thread refills it.
// So a block keeps up to kStages - 1 steps in flight (48 KiB) without registers to hold them.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "cuda/host/decode_api.hpp"
#include "cuda/host/head_dims.hpp"
#include "cuda/primitives/element.cuh"
#include "cuda/primitives/hopper_ptx.cuh"
#include "cuda/primitives/ptx.cuh"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/split_keys.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd::cuda {

template <class E, int kD>
struct DecodeLayout {
  static constexpr int kPer = 16 / int(sizeof(E));  // elements of one 16-byte load
  static constexpr int G = kD / kPer;               // lanes per key row
  static constexpr int kKeysPerLoad = 32 / G;       // keys of one warp-wide load
  static constexpr int U = 4;                       // loads of K (and of V) in flight
  static constexpr int kWarps = 4, kThreads = 32 * kWarps;
  static constexpr int kWarpKeys = kKeysPerLoad * U;    // keys of a warp per step
  static constexpr int kStepKeys = kWarps * kWarpKeys;  // keys of the block per step
  static_assert(G >= 1 && G <= 32 && 32 % G == 0, "a key row must be 1 to 32 16-byte chunks");
};

template <class E>
struct DecodeArgs {
  const E *Q, *K, *V;      // heads x n x d, heads x m x d, heads x m x d
  E* O;                    // heads x n x d
  float* L;                // heads x n
  float *O_part, *L_part;  // heads x S x n x d, heads x S x n
  unsigned* done;          // per unit: the splits finished so far (0 between launches)
  index_t n, n_keys, splits;
  Tiling tiling;  // Br: rows per group (<= R), Bc: keys per tile (splits are whole tiles)
  Mask mask;
  float scale2;  // scale log2(e)
};

// One row group's running state in a lane: per row m2, l (its key group's) and chunk c of O.
template <int R, int kPer>
struct DecodeState {
  float m2[R], l[R], o[R][kPer];
};

// The kPer values of a 16-byte load, in fp32.
template <class E, int kPer>
__device__ inline void to_floats(const uint4& raw, float (&x)[kPer]) {
  const std::uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (std::is_same_v<E, float>) {
      x[i] = __uint_as_float(w[i]);
    } else if constexpr (std::is_same_v<E, __nv_bfloat16>) {
      x[2 * i] = __uint_as_float(w[i] << 16);  // bf16 is fp32's upper half
      x[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    } else {
      __half2 h;
      memcpy(&h, &w[i], 4);
      const float2 f = __half22float2(h);
      x[2 * i] = f.x, x[2 * i + 1] = f.y;
    }
  }
}

// Reads through L2 only (ld.global.cg), indexed like a const float*: the partials that other
// blocks wrote during this launch, which a stale line of this SM's L1 must not answer.
struct Uncached {
  const float* p;
  __device__ float operator[](index_t i) const { return __ldcg(p + i); }
  __device__ Uncached operator+(index_t i) const { return {p + i}; }
};

// One step of the block over kStepKeys keys from `base`: this warp's kWarpKeys of them, key j of
// each of its U loads. Checked: keys at or past key_end are not read, and row r's scores at or
// past row_end[r] are -inf; unchecked steps lie wholly below every row's end. In two parts: the
// step's loads (every one in flight before any arithmetic), then its update of the state.
template <class E, int kD>
struct DecodeLoads {
  uint4 k[DecodeLayout<E, kD>::U], v[DecodeLayout<E, kD>::U];  // chunk c of key j of each load
};

template <class E, int kD>
__device__ inline index_t decode_key(index_t base, int warp, int u, int j) {
  using Lay = DecodeLayout<E, kD>;
  return base + warp * Lay::kWarpKeys + u * Lay::kKeysPerLoad + j;
}

template <class E, int kD, bool kChecked>
__device__ inline DecodeLoads<E, kD> decode_loads(const E* K, const E* V, index_t base,
                                                  index_t key_end, int warp, int j, int c) {
  using Lay = DecodeLayout<E, kD>;
  constexpr int U = Lay::U, kPer = Lay::kPer;
  DecodeLoads<E, kD> x;
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const index_t key = decode_key<E, kD>(base, warp, u, j);
    x.k[u] = !kChecked || key < key_end ? ptx::load_stream_16(K + key * kD + c * kPer)
                                        : make_uint4(0, 0, 0, 0);
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const index_t key = decode_key<E, kD>(base, warp, u, j);
    x.v[u] = !kChecked || key < key_end ? ptx::load_stream_16(V + key * kD + c * kPer)
                                        : make_uint4(0, 0, 0, 0);
  }
  return x;
}

// The bulk feed's shared memory: kStages stages, each one step's K rows then its V rows (the
// keys base .. base + kStepKeys of the split), then each stage's full and empty barriers.
template <class E, int kD>
struct DecodeBulk {
  using Lay = DecodeLayout<E, kD>;
  static constexpr int kStages = 4;
  static constexpr int kRowBytes = kD * int(sizeof(E));
  static constexpr int kHalf = Lay::kStepKeys * kRowBytes;  // a step's K (or V): 8 KiB
  static constexpr int kStageBytes = 2 * kHalf;
  static constexpr int kBarriers = kStages * kStageBytes;  // offset of the 2 kStages barriers
  static constexpr int kBytes = kBarriers + 2 * kStages * int(sizeof(std::uint64_t));
};

// The step's chunks as decode_loads gives them, read from the stage that holds keys base ..
// base + kStepKeys (checked: keys at or past key_end read as 0, their rows never copied).
template <class E, int kD, bool kChecked>
__device__ inline DecodeLoads<E, kD> decode_loads_shared(const unsigned char* stage, index_t base,
                                                         index_t key_end, int warp, int j, int c) {
  using Lay = DecodeLayout<E, kD>;
  using B = DecodeBulk<E, kD>;
  DecodeLoads<E, kD> x;
#pragma unroll
  for (int u = 0; u < Lay::U; ++u) {
    const index_t key = decode_key<E, kD>(base, warp, u, j);
    const unsigned char* row = stage + int(key - base) * B::kRowBytes + c * 16;
    const bool real = !kChecked || key < key_end;
    x.k[u] = real ? *reinterpret_cast<const uint4*>(row) : make_uint4(0, 0, 0, 0);
    x.v[u] = real ? *reinterpret_cast<const uint4*>(row + B::kHalf) : make_uint4(0, 0, 0, 0);
  }
  return x;
}

// One thread sends the rows of keys base .. base + count (count <= kStepKeys) of K and of V into
// the stage, completing on its full barrier.
template <class E, int kD>
__device__ inline void decode_fill(unsigned char* stage, std::uint64_t* full, const E* K,
                                   const E* V, index_t base, index_t count) {
  using B = DecodeBulk<E, kD>;
  const unsigned bytes = unsigned(count) * unsigned(B::kRowBytes);
  hopper_ptx::mbarrier_arrive_expect_tx(full, 2 * bytes);
  hopper_ptx::bulk_load(stage, K + base * kD, bytes, full);
  hopper_ptx::bulk_load(stage + B::kHalf, V + base * kD, bytes, full);
}

template <class E, int kD, int R, bool kChecked>
__device__ inline void decode_update(const DecodeArgs<E>& a, const DecodeLoads<E, kD>& x,
                                     index_t base, const index_t (&row_end)[R],
                                     const float (&q)[R][DecodeLayout<E, kD>::kPer],
                                     DecodeState<R, DecodeLayout<E, kD>::kPer>& st, int warp,
                                     int j) {
  using Lay = DecodeLayout<E, kD>;
  constexpr int U = Lay::U, kPer = Lay::kPer;
  float s[R][U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    float k[kPer];
    to_floats<E>(x.k[u], k);
#pragma unroll
    for (int r = 0; r < R; ++r) {
      float dot = 0.0f;
#pragma unroll
      for (int i = 0; i < kPer; ++i) dot = fmaf(q[r][i], k[i], dot);  // chunk c of <Q_q, K_k>
      s[r][u] = dot;
    }
  }
#pragma unroll
  for (int r = 0; r < R; ++r)
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int off = Lay::G / 2; off > 0; off /= 2)  // the G chunks of the key's row
        s[r][u] += __shfl_xor_sync(0xffffffffu, s[r][u], off);
      s[r][u] *= a.scale2;  // S2 = c <Q_q, K_k>
      if (kChecked && decode_key<E, kD>(base, warp, u, j) >= row_end[r])
        s[r][u] = neg_inf<float>();  // masked, or past the end
    }
#pragma unroll
  for (int r = 0; r < R; ++r) {
    float m_new = st.m2[r];
#pragma unroll
    for (int u = 0; u < U; ++u) m_new = fmaxf(m_new, s[r][u]);  // m2' = max(m2, max_k S2)
    const float alpha = rescale_factor2(st.m2[r], m_new), shift = exp2_shift(m_new);
    st.l[r] *= alpha;
#pragma unroll
    for (int i = 0; i < kPer; ++i) st.o[r][i] *= alpha;  // O = alpha O
#pragma unroll
    for (int u = 0; u < U; ++u) st.l[r] += (s[r][u] = exp2f(s[r][u] - shift));  // l += p
    st.m2[r] = m_new;
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    float v[kPer];
    to_floats<E>(x.v[u], v);
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
      for (int i = 0; i < kPer; ++i) st.o[r][i] = fmaf(s[r][u], v[i], st.o[r][i]);  // O += p V_k
  }
}

template <class E, int kD, int R, bool kChecked>
__device__ inline void decode_step(const DecodeArgs<E>& a, const E* K, const E* V, index_t base,
                                   index_t key_end, const index_t (&row_end)[R],
                                   const float (&q)[R][DecodeLayout<E, kD>::kPer],
                                   DecodeState<R, DecodeLayout<E, kD>::kPer>& st, int warp, int j,
                                   int c) {
  decode_update<E, kD, R, kChecked>(a,
                                    decode_loads<E, kD, kChecked>(K, V, base, key_end, warp, j, c),
                                    base, row_end, q, st, warp, j);
}

// Merges the states of the lanes `off` apart (off = G, 2G, .. 16: the key groups of the warp).
template <int R, int kPer>
__device__ inline void merge_lanes(DecodeState<R, kPer>& st, int off) {
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const float m_o = __shfl_xor_sync(0xffffffffu, st.m2[r], off);
    const float l_o = __shfl_xor_sync(0xffffffffu, st.l[r], off);
    const float m_new = fmaxf(st.m2[r], m_o);
    const float a = rescale_factor2(st.m2[r], m_new), b = rescale_factor2(m_o, m_new);
    st.l[r] = a * st.l[r] + b * l_o;  // l = 2^(m2_a - m2') l_a + 2^(m2_b - m2') l_b
#pragma unroll
    for (int i = 0; i < kPer; ++i)
      st.o[r][i] = a * st.o[r][i] + b * __shfl_xor_sync(0xffffffffu, st.o[r][i], off);
    st.m2[r] = m_new;
  }
}

// The warps' states in shared memory: per warp and row m2, l and O's d columns.
template <int R, int kD, int kWarps>
struct DecodeShared {
  float m2[kWarps][R], l[kWarps][R], o[kWarps][R][kD];
};

// Partial (O_s, L_s) of the block's rows from the warps' states, one (row, column) per thread.
template <class E, int kD, int R>
__device__ void write_part(const DecodeArgs<E>& a, const DecodeShared<R, kD, 4>& sh, Range rows,
                           index_t part) {
  for (int item = int(threadIdx.x); item < R * kD; item += int(blockDim.x)) {
    const int r = item / kD, x = item % kD;
    if (r >= rows.size()) break;
    float M = neg_inf<float>();
    for (int w = 0; w < 4; ++w) M = fmaxf(M, sh.m2[w][r]);
    float l = 0.0f, o = 0.0f;
    for (int w = 0; w < 4; ++w) {
      const float f = rescale_factor2(sh.m2[w][r], M);
      l = fmaf(f, sh.l[w][r], l);
      o = fmaf(f, sh.o[w][r][x], o);
    }
    const index_t q = rows.begin + r;
    a.O_part[(part + q) * kD + x] = l > 0.0f ? o / l : 0.0f;  // O_s = O / l
    if (x == 0) a.L_part[part + q] = finalize2(M, l);         // L_s = m2 ln 2 + log l
  }
}

// The unit's S <= kMaxSplits parts merged, in split order, one (row, column) per thread. The
// rows' L_s are read into shared memory once, all at a time (each thread would read each of them
// up to 3 times otherwise, one after another); the O_s through L2, kMergeInFlight at a time. The
// merge runs in the unit's last block, after every other block of the unit is done, so its time
// is the kernel's tail. With two reads in flight (the SASS before this constant), S = 55 parts
// were about 28 L2 latencies, estimated at some 10 us of a 70 us launch at h = 8, m = 65536;
// 16 in flight measured 1.01x there on an H100 (docs/at-scale.md): the round trips were not the
// tail's cost. Kept: the same sums, the same bits.
inline constexpr int kMergeInFlight = 16;

template <class E, int kD, int R>
__device__ void merge_unit(const DecodeArgs<E>& a, index_t head, Range rows) {
  const index_t n = a.n, num_splits = a.splits;
  __shared__ float L_rows[R][kMaxSplits];
  const int parts = int(num_splits),
            count = parts * int(rows.size());  // (32-bit: S <= 128, <= R rows)
  for (int k = int(threadIdx.x); k < count; k += int(blockDim.x)) {
    const int r = k / parts, s = k % parts;
    L_rows[r][s] = __ldcg(a.L_part + (head * num_splits + s) * n + rows.begin + r);
  }
  __syncthreads();
  for (int item = int(threadIdx.x); item < R * kD; item += int(blockDim.x)) {
    const int r = item / kD, x = item % kD;
    if (r >= rows.size()) break;
    const index_t q = rows.begin + r;
    const Uncached O_s{a.O_part + (head * num_splits * n + q) * kD + x};
    float o;  // column x of O
    const float L =
        merge_splits<kMergeInFlight>(O_s, n * kD, L_rows[r], 1, num_splits, index_t(1), &o);
    a.O[(head * n + q) * kD + x] = to_element<E>(o);
    if (x == 0) a.L[head * n + q] = L;
  }
}

// What a feed reads of the block's split: its keys begin .. some_see of K and V (every row sees
// those below all_see; row r those below row_end[r]), the rows' q, and the lane's place (warp,
// key j of a load, chunk c of its row). Both feeds below take it and update the lane's state.
template <class E, int kD, int R>
struct DecodeSplit {
  const DecodeArgs<E>& a;
  const E *K, *V;
  index_t begin, all_see, some_see;
  const index_t (&row_end)[R];
  const float (&q)[R][DecodeLayout<E, kD>::kPer];
  int warp, j, c;
};

// The lanes' feeds over the split's keys begin .. some_see: the steps wholly below all_see
// unchecked (kAhead: software-pipelined, step k + 1's loads issued before step k's update), the
// rest checked.
template <class E, int kD, int R, bool kAhead>
__device__ inline void decode_lane_steps(const DecodeSplit<E, kD, R>& b,
                                         DecodeState<R, DecodeLayout<E, kD>::kPer>& st) {
  const auto& [a, K, V, begin, all_see, some_see, row_end, q, warp, j, c] = b;
  using Lay = DecodeLayout<E, kD>;
  index_t base = begin;
  if (kAhead && base + Lay::kStepKeys <= all_see) {
    DecodeLoads<E, kD> now = decode_loads<E, kD, false>(K, V, base, some_see, warp, j, c);
    for (; base + 2 * Lay::kStepKeys <= all_see; base += Lay::kStepKeys) {
      const DecodeLoads<E, kD> next =
          decode_loads<E, kD, false>(K, V, base + Lay::kStepKeys, some_see, warp, j, c);
      decode_update<E, kD, R, false>(a, now, base, row_end, q, st, warp, j);
      now = next;
    }
    decode_update<E, kD, R, false>(a, now, base, row_end, q, st, warp, j);
    base += Lay::kStepKeys;
  }
  for (; base + Lay::kStepKeys <= all_see; base += Lay::kStepKeys)
    decode_step<E, kD, R, false>(a, K, V, base, some_see, row_end, q, st, warp, j, c);
  for (; base < some_see; base += Lay::kStepKeys)
    decode_step<E, kD, R, true>(a, K, V, base, some_see, row_end, q, st, warp, j, c);
}

// The bulk feed's steps over the split's keys begin .. some_see: step t holds keys begin +
// t kStepKeys .. (the last one fewer), in stage t mod kStages. Thread 0 fills the first kStages
// stages, then at the top of step t refills step t - 1's stage with step t - 1 + kStages once the
// block's threads have all arrived on its empty barrier (one step late: the warps rarely wait for
// each other). Barrier phases: stage s serves steps s, s + kStages, ..., use k completing phase k,
// so the waits take parity (t / kStages) & 1; a waiter never falls two phases behind, since the
// next phase needs a refill that waits for this one. Step t is checked as the other feeds check
// it: where base + kStepKeys passes all_see.
template <class E, int kD, int R>
__device__ inline void decode_bulk_steps(const DecodeSplit<E, kD, R>& b,
                                         DecodeState<R, DecodeLayout<E, kD>::kPer>& st) {
  const auto& [a, K, V, begin, all_see, some_see, row_end, q, warp, j, c] = b;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900  // cp.async.bulk, mbarrier tx counts: sm_90
  using Lay = DecodeLayout<E, kD>;
  using B = DecodeBulk<E, kD>;
  constexpr int kStages = B::kStages;
  extern __shared__ __align__(128) unsigned char bulk_smem[];
  auto* full = reinterpret_cast<std::uint64_t*>(bulk_smem + B::kBarriers);
  std::uint64_t* empty = full + kStages;
  const index_t steps =
      some_see > begin ? (some_see - begin + Lay::kStepKeys - 1) / Lay::kStepKeys : 0;
  const auto fill = [&](index_t t) {  // (b's members: CUDA's C++17 captures no structured binding)
    const index_t base = b.begin + t * Lay::kStepKeys;
    decode_fill<E, kD>(bulk_smem + int(t % kStages) * B::kStageBytes, full + t % kStages, b.K, b.V,
                       base, fmin2(index_t(Lay::kStepKeys), b.some_see - base));
  };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s)
      hopper_ptx::mbarrier_init(full + s, 1), hopper_ptx::mbarrier_init(empty + s, Lay::kThreads);
    hopper_ptx::fence_barrier_init();
  }
  __syncthreads();
  if (threadIdx.x == 0)
    for (index_t t = 0; t < steps && t < kStages; ++t) fill(t);
  for (index_t t = 0; t < steps; ++t) {
    if (threadIdx.x == 0 && t >= 1 && t - 1 + kStages < steps) {
      hopper_ptx::mbarrier_wait(empty + (t - 1) % kStages, unsigned((t - 1) / kStages) & 1u);
      fill(t - 1 + kStages);
    }
    const int slot = int(t % kStages);
    hopper_ptx::mbarrier_wait(full + slot, unsigned(t / kStages) & 1u);
    const unsigned char* stage = bulk_smem + slot * B::kStageBytes;
    const index_t base = begin + t * Lay::kStepKeys;
    if (base + Lay::kStepKeys <= all_see)
      decode_update<E, kD, R, false>(
          a, decode_loads_shared<E, kD, false>(stage, base, some_see, warp, j, c), base, row_end, q,
          st, warp, j);
    else
      decode_update<E, kD, R, true>(
          a, decode_loads_shared<E, kD, true>(stage, base, some_see, warp, j, c), base, row_end, q,
          st, warp, j);
    // Every thread arrives, its own reads of the stage ordered before its arrival (not one lane
    // a warp after __syncwarp, which the compiler may drop in converged code: racecheck then pairs
    // the other lanes' reads with the refill, as it did here and in hopper_backward.cuh).
    hopper_ptx::mbarrier_arrive(empty + slot);
  }
#else
  __trap();  // decode() refuses the bulk feed below sm_90 (decode.cu)
#endif
}

// kFeed (KvFeed, decode_api.hpp, and the top of this file): ahead pipelines the unchecked steps in
// software, step k + 1's loads issued before step k's update; bulk streams every step through
// shared memory (decode_bulk_steps). The same arithmetic in the same order either way: the same
// bits. decode() runs kDefaultKvFeed unless told; flashdemo decode runs decode_feed's choice (ahead
// or bulk, by the splits' length); plain is kept to be timed beside them.
template <class E, int kD, int R, KvFeed kFeed = KvFeed::plain>
__global__ void __launch_bounds__(DecodeLayout<E, kD>::kThreads)
    decode_kernel(const DecodeArgs<E> a) {
  using Lay = DecodeLayout<E, kD>;
  constexpr int kPer = Lay::kPer;
  static_assert(Lay::kWarps == 4, "write_part reads 4 warps' states");
  // (32-bit quotients: the grid has fewer than 2^31 blocks)
  const unsigned splits = unsigned(a.splits), groups = unsigned(a.tiling.Tr());
  const index_t num_splits = a.splits, unit = blockIdx.x / splits, s = blockIdx.x % splits;
  const index_t head = unsigned(unit) / groups;
  const Range rows = a.tiling.rows(unsigned(unit) % groups);
  const Range keys = split_keys(a.tiling, num_splits, s);
  const int warp = int(threadIdx.x) / 32, lane = int(threadIdx.x) % 32;
  const int j = lane / Lay::G, c = lane % Lay::G;  // key j of a load, chunk c of its row

  // Row r sees the split's keys below row_end[r]; rows past the group's end see none.
  index_t row_end[R];
  float q[R][kPer];
  DecodeState<R, kPer> st;
#pragma unroll
  for (int r = 0; r < R; ++r) {
    const bool real = r < rows.size();
    row_end[r] = real ? fmin2(keys.end, a.mask.visible_keys(rows.begin + r)) : keys.begin;
    const uint4 raw =
        real ? *reinterpret_cast<const uint4*>(a.Q + (head * a.n + rows.begin + r) * kD + c * kPer)
             : make_uint4(0, 0, 0, 0);
    to_floats<E>(raw, q[r]);
    st.m2[r] = neg_inf<float>(), st.l[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < kPer; ++i) st.o[r][i] = 0.0f;
  }
  // Every row sees all keys below the first row's end (visible_keys grows with q); the last row
  // sees the most.
  const index_t all_see = row_end[0];
  const index_t some_see = fmin2(keys.end, a.mask.visible_keys(rows.end - 1));
  const E* K = a.K + head * a.n_keys * kD;
  const E* V = a.V + head * a.n_keys * kD;
  const DecodeSplit<E, kD, R> split{a, K, V, keys.begin, all_see, some_see, row_end, q, warp, j, c};
  if constexpr (kFeed == KvFeed::bulk)
    decode_bulk_steps(split, st);
  else
    decode_lane_steps<E, kD, R, kFeed == KvFeed::ahead>(split, st);

#pragma unroll
  for (int off = Lay::G; off < 32; off *= 2) merge_lanes(st, off);
  __shared__ DecodeShared<R, kD, 4> sh;
  if (j == 0) {
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int i = 0; i < kPer; ++i) sh.o[warp][r][c * kPer + i] = st.o[r][i];
      if (c == 0) sh.m2[warp][r] = st.m2[r], sh.l[warp][r] = st.l[r];
    }
  }
  __syncthreads();
  write_part<E, kD, R>(a, sh, rows, (head * num_splits + s) * a.n);

  // The last of the unit's S blocks to get here merges (threadFenceReduction's pattern).
  __shared__ bool last;
  __threadfence();  // this block's partials, visible to every block before the count says so
  __syncthreads();
  if (threadIdx.x == 0) last = atomicAdd(a.done + unit, 1u) == unsigned(num_splits - 1);
  __syncthreads();
  if (!last) return;
  __threadfence();
  merge_unit<E, kD, R>(a, head, rows);
  if (threadIdx.x == 0) a.done[unit] = 0;  // ready for the next launch
}

// Whether the kernel holds head dim D (DecodeHeadDims, head_dims.hpp), for every element type: a
// key row of G = d / (16 / sizeof E) 16-byte chunks, 1 to 32 and a divisor of a warp (fp32 at
// d = 64 G = 16, at d = 128 G = 32; bf16/fp16 8 and 16; so d = 256 needs fp32 keys split over
// two lanes' loads), and the static shared memory of a block of 4 query rows (the warps' states,
// 4 x 4 x (d + 2) floats, and the rows' L_s, 4 x kMaxSplits floats) within 48 KiB.
constexpr bool decode_row_fits(int chunks) {
  return chunks >= 1 && chunks <= 32 && 32 % chunks == 0;
}
struct DecodeFits {
  template <int kD>
  static constexpr bool at() {
    return decode_row_fits(kD / 4) && decode_row_fits(kD / 8) &&
           sizeof(DecodeShared<4, kD, 4>) + sizeof(float) * 4 * kMaxSplits <= 48 * 1024;
  }
};
static_assert(DecodeHeadDims::all<DecodeFits>(),
              "a head dim of decode (head_dims.hpp) that its kernel does not hold");

}  // namespace fd::cuda
