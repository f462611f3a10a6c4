// file_io.cpp — reading to the end, outputs written all or none, and each refusal as a kind with
// its facts and its English line (see file_io.hpp).
#include "flashdemo/io/file_io.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace fd {
namespace {

std::string reason(int error) {
  return std::strerror(error ? error : EIO);
}

// A refusal of the system's with its errno (EIO when the call left none).
FileFacts because(int error) {
  FileFacts f;
  f.error = error ? error : EIO;
  return f;
}

// The directory part of a path ("." for a bare name) and the last part.
std::pair<std::string, std::string> split(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

std::optional<std::string> real_path(const std::string& path) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) return std::nullopt;
  return std::string(buf);
}

// Where a write to `path` lands: the real path of its directory and its name, a symbolic link
// in the last place followed to the file it names, whether that file exists or not (a dangling
// link names the file the write creates). `path` is empty when a directory on the way is missing
// or the links loop; `foreign` is set, to the link's owner, for a link that is not one's own (nor
// root's), which is not followed (a link planted in a shared directory must not steer the write).
struct Landing {
  std::string path;
  std::optional<long long> foreign;
};

Landing land(const std::string& given) {
  std::string p = given;
  for (int hops = 0; hops < 40; ++hops) {
    const auto [dir, name] = split(p);
    const auto real_dir = real_path(dir);
    if (!real_dir) return {};
    const std::string full = (*real_dir == "/" ? "" : *real_dir) + "/" + name;
    struct stat st {};
    if (::lstat(full.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return {full, std::nullopt};
    if (st.st_uid != ::geteuid() && st.st_uid != 0)
      return {full, static_cast<long long>(st.st_uid)};
    char to[PATH_MAX];
    const ssize_t n = ::readlink(full.c_str(), to, sizeof to - 1);
    if (n <= 0) return {};
    p = to[0] == '/' ? std::string(to, std::size_t(n))
                     : *real_dir + "/" + std::string(to, std::size_t(n));
  }
  return {};  // a loop of links: the write would fail
}

// What a path names: the same file has the same device and inode; a file not there yet is known
// by where a write to it lands (its real path).
struct Identity {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string where;
  bool same(const Identity& o) const {
    if (exists || o.exists) return exists && o.exists && dev == o.dev && ino == o.ino;
    return !where.empty() && where == o.where;
  }
};

Identity identify(const std::string& path) {
  Identity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true, id.dev = st.st_dev, id.ino = st.st_ino;
    return id;
  }
  id.where = land(path).path;
  return id;
}

// Why a file cannot be an output: the kind and its facts.
struct Refusal {
  FileProblem problem;
  FileFacts facts;
};

FileFacts numbered(long long n) {
  FileFacts f;
  f.numbers = {n};
  return f;
}

// Why an existing `real` (stat as `st`) cannot be replaced, or nothing.
std::optional<Refusal> unreplaceable(const std::string& real, const struct stat& st) {
  if (S_ISDIR(st.st_mode)) return Refusal{FileProblem::output_is_directory, {}};
  if (!S_ISREG(st.st_mode)) return Refusal{FileProblem::not_regular, {}};
  if (st.st_uid != ::geteuid())  // root included: a replaced file would change owner
    return Refusal{FileProblem::foreign_file, numbered(st.st_uid)};
  if (::access(real.c_str(), W_OK) != 0)
    return Refusal{FileProblem::cannot_write_there, because(errno)};
  return std::nullopt;
}

// Why `path` cannot be an output, or nothing: by its name and by where it lands, not a system
// file; the file there a regular file of one's own (or none), its directory there and writable.
// Touches nothing.
std::optional<Refusal> unwritable(const std::string& path) {
  const Landing at = land(path);
  const std::string real = at.path.empty() ? path : at.path;
  for (const char* system : {"/dev/", "/proc/", "/sys/"})
    if (path.rfind(system, 0) == 0 || real.rfind(system, 0) == 0) {
      FileFacts f;
      f.words = {system};
      return Refusal{FileProblem::system_file, f};
    }
  if (at.foreign) return Refusal{FileProblem::foreign_link, numbered(*at.foreign)};
  struct stat st {};
  if (::stat(real.c_str(), &st) == 0)
    if (const auto why = unreplaceable(real, st)) return why;
  const std::string dir = split(real).first;
  if (::stat(dir.c_str(), &st) != 0)
    return Refusal{FileProblem::cannot_write_there, because(errno)};
  if (!S_ISDIR(st.st_mode)) {
    FileFacts f;
    f.other.path = dir;
    return Refusal{FileProblem::parent_not_directory, f};
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return Refusal{FileProblem::cannot_write_there, because(errno)};
  return std::nullopt;
}

// Writes all of `bytes` to fd, every write checked (a full disk, a file-size limit: EFBIG), then
// forces them to the disk.
void write_all(int fd, const std::string& bytes, const NamedFile& file) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw FileError(FileProblem::cannot_write, file, because(n < 0 ? errno : ENOSPC));
    done += std::size_t(n);
  }
  if (::fsync(fd) != 0 && errno != EINVAL)
    throw FileError(FileProblem::cannot_write, file, because(errno));
}

// Forces a directory's entries (names renamed, linked, created) to the disk; a file system that
// cannot sync a directory is left as it is.
void sync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

mode_t file_mode() {  // what open(0666) would give under the process's umask
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// ---- What a terminating signal undoes: the run's temporaries, and the renames of a commit not
// yet settled. Fixed slots (the handler allocates nothing), changed only while signals are held.
enum Kind : int { kFree = 0, kTemporary, kReplaced, kCreated };
struct Slot {
  volatile std::sig_atomic_t kind;
  char path[PATH_MAX];  // the temporary, or the target a commit renamed onto
  char kept[PATH_MAX];  // kReplaced: the earlier file, kept beside it ("" when it could not be)
};
constexpr int kSlots = 64;
Slot g_slots[kSlots];

// Terminating signals (by default) that a run may be sent; those still at their default action
// get the cleanup. SIGPIPE among them: a run killed by a reader that went away cleans up too.
constexpr int kSignals[] = {SIGTERM, SIGHUP,  SIGINT,  SIGQUIT, SIGPIPE,   SIGALRM,
                            SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF};
struct sigaction g_previous[std::size(kSignals)];

// While a thread holds signals (a commit, a slot changed), a signal another thread takes waits.
std::atomic<int> g_holding{0}, g_deferred{0};

void undo_slots() {  // async-signal-safe: unlink and rename only
  for (int k = kSlots; k-- > 0;) {
    Slot& s = g_slots[k];
    if (s.kind == kTemporary || s.kind == kCreated) ::unlink(s.path);
    if (s.kind == kReplaced && s.kept[0]) ::rename(s.kept, s.path);
    s.kind = kFree;
  }
}

// Undoes what the run did to the files, then lets `sig` end the process as it would have.
void end_by(int sig) {
  undo_slots();
  for (std::size_t k = 0; k < std::size(kSignals); ++k)
    if (kSignals[k] == sig) ::sigaction(sig, &g_previous[k], nullptr);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &one, nullptr);
  ::raise(sig);
}

extern "C" void on_signal(int sig) {
  g_deferred.store(sig);
  if (g_holding.load() > 0) return;  // taken by another thread mid-commit: it ends the run after
  if (const int s = g_deferred.exchange(0)) end_by(s);
}

// Every catchable signal blocked in this thread, and any other thread's deferred, from here to
// the end of the scope; one that arrived meanwhile then ends the run (undoing it whole).
// Faults (SIGSEGV, ...) are never blocked.
class Held {
 public:
  Held() {
    sigset_t all;
    sigfillset(&all);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGSYS})
      sigdelset(&all, sig);
    ::pthread_sigmask(SIG_BLOCK, &all, &old_);
    ++g_holding;
  }
  Held(const Held&) = delete;
  Held& operator=(const Held&) = delete;
  ~Held() {
    const bool last = --g_holding == 0;
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);  // one blocked here arrives now
    if (last)
      if (const int sig = g_deferred.exchange(0)) end_by(sig);
  }

 private:
  sigset_t old_;
};

// Installed before the first temporary exists, for the signals still at their default action.
void watch_signals() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  struct sigaction act {};
  act.sa_handler = on_signal;
  sigemptyset(&act.sa_mask);
  for (std::size_t k = 0; k < std::size(kSignals); ++k) {
    ::sigaction(kSignals[k], nullptr, &g_previous[k]);
    if (g_previous[k].sa_handler == SIG_DFL) ::sigaction(kSignals[k], &act, nullptr);
  }
}

void copy_path(char* to, const std::string& from) {
  const std::size_t n = std::min(from.size(), std::size_t(PATH_MAX) - 1);
  std::memcpy(to, from.data(), n);
  to[n] = '\0';
}

// A free slot for a new temporary (call while held); -1 when none (or the path is too long).
int take_slot(const std::string& temporary) {
  if (temporary.size() >= PATH_MAX) return -1;
  for (int k = 0; k < kSlots; ++k) {
    if (g_slots[k].kind != kFree) continue;
    copy_path(g_slots[k].path, temporary);
    g_slots[k].kept[0] = '\0';
    g_slots[k].kind = kTemporary;
    return k;
  }
  return -1;
}

// Before `target` is replaced: the file there kept at a fresh name beside it (reserved by mkstemp,
// so no other file's name is taken), as a hard link, or where links are refused moved aside.
// Returns the kind of the rename about to be made and the kept name ("" when none).
std::pair<Kind, std::string> keep_old(const std::string& target) {
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) return {kCreated, ""};
  if (!S_ISREG(st.st_mode)) return {kReplaced, ""};  // the rename onto it fails: nothing to keep
  const auto [dir, name] = split(target);
  std::string kept = dir + "/." + name + ".old.XXXXXX";
  const int fd = ::mkstemp(kept.data());
  if (fd < 0) return {kReplaced, ""};  // cannot be kept: the commit replaces it all the same
  ::close(fd);
  if (::unlink(kept.c_str()) == 0 &&
      (::link(target.c_str(), kept.c_str()) == 0 || ::rename(target.c_str(), kept.c_str()) == 0))
    return {kReplaced, kept};
  return {kReplaced, ""};
}

// Undoes one slot's rename (the file it replaced put back, or the new one removed) and frees it.
void undo_slot(int k) {
  Slot& s = g_slots[k];
  if (s.kind == kCreated) ::unlink(s.path);
  if (s.kind == kReplaced && s.kept[0]) ::rename(s.kept, s.path);
  s.kind = kFree;
}

}  // namespace

std::string shown(const NamedFile& file) {
  return file.option.empty() ? shown(file.path) : file.option + " " + shown(file.path);
}

std::string in_english(FileProblem problem, const NamedFile& file, const FileFacts& facts) {
  const auto word = [&](std::size_t k) { return k < facts.words.size() ? facts.words[k] : ""; };
  const auto number = [&](std::size_t k) {
    return std::to_string(k < facts.numbers.size() ? facts.numbers[k] : 0);
  };
  const std::string name = shown(file), why = reason(facts.error);
  switch (problem) {
    case FileProblem::worded:
      return name;
    case FileProblem::cannot_open:
      return name + ": cannot open: " + why;
    case FileProblem::is_directory:
      return name + ": is a directory, not a file";
    case FileProblem::cannot_read:
      return name + ": cannot read: " + why;
    case FileProblem::cannot_write:
      return name + ": cannot write: " + why;
    case FileProblem::too_many_outputs:
      return name + ": cannot write: too many outputs at once";
    case FileProblem::not_an_output:
      return name + ": not an output of this run";
    case FileProblem::clash_input:
      return name + " is the input " + shown(facts.other) + ": choose another name";
    case FileProblem::clash_output:
      return name + " is also the output " + shown(facts.other) + ": give each output its own file";
    case FileProblem::system_file:
      return name + ": is a system file (" + word(0) +
             "...): flashdemo writes its outputs to regular files of your own only";
    case FileProblem::foreign_link:
      return name + ": is a symbolic link of another user's (uid " + number(0) +
             "): flashdemo follows only links of your own";
    case FileProblem::output_is_directory:
      return name + ": is a directory";
    case FileProblem::not_regular:
      return name +
             ": is not a regular file (a device, a FIFO or a terminal): flashdemo writes its "
             "outputs to regular files only";
    case FileProblem::foreign_file:
      return name + ": belongs to another user (uid " + number(0) +
             "): flashdemo replaces only files of your own; choose another name";
    case FileProblem::cannot_write_there:
      return name + ": cannot write there: " + why;
    case FileProblem::parent_not_directory:
      return name + ": cannot write there: " + shown(facts.other.path) + " is not a directory";
    case FileProblem::bad_magic:
      return name + ": not a .npy file (bad magic bytes)";
    case FileProblem::truncated_header:
      return name + ": truncated header";
    case FileProblem::unsupported_version:
      return name + ": unsupported .npy version " + number(0) + "." + number(1);
    case FileProblem::header_too_long:
      return name + ": header length " + number(0) + " is implausible";
    case FileProblem::repeated_key:
      return name + ": header gives '" + word(0) +
             "' more than once; a .npy header names each key once";
    case FileProblem::missing_key:
      return name + ": header has no '" + word(0) + "' entry";
    case FileProblem::malformed_near_key:
      return name + ": malformed header near '" + word(0) + "'";
    case FileProblem::malformed_shape:
      return name + ": malformed shape in header";
    case FileProblem::shape_not_tuple:
      return name + ": shape " + word(0) + " is not a tuple of sizes";
    case FileProblem::too_many_dimensions:
      return name + ": shape " + word(0) + " has " + number(0) +
             " dimensions; flashdemo reads up to 4, (batch, heads, n, d)";
    case FileProblem::unsupported_dtype:
      return name + ": unsupported dtype " + word(0) +
             ": flashdemo reads little-endian float16 ('<f2'), float32 ('<f4') and float64 "
             "('<f8')";
    case FileProblem::fortran_order:
      return name +
             ": Fortran (column-major) order is not supported: save with np.ascontiguousarray";
    case FileProblem::shape_too_large:
      return name + ": shape is too large";
    case FileProblem::truncated_data:
      return name + ": truncated data: the header promises " + number(0) + " elements (" +
             number(1) + " bytes), the file holds " + number(2) + " bytes";
    case FileProblem::too_large:
      return name + ": the header promises " + number(0) + " elements, " + number(1) +
             " MB to read them, more than the " + number(2) +
             " MB of memory available; choose smaller arrays";
    case FileProblem::not_finite:
      return name + ": element " + word(0) + " is " + word(1) + "; inputs must be finite";
  }
  return name;
}

std::string shown(const std::string& path) {
  bool plain = true;
  for (unsigned char c : path) plain = plain && c >= 0x20 && c != 0x7f;
  if (plain) return path;
  std::string out = "$'";
  for (unsigned char c : path) {
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02x", c);
    if (c == '\n')
      out += "\\n";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\\' || c == '\'')
      out += std::string("\\") + char(c);
    else if (c < 0x20 || c == 0x7f)
      out += hex;
    else
      out += char(c);
  }
  return out + "'";
}

void settle_outputs(bool keep) {
  const Held held;
  for (int k = kSlots; k-- > 0;) {
    Slot& s = g_slots[k];
    if (s.kind != kReplaced && s.kind != kCreated) continue;
    if (!keep) undo_slot(k);
    if (keep && s.kind == kReplaced && s.kept[0]) ::unlink(s.kept);
    s.kind = kFree;
  }
}

InputFile::InputFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw FileError(FileProblem::cannot_open, {"", path}, because(errno));
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd_);
    throw FileError(FileProblem::is_directory, {"", path});
  }
}

InputFile::~InputFile() {
  ::close(fd_);
}

std::size_t InputFile::read(char* buf, std::size_t n) {
  std::size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd_, buf + done, n - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw FileError(FileProblem::cannot_read, {"", path_}, because(errno));
    if (got == 0) break;  // the end of the file or stream
    done += std::size_t(got);
  }
  return done;
}

OutputFiles::~OutputFiles() {
  const Held held;
  for (const Output& o : outputs_) {
    if (o.slot < 0) continue;
    ::unlink(g_slots[o.slot].path);
    g_slots[o.slot].kind = kFree;
  }
}

void OutputFiles::add(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  watch_signals();                // before the first temporary exists
  const Landing at = land(path);  // onto a link's file, not the link
  outputs_.push_back({{option, path}, at.path.empty() ? path : at.path, -1});
}

bool OutputFiles::has(const std::string& path) const {
  for (const Output& o : outputs_)
    if (o.file.path == path) return true;
  return false;
}

void OutputFiles::check(const std::vector<NamedFile>& inputs) const {
  for (std::size_t k = 0; k < outputs_.size(); ++k) {
    const NamedFile& out = outputs_[k].file;
    const Identity id = identify(out.path);
    FileFacts clash;
    for (const NamedFile& in : inputs)
      if (!in.path.empty() && id.same(identify(in.path))) {
        clash.other = in;
        throw FileClash(FileProblem::clash_input, out, clash);
      }
    for (std::size_t j = 0; j < k; ++j)
      if (id.same(identify(outputs_[j].file.path))) {
        clash.other = outputs_[j].file;
        throw FileClash(FileProblem::clash_output, out, clash);
      }
    if (const auto why = unwritable(out.path)) throw FileError(why->problem, out, why->facts);
  }
}

// A fresh temporary beside `o`'s target, open, and in a slot the signals clean up (made and
// recorded with signals held, so none can come between).
int OutputFiles::open_temporary(Output& o) {
  const auto [dir, name] = split(o.target);
  std::string temporary = dir + "/." + name + ".XXXXXX";
  const Held held;
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) throw FileError(FileProblem::cannot_write, o.file, because(errno));
  o.slot = take_slot(temporary);
  if (o.slot < 0) {
    ::close(fd);
    ::unlink(temporary.c_str());
    throw FileError(FileProblem::too_many_outputs, o.file);
  }
  return fd;
}

void OutputFiles::stage(const std::string& path, const std::string& bytes) {
  for (Output& o : outputs_) {
    if (o.file.path != path) continue;
    const int fd = open_temporary(o);  // removed by the destructor unless committed
    try {
      struct stat st {};  // a file replaced keeps its permission bits
      ::fchmod(fd, ::stat(o.target.c_str(), &st) == 0 ? st.st_mode & 07777 : file_mode());
      write_all(fd, bytes, o.file);
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw FileError(FileProblem::cannot_write, o.file, because(errno));
    return;
  }
  throw FileError(FileProblem::not_an_output, {"", path});  // a bug: every output is added first
}

// Every staged temporary renamed onto its target, with no signal between the first rename and
// the last (Held); the directories synced before (the temporaries' names) and after (the
// renames), as SQLite and git do.
void OutputFiles::commit() {
  const Held held;
  for (const Output& o : outputs_)
    if (o.slot >= 0) sync_directory(split(o.target).first);
  std::vector<int> done;
  for (Output& o : outputs_) {
    if (o.slot < 0) continue;
    const std::string temporary = g_slots[o.slot].path;
    const auto [kind, kept] = keep_old(o.target);
    if (::rename(temporary.c_str(), o.target.c_str()) != 0) {
      const int error = errno;
      struct stat st {};  // the target untouched (kept as a link: drop it), or moved aside
      if (!kept.empty() && ::lstat(o.target.c_str(), &st) == 0) ::unlink(kept.c_str());
      if (!kept.empty() && ::lstat(o.target.c_str(), &st) != 0)
        ::rename(kept.c_str(), o.target.c_str());
      for (auto k = done.rbegin(); k != done.rend(); ++k) undo_slot(*k);  // none replaced
      throw FileError(FileProblem::cannot_write, o.file, because(error));
    }
    Slot& s = g_slots[o.slot];  // the temporary is the target now: undone by putting back
    copy_path(s.path, o.target), copy_path(s.kept, kept);
    s.kind = kind;
    done.push_back(o.slot);
    o.slot = -1;
  }
  for (const Output& o : outputs_) sync_directory(split(o.target).first);
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  OutputFiles out;
  out.add("", path);
  if (const auto why = unwritable(path)) throw FileError(why->problem, {"", path}, why->facts);
  out.stage(path, bytes);
  out.commit();
  settle_outputs(true);  // one file: nothing else can fail after it
}

}  // namespace fd
