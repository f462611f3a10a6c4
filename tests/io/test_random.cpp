// test_random.cpp — PyTorch's CPU generator reproduced: the lecture's numbers come out.
#include <doctest/doctest.h>

#include <initializer_list>

#include "flashdemo/io/random.hpp"

using namespace fd;

TEST_CASE("torch.manual_seed(0); torch.randn(10) — the lecture's x / 5") {
  // torch 2.x prints: 1.5410, -0.2934, -2.1788, 0.5684, -1.0845, -1.3986, 0.4033, 0.8380,
  // -0.7193, -0.4033; the lecture's x = randn(10) * 5 = [7.7, -1.47, -10.89, 2.84, ...].
  const double expected[] = {1.5410,  -0.2934, -2.1788, 0.5684,  -1.0845,
                             -1.3986, 0.4033,  0.8380,  -0.7193, -0.4033};
  const std::vector<double> x = TorchGenerator(0).randn(10);
  REQUIRE(x.size() == 10);
  for (int i = 0; i < 10; ++i)
    CHECK(x[std::size_t(i)] == doctest::Approx(expected[i]).epsilon(1e-4));
  CHECK(double(float(x[0]) * 5.0f) == doctest::Approx(7.705).epsilon(1e-4));
}

TEST_CASE("the same seed gives the same draws; sizes >= 16 fill in groups of 16") {
  const std::vector<double> a = TorchGenerator(42).randn(37), b = TorchGenerator(42).randn(37);
  CHECK(a == b);
  double mean = 0, sq = 0;
  const std::vector<double> big = TorchGenerator(1).randn(20000);
  for (double v : big) mean += v, sq += v * v;
  mean /= 20000, sq /= 20000;
  CHECK(std::abs(mean) < 0.03);
  CHECK(std::abs(sq - 1.0) < 0.05);
}
