// `clustermax bench storage|s3`: argv to options, progress to stderr, the table or JSON to stdout,
// the result file (RUN_DIR/bench/<suite>.json, written atomically) and the exit code.
// The `bench` subcommands (gpu, storage, s3) and `probe s3`: options bound to CLI11, run when parsed.

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include <fmt/format.h>

#include "bench/gpu_bench.h"
#include "bench/grade.h"
#include "bench/render.h"
#include "bench/s3_bench.h"
#include "bench/s3_probe.h"
#include "bench/storage.h"
#include "bench/storage_scaling.h"
#include "audit/plan.h"
#include "audit/slurm_fanout.h"
#include "host/local_host.h"
#include "util/line_frames.h"
#include "bench/workspace.h"
#include "audit/run.h"
#include "cli/cli.h"
#include "cli/command.h"
#include "cli/bench_common.h"
#include "util/progress.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/time.h"

namespace clustermax::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::vector<uint64_t> Sizes(const std::vector<std::string>& v) {
  std::vector<uint64_t> out;
  for (const auto& s : v) out.push_back(bench::ParseSize(s));
  return out;
}

constexpr const char* kBenchMarker = "CLUSTERMAX-BENCH";

// `bench storage` flags that reproduce `so` on another node (sizes in bytes, --quick already applied).
std::vector<std::string> StorageArgs(const bench::StorageOptions& so) {
  std::vector<std::string> a = {"--path=" + so.path.string(),
                                fmt::format("--size={}", so.size),
                                fmt::format("--files={}", so.files),
                                fmt::format("--duration={}", so.duration_s),
                                fmt::format("--ramp={}", so.ramp_s),
                                "--engine=" + so.engine,
                                fmt::format("--checkpoint-size={}", so.ckpt_size),
                                fmt::format("--checkpoint-ranks={}", so.ckpt_ranks),
                                fmt::format("--checkpoint-shards={}", so.ckpt_shards),
                                fmt::format("--checkpoint-runs={}", so.ckpt_runs),
                                fmt::format("--meta-files={}", so.meta_files),
                                fmt::format("--meta-dirs={}", so.meta_dirs),
                                fmt::format("--meta-threads={}", so.meta_threads),
                                fmt::format("--meta-file-size={}", so.meta_file_size)};
  if (so.threads) a.push_back(fmt::format("--threads={}", *so.threads));
  if (so.iodepth) a.push_back(fmt::format("--iodepth={}", *so.iodepth));
  if (!so.tests.empty()) a.push_back(fmt::format("--tests={}", fmt::join(so.tests, ",")));
  return a;
}

// `bench storage --scale`: the node-level storage run repeated from 1, 2, 4 ... nodes at once, one
// srun step per count, the nodes taken in sinfo's order. Each task runs this binary's `bench storage`
// on its node (a fresh directory of its own under the shared path) and frames its JSON result on
// stdout; a node whose result does not arrive is named with the reason and the others are kept.
int RunStorageScaling(const bench::StorageOptions& so, audit::SlurmFanOutOptions o, const BenchCommon& c) {
  host::LocalHost login;
  o.self_exe = util::SelfExe();
  audit::NodeScope scope = audit::SelectNodes(login, o);
  RequireTargets(scope, "bench storage --scale");
  // Every node writes its own data at the same time: the shared path must hold all of it.
  uint64_t need = bench::StorageFootprint(so) * scope.targets.size();
  std::error_code ec;
  auto space = std::filesystem::space(so.path, ec);
  if (!ec && space.available < need + need / 10) {
    throw std::runtime_error(fmt::format(
        "{} has {:.1f} GiB free; {} nodes at once need {:.1f} GiB (lower --size or --checkpoint-size, or --nodes)",
        so.path.string(), space.available / 1073741824.0, scope.targets.size(), need * 1.1 / 1073741824.0));
  }
  auto started = std::chrono::system_clock::now();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<bench::ScalingStep> steps;
  for (int k : bench::ScalingCounts(static_cast<int>(scope.targets.size()))) {
    if (bench::Cancelled()) break;
    std::vector<std::string> nodes(scope.targets.begin(), scope.targets.begin() + k);
    if (!c.quiet)
      std::cerr << fmt::format("  scale: {} node(s) at once ({})\n", k,
                               util::Ellipsize(fmt::format("{}", fmt::join(nodes, ",")), 120));
    std::vector<std::string> program = {"bench", "storage", "--emit-frames"};
    for (auto& arg : StorageArgs(so)) program.push_back(arg);
    audit::FramedStep step =
        audit::RunFramedStep(login, scope, nodes, o, "clustermax-bench-storage", program, kBenchMarker, 0);
    bench::ScalingStep s;
    s.nodes = k;
    s.asked = nodes;
    s.seconds = step.seconds;
    s.error = step.srun_error;
    s.missing = step.missing;
    for (const auto& [node, doc] : step.documents) {
      try {
        json r = util::ParseJsonDocument(doc, "result of " + node);
        if (r.contains("error"))
          s.missing[node] = r["error"].get<std::string>();
        else
          s.results[node] = std::move(r);
      } catch (const std::exception& e) {
        s.missing[node] = std::string("result unreadable: ") + e.what();
      }
    }
    steps.push_back(std::move(s));
  }
  json options = {{"path", so.path.string()},
                  {"tests", so.tests.empty() ? std::string("all") : fmt::format("{}", fmt::join(so.tests, ","))},
                  {"size", fmt::format("{:.0f} MiB", so.size / 1048576.0)},
                  {"duration_s", so.duration_s},
                  {"nodes_in_scope", scope.in_scope},
                  {"inside_allocation", scope.inside_allocation}};
  json result = bench::ScalingResult(steps, options);
  StampFleetResult(result, started, t0, scope.unreachable);
  return FinishBench(std::move(result), c, "storage-scaling", bench::RenderScaling,
                     [&c](const json& x) { return bench::Grade(bench::ScalingMetrics(x), BenchBars(c)); });
}

// The task side of a scaling step: the node's result (or its error) as framed lines, keyed by the
// node's Slurm name, and nothing else on stdout.
int EmitStorageFrames(const bench::StorageOptions& so) {
  const char* slurm_name = std::getenv("SLURMD_NODENAME");
  std::string node = slurm_name && *slurm_name ? slurm_name : util::Hostname();
  json r;
  try {
    r = bench::RunStorageBench(so);
  } catch (const std::exception& e) {
    r = {{"error", e.what()}};
  }
  for (const auto& line : util::FrameLines(kBenchMarker, node, r.dump(-1, ' ', true, json::error_handler_t::replace)))
    std::cout << line << "\n";
  std::cout.flush();
  return kExitOk;
}

// `bench gpu`: the suites and their options; the suites themselves are bench::GpuSuiteTable().
struct GpuCli {
  BenchCommon common;
  bench::GpuBenchOptions go;
  std::vector<std::string> suites;
  std::string gpus;
  bool list = false, full = false, no_telemetry = false;
  double warmup = -1;
};

int RunGpu(GpuCli& o) {
  bench::GpuBenchOptions& go = o.go;
  if (o.list) {
    std::cout << bench::RenderGpuList();
    return kExitOk;
  }
  go.plan.suites = o.suites;
  try {
    bench::ValidateGpuPlanOptions(go.plan);  // before any GPU work, thread or directory
  } catch (const std::invalid_argument& e) {
    std::cerr << fmt::format("clustermax: {} (see bench gpu --list)\n", e.what());
    return kExitToolError;
  }
  CheckBenchOut(o.common, "gpu");
  go.plan.full = o.full;
  go.telemetry = !o.no_telemetry;
  if (o.warmup >= 0) go.warmup_s = o.warmup;
  for (const auto& part : util::Split(o.gpus, ',')) {
    auto v = util::ParseInt(util::Trim(part));
    if (!v || *v < 0) {
      std::cerr << fmt::format("clustermax: --gpus takes device indices like 0,3; '{}' is not one\n", part);
      return kExitToolError;
    }
    go.gpus.push_back(static_cast<int>(*v));
  }
  auto progress = std::make_shared<util::Progress>();
  if (!o.common.quiet) ReportProgress(*progress, go.progress, go.fraction);
  bench::InstallCancelHandlers();
  json r = bench::RunGpuBench(go);
  progress->Finish();
  return FinishBench(std::move(r), o.common, "gpu", bench::RenderGpu, [](const json& x) { return bench::GradeGpu(x); });
}

void AddGpuCommand(CLI::App* parent, Commands& table) {
  auto o = std::make_shared<GpuCli>();
  bench::GpuBenchOptions& go = o->go;
  auto* gpu = parent->add_subcommand(
      "gpu", "GPU compute: GEMM per precision, MAMF, grouped MoE GEMM, GEMV, memory, host and peer links, launch");
  gpu->add_option("suites", o->suites,
                  fmt::format("Suites to run (default all): {}", fmt::join(bench::GpuSuites(), " ")));
  gpu->add_flag("--list", o->list, "Show every suite, shape set, precision and model, then exit");
  gpu->add_option("--gpus", o->gpus, "CUDA device indices, e.g. 0,3 (default: every GPU, all at once)");
  gpu->add_flag("--full", o->full,
                "Full sweeps (MAMF 15-30 min per precision, EP 8 and 32, every power of two of tokens)");
  gpu->add_option("--precisions", go.plan.precisions,
                  "GEMM precisions: fp64 fp32 tf32 bf16 fp16 fp8 fp8-1x128 fp8-128x128 mxfp8 nvfp4")
      ->delimiter(',');
  gpu->add_option("--models", go.plan.models, "MoE models for grouped-gemm: kimi-k2.5 kimi-k3 dsv3 dsv4-pro")
      ->delimiter(',');
  gpu->add_option(
         "--grouped-backend", go.plan.grouped_backend,
         "Grouped GEMM path for BF16/FP16/TF32/FP32: auto (time both, keep the faster), cublas-grouped, lt-graph")
      ->check(CLI::IsMember({"auto", "cublas-grouped", "lt-graph"}));
  gpu->add_flag("--fp8-fast-accum", go.plan.fp8_fast_accum,
                "FP8 with cuBLASLt fast accumulation (default off, as torch._scaled_mm)");
  gpu->add_option("--warmup", o->warmup, "Seconds of GPU warm-up before timing (default 10, full 30)");
  gpu->add_option("--helper", go.helper,
                  "Path of clustermax-gpu (default: next to this binary, or $CLUSTERMAX_GPU_HELPER)");
  gpu->add_option("--job-timeout", go.job_timeout_s, "Seconds one suite may run on one GPU before it is stopped");
  gpu->add_flag("--no-telemetry", o->no_telemetry, "Do not sample clocks, power and temperature through NVML");
  AddBenchCommon(gpu, o->common, false);  // GPU bars come from data/gpu-peaks.json per GPU model
  table.Add(gpu, [o] { return RunGpu(*o); });
}

// `bench storage`: one node, or --scale through Slurm.
struct StorageCli {
  BenchCommon common;
  bench::StorageOptions so;
  std::string size = "2G", ckpt_size = "1G";
  int threads = 0, iodepth = 0;
  bool quick = false, scale = false, emit_frames = false;
  audit::SlurmFanOutOptions scale_slurm;
  double step_timeout = 0;
};

int RunStorage(StorageCli& o) {
  bench::StorageOptions& so = o.so;
  so.size = bench::ParseSize(o.size);
  so.ckpt_size = bench::ParseSize(o.ckpt_size);
  if (o.quick) {
    if (o.size == "2G") so.size = 512u << 20;
    if (o.ckpt_size == "1G") so.ckpt_size = 256u << 20;
    so.duration_s = std::min(so.duration_s, 3.0);
    so.ramp_s = std::min(so.ramp_s, 1.0);
    so.meta_files = std::min(so.meta_files, 2000);
  }
  if (o.threads) so.threads = o.threads;
  if (o.iodepth) so.iodepth = o.iodepth;
  bench::InstallCancelHandlers();
  if (o.emit_frames) return EmitStorageFrames(so);
  CheckBenchOut(o.common, o.scale ? "storage-scaling" : "storage");
  if (o.scale) {
    // Default step budget: the run's own length, three times over, plus scheduling.
    o.scale_slurm.timeout_s =
        o.step_timeout > 0 ? o.step_timeout : 120 + 3 * (6 * (so.duration_s + so.ramp_s) + so.ckpt_runs * 60.0 + 60.0);
    return RunStorageScaling(so, o.scale_slurm, o.common);
  }
  auto progress = std::make_shared<util::Progress>();
  if (!o.common.quiet) ReportProgress(*progress, so.progress, so.fraction);
  json r = bench::RunStorageBench(so);
  progress->Finish();
  const BenchCommon& c = o.common;
  return FinishBench(std::move(r), c, "storage", bench::RenderStorage,
                     [&c](const json& x) { return bench::Grade(bench::StorageMetrics(x), BenchBars(c)); });
}

void AddStorageCommand(CLI::App* parent, Commands& table) {
  auto o = std::make_shared<StorageCli>();
  bench::StorageOptions& so = o->so;
  auto* st = parent->add_subcommand("storage",
                                    "POSIX filesystem: sequential and random I/O, checkpoint save/load, small files");
  st->add_option("--path", so.path, "Directory to test (a fresh subdirectory is made and removed)")
      ->required()
      ->check(CLI::ExistingDirectory);
  st->add_option("--size", o->size, "Data files of the I/O workloads, all together (e.g. 2G)");
  st->add_option("--files", so.files, "Data files = threads of the sequential workloads");
  st->add_option("--duration", so.duration_s, "Seconds per I/O workload (0: one pass over the data)");
  st->add_option("--ramp", so.ramp_s, "Seconds of warm-up not counted");
  st->add_option("--threads", o->threads, "Threads of the random-read workloads (default 16)");
  st->add_option("--iodepth", o->iodepth, "I/Os in flight per thread with io_uring (default 64)");
  st->add_option("--engine", so.engine, "auto, io_uring or psync");
  st->add_option("--tests", so.tests, "Only these: io, checkpoint, metadata or workload ids (seq-read-1m-direct, ...)")
      ->delimiter(',');
  st->add_option("--checkpoint-size", o->ckpt_size, "Checkpoint bytes per run, all ranks together (e.g. 1G)");
  st->add_option("--checkpoint-ranks", so.ckpt_ranks, "Writers, one per GPU");
  st->add_option("--checkpoint-shards", so.ckpt_shards, "Files per rank");
  st->add_option("--checkpoint-runs", so.ckpt_runs, "Save/load runs (the reference averages 5)");
  st->add_option("--meta-files", so.meta_files, "Small files for the metadata test");
  st->add_option("--meta-dirs", so.meta_dirs, "Directories they are spread over");
  st->add_option("--meta-threads", so.meta_threads, "Threads of the metadata test");
  st->add_option("--meta-file-size", so.meta_file_size, "Bytes per small file");
  st->add_flag("--quick", o->quick, "Short run: 512M data, 3 s per workload, 256M checkpoint, 2000 small files");
  st->add_flag(
      "--scale", o->scale,
      "Through Slurm: the same run from 1, 2, 4 ... nodes at once on the shared --path (aggregate, per node, efficiency)");
  st->add_option("--partition", o->scale_slurm.partition, "--scale: the partition to take nodes from");
  st->add_option("--nodelist", o->scale_slurm.nodelist, "--scale: these nodes (Slurm hostlist)");
  st->add_option("--nodes", o->scale_slurm.nodes, "--scale: at most this many nodes");
  st->add_option("--time", o->scale_slurm.time_limit,
                 "--scale: srun --time per step (minutes) when asking for an allocation");
  st->add_option("--step-timeout", o->step_timeout,
                 "--scale: seconds before a step is stopped (what arrived is kept; default from the run's length)");
  st->add_option("--bcast", o->scale_slurm.bcast, "--scale: copy this binary to the nodes first (srun --bcast=PATH)");
  st->add_flag("--emit-frames", o->emit_frames, "(internal) print the result as framed lines for a --scale step")
      ->group("");
  AddBenchCommon(st, o->common);
  table.Add(st, [o] { return RunStorage(*o); });
}

// `bench s3`.
struct S3Cli {
  BenchCommon common;
  bench::S3BenchOptions s3o;
  std::string profile, mp_threshold = "64M", part_size = "16M", max_row = "4G", mixed_object = "1M";
  std::vector<std::string> sizes = {"4K", "1M", "64M"};
  bool region_given = false;
};

int RunS3(S3Cli& o) {
  bench::S3BenchOptions& s3o = o.s3o;
  CheckBenchOut(o.common, "s3");
  if (!o.region_given) {
    for (const char* k : {"AWS_REGION", "AWS_DEFAULT_REGION"}) {
      if (const char* v = std::getenv(k); v && *v) {
        s3o.config.region = v;
        break;
      }
    }
  }
  s3o.sizes = Sizes(o.sizes);
  s3o.multipart_threshold = bench::ParseSize(o.mp_threshold);
  s3o.part_size = bench::ParseSize(o.part_size);
  s3o.max_bytes_per_row = bench::ParseSize(o.max_row);
  s3o.mixed_object = bench::ParseSize(o.mixed_object);
  s3o.config.credentials = bench::LoadS3Credentials(o.profile, [](const char* k) { return std::getenv(k); });
  auto progress = std::make_shared<util::Progress>();
  if (!o.common.quiet) ReportProgress(*progress, s3o.progress, s3o.fraction);
  bench::InstallCancelHandlers();
  json r = bench::RunS3Bench(s3o);
  progress->Finish();
  const BenchCommon& c = o.common;
  return FinishBench(std::move(r), c, "s3", bench::RenderS3,
                     [&c](const json& x) { return bench::Grade(bench::S3Metrics(x), BenchBars(c)); });
}

void AddS3Command(CLI::App* parent, Commands& table) {
  auto o = std::make_shared<S3Cli>();
  bench::S3BenchOptions& s3o = o->s3o;
  auto* s3 = parent->add_subcommand(
      "s3", "S3-compatible object storage: PUT/GET per size and stream count, LIST, DELETE, mixed");
  s3->add_option("--endpoint", s3o.config.endpoint, "http(s)://host[:port]")->required();
  s3->add_option("--bucket", s3o.config.bucket, "Existing bucket (objects go under a fresh prefix, all deleted after)")
      ->required();
  s3->add_option("--region", s3o.config.region, "Signing region (default us-east-1, or AWS_REGION)");
  s3->add_option("--profile", o->profile,
                 "Profile in ~/.aws/credentials (default: AWS_* environment, AWS_PROFILE, default)");
  s3->add_option("--addressing", s3o.config.addressing, "path (endpoint/bucket/key) or virtual (bucket.endpoint/key)")
      ->check(CLI::IsMember({"path", "virtual"}));
  s3->add_option("--connect-to", s3o.config.connect_to, "HOST:PORT:ADDR:PORT, as curl --connect-to");
  s3->add_option("--sizes", o->sizes, "Object sizes (e.g. 4K,1M,64M,1G)")->delimiter(',');
  s3->add_option("--concurrency", s3o.concurrency, "Stream counts (e.g. 1,8,32)")->delimiter(',');
  s3->add_option("--duration", s3o.duration_s, "Seconds per PUT or GET row");
  s3->add_option("--max-bytes-per-row", o->max_row, "A row also stops after moving this much (e.g. 4G)");
  s3->add_option("--multipart-threshold", o->mp_threshold, "Objects this large are uploaded in parts");
  s3->add_option("--part-size", o->part_size, "Multipart part size (>= 5M)");
  s3->add_option("--mixed", s3o.mixed_s, "Seconds of mixed GET/PUT/LIST/DELETE (0: none; 3.0 uses 900)");
  s3->add_option("--mixed-object", o->mixed_object, "Object size of the mixed run");
  s3->add_option("--list-page", s3o.list_page, "Keys per LIST page");
  s3->add_option("--retries", s3o.config.max_retries, "Retries of a throttled or failed request");
  s3->add_option("--request-timeout", s3o.config.request_timeout_s, "Seconds per request");
  s3->add_option("--connect-timeout", s3o.config.connect_timeout_s, "Seconds to connect");
  s3->add_flag("--insecure", s3o.config.insecure_tls, "Do not verify the TLS certificate");
  AddBenchCommon(s3, o->common);
  table.Add(s3, [o, s3] {
    o->region_given = s3->count("--region") > 0;
    return RunS3(*o);
  });
}

// `probe s3`: the audit's s3-probe as a command (its JSON is recorded as evidence).
struct ProbeS3Cli {
  bench::S3Config config;
  std::string profile;
};

void AddProbeCommands(CLI::App& app, Commands& table) {
  auto* probe_cmd = app.add_subcommand("probe", "Single active probes the audit runs as commands");
  probe_cmd->require_subcommand(1);
  auto o = std::make_shared<ProbeS3Cli>();
  auto* ps3 = probe_cmd->add_subcommand("s3", "HEAD the bucket, PUT, GET and DELETE one small object; JSON on stdout");
  ps3->add_option("--endpoint", o->config.endpoint, "http(s)://host[:port]")->required();
  ps3->add_option("--bucket", o->config.bucket, "Bucket")->required();
  ps3->add_option("--region", o->config.region, "Signing region");
  ps3->add_option("--addressing", o->config.addressing, "path or virtual")->check(CLI::IsMember({"path", "virtual"}));
  ps3->add_option("--profile", o->profile, "Profile in ~/.aws/credentials");
  table.Add(ps3, [o] {
    o->config.max_retries = 1;
    o->config.request_timeout_s = 10;
    o->config.credentials = bench::LoadS3Credentials(o->profile, [](const char* k) { return std::getenv(k); });
    std::cout << util::JsonText(bench::RunS3Probe(o->config), -1) << "\n";
    return kExitOk;
  });
}

}  // namespace

void AddBenchCommands(CLI::App& app, Commands& table) {
  auto* bench_cmd = app.add_subcommand("bench", "Benchmarks (phase 2): gpu, storage, s3, net, infer");
  bench_cmd->require_subcommand(1);
  AddGpuCommand(bench_cmd, table);
  AddStorageCommand(bench_cmd, table);
  AddS3Command(bench_cmd, table);
  AddNetCommand(bench_cmd, table);
  AddInferCommand(bench_cmd, table);
  AddLifecycleCommand(bench_cmd, table);
  AddTrainCommand(bench_cmd, table);
  AddDrillCommand(bench_cmd, table);
  AddHistoryCommand(bench_cmd, table);
  AddBurnInCommand(&app, table);
  AddProbeCommands(app, table);
}

}  // namespace clustermax::cli
