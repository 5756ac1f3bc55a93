// `clustermax report --html` (one self-contained page) and `clustermax serve` (the same views live).
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace clustermax::cli {

struct WebCommands {
  CLI::App* report = nullptr;
  CLI::App* serve = nullptr;
  std::function<int()> run_report, run_serve;
};
void AddWebCommands(CLI::App& app, WebCommands& w);

}  // namespace clustermax::cli
