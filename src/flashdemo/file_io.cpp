// file_io.cpp — atomic writes through a temporary file (see file_io.hpp).
#include "flashdemo/file_io.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

namespace fd {

void write_file_atomically(const std::string& path, const std::string& bytes) {
  const std::string tmp = path + ".tmp";
  const auto fail = [&](int error) {
    std::remove(tmp.c_str());
    return FileError(path + ": cannot write: " + std::strerror(error ? error : EIO));
  };
  errno = 0;
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw fail(errno);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.close();
    if (!out) throw fail(errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw fail(errno);
}

bool can_write(const std::string& path) {
  const std::string probe = path + ".tmp";
  if (!std::ofstream(probe)) return false;
  std::remove(probe.c_str());
  return true;
}

}  // namespace fd
