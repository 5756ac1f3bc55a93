// `bench history`: reliability from the scheduler's own records (performance.md 10; the Llama 3
// paper's interruption table). Read on the login node over a window (default 30 days):
//   sacctmgr -P show event Event=Node   node events: when each node went down or drained, why, until
//                                       when (an open event lasts until now);
//   sacct -a -X -P                      every job's state, exit code, time, nodes and GPUs;
//   sinfo -N                            the nodes there are.
// From them: node-hours lost (each node's out-of-service time, overlaps counted once, clipped to
// the window), planned (maintenance, reboots) apart from unplanned; drains per node per month; mean
// time between failures per node; jobs ended by a node failure and the GPU-hours they held;
// interruptions by cause (faulty GPU, GPU memory, network, host, software, maintenance, unknown),
// each job killed by NODE_FAIL matched to the event on its nodes at its end; availability (node
// time in service) and goodput (job node-hours not lost to node failures).
#pragma once
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
// `sacct -P` output with its header (JobIDRaw or JobID, State, ExitCode, Start, End, NNodes,
// NodeList, AllocTRES); job steps ("123.batch") are skipped; "CANCELLED by 0" is CANCELLED.
std::vector<JobRecord> ParseJobs(std::string_view text, std::vector<std::string>* problems);

// The cause of an outage from its reason text: "gpu", "gpu-memory", "network", "host", "software",
// "maintenance" or "unknown".
std::string Cause(const std::string& reason);

// The report over [from, to] for `nodes` nodes (names: those sinfo lists).
nlohmann::json Summarize(const std::vector<NodeEvent>& events, const std::vector<JobRecord>& jobs,
                         const std::vector<std::string>& nodes, double from, double to);

// Availability and MTBF need the node events read ("events_error" absent), the NODE_FAIL share
// the jobs ("jobs_error"); a failure-free history's MTBF is a lower bound, graded only when it
// reaches the pass bar of `bars`.
std::vector<MetricValue> HistoryMetrics(const nlohmann::json& result, const nlohmann::json& bars);
std::string RenderHistory(const nlohmann::json& result);

}  // namespace clustermax::bench::history
