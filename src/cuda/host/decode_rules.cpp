// decode_rules.cpp — what the GPU decode kernel accepts, and its tiles (decode_api.hpp), in a build
// with CUDA or without:
//   dtype  bf16, fp16 or fp32 (loaded as they are, summed in fp32)
//   d      DecodeHeadDims (head_dims.hpp): a key row of 4 to 32 16-byte chunks, a divisor of a warp
//   tiles  groups of 1 query row (n = 1) or 4, keys in tiles of 16
#include "cuda/host/decode_api.hpp"
#include "cuda/host/head_dims.hpp"

namespace fd::cuda {

TileSizes decode_tiles(index_t n) {
  return {n == 1 ? 1 : 4, 16};
}

Refusal decode_refuses(index_t d, Precision p) {
  if (p != Precision::bf16 && p != Precision::fp16 && p != Precision::fp32)
    return {Refusal::Why::needs_bf16_fp16,
            "decode --device cuda reads bf16, fp16 or fp32: use --dtype bf16, fp16 or fp32"};
  if (!DecodeHeadDims::takes(d))
    return {Refusal::Why::d_unsupported,
            "decode --device cuda is compiled for d = " + DecodeHeadDims::english() +
                ", not d = " + std::to_string(d) + " (--device cpu takes any d)",
            DecodeHeadDims::list()};
  return {};
}

}  // namespace fd::cuda
