#include "rating/rate.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "core/version.h"
#include "util/files.h"

namespace clustermax::rating {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double Round(double v) { return std::round(v * 1000) / 1000; }

bool In(const std::vector<std::string>& list, const std::string& v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

// One piece of evidence for a criterion.
struct Item {
  std::string source;  // check:<id>, metric:<id>, assessment:<key>
  std::string state;   // credited, unknown, excluded
  double credit = 0;
  std::string status;  // PASS/WARN/FAIL/SKIP, or the attested answer
  std::string detail;
  bool proven_unmet = false;  // a FAIL read from the machine, or a "no" attested

  json ToJson() const {
    json j = {{"source", source}, {"state", state}, {"status", status}, {"detail", detail}};
    if (state == "credited") j["credit"] = credit;
    return j;
  }
};

Item CheckItem(const Catalog& cat, const std::string& id, const std::vector<const json*>& found) {
  Item it{"check:" + id, "unknown", 0, "", "not audited: no report in the input ran this check", false};
  if (found.empty()) return it;
  std::vector<Item> each;
  for (const json* r : found) {
    Item x{it.source, "", 0, r->value("status", ""), r->value("message", ""), false};
    std::string reason = (*r)["reason"].is_string() ? (*r)["reason"].get<std::string>() : "";
    if (x.status == "FAIL") {
      x.state = "credited";
      x.credit = cat.status_credit.at("FAIL");
      x.proven_unmet = true;
    } else if (x.status == "PASS") {
      x.state = "credited";
      x.credit = cat.status_credit.at("PASS");
    } else if (x.status == "WARN") {
      if (In(cat.excluded_reasons, reason)) {
        x.state = "excluded";
      } else if (In(cat.warn_no_credit, reason)) {
        x.state = "unknown";
      } else {
        x.state = "credited";
        x.credit = cat.status_credit.at("WARN");
      }
    } else {
      x.state = In(cat.excluded_reasons, reason) ? "excluded" : "unknown";
    }
    if (!reason.empty()) x.status += " " + reason;
    each.push_back(x);
  }
  // Several reports (e.g. a fleet audit and a standalone one): a FAIL anywhere decides, else the
  // lowest credit read, else unknown, else excluded.
  for (const auto& x : each) {
    if (x.proven_unmet) return x;
  }
  const Item* best = nullptr;
  for (const auto& x : each) {
    if (x.state == "credited" && (!best || x.credit < best->credit)) best = &x;
  }
  if (best) return *best;
  for (const auto& x : each) {
    if (x.state == "unknown") return x;
  }
  return each.front();
}

std::vector<Item> MetricItems(const std::string& pattern, const std::map<std::string, json>& grades) {
  std::vector<Item> out;
  for (const auto& [id, g] : grades) {
    if (!MetricMatches(pattern, id)) continue;
    Item x{"metric:" + id, "credited", 0, g.value("verdict", ""), "", false};
    if (x.status == "PASS") {
      x.credit = 1;
    } else if (x.status == "WARN") {
      x.credit = 0.5;
    } else if (x.status == "FAIL") {
      x.credit = 0;
    } else {
      x.state = "excluded";
    }
    if (g.contains("value")) {
      x.detail = fmt::format("{} {} (pass {} {}{})", g["value"].dump(), g.value("unit", ""),
                             g.value("better", "") == "lower" ? "<=" : ">=", g["pass"].dump(),
                             g.contains("detail") ? "; " + g["detail"].get<std::string>() : "");
    } else {
      x.detail = g.value("reason", "");
    }
    out.push_back(x);
  }
  if (out.empty()) {
    out.push_back(
        {"metric:" + pattern, "unknown", 0, "", "not measured: no benchmark result in the input has it", false});
  }
  return out;
}

Item AssessmentItemOf(const AssessmentItem& a, const std::optional<Assessment>& as) {
  Item x{"assessment:" + a.key, "unknown", 0, "unknown", "not attested", false};
  if (!as) {
    x.detail = "no assessment file given (clustermax rate --template)";
    return x;
  }
  auto it = as->answers.find(a.key);
  if (it == as->answers.end() || it->second.value == "unknown") return x;
  const Answer& ans = it->second;
  x.status = ans.value;
  x.state = "credited";
  // An attestation is evidence through its source: "yes" without one earns half (as "partial").
  x.credit = ans.value == "yes" ? (ans.source.empty() ? 0.5 : 1.0) : ans.value == "partial" ? 0.5 : 0.0;
  x.proven_unmet = ans.value == "no";
  x.detail = ans.source.empty()
                 ? (ans.value == "yes" ? "attested without a source: half credit" : "attested, no source given")
                 : "source: " + ans.source;
  if (!ans.date.empty()) x.detail += " (" + ans.date + ")";
  if (!ans.note.empty()) x.detail += "; " + ans.note;
  return x;
}

std::string Short(double v) { return fmt::format("{:.2f}", v); }

// A criterion of the catalog with its evidence and verdict.
struct Crit {
  const Criterion* c;
  std::vector<Item> items;
  double credit = 0;
  std::string verdict;
  bool applicable = true;
};

// The fewest criteria to give evidence for to reach the catalog's minimum evidence: the heaviest
// unknown criterion of each category that is not rated (as many categories as are missing), then
// the heaviest unknown criteria until the coverage is reached.
json EvidenceFixes(const Catalog& cat, const std::map<std::string, std::vector<Crit>>& by_cat,
                   const std::map<std::string, bool>& rated, double coverage, int rated_count) {
  double all_w = 0;
  std::vector<std::pair<const Category*, const Crit*>> unknown;
  for (const auto& category : cat.categories) {
    auto it = by_cat.find(category.id);
    if (it == by_cat.end()) continue;
    for (const auto& k : it->second) {
      if (!k.applicable) continue;
      all_w += k.c->weight;
      if (k.verdict == "unknown") unknown.push_back({&category, &k});
    }
  }
  std::stable_sort(unknown.begin(), unknown.end(),
                   [](const auto& a, const auto& b) { return a.second->c->weight > b.second->c->weight; });
  json fixes = json::array();
  std::set<const Crit*> chosen;
  double got = coverage * all_w;
  auto add = [&](const Category& c, const Crit& k) {
    chosen.insert(&k);
    got += k.c->weight;
    json items = json::array();
    for (const auto& x : k.items) {
      if (x.state == "unknown") items.push_back(x.ToJson());
    }
    fixes.push_back(
        {{"category", c.id}, {"criterion", k.c->id}, {"title", k.c->title}, {"verdict", k.verdict}, {"items", items}});
  };
  int missing = std::max(0, cat.minimum.rated_categories - rated_count);
  std::set<std::string> lifted;
  for (const auto& [c, k] : unknown) {
    if (missing == 0) break;
    if (rated.at(c->id) || lifted.count(c->id)) continue;
    lifted.insert(c->id);
    add(*c, *k);
    --missing;
  }
  for (const auto& [c, k] : unknown) {
    if (got >= cat.minimum.coverage * all_w - 1e-9) break;
    if (!chosen.count(k)) add(*c, *k);
  }
  return fixes;
}

}  // namespace

RunInput LoadRunDir(const fs::path& dir) {
  RunInput in;
  in.dir = dir.string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir.string() + ": not a directory");
  auto load = [](const fs::path& p) {
    auto text = util::ReadLocalFile(p);
    if (!text) throw std::runtime_error(p.string() + ": cannot be read");
    try {
      return util::ParseJsonDocument(*text, p.string());
    } catch (const std::runtime_error& e) {
      std::string what = e.what();
      throw std::runtime_error(what.find("not valid JSON") != std::string::npos ? what + "; was the run interrupted?"
                                                                                : what);
    }
  };
  fs::path report = dir / "report.json";
  if (fs::exists(report, ec)) {
    json r = load(report);
    if (!r.contains("results") || !r["results"].is_array() || r.value("schema_version", 0) != 1) {
      throw std::runtime_error(report.string() + ": not an audit report of schema version 1");
    }
    in.report = std::move(r);
  }
  fs::path bench = dir / "bench";
  if (fs::is_directory(bench, ec)) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(bench)) {
      if (e.path().extension() == ".json") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) {
      json b = load(f);
      if (!b.contains("kind") || b["kind"].get<std::string>().rfind("clustermax.bench.", 0) != 0) {
        throw std::runtime_error(f.string() + ": not a clustermax benchmark result");
      }
      if (b.value("interrupted", false)) {
        throw std::runtime_error(
            f.string() +
            ": an interrupted benchmark run (INCOMPLETE), not a result to rate or store; run it again to the end");
      }
      in.benches.push_back(std::move(b));
    }
  }
  if (!in.report && in.benches.empty()) {
    throw std::runtime_error(dir.string() + ": no report.json and no bench/*.json: not a clustermax run directory");
  }
  return in;
}

json Rate(const Catalog& cat, const std::vector<RunInput>& runs, const std::optional<Assessment>& as) {
  // Evidence by source.
  std::map<std::string, std::vector<const json*>> checks;
  std::map<std::string, json> grades;
  json inputs = json::array();
  for (const auto& run : runs) {
    json in = {{"dir", run.dir}};
    if (run.report) {
      for (const auto& r : (*run.report)["results"]) checks[r.value("id", "")].push_back(&r);
      in["report"] = {{"target", run.report->value("target", "")},
                      {"collected_at", run.report->value("collected_at", "")},
                      {"nodes", run.report->value("nodes", json::array()).size()}};
    }
    json kinds = json::array();
    for (const auto& b : run.benches) {
      kinds.push_back(b.value("kind", ""));
      for (const auto& g : b.value("grades", json::array())) {
        std::string id = g.value("metric", "");
        auto rank = [](const std::string& v) { return v == "FAIL" ? 3 : v == "WARN" ? 2 : v == "PASS" ? 1 : 0; };
        if (!grades.count(id) || rank(g.value("verdict", "")) > rank(grades[id].value("verdict", ""))) grades[id] = g;
      }
    }
    in["benchmarks"] = kinds;
    inputs.push_back(in);
  }

  json out = {{"kind", "clustermax.rating"},
              {"schema_version", 1},
              {"tool_version", std::string(core::kToolVersion)},
              {"edition", cat.edition},
              {"catalog", {{"origin", cat.origin}, {"version", cat.version}}},
              {"inputs", inputs}};
  out["provider"] = as ? json(as->provider) : json(nullptr);
  out["cluster"] = as && !as->cluster.empty() ? json(as->cluster) : json(nullptr);
  out["assessment"] = as ? json(as->origin) : json(nullptr);

  // Criteria and categories.
  std::map<std::string, std::vector<Crit>> by_cat;
  for (const auto& c : cat.criteria) {
    Crit k{&c, {}, 0, "", true};
    for (const auto& id : c.checks) k.items.push_back(CheckItem(cat, id, checks[id]));
    for (const auto& p : c.metrics) {
      for (auto& x : MetricItems(p, grades)) k.items.push_back(std::move(x));
    }
    if (c.assessment) k.items.push_back(AssessmentItemOf(*c.assessment, as));
    int credited = 0, unknown = 0;
    double sum = 0;
    for (const auto& x : k.items) {
      if (x.state == "credited") {
        ++credited;
        sum += x.credit;
      } else if (x.state == "unknown") {
        ++unknown;
      }
    }
    if (credited + unknown == 0) {
      k.applicable = false;
      k.verdict = "not-applicable";
    } else {
      k.credit = sum / (credited + unknown);
      k.verdict = credited == 0                          ? "unknown"
                  : unknown == 0 && k.credit >= 1 - 1e-9 ? "met"
                  : unknown == 0 && k.credit <= 1e-9     ? "unmet"
                                                         : "partly-met";
    }
    by_cat[c.category].push_back(std::move(k));
  }
  json categories = json::array();
  // A category is rated when at least one of its applicable criteria has evidence; a category
  // without any is "not rated" (score null), never a score of 0 or 1.
  std::map<std::string, double> score;
  std::map<std::string, bool> rated;
  double all_w = 0, all_known_w = 0;
  int rated_count = 0;
  bool machine = false;  // an item read from the machine (a check or a benchmark) was credited
  for (const auto& category : cat.categories) {
    double w = 0, ws = 0, known_w = 0;
    int applicable = 0;
    json crits = json::array();
    for (const auto& k : by_cat[category.id]) {
      json items = json::array();
      bool any_known = false;
      for (const auto& x : k.items) {
        items.push_back(x.ToJson());
        any_known |= x.state == "credited";
        machine |= x.state == "credited" && x.source.rfind("assessment:", 0) != 0;
      }
      crits.push_back({{"id", k.c->id},
                       {"title", k.c->title},
                       {"weight", k.c->weight},
                       {"critical", k.c->critical},
                       {"verdict", k.verdict},
                       {"credit", k.applicable ? json(Round(k.credit)) : json(nullptr)},
                       {"items", items}});
      if (!k.applicable) continue;
      ++applicable;
      w += k.c->weight;
      ws += k.c->weight * k.credit;
      if (any_known) known_w += k.c->weight;
    }
    rated[category.id] = known_w > 0;
    score[category.id] = rated[category.id] ? ws / w : 0.0;
    rated_count += rated[category.id];
    all_w += w;
    all_known_w += known_w;
    json cj = {{"id", category.id},
               {"title", category.title},
               {"rated", rated[category.id]},
               {"score", rated[category.id] ? json(Round(score[category.id])) : json(nullptr)},
               {"coverage", w > 0 ? Round(known_w / w) : 0.0}};
    if (!rated[category.id]) {
      cj["not_rated"] = applicable == 0 ? std::string("no criterion applies: every item was excluded")
                                        : fmt::format("no evidence for any of its {} applicable criteria", applicable);
    }
    cj["criteria"] = crits;
    categories.push_back(std::move(cj));
  }
  out["categories"] = categories;

  // The minimum evidence for any tier.
  double coverage = all_w > 0 ? all_known_w / all_w : 0.0;
  json short_of = json::array();
  if (coverage < cat.minimum.coverage - 1e-9) {
    short_of.push_back(fmt::format("evidence covers {:.0f} % of the applicable criteria (by weight), {:.0f} % needed",
                                   coverage * 100, cat.minimum.coverage * 100));
  }
  if (rated_count < cat.minimum.rated_categories) {
    short_of.push_back(fmt::format("{} of {} categories rated, {} needed", rated_count, cat.categories.size(),
                                   cat.minimum.rated_categories));
  }
  if (cat.minimum.machine_evidence && !machine) {
    short_of.push_back(
        "nothing read from the machine: no audit check or benchmark result was credited (attestations alone are not a rating)");
  }
  out["evidence"] = {{"coverage", Round(coverage)},
                     {"rated_categories", rated_count},
                     {"machine_evidence", machine},
                     {"minimum",
                      {{"coverage", cat.minimum.coverage},
                       {"rated_categories", cat.minimum.rated_categories},
                       {"machine_evidence", cat.minimum.machine_evidence},
                       {"about", cat.minimum.about}}},
                     {"meets_minimum", short_of.empty()},
                     {"short_of", short_of}};

  // Gates.
  json gates = {{"unavailable", nullptr}, {"underperforming", json::array()}, {"unverified_critical", json::array()}};
  for (const auto& [cid, ks] : by_cat) {
    for (const auto& k : ks) {
      if (!k.c->critical) continue;
      json proven = json::array();
      bool unknown = k.verdict == "unknown";
      for (const auto& x : k.items) {
        if (x.proven_unmet) proven.push_back(x.ToJson());
        unknown |= x.state == "unknown";
      }
      if (!proven.empty()) {
        gates["underperforming"].push_back({{"criterion", k.c->id}, {"title", k.c->title}, {"evidence", proven}});
      } else if (unknown) {
        gates["unverified_critical"].push_back({{"criterion", k.c->id}, {"title", k.c->title}});
      }
    }
  }
  std::string tier, decided;
  json next = nullptr;
  if (as && as->unavailable) {
    tier = "UNAVAILABLE";
    gates["unavailable"] = {{"class", *as->unavailable}, {"about", cat.unavailable_classes.at(*as->unavailable)}};
    decided = fmt::format("gate 1 (Unavailable): {} ({}), a participation class, not a verdict on quality",
                          *as->unavailable, cat.unavailable_classes.at(*as->unavailable));
  } else if (!gates["underperforming"].empty()) {
    tier = "UNDERPERFORMING";
    std::string what;
    json fixes = json::array();
    for (const auto& g : gates["underperforming"]) {
      what += (what.empty() ? "" : "; ") + g["criterion"].get<std::string>() + " (" +
              g["evidence"][0]["source"].get<std::string>() + " " + g["evidence"][0]["status"].get<std::string>() + ")";
      fixes.push_back({{"criterion", g["criterion"]}, {"title", g["title"]}, {"evidence", g["evidence"]}});
    }
    decided = "gate 2 (Underperforming): critical criteria proven unmet: " + what;
    next = {{"tier", "the tier the scores give once no critical failure remains"}, {"fixes", fixes}};
  }
  // The tier the category scores give (also shown when a gate decided).
  std::string by_scores = cat.below_lowest;
  std::string rule_text;
  int rung = static_cast<int>(cat.tiers.size());
  for (size_t i = 0; i < cat.tiers.size(); ++i) {
    const TierRule& t = cat.tiers[i];
    std::vector<std::string> below;
    for (const auto& c : cat.categories) {
      if (!rated[c.id]) {
        below.push_back(c.id + " not rated");
      } else if (score[c.id] < t.min_score) {
        below.push_back(fmt::format("{} {}", c.id, Short(score[c.id])));
      }
    }
    if (static_cast<int>(below.size()) <= t.max_below) {
      by_scores = t.tier;
      rung = static_cast<int>(i);
      rule_text = fmt::format("{}: {}; {} of {} categories are", t.tier, t.about, cat.categories.size() - below.size(),
                              cat.categories.size());
      if (!below.empty()) rule_text += fmt::format(" (below: {})", fmt::join(below, ", "));
      break;
    }
  }
  if (rule_text.empty()) {
    const TierRule& b = cat.tiers.back();
    int n = 0;
    for (const auto& c : cat.categories) n += !rated[c.id] || score[c.id] < b.min_score;
    rule_text = fmt::format("{}: {} categories under the {} cut-off of {} (at most {} allowed). {}", cat.below_lowest,
                            n, b.tier, Short(b.min_score), b.max_below, cat.ribbon);
  }
  out["tier_by_scores"] = by_scores;
  if (tier.empty() && !short_of.empty()) {
    tier = kInsufficientEvidence;
    decided = fmt::format("minimum evidence (no tier without it): {}",
                          fmt::join(short_of.get<std::vector<std::string>>(), "; "));
    next = {{"tier", "any tier"},
            {"about", cat.minimum.about},
            {"fixes", EvidenceFixes(cat, by_cat, rated, coverage, rated_count)}};
  }
  if (tier.empty()) {
    tier = by_scores;
    decided = "tier rule " + rule_text;
    if (rung > 0) {
      // The shortest list of fixes to the next rung: lift the categories closest to its cut-off,
      // each by its criteria with the largest gain, until enough categories clear it.
      const TierRule& t = cat.tiers[rung - 1];
      std::vector<std::pair<double, const Category*>> below;
      for (const auto& c : cat.categories) {
        if (!rated[c.id] || score[c.id] < t.min_score) below.push_back({t.min_score - score[c.id], &c});
      }
      std::sort(below.begin(), below.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      size_t need = below.size() - std::min(below.size(), static_cast<size_t>(t.max_below));
      json fixes = json::array();
      for (size_t i = 0; i < need; ++i) {
        const Category* c = below[i].second;
        double deficit = below[i].first, total_w = 0;
        for (const auto& k : by_cat[c->id]) total_w += k.applicable ? k.c->weight : 0.0;
        std::vector<std::pair<double, const Crit*>> gains;
        for (const auto& k : by_cat[c->id]) {
          if (k.applicable && k.credit < 1 - 1e-9) gains.push_back({k.c->weight * (1 - k.credit) / total_w, &k});
        }
        std::sort(gains.begin(), gains.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
        double got = 0;
        for (const auto& [gain, k] : gains) {
          if (got >= deficit - 1e-9) break;
          got += gain;
          json actions = json::array();
          for (const auto& x : k->items) {
            if (x.state == "unknown" || (x.state == "credited" && x.credit < 1)) actions.push_back(x.ToJson());
          }
          fixes.push_back({{"category", c->id},
                           {"criterion", k->c->id},
                           {"title", k->c->title},
                           {"verdict", k->verdict},
                           {"gain", Round(gain)},
                           {"items", actions}});
        }
      }
      next = {{"tier", t.tier}, {"cut_off", t.min_score}, {"about", t.about}, {"fixes", fixes}};
    }
  }
  out["tier"] = tier;
  json cut_offs = json::array();
  for (const auto& t : cat.tiers)
    cut_offs.push_back({{"tier", t.tier}, {"min_score", t.min_score}, {"max_below", t.max_below}});
  out["cut_offs"] = cut_offs;  // the ladder's rules, for a chart's cut-off lines
  out["decided_by"] = decided;
  out["tier_rule"] = rule_text;
  out["gates"] = gates;
  out["next_tier"] = next;
  // What is unknown, listed (never credited).
  json unknown = json::array();
  for (const auto& category : cat.categories) {
    for (const auto& k : by_cat[category.id]) {
      if (k.verdict == "unknown") unknown.push_back(k.c->id);
    }
  }
  out["unknown_criteria"] = unknown;
  return out;
}

std::string RenderRating(const json& r, int verbosity) {
  std::string who =
      r["provider"].is_string() ? r["provider"].get<std::string>() : std::string("(no assessment: provider unnamed)");
  if (r["cluster"].is_string()) who += " / " + r["cluster"].get<std::string>();
  std::string out = fmt::format("clustermax rate: {} (ClusterMAX {} criteria, catalog v{})\n", who,
                                r["edition"].get<std::string>(), r["catalog"]["version"].get<int>());
  for (const auto& in : r["inputs"]) {
    out += fmt::format(
        "  input {}{}{}\n", in["dir"].get<std::string>(),
        in.contains("report")
            ? fmt::format(": audit ({}, {} node(s), {})", in["report"]["target"].get<std::string>(),
                          in["report"]["nodes"].get<size_t>(), in["report"]["collected_at"].get<std::string>())
            : "",
        in["benchmarks"].empty() ? "" : fmt::format("; benchmarks {}", in["benchmarks"].dump()));
  }
  out += fmt::format("\nTIER: {}{}\n  decided by {}\n", r["tier"].get<std::string>(),
                     r["tier"] == kInsufficientEvidence ? " (no tier is given without the minimum evidence)" : "",
                     r["decided_by"].get<std::string>());
  if (r["tier"] != r["tier_by_scores"])
    out += fmt::format("  (the category scores alone would give {})\n", r["tier_by_scores"].get<std::string>());
  if (r.contains("evidence")) {
    const json& e = r["evidence"];
    out += fmt::format(
        "  evidence: {:.0f} % of the applicable criteria (by weight), {} of {} categories rated, {} (minimum {:.0f} %, {} categories{})\n",
        e["coverage"].get<double>() * 100, e["rated_categories"].get<int>(), r["categories"].size(),
        e["machine_evidence"].get<bool>() ? "results read from the machine" : "nothing read from the machine",
        e["minimum"]["coverage"].get<double>() * 100, e["minimum"]["rated_categories"].get<int>(),
        e["minimum"]["machine_evidence"].get<bool>() ? ", machine evidence" : "");
  }
  out += "\n  category                                   score  cover  criteria met / partly / unmet / unknown\n";
  for (const auto& c : r["categories"]) {
    int met = 0, partly = 0, unmet = 0, unknown = 0;
    for (const auto& k : c["criteria"]) {
      std::string v = k["verdict"];
      met += v == "met";
      partly += v == "partly-met";
      unmet += v == "unmet";
      unknown += v == "unknown";
    }
    std::string shown =
        c["score"].is_number() ? fmt::format("{:.2f}", c["score"].get<double>()) : std::string("not rated");
    out += fmt::format("  {:<38} {:>9} {:>5.0f}%  {} / {} / {} / {}{}\n", c["title"].get<std::string>(), shown,
                       c["coverage"].get<double>() * 100, met, partly, unmet, unknown,
                       c.contains("not_rated") ? "  (" + c["not_rated"].get<std::string>() + ")" : "");
    if (verbosity > 0) {
      for (const auto& k : c["criteria"]) {
        out += fmt::format("      {:<14} {:<28} {}\n", k["verdict"].get<std::string>(), k["id"].get<std::string>(),
                           k["title"].get<std::string>());
        if (verbosity > 1) {
          for (const auto& x : k["items"]) {
            out += fmt::format("          {:<9} {:<44} {} {}\n", x["state"].get<std::string>(),
                               x["source"].get<std::string>(), x["status"].get<std::string>(),
                               x["detail"].get<std::string>());
          }
        }
      }
    }
  }
  const json& g = r["gates"];
  if (!g["underperforming"].empty()) {
    out += "\n  critical failures (gate 2):\n";
    for (const auto& x : g["underperforming"]) {
      for (const auto& e : x["evidence"]) {
        out += fmt::format("    {}: {} {}: {}\n", x["criterion"].get<std::string>(), e["source"].get<std::string>(),
                           e["status"].get<std::string>(), e["detail"].get<std::string>());
      }
    }
  }
  if (!g["unverified_critical"].empty()) {
    out += "  critical criteria not verified (they do not fire the gate, and are not credited):";
    for (const auto& x : g["unverified_critical"]) out += " " + x["criterion"].get<std::string>();
    out += "\n";
  }
  const json& n = r["next_tier"];
  if (n.is_object()) {
    out += fmt::format("\n  to reach {}{}:\n", n["tier"].get<std::string>(),
                       n.contains("cut_off") ? fmt::format(" ({})", n["about"].get<std::string>()) : "");
    for (const auto& f : n["fixes"]) {
      out += fmt::format("    - {}{}: {}{}\n", f.contains("category") ? f["category"].get<std::string>() + " / " : "",
                         f["criterion"].get<std::string>(), f["title"].get<std::string>(),
                         f.contains("gain") ? fmt::format(" (+{:.2f})", f["gain"].get<double>()) : "");
      const json& items = f.contains("items") ? f["items"] : f["evidence"];
      int shown = 0;
      for (const auto& x : items) {
        if (shown++ == 4 && verbosity == 0) {
          out += fmt::format("        ... {} more (-v)\n", items.size() - 4);
          break;
        }
        out += fmt::format("        {} {}: {}\n", x["source"].get<std::string>(), x["status"].get<std::string>(),
                           x["detail"].get<std::string>());
      }
    }
  }
  if (!r["unknown_criteria"].empty()) {
    out += fmt::format("\n  unknown, not credited ({}): {}\n", r["unknown_criteria"].size(),
                       fmt::join(r["unknown_criteria"].get<std::vector<std::string>>(), ", "));
  }
  return out;
}

json Cohort(const Catalog& cat, const std::vector<json>& all_ratings) {
  struct Row {
    json r;
    double score;
  };
  // A cohort counts providers: a provider rated several times (clusters, re-ratings) is ranked
  // once, by its newest rating (the last given when they carry no date).
  std::vector<json> ratings;
  std::map<std::string, size_t> by_provider;
  json superseded = json::array();
  for (const auto& r : all_ratings) {
    if (r.value("kind", "") != "clustermax.rating")
      throw std::invalid_argument("not a rating (clustermax rate --out FILE)");
    if (r.value("edition", "") != cat.edition) {
      throw std::invalid_argument(
          fmt::format("a rating of edition {} in a cohort of edition {}", r.value("edition", "?"), cat.edition));
    }
    std::string provider = r.value("provider", json("")).is_string() ? r["provider"].get<std::string>() : "";
    auto it = by_provider.find(provider);
    if (provider.empty() || it == by_provider.end()) {
      if (!provider.empty()) by_provider[provider] = ratings.size();
      ratings.push_back(r);
      continue;
    }
    json& kept = ratings[it->second];
    // Newer: the newer collection among its inputs (ties, or none dated: the later in the list).
    auto newest = [](const json& x) {
      std::string t;
      for (const auto& in : x.value("inputs", json::array())) {
        if (in.contains("report") && in["report"].value("collected_at", json()).is_string())
          t = std::max(t, in["report"]["collected_at"].get<std::string>());
      }
      return t;
    };
    bool newer = newest(r) >= newest(kept);
    superseded.push_back({{"provider", provider}, {"cluster", newer ? kept["cluster"] : r["cluster"]}});
    if (newer) kept = r;
  }
  std::vector<Row> ranked, gated;
  for (const auto& r : ratings) {
    double sum = 0;
    size_t n = 0;
    for (const auto& c : r.value("categories", json::array())) {
      if (!c.contains("score") || !c["score"].is_number()) continue;  // not rated: no score to average
      sum += c["score"].get<double>();
      ++n;
    }
    Row row{r, n ? sum / n : 0.0};
    std::string t = r.value("tier", "");
    (t == "UNAVAILABLE" || t == "UNDERPERFORMING" || t == kInsufficientEvidence ? gated : ranked)
        .push_back(std::move(row));
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Row& a, const Row& b) {
    if (a.score != b.score) return a.score > b.score;
    return a.r.value("provider", json("")).dump() < b.r.value("provider", json("")).dump();
  });
  // Band limits: position i gets the first tier whose cumulative share covers it.
  std::vector<std::pair<std::string, size_t>> bands;
  double cum = 0;
  for (const auto& [tier, share] : cat.cohort_shares) {
    cum += share;
    bands.push_back({tier, static_cast<size_t>(std::lround(cum * ranked.size()))});
  }
  json rows = json::array();
  for (size_t i = 0; i < ranked.size(); ++i) {
    std::string rel = cat.cohort_rest;
    for (const auto& [tier, limit] : bands) {
      if (i < limit) {
        rel = tier;
        break;
      }
    }
    const json& r = ranked[i].r;
    rows.push_back({{"rank", i + 1},
                    {"provider", r["provider"]},
                    {"cluster", r["cluster"]},
                    {"score", Round(ranked[i].score)},
                    {"percentile", Round(ranked.size() > 1 ? 1.0 - static_cast<double>(i) / (ranked.size() - 1) : 1.0)},
                    {"relative_tier", rel},
                    {"absolute_tier", r["tier"]}});
  }
  for (const auto& g : gated) {
    rows.push_back({{"rank", nullptr},
                    {"provider", g.r["provider"]},
                    {"cluster", g.r["cluster"]},
                    {"score", Round(g.score)},
                    {"percentile", nullptr},
                    {"relative_tier", g.r["tier"]},
                    {"absolute_tier", g.r["tier"]},
                    {"gate", g.r["decided_by"]}});
  }
  return {{"kind", "clustermax.rating.cohort"},
          {"edition", cat.edition},
          {"about", cat.cohort_about},
          {"ranked", ranked.size()},
          {"gated", gated.size()},
          {"rows", rows},
          {"superseded", superseded}};
}

std::string RenderCohort(const json& c) {
  std::string out =
      fmt::format("clustermax rate --cohort: {} providers ranked, {} held by a gate (ClusterMAX {})\n  {}\n\n",
                  c["ranked"].get<size_t>(), c["gated"].get<size_t>(), c["edition"].get<std::string>(),
                  c["about"].get<std::string>());
  out += fmt::format("  {:>4}  {:<28} {:<16} {:>6} {:>6}  {:<22} {}\n", "rank", "provider", "cluster", "score", "pctl",
                     "relative tier", "absolute tier");
  for (const auto& r : c["rows"]) {
    auto s = [](const json& v) { return v.is_string() ? v.get<std::string>() : std::string("-"); };
    out += fmt::format("  {:>4}  {:<28} {:<16} {:>6.2f} {:>6}  {:<22} {}\n",
                       r["rank"].is_null() ? "-" : std::to_string(r["rank"].get<size_t>()), s(r["provider"]),
                       s(r["cluster"]), r["score"].get<double>(),
                       r["percentile"].is_null() ? "-" : fmt::format("{:.2f}", r["percentile"].get<double>()),
                       s(r["relative_tier"]), s(r["absolute_tier"]));
  }
  return out;
}

}  // namespace clustermax::rating
