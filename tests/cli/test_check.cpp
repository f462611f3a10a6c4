// test_check.cpp — flashdemo check: arrays saved by forward and backward (teaching and fast
// paths, fp16/fp32/fp64 files) graded in full; what is wrong fails, an overflowing yardstick
// gives no verdict.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "flashdemo/attention.hpp"
#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/teaching/flash_backward.hpp"
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

TEST_CASE("check grades a batch of heads in one call: every head, the worst, the first failing") {
  const fd::index_t b = 2, h = 3, n = 12, m = 9, d = 4;
  const BatchFiles f = write_batch(b, h, n, m, d);
  const Run all = run("check " + kBatchQKV +
                      " --do b_do.npy --o b_o.npy --lse b_l.npy --dq b_dq.npy --dk b_dk.npy "
                      "--dv b_dv.npy");
  CHECK(all.code == 0);
  CHECK(all.err.empty());
  CHECK(has(all.out, "6 heads (2, 3),  each Q: 12 x 4,  K, V: 9 x 4"));
  CHECK(has(all.out, "heads: 6 of 6 pass (leading dimensions (2, 3))"));
  CHECK(has(all.out, "5 of 5 arrays pass."));
  for (const auto& line : lines(all.out)) CHECK(columns(line) <= 100);

  // Head (1, 1) of O off in one entry of its row 5: 5 of 6 heads pass, that head is named.
  std::vector<double> O = f.O;
  O[std::size_t((1 * h + 1) * n * d + 5 * d + 2)] += 1e-3;
  fd::write_npy("b_o_bad.npy", O.data(), std::vector<fd::index_t>{b, h, n, d});
  const Run bad = run("check " + kBatchQKV + " --o b_o_bad.npy");
  CHECK(bad.code == 1);
  CHECK(has(bad.out, "heads: 5 of 6 pass"));
  CHECK(has(bad.out, "the row shows head (1, 1), the worst"));
  CHECK(has(bad.out,
            "the first failing head is (1, 1): no known mistake matches; the first wrong "
            "row is 5"));
  const Run json = run("check " + kBatchQKV + " --o b_o_bad.npy --json");
  const auto events = json_lines(json.out);
  REQUIRE(events.size() == 2);
  CHECK(events[0]["heads"] == 6);
  CHECK(events[0]["heads_passed"] == 5);
  CHECK(events[0]["head"] == nlohmann::json::array({1, 1}));
  CHECK(events[0]["first_bad_row"] == 5);
  CHECK(events[0]["worst"] == nlohmann::json::array({5, 2}));

  // (b, n, d): the heads are the batch.
  fd::write_npy("b3_q.npy", f.Q.data(), std::vector<fd::index_t>{b * h, n, d});
  fd::write_npy("b3_k.npy", f.K.data(), std::vector<fd::index_t>{b * h, m, d});
  fd::write_npy("b3_v.npy", f.V.data(), std::vector<fd::index_t>{b * h, m, d});
  fd::write_npy("b3_o.npy", f.O.data(), std::vector<fd::index_t>{b * h, n, d});
  fd::write_npy("b3_l.npy", f.L.data(), std::vector<fd::index_t>{b * h, n});
  const Run three =
      run("check --q b3_q.npy --k b3_k.npy --v b3_v.npy --causal --causal-align bottom-right "
          "--o b3_o.npy --lse b3_l.npy");
  CHECK(three.code == 0);
  CHECK(has(three.out, "heads: 6 of 6 pass (leading dimensions (6,))"));
}

TEST_CASE("check refuses batches that do not fit, naming both shapes and PyTorch's layout") {
  const fd::index_t b = 2, h = 3, n = 12, m = 9, d = 4;
  const BatchFiles f = write_batch(b, h, n, m, d);
  std::vector<double> torch(f.O.size());  // (b, n, h, d): O.transpose(1, 2)
  for (fd::index_t i = 0; i < b; ++i)
    for (fd::index_t j = 0; j < h; ++j)
      for (fd::index_t r = 0; r < n; ++r)
        for (fd::index_t c = 0; c < d; ++c)
          torch[std::size_t(((i * n + r) * h + j) * d + c)] =
              f.O[std::size_t(((i * h + j) * n + r) * d + c)];
  fd::write_npy("b_o_torch.npy", torch.data(), std::vector<fd::index_t>{b, n, h, d});
  fd::write_npy("b_l_short.npy", f.L.data(), std::vector<fd::index_t>{b, h - 1, n});
  fd::write_npy("b_k_2d.npy", f.K.data(), std::vector<fd::index_t>{b * h * m, d});
  fd::write_npy("b_5d.npy", f.Q.data(), std::vector<fd::index_t>{1, b, h, n, d});
  struct Case {
    std::string args, message;
    int code;
  };
  const Case cases[] = {
      {kBatchQKV + " --o b_o_torch.npy",
       "b_o_torch.npy: O has shape (2, 12, 3, 4), expected (2, 3, 12, 4): it looks like PyTorch's "
       "(batch, n, heads, d) layout; save x.transpose(1, 2) instead",
       4},
      {kBatchQKV + " --lse b_l_short.npy",
       "b_l_short.npy: L has shape (2, 2, 12), expected (2, 3, 12)", 4},
      {"--q b_q.npy --k b_k_2d.npy --v b_v.npy --o b_o.npy",
       "b_k_2d.npy: K has shape (54, 4), Q has (2, 3, 12, 4): give them the same leading "
       "dimensions",
       4},
      {"--q b_5d.npy --k b_k.npy --v b_v.npy --o b_o.npy", "5 dimensions", 4},
  };
  for (const Case& c : cases) {
    const Run r = run("check " + c.args);
    INFO(c.args << " | " << r.err);
    CHECK(r.code == c.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, c.message));
  }
}

// Gradients whose only mistake is in D (rowsum(dO * dO) instead of rowsum(dO * O)): dV passes,
// dQ and dK fail with no diagnosis of their own, and check places the bug in dS = P (dP - D).
TEST_CASE("check: dV right, dQ and dK wrong points at dS; the tiles replayed are named") {
  using fd::Mat;
  const fd::index_t n = 24, m = 20, d = 5;
  fd::TorchGenerator gen(23);
  const Mat<double> Q = gen.randn_matrix<double>(n, d), K = gen.randn_matrix<double>(m, d),
                    V = gen.randn_matrix<double>(m, d), dO = gen.randn_matrix<double>(n, d);
  for (const auto& [name, X] : {std::pair{"ds_q.npy", &Q}, std::pair{"ds_k.npy", &K},
                                std::pair{"ds_v.npy", &V}, std::pair{"ds_do.npy", &dO}})
    fd::write_npy(name, *X);
  const fd::AttnParams params{false, fd::CausalAlign::top_left, {}};
  const auto f = fd::flash_forward(Q, K, V, params, {8, 8});
  const auto g = fd::flash_backward(Q, K, V, f, dO, params, {8, 8});
  const double s = params.scale_for(d);
  // dS with D = rowsum(dO * dO), entry by entry (small: plain loops), then dQ = s dS K and
  // dK = s dS^T Q.
  Mat<double> dQ = Mat<double>::Zero(n, d), dK = Mat<double>::Zero(m, d);
  for (fd::index_t i = 0; i < n; ++i)
    for (fd::index_t j = 0; j < m; ++j) {
      const double P = std::exp(s * Q.row(i).dot(K.row(j)) - f.L(i));
      const double dS = P * (dO.row(i).dot(V.row(j)) - dO.row(i).squaredNorm());  // D wrong
      dQ.row(i) += s * dS * K.row(j), dK.row(j) += s * dS * Q.row(i);
    }
  fd::write_npy("ds_dq.npy", dQ);
  fd::write_npy("ds_dk.npy", dK);
  fd::write_npy("ds_dv.npy", g.dV);
  const Run r = run(
      "check --q ds_q.npy --k ds_k.npy --v ds_v.npy --do ds_do.npy --dq ds_dq.npy --dk ds_dk.npy "
      "--dv ds_dv.npy");
  CHECK(r.code == 1);
  CHECK(has(r.out,
            "hint: dV passes but dQ and dK fail: the step they share and dV does not is "
            "dS = P (dP - D)"));
  CHECK(has(r.out,
            "(the tiled mistakes were replayed at tiles 16x16, 32x32, 64x64, 128x128, 16x24:"));
  const Run mine =
      run("check --q ds_q.npy --k ds_k.npy --v ds_v.npy --do ds_do.npy --dq ds_dq.npy --block-q 8 "
          "--block-k 12");
  CHECK(has(mine.out, "replayed at tiles 8x12, 16x16, 32x32"));
  for (const auto& line : lines(r.out)) CHECK(columns(line) <= 100);
  // The student's O at 8 x 8 tiles without the rescale: found once the tiles are given.
  const auto broken = fd::flash_forward(Q, K, V, params, {8, 8}, nullptr,
                                        fd::Variant{fd::Precision::fp64, fd::Mistake::no_rescale});
  fd::write_npy("ds_o.npy", broken.O);
  const std::string o = "check --q ds_q.npy --k ds_k.npy --v ds_v.npy --o ds_o.npy";
  CHECK_FALSE(has(run(o).out, "rescale"));
  CHECK(has(run(o + " --block-q 8 --block-k 8").out, "rescale"));
}
