// test_check.cpp — flashdemo check: arrays saved by forward and backward (teaching and fast
// paths, fp16/fp32/fp64 files) graded in full; what is wrong fails, an overflowing yardstick
// gives no verdict.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "flashdemo/attention.hpp"
#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"
#include "runner.hpp"

using namespace cli;

TEST_CASE("arrays in and out: forward and backward save what check then passes") {
  write_inputs(33, 21, 5);
  std::remove("out_o.npy");
  const Run f = run("forward " + kQKV +
                    " --causal --causal-align bottom-right --save-o out_o.npy "
                    "--save-lse out_l.npy --trace none");
  REQUIRE(f.code == 0);
  CHECK(has(f.out, "Q: 33 x 5,  K, V: 21 x 5"));
  CHECK(has(f.out, "inputs: Q = in_q.npy"));
  const Run b = run("backward " + kQKV +
                    " --do in_do.npy --causal --causal-align bottom-right "
                    "--save-dq out_dq.npy --save-dk out_dk.npy --save-dv out_dv.npy --trace none");
  REQUIRE(b.code == 0);
  CHECK(has(b.out, "loss = sum(O * dO) with dO = in_do.npy"));
  CHECK(has(b.out, "sum(O * dO) (fp64 reference"));
  const Run c =
      run("check " + kQKV +
          " --do in_do.npy --causal --causal-align bottom-right "
          "--o out_o.npy --lse out_l.npy --dq out_dq.npy --dk out_dk.npy --dv out_dv.npy");
  CHECK(c.code == 0);
  CHECK(has(c.out, "5 of 5 arrays pass."));
  const Run wrong = run("check " + kQKV + " --o out_o.npy");  // no mask: O is wrong
  CHECK(wrong.code == 1);
  CHECK(has(wrong.out, "FAIL"));
  CHECK(has(wrong.out, "hint: matches causal attention"));
  CHECK(has(wrong.err, "failed"));
}

TEST_CASE("fp32 runs write float32 files that check judges as fp32") {
  write_inputs(20, 20, 4);
  REQUIRE(run("forward " + kQKV + " --dtype fp32 --save-o out_o32.npy --trace none").code == 0);
  CHECK(fd::read_npy("out_o32.npy").type == fd::NpyType::f4);
  const Run c = run("check " + kQKV + " --o out_o32.npy");
  CHECK(c.code == 0);
  CHECK(has(c.out, "fp32"));
}

// The verdict is never "pass" for an array that is not finite, nor where the yardstick itself
// overflowed (no verdict, with the precision that grades it), and no right answer fails.
TEST_CASE("check: nothing wrong passes, a yardstick that overflows gives no verdict") {
  write_inputs(12, 9, 4);
  fd::write_npy("in_nan.npy", fd::Mat<double>(fd::Mat<double>::Constant(12, 4, NAN)));
  fd::write_npy("in_123.npy", fd::Mat<double>(fd::Mat<double>::Constant(12, 4, 123.0)));
  for (const char* o : {"in_nan.npy", "in_123.npy"}) {
    const Run r = run("check " + kQKV + " --scale 30000 --precision fp16 --o " + o);
    INFO(o << "\n" << r.out);
    CHECK(r.code == 1);
    CHECK(has(r.out, "no verdict"));
    CHECK(has(r.out, "--precision fp32 grades it"));
    CHECK_FALSE(has(r.out, " pass\n"));
  }
  const Run nan = run("check " + kQKV + " --o in_nan.npy");  // a finite yardstick: FAIL
  CHECK(nan.code == 1);
  CHECK(has(nan.out, "FAIL"));
  const Run quiet = run("check -q " + kQKV + " --o in_nan.npy");  // --quiet keeps verdict and hint
  CHECK(has(quiet.out, "FAIL"));
  CHECK(has(quiet.out, "hint: "));
  fd::Mat<double> huge = fd::TorchGenerator(3).randn_matrix<double>(12, 4);
  huge(0, 0) = 1e39;  // fits fp64, not fp32: the naive fp32 yardstick overflows
  fd::write_npy("in_huge12.npy", huge);
  const Run big =
      run("check --q in_huge12.npy --k in_k.npy --v in_v.npy --precision fp32 --o in_123.npy");
  CHECK(big.code == 1);
  CHECK(has(big.out, "no verdict"));
  CHECK(has(big.out, "--precision fp64 grades it"));
  const Run fwd = run("forward --precision fp16 --scale 30000 --trace none");
  CHECK(fwd.code == 1);  // no verdict is never a pass: exit 1, the table shown, one line why
  CHECK(has(fwd.err, "no verdict on O, L"));
  CHECK(has(fwd.out, "no verdict: naive fp16 overflows here"));
  CHECK_FALSE(has(fwd.out, ": pass"));
}

// Every path can be saved and graded in full: the fast CPU path through forward and backward.
TEST_CASE("--impl fast: saved arrays that check passes in full, in fp32 and fp64") {
  write_inputs(37, 53, 5);
  for (const char* dtype : {"fp32", "fp64"}) {
    const std::string f = std::string(" --dtype ") + dtype;
    const Run b = run("backward " + kQKV + " --do in_do.npy --causal --impl fast --threads 3" + f +
                      " --save-o out_o.npy --save-lse out_l.npy --save-dq out_dq.npy "
                      "--save-dk out_dk.npy --save-dv out_dv.npy");
    INFO(dtype << "\n" << b.out << b.err);
    REQUIRE(b.code == 0);
    CHECK(has(b.out, "the fast CPU path (3 threads"));
    CHECK_FALSE(has(b.out, "FAIL"));
    const Run c = run("check " + kQKV +
                      " --do in_do.npy --causal --o out_o.npy --lse out_l.npy --dq out_dq.npy "
                      "--dk out_dk.npy --dv out_dv.npy");
    CHECK(c.code == 0);
    CHECK(has(c.out, "5 of 5 arrays pass."));
    CHECK(has(c.out, std::string(" ") + dtype + " "));
  }
}

// NumPy's float16 (what np.save writes for an fp16 tensor) is read, and graded as fp16.
TEST_CASE("check reads float16 .npy files and grades them as fp16") {
  write_inputs(16, 16, 4);
  REQUIRE(run("forward " + kQKV + " --precision fp16 --save-o out_o.npy --trace none").code == 0);
  const fd::NpyArray o = fd::read_npy("out_o.npy");
  // The same values as '<f2' (every one is an fp16 value: O is rounded to fp16).
  std::string bytes("\x93NUMPY\x01\x00", 8);
  std::string dict = "{'descr': '<f2', 'fortran_order': False, 'shape': (16, 4), }";
  dict.append(64 - (10 + dict.size() + 1) % 64, ' ');
  dict += '\n';
  bytes += char(dict.size() & 0xff), bytes += char(dict.size() >> 8), bytes += dict;
  for (double v : o.data) {
    const float f = float(v);
    std::uint32_t b;
    std::memcpy(&b, &f, 4);
    const std::uint32_t e = (b >> 23) & 0xff;
    std::uint16_t h = std::uint16_t((b >> 16) & 0x8000);
    if (e >= 113)
      h = std::uint16_t(h | ((e - 112) << 10) | ((b >> 13) & 0x3ff));
    else if (e >= 103)
      h = std::uint16_t(h | (((b & 0x7fffff) | 0x800000) >> (126 - e)));
    bytes += char(h & 0xff), bytes += char(h >> 8);
  }
  std::ofstream("out_o16.npy", std::ios::binary) << bytes;
  const fd::NpyArray back = fd::read_npy("out_o16.npy");
  CHECK(back.type == fd::NpyType::f2);
  CHECK(back.data == o.data);
  const Run c = run("check " + kQKV + " --o out_o16.npy");
  CHECK(c.code == 0);
  CHECK(has(c.out, "fp16"));
}
