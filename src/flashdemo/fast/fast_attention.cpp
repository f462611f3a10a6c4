// fast_attention.cpp — the fast CPU path (see fast_attention.hpp for the equations).
#define EIGEN_DONT_PARALLELIZE  // the threads are ours, one GEMM per thread at a time
#include "flashdemo/fast/fast_attention.hpp"

#include <omp.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "flashdemo/online_softmax.hpp"

namespace fd::fast {
namespace {

template <class T>
using Tile = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using MapC = Eigen::Map<const Tile<T>>;
template <class T>
using Map = Eigen::Map<Tile<T>>;
template <class T>
using Col = Eigen::Array<T, Eigen::Dynamic, 1>;

template <class T>
using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;

// The keys of `cols` that query row `row` sees: all of them, or a prefix (causal).
inline index_t visible_in_tile(const Mask& mask, index_t row, Range cols) {
  const index_t visible = mask.visible_keys(row) - cols.begin;
  return visible < 0 ? 0 : (visible > cols.size() ? cols.size() : visible);
}

// One row of a score tile, in place, in two passes over contiguous memory (vectorized exp):
//   S = scale S on the `keep` visible keys, -inf -> P = 0 on the rest;
//   m_new = max(m, rowmax S);  P = exp(S - m_new);  returns rowsum P and sets m to m_new,
//   alpha to exp(m_old - m_new) (0 while m_old = -inf).
template <class T>
T softmax_row(T* S, index_t keep, index_t cols, T scale, T& m, T& alpha) {
  Row<T> visible(S, keep);
  visible *= scale;  // S = scale (Q K^T): the scale rounds once, as in the reference
  Row<T>(S + keep, cols - keep).setZero();
  const T m_new = keep > 0 ? std::max(m, visible.maxCoeff()) : m;
  // A row still at -inf (fully masked so far) is shifted by 0: exp(-inf) = 0, never NaN.
  const T shift = m_new == neg_inf<T>() ? T(0) : m_new;
  alpha = std::exp(m - shift);
  m = m_new;
  visible = (visible - shift).exp();
  return visible.sum();
}

// One query tile of one head: the online softmax over its key tiles.
template <class T>
void forward_tile(const Shape& s, const Mask& mask, const Tiling& t, T scale, const T* Q,
                  const T* K, const T* V, T* O, T* L, index_t i) {
  const Range rows = t.rows(i);
  const index_t br = rows.size(), d = s.d;
  const MapC<T> Qi(Q + rows.begin * d, br, d);
  Tile<T> Oi = Tile<T>::Zero(br, d), S(br, t.Bc);
  Col<T> m = Col<T>::Constant(br, neg_inf<T>()), l = Col<T>::Zero(br);
  for (index_t j = 0; j < t.Tc(); ++j) {
    const TileKind kind = t.classify(mask, i, j);
    if (kind == TileKind::skipped) continue;
    const Range cols = t.cols(j);
    const index_t bc = cols.size();
    auto Sj = S.leftCols(bc);
    Sj.noalias() = Qi * MapC<T>(K + cols.begin * d, bc, d).transpose();
    for (index_t r = 0; r < br; ++r) {
      const index_t keep =
          kind == TileKind::partial ? visible_in_tile(mask, rows.begin + r, cols) : bc;
      T alpha;
      const T rowsum = softmax_row(&S(r, 0), keep, bc, scale, m(r), alpha);
      l(r) = alpha * l(r) + rowsum;
      Oi.row(r) *= alpha;
    }
    Oi.noalias() += Sj * MapC<T>(V + cols.begin * d, bc, d);  // O += P V
  }
  for (index_t r = 0; r < br; ++r) {
    const T inv = l(r) > T(0) ? T(1) / l(r) : T(0);
    Map<T>(O + (rows.begin + r) * d, 1, d) = inv * Oi.row(r);
    L[rows.begin + r] = l(r) > T(0) ? m(r) + std::log(l(r)) : neg_inf<T>();
  }
}

// One row of the backward, in place on contiguous memory (vectorized exp):
//   P = exp(scale S - L) on the visible keys, 0 on the rest (L = -inf: S is -inf too, shift 0).
template <class T>
void recompute_p_row(T* S, index_t keep, index_t cols, T scale, T L) {
  Row<T> visible(S, keep);
  const T shift = L == neg_inf<T>() ? T(0) : L;
  visible *= scale;  // rounded as the forward rounded it, before the shift
  visible = (visible - shift).exp();
  Row<T>(S + keep, cols - keep).setZero();
}

// One key tile of one head: dK_j and dV_j, and this thread's share of dQ.
template <class T>
void backward_tile(const Shape& s, const Mask& mask, const Tiling& t, T scale, const T* Q,
                   const T* K, const T* V, const T* L, const T* D, const T* dO, double* dQ_mine,
                   T* dK, T* dV, index_t j) {
  const Range cols = t.cols(j);
  const index_t bc = cols.size(), d = s.d;
  const MapC<T> Kj(K + cols.begin * d, bc, d), Vj(V + cols.begin * d, bc, d);
  Tile<T> dKj = Tile<T>::Zero(bc, d), dVj = Tile<T>::Zero(bc, d), P, dP, dQi;
  for (index_t i = 0; i < t.Tr(); ++i) {
    const TileKind kind = t.classify(mask, i, j);
    if (kind == TileKind::skipped) continue;
    const Range rows = t.rows(i);
    const index_t br = rows.size();
    const MapC<T> Qi(Q + rows.begin * d, br, d), dOi(dO + rows.begin * d, br, d);
    P.noalias() = Qi * Kj.transpose();    // S formed exactly as the forward formed it, so that
    dP.noalias() = dOi * Vj.transpose();  // exp(S - L) matches the L the forward saved
    for (index_t r = 0; r < br; ++r) {
      const index_t keep =
          kind == TileKind::partial ? visible_in_tile(mask, rows.begin + r, cols) : bc;
      recompute_p_row(&P(r, 0), keep, bc, scale, L[rows.begin + r]);  // P = exp(S - L)
    }
    dVj.noalias() += P.transpose() * dOi;  // dV += P^T dO
    for (index_t r = 0; r < br; ++r)       // dS = P (dP - D)
      P.row(r).array() *= dP.row(r).array() - D[rows.begin + r];
    dKj.noalias() += scale * P.transpose() * Qi;  // dK += scale dS^T Q
    dQi.noalias() = scale * P * Kj;  // dQ += scale dS K, summed across key tiles in double
    Map<double>(dQ_mine + rows.begin * d, br, d) += dQi.template cast<double>();
  }
  Map<T>(dK + cols.begin * d, bc, d) = dKj;
  Map<T>(dV + cols.begin * d, bc, d) = dVj;
}

int thread_count(index_t threads) {
  return int(threads < 1 ? 1 : threads);
}

}  // namespace

template <class T>
void forward(const Shape& s, const AttnParams& p, const Options& o, const T* Q, const T* K,
             const T* V, T* O, T* L) {
  const Tiling t{s.n, s.m, o.tiles.Br, o.tiles.Bc};
  const Mask mask = p.mask_for(s.n, s.m);
  const T scale = T(p.scale_for(s.d));
  const index_t work = s.heads() * t.Tr();
#pragma omp parallel for schedule(dynamic, 1) num_threads(thread_count(o.threads))
  for (index_t w = 0; w < work; ++w) {
    const index_t head = w / t.Tr(), i = w % t.Tr();
    forward_tile(s, mask, t, scale, Q + head * s.n * s.d, K + head * s.m * s.d,
                 V + head * s.m * s.d, O + head * s.n * s.d, L + head * s.n, i);
  }
}

template <class T>
void backward(const Shape& s, const AttnParams& p, const Options& o, const T* Q, const T* K,
              const T* V, const T* O, const T* L, const T* dO, T* dQ, T* dK, T* dV, T* D) {
  const Tiling t{s.n, s.m, o.tiles.Br, o.tiles.Bc};
  const Mask mask = p.mask_for(s.n, s.m);
  const T scale = T(p.scale_for(s.d));
  const index_t rows = s.heads() * s.n, threads = thread_count(o.threads);
  for (index_t r = 0; r < rows; ++r) {  // D = rowsum(dO * O), summed in double: dP - D cancels
    double sum = 0;
    for (index_t x = 0; x < s.d; ++x) sum += double(dO[r * s.d + x]) * double(O[r * s.d + x]);
    D[r] = T(sum);
  }
  std::vector<Tile<double>> dQ_per_thread(std::size_t(threads), Tile<double>::Zero(rows, s.d));
  const index_t work = s.heads() * t.Tc();
#pragma omp parallel for schedule(static, 1) num_threads(int(threads))
  for (index_t w = 0; w < work; ++w) {
    const index_t head = w / t.Tc(), j = w % t.Tc();
    double* mine = dQ_per_thread[std::size_t(omp_get_thread_num())].data() + head * s.n * s.d;
    backward_tile(s, mask, t, scale, Q + head * s.n * s.d, K + head * s.m * s.d,
                  V + head * s.m * s.d, L + head * s.n, D + head * s.n, dO + head * s.n * s.d, mine,
                  dK + head * s.m * s.d, dV + head * s.m * s.d, j);
  }
  Tile<double> sum = dQ_per_thread[0];  // the per-thread sums, added in thread order
  for (std::size_t k = 1; k < dQ_per_thread.size(); ++k) sum += dQ_per_thread[k];
  Map<T>(dQ, rows, s.d) = sum.template cast<T>();
}

template <class T>
void gemm(index_t rows, index_t inner, index_t cols, const T* A, const T* B, T* C,
          index_t threads) {
  const int n = thread_count(threads);
  const index_t chunk = (rows + n - 1) / n;
#pragma omp parallel for schedule(static, 1) num_threads(n)
  for (int k = 0; k < n; ++k) {
    const index_t r0 = k * chunk, r1 = std::min(rows, r0 + chunk);
    if (r0 >= r1) continue;
    Map<T>(C + r0 * cols, r1 - r0, cols).noalias() =
        MapC<T>(A + r0 * inner, r1 - r0, inner) * MapC<T>(B, inner, cols);
  }
}

#define FD_INSTANTIATE(T)                                                                     \
  template void forward(const Shape&, const AttnParams&, const Options&, const T*, const T*,  \
                        const T*, T*, T*);                                                    \
  template void backward(const Shape&, const AttnParams&, const Options&, const T*, const T*, \
                         const T*, const T*, const T*, const T*, T*, T*, T*, T*);             \
  template void gemm(index_t, index_t, index_t, const T*, const T*, T*, index_t);
FD_INSTANTIATE(float)
FD_INSTANTIATE(double)
#undef FD_INSTANTIATE

}  // namespace fd::fast
