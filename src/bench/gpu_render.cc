// The text of a `bench gpu` result: the header and GPUs, then each suite's block (its
// descriptor's render hook, in run order), the grades and the verdict; and `bench gpu --list`.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "bench/gpu_bench.h"
#include "bench/gpu_suite.h"
#include "bench/render.h"

namespace clustermax::bench {
using nlohmann::json;

namespace {

std::string NoDot(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '.'), s.end());
  return s;
}

}  // namespace

std::string GpuCell(const json& row) {
  if (row.contains("na")) return "n/a";
  if (!row.contains("summary")) {
    for (const auto& rec : row.value("gpus", json::array())) {
      if (rec.value("status", "") == "n/a") return "n/a";
    }
    return "error";
  }
  return fmt::format("{:.1f}", row["summary"]["slowest"].get<double>());
}

std::string GpuRowStatus(const json& row) {
  if (row.contains("na")) return row["na"];
  std::string worst = "ok";
  for (const auto& rec : row.value("gpus", json::array())) {
    std::string s = rec.value("status", "");
    if (s == "wrong")
      return fmt::format("WRONG on GPU {} ({} of {} samples)", rec["gpu"].get<int>(), rec["check"].value("wrong", 0),
                         rec["check"].value("checked", 0));
    if (s == "error") return fmt::format("error on GPU {}: {}", rec["gpu"].get<int>(), rec.value("error", ""));
    if (s == "n/a") worst = "n/a: " + rec.value("reason", "");
  }
  return worst;
}

std::string GpuSpread(const json& row) {
  if (!row.contains("summary") || row["gpus"].size() < 2) return "";
  return fmt::format("{:.1f}%", row["summary"]["spread_pct"].get<double>());
}

std::string GpuPeakPct(const json& row, const json& model, const char* key) {
  if (model.is_null() || !row.contains("summary")) return "";
  std::string p = row.value("dtype", "");
  double peak = 0;
  if (std::string(key) == "tflops") {
    if (!model["tflops"].contains(p) || !model["tflops"][p].is_number()) return "";
    peak = model["tflops"][p];
  } else {
    peak = model["hbm_tbps"].get<double>() * 1000;
  }
  return fmt::format("{:.0f}%", row["summary"]["slowest"].get<double>() / peak * 100);
}

void RenderGpuTable(std::string& out, const std::string& key, const json& suite, const std::string& title,
                    const char* unit, bool peak, const GpuRenderContext& ctx) {
  out += fmt::format("\n  {}: {}\n", key, title);
  out += fmt::format("    {:<34} {:>9} {:>7} {:>7}  {}\n", "id", unit, peak ? "% peak" : "", "spread", "check");
  for (const auto& row : suite["items"]) {
    out += fmt::format("    {:<34} {:>9} {:>7} {:>7}  {}\n", row["id"].get<std::string>(), GpuCell(row),
                       peak ? GpuPeakPct(row, ctx.model, "gbps") : "", GpuSpread(row), GpuRowStatus(row));
  }
}

std::string RenderGpu(const json& r) {
  std::string out = "clustermax bench gpu";
  if (r.value("status", "") != "ok") {
    return out + fmt::format(": SKIP ({})\n", r.value("reason", ""));
  }
  const json& v = r.value("versions", json::object());
  out += fmt::format(" ({} mode): {} GPU(s), CUDA driver {}, runtime {}, cuBLASLt {}\n", r["mode"].get<std::string>(),
                     r["gpus"].size(), v.value("cuda_driver", "?"), v.value("cuda_runtime", "?"),
                     v.value("cublaslt", "?"));
  json model = MatchGpuModel(r["gpus"][0].value("name", ""), EmbeddedGpuPeaks());
  for (const auto& g : r["gpus"]) {
    std::string tel;
    if (r.contains("telemetry") && r["telemetry"].is_object() && r["telemetry"].contains(g.value("uuid", ""))) {
      const json& t = r["telemetry"][g["uuid"].get<std::string>()];
      auto mm = [&](const char* k, const char* unit) {
        return t[k].is_null()
                   ? std::string("")
                   : fmt::format(" {} {:.0f}-{:.0f}{}", k, t[k]["min"].get<double>(), t[k]["max"].get<double>(), unit);
      };
      tel = fmt::format(";{}{}{}{}", mm("sm_clock_mhz", ""), mm("power_w", ""), mm("temperature_c", ""),
                        t.value("throttled", false) ? " THROTTLED" : "");
    }
    out += fmt::format("  GPU {}: {} ({}, sm_{}, {} SMs, {:.0f} GiB){}\n", g["index"].get<int>(),
                       g["name"].get<std::string>(), g["uuid"].get<std::string>(),
                       NoDot(g["compute_capability"].get<std::string>()), g["sm_count"].get<int>(),
                       g["memory_bytes"].get<double>() / (1u << 30), tel);
  }
  const json& s = r["suites"];
  GpuRenderContext ctx{model, r["gpus"].size() > 1};
  for (const auto& suite : GpuSuiteTable()) {
    if (s.contains(suite.key) && suite.render) suite.render(out, s[suite.key], ctx);
  }
  if (r.contains("grades")) out += "\n" + RenderGrades(r["grades"], "bars from data/gpu-peaks.json for this GPU model");
  out += fmt::format("\nresult: {}{} in {:.1f} s\n", r.value("verdict", "?"),
                     r.value("interrupted", false) ? " (INTERRUPTED)" : "", r["seconds"].get<double>());
  return out;
}

std::string RenderGpuList() {
  std::string out =
      "clustermax bench gpu: suites (default: all, in this order), each on every GPU of the node at once\n\n";
  GpuPlanOptions quick, full;
  full.full = true;
  full.gpu_count = quick.gpu_count = 8;
  full.compute_capability = quick.compute_capability = "10.0";
  full.memory_bytes = quick.memory_bytes = uint64_t{180} << 30;
  for (const auto& s : GpuSuiteTable()) {
    out += fmt::format("  {:<13} {}\n", s.key, s.description);
    json q = s.plan(quick), f = s.plan(full);
    out += fmt::format("  {:<13} quick: {} items, full: {} items (on 8 GPUs)\n", "", q.size(), f.size());
  }
  out += "\nprecisions (gemm, mamf, grouped-gemm, gemv):\n";
  for (const auto& p : GpuPrecisions()) {
    auto h = PrecisionUnavailable(p, "9.0");
    out +=
        fmt::format("  {:<12} {}\n", p, h ? "Blackwell and newer" : "Hopper and newer, or older where the GPU has it");
  }
  out += "  defaults: gemm all; mamf bf16, fp8; grouped-gemm bf16, fp8, fp8-1x128; gemv bf16, fp8\n";
  out += "\nshape sets:\n";
  for (const auto& s : GpuSuiteTable()) {
    if (!s.shapes.empty()) out += fmt::format("  {:<12} {}\n", s.key, s.shapes);
  }
  out += "\nMoE models (--models):\n";
  for (const auto& m : MoeModels()) {
    out += fmt::format("  {:<10} {:<30} gate_up {}x{}, down {}x{} (K x N), {} experts, top-{}\n", m.id, m.name,
                       m.hidden, 2 * m.moe_intermediate, m.moe_intermediate, m.hidden, m.experts, m.top_k);
  }
  return out;
}

}  // namespace clustermax::bench
