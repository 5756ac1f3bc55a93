// Grading of a `bench gpu` result: each suite's metric values and bars (its descriptor's hooks),
// the checks of every result (wrong answers) and the intra-node consistency across suites; the
// bars come from data/gpu-peaks.json for the GPU model.
#include <algorithm>

#include <fmt/format.h>

#include "bench/gpu_bench.h"
#include "bench/gpu_suite.h"

namespace clustermax::embedded {
extern const std::string_view kGpuPeaksJson;
}

namespace clustermax::bench {
using nlohmann::json;

const json& EmbeddedGpuPeaks() {
  static const json j = json::parse(embedded::kGpuPeaksJson);
  return j;
}

json MatchGpuModel(const std::string& name, const json& peaks) {
  for (const auto& m : peaks["models"]) {
    bool excluded = false;
    for (const auto& x : m["exclude"]) excluded |= name.find(x.get<std::string>()) != std::string::npos;
    if (excluded) continue;
    for (const auto& pat : m["match"]) {
      if (name.find(pat.get<std::string>()) != std::string::npos) return m;
    }
  }
  return nullptr;
}

PerGpuBest BestPerGpu(const json& result, const std::string& suite, const char* key,
                      const std::function<bool(const json&)>& pick, bool higher) {
  PerGpuBest b;
  if (!result.contains("suites") || !result["suites"].contains(suite)) return b;
  for (const auto& row : result["suites"][suite]["items"]) {
    if (!pick(row)) continue;
    if (row.contains("na")) {
      if (b.na_reason.empty()) b.na_reason = row["na"];
      continue;
    }
    for (const auto& rec : row["gpus"]) {
      if (rec.value("status", "") != "ok") {
        if (rec.contains("reason") && b.na_reason.empty()) b.na_reason = rec["reason"];
        continue;
      }
      if (!rec.contains(key) || !rec[key].is_number()) continue;
      int g = rec["gpu"];
      double v = rec[key];
      if (!b.value.count(g) || (higher ? v > b.value[g] : v < b.value[g])) {
        b.value[g] = v;
        b.where[g] = row["id"];
      }
    }
  }
  return b;
}

MetricValue NodeValue(const std::string& id, const PerGpuBest& b, bool higher, const std::string& what) {
  MetricValue m{id, std::nullopt, "", ""};
  if (b.value.empty()) {
    m.why_missing = b.na_reason.empty() ? what + " was not measured" : b.na_reason;
    return m;
  }
  auto slow = b.value.begin();
  for (auto it = b.value.begin(); it != b.value.end(); ++it) {
    if (higher ? it->second < slow->second : it->second > slow->second) slow = it;
  }
  m.value = slow->second;
  m.detail = b.value.size() > 1
                 ? fmt::format("slowest of {} GPUs: GPU {} ({})", b.value.size(), slow->first, b.where.at(slow->first))
                 : b.where.at(slow->first);
  return m;
}

std::vector<std::string> PrecisionsIn(const json& result, const std::string& suite) {
  std::vector<std::string> out;
  if (!result.contains("suites") || !result["suites"].contains(suite)) return out;
  for (const auto& row : result["suites"][suite]["items"]) {
    std::string p = row.value("dtype", "");
    if (!p.empty() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

GpuBars::GpuBars(const json& model, const json& floors) : model_(model), floors_(floors) {
  model_id_ = model.is_null() ? "" : model["id"].get<std::string>();
}

void GpuBars::Add(const std::string& id, const std::string& title, const char* unit, const char* floor,
                  std::optional<double> peak, const std::string& peak_what, bool higher) {
  const json& f = floors_[floor];
  json m = {{"id", id}, {"title", title}, {"unit", unit}, {"better", higher ? "higher" : "lower"}};
  if (!peak) {
    m["pass"] = 0;
    m["warn"] = 0;
    m["source"] = model_id_.empty() ? "no peak figures for this GPU in data/gpu-peaks.json"
                                    : fmt::format("no {} figure for {}", peak_what, model_id_);
    m["no_bar"] = true;
  } else {
    m["pass"] = RoundTo(f["pass"].get<double>() * *peak, 2);
    m["warn"] = RoundTo(f["warn"].get<double>() * *peak, 2);
    m["source"] = fmt::format("{} x {} ({} {}) / {}", f["pass"].get<double>(), peak_what, model_id_, *peak,
                              f["source"].get<std::string>());
  }
  metrics_.push_back(m);
}

void GpuBars::AddAbsolute(const std::string& id, const std::string& title, const char* unit, const char* floor,
                          bool higher) {
  const json& f = floors_[floor];
  metrics_.push_back({{"id", id},
                      {"title", title},
                      {"unit", unit},
                      {"better", higher ? "higher" : "lower"},
                      {"pass", f["pass"]},
                      {"warn", f["warn"]},
                      {"source", f["source"]}});
}

std::optional<double> GpuBars::Peak(const std::string& key) const {
  if (model_.is_null() || !model_.contains(key) || !model_[key].is_number()) return std::nullopt;
  return model_[key].get<double>();
}

std::optional<double> GpuBars::Peak(const std::string& table, const std::string& key) const {
  if (model_.is_null() || !model_.contains(table)) return std::nullopt;
  const json& t = model_[table];
  if (!t.contains(key) || !t[key].is_number()) return std::nullopt;
  return t[key].get<double>();
}

std::vector<MetricValue> GpuMetrics(const json& r) {
  std::vector<MetricValue> out;
  if (r.value("status", "") != "ok") return out;
  for (const auto& s : GpuSuiteTable()) {
    if (s.metrics) s.metrics(r, out);
  }
  // Wrong results anywhere: a fast wrong answer is a FAIL.
  uint64_t wrong = 0, checked = 0;
  std::string first;
  for (const auto& [name, s] : r["suites"].items()) {
    for (const auto& row : s["items"]) {
      for (const auto& rec : row.value("gpus", json::array())) {
        if (rec.contains("check")) ++checked;
        if (rec.value("status", "") == "wrong") {
          if (first.empty()) first = fmt::format("{} on GPU {}", row["id"].get<std::string>(), rec["gpu"].get<int>());
          ++wrong;
        }
      }
    }
  }
  MetricValue w{"gpu.wrong-results", static_cast<double>(wrong), "",
                fmt::format("{} checked results{}", checked, first.empty() ? "" : "; first: " + first)};
  if (checked == 0) {
    w.value.reset();
    w.why_missing = "no result was checked";
  }
  out.push_back(w);
  // Intra-node consistency: the largest shortfall of one GPU below the node's best.
  if (r["gpus"].size() < 2) {
    out.push_back({"gpu.consistency", std::nullopt, "one GPU: nothing to compare it with", ""});
  } else {
    double worst = -1;
    std::string where;
    std::vector<const GpuSuite*> compared;
    for (const auto& s : GpuSuiteTable()) {
      if (s.consistency_key) compared.push_back(&s);
    }
    std::stable_sort(compared.begin(), compared.end(),
                     [](const GpuSuite* a, const GpuSuite* b) { return a->consistency_order < b->consistency_order; });
    for (const GpuSuite* cs : compared) {
      const std::string& suite = cs->key;
      if (!r["suites"].contains(suite)) continue;
      for (const auto& row : r["suites"][suite]["items"]) {
        if (!row.contains("summary") || row.value("stage", 1) == 2) continue;
        double s = row["summary"]["spread_pct"];
        if (s > worst) {
          worst = s;
          where = fmt::format("{}: GPU {} at {} vs best {} {}", row["id"].get<std::string>(),
                              row["summary"]["slowest_gpu"].get<int>(), row["summary"]["slowest"].get<double>(),
                              row["summary"]["best"].get<double>(), row["summary"]["unit"].get<std::string>());
        }
      }
    }
    MetricValue c{"gpu.consistency", std::nullopt, "no figure measured on two GPUs", ""};
    if (worst >= 0) {
      c.value = worst;
      c.detail = where;
    }
    out.push_back(c);
  }
  return out;
}

json GpuThresholds(const json& result, const json& peaks) {
  json model = nullptr;
  if (result.contains("gpus") && !result["gpus"].empty())
    model = MatchGpuModel(result["gpus"][0].value("name", ""), peaks);
  GpuBars bars(model, peaks["floors"]);
  for (const auto& s : GpuSuiteTable()) {
    if (s.bars) s.bars(bars);
  }
  bars.AddRaw({{"id", "gpu.wrong-results"},
               {"title", "Results that failed the check against the reference"},
               {"unit", "results"},
               {"better", "lower"},
               {"pass", 0},
               {"warn", 0},
               {"source", "performance.md 2: a fast wrong answer is a FAIL (nccl-tests #wrong, DeepGEMM calc_diff)"}});
  bars.AddAbsolute("gpu.consistency", "Largest shortfall of one GPU below the node's best", "%", "consistency", false);
  return {{"metrics", bars.metrics()}};
}

json GradeGpu(const json& result) {
  json thresholds = GpuThresholds(result, EmbeddedGpuPeaks());
  std::vector<MetricValue> values = GpuMetrics(result);
  for (auto& v : values) {
    for (const auto& m : thresholds["metrics"]) {
      if (m["id"] == v.id && m.value("no_bar", false) && v.value) {
        v.value.reset();  // no figure for this GPU to hold it against: SKIP, never a PASS
        v.why_missing = m["source"];
      }
    }
  }
  return Grade(values, thresholds);
}

}  // namespace clustermax::bench
