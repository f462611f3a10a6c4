// keys.cpp — single key presses from a terminal: raw mode on a guard, put back by its
// destructor and by a signal handler (see keys.hpp).
#include "ui/keys.hpp"

#include <poll.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>

namespace fd::ui {
namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kSignalCount = sizeof kSignals / sizeof kSignals[0];
constexpr int kEscapeWaitMs = 50;  // an arrow key's bytes come together; Esc alone comes alone

// What the signal handler needs: only written while no handler of ours is installed.
struct Saved {
  termios attrs{};
  int fd = -1;
  volatile std::sig_atomic_t armed = 0;
  struct sigaction old[kSignalCount] {};
};

Saved& saved() {
  static Saved s;
  return s;
}

// Async-signal-safe: tcsetattr, write, signal and raise only.
extern "C" void restore_and_reraise(int sig) {
  Saved& s = saved();
  if (s.armed) {
    tcsetattr(s.fd, TCSANOW, &s.attrs);
    s.armed = 0;
    static const char fresh_line[] = "\r\033[K\n";  // the pause hint goes, the prompt starts anew
    [[maybe_unused]] ssize_t n = write(STDOUT_FILENO, fresh_line, sizeof fresh_line - 1);
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);  // delivered, with the default action, when this handler returns
}

void install_handlers() {
  struct sigaction act {};
  act.sa_handler = restore_and_reraise;
  sigemptyset(&act.sa_mask);
  for (int sig : kSignals) sigaddset(&act.sa_mask, sig);  // one handler runs at a time
  for (int k = 0; k < kSignalCount; ++k) {
    sigaction(kSignals[k], nullptr, &saved().old[k]);
    if (saved().old[k].sa_handler != SIG_IGN) sigaction(kSignals[k], &act, nullptr);
  }
}

void restore_handlers() {
  for (int k = 0; k < kSignalCount; ++k) sigaction(kSignals[k], &saved().old[k], nullptr);
}

// The next byte, or -1 at end of input or on an error other than an interrupted read.
int read_byte(int fd) {
  unsigned char c = 0;
  for (;;) {
    const ssize_t n = ::read(fd, &c, 1);
    if (n == 1) return c;
    if (n < 0 && errno == EINTR) continue;
    return -1;
  }
}

// The next byte if one is there within ms milliseconds, else -1.
int byte_within(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  if (poll(&p, 1, ms) <= 0) return -1;
  return read_byte(fd);
}

// After Esc: Esc alone quits; ESC [ C and ESC O C (right) go on, ... D (left) goes back; any
// other sequence (Alt+key, function keys) is read to its end and ignored.
Key escape_key(int fd) {
  const int c = byte_within(fd, kEscapeWaitMs);
  if (c < 0) return Key::quit;
  if (c != '[' && c != 'O') return Key::other;
  int last = byte_within(fd, kEscapeWaitMs);
  while (last >= 0 && (last < 0x40 || last > 0x7e)) last = byte_within(fd, kEscapeWaitMs);
  if (last == 'C') return Key::next;
  if (last == 'D') return Key::back;
  return Key::other;
}

}  // namespace

RawKeys::RawKeys(int fd) {
  termios attrs{};
  if (isatty(fd) != 1 || tcgetattr(fd, &attrs) != 0) return;
  saved().attrs = attrs, saved().fd = fd;
  saved().armed = 1;
  install_handlers();
  attrs.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN);
  attrs.c_cc[VMIN] = 1, attrs.c_cc[VTIME] = 0;
  if (tcsetattr(fd, TCSANOW, &attrs) != 0) {
    saved().armed = 0;
    restore_handlers();
    return;
  }
  active_ = true;
}

RawKeys::~RawKeys() {
  if (!active_) return;
  tcsetattr(saved().fd, TCSANOW, &saved().attrs);  // first: a signal now restores it again
  saved().armed = 0;
  restore_handlers();
}

Key read_key(int fd) {
  const int c = read_byte(fd);
  switch (c) {
    case -1:
    case 0x04:  // Ctrl-D
    case 'q':
    case 'Q':
      return Key::quit;
    case 0x03:  // Ctrl-C
      return Key::interrupt;
    case 0x1b:
      return escape_key(fd);
    case '\r':
    case '\n':
    case ' ':
    case 'n':
    case 'N':
      return Key::next;
    case 'b':
    case 'B':
      return Key::back;
    default:
      return Key::other;
  }
}

}  // namespace fd::ui
