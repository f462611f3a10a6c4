// reference.cpp — standard attention, S and P materialized (see reference.hpp for the equations).
#include "flashdemo/reference/reference.hpp"

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "flashdemo/host_device/online_softmax.hpp"

namespace fd {
namespace {

// C = A B (A: rows x inner, B: inner x cols), row by row: C_i = sum_k A_ik B_k with k ascending,
// one fused multiply-add per term (fmadd).
// Each entry is summed in that one order whatever the SIMD width (vectorization runs along the
// row of B, never across k), unlike a blocked GEMM whose order follows the cache sizes. Zero terms
// are skipped (B is finite, so 0 * B_k adds nothing): the masked part of P costs nothing. The
// nonzero terms are taken four at a time along k: C_ij is read and written once per four terms,
// not once per term (the same operations in the same order: the same bits; for long double, x87
// code with no SIMD, it is what makes the wider reference affordable).
template <class T>
FD_FMA_CLONES Mat<T> product(const Mat<T>& A, const Mat<T>& B) {
  Mat<T> C = Mat<T>::Zero(A.rows(), B.cols());
  const index_t cols = B.cols();
  std::vector<index_t> ks(std::size_t(A.cols()));
  for (index_t i = 0; i < A.rows(); ++i) {
    T* c = C.row(i).data();
    std::size_t nonzero = 0;
    for (index_t k = 0; k < A.cols(); ++k)
      if (A(i, k) != T(0)) ks[nonzero++] = k;
    std::size_t x = 0;
    for (; x + 4 <= nonzero; x += 4) {
      const T a0 = A(i, ks[x]), a1 = A(i, ks[x + 1]), a2 = A(i, ks[x + 2]), a3 = A(i, ks[x + 3]);
      const T *b0 = B.row(ks[x]).data(), *b1 = B.row(ks[x + 1]).data();
      const T *b2 = B.row(ks[x + 2]).data(), *b3 = B.row(ks[x + 3]).data();
      for (index_t j = 0; j < cols; ++j)
        c[j] = fmadd(a3, b3[j], fmadd(a2, b2[j], fmadd(a1, b1[j], fmadd(a0, b0[j], c[j]))));
    }
    for (; x < nonzero; ++x) {
      const T a = A(i, ks[x]);
      const T* b = B.row(ks[x]).data();
      for (index_t j = 0; j < cols; ++j) c[j] = fmadd(a, b[j], c[j]);
    }
  }
  return C;
}

// Row sums of X * Y (elementwise), each summed left to right.
template <class T>
FD_FMA_CLONES Vec<T> rowsum_product(const Mat<T>& X, const Mat<T>& Y) {
  Vec<T> out(X.rows());
  for (index_t r = 0; r < X.rows(); ++r) {
    T sum = T(0);
    for (index_t c = 0; c < X.cols(); ++c) sum = fmadd(X(r, c), Y(r, c), sum);
    out(r) = sum;
  }
  return out;
}

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
  r.S = T(params.scale_for(Q.cols())) * product<T>(Q, K.transpose());  // S = scale * Q K^T
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
  r.O = product(r.P, V);  // O = P V
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
  r.dV = product<T>(f.P.transpose(), dO);  // dV = P^T dO
  r.dP = product<T>(dO, V.transpose());    // dP = dO V^T
  store_as(stored, r.dP);
  r.D = rowsum_product(f.P, r.dP);                // D = rowsum(P * dP)
  r.dS = f.P.cwiseProduct(r.dP.colwise() - r.D);  // dS = P * (dP - D)
  store_as(stored, r.dS);
  r.dQ = scale * product(r.dS, K);                 // dQ = scale * dS K
  r.dK = scale * product<T>(r.dS.transpose(), Q);  // dK = scale * dS^T Q
  for (Mat<T>* x : {&r.dQ, &r.dK, &r.dV}) store_as(stored, *x);
  return r;
}

template <class T>
Magnitudes<T> reference_magnitudes(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                   const Mat<T>& dO, const ReferenceForward<T>& f,
                                   const AttnParams& params) {
  Magnitudes<T> r;
  r.O = product<T>(f.P, V.cwiseAbs());  // R(O) = P |V|
  r.L.resize(f.L.size());
  for (index_t q = 0; q < f.L.size(); ++q) {  // R(L) = max(|m|, |L|), m = max_k S_qk
    const T m = f.S.row(q).maxCoeff();
    r.L(q) = is_neg_inf(m) ? T(0) : fmax2(std::abs(m), std::abs(f.L(q)));
  }
  if (!dO.size()) return r;
  const T scale = T(params.scale_for(Q.cols()));
  r.dV = product<T>(f.P.transpose(), dO.cwiseAbs());                     // R(dV) = P^T |dO|
  const Mat<T> A = product<T>(dO.cwiseAbs(), V.cwiseAbs().transpose());  // A = |dO| |V|^T
  r.D = rowsum_product(f.P, A);                                          // R(D) = rowsum(P * A)
  const Mat<T> B = f.P.cwiseProduct(A.colwise() + r.D);                  // P * (A + R(D))
  r.dQ = scale * product<T>(B, K.cwiseAbs());
  r.dK = scale * product<T>(B.transpose(), Q.cwiseAbs());
  return r;
}

template <class T>
Magnitudes<T> floor_magnitudes(const Magnitudes<T>& R, index_t queries, index_t keys,
                               index_t merges) {
  const LongSums s = long_sums(queries, keys);
  Vec<T> row = Vec<T>::Constant(R.L.size(), T(s.over_keys));  // s_m + k Lambda_q / 4
  T all = T(s.over_queries);                                  // s_n + k Lambda / 4
  Magnitudes<T> out = R;
  out.L = R.L.array().max(T(s.L_floor));  // 4 u R'(L) >= sqrt(m) u
  if (merges > 0) {                       // (none: one part, whose weight is exactly 1)
    const T k = T(2 + merges), log_m = flog(T(std::max<index_t>(keys, 1)));
    const Vec<T> Lambda = R.L.array() + log_m;  // Lambda_q = R(L)_q + log(m)
    row.array() += k / T(4) * Lambda.array();
    all += k / T(4) * (Lambda.size() ? Lambda.maxCoeff() : log_m);
    out.L.array() += (k - T(1)) / T(4) * Lambda.array();
  }
  if (R.O.size()) out.O = R.O.array().colwise() * row.array();
  if (R.D.size()) out.D = R.D.array() * row.array();
  if (R.dQ.size()) out.dQ = R.dQ.array().colwise() * row.array();
  if (R.dK.size()) out.dK = all * R.dK;
  if (R.dV.size()) out.dV = all * R.dV;
  return out;
}

double reference_bytes(index_t n, index_t m, index_t bytes_per_element) {
  return 2.0 * double(n) * double(m) * double(bytes_per_element);
}

#define FD_INSTANTIATE(T)                                                                        \
  template ReferenceForward<T> reference_forward(const Mat<T>&, const Mat<T>&, const Mat<T>&,    \
                                                 const AttnParams&, Precision);                  \
  template ReferenceBackward<T> reference_backward(const Mat<T>&, const Mat<T>&, const Mat<T>&,  \
                                                   const Mat<T>&, const AttnParams&, Precision); \
  template Magnitudes<T> reference_magnitudes(const Mat<T>&, const Mat<T>&, const Mat<T>&,       \
                                              const Mat<T>&, const ReferenceForward<T>&,         \
                                              const AttnParams&);                                \
  template Magnitudes<T> floor_magnitudes(const Magnitudes<T>&, index_t, index_t, index_t);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
FD_INSTANTIATE(long double)
#undef FD_INSTANTIATE

}  // namespace fd
