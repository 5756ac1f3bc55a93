// The dashboard's views as self-contained HTML: inline CSS, charts as inline SVG, a few lines of
// inline script for the findings filter, nothing fetched from the network. The same functions
// build the static page (`clustermax report --html`) and the pages of `clustermax serve`. Every
// string from evidence passes through Escape(): a hostname like <img src=x onerror=...> is shown,
// never run.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::web {

std::string Escape(std::string_view s);

// A whole page: <!doctype html>, the stylesheet, a header with `nav` links, the body.
std::string Document(const std::string& title, const std::string& body, const std::string& nav = "");

// How a section links to another view ("rating", "12"), ("run", "12"), ("diff", "3/7"): "" for
// no link (a static page has no server behind it).
using LinkFn = std::function<std::string(const std::string& kind, const std::string& arg)>;

// Providers by tier with a podium of the first three (rows of store::Store::Leaderboard()).
std::string Leaderboard(const nlohmann::json& board, const LinkFn& link);
// A rating (clustermax rate --json): tier, what decided it, category scores, gates, fixes, unknowns.
std::string Scorecard(const nlohmann::json& rating);
// An audit report: summary and findings with status/category/text filters; the node-by-check
// heat map when it is a fleet audit.
std::string Findings(const nlohmann::json& report, const std::string& anchor);
std::string FleetMatrix(const nlohmann::json& report);
// A benchmark result (gpu, storage, s3): grades and charts.
std::string Benchmark(const nlohmann::json& bench);
// Stored runs, newest first, and the difference of two runs.
std::string History(const nlohmann::json& runs, const LinkFn& link);
// (older, newer) run ids of each run and the run before it of the same provider and cluster.
std::vector<std::pair<int64_t, int64_t>> DiffPairs(const nlohmann::json& runs);
std::string DiffView(const nlohmann::json& diff, const std::string& anchor = "diff");

}  // namespace clustermax::web
