// fragment.cuh — the online softmax on the register fragments of a tensor-core product, shared by
// the rungs tc, mma (rungs/tc.cuh) and hopper (rungs/hopper.cuh): a wgmma accumulator holds, warp
// by warp, exactly the fragments of mma.sync.m16n8k16. A lane holds rows g and g + 8 (g = lane / 4)
// of a 16-row fragment, columns 8 nb + 2 t and + 1 (t = lane % 4): 4 lanes hold a row. In base 2,
// with c = scale log2(e) (online_softmax.hpp):
//   mask_fragment     S = -inf where masked or past the last key
//   softmax_fragment  m2_new = max(m2, rowmax(S) c),  alpha = exp2(m2 - m2_new),
//                     P = exp2(S c - m2_new),  l = alpha l + rowsum(P)  (with kExpFma = k, the
//                     keys of every k-th 8-key block by exp2_fma on the FMA pipe, the rest by ex2)
//   rescale_fragment  O = alpha O
//   p_fragment        P's C fragments as the A fragment of O += P V, rounded to E
//   finish_rows       l summed over the row's 4 lanes, and 1 / l
//   record_tile       the trace of a tile's rows (m in natural units)
#pragma once

#include <cstdint>

#include "cuda/host/rungs_api.hpp"
#include "cuda/primitives/ptx.cuh"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd::cuda {

// The online-softmax state of the lane's rows g and g + 8 of one 16-row fragment.
struct FragmentRows {
  float m2[2] = {neg_inf<float>(), neg_inf<float>()};  // running max, base 2
  float l[2] = {0.0f, 0.0f};                           // this lane's part of the running sum
};

// The lane's rows after tile j, for the trace: l summed over the row's 4 lanes.
__device__ inline void record_tile(const RungTrace& trace, const Tiling& tiling, index_t i,
                                   index_t j, int row, const float (&m_old)[2],
                                   const FragmentRows& st, const float (&alpha)[2]) {
  constexpr float kLn2 = 0.69314718055994531f;
  for (int r = 0; r < 2; ++r) {
    float sum = st.l[r] + __shfl_xor_sync(0xffffffffu, st.l[r], 1);
    sum += __shfl_xor_sync(0xffffffffu, sum, 2);
    if (threadIdx.x % 4 != 0) continue;
    const index_t slot = (i * tiling.Tc() + j) * tiling.Br + row + 8 * r;
    trace.m_old[slot] = m_old[r] * kLn2, trace.m_new[slot] = st.m2[r] * kLn2;
    trace.alpha[slot] = alpha[r], trace.l[slot] = sum;
  }
}

// S = -inf where masked or past the last key, in the lane's part of a 16-row fragment of a tile
// of N keys starting at k0 (q: the query of the lane's row g; row g + 8 is q + 8).
// Row q sees keys [0, min(n_keys, visible_keys(q))) (mask.hpp; every caller's n_keys is the
// mask's m, so that the min is the old test's `key >= n_keys || masked(q, key)`), so entry
// (nb, e), key k0 + 8 nb + 2 t + (e & 1), is kept where 8 nb + (e & 1) < lim = that bound - k0,
// clamped into [0, N], - 2 t: one 32-bit compare with a constant and a select an entry, the row's
// bound worked out once. (The mask's own test entry by entry, on 64-bit keys, was integer work in
// every masked tile: this form alone measured 1.02x to 1.06x at (16, 32, 1024, 64) and (4, 32,
// 4096, 64) causal on an H100, level at n = 16384; docs/gpu-ladder.md, session 37.)
template <int N>
__device__ inline void mask_fragment(float (&s)[N / 8][4], const Mask& mask, index_t q, index_t k0,
                                     index_t n_keys) {
  const int t = threadIdx.x % 4;
  int lim[2];  // rows g and g + 8
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const index_t seen = fmin2(n_keys, mask.visible_keys(q + 8 * r)) - k0;  // keys from k0 on
    lim[r] = int(fmin2<index_t>(N, fmax2<index_t>(0, seen))) - 2 * t;
  }
  // e indexes c0 .. c3 of fragment nb: bit 0 the column 2 t (+ 1), bit 1 the row g (+ 8).
#pragma unroll
  for (int nb = 0; nb < N / 8; ++nb)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (nb * 8 + (e & 1) >= lim[e >> 1]) s[nb][e] = neg_inf<float>();
}

// Whether the 8-key block nb of a fragment takes its exps by exp2_fma: every kExpFma-th (none
// for kExpFma = 0).
template <int kExpFma>
__device__ constexpr bool on_fma_pipe(int nb) {
  if constexpr (kExpFma > 0)
    return nb % kExpFma == kExpFma - 1;
  else
    return false;
}

// One key tile's online-softmax step on the lane's rows g and g + 8 of a fragment of S
// (unscaled; 4 lanes hold a row), in base 2 (online_softmax.hpp):
//   m2_new = max(m2, rowmax(S) c),  alpha = exp2(m2 - m2_new)
//   P = exp2(S c - m2_new)  (in place of S),  l = alpha l + rowsum(P)
// max(S) c = max(S c) since c > 0, so S is scaled inside the exponent's fma. Returns whether
// either row's max moved (alpha != 1). kExpFma = k > 0: the 8-key blocks nb = k - 1, 2 k - 1, ...
// (1 in k of the exps) by exp2_fma (online_softmax.hpp), off the special-function unit.
template <int N, int kExpFma = 0>
__device__ inline bool softmax_fragment(float (&s)[N / 8][4], FragmentRows& st, float scale2,
                                        float (&m_old)[2], float (&alpha)[2]) {
  bool moved = false;
  float shift[2], rowsum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = neg_inf<float>();  // of S unscaled, this lane's keys
#pragma unroll
    for (int nb = 0; nb < N / 8; ++nb) mx = fmaxf(mx, fmaxf(s[nb][2 * r], s[nb][2 * r + 1]));
    // A row's 4 lanes are 4 g .. 4 g + 3, differing in lane bits 0 and 1: xor 1, then xor 2.
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    mx = fmaxf(st.m2[r], mx * scale2);
    m_old[r] = st.m2[r];
    alpha[r] = rescale_factor2(st.m2[r], mx);
    moved |= alpha[r] != 1.0f;
    shift[r] = exp2_shift(mx);
    st.m2[r] = mx;
  }
#pragma unroll
  for (int nb = 0; nb < N / 8; ++nb)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float x = fmaf(s[nb][e], scale2, -shift[e >> 1]);
      s[nb][e] = on_fma_pipe<kExpFma>(nb) ? exp2_fma(x) : ptx::exp2_approx(x);
      rowsum[e >> 1] += s[nb][e];  // l sums P so
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) st.l[r] = alpha[r] * st.l[r] + rowsum[r];
  return moved;
}

// O = alpha O on the lane's rows of a 16 x D fragment.
template <int kD>
__device__ inline void rescale_fragment(float (&o)[kD / 8][4], const float (&alpha)[2]) {
#pragma unroll
  for (int nb = 0; nb < kD / 8; ++nb)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[nb][e] *= alpha[e >> 1];
}

// The A fragment (16 x 16, rounded to E) of keys 16 kt .. 16 kt + 15 of P's C fragments.
// A's a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..] (ptx.cuh)
// are keys 16 kt + 2 t (+ 8) of rows g, g + 8, which C fragment nb = 2 kt (keys 16 kt + 0..7)
// holds in c0, c1 (row g) and c2, c3 (row g + 8), and nb = 2 kt + 1 (keys + 8) likewise.
template <class E, int N>
__device__ inline void p_fragment(std::uint32_t (&p)[4], const float (&s)[N / 8][4], int kt) {
  p[0] = ptx::pack2<E>(s[2 * kt][0], s[2 * kt][1]);
  p[1] = ptx::pack2<E>(s[2 * kt][2], s[2 * kt][3]);
  p[2] = ptx::pack2<E>(s[2 * kt + 1][0], s[2 * kt + 1][1]);
  p[3] = ptx::pack2<E>(s[2 * kt + 1][2], s[2 * kt + 1][3]);
}

// After the last tile: l summed over the row's 4 lanes, and 1 / l (0 for a row that saw no key).
__device__ inline void finish_rows(FragmentRows& st, float (&inv)[2]) {
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float& l = st.l[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    inv[r] = l > 0.0f ? 1.0f / l : 0.0f;
  }
}

}  // namespace fd::cuda
