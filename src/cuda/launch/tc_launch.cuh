// tc_launch.cuh — one launch of the tc kernel (tc.cuh) at (E, d, Async, kM): the rungs tc
// (tc.cu: kM = 1, plain copies) and mma (mma.cu: kM = 2, cp.async) are its two settings.
//   grid (Tr, b h), 128 threads, tc_smem_bytes(d, Async, kM) of dynamic shared memory
#pragma once

#include "cuda/launch/rung_problem.cuh"
#include "cuda/rungs/tc.cuh"

namespace fd::cuda {

template <class E, int kD, bool Async, int kM>
void launch_tc_kernel(const DeviceProblem<E>& p) {
  const TcArgs<E> a{p.Q.ptr, p.K.ptr,  p.V.ptr, p.O.ptr,  p.L.ptr,       p.s.n,
                    p.s.m,   p.tiling, p.mask,  p.scale2, p.trace.view()};
  constexpr std::size_t bytes = tc_smem_bytes(kD, Async, kM);
  const dim3 grid(unsigned(p.tiling.Tr()), unsigned(p.s.heads()));
  // The tracing kernel is its own instance: none of its code, and no register, in the fast one.
  auto run = [&](auto kernel) {
    allow_smem(kernel, bytes);
    kernel<<<grid, kTcThreads, bytes>>>(a);
  };
  if (a.trace.computed)
    run(tc_forward_kernel<E, kD, Async, kM, true>);
  else
    run(tc_forward_kernel<E, kD, Async, kM, false>);
}

}  // namespace fd::cuda
