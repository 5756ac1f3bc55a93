// Renderers of an audit report: terminal text (verbosity 0-3, optional colour), JSON
// (schema in docs/report-schema.md) and the Markdown check catalogue (docs/checks.md).
#pragma once
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "audit/engine.h"
#include "core/check.h"

namespace clustermax::report {

struct TextOptions {
  int verbosity = 0;  // 0 summary of non-passing checks; 1 every check with observed/expected/link;
                      // 2 adds references (CVE, advisory) and per-node evidence detail;
                      // 3 adds rationale, reproduce command and remediation
  bool color = false;
};

std::string RenderText(const audit::Report& r, const TextOptions& o);
nlohmann::json ToJson(const audit::Report& r);

// The same bytes as RenderText(r, o) and util::JsonText(ToJson(r)), handed to `out` piece by piece
// without building the document: a 10,000-node fleet report holds a million per-node findings.
using Sink = std::function<void(std::string_view)>;
void WriteText(const audit::Report& r, const TextOptions& o, const Sink& out);
void WriteJson(const audit::Report& r, const Sink& out);
std::string RenderChecksMarkdown(const core::Registry& registry);
std::string RenderCheckDescription(const core::CheckInfo& info);

}  // namespace clustermax::report
