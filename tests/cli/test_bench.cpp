// test_bench.cpp — flashdemo bench: verified only with what was verified, bf16/fp16 on the teaching
// path, the GEMM ceiling.
#include <doctest/doctest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "runner.hpp"

using namespace cli;

namespace {

// The share of the GEMM ceiling a bench table reports, or -1 when it says the GEMM was slower than
// the run (then no ceiling: no share above 100 % is ever printed).
double share_of_ceiling(const std::string& out) {
  const std::string said = "GEMM ceiling in the same run: ";
  const auto at = out.find(said);
  if (at == std::string::npos) return has(out, "slower than this run") ? -1 : -2;
  const auto is = out.find("this is ", at);
  return is == std::string::npos ? -2 : std::stod(out.substr(is + 8));
}

}  // namespace

// bench reports the error it checked; gemm verifies two rows of its product and says so.
TEST_CASE("bench --json: verified only with what was verified") {
  const Run g = run("bench --impl gemm --n 64 --d 16 --reps 1 --json");
  REQUIRE(g.code == 0);
  const auto j = nlohmann::json::parse(g.out);
  CHECK(j["verified"] == true);
  CHECK(j["verified_rows"] == 2);
  CHECK(j["max_error"].get<double>() <= j["error_bound"].get<double>());
  const Run f = run("bench --impl fast --n 100 --d 16 --reps 1 --json --pass bwd --causal");
  REQUIRE(f.code == 0);
  const auto k = nlohmann::json::parse(f.out);
  CHECK(k["verified_rows"].get<int>() >= 16);
  CHECK(k["max_error"].get<double>() <= k["error_bound"].get<double>());
}

// --dtype bf16|fp16 on bench: the CPU teaching path emulated, verified in that precision, and the
// JSON says which; the paths that have no low precision refuse it.
TEST_CASE("bench --dtype bf16 and fp16: the teaching path emulated, judged in that precision") {
  for (const char* p : {"bf16", "fp16"}) {
    for (const std::string args : {"--n 64 --d 16", "--n 70 --m 50 --d 8 --causal --pass bwd",
                                   "--impl reference --n 40 --d 8 --b 2"}) {
      const Run r = run("bench " + args + " --reps 1 --json --dtype " + p);
      INFO(args << " " << p << " | " << r.err);
      REQUIRE(r.code == 0);
      const auto j = nlohmann::json::parse(r.out);
      CHECK(j["dtype"] == p);
      CHECK(j["device"] == "cpu");
      CHECK(j["verified"] == true);
      CHECK(j["max_error"].get<double>() <= j["error_bound"].get<double>());
      CHECK(j["error_bound"].get<double>() > 1e-4);  // a bf16/fp16 bound, not an fp32 one
    }
    const Run text = run(std::string("bench --n 64 --d 16 --reps 1 --dtype ") + p);
    CHECK(text.code == 0);
    CHECK(has(text.out, std::string(" ") + p + " "));
  }
  struct Bad {
    std::string args, names;
  };
  const Bad bad[] = {
      {"bench --impl fast --dtype bf16", "--impl fast takes --dtype fp32 or fp64"},
      {"bench --impl gemm --dtype fp16", "--impl gemm takes --dtype fp32 or fp64"},
      {"bench --impl reference --dtype bf16 --pass bwd", "--impl reference takes --dtype fp32"},
      {"bench --dtype bf15", "--dtype"},
  };
  for (const Bad& b : bad) {
    const Run r = run(b.args);
    INFO(b.args << " | " << r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, b.names));
  }
}

TEST_CASE("bench: the GEMM ceiling is measured where a GEMM is fast, on the case's threads") {
  for (const char* impl : {"tiled", "fast"}) {
    for (const char* n : {"64", "256"}) {
      const Run r =
          run(std::string("bench --impl ") + impl + " --n " + n + " --reps 2 --threads 1");
      INFO(impl << " n = " << n << "\n" << r.out);
      REQUIRE(r.code == 0);
      const double share = share_of_ceiling(r.out);
      CHECK(share >= -1);
      CHECK(share <= 100);
      if (std::string(impl) == "tiled") CHECK(share > 0);  // the teaching path: far below
    }
  }
  const Run g = run("bench --impl gemm --n 64 --reps 1 --json");
  REQUIRE(g.code == 0);
  const auto j = nlohmann::json::parse(g.out);
  CHECK((j["gemm_side"] == 64 || j["gemm_side"] == 512));
  CHECK(j["reps"] == 5);  // the fastest of 5 runs at least
  const Run text = run("bench --impl gemm --n 256");
  CHECK(has(text.out, "square GEMMs of side k = 160 (2 k^3 FLOPs, about 2 n m d) and 512"));
}
