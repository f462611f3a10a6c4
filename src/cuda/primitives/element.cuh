// element.cuh — a float rounded to a kernel's element type E (float, __nv_bfloat16, __half), to
// nearest even: the one conversion every launcher's upload and every kernel's store uses.
//   to_element<E>(x) = round_E(x)
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <type_traits>

namespace fd::cuda {

template <class E>
__host__ __device__ inline E to_element(float x) {  // host too: the launchers' uploads
  if constexpr (std::is_same_v<E, __nv_bfloat16>)
    return __float2bfloat16_rn(x);
  else if constexpr (std::is_same_v<E, __half>)
    return __float2half_rn(x);
  else
    return x;
}

}  // namespace fd::cuda
