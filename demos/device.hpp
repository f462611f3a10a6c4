// device.hpp — the one switch between the CPU teaching path and the CUDA teaching kernels, for
// `forward` and `backward` (--device cpu|cuda). Both produce the same results and the same
// trace events (the kernel's recorded tile states are replayed into the sinks).
#pragma once

#include "attention_cli.hpp"
#include "flashdemo/flash_backward.hpp"
#include "flashdemo/flash_forward.hpp"

namespace fd::demos {

template <class T>
ForwardResult<T> forward_on_device(const AttentionOptions& o, const Inputs<T>& in, TraceSink* sink);

template <class T>
BackwardResult<T> backward_on_device(const AttentionOptions& o, const Inputs<T>& in,
                                     const ForwardResult<T>& fwd, const Mat<T>& dO,
                                     TraceSink* sink);

// --device cuda where it cannot run (no CUDA in the build, no GPU, a --break): one clear error.
void require_device(const AttentionOptions& o);

}  // namespace fd::demos
