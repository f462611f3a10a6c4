// test_ring_launch.cpp — ring attention's launch and the ranks' agreement (ring_launch.hpp): the
// number of ranks (mpirun's, --ranks, the default, the cap, min(n, m)), where they run on the CPU
// and on GPUs with each refusal in its order, and agree_gpus over simulated ranks
// (ring_transport.hpp: InProcessRing): every rank learns whether all have a GPU, rank 0 which
// rank lacks one.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "flashdemo/at_scale/ring_launch.hpp"

using namespace fd;

TEST_CASE("ring_ranks: mpirun's size, else --ranks, else 4 (1 on a GPU); the cap and the sizes") {
  using R = RingRanks::Refusal;
  const RingLaunch alone{}, job{true, 0, 3};
  CHECK(ring_ranks(0, false, alone, 100, 100).ranks == 4);
  CHECK(ring_ranks(0, true, alone, 100, 100).ranks == 1);
  CHECK(ring_ranks(5, false, alone, 100, 100).ranks == 5);
  CHECK(ring_ranks(0, false, job, 100, 100).ranks == 3);
  CHECK(ring_ranks(3, false, job, 100, 100).refusal == R::none);
  CHECK(ring_ranks(4, false, job, 100, 100).refusal == R::not_mpirun_size);
  CHECK(ring_ranks(kMaxRingRanks + 1, false, alone, 1000, 1000).refusal == R::too_many);
  CHECK(ring_ranks(0, false, job, 2, 100).refusal == R::over_size);
  CHECK(ring_ranks(0, false, job, 100, 2).refusal == R::over_size);
}

TEST_CASE("ring_where: threads without mpirun, MPI processes with it, threads without MPI") {
  CHECK(ring_where_cpu(RingLaunch{}, true) == RingWhere::threads);
  CHECK(ring_where_cpu(RingLaunch{true, 1, 2}, true) == RingWhere::mpi);
  CHECK(ring_where_cpu(RingLaunch{true, 1, 2}, false) == RingWhere::threads_no_mpi);
  CHECK(other_rank(RingLaunch{true, 1, 2}));
  CHECK_FALSE(other_rank(RingLaunch{true, 0, 2}));
  CHECK_FALSE(other_rank(RingLaunch{}));
  CHECK(on_gpu(RingWhere::gpu_one));
  CHECK_FALSE(on_gpu(RingWhere::mpi));
}

TEST_CASE("ring_where_gpu: one GPU without mpirun, one per MPI process, the build's refusals") {
  using R = RingGpuWhere::Refusal;
  const RingBuild all{true, true, true};
  const RingLaunch alone{}, job{true, 0, 2};
  CHECK(ring_where_gpu(alone, 2, 2, all).refusal == R::ranks_without_mpirun);
  CHECK(ring_where_gpu(alone, 0, 1, RingBuild{}).where == RingWhere::gpu_one);
  CHECK(ring_where_gpu(RingLaunch{true, 0, 1}, 0, 1, RingBuild{true, false, false}).where ==
        RingWhere::gpu_one);
  CHECK(ring_where_gpu(job, 0, 2, all).where == RingWhere::gpu_mpi);
  CHECK(ring_where_gpu(job, 0, 2, RingBuild{false, true, true}).refusal == R::no_cuda_build);
  CHECK(ring_where_gpu(job, 0, 2, RingBuild{true, false, true}).refusal == R::no_mpi);
  CHECK(ring_where_gpu(job, 0, 2, RingBuild{true, true, false}).refusal == R::no_nccl);
  CHECK(ring_where_gpu(RingLaunch{true, 0, 1}, 0, 1, RingBuild{true, true, false}).refusal ==
        R::none);
}

TEST_CASE("agree and agree_gpus: every rank learns the same answer, rank 0 who lacks a GPU") {
  CHECK(agree(nullptr, true));
  CHECK_FALSE(agree(nullptr, false));
  for (const index_t lacking : {index_t(-1), index_t(0), index_t(2)}) {
    InProcessRing ring(3);
    std::vector<RingGpuPlaces> got(3);
    std::vector<std::thread> ranks;
    for (index_t r = 0; r < 3; ++r)
      ranks.emplace_back([&, r] {
        InProcessRank net(ring, r);
        got[std::size_t(r)] = agree_gpus(net, r == lacking ? 0 : 8);  // local rank = rank here
      });
    for (std::thread& t : ranks) t.join();
    for (const RingGpuPlaces& g : got) CHECK(g.all_placed == (lacking < 0));
    CHECK(got[0].rank == lacking);
    CHECK(got[1].rank == -1);  // only rank 0 learns who
    if (lacking >= 0) CHECK(got[0].gpus == 0);
  }
}
