// reference.cpp — standard attention, S and P materialized (see reference.hpp for the equations).
#include "flashdemo/reference.hpp"

#include <initializer_list>

#include "flashdemo/online_softmax.hpp"

namespace fd {
namespace {

// Stores X in the given format (a no-op for fp32 and fp64).
template <class T>
void store_as(Precision stored, Mat<T>& X) {
  if (stored == Precision::bf16 || stored == Precision::fp16)
    X = X.unaryExpr([stored](T v) { return round_to(stored, v); });
}

}  // namespace

template <class T>
ReferenceForward<T> reference_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                      const AttnParams& params, Precision stored) {
  // Q: n x d, K: m x d, V: m x d  ->  S, P: n x m, O: n x d, L: n
  const index_t n = Q.rows(), m = K.rows();
  const Mask mask = params.mask_for(n, m);
  ReferenceForward<T> r;
  r.S = T(params.scale_for(Q.cols())) * (Q * K.transpose());  // S = scale * Q K^T
  store_as(stored, r.S);
  r.P.resize(n, m);
  r.L.resize(n);
  for (index_t q = 0; q < n; ++q) {
    for (index_t k = 0; k < m; ++k) {
      if (mask.masked(q, k)) r.S(q, k) = neg_inf<T>();
    }
    const T row_max = r.S.row(q).maxCoeff();  // pass 1: max
    T sum = T(0);
    for (index_t k = 0; k < m; ++k) {
      r.P(q, k) = shifted_exp(r.S(q, k), row_max);  // pass 2: exp(S - max), 0 if row masked
      sum += r.P(q, k);
    }
    if (sum > T(0)) r.P.row(q) /= sum;  // pass 3: normalize
    r.L(q) = sum > T(0) ? row_max + flog(sum) : neg_inf<T>();
  }
  store_as(stored, r.P);
  r.O = r.P * V;  // O = P V
  store_as(stored, r.O);
  return r;
}

template <class T>
ReferenceBackward<T> reference_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                        const Mat<T>& dO, const AttnParams& params,
                                        Precision stored) {
  // Q: n x d, K, V: m x d, dO: n x d -> dQ: n x d, dK, dV: m x d
  const ReferenceForward<T> f = reference_forward(Q, K, V, params, stored);
  const T scale = T(params.scale_for(Q.cols()));
  ReferenceBackward<T> r;
  r.dV = f.P.transpose() * dO;  // dV = P^T dO
  r.dP = dO * V.transpose();    // dP = dO V^T
  store_as(stored, r.dP);
  r.D = f.P.cwiseProduct(r.dP).rowwise().sum();   // D = rowsum(P * dP)
  r.dS = f.P.cwiseProduct(r.dP.colwise() - r.D);  // dS = P * (dP - D)
  store_as(stored, r.dS);
  r.dQ = scale * (r.dS * K);              // dQ = scale * dS K
  r.dK = scale * (r.dS.transpose() * Q);  // dK = scale * dS^T Q
  for (Mat<T>* x : {&r.dQ, &r.dK, &r.dV}) store_as(stored, *x);
  return r;
}

double reference_bytes(index_t n, index_t m, index_t bytes_per_element) {
  return 2.0 * double(n) * double(m) * double(bytes_per_element);
}

#define FD_INSTANTIATE(T)                                                                       \
  template ReferenceForward<T> reference_forward(const Mat<T>&, const Mat<T>&, const Mat<T>&,   \
                                                 const AttnParams&, Precision);                 \
  template ReferenceBackward<T> reference_backward(const Mat<T>&, const Mat<T>&, const Mat<T>&, \
                                                   const Mat<T>&, const AttnParams&, Precision);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd
