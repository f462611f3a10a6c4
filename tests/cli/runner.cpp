// runner.cpp — runs the flashdemo binary for the CLI tests, and what they share (see runner.hpp).
#include "runner.hpp"

#include <doctest/doctest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "flashdemo/attention.hpp"
#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"
#include "flashdemo/teaching/flash_backward.hpp"

namespace cli {

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

}  // namespace

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

Run run(const std::string& args) {
  const std::string out = "cli_test_stdout.txt", err = "cli_test_stderr.txt";
  std::string cmd = "LC_ALL=C LANG=C ";  // appended, not '+': g++ 12 warns, wrongly, on the latter
  cmd.append(exe()).append(" ").append(args).append(" >").append(out).append(" 2>").append(err);
  const int status = std::system(cmd.c_str());
  Run r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string exe() {  // quoted for the shell (built in place: g++ 12 warns, wrongly, on '+')
  std::string quoted = FLASHDEMO_EXE;
  quoted.insert(quoted.begin(), '\'');
  quoted.push_back('\'');
  return quoted;
}

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

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string w; ss >> w;) out.push_back(w);
  return out;
}

std::size_t columns(const std::string& line) {
  std::size_t n = 0;
  for (unsigned char c : line) n += (c & 0xC0) != 0x80;
  return n;
}

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

BatchFiles write_batch(fd::index_t b, fd::index_t h, fd::index_t n, fd::index_t m, fd::index_t d) {
  using fd::Mat;
  BatchFiles f;
  const fd::AttnParams params{true, fd::CausalAlign::bottom_right, {}};
  auto append = [](std::vector<double>& to, const auto& x) {
    to.insert(to.end(), x.data(), x.data() + x.size());
  };
  fd::TorchGenerator gen(17);
  for (fd::index_t k = 0; k < b * h; ++k) {
    const Mat<double> Q = gen.randn_matrix<double>(n, d), K = gen.randn_matrix<double>(m, d),
                      V = gen.randn_matrix<double>(m, d), dO = gen.randn_matrix<double>(n, d);
    const auto fwd = fd::flash_forward(Q, K, V, params, {8, 8});
    const auto bwd = fd::flash_backward(Q, K, V, fwd, dO, params, {8, 8});
    append(f.Q, Q), append(f.K, K), append(f.V, V), append(f.dO, dO), append(f.O, fwd.O);
    append(f.L, fwd.L), append(f.dQ, bwd.dQ), append(f.dK, bwd.dK), append(f.dV, bwd.dV);
  }
  const std::vector<fd::index_t> qs{b, h, n, d}, ks{b, h, m, d}, ls{b, h, n};
  fd::write_npy("b_q.npy", f.Q.data(), qs), fd::write_npy("b_k.npy", f.K.data(), ks);
  fd::write_npy("b_v.npy", f.V.data(), ks), fd::write_npy("b_do.npy", f.dO.data(), qs);
  fd::write_npy("b_o.npy", f.O.data(), qs), fd::write_npy("b_l.npy", f.L.data(), ls);
  fd::write_npy("b_dq.npy", f.dQ.data(), qs), fd::write_npy("b_dk.npy", f.dK.data(), ks);
  fd::write_npy("b_dv.npy", f.dV.data(), ks);
  return f;
}

void write_inputs(fd::index_t n, fd::index_t m, fd::index_t d) {
  fd::TorchGenerator gen(5);
  fd::write_npy("in_q.npy", gen.randn_matrix<double>(n, d));
  fd::write_npy("in_k.npy", gen.randn_matrix<double>(m, d));
  fd::write_npy("in_v.npy", gen.randn_matrix<double>(m, d));
  fd::write_npy("in_do.npy", gen.randn_matrix<double>(n, d));
  fd::write_npy("in_q32.npy", gen.randn_matrix<float>(n, d));
}

bool gpu_here() {
  const Run r = run("info --json");
  return r.code == 0 && nlohmann::json::parse(r.out)["gpu"] != "";
}

// A name line of the "Subcommands:" section starts with two spaces; a wrapped description
// continues on lines indented further.
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

void check_every_subcommand(const std::vector<std::string>& commands,
                            const std::map<std::string, std::string>& elsewhere) {
  const std::vector<std::string> listed = listed_subcommands();
  REQUIRE_FALSE(listed.empty());
  for (const std::string& name : listed) {
    bool run_here = false;
    for (const std::string& cmd : commands) run_here = run_here || words(cmd).front() == name;
    INFO("subcommand " << name << ": neither run here nor said to be covered elsewhere");
    CHECK((run_here || elsewhere.count(name) == 1));
  }
  for (const auto& entry :
       elsewhere) {  // not a structured binding: INFO captures it, which clang 14 refuses
    const auto& name = entry.first;
    const auto& why = entry.second;
    INFO(name << " (" << why << ") is not a subcommand of flashdemo --help");
    CHECK(std::find(listed.begin(), listed.end(), name) != listed.end());
  }
}

}  // namespace cli
