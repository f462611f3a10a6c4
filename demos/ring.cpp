// ring.cpp — `flashdemo ring`: context-parallel (ring) attention on the CPU or on GPUs. The library
// (flashdemo/at_scale/ring.hpp) makes the schedule, runs each rank's steps and gathers on rank 0;
// the ranks are MPI processes when mpirun started this one and the build has MPI
// (src/mpi/mpi_ring.hpp), else threads of this process (ring_transport.hpp: InProcessRing), and the
// text says which.
// --device cuda (cuda/host/ring_api.hpp): one GPU per rank, local rank r on GPU r of its node, the
// blocks passed by NCCL under mpirun; without mpirun one rank on GPU 0. The launch (mpirun's rank
// and size, where the ranks run, how many) and the ranks' agreement are the library's
// (flashdemo/at_scale/ring_launch.hpp). This file words its refusals (the same on every rank,
// before MPI starts, so all refuse together; whether each rank has a GPU is agreed once MPI runs),
// and on rank 0 only prints the blocks, the schedule (ranks x
// steps), each rank's compute and communication times and the overlap, and the verdicts against
// the reference (compare.hpp: the 2x rule) for O, L and with --pass bwd dQ, dK, dV.
// --json: one `ring_rank` object per rank and pass, one `ring_step` per rank, step and pass, then
// one `result` (docs/trace-format.md, section 11).
#include "ring.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common.hpp"
#include "cuda/host/ring_api.hpp"
#include "device.hpp"
#include "flashdemo/at_scale/ring.hpp"
#include "flashdemo/at_scale/ring_launch.hpp"
#include "flashdemo/judge/compare.hpp"
#include "flashdemo/judge/verdict.hpp"
#include "flashdemo/reference/reference.hpp"
#include "flashdemo/tools/benchmark.hpp"
#include "mpi/mpi_ring.hpp"
#include "ui/format.hpp"
#include "ui/json_trace.hpp"
#include "ui/output.hpp"
#include "ui/progress.hpp"
#include "ui/verdict.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

constexpr index_t kMaxRingSize = 16384;
constexpr index_t kShownRanks = 8, kShownSteps = 8;  // the text's grid

enum class Layout { automatic, contiguous, zigzag };
enum class Device { cpu, cuda };

struct RingOptions : ProblemShape {  // n, m (0: n), d, causal
  index_t ranks = 0;                 // 0: mpirun's processes, else 4 (--device cuda: 1)
  DType dtype = DType::fp32;
  bool causal_implied = false;
  CausalAlign align = CausalAlign::top_left;
  Layout layout = Layout::automatic;
  bench::Pass pass = bench::Pass::fwd;
  Device device = Device::cpu;
  std::uint32_t seed = 0;
  std::optional<double> scale;

  AttnParams params() const { return AttnParams{causal, align, scale}; }
  RingLayout ring_layout() const {
    if (layout == Layout::automatic) return causal ? RingLayout::zigzag : RingLayout::contiguous;
    return layout == Layout::zigzag ? RingLayout::zigzag : RingLayout::contiguous;
  }
  RingPass ring_pass() const { return pass == bench::Pass::bwd ? RingPass::bwd : RingPass::fwd; }
};

struct Plan {
  RingWhere where = RingWhere::threads;
  index_t ranks = 4;
  RingSchedule schedule;
};

// The ranks' refusals, worded (ring_launch.hpp decides). Usage first (exit 2), then what this
// build lacks (exit 5), alike on every rank, before MPI starts.
index_t planned_ranks(const RingOptions& o, const RingLaunch& l) {
  const RingRanks r = ring_ranks(o.ranks, o.device == Device::cuda, l, o.n, o.keys());
  switch (r.refusal) {
    case RingRanks::Refusal::not_mpirun_size:
      throw Error(kUsage, ui::tr(Msg::ring_err_ranks_mpirun, o.ranks, l.size, o.ranks));
    case RingRanks::Refusal::too_many:
      throw Error(kUsage, ui::tr(Msg::ring_err_too_many, r.ranks, kMaxRingRanks));
    case RingRanks::Refusal::over_size:
      throw Error(kUsage, ui::tr(Msg::ring_err_ranks, r.ranks, o.n, o.keys()));
    case RingRanks::Refusal::none:
      break;
  }
  return r.ranks;
}

// --device cuda: whether a GPU answers is checked here without mpirun, else agreed among the ranks
// once MPI runs (agree_gpus).
RingWhere planned_gpu(const RingOptions& o, const RingLaunch& l, index_t ranks) {
  if (o.dtype == DType::fp64) throw Error(kUsage, ui::tr(Msg::ring_err_dtype_gpu, "fp64"));
  const RingBuild build =  // consulted under mpirun only
      l.mpirun ? RingBuild{cuda::gpu_info().built, mpi::built(), cuda::nccl_built()} : RingBuild{};
  const RingGpuWhere w = ring_where_gpu(l, o.ranks, ranks, build);
  using R = RingGpuWhere::Refusal;
  switch (w.refusal) {
    case R::ranks_without_mpirun:
      throw Error(kUsage, ui::tr(Msg::ring_err_cuda_ranks, o.ranks, o.ranks, o.ranks));
    case R::no_cuda_build:
      throw Error(kNoDevice, ui::tr(Msg::err_no_cuda_build));
    case R::no_mpi:
      throw Error(kNoDevice, ui::tr(Msg::ring_err_cuda_no_mpi, ranks));
    case R::no_nccl:
      throw Error(kNoDevice, ui::tr(Msg::ring_err_cuda_no_nccl, ranks));
    case R::none:
      break;
  }
  if (w.where == RingWhere::gpu_one) require_gpu();  // exit 5 in one line: no CUDA, or no GPU
  return w.where;
}

Plan plan_for(const RingOptions& o, const RingLaunch& l) {
  if (o.device == Device::cpu && low_precision(o.dtype))
    throw Error(kUsage, ui::tr(Msg::ring_err_dtype_cpu, dtype_name(o.dtype)));
  Plan plan;
  plan.where = ring_where_cpu(l, mpi::built());
  plan.ranks = planned_ranks(o, l);
  if (o.device == Device::cuda) plan.where = planned_gpu(o, l, plan.ranks);
  plan.schedule = ring_schedule(o.n, o.keys(), o.d, plan.ranks, o.ring_layout(),
                                o.params().mask_for(o.n, o.keys()));
  return plan;
}

// A refusal every rank reached together (through RingTransport::all): no rank is left waiting, so
// the job ends normally, rank 0 printing the line and exiting with the code, the others with 0.
struct Agreed : Error {
  using Error::Error;
};

// Rank 0 holds the inputs, the outputs, the reference and the naive run (S and P, n x m each).
double bytes_needed(const RingOptions& o, double t_bytes, double w_bytes) {
  const double n = double(o.n), m = double(o.keys()), d = double(o.d);
  const double arrays = (4 * n + 4 * m) * d * t_bytes * 2;
  const double reference = 6 * n * m * (w_bytes + t_bytes) + 4 * (n + m) * d * w_bytes;
  return arrays + reference;
}

using Checked = RunVerdict;  // O, L (dQ, dK, dV): verdict.hpp

// p: the precision the run computed in (T's own, or bf16/fp16 stored in float on the GPU): the
// naive run that sets the bound stores S and P in it.
template <class T>
Checked check(const RingOptions& o, const bench::Arrays<T>& a, const RingResult<T>& r,
              Precision p) {
  const index_t n = o.n, m = o.keys(), d = o.d;
  const Mat<T> Q = MatView<T>(a.Q.data(), n, d), K = MatView<T>(a.K.data(), m, d),
               V = MatView<T>(a.V.data(), m, d), dO = MatView<T>(a.dO.data(), n, d);
  const Precision stored = p == Precision::bf16 || p == Precision::fp16 ? p : Precision::fp64;
  const index_t merges = merges_ring(index_t(r.forward.size()));  // P - 1 folds through L
  if (o.pass != bench::Pass::bwd) {
    const ForwardJudge<T> j = forward_judge<T>(Q, K, V, o.params(), stored, merges);
    require_fits(j.ref.S, "S = scale Q K^T", p, "");
    return judge_forward(j, MatView<T>(r.O.data(), n, d), VecView<T>(r.L.data(), n), p);
  }
  const BackwardJudge<T> j = backward_judge<T>(Q, K, V, &dO, o.params(), stored, merges);
  require_fits(j.forward.ref.S, "S = scale Q K^T", p, "");
  Checked c = judge_forward(j.forward, MatView<T>(r.O.data(), n, d), VecView<T>(r.L.data(), n), p);
  c.fold(judge_backward(j, MatView<T>(r.dQ.data(), n, d), MatView<T>(r.dK.data(), m, d),
                        MatView<T>(r.dV.data(), m, d), VecView<T>(nullptr, 0), p));
  return c;
}

std::string parts_text(const RingBlock& b) {
  std::string out;
  for (const Range& r : b.parts) {
    if (r.size() == 0) continue;
    out += (out.empty() ? "" : ", ") + ui::range(Range{r.begin, r.end});
  }
  return out.empty() ? "-" : out;
}

const char* layout_id(RingLayout l) {
  return l == RingLayout::zigzag ? "zigzag" : "contiguous";
}

const char* where_id(const Plan& plan) {
  switch (plan.where) {
    case RingWhere::mpi:
      return "mpi";
    case RingWhere::gpu_mpi:
      return plan.ranks > 1 ? "nccl" : "none";
    case RingWhere::gpu_one:
      return "none";
    case RingWhere::threads:
    case RingWhere::threads_no_mpi:
      break;
  }
  return "threads";
}

// What the ring moves: K and V in `kv` bytes an element, dK and dV in `grad` bytes (the GPU ring
// keeps them in fp32 whatever K and V are).
struct ElementBytes {
  std::size_t kv = 4, grad = 4;
};

void print_problem(const RingOptions& o, const Plan& plan, const char* dtype) {
  const RingSchedule& s = plan.schedule;
  ui::heading(ui::tr(Msg::ring_title), ui::tr(Msg::ring_source));
  ui::say(Msg::ring_problem, o.n, o.d, o.keys(), o.d, dtype,
          o.scale ? "" : fmt::format("1/sqrt({}) = ", o.d), o.params().scale_for(o.d));
  ui::say(!o.causal                          ? Msg::mask_none
          : o.align == CausalAlign::top_left ? Msg::mask_top_left
                                             : Msg::mask_bottom_right,
          o.causal_implied ? ui::tr(Msg::align_implies_causal) : "");
  const index_t cores = std::max<index_t>(1, std::thread::hardware_concurrency());
  const bool oversubscribed = plan.ranks > cores && !on_gpu(plan.where);
  const std::string shared = oversubscribed ? ui::tr(Msg::ring_oversubscribed, cores) : "";
  if (plan.where == RingWhere::mpi) ui::say(Msg::ring_where_mpi, plan.ranks, shared);
  if (plan.where == RingWhere::threads) ui::say(Msg::ring_where_threads, plan.ranks, shared);
  if (plan.where == RingWhere::threads_no_mpi) ui::say(Msg::ring_where_no_mpi, plan.ranks, shared);
  if (on_gpu(plan.where)) {
    const std::string gpu = cuda::gpu_info().name;
    if (plan.where == RingWhere::gpu_one) ui::say(Msg::ring_where_gpu_one, gpu);
    if (plan.where == RingWhere::gpu_mpi) ui::say(Msg::ring_where_gpu_mpi, plan.ranks, gpu);
  }
  if (s.layout == RingLayout::zigzag)
    ui::say(Msg::ring_layout_zigzag, 2 * plan.ranks);
  else
    ui::say(Msg::ring_layout_contiguous);
  ui::say(Msg::ring_inputs, o.seed);
}

void print_blocks(const RingSchedule& s) {
  ui::result_section(ui::tr(Msg::ring_blocks_title));
  ui::result_raw(fmt::format("  {:<6} {:<24} {:<24} {:>9} {:>9}\n", ui::tr(Msg::ring_col_rank),
                             ui::tr(Msg::ring_col_rows), ui::tr(Msg::ring_col_keys),
                             ui::tr(Msg::ring_col_computed), ui::tr(Msg::ring_col_skipped)));
  for (index_t r = 0; r < std::min(s.ranks, kShownRanks); ++r)
    ui::result_raw(fmt::format("  {:<6} {:<24} {:<24} {:>9} {:>9}\n", r,
                               parts_text(s.rows[std::size_t(r)]),
                               parts_text(s.keys[std::size_t(r)]), s.computed(r), s.skipped(r)));
  if (s.ranks > kShownRanks) ui::result(Msg::ring_shown, kShownRanks, s.ranks, kShownSteps);
}

std::string cell(const RingStep& step) {
  const index_t total = step.computed + step.skipped;
  if (step.computed == 0) return fmt::format("K{} {}", step.block, ui::tr(Msg::ring_skip));
  return fmt::format("K{} {}/{}", step.block, step.computed, total);
}

void print_schedule(const RingSchedule& s, ElementBytes bytes, bool bwd) {
  const index_t steps = std::min(s.ranks, kShownSteps);
  ui::result_section(ui::tr(Msg::ring_schedule_title));
  std::string header = fmt::format("  {:<10}", ui::tr(Msg::ring_col_rank));
  for (index_t t = 0; t < steps; ++t)
    header += fmt::format(" {:>10}", ui::tr(Msg::ring_col_step, t));
  ui::result_raw(header + "\n");
  for (index_t r = 0; r < std::min(s.ranks, kShownRanks); ++r) {
    std::string line = fmt::format("  {:<10}", r);
    for (index_t t = 0; t < steps; ++t) line += fmt::format(" {:>10}", cell(s.at(r, t)));
    ui::result_raw(line + "\n");
  }
  for (RingPass pass : {RingPass::fwd, RingPass::bwd}) {
    if (pass == RingPass::bwd && !bwd) continue;
    std::string line = fmt::format(
        "  {:<10}",
        ui::tr(pass == RingPass::fwd ? Msg::ring_row_sent_fwd : Msg::ring_row_sent_bwd));
    for (index_t t = 0; t < steps; ++t) {
      double sent = 0;
      for (index_t r = 0; r < s.ranks; ++r) sent += s.bytes_sent(r, t, pass, bytes.kv, bytes.grad);
      line += fmt::format(" {:>10}", sent > 0 ? format_bytes(sent) : "-");
    }
    ui::result_raw(line + "\n");
  }
  ui::result(Msg::ring_schedule_legend);
}

std::string ms(double v) {
  return fmt::format("{:.3f}", v);
}

void print_times(RingPass pass, const std::vector<RingTimes>& times) {
  ui::result_section(ui::tr(pass == RingPass::fwd ? Msg::ring_times_fwd : Msg::ring_times_bwd));
  ui::result_raw(fmt::format(
      "  {:<6} {:>10} {:>10} {:>10} {:>10} {:>13} {:>13} {:>8}\n", ui::tr(Msg::ring_col_rank),
      ui::tr(Msg::ring_col_compute), ui::tr(Msg::ring_col_comm), ui::tr(Msg::ring_col_waited),
      ui::tr(Msg::ring_col_steps), "max(c, comm)", "c + comm", ui::tr(Msg::ring_col_hidden)));
  RingOverlap slowest;
  for (std::size_t r = 0; r < times.size(); ++r) {
    const RingOverlap v = ring_overlap(times[r]);
    if (r == 0 || v.steps > slowest.steps) slowest = v;
    if (index_t(r) >= kShownRanks) continue;
    ui::result_raw(fmt::format("  {:<6} {:>10} {:>10} {:>10} {:>10} {:>13} {:>13} {:>7.0f}%\n", r,
                               ms(v.compute), ms(v.comm), ms(v.waited), ms(v.steps),
                               ms(v.bound_max), ms(v.bound_sum), 100 * v.hidden));
  }
  const Msg verdict = slowest.comm < 0.01 * slowest.compute ? Msg::ring_overlap_small
                      : slowest.hidden >= 0.5               ? Msg::ring_overlap_hid
                                                            : Msg::ring_overlap_not;
  ui::result(verdict, ms(slowest.steps), ms(slowest.bound_max), ms(slowest.bound_sum),
             100 * slowest.hidden);
}

void print_verdicts(const Checked& c, Precision p) {
  ui::result_section(
      ui::tr(Msg::against_reference, p == Precision::fp64 ? ui::tr(Msg::reference_wide) : "fp64"));
  for (const auto& [name, v, used] : c.arrays())
    ui::result(Msg::error_line, fmt::format("|{0} - {0}_ref|", name), ui::sci(v.err),
               ui::verdict_text(p, v));
}

nlohmann::json ranges(const RingBlock& b) {
  nlohmann::json out = nlohmann::json::array();
  for (const Range& r : b.parts) out.push_back(ui::json_range(r));
  return out;
}

void emit_pass(const RingSchedule& s, RingPass pass, const std::vector<RingTimes>& times,
               ElementBytes bytes) {
  const char* id = pass == RingPass::fwd ? "fwd" : "bwd";
  for (index_t r = 0; r < s.ranks; ++r) {
    const RingTimes& t = times[std::size_t(r)];
    const RingOverlap v = ring_overlap(t);
    nlohmann::json j = {{"event", "ring_rank"},
                        {"pass", id},
                        {"rank", r},
                        {"rows", ranges(s.rows[std::size_t(r)])},
                        {"keys", ranges(s.keys[std::size_t(r)])},
                        {"computed", s.computed(r)},
                        {"skipped", s.skipped(r)},
                        {"compute_ms", v.compute},
                        {"comm_ms", v.comm},
                        {"wait_ms", v.waited},
                        {"steps_ms", v.steps},
                        {"hidden", v.hidden}};
    ui::out() << j.dump() << "\n";
    for (index_t k = 0; k < s.ranks; ++k) {
      const RingStep& step = s.at(r, k);
      const std::size_t x = std::size_t(k);
      nlohmann::json e = {{"event", "ring_step"},
                          {"pass", id},
                          {"rank", r},
                          {"step", k},
                          {"block", step.block},
                          {"computed", step.computed},
                          {"skipped", step.skipped},
                          {"bytes_sent", s.bytes_sent(r, k, pass, bytes.kv, bytes.grad)},
                          {"compute_ms", t.compute[x]},
                          {"wait_ms", t.wait[x]},
                          {"step_ms", t.step[x]},
                          {"comm_ms", t.comm[x]}};
      ui::out() << e.dump() << "\n";
    }
  }
}

template <class T>
void emit_json(const RingOptions& o, const Plan& plan, const RingResult<T>& r, const Checked& c,
               Precision p, ElementBytes bytes) {
  emit_pass(plan.schedule, RingPass::fwd, r.forward, bytes);
  if (!r.backward.empty()) emit_pass(plan.schedule, RingPass::bwd, r.backward, bytes);
  nlohmann::json j = {{"event", "result"},
                      {"subcommand", "ring"},
                      {"n", o.n},
                      {"m", o.keys()},
                      {"d", o.d},
                      {"dtype", precision_name(p)},
                      {"causal", o.causal},
                      {"align", o.align == CausalAlign::top_left ? "top-left" : "bottom-right"},
                      {"scale", o.params().scale_for(o.d)},
                      {"ranks", plan.ranks},
                      {"device", on_gpu(plan.where) ? "cuda" : "cpu"},
                      {"transport", where_id(plan)},
                      {"layout", layout_id(plan.schedule.layout)},
                      {"backward", o.pass == bench::Pass::bwd},
                      {"reference", p == Precision::fp64 ? "long double" : "fp64"}};
  if (on_gpu(plan.where)) j["gpu"] = cuda::gpu_info().name;
  for (const auto& [name, v, used] : c.arrays()) {
    j["err_" + name] = ui::number(v.err);
    j["naive_" + name] = ui::number(v.naive);
    j["bound_" + name] = ui::number(v.bound);
    j["verdict_" + name] = ui::outcome_id(v.outcome);
  }
  j["pass"] = c.pass();
  ui::out() << j.dump() << "\n";
}

// Rank 0: the verdicts against the reference, the text or the JSON; exit 1 when an array fails.
template <class T>
void report(const RingOptions& o, const Plan& plan, const bench::Arrays<T>& a,
            const RingResult<T>& r, Precision p, ElementBytes bytes, ui::Progress& progress) {
  progress.phase(ui::tr(Msg::progress_reference));
  const Checked checked = check(o, a, r, p);
  progress.stop();
  if (ui::settings().json) {
    emit_json(o, plan, r, checked, p, bytes);
  } else {
    print_problem(o, plan, precision_name(p));
    print_blocks(plan.schedule);
    print_schedule(plan.schedule, bytes, o.pass == bench::Pass::bwd);
    print_times(RingPass::fwd, r.forward);
    if (!r.backward.empty()) print_times(RingPass::bwd, r.backward);
    print_verdicts(checked, p);
  }
  conclude_run(checked, p);
}

// Every rank: the inputs (drawn alike from the seed), its part of the ring, the gather; rank 0
// also judges and prints. `net` is null for ranks simulated in this process.
template <class T>
void run_ring_as(const RingOptions& o, const Plan& plan, RingTransport* net) {
  bench::Case c;
  c.n = o.n, c.m = o.keys(), c.d = o.d, c.seed = o.seed, c.precision = precision_of<T>();
  ui::Progress progress("flashdemo ring");       // stderr, on a terminal, past a second
  if (net && net->rank() != 0) progress.stop();  // one line, rank 0's
  progress.phase(ui::tr(Msg::progress_ring));
  const bench::Arrays<T> a = bench::random_arrays<T>(c);
  const RingInputs<T> in{a.Q.data(), a.K.data(), a.V.data(), a.dO.data()};
  const RingResult<T> r = net ? ring_rank(*net, plan.schedule, o.params(), o.ring_pass(), in)
                              : ring_in_process(plan.schedule, o.params(), o.ring_pass(), in);
  if (net && net->rank() != 0) return;
  report(o, plan, a, r, c.precision, {sizeof(T), sizeof(T)}, progress);
}

// The same on GPUs: the inputs drawn in fp32 and rounded to --dtype (bf16, fp16) as the GPU stores
// them, the ring on `device` (NCCL between the ranks of an MPI job), the outputs as stored.
void run_ring_gpu(const RingOptions& o, const Plan& plan, RingTransport* net, int device) {
  const Precision p = dtype_precision(o.dtype);
  bench::Case c;
  c.n = o.n, c.m = o.keys(), c.d = o.d, c.seed = o.seed, c.precision = p;
  ui::Progress progress("flashdemo ring");
  if (net && net->rank() != 0) progress.stop();
  progress.phase(ui::tr(Msg::progress_ring));
  const bench::Arrays<float> a = bench::random_arrays<float>(c);  // rounded to p (bf16, fp16)
  const RingInputs<float> in{a.Q.data(), a.K.data(), a.V.data(), a.dO.data()};
  RingResult<float> r;
  try {
    r = net ? cuda::ring_rank(*net, plan.schedule, o.params(), o.ring_pass(), p, in,
                              cuda::RingLink::nccl, device)
            : cuda::ring_in_process(plan.schedule, o.params(), o.ring_pass(), p, in);
  } catch (const cuda::CudaError& e) {
    throw Error(kNoDevice, e.what());
  }
  if (net && net->rank() != 0) return;
  report(o, plan, a, r, p, {cuda::ring_element_bytes(p), sizeof(float)}, progress);
}

// Each rank takes GPU (its local rank) of its node (ring_launch.hpp: agree_gpus); rank 0 words
// the refusal, which every rank reaches together (exit 5).
int placed_gpu(RingTransport& net) {
  const RingGpuPlaces g = agree_gpus(net, cuda::device_count());
  std::string why;
  if (g.rank == 0 && g.gpus == 0) why = ui::tr(Msg::err_no_gpu, why_no_gpu(cuda::gpu_info()));
  if (g.rank > 0 && g.gpus == 0) why = ui::tr(Msg::ring_err_rank_no_gpu, g.rank);
  if (g.rank >= 0 && g.gpus > 0) why = ui::tr(Msg::ring_err_gpus, g.rank, g.at, g.gpus, g.gpus);
  if (!g.all_placed) throw Agreed(kNoDevice, why);
  return int(g.local);
}

// Rank 0 checks the memory it needs; every rank learns the answer, so all refuse together.
void agree_fits(const RingOptions& o, RingTransport* net) {
  const bool wide = o.dtype == DType::fp64;
  const double need = bytes_needed(o, wide ? 8 : 4, wide ? sizeof(long double) : 8);
  const bool root = !net || net->rank() == 0;
  bool ok = true;
  std::string why;
  if (root) try {
      ensure_fits(need, ui::tr(Msg::ring_memory_what));
    } catch (const Error& e) {
      ok = false, why = e.what();
    }
  if (!agree(net, ok)) throw Agreed(kTooLarge, why);
}

void run_with(const RingOptions& o, const Plan& plan, RingTransport* net) {
  agree_fits(o, net);
  if (on_gpu(plan.where)) return run_ring_gpu(o, plan, net, net ? placed_gpu(*net) : 0);
  o.dtype == DType::fp64 ? run_ring_as<double>(o, plan, net) : run_ring_as<float>(o, plan, net);
}

// The other ranks of an MPI job print nothing, errors included: the job's one line is rank 0's.
void quiet_stderr() {
  if (std::freopen("/dev/null", "w", stderr) == nullptr) return;  // then it stays as it was
}

// A refusal every rank of an MPI job reached alike: rank 0 says it and exits with its code; the
// others (other_rank) leave with 0. Had another rank left first with the code, mpirun would have
// ended the job, rank 0 included, before rank 0's line was written (it happened under load).
Plan agreed_plan(const RingOptions& o, const RingLaunch& l) {
  try {
    return plan_for(o, l);  // every rank refuses bad options alike, before MPI starts
  } catch (const Error&) {
    if (other_rank(l)) std::exit(0);
    throw;
  }
}

void run_ring(const RingOptions& o) {
  const RingLaunch l = ring_launch();
  if (other_rank(l)) quiet_stderr();
  const Plan plan = agreed_plan(o, l);
  if (plan.where == RingWhere::threads_no_mpi && l.rank != 0) return;  // rank 0 simulates them all
  if (plan.where != RingWhere::mpi && plan.where != RingWhere::gpu_mpi) {
    ensure_threads(plan.ranks + 1, "--ranks");  // a thread per rank, beside this one
    return run_with(o, plan, nullptr);
  }
  const std::unique_ptr<RingTransport> net = mpi::world();
  try {
    run_with(o, plan, net.get());
  } catch (const Agreed&) {  // every rank refused together: rank 0 says it (agreed_plan)
    if (net->rank() != 0) return;
    throw;
  } catch (const Error& e) {
    if (e.code == kCheckFailed) throw;  // rank 0 alone judges, after every rank is done
    ui::error(e.what());
    mpi::abort(e.code);  // a failure on one rank alone: end them all, none left waiting
  } catch (const std::exception& e) {
    ui::error(e.what());
    mpi::abort(kInternal);
  }
}

}  // namespace

void setup_ring(CLI::App& app) {
  auto o = std::make_shared<RingOptions>();
  CLI::App* sub = app.add_subcommand("ring", ui::tr(Msg::ring_help));
  add_shape(sub, *o, {false, kMaxRingSize, 256, Msg::ring_opt_n, Msg::ring_opt_m});
  add_count(sub, "--ranks", o->ranks, ui::tr(Msg::ring_opt_ranks), kMaxRingRanks)
      ->default_str("4 (cuda: 1), or mpirun's");
  add_dtype(sub, o->dtype, true, ui::tr(Msg::decode_opt_dtype))->default_str("fp32");
  add_causal(sub, *o);
  add_align(sub, o->align, o->causal, o->causal_implied);
  add_choice<Layout>(
      sub, "--layout", o->layout,
      {{"auto", Layout::automatic}, {"zigzag", Layout::zigzag}, {"contiguous", Layout::contiguous}},
      ui::tr(Msg::ring_opt_layout))
      ->default_str("auto");
  add_pass(sub, o->pass, ui::tr(Msg::ring_opt_pass));
  add_choice<Device>(sub, "--device", o->device, {{"cpu", Device::cpu}, {"cuda", Device::cuda}},
                     ui::tr(Msg::ring_opt_device))
      ->default_str("cpu");
  add_seed(sub, o->seed);
  add_finite(sub, "--scale", o->scale, ui::tr(Msg::opt_scale));
  sub->footer(ui::tr(Msg::ring_examples));
  sub->callback([o] { run_ring(*o); });
}

}  // namespace fd::demos
