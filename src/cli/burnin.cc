// `clustermax burnin`: the reliability phase's burn-in through Slurm (bench/burnin.h). One job step,
// one task per node, runs the same sustained load for --duration on every node; srun keeps the
// other tasks going when a node dies (--no-kill), and a task that gets SIGTERM (Ctrl-C, the time
// limit) stops and sends what it has. This side prints progress with the ETA, then compares the
// nodes' results (silent data corruption, drift, the slowest node, nodes lost). Results in
// RUN_DIR/bench/burnin.json.

#include <atomic>
#include <filesystem>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/slurm_fanout.h"
#include "bench/burnin.h"
#include "bench/gpu_bench.h"
#include "bench/json_read.h"
#include "bench/grade.h"
#include "bench/workspace.h"
#include "cli/bench_common.h"
#include "cli/cli.h"
#include "host/local_host.h"
#include "util/files.h"
#include "util/time.h"
#include "util/usage_error.h"

namespace clustermax::cli {
using nlohmann::json;
namespace burnin = bench::burnin;
namespace fs = std::filesystem;

namespace {

constexpr const char* kBurnInMarker = "CLUSTERMAX-BURNIN";

struct BurnInCli {
  BenchCommon common;
  audit::SlurmFanOutOptions slurm;
  std::string duration = "10m";
  int matrix_n = 0, mem_mb = 0, threads = 0;  // 0: the backend's default
  bool gpu = false, local = false;
  std::string helper;
  std::string rank_job;
};

// One node's share of the run: the GPU load (every GPU, through the helper) or the CPU load.
json RunOnNode(const json& job, const std::string& node, int rank) {
  if (bench::StrOf(job, "backend") == "gpu")
    return burnin::RunGpuBurnInRankJob(job, node, rank, bench::FindGpuHelper(bench::StrOf(job, "helper")));
  return burnin::RunBurnInRankJob(job, node, rank);
}

// "90", "90s", "10m", "8h", "2d" -> seconds; nullopt when malformed.
std::optional<double> ParseDuration(const std::string& s) {
  if (s.empty() || s.size() > 12) return std::nullopt;
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  std::string unit = s.substr(used);
  double mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : unit == "d" ? 86400 : -1;
  if (mult < 0 || !(v > 0) || !std::isfinite(v)) return std::nullopt;
  return v * mult;
}

int RunBurnIn(BurnInCli& o) {
  if (!o.rank_job.empty())
    return RunRankTask(o.rank_job, "burnin", kBurnInMarker,
                       [](const json& job, const bench::net::RankInfo& me) -> std::optional<json> {
                         // srun passes on Ctrl-C and the time limit as SIGTERM: the task stops
                         // and sends the iterations it has.
                         bench::InstallCancelHandlers();
                         return RunOnNode(job, me.node, me.rank);
                       });
  auto duration = ParseDuration(o.duration);
  if (!duration || *duration > 30 * 86400.0) throw UsageError("--duration: e.g. 600, 10m, 8h, 2d (at most 30 days)");
  if (o.gpu) {
    if (o.matrix_n != 0 && (o.matrix_n < 256 || o.matrix_n > 32768))
      throw UsageError("--matrix-n: 256 to 32768 with --gpu");
    if (o.mem_mb != 0 && (o.mem_mb < 3 || o.mem_mb > 1048576)) throw UsageError("--mem-mb: 3 to 1048576 with --gpu");
  } else {
    if (o.matrix_n != 0 && (o.matrix_n < 16 || o.matrix_n > 4096)) throw UsageError("--matrix-n: 16 to 4096");
    if (o.mem_mb != 0 && (o.mem_mb < 1 || o.mem_mb > 65536)) throw UsageError("--mem-mb: 1 to 65536");
    if (!o.helper.empty()) throw UsageError("--helper: only with --gpu");
  }
  if (o.threads < 0 || o.threads > 1024) throw UsageError("--threads: 0 (every CPU) to 1024");
  if (o.local &&
      (!o.slurm.partition.empty() || !o.slurm.nodelist.empty() || o.slurm.nodes > 0 || !o.slurm.bcast.empty()))
    throw UsageError("--local runs on this machine alone: no --partition, --nodelist, --nodes or --bcast");
  CheckBenchOut(o.common, "burnin");
  json job = {{"duration_s", *duration}, {"seed", 1}, {"threads", o.threads}};
  if (o.matrix_n) job["matrix_n"] = o.matrix_n;
  if (o.mem_mb) job["mem_mb"] = o.mem_mb;
  if (o.gpu) {
    job["backend"] = "gpu";
    // The helper's path as given (absolute: the nodes resolve it themselves); empty: next to
    // clustermax on each node.
    if (!o.helper.empty()) job["helper"] = fs::absolute(o.helper).string();
  }
  const burnin::Options eff = burnin::OptionsFromJob(job);
  json options = {{"backend", o.gpu ? "gpu" : "cpu"},
                  {"duration_s", *duration},
                  {"matrix_n", eff.matrix_n},
                  {"mem_mb", eff.mem_mb},
                  {"seed", 1},
                  {"threads", o.threads}};
  auto started = std::chrono::system_clock::now();
  auto t0 = std::chrono::steady_clock::now();
  // The result from the nodes' documents, the same with or without Slurm (StampFleetResult marks
  // an interrupted run).
  auto finish = [&](const std::map<std::string, json>& docs, const std::map<std::string, std::string>& missing,
                    const std::vector<std::string>& nodes, const std::vector<audit::UnreachableNode>& unreachable) {
    options["nodes"] = nodes;
    json result = {{"kind", "clustermax.bench.burnin"}, {"schema_version", 1}, {"options", options}};
    result["summary"] = burnin::Summarize(burnin::UnitsOf(docs), missing);
    StampFleetResult(result, started, t0, unreachable);
    const BenchCommon& c = o.common;
    return FinishBench(std::move(result), c, "burnin", burnin::RenderBurnIn,
                       [&c](const json& x) { return bench::Grade(burnin::BurnInMetrics(x), BenchBars(c)); });
  };
  if (o.local) {
    // This machine alone, no Slurm: the node side in this process.
    bench::InstallCancelHandlers();
    std::string me = util::Hostname().empty() ? "localhost" : util::Hostname();
    if (!o.common.quiet)
      std::cerr << fmt::format("  burn-in on this machine ({}) for {:g} s: {}\n", me, *duration,
                               o.gpu ? "every GPU" : "the CPU");
    return finish({{me, RunOnNode(job, me, 0)}}, {}, {me}, {});
  }
  host::LocalHost login;
  o.slurm.self_exe = util::SelfExe();
  o.slurm.tasks_per_node = 1;
  // The step's limit: the duration, the inputs' setup and the last iteration, and room to send.
  o.slurm.timeout_s = *duration + 600;
  long need_min = static_cast<long>(std::ceil(o.slurm.timeout_s / 60.0));
  try {
    if (o.slurm.time_limit.empty() || std::stol(o.slurm.time_limit) < need_min)
      o.slurm.time_limit = std::to_string(need_min);
  } catch (const std::exception&) {
    o.slurm.time_limit = std::to_string(need_min);
  }
  o.slurm.stop_when = [] { return bench::Cancelled(); };
  audit::NodeScope scope = audit::SelectNodes(login, o.slurm);
  RequireTargets(scope, "burnin");
  bench::InstallCancelHandlers();
  std::atomic<bool> done{false};
  std::atomic<size_t> reported{0};
  std::mutex mu;
  std::map<std::string, std::string> arrived;
  // Progress: elapsed, the ETA, how many nodes have sent their results.
  std::thread progress([&] {
    int tick = 0;
    while (!done) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      if (done || o.common.quiet || ++tick % 50 != 0) continue;  // every 10 s
      double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      auto eta = started + std::chrono::seconds(static_cast<long long>(*duration));
      if (el <= *duration)
        std::cerr << fmt::format("  burn-in: {:.0f} of {:.0f} s on {} node(s), ETA {}\n", el, *duration,
                                 scope.targets.size(), util::FormatRfc3339(eta));
      else
        std::cerr << fmt::format("  burn-in: {:.0f} s, waiting for results: {} of {} node(s) in\n", el, reported.load(),
                                 scope.targets.size());
    }
  });
  struct Joiner {
    std::atomic<bool>& d;
    std::thread& t;
    ~Joiner() {
      d = true;
      if (t.joinable()) t.join();
    }
  } joiner{done, progress};
  if (!o.common.quiet)
    std::cerr << fmt::format(
        "  burn-in on {} node(s) for {:g} s: {}\n", scope.targets.size(), *duration,
        o.gpu ? fmt::format("every GPU, GEMM bf16 n={}, device memory {} MiB", eff.matrix_n, eff.mem_mb)
              : fmt::format("GEMM fp64 n={}, memory {} MiB", eff.matrix_n, eff.mem_mb));
  // With --gpu the step asks for the nodes' GPUs (their gres), so that the tasks see them.
  audit::FramedStep step = audit::RunFramedStep(
      login, scope, scope.targets, o.slurm, "clustermax-burnin", {"burnin", "--rank-job", job.dump()}, kBurnInMarker,
      o.gpu ? scope.gpus_per_node : 0, [&](const std::string& node, std::string doc) {
        // With a sink the step keeps no documents: kept
        // here as they arrive.
        std::lock_guard<std::mutex> lock(mu);
        arrived[node] = std::move(doc);
        ++reported;
      });
  done = true;
  progress.join();
  step.documents = std::move(arrived);
  std::map<std::string, std::string> missing;
  auto docs = StepDocs(step, missing);
  for (const auto& [node, why] : missing)
    if (!bench::Cancelled() && !o.common.quiet) std::cerr << "  " << node << ": " << why << "\n";
  return finish(docs, missing, scope.targets, scope.unreachable);
}

}  // namespace

void AddBurnInCommand(CLI::App* parent, Commands& table) {
  auto o = std::make_shared<BurnInCli>();
  auto* cmd = parent->add_subcommand(
      "burnin",
      "Reliability burn-in through Slurm: the same sustained GEMM + memory load on every node for --duration, "
      "results compared across nodes (silent data corruption), throughput drift, the slowest node, nodes lost");
  cmd->add_option("--duration", o->duration, "How long: seconds, or 10m, 8h, 2d (default 10m)");
  cmd->add_option("--matrix-n", o->matrix_n, "GEMM size n (n x n fp64; default 256; --gpu: bf16, default 8192)");
  cmd->add_option("--mem-mb", o->mem_mb, "Memory pass size, MiB for its three arrays (default 256; --gpu: 3072)");
  cmd->add_flag("--gpu", o->gpu,
                "The GPU load on every GPU of every node (the GPU helper clustermax-gpu: BF16 GEMM and a triad in "
                "device memory, each GPU compared with its alike peers) with NVML telemetry and ECC/row-remap "
                "counters read before and after");
  cmd->add_option("--helper", o->helper,
                  "With --gpu: the GPU helper's path on the nodes (default: next to clustermax)");
  cmd->add_flag("--local", o->local, "Run on this machine alone, without Slurm");
  cmd->add_option("--threads", o->threads, "Threads per node (default 0: every CPU of the task)");
  cmd->add_option("--partition", o->slurm.partition, "The partition to take nodes from");
  cmd->add_option("--nodelist", o->slurm.nodelist, "These nodes (Slurm hostlist)");
  cmd->add_option("--nodes", o->slurm.nodes, "At most this many nodes");
  cmd->add_option("--time", o->slurm.time_limit, "Time limit of the step (minutes; default: the duration and 10)");
  cmd->add_option("--bcast", o->slurm.bcast, "Copy this binary to the nodes first (srun --bcast=PATH)");
  cmd->add_option("--rank-job", o->rank_job, "(internal) the job of one task of the step")->group("");
  AddBenchCommon(cmd, o->common);
  table.Add(cmd, [o] { return RunBurnIn(*o); });
}

}  // namespace clustermax::cli
