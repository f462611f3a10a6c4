// ladder.cu — launching the rungs above the teaching kernel (simt.cuh, mma.cuh, hopper.cuh): the
// inputs in the rung's element type on the device, the kernel chosen by (rung, d), its trace, its
// timing, and the bf16 GEMM ceiling they are measured against (cuBLAS, opened at run time).
//   element type E:  simt float;  tc, mma and hopper __nv_bfloat16 or __half (variant.p_in)
//   kernel:          simt<d>;  tc: 16-byte loads, 1 row fragment per warp (Br = 64);
//                    mma: cp.async double buffer, 2 row fragments per warp (Br = 128);
//                    hopper: TMA (tensor maps of Q, K, V made here), wgmma, 128 x 128 tiles
//   grid:            (Tr, b h), causal query tiles longest first;  L_lo = 0 (L is fp32)
//   backward (mma):  D = rowsum(dO O), then dK, dV per key tile (Tc, b h) with dQ by fp32
//                    atomics, or (deterministic) dQ per query tile (Tr, b h) in its own pass,
//                    all on 64 x 64 tiles (mma_backward.cuh); outputs in fp32
#include <cublas_v2.h>  // types only: the library itself is opened with dlopen
#include <dlfcn.h>

#include <algorithm>
#include <string>
#include <type_traits>
#include <vector>

#include "cuda/host/rungs_api.hpp"
#include "cuda/launch/device_memory.cuh"
#include "cuda/primitives/element.cuh"
#include "cuda/rungs/hopper.cuh"
#include "cuda/rungs/mma.cuh"
#include "cuda/rungs/mma_backward.cuh"
#include "cuda/rungs/simt.cuh"

namespace fd::cuda {
namespace {

constexpr float kLog2e = 1.4426950408889634f;

template <class E>
float from_element(E x) {
  if constexpr (std::is_same_v<E, float>)
    return x;
  else
    return float(x);
}

// The trace buffers of head 0 (allocated only when traced).
struct TraceBuffers {
  std::size_t tiles, slots, rows;
  DeviceArray<char> computed;
  DeviceArray<float> m_old, m_new, alpha, l, final_m, final_l;
  TraceBuffers(const Tiling& t, bool on)
      : tiles(on ? std::size_t(t.Tr() * t.Tc()) : 0),
        slots(tiles * std::size_t(t.Br)),
        rows(on ? std::size_t(t.n) : 0),
        computed(tiles),
        m_old(slots),
        m_new(slots),
        alpha(slots),
        l(slots),
        final_m(rows),
        final_l(rows) {
    if (tiles) check(cudaMemset(computed.ptr, 0, tiles), "cudaMemset");
  }
  RungTrace view() const {
    if (!tiles) return {};
    return {computed.ptr, m_old.ptr, m_new.ptr, alpha.ptr, l.ptr, final_m.ptr, final_l.ptr};
  }
  void download(const Tiling& t, KernelTrace* out) const {
    out->tiling = t;
    out->computed.assign(tiles, 0);
    computed.download(out->computed.data());
    out->m_old = m_old.to_doubles(), out->m_new = m_new.to_doubles();
    out->alpha = alpha.to_doubles(), out->l = l.to_doubles();
    out->final_m = final_m.to_doubles(), out->final_l = final_l.to_doubles();
  }
};

// A tensor map of X (heads x rows x d elements of E, row-major) for TMA: boxes of `box_rows` rows
// x 64 columns of one head, 128-byte swizzled, rows past `rows` read as zeros. The driver's
// encoder is reached through the runtime (cudaGetDriverEntryPointByVersion): no -lcuda.
template <class E>
CUtensorMap tensor_map(const E* X, index_t heads, index_t rows, index_t d, int box_rows) {
  using Encode =
      CUresult (*)(CUtensorMap*, CUtensorMapDataType, cuuint32_t, void*, const cuuint64_t*,
                   const cuuint64_t*, const cuuint32_t*, const cuuint32_t*, CUtensorMapInterleave,
                   CUtensorMapSwizzle, CUtensorMapL2promotion, CUtensorMapFloatOOBfill);
  static Encode encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found{};
    check(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault,
                                           &found),
          "cudaGetDriverEntryPointByVersion");
    if (!fn || found != cudaDriverEntryPointSuccess)
      throw CudaError("the driver has no cuTensorMapEncodeTiled (TMA needs CUDA 12 or later)");
    return reinterpret_cast<Encode>(fn);
  }();
  CUtensorMap map{};
  // (a tensor with no rows still needs a dimension of 1: no block reads it, J = 0 there)
  const cuuint64_t extent = cuuint64_t(std::max<index_t>(rows, 1));
  const cuuint64_t dims[3] = {cuuint64_t(d), extent, cuuint64_t(heads)};
  const cuuint64_t strides[2] = {cuuint64_t(d) * sizeof(E), extent * cuuint64_t(d) * sizeof(E)};
  const cuuint32_t box[3] = {64, cuuint32_t(box_rows), 1}, unit[3] = {1, 1, 1};
  const CUresult r = encode(&map,
                            std::is_same_v<E, __half> ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                      : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
                            3, const_cast<E*>(X), dims, strides, box, unit,
                            CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                            CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw CudaError("cuTensorMapEncodeTiled failed (error " + std::to_string(int(r)) + ")");
  return map;
}

// The rung hopper runs on sm_90 only (its kernel is built for sm_90a).
void require_hopper() {
  int dev = 0, major = 0, minor = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev),
        "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev),
        "cudaDeviceGetAttribute");
  if (major != 9 || minor != 0)
    throw CudaError("--impl hopper needs a Hopper GPU (compute capability 9.0); this one is " +
                    std::to_string(major) + "." + std::to_string(minor));
}

// hopper's three tensor maps, made once with the problem (none for the other rungs).
struct HopperMaps {
  CUtensorMap Q{}, K{}, V{};
};
template <class E>
HopperMaps hopper_maps(Impl rung, const Shape& s, const E* Q, const E* K, const E* V) {
  if constexpr (std::is_same_v<E, float>) {
    return {};
  } else {
    if (rung != Impl::hopper || s.heads() == 0 || s.n == 0) return {};  // (nothing launched)
    require_hopper();
    return {tensor_map(Q, s.heads(), s.n, s.d, kHopperBr),
            tensor_map(K, s.heads(), s.m, s.d, kHopperBc),
            tensor_map(V, s.heads(), s.m, s.d, kHopperBc)};
  }
}

// One rung's problem on the device: Q, K, V uploaded once in E, O and L allocated (and for
// hopper, its tensor maps of Q, K, V).
template <class E>
struct DeviceProblem {
  Shape s;
  Impl impl;
  Tiling tiling;
  Mask mask;
  float scale, scale2;  // scale, and scale * log2(e)
  DeviceArray<E> Q, K, V, O;
  DeviceArray<float> L;
  TraceBuffers trace;
  HopperMaps maps;

  template <class T>
  DeviceProblem(const Shape& shape, const AttnParams& params, Impl rung, const T* q, const T* k,
                const T* v, bool traced)
      : s(shape),
        impl(rung),
        tiling{s.n, s.m, kernel_tiles(rung, s.d).Br, kernel_tiles(rung, s.d).Bc},
        mask(params.mask_for(s.n, s.m)),
        scale(float(params.scale_for(s.d))),
        scale2(scale * kLog2e),
        Q(converted(q, s.heads() * s.n * s.d).data(), std::size_t(s.heads() * s.n * s.d)),
        K(converted(k, s.heads() * s.m * s.d).data(), std::size_t(s.heads() * s.m * s.d)),
        V(converted(v, s.heads() * s.m * s.d).data(), std::size_t(s.heads() * s.m * s.d)),
        O(std::size_t(s.heads() * s.n * s.d)),
        L(std::size_t(s.heads() * s.n)),
        trace(tiling, traced),
        maps(hopper_maps(rung, s, Q.ptr, K.ptr, V.ptr)) {}

  template <class T>
  static std::vector<E> converted(const T* x, index_t count) {
    std::vector<E> out(static_cast<std::size_t>(count));
    for (std::size_t k = 0; k < out.size(); ++k) out[k] = to_element<E>(float(x[k]));
    return out;
  }
};

template <class Kernel>
void allow_smem(Kernel kernel, std::size_t bytes) {
  if (bytes > smem_limit())
    throw CudaError("the rung needs " + std::to_string(bytes / 1024) +
                    " KB of shared memory, more than this GPU's " +
                    std::to_string(smem_limit() / 1024) + " KB");
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)),
        "cudaFuncSetAttribute");
}

template <class E, int kD, bool Async, int kM>
void launch_tc(const DeviceProblem<E>& p) {
  const TcArgs<E> a{p.Q.ptr, p.K.ptr,  p.V.ptr, p.O.ptr,  p.L.ptr,       p.s.n,
                    p.s.m,   p.tiling, p.mask,  p.scale2, p.trace.view()};
  constexpr std::size_t bytes = tc_smem_bytes<kD, Async, kM>();
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

template <int kD>
void launch_simt(const DeviceProblem<float>& p) {
  const SimtArgs a{p.Q.ptr, p.K.ptr,  p.V.ptr, p.O.ptr,  p.L.ptr,       p.s.n,
                   p.s.m,   p.tiling, p.mask,  p.scale2, p.trace.view()};
  constexpr std::size_t bytes = simt_smem_bytes<kD>();
  const dim3 grid(unsigned(p.tiling.Tr()), unsigned(p.s.heads()));
  auto run = [&](auto kernel) {  // the tracing kernel is its own instance, as in launch_tc
    allow_smem(kernel, bytes);
    kernel<<<grid, SimtShape::kThreads, bytes>>>(a);
  };
  if (a.trace.computed)
    run(simt_forward_kernel<kD, true>);
  else
    run(simt_forward_kernel<kD, false>);
}

// Which of hopper's overlap steps are on; unset, the rung's own choice at that d.
struct HopperSteps {
  int ping_pong = -1, overlap = -1;  // -1: HopperDefaults<d>
};

template <class E, int kD>
void launch_hopper(const DeviceProblem<E>& p, HopperSteps steps) {
  const HopperArgs<E> a{p.O.ptr, p.L.ptr, p.s.n, p.s.m, p.tiling, p.mask, p.scale2, p.trace.view()};
  constexpr std::size_t bytes = HopperSmem<kD>::kBytes;
  const dim3 grid(unsigned(p.tiling.Tr()), unsigned(p.s.heads()));
  auto run = [&](auto kernel) {
    allow_smem(kernel, bytes);
    kernel<<<grid, kHopperThreads, bytes>>>(p.maps.Q, p.maps.K, p.maps.V, a);
  };
  using Defaults = HopperDefaults<kD>;
  if (steps.ping_pong < 0) steps.ping_pong = Defaults::ping_pong;
  if (steps.overlap < 0) steps.overlap = Defaults::overlap;
  if (a.trace.computed)  // the tracing kernel: the rung's own steps
    run(hopper_forward_kernel<E, kD, Defaults::ping_pong, Defaults::overlap, true>);
  else if (steps.ping_pong && steps.overlap)
    run(hopper_forward_kernel<E, kD, true, true, false>);
  else if (steps.ping_pong)
    run(hopper_forward_kernel<E, kD, true, false, false>);
  else if (steps.overlap)
    run(hopper_forward_kernel<E, kD, false, true, false>);
  else
    run(hopper_forward_kernel<E, kD, false, false, false>);
}

// One forward of the problem's rung: the one switch from (rung, d) to a compiled kernel.
template <class E>
void launch(const DeviceProblem<E>& p, HopperSteps steps = {}) {
  if (p.tiling.Tr() == 0 || p.s.heads() == 0) return;
  const bool wide = p.s.d == 128;
  if constexpr (std::is_same_v<E, float>) {
    wide ? launch_simt<128>(p) : launch_simt<64>(p);
  } else if (p.impl == Impl::hopper) {
    wide ? launch_hopper<E, 128>(p, steps) : launch_hopper<E, 64>(p, steps);
  } else if (p.impl == Impl::mma) {
    wide ? launch_tc<E, 128, true, 2>(p) : launch_tc<E, 64, true, 2>(p);
  } else {
    wide ? launch_tc<E, 128, false, 1>(p) : launch_tc<E, 64, false, 1>(p);
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

// The backward's arrays on the device, beside a forward's problem (Q, K, V already there): dO
// in E, D and the gradients in fp32, and the backward's own 64 x 64 tiling.
template <class E>
struct BackwardArrays {
  Tiling tiling;
  DeviceArray<E> dO;
  DeviceArray<float> D, dQ, dK, dV;
  BackwardArrays(const DeviceProblem<E>& p, const std::vector<E>& dO_host)
      : tiling{p.s.n, p.s.m, kBwdTile, kBwdTile},
        dO(dO_host.data(), dO_host.size()),
        D(std::size_t(p.s.heads() * p.s.n)),
        dQ(p.Q.count),
        dK(p.K.count),
        dV(p.K.count) {}
};

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

// One backward of the problem (O and L already in p): the switch from d to compiled kernels.
template <class E>
void launch_backward(const DeviceProblem<E>& p, BackwardArrays<E>& g, bool deterministic) {
  if (p.s.heads() == 0 || p.s.n == 0) return;
  if (p.s.m == 0) {  // no keys: no gradient flows (dK, dV are empty), and D = rowsum(dO 0) = 0
    check(cudaMemsetAsync(g.dQ.ptr, 0, g.dQ.count * sizeof(float)), "cudaMemsetAsync");
    check(cudaMemsetAsync(g.D.ptr, 0, g.D.count * sizeof(float)), "cudaMemsetAsync");
    return;
  }
  if constexpr (std::is_same_v<E, float>) {
    throw CudaError("the simt rung has no backward");
  } else {
    p.s.d == 128 ? launch_backward_d<E, 128>(p, g, deterministic)
                 : launch_backward_d<E, 64>(p, g, deterministic);
  }
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
    std::vector<E> o(p.O.count);
    p.O.download(o.data());
    for (std::size_t k = 0; k < o.size(); ++k) O[k] = T(from_element(o[k]));
    std::vector<float> l(p.L.count);
    p.L.download(l.data());
    std::copy(l.begin(), l.end(), L);
    if (L_lo) std::fill(L_lo, L_lo + l.size(), T(0));
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

template <class T>
Timing hopper_time_steps(const Shape& s, const AttnParams& params, Variant v, bool ping_pong,
                         bool overlap, const T* Q, const T* K, const T* V, int warmup, int reps) {
  return with_element<T>(s, v, Impl::hopper, [&](auto element) {
    using E = typename decltype(element)::type;
    DeviceProblem<E> p(s, params, Impl::hopper, Q, K, V, false);
    return time_events([&] { launch(p, HopperSteps{int(ping_pong), int(overlap)}); }, warmup, reps);
  });
}

template <class T>
void rung_backward(const Shape& s, const AttnParams& params, Variant v, Impl impl,
                   bool deterministic, const T* Q, const T* K, const T* V, const T* O, const T* L,
                   const T* dO, T* dQ, T* dK, T* dV, T* D) {
  with_element<T>(
      s, v, impl,
      [&](auto element) {
        using E = typename decltype(element)::type;
        DeviceProblem<E> p(s, params, impl, Q, K, V, false);
        p.O.upload(DeviceProblem<E>::converted(O, s.heads() * s.n * s.d).data());
        const std::vector<float> l(L, L + s.heads() * s.n);
        p.L.upload(l.data());
        BackwardArrays<E> g(p, DeviceProblem<E>::converted(dO, s.heads() * s.n * s.d));
        launch_backward(p, g, deterministic);
        check_launch("the backward kernels");
        auto down = [](const DeviceArray<float>& x, T* out) {
          std::vector<float> h(x.count);
          x.download(h.data());
          std::copy(h.begin(), h.end(), out);
        };
        down(g.dQ, dQ), down(g.dK, dK), down(g.dV, dV), down(g.D, D);
      },
      Pass::bwd);
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

// cuBLAS, found at run time: the tool runs (and the package installs) without it.
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
  check(cudaMemset(A.ptr, 0, count * 2), "cudaMemset");
  check(cudaMemset(B.ptr, 0, count * 2), "cudaMemset");
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
template Timing hopper_time_steps(const Shape&, const AttnParams&, Variant, bool, bool,
                                  const float*, const float*, const float*, int, int);
template Timing rung_time(const Shape&, const AttnParams&, Variant, Impl, const double*,
                          const double*, const double*, int, int);

}  // namespace fd::cuda
