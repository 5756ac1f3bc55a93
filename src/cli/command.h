// The subcommand table. Each cli/*.cc file adds its subcommands: it makes the CLI11 node, binds the
// options to an option struct of its own (held by the action, so nothing lives in statics) and
// registers the action that runs when the command line names that subcommand. Main parses and
// runs the one named; it knows no subcommand by name.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace clustermax::cli {

class Commands {
 public:
  // `cmd` (made by the caller under the app or another subcommand) runs `run` when parsed.
  void Add(CLI::App* cmd, std::function<int()> run) { table_.push_back({cmd, std::move(run)}); }
  // The command line as given (stamped into evidence manifests); set by Main before it parses.
  void SetArgv(std::vector<std::string> argv) { argv_ = std::move(argv); }
  const std::vector<std::string>& argv() const { return argv_; }
  // The action of the deepest subcommand the command line named (`audit review` over `audit`);
  // nullptr when it named none of the table's.
  const std::function<int()>* Parsed() const {
    const Entry* best = nullptr;
    int best_depth = -1;
    for (const auto& e : table_) {
      if (!e.cmd->parsed()) continue;
      int depth = 0;
      for (const CLI::App* p = e.cmd->get_parent(); p; p = p->get_parent()) ++depth;
      if (depth > best_depth) best = &e, best_depth = depth;
    }
    return best ? &best->run : nullptr;
  }

 private:
  struct Entry {
    CLI::App* cmd;
    std::function<int()> run;
  };
  std::vector<Entry> table_;
  std::vector<std::string> argv_;
};

// Each file's registration (one per file, called by Main in this order: the help lists them so).
void AddAuditCommands(CLI::App& app, Commands& table);  // audit, audit review (cli/audit.cc)
void AddCatalogCommands(CLI::App& app,
                        Commands& table);  // checks list|describe|probes, minimums show|update (cli/catalog.cc)
void AddBenchCommands(CLI::App& app, Commands& table);    // bench gpu|storage|s3|net, probe s3 (cli/bench*.cc)
void AddRateCommands(CLI::App& app, Commands& table);     // rate (cli/rate.cc)
void AddDbCommands(CLI::App& app, Commands& table);       // db ingest|list|show|diff|export (cli/db.cc)
void AddWebCommands(CLI::App& app, Commands& table);      // report --html, serve (cli/web.cc)
void AddExportCommands(CLI::App& app, Commands& table);   // export (cli/export.cc)
void AddHealthCommands(CLI::App& app, Commands& table);   // health (cli/health.cc)
void AddCollectCommands(CLI::App& app, Commands& table);  // collect, run by srun on every node (cli/audit.cc)
void AddDocsCommands(CLI::App& app, Commands& table);     // completion, manpage (cli/docs.cc)

}  // namespace clustermax::cli
