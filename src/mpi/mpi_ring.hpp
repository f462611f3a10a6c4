// mpi_ring.hpp — ring attention's transport over MPI (ring_transport.hpp: RingTransport), all
// that the rest of the program sees of MPI, with no MPI header: demos/ compiles the same with or
// without it. Built from mpi_ring.cpp when CMake finds MPI (find_package(MPI COMPONENTS C)), else
// from mpi_stub.cpp, whose mpi_world() says this build has no MPI.
//   shift   MPI_Isend to (r + 1) mod P and MPI_Irecv from (r - 1) mod P, the channel as the tag;
//           wait: MPI_Waitall on the two requests
//   gather  MPI_Gatherv of bytes to rank 0;   broadcast: MPI_Bcast from rank 0;
//   all     MPI_Allreduce(MPI_LAND)
// MPI is initialized by mpi_world() (MPI_Init_thread, funneled: one thread talks) and finalized
// when the transport is destroyed; mpi_abort ends every process of the job (MPI_Abort), so that a
// rank that fails never leaves the others waiting.
#pragma once

#include <memory>

#include "flashdemo/at_scale/ring_transport.hpp"

namespace fd::mpi {

// Whether this build has MPI.
bool built();

// The transport of MPI_COMM_WORLD; call once per process. Throws std::runtime_error without MPI.
std::unique_ptr<RingTransport> world();

// Every process of the job ends, with this exit code.
[[noreturn]] void abort(int code);

}  // namespace fd::mpi
