// The check contract. A check is a self-describing unit (CheckInfo) plus a pure judge:
// evidence in, finding out. Judges never do I/O; the same evidence always gives the same finding.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/evidence.h"
#include "core/finding.h"
#include "core/minimums.h"
#include "core/target.h"
#include "util/time.h"

namespace clustermax::core {

// The ten audit categories, in report order.
const std::vector<std::string>& Categories();

struct Reference {
  std::string label;  // "CVE-2026-24260", "NVIDIA a_id 5850"
  std::string url;
};

// An active probe: anything that changes state, loads a GPU, starts a container or sends traffic.
// Probes run only when requested by name (--probe NAME) or all together (--active).
struct ProbeInfo {
  std::string name;
  std::string description;
  std::string side_effects;
  int budget_s = 30;
};
const std::vector<ProbeInfo>& Probes();
const ProbeInfo* FindProbe(std::string_view name);

struct CheckInfo {
  std::string id;        // stable kebab-case id (the public ClusterMAX criterion id where one exists)
  std::string category;  // one of Categories()
  std::string title;
  std::string rationale;
  std::string remediation;
  std::string criterion;  // ClusterMAX criterion it counts toward, empty if none
  std::vector<Reference> references;
  TargetMask targets = kAllTargets;
  std::vector<std::string> needs;  // evidence ids the judge reads
  std::string probe;               // active probe the check uses, empty when passive
  bool probe_required = false;     // true: without the probe the check is SKIP probe-disabled
  // The Kubernetes half's probe where the halves measure through different probes (prolog-fast:
  // slurm-job on Slurm, k8s-gpu-pod on Kubernetes); empty: `probe` on every target.
  std::string k8s_probe;
  bool critical = false;  // feeds a rating hard gate
  // Judged once, on the scheduler's view from the login node (fleet audits), instead of on every
  // node: Slurm configuration, coverage and drift across nodes.
  bool cluster = false;
  // Cluster checks that compare the nodes: evidence every compute node collects so the fleet
  // summary's per-node facts hold it (a selection of this check alone still collects it).
  std::vector<std::string> node_needs;
  std::string reproduce;  // a command an operator can run to see the evidence

  // "P", "P + A:perf-sample", "A:container-launch" or "P + A:slurm-job/k8s-gpu-pod".
  std::string Mode() const;
  // The probe the check uses on `target` (empty when passive).
  const std::string& ProbeFor(Target target) const;
};

class JudgeContext;
using JudgeFn = std::function<Finding(const JudgeContext&)>;

struct Check {
  CheckInfo info;
  JudgeFn judge;
};

// What a judge sees: the node's evidence, the minimum table and the collection time.
class JudgeContext {
 public:
  JudgeContext(const CheckInfo& info, const EvidenceSet& evidence, const MinimumTable& minimums, Target target,
               util::SysTime now)
      : info_(info), evidence_(evidence), minimums_(minimums), target_(target), now_(now) {}

  // Returns the evidence item; an item the check did not declare in `needs` is a programming
  // error and throws std::logic_error (caught by the registry test). Missing items come back
  // with status not-collected.
  const Evidence& Get(std::string_view id) const;
  const MinimumTable& minimums() const { return minimums_; }
  Target target() const { return target_; }
  util::SysTime now() const { return now_; }
  const CheckInfo& info() const { return info_; }

 private:
  const CheckInfo& info_;
  const EvidenceSet& evidence_;
  const MinimumTable& minimums_;
  Target target_;
  util::SysTime now_;
};

// Turns a failed evidence read into the finding principle 1 asks for: WARN evidence-error with the
// raw error, never PASS. Returns nullopt when the evidence is ok.
std::optional<Finding> EvidenceProblem(const Evidence& e, std::string_view what);

class Registry {
 public:
  // Throws std::invalid_argument for a duplicate or malformed id or an unknown category.
  void Add(Check check);
  const std::vector<Check>& all() const { return checks_; }
  const Check* Find(std::string_view id) const;

 private:
  std::vector<Check> checks_;
};

bool IsKebabCase(std::string_view id);

}  // namespace clustermax::core
