#include "cli/bench_common.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/run.h"
#include "bench/grade.h"
#include "cli/cli.h"
#include "util/files.h"
#include "util/line_frames.h"
#include "util/cancel.h"
#include "util/strings.h"
#include "util/time.h"
#include "util/usage_error.h"

namespace clustermax::cli {
namespace fs = std::filesystem;
using nlohmann::json;

void AddBenchCommon(CLI::App* cmd, BenchCommon& c, bool bars) {
  cmd->add_flag("--json", c.json_out, "Print the JSON result instead of the table");
  cmd->add_option("--out", c.out_dir,
                  "Run directory for the result, RUN_DIR/bench/<suite>.json (default ~/.clustermax/runs/<timestamp>); "
                  "an audit run directory gets the result next to its report");
  cmd->add_flag("--force", c.force, "Replace the result of an earlier run of this suite in --out (refused without it)");
  if (bars) {
    cmd->add_option("--thresholds", c.thresholds_file,
                    "Pass/warn bars instead of the embedded data/bench-thresholds.json")
        ->check(CLI::ExistingFile);
  }
  cmd->add_flag("--exit-zero", c.exit_zero, "Exit 0 even when a grade FAILs");
  cmd->add_flag("-q,--quiet", c.quiet, "No progress lines on stderr");
}

json BenchBars(const BenchCommon& c) {
  return c.thresholds_file.empty()
             ? bench::EmbeddedBenchThresholds()
             : bench::ParseBenchThresholds(*util::ReadLocalFile(c.thresholds_file), c.thresholds_file);
}

static fs::path ResultFile(const fs::path& run_dir, const std::string& suite) {
  return run_dir / "bench" / (suite + ".json");
}

// Refuses, before any work, an --out whose result file for this suite exists (an earlier run's
// result is not replaced silently; --force replaces it).
void CheckBenchOut(const BenchCommon& c, const std::string& suite) {
  if (c.out_dir.empty() || c.force) return;
  fs::path file = ResultFile(c.out_dir, suite);
  std::error_code ec;
  if (fs::exists(fs::symlink_status(file, ec))) {
    throw UsageError(fmt::format(
        "{} already exists (an earlier run's result); pass --force to replace it, or another --out", file.string()));
  }
}

// Makes `dir` (mode 0700, its parents as usual) unless it exists; false when it already did.
static bool MakePrivateDir(const fs::path& dir) {
  if (!dir.parent_path().empty()) util::CreatePrivateDirectories(dir.parent_path());
  if (::mkdir(dir.c_str(), 0700) == 0) return true;
  if (errno == EEXIST && fs::is_directory(dir)) return false;
  throw std::runtime_error(fmt::format("cannot create {}: {}", dir.string(), std::strerror(errno)));
}

// The run directory for the result: --out (made 0700 unless it exists, e.g. an audit's run
// directory), else a fresh ~/.clustermax/runs/<timestamp>[-N] made 0700 here.
static fs::path RunDir(const BenchCommon& c) {
  if (!c.out_dir.empty()) {
    MakePrivateDir(c.out_dir);
    return c.out_dir;
  }
  fs::path base = audit::DefaultRunsDir() / util::FormatCompact(std::chrono::system_clock::now());
  for (int n = 1;; ++n) {
    fs::path dir = n == 1 ? base : fs::path(base.string() + "-" + std::to_string(n));
    if (MakePrivateDir(dir)) return dir;
  }
}

// Grades the result, writes RUN_DIR/bench/<suite>.json atomically, prints the table or JSON.
int FinishBench(json result, const BenchCommon& c, const std::string& suite, std::string (*render)(const json&),
                const std::function<json(const json&)>& grade) {
  // The result holds what the nodes sent, and a node's bytes are not trusted: a reading that trips on
  // a document of the wrong shape costs its grades or its table, never the measurements.
  try {
    result["grades"] = grade(result);
  } catch (const std::exception& e) {
    result["grades"] = json::array();
    result["grading_error"] = std::string("the result could not be graded: ") + e.what();
    std::cerr << result["grading_error"].get<std::string>() << "\n";
  }
  // An interrupted run is not a result: whatever its grades so far, it is INCOMPLETE (never PASS),
  // and `rate` and `db ingest` refuse it.
  result["verdict"] = result.value("interrupted", false) ? "INCOMPLETE" : bench::WorstVerdict(result["grades"]);
  if (c.json_out) {
    std::cout << util::JsonText(result) << "\n";
  } else {
    try {
      std::cout << render(result);
    } catch (const std::exception& e) {
      std::cout << "(the table could not be printed: " << e.what() << "; the JSON result is saved)\n";
    }
  }
  std::cout.flush();
  // Nothing measured (no GPU, no helper): nothing to keep, so no run directory is made.
  bool measured = false;
  for (const auto& g : result["grades"]) measured |= g.value("verdict", "SKIP") != "SKIP";
  if (!measured && !result.value("interrupted", false) && result.value("status", "") == "skip") {
    std::cerr << "nothing measured: no result saved\n";
    return kExitOk;
  }
  // Checked again: another run may have written the same file meanwhile.
  CheckBenchOut(c, suite);
  fs::path dir = RunDir(c);
  MakePrivateDir(dir / "bench");
  fs::path file = ResultFile(dir, suite);
  util::WriteFileAtomic(file, util::JsonText(result) + "\n");
  std::cerr << fmt::format("result saved to {}\n", file.string());
  if (result.value("interrupted", false)) {
    std::cerr << "interrupted\n";
    return kExitDeclined;
  }
  return result["verdict"] == "FAIL" && !c.exit_zero ? kExitFail : kExitOk;
}

// Steps and how far the run is go to `progress`: one line rewritten in place with an estimate of
// the time left on a terminal, plain lines otherwise.
void ReportProgress(util::Progress& progress, std::function<void(const std::string&)>& lines,
                    std::function<void(double)>& fraction) {
  lines = [&progress](const std::string& line) { progress.Text(line); };
  fraction = [&progress](double f) { progress.Fraction(f); };
}

void StampFleetResult(json& result, std::chrono::system_clock::time_point started,
                      std::chrono::steady_clock::time_point t0,
                      const std::vector<audit::UnreachableNode>& unreachable) {
  result["host"] = util::Hostname();
  result["started"] = util::FormatRfc3339(started);
  result["seconds"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result["unreachable"] = json::array();
  for (const auto& u : unreachable) result["unreachable"].push_back({{"node", u.node}, {"reason", u.reason}});
  if (util::Cancelled()) result["interrupted"] = true;
}

void RequireTargets(const audit::NodeScope& scope, const std::string& command) {
  if (!scope.targets.empty()) return;
  std::string why;
  for (const auto& u : scope.unreachable) why += fmt::format("\n  {}: {}", u.node, u.reason);
  throw std::runtime_error(command + ": no node to run on" +
                           (why.empty() ? std::string(" (check --partition / --nodelist)") : why));
}

int RunRankTask(
    const std::string& rank_job, const std::string& command, const char* marker,
    const std::function<std::optional<nlohmann::json>(const nlohmann::json&, const bench::net::RankInfo&)>& run) {
  nlohmann::json job;
  try {
    job = nlohmann::json::parse(rank_job);
  } catch (const std::exception& e) {
    std::cerr << "clustermax: --rank-job is not JSON: " << e.what() << "\n";
    return kExitToolError;
  }
  auto me = bench::net::RankFromSlurm();
  if (!me) {
    std::cerr << "clustermax: " << command << " --rank-job runs as a task of a Slurm job step (no SLURM_PROCID)\n";
    return kExitToolError;
  }
  try {
    auto doc = run(job, *me);
    if (doc) {
      for (const auto& line :
           util::FrameLines(marker, me->node, doc->dump(-1, ' ', true, nlohmann::json::error_handler_t::replace)))
        std::cout << line << "\n";
      std::cout.flush();
    }
    return kExitOk;
  } catch (const std::exception& e) {
    std::cerr << fmt::format("rank {} on {}: {}\n", me->rank, me->node, e.what());
    return kExitToolError;
  }
}

std::map<std::string, json> StepDocs(const audit::FramedStep& step, std::map<std::string, std::string>& missing) {
  std::map<std::string, json> docs;
  missing = step.missing;
  for (const auto& [node, doc] : step.documents) {
    try {
      docs[node] = util::ParseJsonDocument(doc, "result of " + node);
    } catch (const std::exception& e) {
      missing[node] = std::string("result unreadable: ") + e.what();
    }
  }
  return docs;
}

std::optional<std::map<std::string, std::string>> NodeLines(host::Host& h, const std::vector<std::string>& nodes) {
  std::map<std::string, std::string> out;
  auto r = h.Run({{"scontrol", "show", "node", "-o", fmt::format("{}", fmt::join(nodes, ","))},
                  std::chrono::seconds(30),
                  1u << 20});
  // "Node n9 not found" exits 1 too: a node that is gone is an answer, a failed call is not.
  if (r.status != host::IoStatus::kOk || (r.exit_code != 0 && r.out.find("NodeName=") == std::string::npos &&
                                          r.err.find("not found") == std::string::npos))
    return std::nullopt;
  for (const auto& line : util::SplitLines(r.out)) {
    auto at = line.find("NodeName=");
    if (at == std::string::npos) continue;
    std::string name = line.substr(at + 9, line.find(' ', at) - at - 9);
    out[name] = line;
  }
  return out;
}

std::optional<std::vector<std::string>> SinfoNodes(host::Host& h, const std::string& partition, std::string& error) {
  std::vector<std::string> argv = {"sinfo", "-h", "-N", "-o", "%N"};
  if (!partition.empty()) argv.push_back("--partition=" + partition);
  auto r = h.Run({argv, std::chrono::seconds(30), 1u << 20});
  if (r.status != host::IoStatus::kOk || r.exit_code != 0) {
    std::string err(util::Trim(r.err.empty() ? r.error : r.err));
    error = util::Ellipsize("sinfo: " + (err.empty() ? fmt::format("exit {}", r.exit_code) : err), 400);
    return std::nullopt;
  }
  std::vector<std::string> nodes;
  for (const auto& l : util::SplitLines(r.out))
    if (auto n = util::Trim(l); !n.empty() && std::find(nodes.begin(), nodes.end(), n) == nodes.end())
      nodes.emplace_back(n);
  return nodes;
}

}  // namespace clustermax::cli
