// The audit engine: collect a node's evidence through a Host (recording it into a bundle),
// then judge every planned check on every node, purely, and roll the findings up.
#pragma once
#include <map>
#include <optional>
#include <cstdint>
#include <iterator>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "audit/plan.h"
#include "collect/collector.h"
#include "core/minimums.h"
#include "host/bundle.h"
#include "util/time.h"

namespace clustermax::audit {

inline constexpr int kReportSchemaVersion = 1;

struct NodeEvidence {
  std::string node;  // hostname from the bundle manifest (the Slurm node name in a fleet)
  host::Manifest manifest;
  core::EvidenceSet evidence;
  std::vector<std::string> replay_misses;  // requests the bundle could not answer (replay only)
  std::string role;                        // manifest role: "", "login" or "compute"
  // Replays sharing a collect::CollectorMemo: its serial of each evidence item it kept. Two nodes
  // with the same serials for a check's `needs` have identical evidence there (FleetJudge judges
  // that check once for both).
  std::map<std::string, uint64_t> memo_serials;
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

// Distinct findings of one check: most nodes of a fleet agree, so each finding is stored once.
class FindingTable {
 public:
  uint32_t Intern(core::Finding f);
  const core::Finding& operator[](uint32_t i) const { return distinct_[i]; }
  size_t size() const { return distinct_.size(); }

 private:
  std::vector<core::Finding> distinct_;
  std::unordered_multimap<size_t, uint32_t> index_;  // hash of a finding -> its indexes
};

// The per-node findings of one check, compact: a node is an index into a table of names (shared by
// every check of a fleet report) and its finding an index into the check's FindingTable. Reads like
// a vector of NodeFinding (size, [], range-for over {node, finding} references).
class NodeFindings {
 public:
  struct Ref {
    const std::string& node;
    const core::Finding& finding;
  };
  struct Row {
    uint32_t name = 0;
    uint32_t finding = 0;
  };
  class Iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = Ref;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Ref;
    Iterator(const NodeFindings* o, size_t i) : o_(o), i_(i) {}
    Ref operator*() const { return (*o_)[i_]; }
    Iterator& operator++() {
      ++i_;
      return *this;
    }
    bool operator==(const Iterator& b) const { return i_ == b.i_; }
    bool operator!=(const Iterator& b) const { return i_ != b.i_; }

   private:
    const NodeFindings* o_;
    size_t i_;
  };

  NodeFindings() = default;
  NodeFindings(std::shared_ptr<const std::vector<std::string>> names, FindingTable table, std::vector<Row> rows)
      : names_(std::move(names)), table_(std::move(table)), rows_(std::move(rows)) {}
  void push_back(NodeFinding n);  // a name of its own
  void reserve(size_t n) { rows_.reserve(n); }
  size_t size() const { return rows_.size(); }
  bool empty() const { return rows_.empty(); }
  Ref operator[](size_t i) const { return {(*names_)[rows_[i].name], table_[rows_[i].finding]}; }
  Ref front() const { return (*this)[0]; }
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, rows_.size()}; }
  const std::vector<std::string>* names() const { return names_.get(); }
  const std::vector<Row>& rows() const { return rows_; }
  const FindingTable& table() const { return table_; }

 private:
  std::shared_ptr<const std::vector<std::string>> names_;
  std::shared_ptr<std::vector<std::string>> own_names_;  // push_back's names (names_ points here)
  FindingTable table_;
  std::vector<Row> rows_;
};

struct CheckResult {
  const core::CheckInfo* info = nullptr;
  core::Finding finding;  // rolled up over nodes
  NodeFindings nodes;
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
  std::vector<std::string> replay_misses;    // "node: request"
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
// The node's name as its scheduler knows it, for a fleet's compute node: SLURMD_NODENAME in a Slurm
// step (several slurmd may share one host), CLUSTERMAX_NODE_NAME in a Kubernetes fan-out pod (the
// pod's spec.nodeName); nullopt elsewhere.
std::optional<std::string> SchedulerNodeName(host::Host& h);

// `role` (stored in the manifest) picks the collectors: "" all of the plan's, "login" the cluster
// checks', "compute" the node checks'. A fleet's compute node names itself by SchedulerNodeName.
NodeEvidence CollectNode(host::Host& live, const Plan& plan, const collect::CollectOptions& opts, host::Bundle& bundle,
                         const std::string& role = "");

// Re-collects from a saved bundle (collectors run against a ReplayHost; nothing touches the machine).
// Replays of many nodes share a memo (collect/memo.h): a collector answered as on an earlier node
// is not run again.
NodeEvidence ReplayNode(const host::Bundle& bundle, const Plan& plan, const collect::CollectOptions& opts,
                        collect::CollectorMemo* memo = nullptr);

// A fleet judged node by node as the nodes' evidence arrives (a replay's bundle files, a fan-out's
// bundles): each node's checks are judged when it is added and only its compact findings, its
// fleet-summary facts and its report lines are kept (a login node keeps its evidence for the cluster
// checks). Memory stays flat in the node count but for those. Finish() gives the report Judge would
// give for the nodes in slot order (the regression test compares the two).
class FleetJudge {
 public:
  // `now`: the first node's collection start (Judge's "now"); `slots`: how many nodes will be added.
  FleetJudge(const Plan& plan, const core::MinimumTable& minimums, util::SysTime now, size_t slots);
  ~FleetJudge();
  // Thread-safe; each slot once.
  void Add(size_t slot, NodeEvidence n);
  struct Duplicate {
    size_t slot;
    std::string node, started_at;
  };
  // With `drop_duplicates`, a slot with the node name and collection start of an earlier slot is
  // left out (listed in `duplicates`); `kept` receives the slots judged.
  Report Finish(const std::vector<UnreachableNode>& unreachable, bool drop_duplicates,
                std::vector<Duplicate>* duplicates = nullptr, std::vector<size_t>* kept = nullptr);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// Loads, replays and judges bundle files on every core, one bundle per core in memory at a time
// (FleetJudge); the same collection given twice is judged once (listed in `duplicates`), `kept`
// receives the indexes of the paths judged. Throws host::BundleError naming the first unreadable file.
Report ReplayAndJudgeFiles(const std::vector<std::string>& paths, const Plan& plan, const collect::CollectOptions& opts,
                           const core::MinimumTable& minimums, std::vector<FleetJudge::Duplicate>* duplicates,
                           std::vector<size_t>* kept);
// A fleet judged as its compute nodes' bundles arrive, in any order and from any number of threads:
// each bundle is replayed and judged by the thread adding it (through the replay memo) and can be
// dropped when Add returns; only compact findings are kept. The report is the one JudgeFleet gives
// for the same bundles in index order, byte for byte.
class FleetStream {
 public:
  FleetStream(NodeEvidence login, size_t computes, const Plan& plan, const collect::CollectOptions& opts,
              const core::MinimumTable& minimums);
  ~FleetStream();
  void Add(size_t index, const host::Bundle& bundle);  // thread-safe; index < computes, each once
  Report Finish(const std::vector<UnreachableNode>& unreachable);

 private:
  struct State;
  std::unique_ptr<State> s_;
};

// A fleet audit: the login node's evidence and the compute nodes' bundles, replayed and judged on
// every core (FleetStream).
Report JudgeFleet(NodeEvidence login, const std::vector<host::Bundle>& bundles, const Plan& plan,
                  const collect::CollectOptions& opts, const core::MinimumTable& minimums,
                  const std::vector<UnreachableNode>& unreachable);

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
