// Node thresholds as data (data/node-thresholds.json, embedded): the GPU model table (generation,
// expected GPUs and NVLinks per node, idle power class), idle ceilings, Xid classes, tool lists.
// Checks read numbers from here, never from literals.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace clustermax::core {

struct GpuModel {
  std::string pattern, vendor, generation, power_class;
  bool h100_or_newer = false;
  std::optional<int> gpus_per_node, nvlinks;
};

class Thresholds {
 public:
  explicit Thresholds(nlohmann::json data) : data_(std::move(data)) {}
  // The model whose pattern occurs in `name` (longest pattern wins: "GB200" before "B200").
  std::optional<GpuModel> Model(std::string_view name) const;
  const nlohmann::json& data() const { return data_; }
  double IdlePowerCeiling(const std::string& power_class) const;

 private:
  nlohmann::json data_;
};

const Thresholds& EmbeddedThresholds();

}  // namespace clustermax::core
