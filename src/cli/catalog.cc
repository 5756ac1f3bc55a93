// What the tool knows, printed: `checks list|describe|probes` (the check registry and the active
// probes) and `minimums show|update` (the minimum-version table).
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "checks/register.h"
#include "cli/cli.h"
#include "cli/command.h"
#include "cli/minimums.h"
#include "report/checks_doc.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/usage_error.h"

namespace clustermax::cli {
namespace {
using nlohmann::json;

int ListChecks(const std::string& format) {
  const auto& reg = checks::DefaultRegistry();
  if (format == "md") {
    std::cout << report::RenderChecksMarkdown(reg);
  } else if (format == "json") {
    json out = json::array();
    for (const auto& c : reg.all()) {
      const auto& i = c.info;
      out.push_back({{"id", i.id},
                     {"category", i.category},
                     {"title", i.title},
                     {"targets", core::MaskToString(i.targets)},
                     {"mode", i.Mode()},
                     {"needs", i.needs},
                     {"criterion", i.criterion},
                     {"critical", i.critical}});
    }
    std::cout << util::JsonText(out) << "\n";
  } else {
    for (const auto& c : reg.all()) {
      std::cout << fmt::format("{:<36} {:<12} {:<14} {}\n", c.info.id, c.info.category,
                               core::MaskToString(c.info.targets), c.info.title);
    }
    std::cout << fmt::format("{} checks\n", reg.all().size());
  }
  return kExitOk;
}

int ListProbes() {
  for (const auto& p : core::Probes()) {
    std::vector<std::string> users;
    for (const auto& c : checks::DefaultRegistry().all()) {
      if (c.info.probe == p.name || c.info.k8s_probe == p.name) users.push_back(c.info.id);
    }
    std::cout << fmt::format("{}\n  does:     {}\n  changes:  {}\n  budget:   {} s\n  checks:   {}\n", p.name,
                             p.description, p.side_effects, p.budget_s,
                             users.empty() ? "-" : fmt::format("{}", fmt::join(users, ", ")));
  }
  return kExitOk;
}

int ShowMinimums(const std::string& file, bool raw_json) {
  core::MinimumTable storage;
  std::string text;
  const core::MinimumTable& t = LoadMinimums(file, storage, &text);
  if (raw_json) {
    std::cout << text;
    return kExitOk;
  }
  auto s = core::TableStaleness(t, std::chrono::system_clock::now());
  std::cout << fmt::format("minimum-version table: {} (schema {}), generated {}, {:.0f} days old{}\n", t.origin,
                           t.schema_version, t.generated_text, s.age_days,
                           s.stale ? fmt::format(" (STALE: older than {} days)", t.max_age_days) : "");
  for (const auto& c : t.components) {
    std::vector<std::string> floors;
    for (const auto& f : c.floors) floors.push_back(f.key == "*" ? f.version : f.key + " -> " + f.version);
    std::cout << fmt::format("  {:<30} {:<15} {:<34} {}\n", c.id, core::ToString(c.kind), c.check,
                             fmt::join(floors, "; "));
    if (!c.eol_keys.empty())
      std::cout << fmt::format("  {:<30} {:<15} {:<34} end-of-life: {}\n", "", "", "", fmt::join(c.eol_keys, ", "));
  }
  return kExitOk;
}

void AddChecksCommands(CLI::App& app, Commands& table) {
  auto* checks_cmd = app.add_subcommand("checks", "The check registry");
  checks_cmd->require_subcommand(1);
  struct ListOptions {
    std::string format = "text";
    bool json = false;
  };
  auto lo = std::make_shared<ListOptions>();
  auto* list = checks_cmd->add_subcommand("list", "List every check");
  list->add_option("--format", lo->format, "text, md or json")->check(CLI::IsMember({"text", "md", "json"}));
  list->add_flag("--json", lo->json, "JSON (as --json everywhere else; the same as --format json)");
  table.Add(list, [lo] { return ListChecks(lo->json ? "json" : lo->format); });

  auto id = std::make_shared<std::string>();
  auto* describe = checks_cmd->add_subcommand("describe", "Describe one check");
  describe->add_option("id", *id, "Check id")->required();
  table.Add(describe, [id] {
    const core::Check* c = checks::DefaultRegistry().Find(*id);
    if (!c) throw UsageError("unknown check id '" + *id + "'");
    std::cout << report::RenderCheckDescription(c->info);
    return kExitOk;
  });

  auto* probes = checks_cmd->add_subcommand(
      "probes", "List the active probes (--probe NAME), what they do and change, and the checks using them");
  table.Add(probes, [] { return ListProbes(); });
}

void AddMinimumsCommands(CLI::App& app, Commands& table) {
  auto* minimums_cmd = app.add_subcommand("minimums", "The minimum-version table");
  minimums_cmd->require_subcommand(1);
  struct ShowOptions {
    std::string file;
    bool json = false;
  };
  auto so = std::make_shared<ShowOptions>();
  auto* show = minimums_cmd->add_subcommand("show", "Print the table in use");
  show->add_option("--minimums", so->file, "Table file instead of the embedded one")->check(CLI::ExistingFile);
  show->add_flag("--json", so->json, "Print the raw JSON");
  table.Add(show, [so] { return ShowMinimums(so->file, so->json); });

  struct UpdateOptions {
    std::string source;
    bool force = false;
  };
  auto uo = std::make_shared<UpdateOptions>();
  auto* update = minimums_cmd->add_subcommand(
      "update", "Install a newer table from a file or an http(s) URL (verified, atomic, ~/.clustermax)");
  update->add_option("source", uo->source, "FILE or URL of a minimum-versions.json")->required();
  update->add_flag("--force", uo->force, "Install even a table older than the one in use");
  table.Add(update, [uo] {
    std::cout << UpdateMinimums(uo->source, uo->force);
    return kExitOk;
  });
}

}  // namespace

void AddCatalogCommands(CLI::App& app, Commands& table) {
  AddChecksCommands(app, table);
  AddMinimumsCommands(app, table);
}

}  // namespace clustermax::cli
