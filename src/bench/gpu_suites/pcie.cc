// GPU suite "pcie": host to device, device to host and both at once, pinned memory near the GPU;
// one GPU at a time, then every GPU at once (helper kind "pcie").
#include "bench/gpu_suite.h"

namespace clustermax::bench {
namespace {
using nlohmann::json;

json Plan(const GpuPlanOptions& o) {
  json items = json::array();
  uint64_t bytes = o.full ? uint64_t{512} << 20 : uint64_t{256} << 20;
  for (const char* dir : {"h2d", "d2h", "bidir"}) {
    std::string d(dir);
    items.push_back({{"id", "bw.host-device." + d},
                     {"kind", "pcie"},
                     {"dir", d},
                     {"bytes", bytes},
                     {"iters", o.full ? 20 : 5},
                     {"bytes_moved", static_cast<double>(bytes) * (d == "bidir" ? 2 : 1)}});
  }
  return items;
}

void Metrics(const json& r, std::vector<MetricValue>& out) {
  if (!r["suites"].contains("pcie")) return;
  for (const char* dir : {"h2d", "d2h"}) {
    std::string id = std::string("bw.host-device.") + dir;
    out.push_back(NodeValue(std::string("gpu.host-link.") + dir,
                            BestPerGpu(r, "pcie", "gbps", [&](const json& row) { return row["id"] == id; }), true,
                            std::string("host link ") + dir));
  }
}

void Bars(GpuBars& b) {
  std::optional<double> link = b.Peak("host_link_gbps");
  b.Add("gpu.host-link.h2d", "Host to device, pinned, one GPU at a time, slowest GPU", "GB/s", "host_link", link,
        "host link");
  b.Add("gpu.host-link.d2h", "Device to host, pinned, one GPU at a time, slowest GPU", "GB/s", "host_link", link,
        "host link");
}

void Render(std::string& out, const json& suite, const GpuRenderContext& ctx) {
  RenderGpuTable(out, "pcie", suite, "pinned host memory near the GPU; .all-gpus = every GPU at once", "GB/s", false,
                 ctx);
}

}  // namespace

GpuSuite PcieSuite() {
  GpuSuite s;
  s.key = "pcie";
  s.description =
      "host to device, device to host and both at once, pinned memory near the GPU, alone and all GPUs at once";
  s.helper_kind = "pcie";
  s.plan = Plan;
  s.policy = GpuRunPolicy::kAloneThenEveryGpuAtOnce;
  s.consistency_key = "gbps";
  s.consistency_order = 3;
  s.metrics = Metrics;
  s.bars = Bars;
  s.render = Render;
  return s;
}

}  // namespace clustermax::bench
