// device.cpp — CPU or CUDA, chosen at one place (see device.hpp).
#include "device.hpp"

#include <fmt/core.h>

#include "cuda/host/cuda_api.hpp"
#include "flashdemo/fast/fast_attention.hpp"
#include "ui/output.hpp"

namespace fd::demos {
namespace {

// Head 0's kernel trace only at sizes where a trace is worth reading.
constexpr index_t kMaxTracedSlots = index_t(1) << 22;

cuda::Shape shape(const AttentionOptions& o) {
  return {1, 1, o.n, o.keys(), o.d};
}

fast::Options fast_options(const AttentionOptions& o, cuda::Pass pass) {
  ensure_threads(thread_count(o));
  return {thread_count(o), o.tiles(pass)};
}

template <class T>
ForwardResult<T> fast_forward(const AttentionOptions& o, const Inputs<T>& in) {
  ForwardResult<T> out{Mat<T>(o.n, o.d), Vec<T>(o.n), Vec<T>(o.n)};
  fast::forward<T>({1, 1, o.n, o.keys(), o.d}, o.params(), fast_options(o, cuda::Pass::fwd),
                   in.Q.data(), in.K.data(), in.V.data(), out.O.data(), out.L.data(),
                   out.L_lo.data());
  return out;
}

template <class T>
BackwardResult<T> fast_backward(const AttentionOptions& o, const Inputs<T>& in,
                                const ForwardResult<T>& fwd, const Mat<T>& dO) {
  BackwardResult<T> g{Mat<T>(o.n, o.d), Mat<T>(o.keys(), o.d), Mat<T>(o.keys(), o.d), Vec<T>(o.n)};
  fast::backward<T>({1, 1, o.n, o.keys(), o.d}, o.params(), fast_options(o, cuda::Pass::bwd),
                    in.Q.data(), in.K.data(), in.V.data(), fwd.O.data(), fwd.L.data(),
                    fwd.L_lo.size() ? fwd.L_lo.data() : nullptr, dO.data(), g.dQ.data(),
                    g.dK.data(), g.dV.data(), g.D.data());
  return g;
}

}  // namespace

namespace {

// The rung's rule for d, and, once the shape is known (the files read), its tiles on the problem
// against --block-q, --block-k.
void require_rung_d(const AttentionOptions& o, cuda::Pass pass, index_t d, bool shape_known) {
  const std::string why = refusal(o.impl, d, o.working(), pass);
  if (!why.empty()) throw Error(kUsage, why);
  if (!shape_known) return;
  const TileSizes fixed =
      cuda::problem_tiles(o.impl, o.n, o.keys(), d, o.params().mask_for(o.n, o.keys()), pass);
  if ((o.br_given && o.Br != fixed.Br) || (o.bc_given && o.Bc != fixed.Bc))
    throw Error(kUsage, ui::tr(ui::Msg::err_rung_tiles, impl_name(o.impl), fixed.Br, fixed.Bc));
}

cuda::Pass pass_of(Subcommand which) {
  return which == Subcommand::backward ? cuda::Pass::bwd : cuda::Pass::fwd;
}

}  // namespace

void require_device(const AttentionOptions& o, Subcommand which) {
  if (o.impl == Impl::fast) {
    if (o.device == Device::cuda) throw Error(kUsage, ui::tr(ui::Msg::err_fast_cuda));
    if (o.trace >= ui::TraceLevel::tiles)
      throw Error(kUsage, ui::tr(ui::Msg::err_fast_trace,
                                 o.trace == ui::TraceLevel::tiles ? "tiles" : "rows"));
    if (o.emulated())  // named as given: --dtype bf16 and --precision bf16 are one run here
      throw Error(kUsage, ui::tr(ui::Msg::err_fast_variant,
                                 fmt::format("{} {}", o.precision_named ? "--precision" : "--dtype",
                                             precision_name(o.precision))));
    if (o.mistake != Mistake::none)
      throw Error(kUsage, ui::tr(ui::Msg::err_fast_variant, "--break"));
    if (o.show_p >= 0) throw Error(kUsage, ui::tr(ui::Msg::err_fast_variant, "--show-p"));
  }
  if (!runs_on(o.impl, o.device))
    throw Error(kUsage, ui::tr(ui::Msg::err_rung_cpu, impl_name(o.impl)));
  if (o.deterministic && o.device != Device::cuda)  // it would change nothing there
    throw Error(kUsage, ui::tr(ui::Msg::err_deterministic_cpu));
  if (o.device != Device::cuda) return;
  if (o.mistake != Mistake::none) throw Error(kUsage, ui::tr(ui::Msg::err_break_cuda));
  // d comes from --q when given, known only once the files are read (require_device_d then
  // checks it); until then only what holds for any d is checked (64: a d every rung takes), and
  // not the GPU.
  const bool d_known = o.files.q.empty();
  if (o.impl != Impl::teaching) {
    const cuda::Pass pass = pass_of(which);
    // (a rung without a backward is refused first, for any d: no case would run)
    require_rung_d(o, pass, d_known ? o.d : 64, d_known);
    if (pass == cuda::Pass::bwd && o.trace >= ui::TraceLevel::tiles)
      throw Error(kUsage,
                  ui::tr(ui::Msg::err_rung_trace_backward,
                         o.trace == ui::TraceLevel::tiles ? "tiles" : "rows", impl_name(o.impl)));
  }
  if (d_known || o.impl == Impl::teaching) require_gpu();
}

void require_device_d(const AttentionOptions& o, Subcommand which) {
  if (o.device != Device::cuda || o.impl == Impl::teaching) return;  // (its GPU: asked already)
  require_rung_d(o, pass_of(which), o.d, true);
  require_gpu();
}

void require_gpu() {
  const cuda::GpuInfo g = cuda::gpu_info();
  if (!g.built) throw Error(kNoDevice, ui::tr(ui::Msg::err_no_cuda_build));
  if (!g.present) throw Error(kNoDevice, ui::tr(ui::Msg::err_no_gpu, why_no_gpu(g)));
}

// cuda::refuses's reason, in the language of the run (empty when the rung runs the case).
std::string refusal(Impl impl, index_t d, Precision p, cuda::Pass pass) {
  using Why = cuda::Refusal::Why;
  const cuda::Refusal r = cuda::refuses(impl, d, p, pass);
  switch (r.why) {
    case Why::none:
      return "";
    case Why::needs_fp32:
      return ui::tr(ui::Msg::refuse_simt_fp32);
    case Why::needs_bf16_fp16:
      return ui::tr(ui::Msg::refuse_tc_dtype, impl_name(impl));
    case Why::d_unsupported:
      return ui::tr(ui::Msg::refuse_d, impl_name(impl), ui::spoken_list(r.head_dims), d);
    case Why::no_backward:
      return ui::tr(ui::Msg::refuse_no_backward, impl_name(impl));
    case Why::cpu_only:
      break;
  }
  return r.english;
}

cuda::Pass cuda_pass(bench::Pass pass) {
  return pass == bench::Pass::bwd ? cuda::Pass::bwd : cuda::Pass::fwd;
}

std::string why_no_gpu(const cuda::GpuInfo& g) {
  switch (g.absent) {
    case cuda::NoGpu::not_built:
      return ui::tr(ui::Msg::gpu_not_built);
    case cuda::NoGpu::no_driver:
      return ui::tr(ui::Msg::gpu_no_driver);
    case cuda::NoGpu::no_device:
      return ui::tr(ui::Msg::gpu_no_device);
    case cuda::NoGpu::cuda_error:
      return ui::tr(ui::Msg::gpu_cuda_error, g.why);
    case cuda::NoGpu::none:
      break;
  }
  return g.why;
}

template <class T>
ForwardResult<T> forward_on_device(const AttentionOptions& o, const Inputs<T>& in,
                                   TraceSink* sink) {
  if (o.device == Device::cpu && o.impl == Impl::fast) return fast_forward(o, in);
  if (o.device == Device::cpu)
    return flash_forward(in.Q, in.K, in.V, o.params(), o.tiles(), sink, o.variant());
  ForwardResult<T> out{Mat<T>(o.n, o.d), Vec<T>(o.n), Vec<T>(o.n)};
  cuda::KernelTrace trace;
  const Tiling t = o.tiling(cuda::Pass::fwd);
  const bool traced = sink && t.Tr() * t.Tc() * t.Br <= kMaxTracedSlots;
  // (the kernel's trace: head 0 only, replayed into the same sinks as the CPU path's)
  try {
    cuda::forward<T>(shape(o), o.params(), o.tiles(cuda::Pass::fwd), o.variant(), o.impl,
                     in.Q.data(), in.K.data(), in.V.data(), out.O.data(), out.L.data(),
                     out.L_lo.data(), traced ? &trace : nullptr);
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
  if (o.device == Device::cpu && o.impl == Impl::fast) return fast_backward(o, in, fwd, dO);
  if (o.device == Device::cpu)
    return flash_backward(in.Q, in.K, in.V, fwd, dO, o.params(), o.tiles(cuda::Pass::bwd), sink,
                          o.variant());
  BackwardResult<T> g{Mat<T>(o.n, o.d), Mat<T>(o.keys(), o.d), Mat<T>(o.keys(), o.d), Vec<T>(o.n)};
  try {
    cuda::backward<T>(shape(o), o.params(), o.tiles(cuda::Pass::bwd), o.variant(), o.impl,
                      o.deterministic, in.Q.data(), in.K.data(), in.V.data(), fwd.O.data(),
                      fwd.L.data(), fwd.L_lo.size() ? fwd.L_lo.data() : nullptr, dO.data(),
                      g.dQ.data(), g.dK.data(), g.dV.data(), g.D.data());
  } catch (const cuda::CudaError& e) {
    throw Error(kNoDevice, e.what());
  }
  return g;
}

template <class T>
bench::Runner<T> gpu_runner(const bench::Case& c, Impl impl, bool deterministic,
                            const bench::Arrays<T>& a) {
  const cuda::Shape shape{c.b, c.h, c.n, c.m, c.d};
  auto tiles_for = [&](cuda::Pass pass) {
    return impl == Impl::teaching
               ? cuda::default_tiles(c.d, sizeof(T))
               : cuda::problem_tiles(impl, c.n, c.m, c.d, c.params().mask_for(c.n, c.m), pass);
  };
  const TileSizes fwd_tiles = tiles_for(cuda::Pass::fwd), bwd_tiles = tiles_for(cuda::Pass::bwd);
  const cuda::Pass pass = cuda_pass(c.pass);
  const TileSizes tiles = tiles_for(pass);  // of the pass timed
  bench::Runner<T> r;
  r.forward = [=, &a](bench::Outputs<T>& out) {
    cuda::forward<T>(shape, c.params(), fwd_tiles, c.variant(), impl, a.Q.data(), a.K.data(),
                     a.V.data(), out.O.data(), out.L.data(), out.L_lo.data());
  };
  r.backward = [=, &a](bench::Outputs<T>& out) {
    cuda::backward<T>(shape, c.params(), bwd_tiles, c.variant(), impl, deterministic, a.Q.data(),
                      a.K.data(), a.V.data(), out.O.data(), out.L.data(), out.L_lo.data(),
                      a.dO.data(), out.dQ.data(), out.dK.data(), out.dV.data(), out.D.data());
  };
  r.device_times = [=, &a](index_t warmup, index_t reps) {
    return cuda::time_kernels<T>(shape, c.params(), tiles, c.variant(), impl, pass, deterministic,
                                 a.Q.data(), a.K.data(), a.V.data(), a.dO.data(), int(warmup),
                                 int(reps))
        .ms;
  };
  return r;
}

#define FD_INSTANTIATE(T)                                                                        \
  template bench::Runner<T> gpu_runner(const bench::Case&, Impl, bool, const bench::Arrays<T>&); \
  template ForwardResult<T> forward_on_device(const AttentionOptions&, const Inputs<T>&,         \
                                              TraceSink*);                                       \
  template BackwardResult<T> backward_on_device(const AttentionOptions&, const Inputs<T>&,       \
                                                const ForwardResult<T>&, const Mat<T>&,          \
                                                TraceSink*);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd::demos
