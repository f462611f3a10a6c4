// ring_launch.hpp — how the ranks of ring attention are launched and agree (at_scale/ring.hpp runs
// them): whether mpirun started this process and with which rank, where the ranks run, how many
// there are, and the collectives through which every rank reaches the same refusal, so that all
// refuse together and none is left waiting for one that gave up. Host-only; never prints: a refusal
// is a value, worded by the caller.
//   launch       mpirun's rank and size from Open MPI's (OMPI_COMM_WORLD_RANK, _SIZE) or MPICH's
//                (PMI_RANK, PMI_SIZE) variables; none: one process, rank 0 of 1
//   local rank   OMPI_COMM_WORLD_LOCAL_RANK or MPI_LOCALRANKID, else the rank: its GPU on its node
//   ranks        P = mpirun's size under mpirun (a different --ranks is refused), else --ranks,
//   else
//                4 (1 on a GPU); P <= kMaxRingRanks and P <= min(n, m) (every rank a query and a
//                key)
//   where        the CPU: MPI processes under mpirun in a build with MPI, else threads of this
//                process (under mpirun without MPI rank 0 simulates them all); a GPU: one without
//                mpirun (or without MPI, -np 1), else one per MPI process (NCCL between them)
//   agreement    all(ok) over the ranks (rank 0's check, or every rank's), and the GPU places: rank
//                r on GPU local(r) of its node needs local(r) < its node's GPUs, rank 0 learns the
//                first rank without one
#pragma once

#include "flashdemo/at_scale/ring_transport.hpp"
#include "flashdemo/host_device/base.hpp"

namespace fd {

inline constexpr index_t kMaxRingRanks = 64;

// How this process was started: by mpirun, with its rank of size.
struct RingLaunch {
  bool mpirun = false;
  index_t rank = 0, size = 1;
};

RingLaunch ring_launch();

// The rank's place on its node, else its rank: its GPU.
index_t local_rank(index_t rank);

// A rank of an MPI job other than rank 0: it says nothing, rank 0 says the job's one line.
bool other_rank(const RingLaunch& l);

// Where the ranks run: the CPU's MPI processes or threads; one GPU without mpirun (or without MPI
// in the build, mpirun -np 1), or one GPU per MPI process.
enum class RingWhere { mpi, threads, threads_no_mpi, gpu_one, gpu_mpi };

bool on_gpu(RingWhere w);

// The number of ranks, or why not: asked (0: the default) against mpirun's, the cap and the sizes.
struct RingRanks {
  enum class Refusal { none, not_mpirun_size, too_many, over_size };
  index_t ranks = 0;
  Refusal refusal = Refusal::none;
};

RingRanks ring_ranks(index_t asked, bool gpu, const RingLaunch& l, index_t n, index_t m);

// Where the ranks run on the CPU, in a build with MPI or without.
RingWhere ring_where_cpu(const RingLaunch& l, bool mpi_built);

// Where P ranks run on GPUs, or what the launch or the build lacks (asked: --ranks, 0 when not
// given). gpu_one: the caller checks that a GPU answers; gpu_mpi: the ranks agree on it
// (agree_gpus) once MPI runs.
struct RingGpuWhere {
  enum class Refusal { none, ranks_without_mpirun, no_cuda_build, no_mpi, no_nccl };
  RingWhere where = RingWhere::gpu_one;
  Refusal refusal = Refusal::none;
};

struct RingBuild {
  bool cuda = false, mpi = false, nccl = false;
};

RingGpuWhere ring_where_gpu(const RingLaunch& l, index_t asked, index_t ranks, RingBuild build);

// Whether every rank is ok: `ok` of each rank (net null: this one alone).
bool agree(RingTransport* net, bool ok);

// The GPU places, agreed: each rank on GPU `local` of its node, which has `gpus_here` GPUs. All
// learn `all_placed`; rank 0 alone learns the first rank without a GPU (`rank`, its place `at`
// and its node's `gpus`; rank -1 when every rank has one).
struct RingGpuPlaces {
  index_t local = 0;
  bool all_placed = true;
  index_t rank = -1, at = 0, gpus = 0;
};

RingGpuPlaces agree_gpus(RingTransport& net, index_t gpus_here);

}  // namespace fd
