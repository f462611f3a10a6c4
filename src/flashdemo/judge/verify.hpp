// verify.hpp — checking a fast path's output on problems too large for the full reference:
// sampled rows (and key rows) of one head, recomputed in fp64 and, for the 2x rule, in the
// path's own precision (fp32), straight from the definitions:
//   O_q  = sum_k P_qk V_k,  P_qk = exp(S_qk - L_q),  L_q = logsumexp_k S_qk       (query rows)
//   dQ_q = scale sum_k dS_qk K_k,  dS_qk = P_qk (dO_q . V_k - D_q),  D_q = dO_q . O_q
//   dK_k = scale sum_q dS_qk Q_q,  dV_k = sum_q P_qk dO_q                          (key rows)
// With `stored` bf16 or fp16 (inputs already in that format, sums in fp32) the naive rows store
// S, P, O (and dP, dS, dQ, dK, dV) in that format, as reference.hpp's `stored` does, and the rule
// is applied in that precision.
// Key rows need every query's L and D: those are taken from the path's own O and L (L + L_lo when
// kept), which the query-row check has just validated on its sample.
#pragma once

#include <string>
#include <vector>

#include "flashdemo/host_device/precision.hpp"
#include "flashdemo/params.hpp"

namespace fd {

// One head: Q, O, dO, dQ are n x d; K, V, dK, dV are m x d; L is n. Row-major.
template <class T>
struct HeadArrays {
  index_t n, m, d;
  const T *Q, *K, *V, *O, *L;
  const T* L_lo = nullptr;  // L's rounding error, when the path kept it
  const T *dO = nullptr, *dQ = nullptr, *dK = nullptr, *dV = nullptr;
};

struct Verdict {
  bool pass = true;
  double err = 0, bound = 0;  // worst error and the bound it had to meet
  std::string worst;          // which array
  index_t rows = 0;           // query rows checked (and as many key rows, with gradients)
};

// Every `stride`-th row (and the last) of O, L (and, when dO is given, dQ, dK, dV).
template <class T>
Verdict verify_sampled(const HeadArrays<T>& h, const AttnParams& params, index_t samples = 16,
                       Precision stored = precision_of<T>());

}  // namespace fd
