// mpi_ring.cpp — ring attention's transport over MPI (mpi_ring.hpp has the contract).
#define OMPI_SKIP_MPICXX 1  // the C API only
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi/mpi_ring.hpp"

namespace fd::mpi {
namespace {

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw std::runtime_error(std::string(what) + ": " + std::string(text, std::size_t(length)));
}

int as_count(std::size_t bytes) {
  if (bytes > std::size_t(2147483647)) throw std::runtime_error("MPI: a message over 2 GiB");
  return int(bytes);
}

class WorldRing : public RingTransport {
 public:
  WorldRing() {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);  // errors as exceptions
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    rank_ = rank, size_ = size;
  }
  ~WorldRing() override { MPI_Finalize(); }

  index_t rank() const override { return rank_; }
  index_t ranks() const override { return size_; }

  int start_shift(const void* send, std::size_t send_bytes, void* recv, std::size_t recv_bytes,
                  int channel) override {
    const int next = int((rank_ + 1) % size_), prev = int((rank_ + size_ - 1) % size_);
    Requests r;
    check(MPI_Irecv(recv, as_count(recv_bytes), MPI_BYTE, prev, channel, MPI_COMM_WORLD, &r.r[0]),
          "MPI_Irecv");
    check(MPI_Isend(send, as_count(send_bytes), MPI_BYTE, next, channel, MPI_COMM_WORLD, &r.r[1]),
          "MPI_Isend");
    pending_.push_back(r);
    return int(pending_.size() - 1);
  }

  void wait(int shift) override {
    check(MPI_Waitall(2, pending_.at(std::size_t(shift)).r, MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

  void gather(const void* mine, std::size_t bytes, void* all,
              const std::vector<std::size_t>& bytes_of) override {
    std::vector<int> counts, displs;
    int at = 0;
    for (std::size_t b : bytes_of) {
      counts.push_back(as_count(b)), displs.push_back(at);
      at += as_count(b);
    }
    check(MPI_Gatherv(mine, as_count(bytes), MPI_BYTE, all, counts.data(), displs.data(), MPI_BYTE,
                      0, MPI_COMM_WORLD),
          "MPI_Gatherv");
  }

  void broadcast(void* bytes, std::size_t count) override {
    check(MPI_Bcast(bytes, as_count(count), MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
  }

  bool all(bool ok) override {
    int mine = ok ? 1 : 0, every = 0;
    check(MPI_Allreduce(&mine, &every, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD), "MPI_Allreduce");
    return every != 0;
  }

 private:
  struct Requests {
    MPI_Request r[2];
  };
  index_t rank_ = 0, size_ = 1;
  std::vector<Requests> pending_;
};

}  // namespace

bool built() {
  return true;
}

std::unique_ptr<RingTransport> world() {
  return std::make_unique<WorldRing>();
}

void abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

}  // namespace fd::mpi
