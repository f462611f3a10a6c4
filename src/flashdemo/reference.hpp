// reference.hpp — standard attention, materializing S and P: the ground truth for every path.
//
//   S = scale * Q K^T, masked -> -inf        (n x m, stored)
//   P_q = exp(S_q - max S_q) / sum exp(...)  (n x m, stored; a fully masked row is all 0)
//   O = P V,  L_q = max S_q + log(sum_k exp(S_qk - max S_q))
// In a type wider than a path's (wider_t: double for float, long double for double) this is the
// reference of the correctness rule (compare.hpp); in the path's own type it is the "naive
// implementation in the same precision" that the 2x rule measures against. With `stored` bf16
// or fp16 it stores S, P and O in that format (the arithmetic stays in T), as a framework's
// materializing attention does in that precision.
// Every product sums its terms in one fixed order (k ascending, see reference.cpp), so the
// reference prints the same digits on every x86-64 machine, whatever its SIMD width.
#pragma once

#include <limits>

#include "flashdemo/attention.hpp"
#include "flashdemo/precision.hpp"

namespace fd {

// The type a path in T is judged against: wider than T, so that the path's error and the naive
// error in T are both measured, not blurred by the reference's own rounding.
template <class T>
struct wider {
  using type = double;  // float (and bf16, fp16 emulated in float)
};
template <>
struct wider<double> {
  using type = long double;  // x87 extended: a 64-bit significand against double's 53
};
template <class T>
using wider_t = typename wider<T>::type;
static_assert(std::numeric_limits<long double>::digits > std::numeric_limits<double>::digits,
              "the fp64 reference needs a long double wider than double");

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

// The magnitude of the terms each entry of an output sums (every term by its absolute value):
//   R(O) = P |V|,  R(L)_q = max(|max_k S_qk|, |L_q|),  R(dV) = P^T |dO|,
//   A = |dO| |V|^T,  R(D) = rowsum(P * A),  R(dQ) = scale (P * (A + R(D))) |K|,
//   R(dK) = scale (P * (A + R(D)))^T |Q|.
// u R is the scale of the rounding error any summation order makes in that entry (the first-order
// bound of Higham's "Accuracy and Stability of Numerical Algorithms", 3.1): the part of two
// implementations' errors that cannot be compared, which the correctness rule's floor allows for
// (compare.hpp). dO empty: the forward's only.
template <class T>
struct Magnitudes {
  Mat<T> O, dQ, dK, dV;
  Vec<T> L, D;
};

template <class T>
Magnitudes<T> reference_magnitudes(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                   const Mat<T>& dO, const ReferenceForward<T>& f,
                                   const AttnParams& params);

// Bytes the reference needs for S and P: 2 * n * m * sizeof(T) (as a double: it may not fit).
double reference_bytes(index_t n, index_t m, index_t bytes_per_element);

}  // namespace fd
