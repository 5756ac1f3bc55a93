#include "rating/catalog.h"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "util/files.h"

namespace clustermax::embedded {
extern const std::string_view kRatingCatalog30Json;
extern const std::string_view kRatingCatalog20Json;
}  // namespace clustermax::embedded

namespace clustermax::rating {
using nlohmann::json;

const Category* Catalog::FindCategory(const std::string& id) const {
  for (const auto& c : categories) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

const Criterion* Catalog::FindCriterion(const std::string& id) const {
  for (const auto& c : criteria) {
    if (c.id == id) return &c;
  }
  return nullptr;
}

bool MetricMatches(const std::string& pattern, const std::string& id) {
  if (pattern.size() >= 2 && pattern.compare(pattern.size() - 2, 2, ".*") == 0) {
    return id.compare(0, pattern.size() - 1, pattern, 0, pattern.size() - 1) == 0 && id.size() > pattern.size() - 1;
  }
  return pattern == id;
}

Catalog ParseCatalog(const std::string& text, const std::string& origin) {
  auto fail = [&](const std::string& what) { throw std::runtime_error(origin + ": " + what); };
  json j;
  j = util::ParseJsonDocument(text, origin);
  // A catalog may derive from an embedded one: its top-level keys replace the base's, and
  // criteria_overrides patch criteria by id (an edition that differs in a few places).
  if (j.contains("base")) {
    std::string base = j["base"];
    json b;
    if (base == "3.0") {
      b = json::parse(embedded::kRatingCatalog30Json);
    } else {
      fail("unknown base catalog '" + base + "' (known: 3.0)");
    }
    for (const auto& [k, v] : j.items()) {
      if (k != "base" && k != "criteria_overrides") b[k] = v;
    }
    const json overrides = j.value("criteria_overrides", json::object());
    for (const auto& [id, patch] : overrides.items()) {
      bool found = false;
      for (auto& crit : b["criteria"]) {
        if (crit["id"] == id) {
          crit.update(patch);
          found = true;
        }
      }
      if (!found) fail("criteria_overrides names the unknown criterion " + id);
    }
    j = std::move(b);
  }
  Catalog c;
  c.origin = origin;
  try {
    c.edition = j.at("edition");
    c.version = j.at("version");
    c.about = j.value("about", "");
    c.ribbon = j.value("ribbon", "");
    c.below_lowest = j.value("below_lowest", "PARTICIPATION_RIBBON");
    c.ladder = j.at("ladder").get<std::vector<std::string>>();
    c.unavailable_classes = j.at("unavailable_classes").get<std::map<std::string, std::string>>();
    for (const auto& k : j.at("categories"))
      c.categories.push_back({k.at("id"), k.at("title"), k.value("weight", 1.0)});
    for (const auto& t : j.at("tiers"))
      c.tiers.push_back({t.at("tier"), t.at("min_score"), t.at("max_below"), t.value("about", "")});
    const json& me = j.at("minimum_evidence");
    c.minimum = {me.at("coverage"), me.at("rated_categories"), me.at("machine_evidence"), me.value("about", "")};
    const json& cr = j.at("credit");
    for (const char* s : {"PASS", "WARN", "FAIL"}) c.status_credit[s] = cr.at(s);
    c.warn_no_credit = cr.at("warn_no_credit").get<std::vector<std::string>>();
    c.excluded_reasons = cr.at("excluded").get<std::vector<std::string>>();
    c.cli_only = j.value("cli_only", json::object()).get<std::map<std::string, std::string>>();
    const json& co = j.at("cohort");
    for (const auto& sh : co.at("shares")) c.cohort_shares.push_back({sh.at("tier"), sh.at("share")});
    c.cohort_rest = co.at("rest");
    c.cohort_about = co.value("about", "");
    for (const auto& x : j.at("criteria")) {
      Criterion k;
      k.id = x.at("id");
      k.category = x.at("category");
      k.title = x.at("title");
      k.weight = x.value("weight", 1.0);
      k.critical = x.value("critical", false);
      k.checks = x.value("checks", std::vector<std::string>{});
      k.metrics = x.value("metrics", std::vector<std::string>{});
      if (x.contains("assessment"))
        k.assessment = AssessmentItem{x["assessment"].at("key"), x["assessment"].value("help", "")};
      c.criteria.push_back(std::move(k));
    }
  } catch (const json::exception& e) {
    fail(std::string("bad field: ") + e.what());
  }
  std::set<std::string> ids, keys, checks;
  for (const auto& k : c.criteria) {
    if (!ids.insert(k.id).second) fail("criterion " + k.id + " is listed twice");
    if (!c.FindCategory(k.category))
      fail(fmt::format("criterion {} names the unknown category '{}'", k.id, k.category));
    if (k.checks.empty() && k.metrics.empty() && !k.assessment)
      fail("criterion " + k.id + " has no source (checks, metrics or assessment)");
    if (k.weight <= 0) fail("criterion " + k.id + " needs a positive weight");
    if (k.assessment && !keys.insert(k.assessment->key).second)
      fail("assessment key " + k.assessment->key + " is used twice");
    for (const auto& ch : k.checks) {
      if (!checks.insert(ch).second) fail(fmt::format("check {} counts toward two criteria", ch));
    }
  }
  if (std::find(c.ladder.begin(), c.ladder.end(), c.below_lowest) == c.ladder.end())
    fail("below_lowest " + c.below_lowest + " is not on the ladder");
  if (!(c.minimum.coverage >= 0 && c.minimum.coverage <= 1)) fail("minimum_evidence.coverage must be between 0 and 1");
  if (c.minimum.rated_categories < 0 || c.minimum.rated_categories > static_cast<int>(c.categories.size())) {
    fail(fmt::format("minimum_evidence.rated_categories must be between 0 and the {} categories", c.categories.size()));
  }
  double total = 0;
  for (const auto& [tier, share] : c.cohort_shares) {
    if (std::find(c.ladder.begin(), c.ladder.end(), tier) == c.ladder.end())
      fail("cohort tier " + tier + " is not on the ladder");
    if (share < 0) fail("cohort share of " + tier + " is negative");
    total += share;
  }
  if (total > 1 + 1e-9) fail("cohort shares add up to more than 1");
  for (size_t i = 0; i < c.tiers.size(); ++i) {
    if (std::find(c.ladder.begin(), c.ladder.end(), c.tiers[i].tier) == c.ladder.end())
      fail("tier " + c.tiers[i].tier + " is not on the ladder");
    if (i > 0 && (c.tiers[i].min_score > c.tiers[i - 1].min_score || c.tiers[i].max_below < c.tiers[i - 1].max_below)) {
      fail("tiers must be listed best first, each no stricter than the one before");
    }
  }
  return c;
}

const Catalog& EmbeddedCatalog(const std::string& edition) {
  static const Catalog c30 =
      ParseCatalog(std::string(embedded::kRatingCatalog30Json), "data/rating/3.0.json (embedded)");
  static const Catalog c20 =
      ParseCatalog(std::string(embedded::kRatingCatalog20Json), "data/rating/2.0.json (embedded)");
  if (edition == "3.0") return c30;
  if (edition == "2.0") return c20;
  throw std::invalid_argument(fmt::format("no criteria catalog for edition '{}' (known: 2.0, 3.0)", edition));
}

}  // namespace clustermax::rating
