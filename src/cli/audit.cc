// `clustermax audit` (and `audit review`), and `clustermax collect`, which a fleet audit's srun
// step runs on every node. The pipeline itself is audit::RunAudit: this file turns options into an
// AuditRequest, shows the preview, asks, and prints the report.
#include <stdio.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/run.h"
#include "audit/slurm_fanout.h"
#include "checks/register.h"
#include "cli/cli.h"
#include "cli/command.h"
#include "cli/export.h"
#include "cli/minimums.h"
#include "host/local_host.h"
#include "audit/render.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/usage_error.h"

namespace clustermax::cli {
namespace {
using nlohmann::json;

// `audit`: the request plus what the CLI does with the outcome.
struct AuditCli {
  audit::AuditRequest request;
  bool standalone = false, vm = false, container = false, slurm = false, k8s = false;
  bool active = false;
  std::vector<std::string> probes;
  std::string minimums_file;
  bool yes = false, show = false, dry_run = false;
  bool exit_zero = false, json_out = false, no_color = false;
  std::string format = "text", textfile;  // --format (json is --json), --textfile PATH.prom
  int verbosity = 0;
};

bool UseColor(bool no_color) { return !no_color && ::isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr; }

int EmitReport(const audit::Report& report, const AuditCli& a) {
  auto write = [](std::string_view piece) {
    std::cout.write(piece.data(), static_cast<std::streamsize>(piece.size()));
  };
  if (!a.textfile.empty()) WriteTextfile(a.textfile, RenderExport("prometheus", audit::ToJson(report), {}));
  if (a.json_out || a.format == "json") {
    audit::WriteJson(report, write);
    std::cout << "\n";
  } else if (a.format != "text") {
    std::cout << RenderExport(a.format, audit::ToJson(report), {});
  } else {
    audit::WriteText(report, {.verbosity = a.verbosity, .color = UseColor(a.no_color)}, write);
  }
  return audit::ExitCodeFor(report, a.exit_zero);
}

// --show: what the selection would check, one line per check.
void PrintShow(const audit::AuditPreview& p) {
  const auto& checks = p.plan->checks;
  std::cout << fmt::format(
      "target: {} ({}); {} checks, {} run\n", core::ToString(p.target), p.how, checks.size(),
      std::count_if(checks.begin(), checks.end(), [](const auto& pc) { return pc.state == audit::PlanState::kRun; }));
  for (const auto& pc : checks) {
    std::cout << fmt::format(
        "{:<36} {:<12} {:<22} {}\n", pc.check->info.id, pc.check->info.category, pc.check->info.Mode(),
        pc.state == audit::PlanState::kRun          ? "runs"
        : pc.state == audit::PlanState::kNotInScope ? fmt::format("skip: not-in-scope for {}", core::ToString(p.target))
                                                    : "skip: probe-disabled");
  }
}

// The target block: what will be audited, with which identity, before anything is collected.
void PrintTargetBlock(const audit::AuditPreview& p, const AuditCli& a) {
  const auto& sel = p.plan->selection;
  std::string user = std::getenv("USER") ? std::getenv("USER") : std::to_string(::getuid());
  std::cerr << fmt::format(
      "clustermax audit\n  target:   {} ({})\n  scope:    {}\n  identity: {} (uid {})\n  profile:  {}\n  checks:   "
      "{} selected, {} evidence sources\n  probes:   {}\n",
      core::ToString(p.target), p.how, p.scope, user, ::getuid(),
      a.request.profiles.empty() ? "all" : fmt::format("{}", fmt::join(a.request.profiles, ",")), p.plan->checks.size(),
      p.plan->collectors.size(),
      sel.probes.empty() ? "none (passive: reads state only)"
                         : fmt::format("{} (ACTIVE: may change state or load the node)", fmt::join(sel.probes, ", ")));
  for (const auto& m : p.weighed) std::cerr << "  weighed:  " << util::EscapeControls(m) << "\n";
  if (p.target == core::Target::kK8s && p.fleet && a.request.k8s.image.empty()) {
    std::cerr << "  note:     the cluster through its API (kubectl); the nodes are listed, not collected: name an "
                 "image holding clustermax with --k8s-image (docs/kubernetes.md)\n";
  } else if ((p.target == core::Target::kSlurm || p.target == core::Target::kK8s) && !p.fleet) {
    std::cerr << "  note:     this audits the local node only\n";
  }
}

// "Proceed? [y/N]" on a terminal; a run without one needs an explicit target or --yes.
bool Confirm(const AuditCli& a) {
  if (a.yes) return true;
  if (!::isatty(STDIN_FILENO)) {
    if (!a.request.target)
      throw UsageError(
          "non-interactive run: pass an explicit target (--standalone, --vm, --container, --slurm, --k8s) or --yes");
    return true;
  }
  std::cerr << "Proceed? [y/N] " << std::flush;
  std::string answer;
  std::getline(std::cin, answer);
  answer = util::ToLower(util::Trim(answer));
  if (answer == "y" || answer == "yes") return true;
  std::cerr << "declined\n";
  return false;
}

int RunAudit(AuditCli& a, const std::vector<std::string>& argv) {
  audit::AuditRequest& r = a.request;
  int explicit_targets = a.standalone + a.vm + a.container + a.slurm + a.k8s;
  if (explicit_targets > 1) throw UsageError("choose one target: --standalone, --vm, --container, --slurm or --k8s");
  const std::pair<bool, std::pair<core::Target, const char*>> flags[] = {
      {a.standalone, {core::Target::kStandalone, "--standalone"}},
      {a.vm, {core::Target::kVm, "--vm"}},
      {a.container, {core::Target::kContainer, "--container"}},
      {a.slurm, {core::Target::kSlurm, "--slurm"}},
      {a.k8s, {core::Target::kK8s, "--k8s"}}};
  for (const auto& [set, t] : flags) {
    if (set) r.target = t.first, r.target_flag = t.second;
  }
  if (a.active) {
    for (const auto& p : core::Probes()) r.probes.insert(p.name);
  }
  r.probes.insert(a.probes.begin(), a.probes.end());
  core::MinimumTable storage;
  r.minimums = &LoadMinimums(a.minimums_file, storage);
  r.argv = argv;

  int stopped_code = kExitOk;
  audit::AuditHooks hooks;
  hooks.note = [&](std::string_view line, int level) {
    if (level <= a.verbosity) std::cerr << line << "\n";
  };
  hooks.proceed = [&](const audit::AuditPreview& p) {
    if (a.show) return PrintShow(p), false;
    if (a.dry_run) return std::cout << util::JsonText(p.plan->ToJson()) << "\n", false;
    PrintTargetBlock(p, a);
    if (Confirm(a)) return true;
    stopped_code = kExitDeclined;
    return false;
  };
  audit::AuditOutcome out = audit::RunAudit(r, hooks);
  if (!out.report) return stopped_code;
  bool replay = !r.replay.empty();
  if (replay && !out.saved.empty()) std::cerr << fmt::format("run saved to {}\n", out.saved.string());
  int code = EmitReport(*out.report, a);
  if (!replay) std::cerr << fmt::format("run saved to {}\n", out.saved.string());
  return code;
}

void AddAuditOptions(CLI::App* cmd, AuditCli& a) {
  audit::AuditRequest& r = a.request;
  cmd->add_flag("--standalone", a.standalone, "Target: bare-metal standalone node");
  cmd->add_flag("--vm", a.vm, "Target: virtual machine");
  cmd->add_flag("--container", a.container, "Target: inside a container");
  cmd->add_flag("--slurm", a.slurm,
                "Target: a Slurm cluster: every node through one srun step, plus the scheduler checks");
  cmd->add_flag("--local", r.slurm.local_only, "With --slurm or --k8s: this node only, no fan-out");
  cmd->add_option("--partition", r.slurm.partition, "Fleet scope: nodes of this partition");
  cmd->add_option("--nodelist", r.slurm.nodelist, "Fleet scope: these nodes (Slurm hostlist, e.g. gpu[01-16])");
  cmd->add_option("--nodes", r.slurm.nodes, "Fleet scope: at most N nodes (Slurm or Kubernetes)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--time", r.slurm.time_limit, "srun --time when the audit asks for an allocation (minutes)");
  cmd->add_option("--fleet-timeout", r.slurm.fleet_timeout_s,
                  "Seconds for the whole fan-out (srun step or DaemonSet); nodes silent by then are reported")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--node-timeout", r.slurm.node_timeout_s,
                  "Seconds each node collects before it sends what it has (0: no deadline)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--bcast", r.slurm.bcast,
                  "Copy this binary to PATH on every node first (srun --bcast), for nodes without the shared path");
  cmd->add_flag("--k8s", a.k8s,
                "Target: Kubernetes: the cluster through its API (kubectl), every node through one DaemonSet");
  cmd->add_option("--k8s-image", r.k8s.image,
                  "Image holding clustermax that the node pods run (your registry; docs/kubernetes.md)");
  cmd->add_option("--k8s-binary", r.k8s.binary, "Path of clustermax in that image (default /usr/local/bin/clustermax)");
  cmd->add_option("--k8s-namespace", r.k8s.ns,
                  "Namespace of the node pods (default clustermax: created and deleted unless it exists)");
  cmd->add_option("--k8s-nodes", r.k8s.node_selector,
                  "Label selector of the nodes to collect (default: the GPU nodes, or every node when none has GPUs)");
  cmd->add_option("--k8s-gpus", r.k8s.gpus,
                  "GPUs each node pod asks for (default: the fewest any node offers; 0: none, so busy nodes are "
                  "collected without GPU access)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--keep", r.k8s.keep, "Leave the namespace and DaemonSet of a Kubernetes fan-out (for debugging)");
  cmd->add_flag("-y,--yes", a.yes, "Do not ask for confirmation");
  cmd->add_option("-p,--profile", r.profiles,
                  "Profile(s): security, versions, isolation, hardware, software, containers, "
                  "orchestration, networking, storage, health, access, all");
  cmd->add_option("--check", r.checks, "Only these check ids");
  cmd->add_flag("--show", a.show, "List what the selection would check, then exit");
  cmd->add_flag("--dry-run", a.dry_run, "Print the plan (JSON), then exit");
  cmd->add_flag("--active", a.active, "Enable every active probe (they change state, start containers or load GPUs)");
  cmd->add_option("--probe", a.probes, "Enable one active probe by name");
}

void AddAuditInputOutputOptions(CLI::App* cmd, AuditCli& a) {
  audit::AuditRequest& r = a.request;
  audit::CollectSettings& c = r.collect;
  cmd->add_option("--probe-image", c.probe_image, "Container image for the container-launch probe (docker and pyxis)");
  cmd->add_option("--enroot-image", c.enroot_image,
                  "Image the enroot-import probe pulls (default docker://busybox:1.36)");
  cmd->add_option("--kubeconfig", c.kubeconfig,
                  "kubeconfig for the Kubernetes API (default: KUBECONFIG, ~/.kube/config, "
                  "or the pod's service account)");
  cmd->add_option("--context", c.kube_context, "Context of the kubeconfig to audit (default: its current context)");
  cmd->add_option("--s3-endpoint", c.s3_endpoint,
                  "Object storage endpoint for the s3-probe (or CLUSTERMAX_S3_ENDPOINT)");
  cmd->add_option("--s3-bucket", c.s3_bucket,
                  "Bucket for the s3-probe (or CLUSTERMAX_S3_BUCKET; credentials: AWS_* or ~/.aws/credentials)");
  cmd->add_option("--s3-region", c.s3_region,
                  "Signing region for the s3-probe (or CLUSTERMAX_S3_REGION, AWS_REGION; default us-east-1)");
  cmd->add_option("--s3-addressing", c.s3_addressing, "path (default) or virtual")
      ->check(CLI::IsMember({"path", "virtual"}));
  cmd->add_option(
         "--replay", r.replay,
         "Judge saved evidence bundle(s) or run directories instead of this machine (--out saves the judgement as a run)")
      ->check(CLI::ExistingPath);
  cmd->add_option("--record", r.record, "Also write this node's evidence bundle to FILE (e.g. a test fixture)");
  cmd->add_option("--out", r.out_dir, "Run directory (default ~/.clustermax/runs/<timestamp>)");
  cmd->add_option("--sysroot", r.sysroot, "Re-root every file read under DIR")->check(CLI::ExistingDirectory);
  cmd->add_option("--minimums", a.minimums_file, "Minimum-version table to use instead of the embedded one")
      ->check(CLI::ExistingFile);
  cmd->add_option("--timeout", c.timeouts, "Per-evidence timeout, ID=SECONDS (e.g. gpu.inventory=30)");
  cmd->add_option("--command-timeout", c.command_timeout_s, "Default timeout for every command, seconds")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--counter-interval", c.counter_interval_s,
                  "Seconds between the two reads of RDMA error counters (0: one read, history only)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--json", a.json_out, "Print the JSON report instead of text");
  cmd->add_option("--format", a.format,
                  "Output: text (default), json, prometheus, junit (XML) or sarif (2.1.0); docs/exports.md")
      ->check(CLI::IsMember({"text", "json", "prometheus", "junit", "sarif"}));
  cmd->add_option("--textfile", a.textfile,
                  "Also write the Prometheus text to PATH.prom (node_exporter textfile collector; atomic, mode 0644)");
  cmd->add_flag("-v", a.verbosity, "More detail (-v, -vv, -vvv)");
  cmd->add_flag("--exit-zero", a.exit_zero, "Exit 0 even when checks FAIL");
  cmd->add_flag("--no-color", a.no_color, "No colours (also NO_COLOR or a non-terminal)");
}

// `collect`: this node's evidence for a fleet audit, run by srun on every node. The bundle goes to
// stdout as CLUSTERMAX-BUNDLE lines (or to --out FILE).
struct CollectCli {
  std::string role = "compute", target = "slurm", out, host_root;
  std::vector<std::string> profiles, checks, probes;
  audit::CollectSettings settings;
  double node_timeout_s = 0;  // > 0: send what was collected by then and stop
  int step_gpus = 0;
};

// Sends the bundle once: from the normal finish or from the node deadline, whichever comes first.
class BundleSender {
 public:
  BundleSender(host::Bundle& bundle, std::string out) : bundle_(bundle), out_(std::move(out)) {}
  bool Send(const std::string& node, const std::string& partial) {
    std::lock_guard lock(mu_);
    if (sent_) return false;
    sent_ = true;
    json j = bundle_.ToJson();
    if (!partial.empty()) {
      j["manifest"]["hostname"] = node;
      j["manifest"]["partial"] = partial;
    }
    host::Bundle b = host::Bundle::FromJson(j);
    if (!out_.empty()) {
      b.Save(out_);
      return true;
    }
    std::string text;
    for (const auto& l : audit::BundleLines(node, b)) text += l + "\n";
    std::cout << text << std::flush;
    return true;
  }

 private:
  host::Bundle& bundle_;
  std::string out_;
  std::mutex mu_;
  bool sent_ = false;
};

int RunCollect(const CollectCli& c, const std::vector<std::string>& argv) {
  audit::Selection sel;
  auto t = core::TargetFromString(c.target);
  if (!t) throw UsageError("collect: unknown target '" + c.target + "'");
  sel.target = *t;
  sel.profiles = c.profiles;
  sel.checks = c.checks;
  sel.probes.insert(c.probes.begin(), c.probes.end());
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), sel);
  auto opts = audit::MakeCollectOptions(c.settings, sel);
  // The GPU count the step asked for, read back by the slurm.step-env collector (through the host).
  ::setenv("CLUSTERMAX_STEP_GPUS", std::to_string(c.step_gpus).c_str(), 1);
  host::LocalHost local = c.host_root.empty() ? host::LocalHost() : host::LocalHost::HostRoot(c.host_root);
  host::Bundle bundle;
  audit::StampManifest(bundle.manifest, argv);
  // The per-node deadline: whatever was collected by then is sent, marked partial (the requests it
  // lacks show as evidence errors and replay misses), and the process ends without waiting for a
  // hung collector. Shared with the watchdog, which may outlive this function (it then sends nothing).
  auto sender = std::make_shared<BundleSender>(bundle, c.out);
  if (c.node_timeout_s > 0) {
    std::string name = audit::SchedulerNodeName(local).value_or(util::Hostname());
    std::thread([sender, name, secs = c.node_timeout_s] {
      std::this_thread::sleep_for(std::chrono::duration<double>(secs));
      if (sender->Send(name, fmt::format("node deadline: sent after {} s with the evidence collected by then", secs)))
        std::_Exit(kExitOk);
    }).detach();
  }
  audit::NodeEvidence n = audit::CollectNode(local, plan, opts, bundle, c.role);
  sender->Send(n.node, "");
  return kExitOk;
}

}  // namespace

void AddAuditCommands(CLI::App& app, Commands& table) {
  auto a = std::make_shared<AuditCli>();
  auto* cmd = app.add_subcommand("audit", "Audit this node (read-only unless probes are enabled)");
  AddAuditOptions(cmd, *a);
  AddAuditInputOutputOptions(cmd, *a);
  table.Add(cmd, [a, &table] { return RunAudit(*a, table.argv()); });

  auto ro = std::make_shared<ReviewOptions>();
  auto* review = cmd->add_subcommand("review", "Re-judge a saved run with the current rules");
  review->add_option("path", ro->path, "Run directory or bundle (default: the latest run)");
  review->add_option("--command", ro->commands, "'find TEXT', 'show ID', 'raw' or 'report' (repeatable)");
  review->add_flag("-v", ro->verbosity, "More detail");
  review->add_option("--minimums", ro->minimums_file, "Minimum-version table")->check(CLI::ExistingFile);
  table.Add(review, [ro] {
    ro->color = UseColor(false);
    return Review(*ro);
  });
}

void AddCollectCommands(CLI::App& app, Commands& table) {
  auto c = std::make_shared<CollectCli>();
  auto* cmd =
      app.add_subcommand("collect", "Collect this node's evidence for a fleet audit (srun runs it on every node)");
  cmd->add_option("--role", c->role, "compute (node checks), login (scheduler checks) or empty (all)")
      ->check(CLI::IsMember({"compute", "login", ""}));
  cmd->add_option("--target", c->target, "Audit target");
  cmd->add_option("-p,--profile", c->profiles, "Profile(s)");
  cmd->add_option("--check", c->checks, "Check ids");
  cmd->add_option("--probe", c->probes, "Active probes");
  cmd->add_option("--probe-image", c->settings.probe_image, "Image of the container-launch probe");
  cmd->add_option("--enroot-image", c->settings.enroot_image, "Image of the enroot-import probe");
  cmd->add_option("--timeout", c->settings.timeouts, "ID=SECONDS");
  cmd->add_option("--command-timeout", c->settings.command_timeout_s, "Seconds per command");
  cmd->add_option("--counter-interval", c->settings.counter_interval_s, "Seconds between RDMA counter reads");
  cmd->add_option("--step-gpus", c->step_gpus, "GPUs per node the step requested");
  cmd->add_option("--node-timeout", c->node_timeout_s,
                  "Send what was collected after this many seconds (0: no deadline)");
  cmd->add_option("--out", c->out, "Write the bundle to FILE instead of stdout lines");
  cmd->add_option("--host-root", c->host_root,
                  "The node's / mounted here (a Kubernetes pod): files read under it, commands run inside it")
      ->check(CLI::ExistingDirectory);
  table.Add(cmd, [c, &table] { return RunCollect(*c, table.argv()); });

  // The main container of a Kubernetes fan-out pod: its collect (init) container is done, and the
  // pod must not end (a DaemonSet would start it again) until the audit deletes it.
  auto* hold = app.add_subcommand("hold", "Wait until stopped (the idle container of a Kubernetes fan-out pod)");
  hold->group("");  // not for people
  table.Add(hold, [] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigprocmask(SIG_BLOCK, &set, nullptr);
    int sig = 0;
    sigwait(&set, &sig);
    return kExitOk;
  });
}

}  // namespace clustermax::cli
