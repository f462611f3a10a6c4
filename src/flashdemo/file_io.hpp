// file_io.hpp — the one way flashdemo writes a file: to PATH.tmp, then renamed into place, so a
// failed or interrupted write never leaves a half-written PATH behind.
#pragma once

#include <stdexcept>
#include <string>

namespace fd {

// A file that cannot be read or written; what() names the file and the reason in one line.
struct FileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Writes `bytes` to `path` atomically; throws FileError ("PATH: cannot write: reason").
void write_file_atomically(const std::string& path, const std::string& bytes);

// Whether `path` could be written now (probed through PATH.tmp, which is removed again).
bool can_write(const std::string& path);

}  // namespace fd
