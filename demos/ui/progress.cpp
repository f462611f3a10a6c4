// progress.cpp — the progress line on stderr (see progress.hpp).
#include "ui/progress.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include "ui/format.hpp"
#include "ui/i18n.hpp"

namespace fd::ui {
namespace {

constexpr auto kFirst = std::chrono::milliseconds(1000), kEvery = std::chrono::milliseconds(250);

}  // namespace

void progress_line(const std::string& text) noexcept {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += std::size_t(n);
  }
}

Progress::Progress(std::string what) : what_(std::move(what)) {
  if (::isatty(STDERR_FILENO)) thread_ = std::thread([this] { run(); });
}

Progress::~Progress() {
  stop();
}

void Progress::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void Progress::phase(const std::string& label, index_t total) {
  std::lock_guard<std::mutex> lock(mutex_);
  label_ = label;
  done_ = 0, total_ = total;
}

std::string Progress::line() const {
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const index_t total = total_;
  const std::string count =
      total > 0 ? tr(Msg::progress_tiles, grouped(double(done_)), grouped(double(total))) : "";
  return fmt::format("\r\033[K  {}: {}{} · {:.1f} s", what_, label_, count, seconds);
}

// The drawing thread; out of memory for a line, it stops drawing (an exception leaving a thread
// would end the process).
void Progress::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (wake_.wait_for(lock, kFirst, [this] { return stop_; })) return;
  try {
    while (!stop_) {
      progress_line(line());
      drawn_ = true;
      wake_.wait_for(lock, kEvery, [this] { return stop_; });
    }
  } catch (const std::exception&) {
    wake_.wait(lock, [this] { return stop_; });
  }
  if (drawn_) progress_line("\r\033[K");
}

}  // namespace fd::ui
