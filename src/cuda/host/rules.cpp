// rules.cpp — what each GPU rung accepts (cuda_api.hpp), in a build with CUDA or without:
//   teaching  any d that fits shared memory, fp64, fp32, and bf16/fp16 emulated in fp32
//   simt      fp32 (each thread owns d/16 columns of O, in float4s)
//   tc, mma   bf16 or fp16 inputs with fp32 accumulation
//   backward  teaching, mma and hopper; simt and tc compute the forward only
//   d         the rung's list in head_dims.hpp (each rung's header checks its tiles hold them)
#include "cuda/host/cuda_api.hpp"
#include "cuda/host/head_dims.hpp"

namespace fd::cuda {
namespace {

// The head dims the kernels of (impl, pass) are compiled for: whether d is one, and the list in
// words; teaching takes any.
struct HeadDimRule {
  bool takes = true;
  std::string english;
  std::vector<int> list;
};
template <class Dims>
HeadDimRule rule(index_t d) {
  return {Dims::takes(d), Dims::english(), Dims::list()};
}
HeadDimRule head_dims(Impl impl, Pass pass, index_t d) {
  switch (impl) {
    case Impl::simt:
      return rule<SimtHeadDims>(d);
    case Impl::tc:
      return rule<TcHeadDims>(d);
    case Impl::mma:
      return pass == Pass::bwd ? rule<MmaBackwardHeadDims>(d) : rule<MmaHeadDims>(d);
    case Impl::hopper:
      return pass == Pass::bwd ? rule<HopperBackwardHeadDims>(d) : rule<HopperHeadDims>(d);
    default:
      return {};
  }
}

}  // namespace

Refusal refuses(Impl impl, index_t d, Precision p_in, Pass pass) {
  const std::string name = impl_name(impl);
  if (impl == Impl::teaching) return {};
  if (impl == Impl::fast) return {Refusal::Why::cpu_only, "--impl fast runs on the CPU only"};
  if (pass == Pass::bwd && impl != Impl::mma && impl != Impl::hopper)
    return {Refusal::Why::no_backward, "--impl " + name +
                                           " computes the forward only: the backward runs on "
                                           "--impl mma or hopper (bf16, fp16) or --impl teaching"};
  if (impl == Impl::simt && p_in != Precision::fp32)
    return {Refusal::Why::needs_fp32, "--impl simt computes in fp32: use --dtype fp32"};
  if (tensor_cores(impl) && p_in != Precision::bf16 && p_in != Precision::fp16)
    return {Refusal::Why::needs_bf16_fp16,
            "--impl " + name + " runs on tensor cores: use --dtype bf16 or --dtype fp16"};
  const HeadDimRule dims = head_dims(impl, pass, d);
  if (!dims.takes)
    return {Refusal::Why::d_unsupported,
            "--impl " + name + " is compiled for d = " + dims.english +
                ", not d = " + std::to_string(d) + " (--impl teaching takes any d)",
            dims.list};
  return {};
}

}  // namespace fd::cuda
