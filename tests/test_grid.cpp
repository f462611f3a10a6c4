// test_grid.cpp — one numerics on every CPU path: the teaching path and the fast path pass the
// correctness rule, in full (every element), over the grid
//   n in {1, 37, 100, 513, 1000},  m = n and m != n,  d in {1, 32, 64, 128},
//   no mask and causal in both alignments,  fp32 and fp64,  the default scale and 10, 100, 1e3
//   (n >= 513: the default scale and 1e3),
// forward and backward (dO drawn at random, and dO = 2 O as the `backward` demo's loss has it).
// The GPU kernels run the same grid in test_gpu.cpp. FLASHDEMO_GRID=quick runs a subset (the
// sanitizer build, where a long double reference at n = 1000 is slow); FLASHDEMO_GRID_REPORT=1
// prints each case's worst error / bound.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>
#include <string>

#include "check.hpp"
#include "flashdemo/fast/fast_attention.hpp"
#include "flashdemo/flash_backward.hpp"
#include "flashdemo/random.hpp"

using namespace fd;

namespace {

bool quick() {
  const char* g = std::getenv("FLASHDEMO_GRID");
  return g && std::strcmp(g, "quick") == 0;
}

bool report() {
  return std::getenv("FLASHDEMO_GRID_REPORT") != nullptr;
}

// m for a given n: the same, and one that differs (more keys than queries, or fewer).
index_t other_m(index_t n) {
  return n == 1 ? 5 : n % 2 ? n / 2 + 3 : n + n / 3;
}

struct Mask3 {
  bool causal;
  CausalAlign align;
};

template <class T>
test::Outputs<T> teaching(const test::Problem<T>& p) {
  const TileSizes tiles{16, 24};
  const ForwardResult<T> f = flash_forward(p.Q, p.K, p.V, p.params, tiles);
  const BackwardResult<T> b = flash_backward(p.Q, p.K, p.V, f, p.dO, p.params, tiles);
  return {f.O, f.L, b.dQ, b.dK, b.dV};
}

template <class T>
test::Outputs<T> fast_path(const test::Problem<T>& p) {
  const index_t n = p.Q.rows(), m = p.K.rows(), d = p.Q.cols();
  test::Outputs<T> out{Mat<T>(n, d), Vec<T>(n), Mat<T>(n, d), Mat<T>(m, d), Mat<T>(m, d)};
  Vec<T> L_lo(n), D(n);
  const fast::Shape s{1, 1, n, m, d};
  const fast::Options o{2, {64, 128}};
  fast::forward(s, p.params, o, p.Q.data(), p.K.data(), p.V.data(), out.O.data(), out.L.data(),
                L_lo.data());
  fast::backward(s, p.params, o, p.Q.data(), p.K.data(), p.V.data(), out.O.data(), out.L.data(),
                 L_lo.data(), p.dO.data(), out.dQ.data(), out.dK.data(), out.dV.data(), D.data());
  return out;
}

// The worst error / bound over the arrays of one path (printed with FLASHDEMO_GRID_REPORT).
template <class T>
double worst_ratio(const test::Outputs<T>& got, const test::Expected<T>& e) {
  const Precision p = precision_of<T>();
  double worst = 0;
  auto see = [&](const auto& x, const auto& ref, const auto& naive, const auto& R) {
    const RuleVerdict v = judge(p, x, ref, naive, R);
    worst = std::max(worst, v.err / v.bound);
  };
  see(got.O, e.rf.O, e.nf.O, e.R.O), see(got.L, e.rf.L, e.nf.L, e.R.L);
  see(got.dQ, e.rb.dQ, e.nb.dQ, e.R.dQ), see(got.dK, e.rb.dK, e.nb.dK, e.R.dK);
  see(got.dV, e.rb.dV, e.nb.dV, e.R.dV);
  return worst;
}

template <class T>
void run_case(index_t n, index_t m, index_t d, Mask3 mask, std::optional<double> scale,
              bool dO_is_2O) {
  TorchGenerator gen(std::uint32_t(n * 7 + m * 3 + d));
  test::Problem<T> p{gen.randn_matrix<T>(n, d), gen.randn_matrix<T>(m, d),
                     gen.randn_matrix<T>(m, d), gen.randn_matrix<T>(n, d),
                     AttnParams{mask.causal, mask.align, scale}};
  // dO = 2 O: the gradient of sum(O^2), each path differentiating through the reference's O
  // (a fixed dO, so every path and the reference see the same upstream gradient).
  if (dO_is_2O) p.dO = (T(2) * reference_forward<T>(p.Q, p.K, p.V, p.params).O).eval();
  const test::Expected<T> e(p);
  const test::Outputs<T> a = teaching(p), b = fast_path(p);
  if (report())
    MESSAGE("n=" << n << " m=" << m << " d=" << d << " causal=" << mask.causal << " align="
                 << int(mask.align) << " scale=" << (scale ? *scale : 0.0) << " dO=2O:" << dO_is_2O
                 << "  teaching " << worst_ratio(a, e) << "  fast " << worst_ratio(b, e));
  test::check_outputs(a, e, "teaching");
  test::check_outputs(b, e, "fast");
}

}  // namespace

TEST_CASE_TEMPLATE("the grid: every CPU path passes the correctness rule in full", T, float,
                   double) {
  const std::initializer_list<index_t> ns = {1, 37, 100, 513, 1000};
  const std::initializer_list<index_t> ds = {1, 32, 64, 128};
  const Mask3 masks[] = {{false, CausalAlign::top_left},
                         {true, CausalAlign::top_left},
                         {true, CausalAlign::bottom_right}};
  const std::optional<double> scales[] = {std::nullopt, 10.0, 100.0, 1e3};
  int k = 0;
  for (index_t n : ns) {
    for (index_t m : {n, other_m(n)}) {
      for (index_t d : ds) {
        for (const Mask3& mask : masks) {
          for (const auto& scale : scales) {
            ++k;
            // The quick grid: every fourth case below n = 513 (each axis value still appears).
            if (quick() && (n >= 513 || k % 4 != 0)) continue;
            // n >= 513 (a long double reference of a second or more each): the default scale and
            // the largest, 1e3; the scales between are covered at n <= 100.
            if (n >= 513 && scale && *scale < 1e3) continue;
            INFO("n=" << n << " m=" << m << " d=" << d << " causal=" << mask.causal
                      << " align=" << int(mask.align)
                      << " scale=" << (scale ? std::to_string(*scale) : "default"));
            run_case<T>(n, m, d, mask, scale, k % 2 == 0);
          }
        }
      }
    }
  }
}
