#include "core/evidence.h"

#include <array>
#include <utility>

#include "util/strings.h"

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

namespace {
// Iterative (an explicit stack): evidence built from hostile input can be deep.
bool SanitizeJson(nlohmann::json& root) {
  bool replaced = false;
  std::vector<nlohmann::json*> stack{&root};
  while (!stack.empty()) {
    nlohmann::json* v = stack.back();
    stack.pop_back();
    if (v->is_string()) {
      auto& s = v->get_ref<std::string&>();
      if (!util::IsValidUtf8(s)) s = util::SanitizeUtf8(s, &replaced);  // (NUL alone is kept: it is valid JSON)
    } else if (v->is_array()) {
      for (auto& x : *v) stack.push_back(&x);
    } else if (v->is_object()) {
      bool bad_key = false;
      for (auto it = v->begin(); it != v->end(); ++it) {
        if (!util::IsValidUtf8(it.key())) bad_key = true;
      }
      if (bad_key) {
        nlohmann::json fixed = nlohmann::json::object();
        for (auto it = v->begin(); it != v->end(); ++it) fixed[util::SanitizeUtf8(it.key(), &replaced)] = std::move(it.value());
        *v = std::move(fixed);
      }
      for (auto& x : *v) stack.push_back(&x);
    }
  }
  return replaced;
}
}  // namespace

void SanitizeEvidence(Evidence& e) {
  bool replaced = SanitizeJson(e.data);
  auto fix = [&](std::string& s) {
    if (!util::IsValidUtf8(s)) s = util::SanitizeUtf8(s, &replaced);
  };
  fix(e.error);
  for (auto& s : e.sources) fix(s);
  if (replaced) e.invalid_utf8 = true;
}

void to_json(nlohmann::json& j, const Evidence& e) {
  j = nlohmann::json{{"id", e.id}, {"status", ToString(e.status)}, {"data", e.data}};
  if (!e.error.empty()) j["error"] = e.error;
  if (!e.sources.empty()) j["sources"] = e.sources;
  if (e.invalid_utf8) j["invalid_utf8"] = true;
}

void from_json(const nlohmann::json& j, Evidence& e) {
  e.id = j.at("id").get<std::string>();
  e.status = EvidenceStatusFromString(j.at("status").get<std::string>());
  e.data = j.value("data", nlohmann::json::object());
  e.error = j.value("error", "");
  e.sources = j.value("sources", std::vector<std::string>{});
  e.invalid_utf8 = j.value("invalid_utf8", false);
}

}  // namespace clustermax::core
