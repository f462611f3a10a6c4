// hopper.cuh — the rung `hopper`: FlashAttention-2's forward on Hopper's own instructions
// (hopper_ptx.cuh), bf16/fp16 inputs, fp32 accumulation, sm_90a.
//
// Block (i, head), a producer warpgroup of 128 threads and two consumer warpgroups (Br = 128 query
// rows; three at d = 64, Br = 192: kConsumers, below), key tiles of Bc = 128 (64 at d = 256):
//   warpgroup 0, the producer (24 registers a thread, setmaxnreg): one thread issues TMA copies
//     Q_i once; K_j and V_j into stage j % 2, each completing on its stage's mbarrier
//     (full_k, full_v), once the consumers have released that stage's K (empty_k: as soon as
//     S_j is computed) and V (empty_v: after O += P_j V_j)
//   warpgroups 1 and 2, the consumers (240 registers; 160 with three): warpgroup c owns rows
//     64 c .. 64 c + 63
//     and computes, for each key tile j < J_i, with m2, l, O in registers as the mma rung does:
//       S = Q_i K_j^T               wgmma m64n{Bc}k16, Q and K_j read from shared memory
//       S = -inf where masked       (the diagonal and ragged tiles only)
//       m2_new = max(m2, rowmax(S) c),  P = exp2(S c - m2_new),  l = alpha l + rowsum(P)
//       O = alpha O,  O += P V_j    wgmma m64n{d}k16, P from registers (rounded to E), V_j
//                                   read transposed from shared memory
//     then O_i = O / l and L_i = m2 ln 2 + log l, straight from registers to global memory.
// With kPersistent (the rung's grid at short rows, d = 64 and 128: HopperDefaults; a step of
// `ladder --steps` at every d), the grid is one block an SM, each block
// looping over work items (i, head) (persistent_item: head groups, causal rows longest first),
// its own list of them dealt by the launcher (block_schedule: each to the least loaded block)
// and decoded there (listed_items: i, head, J_i, F_i, so that the kernel divides nothing):
// the producer loads the next item's Q_i into the second of two Q buffers (full_q, empty_q per
// buffer) and its first K_j, V_j into the stages as they free up, while the consumers still
// finish this item's last P V and write its O; the stages' phases count tiles across items.
// With kOverlap too (d = 128; d = 64 with two consumer warpgroups), the consumers take the items
// as one stream of tiles: the next item's S_0 is issued beside this item's last P V, and its
// softmax runs under it.
// Two steps at the change of item (timed 2026-12-06: the prefetch 0.94x to 0.99x, four stages
// level; neither the rung's): with HopperArgs::prefetch
// (fwd_prefetch), the producer sends the next item's Q_i and first K_j, V_j to L2
// (cp.async.bulk.prefetch.tensor) kPrefetchLead tiles before its item's end, so that their
// copies at the change read L2, not DRAM; with kKvStages = 4 (fwd_stages4, d = 64, where 5
// stages would fit beside two Q buffers of 192 rows, 6 at 128), it runs up to four tiles ahead,
// not two.
// With kConsumers = 3 (the rung's at d = 64: HopperDefaults), three consumer warpgroups of 64 rows
// each, Br = 192, 512 threads, registers 24 / 160 (below): each K_j, V_j loaded serves 192 query
// rows, not 128 (1.16x at n = 16384 on the H200, docs/gpu-ladder.md); at d = 128, O alone takes 64
// of a consumer's registers and S, P 96 more, over 160.
// With kStageO (the rung's on d = 128's persistent grid: HopperDefaults), each consumer warpgroup
// writes its 64 rows of O into shared memory in the tensor map's swizzled boxes and one of its
// threads sends them by TMA (cp.async.bulk.tensor, shared to global), so the next item's GEMMs
// need not wait behind the stores to global memory; L still goes from registers.
// With kBc = 176 (a step at d = 128, fwd_bc176: 0.99x to 1.012x, not the rung's), key tiles of
// 176 keys on the ordinary grid with the overlap, as FlashAttention-3 tiles its d = 128 forward
// without a mask (128 x 176; 128 x 128 under a causal mask): S is one m64n176k16 wgmma a k step,
// P V 11 k steps a tile where 128 keys take 8, so each tile's barrier waits, row reductions and
// O rescale serve 1.375x the keys. Shared memory and registers: kHopperWideBc, below.
// With kIdlePadding (the rung's at d = 64 since session 39: three consumer warpgroups,
// the loop without the overlap; the step fwd_padding_computed turns it off), a consumer
// warpgroup whose 64 rows of the item all lie past n (the last query tile of a head where
// Br = 192 does not divide n: at n = 1024 the sixth tile's rows 1024 .. 1151, two of its three
// warpgroups) computes nothing: it waits for and releases each stage, so the barriers count its
// warps' arrivals as always, and leaves the tensor cores and the exp pipe to the warpgroup with
// rows. Likewise, under a causal mask, the item's last key tiles that a warpgroup's own rows do
// not see (its J_c, key_tiles_of_rows of its 64 rows, where the item's J is its 192 rows'): at
// Br = 192, Bc = 128, n = m the first two warpgroups of even items and the first of odd items
// each skip the item's last tile, so that the items compute what tiles of 64 rows would.
// Measured on an H100, 0.94x to 0.95x the rung's choice at n = 1000, 1024 and 4096 while c came
// from threadIdx.x / 128 (the branch on it then made the whole loop's integer work per thread:
// hopper_ptx::warpgroup_index); with c uniform, 1.003x at n = 1024, d = 64 (session 32); as the
// choice, the timings by HopperDefaults, below.
// With kExpFma = 8 or 4 (steps at d = 64, fwd_exp_fma8 and fwd_exp_fma4), 1 in 8 or 1 in 4 of
// the softmax's exponentials is computed by exp2_fma on the FMA and integer pipes, the rest by ex2
// on the special-function unit (16 a cycle an SM, against the tensor cores' 4096 bf16 FLOPs: at
// d = 64, Br = 192, Bc = 128 a tile's 24,576 exps take as long as its two GEMMs, 1,536 cycles
// each). Measured 0.90x to 0.96x of the rung on an H100, the loss growing with the share: the
// softmax is short of issue slots, not of the ex2 unit, so the rung does not take it.
//
// Two overlaps, each a template switch so that its effect can be timed:
//   kPingPong  the consumer warpgroups take turns at the tensor cores (named barriers 1, 2):
//              meant to run one's softmax while the other's GEMMs do; measured, it costs 5 to
//              20 % alone at both d, and with the overlap 2 to 6 % at d = 128 in the steps table
//              (level in one later run, `flashdemo ladder --steps`): off at every d
//   kOverlap   within a warpgroup, S_{j+1} = Q K_{j+1}^T and O += P_j V_j are issued together,
//              and the softmax of tile j + 1 runs while O += P_j V_j is on the tensor cores
// Shared memory (1024-byte aligned): Q 128 x d, K and V 2 stages of Bc x d, as 64-column
// chunks of 128-byte swizzled rows (hopper_ptx.cuh), and 9 mbarriers.
//
// Per block, at head dim d (HopperSmem, hopper_consumer_registers):
//   shared memory  2 bytes x (Q: 128 d + K, V: 2 stages x 2 x Bc d), + 1 KiB alignment
//                  d = 64: 16 + 64 = 80 KiB;  d = 128: 32 + 128 = 160 KiB;
//                  d = 256 (Bc = 64): 64 + 128 = 192 KiB
//   registers      a consumer thread's fp32 accumulators: O d / 2 + S Bc / 2 + P Bc / 4,
//                  of setmaxnreg's 240: d = 64 128, d = 128 160, d = 256 176
// At d = 256: Q 64 KiB + 2 stages x (K + V) 256 KiB = 320 KiB at Bc = 128, over the 227 KiB a
// block may opt into; so key tiles of Bc = 64 (hopper_bc): Q 64 + 2 x 2 x 32 = 192 KiB, twice
// the barrier waits per key (one stage of Bc = 128 would fit too, with no copy under the
// compute). A consumer thread holds O 128 + S 32 + P 16 = 176 registers of its 240, S is
// m64n64k16 over four 64-column chunks of Q and K_j, and O += P V one m64n256k16 a 16-key step.
// No room for a second Q buffer or O's staging: the ordinary grid, O from registers.
#pragma once

#include <cstdint>

#include "cuda/host/head_dims.hpp"
#include "cuda/primitives/fragment.cuh"
#include "cuda/primitives/hopper_ptx.cuh"
#include "flashdemo/host_device/mask.hpp"
#include "flashdemo/host_device/tiling.hpp"
#include "flashdemo/host_device/work_items.hpp"

namespace fd::cuda {

// 384 = 3 warpgroups of 128; Br = 128 = 2 consumer warpgroups x wgmma's m of 64 rows. The key
// tile Bc is the n of S's wgmma (m64n128k16 at d = 64 and 128): hopper_bc, below.
inline constexpr int kHopperThreads = 384, kHopperBr = 128, kHopperStages = 2;
// The persistent forward's L2 prefetch of the next item (HopperArgs::prefetch): issued when the
// producer reaches this many tiles before its item's end (it runs up to kKvStages ahead).
inline constexpr index_t kPrefetchLead = 3;
// The key tile at head dim d, as the host has it (kernel_tiles): 128, but at d = 256 64 keys, so
// that Q (64 KiB) and two stages of K_j, V_j (4 x 32 KiB) fit the 227 KiB a block may have (at
// Bc = 128: 320 KiB), and the S of a consumer thread takes 32 registers beside O's 128
// (hopper_consumer_registers).
constexpr int hopper_bc(int d) {
  return int(kernel_tiles(Impl::hopper, d).Bc);
}
// Registers a thread of the producer warpgroup keeps, and of a consumer warpgroup (setmaxnreg).
// __launch_bounds__(384, 1) lets ptxas give each thread 65,536 / 384 = 170.7, rounded down to a
// multiple of 8: 168 (ptxas -v says 168 for every instance), 384 x 168 = 64,512 registers.
// setmaxnreg then moves them, within the same total: 24 is its least count, and the producer's
// 128 x (168 - 24) = 18,432 feed the consumers' 2 x 128 x (240 - 168) = 18,432;
// 128 x 24 + 2 x 128 x 240 = 3,072 + 61,440 = 64,512 <= 65,536, the SM's register file. 240 =
// (3 x 168 - 24) / 2, the most a consumer can have with the producer at 24 (both multiples of 8).
inline constexpr int kHopperProducerRegisters = 24, kHopperConsumerRegisters = 240;
// With three consumer warpgroups (Br = 192, kConsumers = 3: 512 threads), __launch_bounds__(512, 1)
// gives 65,536 / 512 = 128 registers a thread, and setmaxnreg moves the producer's
// 128 x (128 - 24) = 13,312 to the consumers' 3 x 128 x (160 - 128) = 12,288:
// 128 x 24 + 3 x 128 x 160 = 3,072 + 61,440 = 64,512 (168 would pass the 65,536).
constexpr int hopper_threads(int consumers) {
  return 128 * (consumers + 1);
}
constexpr int hopper_consumer_registers_max(int consumers) {
  return consumers == 2 ? kHopperConsumerRegisters : 160;
}
static_assert(128 * kHopperProducerRegisters + 3 * 128 * hopper_consumer_registers_max(3) <= 65536,
              "three consumer warpgroups: the register file");
// The overlap steps the rung runs with at each d: the fastest of the four settings measured on
// the H200 (docs/gpu-ladder.md has them all). At d = 128 the softmax of tile j + 1 under
// O += P_j V_j; at d = 64 neither step paid on the ordinary grid (the plain loop measured
// fastest), but with two consumer warpgroups on the persistent grid (the short causal rows, where
// problem_tiles takes Br = 128) the overlap runs the items as one stream of tiles: 1.035x at
// (16, 32, 1024, 64) causal on an H100 (session 29, `fwd_persistent_overlap`), where an item has
// 4.5 key tiles on average and its first softmax and last P V are a large share of it.
// The grid: persistent (block_schedule's lists) where it measured faster than a block per item:
// at d = 128 while an item has at most 32 key tiles (n <= 4096: 1.03x to 1.2x at n = 1024 on the
// H200; level with the ordinary grid at n = 2048 and 4096 on an H100), and at d = 64 while it
// has at most 16, or 64 on causal rows (three consumer warpgroups, an H100, session 39: 1.05x at
// n = 2048, level at 4096; causal 1.10x at 2048, 1.04x at 4096, 1.03x at 8192, 0.99x at 16384:
// the longest-first lists even out causal items of unequal length, and past that the persistent
// loop's steady state at d = 64 is slower and hides little). Past 32 key tiles at d = 128 the
// ordinary grid with the overlap: 1.05x on the H200 (session 19) and 1.04x to 1.09x (causal
// 1.03x) at n = 16384 on an H100 (sessions 27 and 28), where an item's 128 tiles hide its start
// either way and the persistent loop's change of item costs more than it saves.
// The consumer warpgroups: three at d = 64 (Br = 192; 498 against 429 TFLOP/s at n = 16384, causal
// 491 against 429, on the ordinary grid without the overlap, which costs 13 % with three), two
// at d = 128 (three do not fit its registers: HopperFits). On a problem whose rows Br = 192 pads
// more than three consumers gain, two at d = 64 too (problem_tiles, cuda_api.hpp): the launch
// takes the consumers from the problem's Br.
// O: sent by TMA from shared memory (stage_o) on d = 128's persistent grid with the overlap, where
// it measured 1.013x to 1.03x in all four runs at n = 1024 to 4096 on an H100 (level in the three
// at n = 16384; docs/gpu-ladder.md, "O through shared memory" and session 28): with items of few
// tiles the store of O from registers is a share of an item's time, and the TMA store leaves the
// consumers free for the next item's GEMMs. From registers everywhere else (at d = 64, 1.00x to
// 1.02x; on the ordinary grid not measured as the choice).
// Padded rows: at d = 64 a consumer warpgroup whose rows of an item all lie past n idles
// (kIdlePadding) wherever it was graded and timed: three consumer warpgroups, without the
// overlap, O staged, exps on the FMA pipe, four stages, the prefetch or the trace. Against the
// kernel that computes them, two rounds of seven d = 64 cases on an H100 (session 39): 1.04x to
// 1.05x at n = 2048, 1.02x at n = 4096 and 1.03x causal, 1.01x to 1.02x at n = 1024, level
// (0.99x to 1.02x) at n = 1024 causal and at n = 16384. The same warpgroups idle on the tiles
// past their own rows' diagonal too (session 40, two rounds on an H100): 1.020x and 1.026x at
// causal n = 2048, level at 4096 and 16384 (0.996x to 1.011x); fp16 since then as well.
// At d = 256: the overlap (the best of the four settings on the H200, 698.9 TFLOP/s at n = 4096),
// as at d = 128 and as FlashAttention-3 runs its d = 256 forward; the ordinary grid, the
// persistent one's second Q buffer not fitting.
template <int kD>
struct HopperDefaults {
  static constexpr bool ping_pong = false;
  static constexpr int consumers = kD == 64 ? 3 : 2;
  static constexpr bool overlap(int consumer_warpgroups, bool on_persistent_grid) {
    return kD >= 128 || (consumer_warpgroups == 2 && on_persistent_grid);
  }
  static constexpr int prefetch = 0;  // the next item's key tiles sent to L2 (fwd_prefetch)
  static constexpr bool persistent(index_t key_tiles, bool causal) {
    return (kD == 128 && key_tiles <= 32) ||
           (kD == 64 && (key_tiles <= 16 || (causal && key_tiles <= 64)));
  }
  static constexpr bool stage_o(bool on_persistent_grid, bool overlap) {
    return kD == 128 && on_persistent_grid && overlap;
  }
  static constexpr bool idle_padding = kD == 64;  // where graded (kIdlePadding; launch_hopper_d)
};

template <class E>
struct HopperArgs {
  E* O;
  float* L;
  index_t n, n_keys, heads;
  Tiling tiling;  // Br x 128: Br = 64 x the consumer warpgroups
  Mask mask;
  float scale2;  // scale * log2(e)
  RungTrace trace;
  const int* schedule;       // the persistent grid's (block_schedule's layout), else null
  const ListedItem* listed;  // the persistent grid's: the schedule's entries decoded (listed_items)
  int prefetch = 0;  // persistent grid: key tiles of the next item sent to L2 ahead (0: none)
};

// Byte offsets in the block's shared memory, from its first 1024-aligned byte.
//   kTile = Bc x d x 2 bytes: 16,384 at d = 64, 32,768 at d = 128 (K and V each, per stage; Bc =
//           128, and 45,056 at d = 128 with the step's Bc = 176)
//   kK = Q's 128 x d x 2, kV = kK + kStages kTile, kBarriers = kV + kStages kTile
//   kBytes = kBarriers + 9 mbarriers of 8 bytes (full_q; full_k, full_v, empty_k, empty_v per
//            stage: 1 + 4 kStages) + 1024 (aligned_1024's padding at most 1008)
// A stage (K and V) costs 512 d bytes, 32 KiB at d = 64 and 64 KiB at d = 128; against
// kSmemOptIn = 227 x 1024 = 232,448 bytes (head_dims.hpp: sm_90's most a block may opt into):
//   d = 64   16,384 + 2 x 32,768 + 72 + 1024 =  83,016 (6 stages would fit: 214,216)
//   d = 128  32,768 + 2 x 65,536 + 72 + 1024 = 164,936 (3 stages would fit: 230,504; 4 not)
// Every tile offset is a multiple of 1024 (of 16,384 with Br = 128), so each tile's swizzle
// pattern starts 1024-aligned.
// The persistent grid (kQBuffers = 2) keeps two Q tiles and a full_q and empty_q each: + 32 KiB
// at d = 128 (197,728 bytes), + 16 KiB at d = 64.
// With three consumer warpgroups (kBr = 192) Q takes 192 x d x 2 bytes (24 KiB at d = 64, a
// multiple of 1024: the tiles after it stay swizzle-aligned).
// O staged for its TMA store (kStageO) takes Br x d x 2 bytes more, after V (a multiple of 1024):
// the most, d = 128 on the persistent grid, 197,728 + 32,768 = 230,496 bytes (<= 232,448).
// kStages: the K, V stages (kHopperStages, the rung's; 4 at d = 64 as the step fwd_stages4).
// kBc: the key tile (hopper_bc, the rung's; 176 at d = 128 as the step fwd_bc176, below).
template <int kD, int kQBuffers = 1, int kBr = kHopperBr, bool kStageO = false,
          int kStages = kHopperStages, int kBc = hopper_bc(kD)>
struct HopperSmem {
  static constexpr int kTile = kBc * kD * 2;                             // one K or V tile
  static constexpr int kQBarriers = kQBuffers == 1 ? 1 : 2 * kQBuffers;  // full_q (and empty_q)
  static constexpr int kQ = 0, kK = kQBuffers * kBr * kD * 2;
  static constexpr int kV = kK + kStages * kTile;
  static constexpr int kO = kV + kStages * kTile;  // O's staging: Br x d x 2 (kStageO)
  static constexpr int kBarriers = kO + (kStageO ? kBr * kD * 2 : 0);
  static constexpr int kBytes = kBarriers + 8 * (kQBarriers + 4 * kStages) + 1024;  // + alignment
};
// Four stages at d = 64 on the persistent grid, three consumer warpgroups: 2 x 24,576 (Q) +
// 8 x 16,384 + 8 x 20 + 1024 = 181,408 bytes.
static_assert(HopperSmem<64, 2, 192, false, 4>::kBytes == 181408, "four stages at d = 64");
static_assert(HopperSmem<128, 2>::kBytes <= int(kSmemOptIn), "two Q buffers at d = 128");
static_assert(HopperSmem<128, 2, kHopperBr, true>::kBytes <= int(kSmemOptIn),
              "two Q buffers and O's staging at d = 128");
// At d = 256 (Bc = 64): Q 65,536 + 2 stages x (K + V) 2 x 2 x 32,768 = 196,608 bytes of tiles,
// 197,704 with the barriers and the alignment; a second Q buffer (the persistent grid) or O's
// staging would add 65,536 more, past the 232,448: the ordinary grid only, O from registers.
// Key tiles of Bc = 176 at d = 128 (the step fwd_bc176: FlashAttention-3's tile for its d = 128
// forward without a mask, 11 k steps of P V a tile where 128 keys take 8): K and V 2 stages x 2 x
// 176 x 128 x 2 = 180,224 bytes, + Q 32,768 + 72 + 1024 = 214,088, on the ordinary grid (one Q
// buffer; a second would pass 232,448). A tile is 45,056 bytes, 44 x 1024: every stage starts
// swizzle-aligned; S takes 88 registers of a consumer thread, P 44, O 64 (196 of its 240).
inline constexpr int kHopperWideBc = 176;
static_assert(HopperSmem<128, 1, kHopperBr, false, kHopperStages, kHopperWideBc>::kBytes ==
                      214088 &&
                  HopperSmem<128, 2, kHopperBr, false, kHopperStages, kHopperWideBc>::kBytes >
                      int(kSmemOptIn),
              "Bc = 176 at d = 128: the ordinary grid only");
static_assert(kHopperWideBc * 128 * 2 % 1024 == 0, "Bc = 176: stages 1024-aligned");
template <int kD>
inline constexpr bool kHopperPersistentFits = HopperSmem<kD, 2>::kBytes <= int(kSmemOptIn);
template <int kD>
inline constexpr bool kHopperStageOFits = HopperSmem<kD, 2, kHopperBr, true>::kBytes <=
                                          int(kSmemOptIn);
static_assert(HopperSmem<256>::kBytes == 197704 && !kHopperPersistentFits<256> &&
                  !kHopperStageOFits<256>,
              "d = 256: one Q buffer, two stages of 64-key tiles");
static_assert(kHopperPersistentFits<64> == hopper_forward_room(64) &&
                  kHopperPersistentFits<128> == hopper_forward_room(128) &&
                  kHopperPersistentFits<256> == hopper_forward_room(256) && kHopperStageOFits<64> &&
                  kHopperStageOFits<128>,
              "the host's hopper_forward_room (cuda_api.hpp)");

// The fp32 accumulators a consumer thread holds through the key loop: O, S and P's A fragments:
// d = 64 32 + 64 + 32 = 128, d = 128 64 + 64 + 32 = 160, d = 256 128 + 32 + 16 = 176 (Bc = 64).
constexpr int hopper_consumer_registers(int d) {
  return d / 2 + hopper_bc(d) / 2 + hopper_bc(d) / 4;
}

// Whether the kernel holds head dim D: 64-column chunks (TMA boxes, 128-byte swizzle), a wgmma
// n of d for O += P V (issue_pv: n64, n128, n256), the shared memory and the consumer registers
// above.
struct HopperFits {
  template <int kD>
  static constexpr bool at() {
    return (kD == 64 || kD == 128 || kD == 256) && HopperSmem<kD>::kBytes <= int(kSmemOptIn) &&
           hopper_consumer_registers(kD) <= kHopperConsumerRegisters;
  }
};
static_assert(hopper_consumer_registers(64) <= hopper_consumer_registers_max(3),
              "three consumer warpgroups at d = 64: O, S and P within 160 registers");
static_assert(HopperHeadDims::all<HopperFits>(),
              "a head dim of hopper (head_dims.hpp) that its tiles do not hold");
static_assert(kernel_tiles(Impl::hopper, 64).Br == 64 * HopperDefaults<64>::consumers &&
                  kernel_tiles(Impl::hopper, 128).Br == 64 * HopperDefaults<128>::consumers &&
                  kernel_tiles(Impl::hopper, 256).Br == 64 * HopperDefaults<256>::consumers,
              "the tiles the host says hopper computes (cuda_api.hpp)");

// The turns of the two consumer warpgroups at the tensor cores: before each batch of GEMMs a
// warpgroup waits for its barrier; after it, it lets the other go. Warpgroup 1 lets 0 go first
// and skips its last release, so that every barrier sees as many arrivals as waits.
// Warpgroup c waits on named barrier 1 + c (0 is __syncthreads') and releases 2 - c, the other's;
// each use counts 256 threads: the 128 that sync plus the 128 of the other warpgroup that arrive.
template <bool kOn>
struct Turns {
  int c, batches, done = 0;
  __device__ void start() {
    if (kOn && c == 1 && batches > 0) hopper_ptx::named_barrier_arrive(1, 256);
  }
  __device__ void take() {
    if (kOn) hopper_ptx::named_barrier_sync(1 + c, 256);
  }
  __device__ void give() {
    if (kOn && !(c == 1 && ++done == batches)) hopper_ptx::named_barrier_arrive(2 - c, 256);
  }
};

// S (64 x Bc of warpgroup c) = Q_i K_j^T: d / 16 wgmma m64n{Bc}k16, K-major operands (k steps of
// 32 bytes inside a 128-byte row, then the next 64-column chunk: 2 at d = 128, 4 at d = 256).
// Step kk covers columns 16 kk .. 16 kk + 15, in chunk kk / 4 at 32 (kk % 4) bytes into each row
// (16 elements of 2 bytes). The start address moves there; the descriptor does not:
//   q  chunk kk / 4 starts Br x 64 elements (Br x 128 = 16,384 bytes at Br = 128) after the
//      previous, and warpgroup c's 64 rows c x 64 x 64 elements (8,192 bytes) into it
//   k  chunk kk / 4 starts Bc x 64 elements (16,384 bytes; 8,192 at Bc = 64) after the previous
//   leading 16: not used for a K-major operand with the 128-byte swizzle (PTX ISA "Leading
//      Dimension Byte Offset": "assumed to be 1"; 16 >> 4 = 1); it is not the distance between
//      the halves, which the loop steps over by the address
//   stride 1024: from rows r .. r + 7 to rows r + 8 .. r + 15, 8 rows x 128 bytes (one swizzle
//      atom); A's 64 rows are 8 such groups, B's 128 rows 16
// Q and K arrive as descriptors of their tiles' first element (hopper_ptx::Operand, built once by
// the kernel), and each step's start is added to them.
template <class E, int kD, int kBr = kHopperBr, int Bc = hopper_bc(kD)>
__device__ inline void issue_qk(float (&s)[Bc / 8][4], hopper_ptx::Operand<E> Q,
                                hopper_ptx::Operand<E> K, int c) {
  hopper_ptx::wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kD / 16; ++kk)
    hopper_ptx::wgmma_ss<E, Bc>(s, Q.at((kk / 4) * kBr * 64 + c * 64 * 64 + (kk % 4) * 16),
                                K.at((kk / 4) * Bc * 64 + (kk % 4) * 16), kk > 0);
  hopper_ptx::wgmma_commit();
}

// O += P V_j: Bc / 16 wgmma m64n{d}k16, P's A fragments from registers, V_j N-major (16 keys =
// 2048 bytes a step; its 64-column chunks Bc x 128 bytes apart).
// Step kt covers keys 16 kt .. 16 kt + 15 (the k of this product): rows of V_j, kt x 16 x 64
// elements = kt x 2048 bytes (2 kt swizzle atoms) into the first chunk. For this MN-major operand:
//   leading Bc x 128 (16,384; 8,192 at d = 256, Bc = 64): from d columns 0 .. 63 to 64 .. 127,
//      the next 64-column chunk; read at d = 128 (n128, 2 chunks) and d = 256 (n256, 4), n64
//      staying inside the first
//   stride 1024: from keys 16 kt .. + 7 to the next 8 keys, 8 rows x 128 bytes
template <class E, int kD, int Bc = hopper_bc(kD)>
__device__ inline void issue_pv(float (&o)[kD / 8][4], const std::uint32_t (&p)[Bc / 16][4],
                                hopper_ptx::Operand<E> V) {
  hopper_ptx::wgmma_fence();
#pragma unroll
  for (int kt = 0; kt < Bc / 16; ++kt) hopper_ptx::wgmma_rs<E, kD>(o, p[kt], V.at(kt * 16 * 64));
  hopper_ptx::wgmma_commit();
}

// The forward's work item: query tile i of a head. On the persistent grid, item w of
// persistent_item's order, causal rows longest first (i = Tr - 1 - rank); the launcher counts
// each item's tiles with it (its schedule's costs).
struct FwdItem {
  index_t i, head;
};
FD_HOST_DEVICE FwdItem forward_item(int w, int Tr, int heads, int blocks, bool causal) {
  const TileItem t = persistent_item(w, Tr, heads, blocks, causal);
  return {causal ? index_t(Tr - 1 - t.rank) : index_t(t.rank), index_t(t.head)};
}

template <class E, int kD, bool kPingPong, bool kOverlap, bool kTrace, bool kPersistent = false,
          int kConsumers = 2, bool kStageO = false, int kExpFma = 0, int kKvStages = kHopperStages,
          int kBc = hopper_bc(kD), bool kIdlePadding = false>
__global__ void __launch_bounds__(hopper_threads(kConsumers), 1)
    hopper_forward_kernel(const __grid_constant__ CUtensorMap tmQ,
                          const __grid_constant__ CUtensorMap tmK,
                          const __grid_constant__ CUtensorMap tmV,
                          const __grid_constant__ CUtensorMap tmO, const HopperArgs<E> a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(!kPersistent || (!kPingPong && !kTrace),
                "the persistent grid: without ping-pong's turns and the trace");
  static_assert(kConsumers == 2 || (kConsumers == 3 && kD == 64 && !kPingPong),
                "three consumer warpgroups: d = 64, without ping-pong's turns");
  constexpr int kQBuffers = kPersistent ? 2 : 1;
  // The prefetch of the next item (a.prefetch) is compiled where it costs no spill: the persistent
  // grid, O from registers, and three consumer warpgroups only without the overlap (ptxas: its
  // producer code raised those instances' spills, up to 8 bytes where there were none).
  constexpr bool kPrefetch = kPersistent && !kStageO && (kConsumers == 2 || !kOverlap);
  static_assert(kBc == hopper_bc(kD) || (kD == 128 && kBc == kHopperWideBc && !kPersistent &&
                                         !kStageO && kConsumers == 2 && !kTrace),
                "a key tile other than the rung's: Bc = 176 at d = 128 on the ordinary grid");
  static_assert(!kIdlePadding || (!kOverlap && !kPingPong && !kTrace),
                "idle padding: the loop without the overlap, ping-pong's turns or the trace");
  constexpr int Br = 64 * kConsumers, Bc = kBc, kStages = kKvStages;
  using L = HopperSmem<kD, kQBuffers, Br, kStageO, kStages, Bc>;
  static_assert(L::kBytes <= int(kSmemOptIn), "this instance's tiles past shared memory");
  extern __shared__ unsigned char smem_raw[];
  unsigned char* smem = hopper_ptx::aligned_1024(smem_raw);
  E* sQ = reinterpret_cast<E*>(smem + L::kQ);
  E* sK = reinterpret_cast<E*>(smem + L::kK);
  E* sV = reinterpret_cast<E*>(smem + L::kV);
  std::uint64_t* full_q = reinterpret_cast<std::uint64_t*>(smem + L::kBarriers);
  std::uint64_t* empty_q = full_q + kQBuffers;  // (persistent only)
  std::uint64_t* full_k = full_q + L::kQBarriers;
  std::uint64_t* full_v = full_k + kStages;
  std::uint64_t* empty_k = full_v + kStages;
  std::uint64_t* empty_v = empty_k + kStages;

  const index_t Tr = a.tiling.Tr();
  // The block's work items: (persistent) its list in the schedule (block_schedule's layout) from
  // entry `start`, each entry as the launcher decoded it (a.listed: i, head, J_i, F_i; tile -1
  // ends the list), so that no warp divides between items; or its own (i, head), longest first,
  // worked out here: own_at(k), the ordinary grid's entry k (0, then -1), and own_item().
  // (Each grid's code is its own, under if constexpr: the listed items' code on the ordinary grid
  // measured 0.87x to 0.98x; docs/gpu-ladder.md, session 37.)
  const int start = kPersistent ? a.schedule[blockIdx.x] : 0;
  const auto own_at = [](int k) { return k == 0 ? 0 : -1; };
  const auto own_item = [&]() -> FwdItem {
    return {a.mask.causal ? Tr - 1 - index_t(blockIdx.x) : index_t(blockIdx.x),
            index_t(blockIdx.y)};
  };
  const int wg = hopper_ptx::warpgroup_index();  // (uniform in a warp: see there)
  // full_*: 1 arrival, the producer's arrive.expect_tx, plus the bytes of the copies; empty_*:
  // lane 0 of each of the kConsumers x 4 consumer warps (release), 8 or 12.
  constexpr int kWarps = 4 * kConsumers;
  if (threadIdx.x == 0) {
    for (int b = 0; b < kQBuffers; ++b) {
      hopper_ptx::mbarrier_init(full_q + b, 1);
      if constexpr (kPersistent) hopper_ptx::mbarrier_init(empty_q + b, kWarps);
    }
    for (int s = 0; s < kStages; ++s) {
      hopper_ptx::mbarrier_init(full_k + s, 1), hopper_ptx::mbarrier_init(full_v + s, 1);
      hopper_ptx::mbarrier_init(empty_k + s, kWarps);  // one arrival per consumer warp
      hopper_ptx::mbarrier_init(empty_v + s, kWarps);
    }
    hopper_ptx::fence_barrier_init();
  }
  __syncthreads();

  if (wg == 0) {  // the producer
    hopper_ptx::setmaxnreg_dec<kHopperProducerRegisters>();
    if (threadIdx.x != 0) return;
    hopper_ptx::prefetch_tensor_map(&tmQ), hopper_ptx::prefetch_tensor_map(&tmK);
    hopper_ptx::prefetch_tensor_map(&tmV);
    auto prefetch_next = [&](int kn) {  // (kPrefetch: the persistent grid only)
      const ListedItem nx = a.listed[kn];
      if (nx.tile < 0) return;
      for (int h = 0; h < kD / 64; ++h) {
        hopper_ptx::tma_prefetch_l2_3d(&tmQ, h * 64, nx.tile * Br, nx.head);
        for (int j = 0; j < a.prefetch && j < int(a.tiling.Tc()); ++j) {
          hopper_ptx::tma_prefetch_l2_3d(&tmK, h * 64, j * Bc, nx.head);
          hopper_ptx::tma_prefetch_l2_3d(&tmV, h * 64, j * Bc, nx.head);
        }
      }
    };
    index_t u = 0;  // K_j, V_j tiles loaded so far, over the items: stage u % kStages
    int t = 0;      // Q tiles loaded so far: buffer t % kQBuffers
    // Item it of J_i key tiles, entry k of the block's list: its Q_i, then its K_j, V_j.
    auto load_item = [&](const FwdItem& it, index_t J, int k) {
      if (J == 0) return;  // (the consumers write its zeros without waiting)
      const int b = t % kQBuffers;
      // Q's buffer b was last filled for item t - 2: its release is empty_q[b]'s phase t / 2 - 1.
      if (kPersistent && t >= kQBuffers)
        hopper_ptx::mbarrier_wait(empty_q + b, unsigned((t / kQBuffers - 1) & 1));
      // Br x d x 2 bytes: d / 64 boxes of Br rows x 128 bytes (16,384 each at Br = 128, 24,576 at
      // 192; rows past the tensor zero-filled and counted too). Box h: columns 64 h .. 64 h + 63
      // (x = h x 64), written to half h, Br x 64 elements after the previous one.
      hopper_ptx::mbarrier_arrive_expect_tx(full_q + b, Br * kD * 2);
      for (int h = 0; h < kD / 64; ++h)
        hopper_ptx::tma_load_3d(sQ + b * Br * kD + h * Br * 64, &tmQ, h * 64, int(it.i * Br),
                                int(it.head), full_q + b);
      // Tile u (the item's tile j) is stage s's use u / kStages (its fill, counting from 0).
      // Before refilling the stage the producer waits for the consumers' release of tile
      // u - kStages, use u / kStages - 1 of that stage, which completed phase u / kStages - 1 of
      // empty_k[s] and empty_v[s]: parity (u / kStages - 1) & 1. The consumers wait for phase
      // u / kStages of full_k[s] / full_v[s]: parity (u / kStages) & 1 (parity below). At
      // kStages = 2, for the block's first item (u = j):
      //   j = 0, 1  stage j,     full parity 0; no empty wait (the stage has never been filled)
      //   j = 2, 3  stage j - 2, full parity 1; empty parity 0 (tiles 0, 1 released: phase 0)
      //   j = 4, 5  stage j - 4, full parity 0; empty parity 1 (tiles 2, 3 released: phase 1)
      // The next item's Q_i and first key tiles to L2 (a.prefetch of them), kPrefetchLead tiles
      // before this item's end: the copies that start it then read L2, not DRAM.
      const index_t lead_at = J > kPrefetchLead ? J - kPrefetchLead : 0;
      for (index_t j = 0; j < J; ++j, ++u) {
        if constexpr (kPrefetch)
          if (a.prefetch > 0 && j == lead_at) prefetch_next(k + 1);
        const int s = int(u % kStages);
        const unsigned freed = unsigned((u / kStages - 1) & 1);  // tile u - kStages's release
        if (u >= kStages) hopper_ptx::mbarrier_wait(empty_k + s, freed);
        // As Q's: Bc x d x 2 bytes in d / 64 boxes; stage s at s x Bc x d elements, half h at
        // h x Bc x 64 more. The box's y is the tile's first key j x Bc, z the head.
        hopper_ptx::mbarrier_arrive_expect_tx(full_k + s, Bc * kD * 2);
        for (int h = 0; h < kD / 64; ++h)
          hopper_ptx::tma_load_3d(sK + s * Bc * kD + h * Bc * 64, &tmK, h * 64, int(j * Bc),
                                  int(it.head), full_k + s);
        if (u >= kStages) hopper_ptx::mbarrier_wait(empty_v + s, freed);
        hopper_ptx::mbarrier_arrive_expect_tx(full_v + s, Bc * kD * 2);
        for (int h = 0; h < kD / 64; ++h)
          hopper_ptx::tma_load_3d(sV + s * Bc * kD + h * Bc * 64, &tmV, h * 64, int(j * Bc),
                                  int(it.head), full_v + s);
      }
      ++t;
    };
    if constexpr (kPersistent) {
      for (int k = start;; ++k) {
        const ListedItem e = a.listed[k];  // (one 16-byte load)
        if (e.tile < 0) break;
        load_item({e.tile, e.head}, e.J, k);
      }
    } else {
      for (int k = start; own_at(k) >= 0; ++k) {
        const FwdItem it = own_item();
        load_item(it, computed_key_tiles(a.tiling, a.mask, it.i), k);
      }
    }
    return;
  }

  hopper_ptx::setmaxnreg_inc<hopper_consumer_registers_max(kConsumers)>();
  // A wgmma accumulator gives warp w of the warpgroup rows 16 w .. 16 w + 15 of its 64, as
  // mma.sync's C fragment (fragment.cuh): lane 4 g + t holds rows g and g + 8.
  const int c = wg - 1, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const int g = lane / 4, t = lane % 4, row = c * 64 + warp * 16 + g;  // rows row, row + 8
  // The tiles' descriptors, once (the stage's offset added in the loop): Q and K K-major, V
  // N-major (its 64-column halves Bc x 128 bytes apart).
  const hopper_ptx::Operand<E> Q0 = hopper_ptx::k_major(sQ), Kk = hopper_ptx::k_major(sK),
                               Vt = hopper_ptx::mn_major(sV, Bc);

  // Work item x: query tile i of a head, J key tiles (the first F unmasked). Its tile j is the
  // block's tile u0 + j: stage (u0 + j) % kStages, in that stage's use (u0 + j) / kStages, the
  // phase of full_k / full_v it waits for; its Q tile the block's qn-th, in buffer qn % kQBuffers.
  struct Item {
    index_t i, head, J, F, u0;
    int qn;
  };
  // Entry k is read an item ahead (off the path between items): on the persistent grid the whole
  // entry as the launcher decoded it, on the ordinary grid whether there is one.
  int k = start;  // the block's next entry in its list
  ListedItem e_next = kPersistent ? a.listed[k] : ListedItem{};
  int wi_next = kPersistent ? 0 : own_at(k);
  index_t u_next = 0;              // the K_j, V_j tiles of the block's earlier items
  int q_next = 0;                  // the Q tiles of its earlier items (those that saw a key)
  auto take_item = [&](Item& x) {  // entry k's item, if any
    if constexpr (kPersistent) {
      const ListedItem e = e_next;
      if (e.tile < 0) return false;
      e_next = a.listed[++k];
      x = {e.tile, e.head, e.J, e.F, u_next, q_next};
      if (e.J > 0) u_next += e.J, ++q_next;
      return true;
    }
    const int wi = wi_next;
    if (wi < 0) return false;
    wi_next = own_at(++k);
    const FwdItem it = own_item();
    const index_t J = computed_key_tiles(a.tiling, a.mask, it.i);
    x = {it.i, it.head, J, full_key_tiles(a.tiling, a.mask, it.i), u_next, q_next};
    if (J > 0) u_next += J, ++q_next;
    return true;
  };
  auto stage = [&](const Item& x, index_t j) { return int((x.u0 + j) % kStages); };
  auto parity = [&](const Item& x, index_t j) { return unsigned(((x.u0 + j) / kStages) & 1); };
  auto release = [&](std::uint64_t* empty, const Item& x, index_t j) {  // done with its K or V
    __syncwarp();
    if (lane == 0) hopper_ptx::mbarrier_arrive(empty + stage(x, j));
  };
  auto release_q = [&](const Item& x) {  // every S of the item is in: its Q buffer free
    if constexpr (kPersistent) {
      __syncwarp();
      if (lane == 0) hopper_ptx::mbarrier_arrive(empty_q + x.qn % kQBuffers);
    }
  };
  auto wait_q = [&](const Item& x) {
    hopper_ptx::mbarrier_wait(full_q + x.qn % kQBuffers, unsigned((x.qn / kQBuffers) & 1));
  };
  auto wait_k = [&](const Item& x, index_t j) {
    hopper_ptx::mbarrier_wait(full_k + stage(x, j), parity(x, j));
  };
  auto wait_v = [&](const Item& x, index_t j) {
    hopper_ptx::mbarrier_wait(full_v + stage(x, j), parity(x, j));
  };

  // O's staging (kStageO): warpgroup c's 64 rows as d / 64 boxes of 64 rows x 128 bytes, each
  // 128-byte swizzled as the tensor map's boxes (the 16-byte chunk k of row r at chunk k ^ (r %
  // 8)), sent by the warpgroup's first thread, which waits for the last send's read before the
  // warpgroup writes again. A store instruction's 8 rows g (lanes 4 g + t) fill chunks (nb % 8) ^
  // g, 4 bytes each at 4 t: 32 distinct banks. Named barrier 3 + c is warpgroup c's own (1, 2: the
  // turns).
  E* sO = reinterpret_cast<E*>(smem + L::kO) + c * 64 * kD;
  const bool sender = threadIdx.x % 128 == 0;
  auto stage_o = [&](const Item& x, const float(&acc)[kD / 8][4], const float(&inv)[2]) {
    if (sender) hopper_ptx::bulk_wait_read<0>();
    hopper_ptx::named_barrier_sync(3 + c, 128);
    unsigned char* base = reinterpret_cast<unsigned char*>(sO);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int local = warp * 16 + g + 8 * r;  // (local % 8 = g)
#pragma unroll
      for (int nb = 0; nb < kD / 8; ++nb)
        *reinterpret_cast<std::uint32_t*>(base + (nb / 8) * 64 * 128 + local * 128 +
                                          ((nb % 8) ^ g) * 16 + 4 * t) =
            ptx::pack2<E>(acc[nb][2 * r] * inv[r], acc[nb][2 * r + 1] * inv[r]);
    }
    hopper_ptx::fence_proxy_async();
    hopper_ptx::named_barrier_sync(3 + c, 128);
    if (sender) {
      for (int h = 0; h < kD / 64; ++h)
        hopper_ptx::tma_store_3d(&tmO, h * 64, int(x.i * Br + c * 64), int(x.head),
                                 sO + h * 64 * 64);
      hopper_ptx::bulk_commit();
    }
  };
  // Before the block ends: the last send done (its shared memory read, its writes made).
  auto drain_o = [&] {
    if (kStageO && sender) hopper_ptx::bulk_wait<0>();
  };

  float o[kD / 8][4] = {};
  float s[Bc / 8][4];
  std::uint32_t p[Bc / 16][4];
  float m_old[2], alpha[2] = {1.0f, 1.0f};
  bool moved = false;
  auto issue_s = [&](const Item& x, index_t j) {  // S = Q_i K_j^T
    issue_qk<E, kD, Br, Bc>(s, Q0.plus((x.qn % kQBuffers) * Br * kD),
                            Kk.plus(stage(x, j) * Bc * kD), c);
  };
  auto issue_o = [&](const Item& x, index_t j) {  // O += P_j V_j
    hopper_ptx::fence_operands(p);
    issue_pv<E, kD, Bc>(o, p, Vt.plus(stage(x, j) * Bc * kD));
  };
  auto softmax = [&](const Item& x, index_t j, FragmentRows& rows) {  // S -> P, then the trace
    if (j >= x.F || (j + 1) * Bc > a.n_keys)
      mask_fragment<Bc>(s, a.mask, x.i * Br + row, j * Bc, a.n_keys);
    moved = softmax_fragment<Bc, kExpFma>(s, rows, a.scale2, m_old, alpha);
    if (kTrace && x.head == 0) {  // the trace is head 0's, as on every rung
      record_tile(a.trace, a.tiling, x.i, j, row, m_old, rows, alpha);
      if (threadIdx.x == 128) a.trace.computed[x.i * a.tiling.Tc() + j] = 1;
    }
  };
  auto rescale = [&] {
    if (__any_sync(0xffffffffu, moved)) rescale_fragment<kD>(o, alpha);
  };
  auto to_p = [&] {
#pragma unroll
    for (int kt = 0; kt < Bc / 16; ++kt) p_fragment<E, Bc>(p[kt], s, kt);
  };
  // O_i = O / l and L_i = m2 ln 2 + log l of the lane's rows (finish_rows sums l over the row's
  // lanes in place; O = 0, L = -inf for a row that saw no key). L from registers to global memory;
  // O too, or (kStageO) into the warpgroup's staging, sent by TMA (stage_o).
  // Row q's columns 8 nb + 2 t and + 1 are acc[nb][2 r] and [2 r + 1] (C fragment layout).
  auto store_rows = [&](const Item& x, FragmentRows& rows, const float(&acc)[kD / 8][4]) {
    float inv[2];
    finish_rows(rows, inv);
    if constexpr (kStageO) stage_o(x, acc, inv);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const index_t q = x.i * Br + row + 8 * r;
      if (q >= a.n) continue;
      if (t == 0) a.L[x.head * a.n + q] = finalize2(rows.m2[r], rows.l[r]);
      if (kTrace && x.head == 0 && t == 0) {
        a.trace.final_m[q] = rows.m2[r] * 0.69314718055994531f;
        a.trace.final_l[q] = rows.l[r];
      }
      if constexpr (!kStageO) {
        E* O = a.O + x.head * a.n * kD;
#pragma unroll
        for (int nb = 0; nb < kD / 8; ++nb)
          *reinterpret_cast<std::uint32_t*>(O + q * kD + nb * 8 + 2 * t) =
              ptx::pack2<E>(acc[nb][2 * r] * inv[r], acc[nb][2 * r + 1] * inv[r]);
      }
    }
  };
  auto clear_o = [&] {
#pragma unroll
    for (int nb = 0; nb < kD / 8; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[nb][e] = 0.0f;
  };
  // An item that sees no key: O = 0, L = -inf, without waiting (the producer skips it); from
  // zeros of its own, not from o, which may hold the current item's sums (0 x -s is -0, 0 x inf
  // NaN).
  auto store_empty = [&](const Item& x) {
    FragmentRows none;
    const float zeros[kD / 8][4] = {};
    store_rows(x, none, zeros);
  };

  if constexpr (kOverlap) {
    // The block's items as one stream of key tiles. Within an item, S_j = Q K_j^T is issued with
    // O += P_{j-1} V_{j-1}, and the softmax of S_j runs while that product is on the tensor
    // cores; across items (the persistent grid), the next item's S_0 is issued with this item's
    // last P V, and its softmax runs under it: only the store of O is left between items.
    // Batches of GEMMs a warpgroup issues per item (ping-pong's turns, the ordinary grid's one
    // item): S_0, then one per later tile, then the last P V: J + 1.
    // Each path is straight-line from its issues to its waits: with an issue or a wait under a
    // condition, ptxas serialized every wgmma of the kernel (C7514; measured 0.7x).
    Item cur;
    bool have = take_item(cur);
    for (; have && cur.J == 0; have = take_item(cur)) store_empty(cur);
    if (!have) return drain_o();  // (no item that sees a key)
    Turns<kPingPong> turns{c, int(cur.J + 1)};
    turns.start();
    FragmentRows st;
    wait_q(cur);
    wait_k(cur, 0);
    turns.take();
    issue_s(cur, 0);
    turns.give();
    hopper_ptx::wgmma_wait<0>();
    hopper_ptx::fence_operands(s);
    release(empty_k, cur, 0);
    softmax(cur, 0, st);
    to_p();
    for (index_t j = 1;;) {
      if (j < cur.J) {  // S_j with O += P_{j-1} V_{j-1}, then softmax(S_j)
        wait_k(cur, j);
        turns.take();
        issue_s(cur, j);
        rescale();  // O (done: P_{j-2} V_{j-2} was waited for) to tile j - 1's max
        wait_v(cur, j - 1);
        issue_o(cur, j - 1);
        turns.give();
        hopper_ptx::wgmma_wait<1>();  // S_j is in; P_{j-1} V_{j-1} may still run
        hopper_ptx::fence_operands(s);
        release(empty_k, cur, j);
        softmax(cur, j, st);
        hopper_ptx::wgmma_wait<0>();
        hopper_ptx::fence_operands(o), hopper_ptx::fence_operands(p);
        release(empty_v, cur, j - 1);
        to_p();
        ++j;
        continue;
      }
      release_q(cur);
      Item nxt;
      bool more = take_item(nxt);
      for (; more && nxt.J == 0; more = take_item(nxt)) store_empty(nxt);
      if (!more) {  // the block's last item: its last O += P V alone
        rescale();
        wait_v(cur, cur.J - 1);
        turns.take();
        issue_o(cur, cur.J - 1);
        turns.give();
        hopper_ptx::wgmma_wait<0>();
        hopper_ptx::fence_operands(o), hopper_ptx::fence_operands(p);
        release(empty_v, cur, cur.J - 1);
        store_rows(cur, st, o);
        return drain_o();
      }
      FragmentRows st_next;  // (the persistent grid only: no turns here)
      wait_q(nxt);
      wait_k(nxt, 0);
      issue_s(nxt, 0);  // the next item's S_0 ...
      rescale();
      wait_v(cur, cur.J - 1);
      issue_o(cur, cur.J - 1);  // ... beside this one's last O += P V
      hopper_ptx::wgmma_wait<1>();
      hopper_ptx::fence_operands(s);
      release(empty_k, nxt, 0);
      softmax(nxt, 0, st_next);
      hopper_ptx::wgmma_wait<0>();
      hopper_ptx::fence_operands(o), hopper_ptx::fence_operands(p);
      release(empty_v, cur, cur.J - 1);
      store_rows(cur, st, o);
      clear_o();
      st = st_next, cur = nxt, j = 1;
      to_p();
    }
  } else {
    // Item by item: for each tile S_j, its softmax, then O += P_j V_j, one after the other.
    Item x;
    while (take_item(x)) {
      if (x.J == 0) {
        store_empty(x);
        continue;
      }
      // J_c: the key tiles this warpgroup's own 64 rows see (kIdlePadding; else the item's J).
      const index_t Jc = kIdlePadding ? key_tiles_of_rows(a.tiling, a.mask, x.i * Br + c * 64,
                                                          x.i * Br + c * 64 + 64)
                                      : x.J;
      Turns<kPingPong> turns{c, int(2 * x.J)};  // S_j and P_j V_j apart for each tile
      turns.start();
      FragmentRows st;
      wait_q(x);
      for (index_t j = 0; j < Jc; ++j) {
        wait_k(x, j);
        turns.take();
        issue_s(x, j);
        turns.give();
        hopper_ptx::wgmma_wait<0>();
        hopper_ptx::fence_operands(s);
        release(empty_k, x, j);
        softmax(x, j, st);
        rescale();
        to_p();
        wait_v(x, j);
        turns.take();
        issue_o(x, j);
        turns.give();
        hopper_ptx::wgmma_wait<0>();
        hopper_ptx::fence_operands(o);
        release(empty_v, x, j);
      }
      // Tiles J_c .. J - 1, which the item's later rows see and these do not (kIdlePadding):
      // waited for and released, not computed. Each wait before its release, as the computing
      // warps do: a release then never counts toward an earlier phase than its own (Q's buffer
      // too: full_q's phase for x completes only after every warp released the buffer's item
      // before x).
      for (index_t j = Jc; j < x.J; ++j) {
        wait_k(x, j);
        release(empty_k, x, j);
        wait_v(x, j);
        release(empty_v, x, j);
      }
      release_q(x);
      store_rows(x, st, o);  // (rows that saw no key: O = 0, L = -inf; rows past n: none)
      clear_o();
    }
    drain_o();
  }
#else
  __trap();  // built for a GPU without sm_90a's instructions: the host refuses before launching
#endif
}

}  // namespace fd::cuda
