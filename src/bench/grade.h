// Benchmark grading: the bars in data/bench-thresholds.json (embedded, overridable), applied to
// metric values taken from a benchmark result. PASS at or beyond 'pass', WARN at or beyond 'warn',
// FAIL otherwise; a metric the run did not produce is SKIP with the reason, never a PASS; a
// fail_reason is FAIL whatever the bars, with or without a value (a step that failed before giving
// a figure).
#pragma once
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::bench {

// v rounded to `digits` decimals, as results print their figures.
inline double RoundTo(double v, int digits) {
  double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

struct MetricValue {
  std::string id;
  std::optional<double> value;  // nullopt: not measured
  std::string why_missing;      // when value is nullopt
  std::string detail;           // which workload or phase the value came from
  std::string fail_reason;      // set: FAIL whatever the bars (e.g. every GET failed), and why
};

const nlohmann::json& EmbeddedBenchThresholds();
// Throws std::runtime_error naming the file and the problem.
nlohmann::json ParseBenchThresholds(const std::string& text, const std::string& origin);

// One grade per value: {"metric", "title", "value", "unit", "verdict", "pass", "warn", "source",
// "detail" | "reason"}. Unknown metric ids throw (a programming error, caught by tests).
nlohmann::json Grade(const std::vector<MetricValue>& values, const nlohmann::json& thresholds);
// Worst verdict over grades ("FAIL" > "WARN" > "PASS" > "SKIP"); "SKIP" when empty.
std::string WorstVerdict(const nlohmann::json& grades);

// The metric values of a `bench storage` and a `bench s3` result.
std::vector<MetricValue> StorageMetrics(const nlohmann::json& result);
std::vector<MetricValue> S3Metrics(const nlohmann::json& result);

}  // namespace clustermax::bench
