// test_decode.cpp — flashdemo decode: split-KV attention; options, refusals, the plan, the merge,
// JSON; --device cuda's refusals.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner.hpp"

using namespace cli;

// flashdemo decode: split-KV attention on the CPU. Its options are checked as bench's are, a
// --splits beyond the key tiles is refused naming the limit, a size too large for memory exits 3;
// a run prints the plan, the splits, the merge, the verdict and the timing; --json one object per
// split and a result.
TEST_CASE("decode: options checked, --splits beyond the key tiles refused, plan, merge, JSON") {
  const Run help = run("decode --help");
  REQUIRE(help.code == 0);
  for (const char* option : {"--b", "--h", "--n", "--m", "--d", "--splits", "--threads", "--dtype",
                             "--causal", "--causal-align", "--seed", "--scale", "--reps"})
    CHECK(has(help.out, option));
  CHECK(has(help.out, "--n INT:INT>=1=1"));
  CHECK(has(help.out, "--m INT:INT>=1=65536"));
  CHECK(has(help.out, "--d INT:INT>=1=128"));
  CHECK(has(run("--help").out, "decode"));
  CHECK(has(run("manpage").out, ".SS decode"));
  CHECK(has(run("completion bash").out, "decode"));
  struct Bad {
    std::string args, names;
    int code;
  };
  const Bad bad[] = {
      {"decode --n 0", "--n", 2},
      {"decode --m -5", "--m", 2},
      {"decode --d 1.5", "--d", 2},
      {"decode --d 257", "--d", 2},
      {"decode --splits 0", "--splits", 2},
      {"decode --splits=-2", "--splits", 2},
      {"decode --threads 0", "--threads", 2},
      {"decode --dtype bf16", "--dtype", 2},
      {"decode --causal-align middle", "--causal-align", 2},
      {"decode --seed -1", "--seed", 2},
      {"decode --scale nan", "--scale", 2},
      {"decode --reps 0", "--reps", 2},
      {"decode --b 99999999999999999999", "--b", 2},
      {"decode --impl fast", "--impl", 2},
      {"decode --m 1000 --splits 9", "--splits 9 is more than the 8 key tiles (m = 1000", 2},
      {"decode --m 16777216 --h 4096", "memory", 3},
  };
  for (const Bad& b : bad) {
    const Run r = run(b.args);
    INFO(b.args << " | " << r.err);
    CHECK(r.code == b.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, b.names));
  }
  CHECK(has(run("decode --m 1000 --splits 9 --lang zh").err, "超过了键分块数 8"));

  const Run plan = run("decode --m 1000 --d 16 --threads 2 --reps 1");
  INFO(plan.out << plan.err);
  REQUIRE(plan.code == 0);
  CHECK(has(plan.out, "key tiles: Tc = 8 of Bc = 128 keys"));
  CHECK(has(plan.out, "units U = heads x query tiles = 1 x 1 = 1,  workers W = threads = 2"));
  CHECK(has(plan.out, "eff(S) = U S / (ceil(U S / W) W), for S = 1, 2, ...: 50% 100% 75% 100%"));
  CHECK(has(plan.out, "S = 2: the smallest S with eff(S) >= 85% of the best (100%)"));
  CHECK(has(plan.out, "0      0-511"));
  CHECK(has(plan.out, "1      512-999"));
  CHECK(has(plan.out, "exp(L_s - L)"));
  CHECK(has(plan.out, "the weights of the 2 splits sum to 1.0000"));
  CHECK(has(plan.out, "max |O - O_ref| = "));
  CHECK(has(plan.out, "max |L - L_ref| = "));
  CHECK(has(plan.out, ": pass"));
  CHECK(has(plan.out, "S = 1    (no split)"));
  CHECK(has(plan.out, "a parallel read of 128.0 KB (a sum of 64-bit words, threads: 2)"));
  const Run forced = run("decode --m 1000 --d 16 --splits 8 --threads 1 --reps 1");
  CHECK(forced.code == 0);
  CHECK(has(forced.out, "S = 8: forced by --splits (eff = 100%; the plan would take S = 1)"));
  CHECK(has(forced.out, "7      896-999"));
  CHECK(has(forced.out, "S = 1 is the plan") == false);
  // A forced S beyond Smax (128) but within the key tiles: its efficiency computed, not read
  // past the plan's table (which said 0%).
  const Run many = run("decode --m 65536 --d 8 --splits 200 --threads 2 --reps 1 --json");
  REQUIRE(many.code == 0);
  const auto result = nlohmann::json::parse(lines(many.out).back());
  CHECK(result["splits"] == 200);
  CHECK(result["max_splits"] == 128);
  CHECK(result["efficiency"].get<double>() == doctest::Approx(1.0));
  CHECK(has(run("decode --m 65536 --d 8 --splits 200 --threads 2 --reps 1").out,
            "S = 200: forced by --splits (eff = 100%; the plan would take S = 2)"));
  const Run cut = run("decode --m 2000 --n 6 --d 8 --splits 16 --threads 1 --reps 1");
  CHECK(cut.code == 0);
  CHECK(has(cut.out, "(the first 8 of 16 splits and 4 of 6 rows shown; --json lists every split)"));
  const Run blind = run("decode --n 3 --m 2 --d 4 --causal --reps 1");
  CHECK(blind.code == 0);
  CHECK(has(blind.out, "1 of 3 rows see no key at all"));
  CHECK(has(blind.out, "row 0   sees no key: every L_s = -inf, every weight 0, so O = 0"));
  CHECK(has(blind.out, ": pass"));
  const Run zh = run("decode --m 1000 --d 16 --threads 2 --reps 1 --lang zh");
  CHECK(zh.code == 0);
  CHECK(has(zh.out, "计划"));

  const Run j = run("decode --m 1000 --d 16 --h 2 --n 2 --splits 4 --threads 2 --reps 1 --json");
  REQUIRE(j.code == 0);
  const std::vector<std::string> ls = lines(j.out);
  REQUIRE(ls.size() == 5);
  for (int s = 0; s < 4; ++s) {
    const auto e = nlohmann::json::parse(ls[std::size_t(s)]);
    CHECK(e["event"] == "decode_split");
    CHECK(e["split"] == s);
    CHECK(e["L"].size() == 2);
    CHECK(e["weight"].size() == 2);
  }
  CHECK(nlohmann::json::parse(ls[0])["keys"] == nlohmann::json::array({0, 256}));
  CHECK(nlohmann::json::parse(ls[3])["keys"] == nlohmann::json::array({768, 1000}));
  const auto res = nlohmann::json::parse(ls[4]);
  CHECK(res["event"] == "result");
  CHECK(res["subcommand"] == "decode");
  CHECK(res["splits"] == 4);
  CHECK(res["forced"] == true);
  CHECK(res["threads"] == 2);
  CHECK(res["units"] == 2);
  CHECK(res["heads_checked"] == nlohmann::json::array({0, 1}));
  CHECK(res["verdict_O"] == "pass");
  CHECK(res["verdict_L"] == "pass");
  CHECK(res["pass"] == true);
  CHECK(res["kv_bytes"] == 2.0 * 2 * 1000 * 16 * 4);
}

// flashdemo decode --device cuda: what only one device takes is refused in one line (exit 2) on
// every machine, before the GPU is looked for; a case the kernel runs needs a GPU (exit 5 in one
// line without one, or in a build without CUDA).
TEST_CASE("decode --device cuda: refused where it cannot run, in one line; without a GPU, exit 5") {
  CHECK(has(run("decode --help").out, "--device"));
  struct Bad {
    std::string args, names;
  };
  const Bad bad[] = {
      {"decode --dtype bf16", "--dtype bf16 runs on the GPU only (--device cuda)"},
      {"decode --device cpu --dtype fp16", "--dtype fp16 runs on the GPU only"},
      {"decode --device cuda --dtype fp64", "reads bf16, fp16 or fp32, not --dtype fp64"},
      {"decode --device cuda --d 96", "compiled for d = 64 and 128, not d = 96"},
      {"decode --device cuda --dtype bf16 --d 32", "not d = 32 (--device cpu takes any d)"},
      {"decode --device cuda --threads 4", "--threads counts CPU threads"},
      {"decode --device cuda --splits 129", "--splits 129 is more than 128"},
      {"decode --device cuda --m 1000 --splits 64",
       "--splits 64 is more than the 63 key tiles (m = 1000 in tiles of Bc = 16)"},
      {"decode --device gpu", "--device"},
  };
  for (const Bad& b : bad) {
    const Run r = run(b.args);
    INFO(b.args << " | " << r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, b.names));
  }
  CHECK(has(run("decode --device cuda --d 96 --lang zh").err, "不支持 d = 96"));
  CHECK(has(run("decode --dtype bf16 --lang zh").err, "只能在 GPU 上运行"));
  if (gpu_here()) return;  // below: what a machine without a GPU says
  for (const char* args : {"decode --device cuda", "decode --device cuda --dtype bf16 --json",
                           "decode --device cuda --dtype fp16 --d 64 --n 3 --causal --splits 7",
                           "decode --device cuda --m 1000 --lang zh"}) {
    const Run r = run(args);
    INFO(args << " | " << r.err);
    CHECK(r.code == 5);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, "--device cuda"));
  }
}
