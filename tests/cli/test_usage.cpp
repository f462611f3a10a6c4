// test_usage.cpp — what the command line refuses: bad values, misspelt names (the nearest one
// suggested), bad files and outputs; one line on stderr, the documented exit code, no stdout;
// and no runaway at the edges.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "flashdemo/attention.hpp"
#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"
#include "runner.hpp"

using namespace cli;

TEST_CASE("bad input: one line on stderr naming the problem, non-zero exit, no stdout") {
  struct Bad {
    const char* args;
    const char* names;  // a piece the error must contain
    int code;
  };
  const Bad cases[] = {
      {"forward --n 0", "--n", 2},
      {"forward --n -5", "--n", 2},
      {"forward --n=-5", "--n", 2},
      {"forward --n abc", "--n", 2},
      {"forward --n 1.5", "--n", 2},
      {"forward --n 99999999999999999999", "--n", 2},
      {"forward --m 0", "--m", 2},
      {"forward --d 0", "--d", 2},
      {"forward --d -1", "--d", 2},
      {"forward --block-q 0", "--block-q", 2},
      {"forward --block-k -3", "--block-k", 2},
      {"forward --scale nan", "--scale", 2},
      {"forward --scale inf", "--scale", 2},
      {"forward --scale=-inf", "--scale", 2},
      {"forward --scale abc", "--scale", 2},
      {"forward --seed -1", "--seed", 2},
      {"forward --dtype bf17", "--dtype", 2},
      {"forward --causal-align sideways", "--causal-align", 2},
      {"forward --trace everything", "--trace", 2},
      {"forward --frobnicate", "--frobnicate", 2},
      {"forward --n 2000000 --m 2000000", "memory", 3},
      {"softmax --n 0", "--n", 2},
      {"softmax --block 0", "--block", 2},
      {"softmax --block -2", "--block", 2},
      {"softmax --scale nan", "--scale", 2},
      {"softmax --values=1,nan,2", "nan", 2},
      {"softmax --values=1,inf", "inf", 2},
      {"softmax --values=1,,2", "--values", 2},
      {"softmax --values=abc", "abc", 2},
      {"softmax --values=1,2 --n 3", "--n", 2},
      {"backward --n 0", "--n", 2},
      {"backward --d -2", "--d", 2},
      {"backward --block-q 0", "--block-q", 2},
      {"backward --scale inf", "--scale", 2},
      {"backward --dtype int8", "--dtype", 2},
      {"backward --n 100000 --m 100000", "memory", 3},
      {"memory --d 0", "--d", 2},
      {"memory --sram-kb 0", "--sram-kb", 2},
      {"memory --sram-kb -100", "--sram-kb", 2},
      {"memory --n 1024,0", "--n", 2},
      {"memory --n 1024,abc", "--n", 2},
      {"memory --n=-5", "--n", 2},
      {"memory --n 99999999999", "--n", 2},
      {"memory --dtype fp64", "--dtype", 2},
      {"memory --heads 0", "--heads", 2},
      {"memory --batch -1", "--batch", 2},
      {"teleport", "teleport", 2},
      {"", "subcommand", 2},
      // Messages that name the real problem.
      {"forward --n 5 --n 6", "--n is given more than once", 2},
      {"softmax --values= --quiet", "--values= has an empty value", 2},
      {"forward --n 9223372036854775808", "must be at most 2147483648, got 9223372036854775808", 2},
      {"info --n 5", "unexpected argument: --n 5", 2},
      {"softmax --values=1,2,", "--values", 2},
      {"softmax --values=,1,2", "--values", 2},
      {"memory --n 1024,", "--n", 2},
      {"memory --n ,1024", "--n", 2},
  };
  for (const Bad& b : cases) {
    const Run r = run(b.args);
    INFO("args: " << std::string(b.args) << " | stderr: " << r.err);
    CHECK(r.code == b.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, "flashdemo: error: "));
    CHECK(has(r.err, b.names));
  }
}

TEST_CASE("a misspelt option or subcommand: flashdemo's one line, exit 2, the nearest name") {
  struct Typo {
    const char* args;
    const char* says;  // a piece of the error; "" where nothing is near enough to suggest
  };
  const Typo cases[] = {
      {"forward --causl", "flashdemo: error: unexpected argument: --causl; did you mean --causal?"},
      {"forward --causl=1", "unexpected argument: --causl=1; did you mean --causal?"},
      {"forward causal", "did you mean --causal?"},
      {"backward --trce rows", "unexpected argument: --trce rows; did you mean --trace?"},
      {"check --causl", "did you mean --causal?"},  // before "--q is required"
      {"check --qq Q.npy", "did you mean --q?"},
      {"bench --thread 2", "did you mean --threads?"},
      {"memory --heds 2", "did you mean --heads?"},
      {"forward --lnag zh", "did you mean --lang?"},
      {"--lnag zh forward", "did you mean --lang?"},
      {"--lnag zh", "did you mean --lang?"},
      {"forwrd", "unknown subcommand 'forwrd': did you mean forward? (choose one of softmax,"},
      {"--json forwrd", "unknown subcommand 'forwrd': did you mean forward?"},
      {"walkthrugh --no-pause", "did you mean walkthrough?"},
      {"forward --n 5 --causl --lang zh",
       "flashdemo：错误：多余的参数：--causl；是不是想用 --causal？"},
      {"forward --frobnicate", ""},
      {"info --n 5", ""},
      {"teleport", ""},
  };
  for (const Typo& t : cases) {
    const Run r = run(t.args);
    INFO("args: " << t.args << " | stderr: " << r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK((r.err.rfind("flashdemo: error: ", 0) == 0 || r.err.rfind("flashdemo：错误：", 0) == 0));
    CHECK_FALSE(has(r.err, "The following argument"));
    if (*t.says) CHECK(has(r.err, t.says));
    if (!*t.says) CHECK_FALSE(has(r.err, "did you mean"));
  }
}

TEST_CASE("bad files and outputs: one line, exit 4 (file) or 2 (usage), nothing half-written") {
  write_inputs(10, 10, 3);
  std::ofstream("garbage.npy") << "not an npy file";
  fd::write_npy("in_bad_shape.npy", fd::TorchGenerator(1).randn_matrix<double>(7, 3));
  fd::write_npy("in_vec.npy", fd::TorchGenerator(1).randn_matrix<double>(7, 3).col(0).eval());
  fd::Mat<double> huge = fd::TorchGenerator(2).randn_matrix<double>(10, 3), v7e4 = huge;
  huge(0, 0) = 1e39, v7e4(2, 1) = 7e4;
  fd::write_npy("in_huge.npy", huge);
  fd::write_npy("in_v7e4.npy", v7e4);
  fd::write_npy("in_vec300.npy", fd::Vec<double>(fd::Vec<double>::Constant(3, 1.7e300)));
  struct Bad {
    std::string args, names;
    int code;
  };
  const Bad cases[] = {
      {"forward --q missing.npy --k in_k.npy --v in_v.npy", "missing.npy: cannot open", 4},
      {"forward --q garbage.npy --k in_k.npy --v in_v.npy", "bad magic", 4},
      {"forward --q in_q.npy --k in_bad_shape.npy --v in_v.npy", "expected (7, 3)", 4},
      {"forward --q in_q.npy --k in_k.npy --v in_bad_shape.npy", "expected (10, 3)", 4},
      {"forward --q in_q.npy --k in_k.npy", "--v", 2},
      {"forward " + kQKV + " --n 5", "--n", 2},
      {"forward " + kQKV + " --save-o in_q.npy", "--save-o in_q.npy is the input --q in_q.npy", 2},
      {"forward " + kQKV + " --save-o ./in_k.npy", "is the input --k in_k.npy", 2},
      {"forward --save-o /nonexistent-dir/o.npy", "cannot write", 4},
      {"backward " + kQKV + " --do in_bad_shape.npy", "dO has shape (7, 3)", 4},
      {"backward --do in_do.npy", "--q", 2},
      {"forward --show-p 100", "--show-p", 2},
      {"forward --show-p -1", "--show-p", 2},
      {"forward --break sideways", "--break", 2},
      {"backward --precision fp8", "--precision", 2},
      {"forward --precision bf16 --dtype fp64", "--dtype", 2},
      {"softmax --input garbage.npy", "bad magic", 4},
      {"softmax --input in_q.npy", "1-D", 4},
      {"softmax --input in_vec.npy --values=1,2", "--values", 2},
      {"check --q in_q.npy --k in_k.npy --v in_v.npy", "at least one", 2},
      {"check --q in_q.npy --k in_k.npy --v in_v.npy --dq in_q.npy", "--do", 2},
      {"check --q in_q.npy --k in_bad_shape.npy --v in_v.npy --o in_q.npy", "shapes do not fit", 4},
      {"check --k in_k.npy --v in_v.npy --o in_q.npy", "--q", 2},
      // Found by fuzz_cli: check printed its header and table before it opened the graded files.
      {"check --q in_q.npy --k in_k.npy --v in_v.npy --o missing.npy", "missing.npy: cannot open",
       4},
      {"check --q in_q.npy --k in_k.npy --v in_v.npy --o in_q.npy --do in_do.npy --dq garbage.npy",
       "bad magic", 4},
      // Values the working precision cannot hold: refused by name, never rounded to inf.
      {"forward --q in_huge.npy --k in_k.npy --v in_v.npy --dtype fp32",
       "in_huge.npy: Q holds 1e+39 at (0, 0), beyond the largest fp32 value", 4},
      {"forward --q in_q.npy --k in_k.npy --v in_v7e4.npy --precision fp16",
       "in_v7e4.npy: V holds 70000 at (2, 1), beyond the largest fp16 value 65504", 4},
      {"backward " + kQKV + " --do in_huge.npy --dtype fp32", "in_huge.npy: dO holds 1e+39", 4},
      {"softmax --input in_vec300.npy", "in_vec300.npy: x holds 1.7e+300", 4},
      {"softmax --values=1e39,1", "--values reaches 1e+39", 2},
      {"softmax --scale 1e39", "x = randn * --scale reaches", 2},
      {"forward --dtype fp32 --scale 1e38", "S = scale Q K^T reaches", 2},
      {"forward --scale 1e308", "S = scale Q K^T reaches", 2},
      // The fast path: no trace, no emulated precision or mistakes, not on the GPU.
      {"forward --impl fast --trace tiles", "--impl fast is not traced", 2},
      {"backward --impl fast --precision bf16", "--precision bf16 needs --impl teaching", 2},
      {"forward --impl fast --dtype fp16", "--dtype fp16 needs --impl teaching", 2},
      {"forward --impl fast --break no-max", "--break needs --impl teaching", 2},
      {"forward --impl fast --device cuda", "--impl fast runs on the CPU", 2},
      {"forward --impl quick", "--impl", 2},
      {"forward --impl fast --threads 0", "--threads", 2},
  };
  for (const Bad& b : cases) {
    const Run r = run(b.args);
    INFO("args: " << b.args << " | stderr: " << r.err);
    CHECK(r.code == b.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, b.names));
  }
  CHECK_FALSE(std::ifstream("/nonexistent-dir/o.npy").good());
}

TEST_CASE(
    "no runaway and no crash at the edges: tiles past the problem, empty arrays, huge values") {
  write_inputs(10, 10, 3);
  for (const char* args : {"forward --n 5 --block-k 2147483648 --trace none",
                           "forward --n 100 --block-q 1 --block-k 100000000 --trace none",
                           "backward --n 5 --block-k 2147483648 --trace none"}) {
    const Run r = run(std::string("--quiet ") + args);  // capped at n and m: instant
    INFO(args);
    CHECK(r.code == 0);
    CHECK(has(r.out, "max |"));
  }
  fd::write_npy("in_empty.npy", fd::Mat<double>(0, 4));
  {  // (10, 0): write_npy would take cols = 0 for a vector
    std::string dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (10, 0), }";
    dict.append(64 - (10 + dict.size() + 1) % 64, ' ');
    dict += '\n';
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes += char(dict.size() & 0xff), bytes += char(dict.size() >> 8), bytes += dict;
    std::ofstream("in_d0.npy", std::ios::binary) << bytes;
  }
  for (const std::string q : {"in_empty.npy", "in_d0.npy"}) {
    const Run r = run("check --q " + q + " --k " + q + " --v " + q + " --o in_q.npy");
    INFO(q << " " << r.err);
    CHECK(r.code == 4);
    CHECK(has(r.err, "every dimension must be at least 1"));
    CHECK(r.out.empty());
  }
  const Run huge = run("softmax --values=1e300,1.5e300 --dtype fp64");
  CHECK(huge.code == 0);
  CHECK(has(huge.out, "m = 1.500e+300"));
  for (const auto& line : lines(huge.out)) CHECK(columns(line) <= 100);
}
