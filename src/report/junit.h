// JUnit XML of an audit report (report.json, docs/report-schema.md), for CI systems (Jenkins,
// GitLab, GitHub test reporters): one <testsuite> per node, one <testcase> per check on that node
// (classname "<node>.<category>", name the check id). FAIL is a <failure>, WARN a passing test
// with <properties> and <system-out>, SKIP a <skipped>. Written with pugixml; every string from a
// machine is valid UTF-8 without control characters first (XML 1.0 cannot carry them).
// Mapping in docs/exports.md.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace clustermax::report {

std::string RenderJUnit(const nlohmann::json& report);

// Text XML 1.0 can carry: invalid UTF-8 as U+FFFD, control characters (but tab and, when
// `keep_newlines`, newline) as visible escapes, U+FFFE and U+FFFF as U+FFFD.
std::string XmlSafeText(std::string_view s, bool keep_newlines = false);

}  // namespace clustermax::report
