// GPU suite "gemm": dense GEMM through cuBLASLt per precision, square shapes (helper kind "gemm").
#include <fmt/format.h>

#include "bench/gpu_suite.h"

namespace clustermax::bench {
namespace {
using nlohmann::json;

json Plan(const GpuPlanOptions& o) {
  json items = json::array();
  const bool full = o.full;
  std::vector<int64_t> sizes = full ? std::vector<int64_t>{4096, 8192, 16384} : std::vector<int64_t>{8192};
  for (const auto& p : PickPrecisions(o.precisions, GpuPrecisions())) {
    for (int64_t s : sizes) {
      items.push_back(GemmPlanItem(fmt::format("gemm.dense.{}.{}", p, ShapeName(s, s, s)), p, s, s, s, full ? 20 : 10,
                                   full ? 100 : 30, 4, o));
    }
  }
  return items;
}

void Metrics(const json& r, std::vector<MetricValue>& out) {
  for (const auto& p : PrecisionsIn(r, "gemm")) {
    out.push_back(NodeValue("gpu.gemm." + p,
                            BestPerGpu(r, "gemm", "tflops", [&](const json& row) { return row["dtype"] == p; }), true,
                            "dense GEMM " + p));
  }
}

void Bars(GpuBars& b) {
  for (const auto& p : GpuPrecisions()) {
    b.Add("gpu.gemm." + p, "Dense GEMM " + p + ", best shape, slowest GPU", "TFLOPS", "gemm", b.Peak("tflops", p),
          "dense " + p + " peak");
  }
}

void Render(std::string& out, const json& suite, const GpuRenderContext& ctx) {
  out += fmt::format("\n  gemm: dense cuBLASLt, TN, median time, L2 flushed before each call{}\n",
                     ctx.multi ? "; figures of the slowest GPU" : "");
  out += fmt::format("    {:<34} {:>9} {:>7} {:>7}  {}\n", "id", "TFLOPS", "% peak", "spread", "check");
  for (const auto& row : suite["items"]) {
    out += fmt::format("    {:<34} {:>9} {:>7} {:>7}  {}\n", row["id"].get<std::string>(), GpuCell(row),
                       GpuPeakPct(row, ctx.model, "tflops"), GpuSpread(row), GpuRowStatus(row));
  }
}

}  // namespace

GpuSuite GemmSuite() {
  GpuSuite s;
  s.key = "gemm";
  s.description =
      "dense GEMM through cuBLASLt per precision, square shapes, fastest of the heuristic's top 4 algorithms";
  s.shapes = "quick 8192^3; full 4096^3, 8192^3, 16384^3";
  s.helper_kind = "gemm";
  s.plan = Plan;
  s.headline = "tflops";
  s.unit = "TFLOPS";
  s.consistency_key = "tflops";
  s.consistency_order = 0;
  s.metrics = Metrics;
  s.bars = Bars;
  s.render = Render;
  return s;
}

}  // namespace clustermax::bench
