// flash_backward.cpp — the FlashAttention-2 backward (see flash_backward.hpp).
#include "flashdemo/teaching/flash_backward.hpp"

#include <algorithm>
#include <initializer_list>
#include <vector>

#include "flashdemo/host_device/tile_math.hpp"

namespace fd {
namespace {

template <class T>
struct BackwardProblem {
  const Mat<T>& Q;
  const Mat<T>& K;
  const Mat<T>& V;
  const Vec<T>& L;
  const Vec<T>& L_lo;
  const Mat<T>& dO;
  const Vec<T>& D;
  Mask mask;
  Tiling tiling;
  T scale;
  Variant variant;
};

template <class T>
void record_row(BackwardTileEvent& e, const BackwardRow<T>& row, const std::vector<T>& p,
                const std::vector<T>& ds, index_t cols) {
  e.L.push_back(double(row.L)), e.D.push_back(double(row.D));
  e.p_min.push_back(double(*std::min_element(p.begin(), p.begin() + cols)));
  e.p_max.push_back(double(*std::max_element(p.begin(), p.begin() + cols)));
  e.ds_min.push_back(double(*std::min_element(ds.begin(), ds.begin() + cols)));
  e.ds_max.push_back(double(*std::max_element(ds.begin(), ds.begin() + cols)));
}

// Tile (i, j): every row of Q_i adds its part to dQ_i, dK_j and dV_j.
template <class T>
FD_FMA_CLONES void backward_tile(const BackwardProblem<T>& p, index_t i, index_t j,
                                 BackwardResult<T>& g, std::vector<T>& P, std::vector<T>& dS,
                                 TraceSink* sink) {
  const Range rows = p.tiling.rows(i), cols = p.tiling.cols(j);
  const index_t d = p.Q.cols();
  BackwardTileEvent e{i, j, rows, cols, p.tiling.classify(p.mask, i, j), {}, {}, {}, {}, {}, {}};
  for (index_t q = rows.begin; q < rows.end; ++q) {
    const T D = p.variant.mistake == Mistake::no_d ? T(0) : p.D(q);  // no-d: D forgotten
    const BackwardRow<T> row{p.Q.row(q).data(), p.dO.row(q).data(), p.L(q), p.L_lo(q), D, q,
                             p.variant.p_in};
    backward_row(row, p.K.data(), p.V.data(), d, cols.begin, cols.size(), d, p.scale, p.mask,
                 P.data(), dS.data(), g.dQ.row(q).data(), g.dK.data(), g.dV.data());
    if (sink) record_row(e, row, P, dS, cols.size());
  }
  if (sink) sink->on(e);
}

}  // namespace

template <class T>
Vec<T> backward_D(const Mat<T>& dO, const Mat<T>& O) {
  Vec<T> D(O.rows());
  for (index_t q = 0; q < O.rows(); ++q)
    D(q) = row_D(dO.row(q).data(), O.row(q).data(), O.cols());  // D = rowsum(dO * O)
  return D;
}

template <class T>
BackwardResult<T> flash_backward(const Mat<T>& Q, const Mat<T>& K, const Mat<T>& V,
                                 const ForwardResult<T>& fwd, const Mat<T>& dO,
                                 const AttnParams& params, TileSizes tiles, TraceSink* sink,
                                 Variant variant) {
  // Q: n x d, K, V: m x d, O, dO: n x d, L: n -> dQ: n x d, dK, dV: m x d, D: n
  const index_t n = Q.rows(), m = K.rows(), d = Q.cols();
  BackwardResult<T> g{Mat<T>::Zero(n, d), Mat<T>::Zero(m, d), Mat<T>::Zero(m, d),
                      backward_D(dO, fwd.O_acc.size() ? fwd.O_acc : fwd.O)};  // D, O unrounded
  const Vec<T> L_lo = fwd.L_lo.size() ? fwd.L_lo : Vec<T>(Vec<T>::Zero(n));
  AttnParams used = params;
  if (variant.mistake == Mistake::wrong_align) used.align = CausalAlign::top_left;
  const BackwardProblem<T> p{Q,
                             K,
                             V,
                             fwd.L,
                             L_lo,
                             dO,
                             g.D,
                             used.mask_for(n, m),
                             Tiling{n, m, tiles.Br, tiles.Bc},
                             T(params.scale_for(d)),
                             variant};
  std::vector<T> P(tiles.Bc), dS(tiles.Bc);
  for (index_t j = 0; j < p.tiling.Tc(); ++j) {  // outer loop: key tiles
    for (index_t i = 0; i < p.tiling.Tr(); ++i) {
      if (p.tiling.classify(p.mask, i, j) == TileKind::skipped) continue;  // wholly masked
      backward_tile(p, i, j, g, P, dS, sink);
    }
    if (sink) sink->on(KeysDoneEvent{j, p.tiling.cols(j)});
  }
  g.dQ *= p.scale, g.dK *= p.scale;        // dQ = scale dS K, dK = scale dS^T Q: scaled once
  for (Mat<T>* x : {&g.dQ, &g.dK, &g.dV})  // gradients in the output precision
    for (index_t k = 0; k < x->size(); ++k) x->data()[k] = round_to(variant.p_in, x->data()[k]);
  return g;
}

#define FD_INSTANTIATE(T)                                                                \
  template Vec<T> backward_D(const Mat<T>&, const Mat<T>&);                              \
  template BackwardResult<T> flash_backward(const Mat<T>&, const Mat<T>&, const Mat<T>&, \
                                            const ForwardResult<T>&, const Mat<T>&,      \
                                            const AttnParams&, TileSizes, TraceSink*, Variant);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd
