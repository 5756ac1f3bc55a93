#include "audit/engine.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "audit/fleet_summary.h"
#include "host/redact.h"
#include "core/version.h"
#include "util/strings.h"
#include "util/time.h"


namespace clustermax::audit {

using core::Finding;
using core::Reason;
using core::Verdict;

int Report::Count(Verdict v) const {
  int n = 0;
  for (const auto& r : results) n += r.finding.verdict == v ? 1 : 0;
  return n;
}

void StampManifest(host::Manifest& m, const std::vector<std::string>& argv) {
  m.tool_version = core::kToolVersion;
  m.git_sha = core::kGitSha;
  m.argv.clear();
  for (const auto& a : argv) m.argv.push_back(host::RedactArg(a));  // a --s3-endpoint with user:password@ never reaches a bundle
  m.uid = static_cast<long>(::getuid());
}

namespace {

std::string HostnameFrom(const core::EvidenceSet& ev, host::Host& h) {
  auto it = ev.find("os.kernel");
  if (it != ev.end() && it->second.ok() && it->second.data["hostname"].is_string()) return it->second.data["hostname"];
  auto r = h.ReadFile("/proc/sys/kernel/hostname", 4096);
  if (r.status == host::IoStatus::kOk) return std::string(util::Trim(r.content));
  return "localhost";
}

// An image's name: its own /etc/hostname, else the kernel hostname file inside it (a mounted live
// root), else the name of the directory it lies in; never the auditing host's name (nor "localhost").
std::string ImageName(const core::EvidenceSet& ev, host::Host& h, const std::string& sysroot) {
  auto r = h.ReadFile("/etc/hostname", 4096);
  if (r.status == host::IoStatus::kOk) {
    auto lines = util::SplitLines(r.content);
    for (const auto& l : lines) {
      std::string name(util::Trim(l));
      if (!name.empty() && name[0] != '#') return util::SanitizeUtf8(name);
    }
  }
  auto it = ev.find("os.kernel");
  if (it != ev.end() && it->second.ok() && it->second.data["hostname"].is_string() && !it->second.data["hostname"].get<std::string>().empty()) {
    return it->second.data["hostname"];
  }
  std::filesystem::path p(sysroot);
  while (!p.empty() && p.filename().empty() && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  std::string dir = p.filename().string();
  return util::SanitizeUtf8(dir.empty() ? "image" : dir);
}

std::vector<std::string> CollectorsFor(const Plan& plan, const std::string& role) {
  std::vector<std::string> ids = role == "login" ? plan.cluster_collectors : role == "compute" ? plan.node_collectors : plan.collectors;
  ids.erase(std::remove(ids.begin(), ids.end(), std::string("fleet.summary")), ids.end());  // derived by Judge, never collected
  if (std::find(ids.begin(), ids.end(), "os.kernel") == ids.end()) ids.push_back("os.kernel");
  return ids;
}

Finding JudgeOne(const core::Check& c, const core::EvidenceSet& ev, const core::MinimumTable& minimums, core::Target target,
                 util::SysTime now) {
  core::JudgeContext ctx(c.info, ev, minimums, target, now);
  try {
    return c.judge(ctx);
  } catch (const std::exception& e) {
    // A defect in our judge is our fault: shown, never a PASS, excluded from scoring.
    return core::Warn(Reason::kToolFault, fmt::format("check failed internally: {}", e.what()));
  }
}

Finding RollUp(const std::vector<NodeFinding>& nodes, const std::vector<UnreachableNode>& unreachable) {
  if (nodes.size() == 1 && unreachable.empty()) return nodes.front().finding;
  const NodeFinding* worst = &nodes.front();
  int counts[4] = {0, 0, 0, 0};
  for (const auto& n : nodes) {
    ++counts[static_cast<int>(n.finding.verdict)];
    if (core::Rank(n.finding.verdict) > core::Rank(worst->finding.verdict)) worst = &n;
  }
  Finding f = worst->finding;
  size_t m = nodes.size() + unreachable.size();
  if (!unreachable.empty() && (f.verdict == Verdict::kPass || f.verdict == Verdict::kSkip)) {
    // Evidence that was not read is never a PASS: the nodes that answered passed, the rest are unknown.
    std::vector<std::string> names;
    for (const auto& u : unreachable) names.push_back(u.node);
    Finding w = core::Warn(Reason::kCoveragePartial,
                           fmt::format("{} of {} nodes {}; no evidence from {}: {}", counts[static_cast<int>(f.verdict)], m,
                                       core::ToString(f.verdict), names.size() == 1 ? "node" : "nodes", fmt::join(names, ", ")));
    w.observed = f.observed;
    w.expected = f.expected;
    for (const auto& u : unreachable) w.details.push_back(u.node + ": no evidence (" + u.reason + ")");
    for (const auto& n : nodes) w.details.push_back(n.node + ": " + n.finding.message);
    return w;
  }
  int n_worst = counts[static_cast<int>(worst->finding.verdict)];
  f.message = fmt::format("{} of {} nodes {}: {}", n_worst, m, core::ToString(worst->finding.verdict), worst->finding.message);
  f.details.clear();
  for (const auto& n : nodes) {
    if (n.finding.verdict == worst->finding.verdict) f.details.push_back(n.node + ": " + n.finding.message);
  }
  for (const auto& u : unreachable) f.details.push_back(u.node + ": no evidence (" + u.reason + ")");
  return f;
}

}  // namespace

NodeEvidence CollectNode(host::Host& live, const Plan& plan, const collect::CollectOptions& opts, host::Bundle& bundle,
                         const std::string& role) {
  host::RecordingHost rec(live, bundle);
  bundle.manifest.started_at = util::FormatRfc3339(std::chrono::system_clock::now());
  bundle.manifest.target = std::string(core::ToString(plan.selection.target));
  bundle.manifest.probes.assign(opts.probes.begin(), opts.probes.end());
  bundle.manifest.role = role;
  NodeEvidence n;
  n.role = role;
  n.evidence = collect::CollectEvidence(rec, CollectorsFor(plan, role), opts);
  n.node = bundle.manifest.sysroot.empty() ? HostnameFrom(n.evidence, rec) : ImageName(n.evidence, rec, bundle.manifest.sysroot);
  // In a Slurm step the node's name is Slurm's (several slurmd may share one host).
  if (auto sn = live.GetEnv("SLURMD_NODENAME"); sn && !sn->empty() && role == "compute") n.node = util::SanitizeUtf8(*sn);
  bundle.manifest.hostname = n.node;
  bundle.manifest.finished_at = util::FormatRfc3339(std::chrono::system_clock::now());
  n.manifest = bundle.manifest;
  return n;
}

NodeEvidence ReplayNode(const host::Bundle& bundle, const Plan& plan, const collect::CollectOptions& opts) {
  host::ReplayHost replay(bundle);
  collect::CollectOptions o = opts;
  // Replay the probes the node actually ran; a probe that was not run stays probe-disabled.
  o.probes = std::set<std::string>(bundle.manifest.probes.begin(), bundle.manifest.probes.end());
  NodeEvidence n;
  n.manifest = bundle.manifest;
  n.role = bundle.manifest.role;
  n.evidence = collect::CollectEvidence(replay, CollectorsFor(plan, n.role), o);
  n.node = bundle.manifest.hostname.empty() ? HostnameFrom(n.evidence, replay) : bundle.manifest.hostname;
  n.replay_misses = replay.misses();
  return n;
}

namespace {
// Runs fn(0..n-1) on up to `threads` threads (the calling one included). The first exception, by
// index, is rethrown after every worker has stopped.
void ParallelFor(size_t n, unsigned threads, const std::function<void(size_t)>& fn) {
  std::atomic<size_t> next{0};
  std::mutex mu;
  std::exception_ptr first_error;
  size_t first_error_index = n;
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < n; i = next.fetch_add(1)) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard lock(mu);
        if (i < first_error_index) {
          first_error_index = i;
          first_error = std::current_exception();
        }
      }
    }
  };
  threads = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(std::min<size_t>(n, 64))));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (first_error) std::rethrow_exception(first_error);
}

unsigned Cores() { return std::max(1u, std::thread::hardware_concurrency()); }
}  // namespace

std::vector<NodeEvidence> ReplayFiles(const std::vector<std::string>& paths, const Plan& plan,
                                      const collect::CollectOptions& opts) {
  std::vector<NodeEvidence> out(paths.size());
  collect::CollectOptions one = opts;
  one.threads = 1;  // replay does no I/O wait: parallelise across nodes, not within one
  // Each bundle is loaded, replayed and dropped by one worker, so at most one per core is in memory.
  ParallelFor(paths.size(), Cores(), [&](size_t i) {
    host::Bundle b = host::Bundle::Load(paths[i]);
    if (b.Empty()) {
      throw host::BundleError(fmt::format("{}: the evidence bundle holds no evidence (no file, directory, command, PATH lookup, "
                                          "environment or NVML answer was recorded); nothing to judge",
                                          paths[i]));
    }
    out[i] = ReplayNode(b, plan, one);
  });
  return out;
}

std::vector<NodeEvidence> ReplayBundles(const std::vector<host::Bundle>& bundles, const Plan& plan,
                                        const collect::CollectOptions& opts) {
  std::vector<NodeEvidence> out(bundles.size());
  collect::CollectOptions one = opts;
  one.threads = 1;
  ParallelFor(bundles.size(), Cores(), [&](size_t i) { out[i] = ReplayNode(bundles[i], plan, one); });
  return out;
}

Report Judge(const Plan& plan, const std::vector<NodeEvidence>& nodes, const core::MinimumTable& minimums,
             const std::vector<UnreachableNode>& unreachable) {
  Report r;
  r.tool_version = core::kToolVersion;
  r.git_sha = core::kGitSha;
  r.plan = plan;
  r.minimums_origin = minimums.origin;
  r.minimums_generated = minimums.generated_text;
  util::SysTime now = std::chrono::system_clock::now();
  if (!nodes.empty()) {
    if (auto t = util::ParseRfc3339(nodes.front().manifest.started_at)) now = *t;
  }
  r.collected_at = util::FormatRfc3339(now);
  for (const auto& n : nodes) {
    r.nodes.push_back(n.node);
    for (const auto& m : n.replay_misses) r.replay_misses.push_back(n.node + ": " + m);
    for (const auto& [id, e] : n.evidence) {
      if (!e.data.is_object() || !e.data.contains("not_taken")) continue;
      std::vector<std::string> what;
      for (const auto& q : e.data["not_taken"]) what.push_back(q.is_string() ? q.get<std::string>() : q.dump());
      r.not_taken.push_back(fmt::format("{}: {}{}: {}", n.node, id, e.ok() ? " (kept its file evidence)" : "", fmt::join(what, ", ")));
    }
  }
  if (!nodes.empty()) r.target_detection = nodes.front().manifest.target_detection;
  r.unreachable = unreachable;
  // Fleet: node checks on the compute nodes, cluster checks on the login node, which also gets the
  // derived evidence of the whole fleet. Without roles (one node, or plain replays) every check
  // is judged on every node.
  std::vector<const NodeEvidence*> computes, logins;
  for (const auto& n : nodes) {
    if (n.role == "login") logins.push_back(&n);
    else computes.push_back(&n);
  }
  bool fleet = !logins.empty();
  std::vector<NodeEvidence> login_views;
  if (fleet) {
    core::Evidence summary = FleetSummary(computes, unreachable, logins.front());
    r.fleet = summary.data;
    for (const auto* l : logins) {
      NodeEvidence v = *l;
      v.evidence["fleet.summary"] = summary;
      login_views.push_back(std::move(v));
    }
  }
  // Checks are pure and independent: judge them on all cores (1,000 nodes × 100 checks is the
  // bulk of a fleet judgement), each into its own slot so the report keeps the plan's order.
  r.results.resize(plan.checks.size());
  auto judge_check = [&](size_t index) {
    const auto& pc = plan.checks[index];
    CheckResult& cr = r.results[index];
    cr.info = &pc.check->info;
    bool on_login = fleet && pc.check->info.cluster;
    std::vector<const NodeEvidence*> targets;
    if (on_login) {
      for (const auto& v : login_views) targets.push_back(&v);
    } else if (fleet) {
      targets = computes;
    } else {
      for (const auto& n : nodes) targets.push_back(&n);
    }
    cr.nodes.reserve(targets.size());
    for (const auto* np : targets) {
      const NodeEvidence& n = *np;
      Finding f;
      if (pc.state == PlanState::kNotInScope) {
        f = core::Skip(Reason::kNotInScope,
                       fmt::format("target {} is not in this check's targets ({})", core::ToString(plan.selection.target),
                                   core::MaskToString(pc.check->info.targets)));
      } else if (pc.state == PlanState::kProbeDisabled) {
        f = core::Skip(Reason::kProbeDisabled,
                       fmt::format("active probe, not requested (enable with --probe {} or --active)", pc.check->info.probe));
      } else {
        f = JudgeOne(*pc.check, n.evidence, minimums, plan.selection.target, now);
      }
      cr.nodes.push_back({n.node, std::move(f)});
    }
    if (cr.nodes.empty()) {
      cr.finding = core::Warn(Reason::kCoveragePartial, "no node returned evidence");
      for (const auto& u : unreachable) cr.finding.details.push_back(u.node + ": no evidence (" + u.reason + ")");
    } else {
      cr.finding = RollUp(cr.nodes, on_login ? std::vector<UnreachableNode>{} : unreachable);
    }
  };
  size_t work = plan.checks.size() * std::max<size_t>(1, nodes.size());
  ParallelFor(plan.checks.size(), work < 2000 ? 1u : Cores(), judge_check);
  return r;
}

int ExitCodeFor(const Report& r, bool exit_zero) {
  if (exit_zero) return 0;
  return r.Count(Verdict::kFail) > 0 ? 2 : 0;
}

}  // namespace clustermax::audit
