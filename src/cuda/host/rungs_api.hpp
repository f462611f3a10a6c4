// rungs_api.hpp — the launchers of the GPU ladder above the teaching kernels (ladder.cu), as
// teaching.cu calls them: simt (fp32, register-tiled), tc, mma and hopper (tensor cores).
#pragma once

#include <vector>

#include "cuda/host/cuda_api.hpp"

namespace fd::cuda {

// Head 0's trace in a rung's kernel when not null: per computed tile and row, the state before
// and after it (m in natural units, as the CPU trace has it).
struct RungTrace {
  char* computed = nullptr;                                                  // Tr x Tc
  float *m_old = nullptr, *m_new = nullptr, *alpha = nullptr, *l = nullptr;  // Tr x Tc x Br
  float *final_m = nullptr, *final_l = nullptr;                              // n
};

// The forward of rung `impl` on host arrays (values of variant.p_in's format for tc and mma).
template <class T>
void rung_forward(const Shape& s, const AttnParams& params, Variant v, Impl impl, const T* Q,
                  const T* K, const T* V, T* O, T* L, T* L_lo, KernelTrace* trace);

// CUDA-event times of rung `impl`'s forward on device-resident copies of Q, K, V.
template <class T>
Timing rung_time(const Shape& s, const AttnParams& params, Variant v, Impl impl, const T* Q,
                 const T* K, const T* V, int warmup, int reps);

// hopper's forward steps: its two overlaps (ping-pong between the consumer warpgroups, softmax
// under the GEMMs within one) each on or off (-1: the rung's choice at d), and the grid
// (persistent 1: a block an SM looping over the (query tile, head) items; 0: a block each; -1:
// the rung's choice at d, the key tiles and the mask).
// consumers: the consumer warpgroups, 2 (Br = 128) or 3 (Br = 192, d = 64 only; -1: the rung's
// choice, 3 at d = 64). stage_o: O stored from registers (0) or sent from shared memory by TMA (1;
// without ping-pong; in fp16 only as the choice, d = 128's persistent grid with the overlap; -1:
// the rung's choice, 1 there and 0 elsewhere). exp_fma: 1 in exp_fma of the softmax's
// exponentials on the FMA pipe (exp2_fma) instead of the special-function unit (0, the rung's;
// 8 or 4: d = 64, bf16, without overlap, ping-pong or O staged). bc: the key tile (-1, the rung's;
// 176 at d = 128, bf16, on the ordinary grid with O from registers: the step fwd_bc176).
// idle_padding: 1, a consumer warpgroup computes only the key tiles its own rows see and only
// waits and releases the item's others: all of them where its rows lie past n (padding), the last
// ones past its rows' diagonal under a causal mask (d = 64, three consumers, without the
// overlap); 0, every warpgroup computes the item's tiles, padding too (the step
// fwd_padding_computed); -1, the rung's: 1 wherever that kernel was built and graded
// (HopperDefaults), 0 elsewhere.
struct HopperFwdSteps {
  int ping_pong = -1, overlap = -1, persistent = -1;
  int consumers = -1;
  int stage_o = -1;
  int exp_fma = 0;
  int prefetch = -1;
  int stages = -1;
  int bc = -1;
  int idle_padding = -1;
};
// The same times for hopper under a setting of its forward steps: what each step buys.
template <class T>
Timing hopper_time_steps(const Shape& s, const AttnParams& params, Variant v, HopperFwdSteps steps,
                         const T* Q, const T* K, const T* V, int warmup, int reps);
// hopper's forward under a setting of its steps, O and L downloaded as rung_forward's: what the
// tests grade each forward setting of `ladder --steps` with.
template <class T>
void hopper_forward_steps(const Shape& s, const AttnParams& params, Variant v, HopperFwdSteps steps,
                          const T* Q, const T* K, const T* V, T* O, T* L);

// hopper's backward steps, each on or off: what each buys. dQ added by the copy engine's bulk
// reduce (bulk_dq) or by each thread's atomics; cut between the warpgroups by columns
// (dq_by_columns 1: halves of d, each over all keys) or by keys (0); with bulk_dq, the warpgroups'
// own overlaps (overlap: bit 1, P^T computed while dP^T runs; bit 2, dQ issued before dK; bit 32,
// three stages of Q_i and dO_i at d = 128; bit 64, dQ's reduces issued by a writer warp; bf16
// only); Br query rows a step (the rung's: 128 at d =
// 64, 64 at d = 128; and 64 at d = 64, bf16 only); dQ's staging for the bulk reduce (staging: 0
// swizzled, 1 spread, 2 groups, DqStaging in hopper_backward.cuh; bf16 only). -1: the rung's
// default.
struct HopperBwdSteps {
  bool bulk_dq = true;
  int dq_by_columns = -1, overlap = -1, Br = -1;
  int held = 0;  // rows of K_j (1), of K_j and V_j (2) in registers (HopperSteps::bwd_held)
  int staging = -1;
  int persistent = 0;  // 1: one block an SM over the (key tile, head) items (bf16 only)
  int rotate = 0;      // 1: the rung's choice, key tile j's walk over the query tiles rotated by j
};
template <class T>
Timing hopper_time_backward_steps(const Shape& s, const AttnParams& params, Variant v,
                                  HopperBwdSteps steps, const T* Q, const T* K, const T* V,
                                  const T* dO, int warmup, int reps);

// hopper's ideas, each setting timed alone (`flashdemo ladder --steps`): the rung's own choice at
// d, then its forward with overlap and ping-pong each on or off (two consumer warpgroups), three
// consumer warpgroups (d = 64) without and with the overlap (bf16), the persistent grid, O sent by
// TMA from shared memory (bf16), 1 in 8 or 1 in 4 of the exps on the FMA pipe (d = 64, bf16), or
// its backward with dQ added by atomics, the overlaps bit by bit, dQ staged without bank conflicts
// (spread), and, where the rung has them, Br = 64 at d = 64 (the rung's is 128 there) with the
// variants only it has (the pipeline across tiles, K_j and V_j held in registers, dQ cut by column
// halves), or the cut of dQ by keys, three stages of Q_i, dO_i and two sets of dQ's staging (d =
// 128), and the query tiles walked from a place of each key tile's own (rotated). The choice's
// backward has dQ's reduces issued by a writer warp, which every backward step but the rotated walk
// and the two sets runs without (hopper_steps.cpp). The backward's variants beyond atomics are
// built in bf16 only: in fp16 the list stops there.
enum class HopperStep {
  rung_choice,
  fwd_none,
  fwd_overlap,
  fwd_ping_pong,
  fwd_both,
  fwd_three_consumers,
  fwd_three_overlap,
  fwd_persistent,
  fwd_o_staged,
  fwd_o_registers,
  fwd_bc176,
  fwd_persistent_overlap,
  fwd_prefetch,
  fwd_stages4,
  fwd_padding_computed,  // fwd_idle_padding until the idle warpgroups were the choice
  fwd_exp_fma8,
  fwd_exp_fma4,
  bwd_atomics,
  bwd_none,
  bwd_p,
  bwd_dq,
  bwd_p_dq,
  bwd_next,
  bwd_k_registers,
  bwd_kv_registers,
  bwd_dq_spread,
  bwd_dq_halves,
  bwd_br64,
  bwd_dq_by_keys,
  bwd_stages3,
  bwd_dq_sets2,
  bwd_rotate,
  bwd_persistent
};
std::vector<HopperStep> hopper_steps(Pass pass, index_t d, Precision p);
// A backward step's setting (the forward's steps and rung_choice: the rung's default).
HopperBwdSteps hopper_bwd_setting(HopperStep step);
// A forward step's setting (the backward's steps and rung_choice: the rung's default).
HopperFwdSteps hopper_fwd_setting(HopperStep step);

// The step's median time, host arrays in (dO for the backward), as the tests time each step.
template <class T>
Timing hopper_time_step(HopperStep step, Pass pass, const Shape& s, const AttnParams& params,
                        Variant v, const T* Q, const T* K, const T* V, const T* dO, int warmup,
                        int reps);

// The backward of rung `impl` (mma, hopper) on host arrays: O and L from a forward (any path), dO
// given; dQ, dK, dV and D (= rowsum(dO * O)) out, in fp32 sums. dQ by fp32 atomics, or,
// deterministic, in its own pass (bit-reproducible).
template <class T>
void rung_backward(const Shape& s, const AttnParams& params, Variant v, Impl impl,
                   bool deterministic, const T* Q, const T* K, const T* V, const T* O, const T* L,
                   const T* dO, T* dQ, T* dK, T* dV, T* D);

// hopper's backward under one setting of its steps (hopper_bwd_setting), on host arrays as
// rung_backward: what the tests grade each setting of `ladder --steps` with.
template <class T>
void hopper_backward_steps(const Shape& s, const AttnParams& params, Variant v,
                           HopperBwdSteps steps, const T* Q, const T* K, const T* V, const T* O,
                           const T* L, const T* dO, T* dQ, T* dK, T* dV);

// CUDA-event times of rung `impl`'s backward (its own forward first, for O and L).
template <class T>
Timing rung_time_backward(const Shape& s, const AttnParams& params, Variant v, Impl impl,
                          bool deterministic, const T* Q, const T* K, const T* V, const T* dO,
                          int warmup, int reps);

}  // namespace fd::cuda
