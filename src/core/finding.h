// Finding: the verdict of one check on one node. A finding is plain data: status, reason
// code, severity, observed and expected values, and per-item detail lines.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::core {

enum class Verdict { kPass, kWarn, kFail, kSkip };

// Reason codes (docs/checks.md, "Reason codes"). Every WARN and SKIP carries one.
enum class Reason {
  kNone,
  kNotInScope,           // SKIP: target not in the check's target list
  kNotApplicable,        // SKIP: evidence proves the property cannot apply
  kProbeDisabled,        // SKIP: needs an active probe that was not requested
  kPrerequisiteMissing,  // SKIP: a prerequisite component is absent
  kUnverified,           // SKIP/WARN: this vantage point cannot see the evidence
  kEvidenceError,        // WARN: a read failed (permission, timeout, missing tool, unparsable)
  kAttestationRequired,  // WARN: only the provider can show the evidence
  kCoveragePartial,      // WARN: some in-scope nodes could not be read
  kToolFault,            // WARN: our own fault (e.g. the minimum table is unusable or stale)
  kConfig,               // WARN: a configuration gap proven by evidence
  kGracePeriod,          // PASS annotation: below a new floor, inside the grace window
};

enum class Severity { kNone, kMissing, kVersion, kConfig };

std::string_view ToString(Verdict v);   // "PASS", "WARN", "FAIL", "SKIP"
std::string_view ToString(Reason r);    // "not-in-scope", ...
std::string_view ToString(Severity s);  // "", "missing", "version", "config"
Verdict VerdictFromString(std::string_view s);
Reason ReasonFromString(std::string_view s);
Severity SeverityFromString(std::string_view s);
int Rank(Verdict v);  // FAIL 3 > WARN 2 > PASS 1 > SKIP 0 (for roll-ups)

struct Finding {
  Verdict verdict = Verdict::kSkip;
  Reason reason = Reason::kNone;
  Severity severity = Severity::kNone;
  std::string observed;
  std::string expected;
  std::string message;
  std::vector<std::string> details;

  Finding& Observed(std::string v) {
    observed = std::move(v);
    return *this;
  }
  Finding& Expected(std::string v) {
    expected = std::move(v);
    return *this;
  }
  Finding& Detail(std::string v) {
    details.push_back(std::move(v));
    return *this;
  }
  Finding& Details(std::vector<std::string> v) {
    for (auto& d : v) details.push_back(std::move(d));
    return *this;
  }
};

Finding Pass(std::string message);
Finding Warn(Reason reason, std::string message);
Finding Fail(Severity severity, std::string message);
Finding Skip(Reason reason, std::string message);

void to_json(nlohmann::json& j, const Finding& f);
void from_json(const nlohmann::json& j, Finding& f);

}  // namespace clustermax::core
