#include "bench/grade.h"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "core/finding.h"

namespace clustermax::embedded {
extern const std::string_view kBenchThresholdsJson;
}

namespace clustermax::bench {
using nlohmann::json;

namespace {}  // namespace

json ParseBenchThresholds(const std::string& text, const std::string& origin) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw std::runtime_error(fmt::format("{}: not valid JSON: {}", origin, e.what()));
  }
  if (!j.contains("metrics") || !j["metrics"].is_array()) throw std::runtime_error(origin + ": no 'metrics' array");
  for (const auto& m : j["metrics"]) {
    for (const char* k : {"id", "unit", "better", "source"}) {
      if (!m.contains(k) || !m[k].is_string())
        throw std::runtime_error(fmt::format("{}: a metric lacks the string '{}'", origin, k));
    }
    if (!m.contains("pass") || !m["pass"].is_number() || !m.contains("warn") || !m["warn"].is_number()) {
      throw std::runtime_error(
          fmt::format("{}: metric {} needs numeric 'pass' and 'warn'", origin, m["id"].get<std::string>()));
    }
    std::string better = m["better"];
    double pass = m["pass"], warn = m["warn"];
    if (better != "higher" && better != "lower")
      throw std::runtime_error(
          fmt::format("{}: metric {}: 'better' is higher or lower", origin, m["id"].get<std::string>()));
    if ((better == "higher" && warn > pass) || (better == "lower" && warn < pass)) {
      throw std::runtime_error(
          fmt::format("{}: metric {}: the warn bar lies beyond the pass bar", origin, m["id"].get<std::string>()));
    }
  }
  return j;
}

const json& EmbeddedBenchThresholds() {
  static const json j =
      ParseBenchThresholds(std::string(embedded::kBenchThresholdsJson), "data/bench-thresholds.json (embedded)");
  return j;
}

json Grade(const std::vector<MetricValue>& values, const json& thresholds) {
  json out = json::array();
  for (const auto& v : values) {
    const json* bar = nullptr;
    for (const auto& m : thresholds["metrics"]) {
      if (m["id"] == v.id) bar = &m;
    }
    if (!bar) throw std::logic_error("no threshold for benchmark metric " + v.id);
    json g = {{"metric", v.id},
              {"title", bar->value("title", v.id)},
              {"unit", (*bar)["unit"]},
              {"pass", (*bar)["pass"]},
              {"warn", (*bar)["warn"]},
              {"better", (*bar)["better"]},
              {"source", (*bar)["source"]}};
    if (!v.value && !v.fail_reason.empty()) {
      // Failed before giving a figure (a step's error, a fault never detected): FAIL, not SKIP.
      g["verdict"] = "FAIL";
      g["reason"] = v.fail_reason;
    } else if (!v.value) {
      g["verdict"] = "SKIP";
      g["reason"] = v.why_missing;
    } else {
      double x = *v.value, pass = (*bar)["pass"], warn = (*bar)["warn"];
      bool higher = (*bar)["better"] == "higher";
      auto meets = [&](double bar_value) { return higher ? x >= bar_value : x <= bar_value; };
      g["value"] = RoundTo(x, 4);
      g["verdict"] = !v.fail_reason.empty() ? "FAIL" : meets(pass) ? "PASS" : meets(warn) ? "WARN" : "FAIL";
      std::string detail = v.fail_reason.empty() ? v.detail
                           : v.detail.empty()    ? v.fail_reason
                                                 : v.fail_reason + "; " + v.detail;
      if (!detail.empty()) g["detail"] = detail;
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::string WorstVerdict(const json& grades) {
  core::Verdict worst = core::Verdict::kSkip;
  for (const auto& g : grades) {
    core::Verdict v = core::VerdictFromString(g["verdict"].get<std::string>());
    if (core::Rank(v) > core::Rank(worst)) worst = v;
  }
  return std::string(core::ToString(worst));
}

namespace {
// The best "ok" workload among ids, in GB/s.
MetricValue BestBandwidth(const json& r, const std::string& metric, const std::vector<std::string>& ids) {
  MetricValue m{metric, std::nullopt, "not run", ""};
  if (!r.contains("workloads")) return m;
  std::vector<std::string> why;
  for (const auto& w : r["workloads"]) {
    if (std::find(ids.begin(), ids.end(), w["id"].get<std::string>()) == ids.end()) continue;
    if (w["status"] != "ok") {
      why.push_back(
          fmt::format("{}: {}", w["id"].get<std::string>(), w.value("reason", w["status"].get<std::string>())));
      continue;
    }
    double gbps = w["bw_bytes_per_s"].get<double>() / 1e9;
    if (!m.value || gbps > *m.value) m.value = gbps, m.detail = w["id"];
  }
  if (!m.value && !why.empty()) m.why_missing = fmt::format("{}", fmt::join(why, "; "));
  return m;
}
}  // namespace

std::vector<MetricValue> StorageMetrics(const json& r) {
  std::vector<MetricValue> out;
  // Buffered workloads over data that fits in the page cache measure memory, not storage.
  bool cached = r.contains("options") && r["options"].value("fits_in_page_cache", false);
  auto ids = [&](const char* direct, const char* buffered) {
    return cached ? std::vector<std::string>{direct} : std::vector<std::string>{direct, buffered};
  };
  out.push_back(BestBandwidth(r, "storage.seq-read", ids("seq-read-1m-direct", "seq-read-1m-buffered")));
  out.push_back(BestBandwidth(r, "storage.seq-write", ids("seq-write-1m-direct", "seq-write-1m-buffered")));
  auto ckpt = [&](const char* metric, const char* key) {
    MetricValue m{metric, std::nullopt, "not run", ""};
    if (r.contains("checkpoint")) {
      const json& c = r["checkpoint"];
      if (c.contains(key)) {
        m.value = c[key].get<double>();
        m.detail = fmt::format("{} ranks x {} shards, mean of {} run(s)", c["ranks"].get<int>(),
                               c["shards_per_rank"].get<int>(), c["runs"].size());
      } else {
        m.why_missing = c.value("reason", c["status"].get<std::string>());
      }
    }
    return m;
  };
  out.push_back(ckpt("storage.checkpoint-write", "write_gbps_mean"));
  out.push_back(ckpt("storage.checkpoint-read", "read_gbps_mean"));
  MetricValue open{"storage.small-file-open", std::nullopt, "not run", ""};
  MetricValue rate{"storage.small-file-rate", std::nullopt, "not run", ""};
  if (r.contains("metadata")) {
    const json& md = r["metadata"];
    bool found = false;
    for (const auto& p : md["phases"]) {
      if (p["id"] != "open-read") continue;
      found = true;
      open.value = p["latency"]["p50_us"].get<double>() / 1000.0;
      open.detail = fmt::format("{} files of {} bytes, {}", p["ops"].get<uint64_t>(), md["file_bytes"].get<uint64_t>(),
                                md["cache"].get<std::string>());
      rate.value = p["ops_per_s"].get<double>();
      rate.detail = fmt::format("{} threads", md["threads"].get<int>());
    }
    if (!found) open.why_missing = rate.why_missing = md.value("reason", md["status"].get<std::string>());
  }
  out.push_back(open);
  out.push_back(rate);
  return out;
}

std::vector<MetricValue> S3Metrics(const json& r) {
  std::vector<MetricValue> out;
  auto find = [&](const std::string& op, bool small) -> const json* {
    if (!r.contains("transfers")) return nullptr;
    const json* best = nullptr;
    for (const auto& t : r["transfers"]) {
      if (t["op"] != op || t["status"] != "ok") continue;
      if (t["small"].get<bool>() != small) continue;
      // Small objects: the single-stream latency row; large: the highest aggregate throughput.
      if (!best)
        best = &t;
      else if (small && t["concurrency"].get<int>() < (*best)["concurrency"].get<int>())
        best = &t;
      else if (!small && t["aggregate_gbps"].get<double>() > (*best)["aggregate_gbps"].get<double>())
        best = &t;
    }
    return best;
  };
  auto latency = [&](const char* metric, const char* op) {
    MetricValue m{metric, std::nullopt, "no successful small-object run", ""};
    if (const json* t = find(op, true)) {
      m.value = (*t)["latency"]["p99_us"].get<double>() / 1000.0;
      m.detail = fmt::format("{} objects of {} bytes, {} stream(s)", (*t)["ops"].get<uint64_t>(),
                             (*t)["object_bytes"].get<uint64_t>(), (*t)["concurrency"].get<int>());
    }
    return m;
  };
  auto throughput = [&](const char* metric, const char* op) {
    MetricValue m{metric, std::nullopt, "no successful large-object run", ""};
    if (const json* t = find(op, false)) {
      m.value = (*t)["aggregate_gbps"].get<double>();
      m.detail = fmt::format("objects of {} bytes, {} stream(s)", (*t)["object_bytes"].get<uint64_t>(),
                             (*t)["concurrency"].get<int>());
    }
    return m;
  };
  out.push_back(latency("s3.get-small-p99", "GET"));
  out.push_back(latency("s3.put-small-p99", "PUT"));
  out.push_back(throughput("s3.get-large", "GET"));
  out.push_back(throughput("s3.put-large", "PUT"));
  // The error rate of each kind of operation on its own; the grade is the worst kind's, and a
  // kind whose every operation failed is FAIL whatever the bars.
  MetricValue err{"s3.error-rate", std::nullopt, "no requests", ""};
  if (r.contains("requests") && r["requests"].contains("by_op")) {
    const json& q = r["requests"];
    std::string worst, all_failed;
    std::vector<std::string> kinds;
    for (const auto& [kind, k] : q["by_op"].items()) {
      uint64_t total = k["total"].get<uint64_t>(), failed = k["failed"].get<uint64_t>();
      if (total == 0) continue;
      double pct = 100.0 * static_cast<double>(failed) / static_cast<double>(total);
      kinds.push_back(fmt::format("{} {} of {}", kind, failed, total));
      if (!err.value || pct > *err.value) err.value = pct, worst = kind;
      if (failed == total && all_failed.empty()) all_failed = kind;
    }
    if (err.value) {
      err.detail = fmt::format("worst: {}; failed after retries: {}; {} retries", worst, fmt::join(kinds, ", "),
                               q["retries"].get<uint64_t>());
      if (!all_failed.empty()) err.fail_reason = fmt::format("every {} request failed", all_failed);
    }
  }
  out.push_back(err);
  return out;
}

}  // namespace clustermax::bench
