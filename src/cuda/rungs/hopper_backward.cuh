// hopper_backward.cuh — the rung `hopper`'s backward: FlashAttention-2's backward on Hopper's own
// instructions (hopper_ptx.cuh), bf16/fp16 inputs, fp32 accumulation, sm_90a. Two kernels:
//
//   hopper_bwd_prep_kernel   per query row q (d / 8 threads each), rows padded to whole query
//                            tiles: D_q = rowsum(dO_q O_q) in fp32,  L2_q = L_q log2(e)
//                            stored as pairs (L2_q, D_q); L2 = +inf where the row saw no key or
//                            is padding (its P is then 0: zero gradients, no NaN); and dQ_q = 0,
//                            for the reduces that add into it (as FlashAttention-3's
//                            preprocess: no memset of its own)
//   hopper_bwd_kernel        block (key tile j of Bc = 128 keys, head), three warpgroups:
//     warpgroup 0, the producer (24 registers): one thread loads K_j and V_j once by TMA (issued
//       with the barriers' initialization, before the block's first __syncthreads), then
//       for each query tile i that sees key tile j, Q_i, dO_i (TMA) and (L2, D)_i (a bulk copy)
//       into stage i % 2, once the consumers have released that stage
//     warpgroups 1 and 2, the consumers (240 registers): warpgroup c owns keys 64 c .. 64 c + 63
//       of the tile, dK_j and dV_j of those keys in registers, and for each i:
//         S^T  = K_j Q_i^T                wgmma m64n{Br}k16, both from shared memory
//         dP^T = V_j dO_i^T               the same
//         P^T  = exp2(S^T c - L2_q)       c = scale log2(e); 0 where masked or past the keys
//         dS^T = P^T (dP^T - D_q)
//         dV_j += P^T dO_i                wgmma m64n{d}k16, P^T from registers (rounded to E),
//         dK_j += dS^T Q_i                dO_i and Q_i read transposed from shared memory
//       and dQ (atomic, the default): dS^T to shared memory, and each warpgroup computes its
//       64 x 64 blocks of dS K_j (wgmma m64n64k16, both operands read transposed), cut by DqCut
//       after the two warpgroups meet: at d = 128 columns 64 c.., at d = 64 (Br = 128) rows
//       64 c.., over all 128 keys (timed too: at d = 64 with Br = 64, every column over the
//       warpgroup's own 64 keys, or column halves 32 c.. over all keys); added into dQ (zeroed
//       by the prep kernel), times scale, in one of two ways (DqWay): by each thread's fp32
//       atomics, or staged in shared memory and added by the copy engine's bulk reduce
//       (DqStaging: at d = 64 the warpgroup's block in two boxes, after it meets; at d = 128
//       each warp's 16 rows alone)
//     then dK = scale dK and dV, from registers to global memory (fp32).
//   With --deterministic the kernel skips dQ, and mma's dQ kernel (mma_backward.cuh) computes
//   it per query tile: bit-identical runs.
//
// Tiles (HopperBwdTiles): Bc = 128 keys (two warpgroups of 64), Br = 128 queries at d = 64, 64 at
// d = 128 (64 at d = 64 too when timed). Shared memory (1024-byte aligned), 2 bytes an element:
//                                                    d = 64, Br = 128   d = 128, Br = 64
//   K_j, V_j          2 x 128 d                         32 KiB             64 KiB
//   Q_i, dO_i         2 stages x 2 x Br d                64 KiB             64 KiB
//   dS^T              2 buffers x 128 x Br               64 KiB             32 KiB
//   dQ staging        2 warpgroups x blocks x 64 x 64 x 4 bytes  32 KiB     32 KiB
//                     (twice, kBwdDqSets2: d = 128 only)                        64 KiB
//   (L2, D)_i         2 stages x Br x 8 bytes, and 5 mbarriers
// Registers of a consumer thread (fp32 accumulators, HopperBwdFits): dK, dV d / 2 each, S^T and
// dP^T Br / 2 each; then P^T and dS^T as A fragments (Br / 4 each) and dQ's block (32): 192 at
// both d (128 at d = 64 with Br = 64), of setmaxnreg's 240.
#pragma once

#include <cstdint>

#include "cuda/host/head_dims.hpp"
#include "cuda/primitives/fragment.cuh"
#include "cuda/primitives/hopper_ptx.cuh"
#include "cuda/rungs/hopper.cuh"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/tile_math.hpp"
#include "flashdemo/host_device/tiling.hpp"

namespace fd::cuda {

inline constexpr int kHopperBwdBc = 128;
// The backward reads K_j and V_j through the forward's tensor maps (hopper_maps), whose boxes are
// the forward's key tiles: the same 128 rows at every d the backward runs.
struct HopperBwdSameKeyTiles {
  template <int kD>
  static constexpr bool at() {
    return hopper_bc(kD) == kHopperBwdBc;
  }
};
static_assert(HopperBackwardHeadDims::all<HopperBwdSameKeyTiles>(),
              "the backward's key tiles are the forward's boxes of K and V");
// The rows of dQ's block one warp stages and sends, DqStaging::groups (its fragments' rows).
inline constexpr int kHopperBwdDqRows = 16;

// Which of the warpgroup's own overlaps are on (a bit each; hopper_bwd_overlap is the
// rung's choice at each d, both measured on and off in docs/gpu-ladder.md):
//   kBwdOverlapP   S^T and dP^T committed as two groups: P^T = exp2(..) computed while the
//                  tensor cores still compute dP^T
//   kBwdOverlapDq  dQ's block issued before dK += dS^T Q_i: dQ staged and sent while dK runs
//   kBwdOverlapNext  S^T and dP^T of tile i + 1 issued behind tile i's dV, dK and dQ blocks, so
//                  that the tensor cores have the next products queued while tile i's dQ is
//                  staged and sent (a software pipeline across tiles; dQ cut by keys only, where
//                  the registers hold both tiles' accumulators: 192 of 240 at d = 64)
//   kBwdStages3    Q_i, dO_i and (L2, D)_i in three stages, not two: the producer one tile
//                  further ahead (d = 128 only: at d = 64, Br = 128, a third does not fit)
//   kBwdDqWriter   dQ's bulk reduces issued by a warp of the producer warpgroup (write_dq_step),
//                  as FlashAttention-3 gives dQ a warp of its own: a consumer warpgroup stages its
//                  block, fences and arrives (bar.arrive, no wait), where it met itself twice a
//                  step around the staging (swizzled) and its issuer waited for the last reduce's
//                  read; it waits only when its staging is still being read (one dQ block a
//                  warpgroup a step: the rung's cut at each d)
//   kBwdRotate     key tile j walks its query tiles from i0 + j mod (Tr - i0) on, wrapping round,
//                  not from i0: without a mask the blocks of one head, which run at once, then add
//                  into different rows of dQ at each step, where in order they all reduce into the
//                  same rows (128 blocks a head at n = 16384, 32 at n = 4096; causal, their i0
//                  differ already); Q_i, dO_i and dQ_i of every tile are still read and added once
//                  a block (walk_tile). A step: 0.98x to 0.99x at n = 16384 (H100)
//   kBwdDqSets2    (with the writer warp) dQ's staging twice: step u's blocks in set u % 2, so
//                  that a warpgroup stages once the reduces of step u - 2 have read their set, not
//                  those of step u - 1 (issued a step ago, when the writer saw the blocks staged).
//                  32 KiB more: at d = 128 (Br = 64) the block then uses 226 of its 227 KiB; at
//                  d = 64 (Br = 128) it is 48 bytes too many
// and two bits that move an operand, not the order:
//   kBwdKRegisters, kBwdVRegisters  the warpgroup's 64 rows of K_j (of V_j) loaded once into
//                  registers as A fragments (ldmatrix), so that S^T = K_j Q_i^T (dP^T = V_j dO_i^T)
//                  reads only Q_i (dO_i) from shared memory: half the shared-memory bytes of that
//                  product (d / 4 registers each; Br = 64)
inline constexpr int kBwdOverlapP = 1, kBwdOverlapDq = 2, kBwdOverlapNext = 4;
inline constexpr int kBwdKRegisters = 8, kBwdVRegisters = 16, kBwdStages3 = 32;
inline constexpr int kBwdDqWriter = 64, kBwdRotate = 128, kBwdDqSets2 = 256;
// The writer's named barriers: full + c, warpgroup c's block staged and fenced; empty + c, its
// staging read by the last reduce. Each counts the warpgroup's 128 threads and the writer's 32.
inline constexpr int kBwdDqFull = 5, kBwdDqEmpty = 7, kBwdDqThreads = 160;

// How dQ_i's share of key tile j, dS K_j (Br x d), is cut between the two consumer warpgroups
// into 64 x 64 blocks (one wgmma accumulator each):
//   columns  warpgroup c: columns (d / 2) c.., every row, over all 128 keys: blocks of 64 x 64 at
//            d = 128, of 64 x 32 at d = 64 (wgmma n32; half the reduce traffic of keys there)
//   rows     warpgroup c: rows 64 c.., every column, over all 128 keys (Br = 128)
//   keys     warpgroup c: every block of rows and columns, over its own 64 keys (no meeting;
//            both add into the same dQ rows: twice the reduce traffic)
// columns and rows need both warpgroups' dS^T in shared memory first (a named barrier).
enum class DqCut { columns, rows, keys };

// The rung's tiles at each d, chosen by measurement (docs/gpu-ladder.md): Br query rows a step,
// 128 at d = 64 (dQ then cut by rows; 1.11x to 1.28x Br = 64 since the descriptors are built
// once, 0.85x to 0.94x before, when its consumers spilled 12 to 20 bytes) and 64 at d = 128 (no
// room for 128), the cut, and the overlaps (both at each d; at d = 64 with Br = 64, where dQ is
// cut by keys, issuing dQ first lost 3 %, the pipeline across tiles, kBwdOverlapNext, 7 to 10 %).
// kStages: Q_i, dO_i stages in flight (a third, where d = 64
// left room, measured no faster).
template <int kD>
struct HopperBwdTiles {
  static constexpr int Br = kD == 64 ? 128 : 64, Bc = kHopperBwdBc;
  static constexpr int kStages = 2;
};
constexpr DqCut hopper_bwd_cut(int d, int Br) {
  return Br == 128 ? DqCut::rows : d == 128 ? DqCut::columns : DqCut::keys;
}
// Whether the pipeline across tiles fits: dQ cut by keys into one 64 x 64 block a warpgroup.
constexpr bool hopper_bwd_pipelines(int d, int Br) {
  return hopper_bwd_cut(d, Br) == DqCut::keys && d == 64 && Br == 64;
}
constexpr int hopper_bwd_overlap(int d, int Br) {
  return d == 128 || Br == 128 ? kBwdOverlapP | kBwdOverlapDq : kBwdOverlapP;
}
// Whether the rung's own kernel (every step at its default) has dQ's reduces issued by the writer
// warp: at both d, each at its Br (ladder --pass bwd --steps reads its effect as rung_choice
// against bwd_p_dq, the kernel without it). At d = 64 (Br = 128) 1.03x on the H200; at d = 128
// (Br = 64) on an H100, alternating with the kernel without it, 0.98x at n = 1024 not causal and
// 1.00x to 1.03x elsewhere (n = 1024 causal, 4096, 16384; docs/gpu-ladder.md). Not beside the
// persistent grid or the steps that change the staging, the cut or Br (hopper.cu launches it with
// every other setting at its default, or beside the rotated walk or two sets of dQ's staging).
constexpr bool hopper_bwd_writes_dq(int d, int Br) {
  return (d == 64 && Br == 128) || (d == 128 && Br == 64);
}
// The rung's own kernel's bits at (d, Br): its overlaps, and the writer warp where it has it.
constexpr int hopper_bwd_choice(int d, int Br) {
  return hopper_bwd_overlap(d, Br) | (hopper_bwd_writes_dq(d, Br) ? kBwdDqWriter : 0);
}

// How the kernel gives dQ_i its share dS K_j of key tile j: not at all (mma's dQ kernel computes
// dQ in its own pass: deterministic), by each thread's fp32 atomics from registers, or through
// shared memory by the copy engine's bulk reduce-add (cp.reduce.async.bulk.tensor).
enum class DqWay { separate, atomics, bulk_add };

// How dQ's 64 x 64 block is staged in shared memory for the bulk reduce (each timed, side by side,
// docs/gpu-ladder.md; the launch makes the tensor map to match, hopper_bwd_dq_map_rank):
//   swizzled  the warpgroup's block as two 128-byte swizzled boxes of 64 rows x 32 columns (a 3d
//             map), one reduce a box, issued by one thread once the warpgroup has met (twice: once
//             to know the last reduce has read the staging, once to know every store is in). A
//             half-warp's rows g and g ^ 1 fall on the same banks: every store takes twice.
//   spread    the same boxes, with the lanes of odd rows g storing their column blocks in the
//             order nb ^ 2 (a select per value), so that a half-warp's four rows land on four
//             different 32-byte bank groups: no bank conflict. And one meeting a step, not two:
//             the issuer waits for the last reduce's read before dS^T's barrier, which then
//             tells the warpgroup the staging is free.
//   groups    each warp's 16 rows as 8 groups of 8 columns x 16 rows (dq_tensor_map's 4d box), no
//             bank conflict, one reduce a warp after the warp's own barrier: no meeting.
// groups at d = 128 (1.00x to 1.08x swizzled there); swizzled at d = 64, where groups measured
// 0.79x to 0.93x at Br = 64 (our reading, not measured: four times the reduces' box rows, of 32
// bytes each, in a step half as long, so the copy engine's share of the step doubles). spread
// measured 0.98x to 0.99x swizzled at d = 64, Br = 64, 0.96x to 1.00x at Br = 128 (where it spills
// 8 bytes), 0.94x to 1.04x groups at d = 128; only beside the cut by column halves at d = 64, where
// both warpgroups meet, did it gain (1.04x to 1.08x): a timed step, not the rung's choice.
enum class DqStaging { swizzled, spread, groups };
constexpr DqStaging hopper_bwd_dq_staging(int d) {
  return d == 128 ? DqStaging::groups : DqStaging::swizzled;
}
// The rank of dQ's tensor map for a staging: 4 (groups' view of dQ) or 3 (64 x 32 boxes).
constexpr int hopper_bwd_dq_map_rank(DqStaging staging) {
  return staging == DqStaging::groups ? 4 : 3;
}

template <class E>
struct HopperBwdArgs {
  const float2* LD;  // (L2, D) per padded row: heads x Tr Br
  float *dQ, *dK, *dV;
  index_t n, n_keys, heads;
  Tiling tiling;  // Br x 128
  Mask mask;
  float scale, scale2;  // scale, and scale * log2(e)
  const int* schedule;  // the persistent grid's (block_schedule's layout), else null
};

// Byte offsets in the block's shared memory, from its first 1024-aligned byte. dQ's staging: a
// 64 x 64 fp32 block per warpgroup per block of dS K_j it adds (kDqBlocks, by the cut), in
// kDqSets sets (kBwdDqSets2: two, step u's in set u % 2).
template <int kD, int kBr = HopperBwdTiles<kD>::Br, DqCut kCut = hopper_bwd_cut(kD, kBr),
          int kStageCount = HopperBwdTiles<kD>::kStages, int kDqSetCount = 1>
struct HopperBwdSmem {
  static constexpr int Br = kBr, Bc = kHopperBwdBc;
  static constexpr int kDqBlocks = kCut == DqCut::columns ? Br / 64
                                   : kCut == DqCut::rows  ? kD / 64
                                                          : (Br / 64) * (kD / 64);
  static constexpr int kStages = kStageCount, kDqSets = kDqSetCount;
  static constexpr int kK = 0, kV = Bc * kD * 2, kQ = 2 * kV;
  static constexpr int kdO = kQ + kStages * Br * kD * 2;
  static constexpr int kdST = kdO + kStages * Br * kD * 2;  // 2 buffers of Bc x Br
  static constexpr int kdQ = kdST + 2 * Bc * Br * 2;  // sets x 2 warpgroups x kDqBlocks x 64 x 64
  static constexpr int kDqSet = 2 * kDqBlocks * 64 * 64;  // fp32 values a set
  static constexpr int kLD = kdQ + kDqSets * kDqSet * 4;
  // Where warpgroup c's block blk of set `set` starts, in fp32 values from the staging's first.
  static constexpr int dq_block(int set, int c, int blk) {
    return set * kDqSet + (c * kDqBlocks + blk) * 64 * 64;
  }
  static constexpr int kBarriers = kLD + kStages * Br * 8;
  // full_kv, full and empty per stage, empty_kv (the persistent grid's)
  static constexpr int kBytes = kBarriers + 8 * (2 + 2 * kStages) + 1024;  // + alignment
};
// The layout of the kernel with overlap bits kOverlap: three stages (kBwdStages3), two sets of
// dQ's staging (kBwdDqSets2).
template <int kD, int kBr, DqCut kCut, int kOverlap>
using HopperBwdSmemFor = HopperBwdSmem<kD, kBr, kCut, (kOverlap & kBwdStages3) ? 3 : 2,
                                       (kOverlap & kBwdDqSets2) ? 2 : 1>;

// The fp32 values a consumer thread holds at once: dK, dV, and S^T with dP^T; then dK, dV, P^T
// and dS^T as A fragments, and dQ's block (64 x 64, or 64 x d at d = 64).
// With the pipeline across tiles (kBwdOverlapNext), S^T and dP^T of the next tile are held
// beside P^T, dS^T and dQ's block.
// K_j's or V_j's rows held as A fragments (kBwdKRegisters, kBwdVRegisters) add d / 4 each.
constexpr int hopper_bwd_consumer_registers(int d, int Br, bool next = false, int held = 0) {
  const int first = d / 2 + d / 2 + Br / 2 + Br / 2;
  const int then = d + Br / 4 + Br / 4 + 32 + (next ? Br : 0);
  return (first > then ? first : then) + held * (d / 4);
}

// Whether the backward holds head dim D with Br query rows: 64-column halves, wgmma n of d and
// of Br (n64, n128), the shared memory and the consumer registers above.
struct HopperBwdFits {
  template <int kD, int kBr = HopperBwdTiles<kD>::Br>
  static constexpr bool at() {
    return (kD == 64 || kD == 128) && (kBr == 64 || kBr == 128) &&
           HopperBwdSmemFor<kD, kBr, hopper_bwd_cut(kD, kBr), hopper_bwd_choice(kD, kBr)>::kBytes <=
               int(kSmemOptIn) &&
           hopper_bwd_consumer_registers(kD, kBr) <= kHopperConsumerRegisters;
  }
};
static_assert(HopperBackwardHeadDims::all<HopperBwdFits>(),
              "a head dim of hopper's backward (head_dims.hpp) that its tiles do not hold");
static_assert(kernel_tiles(Impl::hopper, 64, Pass::bwd).Br == HopperBwdTiles<64>::Br &&
                  kernel_tiles(Impl::hopper, 128, Pass::bwd).Br == HopperBwdTiles<128>::Br &&
                  kernel_tiles(Impl::hopper, 64, Pass::bwd).Bc == kHopperBwdBc,
              "the tiles the host says hopper's backward computes (cuda_api.hpp)");

// (L2, D) of rows 0 .. rows_padded - 1 of each head, and dQ's rows zeroed for the reduces that
// add into them (dQ null: not zeroed). kD / 8 threads a row, each with 8 elements (one 16-byte
// load of O and one of dO, two 16-byte stores of zeros); kPrepThreads a block (32 rows at
// d = 64, 16 at d = 128). D in fp32 from O as stored: each thread's 8 products summed in order,
// then the row's threads in a butterfly.
constexpr int kPrepThreads = 256;

template <int kD>
constexpr unsigned hopper_bwd_prep_blocks(index_t rows) {
  return unsigned((rows + kPrepThreads / (kD / 8) - 1) / (kPrepThreads / (kD / 8)));
}

template <class E, int kD>
__global__ void __launch_bounds__(kPrepThreads)
    hopper_bwd_prep_kernel(const E* O, const E* dO, const float* L, float* Dsum, float2* LD,
                           float* dQ, index_t heads, index_t n, index_t rows_padded) {
  constexpr int kLanes = kD / 8;  // a row's threads: 8 at d = 64, 16 at d = 128
  static_assert(kD % 8 == 0 && 32 % kLanes == 0, "a row's threads divide a warp");
  const index_t r = index_t(blockIdx.x) * (kPrepThreads / kLanes) + threadIdx.x / kLanes;
  const int lane = int(threadIdx.x) % kLanes;
  const bool real = r < heads * rows_padded;  // (every thread reaches the shuffles below)
  const index_t head = real ? r / rows_padded : 0, q = real ? r % rows_padded : n;
  float sum = 0.0f;
  if (q < n) {
    const index_t at = (head * n + q) * kD + lane * 8;
    const uint4 o = *reinterpret_cast<const uint4*>(O + at);
    const uint4 g = *reinterpret_cast<const uint4*>(dO + at);
    const E* oe = reinterpret_cast<const E*>(&o);
    const E* ge = reinterpret_cast<const E*>(&g);
#pragma unroll
    for (int k = 0; k < 8; ++k) sum += float(oe[k]) * float(ge[k]);
    if (dQ) {
      float4* z = reinterpret_cast<float4*>(dQ + at);
      z[0] = z[1] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
  }
#pragma unroll
  for (int k = kLanes / 2; k > 0; k /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, k);
  if (!real || lane != 0) return;
  constexpr float kLog2e = 1.4426950408889634f;
  const float l = q < n ? L[head * n + q] : neg_inf<float>();
  LD[r] = make_float2(is_neg_inf(l) ? __int_as_float(0x7f800000) : l * kLog2e, sum);
  if (q < n) Dsum[head * n + q] = sum;
}

// A tile's descriptor, built once (hopper_ptx::k_major, mn_major).
template <class E>
using Operand = hopper_ptx::Operand<E>;

// X^T Y for warpgroup c's 64 rows of X (K_j or V_j) against the Br rows of Y (Q_i or dO_i), both
// K-major in 64-column halves: d / 16 wgmma.
template <class E, int kD, int Br>
__device__ inline void issue_rows_by_rows(float (&acc)[Br / 8][4], Operand<E> X, Operand<E> Y,
                                          int c) {
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk)
    hopper_ptx::wgmma_ss<E, Br>(acc,
                                X.at((kk / 4) * kHopperBwdBc * 64 + c * 64 * 64 + (kk % 4) * 16),
                                Y.at((kk / 4) * Br * 64 + (kk % 4) * 16), kk > 0);
}

// The warpgroup's 64 rows of X (K_j or V_j: keys 64 c + 16 w + g (+ 8), columns 16 kk + 2 t (+ 1)
// (+ 8)) as the A fragments of d / 16 k steps, by ldmatrix.x4 from the swizzled tile: lane 8 q + r
// gives row 16 w + r + 8 (q & 1), 8-column chunk 2 kk + q / 2, so that matrix q lands in register
// q as the fragment wants it (a0: rows g, k 0..7; a1: rows g + 8; a2, a3: k 8..15).
template <class E, int kD>
__device__ inline void load_row_fragments(std::uint32_t (&f)[kD / 16][4], const E* sX, int c) {
  const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4, q = lane / 8, r = lane % 8;
  const int row = c * 64 + 16 * w + r + 8 * (q & 1);
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk) {
    const int col = 16 * kk + 8 * (q >> 1), half = col / 64, chunk = (col % 64) / 8;
    ptx::ldmatrix_x4(
        f[kk], ptx::smem_address(sX + half * kHopperBwdBc * 64 + row * 64 + ((chunk ^ r) * 8)));
  }
}

// X^T Y as issue_rows_by_rows computes it, X's rows from registers (load_row_fragments): d / 16
// wgmma m64n64k16, only Y (Br = 64 rows, K-major) read from shared memory.
template <class E, int kD>
__device__ inline void issue_frags_by_rows(float (&acc)[64 / 8][4],
                                           const std::uint32_t (&f)[kD / 16][4], Operand<E> Y) {
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk)
    hopper_ptx::wgmma_rs_k_n64<E>(acc, f[kk], Y.at((kk / 4) * 64 * 64 + (kk % 4) * 16), kk > 0);
}

// acc (64 keys x d) += A Y with A (64 x Br) in registers and Y (Br x d, Q_i or dO_i; mn_major
// with Br rows) read transposed: Br / 16 wgmma.
template <class E, int kD, int Br>
__device__ inline void issue_frag_by_rows(float (&acc)[kD / 8][4],
                                          const std::uint32_t (&a)[Br / 16][4], Operand<E> Y) {
#pragma unroll
  for (int kt = 0; kt < Br / 16; ++kt) hopper_ptx::wgmma_rs<E, kD>(acc, a[kt], Y.at(kt * 16 * 64));
}

// The warpgroup's dS^T A fragments (keys 64 c + 16 w + g (+ 8), queries 16 kt + 2 t (+ 1) (+ 8))
// into sdST: rows are the Bc keys, each Br queries as 64-column halves of 128-byte swizzled rows.
template <int Br>
__device__ inline void store_dst(std::uint32_t* sdST, const std::uint32_t (&a)[Br / 16][4],
                                 int key0) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int kt = 0; kt < Br / 16; ++kt)
#pragma unroll
    for (int x = 0; x < 4; ++x) {  // x: key g or g + 8 (bit 0), query chunk 2 kt or 2 kt + 1
      const int key = key0 + g + 8 * (x & 1), q = 16 * kt + 8 * (x >> 1) + 2 * t;
      const int half = q / 64, chunk = (q % 64) / 8;
      sdST[(half * kHopperBwdBc * 64 + key * 64 + ((chunk ^ (key % 8)) * 8) + q % 8) / 2] =
          a[kt][x];
    }
}

// dQ's 64 x kW block (query rows r0.., columns c0..; kW = 64, or 32 for the column halves at
// d = 64) of dS K_j over keys key0 .. key0 + kKeys - 1 of the tile: dS read transposed out of sdST
// (its 64-query half r0 / 64), K_j read transposed (keys are the k index): kKeys / 16 wgmma. Both
// operands are MN-major: the stride, 1024 bytes, steps from one group of 8 keys (8 rows of 128
// bytes) to the next; the leading offset passed, Bc x 128 bytes (from one 64-column half of the
// tile to the next), is never read, both operands spanning 64 columns at most (mn_major with Bc
// rows). Columns c0 % 64 = 32 start half-way into K_j's swizzled rows.
template <class E, int kKeys, int kW = 64>
__device__ inline void issue_dq_block(float (&acc)[kW / 8][4], Operand<E> dST, Operand<E> K,
                                      int key0, int r0, int c0) {
#pragma unroll
  for (int kt = 0; kt < kKeys / 16; ++kt)
    hopper_ptx::wgmma_ss<E, kW, true>(
        acc, dST.at((r0 / 64) * kHopperBwdBc * 64 + (key0 + kt * 16) * 64),
        K.at((c0 / 64) * kHopperBwdBc * 64 + (key0 + kt * 16) * 64 + c0 % 64), kt > 0);
}

// The lane's part of a 64-row fragment block (rows row0 + 16 w + g (+ 8), columns col0 + 8 nb +
// 2 t (+ 1)) of X (row length kD), times scale: stored, or added by atomics.
template <int kD, int N, bool kAdd>
__device__ inline void write_block(float* X, const float (&acc)[N / 8][4], index_t row0,
                                   index_t rows, int col0, float scale) {
  const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const index_t row = row0 + 16 * w + g + 8 * r;
    if (row >= rows) continue;
#pragma unroll
    for (int nb = 0; nb < N / 8; ++nb) {
      float* to = X + row * kD + col0 + nb * 8 + 2 * t;
      const float2 v = make_float2(acc[nb][2 * r] * scale, acc[nb][2 * r + 1] * scale);
      if constexpr (kAdd)
        atomicAdd(reinterpret_cast<float2*>(to), v);
      else
        *reinterpret_cast<float2*>(to) = v;
    }
  }
}

// The lane's part of dQ's 64 x kW block, times scale, into the warpgroup's staging (swizzled):
// kW / 32 halves of 32 fp32 columns, 128-byte rows swizzled as the 3d map's boxes are: row R,
// 16-byte chunk k at chunk k ^ (R % 8). With kSpread, at step nb a lane of odd g stores column
// block nb ^ 2 (its pair of chunks moved by 2 within the half), so that the 16 lanes of a
// half-warp, rows g .. g + 3, fill the pairs m, m ^ 2, m ^ 1, m ^ 3 of the row's four: 128 distinct
// bytes.
template <bool kSpread, int kW>
__device__ inline void stage_dq_swizzled(float* sdQ, const float (&acc)[kW / 8][4], float scale) {
  const int lane = threadIdx.x % 32, w = (threadIdx.x / 32) % 4, g = lane / 4, t = lane % 4;
  const bool odd = kSpread && (g & 1);
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = 16 * w + g + 8 * r;
#pragma unroll
    for (int nb = 0; nb < kW / 8; ++nb) {
      const int b = odd ? nb ^ 2 : nb;  // the block stored; acc[] indexed by constants only
      const int col = b * 8 + 2 * t, chunk = (col % 32) / 4;
      float* to = sdQ + (col / 32) * 64 * 32 + row * 32 + ((chunk ^ (row % 8)) * 4) + col % 4;
      const float x = odd ? acc[nb ^ 2][2 * r] : acc[nb][2 * r];
      const float y = odd ? acc[nb ^ 2][2 * r + 1] : acc[nb][2 * r + 1];
      *reinterpret_cast<float2*>(to) = make_float2(x * scale, y * scale);
    }
  }
}

// The lane's part, times scale, into its warp's staging box (groups: rows 16 w .. 16 w + 15 of
// the block): 8 groups of 8 columns, each 16 rows of 32 bytes, so that the warp's 8 rows g of one
// group and half fill 256 contiguous bytes (two wavefronts, no bank conflict).
__device__ inline void stage_dq_groups(float* sdQ, const float (&acc)[64 / 8][4], float scale) {
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int nb = 0; nb < 8; ++nb)
      *reinterpret_cast<float2*>(sdQ + nb * kHopperBwdDqRows * 8 + (g + 8 * r) * 8 + 2 * t) =
          make_float2(acc[nb][2 * r] * scale, acc[nb][2 * r + 1] * scale);
}

// P^T = exp2(S^T c - L2_q) in place over the warpgroup's S^T fragment (keys key (+ 8), queries
// q0 + 8 nb + 2 t (+ 1)). On an edge tile (kEdge: one the diagonal crosses, or the last key
// tile), 0 where the key is not among those query q sees: k >= min(visible_keys(q), n_keys).
// The other tiles are compiled without a test: the kernel branches on the tile, so the mask's
// compares (64-bit, about 250 instructions a step at Br = 64) are not predicated into every one.
template <int Br, bool kEdge, class Args>
__device__ inline void probabilities_t(float (&st)[Br / 8][4], const float2* LDi, const Args& a,
                                       index_t key, index_t q0) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int nb = 0; nb < Br / 8; ++nb) {
    const float4 ld = *reinterpret_cast<const float4*>(LDi + nb * 8 + 2 * t);  // two rows' pairs
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int col = nb * 8 + 2 * t + (e & 1);
      float p = ptx::exp2_approx(fmaf(st[nb][e], a.scale2, -((e & 1) ? ld.z : ld.x)));
      if constexpr (kEdge) {
        const index_t seen = a.mask.visible_keys(q0 + col);  // keys 0 .. seen - 1
        if (key + 8 * (e >> 1) >= (seen < a.n_keys ? seen : a.n_keys)) p = 0.0f;
      }
      st[nb][e] = p;
    }
  }
}

// dS^T = P^T (dP^T - D_q) in place over the warpgroup's dP^T fragment.
template <int Br>
__device__ inline void score_gradients_t(float (&dpt)[Br / 8][4], const float (&pt)[Br / 8][4],
                                         const float2* LDi) {
  const int t = threadIdx.x % 4;
#pragma unroll
  for (int nb = 0; nb < Br / 8; ++nb) {
    const float4 ld = *reinterpret_cast<const float4*>(LDi + nb * 8 + 2 * t);
#pragma unroll
    for (int e = 0; e < 4; ++e)
      dpt[nb][e] = softmax_grad(pt[nb][e], dpt[nb][e], (e & 1) ? ld.w : ld.y);
  }
}

// One step u of dQ's writer warp (kBwdDqWriter): both warpgroups' blocks of dQ_i's share of key
// tile j (query rows q0.., kDqBlocks = 1), in the consumers' order, staged in set u % kSets
// (L::kDqSets, of the block's layout L). Once the reduces of step u - kSets have read that set
// (wait_group.read: all but the 2 (kSets - 1) latest groups, each step's two issued after the
// blocks were staged), each warpgroup may stage step u (empty + c): at every step but the first, so
// that a warpgroup's arrival on full + c is never its second before the writer has seen its first.
// Then, warpgroup by warpgroup, once its block is staged (full + c), lane 0 adds it into dQ by the
// copy engine: the 64 x kW block as kW / 32 swizzled boxes of 64 x 32, or (groups) four warps'
// boxes of 16 rows x 64.
template <int kD, DqCut kCut, DqStaging kStaging, class L>
__device__ inline void write_dq_step(const CUtensorMap* tmdQ, float* sdQ, int u, int q0, int head) {
  constexpr int kW = kCut == DqCut::columns ? kD / 2 : 64;  // the block's columns
  constexpr int kSets = L::kDqSets;
  const bool lane0 = threadIdx.x % 32 == 0;
  if (u > 0) {
    if (lane0 && u >= kSets) hopper_ptx::bulk_wait_read<2 * (kSets - 1)>();
    __syncwarp();
    for (int c = 0; c < 2; ++c) hopper_ptx::named_barrier_arrive(kBwdDqEmpty + c, kBwdDqThreads);
  }
  for (int c = 0; c < 2; ++c) {
    hopper_ptx::named_barrier_sync(kBwdDqFull + c, kBwdDqThreads);
    if (!lane0) continue;
    const int r0 = kCut == DqCut::rows ? 64 * c : 0, c0 = kCut == DqCut::columns ? kW * c : 0;
    float* block = sdQ + L::dq_block(u % kSets, c, 0);
    if constexpr (kStaging == DqStaging::groups) {
      for (int w = 0; w < 4; ++w)
        hopper_ptx::tma_reduce_add_4d(tmdQ, 0, q0 + r0 + kHopperBwdDqRows * w, c0 / 8, head,
                                      block + w * kHopperBwdDqRows * 64);
    } else {
      for (int h = 0; h < kW / 32; ++h)
        hopper_ptx::tma_reduce_add_3d(tmdQ, c0 + 32 * h, q0 + r0, head, block + h * 64 * 32);
    }
    hopper_ptx::bulk_commit();
  }
}

struct BwdItem {
  int j, head;
};

// The query tile of step t (0 <= t < count = Tr - i0) of key tile j's walk: i0 + t, or rotated
// (kBwdRotate) i0 + (t + j) mod count, every tile once either way.
template <bool kRotate>
__device__ __forceinline__ int walk_tile(int t, int i0, int count, int j) {
  return kRotate ? i0 + (t + j) % count : i0 + t;
}

template <class E, int kD, DqWay kDq, int kBr = HopperBwdTiles<kD>::Br,
          DqCut kCut = hopper_bwd_cut(kD, kBr), int kOverlap = hopper_bwd_overlap(kD, kBr),
          DqStaging kStaging = hopper_bwd_dq_staging(kD), bool kPersistent = false>
__global__ void __launch_bounds__(kHopperThreads, 1)
    hopper_bwd_kernel(const __grid_constant__ CUtensorMap tmQ,
                      const __grid_constant__ CUtensorMap tmK,
                      const __grid_constant__ CUtensorMap tmV,
                      const __grid_constant__ CUtensorMap tmdO,
                      const __grid_constant__ CUtensorMap tmdQ, const HopperBwdArgs<E> a) {
  constexpr bool kAtomicDq = kDq != DqWay::separate;
  constexpr bool kOverlapP = kOverlap & kBwdOverlapP,
                 kDqFirst = kAtomicDq && (kOverlap & kBwdOverlapDq),
                 kNext = kOverlap & kBwdOverlapNext;
  constexpr bool kKRegs = kOverlap & kBwdKRegisters, kVRegs = kOverlap & kBwdVRegisters;
  constexpr int kScoreGroups = kOverlapP ? 2 : 1;  // commit groups of S^T and dP^T
  constexpr bool kByWarp = kStaging == DqStaging::groups, kSpread = kStaging == DqStaging::spread;
  constexpr bool kWriter = kOverlap & kBwdDqWriter, kRotate = kOverlap & kBwdRotate;
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using L = HopperBwdSmemFor<kD, kBr, kCut, kOverlap>;
  static_assert(L::kBytes <= int(kSmemOptIn), "the stages do not fit in shared memory");
  static_assert(kCut != DqCut::columns || kStaging != DqStaging::groups || kD == 128,
                "groups stage blocks 64 columns wide");
  static_assert(kCut != DqCut::rows || kBr == 128, "dQ cut by rows: two blocks of 64");
  constexpr bool kMeet = kCut != DqCut::keys;  // both warpgroups' dS^T read by each
  static_assert(
      !kNext || (!kDqFirst && (!kAtomicDq || (!kMeet && L::kDqBlocks == 1)) &&
                 hopper_bwd_consumer_registers(kD, kBr, true) <= kHopperConsumerRegisters),
      "the pipeline across tiles: one dQ block of the warpgroup's own keys, issued "
      "after dK, and registers for two tiles' products");
  static_assert(
      !(kKRegs || kVRegs) || (kBr == 64 && !kNext &&
                              hopper_bwd_consumer_registers(kD, kBr, false, kKRegs + kVRegs) <=
                                  kHopperConsumerRegisters),
      "K_j or V_j in registers: Br = 64, and registers for their fragments");
  static_assert(!kPersistent || !kNext, "the persistent grid: without the pipeline across tiles");
  static_assert(!kWriter || (kDq == DqWay::bulk_add && !kNext && !kSpread && L::kDqBlocks == 1),
                "dQ's writer warp: the bulk reduce of one block a warpgroup a step");
  static_assert(L::kDqSets == 1 || kWriter, "two sets of dQ's staging: with the writer warp");
  constexpr int Br = L::Br, Bc = L::Bc, kStages = L::kStages;
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = hopper_ptx::aligned_1024(smem_raw);
  E* sK = reinterpret_cast<E*>(smem + L::kK);
  E* sV = reinterpret_cast<E*>(smem + L::kV);
  E* sQ = reinterpret_cast<E*>(smem + L::kQ);
  E* sdO = reinterpret_cast<E*>(smem + L::kdO);
  E* sdST = reinterpret_cast<E*>(smem + L::kdST);
  float2* sLD = reinterpret_cast<float2*>(smem + L::kLD);
  float* sdQ = reinterpret_cast<float*>(smem + L::kdQ);
  std::uint64_t* full_kv = reinterpret_cast<std::uint64_t*>(smem + L::kBarriers);
  std::uint64_t* full = full_kv + 1;
  std::uint64_t* empty = full + kStages;
  std::uint64_t* empty_kv = empty + kStages;  // (persistent only)

  const index_t Tr = a.tiling.Tr(), Tc = a.tiling.Tc();
  // The block's work items: its own (j, head), or (persistent) its list in the schedule
  // (block_schedule's layout) from entry `start` to the -1 (item_at(k): entry k's item, or -1).
  // Item w's key tile j = rank and head: causal, the key tiles most query tiles see first
  // (masking is monotone: a smaller j is seen by as many query tiles or more).
  const int start = kPersistent ? a.schedule[blockIdx.x] : 0;
  const auto item_at = [&](int k) { return kPersistent ? a.schedule[k] : k == 0 ? 0 : -1; };
  const auto item = [&](int w) -> BwdItem {
    if constexpr (kPersistent) {
      const TileItem t = persistent_item(w, int(Tc), int(a.heads), int(gridDim.x), a.mask.causal);
      return {t.rank, t.head};
    }
    return {int(blockIdx.x), int(blockIdx.y)};
  };
  const BwdItem first_item = kPersistent ? BwdItem{} : item(0);  // (the ordinary grid's one)
  // threadIdx.x / 128, not hopper_ptx::warpgroup_index() as the forward: with the uniform index
  // the rung's choice spills 108 bytes at d = 64 (24 with this) and 100 at d = 128 (none), likely
  // values that depend on c kept live across the consumers' loop: 0.84x and 0.98x on an H100
  // (docs/gpu-ladder.md, "why the index lost in the backward").
  const int wg = threadIdx.x / 128;
  if (threadIdx.x == 0) {
    hopper_ptx::mbarrier_init(full_kv, 1);
    for (int s = 0; s < kStages; ++s) {
      hopper_ptx::mbarrier_init(full + s, 1);
      hopper_ptx::mbarrier_init(empty + s, 256);  // one arrival per consumer thread
    }
    if constexpr (kPersistent) hopper_ptx::mbarrier_init(empty_kv, 256);
    hopper_ptx::fence_barrier_init();
    // K_j and V_j on their way before any consumer waits for them (the persistent grid's
    // producer loads each item's in its loop)
    if (!kPersistent && first_query_tile(a.tiling, a.mask, first_item.j) < Tr) {
      const int k0 = int(first_item.j * Bc), head = int(first_item.head);
      hopper_ptx::mbarrier_arrive_expect_tx(full_kv, 2 * Bc * kD * 2);
      for (int h = 0; h < kD / 64; ++h) {
        hopper_ptx::tma_load_3d(sK + h * Bc * 64, &tmK, h * 64, k0, head, full_kv);
        hopper_ptx::tma_load_3d(sV + h * Bc * 64, &tmV, h * 64, k0, head, full_kv);
      }
    }
  }
  __syncthreads();

  if (wg == 0) {  // the producer
    hopper_ptx::setmaxnreg_dec<kHopperProducerRegisters>();
    if constexpr (kWriter)
      if (threadIdx.x / 32 == 1) {  // dQ's writer: warp 1, over the consumers' steps
        int u = 0;                  // (32-bit counts, in its 24 registers)
        for (int k = start, wi; (wi = item_at(k)) >= 0; ++k) {
          const BwdItem it = item(wi);
          const int i0 = int(first_query_tile(a.tiling, a.mask, it.j)), count = int(Tr) - i0;
          for (int t = 0; t < count; ++t, ++u)
            write_dq_step<kD, kCut, kStaging, L>(
                &tmdQ, sdQ, u, walk_tile<kRotate>(t, i0, count, it.j) * Br, it.head);
        }
        if (threadIdx.x == 32) hopper_ptx::bulk_wait<0>();  // the last reduces done
        return;
      }
    if (threadIdx.x != 0) return;
    index_t u = 0;  // steps loaded so far, over the items: stage u % kStages
    int kv = 0;     // K_j, V_j loaded so far (persistent: one fill of full_kv an item)
    for (int k = start, wi; (wi = item_at(k)) >= 0; ++k) {
      const BwdItem it = item(wi);
      const index_t i_first = first_query_tile(a.tiling, a.mask, it.j);
      if (i_first == Tr) continue;  // (the consumers write its zeros without waiting)
      if constexpr (kPersistent) {  // K_j, V_j once the consumers are done with the last item's
        if (kv > 0) hopper_ptx::mbarrier_wait(empty_kv, unsigned((kv - 1) & 1));
        hopper_ptx::mbarrier_arrive_expect_tx(full_kv, 2 * Bc * kD * 2);
        for (int h = 0; h < kD / 64; ++h) {
          hopper_ptx::tma_load_3d(sK + h * Bc * 64, &tmK, h * 64, int(it.j * Bc), int(it.head),
                                  full_kv);
          hopper_ptx::tma_load_3d(sV + h * Bc * 64, &tmV, h * 64, int(it.j * Bc), int(it.head),
                                  full_kv);
        }
      }
      const int count = int(Tr - i_first);
      for (int t = 0; t < count; ++t, ++u) {
        const int i = walk_tile<kRotate>(t, int(i_first), count, it.j), s = int(u % kStages);
        if (u >= kStages) hopper_ptx::mbarrier_wait(empty + s, unsigned((u / kStages - 1) & 1));
        hopper_ptx::mbarrier_arrive_expect_tx(full + s, 2 * Br * kD * 2 + Br * 8);
        for (int h = 0; h < kD / 64; ++h) {
          hopper_ptx::tma_load_3d(sQ + s * Br * kD + h * Br * 64, &tmQ, h * 64, int(i * Br),
                                  int(it.head), full + s);
          hopper_ptx::tma_load_3d(sdO + s * Br * kD + h * Br * 64, &tmdO, h * 64, int(i * Br),
                                  int(it.head), full + s);
        }
        hopper_ptx::bulk_load(sLD + s * Br, a.LD + it.head * Tr * Br + i * Br, Br * 8, full + s);
      }
      ++kv;
    }
    return;
  }

  hopper_ptx::setmaxnreg_inc<kHopperConsumerRegisters>();
  const int c = wg - 1, w = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, key_row = c * 64 + w * 16 + g;  // keys key_row (+ 8)
  // issues the bulk copies: the warp's (groups), or the warpgroup's (swizzled)
  const bool issuer = kByWarp ? lane == 0 : threadIdx.x % 128 == 0;
  // The block's items, one after the other; u0 counts the steps of the earlier ones (their
  // stages' phases), kv their fills of full_kv.
  // The next entry of the list is read an item ahead (wi_next), off the path between items.
  int u0 = 0;
  int kv = 0;
  for (int k = start, wi = item_at(start), wi_next; wi >= 0; wi = wi_next) {
    wi_next = item_at(++k);
    const BwdItem it = item(wi);
    const index_t j = it.j, head = it.head, k0 = j * Bc, i0 = first_query_tile(a.tiling, a.mask, j);
    const int count = int(Tr - i0);  // the item's steps t: query tile tile_of(t)
    const auto tile_of = [&](int t) -> index_t {
      return walk_tile<kRotate>(t, int(i0), count, it.j);
    };
    float dk[kD / 8][4] = {}, dv[kD / 8][4] = {};
    const bool ragged = k0 + Bc > a.n_keys;  // the last key tile: its keys past n_keys are zeros
    std::uint32_t kf[kKRegs ? kD / 16 : 1][4], vf[kVRegs ? kD / 16 : 1][4];  // K_j, V_j rows
    // Every tile's descriptors, once: K-major (k) for S^T and dP^T, MN-major (t: read transposed)
    // for dV, dK (Q_i, dO_i) and dQ (dS^T, K_j); stage s and buffer u % 2 are added in the loop.
    using hopper_ptx::k_major, hopper_ptx::mn_major;
    const Operand<E> Kk = k_major(sK), Vk = k_major(sV), Qk = k_major(sQ), dOk = k_major(sdO);
    const Operand<E> Qt = mn_major(sQ, Br), dOt = mn_major(sdO, Br);
    const Operand<E> Kt = mn_major(sK, Bc), dSTt0 = mn_major(sdST, Bc);
    // S^T = K_j Q_i^T and dP^T = V_j dO_i^T of step t's query tile, once its stage is full: one
    // commit group, or kScoreGroups = 2 with the P overlap.
    const auto issue_scores = [&](int t, float(&st)[Br / 8][4], float(&dpt)[Br / 8][4]) {
      const index_t u = u0 + t;
      const int s = int(u % kStages);
      hopper_ptx::mbarrier_wait(full + s, unsigned((u / kStages) & 1));
      hopper_ptx::wgmma_fence();
      if constexpr (kKRegs)
        issue_frags_by_rows<E, kD>(st, kf, Qk.plus(s * Br * kD));
      else
        issue_rows_by_rows<E, kD, Br>(st, Kk, Qk.plus(s * Br * kD), c);
      if constexpr (kOverlapP) hopper_ptx::wgmma_commit();
      if constexpr (kVRegs)
        issue_frags_by_rows<E, kD>(dpt, vf, dOk.plus(s * Br * kD));
      else
        issue_rows_by_rows<E, kD, Br>(dpt, Vk, dOk.plus(s * Br * kD), c);
      hopper_ptx::wgmma_commit();
    };
    // dQ's block (rows q0 + r0.., columns c0..) of dS K_j, times scale, added into dQ: by atomics,
    // or staged (once every thread knows the staging is free) and reduced by the copy engine:
    // warp by warp (groups), or once the warpgroup has met (swizzled).
    // With the writer warp: staged once the writer has seen the last reduce read the staging
    // (from the block's second step u on), fenced, and announced; the writer issues the reduce.
    const auto send_dq = [&](const auto& dq, index_t u, index_t q0, int r0, int c0, int blk) {
      [[maybe_unused]] constexpr int kW = 8 * int(sizeof(dq) / sizeof(dq[0]));  // 64 or 32 columns
      if constexpr (kWriter) {
        float* mine = sdQ + L::dq_block(int(u % L::kDqSets), c, blk);
        if (u > 0) hopper_ptx::named_barrier_sync(kBwdDqEmpty + c, kBwdDqThreads);
        if constexpr (kByWarp)
          stage_dq_groups(mine + w * kHopperBwdDqRows * 64, dq, a.scale);
        else
          stage_dq_swizzled<false, kW>(mine, dq, a.scale);
        hopper_ptx::fence_proxy_async();  // the stores seen by the copy engine, then announced
        hopper_ptx::named_barrier_arrive(kBwdDqFull + c, kBwdDqThreads);
      } else if constexpr (kDq == DqWay::atomics) {
        write_block<kD, kW, true>(a.dQ + head * a.n * kD, dq, q0 + r0, a.n, c0, a.scale);
      } else if constexpr (kByWarp) {
        float* mine = sdQ + L::dq_block(0, c, blk) + w * kHopperBwdDqRows * 64;
        stage_dq_groups(mine, dq, a.scale);
        hopper_ptx::fence_proxy_async();  // the lane's stores seen by the copy engine,
        __syncwarp();                     // and every lane's before lane 0 issues the reduce
        if (issuer) {
          hopper_ptx::tma_reduce_add_4d(&tmdQ, 0, int(q0 + r0 + kHopperBwdDqRows * w), c0 / 8,
                                        int(head), mine);
          hopper_ptx::bulk_commit();
        }
      } else {
        float* mine = sdQ + L::dq_block(0, c, blk);
        if (blk == 0 && !kSpread) hopper_ptx::named_barrier_sync(3 + c, 128);
        stage_dq_swizzled<kSpread, kW>(mine, dq, a.scale);
        hopper_ptx::fence_proxy_async();
        hopper_ptx::named_barrier_sync(3 + c, 128);
        if (issuer) {
          for (int h = 0; h < kW / 32; ++h)
            hopper_ptx::tma_reduce_add_3d(&tmdQ, c0 + 32 * h, int(q0 + r0), int(head),
                                          mine + h * 64 * 32);
          hopper_ptx::bulk_commit();
        }
      }
    };
    // This warpgroup's dS^T (or both warpgroups', kMeet) in shared memory for dQ's wgmma, and the
    // staging free again: the last reduce has read it (its issuer waits before the barrier with
    // groups and spread, which the barrier then tells; with swizzled, after it, and send_dq's first
    // barrier tells the rest).
    const auto dst_in_place = [&] {
      constexpr bool kBulk = kDq == DqWay::bulk_add && !kWriter, kWaitFirst = kByWarp || kSpread;
      if (kBulk && kWaitFirst && issuer) hopper_ptx::bulk_wait_read<0>();
      hopper_ptx::fence_proxy_async();
      if constexpr (kMeet)
        hopper_ptx::named_barrier_sync(1, 256);
      else
        hopper_ptx::named_barrier_sync(1 + c, 128);
      if (kBulk && !kWaitFirst && issuer) hopper_ptx::bulk_wait_read<0>();
    };

    // P^T = exp2(S^T c - L2_q) over step t's query tile i once S^T is in (while dP^T may still
    // run), then dP^T in: nothing of the tile's products left in flight.
    const auto probabilities_in = [&](int t, float(&st)[Br / 8][4], float(&dpt)[Br / 8][4]) {
      const index_t i = tile_of(t);
      const bool edge = ragged || a.tiling.classify(a.mask, i, j) == TileKind::partial;
      if constexpr (kOverlapP)
        hopper_ptx::wgmma_wait<1>();  // S^T in; dP^T may still run
      else
        hopper_ptx::wgmma_wait<0>();
      hopper_ptx::fence_operands(st);
      const float2* LDi = sLD + int((u0 + t) % kStages) * Br;
      if (edge)
        probabilities_t<Br, true>(st, LDi, a, k0 + key_row, i * Br);
      else
        probabilities_t<Br, false>(st, LDi, a, k0 + key_row, i * Br);
      hopper_ptx::fence_operands(st);  // (P^T computed before the wait below)
      hopper_ptx::wgmma_wait<0>();
      hopper_ptx::fence_operands(dpt);
    };

    float st[Br / 8][4], dpt[Br / 8][4];  // S^T then P^T; dP^T then dS^T
    if (i0 < Tr) {
      hopper_ptx::mbarrier_wait(full_kv, unsigned(kv & 1));
      if constexpr (kKRegs) load_row_fragments<E, kD>(kf, sK, c);
      if constexpr (kVRegs) load_row_fragments<E, kD>(vf, sV, c);
    }
    if (kNext && i0 < Tr) issue_scores(0, st, dpt), probabilities_in(0, st, dpt);
    for (int t = 0; t < count; ++t) {
      const index_t u = u0 + t, q0 = tile_of(t) * Br;
      const int s = int(u % kStages);
      const Operand<E> Qi = Qt.plus(s * Br * kD), dOi = dOt.plus(s * Br * kD);
      const float2* LDi = sLD + s * Br;
      if constexpr (!kNext) issue_scores(t, st, dpt), probabilities_in(t, st, dpt);
      score_gradients_t<Br>(dpt, st, LDi);
      std::uint32_t pf[Br / 16][4], df[Br / 16][4];
#pragma unroll
      for (int kt = 0; kt < Br / 16; ++kt) p_fragment<E, Br>(pf[kt], st, kt);
#pragma unroll
      for (int kt = 0; kt < Br / 16; ++kt) p_fragment<E, Br>(df[kt], dpt, kt);
      E* dST = sdST + int(u % 2) * Bc * Br;
      const Operand<E> dSTt = dSTt0.plus(int(u % 2) * Bc * Br);
      if constexpr (kAtomicDq)
        store_dst<Br>(reinterpret_cast<std::uint32_t*>(dST), df, c * 64 + w * 16);

      hopper_ptx::wgmma_fence();
      issue_frag_by_rows<E, kD, Br>(dv, pf, dOi);                          // dV += P^T dO
      if constexpr (!kDqFirst) issue_frag_by_rows<E, kD, Br>(dk, df, Qi);  // dK += dS^T Q
      hopper_ptx::wgmma_commit();
      // Q_i, dO_i, LD_i read: the producer may refill stage s. Every consumer thread arrives (its
      // own reads of LD_i ordered before its arrival), not one lane a warp after __syncwarp: the
      // compiler may drop a __syncwarp in converged code, and racecheck then pairs the other lanes'
      // reads with the refill.
      const auto release_stage = [&] {
        hopper_ptx::fence_operands(dv), hopper_ptx::fence_operands(dk);
        hopper_ptx::fence_operands(pf), hopper_ptx::fence_operands(df);
        hopper_ptx::mbarrier_arrive(empty + s);
      };
      if constexpr (kNext) {
        // dV, dK and dQ's one block of step t's tile queued, then S^T and dP^T of step t + 1's
        // behind them: the wait lets the next products run while tile i's dQ is staged and sent.
        float dq[64 / 8][4];
        if constexpr (kAtomicDq) {
          dst_in_place();
          hopper_ptx::wgmma_fence();
          issue_dq_block<E, 64>(dq, dSTt, Kt, 64 * c, 0, 0);
          hopper_ptx::wgmma_commit();
        }
        const auto finish_tile = [&] {
          release_stage();
          if constexpr (kAtomicDq) {
            hopper_ptx::fence_operands(dq);
            send_dq(dq, u, q0, 0, 0, 0);
          }
        };
        // Step t + 1's products issued and waited for in one branch, not across the loop's back
        // edge: ptxas serializes every wgmma of a kernel where it cannot prove none is in flight.
        if (t + 1 < count) {
          issue_scores(t + 1, st, dpt);
          hopper_ptx::wgmma_wait<kScoreGroups>();
          finish_tile();
          probabilities_in(t + 1, st, dpt);
        } else {
          hopper_ptx::wgmma_wait<0>();
          finish_tile();
        }
      } else if constexpr (kAtomicDq) {
        // Warpgroup c's share of dQ_i += dS K_j (DqCut): columns or rows 64 c once both
        // warpgroups' dS^T is in place, or its own keys, block by block of 64 x 64.
        dst_in_place();
#pragma unroll
        for (int blk = 0; blk < L::kDqBlocks; ++blk) {
          constexpr int kCol = kD / 64;  // (the keys cut: blk walks rows, then columns)
          constexpr int kW = kCut == DqCut::columns ? kD / 2 : 64;  // the block's columns
          const int r0 = kCut == DqCut::columns ? 64 * blk
                         : kCut == DqCut::rows  ? 64 * c
                                                : 64 * (blk / kCol);
          const int c0 = kCut == DqCut::columns ? kW * c : 64 * (blk % kCol);
          float dq[kW / 8][4];
          hopper_ptx::wgmma_fence();
          if constexpr (kMeet)
            issue_dq_block<E, Bc, kW>(dq, dSTt, Kt, 0, r0, c0);
          else
            issue_dq_block<E, 64, kW>(dq, dSTt, Kt, 64 * c, r0, c0);
          hopper_ptx::wgmma_commit();
          if (kDqFirst && blk == 0) {  // dK behind it: dQ's block is in when dK may still run
            issue_frag_by_rows<E, kD, Br>(dk, df, Qi);
            hopper_ptx::wgmma_commit();
            hopper_ptx::wgmma_wait<1>();
          } else {
            hopper_ptx::wgmma_wait<0>();
          }
          hopper_ptx::fence_operands(dq);
          if (!kDqFirst && blk == 0) release_stage();
          send_dq(dq, u, q0, r0, c0, blk);
        }
        if constexpr (kDqFirst) {
          hopper_ptx::wgmma_wait<0>();
          release_stage();
        }
      } else {
        hopper_ptx::wgmma_wait<0>();
        release_stage();
      }
    }
    if (kPersistent && i0 < Tr) {  // every product that reads K_j, V_j is done: refill them
      hopper_ptx::fence_operands(dk), hopper_ptx::fence_operands(dv);
      hopper_ptx::mbarrier_arrive(empty_kv);
    }
    const index_t key0 = k0 + c * 64;
    write_block<kD, kD, false>(a.dK + head * a.n_keys * kD, dk, key0, a.n_keys, 0, a.scale);
    write_block<kD, kD, false>(a.dV + head * a.n_keys * kD, dv, key0, a.n_keys, 0, 1.0f);
    if (i0 < Tr) u0 += int(Tr - i0), ++kv;
  }
  if (kDq == DqWay::bulk_add && !kWriter && issuer) hopper_ptx::bulk_wait<0>();
#else
  __trap();  // built for a GPU without sm_90a's instructions: the host refuses before launching
#endif
}

}  // namespace fd::cuda
