// `clustermax bench drill KIND --node NODES`: a fault drill (bench/drill.h). Opt-in by its very
// name, and only on the nodes named: every node must be in service before. One job step injects
// the fault on each node (and, for faults with a restore, puts things back once slurmctld shows the
// node out of service); meanwhile this side polls `scontrol show node -o` every half second and
// the partition's node list every few seconds (a replacement joining), until every drilled node is
// back in service or --return-timeout. A node still out of service then is resumed (unless
// --leave-drained), and the result says so. Results in RUN_DIR/bench/drill.json.

#include <atomic>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/slurm_fanout.h"
#include "bench/drill.h"
#include "bench/lifecycle.h"
#include "bench/json_read.h"
#include "bench/net_comm.h"
#include "bench/workspace.h"
#include "cli/bench_common.h"
#include "cli/cli.h"
#include "host/local_host.h"
#include "host/redact.h"
#include "util/cancel.h"
#include "util/files.h"
#include "util/slurm_text.h"
#include "util/strings.h"
#include "util/time.h"
#include "util/usage_error.h"

namespace clustermax::cli {
using nlohmann::json;
namespace drill = bench::drill;

namespace {

constexpr const char* kDrillMarker = "CLUSTERMAX-DRILL";

struct DrillCli {
  BenchCommon common;
  audit::SlurmFanOutOptions slurm;
  std::string kind, nodes;
  int code = 0, gpu = 0, field = 230;  // 230: DCGM_FI_DEV_XID_ERRORS (dcgm_fields.h)
  std::string pci = "0000:19:00", kmsg = "/dev/kmsg";
  std::string mount, fstab = "/etc/fstab";
  std::string inject, restore;
  std::string slurmd_restart = "systemctl restart slurmd";
  bool pci_given = false;
  double detect_timeout = 900, return_timeout = 3600, restore_after = 0;
  bool leave_drained = false;
  std::string rank_job;
};

void Say(const DrillCli& o, const std::string& line) {
  if (!o.common.quiet) std::cerr << "  " << line << "\n";
}

// The nodes of the partition (or of the cluster), for spotting a replacement; none when sinfo failed.
std::set<std::string> PartitionNodes(host::Host& h, const std::string& partition) {
  std::string error;
  auto nodes = SinfoNodes(h, partition, error);
  return nodes ? std::set<std::string>(nodes->begin(), nodes->end()) : std::set<std::string>{};
}

std::map<std::string, std::string> Record(const std::map<std::string, std::string>& lines, const std::string& node) {
  auto it = lines.find(node);
  if (it == lines.end()) return {};
  return util::ParseScontrolRecord(it->second);
}

// What puts a node's fault back by hand (for an interrupted drill, or a node whose task died).
std::string UndoFor(const DrillCli& o, const std::string& node) {
  if (o.kind == "mount") return fmt::format("on {}: mount --fstab {} {}", node, o.fstab, o.mount);
  if (o.kind == "dcgm")
    return fmt::format(
        "on {}: dcgmi test --inject --gpuid {} -f {} -v 0 (injected values also age out of DCGM's "
        "cache on their own)",
        node, o.gpu, o.field);
  if (o.kind == "gpu")
    return fmt::format("on {}: nvidia-smi drain -p {} -m 0{}", node, o.pci,
                       o.slurmd_restart.empty() ? "" : " && " + util::ForNode(o.slurmd_restart, node));
  if (o.kind == "command")
    return o.restore.empty() ? "no restore command was given"
                             : fmt::format("on {}: {}", node, host::RedactCommandLine(o.restore));
  return "nothing on the node: the line stays in the kernel log, marked as a drill (clustermax audit's "
         "gpu-xid-history reports it for 7 days)";
}

int RunDrill(DrillCli& o) {
  if (!o.rank_job.empty())
    return RunRankTask(o.rank_job, "bench drill", kDrillMarker,
                       [](const json& job, const bench::net::RankInfo& me) -> std::optional<json> {
                         // srun passes on Ctrl-C and the time limit as SIGTERM: the task then
                         // stops waiting and restores before it exits.
                         bench::InstallCancelHandlers();
                         return drill::RunDrillRankJob(job, me.node);
                       });
  auto list = util::ExpandHostlist(o.nodes);
  if (!list || list->empty()) throw UsageError("--node: the nodes to drill (a Slurm hostlist, e.g. gpu[01-02])");
  if ((o.kind == "xid" || o.kind == "dcgm") && o.code == 0)
    o.code = 79;                                        // GPU fallen off the bus: every health check drains on it
  if (o.kind == "sxid" && o.code == 0) o.code = 12022;  // NVSwitch egress input ECC DBE (hardware)
  if ((o.kind == "xid" || o.kind == "sxid" || o.kind == "dcgm") && (o.code < 1 || o.code > 99999))
    throw UsageError("--code: 1 to 99999");
  if (o.gpu < 0 || o.gpu > 1023) throw UsageError("--gpu: a DCGM GPU id, 0 to 1023");
  if (o.field < 1 || o.field > 65535) throw UsageError("--field: a DCGM field id (dcgm_fields.h)");
  if (o.pci.empty() || o.pci.size() > 16 || o.pci.find_first_not_of("0123456789abcdefABCDEF:.") != std::string::npos)
    throw UsageError("--pci: a PCI address, e.g. 0000:19:00");
  if (o.kind == "mount" && (o.mount.empty() || o.mount.front() != '/'))
    throw UsageError("mount drill: --mount /PATH, a mount point listed in --fstab on the nodes");
  if (o.kind == "command" && o.inject.empty())
    throw UsageError("command drill: --inject CMD (and --restore CMD to put it back)");
  // The GPU is the user's choice, never a default: nvidia-smi drain takes it from every job.
  if (o.kind == "gpu" && (!o.pci_given || !drill::IsGpuAddress(o.pci)))
    throw UsageError(
        "gpu drill: --pci DOMAIN:BUS:DEVICE.FUNCTION, the GPU to take away (nvidia-smi --query-gpu=pci.bus_id "
        "--format=csv)");
  for (double v : {o.detect_timeout, o.return_timeout})
    if (!(v > 0 && v <= 7 * 86400)) throw UsageError("timeouts: seconds above 0, at most a week");
  if (o.restore_after < 0 || o.restore_after > 7 * 86400) throw UsageError("--restore-after: seconds, at most a week");
  CheckBenchOut(o.common, "drill");

  host::LocalHost login;
  // Only nodes in service: a drill on a drained or down node times nothing and, at its end, would
  // put an administrator's drain back in service.
  auto before = NodeLines(login, *list);
  if (!before) throw std::runtime_error("scontrol show node failed: is Slurm reachable from here?");
  std::vector<std::string> nodes;
  json result = {{"kind", "clustermax.bench.drill"}, {"schema_version", 1}};
  json out_nodes = json::array();
  for (const auto& n : *list) {
    auto rec = Record(*before, n);
    std::string state = rec.count("State") ? rec["State"] : "";
    if (rec.empty())
      out_nodes.push_back({{"node", n}, {"error", "not drilled: scontrol does not know this node"}});
    else if (!bench::life::InService(rec))
      out_nodes.push_back({{"node", n}, {"error", "not drilled: not in service before (State=" + state + ")"}});
    else
      nodes.push_back(n);
  }
  std::string what =
      o.kind == "xid"     ? fmt::format("synthetic Xid {} in the kernel log ({})", o.code, o.kmsg)
      : o.kind == "sxid"  ? fmt::format("synthetic SXid {} in the kernel log ({})", o.code, o.kmsg)
      : o.kind == "mount" ? fmt::format("{} unmounted", o.mount)
      : o.kind == "gpu"   ? fmt::format("GPU {} taken from the scheduler (nvidia-smi drain{})", o.pci,
                                      o.slurmd_restart.empty() ? ", slurmd not restarted" : ", slurmd restarted")
      : o.kind == "dcgm"  ? fmt::format(
                                "DCGM error injection: field {} = {} on GPU {} (dcgmi test --inject, again "
                                 "every second until detected)",
                                o.field, o.code, o.gpu)
                         : "the site's inject command";
  bool waits = o.kind == "mount" || o.kind == "dcgm" || o.kind == "gpu" || (o.kind == "command" && !o.restore.empty());
  result["drill"] = {{"kind", o.kind},
                     {"what", what},
                     {"nodes", *list},
                     {"detect_timeout_s", o.detect_timeout},
                     {"return_timeout_s", o.return_timeout}};
  if (o.kind == "xid" || o.kind == "sxid" || o.kind == "dcgm") result["drill"]["code"] = o.code;
  if (o.kind == "dcgm") result["drill"]["gpu"] = o.gpu, result["drill"]["field"] = o.field;
  if (o.kind == "gpu") result["drill"]["pci"] = o.pci, result["drill"]["slurmd_restart"] = o.slurmd_restart;
  // Faults put back by the node's task keep that node allocated while it waits: a health check
  // that runs only on idle nodes never sees them.
  {
    auto cfg = login.Run({{"scontrol", "show", "config"}, std::chrono::seconds(30), 1u << 20});
    auto conf = util::ParseScontrolConfig(cfg.out);
    for (const char* k : {"HealthCheckProgram", "HealthCheckInterval", "HealthCheckNodeState"})
      if (conf.count(k)) result["drill"][k] = conf[k];
    std::string hs = util::ToLower(conf.count("HealthCheckNodeState") ? conf["HealthCheckNodeState"] : "");
    if (waits && !hs.empty() && !util::Contains(hs, "any") && !util::Contains(hs, "alloc") &&
        !util::Contains(hs, "mixed"))
      result["drill"]["note"] = fmt::format(
          "HealthCheckNodeState={}: Slurm's health check skips the drilled node while the drill's task holds it",
          conf["HealthCheckNodeState"]);
  }
  auto started = std::chrono::system_clock::now();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<audit::UnreachableNode> unreachable;
  if (!nodes.empty()) {
    audit::SlurmFanOutOptions so = o.slurm;
    so.nodelist = fmt::format("{}", fmt::join(nodes, ","));
    so.nodes = 0;
    so.self_exe = util::SelfExe();
    so.tasks_per_node = 1;
    double restore_after = o.restore_after > 0 ? o.restore_after : o.detect_timeout;
    so.timeout_s = (waits ? restore_after : 0) + 300;
    // The step lives until the task has restored: a time limit shorter than that would kill it
    // with the fault still in.
    long need_min = static_cast<long>(std::ceil(so.timeout_s / 60.0));
    try {
      if (std::stol(so.time_limit) < need_min) so.time_limit = std::to_string(need_min);
    } catch (const std::exception&) {
      so.time_limit = std::to_string(need_min);
    }
    so.stop_when = [] { return bench::Cancelled(); };
    audit::NodeScope scope = audit::SelectNodes(login, so);
    RequireTargets(scope, "bench drill");
    unreachable = scope.unreachable;
    bench::InstallCancelHandlers();
    json job = {{"kind", o.kind},     {"code", o.code},       {"pci", o.pci},
                {"kmsg", o.kmsg},     {"mount", o.mount},     {"fstab", o.fstab},
                {"inject", o.inject}, {"restore", o.restore}, {"restore_after_s", restore_after},
                {"gpu", o.gpu},       {"field", o.field},     {"slurmd_restart", o.slurmd_restart}};
    auto members = PartitionNodes(login, o.slurm.partition);
    // The watch runs while the step injects (and restores): detection may come before it ends.
    std::map<std::string, drill::NodeWatch> watch;
    for (const auto& n : scope.targets) watch.emplace(n, drill::NodeWatch(n));
    std::mutex mu;
    std::atomic<bool> step_done{false};
    auto poll_once = [&](int round) {
      auto lines = NodeLines(login, scope.targets);
      if (!lines) return;  // scontrol failed: no observation
      double now = util::UnixSeconds();
      std::set<std::string> joined;
      if (round % 10 == 0)
        for (const auto& m : PartitionNodes(login, o.slurm.partition))
          if (!members.empty() && !members.count(m)) joined.insert(m);
      std::lock_guard<std::mutex> lock(mu);
      for (auto& [n, w] : watch) {
        w.Observe(now, Record(*lines, n));
        if (!joined.empty()) w.Replaced(now, *joined.begin());
      }
    };
    double step_start = util::UnixSeconds();
    std::thread watcher([&] {
      for (int round = 0; !step_done && !bench::Cancelled(); ++round) {
        poll_once(round);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    });
    // However the step ends (an exception too), the watcher stops before this scope's state goes.
    struct Joiner {
      std::atomic<bool>& done;
      std::thread& t;
      ~Joiner() {
        done = true;
        if (t.joinable()) t.join();
      }
    } joiner{step_done, watcher};
    Say(o, fmt::format("injecting on {}: {}", fmt::join(scope.targets, ","), what));
    audit::FramedStep step =
        audit::RunFramedStep(login, scope, scope.targets, so, "clustermax-drill",
                             {"bench", "drill", o.kind, "--rank-job", job.dump()}, kDrillMarker, 0);
    step_done = true;
    watcher.join();
    double step_end = util::UnixSeconds();
    std::map<std::string, std::string> missing;
    auto docs = StepDocs(step, missing);
    // The fault's time from the node, if its clock agrees with ours (the inject happened during
    // the step); else the step's end, and the skew is said.
    std::map<std::string, double> t_inject;
    std::map<std::string, bool> skewed;
    for (auto& [n, d] : docs)
      if (auto t = bench::OptNumOf(d, "t_inject")) {
        bool ok = *t >= step_start - 2 && *t <= step_end + 2;
        t_inject[n] = ok ? *t : step_end;
        skewed[n] = !ok;
      }
    if (!t_inject.empty()) {
      double first = 1e300;
      for (auto& [n, t] : t_inject) first = std::min(first, t);
      Say(o,
          fmt::format("watching {} node(s) until back in service (at most {:g} s)", t_inject.size(), o.return_timeout));
      for (int round = 0; !bench::Cancelled() && util::UnixSeconds() - first < o.return_timeout; ++round) {
        bool all_done = true;
        for (auto& [n, t] : t_inject) {
          const auto& w = watch.at(n);
          bool undetected_too_long = !w.Detected(t) && util::UnixSeconds() - t > o.detect_timeout;
          if (!w.Back(t) && !undetected_too_long) all_done = false;
        }
        if (all_done) break;
        poll_once(round);
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    }
    auto after = NodeLines(login, scope.targets);
    for (const auto& n : scope.targets) {
      json entry;
      auto dit = docs.find(n);
      if (dit == docs.end()) {
        entry = {{"node", n}, {"error", missing.count(n) ? missing[n] : "no result from the node"}};
        if (waits) entry["undo"] = UndoFor(o, n);
      } else if (!t_inject.count(n)) {
        const json& d = dit->second;
        entry = {{"node", n},
                 {"error", bench::StrOf(d, "error").empty() ? "the fault was not injected" : bench::StrOf(d, "error")}};
        if (!bench::StrOf(d, "restore_error").empty()) {
          entry["restore_error"] = bench::StrOf(d, "restore_error");
          entry["undo"] = UndoFor(o, n);
        }
      } else {
        double t = t_inject[n];
        entry = watch.at(n).Result(t);
        const json& d = dit->second;
        if (skewed[n]) entry["clock_note"] = "the node's clock disagrees with this host's: times from the step's end";
        entry["injected_at"] = util::FormatRfc3339(util::SysTime(std::chrono::seconds(static_cast<long long>(t))));
        entry["did"] = host::RedactCommandLine(bench::StrOf(d, "did"));
        // The node's task polls too, and restores as soon as it sees the node out of service: its
        // sighting, when earlier than ours, is the time to detect.
        if (auto seen = bench::OptNumOf(d, "t_detected"); seen && !skewed[n]) {
          double s = bench::RoundTo(std::max(0.0, *seen - t), 2);
          if (!bench::OptNumOf(entry, "detect_s") || s < bench::NumOf(entry, "detect_s")) {
            entry["detect_s"] = s;
            if (auto back = bench::OptNumOf(entry, "return_s")) entry["in_drain_s"] = bench::RoundTo(*back - s, 2);
          }
        }
        if (auto r = bench::OptNumOf(d, "t_restore"); r && !skewed[n])
          entry["restore_s"] = bench::RoundTo(std::max(0.0, *r - t), 2);
        if (!bench::StrOf(d, "restore_error").empty()) entry["restore_error"] = bench::StrOf(d, "restore_error");
        std::string undo = host::RedactCommandLine(bench::StrOf(d, "undo"));
        // Still out of service for the drill's fault: put back, unless asked not to, or unless
        // someone else holds it now (another reason), or the fault is still in (restore failed,
        // or there was nothing to restore it with).
        auto rec = after ? Record(*after, n) : std::map<std::string, std::string>{};
        std::string resume = fmt::format("scontrol update nodename={} state=resume", n);
        if (!rec.empty() && !bench::life::InService(rec) && entry.contains("detect_s") && !entry.contains("return_s")) {
          std::string now_reason = rec.count("Reason") ? rec["Reason"] : "";
          bool ours = now_reason == bench::StrOf(entry, "reason");
          bool fault_gone = bench::StrOf(d, "restore_error").empty() && (o.kind != "command" || !o.restore.empty());
          if (!o.leave_drained && !bench::Cancelled() && ours && fault_gone) {
            auto r = login.Run({{"scontrol", "update", "nodename=" + n, "state=resume"}, std::chrono::seconds(30)});
            entry["resumed_by_drill"] = r.status == host::IoStatus::kOk && r.exit_code == 0;
            if (!entry["resumed_by_drill"].get<bool>()) undo += "; " + resume;
          } else {
            if (!ours) entry["left_drained"] = "its reason changed since the drill saw it: " + now_reason;
            undo += "; " + resume;
          }
        }
        entry["undo"] = undo;
      }
      out_nodes.push_back(entry);
    }
  }
  result["nodes"] = out_nodes;
  if (bench::Cancelled()) result["interrupted"] = true;
  StampFleetResult(result, started, t0, unreachable);
  for (const auto& n : out_nodes)
    if (!bench::StrOf(n, "undo").empty() && bench::Cancelled())
      std::cerr << "clustermax: interrupted; to undo on " << bench::StrOf(n, "node") << ": " << bench::StrOf(n, "undo")
                << "\n";
  const BenchCommon& c = o.common;
  return FinishBench(std::move(result), c, "drill", drill::RenderDrill,
                     [&c](const json& x) { return bench::Grade(drill::DrillMetrics(x), BenchBars(c)); });
}

}  // namespace

void AddDrillCommand(CLI::App* parent, Commands& table) {
  auto o = std::make_shared<DrillCli>();
  o->slurm.time_limit = "30";
  auto* cmd = parent->add_subcommand(
      "drill",
      "Opt-in, disruptive: inject a fault on the nodes named and time what the cluster does about it: time to "
      "detect (node drained, downed or failed by its health checks), time in drain, time back in service or "
      "replaced; every drill restores what it changed");
  cmd->add_option(
         "kind", o->kind,
         "xid: a synthetic Xid line in the kernel log; sxid: an NVSwitch SXid line; mount: unmount a mount "
         "point (mounted again from fstab once detected); dcgm: DCGM error injection (dcgmi test --inject, kept up "
         "until detected, then 0); gpu: one GPU taken from the scheduler (nvidia-smi drain and a slurmd restart, "
         "undone the same way); command: the site's --inject and --restore")
      ->required()
      ->check(CLI::IsMember({"xid", "sxid", "mount", "dcgm", "gpu", "command"}));
  cmd->add_option("--node", o->nodes, "The nodes to drill (Slurm hostlist, required); nothing else is touched");
  cmd->add_option("--code", o->code,
                  "Xid or SXid code, or the value a dcgm drill injects (default Xid 79, SXid 12022)");
  cmd->add_option("--gpu", o->gpu, "dcgm drill: the DCGM GPU id (dcgmi discovery -l)");
  cmd->add_option("--field", o->field,
                  "dcgm drill: the DCGM field id (default 230, DCGM_FI_DEV_XID_ERRORS); 0 is injected at the end, so "
                  "a field where 0 means no error (an error count or code)");
  cmd->add_option_function<std::string>(
      "--pci",
      [o](const std::string& v) {
        o->pci = v;
        o->pci_given = true;
      },
      "xid/sxid: the PCI address in the synthetic line (default 0000:19:00); gpu: the GPU to drain (required, "
      "e.g. 0000:19:00.0)");
  cmd->add_option("--slurmd-restart", o->slurmd_restart,
                  "gpu drill: how slurmd is restarted on the node after the GPU is drained and again after it is put "
                  "back ({node} is the node's name; empty: not restarted)")
      ->capture_default_str();
  cmd->add_option("--kmsg", o->kmsg,
                  "Where the line is written: /dev/kmsg (default; root on the node), or a syslog-format file the "
                  "site's health check reads; {node} is replaced by the node's name");
  cmd->add_option("--mount", o->mount, "mount drill: the mount point to take away");
  cmd->add_option("--fstab", o->fstab, "mount drill: the fstab it is mounted again from (mount --fstab)");
  cmd->add_option("--inject", o->inject, "command drill: shell command run on each node to inject the fault");
  cmd->add_option("--restore", o->restore, "command drill: shell command that puts it back");
  cmd->add_option("--detect-timeout", o->detect_timeout, "Seconds a fault may go unnoticed before the drill fails it");
  cmd->add_option("--return-timeout", o->return_timeout,
                  "Seconds from the fault until the node must be back in service (or replaced)");
  cmd->add_option("--restore-after", o->restore_after,
                  "mount/command: restore after this many seconds even if not detected (default --detect-timeout)");
  cmd->add_flag("--leave-drained", o->leave_drained,
                "Leave a node the cluster did not put back in service drained (default: the drill resumes it)");
  cmd->add_option("--partition", o->slurm.partition, "The partition (where a replacement node would join)");
  cmd->add_option("--time", o->slurm.time_limit, "Time limit of the injection step (minutes)");
  cmd->add_option("--bcast", o->slurm.bcast, "Copy this binary to the nodes first (srun --bcast=PATH)");
  cmd->add_option("--rank-job", o->rank_job, "(internal) the job of one task of a step")->group("");
  AddBenchCommon(cmd, o->common);
  table.Add(cmd, [o] { return RunDrill(*o); });
}

}  // namespace clustermax::cli
