// The Prometheus page of `clustermax serve` (/metrics): the newest audit run of each provider and
// cluster in the store, with its benchmarks' graded figures, and the newest rating's tier. The
// cardinality is bounded: at most kMetricsRunsPerPage runs, graded benchmark figures only, at most
// kMetricsNodeSeriesPerRun per-node check series per run (non-PASS first). Families in
// docs/exports.md.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace clustermax::store {
class Store;
}

namespace clustermax::web {

inline constexpr size_t kMetricsRunsPerPage = 64;
inline constexpr size_t kMetricsNodeSeriesPerRun = 4096;

// Pure: `latest` holds stored runs as store::Store::Show returns them (documents included).
std::string MetricsFromRuns(const nlohmann::json& latest, const nlohmann::json& ratings, size_t stored_runs);
// Reads the store: the newest run and rating per provider and cluster.
std::string StoreMetrics(const store::Store& s);

// /healthz: 200 "ok" when the store at `db` opens for reading, else 503 (the reason in *why, for
// serve's log, not for the client).
struct Health {
  int status;
  std::string body;
};
Health CheckHealth(const std::filesystem::path& db, std::string* why = nullptr);

// The content type of the text exposition format.
inline constexpr const char* kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace clustermax::web
