// `clustermax audit review`: re-judge a saved run with the current rules, then answer queries.
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include <fmt/format.h>

#include "checks/register.h"
#include "cli/minimums.h"
#include "audit/run.h"
#include "cli/cli.h"
#include "audit/render.h"
#include "report/checks_doc.h"
#include "util/files.h"
#include "util/strings.h"

namespace clustermax::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

fs::path LatestRun() {
  fs::path dir = audit::DefaultRunsDir();
  if (!fs::is_directory(dir)) throw std::runtime_error("no saved runs under " + dir.string());
  std::vector<fs::path> runs;
  for (const auto& e : fs::directory_iterator(dir)) {
    // Audit runs only: a benchmark-only run directory (bench/*.json, no report.json) is not reviewable.
    if (e.is_directory() && e.path().filename().string()[0] != '.' && fs::exists(e.path() / "report.json"))
      runs.push_back(e.path());
  }
  if (runs.empty()) throw std::runtime_error("no saved audit runs under " + dir.string());
  std::sort(runs.begin(), runs.end());
  return runs.back();
}

void Answer(const std::string& command, const audit::Report& report, const std::vector<audit::NodeEvidence>& nodes,
            const ReviewOptions& o) {
  std::string cmd(util::Trim(command));
  std::string verb = cmd.substr(0, cmd.find(' '));
  std::string arg = cmd.find(' ') == std::string::npos ? "" : std::string(util::Trim(cmd.substr(cmd.find(' ') + 1)));
  if (verb == "report" || verb.empty()) {
    std::cout << audit::RenderText(report, {.verbosity = o.verbosity, .color = o.color});
  } else if (verb == "find") {
    int hits = 0;
    for (const auto& r : report.results) {
      std::string hay = r.info->id + " " + r.info->title + " " + r.finding.message + " " + r.finding.observed;
      for (const auto& d : r.finding.details) hay += " " + d;
      if (!arg.empty() && !util::ContainsIgnoreCase(hay, arg)) continue;
      std::cout << fmt::format("{:<4} {:<36} {}\n", core::ToString(r.finding.verdict), r.info->id,
                               util::EscapeControls(r.finding.message));
      ++hits;
    }
    std::cout << fmt::format("{} match(es)\n", hits);
  } else if (verb == "show") {
    auto it =
        std::find_if(report.results.begin(), report.results.end(), [&](const auto& r) { return r.info->id == arg; });
    if (it == report.results.end()) {
      std::cout << fmt::format("no check '{}' in this run\n", arg);
      return;
    }
    std::cout << report::RenderCheckDescription(*it->info);
    for (const auto& n : it->nodes) {
      const auto& f = n.finding;
      using util::EscapeControls;
      std::cout << fmt::format(
          "  [{}] {}{}: {}\n", EscapeControls(n.node), core::ToString(f.verdict),
          f.reason == core::Reason::kNone ? "" : " (" + std::string(core::ToString(f.reason)) + ")",
          EscapeControls(f.message));
      if (!f.observed.empty()) std::cout << "    observed: " << EscapeControls(f.observed) << "\n";
      if (!f.expected.empty()) std::cout << "    expected: " << EscapeControls(f.expected) << "\n";
      for (const auto& d : f.details) std::cout << "    - " << EscapeControls(d) << "\n";
    }
    for (const auto& node : nodes) {
      for (const auto& need : it->info->needs) {
        auto ev = node.evidence.find(need);
        if (ev == node.evidence.end()) continue;
        std::cout << fmt::format("  evidence {} on {}: {}\n", need, util::EscapeControls(node.node),
                                 util::JsonText(json(ev->second), -1));
      }
    }
  } else if (verb == "raw") {
    json out = json::object();
    for (const auto& n : nodes) {
      json ev = json::object();
      for (const auto& [id, e] : n.evidence) {
        if (arg.empty() || id == arg) ev[id] = e;
      }
      out[n.node] = ev;
    }
    std::cout << util::JsonText(out) << "\n";
  } else {
    std::cout << "commands: report | find TEXT | show CHECK-ID | raw [EVIDENCE-ID] | quit\n";
  }
}

}  // namespace

SavedRun LoadRun(const fs::path& path) {
  SavedRun run;
  if (fs::is_regular_file(path)) {
    run.dir = path.parent_path();
    run.bundles.push_back(host::Bundle::Load(path));
    run.selection.target =
        core::TargetFromString(run.bundles.front().manifest.target).value_or(core::Target::kStandalone);
    const auto& probes = run.bundles.front().manifest.probes;
    run.selection.probes = std::set<std::string>(probes.begin(), probes.end());
    return run;
  }
  if (!fs::is_directory(path))
    throw std::runtime_error(fmt::format("{}: no such run directory or bundle", path.string()));
  run.dir = path;
  auto text = util::ReadLocalFile(path / "report.json");
  if (!text) throw std::runtime_error(fmt::format("{}: not a run directory (no report.json)", path.string()));
  json report;
  try {
    report = util::ParseJsonDocument(*text, (path / "report.json").string());
    run.selection.target =
        core::TargetFromString(report.at("target").get<std::string>()).value_or(core::Target::kStandalone);
    auto profiles = report.at("profiles").get<std::vector<std::string>>();
    if (!(profiles.size() == 1 && profiles[0] == "all")) run.selection.profiles = profiles;
    auto probes = report.value("probes", std::vector<std::string>{});
    run.selection.probes = std::set<std::string>(probes.begin(), probes.end());
    if (report.contains("fleet") && report["fleet"].is_object()) {
      for (const auto& u : report["fleet"].value("unreachable", json::array()))
        run.unreachable.push_back({u.at("node"), u.at("reason")});
    }
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}/report.json is corrupt: {}", path.string(), e.what()));
  }
  fs::path ev = path / "evidence";
  if (!fs::is_directory(ev)) throw std::runtime_error(fmt::format("{}: no evidence/ directory", path.string()));
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(ev)) {
    if (e.path().extension() == ".json") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) run.bundles.push_back(host::Bundle::Load(f));
  if (run.bundles.empty()) throw std::runtime_error(fmt::format("{}: evidence/ holds no bundle", path.string()));
  return run;
}

int Review(const ReviewOptions& o) {
  fs::path path = o.path.empty() ? LatestRun() : fs::path(o.path);
  SavedRun run = LoadRun(path);
  // The table kept in the run directory (the one it was judged with), unless --minimums names another.
  core::MinimumTable storage;
  std::error_code ec;
  std::string kept = (path / "minimum-versions.json").string();
  const core::MinimumTable* minimums = &LoadMinimums(!o.minimums_file.empty() ? o.minimums_file
                                                     : fs::exists(kept, ec)   ? kept
                                                                              : std::string(),
                                                     storage);
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), run.selection);
  collect::CollectOptions opts;
  std::vector<audit::NodeEvidence> nodes;
  for (const auto& b : run.bundles) nodes.push_back(audit::ReplayNode(b, plan, opts));
  audit::Report report = audit::Judge(plan, nodes, *minimums, run.unreachable);
  report.mode = "review";
  std::cerr << fmt::format("reviewing {} ({} node(s))\n", path.string(), nodes.size());
  if (!o.commands.empty()) {
    for (const auto& c : o.commands) Answer(c, report, nodes, o);
  } else if (::isatty(STDIN_FILENO)) {
    Answer("report", report, nodes, o);
    std::string line;
    while (std::cout << "review> " << std::flush && std::getline(std::cin, line)) {
      std::string cmd(util::Trim(line));
      if (cmd == "quit" || cmd == "exit" || cmd == "q") break;
      Answer(cmd, report, nodes, o);
    }
  } else {
    Answer("report", report, nodes, o);
  }
  return audit::ExitCodeFor(report, false);
}

}  // namespace clustermax::cli
