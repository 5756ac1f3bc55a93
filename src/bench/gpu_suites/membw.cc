// GPU suite "membw": copy, read and triad kernels and the copy engine over arrays far larger
// than L2 (helper kind "membw").
#include <algorithm>

#include "bench/gpu_suite.h"

namespace clustermax::bench {
namespace {
using nlohmann::json;

json Plan(const GpuPlanOptions& o) {
  json items = json::array();
  uint64_t bytes = std::min<uint64_t>(uint64_t{1} << 30, o.memory_bytes / 16);
  for (const char* op : {"copy", "read", "triad", "memcpy"}) {
    std::string s(op);
    double moved = static_cast<double>(bytes) * (s == "read" ? 1 : s == "triad" ? 3 : 2);
    items.push_back({{"id", "mem.stream." + s},
                     {"kind", "membw"},
                     {"op", s},
                     {"bytes", bytes},
                     {"iters", o.full ? 100 : 20},
                     {"bytes_moved", moved}});
  }
  return items;
}

void Metrics(const json& r, std::vector<MetricValue>& out) {
  if (!r["suites"].contains("membw")) return;
  out.push_back(
      NodeValue("gpu.hbm", BestPerGpu(r, "membw", "gbps", [](const json&) { return true; }), true, "HBM bandwidth"));
}

void Bars(GpuBars& b) {
  std::optional<double> hbm = b.Peak("hbm_tbps");
  if (hbm) *hbm *= 1000;
  b.Add("gpu.hbm", "HBM bandwidth (best of copy/read/triad/memcpy), slowest GPU", "GB/s", "hbm", hbm, "HBM bandwidth");
}

void Render(std::string& out, const json& suite, const GpuRenderContext& ctx) {
  RenderGpuTable(out, "membw", suite, "device memory, GB/s counted as bytes read plus written", "GB/s", true, ctx);
}

}  // namespace

GpuSuite MembwSuite() {
  GpuSuite s;
  s.key = "membw";
  s.description = "copy, read and triad kernels and the copy engine over 1 GiB arrays";
  s.helper_kind = "membw";
  s.plan = Plan;
  s.consistency_key = "gbps";
  s.consistency_order = 2;
  s.metrics = Metrics;
  s.bars = Bars;
  s.render = Render;
  return s;
}

}  // namespace clustermax::bench
