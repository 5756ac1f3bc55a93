// The `bench` subcommands (gpu, storage, s3): options bound to CLI11, run when parsed.
#pragma once
#include <functional>

#include <CLI/CLI.hpp>

namespace clustermax::cli {

struct BenchCommands {
  CLI::App* bench = nullptr;
  CLI::App* gpu = nullptr;
  CLI::App* storage = nullptr;
  CLI::App* s3 = nullptr;
  CLI::App* probe_s3 = nullptr;
  std::function<int()> run_gpu, run_storage, run_s3, run_probe_s3;
};
void AddBenchCommands(CLI::App& app, BenchCommands& b);

}  // namespace clustermax::cli
