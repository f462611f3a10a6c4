// hopper_steps.cpp — hopper's ideas as settings that can each be timed alone (rungs_api.hpp),
// in a build with CUDA or without (there the timing functions say that CUDA is missing):
//   forward    (ping-pong, overlap) in {0, 1}^2 with two consumer warpgroups, at d = 64 three
//              (the rung's there) without the overlap and with it (bf16, on the rung's
//              grid: across items on the persistent one), the persistent grid, O sent by TMA from
//              shared memory rather than stored from registers (bf16), the persistent grid with the
//              next item's Q_i and first key tiles sent to L2 ahead (at d = 256 none of these
//              three: no shared memory left for them); at d = 128 O stored from registers on the
//              choice's grid (the choice sends it by TMA on the persistent grid there) and key
//              tiles of 176 on the ordinary grid (bf16); at d = 64 the persistent grid with two
//              consumer warpgroups and the overlap across items (d = 128's stream of tiles: Br =
//              128); at d = 64 1 in 8 or 1 in 4 of the softmax's exps on the FMA pipe (exp2_fma,
//              bf16), four K, V stages on the persistent grid (bf16), and three consumer warpgroups
//              that compute every tile of their items, padded rows and tiles past their rows'
//              diagonal too (the choice's warpgroups idle there): hopper.cuh
//   backward   dQ by atomics or the copy engine's bulk reduce; overlap bits P (P^T while dP^T
//              runs) and Dq (dQ's block before dK); at d = 64 (the rung's Br = 128) Br = 64 with
//              its own variants: the pipeline across tiles (P and Next), K_j (and V_j) held in
//              registers, dQ cut by column halves; at d = 128 dQ cut by keys, three stages,
//              the rung's choice with two sets of dQ's staging;
//              at both, dQ staged without bank conflicts (spread), the query tiles walked
//              from a place of each key tile's own (rotated)                hopper_backward.cuh
// The rung's own choice at d (its per-d defaults) comes first: the base each step is read against.
// Its backward issues dQ's reduces from a writer warp at both d: the overlap steps (bwd_none ..
// bwd_p_dq), spread, three stages, the cut by keys, Br = 64 and the persistent grid run without
// it, so their ratio to the choice holds the writer's share too; the rotated walk and the two sets
// of dQ's staging keep it. Its forward at d = 64 idles a warpgroup on the tiles its rows do not
// see, padded rows and past their diagonal (three consumers, the plain loop): the steps whose
// kernels do not (the overlap with three, O staged, the L2 prefetch, four stages, exps on the FMA
// pipe) compute those tiles, so their ratio to the choice holds that share too;
// fwd_padding_computed shows it alone.
#include "cuda/host/rungs_api.hpp"

namespace fd::cuda {
namespace {

// One table of the settings: where each applies (the pass; d, 0 for any; whether only bf16 has
// its kernel) and what it sets: the forward's HopperFwdSteps (ping-pong, overlap, persistent,
// consumers, stage_o, exp_fma, prefetch, stages, bc, idle_padding), or the backward's
// HopperBwdSteps (bulk_dq, dq_by_columns, overlap bits P = 1, Dq = 2, Next = 4, Stages3 = 32,
// Writer = 64, Sets2 = 256, Br, held,
// staging, persistent, rotate; -1 the rung's default). rung_choice stands once per pass, with every
// switch at the default.
struct StepSetting {
  HopperStep step;
  Pass pass;
  index_t d;
  bool bf16_only;
  HopperFwdSteps fwd;
  HopperBwdSteps bwd;
};
constexpr StepSetting kSettings[] = {
    {HopperStep::rung_choice, Pass::fwd, 0, false, {}, {}},
    {HopperStep::fwd_none, Pass::fwd, 0, false, {0, 0, 0, 2}, {}},
    {HopperStep::fwd_overlap, Pass::fwd, 0, false, {0, 1, 0, 2}, {}},
    {HopperStep::fwd_ping_pong, Pass::fwd, 0, false, {1, 0, 0, 2}, {}},
    {HopperStep::fwd_both, Pass::fwd, 0, false, {1, 1, 0, 2}, {}},
    {HopperStep::fwd_three_consumers, Pass::fwd, 64, false, {0, 0, 0, 3}, {}},
    {HopperStep::fwd_three_overlap, Pass::fwd, 64, true, {0, 1, -1, 3}, {}},
    {HopperStep::fwd_persistent, Pass::fwd, 0, false, {0, -1, 1}, {}},
    {HopperStep::fwd_o_staged, Pass::fwd, 0, true, {0, -1, -1, -1, 1}, {}},
    {HopperStep::fwd_o_registers, Pass::fwd, 128, false, {0, -1, -1, -1, 0}, {}},
    {HopperStep::fwd_bc176, Pass::fwd, 128, true, {0, 1, 0, 2, 0, 0, 0, -1, 176}, {}},
    {HopperStep::fwd_persistent_overlap, Pass::fwd, 64, false, {0, 1, 1, 2}, {}},
    {HopperStep::fwd_prefetch, Pass::fwd, 0, false, {0, -1, 1, -1, -1, 0, 2}, {}},
    {HopperStep::fwd_stages4, Pass::fwd, 64, true, {0, 0, 1, -1, -1, 0, -1, 4}, {}},
    {HopperStep::fwd_padding_computed, Pass::fwd, 64, false, {0, 0, -1, 3, 0, 0, -1, -1, -1, 0}},
    {HopperStep::fwd_exp_fma8, Pass::fwd, 64, true, {0, -1, -1, -1, 0, 8}, {}},
    {HopperStep::fwd_exp_fma4, Pass::fwd, 64, true, {0, -1, -1, -1, 0, 4}, {}},
    {HopperStep::rung_choice, Pass::bwd, 0, false, {}, {}},
    {HopperStep::bwd_atomics, Pass::bwd, 0, false, {}, {false, -1, -1, -1}},
    {HopperStep::bwd_none, Pass::bwd, 0, true, {}, {true, -1, 0, -1}},
    {HopperStep::bwd_p, Pass::bwd, 0, true, {}, {true, -1, 1, -1}},
    {HopperStep::bwd_dq, Pass::bwd, 0, true, {}, {true, -1, 2, -1}},
    {HopperStep::bwd_p_dq, Pass::bwd, 0, true, {}, {true, -1, 3, -1}},
    {HopperStep::bwd_next, Pass::bwd, 64, true, {}, {true, -1, 5, 64}},  // P and Next
    {HopperStep::bwd_k_registers, Pass::bwd, 64, true, {}, {true, -1, -1, 64, 1}},
    {HopperStep::bwd_kv_registers, Pass::bwd, 64, true, {}, {true, -1, -1, 64, 2}},
    {HopperStep::bwd_dq_spread, Pass::bwd, 0, true, {}, {true, -1, -1, -1, 0, 1}},
    {HopperStep::bwd_dq_halves, Pass::bwd, 64, true, {}, {true, 1, -1, 64, 0, 1}},
    {HopperStep::bwd_br64, Pass::bwd, 64, true, {}, {true, -1, -1, 64}},
    {HopperStep::bwd_dq_by_keys, Pass::bwd, 128, true, {}, {true, 0, -1, -1}},
    {HopperStep::bwd_stages3, Pass::bwd, 128, true, {}, {true, -1, 35, -1}},    // P, Dq, 3
    {HopperStep::bwd_dq_sets2, Pass::bwd, 128, true, {}, {true, -1, 323, -1}},  // choice, 2 sets
    {HopperStep::bwd_rotate, Pass::bwd, 0, true, {}, {true, -1, -1, -1, 0, -1, 0, 1}},
    {HopperStep::bwd_persistent, Pass::bwd, 0, true, {}, {true, -1, -1, -1, 0, -1, 1}},
};

// The step's row for the pass; a step of the other pass: the pass's rung_choice (its first row).
const StepSetting& setting(HopperStep step, Pass pass) {
  const StepSetting* first = nullptr;
  for (const StepSetting& x : kSettings) {
    if (x.pass != pass) continue;
    if (!first) first = &x;
    if (x.step == step) return x;
  }
  return *first;
}

// A forward setting on the persistent grid or with O staged, where d leaves no shared memory
// for them (d = 256: hopper_forward_room).
bool needs_room(const StepSetting& x) {
  return x.pass == Pass::fwd && (x.fwd.persistent == 1 || x.fwd.stage_o == 1);
}

}  // namespace

std::vector<HopperStep> hopper_steps(Pass pass, index_t d, Precision p) {
  std::vector<HopperStep> steps;
  for (const StepSetting& x : kSettings)
    if (x.pass == pass && (x.d == 0 || x.d == d) && (!x.bf16_only || p == Precision::bf16) &&
        (!needs_room(x) || hopper_forward_room(d)))
      steps.push_back(x.step);
  return steps;
}

HopperBwdSteps hopper_bwd_setting(HopperStep step) {
  return setting(step, Pass::bwd).bwd;
}

HopperFwdSteps hopper_fwd_setting(HopperStep step) {
  return setting(step, Pass::fwd).fwd;
}

template <class T>
Timing hopper_time_step(HopperStep step, Pass pass, const Shape& s, const AttnParams& params,
                        Variant v, const T* Q, const T* K, const T* V, const T* dO, int warmup,
                        int reps) {
  if (pass == Pass::bwd)
    return hopper_time_backward_steps(s, params, v, hopper_bwd_setting(step), Q, K, V, dO, warmup,
                                      reps);
  if (step == HopperStep::rung_choice)
    return rung_time(s, params, v, Impl::hopper, Q, K, V, warmup, reps);
  return hopper_time_steps(s, params, v, hopper_fwd_setting(step), Q, K, V, warmup, reps);
}

template Timing hopper_time_step(HopperStep, Pass, const Shape&, const AttnParams&, Variant,
                                 const float*, const float*, const float*, const float*, int, int);

}  // namespace fd::cuda
