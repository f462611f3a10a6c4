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
// Fusion (one kernel computes S = Q K^T, P = softmax(S) and O = P V tile by tile in SRAM):
//   unfused, S and P cross HBM between three kernels: writes S, P = 2 n m e bytes, reads 2 n m e
//   fused, S and P never reach HBM: 0 bytes; both read Q, K, V and write O: (2 n d + 2 m d) e
// FLOPs of the matrix products, 2 d per score entry and product (FlashAttention's benchmarks
// count them so: forward 4 n m d, backward 2.5x that):
//   forward   S = Q K^T, O = P V                              4 d per entry
//   standard backward from the stored P: dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q
//                                                             8 d per entry
//   flash backward recomputes S = Q K^T first (P = exp(S - L))  10 d per entry, 1.25x
//   the standard algorithm computes every entry of S; the flash ones skip masked tiles.
//   exp: once per computed entry in the forward, once more in the flash backward.
// Counts are exact sums over tiles in closed form (no element-by-element simulation), so
// n = 65536 takes microseconds. Causal tiles that are wholly masked are neither loaded nor stored
// by the flash algorithms; the standard algorithm materializes the whole n x m matrices anyway.
#pragma once

#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/tiling.hpp"

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

struct FusionBytes {
  double unfused_writes = 0;  // S and P written to HBM: 2 n m e
  double unfused_reads = 0;   // and read back: 2 n m e
  double fused = 0;           // S and P bytes a fused kernel moves: none
  double qkvo = 0;            // what both move at least: Q, K, V in, O out
};

// What fusing the three steps saves, in bytes of e bytes per element, times heads.
FusionBytes fusion_bytes(index_t n, index_t m, index_t d, index_t bytes_per_element, index_t heads);

struct Flops {
  double standard_fwd = 0, flash_fwd = 0;  // matrix-product FLOPs
  double standard_bwd = 0, flash_bwd = 0;  // flash_bwd includes recomputing S = Q K^T
  double flash_bwd_stored = 0;             // the flash tiles' backward had P been kept
  double exp_standard = 0, exp_flash = 0;  // exps: standard forward; flash forward + backward
};

// The FLOPs of the standard and flash algorithms for one head with this tiling and mask, times
// heads (the flash ones count the entries of computed tiles, masked entries in them included).
Flops count_flops(const Tiling& tiling, const Mask& mask, index_t d, index_t heads);

}  // namespace fd
