// `clustermax db`: the results store (ingest, list, show, diff, export).
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/command.h"
#include "store/store.h"
#include "util/files.h"
#include "util/strings.h"

namespace clustermax::cli {
using nlohmann::json;

namespace {

std::string Cell(const json& v) { return v.is_null() ? "-" : v.is_string() ? v.get<std::string>() : v.dump(); }

std::string RenderList(const json& runs) {
  std::string out = fmt::format("{:>5}  {:<7} {:<20} {:<20} {:<11} {:<21} {:>5}  {}\n", "id", "kind", "provider",
                                "cluster", "target", "collected", "nodes", "summary / tier");
  for (const auto& r : runs) {
    std::string summary = Cell(r["tier"]);
    if (r["kind"] == "run" && r["summary"].is_object()) {
      const json& s = r["summary"];
      summary = fmt::format("{} checks: {} pass, {} warn, {} fail, {} skip", s.value("checks", 0), s.value("pass", 0),
                            s.value("warn", 0), s.value("fail", 0), s.value("skip", 0));
    }
    out += fmt::format("{:>5}  {:<7} {:<20} {:<20} {:<11} {:<21} {:>5}  {}\n", r["id"].get<int64_t>(),
                       r["kind"].get<std::string>(), r["provider"].get<std::string>(), r["cluster"].get<std::string>(),
                       Cell(r["target"]), Cell(r["collected_at"]), Cell(r["nodes"]), summary);
  }
  return out;
}

struct DbOptions {
  std::string db_path;
  bool json_out = false;
  std::vector<std::string> paths;
  std::string provider, cluster;  // ingest
  std::string list_provider;
  int64_t show_id = 0, diff_a = 0, diff_b = 0;
  std::vector<int64_t> export_ids;
};

std::filesystem::path DbFile(const DbOptions& o) {
  return o.db_path.empty() ? store::DefaultDbPath() : std::filesystem::path(o.db_path);
}

int Ingest(const DbOptions& o) {
  store::Store s = store::Store::Open(DbFile(o));  // the only command that writes
  int failed = 0;
  for (const auto& p : o.paths) {
    try {
      auto r = s.Ingest(p, o.provider, o.cluster);
      std::cout << util::EscapeControls(r.already ? fmt::format("{}: already stored as run {}", p, r.run_id)
                                                  : fmt::format("{}: stored as run {} ({})", p, r.run_id, r.what))
                << "\n";
    } catch (const std::exception& e) {
      std::cerr << "clustermax: " << util::EscapeControls(e.what()) << "\n";
      ++failed;
    }
  }
  return failed ? kExitToolError : kExitOk;
}

// The reading commands open the store read-only, so a store on a read-only mount can be listed.
int List(const DbOptions& o) {
  json runs = store::Store::OpenReadOnly(DbFile(o)).List(o.list_provider);
  // Text from stored documents (provider, cluster, messages) is escaped: nothing reaches the terminal raw.
  std::cout << (o.json_out ? util::JsonText(runs) + "\n" : RenderList(util::EscapeControlsInJson(runs)));
  return kExitOk;
}

int Show(const DbOptions& o) {
  json r = store::Store::OpenReadOnly(DbFile(o)).Show(o.show_id);
  if (r.is_null()) {
    std::cerr << fmt::format("clustermax: no run {} in the store\n", o.show_id);
    return kExitToolError;
  }
  if (o.json_out) {
    std::cout << util::JsonText(r) << "\n";
    return kExitOk;
  }
  r = util::EscapeControlsInJson(std::move(r));
  std::cout << RenderList(json::array({r}));
  for (const auto& res : r["results"]) {
    if (res["status"] == "PASS" || res["status"] == "SKIP") continue;
    std::cout << fmt::format("  {:<4}  {:<36} {}\n", res["status"].get<std::string>(), res["id"].get<std::string>(),
                             res["message"].get<std::string>());
  }
  for (const auto& m : r["metrics"]) {
    std::cout << fmt::format("  {:<4}  {:<36} {} {}\n", m["verdict"].get<std::string>(), m["metric"].get<std::string>(),
                             Cell(m["value"]), m["unit"].get<std::string>());
  }
  return kExitOk;
}

// A diff as text: the two runs, then every change by kind, then the count of regressions.
void PrintDiff(const json& r) {
  std::cout << fmt::format("{} {} ({}) -> {} ({}){}\n", r["from"]["kind"] == "rating" ? "rating" : "run",
                           Cell(r["from"]["id"]), Cell(r["from"]["collected_at"]), Cell(r["to"]["id"]),
                           Cell(r["to"]["collected_at"]),
                           r["swapped"].get<bool>() ? "  (older first, by collection time)" : "");
  bool any = !r["checks"].empty() || !r["metrics"].empty() || (r.contains("tier") && !r["tier"].is_null()) ||
             (r.contains("categories") && !r["categories"].empty());
  if (!any) std::cout << "  no change\n";
  if (r.contains("tier") && !r["tier"].is_null()) {
    std::cout << fmt::format("  {:<7} {:<36} {} -> {}\n", r["tier"]["direction"].get<std::string>(), "tier",
                             Cell(r["tier"]["from"]), Cell(r["tier"]["to"]));
  }
  for (const auto& c : r.value("categories", json::array())) {
    std::cout << fmt::format("  {:<7} {:<36} {} -> {}\n", c["direction"].get<std::string>(),
                             c["category"].get<std::string>(), c["from"].is_null() ? "not rated" : Cell(c["from"]),
                             c["to"].is_null() ? "not rated" : Cell(c["to"]));
  }
  for (const auto& c : r["checks"]) {
    std::cout << fmt::format("  {:<7} {:<36} {} -> {}  {}\n", c["direction"].get<std::string>(),
                             c["check"].get<std::string>(), Cell(c["from"]), Cell(c["to"]),
                             c["message"].get<std::string>());
  }
  for (const auto& m : r["metrics"]) {
    std::cout << fmt::format("  {:<7} {:<36} {} -> {} {}\n", m["direction"].get<std::string>(),
                             m["metric"].get<std::string>(),
                             m["from"].is_null() ? "-" : Cell(m["from"]["value"]) + " " + Cell(m["from"]["verdict"]),
                             m["to"].is_null() ? "-" : Cell(m["to"]["value"]) + " " + Cell(m["to"]["verdict"]),
                             m["unit"].get<std::string>());
  }
  std::cout << fmt::format("  {} regression(s)\n", r["regressions"].get<int>());
}

int Diff(const DbOptions& o) {
  json r = store::Store::OpenReadOnly(DbFile(o)).Diff(o.diff_a, o.diff_b);
  // Exit 2 when anything got worse (a check or metric verdict, the tier, a category score).
  int code = r["regressions"].get<int>() > 0 ? kExitFail : kExitOk;
  if (o.json_out) {
    std::cout << util::JsonText(r) << "\n";
  } else {
    PrintDiff(util::EscapeControlsInJson(std::move(r)));
  }
  return code;
}

int Export(const DbOptions& o) {
  std::cout << util::JsonText(store::Store::OpenReadOnly(DbFile(o)).Export(o.export_ids)) << "\n";
  return kExitOk;
}

}  // namespace

void AddDbCommands(CLI::App& app, Commands& table) {
  auto o = std::make_shared<DbOptions>();
  auto* db = app.add_subcommand("db", "The results store: ingest runs and ratings, list, show, diff, export");
  db->require_subcommand(1);
  db->add_option("--db", o->db_path, "SQLite file (default ~/.clustermax/results.db)");
  db->add_flag("--json", o->json_out, "JSON instead of text");
  auto* ingest =
      db->add_subcommand("ingest", "Store run directories (report.json, bench/*.json) or rating files (rate --out)");
  ingest->add_option("paths", o->paths, "Run directories or rating JSON files")->required();
  ingest->add_option("--provider", o->provider, "Provider the runs belong to (ratings carry their own)");
  ingest->add_option("--cluster", o->cluster, "Cluster or region (default: the first node's name)");
  auto* list = db->add_subcommand("list", "Stored runs and ratings, newest first");
  list->add_option("--provider", o->list_provider, "Only this provider");
  auto* show = db->add_subcommand("show", "One stored run: results, benchmark grades, documents");
  show->add_option("id", o->show_id, "Run id (db list)")->required();
  auto* diff = db->add_subcommand(
      "diff",
      "What changed between two runs (or two ratings), older first by collection time; exit 2 when anything got worse");
  diff->add_option("from", o->diff_a, "Older run id")->required();
  diff->add_option("to", o->diff_b, "Newer run id")->required();
  auto* exp = db->add_subcommand("export", "Runs as JSON, documents included (all when no id is given)");
  exp->add_option("ids", o->export_ids, "Run ids");
  // Options of the group are accepted after the subcommand too: `db ingest RUN --db D`, `db list --json`.
  for (auto* sub : {ingest, list, show, diff, exp}) sub->fallthrough();
  table.Add(ingest, [o] { return Ingest(*o); });
  table.Add(list, [o] { return List(*o); });
  table.Add(show, [o] { return Show(*o); });
  table.Add(diff, [o] { return Diff(*o); });
  table.Add(exp, [o] { return Export(*o); });
}

}  // namespace clustermax::cli
