// test_cli.cpp — runs the flashdemo binary end to end: outputs, exit codes, bad input.
#include <doctest/doctest.h>

#include <initializer_list>

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"

namespace {

// Every file these tests write goes to a scratch directory of their own, removed at the end, so
// that running the suite from anywhere (the repository's root included) leaves nothing behind.
struct Scratch {
  std::string dir;
  Scratch() {
    std::string t = (std::filesystem::temp_directory_path() / "flashdemo_cli_XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr || ::chdir(t.c_str()) != 0) std::abort();
    dir = t;
  }
  ~Scratch() {
    if (::chdir("/") == 0) std::filesystem::remove_all(dir);
  }
} scratch_dir;

struct Run {
  int code = -1;
  std::string out, err;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs `flashdemo ARGS` with stdout and stderr captured apart.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;  // no run under ulimit -v: ASan reserves its shadow memory
#else
constexpr bool kSanitized = false;
#endif

Run run(const std::string& args) {
  const std::string out = "cli_test_stdout.txt", err = "cli_test_stderr.txt";
  const std::string cmd =
      std::string("LC_ALL=C LANG=C '") + FLASHDEMO_EXE + "' " + args + " >" + out + " 2>" + err;
  const int status = std::system(cmd.c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string exe() {
  return std::string("'") + FLASHDEMO_EXE + "'";
}

// Runs a bash script in `dir` (FD stands for the flashdemo binary), stdout and stderr apart.
Run in_dir(const std::string& dir, const std::string& script) {
  const std::string body = "cd '" + dir + "' && export FD=" + exe() + " && " + script;
  std::ofstream("cli_script.sh") << body << "\n";
  const std::string cmd =
      "LC_ALL=C LANG=C bash cli_script.sh >cli_test_stdout.txt 2>cli_test_stderr.txt";
  const int status = std::system(cmd.c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp("cli_test_stdout.txt");
  r.err = slurp("cli_test_stderr.txt");
  return r;
}

bool has(const std::string& text, const std::string& piece) {
  return text.find(piece) != std::string::npos;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) out.push_back(line);
  return out;
}

// Display columns of a UTF-8 line (every code point here is one column wide).
std::size_t columns(const std::string& line) {
  std::size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

}  // namespace

TEST_CASE("softmax reproduces the lecture's demo 1") {
  const Run r = run("softmax");
  REQUIRE(r.code == 0);
  CHECK(r.err.empty());
  CHECK(has(r.out, "x = [7.70, -1.47, -10.89, 2.84, -5.42, -6.99, 2.02, 4.19, -3.60, -2.02]"));
  CHECK(has(r.out, "m = 7.705, l = 1.0410"));
  CHECK(has(r.out, "max |online - three-pass softmax| = 1.2e-07"));
  CHECK(has(r.out, "m + log(l) = 7.74521,  computed directly: 7.74521"));
  CHECK(has(r.out, "l = exp(m_a - m) l_a + exp(m_b - m) l_b = 1.0410"));
  CHECK(lines(r.out).size() >= 4 + 4);  // one table line per block
}

TEST_CASE("softmax takes typed values and shows a rescale") {
  const Run r = run("softmax --values=1000,1001,999 --block 1 --dtype fp64");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "1000.000 → 1001.000"));
  CHECK(has(r.out, "0.3679"));  // alpha = exp(1000 - 1001)
}

TEST_CASE("forward reproduces the lecture's demo 2 and fits one 100-column screen") {
  for (const char* args : {"forward", "forward --causal"}) {
    const Run r = run(args);
    INFO("args: " << std::string(args));
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    CHECK(has(r.out, "Q: 100 x 32,  K, V: 100 x 32,  fp64"));
    CHECK(has(r.out, "tiles Br = 16, Bc = 24"));
    CHECK(has(r.out, "max |O - O_ref| = "));
    CHECK(has(r.out, "max |L - L_ref| = "));
    const auto ls = lines(r.out);
    CHECK(ls.size() <= 30);
    for (const auto& line : ls) CHECK(columns(line) <= 100);
  }
  const Run causal = run("forward --causal");
  CHECK(has(causal.out, "tiles computed: 21 of 35 (12 full, 9 partial), skipped: 14"));
  CHECK(has(causal.out, "80-bit long double"));  // an fp64 run is judged against a wider type
  CHECK(has(causal.out, "naive fp64"));
  CHECK(has(causal.out, ": pass"));
  CHECK_FALSE(has(causal.out, "FAIL"));
}

TEST_CASE("forward in fp32 passes the 2x rule; traces print tiles and rows") {
  const Run f32 = run("forward --dtype f32 --causal");
  REQUIRE(f32.code == 0);
  CHECK(has(f32.out, "fp32"));
  CHECK(has(f32.out, ": pass"));
  CHECK_FALSE(has(f32.out, "FAIL"));
  const Run tiles = run("forward --causal --trace tiles");
  CHECK(has(tiles.out, "(0,0)    0-15   0-23   partial"));
  CHECK(has(tiles.out, "(0,1..4) 0-15   24-99  skipped 4 tiles"));  // the columns line up
  CHECK(has(tiles.out, "(0,1..4)"));
  const Run rows =
      run("forward --n 6 --m 9 --d 2 --block-q 4 --block-k 3 --causal "
          "--causal-align bottom-right --trace rows");
  REQUIRE(rows.code == 0);
  CHECK(has(rows.out, "q    5:  L = "));
  const Run none = run("forward --trace none");
  CHECK_FALSE(has(none.out, "Tile map"));
}

TEST_CASE("fully masked rows print O = 0 and L = -inf without NaN") {
  const Run r = run("forward --n 8 --m 3 --d 2 --causal --causal-align bottom-right --trace rows");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "L = -inf + log(0.0000) = -inf"));
  CHECK_FALSE(has(r.out, "nan"));
  CHECK(has(r.out, ": pass"));
  CHECK_FALSE(has(r.out, "FAIL"));
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string w; ss >> w;) out.push_back(w);
  return out;
}

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

TEST_CASE("memory with no options prints the lecture's table exactly") {
  const Run r = run("memory");
  REQUIRE(r.code == 0);
  // The rows of the lecture's printed demo-4 table: n, S and P, flash extra, standard IO, flash IO.
  const std::vector<std::vector<std::string>> lecture = {
      {"1024", "0.004", "GB", "0.004", "MB", "4", "0"},
      {"4096", "0.067", "GB", "0.016", "MB", "67", "5"},
      {"16384", "1.074", "GB", "0.066", "MB", "1,074", "86"},
      {"65536", "17.180", "GB", "0.262", "MB", "17,180", "1,374"}};
  std::vector<std::vector<std::string>> table;
  for (const auto& line : lines(r.out)) {
    const auto w = words(line);
    if (w.size() == 7 && w[2] == "GB") table.push_back(w);
  }
  CHECK(table == lecture);
  CHECK(has(r.out, "Bc = ceil(M / 4d) = 100, Br = min(Bc, d) = 100"));
  CHECK(has(r.out, "65536     1,374 |    17,213    16,706    11,023 |"));
  for (const auto& line : lines(r.out)) CHECK(columns(line) <= 100);
}

TEST_CASE("memory options change the table") {
  const Run r =
      run("memory --d 64 --dtype fp32 --sram-kb 200 --n 2048 --batch 2 --heads 3 --causal");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "batch 2 x heads 3, fp32, d = 64, SRAM 200 KB = M = 51,200 fp32 elements"));
  CHECK(has(r.out, "causal"));
  // S and P: 6 heads x 2 x 2048^2 x 4 bytes = 0.201 GB
  CHECK(has(r.out, "0.201 GB"));
}

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

// Q, K, V (and dO) of the given sizes written as .npy into the working directory.
void write_inputs(fd::index_t n, fd::index_t m, fd::index_t d) {
  fd::TorchGenerator gen(5);
  fd::write_npy("in_q.npy", gen.randn_matrix<double>(n, d));
  fd::write_npy("in_k.npy", gen.randn_matrix<double>(m, d));
  fd::write_npy("in_v.npy", gen.randn_matrix<double>(m, d));
  fd::write_npy("in_do.npy", gen.randn_matrix<double>(n, d));
  fd::write_npy("in_q32.npy", gen.randn_matrix<float>(n, d));
}

const std::string kQKV = "--q in_q.npy --k in_k.npy --v in_v.npy";

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

TEST_CASE("--break shows the drift and explains it; --break list lists the mistakes") {
  const Run list = run("backward --break list");
  CHECK(list.code == 0);
  for (const char* m :
       {"no-max", "no-rescale", "l-starts-at-1", "finite-mask", "no-d", "wrong-align"})
    CHECK(has(list.out, m));
  CHECK_FALSE(has(run("forward --break list").out, "no-d"));
  const Run r = run("forward --break no-rescale --trace none");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "Mistake on purpose: --break no-rescale"));
  CHECK(has(r.out, "broken:  max |O - O_ref| = "));
  CHECK(has(r.out, "correct: max |O - O_ref| = "));
  const Run align = run("forward --break wrong-align --m 60 --trace none");
  CHECK(has(align.out, "causal, bottom-right"));
  const Run nod = run("backward --break no-d --trace none");
  bool dv_exact = false;  // dV does not use D: it stays at rounding level, no row off
  for (const auto& line : lines(nod.out))
    if (has(line, "broken: max |dV - dV_ref| = "))
      dv_exact = has(line, "e-16") && has(line, " 0 of 70 rows");
  CHECK(dv_exact);
}

// Each mistake shows at the defaults: --break sets what it needs (and says so), the rows that
// drift are drawn, and the FAIL is called the expected verdict.
TEST_CASE("--break: every mistake shows at the defaults, with a row map and the expected FAIL") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"forward --break no-max", "--break no-max sets --scale 300"},
      {"forward --break no-max --dtype fp32", "--break no-max sets --scale 40"},
      {"forward --break finite-mask",
       "--break finite-mask sets --m 60 --causal --causal-align "
       "bottom-right"},
      {"forward --break wrong-align",
       "--break wrong-align sets --m 150 --causal --causal-align "
       "bottom-right"},
      {"forward --break no-rescale", ""},
      {"forward --break l-starts-at-1", ""},
      {"backward --break no-max", "--break no-max sets --scale 300"},
      {"backward --break no-d", ""},
  };
  for (const auto& [cmd, sets] : cases) {
    INFO(cmd);
    const Run r = run(cmd + " --trace none");
    REQUIRE(r.code == 0);
    if (!sets.empty()) CHECK(has(r.out, sets));
    if (sets.empty()) CHECK_FALSE(has(r.out, " sets --"));
    CHECK(has(r.out, "rows off by more than 1e-6 (█ off, · right), one mark per row"));
    CHECK(has(r.out, "  FAIL is the expected verdict: --break "));
    if (cmd.rfind("forward", 0) == 0) CHECK_FALSE(has(r.out, " 0 of "));  // dV is right in no-d
  }
  // finite-mask drifts only in the rows of partial tiles that see no key: rows 32-39 here.
  const Run fm = run("forward --break finite-mask --trace none");
  std::string map = "        0  ";
  for (int r = 0; r < 50; ++r) map += r >= 32 && r < 40 ? "█" : "·";
  CHECK(has(fm.out, map + "\n"));
  CHECK(has(fm.out, "8 of 100 rows off by more than 1e-6"));
  // Given on the command line, an option is left alone; the mistake may then not show.
  const Run quiet = run("forward --break no-max --scale 1 --trace none");
  CHECK_FALSE(has(quiet.out, " sets --"));
  CHECK(has(quiet.out, "pass, although --break no-max made its mistake"));
  const Run same = run("forward --break wrong-align --m 100 --trace none");
  CHECK(has(same.out, "--break wrong-align sets --causal --causal-align bottom-right"));
  CHECK(has(same.out, "pass, although --break wrong-align"));
}

TEST_CASE("--trace rows refuses a trace too long to read, before anything runs") {
  const Run big = run("forward --n 5000 --trace rows");
  CHECK(big.code == 2);
  CHECK(big.out.empty());
  CHECK(
      has(big.err, "--trace rows would print about 1,051,672 lines (84.1 MB), more than 200,000"));
  CHECK(run("backward --n 5000 --trace rows").code == 2);
  CHECK(run("forward --n 1000 --trace rows").code == 0);  // 45,728 lines
  CHECK(run("forward --n 5000 --trace tiles").code == 0);
}

TEST_CASE("--causal-align implies --causal, and says so") {
  const Run f = run("forward --causal-align bottom-right --m 60 --trace none");
  REQUIRE(f.code == 0);
  CHECK(has(f.out, "mask: causal (implied by --causal-align), bottom-right"));
  CHECK(has(run("forward --causal --causal-align top-left --trace none").out,
            "mask: causal, top-left"));
  write_inputs(16, 16, 4);
  REQUIRE(run("forward " + kQKV + " --causal --save-o o.npy --trace none").code == 0);
  const Run c = run("check " + kQKV + " --causal-align top-left --o o.npy");
  CHECK(c.code == 0);
  CHECK(has(c.out, "(implied by --causal-align)"));
}

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

TEST_CASE("--show-p recovers a row of P from L; softmax reads a .npy vector") {
  const Run r = run("forward --show-p 99 --causal --trace none");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "Row 99 of P, recovered from the saved L"));
  CHECK(has(r.out, "sum over k = 1.0000000000000"));
  const Run s = run(std::string("softmax --input ") + FLASHDEMO_FIXTURES + "/numpy_f4_vec5.npy");
  REQUIRE(s.code == 0);
  CHECK(has(s.out, "(5 values, fp32)"));
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

// Why m is subtracted: with large (or very negative) values the naive softmax breaks, shown.
TEST_CASE("softmax shows the naive softmax's inf and nan where it breaks, and only there") {
  const Run big = run("softmax --values=1000,1001,999 --block 1");
  REQUIRE(big.code == 0);
  CHECK(has(big.out, "exp(1000.00) = inf: in fp32, exp(x) overflows for x > 88.72"));
  CHECK(has(big.out, "softmax_0 = inf / inf = nan;  3 of 3 outputs are nan or inf"));
  CHECK(has(big.out, "  x[0:1] → m_a = 1000.000"));
  CHECK(has(big.out, "       -inf → 1000.000  0 (nothing summed yet)"));
  const Run small = run("softmax --values=-1000,-1001,5000 --dtype fp64");
  CHECK(has(small.out, "exp(5000.00) = inf: in fp64, exp(x) overflows for x > 709.78"));
  const Run under = run("softmax --values=-1000,-1001");
  CHECK(has(under.out, "exp(-1000.00) = 0: in fp32, exp(x) underflows to 0 for x < -103.28"));
  CHECK(has(under.out, "2 of 2 outputs are nan or inf"));
  CHECK_FALSE(has(run("softmax").out, "naive"));
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

// Whether this machine runs CUDA kernels: a CUDA build and a GPU that answers.
bool gpu_here() {
  const Run r = run("info --json");
  return r.code == 0 && nlohmann::json::parse(r.out)["gpu"] != "";
}

// The GPU rungs simt, tc, mma, hopper: every case they cannot run is refused before any work, one
// line, exit 2, whatever the machine (the backward runs on teaching and mma only: simt and tc
// refuse it); a case they can run needs a GPU (exit 5 without one), never a crash.
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
      // The backward runs on teaching and mma: simt and tc refuse it first, for any d or dtype.
      {"backward --device cuda --impl tc --dtype bf16",  // the lecture's d = 16: still this reason
       "--impl tc computes the forward only: the backward runs on --impl mma (bf16, fp16) or "
       "--impl teaching",
       2},
      {"backward --device cuda --impl simt",
       "--impl simt computes the forward only: the backward runs on --impl mma", 2},
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
       "--impl simt computes the forward only: the backward runs on --impl mma", 2},
      {b + "--impl tc --pass bwd --dtype bf16", "--impl tc computes the forward only", 2},
      {b + "--impl simt --pass bwd --dtype fp64", "--impl simt computes the forward only", 2},
      {b + "--impl mma --pass bwd", "--impl mma runs on tensor cores", 2},
      {b + "--impl mma --pass bwd --dtype bf16 --d 32", "not d = 32", 2},
      // hopper: the forward on sm_90's own instructions, bf16/fp16, d = 64 or 128, 128 x 128 tiles
      {f + "--impl hopper --d 64", "--impl hopper runs on tensor cores: use --dtype bf16", 2},
      {f + "--impl hopper --dtype fp16", "--impl hopper is compiled for d = 64 and 128", 2},
      {f + "--impl hopper --dtype bf16 --d 64 --block-q 64",
       "--impl hopper computes fixed 128 x 128 tiles", 2},
      {"backward --device cuda --impl hopper --dtype bf16 --d 64",
       "--impl hopper computes the forward only: the backward runs on --impl mma", 2},
      {b + "--impl hopper --pass bwd --dtype bf16 --d 128",
       "--impl hopper computes the forward only", 2},
  };
  for (const Bad& x : refused) {
    const Run r = run(x.args);
    INFO(x.args << " | " << r.err);
    CHECK(r.code == x.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, x.names));
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
    CHECK(has(r.err, "只计算前向：反向请用 --impl mma"));
  }
  CHECK(
      has(run("backward --device cuda --impl mma --dtype bf16 --d 64 --trace tiles --lang zh").err,
          "不记录反向追踪"));
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

// flashdemo ladder: every GPU rung on one case. Its options are checked as bench's are; on the CPU
// it refuses; without a GPU it says so in one line (exit 5), in JSON mode too, never a crash.
TEST_CASE("ladder: its options checked, --device cpu refused, and without a GPU one line, exit 5") {
  const Run help = run("ladder --help");
  REQUIRE(help.code == 0);
  for (const char* option :
       {"--b", "--h", "--n", "--m", "--d", "--causal", "--reps", "--warmup", "--seed",
        "--dtype TEXT:{bf16, fp16}=bf16", "--device", "--pass TEXT:{fwd, bwd}=fwd"})
    CHECK(has(help.out, option));
  CHECK(has(help.out, "--n INT:INT>=1=4096"));
  CHECK(has(help.out, "--d INT:INT>=1=128"));
  CHECK(has(run("--help").out, "ladder"));
  CHECK(has(run("manpage").out, ".SS ladder"));
  CHECK(has(run("completion bash").out, "ladder"));
  struct Bad {
    std::string args, names;
  };
  const Bad bad[] = {
      {"ladder --device cpu", "flashdemo ladder runs GPU kernels: --device cuda only"},
      {"ladder --dtype fp32", "--dtype"},
      {"ladder --dtype fp64", "--dtype"},
      {"ladder --n -3", "--n"},
      {"ladder --n 0", "--n"},
      {"ladder --d 1.5", "--d"},
      {"ladder --d 257", "--d"},
      {"ladder --reps 0", "--reps"},
      {"ladder --warmup=-1", "--warmup"},
      {"ladder --seed -1", "--seed"},
      {"ladder --b 99999999999999999999", "--b"},
      {"ladder --impl mma", "--impl"},
      {"ladder --pass xyz", "--pass"},
      {"ladder --pass", "--pass"},
  };
  for (const Bad& b : bad) {
    const Run r = run(b.args);
    INFO(b.args << " | " << r.err);
    CHECK(r.code == 2);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, b.names));
  }
  CHECK(has(run("ladder --device cpu --lang zh").err, "只能用 --device cuda"));
  if (gpu_here()) return;
  for (const char* args :
       {"ladder", "ladder --json", "ladder --dtype fp16 --d 64 --causal",
        "ladder --n 1024 --reps 50 --json --lang zh", "ladder --quiet", "ladder --pass bwd",
        "ladder --pass bwd --d 64 --causal --json", "ladder --pass fwd --lang zh"}) {
    const Run r = run(args);
    INFO(args << " | " << r.err);
    CHECK(r.code == 5);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, "--device cuda"));
  }
}

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

// flashdemo ring: ring attention over P ranks (threads here: ctest does not run under mpirun;
// the ring_mpi_* tests run it as MPI processes). Options checked, more ranks than rows refused;
// --device cuda: several ranks without mpirun, fp64, and bf16 on the CPU refused in one line
// (exit 2), and without a GPU one line, exit 5; a run prints the blocks, the schedule, the times
// and the verdicts; --json one ring_rank per rank and pass, one ring_step per step, a result.
TEST_CASE("ring: options checked, ranks beyond the rows refused, --device cuda's refusals, JSON") {
  const Run help = run("ring --help");
  REQUIRE(help.code == 0);
  for (const char* option : {"--n", "--m", "--d", "--ranks", "--dtype", "--causal",
                             "--causal-align", "--layout", "--pass", "--device", "--seed"})
    CHECK(has(help.out, option));
  CHECK(has(run("--help").out, "ring"));
  CHECK(has(run("manpage").out, ".SS ring"));
  struct Bad {
    std::string args, names;
    int code;
  };
  const Bad bad[] = {
      {"ring --n 0", "--n", 2},
      {"ring --n -5", "--n", 2},
      {"ring --m 99999", "--m", 2},
      {"ring --d 257", "--d", 2},
      {"ring --ranks 0", "--ranks", 2},
      {"ring --ranks=-3", "--ranks", 2},
      {"ring --ranks 65", "--ranks", 2},
      {"ring --n 5 --ranks 6", "6 ranks for n = 5 rows", 2},
      {"ring --n 50 --m 3 --ranks 4", "4 ranks for n = 50 rows and m = 3 keys", 2},
      {"ring --pass both", "--pass", 2},
      {"ring --layout stripes", "--layout", 2},
      {"ring --device cuda --ranks 2", "--ranks 2 in one process would put 2 ranks on one GPU", 2},
      {"ring --device cuda --ranks 3 --pass bwd --json",
       "mpirun -np 3 flashdemo ring --device cuda", 2},
      {"ring --device cuda --dtype fp64", "reads bf16, fp16 or fp32, not --dtype fp64", 2},
      {"ring --dtype bf16", "--dtype bf16 runs on the GPU only (--device cuda)", 2},
      {"ring --dtype fp16 --ranks 2", "--dtype fp16 runs on the GPU only", 2},
      {"ring --device cuda --dtype int8", "--dtype", 2},
      {"ring --device tpu", "--device", 2},
      {"ring --n 16384 --d 256 --dtype fp64 --pass bwd", "memory", 3},
  };
  // The memory row needs about 40 GB: a machine that has them (the H200 host) would run it.
  const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGE_SIZE));
  for (const Bad& b : bad) {
    if (b.code == 3 && memory > 32e9) continue;
    const Run r = run(b.args);
    INFO(b.args << " | " << r.err);
    CHECK(r.code == b.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, b.names));
  }

  CHECK(has(run("ring --device cuda --ranks 2 --lang zh").err, "共用一块 GPU"));
  if (!gpu_here())  // below a GPU: the tests of the GPU ring are in test_gpu.cpp
    for (const char* args :
         {"ring --device cuda", "ring --device cuda --ranks 1 --dtype bf16",
          "ring --device cuda --causal --pass bwd --json", "ring --device cuda --lang zh"}) {
      const Run r = run(args);
      INFO(args << " | " << r.err);
      CHECK(r.code == 5);
      CHECK(r.out.empty());
      CHECK(lines(r.err).size() == 1);
      CHECK(has(r.err, "--device cuda"));
    }

  const Run text = run("ring --n 16 --d 8 --ranks 4 --causal --pass bwd");
  INFO(text.out << text.err);
  REQUIRE(text.code == 0);
  CHECK(has(text.out, "ranks: 4 simulated in this process"));
  CHECK(has(text.out, "layout: zigzag: 8 chunks"));
  CHECK(has(text.out,
            "0      0-1, 14-15               0-1, 14-15                       9         7"));
  CHECK(has(text.out, "  0              K0 3/4     K3 2/4     K2 2/4     K1 2/4"));
  CHECK(has(text.out, "  sent bwd       2.0 KB     2.0 KB     2.0 KB     1.0 KB"));
  for (const char* name : {"O", "L", "dQ", "dK", "dV"})
    CHECK(has(text.out, std::string("max |") + name + " - " + name + "_ref| = "));
  CHECK(has(text.out, "the slowest rank: steps"));
  const Run skip = run("ring --n 16 --d 8 --ranks 4 --causal --layout contiguous");
  CHECK(skip.code == 0);
  CHECK(has(skip.out, "  0              K0 1/1    K3 skip    K2 skip    K1 skip"));
  CHECK(has(run("ring --n 16 --d 8 --ranks 2 --lang zh").out, "调度"));

  const Run j =
      run("ring --n 13 --m 9 --d 4 --ranks 3 --causal-align bottom-right --pass bwd --json");
  REQUIRE(j.code == 0);
  const std::vector<std::string> ls = lines(j.out);
  REQUIRE(ls.size() == 2 * (3 + 9) + 1);
  CHECK(nlohmann::json::parse(ls[0])["event"] == "ring_rank");
  CHECK(nlohmann::json::parse(ls[1])["event"] == "ring_step");
  CHECK(nlohmann::json::parse(ls[12])["pass"] == "bwd");
  const auto res = nlohmann::json::parse(ls.back());
  CHECK(res["subcommand"] == "ring");
  CHECK(res["transport"] == "threads");
  CHECK(res["device"] == "cpu");
  CHECK(res["layout"] == "zigzag");
  CHECK(res["backward"] == true);
  for (const char* name : {"O", "L", "dQ", "dK", "dV"})
    CHECK(res[std::string("verdict_") + name] == "pass");
  CHECK(res["pass"] == true);
}

// The share of the GEMM ceiling a bench table reports, or -1 when it says the GEMM was slower than
// the run (then no ceiling: no share above 100 % is ever printed).
double share_of_ceiling(const std::string& out) {
  const std::string said = "GEMM ceiling in the same run: ";
  const auto at = out.find(said);
  if (at == std::string::npos) return has(out, "slower than this run") ? -1 : -2;
  const auto is = out.find("this is ", at);
  return is == std::string::npos ? -2 : std::stod(out.substr(is + 8));
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

// Every line of a --json run parsed; fails the test on a line that is not a JSON object.
std::vector<nlohmann::json> json_lines(const std::string& out) {
  std::vector<nlohmann::json> objects;
  for (const auto& line : lines(out)) {
    INFO("line: " << line);
    const auto j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    REQUIRE(j.is_object());
    REQUIRE(j.contains("event"));
    objects.push_back(j);
  }
  return objects;
}

std::size_t count_events(const std::vector<nlohmann::json>& objects, const std::string& event) {
  std::size_t n = 0;
  for (const auto& j : objects) n += j["event"] == event;
  return n;
}

TEST_CASE("--json on every subcommand prints JSON Lines only") {
  write_inputs(12, 12, 3);
  const char* commands[] = {"softmax",
                            "forward --causal",
                            "backward --causal",
                            "memory",
                            "check --q in_q.npy --k in_k.npy --v in_v.npy --o in_q.npy",
                            "walkthrough --section memory"};
  for (const char* cmd : commands) {
    const Run r = run(std::string(cmd) + " --json");
    INFO("command: " << cmd << " stderr: " << r.err);
    CHECK((r.code == 0 || r.code == 1));
    CHECK_FALSE(json_lines(r.out).empty());
  }
  const auto fwd = json_lines(run("forward --causal --json").out);
  REQUIRE(fwd.front()["event"] == "problem");
  CHECK(fwd.front()["Tr"] == 7);
  CHECK(count_events(fwd, "tile") == 21);  // the computed tiles of the lecture's causal run
  CHECK(count_events(fwd, "tile_skipped") == 14);
  CHECK(count_events(fwd, "rows_final") == 7);
  CHECK(fwd.back()["event"] == "result");
  CHECK(fwd.back()["err_O"].get<double>() < 1e-14);
  const auto soft = json_lines(run("softmax --json").out);
  CHECK(count_events(soft, "softmax_block") == 4);
  CHECK(soft.back()["l"].get<double>() == doctest::Approx(1.0410).epsilon(1e-4));
  const auto tl =
      json_lines(run("forward --n 5 --m 2 --causal --causal-align bottom-right --json").out);
  CHECK(tl.front()["grid"].is_array());
  bool minus_inf = false;  // fully masked rows: L = -inf travels as a string
  for (const auto& j : tl)
    if (j["event"] == "rows_final") minus_inf = minus_inf || j["L"][0] == "-inf";
  CHECK(minus_inf);
}

TEST_CASE("--trace-json writes the events to a file while the terminal shows text") {
  std::remove("trace.jsonl");
  const Run r = run("forward --causal --trace-json trace.jsonl");
  REQUIRE(r.code == 0);
  CHECK(has(r.out, "Tile map"));
  std::ifstream f("trace.jsonl");
  std::stringstream ss;
  ss << f.rdbuf();
  const auto events = json_lines(ss.str());
  CHECK(count_events(events, "tile") == 21);
}

TEST_CASE("--quiet prints only the results; --color always colours, never and pipes do not") {
  const Run q = run("forward --causal --quiet");
  REQUIRE(q.code == 0);
  CHECK_FALSE(has(q.out, "Tile map"));
  CHECK(has(q.out, "max |O - O_ref|"));
  CHECK(lines(q.out).size() <= 3);
  CHECK_FALSE(has(run("forward").out, "\033["));
  CHECK(has(run("forward --color always").out, "\033["));
  CHECK(has(run("forward --causal --trace tiles --color always").out, "\033["));
  CHECK_FALSE(has(run("forward --color never").out, "\033["));
}

TEST_CASE("Chinese output: the same numbers, Chinese words, aligned within 100 columns") {
  const Run zh = run("softmax --lang zh");
  REQUIRE(zh.code == 0);
  CHECK(has(zh.out, "7.705"));
  CHECK(has(zh.out, "1.0410"));
  CHECK(has(zh.out, "在线"));
  const Run env = run("memory --lang=zh");
  CHECK(has(env.out, "17,180"));
  CHECK(has(run("forward --help --lang zh").out, "查询"));
  const Run err = run("forward --n 0 --lang zh");
  CHECK(err.code == 2);
  CHECK(lines(err.err).size() == 1);
}

// Display columns of UTF-8 text: CJK (U+3000..U+9FFF) and fullwidth forms (U+FF00..U+FF60)
// count two, like a terminal draws them.
std::size_t display_columns(const std::string& line) {
  std::size_t cols = 0;
  for (std::size_t k = 0; k < line.size();) {
    const unsigned char c = static_cast<unsigned char>(line[k]);
    const std::size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    const unsigned char c1 = k + 1 < line.size() ? static_cast<unsigned char>(line[k + 1]) : 0;
    const bool wide =
        len == 3 && ((c >= 0xE3 && c <= 0xE9) || (c == 0xEF && c1 >= 0xBC && c1 <= 0xBD));
    cols += wide ? 2 : 1;
    k += len;
  }
  return cols;
}

TEST_CASE("walkthrough: every screen fits 100 columns and 30 rows, in English and Chinese") {
  for (const char* lang : {"en", "zh"}) {
    const Run r = run(std::string("walkthrough --no-pause --lang ") + lang);
    INFO("lang " << lang);
    REQUIRE(r.code == 0);
    const std::string marker = std::string(lang) == "en" ? "── step " : "── 第 ";
    std::vector<std::vector<std::string>> screens;
    for (const auto& line : lines(r.out)) {
      if (line.rfind(marker, 0) == 0) screens.emplace_back();
      if (!screens.empty()) screens.back().push_back(line);
      CHECK(display_columns(line) <= 100);
    }
    CHECK(screens.size() == 12);
    for (const auto& screen : screens) CHECK(screen.size() <= 30);
  }
  const Run back = run("walkthrough --no-pause --section backward");
  CHECK(has(back.out, "step 7/12"));
  CHECK_FALSE(has(back.out, "step 6/12"));
  CHECK(has(back.out, "$ flashdemo backward"));
  const Run piped = run("walkthrough --section memory < /dev/null");  // not a terminal: no wait
  CHECK(piped.code == 0);
  CHECK(has(piped.out, "step 12/12"));
}

// A projected terminal is 100 columns: every line of every subcommand's output fits, in both
// languages (a Chinese character takes two columns), for the defaults and the common variants.
TEST_CASE("every line of every subcommand fits 100 display columns, in English and Chinese") {
  write_inputs(16, 16, 4);
  REQUIRE(run("forward " + kQKV + " --save-o w_o.npy --trace none").code == 0);
  const std::vector<std::string> commands = {"softmax",
                                             "softmax --values=1000,1001,999 --block 1",
                                             "softmax --dtype fp64",
                                             "forward",
                                             "forward --causal",
                                             "forward --precision bf16",
                                             "forward --precision fp16 --causal",
                                             "forward --dtype fp32",
                                             "forward --trace tiles",
                                             "forward --causal --trace tiles",
                                             "forward --trace rows",
                                             "forward --show-p 3 --causal",
                                             "forward --impl fast",
                                             "backward",
                                             "backward --causal",
                                             "backward --precision bf16",
                                             "backward --precision fp16 --causal",
                                             "backward --trace rows",
                                             "backward --causal --trace tiles",
                                             "backward --impl fast",
                                             "memory",
                                             "memory --quiet",
                                             "check " + kQKV + " --o w_o.npy",
                                             "bench --n 64 --reps 1",
                                             "bench --n 64 --reps 1 --dtype bf16",
                                             "forward --dtype fp16 --causal",
                                             "info",
                                             "decode --m 4096 --reps 1",
                                             "decode --m 2000 --n 6 --d 8 --splits 16 --reps 1",
                                             "decode --n 3 --m 2 --d 4 --causal --reps 1",
                                             "forward --break no-max",
                                             "forward --break finite-mask",
                                             "forward --break wrong-align",
                                             "forward --break no-rescale",
                                             "forward --break l-starts-at-1",
                                             "backward --break no-d",
                                             "ring --n 64 --d 8",
                                             "ring --n 64 --d 8 --ranks 3 --causal --pass bwd",
                                             "ring --n 40 --m 30 --d 4 --layout contiguous"};
  for (const char* lang : {"en", "zh"})
    for (const std::string& cmd : commands) {
      const Run r = run(cmd + " --lang " + lang);
      INFO(cmd << " --lang " << lang);
      CHECK(r.code == 0);
      for (const auto& line : lines(r.out)) {
        INFO(line);
        CHECK(display_columns(line) <= 100);
      }
    }
}

// Every line of `flashdemo info` in Chinese, from --lang zh or from LANG: each has Chinese words,
// and none of the English of the catalog's reasons for no GPU is left.
TEST_CASE("info in Chinese: every line it prints is translated, the reason for no GPU too") {
  const Run flag = run("info --lang zh");
  const Run env = in_dir(".", "LC_ALL= LANG=zh_CN.UTF-8 $FD info");
  for (const Run& r : {flag, env}) {
    INFO(r.out);
    REQUIRE(r.code == 0);
    CHECK(lines(r.out).size() >= 4);
    for (const auto& line : lines(r.out)) CHECK(display_columns(line) > columns(line));
    for (const char* english : {"built without CUDA", "no NVIDIA driver", "no CUDA device",
                                "CUDA error:", "none (", "hardware threads", "unknown compiler"})
      CHECK_FALSE(has(r.out, english));
    CHECK(has(r.out, "GPU："));
  }
  CHECK(flag.out == env.out);
  CHECK(has(run("info").out, "GPU: "));
  CHECK(has(run("info --lang zh --help").out, "示例："));
}

TEST_CASE("completion scripts and the man page come from the CLI definition") {
  const Run bash = run("completion bash");
  REQUIRE(bash.code == 0);
  CHECK(has(bash.out, "complete -F _flashdemo flashdemo"));
  CHECK(has(bash.out, "no-rescale"));
  std::ofstream("completion.bash") << bash.out;
  CHECK(std::system("bash -n completion.bash") == 0);
  const Run zsh = run("completion zsh");
  CHECK(has(zsh.out, "#compdef flashdemo"));
  CHECK(has(zsh.out, "walkthrough"));
  CHECK(run("completion fish").code == 2);
  const Run man = run("manpage");
  CHECK(has(man.out, ".TH FLASHDEMO 1"));
  CHECK(has(man.out, ".SS walkthrough"));
}

// A scratch directory for completion: arrays, a page, traces, a text file and a directory.
std::string completion_dir() {
  const std::string dir = "complete";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/sub");
  for (const char* f : {"q.npy", "notes.txt", "page.html", "t.jsonl", "t.json"})
    std::ofstream(dir + "/" + f) << "x";
  std::ofstream(dir + "/completion.bash") << run("completion bash").out;
  std::ofstream(dir + "/_flashdemo") << run("completion zsh").out;
  return dir;
}

// What bash completion offers at the end of each line (a trailing space starts a new word), as
// bash calls it: the script sourced, COMP_WORDS and COMP_CWORD set, _flashdemo run. One line of
// sorted words per line asked.
std::vector<std::string> bash_offers(const std::string& dir,
                                     const std::vector<std::string>& asked) {
  std::string script =
      "source ./completion.bash\n"
      "comp() { COMP_WORDS=(\"$@\"); COMP_CWORD=$(($# - 1)); COMPREPLY=(); _flashdemo;\n"
      "  printf '%s\\n' \"${COMPREPLY[@]}\" | sort | tr '\\n' ' '; echo; }\n";
  for (const std::string& line : asked) {
    std::string call = "comp";
    for (const std::string& w : words(line)) call += " '" + w + "'";
    script += call + (line.back() == ' ' ? " ''\n" : "\n");
  }
  const Run r = in_dir(dir, script);
  std::vector<std::string> out;
  for (const auto& l : lines(r.out)) out.push_back(l.empty() ? l : l.substr(0, l.size() - 1));
  return out;
}

TEST_CASE("bash completion offers each option's values: choices, its kind of file, languages") {
  const std::string dir = completion_dir();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"flashdemo --lang ", "en zh"},
      {"flashdemo forward --lang ", "en zh"},
      {"flashdemo check --color ", "always auto never"},
      {"flashdemo forward --lang = ", "en zh"},  // --lang=: bash splits at the =
      {"flashdemo --lang zh ",
       "--color --help --json --lang --quiet --version backward bench check completion decode "
       "forward "
       "info ladder manpage memory ring softmax walkthrough"},
      {"flashdemo ladder --dtype ", "bf16 fp16"},
      {"flashdemo ladder --device ", "cpu cuda"},
      {"flashdemo forward --q ", "q.npy sub"},
      {"flashdemo forward --save-lse ", "q.npy sub"},
      {"flashdemo backward --do ", "q.npy sub"},
      {"flashdemo check --o ", "q.npy sub"},
      {"flashdemo check --dv ", "q.npy sub"},
      {"flashdemo softmax --input ", "q.npy sub"},
      {"flashdemo forward --q s", "sub"},
      {"flashdemo forward --html ", "page.html sub"},
      {"flashdemo softmax --trace-json ", "sub t.json t.jsonl"},
      {"flashdemo forward --trace ", "none rows summary tiles"},
      {"flashdemo forward --precision ", "bf16 fp16"},
      {"flashdemo check --precision ", "auto bf16 fp16 fp32 fp64"},
      {"flashdemo backward --dtype ", "bf16 f32 f64 fp16 fp32 fp64"},
      {"flashdemo softmax --dtype ", "f32 f64 fp32 fp64"},
      {"flashdemo memory --dtype ", "bf16 f32 fp16 fp32"},
      {"flashdemo forward --causal-align ", "bottom-right top-left"},
      {"flashdemo walkthrough --section ", "backward forward memory softmax"},
      {"flashdemo bench --impl ", "fast gemm hopper mma reference simt tc teaching tiled"},
      {"flashdemo forward --impl ", "fast hopper mma simt tc teaching"},
      {"flashdemo forward --break ",
       "finite-mask l-starts-at-1 list no-max no-rescale wrong-align"},
      {"flashdemo backward --break n", "no-d no-max no-rescale"},
      {"flashdemo completion b", "bash"},
      {"flashdemo forward --n ", ""},
      {"flashdemo forward --caus", "--causal --causal-align"},
  };
  std::vector<std::string> asked;
  for (const auto& c : cases) asked.push_back(c.first);
  const std::vector<std::string> got = bash_offers(dir, asked);
  REQUIRE(got.size() == cases.size());
  for (std::size_t k = 0; k < cases.size(); ++k) {
    INFO("completing '" << cases[k].first << "'");
    CHECK(got[k] == cases[k].second);
  }
}

// The choices and file options of every subcommand, read from its --help ("--trace
// TEXT:{none, ...}", "--q TEXT:FILE"): completion offers exactly those choices, and for a file
// directories and files of its kind only.
TEST_CASE("bash completion: every choice and file option of every subcommand, from --help") {
  const std::string dir = completion_dir();
  std::vector<std::string> asked, expected;
  for (const char* sub : {"softmax", "forward", "backward", "memory", "check", "walkthrough",
                          "bench", "completion"}) {
    for (const auto& line : lines(run(std::string(sub) + " --help").out)) {
      const auto w = words(line);
      if (w.size() < 2 || w[0].rfind("--", 0) != 0) continue;
      const auto b = line.find(":{"), e = line.find('}');
      if (w[1] == "TEXT:FILE") {
        asked.push_back(std::string("flashdemo ") + sub + " " + w[0] + " ");
        expected.push_back(w[0] == "--html"         ? "page.html sub"
                           : w[0] == "--trace-json" ? "sub t.json t.jsonl"
                                                    : "q.npy sub");
      } else if (b != std::string::npos && e != std::string::npos && b < e) {
        std::vector<std::string> choices;
        std::stringstream ss(line.substr(b + 2, e - b - 2));
        for (std::string c; std::getline(ss, c, ',');) choices.push_back(words(c)[0]);
        std::sort(choices.begin(), choices.end());
        std::string joined;
        for (const auto& c : choices) joined += (joined.empty() ? "" : " ") + c;
        asked.push_back(std::string("flashdemo ") + sub + " " + w[0] + " ");
        expected.push_back(joined);
      }
    }
  }
  CHECK(asked.size() >= 40);
  const std::vector<std::string> got = bash_offers(dir, asked);
  REQUIRE(got.size() == asked.size());
  for (std::size_t k = 0; k < asked.size(); ++k) {
    INFO("completing '" << asked[k] << "'");
    CHECK(got[k] == expected[k]);
  }
}

// zsh, where it is installed: the script parses, and an interactive zsh completes with it.
TEST_CASE("zsh completion: the same values, in a real zsh") {
  if (std::system("command -v zsh >/dev/null && zsh -fc 'zmodload zsh/zpty'") != 0) {
    MESSAGE("zsh (with zsh/zpty) is not installed: the zsh completion is not run");
    return;
  }
  const std::string dir = completion_dir();
  CHECK(in_dir(dir, "zsh -n _flashdemo").code == 0);
  const std::string helper = std::string(FLASHDEMO_TESTS) + "/zsh_complete.zsh";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"flashdemo --lang ", "en zh"},
      {"flashdemo forward --lang ", "en zh"},
      {"flashdemo forward --q ", "q.npy sub"},
      {"flashdemo forward --html ", "page.html sub"},
      {"flashdemo forward --trace-json ", "sub t.json t.jsonl"},
      {"flashdemo forward --trace ", "none rows summary tiles"},
      {"flashdemo completion ", "bash zsh"},
      {"flashdemo manp", "manpage"},
  };
  for (const auto& [line, offers] : cases) {
    const Run r = in_dir(
        dir, "timeout 30 zsh -f '" + helper + "' \"$PWD\" '" + line + "' | sort | tr '\\n' ' '");
    INFO("completing '" << line << "' | " << r.err);
    CHECK(r.out == offers + " ");
  }
}

// The example lines under "Examples:" (or "示例：") of a --help text.
std::vector<std::string> example_lines(const std::string& help) {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& line : lines(help)) {
    if (line == "Examples:" || line == "示例：")
      in = true;
    else if (in && line.rfind("  ", 0) == 0 && has(line, "flashdemo"))
      out.push_back(line);
  }
  return out;
}

TEST_CASE("every subcommand's --help shows its own examples, in English and Chinese") {
  const std::vector<std::string> app_examples = example_lines(run("--help").out);
  REQUIRE_FALSE(app_examples.empty());
  for (const char* sub : {"softmax", "forward", "backward", "memory", "check", "bench", "ladder",
                          "decode", "walkthrough", "info", "manpage", "completion"}) {
    for (const char* lang : {"en", "zh"}) {
      const Run help = run(std::string(sub) + " --help --lang " + lang);
      INFO(sub << " " << lang << "\n" << help.out);
      CHECK(help.code == 0);
      const auto examples = example_lines(help.out);
      CHECK(examples.size() >= 2);
      for (const std::string& line : examples) {
        CHECK(has(line + " ", std::string("flashdemo ") + sub + " "));
        CHECK(columns(line) <= 100);
      }
      if (std::string(lang) == "en") CHECK(examples != app_examples);
    }
  }
}

// The names of the "Subcommands:" section of the top-level --help (a name line starts with two
// spaces; a wrapped description continues on lines indented further).
std::vector<std::string> listed_subcommands() {
  std::vector<std::string> out;
  bool in = false;
  for (const auto& line : lines(run("--help").out)) {
    if (line == "Subcommands:")
      in = true;
    else if (in && line.empty())
      break;
    else if (in && line.rfind("   ", 0) != 0)
      out.push_back(words(line)[0]);
  }
  return out;
}

TEST_CASE("--help lists every subcommand the missing-subcommand error names, manpage too") {
  const std::vector<std::string> listed = listed_subcommands();
  std::string joined;
  for (const std::string& name : listed) joined += (joined.empty() ? "" : ", ") + name;
  const Run none = run("");
  CHECK(has(none.err, "choose one of " + joined + " (flashdemo --help)"));
  CHECK(has(joined, "manpage"));
  CHECK(has(run("manpage --help").out, "Print the man page"));
}

TEST_CASE("the man page: NAME is \"flashdemo \\- description\", and man renders it cleanly") {
  const Run man = run("manpage");
  REQUIRE(man.code == 0);
  CHECK(has(man.out, ".SH NAME\nflashdemo \\- FlashAttention, step by step (lecture 5"));
  CHECK_FALSE(has(man.out, "flashdemo \\- flashdemo"));
  CHECK(has(man.out, ".TP\n\\fB\\-q\\fR, \\fB\\-\\-quiet\\fR\n"));
  CHECK(has(man.out, ".TP\n\\fB\\-\\-lang\\fR \\fIen|zh\\fR\n"));
  CHECK(has(man.out, ".TP\n\\fB\\-\\-q\\fR \\fIFILE\\fR\n"));
  CHECK(has(man.out, ".SS manpage\n"));
  std::ofstream("flashdemo.1") << man.out;
  if (std::system("command -v man >/dev/null && command -v lexgrog >/dev/null") != 0) {
    MESSAGE("man-db is not installed: the rendering is not checked");
    return;
  }
  // lexgrog reads NAME as whatis and apropos do; man --warnings reports any roff problem.
  const Run whatis = in_dir(".", "lexgrog flashdemo.1");
  CHECK(has(whatis.out, "\"flashdemo - FlashAttention, step by step (lecture 5"));
  const Run shown = in_dir(".", "MANWIDTH=100 man --warnings -l flashdemo.1 | col -b");
  CHECK(shown.code == 0);
  CHECK(shown.err.empty());
  CHECK(has(shown.out, "\n       flashdemo - FlashAttention, step by step"));
  CHECK(has(shown.out, "\n       -q, --quiet\n"));
  CHECK(has(shown.out, "flashdemo manpage | man -l -"));
}

TEST_CASE("--help and --version exit 0") {
  CHECK(run("--help").code == 0);
  CHECK(run("forward --help").code == 0);
  const Run v = run("--version");
  CHECK(v.code == 0);
  CHECK(has(v.out, "flashdemo "));
}

// ---- Files are never lost: every case runs in a scratch directory whose files are compared,
// byte for byte, before and after (tests/cli/test_cli.cpp, issue "Reliability").

namespace {

// Every regular file under dir (hidden ones too), path -> bytes.
std::map<std::string, std::string> files_in(const std::string& dir) {
  std::map<std::string, std::string> out;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    if (std::filesystem::is_regular_file(std::filesystem::symlink_status(e.path())))
      out[e.path().string()] = slurp(e.path().string());
  return out;
}

// A fresh scratch directory with inputs, unrelated files whose names a careless writer would
// touch, a directory, a hard link and a symbolic link to an input.
std::string scratch() {
  const std::string dir = "safety";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir + "/d1");
  std::filesystem::create_directories(dir + "/dir.npy");
  fd::TorchGenerator gen(8);
  for (const char* name : {"q", "k", "v", "do"})
    fd::write_npy(dir + "/" + name + ".npy", gen.randn_matrix<double>(10, 4));
  fd::write_npy(dir + "/v1.npy", gen.randn_matrix<double>(6, 1).col(0).eval());
  std::filesystem::copy_file(dir + "/q.npy", dir + "/in.npy.tmp");
  std::ofstream(dir + "/o.npy.tmp") << "not mine";
  std::ofstream(dir + "/o.npy") << "an earlier O";
  std::ofstream(dir + "/d1/.tmp") << "keep";
  std::filesystem::create_hard_link(dir + "/q.npy", dir + "/hard.npy");
  std::filesystem::create_symlink("q.npy", dir + "/link.npy");
  return dir;
}

}  // namespace

TEST_CASE("files are never lost or overwritten: failed runs change nothing, one line, no stdout") {
  const std::string dir = scratch();
  const std::string qkv = "--q q.npy --k k.npy --v v.npy";
  struct Bad {
    std::string script, names;
    int code;
  };
  const Bad cases[] = {
      {"$FD forward " + qkv + " --html q.npy", "--html q.npy is the input --q q.npy", 2},
      {"$FD forward " + qkv + " --trace-json k.npy", "--trace-json k.npy is the input --k", 2},
      {"$FD softmax --input v1.npy --html v1.npy", "--html v1.npy is the input --input", 2},
      {"$FD forward --save-o same.npy --save-lse same.npy", "is also the output --save-o", 2},
      {"$FD backward " + qkv + " --do do.npy --save-dq g.npy --save-dk g.npy", "is also the output",
       2},
      {"$FD forward --html x --save-o x", "is also the output", 2},
      {"$FD forward " + qkv + " --save-o hard.npy", "--save-o hard.npy is the input --q q.npy", 2},
      {"$FD forward " + qkv + " --save-o link.npy", "--save-o link.npy is the input --q q.npy", 2},
      {"$FD forward " + qkv + " --save-o ./q.npy", "is the input --q q.npy", 2},
      {"$FD forward --save-o o.npy --save-lse dir.npy", "--save-lse dir.npy: is a directory", 4},
      {"$FD forward --save-o d1/", "d1/: is a directory", 4},
      {"$FD forward --save-o /dev/stdout", "--save-o /dev/stdout: is a system file", 4},
      {"$FD forward --save-o /dev/null", "--save-o /dev/null: is a system file", 4},
      {"$FD forward --save-o missing-dir/o.npy", "cannot write there: No such file", 4},
      {"$FD forward --q '' --k k.npy --v v.npy", "--q: needs a file name", 2},
      {"$FD backward " + qkv + " --do ''", "--do: needs a file name", 2},
      {"$FD forward --save-o ''", "--save-o: needs a file name", 2},
      {"$FD softmax --values ''", "--values", 2},
      {"$FD forward --q . --k k.npy --v v.npy", ".: is a directory, not a file", 4},
      {"(ulimit -f 1; $FD forward --n 300 --save-o fs.npy)", "fs.npy: cannot write: File too large",
       4},
      {"$FD forward > /dev/full", "cannot write to standard output: No space left on device", 4},
      {"$FD forward --json > /dev/full", "cannot write to standard output", 4},
      {"$FD forward --trace rows --n 300 > /dev/full", "cannot write to standard output", 4},
      {"$FD forward >&-", "cannot write to standard output: Bad file descriptor", 4},
      // the outputs committed, then standard output fails: every file is put back
      {"$FD forward --save-o o.npy > /dev/full", "cannot write to standard output", 4},
      {"$FD forward --save-o o.npy --save-lse new.npy --html p.html >&-",
       "cannot write to standard output", 4},
      {"$FD backward --save-dq o.npy --save-dv new.npy > /dev/full",
       "cannot write to standard output", 4},
      // a stream whose header promises more than the memory: refused before it is read
      {"(printf '\\x93NUMPY\\x01\\x00\\x76\\x00'; printf \"{'descr': '<f4', "
       "'fortran_order': False, 'shape': (1000000000, 4), }%49s\\n\" ''; cat /dev/zero) | "
       "$FD softmax --input /dev/stdin",
       "more than the", 3},
      // the fast path's own buffers are in the estimate (a huge tile under a small limit)
      {"(ulimit -v 400000; $FD forward --n 2560 --d 4 --impl fast --block-q 2560 --block-k 2560)",
       "of memory is available", 3},
      {"$FD --lang '' forward", "--lang: '' is not one of en, zh", 2},
  };
  for (const Bad& b : cases) {
    if (kSanitized && has(b.script, "ulimit -v")) continue;  // ASan maps terabytes of shadow
    const auto before = files_in(dir);
    const Run r = in_dir(dir, b.script);
    INFO("script: " << b.script << " | stderr: " << r.err);
    CHECK(r.code == b.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, b.names));
    CHECK(files_in(dir) == before);  // byte for byte, no temporary left
  }
}

TEST_CASE("outputs that succeed replace only their own files; inputs from pipes and FIFOs") {
  const std::string dir = scratch();
  if (geteuid() == 0) {  // as root a device node could be replaced by a file: it is refused
    const Run full = in_dir(dir,
                            "cp -a /dev/full full && $FD forward --save-o full; c=$?; "
                            "test -c full && rm full && exit $c");
    CHECK(full.code == 4);
    CHECK(has(full.err, "--save-o full: is not a regular file"));
  }
  const auto before = files_in(dir);
  const Run r = in_dir(dir,
                       "$FD forward --save-o o.npy --trace none && "
                       "$FD forward --q in.npy.tmp --k k.npy --v v.npy --save-o in.npy --quiet");
  REQUIRE(r.code == 0);
  auto after = files_in(dir);
  CHECK(after[dir + "/o.npy.tmp"] == before.at(dir + "/o.npy.tmp"));
  CHECK(after[dir + "/in.npy.tmp"] == before.at(dir + "/in.npy.tmp"));
  CHECK(after[dir + "/o.npy"] != before.at(dir + "/o.npy"));
  CHECK(after.count(dir + "/in.npy") == 1);
  CHECK(after.size() == before.size() + 1);  // in.npy, and no temporary
  const Run pipe = in_dir(dir, "$FD forward --q <(cat q.npy) --k k.npy --v v.npy --quiet");
  CHECK(pipe.code == 0);
  CHECK(has(pipe.out, "max |O - O_ref|"));
  const Run fifo = in_dir(dir,
                          "rm -f f.fifo && mkfifo f.fifo && (cat q.npy > f.fifo &) && "
                          "$FD forward --q f.fifo --k k.npy --v v.npy --quiet; rm -f f.fifo");
  CHECK(fifo.code == 0);
  const Run to_fifo = in_dir(dir,
                             "rm -f o.fifo && mkfifo o.fifo && $FD forward --save-o o.fifo; "
                             "c=$?; rm -f o.fifo; exit $c");
  CHECK(to_fifo.code == 4);
  CHECK(has(to_fifo.err, "is not a regular file"));
  // A reader that goes away ends the run quietly, SIGPIPE ignored or not.
  const Run closed = in_dir(dir, "trap '' PIPE; $FD forward --trace rows --n 300 | head -1");
  CHECK(closed.code == 0);
  CHECK(closed.err.empty());
}

TEST_CASE("parallel runs writing one path: every one succeeds, the file is whole, no temporary") {
  const std::string dir = scratch();
  const Run r = in_dir(dir,
                       "for k in $(seq 12); do ($FD forward --save-o par.npy --quiet "
                       "> /dev/null || echo failed) & done; wait");
  CHECK(r.code == 0);
  CHECK(r.out.empty());
  CHECK(r.err.empty());
  const fd::NpyArray a = fd::read_npy(dir + "/par.npy");
  CHECK(a.shape == std::vector<fd::index_t>{100, 32});
  for (const auto& e : std::filesystem::directory_iterator(dir))
    CHECK_FALSE(e.path().filename().string().rfind(".par.npy", 0) == 0);
}

// A disk that fills during the write: a 16 KB tmpfs in a private mount namespace, where the
// system lets one be made (unshare -rm); elsewhere this case is skipped.
TEST_CASE("a full disk: one line, the earlier output intact, no temporary") {
  if (std::system("unshare -rm true 2>/dev/null") != 0) {
    MESSAGE("unshare -rm is not permitted here: the full-disk case is skipped");
    return;
  }
  const std::string script =
      "mkdir -p small && unshare -rm bash -c 'mount -t tmpfs -o size=16k tmpfs small && "
      "echo earlier > small/o.npy && $FD forward --n 300 --save-o small/o.npy; c=$?; "
      "ls -a small; cat small/o.npy; exit $c'";
  const Run r = in_dir(scratch(), script);
  CHECK(r.code == 4);
  CHECK(has(r.err, "small/o.npy: cannot write: No space left on device"));
  CHECK(lines(r.err).size() == 1);
  CHECK(r.out == ".\n..\no.npy\nearlier\n");  // no report, no temporary, the old file as it was
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

// ---- No abort, ever; outputs all or none, and only one's own; the smaller cases (issue 28,
// sections 4 to 6). Every case runs in the scratch directory, compared byte for byte after.

namespace {

// A .npy file with the header `dict` and `data` bytes of zeros.
void write_npy_header(const std::string& path, const std::string& dict, std::size_t data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string bytes("\x93NUMPY\x01\x00", 8);
  bytes += char(header.size() & 0xff), bytes += char(header.size() >> 8);
  std::ofstream(path, std::ios::binary) << bytes << header << std::string(data, '\0');
}

// The hidden files a run of flashdemo would leave in `dir` (its temporaries, kept files).
std::vector<std::string> hidden_in(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.path().filename().string()[0] == '.') out.push_back(e.path().filename().string());
  return out;
}

}  // namespace

TEST_CASE("stderr closed or full: the documented exit code on every entry point, never an abort") {
  const std::string dir = scratch();
  struct Case {
    std::string script;
    int code;
  };
  const Case cases[] = {
      {"$FD forward --n 0", 2},
      {"$FD teleport", 2},
      {"$FD", 2},
      {"$FD softmax --values= --quiet", 2},
      {"$FD forward --causl", 2},
      {"$FD forward --q missing.npy --k k.npy --v v.npy", 4},
      {"$FD forward --save-o dir.npy", 4},
      {"$FD forward --save-o o.npy --save-lse o.npy", 2},
      {"$FD forward --n 2000000 --m 2000000", 3},
      {"$FD --help", 0},
      {"$FD forward --help", 0},
      {"$FD --version", 0},
      {"$FD backward --deterministic", 2},
      {"$FD ring --n 2 --ranks 5", 2},
      {"$FD decode --m 16 --splits 999", 2},
      {"$FD ladder --device cpu", 2},
      {"$FD bench --n 0", 2},
      {"$FD check --q q.npy --k k.npy --v v.npy", 2},
      {"$FD memory --d 0", 2},
      {"$FD forward --save-o o.npy > /dev/full", 4},
  };
  for (const Case& c : cases)
    for (const char* redirect : {" 2>&-", " 2>/dev/full"}) {
      const auto before = files_in(dir);
      const std::string script = c.script + redirect + (has(c.script, ">") ? "" : " >/dev/null");
      const Run r = in_dir(dir, script);
      INFO("script: " << script << " | stderr: " << r.err);
      CHECK(r.code == c.code);
      CHECK(r.err.empty());  // no abort message, no stack trace
      CHECK(files_in(dir) == before);
    }
  // A run that succeeds with stderr closed: its file is whole (no error line landed in it).
  const Run ok = in_dir(dir, "$FD forward --save-o fine.npy --quiet 2>&- >/dev/null");
  CHECK(ok.code == 0);
  CHECK(fd::read_npy(dir + "/fine.npy").shape == std::vector<fd::index_t>{100, 32});
}

TEST_CASE("out of memory with a trace, JSON or a page kept: exit 3, one line, no file changed") {
  if (kSanitized) return;  // ulimit -v: ASan maps terabytes of shadow
  const std::string dir = scratch();
  const std::string cases[] = {
      "$FD forward --n 3000 --d 4 --block-q 4 --block-k 4 --html p.html",
      "$FD forward --n 1000 --d 4 --block-q 1 --block-k 1 --json",
      "$FD backward --n 1000 --d 4 --block-q 2 --block-k 2 --trace-json t.jsonl --save-dq o.npy",
      "$FD forward --n 2400 --d 4 --block-q 2 --block-k 2 --trace tiles --save-o o.npy",
      "$FD softmax --n 4000000 --block 1 --html p.html",
      "$FD softmax --n 4000000 --block 1 --json",
      "$FD softmax --n 8000000 --block 1 --trace-json t.jsonl",
  };
  for (const std::string& c : cases) {
    const auto before = files_in(dir);
    const Run r = in_dir(dir, "(ulimit -v 400000; " + c + ")");
    INFO("script: " << c << " | stderr: " << r.err);
    CHECK(r.code == 3);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, "memory"));
    CHECK(files_in(dir) == before);
  }
}

TEST_CASE("a signal at any moment leaves all outputs or none, and no temporary") {
  const std::string dir = scratch();
  const std::string earlier = slurp(dir + "/o.npy");
  int committed = 0;
  for (const char* delay : {"0.01", "0.05", "0.1", "0.2", "0.3", "0.4", "0.6", "0.8", "1.2", "2"}) {
    const Run r = in_dir(dir, std::string("timeout -s TERM ") + delay +
                                  " $FD forward --n 700 --save-o o.npy --save-lse l.npy "
                                  "--html p.html --quiet >/dev/null");
    INFO("killed after " << delay << " s, exit " << r.code);
    const bool replaced = slurp(dir + "/o.npy") != earlier;
    CHECK(std::filesystem::exists(dir + "/l.npy") == replaced);
    CHECK(std::filesystem::exists(dir + "/p.html") == replaced);
    CHECK((r.code == 0) == replaced);
    CHECK(hidden_in(dir).empty());
    committed += replaced;
    std::filesystem::remove(dir + "/l.npy"), std::filesystem::remove(dir + "/p.html");
    std::ofstream(dir + "/o.npy") << earlier;
  }
  MESSAGE(committed << " of 10 runs ended before the signal");
  // A reader that goes away (SIGPIPE, not ignored by the shell): the run ends quietly, its
  // outputs committed whole, nothing left beside them.
  const Run pipe = in_dir(dir,
                          "$FD forward --n 300 --trace rows --save-o o.npy --save-lse l.npy | "
                          "head -1 >/dev/null; echo ${PIPESTATUS[0]}");
  CHECK(pipe.out == "0\n");
  CHECK(pipe.err.empty());
  CHECK(fd::read_npy(dir + "/o.npy").shape == std::vector<fd::index_t>{300, 32});
  CHECK(std::filesystem::exists(dir + "/l.npy"));
  CHECK(hidden_in(dir).empty());
}

TEST_CASE("another user's file is refused, its contents and owner kept; root's runs included") {
  if (geteuid() != 0) {
    MESSAGE("not root: no file of another user can be made here; skipped");
    return;
  }
  const std::string dir = scratch();
  const Run root = in_dir(dir,
                          "cp q.npy theirs.npy && chmod 666 theirs.npy && chown nobody theirs.npy "
                          "&& $FD forward --save-o theirs.npy; c=$?; stat -c %U theirs.npy; "
                          "cmp -s q.npy theirs.npy && echo same; rm -f theirs.npy; exit $c");
  CHECK(root.code == 4);
  CHECK(lines(root.err).size() == 1);
  CHECK(has(root.err, "--save-o theirs.npy: belongs to another user (uid 65534)"));
  CHECK(root.out == "nobody\nsame\n");
  // As an ordinary user: root's mode-666 file in a directory anyone may write in.
  const std::string as_nobody = "setpriv --reuid=65534 --regid=65534 --clear-groups ";
  if (in_dir(dir, as_nobody + "$FD --version").code != 0) {
    MESSAGE("cannot run flashdemo as nobody (setpriv): the ordinary user's case is skipped");
    return;
  }
  const Run user =
      in_dir(dir,
             "d=$(mktemp -d /tmp/flashdemo_shared.XXXXXX) && chmod 777 $d && "
             "cp q.npy $d/root.npy && chmod 666 $d/root.npy && " +
                 as_nobody +
                 "$FD forward --save-o $d/root.npy; c=$?; stat -c %U $d/root.npy; "
                 "cmp -s q.npy $d/root.npy && echo same; ls -A $d; rm -rf $d; exit $c");
  CHECK(user.code == 4);
  CHECK(lines(user.err).size() == 1);
  CHECK(has(user.err, "root.npy: belongs to another user (uid 0)"));
  CHECK(user.out == "root\nsame\nroot.npy\n");  // no temporary either
}

TEST_CASE(
    "symbolic links: every output written through, a dangling one too; clashes by real path") {
  const std::string dir = scratch();
  const Run through = in_dir(dir,
                             "ln -s made.npy o_link.npy && ln -s made.html p_link.html && "
                             "ln -s made.jsonl t_link.jsonl && $FD forward --save-o o_link.npy "
                             "--html p_link.html --trace-json t_link.jsonl --quiet >/dev/null && "
                             "test -L o_link.npy && test -L p_link.html && test -L t_link.jsonl && "
                             "test -f made.npy && test -f made.html && test -f made.jsonl");
  CHECK(through.code == 0);
  CHECK(through.err.empty());
  CHECK(fd::read_npy(dir + "/made.npy").shape == std::vector<fd::index_t>{100, 32});
  struct Bad {
    std::string script, names;
    int code;
  };
  const Bad cases[] = {
      {"ln -sf new.npy dangling.npy && $FD forward --save-o dangling.npy --save-lse new.npy",
       "--save-lse new.npy is also the output --save-o dangling.npy", 2},
      {"ln -sf q.npy to_q.npy && $FD forward --q q.npy --k k.npy --v v.npy --html to_q.npy",
       "--html to_q.npy is the input --q q.npy", 2},
      {"ln -sf /dev/null/flashdemo_never.npy into_dev.npy && $FD forward --save-o into_dev.npy",
       "--save-o into_dev.npy: is a system file (/dev/...)", 4},
  };
  const bool shm = std::filesystem::is_directory("/dev/shm");  // (where there is one)
  const Bad shm_cases[] = {
      {"ln -sfn /dev/shm shm && $FD forward --save-o shm/flashdemo_never.npy",
       "--save-o shm/flashdemo_never.npy: is a system file (/dev/...)", 4},
      {"ln -sf /dev/shm/flashdemo_never.npy into_shm.npy && $FD forward --save-o into_shm.npy",
       "--save-o into_shm.npy: is a system file (/dev/...)", 4},
  };
  std::vector<Bad> all(std::begin(cases), std::end(cases));
  if (shm) all.insert(all.end(), std::begin(shm_cases), std::end(shm_cases));
  for (const Bad& b : all) {
    const Run r = in_dir(dir, b.script);
    INFO("script: " << b.script << " | stderr: " << r.err);
    CHECK(r.code == b.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(has(r.err, b.names));
  }
  CHECK_FALSE(std::filesystem::exists(dir + "/new.npy"));
  CHECK_FALSE(std::filesystem::exists("/dev/shm/flashdemo_never.npy"));
  if (geteuid() == 0) {  // a link planted by another user is not followed
    const Run planted =
        in_dir(dir,
               "ln -s planted_target.npy planted.npy && chown -h nobody planted.npy "
               "&& $FD forward --save-o planted.npy; c=$?; "
               "test ! -e planted_target.npy && exit $c");
    CHECK(planted.code == 4);
    CHECK(has(planted.err, "planted.npy: is a symbolic link of another user's (uid 65534)"));
  }
}

TEST_CASE("the smaller cases: one line each, naming the real problem and the real limit") {
  const std::string dir = scratch();
  write_npy_header(dir + "/dup.npy",
                   "{'descr': '<f8', 'fortran_order': False, 'shape': (10, 4), "
                   "'shape': (4, 10), }",
                   320);
  write_npy_header(
      dir + "/long.npy",
      "{'descr': '<f8', 'fortran_order': False, 'shape': (" + std::string(5000, '9') + "x), }", 0);
  std::filesystem::copy_file(dir + "/q.npy", dir + "/new\nline.npy");
  struct Bad {
    std::string script, names;
    int code;
  };
  const Bad cases[] = {
      {"$FD forward --q dup.npy --k k.npy --v v.npy",
       "dup.npy: header gives 'shape' more than once", 4},
      {"$FD forward --q long.npy --k k.npy --v v.npy", "is not a tuple of sizes", 4},
      {"$FD forward --q $'new\\nline.npy' --k $'missing\\n.npy' --v v.npy",
       "$'missing\\n.npy': cannot open", 4},
      {"$FD forward --q $'new\\nline.npy' --k k.npy --v v.npy --save-o $'new\\nline.npy'",
       "--save-o $'new\\nline.npy' is the input --q $'new\\nline.npy'", 2},
      {"$FD forward --save-o $'no\\tdir/o.npy'", "--save-o $'no\\tdir/o.npy': cannot write there",
       4},
      {"$FD backward --deterministic", "--deterministic is for --device cuda", 2},
      {"$FD bench --deterministic --n 64", "--deterministic is for --device cuda", 2},
      {"(ulimit -v 300000; $FD forward --impl fast --threads 300 --n 64 --d 4)",
       "the address-space limit, ulimit -v, leaves", 3},
      // under mpirun, rank 0 alone says what is wrong with the command line
      {"OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=3 $FD ring --n -5", "--n", 2},
  };
  for (const Bad& b : cases) {
    if (kSanitized && has(b.script, "ulimit -v")) continue;
    const auto before = files_in(dir);
    const Run r = in_dir(dir, b.script);
    INFO("script: " << b.script << " | stderr: " << r.err);
    CHECK(r.code == b.code);
    CHECK(r.out.empty());
    CHECK(lines(r.err).size() == 1);
    CHECK(r.err.size() < 400);  // the 5 KB header is not echoed
    CHECK(has(r.err, b.names));
    CHECK(files_in(dir) == before);
  }
  for (const char* rank : {"OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=3 $FD ring --n -5",
                           "PMI_RANK=2 PMI_SIZE=3 $FD forward --frobnicate", "PMI_RANK=1 $FD"}) {
    const Run r = in_dir(dir, rank);
    INFO(rank);
    CHECK(r.code == 0);  // (rank 0 exits with the code: mpirun's status is its)
    CHECK(r.err.empty());
    CHECK(r.out.empty());
  }
}

// One judge, one exit-code policy (issue 28, section 2 and 3): a verdict that is not a pass exits 1
// on every subcommand; merges through L pass their own rule at any scale; nothing non-finite made
// from finite inputs is written or shown beside a pass.
TEST_CASE("the verdict: merges pass at large scales, FAIL exits 1, no NaN is saved or passed") {
  for (const char* dtype : {"fp64", "fp32"}) {
    for (const char* scale : {"3", "10", "60"}) {
      const std::string tail = std::string(" --scale ") + scale + " --dtype " + dtype;
      const Run d = run("decode --m 300 --splits 3 --threads 2 --reps 1 --quiet" + tail);
      INFO(tail << "\n" << d.out << d.err);
      CHECK(d.code == 0);
      const Run r = run("ring --n 96 --ranks 4 --pass bwd --causal --quiet" + tail);
      INFO(r.out << r.err);
      CHECK(r.code == 0);
    }
  }
  // --break: the FAIL is the lesson (exit 0); the D that no-d drops is shown, not judged.
  const Run br = run("backward --break no-d --trace none");
  CHECK(br.code == 0);
  CHECK(has(br.out, "FAIL"));
  CHECK(has(br.out, "not used in this run"));
  const Run bj = run("backward --break no-d --json");
  CHECK(has(bj.out, "\"verdict_D\":\"not used\""));
  // softmax in fp64: draws beyond fp64 are refused up front, never printed as m = inf.
  const Run sm = run("softmax --dtype fp64 --scale 1e308");
  CHECK(sm.code == 2);
  CHECK(sm.out.empty());
  CHECK(has(sm.err, "x = randn * --scale"));
  // fp32 dot products that overflow although every input fits: exit 1, nothing written.
  write_inputs(12, 12, 4);
  fd::Mat<double> q = fd::TorchGenerator(9).randn_matrix<double>(12, 4);
  q(3, 1) = 3.0e38;
  q(3, 2) = 3.0e38;
  fd::write_npy("in_qbig.npy", q);
  std::filesystem::remove("out_nan_o.npy");
  const Run ov =
      run("forward --q in_qbig.npy --k in_k.npy --v in_v.npy --dtype fp32 --trace none"
          " --save-o out_nan_o.npy --save-lse out_nan_l.npy");
  INFO(ov.out << ov.err);
  CHECK(ov.code != 0);
  CHECK_FALSE(std::filesystem::exists("out_nan_o.npy"));
  CHECK_FALSE(std::filesystem::exists("out_nan_l.npy"));
  CHECK_FALSE(has(ov.out, ": pass"));
  CHECK(std::count(ov.err.begin(), ov.err.end(), '\n') == 1);
}
