// mma_backward.cuh — the rung `mma`'s backward: FlashAttention-2's backward with bf16/fp16
// inputs and fp32 accumulation on mma.sync.m16n8k16 (ptx.cuh), in three kernels:
//
//   D = rowsum(dO * O)                       mma_bwd_dot_kernel: a warp per row, fp32 sums
//   per key tile j (64 keys, 4 warps of 16 keys), K_j and V_j in shared memory, dK_j and dV_j
//   in registers, for every query tile i that sees j (64 rows, copied ahead by cp.async):
//     S^T  = K_j Q_i^T                       (keys x queries: the warp's keys are the A rows)
//     P^T  = exp2(S^T c - L2_q)              c = scale log2(e), L2 = L log2(e); 0 where masked
//     dV_j += P^T dO_i                       P^T rounded to E in registers: the A operand
//     dP^T = V_j dO_i^T
//     dS^T = P^T (dP^T - D_q)
//     dK_j += dS^T Q_i                       then dK = scale dK at the end
//   and dQ in one of two ways:
//     atomic (the default): in the same loop, dS^T to shared memory (keys x queries), then each
//       warp's 16 query rows of dS K_j, scaled, added into dQ (zeroed first) by fp32 atomics;
//     deterministic: per query tile i (64 rows, 4 warps of 16), for every key tile j < J_i:
//       S = Q_i K_j^T,  P = exp2(S c - L2),  dP = dO_i V_j^T,  dS = P (dP - D)
//       dQ_i += dS K_j                       then dQ = scale dQ
//
// The atomic dQ adds one product per tile pair; the order in which blocks add is the hardware's,
// so dQ can differ in its last bits from run to run. The deterministic pass forms S and dP a
// second time (two more products per pair) but every run is bit-identical. The C fragment of a
// product is, pair by pair, the A fragment of the next (as in tc.cuh's P V). A row with L = -inf
// (it saw no key) or past n has L2 = +inf here, so its P is exp2(-inf) = 0: zero gradients, no NaN.
#pragma once

#include <cstdint>

#include "cuda/host/head_dims.hpp"
#include "cuda/primitives/ptx.cuh"
#include "cuda/rungs/mma.cuh"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/tile_math.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd::cuda {

inline constexpr int kBwdTile = 64;  // Br = Bc in both backward kernels

template <class E>
struct BwdArgs {
  const E *Q, *K, *V, *dO;
  const float *L, *D;  // L: the forward's logsumexp (natural log); D = rowsum(dO * O)
  float *dQ, *dK, *dV;
  index_t n, n_keys;
  Tiling tiling;  // 64 x 64
  Mask mask;
  float scale, scale2;  // scale, and scale * log2(e)
};

// D_q = sum_x dO[q][x] O[q][x] in fp32: one warp per row, 4 rows per block of 128 threads.
template <class E, int kD>
__global__ void __launch_bounds__(kTcThreads)
    mma_bwd_dot_kernel(const E* O, const E* dO, float* Dsum, index_t rows) {
  const index_t row = index_t(blockIdx.x) * 4 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  float sum = 0.0f;
  for (int x = lane; x < kD; x += 32) sum += float(O[row * kD + x]) * float(dO[row * kD + x]);
  for (int k = 16; k > 0; k /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, k);
  if (lane == 0) Dsum[row] = sum;
}

// C (16 x N) += A[a_row0 .. +16)[0 .. d) * B[0 .. N)[0 .. d)^T, both operands rows of a swizzled
// tile in shared memory (A's rows are C's rows; B's rows are C's columns).
template <int kD, int N, class E>
__device__ inline void mma_abt(float (&c)[N / 8][4], const E* A, int a_row0, const E* B, int lane) {
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    std::uint32_t a[4];
    ptx::ldmatrix_x4(
        a, ptx::smem_address(A + swizzled<kD>(a_row0 + (lane & 15), kk * 2 + (lane >> 4))));
#pragma unroll
    for (int nb = 0; nb < N / 16; ++nb) {
      std::uint32_t b[4];
      ptx::ldmatrix_x4(b,
                       ptx::smem_address(B + swizzled<kD>(nb * 16 + (lane & 7) + ((lane >> 4) << 3),
                                                          kk * 2 + ((lane >> 3) & 1))));
      ptx::mma_16816<E>(c[2 * nb], a, b[0], b[1]);
      ptx::mma_16816<E>(c[2 * nb + 1], a, b[2], b[3]);
    }
  }
}

// A fragments (16 x K, K / 16 steps) from a C fragment (16 x K), rounded to E.
template <class E, int K>
__device__ inline void to_a_fragments(const float (&c)[K / 8][4], std::uint32_t (&a)[K / 16][4]) {
#pragma unroll
  for (int kt = 0; kt < K / 16; ++kt) {
    a[kt][0] = ptx::pack2<E>(c[2 * kt][0], c[2 * kt][1]);
    a[kt][1] = ptx::pack2<E>(c[2 * kt][2], c[2 * kt][3]);
    a[kt][2] = ptx::pack2<E>(c[2 * kt + 1][0], c[2 * kt + 1][1]);
    a[kt][3] = ptx::pack2<E>(c[2 * kt + 1][2], c[2 * kt + 1][3]);
  }
}

// C (16 x W) += A (16 x K, fragments) * B[0 .. K)[c0 .. c0 + W), B's rows (d elements) in a
// swizzled tile, read transposed by ldmatrix.trans: B's rows are the k index.
template <int kD, int K, int W = kD, class E>
__device__ inline void mma_ab(float (&c)[W / 8][4], const std::uint32_t (&a)[K / 16][4], const E* B,
                              int lane, int c0 = 0) {
#pragma unroll
  for (int kt = 0; kt < K / 16; ++kt)
#pragma unroll
    for (int nb = 0; nb < W / 16; ++nb) {
      std::uint32_t b[4];
      ptx::ldmatrix_x4_trans(
          b, ptx::smem_address(B + swizzled<kD>(kt * 16 + (lane & 7) + (((lane >> 3) & 1) << 3),
                                                c0 / 8 + nb * 2 + (lane >> 4))));
      ptx::mma_16816<E>(c[2 * nb], a[kt], b[0], b[1]);
      ptx::mma_16816<E>(c[2 * nb + 1], a[kt], b[2], b[3]);
    }
}

// L in base 2 for the exponent: +inf for a row that saw no key or does not exist (P = 0).
__device__ inline float exponent_base(const float* L, index_t q, index_t n) {
  constexpr float kLog2e = 1.4426950408889634f;
  const float l = q < n ? L[q] : neg_inf<float>();
  return is_neg_inf(l) ? __int_as_float(0x7f800000) : l * kLog2e;
}

// The lane's part of a 16 x d fp32 fragment, times scale, into rows row0 + g (+ 8) of X (rows
// at or past rows are not written).
template <int kD>
__device__ inline void store_rows(float* X, const float (&c)[kD / 8][4], index_t row0, index_t rows,
                                  float scale, int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const index_t row = row0 + g + 8 * r;
    if (row >= rows) continue;
#pragma unroll
    for (int nb = 0; nb < kD / 8; ++nb)
      *reinterpret_cast<float2*>(X + row * kD + nb * 8 + 2 * t) =
          make_float2(c[nb][2 * r] * scale, c[nb][2 * r + 1] * scale);
  }
}

// The warp's dS^T fragments (keys kr + g (+ 8), queries 16 kt + 2t (+ 1) (+ 8)), as to_a_fragments
// packed them, into the B x B tile sdS^T of shared memory: rows are keys, columns queries.
template <int B>
__device__ inline void store_ds_transposed(std::uint32_t* sdst,
                                           const std::uint32_t (&af)[B / 16][4], int kr, int lane) {
  const int g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kt = 0; kt < B / 16; ++kt)
#pragma unroll
    for (int x = 0; x < 4; ++x)  // x: row g or g + 8 (bit 0), query chunk 2 kt or 2 kt + 1 (bit 1)
      sdst[(swizzled<B>(kr + g + 8 * (x & 1), 2 * kt + (x >> 1)) + 2 * t) / 2] = af[kt][x];
}

// dQ[q0 + qr ..][..] += scale dS K_j for the warp's 16 query rows qr: dS's A fragments read
// transposed out of sdS^T, K_j's rows the k index; added by fp32 atomics in column chunks of 32
// (few registers live beside dK_j and dV_j).
template <class E, int kD>
__device__ inline void add_dq_atomic(float* dQ, const E* sdst, const E* sK, index_t q0, int qr,
                                     index_t n, float scale, int lane) {
  constexpr int B = kBwdTile, W = 32;
  const int g = lane / 4, t = lane % 4, mi = lane >> 3;
  std::uint32_t af[B / 16][4];
#pragma unroll
  for (int kt = 0; kt < B / 16; ++kt)
    ptx::ldmatrix_x4_trans(
        af[kt], ptx::smem_address(sdst + swizzled<B>(kt * 16 + (lane & 7) + ((mi >> 1) << 3),
                                                     qr / 8 + (mi & 1))));
#pragma unroll
  for (int c0 = 0; c0 < kD; c0 += W) {
    float c[W / 8][4] = {};
    mma_ab<kD, B, W>(c, af, sK, lane, c0);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const index_t q = q0 + qr + g + 8 * r;
      if (q >= n) continue;
#pragma unroll
      for (int nb = 0; nb < W / 8; ++nb) {
        float* to = dQ + q * kD + c0 + nb * 8 + 2 * t;
#if __CUDA_ARCH__ >= 900
        atomicAdd(reinterpret_cast<float2*>(to),
                  make_float2(c[nb][2 * r] * scale, c[nb][2 * r + 1] * scale));
#else
        atomicAdd(to, c[nb][2 * r] * scale), atomicAdd(to + 1, c[nb][2 * r + 1] * scale);
#endif
      }
    }
  }
}

template <class E, int kD, bool kAtomicDq>
__global__ void __launch_bounds__(kTcThreads) mma_dkdv_kernel(const BwdArgs<E> a) {
  constexpr int B = kBwdTile;
  extern __shared__ __align__(128) unsigned char smem[];
  E* sK = reinterpret_cast<E*>(smem);                       // B x d
  E* sV = sK + B * kD;                                      // B x d
  E* sQ = sV + B * kD;                                      // 2 stages of B x d
  E* sdO = sQ + 2 * B * kD;                                 // 2 stages of B x d
  float* sL2 = reinterpret_cast<float*>(sdO + 2 * B * kD);  // 2 stages of B
  float* sD = sL2 + 2 * B;                                  // 2 stages of B
  E* sdst = reinterpret_cast<E*>(sD + 2 * B);               // B x B: dS^T, for the atomic dQ
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const index_t j = blockIdx.x, head = blockIdx.y, k0 = j * B, Tr = a.tiling.Tr();
  const E* Q = a.Q + head * a.n * kD;
  const E* dO = a.dO + head * a.n * kD;
  const float* L = a.L + head * a.n;
  const float* Dsum = a.D + head * a.n;
  const index_t i0 = first_query_tile(a.tiling, a.mask, j);  // tiles i0 .. Tr - 1 see key tile j

  auto stage_rows = [&](int stage, index_t i) {  // Q_i, dO_i by cp.async; L2 and D by plain loads
    const index_t q0 = i * B;
    load_tile<kD, B, true>(sQ + stage * B * kD, Q + q0 * kD, a.n - q0);
    load_tile<kD, B, true>(sdO + stage * B * kD, dO + q0 * kD, a.n - q0);
    for (int r = threadIdx.x; r < B; r += kTcThreads) {
      sL2[stage * B + r] = exponent_base(L, q0 + r, a.n);
      sD[stage * B + r] = q0 + r < a.n ? Dsum[q0 + r] : 0.0f;
    }
  };
  load_tile<kD, B, true>(sK, a.K + (head * a.n_keys + k0) * kD, a.n_keys - k0);
  load_tile<kD, B, true>(sV, a.V + (head * a.n_keys + k0) * kD, a.n_keys - k0);
  if (i0 < Tr) stage_rows(0, i0);
  ptx::cp_async_commit();

  const int kr = warp * 16;  // this warp's keys in the tile
  float dk[kD / 8][4] = {}, dv[kD / 8][4] = {};
  for (index_t i = i0; i < Tr; ++i) {
    const int stage = int((i - i0) & 1);
    if (i + 1 < Tr) {  // the next query tile into the other stage, under this one's compute
      stage_rows(stage ^ 1, i + 1);
      ptx::cp_async_commit();
      ptx::cp_async_wait<1>();
    } else {
      ptx::cp_async_wait<0>();
    }
    __syncthreads();
    const E* Qi = sQ + stage * B * kD;
    const E* dOi = sdO + stage * B * kD;
    const float* l2 = sL2 + stage * B;
    const float* Di = sD + stage * B;
    const index_t q0 = i * B;
    const bool partial = a.tiling.classify(a.mask, i, j) == TileKind::partial;
    const bool ragged = k0 + B > a.n_keys;  // the last key tile: its rows past m are zeros

    float st[B / 8][4] = {};  // S^T, then P^T: keys kr + g (+ 8), queries 8 nb + 2t (+ 1)
    mma_abt<kD, B>(st, sK, kr, Qi, lane);
#pragma unroll
    for (int nb = 0; nb < B / 8; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int col = nb * 8 + 2 * t + (e & 1);
        float p = ptx::exp2_approx(fmaf(st[nb][e], a.scale2, -l2[col]));
        const index_t key = k0 + kr + g + 8 * (e >> 1);
        // P = 0 where masked and past the last key: there S = 0 and exp(-L) can overflow E in
        // dS, which the atomic dQ would multiply by K's zero rows (inf 0 = NaN)
        if ((partial && a.mask.masked(q0 + col, key)) || (ragged && key >= a.n_keys)) p = 0.0f;
        st[nb][e] = p;
      }
    std::uint32_t af[B / 16][4];
    to_a_fragments<E, B>(st, af);
    mma_ab<kD, B>(dv, af, dOi, lane);  // dV += P^T dO

    float ds[B / 8][4] = {};  // dP^T, then dS^T
    mma_abt<kD, B>(ds, sV, kr, dOi, lane);
#pragma unroll
    for (int nb = 0; nb < B / 8; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        ds[nb][e] = softmax_grad(st[nb][e], ds[nb][e], Di[nb * 8 + 2 * t + (e & 1)]);
    to_a_fragments<E, B>(ds, af);
    if constexpr (kAtomicDq)
      store_ds_transposed<B>(reinterpret_cast<std::uint32_t*>(sdst), af, kr, lane);
    mma_ab<kD, B>(dk, af, Qi, lane);  // dK += dS^T Q
    if constexpr (kAtomicDq) {
      __syncthreads();  // every warp's keys of dS^T in place
      add_dq_atomic<E, kD>(a.dQ + head * a.n * kD, sdst, sK, q0, kr, a.n, a.scale, lane);
    }
    __syncthreads();  // before the next copy overwrites this stage (and dS^T)
  }
  ptx::cp_async_wait<0>();
  store_rows<kD>(a.dK + head * a.n_keys * kD, dk, k0 + kr, a.n_keys, a.scale, lane);
  store_rows<kD>(a.dV + head * a.n_keys * kD, dv, k0 + kr, a.n_keys, 1.0f, lane);
}

template <class E, int kD>
__global__ void __launch_bounds__(kTcThreads) mma_dq_kernel(const BwdArgs<E> a) {
  constexpr int B = kBwdTile;
  extern __shared__ __align__(128) unsigned char smem[];
  E* sQ = reinterpret_cast<E*>(smem);  // B x d
  E* sdO = sQ + B * kD;                // B x d
  E* sK = sdO + B * kD;                // 2 stages of B x d
  E* sV = sK + 2 * B * kD;             // 2 stages of B x d
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const index_t Tr = a.tiling.Tr();
  const index_t i = a.mask.causal ? Tr - 1 - blockIdx.x : blockIdx.x;  // longest rows first
  const index_t head = blockIdx.y, q0 = i * B;
  const E* K = a.K + head * a.n_keys * kD;
  const E* V = a.V + head * a.n_keys * kD;
  const index_t J = computed_key_tiles(a.tiling, a.mask, i);
  const index_t F = full_key_tiles(a.tiling, a.mask, i);
  const int qr = warp * 16;  // this warp's rows in the tile

  load_tile<kD, B, true>(sQ, a.Q + (head * a.n + q0) * kD, a.n - q0);
  load_tile<kD, B, true>(sdO, a.dO + (head * a.n + q0) * kD, a.n - q0);
  ptx::cp_async_commit();
  if (J > 0) load_tile<kD, B, true>(sK, K, a.n_keys), load_tile<kD, B, true>(sV, V, a.n_keys);
  ptx::cp_async_commit();
  float l2[2], Dq[2];
  for (int r = 0; r < 2; ++r) {
    const index_t q = q0 + qr + g + 8 * r;
    l2[r] = exponent_base(a.L + head * a.n, q, a.n);
    Dq[r] = q < a.n ? a.D[head * a.n + q] : 0.0f;
  }

  float dq[kD / 8][4] = {};
  for (index_t j = 0; j < J; ++j) {
    const int stage = int(j & 1);
    if (j + 1 < J) {
      const int next = stage ^ 1;
      load_tile<kD, B, true>(sK + next * B * kD, K + (j + 1) * B * kD, a.n_keys - (j + 1) * B);
      load_tile<kD, B, true>(sV + next * B * kD, V + (j + 1) * B * kD, a.n_keys - (j + 1) * B);
      ptx::cp_async_commit();
      ptx::cp_async_wait<1>();
    } else {
      ptx::cp_async_wait<0>();
    }
    __syncthreads();
    const E* Kj = sK + stage * B * kD;
    const E* Vj = sV + stage * B * kD;
    const index_t k0 = j * B;
    const bool edge = j >= F || k0 + B > a.n_keys;

    float p[B / 8][4] = {};  // S, then P: rows qr + g (+ 8), keys 8 nb + 2t (+ 1)
    mma_abt<kD, B>(p, sQ, qr, Kj, lane);
#pragma unroll
    for (int nb = 0; nb < B / 8; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const index_t key = k0 + nb * 8 + 2 * t + (e & 1);
        float x = ptx::exp2_approx(fmaf(p[nb][e], a.scale2, -l2[e >> 1]));
        if (edge && (key >= a.n_keys || a.mask.masked(q0 + qr + g + 8 * (e >> 1), key))) x = 0.0f;
        p[nb][e] = x;
      }
    float ds[B / 8][4] = {};  // dP, then dS
    mma_abt<kD, B>(ds, sdO, qr, Vj, lane);
#pragma unroll
    for (int nb = 0; nb < B / 8; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) ds[nb][e] = softmax_grad(p[nb][e], ds[nb][e], Dq[e >> 1]);
    std::uint32_t af[B / 16][4];
    to_a_fragments<E, B>(ds, af);
    mma_ab<kD, B>(dq, af, Kj, lane);  // dQ += dS K
    __syncthreads();                  // before the next copy overwrites this stage
  }
  ptx::cp_async_wait<0>();
  store_rows<kD>(a.dQ + head * a.n * kD, dq, q0 + qr, a.n, a.scale, lane);
}

template <int kD, bool kAtomicDq>
constexpr std::size_t mma_dkdv_smem_bytes() {
  return 2 * std::size_t(6 * kBwdTile * kD) + 4 * sizeof(float) * kBwdTile +
         (kAtomicDq ? 2 * std::size_t(kBwdTile * kBwdTile) : 0);
}
template <int kD>
constexpr std::size_t mma_dq_smem_bytes() {
  return 2 * std::size_t(6 * kBwdTile * kD);
}

// The fp32 accumulators a thread of the dK/dV kernel holds through its loop: dK and dV of its
// warp's 16 keys (d / 2 each), S^T (then P^T) and dP^T (then dS^T) of a tile pair (B / 2 each);
// the dQ kernel holds fewer (dQ d / 2, P and dS).
constexpr int mma_dkdv_registers(int d) {
  return d + kBwdTile;
}

// Whether the backward holds head dim D: tc's rows (whole swizzle groups), its shared memory and
// registers. At d = 64: dK/dV 57 KiB (with the atomic dQ's dS^T tile), dQ 48 KiB, 128 registers;
// at d = 128: 105 KiB, 96 KiB, 192 registers; d = 256 would take 201 KiB, 192 KiB and 320
// registers, over the 255 a thread has.
struct MmaBackwardFits {
  template <int kD>
  static constexpr bool at() {
    return kD % 64 == 0 && mma_dkdv_smem_bytes<kD, true>() <= kSmemOptIn &&
           mma_dq_smem_bytes<kD>() <= kSmemOptIn && mma_dkdv_registers(kD) <= kMaxRegisters;
  }
};
static_assert(MmaBackwardHeadDims::all<MmaBackwardFits>(),
              "a head dim of mma's backward (head_dims.hpp) that its tiles do not hold");
static_assert(kernel_tiles(Impl::mma, 64, Pass::bwd).Br == kBwdTile &&
                  kernel_tiles(Impl::mma, 64, Pass::bwd).Bc == kBwdTile,
              "the tiles the host says mma's backward computes (cuda_api.hpp)");

}  // namespace fd::cuda
