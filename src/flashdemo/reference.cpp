// reference.cpp — standard attention, S and P materialized (see reference.hpp for the equations).
#include "flashdemo/reference.hpp"

#include "flashdemo/online_softmax.hpp"

namespace fd {

template <class T>
ReferenceForward<T> reference_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                      const AttnParams& params) {
  // Q: n x d, K: m x d, V: m x d  ->  S, P: n x m, O: n x d, L: n
  const index_t n = Q.rows(), m = K.rows();
  const Mask mask = params.mask_for(n, m);
  ReferenceForward<T> r;
  r.S = T(params.scale_for(Q.cols())) * (Q * K.transpose());  // S = scale * Q K^T
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
  r.O = r.P * V;  // O = P V
  return r;
}

double reference_bytes(index_t n, index_t m, index_t bytes_per_element) {
  return 2.0 * double(n) * double(m) * double(bytes_per_element);
}

template ReferenceForward<float> reference_forward(const Mat<float>&, const Mat<float>&,
                                                   const Mat<float>&, const AttnParams&);
template ReferenceForward<double> reference_forward(const Mat<double>&, const Mat<double>&,
                                                    const Mat<double>&, const AttnParams&);

}  // namespace fd
