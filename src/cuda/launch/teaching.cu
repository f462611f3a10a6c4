// teaching.cu — launching the teaching kernels (teaching.cuh): device buffers, shared-memory
// sizes, error checks, the trace buffer, and CUDA-event timing for `flashdemo bench`.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

#include "cuda/host/cuda_api.hpp"
#include "cuda/host/rungs_api.hpp"
#include "cuda/launch/device_memory.cuh"
#include "cuda/rungs/teaching.cuh"

namespace fd::cuda {
namespace {

template <class T>
Problem<T> problem(const Shape& s, const AttnParams& params, TileSizes tiles, Variant v) {
  if (tiles.Br > 1024 || tiles.Bc > 1024)
    throw CudaError("tiles of more than 1024 rows or keys do not fit one thread block");
  return {s.n,
          s.m,
          s.d,
          Tiling{s.n, s.m, tiles.Br, tiles.Bc},
          params.mask_for(s.n, s.m),
          T(params.scale_for(s.d)),
          v.p_in};
}

// Raises a kernel's dynamic shared-memory limit to what it needs, or says why it cannot run.
template <class Kernel>
void allow_smem(Kernel kernel, std::size_t bytes, TileSizes tiles, index_t d) {
  allow_dynamic_smem(kernel, bytes,
                     "tiles " + std::to_string(tiles.Br) + " x " + std::to_string(tiles.Bc) +
                         " at d = " + std::to_string(d) + " need",
                     ": use smaller --block-q/--block-k");
}

template <class T>
std::size_t forward_smem(const Problem<T>& p) {
  const index_t ld = padded(p.d), Br = p.tiling.Br, Bc = p.tiling.Bc;
  return sizeof(T) * std::size_t(2 * Br * ld + 2 * Bc * ld + Br * Bc);
}

template <class T>
std::size_t dkdv_smem(const Problem<T>& p) {
  const index_t ld = padded(p.d), Br = p.tiling.Br, Bc = p.tiling.Bc;
  return sizeof(T) * std::size_t(4 * Bc * ld + 2 * Br * ld + 3 * Br + Br * Bc);
}

template <class T>
std::size_t dq_smem(const Problem<T>& p) {
  const index_t ld = padded(p.d), Br = p.tiling.Br, Bc = p.tiling.Bc;
  return sizeof(T) * std::size_t(3 * Br * ld + 2 * Bc * ld);
}

template <class T>
void launch_forward(const ForwardArgs<T>& a, const Shape& s) {
  const std::size_t bytes = forward_smem(a.p);
  allow_smem(forward_kernel<T>, bytes, {a.p.tiling.Br, a.p.tiling.Bc}, s.d);
  const dim3 grid(unsigned(a.p.tiling.Tr()), unsigned(s.heads()));
  forward_kernel<T><<<grid, unsigned(a.p.tiling.Br), bytes>>>(a);
}

template <class T>
void launch_backward(BackwardArgs<T> a, const Shape& s, T* D, const T* O, bool deterministic) {
  const index_t rows = s.heads() * s.n;
  d_kernel<T><<<unsigned((rows + 255) / 256), 256>>>(O, a.dO, D, rows, s.d);
  a.atomic_dq = !deterministic;
  if (a.atomic_dq) check(cudaMemsetAsync(a.dQ, 0, sizeof(T) * rows * s.d), "cudaMemset");
  const std::size_t kv_bytes = dkdv_smem(a.p);
  allow_smem(dkdv_kernel<T>, kv_bytes, {a.p.tiling.Br, a.p.tiling.Bc}, s.d);
  dkdv_kernel<T>
      <<<dim3(unsigned(a.p.tiling.Tc()), unsigned(s.heads())), unsigned(a.p.tiling.Bc), kv_bytes>>>(
          a);
  if (deterministic) {
    const std::size_t q_bytes = dq_smem(a.p);
    allow_smem(dq_kernel<T>, q_bytes, {a.p.tiling.Br, a.p.tiling.Bc}, s.d);
    dq_kernel<T><<<dim3(unsigned(a.p.tiling.Tr()), unsigned(s.heads())), unsigned(a.p.tiling.Br),
                   q_bytes>>>(a);
  } else {
    const index_t count = rows * s.d;
    finish_dq_kernel<T><<<unsigned((count + 255) / 256), 256>>>(a.dQ, count, a.p.scale, a.p.p_in);
  }
}

}  // namespace

GpuInfo gpu_info() {
  GpuInfo g;
  g.built = true;
  int runtime = 0, driver = 0, count = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  g.runtime_version = std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10);
  if (driver)  // 0: no driver answered (the message says "none" then)
    g.driver_version = std::to_string(driver / 1000) + "." + std::to_string(driver % 1000 / 10);
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    g.absent = driver == 0                                  ? NoGpu::no_driver
               : e == cudaSuccess || e == cudaErrorNoDevice ? NoGpu::no_device
                                                            : NoGpu::cuda_error;
    g.why = g.absent == NoGpu::no_driver   ? "no NVIDIA driver on this machine"
            : g.absent == NoGpu::no_device ? "no CUDA device found"
                                           : cudaGetErrorString(e);
    return g;
  }
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  g.present = true;
  g.name = prop.name;
  g.sms = prop.multiProcessorCount;
  g.cc_major = prop.major, g.cc_minor = prop.minor;
  g.smem_per_block = prop.sharedMemPerBlockOptin;
  g.global_bytes = prop.totalGlobalMem;
  return g;
}

TileSizes default_tiles(index_t d, std::size_t element_bytes) {
  // The backward's dK/dV block needs 6 tiles of B x d and B x B scores: keep it under
  // about 160 KB of shared memory.
  index_t B = 64;
  while (B > 8 && element_bytes * std::size_t(6 * B * (d + 1) + B * B + 2 * B) > 160 * 1024) B /= 2;
  return {B, B};
}

template <class T>
void forward(const Shape& s, const AttnParams& params, TileSizes tiles, Variant v, Impl impl,
             const T* Q, const T* K, const T* V, T* O, T* L, T* L_lo, KernelTrace* trace) {
  require_gpu();
  if (impl != Impl::teaching) return rung_forward(s, params, v, impl, Q, K, V, O, L, L_lo, trace);
  const Problem<T> p = problem<T>(s, params, tiles, v);
  const std::size_t nq = std::size_t(s.heads() * s.n * s.d),
                    nk = std::size_t(s.heads() * s.m * s.d);
  const std::size_t rows = std::size_t(s.heads() * s.n);
  DeviceArray<T> dQ(Q, nq), dK(K, nk), dV(V, nk), dO(nq), dL(rows), dLlo(L_lo ? rows : 0);
  const std::size_t tiles_n = std::size_t(p.tiling.Tr() * p.tiling.Tc());
  const std::size_t slots = trace ? tiles_n * std::size_t(p.tiling.Br) : 0;
  DeviceArray<char> computed(trace ? tiles_n : 0);
  DeviceArray<T> m_old(slots), m_new(slots), alpha(slots), l(slots), fm(trace ? s.n : 0),
      fl(trace ? s.n : 0);
  if (trace) check(cudaMemset(computed.ptr, 0, tiles_n), "cudaMemset");
  launch_forward(ForwardArgs<T>{p, dQ.ptr, dK.ptr, dV.ptr, dO.ptr, dL.ptr, dLlo.ptr, computed.ptr,
                                m_old.ptr, m_new.ptr, alpha.ptr, l.ptr, fm.ptr, fl.ptr},
                 s);
  check_launch("the forward kernel");
  dO.download(O);
  dL.download(L);
  if (L_lo) dLlo.download(L_lo);
  if (!trace) return;
  trace->tiling = p.tiling;
  trace->computed.assign(tiles_n, 0);
  computed.download(trace->computed.data());
  trace->m_old = m_old.to_doubles(), trace->m_new = m_new.to_doubles();
  trace->alpha = alpha.to_doubles(), trace->l = l.to_doubles();
  trace->final_m = fm.to_doubles(), trace->final_l = fl.to_doubles();
}

template <class T>
void backward(const Shape& s, const AttnParams& params, TileSizes tiles, Variant v, Impl impl,
              bool deterministic, const T* Q, const T* K, const T* V, const T* O, const T* L,
              const T* L_lo, const T* dO, T* dQ, T* dK, T* dV, T* D) {
  require_gpu();
  if (impl != Impl::teaching)
    return rung_backward(s, params, v, impl, deterministic, Q, K, V, O, L, dO, dQ, dK, dV, D);
  const Problem<T> p = problem<T>(s, params, tiles, v);
  const std::size_t nq = std::size_t(s.heads() * s.n * s.d),
                    nk = std::size_t(s.heads() * s.m * s.d);
  const std::size_t rows = std::size_t(s.heads() * s.n);
  DeviceArray<T> gQ(Q, nq), gK(K, nk), gV(V, nk), gO(O, nq), gL(L, rows), gdO(dO, nq);
  DeviceArray<T> gLlo(L_lo ? rows : 0), gdQ(nq), gdK(nk), gdV(nk), gD(rows);
  if (L_lo) gLlo.upload(L_lo);
  launch_backward(BackwardArgs<T>{p, gQ.ptr, gK.ptr, gV.ptr, gL.ptr, gLlo.ptr, gD.ptr, gdO.ptr,
                                  gdQ.ptr, gdK.ptr, gdV.ptr, true},
                  s, gD.ptr, gO.ptr, deterministic);
  check_launch("the backward kernels");
  gdQ.download(dQ), gdK.download(dK), gdV.download(dV), gD.download(D);
}

template <class T>
Timing time_kernels(const Shape& s, const AttnParams& params, TileSizes tiles, Variant v, Impl impl,
                    Pass pass, bool deterministic, const T* Q, const T* K, const T* V, const T* dO,
                    int warmup, int reps) {
  require_gpu();
  if (impl != Impl::teaching)
    return pass == Pass::bwd
               ? rung_time_backward(s, params, v, impl, deterministic, Q, K, V, dO, warmup, reps)
               : rung_time(s, params, v, impl, Q, K, V, warmup, reps);
  const Problem<T> p = problem<T>(s, params, tiles, Variant{});
  const std::size_t nq = std::size_t(s.heads() * s.n * s.d),
                    nk = std::size_t(s.heads() * s.m * s.d);
  const std::size_t rows = std::size_t(s.heads() * s.n);
  DeviceArray<T> gQ(Q, nq), gK(K, nk), gV(V, nk), gO(nq), gL(rows), gLlo(rows), gdO(dO, nq),
      gdQ(nq), gdK(nk), gdV(nk), gD(rows);
  const ForwardArgs<T> fa{p,       gQ.ptr,  gK.ptr,  gV.ptr,  gO.ptr,  gL.ptr,  gLlo.ptr,
                          nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
  const BackwardArgs<T> ba{p,      gQ.ptr,  gK.ptr,  gV.ptr,  gL.ptr,  gLlo.ptr,
                           gD.ptr, gdO.ptr, gdQ.ptr, gdK.ptr, gdV.ptr, true};
  launch_forward(fa, s);  // O and L for the backward
  check_launch("the forward kernel");
  auto once = [&] {
    if (pass == Pass::fwd)
      launch_forward(fa, s);
    else
      launch_backward(ba, s, gD.ptr, gO.ptr, deterministic);
  };
  return time_events(once, warmup, reps);
}

#define FD_INSTANTIATE(T)                                                                          \
  template void forward(const Shape&, const AttnParams&, TileSizes, Variant, Impl, const T*,       \
                        const T*, const T*, T*, T*, T*, KernelTrace*);                             \
  template void backward(const Shape&, const AttnParams&, TileSizes, Variant, Impl, bool,          \
                         const T*, const T*, const T*, const T*, const T*, const T*, const T*, T*, \
                         T*, T*, T*);                                                              \
  template Timing time_kernels(const Shape&, const AttnParams&, TileSizes, Variant, Impl, Pass,    \
                               bool, const T*, const T*, const T*, const T*, int, int);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd::cuda
