// `clustermax rate`: audit reports, benchmark results and an assessment in; criterion verdicts,
// category scores, the hard gates, the tier and its explanation out (rating.md section 9; the model
// is ours and lives in data/rating/<edition>.json).
//
//   item credit   check: PASS 1, WARN 0.5 (0 for unverified / attestation-required /
//                 evidence-error), FAIL 0, SKIP not-applicable / not-in-scope / tool-fault
//                 excluded, other SKIP unknown; benchmark grade: PASS 1, WARN 0.5, FAIL 0, SKIP
//                 excluded; assessment: yes 1, partial 0.5, no 0. Unknown counts 0 and is listed.
//   criterion     mean item credit: met, partly-met, unmet, unknown, not-applicable
//   category      weighted mean of its criteria (not-applicable ones left out); "not rated"
//                 (score null, below every cut-off) when none of its criteria has evidence
//   gates         UNAVAILABLE (assessment class), then UNDERPERFORMING (a critical criterion
//                 proven unmet: a FAIL read from the machine or a "no" attested), then
//                 INSUFFICIENT_EVIDENCE (not a tier: below the catalog's minimum_evidence, i.e.
//                 coverage of the applicable criteria, rated categories, machine evidence)
//   tier          the best rung whose cut-off every category meets but `max_below` of them;
//                 otherwise PARTICIPATION_RIBBON
//   next tier     the fewest criteria whose fixing lifts enough categories over the next cut-off
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rating/assessment.h"
#include "rating/catalog.h"

namespace clustermax::rating {

struct RunInput {
  std::string dir;
  std::optional<nlohmann::json> report;  // report.json
  std::vector<nlohmann::json> benches;   // bench/*.json
};

// Reads RUN_DIR/report.json and RUN_DIR/bench/*.json. Throws std::runtime_error when the directory
// holds neither, or a file is not a complete result (bad JSON, wrong kind or schema).
RunInput LoadRunDir(const std::filesystem::path& dir);

nlohmann::json Rate(const Catalog& catalog, const std::vector<RunInput>& runs,
                    const std::optional<Assessment>& assessment);

std::string RenderRating(const nlohmann::json& rating, int verbosity = 0);

// Cohort mode: several ratings (rate --out) of one edition ranked together. Providers past the
// gates are ordered by mean category score and given relative tiers in the catalog's shares;
// gated providers keep their gate. Each row shows the relative tier next to the absolute one.
// Throws std::invalid_argument for a rating of another edition or kind.
nlohmann::json Cohort(const Catalog& catalog, const std::vector<nlohmann::json>& ratings);
std::string RenderCohort(const nlohmann::json& cohort);

}  // namespace clustermax::rating
