// test_file_io.cpp — outputs written all or none (file_io.hpp): clashes with inputs and with each
// other found by the file itself (hard and symbolic links), nothing replaced before commit, no
// temporary left, streams read to their end; symbolic links written through, another user's
// file refused, system directories refused by real path, names quoted; a terminating signal
// (in a child process) undoes the run's files whole, whenever it comes.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "flashdemo/io/file_io.hpp"

using namespace fd;
namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

fs::path fresh_dir() {
  const fs::path dir = fs::temp_directory_path() / "flashdemo_test_file_io";
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::size_t entries(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++n;
  return n;
}

// Starts `body` in a child process; `then` runs in the parent meanwhile (a kill, say). Returns
// the signal that ended the child, or 0 when it exited.
int child_ended_by(const std::function<void()>& body, const std::function<void(pid_t)>& then) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    body();
    ::_exit(0);
  }
  then(pid);
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
}

// Two outputs of one run, o.npy (there before) and l.npy (new), staged with `bytes`.
void stage_two(OutputFiles& o, const fs::path& dir, const std::string& bytes) {
  o.add("--save-o", (dir / "o.npy").string());
  o.add("--save-lse", (dir / "l.npy").string());
  o.check({});
  o.stage((dir / "o.npy").string(), bytes);
  o.stage((dir / "l.npy").string(), bytes);
}

}  // namespace

TEST_CASE("an output that is an input or another output is refused, whatever its spelling") {
  const fs::path dir = fresh_dir();
  std::ofstream(dir / "q.npy") << "input";
  fs::create_hard_link(dir / "q.npy", dir / "hard.npy");
  fs::create_symlink(dir / "q.npy", dir / "link.npy");
  const std::vector<NamedFile> inputs{{"--q", (dir / "q.npy").string()}};
  for (const fs::path& out :
       {dir / "q.npy", dir / "hard.npy", dir / "link.npy", dir / "." / "q.npy"}) {
    OutputFiles o;
    o.add("--save-o", out.string());
    CHECK_THROWS_AS(o.check(inputs), FileClash);
  }
  OutputFiles two;
  two.add("--save-o", (dir / "new.npy").string());
  two.add("--save-lse", (dir / "." / "new.npy").string());  // not there yet: the same name
  CHECK_THROWS_AS(two.check(inputs), FileClash);
  CHECK(slurp(dir / "q.npy") == "input");
}

TEST_CASE("nothing is replaced before commit, and a run that fails leaves no temporary") {
  const fs::path dir = fresh_dir();
  std::ofstream(dir / "o.npy") << "earlier";
  std::ofstream(dir / "o.npy.tmp") << "not mine";  // the name an older version used
  {
    OutputFiles o;
    o.add("--save-o", (dir / "o.npy").string());
    o.add("--save-lse", (dir / "l.npy").string());
    o.check({});
    o.stage((dir / "o.npy").string(), "new O");
    CHECK(slurp(dir / "o.npy") == "earlier");  // staged only
    CHECK(entries(dir) == 3);                  // o.npy, o.npy.tmp and one temporary
  }                                            // the run fails before commit
  CHECK(slurp(dir / "o.npy") == "earlier");
  CHECK(slurp(dir / "o.npy.tmp") == "not mine");
  CHECK(entries(dir) == 2);
  OutputFiles o;
  o.add("--save-o", (dir / "o.npy").string());
  o.add("--save-lse", (dir / "l.npy").string());
  o.check({});
  o.stage((dir / "o.npy").string(), "new O");
  o.stage((dir / "l.npy").string(), "new L");
  o.commit();
  CHECK(slurp(dir / "o.npy") == "new O");
  CHECK(slurp(dir / "l.npy") == "new L");
  CHECK(slurp(dir / "o.npy.tmp") == "not mine");
  CHECK(entries(dir) == 4);  // and o.npy's earlier file, kept until the run settles
  settle_outputs(true);
  CHECK(entries(dir) == 3);
}

TEST_CASE("a commit is undone whole: a rename that fails, or a run that fails after it") {
  const fs::path dir = fresh_dir();
  std::ofstream(dir / "o.npy") << "earlier O";
  auto staged = [&](OutputFiles& o) {
    o.add("--save-o", (dir / "o.npy").string());
    o.add("--save-lse", (dir / "l.npy").string());
    o.check({});
    o.stage((dir / "o.npy").string(), "new O");
    o.stage((dir / "l.npy").string(), "new L");
  };
  {
    OutputFiles o;
    staged(o);
    fs::create_directories(dir / "l.npy");  // the second rename fails: the first is undone
    CHECK_THROWS_AS(o.commit(), FileError);
  }
  CHECK(slurp(dir / "o.npy") == "earlier O");
  CHECK(entries(dir) == 2);  // o.npy and the directory: no temporary, no kept file
  fs::remove(dir / "l.npy");
  {
    OutputFiles o;
    staged(o);
    o.commit();
  }
  CHECK(slurp(dir / "o.npy") == "new O");
  settle_outputs(false);  // standard output could not be written: the run failed after all
  CHECK(slurp(dir / "o.npy") == "earlier O");
  CHECK_FALSE(fs::exists(dir / "l.npy"));
  CHECK(entries(dir) == 1);
}

TEST_CASE("a replaced file keeps its permission bits") {
  const fs::path dir = fresh_dir();
  std::ofstream(dir / "o.npy") << "private";
  fs::permissions(dir / "o.npy", fs::perms::owner_read | fs::perms::owner_write);
  OutputFiles o;
  o.add("--save-o", (dir / "o.npy").string());
  o.check({});
  o.stage((dir / "o.npy").string(), "new");
  o.commit();
  settle_outputs(true);
  CHECK(slurp(dir / "o.npy") == "new");
  CHECK(fs::status(dir / "o.npy").permissions() ==
        (fs::perms::owner_read | fs::perms::owner_write));
}

TEST_CASE("targets that are not regular files of one's own are refused by name") {
  const fs::path dir = fresh_dir();
  fs::create_directories(dir / "sub");
  for (const std::string& bad : {(dir / "sub").string(), std::string("/dev/null"),
                                 std::string("/dev/stdout"), (dir / "nope" / "o.npy").string()}) {
    OutputFiles o;
    o.add("--save-o", bad);
    CHECK_THROWS_AS(o.check({}), FileError);
  }
}

TEST_CASE("a symbolic link to an output file is followed: the file is replaced, not the link") {
  const fs::path dir = fresh_dir();
  std::ofstream(dir / "real.npy") << "old";
  fs::create_symlink("real.npy", dir / "link.npy");
  OutputFiles o;
  o.add("--save-o", (dir / "link.npy").string());
  o.check({});
  o.stage((dir / "link.npy").string(), "new");
  o.commit();
  settle_outputs(true);
  CHECK(fs::is_symlink(dir / "link.npy"));
  CHECK(slurp(dir / "real.npy") == "new");
}

TEST_CASE("InputFile reads to the end and names a directory") {
  const fs::path dir = fresh_dir();
  std::ofstream(dir / "f") << "0123456789";
  InputFile in((dir / "f").string());
  char buf[16];
  CHECK(in.read(buf, 4) == 4);
  CHECK(in.read(buf, 16) == 6);  // the rest, then the end
  CHECK(in.read(buf, 16) == 0);
  CHECK_THROWS_WITH_AS(InputFile(dir.string()), doctest::Contains("is a directory"), FileError);
}

TEST_CASE(
    "a dangling symbolic link is written through: the file it names is made, the link stays") {
  const fs::path dir = fresh_dir();
  fs::create_symlink("made.npy", dir / "dangling.npy");
  OutputFiles o;
  o.add("--save-o", (dir / "dangling.npy").string());
  o.check({});
  o.stage((dir / "dangling.npy").string(), "new");
  o.commit();
  settle_outputs(true);
  CHECK(fs::is_symlink(dir / "dangling.npy"));
  CHECK(slurp(dir / "made.npy") == "new");
  CHECK(entries(dir) == 2);
  fs::remove(dir / "made.npy");
  OutputFiles two;  // clashes by where the writes land: the link's target named twice
  two.add("--save-o", (dir / "dangling.npy").string());
  two.add("--save-lse", (dir / "made.npy").string());
  CHECK_THROWS_WITH_AS(two.check({}), doctest::Contains("is also the output --save-o"), FileClash);
}

TEST_CASE("a system directory is refused by its real path, a symbolic link on the way included") {
  if (!fs::is_directory("/dev/shm")) {
    MESSAGE("no /dev/shm here: skipped");
    return;
  }
  const fs::path dir = fresh_dir();
  fs::create_directory_symlink("/dev/shm", dir / "shm");
  fs::create_symlink("/dev/shm/flashdemo_test_never.npy", dir / "into_shm.npy");
  for (const fs::path& bad : {dir / "shm" / "o.npy", dir / "into_shm.npy"}) {
    OutputFiles o;
    o.add("--save-o", bad.string());
    CHECK_THROWS_WITH_AS(o.check({}), doctest::Contains("is a system file (/dev/...)"), FileError);
  }
  CHECK_FALSE(fs::exists("/dev/shm/flashdemo_test_never.npy"));
}

TEST_CASE("another user's file, or link, is refused: its contents and owner stay") {
  if (::geteuid() != 0) {
    MESSAGE("not root: no file of another user can be made here; skipped");
    return;
  }
  const fs::path dir = fresh_dir();
  fs::permissions(dir, fs::perms::all);  // a shared directory anyone may write in
  std::ofstream(dir / "theirs.npy") << "their data";
  fs::permissions(dir / "theirs.npy", fs::perms(0666));
  fs::create_symlink("mine.npy", dir / "their_link.npy");
  REQUIRE(::chown((dir / "theirs.npy").c_str(), 65534, 65534) == 0);
  REQUIRE(::lchown((dir / "their_link.npy").c_str(), 65534, 65534) == 0);
  OutputFiles o;
  o.add("--save-o", (dir / "theirs.npy").string());
  CHECK_THROWS_WITH_AS(o.check({}), doctest::Contains("belongs to another user (uid 65534)"),
                       FileError);
  OutputFiles link;
  link.add("--save-o", (dir / "their_link.npy").string());
  CHECK_THROWS_WITH_AS(link.check({}), doctest::Contains("a symbolic link of another user's"),
                       FileError);
  struct stat st {};
  REQUIRE(::stat((dir / "theirs.npy").c_str(), &st) == 0);
  CHECK(st.st_uid == 65534);
  CHECK(slurp(dir / "theirs.npy") == "their data");
  CHECK_FALSE(fs::exists(dir / "mine.npy"));
}

TEST_CASE("a name with a control character is quoted in the one-line error") {
  CHECK(shown("plain name.npy") == "plain name.npy");
  CHECK(shown("a\nb.npy") == "$'a\\nb.npy'");
  CHECK(shown("tab\there\x1b[31m'") == "$'tab\\there\\x1b[31m\\''");
  const fs::path dir = fresh_dir();
  OutputFiles o;
  o.add("--save-o", (dir / "no\ndir" / "o.npy").string());
  try {
    o.check({});
    FAIL("a missing directory must be refused");
  } catch (const FileError& e) {
    const std::string what = e.what();
    CHECK(what.find('\n') == std::string::npos);
    CHECK(what.find("no\\ndir/o.npy'") != std::string::npos);
  }
  CHECK_THROWS_WITH_AS(InputFile((dir / "in\nput.npy").string()),
                       doctest::Contains("in\\nput.npy': cannot open"), FileError);
}

// (SIGHUP and SIGPIPE: doctest keeps SIGTERM and SIGINT for its own reports.)
TEST_CASE("a terminating signal before the commit, or after it but before it settles, undoes all") {
  const fs::path dir = fresh_dir();
  std::ofstream(dir / "o.npy") << "earlier";
  for (const int sig : {SIGHUP, SIGPIPE}) {
    for (const bool committed : {false, true}) {
      INFO("signal " << sig << (committed ? ", after the commit" : ", before it"));
      const int ended = child_ended_by(
          [&] {
            OutputFiles o;
            stage_two(o, dir, "new");
            if (committed) o.commit();
            ::raise(sig);
          },
          [](pid_t) {});
      CHECK(ended == sig);
      CHECK(slurp(dir / "o.npy") == "earlier");
      CHECK(entries(dir) == 1);  // no l.npy, no temporary, no kept file
    }
  }
}

TEST_CASE("a signal at any moment of a run of commits leaves both outputs of one generation") {
  const fs::path dir = fresh_dir();
  std::ofstream(dir / "o.npy") << "0";
  std::ofstream(dir / "l.npy") << "0";
  std::mt19937 random(7);
  for (int round = 0; round < 20; ++round) {
    const int ended = child_ended_by(
        [&] {
          for (int k = 1;; ++k) {  // commit after commit, each settled, until the signal
            OutputFiles o;
            stage_two(o, dir, std::to_string(k));
            o.commit();
            settle_outputs(true);
          }
        },
        [&](pid_t pid) {
          std::this_thread::sleep_for(std::chrono::microseconds(random() % 20000));
          ::kill(pid, SIGHUP);
        });
    CHECK(ended == SIGHUP);
    CHECK(slurp(dir / "o.npy") == slurp(dir / "l.npy"));
    CHECK(entries(dir) == 2);
  }
}
