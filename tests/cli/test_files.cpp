// test_files.cpp — files are never lost: every case runs in a scratch directory whose files
// are compared, byte for byte, before and after; no abort, ever; outputs all or none, and only
// one's own; the smaller cases (issue 28, sections 4 to 6).
#include <doctest/doctest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "flashdemo/io/npy.hpp"
#include "flashdemo/io/random.hpp"
#include "runner.hpp"

using namespace cli;

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
    INFO("killed after " << std::string(delay) << " s, exit " << r.code);
    const bool replaced = slurp(dir + "/o.npy") != earlier;
    CHECK(std::filesystem::exists(dir + "/l.npy") == replaced);
    CHECK(std::filesystem::exists(dir + "/p.html") == replaced);
    // A run that succeeded committed its outputs; one that did not commit was stopped. The
    // converse does not hold: a signal that lands after the last rename, while the process exits,
    // still makes `timeout` answer 124 over outputs that are whole (seen under ASan's slow exit).
    if (r.code == 0) CHECK(replaced);
    if (!replaced) CHECK(r.code != 0);
    CHECK((r.code == 0 || r.code == 124));  // timeout's own code once it sent the signal
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
