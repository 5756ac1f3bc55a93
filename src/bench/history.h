// `bench history`: reliability from the scheduler's own records (performance.md 10; the Llama 3
// paper's interruption table). Read on the login node over a window (default 30 days):
//   sacctmgr -P show event Event=Node   node events: when each node went down or drained, why, until
//                                       when (an open event lasts until now);
//   sacct -a -X -P                      every job's state, exit code, time, nodes and GPUs;
//   sinfo -N                            the nodes there are;
//   slurmctld's log (CtldLogReader)     the node events instead, where there is no accounting.
// From them: node-hours lost (each node's out-of-service time, overlaps counted once, clipped to
// the window), planned (maintenance, reboots) apart from unplanned; drains per node per month; mean
// time between failures per node; jobs ended by a node failure and the GPU-hours they held;
// interruptions by cause (faulty GPU, GPU memory, network, host, software, maintenance, unknown),
// each job killed by NODE_FAIL matched to the event on its nodes at its end; availability (node
// time in service) and goodput (job node-hours not lost to node failures).
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/grade.h"

namespace clustermax::bench::history {

struct NodeEvent {
  std::string node, state, reason, user;
  double start = 0, end = 0;  // Unix seconds; an open event ends "now"
  bool open = false;
  // Set by AttributeXids: the GPU error in the node's kernel log that the outage is put down to
  // ("Xid 79 on 2026-11-29"); its cause is then the Xid's, whatever the reason says.
  std::string xid;
};
// One node's GPU errors from its kernel log (the kernel.xid collector's counts, collect's
// ParseGpuKernelLog): UTC day ("undated" for lines without a readable time) -> event key ("Xid
// 79", "SXid 12028", "message: has fallen off the bus") -> count. `error`: the log was not read.
struct NodeXids {
  std::string node, source, error;
  std::map<std::string, std::map<std::string, long>> days;
};
struct JobRecord {
  std::string id, state, exit_code, nodelist;
  double start = 0, end = 0;  // 0: not started / not ended
  int nodes = 0;
  double gpus = 0;  // per job, from AllocTRES gres/gpu=N
};

// A Slurm time as the commands print it: Unix seconds (SLURM_TIME_FORMAT=%s), or
// "2024-08-08T19:12:57" in the login node's local time; nullopt for "Unknown", "None", junk.
std::optional<double> ParseSlurmTime(std::string_view s);

// `sacctmgr -P show event` output with its header line (columns by name: NodeName, TimeStart or
// Start, TimeEnd or End, State, Reason, User); rows without a node (cluster events) are skipped.
// `now` closes open events. Lines that are not rows go to `problems`.
std::vector<NodeEvent> ParseEvents(std::string_view text, double now, std::vector<std::string>* problems);
// Node outages rebuilt from slurmctld's own log, for clusters without accounting (no slurmdbd: no
// `sacctmgr show event`) or whose events were purged. Lines are fed one at a time (a log may be
// large); a node goes out of service at "update_node: node N state set to DRAIN|DRAINING|DRAINED|
// DOWN|FAIL|FAILING", "drain_nodes: node N state set to ...", "Nodes LIST not responding, setting
// DOWN", "node N not resumed by ResumeTimeout", "Setting node N state to INVAL with reason:R",
// and back at "update_node: node N state set to IDLE|RESUME|ALLOCATED|MIXED|UNDRAIN" or "node N
// returned to service"; the reason from "update_node: node N reason set to: R". Timestamps: Slurm's
// "[2024-05-04T10:12:01.123]" (local time, or with a UTC offset), journalctl's short-iso
// "2024-05-04T10:12:01+0200 host slurmctld[1]:", or syslog's "May  4 10:12:01" (the year from
// `now`). "Killing JobId=J on failed node N" is counted. Other lines are not outages and are skipped.
class CtldLogReader {
 public:
  explicit CtldLogReader(double now) : now_(now) {}
  void Feed(std::string_view line);
  // Events still open end at `now` (open = true).
  std::vector<NodeEvent> Events() const;
  size_t lines() const { return lines_; }
  size_t undated() const { return undated_; }  // lines of interest without a readable time
  size_t dropped() const { return dropped_; }  // outages past kMaxEvents, not kept
  // Lines of interest (node state changes): their first and last time (0: none).
  double first() const { return first_; }
  double last() const { return last_; }
  // What the log covers: its first dated line and its last line's time (0: no dated line).
  double FirstTime() const { return first_dated_; }
  double LastTime() const;
  static constexpr size_t kMaxNodesPerLine = 65536, kMaxEvents = 1000000;
  // JobId -> node, for "Killing JobId=J on failed node N".
  const std::map<std::string, std::string>& killed_jobs() const { return killed_; }

 private:
  void Open(const std::string& node, const std::string& state, const std::string& reason, double t);
  void Close(const std::string& node, double t);
  double now_;
  size_t lines_ = 0, undated_ = 0, dropped_ = 0;
  double first_ = 0, last_ = 0, first_dated_ = 0;
  std::string last_line_;
  std::map<std::string, NodeEvent> open_;
  std::map<std::string, std::string> reason_;  // the last reason set per node
  std::vector<NodeEvent> closed_;
  std::map<std::string, std::string> killed_;
};

// `sacct -P` output with its header (JobIDRaw or JobID, State, ExitCode, Start, End, NNodes,
// NodeList, AllocTRES); job steps ("123.batch") are skipped; "CANCELLED by 0" is CANCELLED.
std::vector<JobRecord> ParseJobs(std::string_view text, std::vector<std::string>* problems);

// The cause of an outage from its reason text: "gpu", "gpu-memory", "network", "host", "software",
// "maintenance" or "unknown".
std::string Cause(const std::string& reason);

// A node's Xid document as a --xid task sends it ({"source", "counts_by_day"} or {"error"}), read
// back bounded (it crossed the network: 4000 days, 1000 keys a day, counts below 2^40).
NodeXids NodeXidsOf(const std::string& node, const nlohmann::json& doc);
// Whether an event key of the kernel log is a fault of the GPU itself (the Xid catalog's
// severities "hardware" and "reset", data/xid-catalog.json), not the workload's or informational.
bool HardwareXid(const std::string& key);
// An outage whose reason says nothing of the GPU (cause unknown, host or software: "Not
// responding", "Kill task failed", a bare reboot) on a node that logged a hardware Xid on the day
// the outage began (UTC) or the day before is put down to that Xid (the most frequent one that
// day): NodeEvent::xid is set, and its cause becomes gpu or gpu-memory. Returns how many.
size_t AttributeXids(std::vector<NodeEvent>& events, const std::vector<NodeXids>& xids);
// The Xid history over [from, to]: nodes read and unread (with why), events by key, hardware
// ones, the nodes with the most hardware events, undated lines.
nlohmann::json XidHistory(const std::vector<NodeXids>& xids, double from, double to);
// The cause an outage is counted under: the Xid's when one was attributed, else its reason's.
std::string CauseOf(const NodeEvent& e);

// The report over [from, to] for `nodes` nodes (names: those sinfo lists).
nlohmann::json Summarize(const std::vector<NodeEvent>& events, const std::vector<JobRecord>& jobs,
                         const std::vector<std::string>& nodes, double from, double to);

// Availability and MTBF need the node events read ("events_error" absent), the NODE_FAIL share
// the jobs ("jobs_error"); a failure-free history's MTBF is a lower bound, graded only when it
// reaches the pass bar of `bars`.
std::vector<MetricValue> HistoryMetrics(const nlohmann::json& result, const nlohmann::json& bars);
std::string RenderHistory(const nlohmann::json& result);

}  // namespace clustermax::bench::history
