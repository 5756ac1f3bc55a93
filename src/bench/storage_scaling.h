// `bench storage --scale`: the same storage workloads from 1, 2, 4 ... nodes at once (one Slurm step
// per node count, every node in its own directory of the shared path). This file is the pure part:
// which node counts, how the nodes' results add up, the grades and the table. The steps themselves
// are launched by the CLI through srun.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/grade.h"

namespace clustermax::bench {

struct ScalingStep {
  int nodes = 0;                                  // nodes asked for
  std::vector<std::string> asked;                 // their names
  std::map<std::string, nlohmann::json> results;  // node -> its `bench storage` result
  std::map<std::string, std::string> missing;     // node -> why there is no result
  double seconds = 0;                             // wall time of the step
  std::string error;                              // srun's complaint when the step failed
};

// 1, 2, 4, ... doubling, and max_nodes itself last (1..3 -> 1, 2, 3).
std::vector<int> ScalingCounts(int max_nodes);

// The scaling result (docs/bench-schema.md, "storage-scaling"): per step, each node's storage
// metrics, and per metric the sum over nodes (throughputs) or the worst node (latency), the worst
// node and the efficiency against the one-node step.
nlohmann::json ScalingResult(const std::vector<ScalingStep>& steps, nlohmann::json options);

// The storage metrics of the worst node in the largest step every node answered: what each node
// still gets when all of them share the filesystem. Same ids and bars as `bench storage`.
std::vector<MetricValue> ScalingMetrics(const nlohmann::json& result);

std::string RenderScaling(const nlohmann::json& result);

}  // namespace clustermax::bench
