// file_io.cpp — reading to the end, and outputs written all or none (see file_io.hpp).
#include "flashdemo/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
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
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return "is a directory";
    if (!S_ISREG(st.st_mode))
      return "is not a regular file (a device, a FIFO or a terminal): flashdemo writes its "
             "outputs to regular files only";
    if (::access(path.c_str(), W_OK) != 0) return "cannot write there: " + reason(errno);
  }
  const std::string dir = split(real_path(path).value_or(path)).first;
  if (::stat(dir.c_str(), &st) != 0) return "cannot write there: " + reason(errno);
  if (!S_ISDIR(st.st_mode)) return "cannot write there: " + dir + " is not a directory";
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return "cannot write there: " + reason(errno);
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

}  // namespace

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
  for (const Output& o : outputs_)
    if (!o.temporary.empty()) ::unlink(o.temporary.c_str());
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
    try {
      ::fchmod(fd, file_mode());
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
  for (Output& o : outputs_) {
    if (o.temporary.empty()) continue;
    if (::rename(o.temporary.c_str(), o.target.c_str()) != 0)
      throw FileError(label(o.file) + ": cannot write: " + reason(errno));
    o.temporary.clear();
  }
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
  OutputFiles out;
  out.add("", path);
  if (const auto why = unwritable(path)) throw FileError(path + ": " + *why);
  out.stage(path, bytes);
  out.commit();
}

}  // namespace fd
