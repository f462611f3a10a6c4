// grid.hpp — the grid of problems every path must pass the correctness rule on, in full:
//   n in {1, 37, 100, 513, 1000},  m = n and m != n,  d in {1, 32, 64, 128},
//   no mask and causal in both alignments,  the default scale and 10, 100, 1e3 (n >= 513: the
//   default and 1e3),  dO drawn at random or dO = 2 O (the `backward` demo's loss).
// test_grid.cpp runs the CPU paths over it, test_gpu.cpp the kernels. FLASHDEMO_GRID=quick or
// tiny: subsets, for the sanitizers (grid_limit).
#pragma once

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "check.hpp"
#include "flashdemo/io/random.hpp"

namespace fd::test {

struct GridCase {
  index_t n, m, d;
  bool causal;
  CausalAlign align;
  std::optional<double> scale;
  bool dO_is_2O;
  std::string name() const {
    return "n=" + std::to_string(n) + " m=" + std::to_string(m) + " d=" + std::to_string(d) +
           " causal=" + std::to_string(causal) + " align=" + std::to_string(int(align)) +
           " scale=" + (scale ? std::to_string(*scale) : "default") +
           " dO=" + (dO_is_2O ? "2O" : "random");
  }
};

// FLASHDEMO_GRID=quick: every fourth case below n = 513; =tiny: every fourth case below n = 100
// (for the slowest sanitizer, racecheck).
inline index_t grid_limit() {
  const char* g = std::getenv("FLASHDEMO_GRID");
  if (g && std::strcmp(g, "quick") == 0) return 513;
  if (g && std::strcmp(g, "tiny") == 0) return 100;
  return 0;
}

// m for a given n: the same, and one that differs (more keys than queries, or fewer).
inline index_t other_m(index_t n) {
  return n == 1 ? 5 : n % 2 ? n / 2 + 3 : n + n / 3;
}

template <class F>
void for_each_grid_case(F&& f) {
  const std::optional<double> scales[] = {std::nullopt, 10.0, 100.0, 1e3};
  const std::pair<bool, CausalAlign> masks[] = {{false, CausalAlign::top_left},
                                                {true, CausalAlign::top_left},
                                                {true, CausalAlign::bottom_right}};
  int k = 0;
  for (index_t n : {1, 37, 100, 513, 1000})
    for (index_t m : {n, other_m(n)})
      for (index_t d : {1, 32, 64, 128})
        for (const auto& [causal, align] : masks)
          for (const auto& scale : scales) {
            ++k;
            if (grid_limit() && (n >= grid_limit() || k % 4 != 0)) continue;
            if (n >= 513 && scale && *scale < 1e3) continue;  // the middle scales: n <= 100
            f(GridCase{n, m, d, causal, align, scale, k % 2 == 0});
          }
}

// The problem of a case: Q, K, V, dO drawn from a seed of its shape; dO = 2 O with the O of
// the naive path in T (a fixed dO, so every path and the reference see the same gradient).
template <class T>
Problem<T> grid_problem(const GridCase& c) {
  TorchGenerator gen(std::uint32_t(c.n * 7 + c.m * 3 + c.d));
  Problem<T> p{gen.randn_matrix<T>(c.n, c.d), gen.randn_matrix<T>(c.m, c.d),
               gen.randn_matrix<T>(c.m, c.d), gen.randn_matrix<T>(c.n, c.d),
               AttnParams{c.causal, c.align, c.scale}};
  if (c.dO_is_2O) p.dO = (T(2) * reference_forward<T>(p.Q, p.K, p.V, p.params).O).eval();
  return p;
}

// Every case of the grid, with its problem and its reference computed on every core (the long
// double references of n = 1000 take a second or more each; the GPU test has many cores).
template <class T>
struct GridEntry {
  GridCase c;
  Problem<T> p;
  std::unique_ptr<Expected<T>> e;
};

template <class T>
std::vector<GridEntry<T>> grid_with_references() {
  std::vector<GridEntry<T>> entries;
  for_each_grid_case([&](const GridCase& c) { entries.push_back({c, grid_problem<T>(c), {}}); });
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t k; (k = next++) < entries.size();)
      entries[k].e = std::make_unique<Expected<T>>(entries[k].p), entries[k].e->compact();
  };
  std::vector<std::thread> pool(std::max(1u, std::thread::hardware_concurrency()));
  for (auto& t : pool) t = std::thread(work);
  for (auto& t : pool) t.join();
  return entries;
}

// The worst error / bound over the arrays of one path's outputs.
template <class T>
double worst_ratio(const Outputs<T>& got, const Expected<T>& e) {
  const Precision p = precision_of<T>();
  double worst = 0;
  auto see = [&](const auto& x, const auto& ref, const auto& naive, const auto& R, Held held) {
    const RuleVerdict v = judge(p, x, ref, naive, R, held);
    worst = std::max(worst, v.err / v.bound);
  };
  see(got.O, e.rf.O, e.nf.O, e.R.O, Held::in_p), see(got.L, e.rf.L, e.nf.L, e.R.L, Held::wide);
  see(got.dQ, e.rb.dQ, e.nb.dQ, e.R.dQ, Held::in_p);
  see(got.dK, e.rb.dK, e.nb.dK, e.R.dK, Held::in_p);
  see(got.dV, e.rb.dV, e.nb.dV, e.R.dV, Held::in_p);
  return worst;
}

}  // namespace fd::test
