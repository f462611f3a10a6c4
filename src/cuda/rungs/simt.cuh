// simt.cuh — the rung `simt`: FlashAttention-2's forward in fp32 on CUDA cores, register-tiled.
//
// Block (i, head), 256 threads, Br = Bc = 64. Thread (rg, cg) = (tid / 16, tid % 16) owns
//   rows 4 rg .. 4 rg + 3 of the tile, S columns 4 cg .. 4 cg + 3: a 4 x 4 block of S_ij in
//   registers, and O columns 4 cg + 64 u .. + 3 (u < d / 64): a 4 x d/16 block of O_i.
// Q_i, K_j are staged transposed (Q^T, K^T: d x 64), V_j as it is (in K_j^T's place once S is
// done: 2 blocks fit an SM at d = 128, 3 at d = 64), P_ij transposed, all in shared memory,
// filled with 16-byte loads; then per tile
//   S = Q_i K_j^T:   for each x < d, two float4 loads (Q^T, K^T) feed 16 fused multiply-adds
//   S = -inf where masked; m2 = max(m2, rowmax(S) c), c = scale log2(e); alpha;
//                    P = exp2(S c - m2) (one fma, then exp2), l     (online_softmax.hpp)
//                    the 16 threads of a row group are one half-warp: shuffles reduce the row
//   O = alpha O + P V_j: for each key c, one float4 of P^T and d / 64 float4s of V feed
//                    4 d / 16 fused multiply-adds
// and O_i = O / l, L_i = m2 ln 2 + log l at the end.
//
// Per block, at head dim d (simt_smem_bytes, simt_registers):
//   shared memory  4 bytes x (Q^T 64 d + K^T, then V: 64 d + P^T 64 x 68)
//                  d = 64 49 KiB, d = 128 81 KiB (d = 256 would take 145 KiB)
//   registers      fp32 accumulators a thread holds through the key loop, O 4 d / 16 + S 16:
//                  d = 64 32, d = 128 48 (d = 256 80) of 255
#pragma once

#include "cuda/host/head_dims.hpp"
#include "cuda/host/rungs_api.hpp"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd::cuda {

struct SimtShape {
  static constexpr int kThreads = 256, Br = 64, Bc = 64, kLd = Br + 4;  // P^T rows padded
};

struct SimtArgs {
  const float *Q, *K, *V;
  float *O, *L;
  index_t n, n_keys;
  Tiling tiling;
  Mask mask;
  float scale2;  // scale * log2(e)
  RungTrace trace;
};

// X[row0 .. row0 + 64) (d columns) transposed into Xt (d x 64); rows past total are 0.
template <int kD>
__device__ inline void load_transposed(float* Xt, const float* X, index_t row0, index_t total) {
  for (int k = threadIdx.x; k < 64 * (kD / 4); k += SimtShape::kThreads) {
    const int r = k % 64, x = 4 * (k / 64);  // neighbouring threads: neighbouring rows
    const float4 v = row0 + r < total ? *reinterpret_cast<const float4*>(X + (row0 + r) * kD + x)
                                      : make_float4(0, 0, 0, 0);
    Xt[(x + 0) * 64 + r] = v.x, Xt[(x + 1) * 64 + r] = v.y;
    Xt[(x + 2) * 64 + r] = v.z, Xt[(x + 3) * 64 + r] = v.w;
  }
}

template <int kD>
__device__ inline void load_rows(float* Xs, const float* X, index_t row0, index_t total) {
  for (int k = threadIdx.x; k < 64 * (kD / 4); k += SimtShape::kThreads) {
    const int r = k / (kD / 4), x = 4 * (k % (kD / 4));
    *reinterpret_cast<float4*>(Xs + r * kD + x) =
        row0 + r < total ? *reinterpret_cast<const float4*>(X + (row0 + r) * kD + x)
                         : make_float4(0, 0, 0, 0);
  }
}

// Sums v over the 16 lanes of a half-warp (xor 1, 2, 4, 8 stay inside it); max likewise.
__device__ inline float half_warp_sum(float v) {
  for (int k = 1; k < 16; k *= 2) v += __shfl_xor_sync(0xffffffffu, v, k);
  return v;
}
__device__ inline float half_warp_max(float v) {
  for (int k = 1; k < 16; k *= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, k));
  return v;
}

template <int kD, bool kTrace>
__global__ void __launch_bounds__(SimtShape::kThreads) simt_forward_kernel(const SimtArgs a) {
  constexpr int Br = SimtShape::Br, Bc = SimtShape::Bc, U = kD / 64, kLd = SimtShape::kLd;
  extern __shared__ float4 smem4[];
  float* sQt = reinterpret_cast<float*>(smem4);  // d x Br
  float* sKt = sQt + kD * Br;                    // d x Bc, then the same memory as V_j: Bc x d
  float* sV = sKt;
  float* sPt = sKt + kD * Bc;  // Bc x kLd
  const int rg = threadIdx.x / 16, cg = threadIdx.x % 16;
  const index_t Tr = a.tiling.Tr();
  const index_t i = a.mask.causal ? Tr - 1 - blockIdx.x : blockIdx.x;  // longest rows first
  const index_t head = blockIdx.y, q0 = i * Br;
  const float* K = a.K + head * a.n_keys * kD;
  const float* V = a.V + head * a.n_keys * kD;
  const index_t J = computed_key_tiles(a.tiling, a.mask, i);
  const index_t F = full_key_tiles(a.tiling, a.mask, i);
  const bool tracing = kTrace && head == 0;  // kTrace: its own kernel, none of this in the fast one
  load_transposed<kD>(sQt, a.Q + head * a.n * kD, q0, a.n);

  float o[4][4 * U] = {}, m2[4], l[4] = {};
  for (int r = 0; r < 4; ++r) m2[r] = neg_inf<float>();
  for (index_t j = 0; j < J; ++j) {
    __syncthreads();  // everyone is done with the previous V_j and P
    load_transposed<kD>(sKt, K, j * Bc, a.n_keys);
    __syncthreads();
    float s[4][4] = {};
    for (int x = 0; x < kD; ++x) {
      const float4 q = *reinterpret_cast<const float4*>(sQt + x * Br + 4 * rg);
      const float qr[4] = {q.x, q.y, q.z, q.w};
      const float4 k = *reinterpret_cast<const float4*>(sKt + x * Bc + 4 * cg);
      const float kc[4] = {k.x, k.y, k.z, k.w};
      for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 4; ++r) s[r][c] = fmaf(qr[r], kc[c], s[r][c]);
    }
    const index_t k0 = j * Bc;
    const bool edge = j >= F || k0 + Bc > a.n_keys;
    float m_old[4], alpha[4];
    for (int r = 0; r < 4; ++r) {
      float mx = neg_inf<float>();  // of S unscaled: max(S) scale2 = max(S scale2), monotone
      for (int c = 0; c < 4; ++c) {
        const index_t key = k0 + 4 * cg + c;
        if (edge && (key >= a.n_keys || a.mask.masked(q0 + 4 * rg + r, key)))
          s[r][c] = neg_inf<float>();
        mx = fmaxf(mx, s[r][c]);
      }
      mx = fmaxf(m2[r], half_warp_max(mx) * a.scale2);
      m_old[r] = m2[r], alpha[r] = rescale_factor2(m2[r], mx);
      const float shift = exp2_shift(mx);
      m2[r] = mx;
      float rowsum = 0.0f;
      for (int c = 0; c < 4; ++c) rowsum += (s[r][c] = exp2f(fmaf(s[r][c], a.scale2, -shift)));
      l[r] = alpha[r] * l[r] + rowsum;  // this thread's part of l
      for (int x = 0; x < 4 * U; ++x) o[r][x] *= alpha[r];
    }
    for (int c = 0; c < 4; ++c)
      *reinterpret_cast<float4*>(sPt + (4 * cg + c) * kLd + 4 * rg) =
          make_float4(s[0][c], s[1][c], s[2][c], s[3][c]);
    __syncthreads();  // everyone is done with K_j^T: V_j takes its place
    load_rows<kD>(sV, V, j * Bc, a.n_keys);
    __syncthreads();
    for (int c = 0; c < Bc; ++c) {
      const float4 p = *reinterpret_cast<const float4*>(sPt + c * kLd + 4 * rg);
      const float pr[4] = {p.x, p.y, p.z, p.w};
      for (int u = 0; u < U; ++u) {
        const float4 v = *reinterpret_cast<const float4*>(sV + c * kD + 64 * u + 4 * cg);
        for (int r = 0; r < 4; ++r) {
          o[r][4 * u + 0] = fmaf(pr[r], v.x, o[r][4 * u + 0]);
          o[r][4 * u + 1] = fmaf(pr[r], v.y, o[r][4 * u + 1]);
          o[r][4 * u + 2] = fmaf(pr[r], v.z, o[r][4 * u + 2]);
          o[r][4 * u + 3] = fmaf(pr[r], v.w, o[r][4 * u + 3]);
        }
      }
    }
    if (tracing) {
      constexpr float kLn2 = 0.69314718055994531f;
      for (int r = 0; r < 4; ++r) {
        const float sum = half_warp_sum(l[r]);
        if (cg != 0) continue;
        const index_t slot = (i * a.tiling.Tc() + j) * Br + 4 * rg + r;
        a.trace.m_old[slot] = m_old[r] * kLn2, a.trace.m_new[slot] = m2[r] * kLn2;
        a.trace.alpha[slot] = alpha[r], a.trace.l[slot] = sum;
      }
      if (threadIdx.x == 0) a.trace.computed[i * a.tiling.Tc() + j] = 1;
    }
  }
  for (int r = 0; r < 4; ++r) {
    const index_t q = q0 + 4 * rg + r;
    const float lsum = half_warp_sum(l[r]);
    const float inv = lsum > 0.0f ? 1.0f / lsum : 0.0f;
    if (q >= a.n) continue;
    float* Orow = a.O + (head * a.n + q) * kD;
    for (int u = 0; u < U; ++u)
      *reinterpret_cast<float4*>(Orow + 64 * u + 4 * cg) = make_float4(
          o[r][4 * u] * inv, o[r][4 * u + 1] * inv, o[r][4 * u + 2] * inv, o[r][4 * u + 3] * inv);
    if (cg != 0) continue;
    a.L[head * a.n + q] = finalize2(m2[r], lsum);
    if (tracing) a.trace.final_m[q] = m2[r] * 0.69314718055994531f, a.trace.final_l[q] = lsum;
  }
}

template <int kD>
constexpr std::size_t simt_smem_bytes() {
  return sizeof(float) *
         std::size_t(kD * SimtShape::Br + kD * SimtShape::Bc + SimtShape::Bc * SimtShape::kLd);
}

// The fp32 accumulators a thread holds through the key loop: its 4 x d/16 of O and 4 x 4 of S.
constexpr int simt_registers(int d) {
  return 4 * d / 16 + 16;
}

// Whether the kernel holds head dim D: d / 64 float4 columns of O per thread (and 16-byte loads),
// the shared memory and the registers above.
struct SimtFits {
  template <int kD>
  static constexpr bool at() {
    return kD % 64 == 0 && simt_smem_bytes<kD>() <= kSmemOptIn &&
           simt_registers(kD) <= kMaxRegisters;
  }
};
static_assert(SimtHeadDims::all<SimtFits>(),
              "a head dim of simt (head_dims.hpp) that its tiles do not hold");
static_assert(kernel_tiles(Impl::simt, 64).Br == SimtShape::Br &&
                  kernel_tiles(Impl::simt, 64).Bc == SimtShape::Bc,
              "the tiles the host says simt computes (cuda_api.hpp)");

}  // namespace fd::cuda
