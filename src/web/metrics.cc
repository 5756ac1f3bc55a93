#include "web/metrics.h"

#include <set>
#include <utility>

#include "report/prometheus.h"
#include "store/store.h"

namespace clustermax::web {
namespace {
using nlohmann::json;

std::string Text(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}
}  // namespace

std::string MetricsFromRuns(const json& latest, const json& ratings, size_t stored_runs) {
  report::PromWriter w;
  w.Family("clustermax_store_runs", "Runs and ratings in the results store.");
  w.Add("clustermax_store_runs", {}, static_cast<double>(stored_runs));
  w.Family("clustermax_store_runs_exported",
           "Stored runs whose series this page holds (the newest run of each provider and cluster, bounded).");
  w.Add("clustermax_store_runs_exported", {}, static_cast<double>(latest.size()));
  for (const auto& run : latest) {
    report::PromOptions o;
    o.base = {{"provider", Text(run, "provider")}, {"cluster", Text(run, "cluster")}};
    o.bench_detail = false;
    o.max_node_series = kMetricsNodeSeriesPerRun;
    const json& docs = run.contains("documents") ? run["documents"] : json::object();
    if (docs.contains("report.json")) report::AddAuditMetrics(w, docs["report.json"], o);
    for (const auto& [name, doc] : docs.items()) {
      if (name.rfind("bench/", 0) == 0) report::AddBenchMetrics(w, doc, o);
    }
  }
  if (!ratings.empty()) {
    w.Family("clustermax_rating_tier", "Tier of the newest rating of a provider and cluster: 1 for the tier it has.");
    w.Family("clustermax_rating_score_ratio", "Overall score of the newest rating of a provider and cluster, 0 to 1.");
  }
  for (const auto& r : ratings) {
    report::PromLabels l = {{"provider", Text(r, "provider")}, {"cluster", Text(r, "cluster")}};
    report::PromLabels tl = l;
    tl.emplace_back("tier", Text(r, "tier"));
    w.Add("clustermax_rating_tier", tl, 1);
    if (r.contains("summary") && r["summary"].is_object() && r["summary"].contains("score") &&
        r["summary"]["score"].is_number()) {
      w.Add("clustermax_rating_score_ratio", l, r["summary"]["score"].get<double>());
    }
  }
  return w.Render();
}

Health CheckHealth(const std::filesystem::path& db, std::string* why) {
  try {
    store::Store s = store::Store::OpenReadOnly(db);
    s.SchemaVersion();
    return {200, "ok\n"};
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return {503, "unavailable\n"};
  }
}

std::string StoreMetrics(const store::Store& s) {
  json runs = s.List();  // newest first
  std::set<std::pair<std::string, std::string>> seen_runs, seen_ratings;
  json latest = json::array(), ratings = json::array();
  for (const auto& r : runs) {
    auto key = std::make_pair(Text(r, "provider"), Text(r, "cluster"));
    if (Text(r, "kind") == "rating") {
      if (seen_ratings.insert(key).second && ratings.size() < kMetricsRunsPerPage) ratings.push_back(r);
      continue;
    }
    if (latest.size() >= kMetricsRunsPerPage || !seen_runs.insert(key).second) continue;
    json shown = s.Show(r["id"].get<int64_t>());
    if (!shown.is_null()) latest.push_back(std::move(shown));
  }
  return MetricsFromRuns(latest, ratings, runs.size());
}

}  // namespace clustermax::web
