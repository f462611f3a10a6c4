"""gpu_timing.py — how the comparison scripts time a PyTorch call on the GPU: the method of
triton.testing.do_bench, which flashdemo's own timing (time_events, src/cuda/launch/
device_memory.cuh) follows too, so that both sides of every comparison are timed alike:

  - before each timed call, a 256 MiB buffer is written, so that the call finds nothing of its
    own in L2 (the H200's is 50 MiB);
  - CUDA events just around the call; all the calls are queued one after the other and the host
    waits once, at the end: the host's time to issue a call overlaps the GPU's work on the one
    before, and only the GPU's time between the two events counts;
  - the median of `reps` calls after `warmup` untimed ones.
"""
import statistics


def median_ms(torch, fn, warmup, reps):
    """Median milliseconds of reps calls of fn() on the current CUDA device, timed as above."""
    for _ in range(warmup):
        fn()
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    stops = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    torch.cuda.synchronize()
    for start, stop in zip(starts, stops):
        flush.zero_()
        start.record()
        fn()
        stop.record()
    torch.cuda.synchronize()
    del flush
    return statistics.median(start.elapsed_time(stop) for start, stop in zip(starts, stops))
