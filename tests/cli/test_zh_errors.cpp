// test_zh_errors.cpp — under --lang zh every error is Chinese (issue 32, item 4): a broad set of
// bad inputs run through the binary (files missing, directories, not .npy, cut short, of another
// dtype, headers promising too much, outputs that cannot be written or that are inputs, values
// options refuse, unknown options and subcommands), each one line on stderr that opens with
// "flashdemo：错误：" and holds no English word beside names (no_english.hpp); the same runs
// under --lang en keep the English they had, and that English is the library's what().
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"
#include "no_english.hpp"
#include "runner.hpp"

using namespace cli;

namespace {

const std::string kZhDir = "zh_errors";
const std::string kZhPrefix = "flashdemo：错误：";

// A .npy file: the version's bytes, the header `dict` (padded as NumPy pads it), `data` zeros.
void zh_npy_file(const std::string& name, const std::string& dict, std::size_t data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += char(header.size() & 0xff), bytes += char(header.size() >> 8);
  std::ofstream(kZhDir + "/" + name, std::ios::binary)
      << bytes << header << std::string(data, '\0');
}

// The inputs of the cases: good ones, and one per way a file can be wrong.
void zh_prepare() {
  std::filesystem::remove_all(kZhDir);
  std::filesystem::create_directories(kZhDir + "/dir.npy");
  fd::TorchGenerator gen(32);
  for (const char* name : {"q", "k", "v"})
    fd::write_npy(kZhDir + "/" + name + ".npy", gen.randn_matrix<double>(10, 4));
  fd::write_npy(kZhDir + "/v7.npy", gen.randn_matrix<double>(7, 4));
  fd::Mat<double> nan = gen.randn_matrix<double>(10, 4);
  nan(1, 2) = std::nan("");
  fd::write_npy(kZhDir + "/nan.npy", nan);
  std::ofstream(kZhDir + "/garbage.npy") << "not an npy file at all";
  const std::string f8 = "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }";
  zh_npy_file("cut_data.npy", f8, 40);
  {
    zh_npy_file("cut_header.npy", f8, 48);
    std::filesystem::resize_file(kZhDir + "/cut_header.npy", 12);
  }
  zh_npy_file("i4.npy", "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }", 24);
  zh_npy_file("fortran.npy", "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", 48);
  zh_npy_file("dims5.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 2, 3, 4, 1), }",
              192);
  zh_npy_file("no_descr.npy", "{'fortran_order': False, 'shape': (2, 3), }", 48);
  zh_npy_file("twice.npy",
              "{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", 48);
  zh_npy_file("no_tuple.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': 3, }", 24);
  zh_npy_file("huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (100000000000, 4), }",
              0);
  zh_npy_file("endless.npy",
              "{'descr': '<f8', 'fortran_order': False, 'shape': (2000000, 2000000), }", 0);
  std::ofstream(kZhDir + "/version7.npy", std::ios::binary) << std::string("\x93NUMPY\x07\x00", 8);
  std::ofstream(kZhDir + "/long_header.npy", std::ios::binary)
      << std::string("\x93NUMPY\x02\x00\x00\x00\x20\x00", 12);
  REQUIRE(::mkfifo((kZhDir + "/fifo.npy").c_str(), 0600) == 0);
}

struct ZhCase {
  std::string script;               // $FDL: flashdemo --lang zh, or --lang en
  std::string english;              // a piece of the English line, as it reads
  int code;                         // the exit code, the same in both languages
  std::set<std::string> allowed{};  // words the Chinese line may hold: an option's choices
};

// One case in each language: Chinese, one line, the prefix, no English word; English as before.
void zh_check(const ZhCase& c) {
  const Run zh = in_dir(kZhDir, "FDL=\"$FD --lang zh\"; " + c.script);
  const Run en = in_dir(kZhDir, "FDL=\"$FD --lang en\"; " + c.script);
  INFO("script: " << c.script << "\n  zh: " << zh.err << "  en: " << en.err);
  CHECK(zh.code == c.code);
  CHECK(en.code == c.code);
  CHECK(zh.out.empty());
  CHECK(lines(zh.err).size() == 1);
  CHECK(zh.err.rfind(kZhPrefix, 0) == 0);
  for (const std::string& w : english_words(zh.err, c.allowed)) FAIL_CHECK("English: " << w);
  CHECK(lines(en.err).size() == 1);
  CHECK(en.err.rfind("flashdemo: error: ", 0) == 0);
  CHECK(has(en.err, c.english));
}

std::set<std::string> zh_subcommands() {
  const std::vector<std::string> listed = listed_subcommands();
  return {listed.begin(), listed.end()};
}

}  // namespace

TEST_CASE("a file that cannot be read, or is no .npy flashdemo reads: Chinese, one line") {
  zh_prepare();
  const std::string kv = " --k k.npy --v v.npy";
  const ZhCase cases[] = {
      {"$FDL forward --q missing.npy" + kv, "missing.npy: cannot open: No such file or directory",
       4},
      {"$FDL forward --q dir.npy" + kv, "dir.npy: is a directory, not a file", 4},
      {"$FDL forward --q /proc/self/mem" + kv, "/proc/self/mem: cannot read: Input/output error",
       4},
      {"$FDL forward --q garbage.npy" + kv, "garbage.npy: not a .npy file (bad magic bytes)", 4},
      {"$FDL forward --q cut_header.npy" + kv, "cut_header.npy: truncated header", 4},
      {"$FDL forward --q cut_data.npy" + kv,
       "cut_data.npy: truncated data: the header promises 6 elements (48 bytes), the file holds "
       "40 bytes",
       4},
      {"$FDL forward --q i4.npy" + kv, "i4.npy: unsupported dtype '<i4': flashdemo reads", 4},
      {"$FDL forward --q fortran.npy" + kv, "Fortran (column-major) order is not supported", 4},
      {"$FDL forward --q dims5.npy" + kv, "has 5 dimensions; flashdemo reads up to 4", 4},
      {"$FDL forward --q no_descr.npy" + kv, "no_descr.npy: header has no 'descr' entry", 4},
      {"$FDL forward --q twice.npy" + kv, "header gives 'descr' more than once", 4},
      {"$FDL forward --q no_tuple.npy" + kv, "shape 3 is not a tuple of sizes", 4},
      {"$FDL forward --q version7.npy" + kv, "unsupported .npy version 7.0", 4},
      {"$FDL forward --q long_header.npy" + kv, "header length 2097152 is implausible", 4},
      {"$FDL forward --q endless.npy" + kv, "endless.npy: shape is too large", 4},
      {"$FDL forward --q huge.npy" + kv, "huge.npy: the header promises 400000000000 elements", 3},
      {"$FDL forward --q nan.npy" + kv, "nan.npy: element (1, 2) is nan; inputs must be finite", 4},
      {"$FDL forward --q q.npy --k k.npy --v v7.npy", "expected (10, 4)", 4},
      {"$FDL softmax --input q.npy", "1-D", 4},
      {"$FDL softmax --input garbage.npy", "bad magic bytes", 4},
      {"$FDL check --q q.npy --k k.npy --v v.npy --o missing.npy", "missing.npy: cannot open", 4},
  };
  for (const ZhCase& c : cases) zh_check(c);
}

TEST_CASE("an output that cannot be written, or is an input: Chinese, one line, nothing written") {
  zh_prepare();
  std::vector<ZhCase> cases = {
      {"$FDL forward --save-o /nonexistent-dir/o.npy",
       "--save-o /nonexistent-dir/o.npy: cannot write there: No such file or directory", 4},
      {"$FDL forward --save-o q.npy/o.npy", "q.npy is not a directory", 4},
      {"$FDL forward --save-o dir.npy", "--save-o dir.npy: is a directory", 4},
      {"$FDL forward --save-o /dev/null", "--save-o /dev/null: is a system file (/dev/...)", 4},
      {"$FDL forward --save-o fifo.npy", "--save-o fifo.npy: is not a regular file", 4},
      {"$FDL forward --q q.npy --k k.npy --v v.npy --save-o q.npy",
       "--save-o q.npy is the input --q q.npy: choose another name", 2},
      {"$FDL forward --save-o same.npy --save-lse same.npy",
       "--save-lse same.npy is also the output --save-o same.npy: give each output its own file",
       2},
      {"(ulimit -f 1; $FDL forward --n 300 --save-o big.npy)",
       "--save-o big.npy: cannot write: File too large", 4},
      {"$FDL forward > /dev/full", "cannot write to standard output: No space left on device", 4},
      {"$FDL forward >&-", "cannot write to standard output: Bad file descriptor", 4},
      {"$FDL forward --html ''", "--html: needs a file name, not an empty one", 2},
  };
  if (geteuid() == 0) {  // root writes anywhere: another user's file instead
    cases.push_back(
        {"cp q.npy theirs.npy && chown 65534 theirs.npy && $FDL forward --save-o "
         "theirs.npy; c=$?; rm -f theirs.npy; exit $c",
         "--save-o theirs.npy: belongs to another user (uid 65534)", 4});
    cases.push_back(
        {"ln -sf o.npy their_link.npy && chown -h 65534 their_link.npy && $FDL forward "
         "--save-o their_link.npy; c=$?; rm -f their_link.npy; exit $c",
         "is a symbolic link of another user's (uid 65534)", 4});
  } else {
    cases.push_back({"mkdir -p ro && chmod 555 ro && $FDL forward --save-o ro/o.npy",
                     "--save-o ro/o.npy: cannot write there: Permission denied", 4});
  }
  for (const ZhCase& c : cases) zh_check(c);
  CHECK_FALSE(std::filesystem::exists(kZhDir + "/big.npy"));
  CHECK_FALSE(std::filesystem::exists(kZhDir + "/same.npy"));
}

TEST_CASE("a value an option refuses, an unknown option or subcommand: Chinese, one line") {
  zh_prepare();
  const std::set<std::string> subcommands = zh_subcommands();
  const ZhCase cases[] = {
      {"$FDL forward --n 0", "--n: must be at least 1, got 0", 2},
      {"$FDL forward --n abc", "--n: expected a whole number, got 'abc'", 2},
      {"$FDL forward --n 9223372036854775808", "must be at most 2147483648", 2},
      {"$FDL forward --scale nan", "--scale: must be a finite number, got 'nan'", 2},
      {"$FDL forward --scale abc", "--scale: expected a number, got 'abc'", 2},
      {"$FDL forward --seed -1", "--seed: must be a whole number from 0 to 4294967295", 2},
      {"$FDL forward --show-p -1", "--show-p: expected a row number (0, 1, ...), got '-1'", 2},
      {"$FDL forward --trace everything",
       "--trace: 'everything' is not one of none, summary, tiles, rows",
       2,
       {"none", "summary", "tiles", "rows"}},
      {"$FDL forward --dtype bf17", "--dtype: 'bf17' is not one of", 2},
      {"$FDL forward --causal-align sideways", "'sideways' is not one of top-left, bottom-right",
       2},
      {"$FDL forward --impl quick",
       "--impl: 'quick' is not one of",
       2,
       {"teaching", "fast", "simt", "tc", "mma", "hopper"}},
      {"$FDL forward --break sideways", "'sideways' is not one of list, no-max", 2, {"list"}},
      {"$FDL backward --precision fp8", "--precision: 'fp8' is not one of bf16, fp16", 2},
      {"$FDL --color blue forward",
       "--color: 'blue' is not one of auto, always, never",
       2,
       {"auto", "always", "never"}},
      {"$FDL walkthrough --section nope", "'nope' is not one of softmax, forward", 2, subcommands},
      {"$FDL forward --causal=maybe", "--causal: cannot take the value 'maybe'", 2},
      {"$FDL forward --frobnicate", "unexpected argument: --frobnicate", 2},
      {"$FDL forward --causl", "unexpected argument: --causl; did you mean --causal?", 2},
      {"$FDL info --n 5", "unexpected argument: --n 5", 2},
      {"$FDL teleport", "unknown subcommand 'teleport': choose one of softmax, forward", 2,
       subcommands},
      {"$FDL forwrd", "unknown subcommand 'forwrd': did you mean forward?", 2, subcommands},
      {"$FDL", "missing subcommand: choose one of softmax, forward", 2, subcommands},
      {"$FDL forward --n", "--n needs a value", 2},
      {"$FDL forward --n 5 --n 6", "--n is given more than once: give it once", 2},
      {"$FDL softmax --values=", "--values= has an empty value", 2},
      {"$FDL softmax --values=1,abc", "--values: 'abc' is not a number", 2},
      {"$FDL softmax --values=1,2 --n 3", "--n cannot be used with --values", 2},
      {"$FDL forward --q q.npy", "--q needs --k as well", 2},
      {"$FDL check", "--q is required", 2},
      {"$FDL completion", "shell is required", 2, {"shell"}},
      {"$FDL completion fish",
       "shell: 'fish' is not one of bash, zsh",
       2,
       {"shell", "bash", "zsh"}},
      {"$FDL forward --impl fast --trace tiles",
       "--impl fast is not traced",
       2,
       {"fast", "tiles", "teaching"}},
      {"$FDL forward --n 2000000 --m 2000000", "of memory is available; choose smaller sizes", 3},
  };
  for (const ZhCase& c : cases) zh_check(c);
}

TEST_CASE("Chinese from the environment too: LANG=zh_CN.UTF-8 with no LC_ALL words file errors") {
  zh_prepare();
  const Run r = in_dir(kZhDir,
                       "env -u LC_ALL -u LC_MESSAGES LANG=zh_CN.UTF-8 $FD forward --q missing.npy "
                       "--k k.npy --v v.npy");
  INFO(r.err);
  CHECK(r.code == 4);
  CHECK(r.err == kZhPrefix + "missing.npy：无法打开：文件或目录不存在\n");
}

TEST_CASE("the English line of a file's problem is the library's own what()") {
  zh_prepare();
  for (const char* name :
       {"missing.npy", "dir.npy", "garbage.npy", "cut_header.npy", "cut_data.npy", "i4.npy",
        "fortran.npy", "dims5.npy", "no_descr.npy", "twice.npy", "no_tuple.npy", "version7.npy",
        "long_header.npy", "endless.npy"}) {
    const std::string path = kZhDir + "/" + std::string(name);
    std::string what;
    try {
      fd::read_npy(path);
    } catch (const fd::NpyError& e) {
      what = e.what();
    }
    const Run r =
        run("--lang en forward --q " + path + " --k " + kZhDir + "/k.npy --v " + kZhDir + "/v.npy");
    INFO(name);
    CHECK_FALSE(what.empty());
    CHECK(r.err == "flashdemo: error: " + what + "\n");
  }
}
