// teaching.cuh — the teaching kernels: the CPU tiles of flash_forward.cpp and
// flash_backward.cpp, one thread block per tile, the same tile math (tile_math.hpp).
//
// Forward, grid (Tr, b*h), one thread per query row of tile i:
//   Q_i -> shared;  for each key tile j not wholly masked:  K_j, V_j -> shared,
//     S_ij row = scale * q K_j^T (score_row), (m, l, O row) <- update_row       [registers, shared]
//   O_i = O_i / l,  L_i = m + log(l)  (finalize_row; with L's rounding error L_lo when asked)
// Backward, FlashAttention-2:
//   D = rowsum(dO * O)                                   one thread per row
//   grid (Tc, b*h), one thread per key k of tile j, looping over query tiles i:
//     P = exp(S - L), dV_k += P dO_q, dP = <dO_q, V_k>, dS = P (dP - D_q), dK_k += dS Q_q,
//     dQ_q += dS K_k by atomicAdd (or, deterministic, in a third kernel below);
//     dQ = scale dQ, dK = scale dK once at the end, as the reference scales them
//   deterministic dQ: grid (Tr, b*h), one thread per query row, looping over key tiles in order.
#pragma once

#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/online_softmax.hpp"
#include "flashdemo/host_device/precision.hpp"
#include "flashdemo/host_device/tile_math.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd::cuda {

template <class T>
struct Problem {
  index_t n, n_keys, d;
  Tiling tiling;
  Mask mask;
  T scale;
  Precision p_in;
};

// Shared-memory rows are padded by one element so that the threads of a warp, each on its own
// row, fall in different banks.
__host__ __device__ inline index_t padded(index_t d) {
  return d + 1;
}

// Copies rows [r0, r0 + rows) x d of a head's matrix into shared memory (all threads help).
template <class T>
__device__ void stage(T* dst, const T* src, index_t r0, index_t rows, index_t d) {
  const index_t ld = padded(d);
  for (index_t k = threadIdx.x; k < rows * d; k += blockDim.x)
    dst[(k / d) * ld + k % d] = src[(r0 + k / d) * d + k % d];
}

template <class T>
struct ForwardArgs {
  Problem<T> p;
  const T *Q, *K, *V;
  T *O, *L, *L_lo;  // L_lo may be null
  // Head 0's trace, when not null: per tile x row, the state before and after.
  char* computed;
  T *m_old, *m_new, *alpha, *l;
  T *final_m, *final_l;
};

template <class T>
__device__ void record(const ForwardArgs<T>& a, index_t tile, index_t r, T m_old, T alpha,
                       const RowState<T>& st) {
  const index_t k = tile * a.p.tiling.Br + r;
  a.m_old[k] = m_old, a.m_new[k] = st.m, a.alpha[k] = alpha, a.l[k] = st.l;
}

template <class T>
__global__ void forward_kernel(ForwardArgs<T> a) {
  const Problem<T>& p = a.p;
  const index_t i = blockIdx.x, head = blockIdx.y, d = p.d, ld = padded(d);
  const Range rows = p.tiling.rows(i);
  extern __shared__ unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);  // Br x ld
  T* sO = sQ + p.tiling.Br * ld;       // Br x ld
  T* sK = sO + p.tiling.Br * ld;       // Bc x ld
  T* sV = sK + p.tiling.Bc * ld;       // Bc x ld
  T* sS = sV + p.tiling.Bc * ld;       // Br x Bc: S_ij, then P_ij
  const T* Q = a.Q + head * p.n * d;
  const T* K = a.K + head * p.n_keys * d;
  const T* V = a.V + head * p.n_keys * d;
  const index_t r = threadIdx.x, q = rows.begin + r;
  const bool active = r < rows.size();
  stage(sQ, Q, rows.begin, rows.size(), d);
  for (index_t x = 0; x < d; ++x) sO[r * ld + x] = T(0);  // O_i = 0
  RowState<T> st;                                         // m = -inf, l = 0
  const bool tracing = a.computed && head == 0;
  for (index_t j = 0; j < p.tiling.Tc(); ++j) {
    if (p.tiling.classify(p.mask, i, j) == TileKind::skipped) continue;  // the masked future
    const Range cols = p.tiling.cols(j);
    __syncthreads();  // everyone is done with the previous K_j, V_j
    stage(sK, K, cols.begin, cols.size(), d);
    stage(sV, V, cols.begin, cols.size(), d);
    __syncthreads();
    if (!active) continue;
    const T m_old = st.m;
    T* s = sS + r * p.tiling.Bc;
    score_row(sQ + r * ld, sK, ld, cols.begin, cols.size(), d, p.scale, p.mask, q, s);
    const T alpha = update_row(st, s, sV, ld, cols.size(), d, sO + r * ld, p.p_in);
    if (tracing) {
      if (r == 0) a.computed[i * p.tiling.Tc() + j] = 1;
      record(a, i * p.tiling.Tc() + j, r, m_old, alpha, st);
    }
  }
  if (!active) return;
  const SplitL<T> L = finalize_row(st, sO + r * ld, d);  // O_i /= l, L = m + log(l)
  for (index_t x = 0; x < d; ++x) a.O[(head * p.n + q) * d + x] = round_to(p.p_in, sO[r * ld + x]);
  a.L[head * p.n + q] = L.L;
  if (a.L_lo) a.L_lo[head * p.n + q] = L.lo;
  if (tracing) a.final_m[q] = st.m, a.final_l[q] = st.l;
}

// D = rowsum(dO * O), one thread per row of every head.
template <class T>
__global__ void d_kernel(const T* O, const T* dO, T* D, index_t rows, index_t d) {
  const index_t row = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (row >= rows) return;
  D[row] = row_D(dO + row * d, O + row * d, d);  // summed as dP = <dO, V_k> is (tile_math.hpp)
}

template <class T>
struct BackwardArgs {
  Problem<T> p;
  const T *Q, *K, *V, *L, *L_lo, *D, *dO;  // L_lo may be null (taken as 0)
  T *dQ, *dK, *dV;
  bool atomic_dq;
  __device__ T lo(index_t row) const { return L_lo ? L_lo[row] : T(0); }
};

// One key tile j: dK_j, dV_j accumulate in shared memory over every query tile i that sees it.
template <class T>
__global__ void dkdv_kernel(BackwardArgs<T> a) {
  const Problem<T>& p = a.p;
  const index_t j = blockIdx.x, head = blockIdx.y, d = p.d, ld = padded(d);
  const Range cols = p.tiling.cols(j);
  extern __shared__ unsigned char smem[];
  T* sK = reinterpret_cast<T*>(smem);  // Bc x ld
  T* sV = sK + p.tiling.Bc * ld;       // Bc x ld
  T* sdK = sV + p.tiling.Bc * ld;      // Bc x ld
  T* sdV = sdK + p.tiling.Bc * ld;     // Bc x ld
  T* sQ = sdV + p.tiling.Bc * ld;      // Br x ld
  T* sdO = sQ + p.tiling.Br * ld;      // Br x ld
  T* sL = sdO + p.tiling.Br * ld;      // Br
  T* sLlo = sL + p.tiling.Br;          // Br
  T* sD = sLlo + p.tiling.Br;          // Br
  T* sdS = sD + p.tiling.Br;           // Br x Bc: dS_ij, for this key tile's part of dQ_i
  const index_t c = threadIdx.x, k = cols.begin + c;
  const bool active = c < cols.size();
  const index_t qbase = head * p.n, kbase = head * p.n_keys;
  stage(sK, a.K + kbase * d, cols.begin, cols.size(), d);
  stage(sV, a.V + kbase * d, cols.begin, cols.size(), d);
  for (index_t x = 0; x < d; ++x) sdK[c * ld + x] = T(0), sdV[c * ld + x] = T(0);
  for (index_t i = 0; i < p.tiling.Tr(); ++i) {
    if (p.tiling.classify(p.mask, i, j) == TileKind::skipped) continue;
    const Range rows = p.tiling.rows(i);
    __syncthreads();
    stage(sQ, a.Q + qbase * d, rows.begin, rows.size(), d);
    stage(sdO, a.dO + qbase * d, rows.begin, rows.size(), d);
    for (index_t r = threadIdx.x; r < rows.size(); r += blockDim.x) {
      const index_t row = qbase + rows.begin + r;
      sL[r] = a.L[row], sLlo[r] = a.lo(row), sD[r] = a.D[row];
    }
    __syncthreads();
    for (index_t r = 0; active && r < rows.size(); ++r) {
      const index_t q = rows.begin + r;
      sdS[r * p.tiling.Bc + c] = T(0);
      if (p.mask.masked(q, k)) continue;  // P = 0: nothing to add
      const T* q_row = sQ + r * ld;
      const T* do_row = sdO + r * ld;
      const T pf = recompute_p(score(q_row, sK + c * ld, d, p.scale), sL[r], sLlo[r]);  // P
      const T dp = dot(do_row, sV + c * ld, d);                    // dP = dO V^T
      const T ds = round_to(p.p_in, softmax_grad(pf, dp, sD[r]));  // dS = P (dP - D)
      const T pr = round_to(p.p_in, pf);
      for (index_t x = 0; x < d; ++x) {
        sdV[c * ld + x] = fmadd(pr, do_row[x], sdV[c * ld + x]);  // dV += P^T dO
        sdK[c * ld + x] = fmadd(ds, q_row[x], sdK[c * ld + x]);   // dK += dS^T Q (scale: end)
      }
      sdS[r * p.tiling.Bc + c] = ds;
    }
    if (!a.atomic_dq) continue;
    __syncthreads();  // dQ_i += dS_ij K_j: one global atomic per (row, x) and key tile
    for (index_t k2 = threadIdx.x; k2 < rows.size() * d; k2 += blockDim.x) {
      const index_t r = k2 / d, x = k2 % d;
      T sum = T(0);
      for (index_t c2 = 0; c2 < cols.size(); ++c2)
        sum = fmadd(sdS[r * p.tiling.Bc + c2], sK[c2 * ld + x], sum);
      atomicAdd(&a.dQ[(qbase + rows.begin + r) * d + x], sum);  // scale: finish_dq_kernel
    }
  }
  if (!active) return;
  for (index_t x = 0; x < d; ++x) {
    a.dK[(kbase + k) * d + x] = round_to(p.p_in, p.scale * sdK[c * ld + x]);  // dK = scale dS^T Q
    a.dV[(kbase + k) * d + x] = round_to(p.p_in, sdV[c * ld + x]);
  }
}

// Deterministic dQ: one thread per query row sums its key tiles in a fixed order.
template <class T>
__global__ void dq_kernel(BackwardArgs<T> a) {
  const Problem<T>& p = a.p;
  const index_t i = blockIdx.x, head = blockIdx.y, d = p.d, ld = padded(d);
  const Range rows = p.tiling.rows(i);
  extern __shared__ unsigned char smem[];
  T* sQ = reinterpret_cast<T*>(smem);  // Br x ld
  T* sdO = sQ + p.tiling.Br * ld;      // Br x ld
  T* sdQ = sdO + p.tiling.Br * ld;     // Br x ld
  T* sK = sdQ + p.tiling.Br * ld;      // Bc x ld
  T* sV = sK + p.tiling.Bc * ld;       // Bc x ld
  const index_t r = threadIdx.x, q = rows.begin + r;
  const bool active = r < rows.size();
  const index_t qbase = head * p.n, kbase = head * p.n_keys;
  stage(sQ, a.Q + qbase * d, rows.begin, rows.size(), d);
  stage(sdO, a.dO + qbase * d, rows.begin, rows.size(), d);
  for (index_t x = 0; x < d; ++x) sdQ[r * ld + x] = T(0);
  const T L = active ? a.L[qbase + q] : T(0), L_lo = active ? a.lo(qbase + q) : T(0),
          D = active ? a.D[qbase + q] : T(0);
  for (index_t j = 0; j < p.tiling.Tc(); ++j) {
    if (p.tiling.classify(p.mask, i, j) == TileKind::skipped) continue;
    const Range cols = p.tiling.cols(j);
    __syncthreads();
    stage(sK, a.K + kbase * d, cols.begin, cols.size(), d);
    stage(sV, a.V + kbase * d, cols.begin, cols.size(), d);
    __syncthreads();
    if (!active) continue;
    for (index_t c = 0; c < cols.size(); ++c) {
      if (p.mask.masked(q, cols.begin + c)) continue;
      const T pf = recompute_p(score(sQ + r * ld, sK + c * ld, d, p.scale), L, L_lo);
      const T dp = dot(sdO + r * ld, sV + c * ld, d);
      const T ds = round_to(p.p_in, softmax_grad(pf, dp, D));
      for (index_t x = 0; x < d; ++x) sdQ[r * ld + x] = fmadd(ds, sK[c * ld + x], sdQ[r * ld + x]);
    }
  }
  if (!active) return;
  for (index_t x = 0; x < d; ++x)  // dQ = scale dS K
    a.dQ[(qbase + q) * d + x] = round_to(p.p_in, p.scale * sdQ[r * ld + x]);
}

// dQ = scale * (the sum the atomics formed), in the output precision.
template <class T>
__global__ void finish_dq_kernel(T* dQ, index_t count, T scale, Precision p) {
  const index_t k = index_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (k < count) dQ[k] = round_to(p, scale * dQ[k]);
}

}  // namespace fd::cuda
