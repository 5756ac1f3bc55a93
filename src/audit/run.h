// The audit pipeline: one entry point from a request to a judged, saved report, for the three
// ways an audit runs: this node (or an image under --sysroot), a Slurm fleet (this node's scheduler
// view plus one srun step over every node, each bundle judged as it arrives), and a replay of saved
// bundles. The CLI parses options into an AuditRequest, shows the preview, asks, and prints the
// report; everything between (target detection, planning, collection options, fan-out, judging,
// the run directory) happens here.
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "audit/engine.h"
#include "collect/collector.h"
#include "core/target.h"

namespace clustermax::audit {

// How each node collects: the `audit` and `collect` options alike.
struct CollectSettings {
  double command_timeout_s = 10;
  double counter_interval_s = 10;
  std::vector<std::string> timeouts;  // "ID=SECONDS" per evidence id
  std::string probe_image, enroot_image;
  // The s3-probe's endpoint (read from the environment through the host, so a replay sees it).
  std::string s3_endpoint, s3_bucket, s3_region, s3_addressing;
  // The Kubernetes API the k8s.* collectors ask through kubectl: a kubeconfig file (KUBECONFIG)
  // and a context of it (read through the host, so a replay asks as the recording did).
  std::string kubeconfig, kube_context;
};
// Throws UsageError for a malformed --timeout or an unknown evidence id.
collect::CollectOptions MakeCollectOptions(const CollectSettings& s, const Selection& sel);

// The fleet's scope and limits (--slurm).
struct SlurmScope {
  bool local_only = false;  // --local: this node only, no fan-out
  std::string partition, nodelist, time_limit = "10", bcast;
  int nodes = 0;
  double fleet_timeout_s = 300;
  double node_timeout_s = 120;
};

// The Kubernetes fan-out (--k8s): one DaemonSet whose pods run this binary from an image the
// operator names (audit/k8s_fanout.h). Scope and timeouts are SlurmScope's (--nodes, --local,
// --fleet-timeout, --node-timeout).
struct K8sScope {
  std::string image;  // --k8s-image; empty: the nodes are listed, none is collected
  std::string binary = "/usr/local/bin/clustermax";
  std::string ns = "clustermax";
  std::string node_selector;
  int gpus = -1;
  bool keep = false;
};

struct AuditRequest {
  std::optional<core::Target> target;  // explicit; nullopt: detected (live) or the bundle's (replay)
  std::string target_flag;             // the option that chose it ("--slurm"), for the report
  std::vector<std::string> profiles, checks;
  std::set<std::string> probes;     // active probes enabled by name
  std::vector<std::string> replay;  // bundles or run directories to judge instead of this node
  std::string out_dir;              // "" = DefaultRunsDir()/<timestamp>, a unique name
  std::string sysroot, record;
  const core::MinimumTable* minimums = nullptr;  // required
  CollectSettings collect;
  SlurmScope slurm;
  K8sScope k8s;
  std::vector<std::string> argv;  // stamped into the bundle's manifest
};

// What a live run will do, known before anything is collected: shown to the operator, who may
// stop there (--show, --dry-run, a declined prompt).
struct AuditPreview {
  core::Target target;
  std::string how;  // "detected: ..." or the option that chose the target
  const Plan* plan = nullptr;
  std::vector<std::string> weighed;  // the detection's markers
  bool fleet = false;                // one srun step, or one DaemonSet, over the fleet
  std::string scope;                 // one line: what is audited
};

struct AuditHooks {
  // Called once on a live run with the preview; false stops it before anything is collected.
  std::function<bool(const AuditPreview&)> proceed;
  // A line for the operator (progress, warnings); level 1 lines only matter with -v.
  std::function<void(std::string_view line, int level)> note;
};

struct AuditOutcome {
  std::optional<Report> report;  // none when proceed() stopped the run
  std::filesystem::path saved;   // the run directory; empty when none was written
};

// Runs the whole audit. Throws UsageError for a request that cannot run as asked.
AuditOutcome RunAudit(const AuditRequest& request, const AuditHooks& hooks);

// Where runs go by default: <state dir>/runs.
std::filesystem::path DefaultRunsDir();

// The bundles `--replay` names: files, or run directories (their evidence/*.json), each once.
std::vector<std::string> ReplayPaths(const std::vector<std::string>& given);

// The selection and settings as `clustermax collect` arguments, so every node collects exactly
// what the plan needs.
std::vector<std::string> CollectArgs(const CollectSettings& s, double node_timeout_s, const Selection& sel);

}  // namespace clustermax::audit
