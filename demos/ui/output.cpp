// output.cpp — text destinations and colour (see output.hpp).
#include "ui/output.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ui/file_errors.hpp"

namespace fd::ui {

Settings& settings() {
  static Settings s;
  return s;
}

namespace {

// The parent of process `pid` and its command name, from /proc/PID/stat ("pid (comm) state ppid").
bool parent_of(long pid, long& parent, std::string& comm) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const std::size_t open = line.find('('), close = line.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return false;
  comm = line.substr(open + 1, close - open - 1);
  std::istringstream rest(line.substr(close + 1));
  std::string state;
  return bool(rest >> state >> parent);
}

// Whether the standard output of process `pid` is a terminal: a character device that is one.
bool stdout_of_is_terminal(long pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/1";
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode)) return false;  // a file, a pipe
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return false;
  const bool tty = isatty(fd) == 1;
  ::close(fd);
  return tty;
}

// Under Open MPI's mpirun: whether mpirun's standard output, which every rank's is forwarded
// to, is a terminal. mpirun is the rank's parent on its own node (or a few generations up);
// not found (a rank on another node, under orted), the answer is no.
bool mpirun_stdout_is_terminal() {
  long pid = long(::getppid());
  for (int generation = 0; generation < 8 && pid > 1; ++generation) {
    long parent = 0;
    std::string comm;
    if (!parent_of(pid, parent, comm)) return false;
    for (const char* launcher : {"mpirun", "mpiexec", "orterun", "prterun", "prte", "oshrun"})
      if (comm == launcher) return stdout_of_is_terminal(pid);
    pid = parent;
  }
  return false;
}

}  // namespace

bool color_wanted(ColorMode mode) {
  if (mode == ColorMode::always) return true;
  if (mode == ColorMode::never) return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color && *no_color) return false;
  const char* term = std::getenv("TERM");
  if (term && std::strcmp(term, "dumb") == 0) return false;
  if (std::getenv("OMPI_COMM_WORLD_RANK")) return mpirun_stdout_is_terminal();
  return isatty(STDOUT_FILENO) == 1;
}

std::string paint(const std::string& text, Paint style) {
  if (!settings().color) return text;
  switch (style) {
    case Paint::current:
      return fmt::format(fmt::fg(fmt::terminal_color::black) |
                             fmt::bg(fmt::terminal_color::yellow) | fmt::emphasis::bold,
                         "{}", text);
    case Paint::dim:
      return fmt::format(fmt::fg(fmt::terminal_color::bright_black), "{}", text);
    case Paint::changed:
      return fmt::format(fmt::fg(fmt::terminal_color::cyan) | fmt::emphasis::bold, "{}", text);
    case Paint::good:
      return fmt::format(fmt::fg(fmt::terminal_color::green), "{}", text);
    case Paint::bad:
      return fmt::format(fmt::fg(fmt::terminal_color::red) | fmt::emphasis::bold, "{}", text);
    case Paint::heading:
      return fmt::format(fmt::emphasis::bold, "{}", text);
    case Paint::emphasis:
      return fmt::format(fmt::fg(fmt::terminal_color::blue), "{}", text);
  }
  return text;
}

namespace {

std::ostringstream& held() {
  static std::ostringstream buffer;
  return buffer;
}

bool& live() {
  static bool on = false;
  return on;
}

int& stdout_fd() {
  static int fd = STDOUT_FILENO;
  return fd;
}

}  // namespace

std::ostream& out() {
  if (live()) return std::cout;
  return held();
}

void set_live(bool on) {
  live() = on;
}

void reset_stdout() {
  held().str(""), held().clear();
  live() = false;
  std::cout.clear();
}

std::string flush_stdout() {
  std::cout.flush();
  if (!std::cout) return errno == EPIPE ? "closed pipe" : errno_text(errno ? errno : EIO);
  const std::string text = held().str();
  held().str("");
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(stdout_fd(), text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EPIPE) return "closed pipe";
    if (n <= 0) return errno_text(n < 0 ? errno : ENOSPC);
    done += std::size_t(n);
  }
  return "";
}

void set_stdout_fd(int fd) {
  stdout_fd() = fd;
}

bool stdout_is_fd1() {
  return stdout_fd() == STDOUT_FILENO;
}

std::string held_text() {
  return held().str();
}

std::string take_held() {
  std::string text = held().str();
  held().str("");
  return text;
}

std::string one_line(const std::string& text) {
  std::string out;
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  return out;
}

void error(const std::string& message) noexcept {
  try {
    const std::string line = tr(Msg::err_prefix, one_line(message));
    std::fputs(line.c_str(), stderr);  // through the FILE* (the fuzzer captures it there)
    std::fflush(stderr);
  } catch (...) {  // no memory to build the line: the plain words, or nothing
    std::fputs("flashdemo: error\n", stderr);
    std::fflush(stderr);
  }
  std::clearerr(stderr);  // a failed write is not this run's concern past here
}

void say_raw(const std::string& line) {
  if (!settings().quiet && !settings().json) out() << line;
}

void result_raw(const std::string& line) {
  if (!settings().json) out() << line;
}

}  // namespace fd::ui
