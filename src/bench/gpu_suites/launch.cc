// GPU suite "launch": empty-kernel launch latency by events and by wall clock (helper kind "launch").
#include <fmt/format.h>

#include "bench/gpu_suite.h"

namespace clustermax::bench {
namespace {
using nlohmann::json;

json Plan(const GpuPlanOptions& o) {
  json items = json::array();
  items.push_back({{"id", "gpu.kernel-launch"},
                   {"kind", "launch"},
                   {"count", o.full ? 200000 : 20000},
                   {"wall", o.full ? 20000 : 2000}});
  return items;
}

void Metrics(const json& r, std::vector<MetricValue>& out) {
  if (!r["suites"].contains("launch")) return;
  out.push_back(NodeValue("gpu.launch",
                          BestPerGpu(
                              r, "launch", "event_us", [](const json&) { return true; }, false),
                          false, "kernel launch latency"));
}

void Bars(GpuBars& b) {
  b.AddAbsolute("gpu.launch", "Empty-kernel launch (event time per launch), slowest GPU", "us", "launch_us", false);
}

void Render(std::string& out, const json& suite, const GpuRenderContext&) {
  for (const auto& row : suite["items"]) {
    for (const auto& rec : row.value("gpus", json::array())) {
      if (rec.value("status", "") == "ok") {
        out += fmt::format(
            "\n  launch: GPU {}: {:.2f} us per launch by events, {:.2f} us launch + synchronise by wall clock (medians)",
            rec["gpu"].get<int>(), rec["event_us"].get<double>(), rec["wall_us"].get<double>());
      } else {
        out +=
            fmt::format("\n  launch: GPU {}: {}", rec["gpu"].get<int>(), rec.value("error", rec.value("reason", "")));
      }
    }
  }
  out += "\n";
}

}  // namespace

GpuSuite LaunchSuite() {
  GpuSuite s;
  s.key = "launch";
  s.description = "empty-kernel launch latency by events and by wall clock";
  s.helper_kind = "launch";
  s.plan = Plan;
  s.headline = "event_us";
  s.unit = "us";
  s.higher = false;
  s.metrics = Metrics;
  s.bars = Bars;
  s.render = Render;
  return s;
}

}  // namespace clustermax::bench
