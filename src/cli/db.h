// `clustermax db`: the results store (ingest, list, show, diff, export).
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace clustermax::cli {

struct DbCommands {
  CLI::App* db = nullptr;
  std::function<int()> run;  // runs whichever db subcommand was parsed
};
void AddDbCommands(CLI::App& app, DbCommands& d);

}  // namespace clustermax::cli
