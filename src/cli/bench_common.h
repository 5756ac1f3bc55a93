// What the `bench` subcommands share: the common options (--json, --out, --force, --thresholds,
// --exit-zero, --quiet), the run directory and result file RUN_DIR/bench/<suite>.json (written
// atomically, an earlier result refused without --force), grading and the exit code.
#pragma once
#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "audit/engine.h"
#include "cli/command.h"
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

// `bench net` (cli/bench_net.cc), registered by AddBenchCommands.
void AddNetCommand(CLI::App* parent, Commands& table);
// `bench infer` (cli/bench_infer.cc).
void AddInferCommand(CLI::App* parent, Commands& table);

}  // namespace clustermax::cli
