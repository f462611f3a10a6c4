// fast_ab.cpp — two builds of the fast CPU path timed in one process, rep by rep, for a shared
// machine whose speed drifts between two commands by more than a step's effect:
//   for each rep r: time A then B (odd r: B then A);  ratio_r = t_A(r) / t_B(r)
//   prints min t_A, min t_B, their ratio, the median ratio_r, how many pairs B won, and
//   whether A's and B's outputs (O, L and L_lo, or dQ, dK and dV) are the same bits. fp32.
// A and B are fast_attention.cpp compiled twice, in namespaces level_a and level_b
// (FD_FAST_LEVEL); scripts/fast_ab.sh builds them from a commit and the working tree.
// Usage: fast_ab [--h H] [--n N] [--d D] [--causal] [--scale S] [--bwd] [--threads T] [--reps R]
//                [--Br R --Bc C] [--Br-b R --Bc-b C]
// Tiles: tiles_for's unless --Br and --Bc give them; --Br-b and --Bc-b give B other tiles than A's
// (with A and B the same commit, `fast_ab.sh HEAD`, that times one tiling against another).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "flashdemo/fast/kernels.hpp"

namespace fd::fast::level_a {
extern const Kernels kernels;
}
namespace fd::fast::level_b {
extern const Kernels kernels;
}

using namespace fd;

namespace {

struct Arrays {
  std::vector<float> O, L, L_lo, D, dQ, dK, dV;
  explicit Arrays(std::size_t q, std::size_t rows)
      : O(q), L(rows), L_lo(rows), D(rows), dQ(q), dK(q), dV(q) {}
};

// Whether two arrays hold the same bits (a NaN, or -0 against +0, differs).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double out = 0;
  for (std::size_t k = 0; k < a.size(); ++k) out = std::max(out, double(std::abs(a[k] - b[k])));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  fast::Shape s{1, 1, 4096, 4096, 64};
  AttnParams p;
  bool bwd = false;
  index_t threads = 1;
  int reps = 10;
  index_t tiles[2][2] = {{0, 0}, {0, 0}};  // A's and B's Br, Bc (0: tiles_for's)
  for (int k = 1; k < argc; ++k) {
    const std::string a = argv[k];
    if (a == "--causal") {
      p.causal = true;
      continue;
    }
    if (a == "--bwd") {
      bwd = true;
      continue;
    }
    // The other options take a number, the whole of the next argument.
    char* end = nullptr;
    const char* text = k + 1 < argc ? argv[k + 1] : "";
    const double x = std::strtod(text, &end);
    if (end == text || *end != '\0' || !std::isfinite(x)) {
      std::fprintf(stderr, "fast_ab: %s needs a number, got '%s'\n", a.c_str(), text);
      return 2;
    }
    ++k;
    if (a == "--h")
      s.h = index_t(x);
    else if (a == "--n")
      s.n = s.m = index_t(x);
    else if (a == "--d")
      s.d = index_t(x);
    else if (a == "--threads")
      threads = index_t(x);
    else if (a == "--reps")
      reps = int(x);
    else if (a == "--scale")
      p.scale = x;
    else if (a == "--Br" || a == "--Bc" || a == "--Br-b" || a == "--Bc-b") {
      if (x < 1) {
        std::fprintf(stderr, "fast_ab: %s must be at least 1\n", a.c_str());
        return 2;
      }
      const int which = a[3] == 'r' ? 0 : 1;
      if (a.size() == 4) tiles[0][which] = index_t(x);
      tiles[1][which] = index_t(x);
    } else {
      std::fprintf(stderr, "fast_ab: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (s.h < 1 || s.n < 1 || s.d < 1 || threads < 1 || reps < 1) {
    std::fprintf(stderr, "fast_ab: --h, --n, --d, --threads and --reps must be at least 1\n");
    return 2;
  }
  const TileSizes chosen =
      fast::tiles_for(s, bwd ? fast::Pass::bwd : fast::Pass::fwd, threads, index_t(sizeof(float)));
  fast::Options opts[2];
  for (int x = 0; x < 2; ++x) {
    const index_t Br = tiles[x][0] > 0 ? tiles[x][0] : chosen.Br,
                  Bc = tiles[x][1] > 0 ? tiles[x][1] : chosen.Bc;
    opts[x] = fast::Options{threads, {Br, Bc}};
  }
  const std::size_t q = std::size_t(s.heads() * s.n * s.d), rows = std::size_t(s.heads() * s.n);
  std::vector<float> Q(q), K(q), V(q), dO(q);
  std::mt19937 gen(1);
  std::normal_distribution<float> normal;
  for (std::vector<float>* v : {&Q, &K, &V, &dO})
    for (float& x : *v) x = normal(gen);
  const fast::Kernels* builds[2] = {&fast::level_a::kernels, &fast::level_b::kernels};
  std::vector<Arrays> out(2, Arrays(q, rows));
  const auto forward = [&](int x) {
    Arrays& a = out[std::size_t(x)];
    builds[x]->f32.forward(s, p, opts[x], Q.data(), K.data(), V.data(), a.O.data(), a.L.data(),
                           a.L_lo.data());
  };
  const auto run = [&](int x) {
    if (!bwd) return forward(x);
    Arrays& a = out[std::size_t(x)];
    builds[x]->f32.backward(s, p, opts[x], Q.data(), K.data(), V.data(), a.O.data(), a.L.data(),
                            a.L_lo.data(), dO.data(), a.dQ.data(), a.dK.data(), a.dV.data(),
                            a.D.data());
  };
  for (int x = 0; x < 2; ++x) forward(x);  // O and L for the backward, each build's own
  std::vector<double> ms[2];
  for (int r = 0; r < reps + 1; ++r)  // rep 0 warms both up
    for (int w = 0; w < 2; ++w) {
      const int x = r % 2 ? 1 - w : w;
      const auto t0 = std::chrono::steady_clock::now();
      run(x);
      const auto t1 = std::chrono::steady_clock::now();
      if (r > 0) ms[x].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
  std::vector<double> ratio;
  int b_faster = 0;
  for (std::size_t k = 0; k < ms[0].size(); ++k) {
    ratio.push_back(ms[0][k] / ms[1][k]);
    b_faster += ms[1][k] < ms[0][k];
  }
  std::sort(ratio.begin(), ratio.end());
  const double min_a = *std::min_element(ms[0].begin(), ms[0].end()),
               min_b = *std::min_element(ms[1].begin(), ms[1].end());
  const Arrays &a = out[0], &b = out[1];
  const bool same = bwd ? same_bits(a.dQ, b.dQ) && same_bits(a.dK, b.dK) && same_bits(a.dV, b.dV)
                        : same_bits(a.O, b.O) && same_bits(a.L, b.L) && same_bits(a.L_lo, b.L_lo);
  const double diff =
      bwd ? std::max({max_diff(a.dQ, b.dQ), max_diff(a.dK, b.dK), max_diff(a.dV, b.dV)})
          : std::max(max_diff(a.O, b.O), max_diff(a.L, b.L));
  std::printf(
      "h %ld n %ld d %ld%s %s threads %ld, tiles A %ldx%ld B %ldx%ld: A min %.2f ms, B min %.2f "
      "ms; B's speed over A's: "
      "%.3fx by the mins, %.3fx the median of %zu pairs (B faster in %d); outputs %s (max "
      "difference %.3g)\n",
      long(s.h), long(s.n), long(s.d), p.causal ? " causal" : "", bwd ? "bwd" : "fwd",
      long(threads), long(opts[0].tiles.Br), long(opts[0].tiles.Bc), long(opts[1].tiles.Br),
      long(opts[1].tiles.Bc), min_a, min_b, min_a / min_b, ratio[ratio.size() / 2], ratio.size(),
      b_faster, same ? "the same bits" : "differ", diff);
}
