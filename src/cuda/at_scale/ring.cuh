// ring.cuh — one step of ring attention (flashdemo/at_scale/ring.hpp) on a rank's GPU: its rows
// against the K/V block it holds. The teaching kernels' shape (teaching.cuh): one thread per query
// row (or per key), tiles of Br rows and Bc keys staged in shared memory, converted there from the
// element type E (float, __nv_bfloat16, __half) to fp32, every sum in fp32; the arithmetic is the
// CPU ring's (ring_math.hpp over tile_math.hpp), row for row.
//
// The rank's rows and the block's keys are one range or two (zigzag), each cut into tiles; a
// (row tile, key tile) pair the mask hides wholly is not computed (mask.hpp: classify).
// Forward, grid (the rank's row tiles), one thread per row q:
//   for every key tile of the block q's tile does not skip:  K, V -> shared
//     S = scale q K^T (score_row, -inf where masked), (m, l, O_s) <- update_row, P rounded to p_in
//   (O, L, L_lo) <- fold of (O_s / l, m + log l) into the running O, L      (fold_row)
// Backward, FlashAttention-2 per block, two kernels, each summing in the CPU ring's order (no
// atomics): with P = exp(S - L), dS = P (dP - D) of each pair (pair_grad, both recompute them)
//   dkdv  grid (the block's key tiles), one thread per key k, over the rank's row tiles in order:
//         dV_k += P dO_q,  dK_k += dS Q_q       (the travelling accumulators, fp32, unscaled)
//   dq    grid (the rank's row tiles), one thread per row q, over the block's key tiles in order:
//         dQ_q += dS K_k                         (fp32, unscaled)
//   D = rowsum(dO * O) once before the ring (d_kernel), with O as stored in E.
// store_kernel: out = round_E(factor x), the outputs in E (dQ and dK scaled there, once).
#pragma once

#include "cuda/primitives/element.cuh"
#include "cuda/rungs/teaching.cuh"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/precision.hpp"
#include "flashdemo/host_device/ring_math.hpp"
#include "flashdemo/host_device/tile_math.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd::cuda {

// A rank's positions on the device (ring.hpp: RingBlock): up to two ranges, and the local row of
// each one's first position.
struct RingParts {
  Range part[2] = {};
  index_t offset[2] = {0, 0};
  int count = 0;
};

// Tile t of a block cut into tiles of B positions, range by range: its global positions and the
// local row of its first.
struct PartTile {
  Range range;
  index_t local;
};

__host__ __device__ inline index_t tiles_of(const RingParts& p, index_t B) {
  index_t total = 0;
  for (int k = 0; k < p.count; ++k) total += ceil_div(p.part[k].size(), B);
  return total;
}

__device__ inline PartTile tile_of(const RingParts& p, index_t B, index_t t) {
  for (int k = 0; k < p.count; ++k) {
    const index_t here = ceil_div(p.part[k].size(), B);
    if (t < here) {
      const index_t begin = p.part[k].begin + t * B;
      return {{begin, fmin2(p.part[k].end, begin + B)}, p.offset[k] + t * B};
    }
    t -= here;
  }
  return {{0, 0}, 0};
}

template <class E>
struct RingStepArgs {
  RingParts rows, keys;  // the rank's rows; the keys of the block it holds at this step
  index_t d, Br, Bc;
  Mask mask;
  float scale;
  Precision p_in;       // P (and dS) as the products see them: E's precision
  const E *Q, *dO;      // the rank's rows, local order
  const E *K, *V;       // the block, local order
  float *O, *L, *L_lo;  // the running (O, L); the backward reads L, L_lo
  const float* D;       // backward: rowsum(dO * O)
  float *dQ, *dK, *dV;  // backward: the rank's dQ; the travelling block's dK, dV
};

// rows x d values of E (row-major) into shared memory as fp32, rows padded (teaching.cuh: padded).
template <class E>
__device__ void stage_float(float* dst, const E* src, index_t rows, index_t d) {
  const index_t ld = padded(d);
  for (index_t k = threadIdx.x; k < rows * d; k += blockDim.x)
    dst[(k / d) * ld + k % d] = float(src[k]);
}

template <class E>
__global__ void ring_forward_kernel(RingStepArgs<E> a) {
  const index_t d = a.d, ld = padded(d), Br = a.Br, Bc = a.Bc;
  const PartTile rt = tile_of(a.rows, Br, blockIdx.x);
  extern __shared__ float4 ring_smem[];
  float* sQ = reinterpret_cast<float*>(ring_smem);  // Br x ld
  float* sO = sQ + Br * ld;                         // Br x ld: O_s
  float* sK = sO + Br * ld;                         // Bc x ld
  float* sV = sK + Bc * ld;                         // Bc x ld
  float* sS = sV + Bc * ld;                         // Br x Bc: S, then P
  const index_t r = threadIdx.x, q = rt.range.begin + r, i = rt.local + r;
  const bool active = q < rt.range.end;
  stage_float(sQ, a.Q + rt.local * d, rt.range.size(), d);
  for (index_t x = 0; x < d; ++x) sO[r * ld + x] = 0.0f;
  RowState<float> st;  // m = -inf, l = 0
  const index_t seen = active ? a.mask.visible_keys(q) : 0;
  for (int b = 0; b < a.keys.count; ++b) {
    const Range kb = a.keys.part[b];
    for (index_t k0 = kb.begin; k0 < kb.end; k0 += Bc) {
      const index_t cols = fmin2(Bc, kb.end - k0);
      if (a.mask.classify(rt.range.begin, rt.range.end, k0, k0 + cols) == TileKind::skipped)
        break;  // this tile and the later ones: the masked future of every row of the tile
      const index_t kl = a.keys.offset[b] + (k0 - kb.begin);
      __syncthreads();  // everyone is done with the previous K, V
      stage_float(sK, a.K + kl * d, cols, d);
      stage_float(sV, a.V + kl * d, cols, d);
      __syncthreads();
      if (!active || k0 >= seen) continue;  // as the CPU ring: no tile past the row's last key
      float* s = sS + r * Bc;
      score_row(sQ + r * ld, sK, ld, k0, cols, d, a.scale, a.mask, q, s);  // S, masked: -inf
      update_row(st, s, sV, ld, cols, d, sO + r * ld, a.p_in);  // (m, l, O_s) <- the tile
    }
  }
  if (!active) return;
  fold_row(st, sO + r * ld, a.O + i * d, a.L[i], a.L_lo[i], d);  // (O, L) <- fold (O_s, L_s)
}

template <class E>
__global__ void ring_dkdv_kernel(RingStepArgs<E> a) {
  const index_t d = a.d, ld = padded(d), Br = a.Br, Bc = a.Bc;
  const PartTile kt = tile_of(a.keys, Bc, blockIdx.x);
  extern __shared__ float4 ring_smem[];
  float* sK = reinterpret_cast<float*>(ring_smem);  // Bc x ld
  float* sV = sK + Bc * ld;                         // Bc x ld
  float* sdK = sV + Bc * ld;                        // Bc x ld: dK_k, running
  float* sdV = sdK + Bc * ld;                       // Bc x ld: dV_k, running
  float* sQ = sdV + Bc * ld;                        // Br x ld
  float* sdO = sQ + Br * ld;                        // Br x ld
  float* sL = sdO + Br * ld;                        // Br
  float* sLlo = sL + Br;                            // Br
  float* sD = sLlo + Br;                            // Br
  const index_t c = threadIdx.x, k = kt.range.begin + c, kl = kt.local + c;
  const bool active = k < kt.range.end;
  stage_float(sK, a.K + kt.local * d, kt.range.size(), d);
  stage_float(sV, a.V + kt.local * d, kt.range.size(), d);
  for (index_t x = 0; active && x < d; ++x)
    sdK[c * ld + x] = a.dK[kl * d + x], sdV[c * ld + x] = a.dV[kl * d + x];
  for (int b = 0; b < a.rows.count; ++b) {
    const Range ra = a.rows.part[b];
    for (index_t q0 = ra.begin; q0 < ra.end; q0 += Br) {
      const index_t rows = fmin2(Br, ra.end - q0), il = a.rows.offset[b] + (q0 - ra.begin);
      if (a.mask.classify(q0, q0 + rows, kt.range.begin, kt.range.end) == TileKind::skipped)
        continue;  // these rows see none of the tile's keys (later rows may)
      __syncthreads();
      stage_float(sQ, a.Q + il * d, rows, d);
      stage_float(sdO, a.dO + il * d, rows, d);
      for (index_t r = threadIdx.x; r < rows; r += blockDim.x)
        sL[r] = a.L[il + r], sLlo[r] = a.L_lo[il + r], sD[r] = a.D[il + r];
      __syncthreads();
      for (index_t r = 0; active && r < rows; ++r) {
        if (a.mask.masked(q0 + r, k)) continue;  // P = 0: nothing to add
        const float s = score(sQ + r * ld, sK + c * ld, d, a.scale);
        const PairGrad<float> g =
            pair_grad(s, sdO + r * ld, sV + c * ld, d, sL[r], sLlo[r], sD[r], a.p_in);
        for (index_t x = 0; x < d; ++x) {
          sdV[c * ld + x] = fmadd(g.p, sdO[r * ld + x], sdV[c * ld + x]);  // dV += P^T dO
          sdK[c * ld + x] = fmadd(g.ds, sQ[r * ld + x], sdK[c * ld + x]);  // dK += dS^T Q
        }
      }
    }
  }
  for (index_t x = 0; active && x < d; ++x)
    a.dK[kl * d + x] = sdK[c * ld + x], a.dV[kl * d + x] = sdV[c * ld + x];
}

template <class E>
__global__ void ring_dq_kernel(RingStepArgs<E> a) {
  const index_t d = a.d, ld = padded(d), Br = a.Br, Bc = a.Bc;
  const PartTile rt = tile_of(a.rows, Br, blockIdx.x);
  extern __shared__ float4 ring_smem[];
  float* sQ = reinterpret_cast<float*>(ring_smem);  // Br x ld
  float* sdO = sQ + Br * ld;                        // Br x ld
  float* sdQ = sdO + Br * ld;                       // Br x ld: dQ_q, running
  float* sK = sdQ + Br * ld;                        // Bc x ld
  float* sV = sK + Bc * ld;                         // Bc x ld
  const index_t r = threadIdx.x, q = rt.range.begin + r, i = rt.local + r;
  const bool active = q < rt.range.end;
  stage_float(sQ, a.Q + rt.local * d, rt.range.size(), d);
  stage_float(sdO, a.dO + rt.local * d, rt.range.size(), d);
  for (index_t x = 0; active && x < d; ++x) sdQ[r * ld + x] = a.dQ[i * d + x];
  const float L = active ? a.L[i] : 0.0f, L_lo = active ? a.L_lo[i] : 0.0f,
              D = active ? a.D[i] : 0.0f;
  for (int b = 0; b < a.keys.count; ++b) {
    const Range kb = a.keys.part[b];
    for (index_t k0 = kb.begin; k0 < kb.end; k0 += Bc) {
      const index_t cols = fmin2(Bc, kb.end - k0), kl = a.keys.offset[b] + (k0 - kb.begin);
      if (a.mask.classify(rt.range.begin, rt.range.end, k0, k0 + cols) == TileKind::skipped) break;
      __syncthreads();
      stage_float(sK, a.K + kl * d, cols, d);
      stage_float(sV, a.V + kl * d, cols, d);
      __syncthreads();
      for (index_t c = 0; active && c < cols; ++c) {
        if (a.mask.masked(q, k0 + c)) continue;
        const float s = score(sQ + r * ld, sK + c * ld, d, a.scale);
        const PairGrad<float> g = pair_grad(s, sdO + r * ld, sV + c * ld, d, L, L_lo, D, a.p_in);
        for (index_t x = 0; x < d; ++x)
          sdQ[r * ld + x] = fmadd(g.ds, sK[c * ld + x], sdQ[r * ld + x]);  // dQ += dS K
      }
    }
  }
  for (index_t x = 0; active && x < d; ++x) a.dQ[i * d + x] = sdQ[r * ld + x];
}

// D_q = rowsum(dO_q * O_q) (tile_math.hpp: row_D), one thread per row, blockDim.x rows a block;
// O in fp32, as the forward left it before storing it in E.
template <class E>
__global__ void ring_d_kernel(const float* O, const E* dO, float* D, index_t rows, index_t d) {
  const index_t ld = padded(d), r0 = index_t(blockIdx.x) * blockDim.x;
  const index_t here = fmin2(index_t(blockDim.x), rows - r0), t = threadIdx.x;
  extern __shared__ float4 ring_smem[];
  float* sO = reinterpret_cast<float*>(ring_smem);  // blockDim.x x ld
  float* sdO = sO + index_t(blockDim.x) * ld;       // blockDim.x x ld
  stage_float(sO, O + r0 * d, here, d);
  stage_float(sdO, dO + r0 * d, here, d);
  __syncthreads();
  if (t < here) D[r0 + t] = row_D(sdO + t * ld, sO + t * ld, d);
}

// out[k] = round_E(factor x[k]): an output stored in E (factor: the scale of dQ, dK; else 1).
template <class E>
__global__ void ring_store_kernel(const float* x, E* out, index_t count, float factor) {
  const index_t k = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < count) out[k] = to_element<E>(factor * x[k]);
}

// x[k] = value (the running L starts at -inf, which no byte pattern of cudaMemset gives).
template <class T>
__global__ void ring_fill_kernel(T* x, index_t count, T value) {
  const index_t k = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < count) x[k] = value;
}

}  // namespace fd::cuda
