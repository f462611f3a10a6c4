// device.hpp — the one switch between the implementations (flashdemo/impl.hpp) for `forward` and
// `backward`: --device cpu|cuda, --impl teaching|fast. The teaching paths produce the same trace
// events on both devices (the kernel's recorded tile states are replayed into the sinks); the
// fast path is not traced.
#pragma once

#include <string>

#include "attention_cli.hpp"
#include "cuda/host/cuda_api.hpp"
#include "flashdemo/teaching/flash_backward.hpp"
#include "flashdemo/teaching/flash_forward.hpp"
#include "flashdemo/tools/benchmark.hpp"

namespace fd::demos {

template <class T>
ForwardResult<T> forward_on_device(const AttentionOptions& o, const Inputs<T>& in, TraceSink* sink);

template <class T>
BackwardResult<T> backward_on_device(const AttentionOptions& o, const Inputs<T>& in,
                                     const ForwardResult<T>& fwd, const Mat<T>& dO,
                                     TraceSink* sink);

// An implementation where it cannot run (fast on cuda or with a trace, a --break, emulated
// precision; a GPU rung on the CPU, or refusing the case or the pass (cuda::refuses: the backward
// runs on teaching, mma and hopper), or with tiles other than its pass's own, or a backward rung
// with
// --trace tiles|rows (its kernels record no trace); cuda without CUDA in the build or without a
// GPU): one clear error, usage (exit 2) before the missing GPU (exit 5).
// With --q, --k, --v, d is known only once the files are read: require_device then checks what
// holds for any d, and require_device_d, after the files, the rung's rule for their d (and its
// tiles), then the GPU. Each check runs once (validate_run, attention_cli.hpp).
void require_device(const AttentionOptions& o, Subcommand which = Subcommand::forward);
void require_device_d(const AttentionOptions& o, Subcommand which);

// Why a GPU rung does not run a case or a pass (cuda::refuses), in the current language; empty
// when it does.
std::string refusal(Impl impl, index_t d, Precision p, cuda::Pass pass = cuda::Pass::fwd);

// The pass of a bench case, as the CUDA side names it.
cuda::Pass cuda_pass(bench::Pass pass);

// Refuses (exit 5) when this build has no CUDA or no GPU answers.
void require_gpu();

// How `bench` and `ladder` run a GPU rung on a case: cuda::forward, cuda::backward (teaching,
// mma), cuda::time_kernels, each with the rung's tiles for its pass (teaching: default_tiles;
// simt, tc, mma, hopper: cuda::problem_tiles).
template <class T>
bench::Runner<T> gpu_runner(const bench::Case& c, Impl impl, bool deterministic,
                            const bench::Arrays<T>& a);

// Why no GPU answered, in the current language ("no NVIDIA driver on this machine", ...).
std::string why_no_gpu(const cuda::GpuInfo& g);

}  // namespace fd::demos
