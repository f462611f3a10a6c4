// flash_forward.cpp — the tiled forward (see flash_forward.hpp for the algorithm).
#include "flashdemo/teaching/flash_forward.hpp"

#include <vector>

#include "flashdemo/host_device/tile_math.hpp"

namespace fd {
namespace {

template <class T>
struct ForwardProblem {
  const Mat<T>& Q;
  const Mat<T>& K;
  const Mat<T>& V;
  Mask mask;
  Tiling tiling;
  T scale;
  Variant variant;
};

// The row update of a --break run, with one of the lab's mistakes (variant.hpp); a mistake made
// elsewhere (the start of the state, the mask, the backward) updates as update_row does. The
// correct forward never comes here: it calls update_row (tile_math.hpp) itself.
template <class T>
T broken_update_row(Mistake mistake, RowState<T>& st, T* s, const T* V, index_t ldv, index_t cols,
                    index_t d, T* o, Precision p_in) {
  if (mistake == Mistake::finite_mask) {
    for (index_t c = 0; c < cols; ++c)
      if (is_neg_inf(s[c])) s[c] = T(kFiniteMask);  // a finite sentinel instead of -inf
  }
  if (mistake == Mistake::no_max) {  // p = exp(S): m stays 0, nothing is ever rescaled
    for (index_t c = 0; c < cols; ++c) st.l += (s[c] = fexp(s[c]));
    accumulate_row(o, T(1), s, V, ldv, cols, d);
    return T(1);
  }
  if (mistake == Mistake::no_rescale) {  // alpha updates l but is forgotten on O
    const T alpha = st.update(s, cols);
    accumulate_row(o, T(1), s, V, ldv, cols, d);
    return alpha;
  }
  return update_row(st, s, V, ldv, cols, d, o, p_in);
}

template <class T>
TileEvent tile_event(index_t i, index_t j, const Tiling& t, TileKind kind, index_t rows) {
  TileEvent e{i, j, t.rows(i), t.cols(j), kind, {}, {}, {}, {}};
  e.m_old.reserve(rows), e.m_new.reserve(rows), e.alpha.reserve(rows), e.l.reserve(rows);
  return e;
}

// One tile (i, j): every row of Q_i folds S_ij into its (m, l) and its row of O_i.
template <class T>
FD_FMA_CLONES void forward_tile(const ForwardProblem<T>& p, index_t i, index_t j,
                                std::vector<RowState<T>>& st, Mat<T>& Oi, std::vector<T>& s,
                                TraceSink* sink) {
  const Range rows = p.tiling.rows(i), cols = p.tiling.cols(j);
  const index_t d = p.Q.cols();
  TileEvent e;
  if (sink) e = tile_event<T>(i, j, p.tiling, p.tiling.classify(p.mask, i, j), rows.size());
  for (index_t r = 0; r < rows.size(); ++r) {
    const index_t q = rows.begin + r;
    const T m_old = st[r].m;
    score_row(p.Q.row(q).data(), p.K.data() + cols.begin * d, d, cols.begin, cols.size(), d,
              p.scale, p.mask, q,
              s.data());  // S_ij row q
    const T* Vj = p.V.data() + cols.begin * d;
    T* o = Oi.row(r).data();
    const T alpha =  // (m, l, O) <- tile j
        p.variant.mistake == Mistake::none
            ? update_row(st[r], s.data(), Vj, d, cols.size(), d, o, p.variant.p_in)
            : broken_update_row(p.variant.mistake, st[r], s.data(), Vj, d, cols.size(), d, o,
                                p.variant.p_in);
    if (sink) {
      e.m_old.push_back(m_old), e.m_new.push_back(st[r].m);
      e.alpha.push_back(alpha), e.l.push_back(st[r].l);
    }
  }
  if (sink) sink->on(e);
}

// Query tile i: the inner loop over key tiles, then the final division by l.
template <class T>
void forward_query_tile(const ForwardProblem<T>& p, index_t i, ForwardResult<T>& out,
                        TraceSink* sink) {
  const Range rows = p.tiling.rows(i);
  std::vector<RowState<T>> st(rows.size());  // m_i = -inf, l_i = 0
  if (p.variant.mistake == Mistake::l_starts_at_1)
    for (RowState<T>& r : st) r.m = T(0), r.l = T(1);
  if (p.variant.mistake == Mistake::no_max)  // every exp is taken against 0
    for (RowState<T>& r : st) r.m = T(0);
  Mat<T> Oi = Mat<T>::Zero(rows.size(), p.Q.cols());
  std::vector<T> s(p.tiling.Bc);
  for (index_t j = 0; j < p.tiling.Tc(); ++j) {
    if (p.tiling.classify(p.mask, i, j) == TileKind::skipped) {  // wholly in the future
      if (sink) sink->on(TileSkippedEvent{i, j, rows, p.tiling.cols(j)});
      continue;
    }
    forward_tile(p, i, j, st, Oi, s, sink);
  }
  RowsFinalEvent fin{i, rows, {}, {}, {}};
  for (index_t r = 0; r < rows.size(); ++r) {
    const SplitL<T> L = finalize_row(st[r], Oi.row(r).data(), Oi.cols());  // O_i /= l_i
    out.L(rows.begin + r) = L.L, out.L_lo(rows.begin + r) = L.lo;
    if (sink)
      fin.m.push_back(st[r].m), fin.l.push_back(st[r].l), fin.L.push_back(out.L(rows.begin + r));
  }
  if (out.O_acc.size()) out.O_acc.middleRows(rows.begin, rows.size()) = Oi;  // unrounded
  for (index_t k = 0; k < Oi.size(); ++k) Oi.data()[k] = round_to(p.variant.p_in, Oi.data()[k]);
  out.O.middleRows(rows.begin, rows.size()) = Oi;  // O in the output precision
  if (sink) sink->on(fin);
}

}  // namespace

template <class T>
ForwardResult<T> flash_forward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                               const AttnParams& params, TileSizes tiles, TraceSink* sink,
                               Variant variant) {
  // Q: n x d, K: m x d, V: m x d -> O: n x d, L: n
  const index_t n = Q.rows(), m = K.rows();
  AttnParams used = params;
  if (variant.mistake == Mistake::wrong_align) used.align = CausalAlign::top_left;
  const ForwardProblem<T> p{Q,
                            K,
                            V,
                            used.mask_for(n, m),
                            Tiling{n, m, tiles.Br, tiles.Bc},
                            T(params.scale_for(Q.cols())),
                            variant};
  ForwardResult<T> out{Mat<T>::Zero(n, Q.cols()), Vec<T>::Zero(n), Vec<T>::Zero(n)};
  if (variant.p_in == Precision::bf16 || variant.p_in == Precision::fp16)
    out.O_acc = Mat<T>::Zero(n, Q.cols());  // O as accumulated, for the backward's D
  for (index_t i = 0; i < p.tiling.Tr(); ++i) forward_query_tile(p, i, out, sink);
  return out;
}

template <class T>
std::vector<T> recover_p_row(const Mat<T>& Q, const Mat<T>& K, const ForwardResult<T>& fwd,
                             const AttnParams& params, index_t q) {
  // Q: n x d, K: m x d, L: n -> P_q: m
  std::vector<T> p(K.rows());
  score_row(Q.row(q).data(), K.data(), K.cols(), 0, K.rows(), Q.cols(),
            T(params.scale_for(Q.cols())), params.mask_for(Q.rows(), K.rows()), q, p.data());
  const T lo = fwd.L_lo.size() ? fwd.L_lo(q) : T(0);
  for (T& v : p) v = recompute_p(v, fwd.L(q), lo);  // P = exp(S - L)
  return p;
}

template std::vector<float> recover_p_row(const Mat<float>&, const Mat<float>&,
                                          const ForwardResult<float>&, const AttnParams&, index_t);
template std::vector<double> recover_p_row(const Mat<double>&, const Mat<double>&,
                                           const ForwardResult<double>&, const AttnParams&,
                                           index_t);
template ForwardResult<float> flash_forward(const Mat<float>&, const Mat<float>&, const Mat<float>&,
                                            const AttnParams&, TileSizes, TraceSink*, Variant);
template ForwardResult<double> flash_forward(const Mat<double>&, const Mat<double>&,
                                             const Mat<double>&, const AttnParams&, TileSizes,
                                             TraceSink*, Variant);

}  // namespace fd
