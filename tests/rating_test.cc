// Rating: the catalog covers every check and benchmark metric, the assessment file, item credit,
// the gates, the ladder and the fixes to the next tier; `clustermax rate` on recorded runs.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/gpu_bench.h"
#include "bench/grade.h"
#include "checks/register.h"
#include "rating/assessment.h"
#include "rating/catalog.h"
#include "rating/rate.h"
#include "testutil.h"

namespace clustermax::rating {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

const Catalog& Cat() { return EmbeddedCatalog("3.0"); }

json RatingOf(const std::string& provider, const std::string& tier, double score) {
  return {{"kind", "clustermax.rating"},
          {"edition", "3.0"},
          {"provider", provider},
          {"cluster", "c"},
          {"tier", tier},
          {"decided_by", "test"},
          {"categories", {{{"id", "security"}, {"score", score}}, {{"id", "storage"}, {"score", score}}}}};
}

TEST(RatingCatalog, EveryCheckCountsTowardOneCriterionOrIsCliOnly) {
  std::map<std::string, std::string> owner;
  for (const auto& c : Cat().criteria) {
    for (const auto& id : c.checks) owner[id] = c.id;
  }
  for (const auto& check : checks::DefaultRegistry().all()) {
    const std::string& id = check.info.id;
    EXPECT_TRUE(owner.count(id) || Cat().cli_only.count(id)) << id << " maps to no criterion and is not CLI-only";
    EXPECT_FALSE(owner.count(id) && Cat().cli_only.count(id)) << id;
  }
  // And no criterion names a check that does not exist.
  for (const auto& [id, crit] : owner)
    EXPECT_NE(checks::DefaultRegistry().Find(id), nullptr) << crit << " names unknown check " << id;
  for (const auto& [id, why] : Cat().cli_only) EXPECT_NE(checks::DefaultRegistry().Find(id), nullptr) << id;
}

TEST(RatingCatalog, EveryBenchmarkMetricCountsTowardACriterion) {
  std::vector<std::string> metrics;
  for (const auto& m : bench::EmbeddedBenchThresholds()["metrics"]) metrics.push_back(m["id"]);
  const json gpu_bars = bench::GpuThresholds(json::object(), bench::EmbeddedGpuPeaks());
  for (const auto& m : gpu_bars["metrics"]) metrics.push_back(m["id"]);
  ASSERT_GT(metrics.size(), 40u);
  for (const auto& id : metrics) {
    int n = 0;
    for (const auto& c : Cat().criteria) {
      for (const auto& p : c.metrics) n += MetricMatches(p, id);
    }
    EXPECT_EQ(n, 1) << id << " counts toward " << n << " criteria";
  }
  EXPECT_TRUE(MetricMatches("gpu.gemm.*", "gpu.gemm.bf16"));
  EXPECT_FALSE(MetricMatches("gpu.gemm.*", "gpu.gemm."));
  EXPECT_FALSE(MetricMatches("gpu.gemm.*", "gpu.gemmx"));
  EXPECT_FALSE(MetricMatches("gpu.hbm", "gpu.hbm2"));
}

TEST(RatingCatalog, TenCategoriesAndTheLadderOf30) {
  EXPECT_EQ(Cat().categories.size(), 10u);
  EXPECT_EQ(Cat().ladder, (std::vector<std::string>{"PLATINUM", "GOLD", "SILVER", "BRONZE", "PARTICIPATION_RIBBON",
                                                    "UNDERPERFORMING", "UNAVAILABLE"}));
  for (const auto& cat : Cat().categories) {
    bool any = false;
    for (const auto& c : Cat().criteria) any |= c.category == cat.id;
    EXPECT_TRUE(any) << cat.id << " has no criterion";
  }
  // The critical criteria of rating.md 3.2.
  for (const char* id :
       {"sec-attestation", "life-gpu-generation", "life-pcie-acs", "life-gpudirect", "price-no-billing-when-down"}) {
    ASSERT_NE(Cat().FindCriterion(id), nullptr) << id;
    EXPECT_TRUE(Cat().FindCriterion(id)->critical) << id;
  }
  EXPECT_THROW(EmbeddedCatalog("9.9"), std::invalid_argument);
}

std::string MiniCatalog(const std::string& criteria_override = "") {
  // One assessment criterion per category, so a test sets category scores exactly.
  json j = json::parse(clustermax::testing::ReadFixture("../../data/rating/3.0.json"));
  json crits = json::array();
  for (const auto& c : j["categories"]) {
    crits.push_back({{"id", "c-" + c["id"].get<std::string>()},
                     {"category", c["id"]},
                     {"title", "about " + c["id"].get<std::string>()},
                     {"assessment", {{"key", "k." + c["id"].get<std::string>()}}}});
  }
  crits[0]["critical"] = true;
  crits[1]["checks"] = {"pcie-acs"};
  crits[1]["critical"] = true;
  j["criteria"] = crits;
  if (!criteria_override.empty()) j["criteria"] = json::parse(criteria_override);
  return j.dump();
}

TEST(RatingCatalog, Edition20DerivesFrom30WithItsOwnLadder) {
  const Catalog& c20 = EmbeddedCatalog("2.0");
  EXPECT_EQ(c20.edition, "2.0");
  EXPECT_EQ(c20.ladder,
            (std::vector<std::string>{"PLATINUM", "GOLD", "SILVER", "BRONZE", "UNDERPERFORMING", "UNAVAILABLE"}));
  EXPECT_EQ(c20.below_lowest, "UNDERPERFORMING");
  EXPECT_EQ(c20.criteria.size(), Cat().criteria.size());
  EXPECT_NE(c20.FindCriterion("sec-attestation")->title.find("Type I"), std::string::npos);
  EXPECT_TRUE(c20.unavailable_classes.count("sold-out"));
  EXPECT_FALSE(c20.unavailable_classes.count("not-launched"));
  // 2.0's published shares: 1 P, 5 G, 12 S, 19 B and 22 U among 59.
  std::vector<json> ratings;
  for (int i = 0; i < 59; ++i) {
    json r = RatingOf(fmt::format("p{:02d}", i), "BRONZE", 1.0 - i / 100.0);
    r["edition"] = "2.0";
    ratings.push_back(r);
  }
  std::map<std::string, int> n;
  const json cohort = Cohort(c20, ratings);
  for (const auto& r : cohort["rows"]) n[r["relative_tier"]]++;
  EXPECT_EQ(n["PLATINUM"], 1);
  EXPECT_EQ(n["GOLD"], 5);
  EXPECT_EQ(n["SILVER"], 12);
  EXPECT_EQ(n["BRONZE"], 19);
  EXPECT_EQ(n["UNDERPERFORMING"], 22);
  EXPECT_THROW(ParseCatalog(R"({"base": "9.9"})", "x.json"), std::runtime_error);
  EXPECT_THROW(ParseCatalog(R"({"base": "3.0", "criteria_overrides": {"nope": {}}})", "x.json"), std::runtime_error);
}

TEST(RatingCatalog, BadCatalogsAreRefusedWithTheReason) {
  EXPECT_NO_THROW(ParseCatalog(MiniCatalog(), "mini"));
  auto refuse = [](const std::string& crits, const std::string& want) {
    try {
      ParseCatalog(MiniCatalog(crits), "mini.json");
      ADD_FAILURE() << "accepted: " << crits;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  refuse(R"([{"id":"a","category":"security","title":"t"}])", "has no source");
  refuse(R"([{"id":"a","category":"cooking","title":"t","checks":["x"]}])", "unknown category 'cooking'");
  refuse(
      R"([{"id":"a","category":"security","title":"t","checks":["x"]},{"id":"a","category":"security","title":"t","checks":["y"]}])",
      "listed twice");
  refuse(
      R"([{"id":"a","category":"security","title":"t","checks":["x"]},{"id":"b","category":"security","title":"t","checks":["x"]}])",
      "two criteria");
  EXPECT_THROW(ParseCatalog("{", "broken.json"), std::runtime_error);
}

Assessment Answers(const Catalog& cat, const std::map<std::string, std::string>& a, const std::string& extra = "") {
  std::string y = "edition: \"3.0\"\nprovider: P\n" + extra + "answers:\n";
  // Each answer with its source, as an attestation that earns full credit.
  for (const auto& [k, v] : a)
    y += "  " + k + ":\n    answer: " + v + "\n    source: \"https://example.com/" + k + "\"\n";
  return ParseAssessment(y, "test.yaml", cat);
}

TEST(RatingAssessment, TemplateParsesBackAndEveryKeyIsThere) {
  std::string t = AssessmentTemplate(Cat());
  std::string filled = std::regex_replace(t, std::regex("provider: \"\""), "provider: \"X\"");
  Assessment a = ParseAssessment(filled, "template", Cat());
  int keys = 0;
  for (const auto& c : Cat().criteria) keys += c.assessment.has_value();
  EXPECT_EQ(static_cast<int>(a.answers.size()), keys);
  for (const auto& [k, ans] : a.answers) EXPECT_EQ(ans.value, "unknown") << k;
  EXPECT_FALSE(a.unavailable);
  EXPECT_NE(t.find("CRITICAL"), std::string::npos);
}

TEST(RatingAssessment, ErrorsNameTheLine) {
  auto err = [](const std::string& y) {
    try {
      ParseAssessment(y, "a.yaml", Cat());
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(err("edition: \"3.0\"\nprovider: P\nanswers:\n  security.soc2_or_iso27001: maybe\n")
                .rfind("a.yaml:4: answer for security.soc2", 0),
            0u);
  EXPECT_NE(err("edition: \"3.0\"\nprovider: P\nanswers:\n  made.up: yes\n")
                .find("a.yaml:4: unknown assessment key 'made.up'"),
            std::string::npos);
  EXPECT_NE(err("edition: \"2.0\"\nprovider: P\n").find("does not match"), std::string::npos);
  EXPECT_NE(err("edition: \"3.0\"\nprovider: P\nunavailable: bored\n").find("unknown unavailable class 'bored'"),
            std::string::npos);
  EXPECT_NE(err("edition: \"3.0\"\n").find("'provider' is missing"), std::string::npos);
  EXPECT_NE(err("edition: [").find("a.yaml"), std::string::npos);
  EXPECT_NE(err("edition: \"3.0\"\nprovider: P\ncolour: blue\n").find("unknown field 'colour'"), std::string::npos);
  // Plain yes/no (booleans to a YAML 1.1 reader) are the words.
  Assessment a = Answers(Cat(), {{"security.soc2_or_iso27001", "yes"}, {"pricing.no_billing_when_down", "no"}});
  EXPECT_EQ(a.answers["security.soc2_or_iso27001"].value, "yes");
  EXPECT_EQ(a.answers["pricing.no_billing_when_down"].value, "no");
}

json Result(const std::string& id, const std::string& status, const std::string& reason = "") {
  return {{"id", id},
          {"status", status},
          {"reason", reason.empty() ? json(nullptr) : json(reason)},
          {"message", id + " said " + status}};
}

RunInput Report(std::vector<json> results) {
  RunInput r;
  r.dir = "run";
  r.report = json{{"schema_version", 1},
                  {"target", "standalone"},
                  {"collected_at", "2026-11-30T00:00:00Z"},
                  {"nodes", {"n1"}},
                  {"results", results}};
  return r;
}

const json& CriterionOf(const json& rating, const std::string& id) {
  for (const auto& c : rating["categories"]) {
    for (const auto& k : c["criteria"]) {
      if (k["id"] == id) return k;
    }
  }
  throw std::runtime_error("no criterion " + id);
}

TEST(RatingScore, ItemCreditFollowsTheRules) {
  // orch-containers: pyxis, enroot, enroot-import, singularity, docker-workers, container-gpu-launch.
  json r = Rate(Cat(),
                {Report({Result("pyxis", "PASS"), Result("enroot", "WARN", "config"), Result("singularity", "FAIL"),
                         Result("docker-workers", "SKIP", "not-applicable"),
                         Result("container-gpu-launch", "SKIP", "probe-disabled")})},
                std::nullopt);
  const json& k = CriterionOf(r, "orch-containers");
  // (1 + 0.5 + 0) / 5 items that count (the not-applicable one is left out; the probe-disabled one and
  // enroot-import, absent from the report, are unknown).
  EXPECT_NEAR(k["credit"].get<double>(), 1.5 / 5, 1e-3);
  EXPECT_EQ(k["verdict"], "partly-met");
  // WARN on evidence we could not read: unknown, not half credit.
  json u = Rate(Cat(), {Report({Result("mpi-srun-pmix", "WARN", "unverified")})}, std::nullopt);
  EXPECT_EQ(CriterionOf(u, "orch-mpi")["verdict"], "unknown");
  json t = Rate(Cat(), {Report({Result("mpi-srun-pmix", "WARN", "tool-fault")})}, std::nullopt);
  EXPECT_EQ(CriterionOf(t, "orch-mpi")["verdict"], "not-applicable");
  json m = Rate(Cat(), {Report({Result("mpi-srun-pmix", "PASS")})}, std::nullopt);
  EXPECT_EQ(CriterionOf(m, "orch-mpi")["verdict"], "met");
  json f = Rate(Cat(), {Report({Result("mpi-srun-pmix", "FAIL")})}, std::nullopt);
  EXPECT_EQ(CriterionOf(f, "orch-mpi")["verdict"], "unmet");
  // Not audited at all: unknown, listed.
  json none = Rate(Cat(), {}, std::nullopt);
  EXPECT_EQ(CriterionOf(none, "orch-mpi")["verdict"], "unknown");
  EXPECT_NE(std::find(none["unknown_criteria"].begin(), none["unknown_criteria"].end(), "orch-mpi"),
            none["unknown_criteria"].end());
}

TEST(RatingScore, SeveralRunsAFailAnywhereDecides) {
  json r =
      Rate(Cat(), {Report({Result("mpi-srun-pmix", "PASS")}), Report({Result("mpi-srun-pmix", "FAIL")})}, std::nullopt);
  EXPECT_EQ(CriterionOf(r, "orch-mpi")["verdict"], "unmet");
  json w = Rate(Cat(), {Report({Result("mpi-srun-pmix", "PASS")}), Report({Result("mpi-srun-pmix", "WARN", "config")})},
                std::nullopt);
  EXPECT_NEAR(CriterionOf(w, "orch-mpi")["credit"].get<double>(), 0.5, 1e-9);
}

TEST(RatingScore, BenchmarkGradesCount) {
  RunInput b;
  b.dir = "b";
  b.benches.push_back(
      {{"kind", "clustermax.bench.storage"},
       {"grades",
        {{{"metric", "storage.seq-read"}, {"verdict", "PASS"}, {"value", 9.1}, {"pass", 5}, {"unit", "GB/s"}},
         {{"metric", "storage.seq-write"}, {"verdict", "FAIL"}, {"value", 0.4}, {"pass", 2}, {"unit", "GB/s"}},
         {{"metric", "storage.small-file-rate"}, {"verdict", "SKIP"}, {"reason", "not run"}}}}});
  json r = Rate(Cat(), {b}, std::nullopt);
  const json& k = CriterionOf(r, "stor-performance");
  EXPECT_NEAR(k["credit"].get<double>(), 0.5, 1e-9);                        // PASS and FAIL; the SKIP is left out
  EXPECT_EQ(CriterionOf(r, "life-gpu-performance")["verdict"], "unknown");  // no GPU result in the input
}

TEST(RatingGates, UnavailableIsAParticipationClass) {
  Assessment a = Answers(Cat(), {}, "unavailable: declined\n");
  json r = Rate(Cat(), {}, a);
  EXPECT_EQ(r["tier"], "UNAVAILABLE");
  EXPECT_NE(r["decided_by"].get<std::string>().find("not a verdict on quality"), std::string::npos);
  EXPECT_TRUE(r["next_tier"].is_null());
}

TEST(RatingGates, ACriticalFailureReadFromTheMachineForcesUnderperforming) {
  Assessment a = Answers(Cat(), {{"security.soc2_or_iso27001", "yes"}});
  json r = Rate(Cat(), {Report({Result("pcie-acs", "FAIL")})}, a);
  EXPECT_EQ(r["tier"], "UNDERPERFORMING");
  ASSERT_EQ(r["gates"]["underperforming"].size(), 1u);
  EXPECT_EQ(r["gates"]["underperforming"][0]["criterion"], "life-pcie-acs");
  EXPECT_EQ(r["gates"]["underperforming"][0]["evidence"][0]["source"], "check:pcie-acs");
  EXPECT_EQ(r["next_tier"]["fixes"][0]["criterion"], "life-pcie-acs");
  // Unverified (a VM cannot read ACS): listed, never fires the gate.
  json v = Rate(Cat(), {Report({Result("pcie-acs", "WARN", "attestation-required")})}, a);
  EXPECT_NE(v["tier"], "UNDERPERFORMING");
  bool listed = false;
  for (const auto& g : v["gates"]["unverified_critical"]) listed |= g["criterion"] == "life-pcie-acs";
  EXPECT_TRUE(listed);
}

TEST(RatingGates, ACriticalNoAttestedForcesUnderperforming) {
  json r = Rate(Cat(), {}, Answers(Cat(), {{"pricing.no_billing_when_down", "no"}}));
  EXPECT_EQ(r["tier"], "UNDERPERFORMING");
  EXPECT_EQ(r["gates"]["underperforming"][0]["criterion"], "price-no-billing-when-down");
}

// The ladder on a catalog with one attested criterion per category.
json RateMini(const std::map<std::string, std::string>& answers) {
  static const Catalog mini = ParseCatalog(MiniCatalog(), "mini");
  std::map<std::string, std::string> all;
  for (const auto& c : mini.categories) all["k." + c.id] = "yes";
  for (const auto& [k, v] : answers) all[k] = v;
  return Rate(mini, {Report({Result("pcie-acs", "PASS")})}, Answers(mini, all));
}

TEST(RatingLadder, Edition20HasNoRibbon) {
  json j = json::parse(MiniCatalog());
  json e20 = json::parse(clustermax::testing::ReadFixture("../../data/rating/2.0.json"));
  for (const char* k : {"edition", "ladder", "below_lowest", "ribbon", "unavailable_classes", "cohort"}) j[k] = e20[k];
  Catalog mini20 = ParseCatalog(j.dump(), "mini20");
  std::map<std::string, std::string> all;
  for (const auto& c : mini20.categories) all["k." + c.id] = "yes";
  for (const char* k : {"k.storage", "k.pricing", "k.availability", "k.partnerships"}) all[k] = "no";
  std::string y = "edition: \"2.0\"\nprovider: P\nanswers:\n";
  for (const auto& [k, v] : all) y += "  " + k + ": " + v + "\n";
  json r = Rate(mini20, {Report({Result("pcie-acs", "PASS")})}, ParseAssessment(y, "a.yaml", mini20));
  EXPECT_EQ(r["tier"], "UNDERPERFORMING");  // 3.0 would give the ribbon
  EXPECT_NE(r["decided_by"].get<std::string>().find("UNDERPERFORMING"), std::string::npos);
  EXPECT_TRUE(r["gates"]["underperforming"].empty());  // the rule, not a critical failure
}

TEST(RatingAssessment, AYesWithoutASourceEarnsHalf) {
  std::string y = "edition: \"3.0\"\nprovider: P\nanswers:\n  security.penetration_tests: yes\n";
  json r = Rate(Cat(), {}, ParseAssessment(y, "a.yaml", Cat()));
  bool seen = false;
  for (const auto& c : r["categories"]) {
    for (const auto& k : c["criteria"]) {
      for (const auto& x : k["items"]) {
        if (x["source"] == "assessment:security.penetration_tests") {
          seen = true;
          EXPECT_NE(x["detail"].get<std::string>().find("half credit"), std::string::npos) << x.dump();
        }
      }
    }
  }
  EXPECT_TRUE(seen);
  EXPECT_EQ(Answers(Cat(), {{"security.penetration_tests", "yes"}}).answers.at("security.penetration_tests").source,
            "https://example.com/security.penetration_tests");
}

TEST(RatingLadder, TiersFollowTheCutOffs) {
  EXPECT_EQ(RateMini({})["tier"], "PLATINUM");
  json gold = RateMini({{"k.storage", "partial"}});
  EXPECT_EQ(gold["tier"], "GOLD");  // one category at 0.5, one allowed below 0.80
  EXPECT_EQ(gold["next_tier"]["tier"], "PLATINUM");
  ASSERT_EQ(gold["next_tier"]["fixes"].size(), 1u);
  EXPECT_EQ(gold["next_tier"]["fixes"][0]["criterion"], "c-storage");
  EXPECT_EQ(RateMini({{"k.storage", "partial"}, {"k.pricing", "partial"}})["tier"], "SILVER");
  EXPECT_EQ(RateMini({{"k.storage", "no"}, {"k.pricing", "no"}, {"k.availability", "partial"}})["tier"], "BRONZE");
  json ribbon =
      RateMini({{"k.storage", "no"}, {"k.pricing", "no"}, {"k.availability", "no"}, {"k.partnerships", "no"}});
  EXPECT_EQ(ribbon["tier"], "PARTICIPATION_RIBBON");
  EXPECT_EQ(ribbon["next_tier"]["tier"], "BRONZE");
  EXPECT_EQ(ribbon["next_tier"]["fixes"].size(), 1u);  // one category back over 0.50 is enough
  // Unknown is never credited: an unanswered category is a 0.
  EXPECT_EQ(RateMini({{"k.storage", "unknown"}})["tier"], "GOLD");
  // The critical attested item of the mini catalog ("no") overrides the scores.
  json under = RateMini({{"k.security", "no"}});
  EXPECT_EQ(under["tier"], "UNDERPERFORMING");
  EXPECT_EQ(under["tier_by_scores"], "GOLD");
}

const json& CategoryOf(const json& rating, const std::string& id) {
  for (const auto& c : rating["categories"]) {
    if (c["id"] == id) return c;
  }
  throw std::runtime_error("no category " + id);
}

// Issue 14 class 9: no tier without evidence.
TEST(RatingEvidence, NoRunsAndABlankAssessmentGiveNoTier) {
  std::string blank = "edition: \"3.0\"\nprovider: P\n";
  json r = Rate(Cat(), {}, ParseAssessment(blank, "blank.yaml", Cat()));
  EXPECT_EQ(r["tier"], kInsufficientEvidence);
  EXPECT_FALSE(r["evidence"]["meets_minimum"].get<bool>());
  EXPECT_EQ(r["evidence"]["coverage"], 0.0);
  EXPECT_EQ(r["evidence"]["rated_categories"], 0);
  EXPECT_FALSE(r["evidence"]["machine_evidence"].get<bool>());
  EXPECT_NE(r["decided_by"].get<std::string>().find("0 % of the applicable criteria"), std::string::npos)
      << r["decided_by"];
  for (const auto& c : r["categories"]) {
    EXPECT_FALSE(c["rated"].get<bool>()) << c["id"];
    EXPECT_TRUE(c["score"].is_null()) << c["id"];  // not 0, not 1: no score at all
  }
  // The way out names what evidence to bring, one unrated category at a time.
  ASSERT_TRUE(r["next_tier"].is_object());
  EXPECT_GE(r["next_tier"]["fixes"].size(), 8u);
  EXPECT_NE(RenderRating(r).find("INSUFFICIENT_EVIDENCE (no tier is given"), std::string::npos);
}

TEST(RatingEvidence, AttestationsAloneAreNotARatingOneMachineResultIs) {
  std::map<std::string, std::string> all;
  for (const auto& c : Cat().criteria) {
    if (c.assessment) all[c.assessment->key] = "yes";
  }
  json words = Rate(Cat(), {}, Answers(Cat(), all));
  EXPECT_EQ(words["tier"], kInsufficientEvidence);
  EXPECT_FALSE(words["evidence"]["machine_evidence"].get<bool>());
  EXPECT_NE(words["decided_by"].get<std::string>().find("nothing read from the machine"), std::string::npos)
      << words["decided_by"];
  // Mutation: one result read from the machine, and the same answers give a tier.
  // A Slurm audit's report lists the Kubernetes-only rows as not in scope: left out, not unknown.
  // (Its rows must cover half the criteria by weight with the attestations: the measured-only
  // criteria, bench results the report does not carry, count against that.)
  std::vector<json> results = {Result("pcie-acs", "PASS"), Result("mpi-srun-pmix", "PASS"),
                               Result("nccl-installed", "PASS"), Result("gpudirect-rdma", "PASS")};
  for (const auto& check : checks::DefaultRegistry().all())
    if (check.info.targets == core::kK) results.push_back(Result(check.info.id, "SKIP", "not-in-scope"));
  // And the reliability phase's fault drill, recorded on the CI cluster: measured-only criteria
  // need their bench results.
  RunInput run = Report(results);
  run.benches.push_back(json::parse(clustermax::testing::ReadFixture("reliability/drill-xid-ci.json")));
  run.benches.push_back(json::parse(clustermax::testing::ReadFixture("reliability/burnin-ci.json")));
  json with = Rate(Cat(), {run}, Answers(Cat(), all));
  EXPECT_TRUE(with["evidence"]["machine_evidence"].get<bool>());
  EXPECT_NE(with["tier"], kInsufficientEvidence) << with["decided_by"];
}

TEST(RatingEvidence, ACategoryWithoutEvidenceIsNotRatedAndNeverMeetsACutOff) {
  // The mini catalog: one attested criterion per category. Storage unanswered: not rated.
  json r = RateMini({{"k.storage", "unknown"}});
  const json& st = CategoryOf(r, "storage");
  EXPECT_FALSE(st["rated"].get<bool>());
  EXPECT_TRUE(st["score"].is_null());
  EXPECT_NE(st["not_rated"].get<std::string>().find("no evidence"), std::string::npos);
  EXPECT_EQ(r["tier"], "GOLD");  // the one category allowed below 0.80
  EXPECT_NE(r["tier_rule"].get<std::string>().find("storage not rated"), std::string::npos) << r["tier_rule"];
  // A category whose every item is excluded (not applicable) is not rated either, not 1.00.
  json j = json::parse(MiniCatalog());
  j["criteria"][4]["assessment"] = nullptr;
  j["criteria"][4].erase("assessment");
  j["criteria"][4]["checks"] = {"nccl-ib-qps-entropy"};
  Catalog c = ParseCatalog(j.dump(), "mini-na");
  std::string cat_id = j["criteria"][4]["category"];
  std::map<std::string, std::string> all;
  for (const auto& k : c.criteria) {
    if (k.assessment) all[k.assessment->key] = "yes";
  }
  json na = Rate(c, {Report({Result("pcie-acs", "PASS"), Result("nccl-ib-qps-entropy", "SKIP", "not-applicable")})},
                 Answers(c, all));
  EXPECT_TRUE(CategoryOf(na, cat_id)["score"].is_null()) << CategoryOf(na, cat_id).dump();
  EXPECT_NE(CategoryOf(na, cat_id)["not_rated"].get<std::string>().find("no criterion applies"), std::string::npos);
  // Mutation: the same check read as PASS rates the category at 1.
  json read = Rate(c, {Report({Result("pcie-acs", "PASS"), Result("nccl-ib-qps-entropy", "PASS")})}, Answers(c, all));
  EXPECT_EQ(CategoryOf(read, cat_id)["score"], 1.0);
}

TEST(RatingEvidence, TheMinimumCoverageIsTheCatalogs) {
  // Mini catalog, every category answered: 100 % coverage. Raise the minimum rated categories past
  // what the answers give and the tier goes away; the reason names the numbers.
  json j = json::parse(MiniCatalog());
  j["minimum_evidence"]["rated_categories"] = 10;
  Catalog strict = ParseCatalog(j.dump(), "strict");
  std::map<std::string, std::string> all;
  for (const auto& c : strict.categories) all["k." + c.id] = "yes";
  all["k.pricing"] = "unknown";
  json r = Rate(strict, {Report({Result("pcie-acs", "PASS")})}, Answers(strict, all));
  EXPECT_EQ(r["tier"], kInsufficientEvidence);
  EXPECT_NE(r["decided_by"].get<std::string>().find("9 of 10 categories rated, 10 needed"), std::string::npos)
      << r["decided_by"];
  ASSERT_EQ(r["next_tier"]["fixes"].size(), 1u);
  EXPECT_EQ(r["next_tier"]["fixes"][0]["criterion"], "c-pricing");
  all["k.pricing"] = "partial";
  EXPECT_NE(Rate(strict, {Report({Result("pcie-acs", "PASS")})}, Answers(strict, all))["tier"], kInsufficientEvidence);
  // A catalog cannot ask for more categories than it has.
  j["minimum_evidence"]["rated_categories"] = 11;
  EXPECT_THROW(ParseCatalog(j.dump(), "impossible"), std::runtime_error);
  j["minimum_evidence"]["rated_categories"] = 8;
  j["minimum_evidence"]["coverage"] = 1.5;
  EXPECT_THROW(ParseCatalog(j.dump(), "impossible"), std::runtime_error);
}

TEST(RatingEvidence, ACohortRanksOnlyRatingsWithATier) {
  json thin = RatingOf("thin", kInsufficientEvidence, 1.0);
  json unrated = RatingOf("half", "SILVER", 0.8);
  unrated["categories"].push_back({{"id", "pricing"}, {"score", nullptr}, {"rated", false}});
  json c = Cohort(Cat(), {thin, unrated});
  EXPECT_EQ(c["ranked"], 1);
  EXPECT_EQ(c["gated"], 1);
  EXPECT_EQ(c["rows"][0]["provider"], "half");
  EXPECT_NEAR(c["rows"][0]["score"].get<double>(), 0.8, 1e-9);  // the mean of the rated categories
}

TEST(RatingCohort, RelativeTiersFollowThePublishedShares) {
  // 34 providers past the gates, as in 3.0: 2 Platinum, 2 Gold, 5 Silver, 10 Bronze, 15 ribbons.
  std::vector<json> ratings;
  for (int i = 0; i < 34; ++i) ratings.push_back(RatingOf(fmt::format("p{:02d}", i), "BRONZE", 1.0 - i / 100.0));
  ratings.push_back(RatingOf("gated", "UNDERPERFORMING", 0.99));
  json c = Cohort(Cat(), ratings);
  EXPECT_EQ(c["ranked"], 34);
  EXPECT_EQ(c["gated"], 1);
  std::map<std::string, int> n;
  for (const auto& r : c["rows"]) n[r["relative_tier"]]++;
  EXPECT_EQ(n["PLATINUM"], 2);
  EXPECT_EQ(n["GOLD"], 2);
  EXPECT_EQ(n["SILVER"], 5);
  EXPECT_EQ(n["BRONZE"], 10);
  EXPECT_EQ(n["PARTICIPATION_RIBBON"], 15);
  EXPECT_EQ(n["UNDERPERFORMING"], 1);  // a gate is never outranked by a score
  EXPECT_EQ(c["rows"][0]["provider"], "p00");
  EXPECT_EQ(c["rows"][0]["absolute_tier"], "BRONZE");  // shown side by side
  EXPECT_EQ(c["rows"].back()["provider"], "gated");
  json other = RatingOf("x", "GOLD", 0.5);
  other["edition"] = "2.0";
  EXPECT_THROW(Cohort(Cat(), {other}), std::invalid_argument);
  EXPECT_THROW(Cohort(Cat(), {json{{"kind", "something"}}}), std::invalid_argument);
  EXPECT_EQ(Cohort(Cat(), {})["rows"].size(), 0u);
}

fs::path TempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("cm-rate-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(RatingInput, RunDirectoriesAreCheckedBeforeUse) {
  fs::path d = TempDir("input");
  EXPECT_THROW(LoadRunDir(d / "missing"), std::runtime_error);
  try {
    LoadRunDir(d);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not a clustermax run directory"), std::string::npos);
  }
  std::ofstream(d / "report.json") << R"({"schema_version": 1, "results": [)";
  try {
    LoadRunDir(d);
    ADD_FAILURE();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("was the run interrupted?"), std::string::npos) << e.what();
  }
  std::ofstream(d / "report.json", std::ios::trunc)
      << clustermax::testing::ReadFixture("../golden/debian12-container-cpu.json");
  fs::create_directories(d / "bench");
  std::ofstream(d / "bench" / "x.json") << R"({"kind": "something.else"})";
  EXPECT_THROW(LoadRunDir(d), std::runtime_error);
  fs::remove(d / "bench" / "x.json");
  RunInput in = LoadRunDir(d);
  EXPECT_TRUE(in.report.has_value());
  fs::remove_all(d);
}

TEST(RatingCommand, ANetworkRunFeedsTheMeasuredNetworkingCriterion) {
  // bench net on the CI cluster with n2 paced down: the pairwise search named n2, so the
  // criterion built on the net.* grades fails, and says which grade did it.
  fs::path d = TempDir("net");
  fs::create_directories(d / "run" / "bench");
  std::ofstream(d / "run" / "bench" / "net.json")
      << clustermax::testing::ReadFixture("net/bench/ci-3node-planted-n2.json");
  auto r = clustermax::testing::RunShell(std::string(CLUSTERMAX_BINARY) + " rate " + (d / "run").string() +
                                         " --json 2>/dev/null");
  json got = json::parse(r.out);
  bool seen = false;
  for (const auto& cat : got["categories"]) {
    for (const auto& c : cat.value("criteria", json::array())) {
      if (c["id"] != "net-measured") continue;
      seen = true;
      EXPECT_EQ(cat["id"], "networking");
      EXPECT_LT(c["credit"].get<double>(), 1.0) << c.dump();
      bool failed = false;
      for (const auto& i : c["items"])
        failed |= i["source"] == "metric:net.pairwise-worst-node" && i["status"] == "FAIL";
      EXPECT_TRUE(failed) << c.dump();
    }
  }
  EXPECT_TRUE(seen) << r.out.substr(0, 2000);
  fs::remove_all(d);
}

TEST(RatingCommand, AnInferenceRunFeedsTheServingCriterion) {
  // A recorded bench infer run with refused requests: the lifecycle criterion built on infer.*
  // loses credit and names the grade that failed.
  fs::path d = TempDir("infer");
  fs::create_directories(d / "run" / "bench");
  std::ofstream(d / "run" / "bench" / "infer.json") << clustermax::testing::ReadFixture("infer/scripted-run.json");
  auto r = clustermax::testing::RunShell(std::string(CLUSTERMAX_BINARY) + " rate " + (d / "run").string() +
                                         " --json 2>/dev/null");
  json got = json::parse(r.out);
  bool seen = false;
  for (const auto& cat : got["categories"])
    for (const auto& c : cat.value("criteria", json::array())) {
      if (c["id"] != "life-inference-serving") continue;
      seen = true;
      EXPECT_EQ(cat["id"], "lifecycle");
      EXPECT_LT(c["credit"].get<double>(), 1.0) << c.dump();
      bool failed = false;
      for (const auto& i : c["items"]) failed |= i["source"] == "metric:infer.failed-requests" && i["status"] == "FAIL";
      EXPECT_TRUE(failed) << c.dump();
    }
  EXPECT_TRUE(seen) << r.out.substr(0, 2000);
  fs::remove_all(d);
}

TEST(RatingCommand, RecordedRunsGiveATierWithItsExplanation) {
  fs::path d = TempDir("cmd");
  fs::create_directories(d / "run" / "bench");
  std::ofstream(d / "run" / "report.json") << clustermax::testing::ReadFixture("../golden/debian12-container-cpu.json");
  std::ofstream(d / "run" / "bench" / "gpu.json")
      << clustermax::testing::ReadFixture("gpu/h200-bench-gpu-2026-11-30.json");
  std::string cli = CLUSTERMAX_BINARY;
  std::string as = clustermax::testing::Fixture("rating/assessment-example.yaml").string();
  auto r = clustermax::testing::RunShell(cli + " rate " + (d / "run").string() + " --assessment " + as + " --out " +
                                         (d / "rating.json").string() + " -vv");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("TIER: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("decided by"), std::string::npos);
  EXPECT_NE(r.out.find("Example Cloud / h200-lab"), std::string::npos);
  EXPECT_NE(r.out.find("metric:gpu.wrong-results"), std::string::npos);  // -vv shows the evidence
  json saved = json::parse(*util::ReadLocalFile(d / "rating.json"));
  EXPECT_EQ(saved["kind"], "clustermax.rating");
  EXPECT_EQ(saved["categories"].size(), 10u);
  auto t = clustermax::testing::RunShell(cli + " rate --template");
  EXPECT_EQ(t.code, 0);
  EXPECT_NE(t.out.find("security.soc2_or_iso27001:"), std::string::npos);
  std::ofstream(d / "other.json") << RatingOf("Other Cloud", "SILVER", 0.95).dump();
  auto co = clustermax::testing::RunShell(cli + " rate --cohort " + (d / "rating.json").string() + " " +
                                          (d / "other.json").string());
  EXPECT_EQ(co.code, 0) << co.out;
  EXPECT_NE(co.out.find("2 providers ranked"), std::string::npos) << co.out;
  EXPECT_NE(co.out.find("Other Cloud"), std::string::npos);
  // No tier without evidence: the rating is still printed, and the exit status is 2.
  std::ofstream(d / "blank.yaml") << "edition: \"3.0\"\nprovider: Thin Cloud\n";
  auto thin = clustermax::testing::RunShell(cli + " rate --assessment " + (d / "blank.yaml").string());
  EXPECT_EQ(thin.code, 2) << thin.out;
  EXPECT_NE(thin.out.find("TIER: INSUFFICIENT_EVIDENCE"), std::string::npos) << thin.out;
  EXPECT_NE(thin.out.find("not rated"), std::string::npos) << thin.out;
  // --min-tier: a CI gate on the tier, by the edition's ladder.
  std::string rated = cli + " rate " + (d / "run").string() + " --assessment " + as;
  json got = json::parse(clustermax::testing::RunShell(rated + " --json").out);
  ASSERT_TRUE(got["tier"].is_string());
  EXPECT_EQ(clustermax::testing::RunShell(rated + " --min-tier " + got["tier"].get<std::string>()).code, 0);
  EXPECT_EQ(clustermax::testing::RunShell(rated + " --min-tier PLATINUM").code, got["tier"] == "PLATINUM" ? 0 : 2);
  auto typo = clustermax::testing::RunShell(rated + " --min-tier PLATINUMM");
  EXPECT_EQ(typo.code, 1);
  EXPECT_NE(typo.out.find("not a tier of edition 3.0"), std::string::npos) << typo.out;
  auto bad = clustermax::testing::RunShell(cli + " rate " + d.string());
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("not a clustermax run directory"), std::string::npos) << bad.out;
  fs::remove_all(d);
}

}  // namespace
}  // namespace clustermax::rating
