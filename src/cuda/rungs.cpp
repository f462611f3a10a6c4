// rungs.cpp — what each GPU rung accepts (cuda_api.hpp), in a build with CUDA or without:
//   teaching  any d that fits shared memory, fp64, fp32, and bf16/fp16 emulated in fp32
//   simt      fp32, d = 64 or 128 (each thread owns d/16 columns of O, in float4s)
//   tc, mma   bf16 or fp16 inputs with fp32 accumulation, d = 64 or 128 (rows of 8 16-byte
//             chunks or more, which the swizzle needs)
#include "cuda/cuda_api.hpp"

namespace fd::cuda {

std::string refuses(Impl impl, index_t d, Precision p_in) {
  const bool d_ok = d == 64 || d == 128;
  const std::string name = impl_name(impl);
  switch (impl) {
    case Impl::teaching:
      return "";
    case Impl::fast:
      return "--impl fast runs on the CPU only";
    case Impl::simt:
      if (p_in != Precision::fp32) return "--impl simt computes in fp32: use --dtype fp32";
      break;
    case Impl::tc:
    case Impl::mma:
      if (p_in != Precision::bf16 && p_in != Precision::fp16)
        return "--impl " + name + " runs on tensor cores: use --dtype bf16 or --dtype fp16";
      break;
  }
  if (!d_ok)
    return "--impl " + name + " is compiled for d = 64 and 128, not d = " + std::to_string(d) +
           " (--impl teaching takes any d)";
  return "";
}

}  // namespace fd::cuda
