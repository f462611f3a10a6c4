// batch.cpp — grading arrays of many heads (see batch.hpp for the definitions).
#include "flashdemo/judge/batch.hpp"

#include <cmath>
#include <utility>

namespace fd {
namespace {

// How bad a head's verdict is, for choosing the one shown: fail 2, no verdict 1, pass 0.
int badness(const Grade& g) {
  return g.outcome == Outcome::fail ? 2 : g.outcome == Outcome::no_verdict ? 1 : 0;
}

// err / bound, the share of its budget a head used (inf for a wrong shape or NaN).
double used(const Grade& g) {
  if (g.bound > 0 && std::isfinite(g.bound)) return g.err / g.bound;
  return std::isfinite(g.err) && g.bound != 0 ? 0.0 : INFINITY;
}

bool worse(const Grade& a, const Grade& b) {
  if (badness(a) != badness(b)) return badness(a) > badness(b);
  return used(a) > used(b);
}

void add(BatchGrade& b, const Grade& g, index_t k) {
  if (b.heads == 0 || worse(g, b.shown)) b.shown = g, b.shown_head = k;
  if (!g.pass && g.outcome != Outcome::no_verdict && b.first_failing < 0)
    b.first_failing = k, b.first_failing_grade = g;
  ++b.heads, b.passed += g.pass, b.no_verdict += g.outcome == Outcome::no_verdict;
}

}  // namespace

Heads split_heads(const NpyArray& X, std::size_t lead_dims) {
  Heads h;
  h.lead.assign(X.shape.begin(), X.shape.begin() + std::ptrdiff_t(lead_dims));
  const bool vector = X.shape.size() == lead_dims + 1;
  const index_t rows = X.shape[lead_dims], cols = vector ? 1 : X.shape[lead_dims + 1];
  index_t count = 1;
  for (index_t x : h.lead) count *= x;
  h.heads.reserve(std::size_t(count));
  for (index_t k = 0; k < count; ++k) {
    h.heads.emplace_back(
        Eigen::Map<const Mat<double>>(X.data.data() + k * rows * cols, rows, cols));
  }
  return h;
}

std::vector<index_t> head_index(const std::vector<index_t>& lead, index_t k) {
  std::vector<index_t> at(lead.size());
  for (std::size_t x = lead.size(); x-- > 0;) at[x] = k % lead[x], k /= lead[x];
  return at;
}

std::vector<index_t> torch_layout(const std::vector<index_t>& shape) {
  if (shape.size() != 4) return {};
  return {shape[0], shape[2], shape[1], shape[3]};
}

std::vector<BatchGrade> grade_heads(const Heads& Q, const Heads& K, const Heads& V, const Heads* dO,
                                    const AttnParams& params,
                                    const std::vector<Submission>& submissions,
                                    const std::vector<TileSizes>& tiles) {
  std::vector<BatchGrade> out(submissions.size());
  for (std::size_t k = 0; k < Q.heads.size(); ++k) {
    Grader grader(CheckProblem{Q.heads[k], K.heads[k], V.heads[k],
                               dO ? dO->heads[k] : Mat<double>(), params, tiles});
    for (std::size_t s = 0; s < submissions.size(); ++s) {
      const Submission& x = submissions[s];
      add(out[s], grader.grade(x.kind, x.X->heads[k], x.precision), index_t(k));
    }
  }
  return out;
}

}  // namespace fd
