#include "core/finding.h"

#include <array>
#include <utility>

namespace clustermax::core {
namespace {
constexpr std::array<std::pair<Reason, std::string_view>, 12> kReasons{{
    {Reason::kNone, ""},
    {Reason::kNotInScope, "not-in-scope"},
    {Reason::kNotApplicable, "not-applicable"},
    {Reason::kProbeDisabled, "probe-disabled"},
    {Reason::kPrerequisiteMissing, "prerequisite-missing"},
    {Reason::kUnverified, "unverified"},
    {Reason::kEvidenceError, "evidence-error"},
    {Reason::kAttestationRequired, "attestation-required"},
    {Reason::kCoveragePartial, "coverage-partial"},
    {Reason::kToolFault, "tool-fault"},
    {Reason::kConfig, "config"},
    {Reason::kGracePeriod, "grace-period"},
}};
constexpr std::array<std::pair<Verdict, std::string_view>, 4> kVerdicts{
    {{Verdict::kPass, "PASS"}, {Verdict::kWarn, "WARN"}, {Verdict::kFail, "FAIL"}, {Verdict::kSkip, "SKIP"}}};
constexpr std::array<std::pair<Severity, std::string_view>, 4> kSeverities{{{Severity::kNone, ""},
                                                                            {Severity::kMissing, "missing"},
                                                                            {Severity::kVersion, "version"},
                                                                            {Severity::kConfig, "config"}}};

template <typename E, size_t N>
std::string_view Name(const std::array<std::pair<E, std::string_view>, N>& table, E v) {
  for (const auto& [k, name] : table)
    if (k == v) return name;
  return "";
}
template <typename E, size_t N>
E Lookup(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s, E fallback) {
  for (const auto& [k, name] : table)
    if (name == s) return k;
  return fallback;
}
}  // namespace

std::string_view ToString(Verdict v) { return Name(kVerdicts, v); }
std::string_view ToString(Reason r) { return Name(kReasons, r); }
std::string_view ToString(Severity s) { return Name(kSeverities, s); }
Verdict VerdictFromString(std::string_view s) { return Lookup(kVerdicts, s, Verdict::kSkip); }
Reason ReasonFromString(std::string_view s) { return Lookup(kReasons, s, Reason::kNone); }
Severity SeverityFromString(std::string_view s) { return Lookup(kSeverities, s, Severity::kNone); }

int Rank(Verdict v) {
  switch (v) {
    case Verdict::kFail:
      return 3;
    case Verdict::kWarn:
      return 2;
    case Verdict::kPass:
      return 1;
    case Verdict::kSkip:
      return 0;
  }
  return 0;
}

Finding Pass(std::string message) {
  Finding f;
  f.verdict = Verdict::kPass;
  f.message = std::move(message);
  return f;
}
Finding Warn(Reason reason, std::string message) {
  Finding f;
  f.verdict = Verdict::kWarn;
  f.reason = reason;
  f.message = std::move(message);
  return f;
}
Finding Fail(Severity severity, std::string message) {
  Finding f;
  f.verdict = Verdict::kFail;
  f.severity = severity;
  f.message = std::move(message);
  return f;
}
Finding Skip(Reason reason, std::string message) {
  Finding f;
  f.verdict = Verdict::kSkip;
  f.reason = reason;
  f.message = std::move(message);
  return f;
}

void to_json(nlohmann::json& j, const Finding& f) {
  j = nlohmann::json{{"status", ToString(f.verdict)}, {"message", f.message}};
  j["reason"] = f.reason == Reason::kNone ? nlohmann::json(nullptr) : nlohmann::json(ToString(f.reason));
  j["severity"] = f.severity == Severity::kNone ? nlohmann::json(nullptr) : nlohmann::json(ToString(f.severity));
  j["observed"] = f.observed;
  j["expected"] = f.expected;
  j["details"] = f.details;
}

void from_json(const nlohmann::json& j, Finding& f) {
  f.verdict = VerdictFromString(j.at("status").get<std::string>());
  f.message = j.value("message", "");
  f.reason = j["reason"].is_string() ? ReasonFromString(j["reason"].get<std::string>()) : Reason::kNone;
  f.severity = j["severity"].is_string() ? SeverityFromString(j["severity"].get<std::string>()) : Severity::kNone;
  f.observed = j.value("observed", "");
  f.expected = j.value("expected", "");
  f.details = j.value("details", std::vector<std::string>{});
}

}  // namespace clustermax::core
