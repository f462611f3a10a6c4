// ring.hpp — `flashdemo ring`: context-parallel (ring) attention on the CPU over P ranks (MPI
// processes under mpirun, else threads of one process): the blocks, the schedule, the times and
// the overlap, the verdicts for O, L (and dQ, dK, dV).
#pragma once

#include <CLI/CLI.hpp>

namespace fd::demos {
void setup_ring(CLI::App& app);
}
