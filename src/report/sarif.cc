#include "report/sarif.h"

#include <map>
#include <string>

#include "util/strings.h"
#include "util/time.h"

namespace clustermax::report {
namespace {

using nlohmann::json;

std::string Str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return util::SanitizeUtf8(j[key].get<std::string>());
}

// SARIF's helpUri is an absolute URI ("format": "uri"): only http(s) links without spaces.
bool AbsoluteHttpUri(const std::string& u) {
  return (u.rfind("https://", 0) == 0 || u.rfind("http://", 0) == 0) &&
         u.find_first_of(" \t\r\n\"<>\\^`{|}") == std::string::npos;
}

json Rule(const json& res, const core::Registry* registry) {
  std::string id = Str(res, "id"), title = Str(res, "title"), category = Str(res, "category");
  const core::Check* check = registry ? registry->Find(id) : nullptr;
  std::string help = "clustermax check " + id + " (" + category + "): " + title +
                     ". Described in docs/checks.md (section " + category + ") and by `clustermax checks describe " +
                     id + "`.";
  json rule = {{"id", id}, {"shortDescription", {{"text", title.empty() ? id : title}}}};
  if (check) {
    if (!check->info.rationale.empty()) rule["fullDescription"] = {{"text", check->info.rationale}};
    if (!check->info.remediation.empty()) help += " Fix: " + check->info.remediation;
    for (const auto& ref : check->info.references) {
      if (AbsoluteHttpUri(ref.url)) {
        rule["helpUri"] = ref.url;
        break;
      }
    }
  }
  rule["help"] = {{"text", help}};
  bool critical =
      res.is_object() && res.contains("critical") && res["critical"].is_boolean() && res["critical"].get<bool>();
  rule["defaultConfiguration"] = {{"level", critical ? "error" : "warning"}};
  json props = {{"category", category}, {"critical", critical}, {"tags", json::array({"clustermax", category})}};
  if (!Str(res, "criterion").empty()) props["criterion"] = Str(res, "criterion");
  if (!Str(res, "mode").empty()) props["mode"] = Str(res, "mode");
  rule["properties"] = std::move(props);
  return rule;
}

json Result(const json& res, size_t rule_index, const std::string& node, const json& f) {
  std::string st = Str(f, "status");
  std::string level = st == "FAIL" ? "error" : st == "WARN" ? "warning" : "none";
  std::string kind = st == "FAIL" || st == "WARN" ? "fail" : st == "PASS" ? "pass" : "notApplicable";
  std::string message = Str(f, "message");
  if (message.empty()) message = st + ": " + Str(res, "title");
  json out = {{"ruleId", Str(res, "id")},
              {"ruleIndex", rule_index},
              {"kind", kind},
              {"level", level},
              {"message", {{"text", message}}}};
  out["locations"] = json::array(
      {{{"logicalLocations", json::array({{{"name", node}, {"fullyQualifiedName", node}, {"kind", "resource"}}})}}});
  out["partialFingerprints"] = {{"clustermaxCheckNode/v1", Str(res, "id") + "@" + node}};
  json props = {{"status", st}, {"observed", Str(f, "observed")}, {"expected", Str(f, "expected")}};
  if (!Str(f, "reason").empty()) props["reason"] = Str(f, "reason");
  if (!Str(f, "severity").empty()) props["severity"] = Str(f, "severity");
  json details = json::array();
  if (f.contains("details") && f["details"].is_array()) {
    for (const auto& d : f["details"]) {
      if (d.is_string()) details.push_back(util::SanitizeUtf8(d.get<std::string>()));
    }
  }
  props["details"] = std::move(details);
  out["properties"] = std::move(props);
  return out;
}

}  // namespace

json ToSarif(const json& r, const core::Registry* registry) {
  std::string first_node = "node";
  if (r.contains("nodes") && r["nodes"].is_array() && !r["nodes"].empty() && r["nodes"][0].is_string()) {
    first_node = util::SanitizeUtf8(r["nodes"][0].get<std::string>());
  }
  json rules = json::array(), results = json::array();
  std::map<std::string, size_t> index;
  const json all = r.contains("results") && r["results"].is_array() ? r["results"] : json::array();
  for (const auto& res : all) {
    std::string id = Str(res, "id");
    auto [it, added] = index.emplace(id, rules.size());
    if (added) rules.push_back(Rule(res, registry));
    if (!res.contains("nodes") || !res["nodes"].is_array() || res["nodes"].empty()) {
      results.push_back(Result(res, it->second, first_node, res));
      continue;
    }
    for (const auto& n : res["nodes"]) results.push_back(Result(res, it->second, Str(n, "node"), n));
  }
  std::string version = Str(r.is_object() && r.contains("tool") ? r["tool"] : json(), "version");
  json driver = {{"name", "clustermax"}, {"rules", std::move(rules)}};
  if (!version.empty()) driver["version"] = version;
  json run = {{"tool", {{"driver", std::move(driver)}}}};
  std::string collected = Str(r, "collected_at");
  json invocation = {{"executionSuccessful", true}};
  if (util::ParseRfc3339(collected) && collected.size() >= 20) invocation["endTimeUtc"] = collected;
  run["invocations"] = json::array({std::move(invocation)});
  run["automationDetails"] = {{"id", "clustermax/audit/" + collected}};
  run["results"] = std::move(results);
  json summary = r.contains("summary") && r["summary"].is_object() ? r["summary"] : json::object();
  run["properties"] = {{"target", Str(r, "target")}, {"mode", Str(r, "mode")}, {"summary", summary}};
  return {{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
          {"version", "2.1.0"},
          {"runs", json::array({std::move(run)})}};
}

}  // namespace clustermax::report
