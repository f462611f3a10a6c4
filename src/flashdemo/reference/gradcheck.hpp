// gradcheck.hpp — gradients by central finite differences, the check that needs no calculus.
//
// For the loss f(Q, K, V) = sum(O * O) (so dO = 2 O), or f = sum(O * G) for a fixed G (so
// dO = G, the gradient a caller hands in), at a sampled entry x of Q, K or V:
//   df/dx ~ (f(x + h) - f(x - h)) / (2 h)       error O(h^2) + O(eps f / h)
// f is evaluated with the fp64 reference, so the check is independent of every tiled path.
#pragma once

#include <vector>

#include "flashdemo/attention.hpp"

namespace fd {

enum class Operand { Q, K, V };

struct GradSample {
  Operand operand = Operand::Q;
  index_t row = 0, col = 0;
  double value = 0;  // the finite-difference derivative
};

// f = sum(O * O).
double loss_sum_squares(const Mat<double>& O);

// Three entries per operand (first, middle, last), differentiated with step h. G: the weights
// of f = sum(O * G); nullptr for f = sum(O * O).
std::vector<GradSample> finite_difference_grads(const Mat<double>& Q, const Mat<double>& K,
                                                const Mat<double>& V, const AttnParams& params,
                                                const Mat<double>* G = nullptr, double h = 1e-5);

}  // namespace fd
