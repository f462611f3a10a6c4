// rules.cpp — what each GPU rung accepts (cuda_api.hpp), in a build with CUDA or without:
//   teaching  any d that fits shared memory, fp64, fp32, and bf16/fp16 emulated in fp32
//   simt      fp32, d = 64 or 128 (each thread owns d/16 columns of O, in float4s)
//   tc, mma   bf16 or fp16 inputs with fp32 accumulation, d = 64 or 128 (rows of 8 16-byte
//             chunks or more, which the swizzle needs)
//   backward  teaching and mma; simt and tc compute the forward only
//   decode    bf16, fp16 or fp32 (loaded as they are, summed in fp32), d = 64 or 128 (a key row
//             of 4 to 32 16-byte chunks, a divisor of a warp); groups of 1 or 4 query rows
#include "cuda/host/cuda_api.hpp"
#include "cuda/host/decode_api.hpp"

namespace fd::cuda {

Refusal refuses(Impl impl, index_t d, Precision p_in, Pass pass) {
  const std::string name = impl_name(impl);
  if (impl == Impl::teaching) return {};
  if (impl == Impl::fast) return {Refusal::Why::cpu_only, "--impl fast runs on the CPU only"};
  if (pass == Pass::bwd && impl != Impl::mma)
    return {Refusal::Why::no_backward, "--impl " + name +
                                           " computes the forward only: the backward runs on "
                                           "--impl mma (bf16, fp16) or --impl teaching"};
  if (impl == Impl::simt && p_in != Precision::fp32)
    return {Refusal::Why::needs_fp32, "--impl simt computes in fp32: use --dtype fp32"};
  if (tensor_cores(impl) && p_in != Precision::bf16 && p_in != Precision::fp16)
    return {Refusal::Why::needs_bf16_fp16,
            "--impl " + name + " runs on tensor cores: use --dtype bf16 or --dtype fp16"};
  if (d != 64 && d != 128)
    return {Refusal::Why::d_unsupported,
            "--impl " + name + " is compiled for d = 64 and 128, not d = " + std::to_string(d) +
                " (--impl teaching takes any d)"};
  return {};
}

TileSizes decode_tiles(index_t n) {
  return {n == 1 ? 1 : 4, 16};
}

Refusal decode_refuses(index_t d, Precision p) {
  if (p != Precision::bf16 && p != Precision::fp16 && p != Precision::fp32)
    return {Refusal::Why::needs_bf16_fp16,
            "decode --device cuda reads bf16, fp16 or fp32: use --dtype bf16, fp16 or fp32"};
  if (d != 64 && d != 128)
    return {Refusal::Why::d_unsupported,
            "decode --device cuda is compiled for d = 64 and 128, not d = " + std::to_string(d) +
                " (--device cpu takes any d)"};
  return {};
}

}  // namespace fd::cuda
