// file_errors.cpp — a FileError and an errno in the user's language (see file_errors.hpp).
#include "ui/file_errors.hpp"

#include <cerrno>
#include <cstring>

#include "flashdemo/io/file_io.hpp"
#include "ui/i18n.hpp"

namespace fd::ui {

std::string errno_text(int error) {
  switch (error) {
#define FD_ERRNO_CASE(name) \
  case name:                \
    return text(Msg::errno_##name);
    FD_ERRNO_WORDED(FD_ERRNO_CASE)
#undef FD_ERRNO_CASE
    default:
      return std::strerror(error ? error : EIO);
  }
}

std::string describe(const FileError& e) {
  const FileFacts& f = e.facts;
  const auto word = [&](std::size_t k) { return k < f.words.size() ? f.words[k] : ""; };
  const auto number = [&](std::size_t k) { return k < f.numbers.size() ? f.numbers[k] : 0LL; };
  const std::string file = shown(e.file), why = errno_text(f.error);
  switch (e.problem) {
    case FileProblem::worded:
      return e.what();
    case FileProblem::cannot_open:
      return tr(Msg::file_cannot_open, file, why);
    case FileProblem::is_directory:
      return tr(Msg::file_is_directory, file);
    case FileProblem::cannot_read:
      return tr(Msg::file_cannot_read, file, why);
    case FileProblem::cannot_write:
      return tr(Msg::file_cannot_write, file, why);
    case FileProblem::too_many_outputs:
      return tr(Msg::file_too_many_outputs, file);
    case FileProblem::not_an_output:
      return tr(Msg::file_not_an_output, file);
    case FileProblem::clash_input:
      return tr(Msg::file_clash_input, file, shown(f.other));
    case FileProblem::clash_output:
      return tr(Msg::file_clash_output, file, shown(f.other));
    case FileProblem::system_file:
      return tr(Msg::file_system_file, file, word(0));
    case FileProblem::foreign_link:
      return tr(Msg::file_foreign_link, file, number(0));
    case FileProblem::output_is_directory:
      return tr(Msg::file_output_is_directory, file);
    case FileProblem::not_regular:
      return tr(Msg::file_not_regular, file);
    case FileProblem::foreign_file:
      return tr(Msg::file_foreign_file, file, number(0));
    case FileProblem::cannot_write_there:
      return tr(Msg::file_cannot_write_there, file, why);
    case FileProblem::parent_not_directory:
      return tr(Msg::file_parent_not_directory, file, shown(f.other.path));
    case FileProblem::bad_magic:
      return tr(Msg::npy_bad_magic, file);
    case FileProblem::truncated_header:
      return tr(Msg::npy_truncated_header, file);
    case FileProblem::unsupported_version:
      return tr(Msg::npy_unsupported_version, file, number(0), number(1));
    case FileProblem::header_too_long:
      return tr(Msg::npy_header_too_long, file, number(0));
    case FileProblem::repeated_key:
      return tr(Msg::npy_repeated_key, file, word(0));
    case FileProblem::missing_key:
      return tr(Msg::npy_missing_key, file, word(0));
    case FileProblem::malformed_near_key:
      return tr(Msg::npy_malformed_near_key, file, word(0));
    case FileProblem::malformed_shape:
      return tr(Msg::npy_malformed_shape, file);
    case FileProblem::shape_not_tuple:
      return tr(Msg::npy_shape_not_tuple, file, word(0));
    case FileProblem::too_many_dimensions:
      return tr(Msg::npy_too_many_dimensions, file, word(0), number(0));
    case FileProblem::unsupported_dtype:
      return tr(Msg::npy_unsupported_dtype, file, word(0));
    case FileProblem::fortran_order:
      return tr(Msg::npy_fortran_order, file);
    case FileProblem::shape_too_large:
      return tr(Msg::npy_shape_too_large, file);
    case FileProblem::truncated_data:
      return tr(Msg::npy_truncated_data, file, number(0), number(1), number(2));
    case FileProblem::too_large:
      return tr(Msg::npy_too_large, file, number(0), number(1), number(2));
    case FileProblem::not_finite:
      return tr(Msg::npy_not_finite, file, word(0), word(1));
  }
  return e.what();
}

}  // namespace fd::ui
