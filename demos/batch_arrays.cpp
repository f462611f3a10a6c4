// batch_arrays.cpp — reading the problem's arrays of one head or a batch of heads, checked
// against each other, and writing a run's outputs with the inputs' leading dimensions.
#include "batch_arrays.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <type_traits>

#include "common.hpp"
#include "flashdemo/io/file_io.hpp"
#include "ui/format.hpp"
#include "ui/i18n.hpp"

namespace fd::demos {

using ui::Msg;
using ui::shape_text;

// An input of the problem (Q, K, V, dO): finite, of 2 to 4 dimensions ((n, d), (b, n, d),
// (b, h, n, d)), none empty; refused with the file's name.
NpyArray load_input(const std::string& path, const char* what) {
  NpyArray a = read_npy(path, 0.8 * memory_available());
  require_finite(a, path);
  if (a.shape.size() < 2 || a.shape.size() > 4)
    throw NpyError(ui::tr(Msg::arrays_err_dims, shown(path), what, a.shape.size()));
  for (index_t x : a.shape)
    if (x < 1)
      throw NpyError(ui::tr(Msg::arrays_err_empty, shown(path), what, shape_text(a.shape)));
  return a;
}

// One head's rows and columns and the problem's leading dimensions ((), (b) or (b, h)) make the
// shape an array must have; a batched array of another shape is refused naming both (and
// PyTorch's (b, n, h, d) layout when that is the one it has).
std::vector<index_t> expected_shape(const std::vector<index_t>& lead, std::vector<index_t> head) {
  head.insert(head.begin(), lead.begin(), lead.end());
  return head;
}
void require_shape(const NpyArray& a, const std::string& path, const char* what,
                   const std::vector<index_t>& want) {
  if (a.shape == want) return;
  if (!want.empty() && torch_layout(a.shape) == want)
    throw NpyError(ui::tr(Msg::arrays_err_torch_layout, shown(path), what, shape_text(a.shape),
                          shape_text(want)));
  throw NpyError(
      ui::tr(Msg::arrays_err_shape, shown(path), what, shape_text(a.shape), shape_text(want)));
}

// K, V, dO with Q's number of dimensions, or refused naming both shapes.
void require_dims(const NpyArray& a, const std::string& path, const char* what, const NpyArray& q) {
  if (a.shape.size() != q.shape.size())
    throw NpyError(ui::tr(Msg::arrays_err_dims_differ, shown(path), what, shape_text(a.shape),
                          shape_text(q.shape)));
}

HeadsProblem load_problem(const std::string& q_path, const std::string& k_path,
                          const std::string& v_path, const std::string& dO_path) {
  return heads_problem(load_input(q_path, "Q"), k_path, v_path, dO_path);
}

HeadsProblem heads_problem(const NpyArray& q, const std::string& k_path, const std::string& v_path,
                           const std::string& dO_path) {
  const NpyArray k = load_input(k_path, "K"), v = load_input(v_path, "V");
  require_dims(k, k_path, "K", q), require_dims(v, v_path, "V", q);
  const std::size_t lead = q.shape.size() - 2;
  HeadsProblem p;
  p.n = q.shape[lead], p.d = q.shape[lead + 1], p.m = k.shape[lead];
  const std::vector<index_t> batch(q.shape.begin(), q.shape.begin() + std::ptrdiff_t(lead));
  if (lead == 0) {  // one head: the shapes named as matrices, as always
    if (k.shape[1] != p.d || v.shape != k.shape)
      throw NpyError(
          ui::tr(Msg::arrays_err_shapes, p.n, p.d, k.shape[0], k.shape[1], v.shape[0], v.shape[1]));
  } else {
    require_shape(k, k_path, "K", expected_shape(batch, {p.m, p.d}));
    require_shape(v, v_path, "V", k.shape);
  }
  p.Q = split_heads(q, lead), p.K = split_heads(k, lead), p.V = split_heads(v, lead);
  if (!dO_path.empty()) {
    const NpyArray dO = load_input(dO_path, "dO");
    require_dims(dO, dO_path, "dO", q);
    if (lead == 0 && dO.shape != q.shape)
      throw NpyError(ui::tr(Msg::arrays_err_do, dO_path, dO.shape[0], dO.shape[1], p.n, p.d));
    require_shape(dO, dO_path, "dO", q.shape);
    p.dO = split_heads(dO, lead), p.has_dO = true;
  }
  return p;
}

void require_lse_values(const NpyArray& a, const std::string& path) {
  for (std::size_t k = 0; k < a.data.size(); ++k) {
    if (!std::isnan(a.data[k]) && a.data[k] != HUGE_VAL) continue;
    std::vector<index_t> at(a.shape.size());  // k's indices: "[k]" for a vector, else "(b, h, q)"
    for (std::size_t x = at.size(), rest = k; x-- > 0; rest /= std::size_t(a.shape[x]))
      at[x] = index_t(rest % std::size_t(a.shape[x]));
    const std::string where =
        at.size() == 1 ? fmt::format("[{}]", k) : fmt::format("({})", fmt::join(at, ", "));
    throw NpyError(ui::tr(Msg::err_lse_value, shown(path), where, a.data[k] > 0 ? "inf" : "nan"));
  }
}

Heads load_lse_heads(const std::string& path, const std::vector<index_t>& lead, index_t n) {
  const NpyArray a = read_npy(path, 0.8 * memory_available());
  if (a.shape != expected_shape(lead, {n, 1}))  // (keepdim=True's column, as for one head)
    require_shape(a, path, "L", expected_shape(lead, {n}));
  require_lse_values(a, path);
  return split_heads(a, lead.size());
}

template <class X>
void HeadOutputs::add(const std::string& path, const X& x) {
  if (path.empty()) return;
  Output& out = outputs_[path];
  if (out.values.empty()) {
    out.head_shape = X::ColsAtCompileTime == 1 ? std::vector<index_t>{x.rows()}
                                               : std::vector<index_t>{x.rows(), x.cols()};
    out.fp32 = std::is_same_v<typename X::Scalar, float>;
  }
  out.values.insert(out.values.end(), x.data(), x.data() + x.size());
}

void HeadOutputs::stage(RunFiles& files) const {
  for (const auto& [path, out] : outputs_) {
    const std::vector<index_t> shape = expected_shape(lead_, out.head_shape);
    if (out.fp32) {
      const std::vector<float> values(out.values.begin(), out.values.end());
      files.stage(path, npy_bytes(values.data(), shape));
    } else {
      files.stage(path, npy_bytes(out.values.data(), shape));
    }
  }
}

template void HeadOutputs::add(const std::string&, const Mat<float>&);
template void HeadOutputs::add(const std::string&, const Mat<double>&);
template void HeadOutputs::add(const std::string&, const Vec<float>&);
template void HeadOutputs::add(const std::string&, const Vec<double>&);

}  // namespace fd::demos
