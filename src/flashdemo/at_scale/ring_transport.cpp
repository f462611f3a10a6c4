// ring_transport.cpp — P ranks in one process (ring_transport.hpp has the contract).
#include "flashdemo/at_scale/ring_transport.hpp"

#include <cstring>
#include <stdexcept>

namespace fd {

void InProcessRing::abort() {
  std::lock_guard<std::mutex> lock(mutex_);
  aborted_ = true;
  changed_.notify_all();
}

void InProcessRing::wait_all_arrived(std::unique_lock<std::mutex>& lock) {
  const index_t generation = generation_;
  if (++arrived_ == ranks_) {
    arrived_ = 0, ++generation_;
    changed_.notify_all();
    return;
  }
  changed_.wait(lock, [&] { return generation_ != generation || aborted_; });
  if (aborted_) throw RingAborted();
}

int InProcessRank::start_shift(const void* send, std::size_t send_bytes, void* recv,
                               std::size_t recv_bytes, int channel) {
  const auto* bytes = static_cast<const unsigned char*>(send);
  {
    std::lock_guard<std::mutex> lock(ring_.mutex_);
    const index_t next = (rank_ + 1) % ring_.ranks_;
    ring_.mailbox_[{next, channel}].emplace_back(bytes, bytes + send_bytes);  // buffered: copied
    ring_.changed_.notify_all();
  }
  pending_.push_back({recv, recv_bytes, channel});
  return int(pending_.size() - 1);
}

void InProcessRank::wait(int shift) {
  const Pending p = pending_.at(std::size_t(shift));
  std::unique_lock<std::mutex> lock(ring_.mutex_);
  std::deque<InProcessRing::Message>& box = ring_.mailbox_[{rank_, p.channel}];
  ring_.changed_.wait(lock, [&] { return !box.empty() || ring_.aborted_; });
  if (ring_.aborted_) throw RingAborted();
  if (box.front().size() != p.bytes)
    throw std::logic_error("ring: a message of an unexpected size arrived");
  std::memcpy(p.recv, box.front().data(), p.bytes);
  box.pop_front();
}

void InProcessRank::gather(const void* mine, std::size_t bytes, void* all,
                           const std::vector<std::size_t>& bytes_of) {
  std::unique_lock<std::mutex> lock(ring_.mutex_);
  const auto* b = static_cast<const unsigned char*>(mine);
  ring_.gathered_[std::size_t(rank_)].assign(b, b + bytes);
  ring_.wait_all_arrived(lock);  // every rank has written its part
  if (rank_ == 0) {
    auto* out = static_cast<unsigned char*>(all);
    for (std::size_t r = 0; r < ring_.gathered_.size(); ++r) {
      if (ring_.gathered_[r].size() != bytes_of[r])
        throw std::logic_error("ring: a gathered part of an unexpected size");
      std::memcpy(out, ring_.gathered_[r].data(), bytes_of[r]);
      out += bytes_of[r];
    }
  }
  ring_.wait_all_arrived(lock);  // rank 0 has read them: the parts may be written again
}

void InProcessRank::broadcast(void* bytes, std::size_t count) {
  std::unique_lock<std::mutex> lock(ring_.mutex_);
  auto* b = static_cast<unsigned char*>(bytes);
  if (rank_ == 0) ring_.gathered_[0].assign(b, b + count);
  ring_.wait_all_arrived(lock);  // rank 0 has written them
  if (rank_ != 0) {
    if (ring_.gathered_[0].size() != count)
      throw std::logic_error("ring: a broadcast of an unexpected size");
    std::memcpy(b, ring_.gathered_[0].data(), count);
  }
  ring_.wait_all_arrived(lock);  // every rank has read them
}

bool InProcessRank::all(bool ok) {
  std::unique_lock<std::mutex> lock(ring_.mutex_);
  ring_.round_ok_ = ring_.round_ok_ && ok;
  ring_.wait_all_arrived(lock);
  const bool result = ring_.round_ok_;
  ring_.wait_all_arrived(lock);  // everyone has read it
  if (rank_ == 0) ring_.round_ok_ = true;
  ring_.wait_all_arrived(lock);  // reset before the next round
  return result;
}

}  // namespace fd
