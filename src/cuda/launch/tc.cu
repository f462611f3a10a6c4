// tc.cu — launching the rung `tc` (tc.cuh): bf16 or fp16 in, 128 threads per block of 64 x 64
// tiles, tc_forward_kernel<E, d, kTcAsync, kTcM> for each d of TcHeadDims (head_dims.hpp), and its
// tracing instance. launch_tc_kernel also launches mma's forward (mma.cu).
#include "cuda/host/head_dims.hpp"
#include "cuda/launch/tc_launch.cuh"

namespace fd::cuda {

template <class E>
void launch_tc(const DeviceProblem<E>& p) {
  if (!with_head_dim(TcHeadDims{}, p.s.d, [&](auto dim) {
        launch_tc_kernel<E, decltype(dim)::value, kTcAsync, kTcM>(p);
      }))
    no_kernel(Impl::tc, p.s.d);
}

template void launch_tc(const DeviceProblem<__nv_bfloat16>&);
template void launch_tc(const DeviceProblem<__half>&);

}  // namespace fd::cuda
