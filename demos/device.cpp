// device.cpp — CPU or CUDA, chosen at one place (see device.hpp).
#include "device.hpp"

#include "cuda/cuda_api.hpp"
#include "ui/output.hpp"

namespace fd::demos {
namespace {

// Head 0's kernel trace only at sizes where a trace is worth reading.
constexpr index_t kMaxTracedSlots = index_t(1) << 22;

cuda::Shape shape(const AttentionOptions& o) {
  return {1, 1, o.n, o.keys(), o.d};
}

}  // namespace

void require_device(const AttentionOptions& o) {
  if (o.device != Device::cuda) return;
  if (o.mistake != Mistake::none) throw Error(kUsage, ui::tr(ui::Msg::err_break_cuda));
  const cuda::GpuInfo g = cuda::gpu_info();
  if (!g.built) throw Error(kNoDevice, ui::tr(ui::Msg::err_no_cuda_build));
  if (!g.present) throw Error(kNoDevice, ui::tr(ui::Msg::err_no_gpu, g.why));
}

template <class T>
ForwardResult<T> forward_on_device(const AttentionOptions& o, const Inputs<T>& in,
                                   TraceSink* sink) {
  if (o.device == Device::cpu)
    return flash_forward(in.Q, in.K, in.V, o.params(), o.tiles(), sink, o.variant());
  ForwardResult<T> out{Mat<T>(o.n, o.d), Vec<T>(o.n), Vec<T>(o.n)};
  cuda::KernelTrace trace;
  const bool traced = sink && o.tiling().Tr() * o.tiling().Tc() * o.Br <= kMaxTracedSlots;
  try {
    cuda::forward<T>(shape(o), o.params(), o.tiles(), o.variant(), in.Q.data(), in.K.data(),
                     in.V.data(), out.O.data(), out.L.data(), out.L_lo.data(),
                     traced ? &trace : nullptr);
  } catch (const cuda::CudaError& e) {
    throw Error(kNoDevice, e.what());
  }
  if (traced)
    cuda::replay(trace, o.params().mask_for(o.n, o.keys()),
                 std::vector<double>(out.L.data(), out.L.data() + o.n), *sink);
  return out;
}

template <class T>
BackwardResult<T> backward_on_device(const AttentionOptions& o, const Inputs<T>& in,
                                     const ForwardResult<T>& fwd, const Mat<T>& dO,
                                     TraceSink* sink) {
  if (o.device == Device::cpu)
    return flash_backward(in.Q, in.K, in.V, fwd, dO, o.params(), o.tiles(), sink, o.variant());
  BackwardResult<T> g{Mat<T>(o.n, o.d), Mat<T>(o.keys(), o.d), Mat<T>(o.keys(), o.d), Vec<T>(o.n)};
  try {
    cuda::backward<T>(shape(o), o.params(), o.tiles(), o.variant(), o.deterministic, in.Q.data(),
                      in.K.data(), in.V.data(), fwd.O.data(), fwd.L.data(),
                      fwd.L_lo.size() ? fwd.L_lo.data() : nullptr, dO.data(), g.dQ.data(),
                      g.dK.data(), g.dV.data(), g.D.data());
  } catch (const cuda::CudaError& e) {
    throw Error(kNoDevice, e.what());
  }
  return g;
}

#define FD_INSTANTIATE(T)                                                                  \
  template ForwardResult<T> forward_on_device(const AttentionOptions&, const Inputs<T>&,   \
                                              TraceSink*);                                 \
  template BackwardResult<T> backward_on_device(const AttentionOptions&, const Inputs<T>&, \
                                                const ForwardResult<T>&, const Mat<T>&,    \
                                                TraceSink*);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd::demos
