#include "cli/export.h"

#include <sys/stat.h>

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "audit/plan.h"
#include "checks/register.h"
#include "cli/cli.h"
#include "cli/command.h"
#include "rating/rate.h"
#include "report/junit.h"
#include "report/prometheus.h"
#include "report/sarif.h"
#include "util/files.h"

namespace clustermax::cli {
namespace fs = std::filesystem;
using nlohmann::json;

std::string RenderExport(const std::string& format, const json& report, const std::vector<json>& benches) {
  if (format == "prometheus") return report::RenderPrometheus(report, benches);
  if (report.is_null())
    throw UsageError(fmt::format("--format {} exports an audit report, and there is none (no report.json)", format));
  if (format == "junit") return report::RenderJUnit(report);
  if (format == "sarif") return util::JsonText(report::ToSarif(report, &checks::DefaultRegistry())) + "\n";
  throw UsageError("unknown export format '" + format + "' (prometheus, junit or sarif)");
}

void WriteTextfile(const fs::path& path, const std::string& text) {
  if (path.extension() != ".prom") {
    throw UsageError(
        fmt::format("--textfile {}: the name must end in .prom (node_exporter's textfile collector reads only *.prom)",
                    path.string()));
  }
  fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw UsageError(fmt::format("--textfile {}: no directory {} (the collector's --collector.textfile.directory)",
                                 path.string(), dir.string()));
  }
  util::WriteFileAtomic(path, text, 0644);
}

namespace {

struct ExportOptions {
  std::string dir, format = "prometheus", out, textfile;
};

int RunExport(const ExportOptions& o) {
  rating::RunInput in = rating::LoadRunDir(o.dir);
  json report = in.report ? *in.report : json(nullptr);
  std::string text = RenderExport(o.format, report, in.benches);
  if (!o.textfile.empty())
    WriteTextfile(o.textfile, o.format == "prometheus" ? text : RenderExport("prometheus", report, in.benches));
  if (!o.out.empty()) {
    util::WriteFileAtomic(o.out,
                          text);  // 0600 like every other output: JUnit and SARIF carry messages and observed values
  } else {
    std::cout << text;
  }
  return kExitOk;
}

}  // namespace

void AddExportCommands(CLI::App& app, Commands& table) {
  auto o = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand(
      "export", "A saved run (report.json, bench/*.json) as Prometheus text, JUnit XML or SARIF 2.1.0");
  cmd->add_option("run", o->dir, "Run directory")->required()->check(CLI::ExistingDirectory);
  cmd->add_option("--format", o->format, "prometheus (default), junit or sarif")
      ->check(CLI::IsMember({"prometheus", "junit", "sarif"}));
  cmd->add_option("-o,--out", o->out, "Write to FILE (atomically, mode 0600) instead of stdout");
  cmd->add_option("--textfile", o->textfile,
                  "Also write the Prometheus text to PATH.prom for node_exporter's textfile collector (mode 0644)");
  table.Add(cmd, [o] { return RunExport(*o); });
}

}  // namespace clustermax::cli
