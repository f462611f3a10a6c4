// ladder.cu — the rungs above the teaching kernel as rungs_api.hpp offers them: the inputs in the
// rung's element type on the device (rung_problem.cuh), the one switch from the rung to its
// launcher (each in its own file, choosing the kernel by d from the rung's list in head_dims.hpp),
// its trace, its timing, and the bf16 GEMM ceiling they are measured against (cuBLAS, opened at
// run time).
//   rung     kernel (rungs/)                          launch (launch/)
//   simt     simt.cuh: simt_forward_kernel<d>          simt.cu
//   tc       tc.cuh: 16-byte loads, 1 row fragment     tc.cu
//            per warp (Br = 64)
//   mma      mma.cuh: tc's kernel with cp.async and    mma.cu (and its backward,
//            2 row fragments per warp (Br = 128)       mma_backward.cuh)
//   hopper   hopper.cuh: TMA, wgmma, 128 x 128 tiles   hopper.cu (and its tensor maps, and its
//            (its backward, hopper_backward.cuh)       backward)
#include <cublas_v2.h>  // types only: the library itself is opened with dlopen
#include <dlfcn.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/host/rungs_api.hpp"
#include "cuda/launch/draw.cuh"
#include "cuda/launch/rung_problem.cuh"

namespace fd::cuda {
namespace {

template <class E>
float from_element(E x) {
  if constexpr (std::is_same_v<E, float>)
    return x;
  else
    return float(x);
}

// One forward of the problem's rung: the one switch from the rung to its launcher, which chooses
// the kernel by d.
template <class E>
void launch(const DeviceProblem<E>& p, HopperSteps steps = {}) {
  if (p.tiling.Tr() == 0 || p.s.heads() == 0) return;
  if constexpr (std::is_same_v<E, float>) {
    launch_simt(p);
  } else {
    switch (p.impl) {
      case Impl::hopper:
        return launch_hopper(p, steps);
      case Impl::mma:
        return launch_mma(p);
      default:
        return launch_tc(p);  // tc (refuses() lets no other rung here)
    }
  }
}

// The precision a rung run is in: fp64 for double; else bf16/fp16 when asked, fp32 otherwise.
template <class T>
Precision working(Variant v) {
  if (sizeof(T) == sizeof(double)) return Precision::fp64;
  return v.p_in == Precision::bf16 || v.p_in == Precision::fp16 ? v.p_in : Precision::fp32;
}

template <class E>
struct Element {
  using type = E;
};

// Calls f(Element<E>{}) with the element type of this run, after refusing what the rung does
// not take.
template <class T, class F>
auto with_element(const Shape& s, Variant v, Impl impl, F&& f, Pass pass = Pass::fwd) {
  const Refusal no = refuses(impl, s.d, working<T>(v), pass);
  if (no) throw CudaError(no.english);
  if (impl == Impl::simt) return f(Element<float>{});
  if (v.p_in == Precision::fp16) return f(Element<__half>{});
  return f(Element<__nv_bfloat16>{});
}

// One backward of the problem (O and L already in p) on its rung: mma's or hopper's.
template <class E>
void launch_backward(const DeviceProblem<E>& p, BackwardArrays<E>& g, bool deterministic,
                     HopperSteps steps = {}) {
  if (p.s.heads() == 0 || p.s.n == 0) return;
  if (p.s.m == 0) {  // no keys: no gradient flows (dK, dV are empty), and D = rowsum(dO 0) = 0
    check(cudaMemsetAsync(g.dQ.ptr, 0, g.dQ.count * sizeof(float)), "cudaMemsetAsync");
    check(cudaMemsetAsync(g.D.ptr, 0, g.D.count * sizeof(float)), "cudaMemsetAsync");
    return;
  }
  if constexpr (std::is_same_v<E, float>) {
    throw CudaError("the simt rung has no backward");
  } else {
    if (p.impl == Impl::hopper) return launch_hopper_backward(p, g, deterministic, steps);
    launch_mma_backward(p, g, deterministic);
  }
}

// A forward's O (converted to T) and L, from the device.
template <class T, class E>
void download_outputs(const DeviceProblem<E>& p, T* O, T* L) {
  std::vector<E> o(p.O.count);
  p.O.download(o.data());
  for (std::size_t k = 0; k < o.size(); ++k) O[k] = T(from_element(o[k]));
  std::vector<float> l(p.L.count);
  p.L.download(l.data());
  std::copy(l.begin(), l.end(), L);
}

}  // namespace

template <class T>
void rung_forward(const Shape& s, const AttnParams& params, Variant v, Impl impl, const T* Q,
                  const T* K, const T* V, T* O, T* L, T* L_lo, KernelTrace* trace) {
  with_element<T>(s, v, impl, [&](auto element) {
    using E = typename decltype(element)::type;
    DeviceProblem<E> p(s, params, impl, Q, K, V, trace != nullptr);
    launch(p);
    check_launch("the forward kernel");
    download_outputs(p, O, L);
    if (L_lo) std::fill(L_lo, L_lo + p.L.count, T(0));
    if (trace) p.trace.download(p.tiling, trace);
  });
}

template <class T>
Timing rung_time(const Shape& s, const AttnParams& params, Variant v, Impl impl, const T* Q,
                 const T* K, const T* V, int warmup, int reps) {
  return with_element<T>(s, v, impl, [&](auto element) {
    using E = typename decltype(element)::type;
    DeviceProblem<E> p(s, params, impl, Q, K, V, false);
    return time_events([&] { launch(p); }, warmup, reps);
  });
}

namespace {

// The query tile of a forward setting's problem: 64 rows a consumer warpgroup (0: the rung's).
index_t forward_br(HopperFwdSteps fwd) {
  return fwd.consumers > 0 ? 64 * fwd.consumers : 0;
}

// The launcher's switches for one of hopper's forward settings.
HopperSteps launch_steps(HopperFwdSteps fwd) {
  HopperSteps steps;
  steps.ping_pong = fwd.ping_pong, steps.overlap = fwd.overlap, steps.persistent = fwd.persistent;
  steps.consumers = fwd.consumers, steps.stage_o = fwd.stage_o, steps.exp_fma = fwd.exp_fma;
  steps.prefetch = fwd.prefetch, steps.stages = fwd.stages, steps.bc = fwd.bc;
  steps.idle_padding = fwd.idle_padding;
  return steps;
}

}  // namespace

template <class T>
Timing hopper_time_steps(const Shape& s, const AttnParams& params, Variant v, HopperFwdSteps steps,
                         const T* Q, const T* K, const T* V, int warmup, int reps) {
  return with_element<T>(s, v, Impl::hopper, [&](auto element) {
    using E = typename decltype(element)::type;
    DeviceProblem<E> p(s, params, Impl::hopper, Q, K, V, false, forward_br(steps));
    return time_events([&] { launch(p, launch_steps(steps)); }, warmup, reps);
  });
}

template <class T>
void hopper_forward_steps(const Shape& s, const AttnParams& params, Variant v, HopperFwdSteps steps,
                          const T* Q, const T* K, const T* V, T* O, T* L) {
  with_element<T>(s, v, Impl::hopper, [&](auto element) {
    using E = typename decltype(element)::type;
    DeviceProblem<E> p(s, params, Impl::hopper, Q, K, V, false, forward_br(steps));
    launch(p, launch_steps(steps));
    check_launch("the forward kernel");
    download_outputs(p, O, L);
  });
}

namespace {

// The launcher's switches for one of hopper's backward settings (its Br sets the arrays' tiling).
HopperSteps launch_steps(HopperBwdSteps bwd) {
  HopperSteps steps;
  steps.bulk_dq = int(bwd.bulk_dq), steps.dq_by_columns = bwd.dq_by_columns;
  steps.bwd_overlap = bwd.overlap, steps.bwd_held = bwd.held, steps.dq_staging = bwd.staging;
  steps.bwd_persistent = bwd.persistent, steps.bwd_rotate = bwd.rotate;
  return steps;
}

// The backward on host arrays: O and L uploaded (from any forward), dO given; dQ, dK, dV (and D
// when asked) downloaded in fp32 sums. steps: hopper's settings (HopperBwdSteps, -1 defaults).
template <class T>
void backward_on_host(const Shape& s, const AttnParams& params, Variant v, Impl impl,
                      bool deterministic, HopperBwdSteps bwd, const T* Q, const T* K, const T* V,
                      const T* O, const T* L, const T* dO, T* dQ, T* dK, T* dV, T* D) {
  with_element<T>(
      s, v, impl,
      [&](auto element) {
        using E = typename decltype(element)::type;
        DeviceProblem<E> p(s, params, impl, Q, K, V, false);
        p.O.upload(DeviceProblem<E>::converted(O, s.heads() * s.n * s.d).data());
        const std::vector<float> l(L, L + s.heads() * s.n);
        p.L.upload(l.data());
        BackwardArrays<E> g(p, DeviceProblem<E>::converted(dO, s.heads() * s.n * s.d),
                            bwd.Br > 0 ? index_t(bwd.Br) : 0);
        launch_backward(p, g, deterministic, launch_steps(bwd));
        check_launch("the backward kernels");
        auto down = [](const DeviceArray<float>& x, T* out) {
          std::vector<float> h(x.count);
          x.download(h.data());
          std::copy(h.begin(), h.end(), out);
        };
        down(g.dQ, dQ), down(g.dK, dK), down(g.dV, dV);
        if (D) down(g.D, D);
      },
      Pass::bwd);
}

}  // namespace

template <class T>
void rung_backward(const Shape& s, const AttnParams& params, Variant v, Impl impl,
                   bool deterministic, const T* Q, const T* K, const T* V, const T* O, const T* L,
                   const T* dO, T* dQ, T* dK, T* dV, T* D) {
  backward_on_host(s, params, v, impl, deterministic, HopperBwdSteps{}, Q, K, V, O, L, dO, dQ, dK,
                   dV, D);
}

template <class T>
void hopper_backward_steps(const Shape& s, const AttnParams& params, Variant v,
                           HopperBwdSteps steps, const T* Q, const T* K, const T* V, const T* O,
                           const T* L, const T* dO, T* dQ, T* dK, T* dV) {
  backward_on_host(s, params, v, Impl::hopper, false, steps, Q, K, V, O, L, dO, dQ, dK, dV,
                   static_cast<T*>(nullptr));
}

template <class T>
Timing rung_time_backward(const Shape& s, const AttnParams& params, Variant v, Impl impl,
                          bool deterministic, const T* Q, const T* K, const T* V, const T* dO,
                          int warmup, int reps) {
  return with_element<T>(
      s, v, impl,
      [&](auto element) {
        using E = typename decltype(element)::type;
        DeviceProblem<E> p(s, params, impl, Q, K, V, false);
        launch(p);  // O and L for the backward
        check_launch("the forward kernel");
        BackwardArrays<E> g(p, DeviceProblem<E>::converted(dO, s.heads() * s.n * s.d));
        return time_events([&] { launch_backward(p, g, deterministic); }, warmup, reps);
      },
      Pass::bwd);
}

template <class T>
Timing hopper_time_backward_steps(const Shape& s, const AttnParams& params, Variant v,
                                  HopperBwdSteps bwd, const T* Q, const T* K, const T* V,
                                  const T* dO, int warmup, int reps) {
  return with_element<T>(
      s, v, Impl::hopper,
      [&](auto element) {
        using E = typename decltype(element)::type;
        DeviceProblem<E> p(s, params, Impl::hopper, Q, K, V, false);
        launch(p);
        check_launch("the forward kernel");
        BackwardArrays<E> g(p, DeviceProblem<E>::converted(dO, s.heads() * s.n * s.d),
                            bwd.Br > 0 ? index_t(bwd.Br) : 0);
        const HopperSteps steps = launch_steps(bwd);
        return time_events([&] { launch_backward(p, g, false, steps); }, warmup, reps);
      },
      Pass::bwd);
}

// cuBLAS, found at run time: the tool runs (and the package installs) without it. The ceiling:
// C = A B, n x n x n in bf16 with fp32 sums, A and B drawn N(0, 1) on the device.
double gemm_tflops_bf16(index_t n, int reps) {
  require_gpu();
  void* lib = nullptr;
  for (const char* name :
       {"libcublas.so.13", "libcublas.so.12", "libcublas.so",
        "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so"})
    if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL))) break;
  if (!lib) throw CudaError("cuBLAS (libcublas.so) was not found on the library path");
  using Create = cublasStatus_t (*)(cublasHandle_t*);
  using Destroy = cublasStatus_t (*)(cublasHandle_t);
  using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int,
                                    int, const void*, const void*, cudaDataType, int, const void*,
                                    cudaDataType, int, const void*, void*, cudaDataType, int,
                                    cublasComputeType_t, cublasGemmAlgo_t);
  const auto create = reinterpret_cast<Create>(dlsym(lib, "cublasCreate_v2"));
  const auto destroy = reinterpret_cast<Destroy>(dlsym(lib, "cublasDestroy_v2"));
  const auto gemm = reinterpret_cast<GemmEx>(dlsym(lib, "cublasGemmEx"));
  cublasHandle_t h = nullptr;
  if (!create || !destroy || !gemm || create(&h) != CUBLAS_STATUS_SUCCESS)
    throw CudaError("cuBLAS was found but could not be started");
  const std::size_t count = std::size_t(n) * std::size_t(n);
  DeviceArray<__nv_bfloat16> A(count), B(count), C(count);
  // N(0, 1) operands, as attention's: on zero-filled ones the tensor cores switch fewer bits and
  // the same GEMM ran 13 % faster on the H200 (886 against 784 TFLOP/s, docs/gpu-ladder.md), a
  // ceiling no kernel on real data reaches.
  draw_normal(A, 1, 0), draw_normal(B, 1, 1);
  const float one = 1.0f, zero = 0.0f;
  bool ok = true;
  const Timing t = time_events(
      [&] {
        ok &= gemm(h, CUBLAS_OP_N, CUBLAS_OP_N, int(n), int(n), int(n), &one, A.ptr, CUDA_R_16BF,
                   int(n), B.ptr, CUDA_R_16BF, int(n), &zero, C.ptr, CUDA_R_16BF, int(n),
                   CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
      },
      3, reps);
  destroy(h);
  if (!ok) throw CudaError("cuBLAS's bf16 GEMM failed");
  std::vector<double> ms = t.ms;
  std::nth_element(ms.begin(), ms.begin() + ms.size() / 2, ms.end());
  return 2.0 * double(n) * double(n) * double(n) / (ms[ms.size() / 2] * 1e-3) / 1e12;
}

#define FD_BACKWARD(T)                                                                           \
  template void rung_backward(const Shape&, const AttnParams&, Variant, Impl, bool, const T*,    \
                              const T*, const T*, const T*, const T*, const T*, T*, T*, T*, T*); \
  template Timing rung_time_backward(const Shape&, const AttnParams&, Variant, Impl, bool,       \
                                     const T*, const T*, const T*, const T*, int, int);
FD_BACKWARD(float)
FD_BACKWARD(double)
#undef FD_BACKWARD
template void rung_forward(const Shape&, const AttnParams&, Variant, Impl, const float*,
                           const float*, const float*, float*, float*, float*, KernelTrace*);
template void rung_forward(const Shape&, const AttnParams&, Variant, Impl, const double*,
                           const double*, const double*, double*, double*, double*, KernelTrace*);
template Timing rung_time(const Shape&, const AttnParams&, Variant, Impl, const float*,
                          const float*, const float*, int, int);
template Timing hopper_time_steps(const Shape&, const AttnParams&, Variant, HopperFwdSteps,
                                  const float*, const float*, const float*, int, int);
template void hopper_forward_steps(const Shape&, const AttnParams&, Variant, HopperFwdSteps,
                                   const float*, const float*, const float*, float*, float*);
template void hopper_backward_steps(const Shape&, const AttnParams&, Variant, HopperBwdSteps,
                                    const float*, const float*, const float*, const float*,
                                    const float*, const float*, float*, float*, float*);
template Timing hopper_time_backward_steps(const Shape&, const AttnParams&, Variant, HopperBwdSteps,
                                           const float*, const float*, const float*, const float*,
                                           int, int);
template Timing rung_time(const Shape&, const AttnParams&, Variant, Impl, const double*,
                          const double*, const double*, int, int);

}  // namespace fd::cuda
