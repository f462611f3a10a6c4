// test_precision.cpp — --precision and --dtype bf16|fp16 (forward, backward, check): the emulated
// precisions pass the 2x rule beside naive attention in the same precision, and the two
// spellings run the same thing.
#include <doctest/doctest.h>

#include <string>

#include "runner.hpp"

using namespace cli;

TEST_CASE("--precision bf16 and fp16 pass the 2x rule beside naive attention") {
  for (const char* p : {"bf16", "fp16"}) {
    for (const char* cmd : {"forward", "backward"}) {
      const Run r = run(std::string(cmd) + " --causal --trace none --precision " + p);
      INFO(cmd << " " << p);
      REQUIRE(r.code == 0);
      CHECK(has(r.out, std::string("precision: ") + p + " emulated on the CPU"));
      CHECK(has(r.out, std::string("naive ") + p));
      CHECK(has(r.out, ": pass"));
      CHECK_FALSE(has(r.out, "FAIL"));
    }
  }
}

// --dtype bf16|fp16 is the newer spelling of --precision bf16|fp16: the same run, number for
// number, JSON included; the two may be given together only when they agree.
TEST_CASE("--dtype bf16 and fp16 run exactly what --precision bf16 and fp16 run") {
  write_inputs(12, 12, 4);
  REQUIRE(run("forward " + kQKV + " --save-o dt_o.npy --trace none").code == 0);
  for (const char* p : {"bf16", "fp16"}) {
    for (const std::string cmd : {"forward --causal --trace none", "backward --causal --trace none",
                                  "forward --causal --json", "backward --n 20 --d 4 --json"}) {
      const Run a = run(cmd + " --dtype " + p), b = run(cmd + " --precision " + p),
                both = run(cmd + " --dtype " + p + " --precision " + p);
      INFO(cmd << " " << p << "\n" << a.err);
      REQUIRE(a.code == 0);
      CHECK(a.out == b.out);
      CHECK(both.out == b.out);
      CHECK(has(a.out, std::string(p)));
    }
    const std::string check = "check " + kQKV + " --o dt_o.npy";
    const Run a = run(check + " --dtype " + p), b = run(check + " --precision " + p);
    CHECK(a.code == b.code);
    CHECK(a.out == b.out);
    CHECK(has(a.out, std::string(" ") + p + " "));
  }
  CHECK(run("forward --dtype fp16 --causal --json").out ==
        run("forward --precision fp16 --causal --json").out);
  const Run j = run("forward --dtype bf16 --json");
  CHECK(has(j.out, "\"dtype\":\"bf16\""));
  struct Bad {
    std::string args, names;
  };
  const Bad bad[] = {
      {"forward --dtype fp32 --precision bf16",
       "--dtype fp32 and --precision bf16 disagree: --dtype bf16 alone says it"},
      {"forward --precision bf16 --dtype fp64", "--dtype fp64 and --precision bf16 disagree"},
      {"backward --dtype bf16 --precision fp16", "--dtype bf16 and --precision fp16 disagree"},
      {"check " + kQKV + " --o dt_o.npy --dtype bf16 --precision fp32",
       "--dtype bf16 and --precision fp32 disagree"},
      {"forward --dtype bf8", "--dtype"},
      {"softmax --dtype bf16", "--dtype"},  // softmax's --dtype stays fp32 or fp64
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
