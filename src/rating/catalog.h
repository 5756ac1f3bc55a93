// The criteria catalog of one ClusterMAX edition (data/rating/<edition>.json): the 10 categories,
// every criterion with its evidence sources (audit check ids, benchmark metric ids or patterns,
// an attested assessment key), the hard gates, the credit rules and our tier cut-offs.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::rating {

struct Category {
  std::string id, title;
  double weight = 1;
};

struct AssessmentItem {
  std::string key, help;
};

struct Criterion {
  std::string id, category, title;
  double weight = 1;
  bool critical = false;  // an unmet, proven critical criterion forces UNDERPERFORMING
  std::vector<std::string> checks;
  std::vector<std::string> metrics;  // exact ids or "prefix.*"
  std::optional<AssessmentItem> assessment;
};

struct TierRule {
  std::string tier;
  double min_score = 0;
  int max_below = 0;  // categories allowed under min_score
  std::string about;
};

// No tier without evidence: below any of these the outcome is INSUFFICIENT_EVIDENCE (not a tier).
struct MinimumEvidence {
  double coverage = 0.5;         // share of the applicable criteria's weight that has evidence
  int rated_categories = 0;      // categories with evidence for at least one criterion
  bool machine_evidence = true;  // at least one item read from the machine (check or benchmark)
  std::string about;
};

// The outcome of a rating that does not meet the catalog's minimum evidence.
inline constexpr const char* kInsufficientEvidence = "INSUFFICIENT_EVIDENCE";

struct Catalog {
  std::string edition, origin, about, ribbon;
  std::string below_lowest;  // the tier when no rung's rule is met (3.0: the ribbon)
  int version = 0;
  std::vector<std::string> ladder;
  std::map<std::string, std::string> unavailable_classes;
  std::vector<Category> categories;
  std::vector<TierRule> tiers;  // best first
  MinimumEvidence minimum;
  std::vector<Criterion> criteria;
  std::map<std::string, double> status_credit;  // PASS, WARN, FAIL
  std::vector<std::string> warn_no_credit, excluded_reasons;
  std::map<std::string, std::string> cli_only;  // check id -> why it is not rated
  // Relative tiers of a cohort: shares of the ranked providers per tier, best first, the rest.
  std::vector<std::pair<std::string, double>> cohort_shares;
  std::string cohort_rest, cohort_about;

  const Category* FindCategory(const std::string& id) const;
  const Criterion* FindCriterion(const std::string& id) const;
};

// Throws std::runtime_error naming the origin and the problem (unknown category, duplicate id, a
// criterion without a source, tiers out of order, ...).
Catalog ParseCatalog(const std::string& text, const std::string& origin);
// The catalog embedded for `edition` ("2.0", "3.0"); throws std::invalid_argument for another edition.
const Catalog& EmbeddedCatalog(const std::string& edition);

// "gpu.gemm.*" matches "gpu.gemm.bf16"; anything else must match exactly.
bool MetricMatches(const std::string& pattern, const std::string& id);

}  // namespace clustermax::rating
