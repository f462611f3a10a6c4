// mma.cu — launching the rung `mma`: its forward, the tc kernel at kM = 2 with cp.async
// (mma.cuh; Br = 128, Bc = 64), for each d of MmaHeadDims, and its backward (mma_backward.cuh)
// for each d of MmaBackwardHeadDims (head_dims.hpp):
//   D = rowsum(dO O)   mma_bwd_dot_kernel, a warp per row
//   dK, dV             mma_dkdv_kernel per key tile (Tc, b h), with dQ by fp32 atomics, or
//   dQ                 (deterministic) mma_dq_kernel per query tile (Tr, b h), in its own pass
// all on 64 x 64 tiles, outputs in fp32.
#include "cuda/host/head_dims.hpp"
#include "cuda/launch/rung_problem.cuh"
#include "cuda/launch/tc_launch.cuh"
#include "cuda/rungs/mma.cuh"
#include "cuda/rungs/mma_backward.cuh"

namespace fd::cuda {
namespace {

template <class E, int kD, bool kAtomicDq>
void launch_dkdv(const BwdArgs<E>& a, const BackwardArrays<E>& g, index_t heads) {
  constexpr std::size_t bytes = mma_dkdv_smem_bytes<kD, kAtomicDq>();
  allow_smem(mma_dkdv_kernel<E, kD, kAtomicDq>, bytes);
  mma_dkdv_kernel<E, kD, kAtomicDq>
      <<<dim3(unsigned(g.tiling.Tc()), unsigned(heads)), kTcThreads, bytes>>>(a);
}

template <class E, int kD>
void launch_backward_d(const DeviceProblem<E>& p, BackwardArrays<E>& g, bool deterministic) {
  const index_t rows = p.s.heads() * p.s.n;
  mma_bwd_dot_kernel<E, kD>
      <<<unsigned((rows + 3) / 4), kTcThreads>>>(p.O.ptr, g.dO.ptr, g.D.ptr, rows);
  const BwdArgs<E> a{p.Q.ptr,  p.K.ptr, p.V.ptr, g.dO.ptr, p.L.ptr, g.D.ptr, g.dQ.ptr, g.dK.ptr,
                     g.dV.ptr, p.s.n,   p.s.m,   g.tiling, p.mask,  p.scale, p.scale2};
  if (!deterministic) {  // dQ by atomics, inside the dK/dV kernel
    check(cudaMemsetAsync(g.dQ.ptr, 0, g.dQ.count * sizeof(float)), "cudaMemsetAsync");
    return launch_dkdv<E, kD, true>(a, g, p.s.heads());
  }
  launch_dkdv<E, kD, false>(a, g, p.s.heads());
  allow_smem(mma_dq_kernel<E, kD>, mma_dq_smem_bytes<kD>());
  mma_dq_kernel<E, kD><<<dim3(unsigned(g.tiling.Tr()), unsigned(p.s.heads())), kTcThreads,
                         mma_dq_smem_bytes<kD>()>>>(a);
}

}  // namespace

template <class E>
void launch_mma(const DeviceProblem<E>& p) {
  if (!with_head_dim(MmaHeadDims{}, p.s.d, [&](auto dim) {
        launch_tc_kernel<E, decltype(dim)::value, kMmaAsync, kMmaM>(p);
      }))
    no_kernel(Impl::mma, p.s.d);
}

template <class E>
void launch_mma_backward(const DeviceProblem<E>& p, BackwardArrays<E>& g, bool deterministic) {
  if (!with_head_dim(MmaBackwardHeadDims{}, p.s.d, [&](auto dim) {
        launch_backward_d<E, decltype(dim)::value>(p, g, deterministic);
      }))
    no_kernel(Impl::mma, p.s.d);
}

template void launch_mma(const DeviceProblem<__nv_bfloat16>&);
template void launch_mma(const DeviceProblem<__half>&);
template void launch_mma_backward(const DeviceProblem<__nv_bfloat16>&,
                                  BackwardArrays<__nv_bfloat16>&, bool);
template void launch_mma_backward(const DeviceProblem<__half>&, BackwardArrays<__half>&, bool);

}  // namespace fd::cuda
