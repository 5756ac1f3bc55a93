// `clustermax rate`: run directories and an assessment in, a tier with its explanation out.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace clustermax::cli {

struct RateCommand {
  CLI::App* cmd = nullptr;
  std::function<int()> run;
};
void AddRateCommand(CLI::App& app, RateCommand& r);

}  // namespace clustermax::cli
