// fast_attention.hpp — the CPU path written to be fast: the same tiles and numerics as the
// teaching path, with tile products through one register-blocked kernel (tile_product.hpp),
// vectorized exp, threads, and no tracing.
//
// Forward (heads in groups big enough to busy every thread; per head K^T and V packed once, then
// threads over the group's (head, query tile i), the last query tiles (under a causal mask, the
// longest) first):
//   S = Q_i K_j^T  then  S = scale S          (the scale rounds once, after the product)
//   masked keys of partial causal tiles: only the visible prefix of each row is used, and
//   neither product computes the keys past what the tile's last row sees
//   m_new = max(m, rowmax S),  alpha = exp(m - m_new)  (0 when m = -inf)
//   P = exp(S - m_new)  (0 for a row still at -inf),  l = alpha l + rowsum P  (l in double)
//   O_i = diag(alpha) O_i + P V_j
//   O = O_i / l,  L = m + log l  (each rounded once; l = 0: O = 0, L = -inf), L_lo = L's
//   rounding error (L + L_lo to twice T's precision, online_softmax.hpp)
// Backward (FlashAttention-2; heads in groups; key tiles cut into bands and query tiles into
// chunks by the shape alone, threads over the (head, band, chunk) items, most tiles first):
//   D = rowsum(dO O) (in T, summed as dP is),  P = exp((S - L) - L_lo),  dV_j += P^T dO_i,
//   dP = dO_i V_j^T,
//   dS = P (dP - D),  dK_j += dS^T Q_i,  dQ_i += dS K_j  (both times scale at the end).
//   An item sums dK_j, dV_j over its chunk (in T) and dQ_i over its band (in double); the
//   partials are then summed in chunk and band order in double and rounded once:
//   dK_j = scale sum_c dK_j^(c),  dV_j = sum_c dV_j^(c),  dQ_i = scale sum_b dQ_i^(b).
//   A (band, chunk) that the mask skips whole contributes nothing: its item does not run and
//   the sums leave it out (the same bits: a sum from +0 is never -0).
//   No sum depends on the thread count or on which thread took an item: every output is the
//   same bits for any --threads.
// Tiles (tiles_for, from the L2 size the machine reports): Br = 128 and Bc the largest of 512,
// 256, 128, 64 keys (the backward: of 128, 64) whose working set of one (i, j) step fits L2:
//   forward  (2 Bc d' + Br Bc + 2 Br d') bytes(T)   K_j^T, V_j, S, Q_i, O_i
//   backward (5 Bc d' + 2 Br Bc + 3 Br d') bytes(T) K_j^T, V_j^T, K_j, dK_j, dV_j, P, dP, Q_i,
//            + Br d' 8 bytes                        dO_i, dQ_i; dQ_i's rows of the band's partial
//                                                   (doubles), read and written every step
// then the forward halves Br (down to 32) while heads x query tiles give fewer than 2 tiles per
// thread (its bits do not depend on Br: every row is computed alone); the backward's tiles come
// from the shape, the cache and the kernels' vector width alone, never the threads (its sums are
// grouped by them). Why these sizes (measured, docs/performance.md's step table): Br = 128
// shares query tiles among threads better than 256; a longer Bc lengthens the products' inner
// loops (O_i += P V_j, dQ_i += dS K_j), 1.01x to 1.09x for 512 against 256 in the forward and
// 1.03x to 1.06x for 128 against 64 in the backward where the step fits L2 but not half of it.
// The rule takes the whole L2 as one thread's (not measured where two hardware threads share it).
// Memory: the packs and the backward's partials are kept by the calling thread for its next call
// (grown on demand, held until the thread ends): a call touches no fresh pages once one as large
// has run.
// Layout: (b, h, rows, d) row-major; L and D: (b, h, n).
#pragma once

#include "flashdemo/host_device/tiling.hpp"
#include "flashdemo/params.hpp"

namespace fd::fast {

struct Shape {
  index_t b = 1, h = 1, n = 1, m = 1, d = 1;
  index_t heads() const { return b * h; }
};

enum class Pass { fwd, bwd };

// The tiles for a pass on this machine (above); threads counts only for the forward.
TileSizes tiles_for(const Shape& s, Pass pass, index_t threads, index_t element_bytes);
// The same for a given L2 size in bytes (0: unknown, taken as 1 MiB).
TileSizes tiles_for(const Shape& s, Pass pass, index_t threads, index_t element_bytes,
                    index_t l2_bytes);

struct Options {
  index_t threads = 1;
  TileSizes tiles{128, 256};
};

// L_lo (n per head) may be null: L's rounding error is then not returned.
template <class T>
void forward(const Shape& s, const AttnParams& p, const Options& o, const T* Q, const T* K,
             const T* V, T* O, T* L, T* L_lo = nullptr);

// L_lo may be null (taken as 0, as for an L that comes from elsewhere).
template <class T>
void backward(const Shape& s, const AttnParams& p, const Options& o, const T* Q, const T* K,
              const T* V, const T* O, const T* L, const T* L_lo, const T* dO, T* dQ, T* dK, T* dV,
              T* D);

// The machine's ceiling in the same run: C = A B with A: rows x inner, B: inner x cols, on the
// same threads and no more (rows split between them, each thread's product single-threaded).
template <class T>
void gemm(index_t rows, index_t inner, index_t cols, const T* A, const T* B, T* C, index_t threads);

}  // namespace fd::fast
