#include "bench/gpu_plan.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace clustermax::bench {
using nlohmann::json;

const std::vector<std::string>& GpuSuites() {
  static const std::vector<std::string> s = {"gemm", "mamf", "grouped-gemm", "gemv", "membw", "pcie", "p2p", "launch"};
  return s;
}

const std::vector<std::string>& GpuPrecisions() {
  static const std::vector<std::string> p = {"fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp8-1x128", "fp8-128x128", "mxfp8", "nvfp4"};
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
  if (std::sscanf(cc.c_str(), "%d.%d", &major, &minor) < 1) throw std::invalid_argument("compute capability '" + cc + "' is not N.M");
  return {major, minor};
}

// Precisions with scale factors (cuBLASLt's FP8 and block-scaled paths).
bool Scaled(const std::string& p) { return p.rfind("fp8", 0) == 0 || p == "mxfp8" || p == "nvfp4"; }

bool Known(const std::vector<std::string>& list, const std::string& v) { return std::find(list.begin(), list.end(), v) != list.end(); }

std::vector<std::string> Pick(const std::vector<std::string>& wanted, const std::vector<std::string>& defaults) {
  for (const auto& p : wanted) {
    if (!Known(GpuPrecisions(), p)) throw std::invalid_argument(fmt::format("unknown precision '{}' (known: {})", p, fmt::join(GpuPrecisions(), ", ")));
  }
  return wanted.empty() ? defaults : wanted;
}

json GemmItem(const std::string& id, const std::string& prec, int64_t m, int64_t n, int64_t k, int warmup, int iters,
              int candidates, const GpuPlanOptions& o) {
  json item = {{"id", id},       {"kind", "gemm"},        {"dtype", prec},   {"m", m},
               {"n", n},         {"k", k},                {"warmup", warmup}, {"iters", iters},
               {"candidates", candidates}, {"flops", GemmFlops(m, n, k)}, {"bytes", GemmBytes(prec, m, n, k)}};
  if (Scaled(prec)) item["fast_accum"] = o.fp8_fast_accum;
  if (auto why = PrecisionUnavailable(prec, o.compute_capability)) item["na"] = *why;
  // Inputs and output must fit in the smallest GPU with room for the flush buffer and workspace.
  double need = GemmBytes(prec, m, n, k) + (uint64_t{1} << 30);
  if (!item.contains("na") && need > 0.9 * static_cast<double>(o.memory_bytes)) {
    item["na"] = fmt::format("needs {:.1f} GiB, more than 90 % of the GPU's memory", need / (1u << 30));
  }
  return item;
}

std::string Shape(int64_t m, int64_t n, int64_t k) { return fmt::format("{}x{}x{}", m, n, k); }

}  // namespace

std::optional<std::string> PrecisionUnavailable(const std::string& precision, const std::string& compute_capability) {
  auto [major, minor] = Cc(compute_capability);
  int cc = major * 10 + minor;
  std::string sm = fmt::format("sm_{}{}", major, minor);
  if (precision == "fp64" || precision == "fp32" || precision == "fp16") return std::nullopt;
  if (precision == "tf32" || precision == "bf16") {
    if (cc < 80) return fmt::format("no {} tensor cores on {} (Ampere, sm_80, and newer)", precision == "tf32" ? "TF32" : "BF16", sm);
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

double GemmFlops(int64_t m, int64_t n, int64_t k) { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }

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
    if (!Known(GpuSuites(), s)) throw std::invalid_argument(fmt::format("unknown GPU suite '{}' (known: {})", s, fmt::join(GpuSuites(), ", ")));
  }
  Pick(o.precisions, {});
  std::vector<std::string> models;
  for (const auto& m : MoeModels()) models.push_back(m.id);
  for (const auto& id : o.models) {
    if (!Known(models, id)) throw std::invalid_argument(fmt::format("unknown model '{}' (known: {})", id, fmt::join(models, ", ")));
  }
}

json PlanSuite(const std::string& suite, const GpuPlanOptions& o) {
  json items = json::array();
  const bool full = o.full;
  if (suite == "gemm") {
    std::vector<int64_t> sizes = full ? std::vector<int64_t>{4096, 8192, 16384} : std::vector<int64_t>{8192};
    for (const auto& p : Pick(o.precisions, GpuPrecisions())) {
      for (int64_t s : sizes) {
        items.push_back(GemmItem(fmt::format("gemm.dense.{}.{}", p, Shape(s, s, s)), p, s, s, s, full ? 20 : 10, full ? 100 : 30, 4, o));
      }
    }
  } else if (suite == "mamf") {
    // Stage 1. Full: the reference's broad sweep (m, n, k each 1024..16384 step 1024; FP8
    // 1024..20480). Quick: a coarse grid over the same space with short timing; stage 2
    // (PlanMamfRefine) re-measures the best shapes and the best one's neighbours.
    for (const auto& p : Pick(o.precisions, {"bf16", "fp8"})) {
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
            json it = GemmItem(fmt::format("mamf.{}.{}", p, Shape(m, n, k)), p, m, n, k, full ? 50 : 5, full ? 100 : 20, 1, o);
            it["precision"] = p;
            items.push_back(std::move(it));
          }
        }
      }
    }
  } else if (suite == "grouped-gemm") {
    std::vector<int64_t> tokens = full ? std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096}
                                       : std::vector<int64_t>{1, 8, 64, 512, 4096};
    std::vector<int> eps = full ? std::vector<int>{8, 32} : std::vector<int>{8};
    std::set<std::string> known;
    for (const auto& m : MoeModels()) known.insert(m.id);
    for (const auto& id : o.models) {
      if (!known.count(id)) throw std::invalid_argument(fmt::format("unknown model '{}' (known: {})", id, fmt::join(known, ", ")));
    }
    for (const auto& model : MoeModels()) {
      if (!o.models.empty() && !Known(o.models, model.id)) continue;
      for (const auto& p : Pick(o.precisions, {"bf16", "fp8", "fp8-1x128"})) {
        for (int ep : eps) {
          int groups = model.experts / ep;
          for (const char* proj : {"gate_up", "down"}) {
            bool gate_up = std::string(proj) == "gate_up";
            int64_t k = gate_up ? model.hidden : model.moe_intermediate;
            int64_t n = gate_up ? 2 * model.moe_intermediate : model.hidden;
            for (int64_t t : tokens) {
              for (bool skewed : {false, true}) {
                std::vector<int64_t> m = RouteTokens(groups, t, skewed);
                json item = {{"id", fmt::format("gemm.grouped.{}.{}.{}.ep{}.t{}.{}", model.id, proj, p, ep, t, skewed ? "skewed" : "uniform")},
                             {"kind", "grouped"}, {"dtype", p}, {"model", model.id}, {"proj", proj}, {"ep", ep},
                             {"groups", groups}, {"tokens_per_expert", t}, {"routing", skewed ? "skewed" : "uniform"},
                             {"n", n}, {"k", k}, {"m", m}, {"warmup", full ? 5 : 3}, {"iters", full ? 30 : 10},
                             {"flops", GroupedFlops(m, n, k)}, {"bytes", GroupedBytes(p, m, n, k)},
                             // cuBLAS grouped batched GEMM takes FP32/TF32/FP16/BF16 (auto: it and the
                             // CUDA-graph path are both timed, the faster kept); scaled FP8 runs as
                             // per-expert cuBLASLt calls captured in one CUDA graph, its segments
                             // padded to 16 rows (cuBLASLt's FP8 alignment; padding not counted).
                             {"backend", Scaled(p) ? "lt-graph" : o.grouped_backend},
                             {"row_align", Scaled(p) ? 16 : 1}};
                if (Scaled(p)) item["fast_accum"] = o.fp8_fast_accum;
                if (auto why = PrecisionUnavailable(p, o.compute_capability)) item["na"] = *why;
                double rows = std::accumulate(m.begin(), m.end(), 0.0);
                double need = InputElementBytes(p) * (rows * k + static_cast<double>(groups) * n * k) + OutputElementBytes(p) * rows * n;
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
  } else if (suite == "gemv") {
    // Decode-shaped: a 32768 x 16384 weight (1 GiB in BF16, many times any L2, and L2 is flushed
    // before each call) times a vector or a batch of 16.
    for (const auto& p : Pick(o.precisions, {"bf16", "fp8"})) {
      for (int64_t batch : {int64_t{1}, int64_t{16}}) {
        json item = GemmItem(fmt::format("mem.gemv.{}.n{}", p, batch), p, 32768, batch, 16384, 10, full ? 100 : 30, 4, o);
        item["kind"] = "gemm";
        items.push_back(std::move(item));
      }
    }
  } else if (suite == "membw") {
    uint64_t bytes = std::min<uint64_t>(uint64_t{1} << 30, o.memory_bytes / 16);
    for (const char* op : {"copy", "read", "triad", "memcpy"}) {
      std::string s(op);
      double moved = static_cast<double>(bytes) * (s == "read" ? 1 : s == "triad" ? 3 : 2);
      items.push_back({{"id", "mem.stream." + s}, {"kind", "membw"}, {"op", s}, {"bytes", bytes}, {"iters", full ? 100 : 20},
                       {"bytes_moved", moved}});
    }
  } else if (suite == "pcie") {
    uint64_t bytes = full ? uint64_t{512} << 20 : uint64_t{256} << 20;
    for (const char* dir : {"h2d", "d2h", "bidir"}) {
      std::string d(dir);
      items.push_back({{"id", "bw.host-device." + d}, {"kind", "pcie"}, {"dir", d}, {"bytes", bytes}, {"iters", full ? 20 : 5},
                       {"bytes_moved", static_cast<double>(bytes) * (d == "bidir" ? 2 : 1)}});
    }
  } else if (suite == "p2p") {
    uint64_t bytes = full ? uint64_t{512} << 20 : uint64_t{256} << 20;
    if (o.gpu_count < 2) {
      items.push_back({{"id", "bw.device-device"}, {"kind", "p2p"}, {"na", "peer copies need two or more GPUs; this node has one"}});
    }
    for (bool bidir : {false, true}) {
      for (int s = 0; s < o.gpu_count; ++s) {
        for (int d = 0; d < o.gpu_count; ++d) {
          if (s == d) continue;
          items.push_back({{"id", fmt::format("bw.device-device.{}-{}{}", s, d, bidir ? ".bidir" : "")}, {"kind", "p2p"}, {"src", s}, {"dst", d},
                           {"bidir", bidir}, {"bytes", bytes}, {"iters", full ? 20 : 5},
                           {"bytes_moved", static_cast<double>(bytes) * (bidir ? 2 : 1)}});
        }
      }
    }
  } else if (suite == "launch") {
    items.push_back({{"id", "gpu.kernel-launch"}, {"kind", "launch"}, {"count", full ? 200000 : 20000}, {"wall", full ? 20000 : 2000}});
  } else {
    throw std::invalid_argument(fmt::format("unknown GPU suite '{}' (known: {})", suite, fmt::join(GpuSuites(), ", ")));
  }
  return items;
}

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
    json it = GemmItem(fmt::format("mamf.{}.{}.stage2", precision, Shape(m, n, k)), precision, m, n, k, 50, 100, 4, o);
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
  return {{"checked", n}, {"wrong", wrong}, {"max_rel_err", max_rel}, {"elem_limit", t.elem}, {"diff", diff},
          {"diff_limit", t.diff}, {"ok", n > 0 && wrong == 0 && diff <= t.diff}};
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
  return {{"count", s.size()}, {"median", median}, {"mean", mean}, {"min", s.front()}, {"max", s.back()}, {"p99", s[p99]},
          {"cv", mean > 0 ? sd / mean : 0.0}};
}

}  // namespace clustermax::bench
