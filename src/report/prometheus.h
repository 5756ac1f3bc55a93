// Prometheus text exposition (format 0.0.4) of audit reports and benchmark results: every check
// status and every benchmark figure, in base units (docs/exports.md lists the families).
// Pure: JSON documents in (report.json, docs/report-schema.md; bench/*.json, docs/bench-schema.md),
// text out. Label values from machines (host names, check messages never) are made safe: invalid
// UTF-8 becomes U+FFFD, control characters visible escapes, then backslash, quote and newline are
// escaped as the format requires. One HELP and TYPE per family, no series twice.
#pragma once
#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::report {

// Ordered label pairs of one series.
using PromLabels = std::vector<std::pair<std::string, std::string>>;

// A label value as the exposition format writes it between quotes.
std::string PromEscapeLabelValue(std::string_view v);

// Collects metric families in the order they are first used, then renders them.
class PromWriter {
 public:
  // Declares a family (name, gauge, help). Declaring again is a no-op; the first help wins.
  void Family(const std::string& name, const std::string& help, const std::string& type = "gauge");
  // One sample; a series (name and labels) already written is dropped and counted in Duplicates().
  // The family must have been declared.
  void Add(const std::string& name, PromLabels labels, double value);
  std::string Render() const;
  size_t Series() const { return series_; }
  size_t Duplicates() const { return duplicates_; }

 private:
  struct Fam {
    std::string help, type;
    std::vector<std::string> lines;
  };
  std::vector<std::string> order_;
  std::map<std::string, Fam> families_;
  std::set<std::string> seen_;
  size_t series_ = 0, duplicates_ = 0;
};

struct PromOptions {
  // Labels put first on every series (serve: provider and cluster of the stored run).
  PromLabels base;
  // Every raw benchmark figure (storage workloads, S3 transfers, per-GPU items); off: the graded
  // figures only (serve keeps its cardinality bounded this way).
  bool bench_detail = true;
  // At most this many per-node check series per report (0: no limit). Over it, the non-PASS
  // findings are kept first and the number left out is exported.
  size_t max_node_series = 0;
};

// The series of one audit report (report.json).
void AddAuditMetrics(PromWriter& w, const nlohmann::json& report, const PromOptions& o);
// The series of one benchmark result (bench/gpu.json, storage.json, s3.json, storage-scaling).
void AddBenchMetrics(PromWriter& w, const nlohmann::json& bench, const PromOptions& o);
// A report (may be null) and benchmark results as one exposition document.
std::string RenderPrometheus(const nlohmann::json& report, const std::vector<nlohmann::json>& benches,
                             const PromOptions& o = {});

// A benchmark unit ("GB/s", "TFLOPS", "ms", "%") as the suffix of a metric name in base units and
// the factor to it ("bytes_per_second", 1e9). An unknown unit gives {"", 1}.
std::pair<std::string, double> PromBaseUnit(std::string_view unit);

}  // namespace clustermax::report
