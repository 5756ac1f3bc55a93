// GPU suite "gemv": decode-shaped GEMV through cuBLASLt, a memory-bandwidth figure (helper kind "gemm").
#include <fmt/format.h>

#include "bench/gpu_suite.h"

namespace clustermax::bench {
namespace {
using nlohmann::json;

// Decode-shaped: a 32768 x 16384 weight (1 GiB in BF16, many times any L2, and L2 is flushed
// before each call) times a vector or a batch of 16.
json Plan(const GpuPlanOptions& o) {
  json items = json::array();
  for (const auto& p : PickPrecisions(o.precisions, {"bf16", "fp8"})) {
    for (int64_t batch : {int64_t{1}, int64_t{16}}) {
      json item =
          GemmPlanItem(fmt::format("mem.gemv.{}.n{}", p, batch), p, 32768, batch, 16384, 10, o.full ? 100 : 30, 4, o);
      item["kind"] = "gemm";
      items.push_back(std::move(item));
    }
  }
  return items;
}

bool IsGemv(const json& row) { return row.value("id", "").rfind("mem.gemv", 0) == 0; }

void Metrics(const json& r, std::vector<MetricValue>& out) {
  for (const auto& p : PrecisionsIn(r, "gemv")) {
    out.push_back(
        NodeValue("gpu.gemv." + p,
                  BestPerGpu(r, "gemv", "gbps", [&](const json& row) { return row["dtype"] == p && IsGemv(row); }),
                  true, "GEMV " + p));
  }
}

void Bars(GpuBars& b) {
  for (const auto& p : GpuPrecisions()) {
    std::optional<double> hbm = b.Peak("hbm_tbps");
    if (hbm) *hbm *= 1000;
    b.Add("gpu.gemv." + p, "GEMV " + p + " (decode-shaped), slowest GPU", "GB/s", "gemv", hbm, "HBM bandwidth");
  }
}

void Render(std::string& out, const json& suite, const GpuRenderContext& ctx) {
  RenderGpuTable(out, "gemv", suite, "decode-shaped GEMV, GB/s counted as weight + vectors, L2 flushed", "GB/s", true,
                 ctx);
}

}  // namespace

GpuSuite GemvSuite() {
  GpuSuite s;
  s.key = "gemv";
  s.description = "decode-shaped GEMV (32768 x 16384 weight, batch 1 and 16): memory bandwidth through cuBLASLt";
  s.helper_kind = "gemm";
  s.plan = Plan;
  s.consistency_key = "gbps";
  s.consistency_order = 4;
  s.metrics = Metrics;
  s.bars = Bars;
  s.render = Render;
  return s;
}

}  // namespace clustermax::bench
