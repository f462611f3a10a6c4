// fast_attention.hpp — the CPU path written to be fast: the same tiles and numerics as the
// teaching path, with tile products as GEMMs, vectorized exp, threads, and no tracing.
//
// Forward (per head, per query tile i of Br rows, threads over (head, i)):
//   S = (scale Q_i) K_j^T                       GEMM, Br x Bc
//   masked columns of partial causal tiles set to -inf (a contiguous run per row)
//   m_new = max(m, rowmax S),  alpha = exp(m - m_new)  (0 when m = -inf)
//   P = exp(S - m_new)  (vectorized; 0 for a row still at -inf),  l = alpha l + rowsum P
//   O_i = diag(alpha) O_i + P V_j               GEMM
//   O_i /= l,  L = m + log l   (l = 0: O = 0, L = -inf)
// Backward (FlashAttention-2, threads over (head, key tile j); each thread sums its own dQ and
// the per-thread dQ are added in thread order at the end):
//   P = exp(S - L), dV_j += P^T dO_i, dP = dO_i V_j^T, dS = P (dP - D), dK_j += scale dS^T Q_i,
//   dQ_i += scale dS K_j.
// Layout: (b, h, rows, d) row-major; L and D: (b, h, n).
#pragma once

#include "flashdemo/params.hpp"
#include "flashdemo/tiling.hpp"

namespace fd::fast {

struct Shape {
  index_t b = 1, h = 1, n = 1, m = 1, d = 1;
  index_t heads() const { return b * h; }
};

struct Options {
  index_t threads = 1;
  TileSizes tiles{128, 256};
};

template <class T>
void forward(const Shape& s, const AttnParams& p, const Options& o, const T* Q, const T* K,
             const T* V, T* O, T* L);

template <class T>
void backward(const Shape& s, const AttnParams& p, const Options& o, const T* Q, const T* K,
              const T* V, const T* O, const T* L, const T* dO, T* dQ, T* dK, T* dV, T* D);

// The machine's ceiling in the same run: C = A B with A: rows x inner, B: inner x cols, on the
// same threads (rows split between them).
template <class T>
void gemm(index_t rows, index_t inner, index_t cols, const T* A, const T* B, T* C, index_t threads);

}  // namespace fd::fast
