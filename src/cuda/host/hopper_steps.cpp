// hopper_steps.cpp — hopper's ideas as settings that can each be timed alone (rungs_api.hpp),
// in a build with CUDA or without (there the timing functions say that CUDA is missing):
//   forward    (ping-pong, overlap) in {0, 1}^2                            hopper.cuh
//   backward   dQ by atomics or the copy engine's bulk reduce; overlap bits P (P^T while dP^T
//              runs) and Dq (dQ's block before dK); at d = 64 the pipeline across tiles (P and
//              Next) and Br = 128; at d = 128 dQ cut by keys               hopper_backward.cuh
// The rung's own choice at d (its per-d defaults) comes first: the base each step is read against.
#include "cuda/host/rungs_api.hpp"

namespace fd::cuda {

std::vector<HopperStep> hopper_steps(Pass pass, index_t d, Precision p) {
  using S = HopperStep;
  if (pass == Pass::fwd)
    return {S::rung_choice, S::fwd_none, S::fwd_overlap, S::fwd_ping_pong, S::fwd_both};
  std::vector<S> steps = {S::rung_choice, S::bwd_atomics};
  if (p != Precision::bf16) return steps;  // the other variants are built in bf16 only
  steps.insert(steps.end(), {S::bwd_none, S::bwd_p, S::bwd_dq, S::bwd_p_dq});
  if (d == 64) steps.insert(steps.end(), {S::bwd_next, S::bwd_br128});
  if (d == 128) steps.push_back(S::bwd_dq_by_keys);
  return steps;
}

// The backward's settings (HopperBwdSteps: bulk_dq, dq_by_columns, overlap bits, Br; -1 the
// rung's default), by step.
HopperBwdSteps hopper_bwd_setting(HopperStep step) {
  switch (step) {
    case HopperStep::bwd_atomics:
      return {false, -1, -1, -1};
    case HopperStep::bwd_none:
      return {true, -1, 0, -1};
    case HopperStep::bwd_p:
      return {true, -1, 1, -1};
    case HopperStep::bwd_dq:
      return {true, -1, 2, -1};
    case HopperStep::bwd_p_dq:
      return {true, -1, 3, -1};
    case HopperStep::bwd_next:
      return {true, -1, 5, -1};  // P and Next
    case HopperStep::bwd_br128:
      return {true, -1, -1, 128};
    case HopperStep::bwd_dq_by_keys:
      return {true, 0, -1, -1};
    default:
      return {};
  }
}

template <class T>
Timing hopper_time_step(HopperStep step, Pass pass, const Shape& s, const AttnParams& params,
                        Variant v, const T* Q, const T* K, const T* V, const T* dO, int warmup,
                        int reps) {
  using S = HopperStep;
  if (pass == Pass::bwd)
    return hopper_time_backward_steps(s, params, v, hopper_bwd_setting(step), Q, K, V, dO, warmup,
                                      reps);
  if (step == S::rung_choice) return rung_time(s, params, v, Impl::hopper, Q, K, V, warmup, reps);
  const bool ping_pong = step == S::fwd_ping_pong || step == S::fwd_both;
  const bool overlap = step == S::fwd_overlap || step == S::fwd_both;
  return hopper_time_steps(s, params, v, ping_pong, overlap, Q, K, V, warmup, reps);
}

template Timing hopper_time_step(HopperStep, Pass, const Shape&, const AttnParams&, Variant,
                                 const float*, const float*, const float*, const float*, int, int);

}  // namespace fd::cuda
