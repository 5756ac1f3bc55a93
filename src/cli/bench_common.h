// What the `bench` subcommands share: the common options (--json, --out, --force, --thresholds,
// --exit-zero, --quiet), the run directory and result file RUN_DIR/bench/<suite>.json (written
// atomically, an earlier result refused without --force), grading and the exit code.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "audit/engine.h"
#include "audit/slurm_fanout.h"
#include "bench/net_comm.h"
#include "cli/command.h"
#include "host/host.h"
#include "util/progress.h"

namespace clustermax::cli {

struct BenchCommon {
  bool json_out = false, exit_zero = false, quiet = false, force = false;
  std::string out_dir, thresholds_file;
};

void AddBenchCommon(CLI::App* cmd, BenchCommon& c, bool bars = true);
// The bars: --thresholds, else the embedded data/bench-thresholds.json.
nlohmann::json BenchBars(const BenchCommon& c);
// Refuses, before any work, an --out whose result file for `suite` exists (unless --force).
void CheckBenchOut(const BenchCommon& c, const std::string& suite);
// Grades the result, writes RUN_DIR/bench/<suite>.json atomically, prints the table or JSON;
// the exit code.
int FinishBench(nlohmann::json result, const BenchCommon& c, const std::string& suite,
                std::string (*render)(const nlohmann::json&),
                const std::function<nlohmann::json(const nlohmann::json&)>& grade);
// A fleet benchmark's provenance: the login host, when it started, how long it took, the nodes in
// scope it could not use and why, and whether Ctrl-C stopped it.
void StampFleetResult(nlohmann::json& result, std::chrono::system_clock::time_point started,
                      std::chrono::steady_clock::time_point t0, const std::vector<audit::UnreachableNode>& unreachable);
// Steps and how far the run is go to `progress`.
void ReportProgress(util::Progress& progress, std::function<void(const std::string&)>& lines,
                    std::function<void(double)>& fraction);

// The nodes a fleet benchmark runs on: `scope`'s targets, or an error naming why there are none
// (each unreachable node with its reason). `command` names the benchmark ("bench net").
void RequireTargets(const audit::NodeScope& scope, const std::string& command);
// One task of a fleet benchmark's job step (`--rank-job JSON`): the job parsed, the task's rank
// from Slurm, `run` called, and the document it returns (none: this task reports nothing) framed
// on stdout under `marker` and the task's node. The exit code.
int RunRankTask(
    const std::string& rank_job, const std::string& command, const char* marker,
    const std::function<std::optional<nlohmann::json>(const nlohmann::json& job, const bench::net::RankInfo& me)>& run);

// The documents of a framed step, parsed; a node whose document is missing or unreadable goes to
// `missing` with the reason.
std::map<std::string, nlohmann::json> StepDocs(const audit::FramedStep& step,
                                               std::map<std::string, std::string>& missing);
// `scontrol show node -o` for the nodes: each node's one-line record, by name (none for a node
// scontrol did not show); nullopt when scontrol failed (nothing is known then).
std::optional<std::map<std::string, std::string>> NodeLines(host::Host& h, const std::vector<std::string>& nodes);

// The nodes `sinfo -N` lists (only `partition`'s when given), in its order, each once; nullopt
// with `error` ("sinfo: ...") when sinfo failed.
std::optional<std::vector<std::string>> SinfoNodes(host::Host& h, const std::string& partition, std::string& error);

// `bench net` (cli/bench_net.cc), registered by AddBenchCommands.
void AddNetCommand(CLI::App* parent, Commands& table);
// `bench infer` (cli/bench_infer.cc).
void AddInferCommand(CLI::App* parent, Commands& table);
// `bench lifecycle` (cli/bench_lifecycle.cc).
void AddLifecycleCommand(CLI::App* parent, Commands& table);
// `bench train` (cli/bench_train.cc).
void AddTrainCommand(CLI::App* parent, Commands& table);
// `bench drill` (cli/bench_drill.cc).
void AddDrillCommand(CLI::App* parent, Commands& table);
// `bench history` (cli/bench_history.cc).
void AddHistoryCommand(CLI::App* parent, Commands& table);
// `burnin`, a top-level command (cli/burnin.cc).
void AddBurnInCommand(CLI::App* parent, Commands& table);

}  // namespace clustermax::cli
