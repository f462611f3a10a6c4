// test_gradcheck.cpp — finite differences against gradients known in closed form.
#include <doctest/doctest.h>

#include "flashdemo/reference/gradcheck.hpp"
#include "flashdemo/reference/reference.hpp"

using namespace fd;

TEST_CASE("sum of squares") {
  Mat<double> O(2, 2);
  O << 1, 2, 3, -4;
  CHECK(loss_sum_squares(O) == 30.0);
}

TEST_CASE("with one key, O = V whatever Q and K are: dQ = dK = 0, dV = 2 V * n") {
  Mat<double> Q(3, 2), K(1, 2), V(1, 2);
  Q << 1, 2, -1, 0.5, 3, 3;
  K << 0.3, -0.7;
  V << 1.5, -2;
  const auto g = finite_difference_grads(Q, K, V, AttnParams{});
  REQUIRE(g.size() == 9);
  for (const GradSample& s : g) {
    INFO("operand " << int(s.operand));
    if (s.operand == Operand::V)
      CHECK(s.value == doctest::Approx(2 * V(s.row, s.col) * 3).epsilon(1e-8));
    else
      CHECK(std::abs(s.value) < 1e-9);
  }
}

TEST_CASE("samples first, middle and last entries of each operand") {
  const Mat<double> Q = Mat<double>::Random(5, 3), K = Mat<double>::Random(4, 3),
                    V = Mat<double>::Random(4, 3);
  const auto g = finite_difference_grads(Q, K, V, AttnParams{});
  CHECK(g[0].row == 0);
  CHECK(g[1].row == 2);
  CHECK(g[1].col == 1);
  CHECK(g[2].row == 4);
  CHECK(g[5].row == 3);
  CHECK(g[8].operand == Operand::V);
}
