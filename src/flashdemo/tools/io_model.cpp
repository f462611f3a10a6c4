// io_model.cpp — the memory formulas and the counted HBM traffic (see io_model.hpp).
#include "flashdemo/tools/io_model.hpp"

#include <cmath>

namespace fd {

MemoryFormula memory_formula(index_t n, index_t d, index_t bytes_per_element, double M, bool causal,
                             index_t heads) {
  const double nn = double(n) * double(n), h = double(heads);
  MemoryFormula f;
  f.standard_bytes = h * 2 * nn * double(bytes_per_element);  // S and P, n x n each
  f.flash_bytes = h * double(n) * 4;                          // one fp32 logsumexp per row
  f.standard_io = h * 4 * nn;                                 // write S, read S, write P, read P
  f.flash_io = h * nn * double(d) * double(d) / M / (causal ? 2 : 1);  // Theta(n^2 d^2 / M)
  return f;
}

TileSizes paper_tiles(double M, index_t d) {
  const index_t Bc = index_t(std::ceil(M / (4.0 * double(d))));  // Bc = ceil(M / 4d)
  return {Bc < d ? Bc : d, Bc};                                  // Br = min(Bc, d)
}

namespace {

// Sum over computed tile pairs (i, j) of rows_i, and the keys of key tiles anyone computes.
struct PairSums {
  double row_pairs = 0;  // sum_i rows_i * J_i
  double keys_any = 0;   // keys in tiles j < max_i J_i
};

PairSums pair_sums(const Tiling& t, const Mask& mask) {
  PairSums s;
  index_t j_max = 0;
  for (index_t i = 0; i < t.Tr(); ++i) {
    const index_t J = computed_key_tiles(t, mask, i);
    s.row_pairs += double(t.rows(i).size()) * double(J);
    j_max = fmax2(j_max, J);
  }
  s.keys_any = double(fmin2(t.m, j_max * t.Bc));
  return s;
}

Traffic standard_forward(double n, double m, double d) {
  // S = Q K^T: read Q, K, write S; P = softmax(S): read S, write P; O = P V: read P, V, write O.
  return {n * d + m * d + n * m + n * m + m * d, n * m + n * m + n * d};
}

Traffic standard_backward(double n, double m, double d) {
  // dV = P^T dO | dP = dO V^T | dS = P (dP - D) | dQ = dS K | dK = dS^T Q
  return {(n * m + n * d) + (n * d + m * d) + 2 * n * m + (n * m + m * d) + (n * m + n * d),
          m * d + n * m + n * m + n * d + m * d};
}

Traffic fa1_forward(const Tiling& t, const Mask& mask, double d) {
  const PairSums s = pair_sums(t, mask);
  Traffic x;
  x.stores = double(t.n) * (d + 2);      // initialize O = 0, l = 0, m = -inf in HBM
  x.loads = 2 * d * s.keys_any;          // K_j, V_j once per key tile
  x.loads += s.row_pairs * (2 * d + 2);  // per tile: Q_i, O_i, l_i, m_i
  x.stores += s.row_pairs * (d + 2);     // per tile: O_i, l_i, m_i written back
  return x;
}

Traffic fa2_forward(const Tiling& t, const Mask& mask, double d) {
  Traffic x;
  for (index_t i = 0; i < t.Tr(); ++i) {
    const double rows = double(t.rows(i).size());
    x.loads += rows * d + 2 * d * double(computed_keys(t, mask, i));  // Q_i once; K_j, V_j
    x.stores += rows * (d + 1);                                       // O_i and L_i once
  }
  return x;
}

Traffic fa1_backward(const Tiling& t, const Mask& mask, double d) {
  const PairSums s = pair_sums(t, mask);
  Traffic x;
  x.stores = double(t.n) * d + 2 * double(t.m) * d;  // initialize dQ, dK, dV = 0 in HBM
  x.loads = 2 * d * s.keys_any;                      // K_j, V_j
  x.loads += s.row_pairs * (4 * d + 2);              // Q_i, O_i, dO_i, dQ_i, l_i, m_i
  x.stores += s.row_pairs * d;                       // dQ_i
  x.stores += 2 * double(t.m) * d;                   // dK_j, dV_j at the end of each j
  return x;
}

Traffic fa2_backward(const Tiling& t, const Mask& mask, double d) {
  const PairSums s = pair_sums(t, mask);
  Traffic x;
  x.loads = 2 * double(t.n) * d;             // D = rowsum(dO * O): read O, dO
  x.stores = double(t.n) + double(t.n) * d;  // write D; initialize dQ = 0
  x.loads += 2 * d * s.keys_any;             // K_j, V_j
  x.loads += s.row_pairs * (3 * d + 2);      // Q_i, dO_i, dQ_i, L_i, D_i
  x.stores += s.row_pairs * d;               // dQ_i
  x.stores += 2 * double(t.m) * d;           // dK_j, dV_j
  return x;
}

Traffic times(Traffic x, double h) {
  return {x.loads * h, x.stores * h};
}

}  // namespace

Ledger count_traffic(const Tiling& t, const Mask& mask, index_t d, index_t heads) {
  const double n = double(t.n), m = double(t.m), dd = double(d), h = double(heads);
  return {times(standard_forward(n, m, dd), h), times(fa1_forward(t, mask, dd), h),
          times(fa2_forward(t, mask, dd), h),   times(standard_backward(n, m, dd), h),
          times(fa1_backward(t, mask, dd), h),  times(fa2_backward(t, mask, dd), h)};
}

FusionBytes fusion_bytes(index_t n, index_t m, index_t d, index_t bytes_per_element,
                         index_t heads) {
  const double e = double(bytes_per_element) * double(heads), nm = double(n) * double(m);
  FusionBytes f;
  f.unfused_writes = 2 * nm * e;                                         // S, then P
  f.unfused_reads = 2 * nm * e;                                          // S by softmax, P by P V
  f.fused = 0;                                                           // both stay in SRAM
  f.qkvo = (2 * double(n) * double(d) + 2 * double(m) * double(d)) * e;  // Q, O; K, V
  return f;
}

Flops count_flops(const Tiling& t, const Mask& mask, index_t d, index_t heads) {
  const double h = double(heads), dd = double(d);
  const double all = double(t.n) * double(t.m) * h;                   // standard: every entry
  const double computed = count_tiles(t, mask).entries_computed * h;  // flash: computed tiles
  Flops f;
  f.standard_fwd = 4 * dd * all;           // S = Q K^T, O = P V
  f.flash_fwd = 4 * dd * computed;         // the same products, tile by tile
  f.standard_bwd = 8 * dd * all;           // dV, dP, dQ, dK from the stored P
  f.flash_bwd_stored = 8 * dd * computed;  // the same tiles, had P been kept
  f.flash_bwd = 10 * dd * computed;        // and S = Q K^T once more, to recompute P
  f.exp_standard = all;                    // P = exp(S - max) / sum
  f.exp_flash = 2 * computed;              // the forward's, and P = exp(S - L) again
  return f;
}

}  // namespace fd
