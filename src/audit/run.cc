#include "audit/run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "audit/k8s_fanout.h"
#include "audit/run_dir.h"
#include "audit/slurm_fanout.h"
#include "checks/register.h"
#include "host/local_host.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/time.h"
#include "util/usage_error.h"

namespace clustermax::audit {
namespace fs = std::filesystem;
using nlohmann::json;

collect::CollectOptions MakeCollectOptions(const CollectSettings& s, const Selection& sel) {
  collect::CollectOptions o;
  o.command_timeout = std::chrono::milliseconds(static_cast<long long>(s.command_timeout_s * 1000));
  o.probes = sel.probes;
  o.counter_interval = std::chrono::milliseconds(static_cast<long long>(s.counter_interval_s * 1000));
  if (!s.probe_image.empty()) o.probe_image = s.probe_image;
  if (!s.enroot_image.empty()) o.enroot_image = s.enroot_image;
  // The s3-probe reads its endpoint from the environment (through the host, so a replay sees it).
  auto set = [](const char* k, const std::string& v) {
    if (!v.empty()) ::setenv(k, v.c_str(), 1);
  };
  set("CLUSTERMAX_S3_ENDPOINT", s.s3_endpoint);
  set("CLUSTERMAX_S3_BUCKET", s.s3_bucket);
  set("CLUSTERMAX_S3_REGION", s.s3_region);
  set("CLUSTERMAX_S3_ADDRESSING", s.s3_addressing);
  set("KUBECONFIG", s.kubeconfig);
  set("CLUSTERMAX_KUBE_CONTEXT", s.kube_context);
  for (const auto& t : s.timeouts) {
    size_t eq = t.find('=');
    double secs = 0;
    if (eq == std::string::npos || !(std::istringstream(t.substr(eq + 1)) >> secs) || secs <= 0) {
      throw UsageError("--timeout expects ID=SECONDS, got '" + t + "'");
    }
    std::string id = t.substr(0, eq);
    if (!collect::FindCollector(id)) throw UsageError("--timeout: unknown evidence id '" + id + "'");
    o.timeouts[id] = std::chrono::milliseconds(static_cast<long long>(secs * 1000));
  }
  return o;
}

fs::path DefaultRunsDir() { return util::StateDir() / "runs"; }

std::vector<std::string> ReplayPaths(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  std::set<fs::path> seen;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(p, ec);
    if (seen.insert(ec ? p : c).second) out.push_back(p.string());
  };
  for (const auto& g : given) {
    if (!fs::is_directory(g)) {
      add(g);
      continue;
    }
    fs::path ev = fs::path(g) / "evidence";
    if (!fs::is_directory(ev))
      throw UsageError(fmt::format("--replay {}: a directory, but not a run directory (no evidence/)", g));
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(ev)) {
      if (e.path().extension() == ".json" && e.path().filename().string()[0] != '.') files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    if (files.empty()) throw UsageError(fmt::format("--replay {}: the run directory holds no evidence bundle", g));
    for (const auto& f : files) add(f);
  }
  return out;
}

std::vector<std::string> CollectArgs(const CollectSettings& s, double node_timeout_s, const Selection& sel) {
  std::vector<std::string> out = {"--target=" + std::string(core::ToString(sel.target))};
  for (const auto& p : sel.profiles) out.push_back("--profile=" + p);
  for (const auto& c : sel.checks) out.push_back("--check=" + c);
  for (const auto& p : sel.probes) out.push_back("--probe=" + p);
  out.push_back(fmt::format("--command-timeout={}", s.command_timeout_s));
  out.push_back(fmt::format("--counter-interval={}", s.counter_interval_s));
  for (const auto& t : s.timeouts) out.push_back("--timeout=" + t);
  if (!s.probe_image.empty()) out.push_back("--probe-image=" + s.probe_image);
  if (!s.enroot_image.empty()) out.push_back("--enroot-image=" + s.enroot_image);
  out.push_back(fmt::format("--node-timeout={}", node_timeout_s));
  return out;
}

namespace {

Selection SelectionOf(const AuditRequest& r) {
  Selection sel;
  sel.profiles = r.profiles;
  sel.checks = r.checks;
  sel.probes = r.probes;
  return sel;
}

void Note(const AuditHooks& h, std::string_view line, int level = 0) {
  if (h.note) h.note(line, level);
}

// Judges saved bundles (from other machines): no collection, no prompt.
AuditOutcome Replay(const AuditRequest& r, const AuditHooks& hooks) {
  std::vector<std::string> paths = ReplayPaths(r.replay);
  Selection sel = SelectionOf(r);
  // The first bundle's manifest gives the target and probes of the collection.
  host::Bundle first = host::Bundle::Load(paths.front());
  sel.target = r.target.value_or(core::TargetFromString(first.manifest.target).value_or(core::Target::kStandalone));
  if (sel.probes.empty()) sel.probes.insert(first.manifest.probes.begin(), first.manifest.probes.end());
  Plan plan = BuildPlan(checks::DefaultRegistry(), sel);
  auto opts = MakeCollectOptions(r.collect, sel);
  // Loaded, replayed and judged one bundle per core at a time; the same collection given twice (a
  // copy of a bundle, a run directory and one of its files) is one node.
  std::vector<FleetJudge::Duplicate> duplicates;
  std::vector<size_t> kept;
  AuditOutcome out;
  out.report = ReplayAndJudgeFiles(paths, plan, opts, *r.minimums, &duplicates, &kept);
  Report& report = *out.report;
  for (const auto& d : duplicates) {
    Note(hooks,
         fmt::format("clustermax: warning: {} is the same collection as an earlier bundle ({} at {}); judged once",
                     util::EscapeControls(paths[d.slot]), util::EscapeControls(d.node), d.started_at));
  }
  report.mode = "replay";
  if (!r.out_dir.empty()) {
    // Re-saved as a run directory: the report of this judgement beside byte copies of the bundles.
    RunDir run(r.out_dir, /*unique_name=*/false);
    for (size_t i = 0; i < kept.size(); ++i) run.SaveEvidence(report.nodes[i], *util::ReadLocalFile(paths[kept[i]]));
    out.saved = run.Commit(report);
  }
  if (!report.replay_misses.empty()) {
    Note(hooks, fmt::format("clustermax: warning: {} request(s) not in the evidence bundle(s); see the report header",
                            report.replay_misses.size()));
  }
  return out;
}

// Weighs every VM, container and scheduler marker (core::DetectTarget; the rule is documented
// there and in docs/ARCHITECTURE.md). Read through `h`, so a recording host keeps the answers.
core::TargetDetection DetectTarget(host::Host& h) {
  collect::CollectOptions o;
  o.command_timeout = std::chrono::seconds(3);
  return core::DetectTarget(collect::CollectEvidence(h, {"os.virtualization", "os.cpuinfo", "pci.devices"}, o));
}

// One line: what a live run audits.
std::string ScopeLine(const AuditRequest& r, core::Target target, bool fleet) {
  std::string hn = util::Hostname();
  if (!r.sysroot.empty()) {
    return fmt::format(
        "the image under {} (its files only: commands, PATH, environment and NVML would be this host's and are not taken)",
        r.sysroot);
  }
  if (!fleet) return fmt::format("this node: {}", hn);
  if (target == core::Target::kK8s) {
    std::string nodes = r.k8s.node_selector.empty() ? "the GPU nodes (every node if none has GPUs)"
                                                    : "the nodes matching " + r.k8s.node_selector;
    if (r.k8s.image.empty())
      return fmt::format(
          "Kubernetes cluster: {}, listed but not collected (no --k8s-image); cluster checks through "
          "the API from {}",
          nodes, hn);
    return fmt::format(
        "Kubernetes cluster: {} (one DaemonSet in namespace {}, image {}, deleted afterwards{}; cluster "
        "checks through the API from {})",
        nodes, r.k8s.ns, r.k8s.image, r.k8s.keep ? " unless --keep: kept" : "", hn);
  }
  const char* job = std::getenv("SLURM_JOB_ID");
  std::string nodes = !r.slurm.nodelist.empty()    ? "nodes " + r.slurm.nodelist
                      : !r.slurm.partition.empty() ? "partition " + r.slurm.partition
                      : job                        ? fmt::format("the nodes of job {}", job)
                                                   : std::string("every schedulable node");
  return fmt::format("Slurm fleet: {} (one srun step, node checks on every node; scheduler checks from {})", nodes, hn);
}

// The fleet's bundles through Slurm (one srun step) or Kubernetes (one DaemonSet).
FanOutResult Launch(const AuditRequest& r, core::Target target, const Plan& plan, host::LocalHost& local,
                    const BundleStream& stream, const AuditHooks& hooks) {
  std::vector<std::string> collect_args = CollectArgs(r.collect, r.slurm.node_timeout_s, plan.selection);
  if (target == core::Target::kK8s) {
    K8sFanOutOptions ko;
    ko.image = r.k8s.image;
    ko.binary = r.k8s.binary;
    ko.ns = r.k8s.ns;
    ko.node_selector = r.k8s.node_selector;
    ko.nodes = r.slurm.nodes;
    ko.gpus = r.k8s.gpus;
    ko.keep = r.k8s.keep;
    ko.timeout_s = r.slurm.fleet_timeout_s;
    // A pod that makes no progress (unschedulable, no image, crashing) for a fifth of the fan-out's
    // time, at most a minute, is given up: the audit does not wait out nodes that will not answer.
    ko.stuck_s = std::clamp(r.slurm.fleet_timeout_s / 5, 1.0, 60.0);
    ko.context = r.collect.kube_context;
    ko.collect_args = collect_args;
    Note(hooks, r.k8s.image.empty() ? "  fan-out:  listing the nodes (no --k8s-image: none is collected)..."
                                    : "  fan-out:  one DaemonSet over the nodes in scope...");
    return FanOutThroughKubernetes(local, ko, stream);
  }
  SlurmFanOutOptions fo;
  fo.partition = r.slurm.partition;
  fo.nodelist = r.slurm.nodelist;
  fo.nodes = r.slurm.nodes;
  fo.time_limit = r.slurm.time_limit;
  fo.timeout_s = r.slurm.fleet_timeout_s;
  fo.bcast = r.slurm.bcast;
  fo.self_exe = util::SelfExe();
  fo.collect_args = collect_args;
  Note(hooks, "  fan-out:  sinfo, then one srun step over the nodes in scope...");
  return FanOutThroughSlurm(local, fo, stream);
}

// The cluster's view here (scheduler or API), the node checks on every node through the fan-out.
// Each node's bundle is saved, replayed and judged on one of the cores as it arrives, then dropped:
// memory holds compact findings, not the fleet's evidence.
Report FanOut(const AuditRequest& r, core::Target target, const Plan& plan, const collect::CollectOptions& opts,
              host::LocalHost& local, host::Bundle& bundle, RunDir& run, const AuditHooks& hooks) {
  NodeEvidence login = CollectNode(local, plan, opts, bundle, "login");
  run.SaveBundle(bundle.manifest.hostname, bundle);
  std::optional<FleetStream> judged;
  std::vector<std::string> targets;
  BundleStream stream;
  stream.workers = std::max(1u, std::thread::hardware_concurrency());
  stream.on_targets = [&](const std::vector<std::string>& t) {
    targets = t;
    judged.emplace(std::move(login), t.size(), plan, opts, *r.minimums);
  };
  stream.on_bundle = [&](size_t i, host::Bundle b, const std::string& text) {
    run.SaveEvidence(targets[i], text);  // as the node sent it, under its scheduler's name (unique, unlike host names)
    judged->Add(i, b);
  };
  FanOutResult fr = Launch(r, target, plan, local, stream, hooks);
  size_t returned = fr.in_scope.size() - std::min(fr.in_scope.size(), fr.unreachable.size());
  Note(hooks, fmt::format("  fan-out:  {} of {} nodes returned evidence in {:.1f} s", returned, fr.in_scope.size(),
                          fr.seconds));
  for (const auto& n : fr.notes) Note(hooks, "  fan-out:  " + n);
  if (!fr.srun_error.empty())
    Note(hooks, (target == core::Target::kK8s ? "  kubectl:  " : "  srun:     ") + fr.srun_error, 1);
  if (fr.strangers > 0)
    Note(hooks,
         fmt::format("clustermax: warning: {} document(s) under names that are not nodes of the step were ignored",
                     fr.strangers));
  if (fr.in_scope.empty())
    Note(hooks, target == core::Target::kK8s
                    ? "clustermax: warning: no node in scope (check --k8s-nodes)"
                    : "clustermax: warning: no node in scope (check --partition / --nodelist)");
  if (!judged) judged.emplace(std::move(login), 0, plan, opts, *r.minimums);  // the fan-out stopped before its targets
  return judged->Finish(fr.unreachable);
}

// This node (or the image under --sysroot), or the Slurm fleet from here.
AuditOutcome Live(const AuditRequest& r, const AuditHooks& hooks) {
  if (!r.sysroot.empty() && (r.target == core::Target::kSlurm || r.target == core::Target::kK8s) &&
      !r.slurm.local_only) {
    throw UsageError("--sysroot audits an image's files; it cannot fan out over a fleet (use --local)");
  }
  host::LocalHost local(r.sysroot);
  host::Bundle bundle;  // the detection's answers are recorded with the node's evidence
  core::TargetDetection detected;
  {
    host::RecordingHost rec(local, bundle);
    detected = DetectTarget(rec);
  }
  Selection sel = SelectionOf(r);
  sel.target = r.target.value_or(detected.target);
  std::string how = r.target ? r.target_flag : "detected: " + detected.decision;
  json detection = detected.ToJson();
  if (r.target) {
    detection["chosen"] = core::ToString(sel.target);
    detection["by"] = how;
  }
  Plan plan = BuildPlan(checks::DefaultRegistry(), sel);
  // A fleet when asked for by name (--slurm, --k8s), not when detected: a detected target audits this node.
  bool fleet = (sel.target == core::Target::kSlurm || sel.target == core::Target::kK8s) && r.target == sel.target &&
               !r.slurm.local_only;
  AuditPreview preview{sel.target, how, &plan, detected.weighed, fleet, ScopeLine(r, sel.target, fleet)};
  if (hooks.proceed && !hooks.proceed(preview)) return {};

  // Refuse an occupied --out before collecting anything (a fleet collection is not free).
  if (!r.out_dir.empty() && fs::exists(r.out_dir) && (!fs::is_directory(r.out_dir) || !fs::is_empty(r.out_dir))) {
    throw UsageError(fmt::format("output directory {} exists and is not empty", r.out_dir));
  }
  auto opts = MakeCollectOptions(r.collect, sel);
  StampManifest(bundle.manifest, r.argv);
  bundle.manifest.sysroot = r.sysroot;
  bundle.manifest.target_detection = detection;
  // The run directory is made first: a fleet's bundles are saved into it as they arrive.
  fs::path out = r.out_dir.empty() ? DefaultRunsDir() / util::FormatCompact(std::chrono::system_clock::now())
                                   : fs::path(r.out_dir);
  RunDir run(out, /*unique_name=*/r.out_dir.empty());
  AuditOutcome outcome;
  if (fleet) {
    outcome.report = FanOut(r, sel.target, plan, opts, local, bundle, run, hooks);
  } else {
    std::vector<NodeEvidence> nodes;
    nodes.push_back(CollectNode(local, plan, opts, bundle));
    outcome.report = Judge(plan, nodes, *r.minimums);
    run.SaveBundle(bundle.manifest.hostname, bundle);
  }
  outcome.report->mode = "live";
  outcome.saved = run.Commit(*outcome.report);
  if (!r.record.empty()) bundle.Save(r.record);
  return outcome;
}

}  // namespace

AuditOutcome RunAudit(const AuditRequest& request, const AuditHooks& hooks) {
  if (!request.minimums) throw std::logic_error("RunAudit: no minimum table");
  return request.replay.empty() ? Live(request, hooks) : Replay(request, hooks);
}

}  // namespace clustermax::audit
