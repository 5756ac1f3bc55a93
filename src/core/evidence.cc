#include "core/evidence.h"

#include <array>
#include <map>
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
  for (const auto& [k, v] : kNames)
    if (k == s) return v;
  return "error";
}

EvidenceStatus EvidenceStatusFromString(std::string_view s) {
  for (const auto& [k, v] : kNames)
    if (v == s) return k;
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
        for (auto it = v->begin(); it != v->end(); ++it)
          fixed[util::SanitizeUtf8(it.key(), &replaced)] = std::move(it.value());
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

// ---- typed evidence ----
namespace clustermax::core {

std::string_view ToString(FieldType t) {
  switch (t) {
    case FieldType::kString:
      return "string";
    case FieldType::kNumber:
      return "number";
    case FieldType::kInteger:
      return "integer";
    case FieldType::kBool:
      return "bool";
    case FieldType::kObject:
      return "object";
    case FieldType::kArray:
      return "array";
    case FieldType::kAny:
      return "any";
  }
  return "any";
}

std::string FieldPathProblem(std::string_view path) {
  if (path.empty()) return "empty path";
  size_t i = 0;
  while (true) {
    size_t start = i;
    while (i < path.size() && ((path[i] >= 'a' && path[i] <= 'z') || (path[i] >= '0' && path[i] <= '9') ||
                               path[i] == '_' || (path[i] >= 'A' && path[i] <= 'Z'))) {
      ++i;
    }
    if (i == start) return "empty segment at offset " + std::to_string(start);
    if (path[start] == '_') return "segment starts with '_' at offset " + std::to_string(start);
    while (i + 1 < path.size() && (path.substr(i, 2) == "[]" || path.substr(i, 2) == "{}")) i += 2;
    if (i == path.size()) return "";
    if (path[i] != '.') return "unexpected '" + std::string(1, path[i]) + "' at offset " + std::to_string(i);
    ++i;
  }
}

namespace {

bool TypeMatches(FieldType t, bool nullable, const nlohmann::json& v) {
  if (v.is_null()) return nullable || t == FieldType::kAny;
  switch (t) {
    case FieldType::kString:
      return v.is_string();
    case FieldType::kNumber:
      return v.is_number();
    case FieldType::kInteger:
      return v.is_number_integer();
    case FieldType::kBool:
      return v.is_boolean();
    case FieldType::kObject:
      return v.is_object();
    case FieldType::kArray:
      return v.is_array();
    case FieldType::kAny:
      return true;
  }
  return false;
}

std::string TypeName(const nlohmann::json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a bool";
  return std::string("a ") + v.type_name();
}

struct FieldIndex {
  std::map<std::string, const FieldSpec*, std::less<>> by_path;
  // Paths that have declared children ("a" when "a.b", "a[]" or "a{}" is declared).
  std::map<std::string, bool, std::less<>> has_children;
  explicit FieldIndex(const std::vector<FieldSpec>& fields) {
    for (const auto& f : fields) {
      by_path[f.path] = &f;
      // Every proper prefix ending before '.', "[]" or "{}" has children.
      for (size_t i = 1; i < f.path.size(); ++i) {
        if (f.path[i] == '.' || f.path.compare(i, 2, "[]") == 0 || f.path.compare(i, 2, "{}") == 0) {
          has_children[f.path.substr(0, i)] = true;
        }
      }
    }
  }
  bool Children(const std::string& p) const { return has_children.count(p) > 0; }
};

// Validates the value `v` found at declared path `p` (already known to be declared or implied).
void CheckValue(const FieldIndex& idx, const std::string& p, const nlohmann::json& v, std::vector<std::string>& out,
                nlohmann::json* projected);

void CheckObjectKeys(const FieldIndex& idx, const std::string& prefix, const nlohmann::json& obj,
                     std::vector<std::string>& out, nlohmann::json* projected) {
  bool free = idx.by_path.count(prefix + "{}") > 0 || idx.Children(prefix + "{}");
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    if (free) {
      CheckValue(idx, prefix + "{}", it.value(), out, projected ? &(*projected)[it.key()] : nullptr);
      continue;
    }
    std::string p = prefix.empty() ? it.key() : prefix + "." + it.key();
    if (!idx.by_path.count(p) && !idx.Children(p)) {
      if (prefix.empty() && it.key() == "not_taken") {
        if (projected) (*projected)[it.key()] = it.value();
        continue;
      }
      out.push_back("undeclared key '" + it.key() + "'" + (prefix.empty() ? "" : " at " + prefix));
      continue;
    }
    CheckValue(idx, p, it.value(), out, projected ? &(*projected)[it.key()] : nullptr);
  }
}

void CheckValue(const FieldIndex& idx, const std::string& p, const nlohmann::json& v, std::vector<std::string>& out,
                nlohmann::json* projected) {
  auto f = idx.by_path.find(p);
  if (f != idx.by_path.end() && !TypeMatches(f->second->type, f->second->nullable, v)) {
    out.push_back("'" + p + "' is " + TypeName(v) + ", declared " + std::string(ToString(f->second->type)) +
                  (f->second->nullable ? " or null" : ""));
  }
  bool children = idx.Children(p);
  if (v.is_object() && children) {
    if (projected) *projected = nlohmann::json::object();
    CheckObjectKeys(idx, p, v, out, projected);
    return;
  }
  if (v.is_array() && (idx.by_path.count(p + "[]") || idx.Children(p + "[]"))) {
    if (projected) *projected = nlohmann::json::array();
    for (const auto& x : v) {
      nlohmann::json* slot = nullptr;
      if (projected) {
        projected->push_back(nullptr);
        slot = &projected->back();
      }
      CheckValue(idx, p + "[]", x, out, slot);
    }
    return;
  }
  if (projected) *projected = v;  // a scalar, or an opaque object/array
}

}  // namespace

std::vector<std::string> CheckDeclaredFields(const std::vector<FieldSpec>& fields, const nlohmann::json& data) {
  std::vector<std::string> out;
  if (!data.is_object()) {
    out.push_back("data is " + TypeName(data) + ", not an object");
    return out;
  }
  FieldIndex idx(fields);
  CheckObjectKeys(idx, "", data, out, nullptr);
  return out;
}

nlohmann::json ProjectDeclaredFields(const std::vector<FieldSpec>& fields, const nlohmann::json& data) {
  if (!data.is_object()) return data;
  FieldIndex idx(fields);
  std::vector<std::string> ignored;
  nlohmann::json out = nlohmann::json::object();
  CheckObjectKeys(idx, "", data, ignored, &out);
  return out;
}

}  // namespace clustermax::core
