// file_io.cpp — reading to the end, and outputs written all or none (see file_io.hpp).
#include "flashdemo/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <optional>

namespace fd {
namespace {

std::string reason(int error) {
  return std::strerror(error ? error : EIO);
}

// The directory part of a path ("." for a bare name) and the last part.
std::pair<std::string, std::string> split(const std::string& path) {
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return {".", path};
  return {slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1)};
}

// What a path names: the same file has the same device and inode; a file not there yet is known
// by its directory's real path and its name.
struct Identity {
  bool exists = false;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string where;  // realpath of the directory + "/" + name, when not there
  bool same(const Identity& o) const {
    if (exists || o.exists) return exists && o.exists && dev == o.dev && ino == o.ino;
    return !where.empty() && where == o.where;
  }
};

std::optional<std::string> real_path(const std::string& path) {
  char buf[PATH_MAX];
  if (!::realpath(path.c_str(), buf)) return std::nullopt;
  return std::string(buf);
}

Identity identify(const std::string& path) {
  Identity id;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    id.exists = true, id.dev = st.st_dev, id.ino = st.st_ino;
    return id;
  }
  const auto [dir, name] = split(path);
  if (const auto d = real_path(dir)) id.where = *d + "/" + name;
  return id;
}

// Why `path` cannot be an output, or nothing: the target a regular file (or absent), its
// directory there and writable. Touches nothing.
std::optional<std::string> unwritable(const std::string& path) {
  const std::string real = real_path(path).value_or(path);
  for (const char* system : {"/dev/", "/proc/", "/sys/"})
    if (path.rfind(system, 0) == 0 || real.rfind(system, 0) == 0)
      return std::string("is a system file (") + system +
             "...): flashdemo writes its outputs to "
             "regular files of your own only";
  struct stat st {};
  const bool exists = ::stat(path.c_str(), &st) == 0;
  const uid_t owner = st.st_uid;
  if (exists) {
    if (S_ISDIR(st.st_mode)) return "is a directory";
    if (!S_ISREG(st.st_mode))
      return "is not a regular file (a device, a FIFO or a terminal): flashdemo writes its "
             "outputs to regular files only";
    if (::access(path.c_str(), W_OK) != 0) return "cannot write there: " + reason(errno);
  }
  const std::string dir = split(real).first;
  if (::stat(dir.c_str(), &st) != 0) return "cannot write there: " + reason(errno);
  if (!S_ISDIR(st.st_mode)) return "cannot write there: " + dir + " is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return "cannot write there: " + reason(errno);
  const uid_t me = ::geteuid();  // a sticky directory (/tmp): only a file's owner replaces it
  if (exists && (st.st_mode & S_ISVTX) && me != 0 && owner != me && st.st_uid != me)
    return "cannot replace another user's file in a shared (sticky) directory: choose another "
           "name";
  return std::nullopt;
}

// Writes all of `bytes` to fd, every write checked (a full disk, a file-size limit: EFBIG).
void write_all(int fd, const std::string& bytes, const std::string& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw FileError(path + ": cannot write: " + reason(n < 0 ? errno : ENOSPC));
    done += std::size_t(n);
  }
}

// "--save-o o.npy": how the messages name an output, as the command line gave it.
std::string label(const NamedFile& f) {
  return f.option.empty() ? f.path : f.option + " " + f.path;
}

mode_t file_mode() {  // what open(0666) would give under the process's umask
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return 0666 & ~mask;
}

// The temporaries a terminating signal removes: fixed slots, read by the handler (no allocation
// there). A slot is 0 when free.
constexpr int kSlots = 64;
char g_temporaries[kSlots][PATH_MAX];
volatile std::sig_atomic_t g_used[kSlots];
constexpr int kSignals[] = {SIGTERM, SIGHUP, SIGINT, SIGQUIT};
struct sigaction g_previous[std::size(kSignals)];

extern "C" void remove_temporaries(int sig) {
  for (int k = 0; k < kSlots; ++k)
    if (g_used[k]) ::unlink(g_temporaries[k]);
  for (std::size_t k = 0; k < std::size(kSignals); ++k)  // then as the signal would have gone on
    if (kSignals[k] == sig) ::sigaction(sig, &g_previous[k], nullptr);
  ::raise(sig);
}

void watch_signals() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  struct sigaction act {};
  act.sa_handler = remove_temporaries;
  sigemptyset(&act.sa_mask);
  for (std::size_t k = 0; k < std::size(kSignals); ++k) {
    ::sigaction(kSignals[k], nullptr, &g_previous[k]);
    if (g_previous[k].sa_handler == SIG_DFL) ::sigaction(kSignals[k], &act, nullptr);
  }
}

void remember(const std::string& temporary) {
  watch_signals();
  if (temporary.size() >= PATH_MAX) return;
  for (int k = 0; k < kSlots; ++k) {
    if (g_used[k]) continue;
    std::memcpy(g_temporaries[k], temporary.c_str(), temporary.size() + 1);
    g_used[k] = 1;
    return;
  }
}

void forget(const std::string& temporary) {
  for (int k = 0; k < kSlots; ++k)
    if (g_used[k] && temporary == g_temporaries[k]) g_used[k] = 0;
}

// One rename of a commit, undone by putting `kept` (the file it replaced, kept beside it) back,
// or by removing the new file where there was none.
struct Replaced {
  std::string target, kept;
  bool existed = false;
};
std::vector<Replaced>& pending() {  // every commit's renames not yet settled
  static std::vector<Replaced> list;
  return list;
}

void undo(const Replaced& r) {
  if (!r.existed)
    ::unlink(r.target.c_str());
  else if (!r.kept.empty())
    ::rename(r.kept.c_str(), r.target.c_str());
}

// Before `target` is replaced: the file there kept at a fresh name beside it (reserved by mkstemp,
// so no other file's name is taken), as a hard link, or where links are refused moved aside.
Replaced keep_old(const std::string& target) {
  Replaced r{target, "", false};
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) return r;
  r.existed = true;
  if (!S_ISREG(st.st_mode)) return r;  // not a file: the rename onto it fails, nothing to keep
  const auto [dir, name] = split(target);
  std::string kept = dir + "/." + name + ".old.XXXXXX";
  const int fd = ::mkstemp(kept.data());
  if (fd < 0) return r;  // cannot be kept: the commit replaces it all the same
  ::close(fd);
  if (::unlink(kept.c_str()) == 0 &&
      (::link(target.c_str(), kept.c_str()) == 0 || ::rename(target.c_str(), kept.c_str()) == 0))
    r.kept = kept;
  return r;
}

}  // namespace

void settle_outputs(bool keep) {
  std::vector<Replaced>& list = pending();
  for (auto r = list.rbegin(); r != list.rend(); ++r) {
    if (keep && !r->kept.empty()) ::unlink(r->kept.c_str());
    if (!keep) undo(*r);
  }
  list.clear();
}

InputFile::InputFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw FileError(path + ": cannot open: " + reason(errno));
  struct stat st {};
  if (::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd_);
    throw FileError(path + ": is a directory, not a file");
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
    if (got < 0) throw FileError(path_ + ": cannot read: " + reason(errno));
    if (got == 0) break;  // the end of the file or stream
    done += std::size_t(got);
  }
  return done;
}

OutputFiles::~OutputFiles() {
  for (const Output& o : outputs_) {
    if (o.temporary.empty()) continue;
    ::unlink(o.temporary.c_str());
    forget(o.temporary);
  }
}

void OutputFiles::add(const std::string& option, const std::string& path) {
  if (path.empty()) return;
  const std::string target = real_path(path).value_or(path);  // onto a link's file, not the link
  outputs_.push_back({{option, path}, target, {}});
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
    for (const NamedFile& in : inputs)
      if (!in.path.empty() && id.same(identify(in.path)))
        throw FileClash(out.option + " " + out.path + " is the input " + in.option + " " + in.path +
                        ": choose another name");
    for (std::size_t j = 0; j < k; ++j)
      if (id.same(identify(outputs_[j].file.path)))
        throw FileClash(out.option + " " + out.path + " is also the output " +
                        outputs_[j].file.option + " " + outputs_[j].file.path +
                        ": give each output its own file");
    if (const auto why = unwritable(out.path)) throw FileError(label(out) + ": " + *why);
  }
}

void OutputFiles::stage(const std::string& path, const std::string& bytes) {
  for (Output& o : outputs_) {
    if (o.file.path != path) continue;
    const auto [dir, name] = split(o.target);
    std::string temporary = dir + "/." + name + ".XXXXXX";
    const int fd = ::mkstemp(temporary.data());
    if (fd < 0) throw FileError(label(o.file) + ": cannot write: " + reason(errno));
    o.temporary = temporary;  // removed by the destructor unless committed
    remember(temporary);      // and by a terminating signal
    try {
      struct stat st {};  // a file replaced keeps its permission bits
      ::fchmod(fd, ::stat(o.target.c_str(), &st) == 0 ? st.st_mode & 07777 : file_mode());
      write_all(fd, bytes, label(o.file));
    } catch (...) {
      ::close(fd);
      throw;
    }
    if (::close(fd) != 0) throw FileError(label(o.file) + ": cannot write: " + reason(errno));
    return;
  }
  throw FileError(path + ": not an output of this run");  // a bug: every output is added first
}

void OutputFiles::commit() {
  std::vector<Replaced> done;
  for (Output& o : outputs_) {
    if (o.temporary.empty()) continue;
    const Replaced old = keep_old(o.target);
    if (::rename(o.temporary.c_str(), o.target.c_str()) != 0) {
      const int error = errno;
      struct stat st {};  // the target untouched (kept as a link: drop it), or moved aside
      if (!old.kept.empty() && ::lstat(o.target.c_str(), &st) == 0) ::unlink(old.kept.c_str());
      if (!old.kept.empty() && ::lstat(o.target.c_str(), &st) != 0)
        ::rename(old.kept.c_str(), o.target.c_str());
      for (auto r = done.rbegin(); r != done.rend(); ++r) undo(*r);  // none replaced after all
      throw FileError(label(o.file) + ": cannot write: " + reason(error));
    }
    forget(o.temporary);
    o.temporary.clear();
    done.push_back(old);
  }
  pending().insert(pending().end(), done.begin(), done.end());
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  OutputFiles out;
  out.add("", path);
  if (const auto why = unwritable(path)) throw FileError(path + ": " + *why);
  out.stage(path, bytes);
  out.commit();
  settle_outputs(true);  // one file: nothing else can fail after it
}

}  // namespace fd
