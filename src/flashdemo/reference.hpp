// reference.hpp — standard attention, materializing S and P: the ground truth for every path.
//
//   S = scale * Q K^T, masked -> -inf        (n x m, stored)
//   P_q = exp(S_q - max S_q) / sum exp(...)  (n x m, stored; a fully masked row is all 0)
//   O = P V,  L_q = max S_q + log(sum_k exp(S_qk - max S_q))
// In double this is the reference of DESIGN.md's correctness rule; in float it is the "naive
// implementation in the same precision" that the 2x rule measures against. With `stored` bf16
// or fp16 it stores S, P and O in that format (the arithmetic stays in T), as a framework's
// materializing attention does in that precision.
#pragma once

#include "flashdemo/attention.hpp"
#include "flashdemo/precision.hpp"

namespace fd {

template <class T>
struct ReferenceForward : ForwardResult<T> {
  Mat<T> S;  // n x m scores after scale and mask
  Mat<T> P;  // n x m probabilities
};

// Q: n x d, K: m x d, V: m x d.
template <class T>
ReferenceForward<T> reference_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                      const AttnParams& params, Precision stored = Precision::fp64);

// The backward of the same, from the materialized P (analytic gradients):
//   dV = P^T dO,  dP = dO V^T,  D = rowsum(P * dP),  dS = P * (dP - D),
//   dQ = scale * dS K,  dK = scale * dS^T Q.
template <class T>
struct ReferenceBackward {
  Mat<T> dQ, dK, dV;  // n x d, m x d, m x d
  Mat<T> dP, dS;      // n x m
  Vec<T> D;           // n
};

// Q: n x d, K, V: m x d, dO: n x d.
template <class T>
ReferenceBackward<T> reference_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                        const Mat<T>& dO, const AttnParams& params,
                                        Precision stored = Precision::fp64);

// Bytes the reference needs for S and P: 2 * n * m * sizeof(T) (as a double: it may not fit).
double reference_bytes(index_t n, index_t m, index_t bytes_per_element);

}  // namespace fd
