// tc.cuh — the rung `tc`: FlashAttention-2's forward on tensor cores, bf16/fp16 inputs and fp32
// accumulation, on mma.sync.m16n8k16 (ptx.cuh); its kernel, with two switches, is also the rung
// `mma`'s (mma.cuh: kM = 2, Async).
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
//                                    when no row's max moved; fragment.cuh)
//     O += P V_j                     P's C fragments are already the A fragments of this product:
//                                    rounded to bf16/fp16 in registers, never written to memory;
//                                    V's B fragments by ldmatrix.trans
//   O_i = O / l, L_i = m2 ln 2 + log l    (O staged through shared memory, 16-byte stores)
// Shared memory rows are d / 8 chunks of 16 bytes, chunk c of row r stored at c ^ (r % 8): the 8
// rows an ldmatrix reads, and the 8 chunks a copy writes, fall in 8 distinct bank groups.
//   tc   kM = 1; K_j and V_j copied with 16-byte loads through registers, then computed on.
//
// Per block, at head dim d (tc_smem_bytes, tc_registers):
//   shared memory  2 bytes x (Q: 64 kM d + K, V: 2 x stages x 64 d)
//                  tc: d = 64 24 KiB, d = 128 48 KiB (d = 256 would take 96 KiB)
//   registers      fp32 accumulators a thread holds through the key loop, a lower bound of what
//                  it needs: O kM d / 2 + S kM Bc / 2 (+ Q's A fragments kM d / 4 when kept)
//                  tc: d = 64 80, d = 128 128 (d = 256 160) of 255
#pragma once

#include <cstdint>

#include "cuda/host/head_dims.hpp"
#include "cuda/host/rungs_api.hpp"
#include "cuda/primitives/fragment.cuh"
#include "cuda/primitives/ptx.cuh"
#include "flashdemo/host_device/mask.hpp"
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
// c ^ (r & 7) changes only c's low 3 bits, so chunk c stays in its group of 8 (128 bytes); rows
// r .. r + 7 (r a multiple of 8) of one chunk land on 8 distinct 16-byte positions of the group,
// banks 4 p .. 4 p + 3 for position p: all 32 banks once, which is what one ldmatrix matrix reads.
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
  // ldmatrix.x4 (ptx.cuh): lanes 8 q .. 8 q + 7 give the 8 row addresses of matrix q, which lands
  // in register q. A (16 x 16, k columns 16 kk ..) is taken as
  //   matrix 0 (a0) rows 0-7,  chunk 2 kk     (k 0-7)   lanes 0-7
  //   matrix 1 (a1) rows 8-15, chunk 2 kk               lanes 8-15
  //   matrix 2 (a2) rows 0-7,  chunk 2 kk + 1 (k 8-15)  lanes 16-23
  //   matrix 3 (a3) rows 8-15, chunk 2 kk + 1           lanes 24-31
  // so lane l gives row l & 15 (l % 16) of chunk 2 kk + (l >> 4); lane 4 g + t then receives
  // row g, columns 2 t, 2 t + 1 of each matrix: mma.sync's a0 .. a3.
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
        // B = K_j^T (k = d columns, n = keys 16 nb ..): K's rows are B's columns, so without
        // .trans lane 4 g + t receives key g, d columns 2 t, 2 t + 1: b0's B[2t..2t+1][g].
        //   matrix 0 keys 0-7,  chunk 2 kk     (k 0-7)   lanes 0-7    b[0]: b0 of s[2 nb]
        //   matrix 1 keys 0-7,  chunk 2 kk + 1 (k 8-15)  lanes 8-15   b[1]: b1 of s[2 nb]
        //   matrix 2 keys 8-15, chunk 2 kk               lanes 16-23  b[2]: b0 of s[2 nb + 1]
        //   matrix 3 keys 8-15, chunk 2 kk + 1           lanes 24-31  b[3]: b1 of s[2 nb + 1]
        // lane l: key (l & 7) + 8 (l >> 4), chunk 2 kk + ((l >> 3) & 1).
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
        // B = V_j (k = keys 16 kt .., n = d columns 16 nb ..): V's rows are B's rows, so .trans
        // gives lane 4 g + t column g, keys 2 t, 2 t + 1: b0's B[2t..2t+1][g].
        //   matrix 0 keys 0-7,  chunk 2 nb     (n 0-7)   lanes 0-7    b[0]: b0 of o[2 nb]
        //   matrix 1 keys 8-15, chunk 2 nb               lanes 8-15   b[1]: b1 of o[2 nb]
        //   matrix 2 keys 0-7,  chunk 2 nb + 1 (n 8-15)  lanes 16-23  b[2]: b0 of o[2 nb + 1]
        //   matrix 3 keys 8-15, chunk 2 nb + 1           lanes 24-31  b[3]: b1 of o[2 nb + 1]
        // lane l: key (l & 7) + 8 ((l >> 3) & 1), chunk 2 nb + (l >> 4).
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
// tc (kM = 1, one buffer): d = 64 2 x (4,096 + 8,192) = 24,576, d = 128 49,152 bytes; mma (kM = 2,
// two): d = 64 2 x (8,192 + 16,384) = 49,152, d = 128 98,304; all under kSmemOptIn = 232,448.
constexpr std::size_t tc_smem_bytes(int d, bool async, int kM) {
  return 2 * std::size_t(64 * kM * d + (async ? 2 : 1) * 2 * kTcBc * d);
}

// The fp32 accumulators a thread holds through the key loop: O and S of its kM row fragments,
// and Q's A fragments when they stay in registers (kM d <= 128).
constexpr int tc_registers(int d, int kM) {
  return kM * d / 2 + kM * kTcBc / 2 + (kM * d <= 128 ? kM * d / 4 : 0);
}

// Whether the kernel holds head dim D: rows of whole swizzle groups (8 chunks of 16 bytes), a
// tile copy that all threads share evenly, the shared memory and the registers above.
template <bool Async, int kM>
struct TcFits {
  template <int kD>
  static constexpr bool at() {
    return kD % 64 == 0 && (64 * kM * (kD / 8)) % kTcThreads == 0 &&
           tc_smem_bytes(kD, Async, kM) <= kSmemOptIn && tc_registers(kD, kM) <= kMaxRegisters;
  }
};

// The rung tc: one row fragment per warp (Br = 64), K_j and V_j copied through registers.
inline constexpr bool kTcAsync = false;
inline constexpr int kTcM = 1;
static_assert(TcHeadDims::all<TcFits<kTcAsync, kTcM>>(),
              "a head dim of tc (head_dims.hpp) that its tiles do not hold");
static_assert(kernel_tiles(Impl::tc, 64).Br == 64 * kTcM && kernel_tiles(Impl::tc, 64).Bc == kTcBc,
              "the tiles the host says tc computes (cuda_api.hpp)");

}  // namespace fd::cuda
