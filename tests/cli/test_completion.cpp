// test_completion.cpp — the completion scripts (bash, zsh) and the man page, generated from the
// CLI definition, and what bash, zsh and man make of them.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "runner.hpp"

using namespace cli;

namespace {

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

}  // namespace

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

TEST_CASE("bash completion offers each option's values: choices, its kind of file, languages") {
  const std::string dir = completion_dir();
  std::vector<std::string> names = listed_subcommands();  // the program's own list, sorted
  std::sort(names.begin(), names.end());
  std::string global_options_and_subcommands = "--color --help --json --lang --quiet --version";
  for (const std::string& name : names) global_options_and_subcommands += " " + name;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"flashdemo --lang ", "en zh"},
      {"flashdemo forward --lang ", "en zh"},
      {"flashdemo check --color ", "always auto never"},
      {"flashdemo forward --lang = ", "en zh"},  // --lang=: bash splits at the =
      {"flashdemo --lang zh ", global_options_and_subcommands},
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
  for (const std::string& sub : listed_subcommands()) {
    for (const auto& line : lines(run(sub + " --help").out)) {
      const auto w = words(line);
      if (w.size() < 2 || w[0].rfind("--", 0) != 0) continue;
      const auto b = line.find(":{"), e = line.find('}');
      if (w[1] == "TEXT:FILE") {
        asked.push_back("flashdemo " + sub + " " + w[0] + " ");
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
        asked.push_back("flashdemo " + sub + " " + w[0] + " ");
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
  for (const auto& entry :
       cases) {  // not a structured binding: INFO captures it, which clang 14 refuses
    const auto& line = entry.first;
    const auto& offers = entry.second;
    const Run r = in_dir(
        dir, "timeout 30 zsh -f '" + helper + "' \"$PWD\" '" + line + "' | sort | tr '\\n' ' '");
    INFO("completing '" << line << "' | " << r.err);
    CHECK(r.out == offers + " ");
  }
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
