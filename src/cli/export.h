// Exports of audit reports and benchmark results for other tools: Prometheus text (stdout or a
// node_exporter textfile), JUnit XML and SARIF 2.1.0. `audit --format/--textfile` uses them for
// the audit it just ran; `clustermax export RUN_DIR` for a saved run and its bench/*.json.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::cli {

// "prometheus", "junit" or "sarif"; the text ends with a newline.
std::string RenderExport(const std::string& format, const nlohmann::json& report,
                         const std::vector<nlohmann::json>& benches);

// A node_exporter textfile: the name must end in .prom (the collector reads nothing else) and its
// directory must exist. Written atomically (a temporary name the collector ignores, fsync, rename)
// with mode 0644: node_exporter runs as its own user and must read it; it holds statuses, no
// evidence text.
void WriteTextfile(const std::filesystem::path& path, const std::string& text);

}  // namespace clustermax::cli
