// gradcheck.cpp — central finite differences of sum(O^2) (see gradcheck.hpp).
#include "flashdemo/reference/gradcheck.hpp"

#include "flashdemo/reference/reference.hpp"

namespace fd {

double loss_sum_squares(const Mat<double>& O) {
  double sum = 0;  // left to right: the same digits whatever the SIMD width
  for (index_t k = 0; k < O.size(); ++k) sum += O.data()[k] * O.data()[k];
  return sum;
}

// sum(O * G), left to right.
double loss_against(const Mat<double>& O, const Mat<double>& G) {
  double sum = 0;
  for (index_t k = 0; k < O.size(); ++k) sum += O.data()[k] * G.data()[k];
  return sum;
}

std::vector<GradSample> finite_difference_grads(const Mat<double>& Q, const Mat<double>& K,
                                                const Mat<double>& V, const AttnParams& params,
                                                const Mat<double>* G, double h) {
  auto loss = [&](const Mat<double>& O) { return G ? loss_against(O, *G) : loss_sum_squares(O); };
  std::vector<GradSample> out;
  Mat<double> x[3] = {Q, K, V};
  for (int which = 0; which < 3; ++which) {
    Mat<double>& X = x[which];
    const index_t rows = X.rows(), cols = X.cols();
    const index_t picks[3][2] = {{0, 0}, {rows / 2, cols / 2}, {rows - 1, cols - 1}};
    for (const auto& rc : picks) {
      const double saved = X(rc[0], rc[1]);
      X(rc[0], rc[1]) = saved + h;
      const double up = loss(reference_forward(x[0], x[1], x[2], params).O);
      X(rc[0], rc[1]) = saved - h;
      const double down = loss(reference_forward(x[0], x[1], x[2], params).O);
      X(rc[0], rc[1]) = saved;
      out.push_back({Operand(which), rc[0], rc[1], (up - down) / (2 * h)});  // central difference
    }
  }
  return out;
}

}  // namespace fd
