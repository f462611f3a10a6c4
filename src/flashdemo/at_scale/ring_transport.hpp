// ring_transport.hpp — how the ranks of ring attention (ring.hpp) talk: a ring shift, a gather to
// rank 0, an agreement; nothing else.
//
//   shift:   rank r sends a buffer to rank (r + 1) mod P and receives one from (r - 1) mod P, on a
//            channel (K/V and dK/dV travel on two); start_shift posts both and returns at once
//            (MPI_Isend, MPI_Irecv), wait completes them (MPI_Waitall): the compute goes between.
//   gather:  rank 0 receives every rank's bytes, in rank order (MPI_Gatherv).
//   broadcast: every rank receives rank 0's bytes (MPI_Bcast; the GPU ring's NCCL id).
//   all:     the logical and of one flag over the ranks (MPI_Allreduce), so that every rank refuses
//            together (never one waiting for a rank that gave up).
// InProcessRing runs P ranks as threads of one process: a send copies the buffer into the
// receiver's mailbox (one queue per channel, so steps arrive in order), a wait takes it out.
// The MPI transport is src/mpi/mpi_ring.cpp, built only when CMake finds MPI.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>
#include <vector>

#include "flashdemo/host_device/base.hpp"

namespace fd {

// What a simulated rank throws when another one failed (the other's error is the one reported).
struct RingAborted : std::runtime_error {
  RingAborted() : std::runtime_error("another simulated rank failed") {}
};

class RingTransport {
 public:
  virtual ~RingTransport() = default;
  virtual index_t rank() const = 0;
  virtual index_t ranks() const = 0;
  // Posts the send of send[0..send_bytes) to the next rank and the receive of recv_bytes into recv
  // from the previous one; returns a handle for wait. Neither buffer may be touched before wait.
  virtual int start_shift(const void* send, std::size_t send_bytes, void* recv,
                          std::size_t recv_bytes, int channel) = 0;
  virtual void wait(int shift) = 0;
  // Rank 0: all receives the bytes of every rank, bytes_of[r] from rank r, one after another.
  virtual void gather(const void* mine, std::size_t bytes, void* all,
                      const std::vector<std::size_t>& bytes_of) = 0;
  // bytes[0..count) of rank 0 into bytes[0..count) of every rank.
  virtual void broadcast(void* bytes, std::size_t count) = 0;
  virtual bool all(bool ok) = 0;
};

// The state the P simulated ranks share.
class InProcessRing {
 public:
  explicit InProcessRing(index_t ranks) : ranks_(ranks), gathered_(std::size_t(ranks)) {}
  index_t ranks() const { return ranks_; }
  // A rank that failed: every rank waiting wakes and throws, so none hangs.
  void abort();

 private:
  friend class InProcessRank;
  using Message = std::vector<unsigned char>;
  void wait_all_arrived(std::unique_lock<std::mutex>& lock);  // a barrier
  index_t ranks_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::pair<index_t, int>, std::deque<Message>> mailbox_;  // (receiver, channel)
  std::vector<Message> gathered_;
  index_t arrived_ = 0, generation_ = 0;
  bool round_ok_ = true, aborted_ = false;
};

// One simulated rank's end of it.
class InProcessRank : public RingTransport {
 public:
  InProcessRank(InProcessRing& ring, index_t rank) : ring_(ring), rank_(rank) {}
  index_t rank() const override { return rank_; }
  index_t ranks() const override { return ring_.ranks(); }
  int start_shift(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
                  int channel) override;
  void wait(int shift) override;
  void gather(const void* mine, std::size_t bytes, void* all,
              const std::vector<std::size_t>& bytes_of) override;
  void broadcast(void* bytes, std::size_t count) override;
  bool all(bool ok) override;

 private:
  struct Pending {
    void* recv;
    std::size_t bytes;
    int channel;
  };
  InProcessRing& ring_;
  index_t rank_;
  std::vector<Pending> pending_;
};

}  // namespace fd
