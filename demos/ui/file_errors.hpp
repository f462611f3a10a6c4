// file_errors.hpp — a file's problem in the user's language: the library's FileError (its kind,
// file and facts; flashdemo/io/file_io.hpp) worded through the catalogue
// (demos/ui/messages/files.inc), and a system's errno as words.
//
//   describe(e)      "o.npy: cannot open: No such file or directory", or in Chinese
//                    "o.npy：无法打开：文件或目录不存在"; a message its thrower worded already
//                    (FileProblem::worded) as it is
//   errno_text(e)    the catalogue's words for the errno values FD_ERRNO_WORDED lists (in English
//                    the C library's own, glibc's strerror); strerror's for any other
#pragma once

#include <string>

namespace fd {
struct FileError;
}

// The errno values the catalogue words (an entry errno_<NAME> each in files.inc): the common
// refusals of opening, reading, writing and renaming a file, and of starting a thread. Any other
// value is rare enough for strerror's English.
// clang-format off
#define FD_ERRNO_WORDED(X)                                                               \
  X(ENOENT) X(EACCES) X(EPERM) X(EISDIR) X(ENOTDIR) X(ENOSPC) X(EROFS) X(EEXIST) X(EFBIG) \
  X(EDQUOT) X(EIO) X(EMFILE) X(ENFILE) X(ENAMETOOLONG) X(ELOOP) X(EBADF) X(EPIPE)        \
  X(EAGAIN) X(ENOMEM) X(ETXTBSY) X(EBUSY) X(ENXIO) X(ENODEV) X(EINVAL) X(EXDEV) X(EINTR)
// clang-format on

namespace fd::ui {

// The one line of a file's problem, in the current language (without the "flashdemo: error: ").
std::string describe(const FileError& e);
// Why the system refused, in the current language: "No such file or directory", "文件或目录不存在".
std::string errno_text(int error);

}  // namespace fd::ui
