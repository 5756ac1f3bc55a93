#include "cli/cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <algorithm>
#include <chrono>
#include <functional>
#include <set>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>
#include <thread>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "checks/register.h"
#include "audit/slurm_fanout.h"
#include "cli/bench.h"
#include "cli/db.h"
#include "cli/export.h"
#include "cli/health.h"
#include "cli/minimums.h"
#include "cli/rate.h"
#include "cli/web.h"
#include "cli/docs.h"
#include "core/version.h"
#include "host/local_host.h"
#include "report/report.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/time.h"

namespace clustermax::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct AuditOptions {
  bool standalone = false, vm = false, container = false, slurm = false, k8s = false;
  bool yes = false, show = false, dry_run = false, active = false, exit_zero = false, json_out = false;
  bool no_color = false;
  std::string format = "text", textfile;  // --format (json is --json), --textfile PATH.prom
  std::vector<std::string> profiles, checks, probes, replay, timeouts;
  std::string out_dir, sysroot, minimums_file, probe_image, enroot_image, record;
  std::string s3_endpoint, s3_bucket, s3_region, s3_addressing;
  // Slurm fleet (--slurm): scope, limits, broadcast.
  bool local_only = false;
  std::string partition, nodelist, time_limit = "10", bcast;
  int nodes = 0;
  double fleet_timeout_s = 300;
  double node_timeout_s = 120;
  double command_timeout_s = 10;
  double counter_interval_s = 10;
  int verbosity = 0;
};

bool UseColor(bool no_color) {
  return !no_color && ::isatty(STDOUT_FILENO) && std::getenv("NO_COLOR") == nullptr;
}

// Weighs every VM, container and scheduler marker (core::DetectTarget; the rule is documented
// there and in docs/ARCHITECTURE.md). Read through `h`, so a recording host keeps the answers.
core::TargetDetection DetectTarget(host::Host& h) {
  collect::CollectOptions o;
  o.command_timeout = std::chrono::seconds(3);
  return core::DetectTarget(collect::CollectEvidence(h, {"os.virtualization", "os.cpuinfo", "pci.devices"}, o));
}

collect::CollectOptions MakeCollectOptions(const AuditOptions& a, const audit::Selection& sel) {
  collect::CollectOptions o;
  o.command_timeout = std::chrono::milliseconds(static_cast<long long>(a.command_timeout_s * 1000));
  o.probes = sel.probes;
  o.counter_interval = std::chrono::milliseconds(static_cast<long long>(a.counter_interval_s * 1000));
  if (!a.probe_image.empty()) o.probe_image = a.probe_image;
  if (!a.enroot_image.empty()) o.enroot_image = a.enroot_image;
  // The s3-probe reads its endpoint from the environment (through the host, so a replay sees it).
  auto set = [](const char* k, const std::string& v) {
    if (!v.empty()) ::setenv(k, v.c_str(), 1);
  };
  set("CLUSTERMAX_S3_ENDPOINT", a.s3_endpoint);
  set("CLUSTERMAX_S3_BUCKET", a.s3_bucket);
  set("CLUSTERMAX_S3_REGION", a.s3_region);
  set("CLUSTERMAX_S3_ADDRESSING", a.s3_addressing);
  for (const auto& t : a.timeouts) {
    size_t eq = t.find('=');
    double s = 0;
    if (eq == std::string::npos || !(std::istringstream(t.substr(eq + 1)) >> s) || s <= 0) {
      throw audit::UsageError("--timeout expects ID=SECONDS, got '" + t + "'");
    }
    std::string id = t.substr(0, eq);
    if (!collect::FindCollector(id)) throw audit::UsageError("--timeout: unknown evidence id '" + id + "'");
    o.timeouts[id] = std::chrono::milliseconds(static_cast<long long>(s * 1000));
  }
  return o;
}

// A run directory: report.json, report.txt and evidence/<node>.json, made atomically: everything
// goes to a hidden temporary directory that Commit renames into place (and that is removed if the
// run never gets there). Evidence can be saved while the run goes on (a fleet's bundles as they
// arrive), from any thread.
// The directory is private (0700: evidence names users, mounts and versions) and made under a name
// no other user can predict or pre-create.
// With `unique_name` (the default run directory) a name already taken gets a suffix (-2, -3 ...):
// two audits in the same second both keep their runs. The rename never replaces: renameat2's
// RENAME_NOREPLACE makes the choice of name atomic against another process doing the same.
class RunDir {
 public:
  RunDir(fs::path out_dir, bool unique_name) : out_dir_(std::move(out_dir)), unique_name_(unique_name) {
    fs::path parent = out_dir_.parent_path().empty() ? fs::path(".") : out_dir_.parent_path();
    util::CreatePrivateDirectories(parent);
    tmp_ = util::MakePrivateTempDir(parent, fmt::format(".{}.partial-", out_dir_.filename().string()));
    util::CreatePrivateDirectories(tmp_ / "evidence");
  }
  ~RunDir() {
    std::error_code ec;
    if (!tmp_.empty()) fs::remove_all(tmp_, ec);
  }
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  // evidence/<name>.json (made safe as one path component, and unique: -2, -3 ... when taken).
  fs::path EvidencePath(const std::string& name) {
    std::lock_guard lock(mu_);
    std::string file = BundleFileName(name);
    for (int k = 2; !names_.insert(file).second; ++k) file = BundleFileName(fmt::format("{}-{}", name, k));
    return tmp_ / "evidence" / file;
  }
  // Evidence files are written once, into the hidden directory: no temporary name, no flush each;
  // Commit flushes them all at once before the directory appears.
  void SaveEvidence(const std::string& name, std::string_view text) { util::WriteNewFile(EvidencePath(name), text); }
  void SaveBundle(const std::string& name, const host::Bundle& b) { SaveEvidence(name, b.ToText()); }

  fs::path Commit(const audit::Report& report) {
    // Written as rendered: a large fleet's report is never held whole.
    util::WriteFileAtomic(tmp_ / "report.json", [&](const report::Sink& write) {
      report::WriteJson(report, write);
      write("\n");
    });
    util::WriteFileAtomic(tmp_ / "report.txt", [&](const report::Sink& write) { report::WriteText(report, {.verbosity = 2, .color = false}, write); });
    // The table the run was judged with, kept beside it: `audit review` judges with the same one.
    std::optional<std::string> table = report.minimums_origin == "embedded" ? std::optional<std::string>(core::EmbeddedMinimumTableText())
                                                                            : util::ReadLocalFile(report.minimums_origin);
    if (table) util::WriteFileAtomic(tmp_ / "minimum-versions.json", *table);
    util::SyncFilesystemOf(tmp_);
    for (int n = 1; n < 1000; ++n) {
      fs::path target = n == 1 ? out_dir_ : fs::path(fmt::format("{}-{}", out_dir_.string(), n));
      std::error_code ec;
      if (!unique_name_ && fs::is_directory(target, ec) && !fs::is_symlink(target, ec) && fs::is_empty(target, ec)) fs::remove(target, ec);
      if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) {
        tmp_.clear();
        return target;
      }
      int e = errno;
      if (e != EEXIST || !unique_name_) {
        if (e == EEXIST) throw std::runtime_error(fmt::format("output directory {} exists and is not empty", out_dir_.string()));
        throw std::runtime_error(fmt::format("cannot move the run into {}: {}", target.string(), std::strerror(e)));
      }
    }
    throw std::runtime_error(fmt::format("no free run directory name next to {}", out_dir_.string()));
  }

 private:
  // A node's bundle file name in a run directory: its name, made safe as one path component.
  static std::string BundleFileName(const std::string& hostname) {
    std::string name = hostname.empty() ? "node" : hostname;
    for (auto& c : name) {
      if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '_';
    }
    if (name == "." || name == "..") name = "node";
    return name + ".json";
  }

  fs::path out_dir_, tmp_;
  bool unique_name_;
  std::mutex mu_;
  std::set<std::string> names_;
};

int EmitReport(const audit::Report& report, const AuditOptions& a) {
  auto write = [](std::string_view piece) { std::cout.write(piece.data(), static_cast<std::streamsize>(piece.size())); };
  if (!a.textfile.empty()) WriteTextfile(a.textfile, RenderExport("prometheus", report::ToJson(report), {}));
  if (a.json_out || a.format == "json") {
    report::WriteJson(report, write);
    std::cout << "\n";
  } else if (a.format != "text") {
    std::cout << RenderExport(a.format, report::ToJson(report), {});
  } else {
    report::WriteText(report, {.verbosity = a.verbosity, .color = UseColor(a.no_color)}, write);
  }
  return audit::ExitCodeFor(report, a.exit_zero);
}


// The bundles `--replay` names: files, or run directories (their evidence/*.json), each once.
std::vector<std::string> ReplayPaths(const std::vector<std::string>& given) {
  std::vector<std::string> out;
  std::set<fs::path> seen;
  auto add = [&](const fs::path& p) {
    std::error_code ec;
    fs::path c = fs::weakly_canonical(p, ec);
    if (seen.insert(ec ? p : c).second) out.push_back(p.string());
  };
  for (const auto& g : given) {
    if (fs::is_directory(g)) {
      fs::path ev = fs::path(g) / "evidence";
      if (!fs::is_directory(ev)) throw audit::UsageError(fmt::format("--replay {}: a directory, but not a run directory (no evidence/)", g));
      std::vector<fs::path> files;
      for (const auto& e : fs::directory_iterator(ev)) {
        if (e.path().extension() == ".json" && e.path().filename().string()[0] != '.') files.push_back(e.path());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) throw audit::UsageError(fmt::format("--replay {}: the run directory holds no evidence bundle", g));
      for (const auto& f : files) add(f);
    } else {
      add(g);
    }
  }
  return out;
}

// The selection as `collect` arguments, so every node collects exactly what the plan needs.
std::vector<std::string> CollectArgs(const AuditOptions& a, const audit::Selection& sel) {
  std::vector<std::string> out = {"--target=" + std::string(core::ToString(sel.target))};
  for (const auto& p : sel.profiles) out.push_back("--profile=" + p);
  for (const auto& c : sel.checks) out.push_back("--check=" + c);
  for (const auto& p : sel.probes) out.push_back("--probe=" + p);
  out.push_back(fmt::format("--command-timeout={}", a.command_timeout_s));
  out.push_back(fmt::format("--counter-interval={}", a.counter_interval_s));
  for (const auto& t : a.timeouts) out.push_back("--timeout=" + t);
  if (!a.probe_image.empty()) out.push_back("--probe-image=" + a.probe_image);
  if (!a.enroot_image.empty()) out.push_back("--enroot-image=" + a.enroot_image);
  out.push_back(fmt::format("--node-timeout={}", a.node_timeout_s));
  return out;
}

int RunAudit(const AuditOptions& a, const std::vector<std::string>& argv) {
  core::MinimumTable storage;
  const core::MinimumTable& minimums = LoadMinimums(a.minimums_file, storage);
  const core::Registry& registry = checks::DefaultRegistry();

  int explicit_targets = a.standalone + a.vm + a.container + a.slurm + a.k8s;
  if (explicit_targets > 1) throw audit::UsageError("choose one target: --standalone, --vm, --container, --slurm or --k8s");

  audit::Selection sel;
  sel.profiles = a.profiles;
  sel.checks = a.checks;
  if (a.active) {
    for (const auto& p : core::Probes()) sel.probes.insert(p.name);
  }
  sel.probes.insert(a.probes.begin(), a.probes.end());

  // Judge saved bundles (from other machines): no collection, no prompt.
  if (!a.replay.empty()) {
    std::vector<std::string> paths = ReplayPaths(a.replay);
    // The first bundle's manifest gives the target and probes of the collection.
    host::Bundle first = host::Bundle::Load(paths.front());
    std::optional<core::Target> t = core::TargetFromString(first.manifest.target);
    sel.target = t.value_or(core::Target::kStandalone);
    if (a.standalone) sel.target = core::Target::kStandalone;
    if (a.vm) sel.target = core::Target::kVm;
    if (a.container) sel.target = core::Target::kContainer;
    if (a.slurm) sel.target = core::Target::kSlurm;
    if (a.k8s) sel.target = core::Target::kK8s;
    if (sel.probes.empty()) sel.probes.insert(first.manifest.probes.begin(), first.manifest.probes.end());
    audit::Plan plan = audit::BuildPlan(registry, sel);
    auto opts = MakeCollectOptions(a, sel);
    // Loaded, replayed and judged one bundle per core at a time; the same collection given twice (a
    // copy of a bundle, a run directory and one of its files) is one node.
    std::vector<audit::FleetJudge::Duplicate> duplicates;
    std::vector<size_t> kept;
    audit::Report report = audit::ReplayAndJudgeFiles(paths, plan, opts, minimums, &duplicates, &kept);
    for (const auto& d : duplicates) {
      std::cerr << fmt::format("clustermax: warning: {} is the same collection as an earlier bundle ({} at {}); judged once\n",
                               util::EscapeControls(paths[d.slot]), util::EscapeControls(d.node), d.started_at);
    }
    report.mode = "replay";
    if (!a.out_dir.empty()) {
      // Re-saved as a run directory: the report of this judgement beside byte copies of the bundles.
      RunDir run(a.out_dir, /*unique_name=*/false);
      for (size_t i = 0; i < kept.size(); ++i) run.SaveEvidence(report.nodes[i], *util::ReadLocalFile(paths[kept[i]]));
      fs::path written = run.Commit(report);
      std::cerr << fmt::format("run saved to {}\n", written.string());
    }
    if (!report.replay_misses.empty()) {
      std::cerr << fmt::format("clustermax: warning: {} request(s) not in the evidence bundle(s); see the report header\n",
                               report.replay_misses.size());
    }
    return EmitReport(report, a);
  }

  if (!a.sysroot.empty() && a.slurm && !a.local_only) {
    throw audit::UsageError("--sysroot audits an image's files; it cannot fan out over a Slurm fleet (use --local-only)");
  }
  host::LocalHost local(a.sysroot);
  host::Bundle bundle;  // the detection's answers are recorded with the node's evidence
  core::TargetDetection detected;
  {
    host::RecordingHost rec(local, bundle);
    detected = DetectTarget(rec);
  }
  sel.target = detected.target;
  std::string how = "detected: " + detected.decision;
  if (a.standalone) sel.target = core::Target::kStandalone, how = "--standalone";
  if (a.vm) sel.target = core::Target::kVm, how = "--vm";
  if (a.container) sel.target = core::Target::kContainer, how = "--container";
  if (a.slurm) sel.target = core::Target::kSlurm, how = "--slurm";
  if (a.k8s) sel.target = core::Target::kK8s, how = "--k8s";
  json detection = detected.ToJson();
  if (explicit_targets > 0) {
    detection["chosen"] = core::ToString(sel.target);
    detection["by"] = how;
  }
  audit::Plan plan = audit::BuildPlan(registry, sel);

  if (a.show) {
    std::cout << fmt::format("target: {} ({}); {} checks, {} run\n", core::ToString(sel.target), how, plan.checks.size(),
                             std::count_if(plan.checks.begin(), plan.checks.end(), [](const auto& pc) { return pc.state == audit::PlanState::kRun; }));
    for (const auto& pc : plan.checks) {
      std::cout << fmt::format("{:<36} {:<12} {:<22} {}\n", pc.check->info.id, pc.check->info.category, pc.check->info.Mode(),
                               pc.state == audit::PlanState::kRun ? "runs"
                               : pc.state == audit::PlanState::kNotInScope ? fmt::format("skip: not-in-scope for {}", core::ToString(sel.target))
                                                                          : "skip: probe-disabled");
    }
    return kExitOk;
  }
  if (a.dry_run) {
    std::cout << util::JsonText(plan.ToJson()) << "\n";
    return kExitOk;
  }

  // The target block: what will be audited, with which identity, before anything is collected.
  std::string user = std::getenv("USER") ? std::getenv("USER") : std::to_string(::getuid());
  std::string hn = util::Hostname();
  bool fleet = sel.target == core::Target::kSlurm && a.slurm && !a.local_only;
  std::string scope = !a.sysroot.empty() ? fmt::format("the image under {} (its files only: commands, PATH, environment and NVML "
                                                       "would be this host's and are not taken)", a.sysroot)
                      : !fleet           ? fmt::format("this node: {}", hn)
                             : fmt::format("Slurm fleet: {} (one srun step, node checks on every node; scheduler checks from {})",
                                           !a.nodelist.empty() ? "nodes " + a.nodelist
                                           : !a.partition.empty() ? "partition " + a.partition
                                           : std::getenv("SLURM_JOB_ID") ? fmt::format("the nodes of job {}", std::getenv("SLURM_JOB_ID"))
                                                                         : std::string("every schedulable node"),
                                           hn);
  std::cerr << fmt::format(
      "clustermax audit\n  target:   {} ({})\n  scope:    {}\n  identity: {} (uid {})\n  profile:  {}\n  checks:   "
      "{} selected, {} evidence sources\n  probes:   {}\n",
      core::ToString(sel.target), how, scope, user, ::getuid(),
      a.profiles.empty() ? "all" : fmt::format("{}", fmt::join(a.profiles, ",")), plan.checks.size(), plan.collectors.size(),
      sel.probes.empty() ? "none (passive: reads state only)" : fmt::format("{} (ACTIVE: may change state or load the node)", fmt::join(sel.probes, ", ")));
  for (const auto& m : detected.weighed) std::cerr << "  weighed:  " << util::EscapeControls(m) << "\n";
  if (sel.target == core::Target::kK8s || (sel.target == core::Target::kSlurm && !fleet)) {
    std::cerr << "  note:     this audits the local node only" << (sel.target == core::Target::kK8s ? "; Kubernetes fan-out is not part of this build" : "") << "\n";
  }
  if (!a.yes) {
    if (::isatty(STDIN_FILENO)) {
      std::cerr << "Proceed? [y/N] " << std::flush;
      std::string answer;
      std::getline(std::cin, answer);
      answer = util::ToLower(util::Trim(answer));
      if (answer != "y" && answer != "yes") {
        std::cerr << "declined\n";
        return kExitDeclined;
      }
    } else if (explicit_targets == 0) {
      throw audit::UsageError("non-interactive run: pass an explicit target (--standalone, --vm, --container, --slurm, --k8s) or --yes");
    }
  }

  // Refuse an occupied --out before collecting anything (a fleet collection is not free).
  if (!a.out_dir.empty() && fs::exists(a.out_dir) && (!fs::is_directory(a.out_dir) || !fs::is_empty(a.out_dir))) {
    throw audit::UsageError(fmt::format("output directory {} exists and is not empty", a.out_dir));
  }
  auto opts = MakeCollectOptions(a, sel);
  audit::StampManifest(bundle.manifest, argv);
  bundle.manifest.sysroot = a.sysroot;
  bundle.manifest.target_detection = detection;
  // The run directory is made first: a fleet's bundles are saved into it as they arrive.
  fs::path out = a.out_dir.empty() ? DefaultRunsDir() / util::FormatCompact(std::chrono::system_clock::now()) : fs::path(a.out_dir);
  RunDir run(out, /*unique_name=*/a.out_dir.empty());
  audit::Report report;
  if (fleet) {
    // The scheduler's view here, the node checks on every node through one srun step. Each node's
    // bundle is saved, replayed and judged on one of the cores as it arrives, then dropped: memory
    // holds compact findings, not the fleet's evidence.
    audit::NodeEvidence login = audit::CollectNode(local, plan, opts, bundle, "login");
    run.SaveBundle(bundle.manifest.hostname, bundle);
    audit::SlurmFanOutOptions fo;
    fo.partition = a.partition;
    fo.nodelist = a.nodelist;
    fo.nodes = a.nodes;
    fo.time_limit = a.time_limit;
    fo.timeout_s = a.fleet_timeout_s;
    fo.bcast = a.bcast;
    fo.self_exe = SelfExe();
    fo.collect_args = CollectArgs(a, sel);
    std::optional<audit::FleetStream> judged;
    std::vector<std::string> targets;
    audit::BundleStream stream;
    stream.workers = std::max(1u, std::thread::hardware_concurrency());
    stream.on_targets = [&](const std::vector<std::string>& t) {
      targets = t;
      judged.emplace(std::move(login), t.size(), plan, opts, minimums);
    };
    stream.on_bundle = [&](size_t i, host::Bundle b, const std::string& text) {
      // As the node sent it, under its Slurm name (unique in the cluster, unlike host names).
      run.SaveEvidence(targets[i], text);
      judged->Add(i, b);
    };
    std::cerr << "  fan-out:  sinfo, then one srun step over the nodes in scope...\n";
    audit::FanOutResult fr = audit::FanOutThroughSlurm(local, fo, stream);
    size_t returned = fr.in_scope.size() - std::min(fr.in_scope.size(), fr.unreachable.size());
    std::cerr << fmt::format("  fan-out:  {} of {} nodes returned evidence in {:.1f} s\n", returned, fr.in_scope.size(), fr.seconds);
    if (!fr.srun_error.empty() && a.verbosity >= 1) std::cerr << "  srun:     " << fr.srun_error << "\n";
    if (fr.strangers > 0) std::cerr << fmt::format("clustermax: warning: {} document(s) under names that are not nodes of the step were ignored\n", fr.strangers);
    if (fr.in_scope.empty()) std::cerr << "clustermax: warning: no node in scope (check --partition / --nodelist)\n";
    report = judged->Finish(fr.unreachable);
  } else {
    std::vector<audit::NodeEvidence> nodes;
    nodes.push_back(audit::CollectNode(local, plan, opts, bundle));
    report = audit::Judge(plan, nodes, minimums);
    run.SaveBundle(bundle.manifest.hostname, bundle);
  }
  report.mode = "live";
  fs::path written = run.Commit(report);
  if (!a.record.empty()) bundle.Save(a.record);
  int code = EmitReport(report, a);
  std::cerr << fmt::format("run saved to {}\n", written.string());
  return code;
}

// `collect`: this node's evidence for a fleet audit, run by srun on every node. The bundle goes to
// stdout as CLUSTERMAX-BUNDLE lines (or to --out FILE).
struct CollectCmd {
  std::string role = "compute", target = "slurm", out;
  std::vector<std::string> profiles, checks, probes, timeouts;
  std::string probe_image, enroot_image;
  double command_timeout_s = 10, counter_interval_s = 10;
  double node_timeout_s = 0;  // > 0: send what was collected by then and stop
  int step_gpus = 0;
};

int RunCollect(const CollectCmd& c, const std::vector<std::string>& argv) {
  audit::Selection sel;
  auto t = core::TargetFromString(c.target);
  if (!t) throw audit::UsageError("collect: unknown target '" + c.target + "'");
  sel.target = *t;
  sel.profiles = c.profiles;
  sel.checks = c.checks;
  sel.probes.insert(c.probes.begin(), c.probes.end());
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), sel);
  AuditOptions a;
  a.command_timeout_s = c.command_timeout_s;
  a.counter_interval_s = c.counter_interval_s;
  a.timeouts = c.timeouts;
  a.probe_image = c.probe_image;
  a.enroot_image = c.enroot_image;
  auto opts = MakeCollectOptions(a, sel);
  // The GPU count the step asked for, read back by the slurm.step-env collector (through the host).
  ::setenv("CLUSTERMAX_STEP_GPUS", std::to_string(c.step_gpus).c_str(), 1);
  host::LocalHost local;
  host::Bundle bundle;
  audit::StampManifest(bundle.manifest, argv);
  // The per-node deadline: whatever was collected by then is sent, marked partial (the requests it
  // lacks show as evidence errors and replay misses), and the process ends without waiting for a
  // hung collector. The mutex makes the watchdog and a normal finish exclusive.
  static std::mutex emit_mu;
  static bool emitted = false;
  auto emit = [&](const std::string& node, const std::string& partial) {
    std::lock_guard lock(emit_mu);
    if (emitted) return false;
    emitted = true;
    json j = bundle.ToJson();
    if (!partial.empty()) {
      j["manifest"]["hostname"] = node;
      j["manifest"]["partial"] = partial;
    }
    host::Bundle b = host::Bundle::FromJson(j);
    if (!c.out.empty()) {
      b.Save(c.out);
    } else {
      std::string text;
      for (const auto& l : audit::BundleLines(node, b)) text += l + "\n";
      std::cout << text << std::flush;
    }
    return true;
  };
  if (c.node_timeout_s > 0) {
    std::string name = std::getenv("SLURMD_NODENAME") ? std::getenv("SLURMD_NODENAME") : "";
    if (name.empty()) name = util::Hostname();
    std::thread([emit, name, secs = c.node_timeout_s] {
      std::this_thread::sleep_for(std::chrono::duration<double>(secs));
      if (emit(name, fmt::format("node deadline: sent after {} s with the evidence collected by then", secs))) std::_Exit(kExitOk);
    }).detach();
  }
  audit::NodeEvidence n = audit::CollectNode(local, plan, opts, bundle, c.role);
  emit(n.node, "");
  return kExitOk;
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// For a command line CLI11 refused: the first word that is not a subcommand where one is expected,
// with the nearest subcommand ("unknown command 'audti'; did you mean 'audit'?"). "" when the
// words are all known (the error is about an option: CLI11's message says it).
std::string SuggestSubcommand(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* cur = &app;
  std::string path = "clustermax";
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w.empty() || w[0] == '-') return "";
    auto subs = cur->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return "";
    CLI::App* match = nullptr;
    for (auto* s : subs) {
      if (s->get_name() == w) match = s;
    }
    if (match) {
      cur = match;
      path += " " + w;
      continue;
    }
    std::string best;
    size_t best_d = SIZE_MAX;
    std::vector<std::string> names;
    for (auto* s : subs) {
      names.push_back(s->get_name());
      size_t d = EditDistance(w, s->get_name());
      if (d < best_d) best_d = d, best = s->get_name();
    }
    std::string known = fmt::format("{}", fmt::join(names, ", "));
    if (best_d <= std::max<size_t>(2, best.size() / 3)) {
      return fmt::format("unknown command '{} {}'; did you mean '{} {}'? ({} commands: {})", path, util::EscapeControls(w), path, best, path, known);
    }
    return fmt::format("unknown command '{} {}' ({} commands: {})", path, util::EscapeControls(w), path, known);
  }
  return "";
}

}  // namespace

fs::path DefaultRunsDir() { return util::StateDir() / "runs"; }

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  CLI::App app{"clustermax: audit, benchmark and rate GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag("--version", fmt::format("clustermax {} (commit {}, {})", core::kToolVersion, core::kGitSha, core::kBuildType));

  AuditOptions a;
  auto* audit_cmd = app.add_subcommand("audit", "Audit this node (read-only unless probes are enabled)");
  audit_cmd->add_flag("--standalone", a.standalone, "Target: bare-metal standalone node");
  audit_cmd->add_flag("--vm", a.vm, "Target: virtual machine");
  audit_cmd->add_flag("--container", a.container, "Target: inside a container");
  audit_cmd->add_flag("--slurm", a.slurm, "Target: a Slurm cluster: every node through one srun step, plus the scheduler checks");
  audit_cmd->add_flag("--local", a.local_only, "With --slurm: this node only, no fan-out");
  audit_cmd->add_option("--partition", a.partition, "Fleet scope: nodes of this partition");
  audit_cmd->add_option("--nodelist", a.nodelist, "Fleet scope: these nodes (Slurm hostlist, e.g. gpu[01-16])");
  audit_cmd->add_option("--nodes", a.nodes, "Fleet scope: at most N nodes")->check(CLI::NonNegativeNumber);
  audit_cmd->add_option("--time", a.time_limit, "srun --time when the audit asks for an allocation (minutes)");
  audit_cmd->add_option("--fleet-timeout", a.fleet_timeout_s, "Seconds for the whole srun step; nodes silent by then are reported")
      ->check(CLI::PositiveNumber);
  audit_cmd->add_option("--node-timeout", a.node_timeout_s, "Seconds each node collects before it sends what it has (0: no deadline)")
      ->check(CLI::NonNegativeNumber);
  audit_cmd->add_option("--bcast", a.bcast, "Copy this binary to PATH on every node first (srun --bcast), for nodes without the shared path");
  audit_cmd->add_flag("--k8s", a.k8s, "Target: a Kubernetes node (this node only)");
  audit_cmd->add_flag("-y,--yes", a.yes, "Do not ask for confirmation");
  audit_cmd->add_option("-p,--profile", a.profiles, "Profile(s): security, versions, isolation, hardware, software, containers, "
                                                     "orchestration, networking, storage, health, access, all");
  audit_cmd->add_option("--check", a.checks, "Only these check ids");
  audit_cmd->add_flag("--show", a.show, "List what the selection would check, then exit");
  audit_cmd->add_flag("--dry-run", a.dry_run, "Print the plan (JSON), then exit");
  audit_cmd->add_flag("--active", a.active, "Enable every active probe (they change state, start containers or load GPUs)");
  audit_cmd->add_option("--probe", a.probes, "Enable one active probe by name");
  audit_cmd->add_option("--probe-image", a.probe_image, "Container image for the container-launch probe (docker and pyxis)");
  audit_cmd->add_option("--enroot-image", a.enroot_image, "Image the enroot-import probe pulls (default docker://busybox:1.36)");
  audit_cmd->add_option("--s3-endpoint", a.s3_endpoint, "Object storage endpoint for the s3-probe (or CLUSTERMAX_S3_ENDPOINT)");
  audit_cmd->add_option("--s3-bucket", a.s3_bucket, "Bucket for the s3-probe (or CLUSTERMAX_S3_BUCKET; credentials: AWS_* or ~/.aws/credentials)");
  audit_cmd->add_option("--s3-region", a.s3_region, "Signing region for the s3-probe (or CLUSTERMAX_S3_REGION, AWS_REGION; default us-east-1)");
  audit_cmd->add_option("--s3-addressing", a.s3_addressing, "path (default) or virtual")->check(CLI::IsMember({"path", "virtual"}));
  audit_cmd->add_option("--replay", a.replay, "Judge saved evidence bundle(s) or run directories instead of this machine (--out saves the judgement as a run)")
      ->check(CLI::ExistingPath);
  audit_cmd->add_option("--record", a.record, "Also write this node's evidence bundle to FILE (e.g. a test fixture)");
  audit_cmd->add_option("--out", a.out_dir, "Run directory (default ~/.clustermax/runs/<timestamp>)");
  audit_cmd->add_option("--sysroot", a.sysroot, "Re-root every file read under DIR")->check(CLI::ExistingDirectory);
  audit_cmd->add_option("--minimums", a.minimums_file, "Minimum-version table to use instead of the embedded one")->check(CLI::ExistingFile);
  audit_cmd->add_option("--timeout", a.timeouts, "Per-evidence timeout, ID=SECONDS (e.g. gpu.inventory=30)");
  audit_cmd->add_option("--command-timeout", a.command_timeout_s, "Default timeout for every command, seconds")->check(CLI::PositiveNumber);
  audit_cmd->add_option("--counter-interval", a.counter_interval_s,
                        "Seconds between the two reads of RDMA error counters (0: one read, history only)")
      ->check(CLI::NonNegativeNumber);
  audit_cmd->add_flag("--json", a.json_out, "Print the JSON report instead of text");
  audit_cmd->add_option("--format", a.format, "Output: text (default), json, prometheus, junit (XML) or sarif (2.1.0); docs/exports.md")
      ->check(CLI::IsMember({"text", "json", "prometheus", "junit", "sarif"}));
  audit_cmd->add_option("--textfile", a.textfile, "Also write the Prometheus text to PATH.prom (node_exporter textfile collector; atomic, mode 0644)");
  audit_cmd->add_flag("-v", a.verbosity, "More detail (-v, -vv, -vvv)");
  audit_cmd->add_flag("--exit-zero", a.exit_zero, "Exit 0 even when checks FAIL");
  audit_cmd->add_flag("--no-color", a.no_color, "No colours (also NO_COLOR or a non-terminal)");

  ReviewOptions ro;
  auto* review_cmd = audit_cmd->add_subcommand("review", "Re-judge a saved run with the current rules");
  review_cmd->add_option("path", ro.path, "Run directory or bundle (default: the latest run)");
  review_cmd->add_option("--command", ro.commands, "'find TEXT', 'show ID', 'raw' or 'report' (repeatable)");
  review_cmd->add_flag("-v", ro.verbosity, "More detail");
  review_cmd->add_option("--minimums", ro.minimums_file, "Minimum-version table")->check(CLI::ExistingFile);

  auto* checks_cmd = app.add_subcommand("checks", "The check registry");
  checks_cmd->require_subcommand(1);
  std::string format = "text";
  auto* list_cmd = checks_cmd->add_subcommand("list", "List every check");
  list_cmd->add_option("--format", format, "text, md or json")->check(CLI::IsMember({"text", "md", "json"}));
  bool list_json = false;
  list_cmd->add_flag("--json", list_json, "JSON (as --json everywhere else; the same as --format json)");
  std::string describe_id;
  auto* describe_cmd = checks_cmd->add_subcommand("describe", "Describe one check");
  describe_cmd->add_option("id", describe_id, "Check id")->required();
  auto* probes_cmd = checks_cmd->add_subcommand("probes", "List the active probes (--probe NAME), what they do and change, and the checks using them");

  auto* minimums_cmd = app.add_subcommand("minimums", "The minimum-version table");
  minimums_cmd->require_subcommand(1);
  std::string minimums_file;
  bool minimums_json = false;
  auto* show_cmd = minimums_cmd->add_subcommand("show", "Print the table in use");
  show_cmd->add_option("--minimums", minimums_file, "Table file instead of the embedded one")->check(CLI::ExistingFile);
  show_cmd->add_flag("--json", minimums_json, "Print the raw JSON");
  std::string update_source;
  bool update_force = false;
  auto* update_cmd = minimums_cmd->add_subcommand("update", "Install a newer table from a file or an http(s) URL (verified, atomic, ~/.clustermax)");
  update_cmd->add_option("source", update_source, "FILE or URL of a minimum-versions.json")->required();
  update_cmd->add_flag("--force", update_force, "Install even a table older than the one in use");

  BenchCommands bench_cmds;
  AddBenchCommands(app, bench_cmds);
  RateCommand rate_cmd;
  AddRateCommand(app, rate_cmd);
  DbCommands db_cmds;
  AddDbCommands(app, db_cmds);
  WebCommands web_cmds;
  AddWebCommands(app, web_cmds);
  ExportCommand export_cmd;
  AddExportCommand(app, export_cmd);
  HealthCommand health_cmd;
  AddHealthCommand(app, health_cmd);

  CollectCmd cc;
  auto* collect_cmd = app.add_subcommand("collect", "Collect this node's evidence for a fleet audit (srun runs it on every node)");
  collect_cmd->add_option("--role", cc.role, "compute (node checks), login (scheduler checks) or empty (all)")
      ->check(CLI::IsMember({"compute", "login", ""}));
  collect_cmd->add_option("--target", cc.target, "Audit target");
  collect_cmd->add_option("-p,--profile", cc.profiles, "Profile(s)");
  collect_cmd->add_option("--check", cc.checks, "Check ids");
  collect_cmd->add_option("--probe", cc.probes, "Active probes");
  collect_cmd->add_option("--probe-image", cc.probe_image, "Image of the container-launch probe");
  collect_cmd->add_option("--enroot-image", cc.enroot_image, "Image of the enroot-import probe");
  collect_cmd->add_option("--timeout", cc.timeouts, "ID=SECONDS");
  collect_cmd->add_option("--command-timeout", cc.command_timeout_s, "Seconds per command");
  collect_cmd->add_option("--counter-interval", cc.counter_interval_s, "Seconds between RDMA counter reads");
  collect_cmd->add_option("--step-gpus", cc.step_gpus, "GPUs per node the step requested");
  collect_cmd->add_option("--node-timeout", cc.node_timeout_s, "Send what was collected after this many seconds (0: no deadline)");
  collect_cmd->add_option("--out", cc.out, "Write the bundle to FILE instead of stdout lines");

  static std::string completion_shell;
  auto* completion_cmd = app.add_subcommand("completion", "Print the shell completion script (bash or zsh)");
  completion_cmd->add_option("shell", completion_shell, "bash or zsh")->required()->check(CLI::IsMember({"bash", "zsh"}));
  auto* manpage_cmd = app.add_subcommand("manpage", "Print the man page (roff)")->group("");  // the build installs it

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (std::string s = SuggestSubcommand(app, args); !s.empty()) {
      std::cerr << "clustermax: error: " << s << "\n";
      return kExitToolError;
    }
    app.exit(e);
    return kExitToolError;
  }

  try {
    if (review_cmd->parsed()) {
      ro.color = UseColor(false);
      return Review(ro);
    }
    if (audit_cmd->parsed()) return RunAudit(a, args);
    if (completion_cmd->parsed()) {
      std::cout << (completion_shell == "bash" ? BashCompletion(app) : ZshCompletion(app));
      return kExitOk;
    }
    if (manpage_cmd->parsed()) {
      std::cout << ManPage(app, core::kToolVersion);
      return kExitOk;
    }
    if (collect_cmd->parsed()) return RunCollect(cc, args);
    if (health_cmd.cmd->parsed()) return health_cmd.run();
    if (bench_cmds.gpu->parsed()) return bench_cmds.run_gpu();
    if (rate_cmd.cmd->parsed()) return rate_cmd.run();
    if (db_cmds.db->parsed()) return db_cmds.run();
    if (export_cmd.cmd->parsed()) return export_cmd.run();
    if (web_cmds.report->parsed()) return web_cmds.run_report();
    if (web_cmds.serve->parsed()) return web_cmds.run_serve();
    if (bench_cmds.storage->parsed()) return bench_cmds.run_storage();
    if (bench_cmds.s3->parsed()) return bench_cmds.run_s3();
    if (bench_cmds.probe_s3->parsed()) return bench_cmds.run_probe_s3();
    if (list_cmd->parsed()) {
      if (list_json) format = "json";
      const auto& reg = checks::DefaultRegistry();
      if (format == "md") {
        std::cout << report::RenderChecksMarkdown(reg);
      } else if (format == "json") {
        json out = json::array();
        for (const auto& c : reg.all()) {
          const auto& i = c.info;
          out.push_back({{"id", i.id}, {"category", i.category}, {"title", i.title}, {"targets", core::MaskToString(i.targets)},
                         {"mode", i.Mode()}, {"needs", i.needs}, {"criterion", i.criterion}, {"critical", i.critical}});
        }
        std::cout << util::JsonText(out) << "\n";
      } else {
        for (const auto& c : reg.all()) {
          std::cout << fmt::format("{:<36} {:<12} {:<14} {}\n", c.info.id, c.info.category, core::MaskToString(c.info.targets), c.info.title);
        }
        std::cout << fmt::format("{} checks\n", reg.all().size());
      }
      return kExitOk;
    }
    if (probes_cmd->parsed()) {
      for (const auto& p : core::Probes()) {
        std::vector<std::string> users;
        for (const auto& c : checks::DefaultRegistry().all()) {
          if (c.info.probe == p.name) users.push_back(c.info.id);
        }
        std::cout << fmt::format("{}\n  does:     {}\n  changes:  {}\n  budget:   {} s\n  checks:   {}\n", p.name, p.description, p.side_effects, p.budget_s,
                                 users.empty() ? "-" : fmt::format("{}", fmt::join(users, ", ")));
      }
      return kExitOk;
    }
    if (describe_cmd->parsed()) {
      const core::Check* c = checks::DefaultRegistry().Find(describe_id);
      if (!c) throw audit::UsageError("unknown check id '" + describe_id + "'");
      std::cout << report::RenderCheckDescription(c->info);
      return kExitOk;
    }
    if (update_cmd->parsed()) {
      std::cout << UpdateMinimums(update_source, update_force);
      return kExitOk;
    }
    if (show_cmd->parsed()) {
      core::MinimumTable storage;
      std::string text;
      const core::MinimumTable& t = LoadMinimums(minimums_file, storage, &text);
      if (minimums_json) {
        std::cout << text;
        return kExitOk;
      }
      auto s = core::TableStaleness(t, std::chrono::system_clock::now());
      std::cout << fmt::format("minimum-version table: {} (schema {}), generated {}, {:.0f} days old{}\n", t.origin, t.schema_version,
                               t.generated_text, s.age_days, s.stale ? fmt::format(" (STALE: older than {} days)", t.max_age_days) : "");
      for (const auto& c : t.components) {
        std::vector<std::string> floors;
        for (const auto& f : c.floors) floors.push_back(f.key == "*" ? f.version : f.key + " -> " + f.version);
        std::cout << fmt::format("  {:<30} {:<15} {:<34} {}\n", c.id, core::ToString(c.kind), c.check, fmt::join(floors, "; "));
        if (!c.eol_keys.empty()) std::cout << fmt::format("  {:<30} {:<15} {:<34} end-of-life: {}\n", "", "", "", fmt::join(c.eol_keys, ", "));
      }
      return kExitOk;
    }
  } catch (const audit::UsageError& e) {
    std::cerr << "clustermax: error: " << util::EscapeControls(e.what()) << "\n";
    return kExitToolError;
  } catch (const std::invalid_argument& e) {
    std::cerr << "clustermax: error: " << util::EscapeControls(e.what()) << "\n";
    return kExitToolError;
  } catch (const std::exception& e) {
    std::cerr << "clustermax: error: " << util::EscapeControls(e.what()) << "\n";
    return kExitToolError;
  }
  return kExitToolError;
}

std::string SelfExe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot resolve /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace clustermax::cli
