// test_variant.cpp — the lab's variants: each mistake drifts exactly where it should and nowhere
// else, and emulated bf16 / fp16 runs pass the 2x rule against naive attention in that format.
#include <doctest/doctest.h>

#include <initializer_list>

#include "check.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/teaching/flash_backward.hpp"

using namespace fd;

namespace {

struct Inputs3 {
  Mat<double> Q, K, V, dO;
};

Inputs3 inputs(index_t n, index_t m, index_t d) {
  TorchGenerator gen(21);
  return {gen.randn_matrix<double>(n, d), gen.randn_matrix<double>(m, d),
          gen.randn_matrix<double>(m, d), gen.randn_matrix<double>(n, d)};
}

double drift_O(const Inputs3& x, const AttnParams& p, Mistake mistake, TileSizes t = {16, 16}) {
  const auto out = flash_forward(x.Q, x.K, x.V, p, t, nullptr, Variant{Precision::fp64, mistake});
  return max_abs_error(out.O, reference_forward(x.Q, x.K, x.V, p).O).value;
}

}  // namespace

TEST_CASE("no-rescale drifts once a row's max grows after its first key tile") {
  const Inputs3 x = inputs(64, 64, 8);
  CHECK(drift_O(x, AttnParams{}, Mistake::no_rescale) > 1e-3);
  CHECK(drift_O(x, AttnParams{}, Mistake::no_rescale, {16, 64}) < 1e-12);  // one key tile
}

TEST_CASE("no-max is exact for small scores and overflows for large ones") {
  const Inputs3 x = inputs(20, 20, 4);
  CHECK(drift_O(x, AttnParams{}, Mistake::no_max) < 1e-12);
  const AttnParams large{false, CausalAlign::top_left, 400.0};  // scores past exp's range
  const auto out = flash_forward(x.Q, x.K, x.V, large, {8, 8}, nullptr,
                                 Variant{Precision::fp64, Mistake::no_max});
  CHECK(out.O.hasNaN());
  CHECK(drift_O(x, large, Mistake::none) < 1e-12);  // the correct path stays exact
}

TEST_CASE("l-starts-at-1 drifts; finite-mask drifts only where a row sees no key") {
  const Inputs3 x = inputs(30, 20, 4);
  CHECK(drift_O(x, AttnParams{}, Mistake::l_starts_at_1) > 1e-3);
  const AttnParams tl{true, CausalAlign::top_left, {}}, br{true, CausalAlign::bottom_right, {}};
  CHECK(drift_O(x, tl, Mistake::finite_mask) < 1e-12);  // every row sees key 0
  CHECK(drift_O(x, br, Mistake::finite_mask) > 1e-2);   // rows 0..9 see no key
}

TEST_CASE("wrong-align drifts only when n != m") {
  const AttnParams br{true, CausalAlign::bottom_right, {}};
  CHECK(drift_O(inputs(24, 24, 4), br, Mistake::wrong_align) < 1e-12);
  CHECK(drift_O(inputs(24, 40, 4), br, Mistake::wrong_align) > 1e-3);
}

TEST_CASE("no-d breaks dQ and dK, never dV") {
  const Inputs3 x = inputs(30, 30, 4);
  const AttnParams p{true, CausalAlign::top_left, {}};
  const auto f = flash_forward(x.Q, x.K, x.V, p, {8, 8});
  const auto b = flash_backward(x.Q, x.K, x.V, f, x.dO, p, {8, 8}, nullptr,
                                Variant{Precision::fp64, Mistake::no_d});
  const auto ref = reference_backward(x.Q, x.K, x.V, x.dO, p);
  CHECK(max_abs_error(b.dQ, ref.dQ).value > 1e-3);
  CHECK(max_abs_error(b.dK, ref.dK).value > 1e-3);
  CHECK(max_abs_error(b.dV, ref.dV).value < 1e-12);
}

TEST_CASE("emulated bf16 and fp16 pass the 2x rule against naive attention in that format") {
  for (Precision prec : {Precision::bf16, Precision::fp16}) {
    for (bool causal : {false, true}) {
      const Inputs3 x = inputs(37, 45, 8);
      auto low = [prec](const Mat<double>& X) {
        return Mat<float>(X.cast<float>().unaryExpr([prec](float v) { return round_to(prec, v); }));
      };
      const test::Problem<float> pr{low(x.Q), low(x.K), low(x.V), low(x.dO),
                                    AttnParams{causal, CausalAlign::bottom_right, {}}};
      const Variant v{prec, Mistake::none};
      const auto f = flash_forward(pr.Q, pr.K, pr.V, pr.params, {16, 16}, nullptr, v);
      const auto b = flash_backward(pr.Q, pr.K, pr.V, f, pr.dO, pr.params, {16, 16}, nullptr, v);
      INFO("precision " << int(prec) << " causal " << causal);
      test::check_outputs<float>({f.O, f.L, b.dQ, b.dK, b.dV}, test::Expected<float>(pr, prec),
                                 "teaching", prec);
    }
  }
}
