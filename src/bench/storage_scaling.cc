#include "bench/storage_scaling.h"

#include "bench/render.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

namespace clustermax::bench {
using nlohmann::json;

namespace {
// Lower is better for latencies; every other storage metric is a throughput that adds up.
bool IsLatency(const std::string& metric) { return metric == "storage.small-file-open"; }

struct MetricShape {
  const char* id;
  const char* label;
  const char* unit;
};
const std::vector<MetricShape>& Shapes() {
  static const std::vector<MetricShape> k = {{"storage.seq-write", "seq write", "GB/s"},
                                             {"storage.seq-read", "seq read", "GB/s"},
                                             {"storage.checkpoint-write", "ckpt write", "GB/s"},
                                             {"storage.checkpoint-read", "ckpt read", "GB/s"},
                                             {"storage.small-file-rate", "small files", "files/s"},
                                             {"storage.small-file-open", "small-file open", "ms"}};
  return k;
}
}  // namespace

std::vector<int> ScalingCounts(int max_nodes) {
  std::vector<int> out;
  for (int k = 1; k < max_nodes; k *= 2) out.push_back(k);
  if (max_nodes >= 1) out.push_back(max_nodes);
  return out;
}

json ScalingResult(const std::vector<ScalingStep>& steps, json options) {
  json out = {{"kind", "clustermax.bench.storage-scaling"},
              {"schema_version", 1},
              {"options", std::move(options)},
              {"steps", json::array()}};
  std::map<std::string, double> single;  // metric -> the one-node step's value
  std::optional<int> largest_complete;
  for (const auto& s : steps) {
    json step = {{"nodes", s.nodes},           {"asked", s.asked},          {"returned", s.results.size()},
                 {"seconds", s.seconds},       {"per_node", json::array()}, {"missing", json::array()},
                 {"aggregate", json::object()}};
    if (!s.error.empty()) step["error"] = s.error;
    for (const auto& [node, why] : s.missing) step["missing"].push_back({{"node", node}, {"reason", why}});
    std::map<std::string, std::vector<std::pair<std::string, double>>> values;  // metric -> (node, value)
    for (const auto& [node, r] : s.results) {
      json metrics = json::object();
      for (const auto& m : StorageMetrics(r)) {
        if (!m.value) continue;
        metrics[m.id] = *m.value;
        values[m.id].push_back({node, *m.value});
      }
      step["per_node"].push_back(
          {{"node", node}, {"metrics", metrics}, {"interrupted", r.value("interrupted", false)}});
    }
    for (const auto& [metric, vals] : values) {
      bool latency = IsLatency(metric);
      auto worst = latency ? std::max_element(vals.begin(), vals.end(),
                                              [](const auto& a, const auto& b) { return a.second < b.second; })
                           : std::min_element(vals.begin(), vals.end(),
                                              [](const auto& a, const auto& b) { return a.second < b.second; });
      double sum = 0;
      for (const auto& [n, v] : vals) sum += v;
      json a = {{"nodes", vals.size()},
                {"worst_node", worst->first},
                {"worst_value", worst->second},
                {"mean_per_node", sum / vals.size()}};
      if (!latency) a["sum"] = sum;
      if (s.nodes == 1 && vals.size() == 1) single[metric] = vals.front().second;
      if (single.count(metric) && single[metric] > 0) {
        // Throughput: what the nodes got together against k times one node alone. Latency: how much
        // slower the worst node is than one node alone (1.0 = no slower).
        a[latency ? "slowdown" : "efficiency"] =
            latency ? worst->second / single[metric] : sum / (vals.size() * single[metric]);
      }
      step["aggregate"][metric] = a;
    }
    if (static_cast<int>(s.results.size()) == s.nodes && s.nodes > 0) largest_complete = s.nodes;
    out["steps"].push_back(step);
  }
  out["largest_complete_step"] = largest_complete ? json(*largest_complete) : json(nullptr);
  return out;
}

std::vector<MetricValue> ScalingMetrics(const json& r) {
  std::vector<MetricValue> out;
  const json* step = nullptr;
  if (r["largest_complete_step"].is_number()) {
    for (const auto& s : r["steps"]) {
      if (s["nodes"] == r["largest_complete_step"]) step = &s;
    }
  }
  for (const auto& shape : Shapes()) {
    MetricValue m{shape.id, std::nullopt, step ? "not measured" : "no step in which every node returned a result", ""};
    if (step && (*step)["aggregate"].contains(shape.id)) {
      const json& a = (*step)["aggregate"][shape.id];
      m.value = a["worst_value"].get<double>();
      m.detail = fmt::format("worst of {} nodes at once ({})", (*step)["nodes"].get<int>(),
                             a["worst_node"].get<std::string>());
    }
    out.push_back(m);
  }
  return out;
}

std::string RenderScaling(const json& r) {
  const json& o = r["options"];
  std::string out =
      fmt::format("clustermax bench storage --scale: {} ({}), {} per node, {} s per workload\n", o.value("path", ""),
                  o.value("tests", ""), o.value("size", ""), o.value("duration_s", 0.0));
  std::vector<std::string> shown;
  for (const auto& shape : Shapes()) {
    for (const auto& s : r["steps"]) {
      if (s["aggregate"].contains(shape.id)) {
        shown.push_back(shape.id);
        break;
      }
    }
  }
  out += fmt::format("\n  {:>5} {:>8}", "nodes", "answered");
  for (const auto& id : shown) {
    for (const auto& shape : Shapes()) {
      if (id == shape.id)
        out += fmt::format("  {:>34}", fmt::format("{} {} (sum | worst | eff.)", shape.label, shape.unit));
    }
  }
  out += "\n";
  for (const auto& s : r["steps"]) {
    out += fmt::format("  {:>5} {:>8}", s["nodes"].get<int>(),
                       fmt::format("{}/{}", s["returned"].get<size_t>(), s["nodes"].get<int>()));
    for (const auto& id : shown) {
      if (!s["aggregate"].contains(id)) {
        out += fmt::format("  {:>34}", "-");
        continue;
      }
      const json& a = s["aggregate"][id];
      bool latency = IsLatency(id);
      std::string total = latency ? "" : fmt::format("{:.3g}", a["sum"].get<double>());
      std::string ratio = a.contains("efficiency") ? fmt::format("{:.2f}", a["efficiency"].get<double>())
                          : a.contains("slowdown") ? fmt::format("x{:.2f}", a["slowdown"].get<double>())
                                                   : "-";
      out += fmt::format("  {:>34}",
                         fmt::format("{} | {:.3g} | {}", latency ? "-" : total, a["worst_value"].get<double>(), ratio));
    }
    out += "\n";
    for (const auto& m : s["missing"])
      out += fmt::format("        {}: {}\n", m["node"].get<std::string>(), m["reason"].get<std::string>());
    if (s.contains("error")) out += "        srun: " + s["error"].get<std::string>() + "\n";
  }
  out += "\n  eff. = the nodes' sum / (nodes x the one-node figure); for latency, x = worst node / one node.\n";
  for (const auto& u : r.value("unreachable", json::array()))
    out += fmt::format("  not used: {}: {}\n", u["node"].get<std::string>(), u["reason"].get<std::string>());
  // The grades: the worst node of the largest complete step against the per-node bars.
  if (r.contains("grades")) out += "\n" + RenderGrades(r["grades"]);
  return out;
}

}  // namespace clustermax::bench
