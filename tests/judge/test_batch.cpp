// test_batch.cpp — arrays of many heads: cut as saved (row-major, leading dimensions first),
// each head graded as its own problem, the worst and the first failing head reported.
#include <doctest/doctest.h>

#include <vector>

#include "flashdemo/io/random.hpp"
#include "flashdemo/judge/batch.hpp"
#include "flashdemo/teaching/flash_forward.hpp"

using namespace fd;

namespace {

// An array of the given shape holding 0, 1, 2, ... in row-major order.
NpyArray counting(std::vector<index_t> shape) {
  NpyArray a;
  a.shape = shape;
  index_t size = 1;
  for (index_t x : shape) size *= x;
  for (index_t k = 0; k < size; ++k) a.data.push_back(double(k));
  return a;
}

// b x h heads of random Q, K, V (n x d, m x d), as a (b, h, rows, d) array would hold them.
Heads random_heads(index_t b, index_t h, index_t rows, index_t d, std::uint32_t seed) {
  TorchGenerator gen(seed);
  Heads x{{b, h}, {}};
  for (index_t k = 0; k < b * h; ++k) x.heads.push_back(gen.randn_matrix<double>(rows, d));
  return x;
}

}  // namespace

TEST_CASE("split_heads cuts after the leading dimensions, row-major; L's heads are columns") {
  const Heads m = split_heads(counting({2, 3, 4, 5}), 2);
  CHECK(m.lead == std::vector<index_t>{2, 3});
  REQUIRE(m.heads.size() == 6);
  for (index_t k = 0; k < 6; ++k) {
    REQUIRE(m.heads[std::size_t(k)].rows() == 4);
    REQUIRE(m.heads[std::size_t(k)].cols() == 5);
    CHECK(m.heads[std::size_t(k)](0, 0) == double(20 * k));
    CHECK(m.heads[std::size_t(k)](3, 4) == double(20 * k + 19));
    CHECK(m.heads[std::size_t(k)](1, 2) == double(20 * k + 7));
  }
  const Heads L = split_heads(counting({2, 3, 4}), 2);
  REQUIRE(L.heads.size() == 6);
  CHECK(L.heads[5].rows() == 4);
  CHECK(L.heads[5].cols() == 1);
  CHECK(L.heads[5](2, 0) == 22.0);
  const Heads one = split_heads(counting({7, 3}), 0);
  CHECK(one.lead.empty());
  REQUIRE(one.heads.size() == 1);
  CHECK(one.heads[0](6, 2) == 20.0);
}

TEST_CASE("head_index and torch_layout") {
  CHECK(head_index({2, 4}, 7) == std::vector<index_t>{1, 3});
  CHECK(head_index({2, 4}, 0) == std::vector<index_t>{0, 0});
  CHECK(head_index({5}, 3) == std::vector<index_t>{3});
  CHECK(head_index({}, 0).empty());
  CHECK(torch_layout({2, 64, 4, 32}) == std::vector<index_t>{2, 4, 64, 32});
  CHECK(torch_layout({64, 32}).empty());
}

TEST_CASE("grade_heads: every head graded as its own problem; the worst and first failing shown") {
  const index_t b = 2, h = 3, n = 24, m = 30, d = 8;
  const Heads Q = random_heads(b, h, n, d, 1), K = random_heads(b, h, m, d, 2),
              V = random_heads(b, h, m, d, 3);
  const AttnParams params{true, CausalAlign::bottom_right, {}};
  Heads O{{b, h}, {}}, L{{b, h}, {}};
  for (std::size_t k = 0; k < Q.heads.size(); ++k) {
    const ForwardResult<double> f =
        flash_forward(Q.heads[k], K.heads[k], V.heads[k], params, {8, 8});
    O.heads.push_back(f.O), L.heads.push_back(f.L);
  }
  {
    const auto g =
        grade_heads(Q, K, V, nullptr, params,
                    {{ArrayKind::O, Precision::fp64, &O}, {ArrayKind::L, Precision::fp64, &L}});
    REQUIRE(g.size() == 2);
    for (const BatchGrade& x : g) {
      CHECK(x.pass());
      CHECK(x.heads == 6);
      CHECK(x.passed == 6);
      CHECK(x.first_failing == -1);
    }
  }
  // Head (1, 0) computed without the scale, head (1, 2) with rows off a little in its last row:
  // both fail; (1, 0) is the first failing and the worst (it is off by far more).
  AttnParams unscaled = params;
  unscaled.scale = 1.0;
  Heads bad = O;
  bad.heads[3] = flash_forward(Q.heads[3], K.heads[3], V.heads[3], unscaled, {8, 8}).O;
  bad.heads[5](n - 1, 0) += 1e-6;
  const auto g = grade_heads(Q, K, V, nullptr, params, {{ArrayKind::O, Precision::fp64, &bad}});
  REQUIRE(g.size() == 1);
  CHECK_FALSE(g[0].pass());
  CHECK(g[0].heads == 6);
  CHECK(g[0].passed == 4);
  CHECK(g[0].first_failing == 3);
  CHECK(g[0].first_failing_grade.diagnosis == Diagnosis::unscaled);
  CHECK(g[0].shown_head == 3);
  CHECK_FALSE(g[0].shown.pass);
  // The same error on head (0, 1) only: it is first failing and worst, and its first wrong row
  // is the one changed.
  Heads one = O;
  one.heads[1](n - 1, 0) += 1e-6;
  const auto g1 = grade_heads(Q, K, V, nullptr, params, {{ArrayKind::O, Precision::fp64, &one}});
  CHECK(g1[0].first_failing == 1);
  CHECK(g1[0].shown_head == 1);
  CHECK(g1[0].first_failing_grade.first_bad_row == n - 1);
  CHECK(g1[0].passed == 5);
}
