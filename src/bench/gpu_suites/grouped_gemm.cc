// GPU suite "grouped-gemm": the MoE expert GEMMs (gate_up, down) of real models, tokens per
// expert from decode to prefill, uniform and skewed routing (helper kind "grouped").
#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/gpu_suite.h"

namespace clustermax::bench {
namespace {
using nlohmann::json;

json Plan(const GpuPlanOptions& o) {
  json items = json::array();
  const bool full = o.full;
  std::vector<int64_t> tokens = full ? std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}
                                     : std::vector<int64_t>{1, 8, 64, 512, 4096};
  std::vector<int> eps = full ? std::vector<int>{8, 32} : std::vector<int>{8};
  std::set<std::string> known;
  for (const auto& m : MoeModels()) known.insert(m.id);
  for (const auto& id : o.models) {
    if (!known.count(id))
      throw std::invalid_argument(fmt::format("unknown model '{}' (known: {})", id, fmt::join(known, ", ")));
  }
  for (const auto& model : MoeModels()) {
    if (!o.models.empty() && std::find(o.models.begin(), o.models.end(), model.id) == o.models.end()) continue;
    for (const auto& p : PickPrecisions(o.precisions, {"bf16", "fp8", "fp8-1x128"})) {
      for (int ep : eps) {
        int groups = model.experts / ep;
        for (const char* proj : {"gate_up", "down"}) {
          bool gate_up = std::string(proj) == "gate_up";
          int64_t k = gate_up ? model.hidden : model.moe_intermediate;
          int64_t n = gate_up ? 2 * model.moe_intermediate : model.hidden;
          for (int64_t t : tokens) {
            for (bool skewed : {false, true}) {
              std::vector<int64_t> m = RouteTokens(groups, t, skewed);
              json item = {{"id", fmt::format("gemm.grouped.{}.{}.{}.ep{}.t{}.{}", model.id, proj, p, ep, t,
                                              skewed ? "skewed" : "uniform")},
                           {"kind", "grouped"},
                           {"dtype", p},
                           {"model", model.id},
                           {"proj", proj},
                           {"ep", ep},
                           {"groups", groups},
                           {"tokens_per_expert", t},
                           {"routing", skewed ? "skewed" : "uniform"},
                           {"n", n},
                           {"k", k},
                           {"m", m},
                           {"warmup", full ? 5 : 3},
                           {"iters", full ? 30 : 10},
                           {"flops", GroupedFlops(m, n, k)},
                           {"bytes", GroupedBytes(p, m, n, k)},
                           // cuBLAS grouped batched GEMM takes FP32/TF32/FP16/BF16 (auto: it and the
                           // CUDA-graph path are both timed, the faster kept); scaled FP8 runs as
                           // per-expert cuBLASLt calls captured in one CUDA graph, its segments
                           // padded to 16 rows (cuBLASLt's FP8 alignment; padding not counted).
                           {"backend", ScaledPrecision(p) ? "lt-graph" : o.grouped_backend},
                           {"row_align", ScaledPrecision(p) ? 16 : 1}};
              if (ScaledPrecision(p)) item["fast_accum"] = o.fp8_fast_accum;
              if (auto why = PrecisionUnavailable(p, o.compute_capability)) item["na"] = *why;
              double rows = std::accumulate(m.begin(), m.end(), 0.0);
              double need = InputElementBytes(p) * (rows * k + static_cast<double>(groups) * n * k) +
                            OutputElementBytes(p) * rows * n;
              if (!item.contains("na") && need + (uint64_t{1} << 30) > 0.9 * static_cast<double>(o.memory_bytes)) {
                item["na"] = fmt::format("needs {:.1f} GiB, more than 90 % of the GPU's memory", need / (1u << 30));
              }
              items.push_back(std::move(item));
            }
          }
        }
      }
    }
  }
  return items;
}

void Metrics(const json& r, std::vector<MetricValue>& out) {
  for (const auto& p : PrecisionsIn(r, "grouped-gemm")) {
    out.push_back(NodeValue(
        "gpu.grouped." + p,
        BestPerGpu(r, "grouped-gemm", "tflops",
                   [&](const json& row) { return row["dtype"] == p && row.value("tokens_per_expert", 0) >= 512; }),
        true, "grouped GEMM " + p));
  }
}

void Bars(GpuBars& b) {
  for (const auto& p : GpuPrecisions()) {
    b.Add("gpu.grouped." + p, "Grouped MoE GEMM " + p + " (>= 512 tokens/expert), slowest GPU", "TFLOPS", "grouped",
          b.Peak("tflops", p), "dense " + p + " peak");
  }
}

// One line per model, projection, precision and routing; one column per tokens-per-expert.
void Render(std::string& out, const json& suite, const GpuRenderContext& ctx) {
  std::vector<int64_t> ts;
  for (const auto& row : suite["items"]) {
    int64_t t = row.value("tokens_per_expert", int64_t{0});
    if (std::find(ts.begin(), ts.end(), t) == ts.end()) ts.push_back(t);
  }
  out += fmt::format("\n  grouped-gemm: MoE experts, useful TFLOPS by tokens per expert{} (GB/s in the JSON)\n",
                     ctx.multi ? ", slowest GPU" : "");
  std::string head = fmt::format("    {:<38}", "model proj dtype EP routing");
  for (int64_t t : ts) head += fmt::format(" {:>8}", fmt::format("T={}", t));
  out += head + "  check\n";
  std::map<std::string, std::vector<const json*>> lines;
  std::vector<std::string> order;
  for (const auto& row : suite["items"]) {
    std::string key =
        fmt::format("{} {} {} ep{} {}", row["model"].get<std::string>(), row["proj"].get<std::string>(),
                    row["dtype"].get<std::string>(), row["ep"].get<int>(), row["routing"].get<std::string>());
    if (!lines.count(key)) order.push_back(key);
    lines[key].push_back(&row);
  }
  for (const auto& key : order) {
    std::string line = fmt::format("    {:<38}", key), status = "ok";
    for (int64_t t : ts) {
      std::string c = "-";
      for (const json* row : lines[key]) {
        if ((*row)["tokens_per_expert"] == t) {
          c = GpuCell(*row);
          if (GpuRowStatus(*row) != "ok") status = GpuRowStatus(*row);
        }
      }
      line += fmt::format(" {:>8}", c);
    }
    out += line + "  " + status + "\n";
  }
}

}  // namespace

GpuSuite GroupedGemmSuite() {
  GpuSuite s;
  s.key = "grouped-gemm";
  s.description =
      "MoE expert GEMMs (gate_up, down) of real models, tokens per expert from decode to prefill, uniform and skewed";
  s.shapes = "quick T in {1, 8, 64, 512, 4096} at EP 8; full T = 1, 2, 4, ..., 4096 at EP 8 and EP 32";
  s.helper_kind = "grouped";
  s.plan = Plan;
  s.headline = "tflops";
  s.unit = "TFLOPS";
  s.metrics = Metrics;
  s.bars = Bars;
  s.render = Render;
  return s;
}

}  // namespace clustermax::bench
