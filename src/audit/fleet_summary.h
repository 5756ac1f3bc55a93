// The fleet's derived evidence ("fleet.summary"): which nodes answered, one line of facts per node
// (driver, kernel, firmware, CUDA, NCCL, GPU model and count, PCIe links, ECC...), and drift: every
// fact that should be uniform but is not, with the majority value and the odd nodes out. Pure: a
// function of the nodes' evidence, so a replay of the bundles computes the same summary.
#pragma once
#include <vector>

#include "audit/engine.h"
#include "core/evidence.h"

namespace clustermax::audit {

// `login`: the login node's own facts (same extractors), for comparing what users build with against
// what the nodes run; null when absent.
core::Evidence FleetSummary(const std::vector<const NodeEvidence*>& nodes,
                            const std::vector<UnreachableNode>& unreachable, const NodeEvidence* login = nullptr);

// The same from each node's facts, taken when the node was judged (FleetJudge keeps these, not the
// evidence): one value per fact ("" unknown), in the order of the summary's facts_compared.
struct NodeFacts {
  std::string node;
  std::string partial;  // the manifest's: the collection stopped early (why)
  std::vector<std::string> values;
};
NodeFacts FactsOf(const NodeEvidence& n);
core::Evidence FleetSummary(const std::vector<const NodeFacts*>& nodes, const std::vector<UnreachableNode>& unreachable,
                            const NodeFacts* login);

}  // namespace clustermax::audit
