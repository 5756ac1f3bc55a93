// SARIF 2.1.0 of an audit report (report.json, docs/report-schema.md): one run whose driver has one
// rule per check, and one result per check per node. FAIL is level "error", WARN "warning" (both
// kind "fail"); PASS is kind "pass" and SKIP kind "notApplicable" (level "none"), so a consumer
// sees what was checked, not only what failed. The node is a logical location (kind "resource");
// observed, expected, reason, severity and details are the result's properties.
// Mapping in docs/exports.md.
#pragma once
#include <nlohmann/json.hpp>

#include "core/check.h"

namespace clustermax::report {

// `registry` (may be null) adds each rule's rationale, remediation and reference links.
nlohmann::json ToSarif(const nlohmann::json& report, const core::Registry* registry = nullptr);

}  // namespace clustermax::report
