// keys.hpp — single key presses from a terminal, without Enter: the walkthrough's pause.
//
//   RawKeys keys(fd)  for its lifetime, the terminal on fd reads key by key: non-canonical, no
//                     echo, and ISIG off, so Ctrl-C and Ctrl-D arrive as bytes (read_key turns
//                     them into quit and interrupt) instead of signals. The saved attributes
//                     come back on every way out: the destructor (return, exception), and
//                     SIGINT, SIGTERM, SIGHUP, SIGQUIT sent from outside, whose handler restores
//                     them, clears the cursor's line, moves to a fresh one and re-raises the
//                     signal (a signal already ignored, as under nohup, stays ignored).
//   read_key(fd)      blocks for the next key that the walkthrough knows (see Key).
// One RawKeys at a time: the signal handler restores the one that is active.
#pragma once

namespace fd::ui {

enum class Key {
  next,       // Enter, space, n, right arrow
  back,       // b, left arrow
  quit,       // q, Esc, Ctrl-D, end of input or a read error
  interrupt,  // Ctrl-C
  other,      // anything else, including Ctrl-Z and Ctrl-\ (ISIG is off)
};

class RawKeys {
 public:
  explicit RawKeys(int fd);
  ~RawKeys();
  RawKeys(const RawKeys&) = delete;
  RawKeys& operator=(const RawKeys&) = delete;
  // False when fd is not a terminal whose attributes could be read and set; nothing changed.
  bool active() const { return active_; }

 private:
  bool active_ = false;
};

// The key one byte starts, reading the rest of an escape sequence (arrows) from fd.
Key read_key(int fd);

}  // namespace fd::ui
