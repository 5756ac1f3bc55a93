// The audit engine: collect a node's evidence through a Host (recording it into a bundle),
// then judge every planned check on every node, purely, and roll the findings up.
#pragma once
#include <string>
#include <vector>

#include "audit/plan.h"
#include "collect/collector.h"
#include "core/minimums.h"
#include "host/bundle.h"

namespace clustermax::audit {

inline constexpr int kReportSchemaVersion = 1;

struct NodeEvidence {
  std::string node;                  // hostname from the bundle manifest (the Slurm node name in a fleet)
  host::Manifest manifest;
  core::EvidenceSet evidence;
  std::vector<std::string> replay_misses;  // requests the bundle could not answer (replay only)
  std::string role;                        // manifest role: "", "login" or "compute"
};

struct NodeFinding {
  std::string node;
  core::Finding finding;
};

// A node a fleet audit asked for that returned no evidence, and why (down, drained, timed out...).
struct UnreachableNode {
  std::string node;
  std::string reason;
};

struct CheckResult {
  const core::CheckInfo* info = nullptr;
  core::Finding finding;  // rolled up over nodes
  std::vector<NodeFinding> nodes;
};

struct Report {
  std::string tool_version;
  std::string git_sha;
  std::string mode;          // "live", "replay" or "review"
  std::string collected_at;  // the evidence time used as "now" by the judges
  Plan plan;
  std::string minimums_origin;
  std::string minimums_generated;
  std::vector<std::string> nodes;
  std::vector<CheckResult> results;
  std::vector<std::string> replay_misses;  // "node: request"
  std::vector<UnreachableNode> unreachable;  // fleet audits: nodes asked for that returned nothing
  nlohmann::json fleet;                      // fleet audits: coverage and drift (null otherwise)
  // What target detection weighed and decided (the first node's manifest); null when not recorded.
  nlohmann::json target_detection;
  // "node: evidence-id: request, ..." for evidence an image (--sysroot) could not give: the
  // commands, PATH lookups, environment and NVML that would have been the auditing host's.
  std::vector<std::string> not_taken;
  int Count(core::Verdict v) const;
};

// Collects the plan's evidence on one node through `live` and records every answer into `bundle`.
// `role` (stored in the manifest) picks the collectors: "" all of the plan's, "login" the cluster
// checks', "compute" the node checks'. A Slurm fleet node names itself by SLURMD_NODENAME.
NodeEvidence CollectNode(host::Host& live, const Plan& plan, const collect::CollectOptions& opts, host::Bundle& bundle,
                         const std::string& role = "");

// Re-collects from a saved bundle (collectors run against a ReplayHost; nothing touches the machine).
NodeEvidence ReplayNode(const host::Bundle& bundle, const Plan& plan, const collect::CollectOptions& opts);

// Loads and replays bundle files in parallel (one worker per core), keeping only each node's
// evidence: bundles are freed as soon as they are judged-ready. Throws host::BundleError naming
// the first unreadable file.
std::vector<NodeEvidence> ReplayFiles(const std::vector<std::string>& paths, const Plan& plan,
                                      const collect::CollectOptions& opts);
// The same for bundles already in memory (a fleet audit's srun output), in parallel.
std::vector<NodeEvidence> ReplayBundles(const std::vector<host::Bundle>& bundles, const Plan& plan,
                                        const collect::CollectOptions& opts);

// Pure judgement of all nodes. `now` is the collection time (the first node's manifest start).
// In a fleet (nodes with roles), node checks are judged on the compute nodes and cluster checks on
// the login node, which also receives the derived evidence "fleet.summary" (coverage, per-node
// facts, drift); `unreachable` nodes count in every node check's "N of M" and keep it from PASS.
Report Judge(const Plan& plan, const std::vector<NodeEvidence>& nodes, const core::MinimumTable& minimums,
             const std::vector<UnreachableNode>& unreachable = {});

// 0 clean; 2 any FAIL among the selected checks (0 with exit_zero).
int ExitCodeFor(const Report& r, bool exit_zero);

// Fills the manifest with the tool's identity.
void StampManifest(host::Manifest& m, const std::vector<std::string>& argv);

}  // namespace clustermax::audit
