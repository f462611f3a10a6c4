// mma.cuh — the tensor-core rungs `tc` and `mma`: FlashAttention-2's forward with bf16/fp16
// inputs and fp32 accumulation, on mma.sync.m16n8k16 (ptx.cuh).
//
// Block (i, head), 4 warps, Br = 64 kM query rows, key tiles of Bc = 64; warp w owns 16 kM
// rows of the tile in kM fragments of 16, and each lane the rows g and g + 8 of each (g = lane /
// 4):
//   Q_i -> shared (-> registers as A fragments once, when they fit: kM d <= 128)
//   for each key tile j not wholly masked (j < J_i):
//     S = Q_i K_j^T                  mma: B fragments of K by ldmatrix (K's rows are S's columns);
//                                    each B fragment feeds the warp's kM row fragments
//     S = -inf where masked           (only on the diagonal and ragged tiles)
//     m2_new = max(m2, rowmax(S) c)  c = scale log2(e); 4 lanes hold a row: two shuffles
//     P = exp2(S c - m2_new), l = alpha l + rowsum P, O = alpha O       (online_softmax.hpp;
//                                    one fma and ex2.approx per element, and O left alone
//                                    when no row's max moved)
//     O += P V_j                     P's C fragments are already the A fragments of this product:
//                                    rounded to bf16/fp16 in registers, never written to memory;
//                                    V's B fragments by ldmatrix.trans
//   O_i = O / l, L_i = m2 ln 2 + log l    (O staged through shared memory, 16-byte stores)
// Shared memory rows are d / 8 chunks of 16 bytes, chunk c of row r stored at c ^ (r % 8): the 8
// rows an ldmatrix reads, and the 8 chunks a copy writes, fall in 8 distinct bank groups.
//   tc   kM = 1; K_j and V_j copied with 16-byte loads through registers, then computed on.
//   mma  kM = 2 (every K and V fragment read from shared memory feeds two mma instead of one),
//        and cp.async: tile j + 1 is copied into a second buffer while tile j is computed.
#pragma once

#include <cstdint>

#include "cuda/host/rungs_api.hpp"
#include "cuda/primitives/ptx.cuh"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd::cuda {

inline constexpr int kTcThreads = 128, kTcBc = 64;  // 4 warps; keys per tile

template <class E>
struct TcArgs {
  const E *Q, *K, *V;
  E* O;
  float* L;
  index_t n, n_keys;
  Tiling tiling;  // Br = 64 kM, Bc = 64
  Mask mask;
  float scale2;  // scale * log2(e)
  RungTrace trace;
};

// Element offset of chunk c (8 elements) of row r in a swizzled tile of rows of d elements.
template <int kD>
__device__ inline int swizzled(int r, int c) {
  return r * kD + ((c ^ (r & 7)) << 3);
}

// ROWS rows of d elements from src (the tile's first row) into a swizzled tile; rows at or past
// rows_left are zeros. 32-bit offsets from one 64-bit base: a few instructions per 16 bytes.
template <int kD, int ROWS, bool Async, class E>
__device__ inline void load_tile(E* tile, const E* src, index_t rows_left) {
  constexpr int kChunks = kD / 8;
  const int left = rows_left < ROWS ? int(rows_left) : ROWS;
#pragma unroll
  for (int u = 0; u < ROWS * kChunks / kTcThreads; ++u) {
    const int k = int(threadIdx.x) + u * kTcThreads, r = k / kChunks, c = k % kChunks;
    const bool valid = r < left;
    const E* from = src + (valid ? r * kD + c * 8 : 0);
    E* to = tile + swizzled<kD>(r, c);
    if constexpr (Async) {
      ptx::cp_async_16(ptx::smem_address(to), from, valid);
    } else {
      *reinterpret_cast<uint4*>(to) =
          valid ? *reinterpret_cast<const uint4*>(from) : make_uint4(0, 0, 0, 0);
    }
  }
}

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
template <int N>
__device__ inline void mask_fragment(float (&s)[N / 8][4], const Mask& mask, index_t q, index_t k0,
                                     index_t n_keys) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int nb = 0; nb < N / 8; ++nb)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const index_t key = k0 + nb * 8 + 2 * t + (e & 1);
      if (key >= n_keys || mask.masked(q + 8 * (e >> 1), key)) s[nb][e] = neg_inf<float>();
    }
}

// One key tile's online-softmax step on the lane's rows g and g + 8 of a fragment of S
// (unscaled; 4 lanes hold a row), in base 2 (online_softmax.hpp):
//   m2_new = max(m2, rowmax(S) c),  alpha = exp2(m2 - m2_new)
//   P = exp2(S c - m2_new)  (in place of S),  l = alpha l + rowsum(P)
// max(S) c = max(S c) since c > 0, so S is scaled inside the exponent's fma. Returns whether
// either row's max moved (alpha != 1).
template <int N>
__device__ inline bool softmax_fragment(float (&s)[N / 8][4], FragmentRows& st, float scale2,
                                        float (&m_old)[2], float (&alpha)[2]) {
  bool moved = false;
  float shift[2], rowsum[2] = {0.0f, 0.0f};
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float mx = neg_inf<float>();  // of S unscaled, this lane's keys
#pragma unroll
    for (int nb = 0; nb < N / 8; ++nb) mx = fmaxf(mx, fmaxf(s[nb][2 * r], s[nb][2 * r + 1]));
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
      s[nb][e] = ptx::exp2_approx(fmaf(s[nb][e], scale2, -shift[e >> 1]));  // P
      rowsum[e >> 1] += s[nb][e];                                           // l sums it so
    }
#pragma unroll
  for (int r = 0; r < 2; ++r) st.l[r] = alpha[r] * st.l[r] + rowsum[r];
  return moved;
}

// O = alpha O on the lane's rows of a 16 x d fragment.
template <int kD>
__device__ inline void rescale_fragment(float (&o)[kD / 8][4], const float (&alpha)[2]) {
#pragma unroll
  for (int nb = 0; nb < kD / 8; ++nb)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[nb][e] *= alpha[e >> 1];
}

// The A fragment (16 x 16, rounded to E) of keys 16 kt .. 16 kt + 15 of P's C fragments.
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

template <class E, int kD, bool Async, int kM, bool kTrace>
__global__ void __launch_bounds__(kTcThreads) tc_forward_kernel(const TcArgs<E> a) {
  constexpr int Br = 64 * kM, Bc = kTcBc, kStages = Async ? 2 : 1, kRows = 16 * kM;
  constexpr bool kQInRegisters = kM * kD <= 128;
  extern __shared__ __align__(128) unsigned char smem[];
  E* sQ = reinterpret_cast<E*>(smem);  // Br x d, later the output tile
  E* sK = sQ + Br * kD;                // kStages x Bc x d
  E* sV = sK + kStages * Bc * kD;      // kStages x Bc x d
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const index_t Tr = a.tiling.Tr();
  const index_t i = a.mask.causal ? Tr - 1 - blockIdx.x : blockIdx.x;  // longest rows first
  const index_t head = blockIdx.y, q0 = i * Br;
  const E* Q = a.Q + head * a.n * kD;
  const E* K = a.K + head * a.n_keys * kD;
  const E* V = a.V + head * a.n_keys * kD;
  const index_t J = computed_key_tiles(a.tiling, a.mask, i);
  const index_t F = full_key_tiles(a.tiling, a.mask, i);
  const bool tracing = kTrace && head == 0;  // kTrace: its own kernel, none of this in the fast one

  load_tile<kD, Br, Async>(sQ, Q + q0 * kD, a.n - q0);
  if constexpr (Async) {
    ptx::cp_async_commit();
    if (J > 0) load_tile<kD, Bc, true>(sK, K, a.n_keys), load_tile<kD, Bc, true>(sV, V, a.n_keys);
    ptx::cp_async_commit();
    ptx::cp_async_wait<1>();  // Q has arrived; K_0, V_0 may still be on their way
  }
  __syncthreads();
  // The A fragment of row fragment mi, k-step kk: from registers, or from shared memory.
  auto q_address = [&](int mi, int kk) {
    return ptx::smem_address(
        sQ + swizzled<kD>(warp * kRows + mi * 16 + (lane & 15), kk * 2 + (lane >> 4)));
  };
  std::uint32_t qf[kQInRegisters ? kM : 1][kQInRegisters ? kD / 16 : 1][4];
  if constexpr (kQInRegisters)
#pragma unroll
    for (int mi = 0; mi < kM; ++mi)
#pragma unroll
      for (int kk = 0; kk < kD / 16; ++kk) ptx::ldmatrix_x4(qf[mi][kk], q_address(mi, kk));

  float o[kM][kD / 8][4] = {};  // O: columns 8 nb + 2t, +1 of rows g (0, 1) and g + 8 (2, 3)
  FragmentRows st[kM];
  for (index_t j = 0; j < J; ++j) {
    const int stage = Async ? int(j & 1) : 0;
    if constexpr (Async) {
      if (j + 1 < J) {  // the next tile into the other buffer, under this tile's compute
        const int next = int((j + 1) & 1);
        load_tile<kD, Bc, true>(sK + next * Bc * kD, K + (j + 1) * Bc * kD,
                                a.n_keys - (j + 1) * Bc);
        load_tile<kD, Bc, true>(sV + next * Bc * kD, V + (j + 1) * Bc * kD,
                                a.n_keys - (j + 1) * Bc);
        ptx::cp_async_commit();
        ptx::cp_async_wait<1>();
      } else {
        ptx::cp_async_wait<0>();
      }
    } else {
      __syncthreads();  // everyone is done with the previous K_j, V_j
      load_tile<kD, Bc, false>(sK, K + j * Bc * kD, a.n_keys - j * Bc);
      load_tile<kD, Bc, false>(sV, V + j * Bc * kD, a.n_keys - j * Bc);
    }
    __syncthreads();
    const E* Kj = sK + stage * Bc * kD;
    const E* Vj = sV + stage * Bc * kD;

    float s[kM][Bc / 8][4] = {};  // S: keys 8 nb + 2t, +1 of rows g and g + 8
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      std::uint32_t qa[kM][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) {
        if constexpr (kQInRegisters)
#pragma unroll
          for (int x = 0; x < 4; ++x) qa[mi][x] = qf[mi][kk][x];
        else
          ptx::ldmatrix_x4(qa[mi], q_address(mi, kk));
      }
#pragma unroll
      for (int nb = 0; nb < Bc / 16; ++nb) {
        std::uint32_t b[4];
        ptx::ldmatrix_x4(
            b, ptx::smem_address(Kj + swizzled<kD>(nb * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                   kk * 2 + ((lane >> 3) & 1))));
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          ptx::mma_16816<E>(s[mi][2 * nb], qa[mi], b[0], b[1]);
          ptx::mma_16816<E>(s[mi][2 * nb + 1], qa[mi], b[2], b[3]);
        }
      }
    }
    const index_t k0 = j * Bc;
    const bool edge = j >= F || k0 + Bc > a.n_keys;  // the diagonal crosses it, or keys run out
    bool moved = false;
    float m_old[kM][2], alpha[kM][2];
#pragma unroll
    for (int mi = 0; mi < kM; ++mi) {
      // the diagonal or the last keys: -inf where masked (uniform over the block)
      if (edge) mask_fragment<Bc>(s[mi], a.mask, q0 + warp * kRows + mi * 16 + g, k0, a.n_keys);
      moved |= softmax_fragment<Bc>(s[mi], st[mi], a.scale2, m_old[mi], alpha[mi]);
    }
    if (tracing) {  // here, so that m_old and alpha need not live through P V
#pragma unroll
      for (int mi = 0; mi < kM; ++mi)
        record_tile(a.trace, a.tiling, i, j, warp * kRows + mi * 16 + g, m_old[mi], st[mi],
                    alpha[mi]);
      if (threadIdx.x == 0) a.trace.computed[i * a.tiling.Tc() + j] = 1;
    }
    // O = alpha O, skipped by the whole warp when no max of its rows moved (alpha = 1): once
    // the running maxima settle, most tiles change none, and d / 2 multiplies per lane are saved.
    if (__any_sync(0xffffffffu, moved))
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) rescale_fragment<kD>(o[mi], alpha[mi]);

#pragma unroll
    for (int kt = 0; kt < Bc / 16; ++kt) {  // O += P V_j, P rounded to E as the A operand
      std::uint32_t p[kM][4];
#pragma unroll
      for (int mi = 0; mi < kM; ++mi) p_fragment<E, Bc>(p[mi], s[mi], kt);
#pragma unroll
      for (int nb = 0; nb < kD / 16; ++nb) {
        std::uint32_t b[4];
        ptx::ldmatrix_x4_trans(
            b, ptx::smem_address(Vj + swizzled<kD>(kt * 16 + (lane & 7) + (((lane >> 3) & 1) << 3),
                                                   nb * 2 + (lane >> 4))));
#pragma unroll
        for (int mi = 0; mi < kM; ++mi) {
          ptx::mma_16816<E>(o[mi][2 * nb], p[mi], b[0], b[1]);
          ptx::mma_16816<E>(o[mi][2 * nb + 1], p[mi], b[2], b[3]);
        }
      }
    }
    if constexpr (Async) __syncthreads();  // before the next copy overwrites this buffer
  }

  __syncwarp();  // the warp's reads of its rows of sQ are done before O overwrites them
#pragma unroll
  for (int mi = 0; mi < kM; ++mi) {
    float inv[2];
    finish_rows(st[mi], inv);  // O = O / l, L = m + log l
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float l = st[mi].l[r];
      const index_t q = q0 + warp * kRows + mi * 16 + g + 8 * r;
      if (t == 0 && q < a.n) {
        a.L[head * a.n + q] = finalize2(st[mi].m2[r], l);
        if (tracing) a.trace.final_m[q] = st[mi].m2[r] * 0.69314718055994531f;
        if (tracing) a.trace.final_l[q] = l;
      }
    }
#pragma unroll
    for (int nb = 0; nb < kD / 8; ++nb)  // this warp's rows of sQ take O (no other warp reads them)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int rr = warp * kRows + mi * 16 + g + 8 * r;
        *reinterpret_cast<std::uint32_t*>(sQ + swizzled<kD>(rr, nb) + 2 * t) =
            ptx::pack2<E>(o[mi][nb][2 * r] * inv[r], o[mi][nb][2 * r + 1] * inv[r]);
      }
  }
  __syncthreads();
  E* O = a.O + head * a.n * kD;
  for (int k = threadIdx.x; k < Br * (kD / 8); k += kTcThreads) {
    const int r = k / (kD / 8), c = k % (kD / 8);
    if (q0 + r < a.n)
      *reinterpret_cast<uint4*>(O + (q0 + r) * kD + c * 8) =
          *reinterpret_cast<const uint4*>(sQ + swizzled<kD>(r, c));
  }
}

// Dynamic shared memory of one block: Q (then O), and K and V in one or two buffers.
template <int kD, bool Async, int kM>
constexpr std::size_t tc_smem_bytes() {
  return 2 * std::size_t(64 * kM * kD + (Async ? 2 : 1) * 2 * kTcBc * kD);
}

}  // namespace fd::cuda
