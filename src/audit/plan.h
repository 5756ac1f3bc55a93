// The plan: which checks run, which are out of scope or wait for a probe, and which collectors
// (evidence) are needed. The dry run prints this plan; the live run executes the same plan, so
// the plan cannot promise what the run does not do.
#pragma once
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "util/usage_error.h"

namespace clustermax::audit {

// Profile name -> categories. "all" selects everything.
const std::map<std::string, std::vector<std::string>>& Profiles();

struct Selection {
  core::Target target = core::Target::kStandalone;
  std::vector<std::string> profiles;  // empty = all
  std::vector<std::string> checks;    // explicit check ids (empty = all in the profiles)
  std::set<std::string> probes;       // active probes enabled
};

enum class PlanState { kRun, kNotInScope, kProbeDisabled };

struct PlannedCheck {
  const core::Check* check = nullptr;
  PlanState state = PlanState::kRun;
};

struct Plan {
  Selection selection;
  std::vector<PlannedCheck> checks;
  std::vector<std::string> collectors;  // evidence ids to collect, sorted
  // The same split by where a fleet audit collects them: on every node, or once on the login node.
  std::vector<std::string> node_collectors, cluster_collectors;
  nlohmann::json ToJson() const;
};

// Throws UsageError for an unknown profile, check id or probe name.
Plan BuildPlan(const core::Registry& registry, const Selection& selection);

}  // namespace clustermax::audit
