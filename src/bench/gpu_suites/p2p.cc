// GPU suite "p2p": every ordered GPU pair, one direction and both, through NVLink or PCIe; one
// helper on the first GPU sees every GPU (helper kind "p2p").
#include <fmt/format.h>

#include "bench/gpu_suite.h"

namespace clustermax::bench {
namespace {
using nlohmann::json;

json Plan(const GpuPlanOptions& o) {
  json items = json::array();
  uint64_t bytes = o.full ? uint64_t{512} << 20 : uint64_t{256} << 20;
  if (o.gpu_count < 2) {
    items.push_back(
        {{"id", "bw.device-device"}, {"kind", "p2p"}, {"na", "peer copies need two or more GPUs; this node has one"}});
  }
  for (bool bidir : {false, true}) {
    for (int s = 0; s < o.gpu_count; ++s) {
      for (int d = 0; d < o.gpu_count; ++d) {
        if (s == d) continue;
        items.push_back({{"id", fmt::format("bw.device-device.{}-{}{}", s, d, bidir ? ".bidir" : "")},
                         {"kind", "p2p"},
                         {"src", s},
                         {"dst", d},
                         {"bidir", bidir},
                         {"bytes", bytes},
                         {"iters", o.full ? 20 : 5},
                         {"bytes_moved", static_cast<double>(bytes) * (bidir ? 2 : 1)}});
      }
    }
  }
  return items;
}

// The weakest pair decides: per source GPU the slowest of its outgoing unidirectional copies.
void Metrics(const json& r, std::vector<MetricValue>& out) {
  if (!r["suites"].contains("p2p")) return;
  PerGpuBest worst = BestPerGpu(
      r, "p2p", "gbps", [](const json& row) { return !row.value("bidir", false); }, false);
  PerGpuBest pairs;
  pairs.na_reason = worst.na_reason;
  if (!worst.value.empty()) {
    for (const auto& row : r["suites"]["p2p"]["items"]) {
      if (row.value("bidir", false) || !row.contains("summary")) continue;
      int src = row["src"];
      double v = row["summary"]["slowest"];
      if (!pairs.value.count(src) || v < pairs.value[src]) {
        pairs.value[src] = v;
        pairs.where[src] = row["id"];
      }
    }
  }
  out.push_back(NodeValue("gpu.peer", pairs, true, "peer copies"));
}

void Bars(GpuBars& b) {
  b.Add("gpu.peer", "Peer copy, slowest pair, one direction", "GB/s", "peer", b.Peak("peer_gbps"), "peer link");
}

void Render(std::string& out, const json& suite, const GpuRenderContext& ctx) {
  RenderGpuTable(out, "p2p", suite, "peer copies (cudaMemcpyPeerAsync), src-dst", "GB/s", false, ctx);
}

}  // namespace

GpuSuite P2pSuite() {
  GpuSuite s;
  s.key = "p2p";
  s.description = "every ordered GPU pair, one direction and both, through NVLink or PCIe";
  s.helper_kind = "p2p";
  s.plan = Plan;
  s.policy = GpuRunPolicy::kFirstGpuSeesAll;
  s.metrics = Metrics;
  s.bars = Bars;
  s.render = Render;
  return s;
}

}  // namespace clustermax::bench
