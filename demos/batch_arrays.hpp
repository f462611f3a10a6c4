// batch_arrays.hpp — the arrays forward, backward and check read and write, as assignments save
// them: Q, K, V, dO, O (and dQ, dK, dV) of shape (n, d), (b, n, d) or (b, h, n, d), and L of
// shape (n), (b, n) or (b, h, n). The leading dimensions ((), (b) or (b, h)) index the heads
// (judge/batch.hpp, split_heads); every array of a problem has Q's, and the outputs keep them:
//   X of head k  =  X[i_1, .., i_lead, :, :]   with (i_1, .., i_lead) = head_index(lead, k)
//   shape of an output  =  lead + one head's shape ((n, d), (m, d), or (n) for L)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "flashdemo/io/npy.hpp"
#include "flashdemo/judge/batch.hpp"
#include "recording.hpp"

namespace fd::demos {

// An input of the problem (Q, K, V, dO, O): finite, of 2 to 4 dimensions, none empty; refused
// with the file's name.
NpyArray load_input(const std::string& path, const char* what);

// lead + head: the shape an array of the problem must have.
std::vector<index_t> expected_shape(const std::vector<index_t>& lead, std::vector<index_t> head);

// a's shape is want, or refused naming both (and PyTorch's (b, n, h, d) layout when a has it).
void require_shape(const NpyArray& a, const std::string& path, const char* what,
                   const std::vector<index_t>& want);

// a has q's number of dimensions, or refused naming both shapes.
void require_dims(const NpyArray& a, const std::string& path, const char* what, const NpyArray& q);

// The problem's arrays, cut into heads: Q, K, V (and dO) share their leading dimensions.
struct HeadsProblem {
  Heads Q, K, V, dO;
  bool has_dO = false;
  index_t n = 0, m = 0, d = 0;
};

// Q, K, V (and dO unless its path is empty) read and checked against each other.
HeadsProblem load_problem(const std::string& q_path, const std::string& k_path,
                          const std::string& v_path, const std::string& dO_path);
// The same with Q already read (load_input).
HeadsProblem heads_problem(const NpyArray& q, const std::string& k_path, const std::string& v_path,
                           const std::string& dO_path);

// A forward's L: no NaN and no +inf (-inf is a row that sees no key); refused naming the entry
// ("[5]" in a vector, "(1, 2, 5)" in a batch).
void require_lse_values(const NpyArray& a, const std::string& path);

// A batch of L: shape lead + (n) (or lead + (n, 1)), no NaN and no +inf (-inf is a row that sees no
// key); each head's L as a column (n x 1).
Heads load_lse_heads(const std::string& path, const std::vector<index_t>& lead, index_t n);

// A run's outputs collected head by head (in head order) and staged when every head is done,
// each with the leading dimensions before one head's shape: one head writes what it always did.
class HeadOutputs {
 public:
  explicit HeadOutputs(std::vector<index_t> lead) : lead_(std::move(lead)) {}
  // x: a Mat<T> (one head's matrix) or Vec<T> (L, D); path "": nothing to do.
  template <class X>
  void add(const std::string& path, const X& x);
  void stage(RunFiles& files) const;

 private:
  struct Output {
    std::vector<index_t> head_shape;
    std::vector<double> values;  // every head's, in order
    bool fp32 = false;           // written as float32 (the run's type), else float64
  };
  std::vector<index_t> lead_;
  std::map<std::string, Output> outputs_;
};

}  // namespace fd::demos
