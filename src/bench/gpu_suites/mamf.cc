// GPU suite "mamf": maximum achievable matmul FLOPS (helper kind "gemm"). Stage 1 sweeps shapes
// on every GPU at once; stage 2 re-measures, per GPU, its best shapes and the best one's
// neighbours with the full protocol; the summary gives the best-of figures per GPU.
#include <algorithm>
#include <set>
#include <thread>
#include <tuple>

#include <fmt/format.h>

#include "bench/gpu_suite.h"

namespace clustermax::bench {
namespace {
using nlohmann::json;

json Plan(const GpuPlanOptions& o) {
  json items = json::array();
  const bool full = o.full;
  // Stage 1. Full: the reference's broad sweep (m, n, k each 1024..16384 step 1024; FP8
  // 1024..20480). Quick: a coarse grid over the same space with short timing; stage 2
  // (PlanMamfRefine) re-measures the best shapes and the best one's neighbours.
  for (const auto& p : PickPrecisions(o.precisions, {"bf16", "fp8"})) {
    std::vector<int64_t> mn, kk;
    if (full) {
      int64_t stop = p.rfind("fp8", 0) == 0 ? 20480 : 16384;
      for (int64_t v = 1024; v <= stop; v += 1024) mn.push_back(v);
      kk = mn;
    } else {
      mn = {1024, 2048, 4096, 8192, 16384};
      kk = {2048, 4096, 8192, 12288, 16384};
    }
    for (int64_t m : mn) {
      for (int64_t n : mn) {
        for (int64_t k : kk) {
          json it = GemmPlanItem(fmt::format("mamf.{}.{}", p, ShapeName(m, n, k)), p, m, n, k, full ? 50 : 5,
                                 full ? 100 : 20, 1, o);
          it["precision"] = p;
          items.push_back(std::move(it));
        }
      }
    }
  }
  return items;
}

// The MAMF figures of one GPU from its rows: best mean (the published statistic), best median and
// best max, each with its shape, and the arithmetic and geometric mean of the per-shape means.
json MamfSummary(const json& rows, const std::string& precision, int gpu) {
  json best_mean, best_median, best_max;
  double s = 0, logs = 0;
  int n = 0;
  // The best-of figures come from the full protocol (stage 2) where it ran.
  bool staged = false;
  for (const auto& row : rows) {
    if (row.value("precision", "") != precision || row.value("stage", 1) != 2) continue;
    for (const auto& rec : row["gpus"]) staged |= rec["gpu"] == gpu && rec.value("status", "") == "ok";
  }
  for (const auto& row : rows) {
    if (row.value("precision", "") != precision || !row.contains("gpus")) continue;
    for (const auto& rec : row["gpus"]) {
      if (rec["gpu"] != gpu || rec.value("status", "") != "ok") continue;
      json shape = {{"m", row["m"]}, {"n", row["n"]}, {"k", row["k"]}};
      if (staged && row.value("stage", 1) != 2) {
        double v = rec["tflops_mean"];
        s += v;
        logs += std::log(v);
        ++n;
        continue;
      }
      auto better = [&](json& slot, const char* key) {
        if (slot.is_null() || rec[key].get<double>() > slot["tflops"].get<double>())
          slot = {{"tflops", rec[key]}, {"shape", shape}, {"id", row["id"]}};
      };
      better(best_mean, "tflops_mean");
      better(best_median, "tflops");
      better(best_max, "tflops_max");
      if (row.value("stage", 1) == 1) {
        double v = rec["tflops_mean"];
        s += v;
        logs += std::log(v);
        ++n;
      }
    }
  }
  if (best_mean.is_null()) return nullptr;
  return {{"gpu", gpu},
          {"best_mean", best_mean},
          {"best_median", best_median},
          {"best_max", best_max},
          {"stage1_shapes", n},
          {"arithmetic_mean_tflops", n ? RoundTo(s / n, 2) : 0.0},
          {"geometric_mean_tflops", n ? RoundTo(std::exp(logs / n), 2) : 0.0}};
}

void Run(GpuSuiteRunner& runner, const GpuSuite& self, json& rows, json& suite_out) {
  const std::vector<int>& gpus = runner.gpus();
  auto stage1 = runner.RunOn(gpus, rows, self.key + "-stage1", true);
  CollectGpuRows(rows, gpus, stage1, self);
  // Stage 2 per GPU: each refines around its own best shapes.
  std::set<std::string> precisions;
  for (const auto& r : rows) precisions.insert(r.value("precision", ""));
  std::vector<GpuJobOutcome> outcomes(gpus.size());
  std::vector<json> refine(gpus.size(), json::array());
  for (size_t g = 0; g < gpus.size(); ++g) {
    json mine = json::array();
    for (const auto& r : rows) {
      for (const auto& rec : r["gpus"]) {
        if (rec["gpu"] == gpus[g] && rec.value("status", "") == "ok") {
          json x = {{"precision", r["precision"]},
                    {"m", r["m"]},
                    {"n", r["n"]},
                    {"k", r["k"]},
                    {"tflops_mean", rec["tflops_mean"]}};
          mine.push_back(x);
        }
      }
    }
    for (const auto& p : precisions) {
      for (auto& it : PlanMamfRefine(mine, p, runner.plan())) refine[g].push_back(it);
    }
  }
  std::vector<std::thread> threads;
  for (size_t g = 0; g < gpus.size(); ++g) {
    threads.emplace_back([&, g] {
      json job = {{"device", gpus[g]}, {"items", refine[g]}, {"warmup_s", 0.0}};
      outcomes[g] = runner.RunJob(job, fmt::format("job-mamf-stage2-gpu{}.json", gpus[g]));
    });
  }
  for (auto& t : threads) t.join();
  // Stage-2 rows are per GPU (their shapes differ): one row per (GPU, shape).
  for (size_t g = 0; g < gpus.size(); ++g) {
    for (auto& r : refine[g]) r["gpus"] = json::array();
    CollectGpuRows(refine[g], {gpus[g]}, {outcomes[g]}, self);
    for (auto& r : refine[g]) rows.push_back(std::move(r));
  }
  json summary = json::object();
  for (const auto& p : precisions) {
    json per = json::array();
    for (int g : gpus) {
      json s = MamfSummary(rows, p, g);
      if (!s.is_null()) per.push_back(s);
    }
    summary[p] = per;
  }
  suite_out["summary"] = summary;
}

void Metrics(const json& r, std::vector<MetricValue>& out) {
  for (const auto& p : PrecisionsIn(r, "mamf")) {
    // The summary's best mean (stage 2, the full protocol, where it ran).
    PerGpuBest b = BestPerGpu(r, "mamf", "tflops_mean", [&](const json& row) { return row["dtype"] == p; });
    b.value.clear();
    b.where.clear();
    for (const auto& g : r["suites"]["mamf"].value("summary", json::object()).value(p, json::array())) {
      b.value[g["gpu"].get<int>()] = g["best_mean"]["tflops"].get<double>();
      b.where[g["gpu"].get<int>()] = g["best_mean"]["id"].get<std::string>();
    }
    out.push_back(NodeValue("gpu.mamf." + p, b, true, "MAMF " + p));
  }
}

void Bars(GpuBars& b) {
  for (const auto& p : GpuPrecisions()) {
    std::optional<double> mp = b.Peak("mamf_tflops", p);
    if (mp) {
      b.Add("gpu.mamf." + p, "MAMF " + p + " (best mean), slowest GPU", "TFLOPS", "mamf", mp, "published MAMF " + p);
    } else {
      std::optional<double> pk = b.Peak("tflops", p);
      if (pk) *pk *= 0.65;
      b.Add("gpu.mamf." + p, "MAMF " + p + " (best mean), slowest GPU", "TFLOPS", "mamf", pk,
            "0.65 x dense " + p + " peak");
    }
  }
}

void Render(std::string& out, const json& suite, const GpuRenderContext& ctx) {
  const json& model = ctx.model;
  out +=
      "\n  mamf: best mean TFLOPS over the sweep (the published statistic), stage 2 = re-measured best shapes, 50 warm-ups + 100 timed\n";
  out += fmt::format("    {:<6} {:>4} {:>10} {:<20} {:>10} {:>10} {:>9} {:>9} {:>7}\n", "dtype", "GPU", "best mean",
                     "shape", "best med", "best max", "amean", "gmean", "% peak");
  const json summary = suite.value("summary", json::object());
  for (const auto& [p, per] : summary.items()) {
    for (const auto& g : per) {
      const json& sh = g["best_mean"]["shape"];
      std::string pct;
      if (!model.is_null() && model["tflops"].contains(p) && model["tflops"][p].is_number()) {
        pct = fmt::format("{:.1f}%", g["best_mean"]["tflops"].get<double>() / model["tflops"][p].get<double>() * 100);
      }
      out +=
          fmt::format("    {:<6} {:>4} {:>10.1f} {:<20} {:>10.1f} {:>10.1f} {:>9.1f} {:>9.1f} {:>7}\n", p,
                      g["gpu"].get<int>(), g["best_mean"]["tflops"].get<double>(),
                      fmt::format("{}x{}x{}", sh["m"].get<int64_t>(), sh["n"].get<int64_t>(), sh["k"].get<int64_t>()),
                      g["best_median"]["tflops"].get<double>(), g["best_max"]["tflops"].get<double>(),
                      g["arithmetic_mean_tflops"].get<double>(), g["geometric_mean_tflops"].get<double>(), pct);
    }
  }
  uint64_t bad = 0;
  for (const auto& row : suite["items"]) bad += GpuRowStatus(row) != "ok" && !row.contains("na");
  if (bad) out += fmt::format("    {} shape(s) failed or gave wrong results (see the JSON)\n", bad);
}

}  // namespace

json PlanMamfRefine(const json& rows, const std::string& precision, const GpuPlanOptions& o, int keep) {
  std::vector<std::pair<double, json>> ranked;
  for (const auto& r : rows) {
    if (r.value("precision", "") != precision || !r.contains("tflops_mean") || !r["tflops_mean"].is_number()) continue;
    ranked.push_back({r["tflops_mean"].get<double>(), r});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  json items = json::array();
  std::set<std::tuple<int64_t, int64_t, int64_t>> seen;
  auto add = [&](int64_t m, int64_t n, int64_t k) {
    if (m <= 0 || n <= 0 || k <= 0 || !seen.insert({m, n, k}).second) return;
    json it = GemmPlanItem(fmt::format("mamf.{}.{}.stage2", precision, ShapeName(m, n, k)), precision, m, n, k, 50, 100,
                           4, o);
    it["precision"] = precision;
    it["stage"] = 2;
    items.push_back(std::move(it));
  };
  for (size_t i = 0; i < ranked.size() && static_cast<int>(i) < keep; ++i) {
    add(ranked[i].second["m"], ranked[i].second["n"], ranked[i].second["k"]);
  }
  if (!ranked.empty()) {
    int64_t m = ranked[0].second["m"], n = ranked[0].second["n"], k = ranked[0].second["k"];
    for (int dm : {-256, 0, 256}) {
      for (int dn : {-256, 0, 256}) {
        for (int dk : {-256, 0, 256}) add(m + dm, n + dn, k + dk);
      }
    }
  }
  return items;
}

GpuSuite MamfSuite() {
  GpuSuite s;
  s.key = "mamf";
  s.description =
      "maximum achievable matmul FLOPS: sweep, then the best shapes and their neighbours re-measured (50 + 100)";
  s.shapes =
      "quick m, n in {1024..16384 (x2)}, k in {2048, 4096, 8192, 12288, 16384}; full 1024..16384 step 1024 (FP8 to 20480)";
  s.helper_kind = "gemm";
  s.plan = Plan;
  s.run = Run;
  s.headline = "tflops";
  s.unit = "TFLOPS";
  s.consistency_key = "tflops_mean";
  s.consistency_order = 1;
  s.metrics = Metrics;
  s.bars = Bars;
  s.render = Render;
  return s;
}

}  // namespace clustermax::bench
