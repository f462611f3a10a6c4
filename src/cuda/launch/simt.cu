// simt.cu — launching the rung `simt` (simt.cuh): fp32 in and out, 256 threads per block of
// 64 x 64 tiles, simt_forward_kernel<d> for each d of SimtHeadDims (head_dims.hpp), and its
// tracing instance.
#include "cuda/host/head_dims.hpp"
#include "cuda/launch/rung_problem.cuh"
#include "cuda/rungs/simt.cuh"

namespace fd::cuda {
namespace {

template <int kD>
void launch_simt_d(const DeviceProblem<float>& p) {
  const SimtArgs a{p.Q.ptr, p.K.ptr,  p.V.ptr, p.O.ptr,  p.L.ptr,       p.s.n,
                   p.s.m,   p.tiling, p.mask,  p.scale2, p.trace.view()};
  constexpr std::size_t bytes = simt_smem_bytes<kD>();
  const dim3 grid(unsigned(p.tiling.Tr()), unsigned(p.s.heads()));
  auto run = [&](auto kernel) {  // the tracing kernel is its own instance, as in tc.cu
    allow_smem(kernel, bytes);
    kernel<<<grid, SimtShape::kThreads, bytes>>>(a);
  };
  if (a.trace.computed)
    run(simt_forward_kernel<kD, true>);
  else
    run(simt_forward_kernel<kD, false>);
}

}  // namespace

void launch_simt(const DeviceProblem<float>& p) {
  if (!with_head_dim(SimtHeadDims{}, p.s.d,
                     [&](auto dim) { launch_simt_d<decltype(dim)::value>(p); }))
    no_kernel(Impl::simt, p.s.d);
}

}  // namespace fd::cuda
