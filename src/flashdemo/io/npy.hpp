// npy.hpp — NumPy's .npy format, so NumPy and PyTorch users can hand in their own arrays.
//
// A file is: the magic "\x93NUMPY", a version byte pair (1.0, 2.0 or 3.0), the header length
// (2 bytes little-endian for 1.0, 4 bytes for 2.0 and 3.0), then a Python dict literal such as
//   {'descr': '<f8', 'fortran_order': False, 'shape': (100, 32), }
// padded with spaces and a newline, then the data: prod(shape) elements, C (row-major) order.
// Read: little-endian float16 ('<f2', what np.save writes for an fp16 tensor), float32 ('<f4')
// and float64 ('<f8'), C order, 0-, 1- or 2-dimensional. (NumPy has no bf16: bf16 tensors arrive
// as float32, and `check --precision bf16` grades them as bf16.)
// Anything else is refused by name. A file is read as far as its header says, never sought, so a
// pipe or FIFO reads as a file does. Write: '<f4' or '<f8', version 1.0 (file_io.hpp: through a
// temporary renamed into place, so a failed write never leaves a half-written file).
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "flashdemo/attention.hpp"
#include "flashdemo/io/file_io.hpp"

namespace fd {

// A malformed or unsupported file, or one that cannot be read; what() names the file and the
// problem in one line, and problem, file and facts say which (FileProblem: bad_magic ...
// not_finite, or cannot_open, is_directory, cannot_read from the file beneath).
struct NpyError : FileError {
  using FileError::FileError;
  // The same problem, met while reading or writing a .npy file.
  explicit NpyError(const FileError& e) : FileError(e) {}
};

// A header promising an array larger than the memory available.
struct NpyTooLarge : NpyError {
  using NpyError::NpyError;
};

enum class NpyType { f2, f4, f8 };

struct NpyArray {
  NpyType type = NpyType::f8;
  std::vector<index_t> shape;  // () scalar, (n,) vector, (n, d) matrix, (b, n, d), (b, h, n, d)
  std::vector<double> data;    // row-major, widened to double (exact for every type)
  index_t rows() const { return shape.size() == 2 ? shape[0] : 1; }
  index_t cols() const { return shape.empty() ? 1 : shape.back(); }
};

// The array, read to its end. `budget`: the bytes of memory the array may take (widened to double,
// beside the bytes read); a header that promises more is refused at once (NpyTooLarge), before
// a stream that would never end is read.
NpyArray read_npy(const std::string& path, double budget = HUGE_VAL);

// Non-finite entries are refused: "x.npy: element (3, 1) is nan".
void require_finite(const NpyArray& a, const std::string& path);

// The bytes of a .npy file holding rows x cols (cols = 0: a vector of `rows` elements), '<f4'
// when T is float, else '<f8' (for OutputFiles to stage with the run's other outputs).
template <class T>
std::string npy_bytes(const T* data, index_t rows, index_t cols);
// ... of any shape, (b, h, n, d) as well (data row-major).
template <class T>
std::string npy_bytes(const T* data, const std::vector<index_t>& shape);
template <class T>
std::string npy_bytes(const Mat<T>& m) {
  return npy_bytes(m.data(), m.rows(), m.cols());
}
template <class T>
std::string npy_bytes(const Vec<T>& v) {
  return npy_bytes(v.data(), v.rows(), index_t(0));
}

// Writes such a file on its own, through a temporary renamed into place.
template <class T>
void write_npy(const std::string& path, const T* data, index_t rows, index_t cols);
template <class T>
void write_npy(const std::string& path, const T* data, const std::vector<index_t>& shape);

template <class T>
void write_npy(const std::string& path, const Mat<T>& m) {
  write_npy(path, m.data(), m.rows(), m.cols());
}
template <class T>
void write_npy(const std::string& path, const Vec<T>& v) {
  write_npy(path, v.data(), v.rows(), index_t(0));
}

// The array as a matrix of T (a vector becomes one column).
template <class T>
Mat<T> to_matrix(const NpyArray& a);

}  // namespace fd
