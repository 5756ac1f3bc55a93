#include "report/prometheus.h"

#include <cmath>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "util/strings.h"
#include "util/time.h"

namespace clustermax::report {
namespace {

using nlohmann::json;

const char* const kStatuses[] = {"PASS", "WARN", "FAIL", "SKIP"};

std::string Str(const json& j, const char* key, const std::string& def = "") {
  if (!j.is_object() || !j.contains(key)) return def;
  const json& v = j[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number()) return fmt::format("{}", v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return def;
}

bool Num(const json& j, const char* key, double& out) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return false;
  out = j[key].get<double>();
  return true;
}

// Go's ParseFloat reads every value written here: shortest round-trip form, NaN, +Inf, -Inf.
std::string Value(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

std::string HelpEscape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

PromLabels With(const PromOptions& o, PromLabels more) {
  PromLabels l = o.base;
  for (auto& p : more) l.push_back(std::move(p));
  return l;
}

// The suite of a benchmark result: "clustermax.bench.storage" -> "storage".
std::string Suite(const json& bench) {
  std::string kind = Str(bench, "kind");
  const std::string prefix = "clustermax.bench.";
  return kind.rfind(prefix, 0) == 0 ? kind.substr(prefix.size()) : kind;
}

double EpochSeconds(const std::string& rfc3339) {
  auto t = util::ParseRfc3339(rfc3339);
  if (!t) return NAN;
  return std::chrono::duration<double>(t->time_since_epoch()).count();
}

// Latency blocks ({count, mean_us, p50_us, ...}) as one gauge per quantile, in seconds.
void AddLatency(PromWriter& w, const std::string& family, const std::string& help, const PromLabels& labels,
                const json& lat) {
  if (!lat.is_object()) return;
  static const std::pair<const char*, const char*> kQuantiles[] = {{"min_us", "0"},       {"p50_us", "0.5"},
                                                                   {"p90_us", "0.9"},     {"p99_us", "0.99"},
                                                                   {"p99_9_us", "0.999"}, {"max_us", "1"}};
  w.Family(family, help);
  for (const auto& [key, q] : kQuantiles) {
    double v;
    if (!Num(lat, key, v)) continue;
    PromLabels l = labels;
    l.emplace_back("quantile", q);
    w.Add(family, std::move(l), v * 1e-6);
  }
}

void AddGrades(PromWriter& w, const json& bench, const PromLabels& labels) {
  if (!bench.contains("grades") || !bench["grades"].is_array()) return;
  w.Family("clustermax_bench_grade_status",
           "Verdict of one graded benchmark figure: 1 for the verdict it has (status label PASS, WARN, FAIL or SKIP).");
  for (const auto& g : bench["grades"]) {
    std::string metric = Str(g, "metric");
    if (metric.empty()) continue;
    PromLabels l = labels;
    l.emplace_back("metric", metric);
    PromLabels sl = l;
    sl.emplace_back("status", Str(g, "verdict", "SKIP"));
    w.Add("clustermax_bench_grade_status", sl, 1);
    std::string unit = Str(g, "unit");
    auto [suffix, factor] = PromBaseUnit(unit);
    std::string tail = suffix.empty() ? std::string() : "_" + suffix;
    std::string fam = "clustermax_bench_grade" + (suffix.empty() ? std::string("_value") : tail);
    std::string what =
        suffix.empty() ? "in the unit named by the unit label (not a known unit)" : "in base units (" + suffix + ")";
    PromLabels vl = l;
    if (suffix.empty()) vl.emplace_back("unit", unit);
    for (const auto& [key, name, help] :
         {std::tuple{"value", fam,
                     "Graded benchmark figure, " + what + "; the value is the slowest GPU's or worst node's."},
          std::tuple{"pass", "clustermax_bench_grade_pass_threshold" + tail,
                     "Bar a graded benchmark figure must reach to PASS, " + what + "."},
          std::tuple{"warn", "clustermax_bench_grade_warn_threshold" + tail,
                     "Bar a graded benchmark figure must reach to WARN rather than FAIL, " + what + "."}}) {
      double v;
      if (!Num(g, key, v)) continue;
      w.Family(name, help);
      w.Add(name, vl, v * factor);
    }
  }
}

void AddStorageDetail(PromWriter& w, const json& b, const PromLabels& labels) {
  if (b.contains("workloads") && b["workloads"].is_array()) {
    w.Family("clustermax_storage_workload_throughput_bytes_per_second",
             "Storage benchmark workload throughput (bench storage), bytes per second.");
    w.Family("clustermax_storage_workload_operations_per_second",
             "Storage benchmark workload I/O operations per second (IOPS).");
    for (const auto& wl : b["workloads"]) {
      PromLabels l = labels;
      l.emplace_back("workload", Str(wl, "id"));
      double v;
      if (Num(wl, "bw_bytes_per_s", v)) w.Add("clustermax_storage_workload_throughput_bytes_per_second", l, v);
      if (Num(wl, "iops", v)) w.Add("clustermax_storage_workload_operations_per_second", l, v);
      if (wl.contains("latency")) {
        AddLatency(w, "clustermax_storage_workload_latency_seconds",
                   "Storage benchmark workload I/O latency quantile (0 min, 1 max), seconds.", l, wl["latency"]);
      }
    }
  }
  if (b.contains("checkpoint") && b["checkpoint"].is_object()) {
    w.Family("clustermax_storage_checkpoint_throughput_bytes_per_second",
             "Checkpoint save/load throughput, mean over runs of the slowest rank, bytes per second.");
    double v;
    PromLabels l = labels;
    l.emplace_back("direction", "write");
    if (Num(b["checkpoint"], "write_gbps_mean", v))
      w.Add("clustermax_storage_checkpoint_throughput_bytes_per_second", l, v * 1e9);
    l.back().second = "read";
    if (Num(b["checkpoint"], "read_gbps_mean", v))
      w.Add("clustermax_storage_checkpoint_throughput_bytes_per_second", l, v * 1e9);
  }
  if (b.contains("metadata") && b["metadata"].is_object() && b["metadata"].contains("phases") &&
      b["metadata"]["phases"].is_array()) {
    w.Family("clustermax_storage_metadata_operations_per_second",
             "Small-file metadata benchmark phase rate, operations per second.");
    for (const auto& p : b["metadata"]["phases"]) {
      PromLabels l = labels;
      l.emplace_back("phase", Str(p, "id"));
      double v;
      if (Num(p, "ops_per_s", v)) w.Add("clustermax_storage_metadata_operations_per_second", l, v);
      if (p.contains("latency")) {
        AddLatency(w, "clustermax_storage_metadata_latency_seconds",
                   "Small-file metadata operation latency quantile (0 min, 1 max), seconds.", l, p["latency"]);
      }
    }
  }
}

void AddS3Detail(PromWriter& w, const json& b, const PromLabels& labels) {
  if (b.contains("transfers") && b["transfers"].is_array()) {
    w.Family("clustermax_s3_transfer_throughput_bytes_per_second",
             "S3 benchmark transfer row aggregate throughput, bytes per second.");
    w.Family("clustermax_s3_transfer_operations_per_second", "S3 benchmark transfer row requests per second.");
    for (const auto& t : b["transfers"]) {
      PromLabels l = labels;
      l.emplace_back("op", Str(t, "op"));
      l.emplace_back("object_bytes", Str(t, "object_bytes"));
      l.emplace_back("concurrency", Str(t, "concurrency"));
      double v;
      if (Num(t, "aggregate_gbps", v)) w.Add("clustermax_s3_transfer_throughput_bytes_per_second", l, v * 1e9);
      if (Num(t, "ops_per_s", v)) w.Add("clustermax_s3_transfer_operations_per_second", l, v);
      if (t.contains("latency")) {
        AddLatency(w, "clustermax_s3_transfer_latency_seconds",
                   "S3 request latency quantile per transfer row, retries included (0 min, 1 max), seconds.", l,
                   t["latency"]);
      }
    }
  }
  if (b.contains("requests") && b["requests"].is_object()) {
    w.Family(
        "clustermax_s3_requests",
        "S3 requests of one benchmark run by outcome (total, failed after retries, retries, throttled); a gauge: one run's count.");
    for (const char* k : {"total", "failed", "retries", "throttled"}) {
      double v;
      PromLabels l = labels;
      l.emplace_back("outcome", k);
      if (Num(b["requests"], k, v)) w.Add("clustermax_s3_requests", l, v);
    }
  }
}

void AddGpuDetail(PromWriter& w, const json& b, const PromLabels& labels) {
  if (!b.contains("suites") || !b["suites"].is_object()) return;
  for (const auto& [suite, s] : b["suites"].items()) {
    if (!s.is_object() || !s.contains("items") || !s["items"].is_array()) continue;
    for (const auto& item : s["items"]) {
      if (!item.contains("gpus") || !item["gpus"].is_array()) continue;
      for (const auto& g : item["gpus"]) {
        if (Str(g, "status") != "ok") continue;
        PromLabels l = labels;
        l.emplace_back("gpu_suite", suite);
        l.emplace_back("item", Str(item, "id"));
        l.emplace_back("gpu", Str(g, "gpu"));
        double v;
        if (Num(g, "tflops", v)) {
          w.Family("clustermax_gpu_bench_flops",
                   "GPU benchmark item throughput from the median time, floating-point operations per second.");
          w.Add("clustermax_gpu_bench_flops", l, v * 1e12);
        }
        if (Num(g, "gbps", v)) {
          w.Family("clustermax_gpu_bench_throughput_bytes_per_second",
                   "GPU benchmark item bytes read plus written per second (median time).");
          w.Add("clustermax_gpu_bench_throughput_bytes_per_second", l, v * 1e9);
        }
        if (g.contains("time_ms") && Num(g["time_ms"], "median", v)) {
          w.Family("clustermax_gpu_bench_time_seconds", "GPU benchmark item median time of one timed call, seconds.");
          w.Add("clustermax_gpu_bench_time_seconds", l, v * 1e-3);
        }
      }
    }
  }
}

}  // namespace

std::string PromEscapeLabelValue(std::string_view v) {
  // Visible escapes for control characters and U+FFFD for invalid UTF-8 first (no raw newline or
  // NUL survives), then the format's own escapes.
  std::string safe = util::EscapeControls(v);
  std::string out;
  out.reserve(safe.size());
  for (char c : safe) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

void PromWriter::Family(const std::string& name, const std::string& help, const std::string& type) {
  if (families_.count(name)) return;
  families_[name] = Fam{help, type, {}};
  order_.push_back(name);
}

void PromWriter::Add(const std::string& name, PromLabels labels, double value) {
  auto it = families_.find(name);
  if (it == families_.end()) throw std::logic_error("metric family not declared: " + name);
  std::string series = name;
  if (!labels.empty()) {
    series += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) series += ',';
      series += labels[i].first + "=\"" + PromEscapeLabelValue(labels[i].second) + '"';
    }
    series += '}';
  }
  if (!seen_.insert(series).second) {
    ++duplicates_;
    return;
  }
  ++series_;
  it->second.lines.push_back(series + ' ' + Value(value));
}

std::string PromWriter::Render() const {
  std::string out;
  for (const auto& name : order_) {
    const Fam& f = families_.at(name);
    if (f.lines.empty()) continue;  // a family with no sample is left out whole
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, HelpEscape(f.help), name, f.type);
    for (const auto& l : f.lines) out += l + '\n';
  }
  return out;
}

std::pair<std::string, double> PromBaseUnit(std::string_view unit) {
  static const std::map<std::string, std::pair<std::string, double>, std::less<>> kUnits = {
      {"GB/s", {"bytes_per_second", 1e9}},
      {"MB/s", {"bytes_per_second", 1e6}},
      {"B/s", {"bytes_per_second", 1}},
      {"bytes/s", {"bytes_per_second", 1}},
      {"TFLOPS", {"flops", 1e12}},
      {"GFLOPS", {"flops", 1e9}},
      {"s", {"seconds", 1}},
      {"ms", {"seconds", 1e-3}},
      {"us", {"seconds", 1e-6}},
      {"ns", {"seconds", 1e-9}},
      {"%", {"ratio", 0.01}},
      {"x", {"ratio", 1}},
      {"files/s", {"files_per_second", 1}},
      {"ops/s", {"operations_per_second", 1}},
      {"results", {"results", 1}},
      {"bytes", {"bytes", 1}},
      {"GB", {"bytes", 1e9}},
      {"GiB", {"bytes", 1073741824.0}}};
  auto it = kUnits.find(unit);
  if (it == kUnits.end()) return {"", 1};
  return it->second;
}

void AddAuditMetrics(PromWriter& w, const json& r, const PromOptions& o) {
  if (!r.is_object()) return;
  w.Family("clustermax_audit_info", "Audit run: tool version, target and mode as labels; always 1.");
  w.Add("clustermax_audit_info",
        With(o, {{"version", Str(r.is_object() && r.contains("tool") ? r["tool"] : json(), "version")},
                 {"target", Str(r, "target")},
                 {"mode", Str(r, "mode")}}),
        1);
  double ts = EpochSeconds(Str(r, "collected_at"));
  if (!std::isnan(ts)) {
    w.Family("clustermax_audit_timestamp_seconds",
             "When the audit's evidence was collected (the judges' now), Unix time in seconds.");
    w.Add("clustermax_audit_timestamp_seconds", With(o, {}), ts);
  }
  if (r.contains("nodes") && r["nodes"].is_array()) {
    w.Family("clustermax_audit_nodes", "Nodes whose evidence the audit judged.");
    w.Add("clustermax_audit_nodes", With(o, {}), static_cast<double>(r["nodes"].size()));
  }
  if (r.contains("summary") && r["summary"].is_object()) {
    w.Family("clustermax_audit_checks", "Checks of the audit by rolled-up status (FAIL if any node fails).");
    for (const char* s : kStatuses) {
      double v = 0;
      Num(r["summary"], util::ToLower(s).c_str(), v);
      w.Add("clustermax_audit_checks", With(o, {{"status", s}}), v);
    }
  }
  if (r.contains("fleet") && r["fleet"].is_object()) {
    const json& f = r["fleet"];
    w.Family("clustermax_fleet_nodes",
             "Fleet audit nodes: in scope (expected), returned evidence (returned), unreachable.");
    double v;
    if (Num(f, "nodes_expected", v)) w.Add("clustermax_fleet_nodes", With(o, {{"state", "expected"}}), v);
    if (Num(f, "nodes_returned", v)) w.Add("clustermax_fleet_nodes", With(o, {{"state", "returned"}}), v);
    if (f.contains("unreachable") && f["unreachable"].is_array()) {
      w.Add("clustermax_fleet_nodes", With(o, {{"state", "unreachable"}}),
            static_cast<double>(f["unreachable"].size()));
    }
  }
  if (!r.contains("results") || !r["results"].is_array()) return;
  w.Family("clustermax_check_rollup_status",
           "Check status rolled up over the audit's nodes (FAIL if any node fails): 1 for the status the check has.");
  w.Family("clustermax_check_status",
           "Check status on one node: 1 for the status the check has there (PASS, WARN, FAIL or SKIP).");
  std::string first_node;
  if (r.contains("nodes") && r["nodes"].is_array() && !r["nodes"].empty() && r["nodes"][0].is_string())
    first_node = r["nodes"][0].get<std::string>();
  // Per-node series, bounded: when there are more than max_node_series, the non-PASS ones first.
  struct Row {
    PromLabels labels;
    bool pass;
  };
  std::vector<Row> rows;
  for (const auto& res : r["results"]) {
    std::string id = Str(res, "id"), cat = Str(res, "category"), status = Str(res, "status", "SKIP");
    w.Add("clustermax_check_rollup_status", With(o, {{"check", id}, {"category", cat}, {"status", status}}), 1);
    const json nodes = res.contains("nodes") && res["nodes"].is_array() ? res["nodes"] : json::array();
    if (nodes.empty()) {
      rows.push_back(
          {With(o, {{"node", first_node}, {"check", id}, {"category", cat}, {"status", status}}), status == "PASS"});
    }
    for (const auto& n : nodes) {
      std::string ns = Str(n, "status", "SKIP");
      rows.push_back(
          {With(o, {{"node", Str(n, "node")}, {"check", id}, {"category", cat}, {"status", ns}}), ns == "PASS"});
    }
  }
  size_t limit = o.max_node_series == 0 ? rows.size() : o.max_node_series;
  size_t kept = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& row : rows) {
      if (row.pass != (pass == 1) || kept >= limit) continue;
      w.Add("clustermax_check_status", row.labels, 1);
      ++kept;
    }
  }
  if (o.max_node_series != 0) {
    w.Family("clustermax_export_node_series_omitted",
             "Per-node check series left out of this exposition to bound its size (PASS rows first).");
    w.Add("clustermax_export_node_series_omitted", With(o, {}), static_cast<double>(rows.size() - kept));
  }
}

void AddBenchMetrics(PromWriter& w, const json& b, const PromOptions& o) {
  if (!b.is_object()) return;
  std::string suite = Suite(b);
  PromLabels labels = With(o, {{"node", Str(b, "host")}, {"suite", suite}});
  w.Family("clustermax_bench_verdict",
           "Benchmark result verdict (worst grade; INCOMPLETE when interrupted): 1 for the verdict it has.");
  PromLabels vl = labels;
  vl.emplace_back("status", Str(b, "verdict", Str(b, "status", "SKIP")));
  w.Add("clustermax_bench_verdict", vl, 1);
  double v = EpochSeconds(Str(b, "started"));
  if (!std::isnan(v)) {
    w.Family("clustermax_bench_timestamp_seconds", "When the benchmark started, Unix time in seconds.");
    w.Add("clustermax_bench_timestamp_seconds", labels, v);
  }
  if (Num(b, "seconds", v)) {
    w.Family("clustermax_bench_duration_seconds", "Wall time of the whole benchmark run, seconds.");
    w.Add("clustermax_bench_duration_seconds", labels, v);
  }
  AddGrades(w, b, labels);
  if (!o.bench_detail) return;
  if (suite == "storage") AddStorageDetail(w, b, labels);
  if (suite == "s3") AddS3Detail(w, b, labels);
  if (suite == "gpu") AddGpuDetail(w, b, labels);
}

std::string RenderPrometheus(const json& report, const std::vector<json>& benches, const PromOptions& o) {
  PromWriter w;
  AddAuditMetrics(w, report, o);
  for (const auto& b : benches) AddBenchMetrics(w, b, o);
  return w.Render();
}

}  // namespace clustermax::report
