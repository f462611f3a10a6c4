// test_file_io.cpp — outputs written all or none (file_io.hpp): clashes with inputs and with each
// other found by the file itself (hard and symbolic links), nothing replaced before commit, no
// temporary left, streams read to their end.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "flashdemo/file_io.hpp"

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
