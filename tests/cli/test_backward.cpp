// test_backward.cpp — flashdemo backward: the lecture's demo 3 (dQ, dK, dV, D against the reference
// and finite differences) and the lecture's random draws, saved with --save-q/k/v/do.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"
#include "runner.hpp"

using namespace cli;

TEST_CASE("backward reproduces the lecture's demo 3: reference and finite differences") {
  for (const char* args : {"backward", "backward --causal", "backward --dtype fp32 --causal"}) {
    const Run r = run(args);
    INFO("args: " << std::string(args));
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    CHECK(has(r.out, "Q: 70 x 16,  K, V: 70 x 16"));
    CHECK(has(r.out, "Br = 16, Bc = 16"));
    for (const char* g : {"max |dQ - dQ_ref|", "max |dK - dK_ref|", "max |dV - dV_ref|",
                          "max |D - D_ref|", "dQ(0,0)", "dK(35,8)", "dV(69,15)"})
      CHECK(has(r.out, g));
    CHECK_FALSE(has(r.out, "FAIL"));
    CHECK_FALSE(has(r.out, "nan"));
    for (const auto& line : lines(r.out)) CHECK(columns(line) <= 100);
  }
  CHECK(has(run("backward").out, "naive fp64"));
  const Run tiles = run("backward --causal --trace tiles --n 40");
  CHECK(has(tiles.out, "→ key tile 2 done: dK and dV of keys 32-39 are final"));
  const Run rows =
      run("backward --n 8 --m 3 --d 2 --causal --causal-align bottom-right "
          "--trace rows --block-q 4 --block-k 2");
  REQUIRE(rows.code == 0);
  CHECK(has(rows.out, "D = "));
  CHECK_FALSE(has(rows.out, "nan"));
}

// The lecture's backward loop draws fresh Q, K, V for causal=True: the second triple of the stream.
TEST_CASE("backward --causal uses the lecture's second draw; --save-q/k/v/do write what it used") {
  REQUIRE(run("backward --n 7 --d 3 --save-q bq.npy --save-do bdo.npy --trace none").code == 0);
  REQUIRE(run("backward --n 7 --d 3 --causal --save-q cq.npy --save-k ck.npy --save-v cv.npy "
              "--trace none")
              .code == 0);
  fd::TorchGenerator gen(0);
  std::vector<std::vector<double>> draws;  // Q, K, V, then Q, K, V again: one call each
  for (int k = 0; k < 6; ++k) draws.push_back(gen.randn(7 * 3));
  const fd::NpyArray bq = fd::read_npy("bq.npy"), cq = fd::read_npy("cq.npy"),
                     ck = fd::read_npy("ck.npy"), cv = fd::read_npy("cv.npy");
  REQUIRE(cq.data.size() == 21);
  for (std::size_t k = 0; k < 21; ++k) {
    CHECK(bq.data[k] == doctest::Approx(draws[0][k]).epsilon(1e-6));
    CHECK(cq.data[k] == doctest::Approx(draws[3][k]).epsilon(1e-6));
    CHECK(ck.data[k] == doctest::Approx(draws[4][k]).epsilon(1e-6));
    CHECK(cv.data[k] == doctest::Approx(draws[5][k]).epsilon(1e-6));
  }
  CHECK(fd::read_npy("bdo.npy").shape == std::vector<fd::index_t>{7, 3});
}

// The backward from a forward's own O and L (--o, --lse): judged first against the reference
// forward, then used (P from that L, D from that O); a wrong L makes the gradients fail.
TEST_CASE("backward --o --lse starts from the given O and L") {
  write_inputs(30, 22, 6);
  const std::string causal = " --causal --causal-align bottom-right --do in_do.npy";
  REQUIRE(run("forward " + kQKV +
              " --causal --causal-align bottom-right --save-o fo.npy "
              "--save-lse fl.npy --quiet")
              .code == 0);
  const Run ok = run("backward " + kQKV + causal + " --o fo.npy --lse fl.npy");
  CHECK(ok.code == 0);
  CHECK(ok.err.empty());
  CHECK(has(ok.out, "Your O and L (--o fo.npy, --lse fl.npy) against the reference forward"));
  CHECK(has(ok.out, "P = exp(S - L) with your L"));
  CHECK_FALSE(has(ok.out, "FAIL"));
  const Run same = run("backward " + kQKV + causal + " --save-dq a.npy --quiet");
  const Run from =
      run("backward " + kQKV + causal + " --o fo.npy --lse fl.npy --save-dq b.npy --quiet");
  REQUIRE(same.code == 0);
  REQUIRE(from.code == 0);
  // The run's own O and L, given back: the same dQ but for L's low part (L + L_lo is m + log l to
  // twice fp64's precision in the run; a file holds L alone).
  const fd::NpyArray a = fd::read_npy("a.npy"), b = fd::read_npy("b.npy");
  REQUIRE(a.data.size() == b.data.size());
  for (std::size_t k = 0; k < a.data.size(); ++k) CHECK(std::abs(a.data[k] - b.data[k]) < 1e-14);

  // L off by 0.5 in row 20 (rows 0-7 see no key: L = -inf there): L fails, and so do the
  // gradients computed from it.
  fd::NpyArray L = fd::read_npy("fl.npy");
  L.data[20] += 0.5;
  fd::write_npy("fl_bad.npy", L.data.data(), L.shape);
  const Run bad = run("backward " + kQKV + causal + " --o fo.npy --lse fl_bad.npy");
  CHECK(bad.code == 1);
  CHECK(has(bad.out, "FAIL"));
  // Usage and file problems: one line, nothing written.
  struct Case {
    std::string args;
    int code;
  };
  fd::write_npy("fl_2d.npy", L.data.data(), std::vector<fd::index_t>{2, 15});
  const Case cases[] = {{kQKV + " --o fo.npy", 2},
                        {"--lse fl.npy --o fo.npy", 2},
                        {kQKV + " --o fo.npy --lse fl_2d.npy", 4},
                        {kQKV + " --o in_k.npy --lse fl.npy", 4}};
  for (const Case& c : cases) {
    const Run r = run("backward " + c.args);
    INFO(c.args << " | " << r.err);
    CHECK(r.code == c.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
  }
  CHECK(has(run("backward " + kQKV + " --o fo.npy --lse fl_2d.npy").err,
            "fl_2d.npy: L has shape (2, 15), expected (30,) or (30, 1)"));
}

// A batch as an assignment saves it, (b, h, n, d): forward and backward compute, judge and save
// every head, the outputs keep the leading dimensions, and each head is the one-head run's.
TEST_CASE("forward and backward run a batch of heads; the outputs keep its leading dimensions") {
  const fd::index_t b = 2, h = 3, n = 12, m = 9, d = 4;
  const BatchFiles f = write_batch(b, h, n, m, d);
  const std::vector<fd::index_t> qs{b, h, n, d}, ks{b, h, m, d}, ls{b, h, n};
  const Run fwd = run("forward " + kBatchQKV + " --save-o bf_o.npy --save-lse bf_l.npy");
  REQUIRE(fwd.code == 0);
  CHECK(fwd.err.empty());
  CHECK(has(fwd.out, "batch: 6 heads (2, 3), each computed, judged and saved; the steps below"));
  CHECK(has(fwd.out, "Every head (6 heads of (2, 3))"));
  CHECK(has(fwd.out, "heads: 6 of 6 pass"));
  for (const auto& line : lines(fwd.out)) CHECK(columns(line) <= 100);
  const fd::NpyArray O = fd::read_npy("bf_o.npy"), L = fd::read_npy("bf_l.npy");
  CHECK(O.shape == qs);
  CHECK(L.shape == ls);
  REQUIRE(O.data.size() == f.O.size());
  for (std::size_t k = 0; k < O.data.size(); ++k) CHECK(std::abs(O.data[k] - f.O[k]) < 1e-12);

  // Head (1, 2) alone, as a one-head run: the batch's slice, bit for bit.
  const std::size_t head = 1 * h + 2;
  auto slice = [&](const std::vector<double>& x, fd::index_t rows) {
    return std::vector<double>(x.begin() + std::ptrdiff_t(head * rows * d),
                               x.begin() + std::ptrdiff_t((head + 1) * rows * d));
  };
  const std::vector<double> q1 = slice(f.Q, n), k1 = slice(f.K, m), v1 = slice(f.V, m),
                            do1 = slice(f.dO, n);
  fd::write_npy("h_q.npy", q1.data(), n, d), fd::write_npy("h_k.npy", k1.data(), m, d);
  fd::write_npy("h_v.npy", v1.data(), m, d), fd::write_npy("h_do.npy", do1.data(), n, d);
  const std::string one =
      "--q h_q.npy --k h_k.npy --v h_v.npy --causal --causal-align bottom-right --do h_do.npy";
  REQUIRE(run("forward " + one.substr(0, one.find(" --do")) + " --save-o h_o.npy --quiet").code ==
          0);
  const fd::NpyArray O1 = fd::read_npy("h_o.npy");
  for (std::size_t k = 0; k < O1.data.size(); ++k)
    CHECK(O1.data[k] == O.data[head * std::size_t(n * d) + k]);

  // The backward from the batch's own O and L, graded by check in one call.
  const std::string grads = " --save-dq bb_dq.npy --save-dk bb_dk.npy --save-dv bb_dv.npy";
  const Run bwd = run("backward " + kBatchQKV + " --do b_do.npy --o bf_o.npy --lse bf_l.npy" +
                      grads + " --save-do bb_do.npy");
  REQUIRE(bwd.code == 0);
  CHECK(has(bwd.out, "(for all 6 heads of the batch)"));
  CHECK(has(bwd.out, "heads: 6 of 6 pass"));
  CHECK(fd::read_npy("bb_dq.npy").shape == qs);
  CHECK(fd::read_npy("bb_dk.npy").shape == ks);
  CHECK(fd::read_npy("bb_do.npy").shape == qs);
  const Run graded = run("check " + kBatchQKV +
                         " --do b_do.npy --o bf_o.npy --lse bf_l.npy --dq bb_dq.npy "
                         "--dk bb_dk.npy --dv bb_dv.npy");
  CHECK(graded.code == 0);
  CHECK(has(graded.out, "5 of 5 arrays pass."));
  // Each head's gradients from its own forward (no --o, --lse: L keeps its low part) are the
  // one-head run's, bit for bit.
  REQUIRE(run("backward " + kBatchQKV + " --do b_do.npy --save-dk b0_dk.npy --quiet").code == 0);
  const Run bwd1 = run("backward " + one + " --save-dk h_dk.npy --quiet");
  REQUIRE(bwd1.code == 0);
  const fd::NpyArray dK = fd::read_npy("b0_dk.npy"), dK1 = fd::read_npy("h_dk.npy");
  for (std::size_t k = 0; k < dK1.data.size(); ++k)
    CHECK(dK1.data[k] == dK.data[head * std::size_t(m * d) + k]);

  // Head (1, 1)'s L off in row 5: that head fails, is named, and nothing is written.
  std::vector<double> Lbad = L.data;
  Lbad[std::size_t((1 * h + 1) * n + 5)] += 0.5;
  fd::write_npy("bf_l_bad.npy", Lbad.data(), ls);
  std::remove("bb_dq.npy");
  const Run bad =
      run("backward " + kBatchQKV + " --do b_do.npy --o bf_o.npy --lse bf_l_bad.npy" + grads);
  CHECK(bad.code == 1);
  CHECK(has(bad.out, "heads: 5 of 6 pass"));
  CHECK(has(bad.out, "the first failing head is (1, 1)"));
  CHECK(slurp("bb_dq.npy").empty());
  // L saved with keepdim=True, (b, h, n, 1): read as (b, h, n).
  fd::write_npy("bf_l_col.npy", L.data.data(), std::vector<fd::index_t>{b, h, n, 1});
  CHECK(run("backward " + kBatchQKV + " --do b_do.npy --o bf_o.npy --lse bf_l_col.npy --quiet")
            .code == 0);
  const auto events = json_lines(run("forward " + kBatchQKV + " --json").out);
  REQUIRE(events.size() >= 2);
  CHECK(events.front()["batch"] == nlohmann::json::array({2, 3}));
  CHECK(events.back()["heads"] == 6);
  CHECK(events.back()["heads_passed"] == 6);
  CHECK(events.back()["first_failing_head"].is_null());

  // Arrays that do not fit the batch: one line naming both shapes, exit 4, nothing written.
  fd::write_npy("bf_l_short.npy", f.L.data(), std::vector<fd::index_t>{b, h - 1, n});
  std::vector<double> Lnan = L.data;
  Lnan[std::size_t((1 * h + 2) * n + 5)] = std::nan("");
  fd::write_npy("bf_l_nan.npy", Lnan.data(), ls);
  fd::write_npy("b_k_2d.npy", f.K.data(), std::vector<fd::index_t>{b * h * m, d});
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"backward " + kBatchQKV + " --o bf_o.npy --lse bf_l_short.npy",
       "bf_l_short.npy: L has shape (2, 2, 12), expected (2, 3, 12)"},
      {"forward --q b_q.npy --k b_k_2d.npy --v b_v.npy",
       "b_k_2d.npy: K has shape (54, 4), Q has (2, 3, 12, 4)"},
      {"backward " + kBatchQKV + " --do h_do.npy", "h_do.npy: dO has shape (12, 4), Q has"},
      {"backward " + kBatchQKV + " --o bf_o.npy --lse bf_l_nan.npy",
       "bf_l_nan.npy: element (1, 2, 5) is nan"},
      {"forward --q h_q.npy --k b_k.npy --v b_v.npy", "b_k.npy: K has shape (2, 3, 9, 4), Q has"},
  };
  for (const Case& c : cases) {
    const Run r = run(c.args + " --save-o never.npy");
    INFO(c.args << " | " << r.err);
    CHECK(r.code == 4);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, c.message));
    CHECK(slurp("never.npy").empty());
  }
}
