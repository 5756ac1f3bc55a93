// Health mode (`clustermax health`): the passive subset of the audit that a scheduler runs on a
// busy node every few minutes (Slurm's HealthCheckProgram, a prolog or epilog, a timer). It is the
// same plan, collectors and judges as an audit, restricted to the checks below, plus a small state
// kept between runs so that only what is new since the last run counts:
//   kernel.xid     only Xid/SXid/GPU-loss lines not seen by the last run are judged
//   rdma.counters  one read now; the last run's read is the "first" sample, so a counter that rose
//                  since the last run is a live error and an old non-zero value only history
// Everything here is pure (no host, no files, no clock of its own): the CLI reads and writes the
// state, takes the lock and runs scontrol.
#pragma once
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/engine.h"
#include "collect/collector.h"
#include "core/evidence.h"
#include "host/host.h"

namespace clustermax::audit::health {

// The checks health mode judges, in the order a fault is reported (the first FAIL names the line).
const std::vector<std::string>& Checks();

// The state between runs (a small JSON file, docs/ARCHITECTURE.md "Health mode").
struct State {
  int version = 1;
  long long updated_epoch = 0;                         // 0: no earlier run
  std::string updated_at;                              // RFC 3339
  std::vector<std::string> xid_seen;                   // kernel-log lines of the GPU events the last run saw
  nlohmann::json counters = nlohmann::json::object();  // "mlx5_0/1" -> {counter: value}
  std::string last_status;                             // the last status line
  nlohmann::json ToJson() const;
};
// nullopt (and `error`) for a document that is not a state we wrote: the caller reports it and
// starts afresh, never crashes.
std::optional<State> ParseState(std::string_view text, std::string* error);

// Rewrites the evidence to "since the last run" (see the header comment). With no earlier run
// (prev.updated_epoch == 0) every event the source shows counts, and counters have one read.
void ApplyState(core::EvidenceSet& evidence, const State& prev, long long now_epoch);
// The state to keep after this run, from the evidence as collected (before ApplyState).
State NextState(const core::EvidenceSet& collected, long long now_epoch, const std::string& now_text,
                const std::string& status_line);

struct Verdict {
  bool healthy = true;
  std::string check;                  // the first failing check
  std::string reason;                 // its summary (sanitized)
  std::vector<std::string> failures;  // "check: summary" for every FAIL
  std::vector<std::string> warnings;  // "check: summary" for every WARN (never unhealthy)
};
// FAIL of any health check is unhealthy; WARN (unread evidence, history) and SKIP are not.
Verdict Summarize(const Report& report);
// "HEALTHY" or "UNHEALTHY: <check>: <reason>", one line.
std::string StatusLine(const Verdict& v);

// Text safe for scontrol's Reason and one stdout line: control characters (newline, escape, DEL)
// become spaces, runs of spaces collapse, double quotes become single, and it is cut (at a UTF-8
// boundary, with "...") to `max_bytes`.
std::string SanitizeReason(std::string_view text, size_t max_bytes = 200);

// One health run on `h`: the plan of Checks(), collected with `base` (one counter read, the kernel
// log since shortly before the last run), the state applied, judged and summarized.
struct RunResult {
  Verdict verdict;
  std::string line;  // StatusLine(verdict)
  State next;        // the state to save
  Report report;
};
RunResult Run(host::Host& h, const collect::CollectOptions& base, const State& prev, const std::string& node,
              std::chrono::system_clock::time_point now);

// The reason prefix that marks a drain as ours: --resume never touches any other drain.
inline constexpr std::string_view kReasonPrefix = "clustermax: ";

// argv for scontrol (never a shell string).
std::vector<std::string> DrainCommand(const std::string& node, const std::string& reason);
std::vector<std::string> ResumeCommand(const std::string& node);
std::vector<std::string> ShowNodeCommand(const std::string& node);

enum class NodeAction { kNone, kDrain, kResume };
struct Decision {
  NodeAction action = NodeAction::kNone;
  std::string why;  // for stderr: "drained by someone else (Reason=...): left alone"
};
// What to do with the node, from its `scontrol show node -o` record (empty: not read).
//  unhealthy + drain:  drain with `reason` (prefixed), unless it is already drained with that same
//                      reason, or drained/down by someone else (their reason is kept)
//  healthy + resume:   resume only a node drained with our prefix
Decision Decide(bool healthy, bool drain, bool resume, const std::map<std::string, std::string>& node,
                const std::string& reason);

}  // namespace clustermax::audit::health
