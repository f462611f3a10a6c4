// ring_api.hpp — ring attention on GPUs (ring.cu, ring.cuh) as `flashdemo ring --device cuda` and
// the tests see it: host arrays in, the CPU ring's result out (flashdemo/at_scale/ring.hpp:
// RingResult, RingTimes), no CUDA or NCCL header (a build without CUDA answers every call with
// CudaError, stub.cpp).
//
// The ring is the CPU ring's: the same schedule, blocks (contiguous or zigzag), steps and merge
// (ring.hpp), the per-row arithmetic of ring_math.hpp; each rank drives one GPU. Per step, on the
// rank's two streams:
//   compute stream   the step's kernels on the block it holds (forward: the fold of O, L;
//                    backward: dK, dV of the travelling block, then dQ of its rows)
//   comm stream      the ring shift of the block: send to r + 1, receive from r - 1, into the
//                    other of two buffers; started before the step's compute ends, so it overlaps
//   events           the comm stream waits for the compute that last read the buffer it receives
//                    into; the next step's compute waits for the arrival; the backward's dK, dV
//                    leave as soon as the dK, dV kernel is done, while the dQ kernel runs
// and every step's compute, transfer and whole step timed by CUDA events. Element types: Q, K, V,
// dO and the outputs in E (fp32, bf16 or fp16: prec), every sum and the running O, L, dQ, dK, dV
// in fp32 (the numerics policy); the travelling dK, dV are fp32, so a backward step sends
// 2 |K_j| d sizeof(E) + 2 |K_j| d 4 bytes.
#pragma once

#include "cuda/host/cuda_api.hpp"
#include "flashdemo/at_scale/ring.hpp"
#include "flashdemo/at_scale/ring_transport.hpp"
#include "flashdemo/host_device/precision.hpp"

namespace fd::cuda {

// How the blocks move between the ranks' GPUs.
enum class RingLink {
  nccl,  // ncclSend / ncclRecv in one group per shift, on the comm stream: one GPU per rank
  host,  // through the RingTransport: device -> host, the shift, host -> device, blocking (the
         // tests' harness: several ranks, threads of one process, may share one GPU)
};

// Whether this build passes blocks by NCCL (nccl.h found at build time; the library itself,
// libnccl.so.2, is opened at run time, so flashdemo starts where NCCL is not installed).
bool nccl_built();

// The CUDA GPUs this process sees (0 without CUDA in the build, without a driver or a GPU).
int device_count();

// The element bytes the ring moves K and V in (4 for fp32, 2 for bf16 and fp16); dK, dV travel in
// fp32 (4).
std::size_t ring_element_bytes(Precision prec);

// Rank net.rank() of the ring on GPU `device`: its blocks cut from the full inputs (host arrays of
// float holding values of prec, as the CPU ring takes them), the forward ring (and with pass bwd
// the backward ring), then the same transfers alone (RingTimes::comm), then everything gathered on
// rank 0 over net (ring.hpp: ring_gather): the outputs as stored in prec, in float; elsewhere
// empty. With RingLink::nccl and P > 1 the NCCL communicator is made here (rank 0's id broadcast
// over net) and destroyed at the end. prec: fp32, bf16 or fp16 (CudaError otherwise).
RingResult<float> ring_rank(RingTransport& net, const RingSchedule& s, const AttnParams& p,
                            RingPass pass, Precision prec, const RingInputs<float>& in,
                            RingLink link, int device);

// The P ranks of s as threads of this process (ring.hpp: ring_threads), all on GPU 0, the blocks
// passed through the host (RingLink::host): the multi-rank GPU ring on one GPU. P = 1 is the
// one-GPU run (`flashdemo ring --device cuda` without mpirun), which passes no block at all.
RingResult<float> ring_in_process(const RingSchedule& s, const AttnParams& p, RingPass pass,
                                  Precision prec, const RingInputs<float>& in);

}  // namespace fd::cuda
