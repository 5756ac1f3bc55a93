// `bench drill`: fault drills of the reliability phase (performance.md 10). A fault is injected on
// nodes the user names, and the drill times what the cluster does about it: time to detect (fault
// injected -> the node marked bad: drained, downed or failed by whatever health system the site
// runs), time in drain (marked -> back in service) and time to return (fault -> schedulable again,
// or a new node joined the partition in its place). Every drill restores what it changed.
//
// Faults (RunDrillRankJob, one task on each drilled node):
//   xid      a synthetic NVIDIA Xid line written to the kernel log (/dev/kmsg; needs root there),
//            tagged as a drill, as NVIDIA's and the clouds' own drills do;
//   sxid     the same for an NVSwitch SXid line;
//   mount    a mount the node needs unmounted, and mounted again from fstab once the node is
//            marked bad (or after --restore-after);
//   dcgm     DCGM's error injection (dcgmi test --inject): a field, Xid errors by default, set on
//            one GPU in nv-hostengine, injected again every second (injected samples age out)
//            until the node is marked bad (or --restore-after), then set back to 0;
//   gpu      one GPU made unavailable to the scheduler: `nvidia-smi drain -p BDF -m 1` and slurmd
//            restarted so it registers one GPU fewer (slurmctld then sets the node INVAL or
//            drains it, "gres/gpu count reported lower than configured"), put back with -m 0 and
//            a second restart once the node is marked bad (or after --restore-after); with a
//            static gres.conf (File=) Slurm never notices, which the drill then reports;
//   command  the site's own inject and restore commands (e.g. the file an NHC check looks for).
// The login side (cli/bench_drill.cc) watches `scontrol show node` meanwhile (NodeWatch).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/grade.h"

namespace clustermax::bench::drill {

// The kernel-log line of a synthetic Xid or SXid, marked as a drill so nobody takes it for a real
// fault: "NVRM: Xid (PCI:0000:19:00): 79, pid=0, name=clustermax-drill, synthetic fault ..." and
// "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12022, synthetic fault ...".
std::string FaultLine(const std::string& kind, int code, const std::string& pci);

// A GPU's full PCI address as nvidia-smi drain takes it: domain:bus:device.function.
bool IsGpuAddress(const std::string& pci);

// The mount points of /proc/self/mountinfo (octal escapes decoded), and the targets of an fstab
// file (comments and blank lines skipped).
std::vector<std::string> MountPoints(const std::string& mountinfo);
std::vector<std::string> FstabTargets(const std::string& fstab);

// One task's work (the job the CLI sends): {"kind", "code", "pci", "kmsg" (a path; "{node}" in it
// is the task's node), "mount", "fstab", "inject", "restore", "restore_after_s", "gpu", "field",
// "slurmd_restart" (a shell command, "{node}" replaced; empty: no restart)}.
// Injects the fault, then (mount, command with a restore) waits until this node is out of service
// in `scontrol show node` or restore_after_s passed, and restores. The document:
// {"node", "kind", "t_inject" (Unix seconds), "t_detected" (when this task saw the node out of
// service), "t_restore", "detected_on_node", "did", "undo", "error"}.
nlohmann::json RunDrillRankJob(const nlohmann::json& job, const std::string& node);

// One drilled node followed through `scontrol show node -o` records (util::ParseScontrolRecord),
// each at a Unix time. The fault's time is known only afterwards (the node's document), so the
// watch keeps absolute times and Result() makes them relative.
class NodeWatch {
 public:
  explicit NodeWatch(std::string node) : node_(std::move(node)) {}
  // A record of the node at Unix time t (a successful `scontrol show node` that did not list the
  // node: an empty record, the node is gone from Slurm). Failed polls are not observations.
  void Observe(double t, const std::map<std::string, std::string>& record);
  // A node not in the partition before the drill appeared at t (the drilled node's replacement).
  void Replaced(double t, const std::string& by);
  // Counting only what was seen at or after the fault (t_inject): marked bad (out of service), and
  // back in service (or replaced) after that. A drain before the fault is not its detection.
  bool Detected(double t_inject) const;
  bool Back(double t_inject) const;
  // {"node", "states": [[s, state]...], "detect_s", "reason", "detected_by", "back_s", "replaced_by",
  // "replaced_s", "return_s", "in_drain_s"}: seconds from t_inject (states seen before it have
  // negative times).
  nlohmann::json Result(double t_inject) const;

 private:
  struct Seen {
    double t;
    bool in_service;
    std::string state, reason;
  };
  struct Times {
    std::optional<double> detected, back;
    std::string reason;
  };
  Times Analyze(double t_inject) const;
  std::string node_;
  std::vector<Seen> seen_;
  std::optional<double> replaced_;
  std::string replaced_by_;
};

// Who drained the node, from its Slurm reason: "clustermax", "NHC", "DCGM", "Slurm" (not
// responding, kill task failed), or "other".
std::string DetectedBy(const std::string& reason);

std::vector<MetricValue> DrillMetrics(const nlohmann::json& result);
std::string RenderDrill(const nlohmann::json& result);

}  // namespace clustermax::bench::drill
