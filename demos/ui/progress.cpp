// progress.cpp — the progress line on stderr (see progress.hpp).
#include "ui/progress.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include "ui/format.hpp"
#include "ui/i18n.hpp"

namespace fd::ui {
namespace {

constexpr auto kFirst = std::chrono::milliseconds(1000), kEvery = std::chrono::milliseconds(250);

void write_stderr(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) return;  // a progress line is never worth an error
    done += std::size_t(n);
  }
}

}  // namespace

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

void Progress::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (wake_.wait_for(lock, kFirst, [this] { return stop_; })) return;
  while (!stop_) {
    write_stderr(line());
    drawn_ = true;
    wake_.wait_for(lock, kEvery, [this] { return stop_; });
  }
  if (drawn_) write_stderr("\r\033[K");
}

}  // namespace fd::ui
