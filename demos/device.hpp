// device.hpp — the one switch between the implementations (flashdemo/impl.hpp) for `forward` and
// `backward`: --device cpu|cuda, --impl teaching|fast. The teaching paths produce the same trace
// events on both devices (the kernel's recorded tile states are replayed into the sinks); the
// fast path is not traced.
#pragma once

#include <string>

#include "attention_cli.hpp"
#include "cuda/cuda_api.hpp"
#include "flashdemo/flash_backward.hpp"
#include "flashdemo/flash_forward.hpp"

namespace fd::demos {

template <class T>
ForwardResult<T> forward_on_device(const AttentionOptions& o, const Inputs<T>& in, TraceSink* sink);

template <class T>
BackwardResult<T> backward_on_device(const AttentionOptions& o, const Inputs<T>& in,
                                     const ForwardResult<T>& fwd, const Mat<T>& dO,
                                     TraceSink* sink);

// An implementation where it cannot run (fast on cuda or with a trace, a --break, emulated
// precision; cuda without CUDA in the build or without a GPU): one clear error.
void require_device(const AttentionOptions& o);

// Why no GPU answered, in the current language ("no NVIDIA driver on this machine", ...).
std::string why_no_gpu(const cuda::GpuInfo& g);

}  // namespace fd::demos
