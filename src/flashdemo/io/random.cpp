// random.cpp — PyTorch's CPU normal sampler, reproduced (see random.hpp).
#include "flashdemo/io/random.hpp"

#include "flashdemo/host_device/portable_math.hpp"

#include <cmath>

namespace fd {
namespace {
constexpr double kPi = 3.14159265358979323846;
}

double TorchGenerator::uniform() {
  const std::uint64_t hi = engine_(), lo = engine_();
  const std::uint64_t bits = (hi << 32) | lo;
  return double(bits & ((std::uint64_t(1) << 53) - 1)) * std::ldexp(1.0, -53);
}

double TorchGenerator::normal_serial() {
  if (next_normal_) {
    const double v = *next_normal_;
    next_normal_.reset();
    return v;
  }
  const double u1 = uniform(), u2 = uniform();
  const double r = std::sqrt(-2.0 * portable::log(1.0 - u2));  // log1p(-u2): 1 - u2 is exact
  const portable::SinCos t = portable::sincos(2.0 * kPi * u1);
  next_normal_ = r * t.sin;
  return r * t.cos;
}

std::vector<double> TorchGenerator::normal_fill(index_t count) {
  std::vector<double> x(count);
  for (double& v : x) v = uniform();
  auto fill16 = [](double* g) {
    for (int j = 0; j < 8; ++j) {
      const double radius = std::sqrt(-2.0 * portable::log(1.0 - g[j]));
      const portable::SinCos t = portable::sincos(2.0 * kPi * g[j + 8]);
      g[j] = radius * t.cos;
      g[j + 8] = radius * t.sin;
    }
  };
  for (index_t i = 0; i + 16 <= count; i += 16) fill16(x.data() + i);
  if (count % 16 != 0) {  // redraw the last 16 values as one more group
    double* tail = x.data() + count - 16;
    for (int j = 0; j < 16; ++j) tail[j] = uniform();
    fill16(tail);
  }
  return x;
}

std::vector<double> TorchGenerator::randn(index_t count) {
  if (count >= 16) return normal_fill(count);
  std::vector<double> x(count);
  for (double& v : x) v = normal_serial();
  return x;
}

template <class T>
Mat<T> TorchGenerator::randn_matrix(index_t rows, index_t cols) {
  const std::vector<double> x = randn(rows * cols);
  Mat<T> out(rows, cols);
  for (index_t k = 0; k < rows * cols; ++k) out.data()[k] = T(x[k]);
  return out;
}

template Mat<float> TorchGenerator::randn_matrix(index_t, index_t);
template Mat<double> TorchGenerator::randn_matrix(index_t, index_t);

}  // namespace fd
