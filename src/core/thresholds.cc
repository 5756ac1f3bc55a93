#include "core/thresholds.h"

#include "util/strings.h"

namespace clustermax::embedded {
extern const std::string_view kNodeThresholdsJson;
}

namespace clustermax::core {

std::optional<GpuModel> Thresholds::Model(std::string_view name) const {
  std::string upper(name);
  for (auto& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::optional<GpuModel> best;
  for (const auto& m : data_.at("gpu_models")) {
    std::string pattern = m.at("pattern");
    size_t pos = upper.find(pattern);
    // Whole-token match: "H100" must not match inside "GH100X" or "H1000".
    bool left_ok = pos != std::string::npos && (pos == 0 || !std::isalnum(static_cast<unsigned char>(upper[pos - 1])));
    size_t end = pos + pattern.size();
    bool right_ok =
        pos != std::string::npos && (end == upper.size() || !std::isdigit(static_cast<unsigned char>(upper[end])));
    if (!left_ok || !right_ok) continue;
    if (best && best->pattern.size() >= pattern.size()) continue;
    GpuModel g;
    g.pattern = pattern;
    g.vendor = m.at("vendor");
    g.generation = m.at("generation");
    g.power_class = m.at("power_class");
    g.h100_or_newer = m.at("h100_or_newer");
    if (m["gpus_per_node"].is_number()) g.gpus_per_node = m["gpus_per_node"].get<int>();
    if (m["nvlinks"].is_number()) g.nvlinks = m["nvlinks"].get<int>();
    best = g;
  }
  return best;
}

double Thresholds::IdlePowerCeiling(const std::string& power_class) const {
  const auto& c = data_.at("idle").at("power_ceiling_w");
  return c.contains(power_class) ? c[power_class].get<double>() : c.at("other").get<double>();
}

const Thresholds& EmbeddedThresholds() {
  static const Thresholds t(nlohmann::json::parse(embedded::kNodeThresholdsJson));
  return t;
}

}  // namespace clustermax::core
