#include "audit/engine.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <stdexcept>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "audit/fleet_summary.h"
#include "collect/memo.h"
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
  for (const auto& a : argv)
    m.argv.push_back(host::RedactArg(a));  // a --s3-endpoint with user:password@ never reaches a bundle
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
  if (it != ev.end() && it->second.ok() && it->second.data["hostname"].is_string() &&
      !it->second.data["hostname"].get<std::string>().empty()) {
    return it->second.data["hostname"];
  }
  std::filesystem::path p(sysroot);
  while (!p.empty() && p.filename().empty() && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  std::string dir = p.filename().string();
  return util::SanitizeUtf8(dir.empty() ? "image" : dir);
}

std::vector<std::string> CollectorsFor(const Plan& plan, const std::string& role) {
  std::vector<std::string> ids = role == "login"     ? plan.cluster_collectors
                                 : role == "compute" ? plan.node_collectors
                                                     : plan.collectors;
  ids.erase(std::remove(ids.begin(), ids.end(), std::string("fleet.summary")),
            ids.end());  // derived by Judge, never collected
  if (std::find(ids.begin(), ids.end(), "os.kernel") == ids.end()) ids.push_back("os.kernel");
  return ids;
}

Finding JudgeOne(const core::Check& c, const core::EvidenceSet& ev, const core::MinimumTable& minimums,
                 core::Target target, util::SysTime now) {
  core::JudgeContext ctx(c.info, ev, minimums, target, now);
  try {
    return c.judge(ctx);
  } catch (const std::exception& e) {
    // A defect in our judge is our fault: shown, never a PASS, excluded from scoring.
    return core::Warn(Reason::kToolFault, fmt::format("check failed internally: {}", e.what()));
  }
}

Finding RollUp(const NodeFindings& nodes, const std::vector<UnreachableNode>& unreachable) {
  if (nodes.size() == 1 && unreachable.empty()) return nodes.front().finding;
  size_t worst = 0;
  int counts[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < nodes.size(); ++i) {
    Verdict v = nodes[i].finding.verdict;
    ++counts[static_cast<int>(v)];
    if (core::Rank(v) > core::Rank(nodes[worst].finding.verdict)) worst = i;
  }
  const Finding& wf = nodes[worst].finding;
  Finding f = wf;
  size_t m = nodes.size() + unreachable.size();
  if (!unreachable.empty() && (f.verdict == Verdict::kPass || f.verdict == Verdict::kSkip)) {
    // Evidence that was not read is never a PASS: the nodes that answered passed, the rest are unknown.
    std::vector<std::string> names;
    for (const auto& u : unreachable) names.push_back(u.node);
    Finding w = core::Warn(
        Reason::kCoveragePartial,
        fmt::format("{} of {} nodes {}; no evidence from {}: {}", counts[static_cast<int>(f.verdict)], m,
                    core::ToString(f.verdict), names.size() == 1 ? "node" : "nodes", fmt::join(names, ", ")));
    w.observed = f.observed;
    w.expected = f.expected;
    for (const auto& u : unreachable) w.details.push_back(u.node + ": no evidence (" + u.reason + ")");
    for (const auto& n : nodes) w.details.push_back(n.node + ": " + n.finding.message);
    return w;
  }
  int n_worst = counts[static_cast<int>(wf.verdict)];
  f.message = fmt::format("{} of {} nodes {}: {}", n_worst, m, core::ToString(wf.verdict), wf.message);
  f.details.clear();
  for (const auto& n : nodes) {
    if (n.finding.verdict == wf.verdict) f.details.push_back(n.node + ": " + n.finding.message);
  }
  for (const auto& u : unreachable) f.details.push_back(u.node + ": no evidence (" + u.reason + ")");
  return f;
}

// A check's finding over the fleet: the roll-up of its nodes (a check judged on the login node
// does not count the unreachable compute nodes), or a WARN naming the silent nodes when none answered.
Finding FleetFinding(const NodeFindings& nodes, const std::vector<UnreachableNode>& unreachable, bool on_login) {
  if (nodes.empty()) {
    Finding f = core::Warn(Reason::kCoveragePartial, "no node returned evidence");
    for (const auto& u : unreachable) f.details.push_back(u.node + ": no evidence (" + u.reason + ")");
    return f;
  }
  return RollUp(nodes, on_login ? std::vector<UnreachableNode>{} : unreachable);
}

Finding JudgePlanned(const Plan& plan, const PlannedCheck& pc, const core::EvidenceSet& ev,
                     const core::MinimumTable& minimums, util::SysTime now) {
  if (pc.state == PlanState::kNotInScope) {
    return core::Skip(Reason::kNotInScope,
                      fmt::format("target {} is not in this check's targets ({})",
                                  core::ToString(plan.selection.target), core::MaskToString(pc.check->info.targets)));
  }
  if (pc.state == PlanState::kProbeDisabled) {
    return core::Skip(Reason::kProbeDisabled,
                      fmt::format("active probe, not requested (enable with --probe {} or --active)",
                                  pc.check->info.ProbeFor(plan.selection.target)));
  }
  return JudgeOne(*pc.check, ev, minimums, plan.selection.target, now);
}

// The report's not_taken lines of one node.
void NotTakenLines(const NodeEvidence& n, std::vector<std::string>& out) {
  for (const auto& [id, e] : n.evidence) {
    if (!e.data.is_object() || !e.data.contains("not_taken")) continue;
    std::vector<std::string> what;
    for (const auto& q : e.data["not_taken"]) what.push_back(q.is_string() ? q.get<std::string>() : q.dump());
    out.push_back(
        fmt::format("{}: {}{}: {}", n.node, id, e.ok() ? " (kept its file evidence)" : "", fmt::join(what, ", ")));
  }
}

// What a check's judgement depends on, as memo serials (NodeEvidence::memo_serials): one per
// item of `needs`, a marker for an item the node did not collect. Empty when some item is not
// known to the memo (the check is judged).
std::string InputsKey(const std::vector<std::string>& needs, const NodeEvidence& n) {
  std::string key = "#";
  for (const auto& id : needs) {
    uint64_t serial = 0;
    if (auto it = n.memo_serials.find(id); it != n.memo_serials.end()) {
      serial = it->second;
    } else if (n.evidence.find(id) == n.evidence.end()) {
      serial = UINT64_MAX;  // absent on every node alike (the plan's collectors for this role)
    } else {
      return {};
    }
    key.append(reinterpret_cast<const char*>(&serial), sizeof serial);
  }
  return key;
}

size_t HashFinding(const Finding& f) {
  std::hash<std::string_view> h;
  size_t x = static_cast<size_t>(f.verdict) * 1000003u ^ static_cast<size_t>(f.reason) * 10007u ^
             static_cast<size_t>(f.severity);
  auto mix = [&](std::string_view s) { x = (x ^ h(s)) * 0x100000001b3ull + 0x9e3779b97f4a7c15ull; };
  mix(f.observed);
  mix(f.expected);
  mix(f.message);
  for (const auto& d : f.details) mix(d);
  return x;
}

bool SameFinding(const Finding& a, const Finding& b) {
  return a.verdict == b.verdict && a.reason == b.reason && a.severity == b.severity && a.observed == b.observed &&
         a.expected == b.expected && a.message == b.message && a.details == b.details;
}

}  // namespace

uint32_t FindingTable::Intern(Finding f) {
  size_t h = HashFinding(f);
  auto [lo, hi] = index_.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    if (SameFinding(distinct_[it->second], f)) return it->second;
  }
  uint32_t i = static_cast<uint32_t>(distinct_.size());
  distinct_.push_back(std::move(f));
  index_.emplace(h, i);
  return i;
}

void NodeFindings::push_back(NodeFinding n) {
  if (!own_names_) {
    own_names_ = std::make_shared<std::vector<std::string>>(names_ ? *names_ : std::vector<std::string>{});
    names_ = own_names_;
  }
  own_names_->push_back(std::move(n.node));
  rows_.push_back({static_cast<uint32_t>(own_names_->size() - 1), table_.Intern(std::move(n.finding))});
}

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
  n.node = bundle.manifest.sysroot.empty() ? HostnameFrom(n.evidence, rec)
                                           : ImageName(n.evidence, rec, bundle.manifest.sysroot);
  // In a fleet the node's name is its scheduler's (several slurmd may share one host).
  if (auto sn = SchedulerNodeName(live); sn && role == "compute") n.node = *sn;
  bundle.manifest.hostname = n.node;
  bundle.manifest.finished_at = util::FormatRfc3339(std::chrono::system_clock::now());
  n.manifest = bundle.manifest;
  return n;
}

std::optional<std::string> SchedulerNodeName(host::Host& h) {
  for (const char* var : {"SLURMD_NODENAME", "CLUSTERMAX_NODE_NAME"}) {
    if (auto v = h.GetEnv(var); v && !v->empty()) return util::SanitizeUtf8(*v);
  }
  return std::nullopt;
}

NodeEvidence ReplayNode(const host::Bundle& bundle, const Plan& plan, const collect::CollectOptions& opts,
                        collect::CollectorMemo* memo) {
  host::ReplayHost replay(bundle);
  collect::CollectOptions o = opts;
  // Replay the probes the node actually ran; a probe that was not run stays probe-disabled.
  o.probes = std::set<std::string>(bundle.manifest.probes.begin(), bundle.manifest.probes.end());
  NodeEvidence n;
  n.manifest = bundle.manifest;
  n.role = bundle.manifest.role;
  n.evidence = collect::CollectEvidence(replay, CollectorsFor(plan, n.role), o, memo, &n.memo_serials);
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
    NotTakenLines(n, r.not_taken);
  }
  if (!nodes.empty()) r.target_detection = nodes.front().manifest.target_detection;
  r.unreachable = unreachable;
  // Fleet: node checks on the compute nodes, cluster checks on the login node, which also gets the
  // derived evidence of the whole fleet. Without roles (one node, or plain replays) every check
  // is judged on every node.
  std::vector<const NodeEvidence*> computes, logins;
  for (const auto& n : nodes) {
    if (n.role == "login")
      logins.push_back(&n);
    else
      computes.push_back(&n);
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
      cr.nodes.push_back({n.node, JudgePlanned(plan, pc, n.evidence, minimums, now)});
    }
    cr.finding = FleetFinding(cr.nodes, unreachable, on_login);
  };
  size_t work = plan.checks.size() * std::max<size_t>(1, nodes.size());
  ParallelFor(plan.checks.size(), work < 2000 ? 1u : Cores(), judge_check);
  return r;
}

// ---- FleetJudge ----

struct FleetJudge::State {
  const Plan& plan;
  const core::MinimumTable& minimums;
  util::SysTime now;
  struct Slot {
    bool added = false;
    std::string node, started_at, role;
    std::vector<std::string> misses, not_taken;
    std::string partial;
    std::vector<uint32_t> facts;      // per fact, an index into fact_values (interned: long-lived
                                      // small strings per node fragment the heap the bundles churn)
    nlohmann::json target_detection;  // slot 0's only: the first node is always kept
  };
  std::vector<std::unordered_map<std::string, uint32_t>> fact_ids;  // per fact: value -> index
  std::vector<std::vector<std::string>> fact_values;
  std::vector<Slot> slots;
  std::mutex mu;                                // tables, findings, logins
  std::vector<FindingTable> tables;             // per check
  std::vector<std::vector<uint32_t>> findings;  // per check, per slot (kNone: not judged)
  std::map<size_t, NodeEvidence> logins;        // slot -> evidence, for the cluster checks
  // Per check: the memo serials of its `needs` (InputsKey) -> the finding judged on them. A check
  // reads only what it needs (JudgeContext enforces it), so nodes with identical inputs share it.
  std::vector<std::unordered_map<std::string, uint32_t>> by_inputs;
  static constexpr size_t kMaxInputsKept = 4096;  // per check: memory stays flat in the node count
  std::atomic<bool> login_seen{false};
  static constexpr uint32_t kNone = UINT32_MAX;
  State(const Plan& p, const core::MinimumTable& m) : plan(p), minimums(m) {}
};

FleetJudge::FleetJudge(const Plan& plan, const core::MinimumTable& minimums, util::SysTime now, size_t slots)
    : s_(std::make_unique<State>(plan, minimums)) {
  s_->now = now;
  s_->slots.resize(slots);
  s_->tables.resize(plan.checks.size());
  s_->by_inputs.resize(plan.checks.size());
  s_->findings.assign(plan.checks.size(), std::vector<uint32_t>(slots, State::kNone));
}

FleetJudge::~FleetJudge() = default;

void FleetJudge::Add(size_t slot, NodeEvidence n) {
  State& s = *s_;
  State::Slot& sl = s.slots.at(slot);
  sl.node = n.node;
  sl.started_at = n.manifest.started_at;
  sl.role = n.role;
  sl.misses = std::move(n.replay_misses);
  NotTakenLines(n, sl.not_taken);
  if (slot == 0) sl.target_detection = n.manifest.target_detection;
  if (n.role == "login") {
    s.login_seen = true;
    std::lock_guard lock(s.mu);
    sl.added = true;
    s.logins.emplace(slot, std::move(n));
    return;
  }
  NodeFacts facts = FactsOf(n);
  sl.partial = std::move(facts.partial);
  // Until a login node has been seen the replay may have none, and then every check is judged on
  // every node: judge the cluster checks too (a fleet's login bundle usually comes first).
  bool fleet = s.login_seen;
  size_t checks = s.plan.checks.size();
  std::vector<std::string> keys(checks);
  std::vector<uint32_t> known(checks, State::kNone);
  {
    std::lock_guard lock(s.mu);
    for (size_t c = 0; c < checks; ++c) {
      const auto& pc = s.plan.checks[c];
      if (fleet && pc.check->info.cluster) continue;
      keys[c] = InputsKey(pc.check->info.needs, n);
      if (keys[c].empty()) continue;
      auto it = s.by_inputs[c].find(keys[c]);
      if (it != s.by_inputs[c].end()) known[c] = it->second;
    }
  }
  std::vector<std::pair<size_t, Finding>> judged;
  judged.reserve(checks);
  for (size_t c = 0; c < checks; ++c) {
    const auto& pc = s.plan.checks[c];
    if ((fleet && pc.check->info.cluster) || known[c] != State::kNone) continue;
    judged.emplace_back(c, JudgePlanned(s.plan, pc, n.evidence, s.minimums, s.now));
  }
  std::lock_guard lock(s.mu);
  for (size_t c = 0; c < checks; ++c) {
    if (known[c] != State::kNone) s.findings[c][slot] = known[c];
  }
  for (auto& [c, f] : judged) {
    uint32_t i = s.tables[c].Intern(std::move(f));
    s.findings[c][slot] = i;
    if (!keys[c].empty() && s.by_inputs[c].size() < State::kMaxInputsKept)
      s.by_inputs[c].emplace(std::move(keys[c]), i);
  }
  if (s.fact_ids.size() < facts.values.size()) {
    s.fact_ids.resize(facts.values.size());
    s.fact_values.resize(facts.values.size());
  }
  sl.facts.reserve(facts.values.size());
  for (size_t k = 0; k < facts.values.size(); ++k) {
    auto [it, fresh] = s.fact_ids[k].try_emplace(facts.values[k], static_cast<uint32_t>(s.fact_values[k].size()));
    if (fresh) s.fact_values[k].push_back(facts.values[k]);
    sl.facts.push_back(it->second);
  }
  sl.added = true;
}

Report FleetJudge::Finish(const std::vector<UnreachableNode>& unreachable, bool drop_duplicates,
                          std::vector<Duplicate>* duplicates, std::vector<size_t>* kept_out) {
  State& s = *s_;
  const Plan& plan = s.plan;
  Report r;
  r.tool_version = core::kToolVersion;
  r.git_sha = core::kGitSha;
  r.plan = plan;
  r.minimums_origin = s.minimums.origin;
  r.minimums_generated = s.minimums.generated_text;
  r.collected_at = util::FormatRfc3339(s.now);
  std::vector<size_t> kept;
  std::set<std::pair<std::string, std::string>> collections;
  for (size_t i = 0; i < s.slots.size(); ++i) {
    const auto& sl = s.slots[i];
    if (!sl.added) continue;
    if (drop_duplicates && !collections.insert({sl.node, sl.started_at}).second) {
      if (duplicates) duplicates->push_back({i, sl.node, sl.started_at});
      continue;
    }
    kept.push_back(i);
  }
  if (kept_out) *kept_out = kept;
  auto names = std::make_shared<std::vector<std::string>>();
  names->reserve(kept.size());
  for (size_t i : kept) {
    auto& sl = s.slots[i];
    names->push_back(sl.node);
    r.nodes.push_back(sl.node);
    for (const auto& m : sl.misses) r.replay_misses.push_back(sl.node + ": " + m);
    for (auto& l : sl.not_taken) r.not_taken.push_back(std::move(l));
  }
  if (!kept.empty()) r.target_detection = s.slots[kept.front()].target_detection;
  r.unreachable = unreachable;
  // Positions (in the report's node list) of the compute and login nodes.
  std::vector<uint32_t> computes, logins;
  for (size_t k = 0; k < kept.size(); ++k)
    (s.slots[kept[k]].role == "login" ? logins : computes).push_back(static_cast<uint32_t>(k));
  bool fleet = !logins.empty();
  std::vector<NodeEvidence> login_views;
  if (fleet) {
    std::vector<NodeFacts> store(computes.size());
    std::vector<const NodeFacts*> facts;
    facts.reserve(computes.size());
    for (size_t j = 0; j < computes.size(); ++j) {
      const auto& sl = s.slots[kept[computes[j]]];
      store[j].node = sl.node;
      store[j].partial = sl.partial;
      for (size_t k = 0; k < sl.facts.size(); ++k) store[j].values.push_back(s.fact_values[k][sl.facts[k]]);
      facts.push_back(&store[j]);
    }
    NodeFacts login_facts = FactsOf(s.logins.at(kept[logins.front()]));
    core::Evidence summary = FleetSummary(facts, unreachable, &login_facts);
    r.fleet = summary.data;
    for (uint32_t k : logins) {
      NodeEvidence v = std::move(s.logins.at(kept[k]));
      v.evidence["fleet.summary"] = summary;
      login_views.push_back(std::move(v));
    }
    s.logins.clear();
  }
  std::vector<uint32_t> all(kept.size());
  for (size_t k = 0; k < kept.size(); ++k) all[k] = static_cast<uint32_t>(k);
  r.results.resize(plan.checks.size());
  auto finish_check = [&](size_t c) {
    const auto& pc = plan.checks[c];
    CheckResult& cr = r.results[c];
    cr.info = &pc.check->info;
    bool on_login = fleet && pc.check->info.cluster;
    std::vector<NodeFindings::Row> rows;
    FindingTable table;
    if (on_login) {
      for (size_t j = 0; j < login_views.size(); ++j) {
        rows.push_back({logins[j], table.Intern(JudgePlanned(plan, pc, login_views[j].evidence, s.minimums, s.now))});
      }
    } else {
      const auto& targets = fleet ? computes : all;
      rows.reserve(targets.size());
      for (uint32_t k : targets) {
        uint32_t f = s.findings[c][kept[k]];
        if (f == State::kNone)
          throw std::logic_error(fmt::format("check {} was not judged on {}", pc.check->info.id, (*names)[k]));
        rows.push_back({k, f});
      }
      table = std::move(s.tables[c]);
    }
    cr.nodes = NodeFindings(names, std::move(table), std::move(rows));
    cr.finding = FleetFinding(cr.nodes, unreachable, on_login);
  };
  size_t work = plan.checks.size() * std::max<size_t>(1, kept.size());
  ParallelFor(plan.checks.size(), work < 2000 ? 1u : Cores(), finish_check);
  return r;
}

namespace {
util::SysTime NowOf(const NodeEvidence& first) {
  if (auto t = util::ParseRfc3339(first.manifest.started_at)) return *t;
  return std::chrono::system_clock::now();
}
}  // namespace

Report ReplayAndJudgeFiles(const std::vector<std::string>& paths, const Plan& plan, const collect::CollectOptions& opts,
                           const core::MinimumTable& minimums, std::vector<FleetJudge::Duplicate>* duplicates,
                           std::vector<size_t>* kept) {
  collect::CollectOptions one = opts;
  one.threads = 1;  // replay does no I/O wait: parallelise across nodes, not within one
  collect::CollectorMemo memo;
  auto replay = [&](size_t i) {
    host::Bundle b = host::Bundle::Load(paths[i]);
    if (b.Empty()) {
      throw host::BundleError(
          fmt::format("{}: the evidence bundle holds no evidence (no file, directory, command, PATH lookup, "
                      "environment or NVML answer was recorded); nothing to judge",
                      paths[i]));
    }
    return ReplayNode(b, plan, one, &memo);
  };
  if (paths.empty())
    return FleetJudge(plan, minimums, std::chrono::system_clock::now(), 0).Finish({}, true, duplicates, kept);
  // The first node's collection time is every judge's "now": it is replayed first.
  NodeEvidence first = replay(0);
  FleetJudge judge(plan, minimums, NowOf(first), paths.size());
  judge.Add(0, std::move(first));
  // Each bundle is loaded, replayed, judged and dropped by one worker: one per core in memory.
  ParallelFor(paths.size() - 1, Cores(), [&](size_t i) { judge.Add(i + 1, replay(i + 1)); });
  return judge.Finish({}, /*drop_duplicates=*/true, duplicates, kept);
}

struct FleetStream::State {
  collect::CollectOptions one;
  collect::CollectorMemo memo;
  const Plan& plan;
  FleetJudge judge;
  State(const NodeEvidence& login, size_t computes, const Plan& p, const collect::CollectOptions& opts,
        const core::MinimumTable& minimums)
      : one(opts), plan(p), judge(p, minimums, NowOf(login), computes + 1) {
    one.threads = 1;  // replay does no I/O wait: parallelise across nodes, not within one
  }
};

FleetStream::FleetStream(NodeEvidence login, size_t computes, const Plan& plan, const collect::CollectOptions& opts,
                         const core::MinimumTable& minimums)
    : s_(std::make_unique<State>(login, computes, plan, opts, minimums)) {
  s_->judge.Add(0, std::move(login));
}

FleetStream::~FleetStream() = default;

void FleetStream::Add(size_t index, const host::Bundle& bundle) {
  s_->judge.Add(index + 1, ReplayNode(bundle, s_->plan, s_->one, &s_->memo));
}

Report FleetStream::Finish(const std::vector<UnreachableNode>& unreachable) {
  return s_->judge.Finish(unreachable, /*drop_duplicates=*/false);
}

Report JudgeFleet(NodeEvidence login, const std::vector<host::Bundle>& bundles, const Plan& plan,
                  const collect::CollectOptions& opts, const core::MinimumTable& minimums,
                  const std::vector<UnreachableNode>& unreachable) {
  FleetStream stream(std::move(login), bundles.size(), plan, opts, minimums);
  ParallelFor(bundles.size(), Cores(), [&](size_t i) { stream.Add(i, bundles[i]); });
  return stream.Finish(unreachable);
}

int ExitCodeFor(const Report& r, bool exit_zero) {
  if (exit_zero) return 0;
  return r.Count(Verdict::kFail) > 0 ? 2 : 0;
}

}  // namespace clustermax::audit
