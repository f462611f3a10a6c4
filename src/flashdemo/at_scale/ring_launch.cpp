// ring_launch.cpp — ring attention's launch and the ranks' agreement (ring_launch.hpp has the
// rules).
#include "flashdemo/at_scale/ring_launch.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

namespace fd {
namespace {

index_t env_index(const char* a, const char* b) {
  const char* v = std::getenv(a);
  if (!v) v = std::getenv(b);
  return v ? index_t(std::atoll(v)) : -1;
}

}  // namespace

RingLaunch ring_launch() {
  const index_t size = env_index("OMPI_COMM_WORLD_SIZE", "PMI_SIZE");
  const index_t rank = env_index("OMPI_COMM_WORLD_RANK", "PMI_RANK");
  if (size < 1 || rank < 0) return {};
  return {true, rank, size};
}

index_t local_rank(index_t rank) {
  const index_t local = env_index("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID");
  return local >= 0 ? local : rank;
}

bool other_rank(const RingLaunch& l) {
  return l.mpirun && l.rank != 0 && l.size > 1;
}

bool on_gpu(RingWhere w) {
  return w == RingWhere::gpu_one || w == RingWhere::gpu_mpi;
}

RingRanks ring_ranks(index_t asked, bool gpu, const RingLaunch& l, index_t n, index_t m) {
  using R = RingRanks::Refusal;
  if (l.mpirun && asked && asked != l.size) return {0, R::not_mpirun_size};
  const index_t ranks = l.mpirun ? l.size : asked ? asked : gpu ? 1 : 4;
  if (ranks > kMaxRingRanks) return {ranks, R::too_many};
  if (ranks > std::min(n, m)) return {ranks, R::over_size};
  return {ranks, R::none};
}

RingWhere ring_where_cpu(const RingLaunch& l, bool mpi_built) {
  return !l.mpirun ? RingWhere::threads : mpi_built ? RingWhere::mpi : RingWhere::threads_no_mpi;
}

// Without mpirun one rank: several ranks in one process would share one GPU, which NCCL does not
// allow (and would time nothing real).
RingGpuWhere ring_where_gpu(const RingLaunch& l, index_t asked, index_t ranks, RingBuild build) {
  using R = RingGpuWhere::Refusal;
  if (!l.mpirun && asked > 1) return {RingWhere::gpu_one, R::ranks_without_mpirun};
  if (!l.mpirun || (ranks == 1 && !build.mpi)) return {RingWhere::gpu_one, R::none};
  if (!build.cuda) return {RingWhere::gpu_mpi, R::no_cuda_build};
  if (!build.mpi) return {RingWhere::gpu_mpi, R::no_mpi};
  if (ranks > 1 && !build.nccl) return {RingWhere::gpu_mpi, R::no_nccl};
  return {RingWhere::gpu_mpi, R::none};
}

bool agree(RingTransport* net, bool ok) {
  return net ? net->all(ok) : ok;
}

// Rank 0 gathers every rank's (place, GPUs of its node) and finds the first rank without a GPU;
// every rank learns whether all have one.
RingGpuPlaces agree_gpus(RingTransport& net, index_t gpus_here) {
  const index_t P = net.ranks();
  RingGpuPlaces out;
  out.local = local_rank(net.rank());
  const std::int64_t mine[2] = {out.local, gpus_here};
  std::vector<std::int64_t> all(net.rank() == 0 ? std::size_t(2 * P) : 0);
  net.gather(mine, sizeof mine, all.data(), std::vector<std::size_t>(std::size_t(P), sizeof mine));
  for (index_t r = 0; r < P && out.rank < 0 && net.rank() == 0; ++r) {
    const std::int64_t at = all[std::size_t(2 * r)], gpus = all[std::size_t(2 * r + 1)];
    if (at >= gpus) out.rank = r, out.at = at, out.gpus = gpus;
  }
  out.all_placed = net.all(out.local < gpus_here);
  return out;
}

}  // namespace fd
