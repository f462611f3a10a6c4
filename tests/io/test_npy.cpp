// test_npy.cpp — .npy round trips, files written by NumPy, and malformed files refused by name.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

#include "flashdemo/io/npy.hpp"

using namespace fd;

namespace {

const std::string kFixtures = FLASHDEMO_FIXTURES;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("flashdemo_test_" + name)).string();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A v1.0 file with the given dict and `data_bytes` bytes of zeros after it.
std::string npy_bytes(const std::string& dict, std::size_t data_bytes) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01', out += '\x00';
  out += char(header.size() & 0xff), out += char(header.size() >> 8);
  return out + header + std::string(data_bytes, '\0');
}

std::string error_of(const std::string& path) {
  try {
    read_npy(path);
  } catch (const NpyError& e) {
    return e.what();
  }
  return "";
}

// The kind of problem read_npy reports (FileProblem::worded when it reads the file).
FileProblem problem_of(const std::string& path) {
  try {
    read_npy(path);
  } catch (const NpyError& e) {
    return e.problem;
  }
  return FileProblem::worded;
}

}  // namespace

TEST_CASE_TEMPLATE("round trip of a matrix and a vector", T, float, double) {
  Mat<T> M(3, 5);
  for (index_t k = 0; k < M.size(); ++k) M.data()[k] = T(k) / T(7) - T(1);
  Vec<T> v(4);
  v << T(1.5), T(-0.0), T(1e-20), T(3e30);
  const std::string pm = temp_path("m.npy"), pv = temp_path("v.npy");
  write_npy(pm, M);
  write_npy(pv, v);
  const NpyArray a = read_npy(pm), b = read_npy(pv);
  CHECK(a.type == (std::is_same_v<T, float> ? NpyType::f4 : NpyType::f8));
  CHECK(a.shape == std::vector<index_t>{3, 5});
  CHECK(to_matrix<T>(a) == M);
  CHECK(b.shape == std::vector<index_t>{4});
  CHECK(to_matrix<T>(b).col(0) == v);
  std::remove(pm.c_str());
  std::remove(pv.c_str());
}

TEST_CASE("files written by NumPy read back exactly") {
  const NpyArray a = read_npy(kFixtures + "/numpy_f8_3x4.npy");
  REQUIRE(a.shape == std::vector<index_t>{3, 4});
  CHECK(a.data[0] == -0.5);
  CHECK(a.data[11] == 11.0 / 8 - 0.5);
  CHECK(a.data[6] == 3.141592653589793);  // a[1, 2] = np.pi
  const NpyArray v = read_npy(kFixtures + "/numpy_f4_vec5.npy");
  CHECK(v.type == NpyType::f4);
  REQUIRE(v.shape == std::vector<index_t>{5});
  CHECK(v.data[1] == -2.25);
  CHECK(v.data[4] == double(0.1f));
  const NpyArray v2 = read_npy(kFixtures + "/numpy_v2_f8_2x3.npy");  // version 2.0 header
  CHECK(v2.shape == std::vector<index_t>{2, 3});
  CHECK(v2.data[5] == 6.0);
  const NpyArray s = read_npy(kFixtures + "/numpy_f8_scalar.npy");
  CHECK(s.shape.empty());
  CHECK(s.data == std::vector<double>{2.5});
}

TEST_CASE("malformed and unsupported files give one clear message naming the problem") {
  const std::string p = temp_path("bad.npy");
  struct Case {
    std::string bytes, message;
    FileProblem problem;  // the kind the command line words in the user's language
  };
  const std::string f8 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  using P = FileProblem;
  const Case cases[] = {
      {"GIF89a not numpy at all", "bad magic", P::bad_magic},
      {"", "bad magic", P::bad_magic},
      {npy_bytes(f8, 48).substr(0, 12), "truncated header", P::truncated_header},
      {npy_bytes(f8, 40), "truncated data", P::truncated_data},  // shape larger than data
      {npy_bytes(f8, 0), "truncated data", P::truncated_data},
      {npy_bytes("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 24), "'<i4'",
       P::unsupported_dtype},
      {npy_bytes("{'descr': '>f8', 'fortran_order': False, 'shape': (2, 3), }", 48), "'>f8'",
       P::unsupported_dtype},
      {npy_bytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", 48), "Fortran",
       P::fortran_order},
      {npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 3, 4, 1), }", 192),
       "5 dimensions", P::too_many_dimensions},
      {npy_bytes("{'fortran_order': False, 'shape': (2, 3), }", 48), "'descr'", P::missing_key},
      {npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2, -3), }", 48), "shape",
       P::shape_not_tuple},
      // found by tests/fuzz/fuzz_npy.cpp: a shape that is no tuple once threw std::out_of_range
      {npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': ,, 64)( }", 48), "shape",
       P::shape_not_tuple},
      {npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': 3, }", 24), "not a tuple",
       P::shape_not_tuple},
      // NumPy refuses these two: an empty size between commas, a lone comma
      {npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,,3), }", 48), "not a tuple",
       P::shape_not_tuple},
      {npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (,), }", 0), "not a tuple",
       P::shape_not_tuple},
      {npy_bytes("{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 48),
       "more than once", P::repeated_key},
      {std::string("\x93NUMPY\x07\x00", 8), "version 7.0", P::unsupported_version},
  };
  for (const Case& c : cases) {
    write_bytes(p, c.bytes);
    const std::string e = error_of(p);
    INFO("expected '" << c.message << "', got '" << e << "'");
    CHECK(e.find(c.message) != std::string::npos);
    CHECK(e.find(p) == 0);  // the message names the file first
    CHECK(e.find('\n') == std::string::npos);
    CHECK(problem_of(p) == c.problem);
  }
  CHECK(error_of(temp_path("does_not_exist.npy")).find("cannot open") != std::string::npos);
  try {  // the file beneath: its problem and errno kept, for the command line to word
    read_npy(temp_path("does_not_exist.npy"));
    FAIL("a missing file must be refused");
  } catch (const NpyError& e) {
    CHECK(e.problem == FileProblem::cannot_open);
    CHECK(e.facts.error == ENOENT);
    CHECK(e.file.path == temp_path("does_not_exist.npy"));
  }
  std::remove(p.c_str());
}

TEST_CASE("a header NumPy reads is read: double-quoted keys and dtype; (n,) vectors") {
  const std::string p = temp_path("quotes.npy");
  write_bytes(p,
              npy_bytes("{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (2, 3), }", 48));
  const NpyArray a = read_npy(p);
  CHECK(a.type == NpyType::f8);
  CHECK(a.shape == std::vector<index_t>{2, 3});
  write_bytes(p, npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", 48));
  CHECK(read_npy(p).shape == std::vector<index_t>{6});
  std::remove(p.c_str());
}

TEST_CASE("NaN and inf contents are refused where inputs must be finite") {
  const std::string p = temp_path("nan.npy");
  Mat<double> M = Mat<double>::Zero(2, 3);
  M(1, 2) = std::nan("");
  write_npy(p, M);
  const NpyArray a = read_npy(p);  // reading works: a submission may hold NaN
  CHECK(std::isnan(a.data[5]));
  try {
    require_finite(a, p);
    FAIL("NaN accepted");
  } catch (const NpyError& e) {
    CHECK(std::string(e.what()).find("element (1, 2) is nan") != std::string::npos);
  }
  std::remove(p.c_str());
}

TEST_CASE("a write that cannot happen leaves no file behind") {
  const std::string p = "/nonexistent-dir-flashdemo/out.npy";
  CHECK_THROWS_AS(write_npy(p, Mat<double>::Zero(2, 2).eval()), NpyError);
  CHECK_FALSE(std::filesystem::exists(p));
  CHECK_FALSE(std::filesystem::exists(p + ".tmp"));
}

TEST_CASE("a header that names a key twice is refused (NumPy would take the last)") {
  const std::string p = temp_path("twice.npy");
  for (const std::string& dict :
       {std::string("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'shape': (2,), }"),
        std::string("{'descr': '<f8', \"descr\": '<f4', 'fortran_order': False, 'shape': (2,), }"),
        std::string("{'descr': '<f8', 'fortran_order': True, 'fortran_order': False, "
                    "'shape': (2,), }")}) {
    write_bytes(p, npy_bytes(dict, 24));
    INFO(dict);
    CHECK(error_of(p).find("more than once") != std::string::npos);
  }
  std::remove(p.c_str());
}

TEST_CASE("an error quotes at most 40 characters of a malformed header, control bytes escaped") {
  const std::string p = temp_path("long_header.npy");
  const std::string shape = "(" + std::string(5000, '7') + "x)";
  write_bytes(p,
              npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': " + shape + ", }", 0));
  const std::string long_shape = error_of(p);
  CHECK(long_shape.find("is not a tuple of sizes") != std::string::npos);
  CHECK(long_shape.size() < p.size() + 120);
  write_bytes(p, npy_bytes("{'descr': '<f8\x1b[2J" + std::string(3000, 'x') +
                               "', 'fortran_order': False, 'shape': (2,), }",
                           0));
  const std::string dtype = error_of(p);
  CHECK(dtype.find("unsupported dtype '<f8\\x1b[2Jxxx") != std::string::npos);
  CHECK(dtype.find('\x1b') == std::string::npos);
  CHECK(dtype.size() < p.size() + 250);
  std::remove(p.c_str());
}
