// io_model.hpp — how much memory attention needs, and how many elements it moves between HBM
// and on-chip SRAM (lecture demo 4; FlashAttention paper, section 3.2).
//
// The lecture's formulas, for one head of n queries and n keys, head dim d, e bytes per element,
// an SRAM of M elements:
//   standard keeps S and P:  2 n^2 e bytes          FlashAttention keeps L: 4 n bytes (fp32)
//   standard moves ~4 n^2 elements (writes S, reads S, writes P, reads P)
//   FlashAttention moves Theta(n^2 d^2 / M) elements
// The ledger counts instead every element each algorithm loads and stores, tile by tile, with
// the paper's tile sizes Bc = ceil(M / 4d), Br = min(Bc, d):
//   standard forward   Q,K -> S -> P -> O               (FlashAttention paper, Algorithm 0)
//   FA-1 forward       outer loop over K/V tiles; O_i, l_i, m_i re-read and re-written per tile
//   FA-2 forward       outer loop over Q tiles; Q_i read once, O_i and L_i written once
//   standard backward  dV, dP, dS, dQ, dK from the stored P   (FlashAttention paper, Alg. 3)
//   FA-1 backward      outer loop over K/V tiles; reads Q_i, O_i, dO_i, dQ_i, l_i, m_i per tile
//   FA-2 backward      D precomputed; outer loop over K/V tiles; reads Q_i, dO_i, dQ_i, L_i, D_i
// Counts are exact sums over tiles in closed form (no element-by-element simulation), so
// n = 65536 takes microseconds. Causal tiles that are wholly masked are neither loaded nor stored
// by the flash algorithms; the standard algorithm materializes the whole n x m matrices anyway.
#pragma once

#include "flashdemo/mask.hpp"
#include "flashdemo/tiling.hpp"

namespace fd {

struct MemoryFormula {
  double standard_bytes = 0;  // S and P: 2 n^2 e
  double flash_bytes = 0;     // L: 4 n
  double standard_io = 0;     // 4 n^2 elements
  double flash_io = 0;        // n^2 d^2 / M elements (halved when causal)
};

// The lecture's table for one n; heads multiplies everything (batch x heads).
MemoryFormula memory_formula(index_t n, index_t d, index_t bytes_per_element, double M, bool causal,
                             index_t heads);

// The paper's tile sizes for an SRAM of M elements: Bc = ceil(M / 4d), Br = min(Bc, d).
TileSizes paper_tiles(double M, index_t d);

struct Traffic {
  double loads = 0, stores = 0;  // elements
  double total() const { return loads + stores; }
};

struct Ledger {
  Traffic standard_fwd, fa1_fwd, fa2_fwd;
  Traffic standard_bwd, fa1_bwd, fa2_bwd;
};

// Exact element counts for one head with the given tiling and mask, times heads.
Ledger count_traffic(const Tiling& tiling, const Mask& mask, index_t d, index_t heads);

}  // namespace fd
