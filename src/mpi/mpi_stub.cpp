// mpi_stub.cpp — the MPI transport in a build without MPI (mpi_ring.hpp): there is none.
#include <cstdlib>
#include <stdexcept>

#include "mpi/mpi_ring.hpp"

namespace fd::mpi {

bool built() {
  return false;
}

std::unique_ptr<RingTransport> world() {
  throw std::runtime_error("this build of flashdemo has no MPI");
}

void abort(int code) {
  std::exit(code);
}

}  // namespace fd::mpi
