// test_rungs.cpp — the GPU rungs (--impl simt, tc, mma, hopper) of forward, backward and bench:
// every case a rung cannot run refused in one line, exit 2; without a GPU, exit 5.
#include <doctest/doctest.h>

#include <string>
#include <utility>

#include "runner.hpp"

using namespace cli;

// The GPU rungs simt, tc, mma, hopper: every case they cannot run is refused before any work, one
// line, exit 2, whatever the machine (the backward runs on teaching, mma and hopper only: simt and
// tc refuse it); a case they can run needs a GPU (exit 5 without one), never a crash.
TEST_CASE("--impl simt, tc, mma, hopper: refused where they cannot run; without a GPU, exit 5") {
  struct Bad {
    std::string args, names;
    int code;
  };
  const std::string f = "forward --device cuda ", b = "bench --device cuda ";
  const Bad refused[] = {
      {"forward --impl simt", "--impl simt is a GPU kernel: it runs on --device cuda", 2},
      {"forward --impl mma --dtype bf16 --d 64", "--impl mma is a GPU kernel", 2},
      {"backward --impl tc", "--impl tc is a GPU kernel", 2},
      {f + "--impl simt --d 64", "--impl simt computes in fp32: use --dtype fp32", 2},
      {f + "--impl simt --d 64 --dtype bf16", "--impl simt computes in fp32", 2},
      {f + "--impl tc --d 64 --dtype fp32", "--impl tc runs on tensor cores: use --dtype bf16", 2},
      {f + "--impl mma --d 64", "--impl mma runs on tensor cores", 2},
      {f + "--impl mma --dtype bf16", "--impl mma is compiled for d = 64 and 128, not d = 32", 2},
      {f + "--impl simt --dtype fp32 --d 96", "not d = 96", 2},
      // The backward runs on teaching, mma and hopper: simt and tc refuse it first, for any d or
      // dtype.
      {"backward --device cuda --impl tc --dtype bf16",  // the lecture's d = 16: still this reason
       "--impl tc computes the forward only: the backward runs on --impl mma or hopper (bf16, "
       "fp16) or "
       "--impl teaching",
       2},
      {"backward --device cuda --impl simt",
       "--impl simt computes the forward only: the backward runs on --impl mma or hopper", 2},
      {"backward --device cuda --impl simt --dtype fp32 --d 64", "--impl simt computes the forward",
       2},
      {"backward --device cuda --impl tc --dtype fp16 --d 128 --block-q 32",
       "--impl tc computes the forward only", 2},
      // mma's backward: bf16/fp16, d = 64 or 128, its own 64 x 64 tiles, no tile trace.
      {"backward --device cuda --impl mma", "--impl mma runs on tensor cores: use --dtype bf16", 2},
      {"backward --device cuda --impl mma --dtype fp32 --d 64", "--impl mma runs on tensor cores",
       2},
      {"backward --device cuda --impl mma --dtype bf16", "not d = 16", 2},  // the lecture's d
      {"backward --device cuda --impl mma --dtype bf16 --d 64 --block-q 128",
       "--impl mma computes fixed 64 x 64 tiles", 2},
      {"backward --device cuda --impl mma --dtype bf16 --d 64 --trace tiles",
       "--trace tiles: the GPU kernels of --impl mma record no backward trace", 2},
      {"backward --device cuda --impl mma --dtype fp16 --d 128 --trace rows --json",
       "--trace rows: the GPU kernels of --impl mma record no backward trace", 2},
      {"backward --device cuda --impl mma --dtype bf16 --d 64 --break no-max",
       "--break runs on the CPU", 2},
      {f + "--impl mma --dtype bf16 --d 64 --block-q 32", "--impl mma computes fixed ", 2},
      {f + "--impl tc --dtype bf16 --d 64 --block-q 32", "--impl tc computes fixed 64 x 64", 2},
      {f + "--impl tc --dtype fp16 --d 128 --block-k 128", "--impl tc computes fixed 64 x 64", 2},
      {f + "--impl tc --dtype bf16 --d 64 --break no-max", "--break runs on the CPU", 2},
      {"forward --impl warp", "--impl", 2},
      {"bench --impl mma", "--impl mma does not run on --device cpu", 2},
      {b + "--impl tiled",
       "--impl tiled does not run on --device cuda (choose teaching, simt, tc, mma, hopper)", 2},
      {b + "--impl tc", "--impl tc runs on tensor cores", 2},
      {b + "--impl mma --dtype bf16 --d 32", "not d = 32", 2},
      {b + "--impl simt --dtype fp64", "--impl simt computes in fp32", 2},
      {b + "--impl simt --pass bwd",
       "--impl simt computes the forward only: the backward runs on --impl mma or hopper", 2},
      {b + "--impl tc --pass bwd --dtype bf16", "--impl tc computes the forward only", 2},
      {b + "--impl simt --pass bwd --dtype fp64", "--impl simt computes the forward only", 2},
      {b + "--impl mma --pass bwd", "--impl mma runs on tensor cores", 2},
      {b + "--impl mma --pass bwd --dtype bf16 --d 32", "not d = 32", 2},
      // hopper: the forward on sm_90's own instructions, bf16/fp16, d = 64, 128 or 256, 192 x 128
      // tiles at d = 64 (three consumer warpgroups) where they pay (problem_tiles), 128 x 64 at
      // d = 256, else 128 x 128
      {f + "--impl hopper --d 64", "--impl hopper runs on tensor cores: use --dtype bf16", 2},
      {f + "--impl hopper --dtype fp16", "--impl hopper is compiled for d = 64, 128 and 256", 2},
      {f + "--impl hopper --dtype bf16 --d 256 --block-k 128",
       "--impl hopper computes fixed 128 x 64 tiles", 2},
      {f + "--impl hopper --dtype bf16 --d 64 --n 4096 --block-q 64",
       "--impl hopper computes fixed 192 x 128 tiles", 2},
      // at the default n = 100, Br = 128: one tile of 192 computes 1.5x the rows of one of 128
      {f + "--impl hopper --dtype bf16 --d 64 --block-q 64",
       "--impl hopper computes fixed 128 x 128 tiles", 2},
      {f + "--impl hopper --dtype bf16 --d 128 --block-k 64",
       "--impl hopper computes fixed 128 x 128 tiles", 2},
      // at d = 64, n = 1024 causal, Br = 128: 192's padding would cost more (problem_tiles)
      {f + "--impl hopper --dtype bf16 --d 64 --n 1024 --causal --block-q 64",
       "--impl hopper computes fixed 128 x 128 tiles", 2},
      {"backward --device cuda --impl hopper --d 64",
       "--impl hopper runs on tensor cores: use --dtype bf16", 2},
      {b + "--impl hopper --pass bwd --dtype bf16 --d 96",
       "--impl hopper is compiled for d = 64 and 128, not d = 96", 2},
      {b + "--impl hopper --pass bwd --dtype bf16 --d 256",
       "--impl hopper is compiled for d = 64 and 128, not d = 256", 2},
      {"backward --device cuda --impl hopper --dtype bf16 --d 128 --block-q 128",
       "--impl hopper computes fixed 64 x 128 tiles", 2},
  };
  for (const Bad& x : refused) {
    const Run r = run(x.args);
    INFO(x.args << " | " << r.err);
    CHECK(r.code == x.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, x.names));
  }
  // With --q, hopper's tiles come from the files' shape (n = m = 1000, d = 64: Br = 192, or 128
  // when causal: problem_tiles), checked once the files are read, before any GPU is asked for.
  write_inputs(1000, 1000, 64);
  for (const auto& [extra, tiles] :
       {std::pair<std::string, std::string>{"", "192 x 128"},
        std::pair<std::string, std::string>{" --causal", "128 x 128"}}) {
    const Run r = run(f + "--impl hopper --dtype bf16 " + kQKV + extra + " --block-q 64");
    INFO(r.err);
    CHECK(r.code == 2);
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, "--impl hopper computes fixed " + tiles + " tiles"));
  }
  // The same reasons in Chinese.
  const Run zh = run(f + "--impl mma --d 64 --lang zh");
  CHECK(zh.code == 2);
  CHECK(has(zh.err, "张量核心"));
  CHECK(has(run(f + "--impl simt --d 64 --lang zh").err, "以 fp32 计算"));
  CHECK(has(run(f + "--impl tc --dtype bf16 --lang zh").err, "不支持 d = 32"));
  for (const char* args : {"backward --device cuda --impl tc --dtype bf16 --lang zh",
                           "bench --device cuda --impl simt --pass bwd --lang zh"}) {
    const Run r = run(args);
    INFO(args << " | " << r.err);
    CHECK(r.code == 2);
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, "只计算前向：反向请用 --impl mma 或 hopper"));
  }
  CHECK(
      has(run("backward --device cuda --impl mma --dtype bf16 --d 64 --trace tiles --lang zh").err,
          "不记录反向跟踪"));
  // With --q, --k, --v the files' d decides.
  write_inputs(8, 8, 3);
  const Run d3 = run(f + "--impl mma --dtype bf16 " + kQKV);
  CHECK(d3.code == 2);
  CHECK(has(d3.err, "not d = 3"));
  CHECK(lines(d3.err).size() == 1);
  CHECK(run(f + "--impl mma " + kQKV).code == 2);  // fp64: refused before the files are read
  if (gpu_here()) return;                          // below: what a machine without a GPU says
  write_inputs(8, 8, 64);
  const Run d64 = run(f + "--impl tc --dtype fp16 " + kQKV);
  CHECK(d64.code == 5);
  CHECK(lines(d64.err).size() == 1);
  const std::string runnable[] = {
      f + "--impl simt --dtype fp32 --d 64",
      f + "--impl tc --dtype bf16 --d 64",
      f + "--impl mma --dtype fp16 --d 128 --causal --trace tiles",
      f + "--impl hopper --dtype bf16 --d 64 --causal --trace tiles",
      b + "--impl hopper --dtype fp16 --d 128 --json",
      f + "--impl tc --precision bf16 --d 64 --block-q 64 --block-k 64",
      f + "--impl teaching --dtype bf16",
      b + "--impl simt --d 128",
      b + "--impl tc --dtype bf16 --json",
      b + "--impl mma --dtype fp16 --d 128 --causal",
      b + "--impl teaching --dtype bf16 --pass bwd",
      // the backward on mma: accepted, so without a GPU the missing device is the reason
      "backward --device cuda --impl mma --dtype bf16 --d 64",
      "backward --device cuda --impl mma --dtype fp16 --d 128 --causal --deterministic",
      "backward --device cuda --impl mma --dtype bf16 --d 64 --block-q 64 --block-k 64",
      "backward --device cuda --impl mma --precision bf16 --d 128 --trace summary",
      b + "--impl mma --pass bwd --dtype bf16",
      b + "--impl mma --pass bwd --dtype fp16 --d 128 --causal --json",
  };
  for (const std::string& args : runnable) {
    const Run r = run(args);
    INFO(args << " | " << r.err);
    CHECK(r.code == 5);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, "--device cuda"));
  }
}
