// test_benchmark.cpp — the mechanics `bench` and `ladder` share (benchmark.hpp): FLOPs as
// FlashAttention's benchmarks count them, inputs stored in bf16/fp16 when asked, verification in
// the case's precision (a right answer passes, a wrong one fails and nothing is timed), the times,
// and the time budget that cuts a slow kernel's runs.
#include <doctest/doctest.h>

#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "flashdemo/tools/benchmark.hpp"

using namespace fd;

TEST_CASE("bench: FLOPs are 4 b h n m d, halved when causal with n == m, 2.5x for the backward") {
  bench::Case c;
  c.b = 2, c.h = 3, c.n = 128, c.m = 128, c.d = 64;
  CHECK(bench::flops(c) == 4.0 * 2 * 3 * 128 * 128 * 64);
  c.causal = true;
  CHECK(bench::flops(c) == 2.0 * 2 * 3 * 128 * 128 * 64);
  c.m = 100;  // n != m: the mask is not halved
  CHECK(bench::flops(c) == 4.0 * 2 * 3 * 128 * 100 * 64);
  c.pass = bench::Pass::bwd;
  CHECK(bench::flops(c) == 2.5 * 4.0 * 2 * 3 * 128 * 100 * 64);
}

TEST_CASE("bench: the pass is named as --pass and the JSON name it") {
  CHECK(std::string(bench::pass_name(bench::Pass::fwd)) == "fwd");
  CHECK(std::string(bench::pass_name(bench::Pass::bwd)) == "bwd");
}

TEST_CASE("bench: bf16 and fp16 inputs are stored in that format; fp32 ones are not rounded") {
  bench::Case c;
  c.n = c.m = 32, c.d = 8;
  const auto f32 = bench::random_arrays<float>(c);
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    c.precision = p;
    const auto low = bench::random_arrays<float>(c);
    REQUIRE(low.Q.size() == f32.Q.size());
    bool differs = false;
    for (std::size_t k = 0; k < low.Q.size(); ++k) {
      CHECK(low.Q[k] == round_to(p, f32.Q[k]));
      CHECK(low.dO[k] == round_to(p, f32.dO[k]));
      differs = differs || low.Q[k] != f32.Q[k];
    }
    CHECK(differs);
  }
}

TEST_CASE("bench: the CPU paths verify by the rule in their precision; a wrong O fails, untimed") {
  for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    for (bench::Pass pass : {bench::Pass::fwd, bench::Pass::bwd}) {
      bench::Case c;
      c.b = 2, c.h = 1, c.n = 70, c.m = 50, c.d = 16, c.causal = true, c.pass = pass;
      c.precision = p;
      INFO(std::string(precision_name(p)) << (pass == bench::Pass::bwd ? " bwd" : " fwd"));
      const auto a = bench::random_arrays<float>(c);
      // The reference's own low-precision backward forms D from its stored P and dP, which the
      // sampled key rows cannot (they take D from O): bench refuses it, so it is not run here.
      const bool reference = pass == bench::Pass::fwd || p == Precision::fp32;
      for (bench::CpuImpl impl : {bench::CpuImpl::reference, bench::CpuImpl::tiled}) {
        if (impl == bench::CpuImpl::reference && !reference) continue;
        const auto m = bench::measure(c, a, bench::cpu_runner(c, impl, 1, a), 1, 3);
        INFO(int(impl) << " " << m.verdict.worst << " " << m.verdict.err << " " << m.verdict.bound);
        CHECK(m.verdict.pass);
        CHECK(m.timed);
        CHECK(m.times.reps == 3);
        CHECK(m.times.min_ms <= m.times.median_ms);
        CHECK(m.times.median_ms <= m.times.max_ms);
        CHECK(m.tflops > 0);
        CHECK(m.verdict.rows >= 16);
      }
      bench::Runner<float> wrong = bench::cpu_runner(c, bench::CpuImpl::tiled, 1, a);
      const auto right = wrong.forward;
      wrong.forward = [right](bench::Outputs<float>& out) {
        right(out);
        out.O.back() += 0.5f;  // the last head's last row: sampled, and wrong
      };
      const auto m = bench::measure(c, a, wrong, 1, 3);
      CHECK_FALSE(m.verdict.pass);
      CHECK_FALSE(m.timed);
      CHECK(m.verdict.worst == "O");
    }
  }
}

TEST_CASE("bench: a device that times itself is asked for its times, after verification") {
  bench::Case c;
  c.n = c.m = 20, c.d = 4;
  const auto a = bench::random_arrays<double>(c);
  bench::Runner<double> r = bench::cpu_runner(c, bench::CpuImpl::tiled, 1, a);
  int asked = 0;
  r.device_times = [&](index_t warmup, index_t reps) {
    ++asked;
    CHECK(warmup == 3);
    return std::vector<double>(std::size_t(reps), 2.0);
  };
  const auto m = bench::measure(c, a, r, 3, 4);
  CHECK(asked == 1);
  CHECK(m.times.median_ms == 2.0);
  CHECK(m.times.reps == 4);
  CHECK(m.tflops == doctest::Approx(bench::flops(c) / 2e-3 / 1e12));
  const auto t = bench::summarize({5.0, 1.0, 3.0, 2.0});
  CHECK(t.median_ms == 3.0);  // the upper median of an even count, as bench has always taken
  CHECK(t.min_ms == 1.0);
  CHECK(t.max_ms == 5.0);
  CHECK(t.ms == std::vector<double>{5.0, 1.0, 3.0, 2.0});  // every run's, in the order they ran
}

TEST_CASE("bench: a time budget cuts the warm-up and reps of a slow kernel, 3 reps at least") {
  index_t warmup = 3, reps = 20;
  bench::fit_to_budget(0.01, 3.0, warmup, reps);  // 23 runs of 10 ms: within 3 s, as asked
  CHECK((warmup == 3 && reps == 20));
  bench::fit_to_budget(0.5, 3.0, warmup, reps);  // 23 runs of 0.5 s: 6 runs, no warm-up
  CHECK((warmup == 0 && reps == 6));
  warmup = 3, reps = 20;
  bench::fit_to_budget(6.5, 3.0, warmup, reps);  // one run past the budget: 3 runs still
  CHECK((warmup == 0 && reps == bench::kMinBudgetReps));
  warmup = 1, reps = 2;
  bench::fit_to_budget(6.5, 3.0, warmup, reps);  // fewer asked than the least: as asked
  CHECK((warmup == 0 && reps == 2));
  warmup = 3, reps = 20;
  bench::fit_to_budget(6.5, 0, warmup, reps);  // no budget: as asked
  CHECK((warmup == 3 && reps == 20));

  // measure judges by the verification run of the timed pass: the backward's, not the forward's
  bench::Case c;
  c.n = c.m = 20, c.d = 4, c.pass = bench::Pass::bwd;
  const auto a = bench::random_arrays<double>(c);
  bench::Runner<double> r = bench::cpu_runner(c, bench::CpuImpl::tiled, 1, a);
  const auto backward = r.backward;
  r.backward = [backward](bench::Outputs<double>& out) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    backward(out);
  };
  index_t asked_warmup = -1, asked_reps = -1;
  r.device_times = [&](index_t w, index_t n) {
    asked_warmup = w, asked_reps = n;
    return std::vector<double>(std::size_t(n), 40.0);
  };
  const auto m = bench::measure(c, a, r, 3, 20, {}, 0.1);  // 23 runs of 40 ms: past 0.1 s
  CHECK(m.timed);
  CHECK(asked_warmup == 0);
  CHECK(asked_reps == bench::kMinBudgetReps);  // 0.1 s / 40 ms = 2: the least, 3
  CHECK(m.times.reps == std::size_t(bench::kMinBudgetReps));
  bench::measure(c, a, r, 3, 20);  // no budget: as asked
  CHECK((asked_warmup == 3 && asked_reps == 20));
}

TEST_CASE("bench: the parallel read reads the bytes asked for, in whole words, at some speed") {
  for (index_t threads : {1, 2}) {
    const bench::ReadBandwidth r = bench::read_bandwidth(1e6 + 3, threads, 3);
    CHECK(r.bytes == 125000.0 * 8);  // 1e6 + 3 bytes: 125,000 words of 8
    CHECK(r.median_ms > 0);
    CHECK(r.gbps == doctest::Approx(r.bytes / (r.median_ms * 1e6)));
  }
}
