#include "core/evidence.h"

#include <array>
#include <utility>

namespace clustermax::core {
namespace {
constexpr std::array<std::pair<EvidenceStatus, std::string_view>, 8> kNames{{
    {EvidenceStatus::kOk, "ok"},
    {EvidenceStatus::kNotFound, "not-found"},
    {EvidenceStatus::kPermissionDenied, "permission-denied"},
    {EvidenceStatus::kTimeout, "timeout"},
    {EvidenceStatus::kParseError, "parse-error"},
    {EvidenceStatus::kError, "error"},
    {EvidenceStatus::kProbeDisabled, "probe-disabled"},
    {EvidenceStatus::kNotCollected, "not-collected"},
}};
}  // namespace

std::string_view ToString(EvidenceStatus s) {
  for (const auto& [k, v] : kNames) if (k == s) return v;
  return "error";
}

EvidenceStatus EvidenceStatusFromString(std::string_view s) {
  for (const auto& [k, v] : kNames) if (v == s) return k;
  return EvidenceStatus::kError;
}

void to_json(nlohmann::json& j, const Evidence& e) {
  j = nlohmann::json{{"id", e.id}, {"status", ToString(e.status)}, {"data", e.data}};
  if (!e.error.empty()) j["error"] = e.error;
  if (!e.sources.empty()) j["sources"] = e.sources;
}

void from_json(const nlohmann::json& j, Evidence& e) {
  e.id = j.at("id").get<std::string>();
  e.status = EvidenceStatusFromString(j.at("status").get<std::string>());
  e.data = j.value("data", nlohmann::json::object());
  e.error = j.value("error", "");
  e.sources = j.value("sources", std::vector<std::string>{});
}

}  // namespace clustermax::core
