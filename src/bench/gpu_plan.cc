#include "bench/gpu_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "bench/gpu_suite.h"

namespace clustermax::bench {
using nlohmann::json;

const std::vector<std::string>& GpuSuites() {
  static const std::vector<std::string> s = [] {
    std::vector<std::string> keys;
    for (const auto& suite : GpuSuiteTable()) keys.push_back(suite.key);
    return keys;
  }();
  return s;
}

const std::vector<std::string>& GpuPrecisions() {
  static const std::vector<std::string> p = {"fp64", "fp32",      "tf32",        "bf16",  "fp16",
                                             "fp8",  "fp8-1x128", "fp8-128x128", "mxfp8", "nvfp4"};
  return p;
}

const std::vector<MoeModel>& MoeModels() {
  static const std::vector<MoeModel> m = {
      {"kimi-k2.5", "Kimi K2.5", 7168, 2048, 384, 8},
      {"kimi-k3", "Kimi K3 (routed, latent 3584)", 3584, 3072, 896, 16},
      {"dsv3", "DeepSeek V3", 7168, 2048, 256, 8},
      {"dsv4-pro", "DeepSeek V4 Pro", 7168, 3072, 384, 6},
  };
  return m;
}

namespace {

std::pair<int, int> Cc(const std::string& cc) {
  int major = 0, minor = 0;
  if (std::sscanf(cc.c_str(), "%d.%d", &major, &minor) < 1)
    throw std::invalid_argument("compute capability '" + cc + "' is not N.M");
  return {major, minor};
}

bool Known(const std::vector<std::string>& list, const std::string& v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

}  // namespace

bool ScaledPrecision(const std::string& p) { return p.rfind("fp8", 0) == 0 || p == "mxfp8" || p == "nvfp4"; }

std::vector<std::string> PickPrecisions(const std::vector<std::string>& wanted,
                                        const std::vector<std::string>& defaults) {
  for (const auto& p : wanted) {
    if (!Known(GpuPrecisions(), p))
      throw std::invalid_argument(
          fmt::format("unknown precision '{}' (known: {})", p, fmt::join(GpuPrecisions(), ", ")));
  }
  return wanted.empty() ? defaults : wanted;
}

json GemmPlanItem(const std::string& id, const std::string& prec, int64_t m, int64_t n, int64_t k, int warmup,
                  int iters, int candidates, const GpuPlanOptions& o) {
  json item = {{"id", id},
               {"kind", "gemm"},
               {"dtype", prec},
               {"m", m},
               {"n", n},
               {"k", k},
               {"warmup", warmup},
               {"iters", iters},
               {"candidates", candidates},
               {"flops", GemmFlops(m, n, k)},
               {"bytes", GemmBytes(prec, m, n, k)}};
  if (ScaledPrecision(prec)) item["fast_accum"] = o.fp8_fast_accum;
  if (auto why = PrecisionUnavailable(prec, o.compute_capability)) item["na"] = *why;
  // Inputs and output must fit in the smallest GPU with room for the flush buffer and workspace.
  double need = GemmBytes(prec, m, n, k) + (uint64_t{1} << 30);
  if (!item.contains("na") && need > 0.9 * static_cast<double>(o.memory_bytes)) {
    item["na"] = fmt::format("needs {:.1f} GiB, more than 90 % of the GPU's memory", need / (1u << 30));
  }
  return item;
}

std::string ShapeName(int64_t m, int64_t n, int64_t k) { return fmt::format("{}x{}x{}", m, n, k); }

std::optional<std::string> PrecisionUnavailable(const std::string& precision, const std::string& compute_capability) {
  auto [major, minor] = Cc(compute_capability);
  int cc = major * 10 + minor;
  std::string sm = fmt::format("sm_{}{}", major, minor);
  if (precision == "fp64" || precision == "fp32" || precision == "fp16") return std::nullopt;
  if (precision == "tf32" || precision == "bf16") {
    if (cc < 80)
      return fmt::format("no {} tensor cores on {} (Ampere, sm_80, and newer)", precision == "tf32" ? "TF32" : "BF16",
                         sm);
    return std::nullopt;
  }
  if (precision == "fp8") {
    if (cc < 89) return fmt::format("no FP8 tensor cores on {} (Ada sm_89, Hopper sm_90 and newer)", sm);
    return std::nullopt;
  }
  if (precision == "fp8-1x128" || precision == "fp8-128x128") {
    if (cc < 90) return fmt::format("block-scaled FP8 needs Hopper (sm_90) or newer, this is {}", sm);
    return std::nullopt;
  }
  if (precision == "mxfp8" || precision == "nvfp4") {
    if (cc < 100) {
      return fmt::format("no native {} on {}: block-scaled MX/NV formats need Blackwell (sm_100) or newer",
                         precision == "mxfp8" ? "MXFP8" : "NVFP4", sm);
    }
    return std::nullopt;
  }
  throw std::invalid_argument("unknown precision " + precision);
}

double InputElementBytes(const std::string& p) {
  if (p == "fp64") return 8;
  if (p == "fp32" || p == "tf32") return 4;
  if (p == "bf16" || p == "fp16") return 2;
  if (p == "nvfp4") return 0.5;
  return 1;  // fp8 variants, mxfp8
}

double OutputElementBytes(const std::string& p) {
  if (p == "fp64") return 8;
  if (p == "fp32" || p == "tf32") return 4;
  return 2;  // bf16/fp16 in their own type; fp8 and block-scaled formats write BF16
}

double GemmFlops(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

double GemmBytes(const std::string& p, int64_t m, int64_t n, int64_t k) {
  double in = InputElementBytes(p), out = OutputElementBytes(p);
  return in * static_cast<double>(m) * static_cast<double>(k) + in * static_cast<double>(k) * static_cast<double>(n) +
         out * static_cast<double>(m) * static_cast<double>(n);
}

double GroupedFlops(const std::vector<int64_t>& m, int64_t n, int64_t k) {
  double f = 0;
  for (int64_t x : m) f += GemmFlops(x, n, k);
  return f;
}

double GroupedBytes(const std::string& p, const std::vector<int64_t>& m, int64_t n, int64_t k) {
  double b = 0;
  for (int64_t x : m) {
    if (x > 0) b += GemmBytes(p, x, n, k);
  }
  return b;
}

std::vector<int64_t> RouteTokens(int groups, int64_t tokens, bool skewed) {
  if (groups <= 0) return {};
  if (!skewed) return std::vector<int64_t>(groups, tokens);
  double total = static_cast<double>(tokens) * groups, harmonic = 0;
  for (int g = 1; g <= groups; ++g) harmonic += 1.0 / g;
  std::vector<int64_t> out(groups);
  std::vector<std::pair<double, int>> rest;
  int64_t given = 0;
  for (int g = 0; g < groups; ++g) {
    double share = total / (harmonic * (g + 1));
    out[g] = static_cast<int64_t>(std::floor(share));
    given += out[g];
    rest.push_back({share - std::floor(share), g});
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t i = 0; given < static_cast<int64_t>(total) && i < rest.size(); ++i, ++given) out[rest[i].second] += 1;
  return out;
}

void ValidateGpuPlanOptions(const GpuPlanOptions& o) {
  for (const auto& s : o.suites) {
    if (!Known(GpuSuites(), s))
      throw std::invalid_argument(fmt::format("unknown GPU suite '{}' (known: {})", s, fmt::join(GpuSuites(), ", ")));
  }
  PickPrecisions(o.precisions, {});
  std::vector<std::string> models;
  for (const auto& m : MoeModels()) models.push_back(m.id);
  for (const auto& id : o.models) {
    if (!Known(models, id))
      throw std::invalid_argument(fmt::format("unknown model '{}' (known: {})", id, fmt::join(models, ", ")));
  }
}

json PlanSuite(const std::string& suite, const GpuPlanOptions& o) {
  const GpuSuite* s = FindGpuSuite(suite);
  if (!s)
    throw std::invalid_argument(fmt::format("unknown GPU suite '{}' (known: {})", suite, fmt::join(GpuSuites(), ", ")));
  return s->plan(o);
}

Tolerance ToleranceFor(const std::string& p) {
  if (p == "fp64") return {1e-12, 1e-20};
  if (p == "fp32") return {1e-5, 1e-9};
  if (p == "tf32") return {5e-3, 1e-5};
  if (p == "bf16" || p == "fp16") return {1e-2, 1e-5};
  if (p == "nvfp4") return {5e-2, 0.02};
  return {2e-2, 1e-3};  // fp8 variants, mxfp8 (DeepGEMM's FP8 x FP8 limit)
}

json JudgeSamples(const json& samples, const std::string& precision) {
  Tolerance t = ToleranceFor(precision);
  const auto& got = samples.at("got");
  const auto& ref = samples.at("ref");
  const auto& absref = samples.at("absref");
  size_t n = std::min({got.size(), ref.size(), absref.size()});
  uint64_t wrong = 0;
  double max_rel = 0, sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) {
    // A NaN reaches JSON as null: the poisoned output was never written.
    if (!got[i].is_number() || !ref[i].is_number()) {
      ++wrong;
      continue;
    }
    double g = got[i], r = ref[i], a = absref[i].is_number() ? absref[i].get<double>() : 0.0;
    if (!std::isfinite(g)) {
      ++wrong;
      continue;
    }
    double rel = std::abs(g - r) / std::max(a, 1e-30);
    max_rel = std::max(max_rel, rel);
    if (rel > t.elem) ++wrong;
    sxy += g * r;
    sxx += g * g + r * r;
  }
  double diff = sxx > 0 ? 1.0 - 2.0 * sxy / sxx : 0.0;
  return {{"checked", n},
          {"wrong", wrong},
          {"max_rel_err", max_rel},
          {"elem_limit", t.elem},
          {"diff", diff},
          {"diff_limit", t.diff},
          {"ok", n > 0 && wrong == 0 && diff <= t.diff}};
}

json Stats(const std::vector<double>& v) {
  if (v.empty()) return {{"count", 0}};
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  double sum = std::accumulate(s.begin(), s.end(), 0.0), mean = sum / s.size(), var = 0;
  for (double x : s) var += (x - mean) * (x - mean);
  double sd = s.size() > 1 ? std::sqrt(var / (s.size() - 1)) : 0.0;
  size_t p99 = std::min(s.size() - 1, static_cast<size_t>(std::ceil(0.99 * s.size())) - 1);
  double median = s.size() % 2 ? s[s.size() / 2] : 0.5 * (s[s.size() / 2 - 1] + s[s.size() / 2]);
  return {{"count", s.size()},
          {"median", median},
          {"mean", mean},
          {"min", s.front()},
          {"max", s.back()},
          {"p99", s[p99]},
          {"cv", mean > 0 ? sd / mean : 0.0}};
}

}  // namespace clustermax::bench
