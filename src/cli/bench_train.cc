// `clustermax bench train`: a real training run through Slurm from a recipe (bench/train.h): one
// srun step, one task per GPU (one per node without GPUs), optionally in a container through pyxis.
// Each task's rank comes from Slurm (RANK, WORLD_SIZE, LOCAL_RANK set from SLURM_PROCID, SLURM_NTASKS,
// SLURM_LOCALID by a one-line sh wrapper that also names the task's node); MASTER_ADDR is the first
// node's address. The log is read as it arrives; a watchdog stops a run that makes no progress.
// Results in RUN_DIR/bench/train.json.

#include <chrono>
#include <deque>
#include <iostream>
#include <random>

#include <fmt/format.h>

#include "audit/slurm_fanout.h"
#include "bench/gpu_bench.h"
#include "bench/json_read.h"
#include "bench/train.h"
#include "gpu/nvml.h"
#include "bench/workspace.h"
#include "cli/bench_common.h"
#include "cli/cli.h"
#include "host/local_host.h"
#include "host/redact.h"
#include "util/files.h"
#include "util/line_assembler.h"
#include "util/strings.h"
#include "util/usage_error.h"

namespace clustermax::cli {
using nlohmann::json;
namespace train = bench::train;

namespace {

struct TrainCli {
  BenchCommon common;
  audit::SlurmFanOutOptions slurm;
  std::string recipe, recipe_file, python = "python3";
  std::vector<std::string> sets;
  int steps = 20, warmup = 2, tasks_per_node = 0, master_port = 0;
  uint64_t seed = 1234;
  bool deterministic = false;
  double peak_tflops = 0, mamf_tflops = 0;
  double stall_timeout = 300, first_step_timeout = 900, run_timeout = 86400;
  std::string container_image, container_mounts, time_limit;
  bool local = false;
};

// --local: the tasks on this machine, no Slurm; the same variables and task line as kWrapper, each
// task's output prefixed with its rank as srun --label does. $1: the task count, $2: MASTER_PORT,
// $3: this machine's name; then the recipe's command. Each rank and its labeller run in one
// subshell whose status is the rank's (pipefail); the first rank to fail stops the others (as srun
// --kill-on-bad-exit does: its peers would wait for it in their collectives) and sets the status.
constexpr const char* kLocalLauncher =
    "set -o pipefail; n=$1; export MASTER_ADDR=127.0.0.1 MASTER_PORT=$2 WORLD_SIZE=$1 LOCAL_WORLD_SIZE=$1; "
    "host=$3; shift 3; "
    "gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -n 1 | tr -d '\"\\\\'); "
    "i=0; while [ \"$i\" -lt \"$n\" ]; do "
    "( ( export RANK=$i LOCAL_RANK=$i; "
    "printf 'CMAX-TRAIN {\"event\":\"task\",\"rank\":%d,\"node\":\"%s\",\"job\":\"\",\"gpu\":\"%s\"}\\n' "
    "\"$i\" \"$host\" \"$gpu\"; exec \"$@\" 2>&1 ) 2>&1 | sed -u \"s/^/$i: /\" ) & "
    "i=$((i+1)); done; "
    "rc=0; i=0; while [ \"$i\" -lt \"$n\" ]; do wait -n; s=$?; "
    "if [ \"$s\" -ne 0 ] && [ \"$rc\" -eq 0 ]; then rc=$s; trap '' TERM; kill -TERM 0 2>/dev/null; fi; "
    "i=$((i+1)); done; exit $rc";

// Sets the torchrun-style variables from Slurm's, says which node each rank runs on (a line the
// log reader knows), then becomes the recipe's command.
// Its stderr joins stdout (Python's logging, torchtitan's included, writes to stderr); the task line
// also carries the job id (scancel after a stop) and the GPU model where nvidia-smi answers.
constexpr const char* kWrapper =
    "export RANK=\"$SLURM_PROCID\" WORLD_SIZE=\"$SLURM_NTASKS\" LOCAL_RANK=\"$SLURM_LOCALID\" "
    "LOCAL_WORLD_SIZE=\"$SLURM_NTASKS_PER_NODE\"; "
    "gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -n 1 | tr -d '\"\\\\'); "
    "printf 'CMAX-TRAIN {\"event\":\"task\",\"rank\":%d,\"node\":\"%s\",\"job\":\"%s\",\"gpu\":\"%s\"}\\n' "
    "\"$SLURM_PROCID\" \"$SLURMD_NODENAME\" \"$SLURM_JOB_ID\" \"$gpu\"; "
    "exec \"$@\" 2>&1";

std::string NodeAddr(host::Host& h, const std::string& node) {
  auto r = h.Run({{"scontrol", "show", "node", "-o", node}, std::chrono::seconds(30), 1u << 20});
  auto at = r.out.find(" NodeAddr=");
  if (at == std::string::npos) return node;
  at += 10;
  std::string addr = r.out.substr(at, r.out.find(' ', at) - at);
  return addr.empty() ? node : addr;
}

train::Recipe LoadRecipe(const TrainCli& o, const std::string& name, json* raw) {
  json catalog;
  if (!o.recipe_file.empty()) {
    auto text = util::ReadLocalFile(o.recipe_file, 4u << 20);
    if (!text) throw UsageError("--recipe-file: cannot read " + o.recipe_file);
    catalog = util::ParseJsonDocument(*text, o.recipe_file);
    if (catalog.is_object() && !catalog.contains("recipes")) catalog = {{"recipes", json::array({catalog})}};
  } else {
    catalog = train::EmbeddedRecipes();
  }
  for (const auto& r : bench::ArrOf(catalog, "recipes")) {
    if (bench::StrOf(r, "name") != name && !(name.empty() && !o.recipe_file.empty())) continue;
    *raw = r;
    try {
      return train::RecipeFromJson(r);
    } catch (const std::exception& e) {
      throw UsageError(e.what());
    }
  }
  throw UsageError(
      fmt::format("--recipe: no recipe '{}' (known: {})", name, fmt::join(train::RecipeNames(catalog), ", ")));
}

int RunTrain(TrainCli& o) {
  if (o.steps < 1 || o.steps > 10000000) throw UsageError("--steps: from 1");
  if (o.warmup < 0 || o.warmup >= o.steps) throw UsageError("--warmup: from 0 to fewer than --steps");
  for (double v : {o.stall_timeout, o.first_step_timeout, o.run_timeout})
    if (!(v > 0 && v <= 1e7)) throw UsageError("timeouts: seconds above 0");
  if (o.peak_tflops < 0 || o.mamf_tflops < 0) throw UsageError("--peak-tflops/--mamf-tflops: TFLOP/s, 0 or more");
  if (o.local && (!o.slurm.partition.empty() || !o.slurm.nodelist.empty() || o.slurm.nodes > 0 ||
                  !o.container_image.empty() || !o.time_limit.empty()))
    throw UsageError("--local runs on this machine alone: no --partition, --nodelist, --nodes, --time or containers");
  CheckBenchOut(o.common, "train");
  host::LocalHost login;
  audit::NodeScope scope;
  if (o.local) {
    // This machine: its GPUs as NVML counts them (none without a driver).
    scope.targets = scope.in_scope = {util::Hostname().empty() ? "localhost" : util::Hostname()};
    auto q = gpu::QueryNvml(std::chrono::seconds(10));
    if (q.status == gpu::NvmlStatus::kOk) scope.gpus_per_node = static_cast<int>(bench::NumOf(q.data, "device_count"));
  } else {
    scope = audit::SelectNodes(login, o.slurm);
  }
  RequireTargets(scope, "bench train");
  int gpus = scope.gpus_per_node;
  json raw;
  train::Recipe recipe = LoadRecipe(
      o, o.recipe.empty() && o.recipe_file.empty() ? (gpus > 0 ? "builtin-350m" : "builtin-tiny") : o.recipe, &raw);
  if (o.deterministic && recipe.deterministic_args.empty())
    throw UsageError(fmt::format("--deterministic: recipe {} has no determinism mode", recipe.name));
  // A CPU recipe asks for no GPUs and measures its own peak; a GPU recipe runs one task per GPU.
  bool on_gpu = recipe.device == "gpu" && gpus > 0;
  if (!on_gpu) gpus = 0;
  int tpn = o.tasks_per_node > 0 ? o.tasks_per_node : std::max(1, gpus);
  // The placeholders: the recipe's shape and defaults, the run's, then --set.
  std::map<std::string, std::string> values = {{"python", o.python},
                                               {"script", train::BuiltinScript()},
                                               {"steps", std::to_string(o.steps)},
                                               {"seed", std::to_string(o.seed)},
                                               {"warmup", std::to_string(o.warmup)},
                                               {"seq", std::to_string(recipe.seq_len)},
                                               {"batch", std::to_string(recipe.micro_batch)}};
  if (recipe.shape) {
    values["layers"] = std::to_string(recipe.shape->layers);
    values["dim"] = std::to_string(recipe.shape->dim);
    values["heads"] = std::to_string(recipe.shape->heads);
    values["ffn"] = std::to_string(recipe.shape->ffn);
    values["vocab"] = std::to_string(recipe.shape->vocab);
  }
  for (const auto& [k, v] : bench::ObjOf(raw, "defaults").items())
    if (v.is_string()) values[k] = v.get<std::string>();
  for (const auto& s : o.sets) {
    auto eq = s.find('=');
    std::string k = s.substr(0, eq);
    if (eq == std::string::npos || k.empty() || k == "script" ||
        k.find_first_not_of("abcdefghijklmnopqrstuvwxyz_") != std::string::npos)
      throw UsageError(fmt::format("--set: '{}' is not NAME=VALUE (lowercase name)", s));
    // The FLOPs per token come from the recipe's shape: a different model is a different recipe.
    for (const char* shape_key : {"layers", "dim", "heads", "ffn", "vocab", "seq", "batch"})
      if (k == shape_key)
        throw UsageError(
            fmt::format("--set {}: the model's shape sets its FLOPs; put it in a recipe file "
                        "(--recipe-file) with its shape",
                        k));
    values[k] = s.substr(eq + 1);
  }
  std::vector<std::string> command;
  try {
    command = train::ExpandCommand(recipe, values);
  } catch (const std::exception& e) {
    throw UsageError(std::string(e.what()) + " (--set NAME=VALUE)");
  }
  if (o.deterministic)
    command.insert(command.end(), recipe.deterministic_args.begin(), recipe.deterministic_args.end());
  if (!on_gpu) command.insert(command.end(), recipe.peak_args.begin(), recipe.peak_args.end());

  int port = o.master_port;
  if (port <= 0) {
    std::random_device rd;
    port = std::uniform_int_distribution<int>(20000, 39999)(rd);
  }
  std::vector<std::string> nodes = scope.targets;
  std::string image = o.container_image.empty() ? recipe.container_image : o.container_image;
  std::vector<std::string> argv;
  if (o.local) {
    if (!image.empty())
      throw UsageError(fmt::format("--local: recipe {} runs in a container (pyxis needs Slurm)", recipe.name));
    argv = {"/bin/bash",          "-c",         kLocalLauncher, "clustermax-train", std::to_string(tpn),
            std::to_string(port), nodes.front()};
  } else {
    std::string master = NodeAddr(login, nodes.front());
    argv = {"srun",
            fmt::format("--nodes={}", nodes.size()),
            fmt::format("--ntasks={}", nodes.size() * tpn),
            fmt::format("--ntasks-per-node={}", tpn),
            "--nodelist=" + fmt::format("{}", fmt::join(nodes, ",")),
            "--job-name=clustermax-train",
            "--label",
            "--kill-on-bad-exit=1",
            fmt::format("--export=ALL,MASTER_ADDR={},MASTER_PORT={}", master, port)};
    if (scope.inside_allocation) {
      argv.push_back("--overlap");
    } else {
      if (!o.slurm.partition.empty()) argv.push_back("--partition=" + o.slurm.partition);
      if (!o.time_limit.empty()) argv.push_back("--time=" + o.time_limit);
    }
    if (gpus > 0) argv.push_back(fmt::format("--gres=gpu:{}", gpus));
    if (!image.empty()) argv.push_back("--container-image=" + image);
    if (!o.container_mounts.empty()) argv.push_back("--container-mounts=" + o.container_mounts);
    argv.insert(argv.end(), {"/bin/sh", "-c", kWrapper, "clustermax-train"});
  }
  argv.insert(argv.end(), command.begin(), command.end());
  // As the result keeps it: the built-in script by name, secrets out.
  std::vector<std::string> shown;
  for (const auto& a : host::RedactArgv(argv)) shown.push_back(a == train::BuiltinScript() ? "{script}" : a);

  bench::InstallCancelHandlers();
  auto started = std::chrono::system_clock::now();
  auto t0 = std::chrono::steady_clock::now();
  json result = {{"kind", "clustermax.bench.train"}, {"schema_version", 1}};
  result["options"] = {{"recipe", recipe.name},
                       {"steps", o.steps},
                       {"warmup", o.warmup},
                       {"seed", o.seed},
                       {"nodes", nodes.size()},
                       {"tasks_per_node", tpn},
                       {"gpus_per_node", gpus},
                       {"deterministic", o.deterministic},
                       {"log_format", recipe.log_format},
                       {"precision", recipe.precision},
                       {"container_image", image},
                       {"local", o.local},
                       {"nodes_in_scope", scope.in_scope},
                       {"inside_allocation", scope.inside_allocation}};
  // The recipe as read, its command and defaults redacted as the command line is.
  json kept = raw;
  if (kept.contains("command") && kept["command"].is_array()) {
    std::vector<std::string> c;
    for (const auto& a : kept["command"]) c.push_back(a.is_string() ? a.get<std::string>() : "");
    kept["command"] = host::RedactArgv(c);
  }
  if (kept.contains("defaults") && kept["defaults"].is_object())
    for (auto& [k, v] : kept["defaults"].items())
      if (v.is_string()) v = host::RedactEnv(k, v.get<std::string>());
  result["recipe"] = kept;
  result["argv"] = shown;
  if (!o.common.quiet)
    std::cerr << fmt::format("  {} on {} node(s) x {} task(s), {} steps{}\n", recipe.name, nodes.size(), tpn, o.steps,
                             o.local ? " (this machine, no Slurm)" : "");

  // The log, line by line as srun forwards it; the watchdog's clock restarts at every new step.
  train::LogReader reader(recipe.log_format);
  util::LineAssembler lines;  // a line that never ends (over 1 MiB) is not a log line
  std::deque<std::string> tail;
  auto last_progress = std::chrono::steady_clock::now();
  int last_step = 0;
  std::string stop_reason;
  auto feed = [&](std::string_view line) {
    size_t tasks = reader.tasks_seen();
    bool step = reader.Feed(line);
    // The first-step clock starts when the tasks start, not while the job waits in the queue.
    if (tasks == 0 && reader.tasks_seen() > 0) last_progress = std::chrono::steady_clock::now();
    if (step && reader.last_step() > last_step) {
      last_step = reader.last_step();
      last_progress = std::chrono::steady_clock::now();
      if (!o.common.quiet && (last_step == 1 || last_step % 10 == 0 || last_step == o.steps))
        std::cerr << fmt::format("  step {} of {}\n", last_step, o.steps);
    }
    if (line.find("CMAX-TRAIN") == std::string_view::npos) {
      tail.push_back(util::Ellipsize(util::TerminalSafeText(util::SanitizeUtf8(line.substr(0, 4096))), 400));
      if (tail.size() > 60) tail.pop_front();
    }
  };
  host::CommandSpec spec{argv, std::chrono::milliseconds(static_cast<long long>(o.run_timeout * 1000)), 8u << 20};
  spec.keep_stdout = false;
  spec.on_stdout = [&](std::string_view piece) { lines.Feed(piece, feed); };
  spec.stop_when = [&] {
    if (!stop_reason.empty()) return true;
    if (bench::Cancelled()) {
      stop_reason = "interrupted";
      return true;
    }
    double quiet = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_progress).count();
    double limit = last_step == 0 ? o.first_step_timeout : o.stall_timeout;
    if (quiet > limit) {
      stop_reason = last_step == 0 ? fmt::format("no step logged within {} s of the launch: stopped", limit)
                                   : fmt::format("no progress for {} s after step {}: stopped", limit, last_step);
      return true;
    }
    return false;
  };
  auto run = login.Run(spec);
  lines.Flush(feed);
  json collected = reader.Collected();
  // srun stopped (watchdog, Ctrl-C) or killed at the time limit may leave its job behind: cancel it.
  if ((run.stopped || run.timed_out) && util::ParseInt(bench::StrOf(collected, "job")))
    login.Run({{"scancel", bench::StrOf(collected, "job")}, std::chrono::seconds(30), 1u << 16});

  train::SummaryInputs in;
  in.flops_per_token = recipe.flops_per_token;
  in.warmup_steps = o.warmup;
  in.deterministic = o.deterministic;
  for (const auto& [r, node] : bench::ObjOf(collected, "tasks").items())
    if (node.is_string()) in.rank_nodes[std::atoi(r.c_str())] = node.get<std::string>();
  // The dense peak and MAMF: given, else the GPU model's (data/gpu-peaks.json) when a rank named it.
  std::string gpu_name;
  for (const auto& [r, s] : bench::ObjOf(collected, "starts").items())
    if (gpu_name.empty()) gpu_name = bench::StrOf(s, "gpu_name");
  if (gpu_name.empty()) gpu_name = bench::StrOf(collected, "gpu");  // nvidia-smi, for any recipe's log
  if (!on_gpu) gpu_name.clear();
  json model = gpu_name.empty() ? json() : bench::MatchGpuModel(gpu_name, bench::EmbeddedGpuPeaks());
  if (o.peak_tflops > 0) {
    in.peak_tflops = o.peak_tflops;
    in.peak_source = "--peak-tflops";
  } else if (model.is_object()) {
    if (auto v = bench::OptNumOf(bench::ObjOf(model, "tflops"), recipe.precision.c_str())) {
      in.peak_tflops = *v;
      in.peak_source =
          fmt::format("the dense {} peak of {} (data/gpu-peaks.json)", recipe.precision, bench::StrOf(model, "id"));
    }
  }
  if (o.mamf_tflops > 0) {
    in.mamf_tflops = o.mamf_tflops;
    in.mamf_source = "--mamf-tflops (measured)";
  } else if (model.is_object()) {
    if (auto v = bench::OptNumOf(bench::ObjOf(model, "mamf_tflops"), recipe.precision.c_str())) {
      in.mamf_tflops = *v;
      in.mamf_source = fmt::format(
          "the reference MAMF of {} (data/gpu-peaks.json; --mamf-tflops for this "
          "cluster's own, from bench gpu)",
          bench::StrOf(model, "id"));
    }
  }
  if (!gpu_name.empty()) result["gpu_name"] = gpu_name;
  json summary = train::Summarize(collected, in);
  if (summary.contains("errors") && summary["errors"].is_array())
    for (auto& e : summary["errors"])
      if (e.is_string()) e = host::RedactText(e.get<std::string>());
  result["summary"] = summary;
  result["rank_nodes"] = bench::ObjOf(collected, "tasks");
  json log_tail = json::array();
  for (auto& l : tail) log_tail.push_back(host::RedactText(l));
  result["log_tail"] = log_tail;
  std::string err(util::Trim(run.err));
  if (stop_reason == "interrupted") {
    result["interrupted"] = true;
  } else if (!stop_reason.empty()) {
    result["error"] = stop_reason;
  } else if (run.timed_out) {
    result["error"] = fmt::format("the run did not end within {} s", o.run_timeout);
  } else if (run.status != host::IoStatus::kOk) {
    result["error"] = (o.local ? "the launcher: " : "srun: ") + run.error;
  } else if (run.exit_code != 0) {
    std::string first =
        bench::ArrOf(summary, "errors").empty() ? "" : bench::ArrOf(summary, "errors")[0].get<std::string>();
    if (!first.empty()) first = host::RedactText(first);
    result["error"] = fmt::format("the run failed ({} exit code {}){}", o.local ? "a task's" : "srun", run.exit_code,
                                  !first.empty() ? ": " + first
                                  : !err.empty() ? ": " + util::Ellipsize(host::RedactText(err), 600)
                                                 : "");
  }
  StampFleetResult(result, started, t0, scope.unreachable);
  const BenchCommon& c = o.common;
  return FinishBench(std::move(result), c, "train", train::RenderTrain,
                     [&c](const json& x) { return bench::Grade(train::TrainMetrics(x), BenchBars(c)); });
}

}  // namespace

void AddTrainCommand(CLI::App* parent, Commands& table) {
  auto o = std::make_shared<TrainCli>();
  auto* cmd = parent->add_subcommand(
      "train",
      "A real training run through Slurm from a recipe (built-in PyTorch transformer, torchtitan Llama 3.1 8B, or "
      "yours): tokens/s and TFLOP/s per GPU, MFU and MAMFU, loss curve, step-time spread and slowest rank, a "
      "watchdog, and a determinism check that names a node computing differently");
  cmd->add_option("--recipe", o->recipe,
                  fmt::format("Recipe name (default builtin-350m on GPU nodes, builtin-tiny otherwise; known: {})",
                              fmt::join(train::RecipeNames(train::EmbeddedRecipes()), ", ")));
  cmd->add_option("--recipe-file", o->recipe_file, "A JSON file of recipes (data/train/recipes.json's form)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--set", o->sets, "NAME=VALUE for a placeholder of the recipe's command (repeatable)");
  cmd->add_option("--steps", o->steps, "Training steps");
  cmd->add_option("--warmup", o->warmup, "Steps left out of the rates (compilation, allocator warm-up)");
  cmd->add_option("--seed", o->seed, "Seed of the model and data");
  cmd->add_flag("--deterministic", o->deterministic,
                "Every rank trains on the same batches with deterministic kernels: a rank whose exact losses differ "
                "from its peers' is named (silent data corruption)");
  cmd->add_option("--python", o->python, "Interpreter on the nodes, {python} in recipes (default python3)");
  cmd->add_option("--tasks-per-node", o->tasks_per_node, "Tasks per node (default: one per GPU, else 1)");
  cmd->add_option("--master-port", o->master_port, "MASTER_PORT (default: random from 20000 to 39999)");
  cmd->add_option("--peak-tflops", o->peak_tflops,
                  "Dense peak per GPU for MFU (default: the GPU model's in data/gpu-peaks.json)");
  cmd->add_option("--mamf-tflops", o->mamf_tflops,
                  "Measured MAMF per GPU for MAMFU (bench gpu's; default: the model's reference MAMF)");
  cmd->add_option("--stall-timeout", o->stall_timeout, "Seconds without a new step before the run is stopped");
  cmd->add_option("--first-step-timeout", o->first_step_timeout,
                  "Seconds from the launch to the first step (allocation, start-up, compilation)");
  cmd->add_option("--run-timeout", o->run_timeout, "Seconds the whole run may take");
  cmd->add_flag("--local", o->local,
                "Run on this machine alone, without Slurm: one task per GPU (else one), ranks and MASTER_ADDR set as "
                "torchrun does");
  cmd->add_option("--container-image", o->container_image, "Run the tasks in this image (pyxis)");
  cmd->add_option("--container-mounts", o->container_mounts, "pyxis --container-mounts");
  cmd->add_option("--partition", o->slurm.partition, "The partition to take nodes from");
  cmd->add_option("--nodelist", o->slurm.nodelist, "These nodes (Slurm hostlist)");
  cmd->add_option("--nodes", o->slurm.nodes, "At most this many nodes");
  cmd->add_option("--time", o->time_limit,
                  "srun --time (minutes) when asking for an allocation (default: the partition's DefaultTime)");
  AddBenchCommon(cmd, o->common);
  table.Add(cmd, [o] { return RunTrain(*o); });
}

}  // namespace clustermax::cli
