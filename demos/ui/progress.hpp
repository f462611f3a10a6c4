// progress.hpp — a progress line on stderr for runs that take longer than about a second, on a
// terminal only:  "  flashdemo forward: flash tiles 812 of 1,953 · 4.1 s"
// A background thread redraws it in place every 0.25 s from the first second on, and erases it
// when the run ends, so nothing of it stays on screen and stdout never sees it. As a TraceSink it
// counts the tiles the teaching path reports; other phases show their name and the time.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "flashdemo/teaching/trace.hpp"

namespace fd::ui {

// Writes `text` to stderr as it is (a progress line, redrawn in place); a failed write is
// ignored: a progress line is never worth an error, nor an exception.
void progress_line(const std::string& text) noexcept;

class Progress : public TraceSink {
 public:
  explicit Progress(std::string what);  // on only when stderr is a terminal
  ~Progress() override;
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  bool on() const { return thread_.joinable(); }
  // Ends the line now (erased if it was drawn); the destructor does the same.
  void stop();
  // The phase now running; total > 0: the tiles it will report (shown as "i of total").
  void phase(const std::string& label, index_t total = 0);
  void on(const TileEvent&) override { ++done_; }
  void on(const TileSkippedEvent&) override { ++done_; }
  void on(const BackwardTileEvent&) override { ++done_; }

 private:
  void run();
  std::string line() const;

  std::string what_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::string label_;
  std::atomic<index_t> done_{0}, total_{0};
  bool stop_ = false, drawn_ = false;
  std::thread thread_;
};

}  // namespace fd::ui
