// Slurm checks: the scheduler's configuration and state as the login node sees it (cluster checks,
// judged once per fleet), the GPU step's environment on each node, and the fleet's coverage and
// drift (from the derived evidence "fleet.summary").
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "checks/common.h"
#include "util/slurm_text.h"
#include "core/thresholds.h"
#include "util/strings.h"

namespace clustermax::checks {
namespace {

using core::Evidence;
using core::kK;
using core::kS;

const json& SlurmThresholds() { return core::EmbeddedThresholds().data()["slurm"]; }

std::string Cfg(const Evidence& config, const char* key) {
  const json& c = config.data.value("config", json::object());
  return c.contains(key) && c[key].is_string() ? c[key].get<std::string>() : "";
}

bool Unset(const std::string& v) {
  return v.empty() || v == "(null)" || v == "none" || v == "NONE" || v == "0" || v == "UNLIMITED";
}

// Memory values of scontrol ("16384", "16G", "UNLIMITED") in MB; nullopt when unset.
std::optional<long long> MegaBytes(const std::string& v) {
  if (Unset(v)) return std::nullopt;
  std::string t = v;
  long long mult = 1;
  if (!t.empty() && (t.back() == 'G' || t.back() == 'g'))
    mult = 1024, t.pop_back();
  else if (!t.empty() && (t.back() == 'T' || t.back() == 't'))
    mult = 1024 * 1024, t.pop_back();
  else if (!t.empty() && (t.back() == 'M' || t.back() == 'm'))
    t.pop_back();
  auto n = util::ParseInt(t);
  return n ? std::optional<long long>(*n * mult) : std::nullopt;
}

// Nodes whose GRES declares GPUs, and all nodes, from `scontrol show node -o`.
struct NodeView {
  std::string name, state, reason, gres, partitions;
  std::string gpu_gres;  // the GPU part of Gres, "gpu:h100:8" (sockets dropped), "" when none
  long long gpus = 0;
  bool gres_typed = true;
};
std::vector<NodeView> Nodes(const Evidence& nodes) {
  std::vector<NodeView> out;
  for (const auto& r : nodes.data.value("records", json::array())) {
    NodeView v;
    v.name = r.value("NodeName", "");
    v.state = r.value("State", "");
    v.reason = r.value("Reason", "");
    v.gres = r.value("Gres", "");
    v.partitions = r.value("Partitions", "");
    if (v.gres == "(null)") v.gres.clear();
    std::vector<std::string> gpu_parts;
    for (const auto& g : util::ParseGres(v.gres)) {
      if (g.name != "gpu") continue;
      v.gpus += g.count;
      if (g.type.empty()) v.gres_typed = false;
      gpu_parts.push_back(g.type.empty() ? fmt::format("gpu:{}", g.count) : fmt::format("gpu:{}:{}", g.type, g.count));
    }
    std::sort(gpu_parts.begin(), gpu_parts.end());
    v.gpu_gres = fmt::format("{}", fmt::join(gpu_parts, ","));
    out.push_back(v);
  }
  return out;
}

// The fleet summary when this is a fleet audit; a SKIP otherwise.
std::optional<Finding> NotAFleet(const Evidence& summary) {
  if (summary.status == core::EvidenceStatus::kNotCollected) {
    return core::Skip(Reason::kNotApplicable,
                      "single-node audit: run `clustermax audit --slurm` on a login node for the fleet");
  }
  return core::EvidenceProblem(summary, "fleet summary");
}

// A per-node fact of the fleet summary: node -> value, for the nodes that reported it.
// A per-node fact of the fleet summary as recorded (null: not found on the node), for the nodes
// that reported it; read in place (the summary lists every node of the fleet).
std::vector<std::pair<std::string, const json&>> FleetFacts(const Evidence& summary, const char* fact) {
  std::vector<std::pair<std::string, const json&>> out;
  auto nodes = summary.data.find("nodes");
  if (nodes == summary.data.end() || !nodes->is_array()) return out;
  for (const auto& n : *nodes) {
    if (!n.is_object()) continue;
    auto facts = n.find("facts");
    if (facts == n.end() || !facts->is_object()) continue;
    auto v = facts->find(fact);
    if (v != facts->end()) out.emplace_back(n.value("node", ""), *v);
  }
  return out;
}

// The same for the nodes where it is a string: node -> value.
std::map<std::string, std::string> FleetFact(const Evidence& summary, const char* fact) {
  std::map<std::string, std::string> out;
  for (const auto& [node, v] : FleetFacts(summary, fact)) {
    if (v.is_string()) out[node] = v.get<std::string>();
  }
  return out;
}

Finding SlurmCommands(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("slurm.commands");
  if (auto p = core::EvidenceProblem(e, "Slurm commands")) return *p;
  std::vector<std::string> bad, good;
  for (const auto& c : e.data["commands"]) {
    (c["ok"].get<bool>() ? good : bad)
        .push_back(c["ok"].get<bool>()
                       ? c["name"].get<std::string>()
                       : fmt::format("{}: {}", c["command"].get<std::string>(), c.value("error", "failed")));
  }
  Finding f = bad.empty() ? core::Pass(fmt::format("all {} Slurm commands respond", good.size()))
                          : core::Warn(Reason::kConfig, fmt::format("{} of {} Slurm commands missing or failing",
                                                                    bad.size(), bad.size() + good.size()));
  return f.Expected("sinfo, squeue, scontrol, salloc, sbatch, srun and sacct answer --version").Details(bad);
}

Finding ControllerHealth(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("slurm.ping");
  if (auto p = core::EvidenceProblem(e, "scontrol ping")) return *p;
  std::vector<std::string> lines;
  bool primary_up = false, backup_down = false, primary_seen = false;
  for (const auto& c : e.data["controllers"]) {
    lines.push_back(fmt::format("{} at {}: {}", c["role"].get<std::string>(), c["host"].get<std::string>(),
                                c["up"].get<bool>() ? "UP" : "DOWN"));
    if (c["role"] == "primary")
      primary_seen = true, primary_up = c["up"].get<bool>();
    else if (!c["up"].get<bool>())
      backup_down = true;
  }
  if (!primary_seen)
    return core::Warn(Reason::kEvidenceError, "scontrol ping named no primary controller: " + e.data.value("raw", ""))
        .Details(lines);
  Finding f = !primary_up   ? core::Fail(Severity::kConfig, "the primary slurmctld is DOWN")
              : backup_down ? core::Warn(Reason::kConfig, "a backup slurmctld is DOWN")
                            : core::Pass("slurmctld up");
  return f.Details(lines);
}

Finding NodeStates(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("slurm.nodes");
  if (auto p = core::EvidenceProblem(e, "scontrol show node")) return *p;
  auto nodes = Nodes(e);
  if (nodes.empty()) return core::Warn(Reason::kEvidenceError, "scontrol show node listed no node");
  std::set<std::string> healthy;
  for (const auto& s : SlurmThresholds()["healthy_node_states"]) healthy.insert(s.get<std::string>());
  std::vector<std::string> bad, unread;
  int gpu_nodes = 0;
  for (const auto& n : nodes) {
    if (n.gpus == 0) continue;
    ++gpu_nodes;
    if (n.state.empty()) {  // no State= in the record: unread, never healthy
      unread.push_back(n.name + ": state not read");
      continue;
    }
    // "IDLE+DRAIN", "DOWN*", "MIXED+COMPLETING": every flag must be a healthy one.
    std::string base = n.state;
    bool not_responding = base.find('*') != std::string::npos;
    base.erase(std::remove(base.begin(), base.end(), '*'), base.end());
    bool ok = !not_responding;
    for (const auto& part : util::Split(base, '+')) ok = ok && healthy.count(part) > 0;
    if (!ok) bad.push_back(fmt::format("{}: {}{}", n.name, n.state, n.reason.empty() ? "" : " (" + n.reason + ")"));
  }
  if (gpu_nodes == 0) return core::Skip(Reason::kNotApplicable, "no node declares GPU GRES");
  Finding f = !bad.empty()
                  ? core::Warn(Reason::kConfig,
                               fmt::format("{} of {} GPU nodes down, drained or not responding", bad.size(), gpu_nodes))
              : !unread.empty()
                  ? core::Warn(Reason::kEvidenceError,
                               fmt::format("the state of {} of {} GPU nodes was not read", unread.size(), gpu_nodes))
                  : core::Pass(fmt::format("all {} GPU nodes idle, allocated or mixed", gpu_nodes));
  return f.Details(bad).Details(unread);
}

Finding GresGpu(const JudgeContext& ctx) {
  const Evidence& config = ctx.Get("slurm.config");
  const Evidence& nodes_e = ctx.Get("slurm.nodes");
  if (auto p = core::EvidenceProblem(config, "scontrol show config")) return *p;
  if (auto p = core::EvidenceProblem(nodes_e, "scontrol show node")) return *p;
  const Evidence& summary = ctx.Get("fleet.summary");
  std::map<std::string, long long> physical;  // node -> GPUs NVML saw (fleet audits)
  if (summary.ok()) {
    for (const auto& n : summary.data["nodes"]) {
      const json& g = n["facts"]["gpus"];
      if (!g.is_string()) continue;
      long long total = 0;
      for (const auto& part : util::Split(g.get<std::string>(), ','))
        total += util::ParseInt(util::SplitWhitespace(part).empty() ? "" : util::SplitWhitespace(part)[0]).value_or(0);
      physical[n["node"].get<std::string>()] = total;
    }
  }
  bool gres_types_gpu = util::Contains(Cfg(config, "GresTypes"), "gpu");
  auto nodes = Nodes(nodes_e);
  std::vector<std::string> fails, warns, lines;
  for (const auto& n : nodes) {
    auto it = physical.find(n.name);
    long long phys = it == physical.end() ? -1 : it->second;
    lines.push_back(fmt::format("{}: Gres={}{}", n.name, n.gres.empty() ? "(none)" : n.gres,
                                phys >= 0 ? fmt::format(", {} GPU(s) seen by NVML", phys) : ""));
    if (n.gpus == 0 && phys > 0)
      fails.push_back(fmt::format("{}: {} GPU(s) but no gpu GRES (not schedulable)", n.name, phys));
    else if (n.gpus > 0 && phys >= 0 && phys != n.gpus)
      warns.push_back(fmt::format("{}: GRES declares {} GPU(s), NVML sees {}", n.name, n.gpus, phys));
    else if (n.gpus > 0 && !n.gres_typed)
      warns.push_back(fmt::format("{}: gpu GRES without a type", n.name));
  }
  // The nodes of a GPU partition must offer the same GPU GRES: a job asking --gres=gpu:8 of the
  // partition cannot land on a node declaring 4, none or another type.
  std::map<std::string, std::map<std::string, std::vector<std::string>>>
      by_partition;  // partition -> GPU GRES -> nodes
  for (const auto& n : nodes) {
    for (const auto& part : util::Split(n.partitions, ',')) {
      if (!util::Trim(part).empty() && part != "(null)")
        by_partition[std::string(util::Trim(part))][n.gpu_gres.empty() ? "no GPU GRES" : n.gpu_gres].push_back(n.name);
    }
  }
  for (const auto& [part, groups] : by_partition) {
    if (groups.size() < 2) continue;
    std::vector<std::pair<std::string, std::vector<std::string>>> sorted(groups.begin(), groups.end());
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    std::vector<std::string> odd;
    for (size_t i = 1; i < sorted.size(); ++i) {
      odd.push_back(fmt::format("{} ({})", util::Ellipsize(fmt::format("{}", fmt::join(sorted[i].second, ", ")), 160),
                                sorted[i].first));
    }
    warns.push_back(fmt::format("partition {}: nodes differ in GPU GRES: {} on {} node(s); odd: {}", part,
                                sorted[0].first, sorted[0].second.size(), fmt::join(odd, "; ")));
  }
  int declared =
      static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [](const NodeView& n) { return n.gpus > 0; }));
  if (declared == 0 && physical.empty()) {
    return core::Warn(Reason::kConfig, "no node declares gpu GRES, and no node evidence to compare with")
        .Details(lines);
  }
  if (!gres_types_gpu && declared > 0) warns.push_back("GresTypes does not list gpu");
  Finding f = !fails.empty()
                  ? core::Fail(Severity::kConfig, fmt::format("{} GPU node(s) without gpu GRES", fails.size()))
              : !warns.empty() ? core::Warn(Reason::kConfig, fmt::format("{} GRES problem(s)", warns.size()))
                               : core::Pass(fmt::format("gpu GRES with a type on all {} GPU node(s){}", declared,
                                                        physical.empty() ? " (counts not compared: no node evidence)"
                                                                         : ", counts match NVML"));
  return f.Expected("Gres=gpu:<type>:N on every GPU node, N = the GPUs the node has")
      .Details(fails)
      .Details(warns)
      .Details(lines);
}

// Is Slurm's HealthCheckProgram LBNL NHC itself (/usr/sbin/nhc, nhc-wrapper)? A site script, even
// one named nhc.sh, is not: the login node's /etc/nhc/nhc.conf says nothing about what it runs.
bool IsNhcProgram(const std::string& prog) {
  auto words = util::SplitWhitespace(prog);
  if (words.empty()) return false;
  std::string base = words[0].substr(words[0].rfind('/') + 1);
  return base == "nhc" || base == "nhc-wrapper";
}

// Is it clustermax's own health check: the binary itself, or the wrapper the package installs
// (/usr/libexec/clustermax/health-check.sh, from docs/examples/health)?
bool IsClustermaxHealth(const std::string& prog) {
  auto words = util::SplitWhitespace(prog);
  if (words.empty()) return false;
  std::string base = words[0].substr(words[0].rfind('/') + 1);
  return base == "clustermax" || words[0] == "/usr/libexec/clustermax/health-check.sh";
}

Finding HealthCheckProgram(const JudgeContext& ctx) {
  const Evidence& config = ctx.Get("slurm.config");
  if (auto p = core::EvidenceProblem(config, "scontrol show config")) return *p;
  const Evidence& nhc = ctx.Get("nhc.install");
  std::string prog = Cfg(config, "HealthCheckProgram"), interval = Cfg(config, "HealthCheckInterval");
  bool nhc_installed = nhc.ok() && !nhc.data["binaries"].empty();
  int nhc_lines = nhc.ok() ? nhc.data.value("active_lines", 0) : 0;
  std::vector<std::string> lines = {fmt::format("HealthCheckProgram = {}", prog.empty() ? "(null)" : prog),
                                    fmt::format("HealthCheckInterval = {}", interval.empty() ? "0" : interval),
                                    fmt::format("HealthCheckNodeState = {}", Cfg(config, "HealthCheckNodeState")),
                                    fmt::format("NHC: {}, {} active line(s) in /etc/nhc/nhc.conf",
                                                nhc_installed ? "installed" : "not installed", nhc_lines)};
  if (Unset(prog)) {
    if (nhc_installed)
      return core::Warn(Reason::kConfig, "NHC installed but no HealthCheckProgram wired").Details(lines);
    return core::Fail(core::Severity::kMissing, "no HealthCheckProgram and no NHC").Details(lines);
  }
  auto words = util::SplitWhitespace(interval);  // "60 sec" on 22.05
  auto secs = words.empty() ? std::nullopt : util::ParseInt(words[0]);
  if (!secs || *secs == 0)
    return core::Warn(Reason::kConfig,
                      fmt::format("HealthCheckProgram {} with interval 0: it never runs periodically", prog))
        .Details(lines);
  bool is_nhc = IsNhcProgram(prog);
  bool is_dcgm = util::ContainsIgnoreCase(prog, "dcgm");
  if (is_nhc && nhc_lines == 0)
    return core::Warn(Reason::kConfig, "HealthCheckProgram is NHC but nhc.conf has no active check").Details(lines);
  if (is_nhc)
    return core::Pass(fmt::format("{} every {} s (NHC, {} active line(s) in nhc.conf)", prog, *secs, nhc_lines))
        .Details(lines);
  lines.pop_back();  // the NHC installation is not this program's configuration
  if (IsClustermaxHealth(prog)) {
    return core::
        Pass(fmt::format(
                 "clustermax health every {} s ({}: GPU, Xid, ECC, PCIe, NVLink, fabric and mount checks; drains the node itself)",
                 *secs, prog))
            .Details(lines);
  }
  return core::Pass(fmt::format("site health check program {} configured, interval {} s{}", prog, *secs,
                                is_dcgm ? " (DCGM)" : ""))
      .Details(lines)
      .Detail("a site script: what it checks is not read (NHC's configuration is not judged for it)");
}

// dcgm-healthchecks-slurm: DCGM wired into the health program (NHC configuration) or the
// prolog/epilog, on a cluster whose nodes have DCGM.
Finding DcgmHealthSlurm(const JudgeContext& ctx) {
  const Evidence& config = ctx.Get("slurm.config");
  if (auto p = core::EvidenceProblem(config, "scontrol show config")) return *p;
  const Evidence& fleet = ctx.Get("fleet.summary");
  if (fleet.ok()) {
    int with = 0, known = 0;
    for (const auto& [node, dcgm] : FleetFacts(fleet, "dcgm")) {
      ++known;
      with += dcgm.is_string();
    }
    if (known > 0 && with == 0)
      return core::Skip(Reason::kPrerequisiteMissing,
                        fmt::format("DCGM is not installed on any of the {} nodes", known));
  }
  const Evidence& nhc = ctx.Get("nhc.install");
  std::vector<std::string> wired;
  for (const char* key : {"HealthCheckProgram", "Prolog", "Epilog", "TaskProlog"}) {
    std::string v = Cfg(config, key);
    if (!Unset(v) && (util::ContainsIgnoreCase(v, "dcgm") || util::Contains(v, "nv-hostengine")))
      wired.push_back(fmt::format("{} = {}", key, v));
  }
  if (nhc.ok()) {
    for (const auto& l : nhc.data.value("dcgm_lines", json::array()))
      wired.push_back("/etc/nhc/nhc.conf: " + l.get<std::string>());
  }
  std::vector<std::string> lines = {fmt::format("HealthCheckProgram = {}", Cfg(config, "HealthCheckProgram")),
                                    fmt::format("Prolog = {}", Cfg(config, "Prolog")),
                                    fmt::format("Epilog = {}", Cfg(config, "Epilog"))};
  if (!wired.empty())
    return core::Pass(fmt::format("DCGM wired into the node health checks: {}", wired[0])).Details(wired);
  return core::Warn(Reason::kConfig, "DCGM is not wired into the health program, NHC or the prolog/epilog")
      .Details(lines)
      .Expected("dcgmi in HealthCheckProgram, nhc.conf or the prolog/epilog");
}

// auto-remediation: a bad node is drained automatically, and comes back (or is replaced) without
// a person: ReturnToService=2, a RebootProgram or a ResumeProgram.
Finding AutoRemediation(const JudgeContext& ctx) {
  if (ctx.target() == core::Target::kK8s) return AutoRemediationOnKubernetes(ctx);
  const Evidence& config = ctx.Get("slurm.config");
  if (auto p = core::EvidenceProblem(config, "scontrol show config")) return *p;
  const Evidence& nhc = ctx.Get("nhc.install");
  std::string hc = Cfg(config, "HealthCheckProgram"), rts = Cfg(config, "ReturnToService");
  // Any health program drains, except NHC told not to (MARK_OFFLINE=0).
  bool nhc_told_not_to = IsNhcProgram(hc) && nhc.ok() && nhc.data["mark_offline"] == json(false);
  bool drain = !Unset(hc) && !nhc_told_not_to;
  std::vector<std::string> back;
  if (rts == "2") back.push_back("ReturnToService=2");
  for (const char* key : {"RebootProgram", "ResumeProgram"}) {
    if (!Unset(Cfg(config, key))) back.push_back(fmt::format("{} = {}", key, Cfg(config, key)));
  }
  std::vector<std::string> lines = {fmt::format("HealthCheckProgram = {}", hc.empty() ? "(null)" : hc),
                                    fmt::format("ReturnToService = {}", rts),
                                    fmt::format("RebootProgram = {}", Cfg(config, "RebootProgram")),
                                    fmt::format("ResumeProgram = {}", Cfg(config, "ResumeProgram")),
                                    fmt::format("SuspendProgram = {}", Cfg(config, "SuspendProgram")),
                                    fmt::format("UnkillableStepProgram = {}", Cfg(config, "UnkillableStepProgram"))};
  std::string observed =
      fmt::format("drain {}, return {}", drain ? "automatic" : "manual", back.empty() ? "manual" : back[0]);
  Finding f =
      drain && !back.empty()
          ? core::Pass("failing nodes are drained by the health program and return automatically (" + back[0] + ")")
      : drain         ? core::Warn(Reason::kConfig, "failing nodes are drained automatically but return only by hand")
      : !back.empty() ? core::Warn(Reason::kConfig, "nodes return automatically, but nothing drains a failing node")
                      : core::Warn(Reason::kConfig,
                                   "no automated remediation: no health program draining nodes, no automatic return");
  return f.Details(lines).Observed(observed).Expected(
      "health program drains; ReturnToService=2, RebootProgram or ResumeProgram");
}

// lmod: a module system in both shells that offers CUDA, an MPI (HPC-X) and NCCL.
Finding Lmod(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("modules.avail");
  if (auto p = core::EvidenceProblem(e, "module -t avail")) return *p;
  const json& sh = e.data["shells"];
  auto works = [&](const char* s) { return sh.contains(s) && sh[s].value("module_command", false); };
  bool plain = works("non-login"), login = works("login");
  if (!plain && !login)
    return core::Warn(Reason::kConfig, "no module system (module command) in a login or a non-login shell")
        .Expected("Lmod with cuda, hpcx and nccl modules");
  const json& mods = sh[login ? "login" : "non-login"]["modules"];
  auto has = [&](std::initializer_list<const char*> keys) {
    for (const auto& m : mods) {
      std::string n = util::ToLower(m.get<std::string>());
      for (const char* k : keys) {
        if (n.find(k) != std::string::npos) return true;
      }
    }
    return false;
  };
  std::vector<std::string> missing;
  if (!has({"cuda"})) missing.push_back("cuda");
  if (!has({"hpcx", "hpc-x", "openmpi", "mpi"})) missing.push_back("hpcx/mpi");
  if (!has({"nccl"})) missing.push_back("nccl");
  std::string observed = fmt::format("{} module(s); {} shell{}", mods.size(),
                                     plain && login ? "both"
                                     : login        ? "login only"
                                                    : "non-login only",
                                     plain && login ? "s" : "");
  std::vector<std::string> shown;
  for (size_t i = 0; i < mods.size() && i < 20; ++i) shown.push_back(mods[i].get<std::string>());
  Finding f =
      !plain ? core::Warn(Reason::kConfig, "modules work only in a login shell (batch scripts run non-login shells)")
      : !missing.empty()
          ? core::Warn(Reason::kConfig, fmt::format("module families missing: {}", fmt::join(missing, ", ")))
          : core::Pass(fmt::format("modules in both shells, with cuda, an MPI and nccl ({} modules)", mods.size()));
  return f.Details(shown).Observed(observed).Expected("module in login and non-login shells; cuda, hpcx, nccl modules");
}

// ssh-between-nodes: from each compute node to the next one of the step, without a password.
// ssh-between-nodes: from the login node to a compute node, and from every compute node to the
// next one of the step (the last to the first): keys only, 5 s.
Finding SshBetweenNodes(const JudgeContext& ctx) {
  const Evidence& login = ctx.Get("ssh.login");
  const Evidence& fleet = ctx.Get("fleet.summary");
  if (auto p = NotAFleet(fleet)) return *p;
  std::vector<std::string> failed, lines;
  bool login_known = false;
  if (login.ok() && login.data["target"].is_string()) {
    login_known = true;
    std::string to = login.data["target"];
    int code = login.data.value("exit_code", -1);
    lines.push_back(fmt::format(
        "login -> {}: {}", to,
        code == 0 ? "ok" : fmt::format("exit {} {}", code, util::Ellipsize(login.data.value("output", ""), 120))));
    if (code != 0) failed.push_back(lines.back());
  } else {
    lines.push_back("login -> compute: not tried (" +
                    (login.ok() ? login.data.value("reason", std::string("no node")) : login.error) + ")");
  }
  auto peers = FleetFact(fleet, "ssh to next node");
  for (const auto& [node, v] : peers) {
    if (v != "ok") failed.push_back(fmt::format("{} -> next node: {}", node, v));
  }
  size_t reached = std::count_if(peers.begin(), peers.end(), [](const auto& p) { return p.second == "ok"; });
  lines.push_back(fmt::format("compute -> compute: {} of {} node(s) reached the next node", reached, peers.size()));
  if (!login_known && peers.empty())
    return core::Skip(Reason::kNotApplicable, "no compute node to ssh to (single node, or not in a multi-node step)")
        .Details(lines);
  Finding f = !failed.empty() ? core::Warn(Reason::kConfig, fmt::format("{} ssh path(s) need a password or fail: {}",
                                                                        failed.size(), failed.front()))
              : !login_known || peers.empty()
                  ? core::Warn(Reason::kUnverified,
                               fmt::format("only {} tested", login_known ? "login -> compute" : "compute -> compute"))
                  : core::Pass(fmt::format(
                        "ssh without a password from the login node and between all {} compute node(s)", peers.size()));
  return f.Expected("key-based ssh login -> compute and compute -> compute").Details(failed).Details(lines);
}

// prolog-fast: a GPU job step starts within 30 s, prolog included (the reference's "fast" line);
// over 120 s is our FAIL line.
Finding PrologFast(const JudgeContext& ctx) {
  if (ctx.target() == core::Target::kK8s) return PrologFastOnKubernetes(ctx);
  const Evidence& config = ctx.Get("slurm.config");
  if (auto p = core::EvidenceProblem(config, "scontrol show config")) return *p;
  std::vector<std::string> lines;
  for (const char* key : {"Prolog", "Epilog", "TaskProlog", "PrologFlags", "PrologEpilogTimeout"})
    lines.push_back(fmt::format("{} = {}", key, Cfg(config, key)));
  const Evidence& probe = ctx.Get("probe.slurm-job");
  if (probe.status == core::EvidenceStatus::kProbeDisabled) {
    return core::Skip(Reason::kProbeDisabled,
                      fmt::format("start time not measured (probe slurm-job); Prolog = {}", Cfg(config, "Prolog")))
        .Details(lines);
  }
  if (auto p = core::EvidenceProblem(probe, "slurm-job probe")) return *p;
  const json& gpu = probe.data["steps"]["gpu"];
  const json& cpu = probe.data["steps"]["cpu"];
  for (const json* s : {&cpu, &gpu})
    lines.push_back(fmt::format("{} -> exit {} in {:.1f} s {}", s->value("command", ""), s->value("exit_code", -1),
                                s->value("seconds", 0.0), s->value("output", "")));
  if (gpu.value("exit_code", -1) != 0) {
    return core::Warn(Reason::kUnverified, gpu.value("timed_out", false)
                                               ? "the GPU job step did not start within the probe's budget (queue?)"
                                               : "the GPU job step failed: " + gpu.value("output", std::string()))
        .Details(lines);
  }
  double t = gpu.value("seconds", 0.0), base = cpu.value("exit_code", -1) == 0 ? cpu.value("seconds", 0.0) : -1;
  std::string observed =
      base >= 0 ? fmt::format("GPU step {:.1f} s, CPU step {:.1f} s", t, base) : fmt::format("GPU step {:.1f} s", t);
  Finding f =
      t < 30 ? core::Pass(fmt::format("a GPU job step runs in {:.1f} s, prolog included", t))
      : t <= 120
          ? core::Warn(Reason::kConfig, fmt::format("a GPU job step takes {:.0f} s to run, prolog included", t))
          : core::Fail(Severity::kConfig, fmt::format("a GPU job step takes {:.0f} s to run, prolog included", t));
  return f.Details(lines).Observed(observed).Expected("< 30 s");
}

Finding TopologyConf(const JudgeContext& ctx) {
  if (ctx.target() == core::Target::kK8s) return TopologyConfOnKubernetes(ctx);
  const Evidence& config = ctx.Get("slurm.config");
  if (auto p = core::EvidenceProblem(config, "scontrol show config")) return *p;
  std::string plugin = Cfg(config, "TopologyPlugin");
  std::set<std::string> good;
  for (const auto& g : SlurmThresholds()["good_topology_plugins"]) good.insert(g.get<std::string>());
  if (!good.count(plugin)) {
    return core::Warn(Reason::kConfig,
                      fmt::format("TopologyPlugin is {}: the scheduler does not place jobs by network topology",
                                  plugin.empty() ? "unset" : plugin))
        .Expected("topology/tree or topology/block covering every GPU node");
  }
  const Evidence& topo = ctx.Get("slurm.topology");
  const Evidence& nodes_e = ctx.Get("slurm.nodes");
  if (auto p = core::EvidenceProblem(topo, "scontrol show topology")) return *p;
  if (auto p = core::EvidenceProblem(nodes_e, "scontrol show node")) return *p;
  std::set<std::string> covered;
  for (const auto& u : topo.data["units"]) {
    if (auto names = util::ExpandHostlist(u.value("Nodes", ""))) covered.insert(names->begin(), names->end());
  }
  std::vector<std::string> missing;
  int gpu_nodes = 0;
  for (const auto& n : Nodes(nodes_e)) {
    if (n.gpus == 0) continue;
    ++gpu_nodes;
    if (!covered.count(n.name)) missing.push_back(n.name);
  }
  if (gpu_nodes == 0) {
    // Nothing to cover is not coverage: decide from the nodes' own GPU inventory (fleet audits).
    std::vector<std::string> with_gpus;
    const Evidence& fleet = ctx.Get("fleet.summary");
    auto gpus = fleet.ok() ? FleetFact(fleet, "gpus") : std::map<std::string, std::string>{};
    for (const auto& [node, v] : gpus) {
      if (v != "0") with_gpus.push_back(fmt::format("{} ({})", node, v));
    }
    if (!with_gpus.empty()) {
      return core::
          Warn(Reason::kConfig,
               fmt::format(
                   "GPUs present on {} node(s) but no node declares GPU GRES: which nodes {} must cover cannot be told",
                   with_gpus.size(), plugin))
              .Details(
                  {"GPU nodes without GRES: " + util::Ellipsize(fmt::format("{}", fmt::join(with_gpus, ", ")), 240)})
              .Expected("Gres=gpu:<type>:N on every GPU node, and topology units covering them");
    }
    if (!gpus.empty())
      return core::Skip(
          Reason::kNotApplicable,
          fmt::format("no node declares GPU GRES, and none of the {} node(s) read has a GPU", gpus.size()));
    return core::Skip(Reason::kUnverified,
                      "no node declares GPU GRES (whether the nodes have GPUs needs their evidence: audit --slurm)");
  }
  if (!missing.empty()) {
    return core::Warn(Reason::kConfig, fmt::format("{} with {} of {} GPU nodes outside every switch or block", plugin,
                                                   missing.size(), gpu_nodes))
        .Details({"not covered: " + fmt::format("{}", fmt::join(missing, ", "))});
  }
  return core::Pass(fmt::format("{} covers all {} GPU nodes ({} units)", plugin, gpu_nodes, topo.data["units"].size()));
}

Finding Pyxis(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("slurm.srun-help");
  if (auto p = core::EvidenceProblem(e, "srun --help")) return *p;
  if (e.data["container_image"].get<bool>()) return core::Pass("pyxis loaded: srun --help offers --container-image");
  return core::Warn(Reason::kConfig, "pyxis not loaded: srun --help has no --container-image")
      .Detail("install guide: https://github.com/NVIDIA/pyxis#installation");
}

Finding MpiPmix(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("slurm.mpi");
  if (auto p = core::EvidenceProblem(e, "srun --mpi=list")) return *p;
  auto plugins = e.data["plugins"].get<std::vector<std::string>>();
  if (plugins.empty())
    return core::Warn(Reason::kEvidenceError, "srun --mpi=list listed nothing: " + e.data.value("raw", ""));
  std::vector<std::string> pmix;
  for (const auto& p : plugins) {
    if (p.rfind("pmix", 0) == 0) pmix.push_back(p);
  }
  std::string all = fmt::format("{}", fmt::join(plugins, ", "));
  if (pmix.empty())
    return core::Fail(Severity::kMissing, "no PMIx plugin: srun --mpi=pmix cannot launch MPI jobs").Observed(all);
  return core::Pass(fmt::format("PMIx available ({})", fmt::join(pmix, ", "))).Observed(all);
}

Finding SacctAccounting(const JudgeContext& ctx) {
  const Evidence& config = ctx.Get("slurm.config");
  if (auto p = core::EvidenceProblem(config, "scontrol show config")) return *p;
  std::string storage = Cfg(config, "AccountingStorageType");
  const Evidence& sacct = ctx.Get("slurm.sacct");
  std::string answer = !sacct.ok()                               ? sacct.error
                       : sacct.data["exit_code"].get<int>() == 0 ? "answers"
                                                                 : sacct.data.value("stderr", "");
  if (storage != "accounting_storage/slurmdbd") {
    return core::Warn(Reason::kConfig, fmt::format("accounting not configured (AccountingStorageType = {})",
                                                   storage.empty() ? "unset" : storage))
        .Detail("sacct: " + answer);
  }
  if (!sacct.ok() || sacct.data["exit_code"].get<int>() != 0)
    return core::Warn(Reason::kConfig, "slurmdbd configured but sacct fails: " + answer);
  return core::Pass("slurmdbd accounting configured and sacct answers");
}

// Does a Slurm plugin list name `plugin`? Slurm accepts "task/cgroup" and the bare "cgroup"
// ("TaskPlugin=affinity,cgroup", as real sites write it).
bool PluginListHas(std::string_view list, std::string_view type, std::string_view plugin) {
  for (const auto& item : util::Split(list, ',')) {
    std::string_view name = util::Trim(item);
    if (name.substr(0, type.size()) == type && name.size() > type.size() && name[type.size()] == '/')
      name.remove_prefix(type.size() + 1);
    if (name == plugin) return true;
  }
  return false;
}

Finding CgroupEnforcement(const JudgeContext& ctx) {
  const Evidence& config = ctx.Get("slurm.config");
  if (auto p = core::EvidenceProblem(config, "scontrol show config")) return *p;
  const Evidence& cg = ctx.Get("slurm.cgroup-conf");
  std::vector<std::string> off;
  std::string task = Cfg(config, "TaskPlugin"), proctrack = Cfg(config, "ProctrackType");
  if (!PluginListHas(task, "task", "cgroup"))
    off.push_back("TaskPlugin = " + (task.empty() ? "unset" : task) + " (no task/cgroup)");
  if (!PluginListHas(proctrack, "proctrack", "cgroup"))
    off.push_back("ProctrackType = " + (proctrack.empty() ? "unset" : proctrack));
  if (cg.ok() && cg.data.value("present", false)) {
    for (const char* k : {"ConstrainDevices", "ConstrainRAMSpace", "ConstrainCores"}) {
      std::string v = cg.data["keys"].value(k, "no");
      if (util::ToLower(v) != "yes")
        off.push_back(fmt::format(
            "{} = {}{}", k, v, std::string(k) == "ConstrainDevices" ? " (a job sees every GPU of a shared node)" : ""));
    }
  } else {
    off.push_back(cg.ok() ? "no cgroup.conf at " + cg.data.value("path", "?") : "cgroup.conf unreadable: " + cg.error);
  }
  if (off.empty()) return core::Pass("cgroup task plugin and proctrack on; devices, RAM and cores constrained");
  return core::Warn(Reason::kConfig, fmt::format("{} enforcement gap(s)", off.size())).Details(off);
}

Finding ResourceLimits(const JudgeContext& ctx) {
  const Evidence& config = ctx.Get("slurm.config");
  if (auto p = core::EvidenceProblem(config, "scontrol show config")) return *p;
  const Evidence& parts = ctx.Get("slurm.partitions");
  const json& t = SlurmThresholds();
  std::vector<std::string> warns, lines;
  auto judge = [&](const std::string& where, const std::map<std::string, std::string>& kv) {
    auto get = [&](const char* k) {
      auto it = kv.find(k);
      return it == kv.end() ? std::string() : it->second;
    };
    auto mem_gpu = MegaBytes(get("DefMemPerGPU")), mem_cpu = MegaBytes(get("DefMemPerCPU")),
         max_cpu = MegaBytes(get("MaxMemPerCPU"));
    auto max_node = MegaBytes(get("MaxMemPerNode"));
    std::string cpu_gpu = get("DefCpuPerGPU"), cpus_task = get("DefCPUsPerTask");
    lines.push_back(fmt::format("{}: DefMemPerGPU={} DefCpuPerGPU={} DefMemPerCPU={} MaxMemPerCPU={} MaxMemPerNode={}",
                                where, get("DefMemPerGPU").empty() ? "unset" : get("DefMemPerGPU"),
                                cpu_gpu.empty() ? "unset" : cpu_gpu,
                                get("DefMemPerCPU").empty() ? "unset" : get("DefMemPerCPU"),
                                get("MaxMemPerCPU").empty() ? "unset" : get("MaxMemPerCPU"),
                                get("MaxMemPerNode").empty() ? "unset" : get("MaxMemPerNode")));
    bool sensible = (mem_gpu && *mem_gpu >= t["def_mem_per_gpu_min_mb"].get<long long>()) ||
                    (mem_cpu && *mem_cpu >= t["def_mem_per_cpu_min_mb"].get<long long>() && !Unset(cpu_gpu));
    if (mem_gpu && *mem_gpu < t["def_mem_per_gpu_min_mb"].get<long long>())
      warns.push_back(
          fmt::format("{}: DefMemPerGPU {} MB < {}", where, *mem_gpu, t["def_mem_per_gpu_min_mb"].get<long long>()));
    if (mem_cpu && *mem_cpu < t["def_mem_per_cpu_min_mb"].get<long long>()) {
      warns.push_back(fmt::format("{}: DefMemPerCPU {} MB < {}{}", where, *mem_cpu,
                                  t["def_mem_per_cpu_min_mb"].get<long long>(),
                                  *mem_cpu < t["def_mem_per_cpu_strong_min_mb"].get<long long>() ? " (strongly)" : ""));
    }
    if (cpus_task == "1") warns.push_back(where + ": DefCPUsPerTask = 1");
    if (max_cpu && *max_cpu < t["max_mem_per_cpu_min_mb"].get<long long>())
      warns.push_back(
          fmt::format("{}: MaxMemPerCPU {} MB < {}", where, *max_cpu, t["max_mem_per_cpu_min_mb"].get<long long>()));
    if (max_node) warns.push_back(fmt::format("{}: MaxMemPerNode caps memory at {} MB", where, *max_node));
    return sensible;
  };
  // Per-GPU defaults live in JobDefaults ("DefCpuPerGPU=4,DefMemPerGPU=16384"), globally and per partition.
  auto expand = [](std::map<std::string, std::string>& kv) {
    auto it = kv.find("JobDefaults");
    if (it == kv.end() || Unset(it->second) || it->second == "(null)") return;
    for (const auto& item : util::Split(it->second, ',')) {
      size_t eq = item.find('=');
      if (eq != std::string::npos && !kv.count(item.substr(0, eq))) kv[item.substr(0, eq)] = item.substr(eq + 1);
    }
  };
  std::map<std::string, std::string> global;
  for (const auto& [k, v] : config.data["config"].items()) global[k] = v.get<std::string>();
  expand(global);
  bool any_sensible = judge("cluster", global);
  if (parts.ok()) {
    for (const auto& p : parts.data["records"]) {
      std::map<std::string, std::string> kv;
      for (const auto& [k, v] : p.items()) kv[k] = v.get<std::string>();
      expand(kv);
      // A partition inherits the cluster defaults where it sets none.
      for (const char* k : {"DefMemPerGPU", "DefCpuPerGPU", "DefMemPerCPU", "MaxMemPerCPU", "MaxMemPerNode"}) {
        if (!kv.count(k) || Unset(kv[k])) kv[k] = global.count(k) ? global[k] : "";
      }
      any_sensible = judge("partition " + p.value("PartitionName", std::string("?")), kv) || any_sensible;
    }
  }
  if (!any_sensible)
    warns.insert(warns.begin(), "no GPU memory default: DefMemPerGPU unset (or DefMemPerCPU without DefCpuPerGPU)");
  Finding f = warns.empty() ? core::Pass("sensible GPU memory and CPU defaults")
                            : core::Warn(Reason::kConfig, fmt::format("{} resource-limit warning(s)", warns.size()));
  return f
      .Expected(fmt::format("DefMemPerGPU >= {} MB (or DefMemPerCPU >= {} MB with DefCpuPerGPU)",
                            t["def_mem_per_gpu_min_mb"].get<long long>(), t["def_mem_per_cpu_min_mb"].get<long long>()))
      .Details(warns)
      .Details(lines);
}

Finding CudaVisibleDevices(const JudgeContext& ctx) {
  const Evidence& env = ctx.Get("slurm.step-env");
  if (auto p = core::EvidenceProblem(env, "step environment")) return *p;
  auto s = [&](const char* k) {
    return env.data.value(k, json()).is_string() ? env.data[k].get<std::string>() : std::string();
  };
  std::string requested = s("CLUSTERMAX_STEP_GPUS");
  if (s("SLURM_JOB_ID").empty() || requested.empty() || requested == "0") {
    return core::Skip(Reason::kUnverified,
                      "no scheduler-allocated GPU step ran here (fleet audits run the node collector in one)");
  }
  std::string cvd = s("CUDA_VISIBLE_DEVICES");
  std::vector<std::string> lines = {"requested GPUs per node: " + requested,
                                    "CUDA_VISIBLE_DEVICES=" + (cvd.empty() ? "(unset)" : cvd),
                                    "SLURM_STEP_GPUS=" + s("SLURM_STEP_GPUS")};
  if (cvd.empty())
    return core::Warn(Reason::kConfig, "the scheduler did not set CUDA_VISIBLE_DEVICES in a GPU step").Details(lines);
  size_t n = util::Split(cvd, ',').size();
  if (std::to_string(n) != requested) {
    return core::Warn(Reason::kConfig,
                      fmt::format("CUDA_VISIBLE_DEVICES lists {} device(s), the step asked for {}", n, requested))
        .Details(lines);
  }
  const Evidence& gpu = ctx.Get("gpu.inventory");
  if (gpu.ok() && gpu.data.contains("devices") && gpu.data["devices"].size() != n) {
    lines.push_back(fmt::format("NVML sees {} device(s)", gpu.data["devices"].size()));
    return core::Warn(Reason::kConfig, fmt::format("CUDA_VISIBLE_DEVICES lists {} device(s), NVML in the step sees {}",
                                                   n, gpu.data["devices"].size()))
        .Details(lines);
  }
  return core::Pass(
             fmt::format("CUDA_VISIBLE_DEVICES={} set by the scheduler for the {} GPU(s) requested", cvd, requested))
      .Details(lines);
}

Finding WorkerCoverage(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("fleet.summary");
  if (auto p = NotAFleet(e)) return *p;
  size_t expected = e.data["nodes_expected"].get<size_t>(), returned = e.data["nodes_returned"].get<size_t>();
  std::vector<std::string> lines;
  for (const auto& u : e.data["unreachable"])
    lines.push_back(fmt::format("{}: {}", u["node"].get<std::string>(), u["reason"].get<std::string>()));
  std::vector<std::string> partial;
  for (const auto& p : e.data.value("partial", json::array()))
    partial.push_back(fmt::format("{}: partial ({})", p["node"].get<std::string>(), p["reason"].get<std::string>()));
  if (returned == expected && partial.empty())
    return core::Pass(fmt::format("{} of {} nodes returned evidence", returned, expected));
  if (returned == expected) {
    return core::Warn(Reason::kCoveragePartial, fmt::format("{} of {} nodes returned evidence, {} of them partial",
                                                            returned, expected, partial.size()))
        .Details(partial);
  }
  return core::Warn(Reason::kCoveragePartial, fmt::format("{} of {} nodes returned evidence", returned, expected))
      .Details(lines);
}

Finding FleetDrift(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("fleet.summary");
  if (auto p = NotAFleet(e)) return *p;
  if (e.data["nodes_returned"].get<size_t>() < 2)
    return core::Skip(Reason::kNotApplicable, "fewer than two nodes returned evidence");
  std::vector<std::string> lines;
  for (const auto& d : e.data["drift"]) {
    std::vector<std::string> odd;
    for (const auto& o : d["odd"])
      odd.push_back(fmt::format("{} ({})", o["node"].get<std::string>(), o["value"].get<std::string>()));
    lines.push_back(fmt::format("{}: {} on {} node(s); odd: {}", d["fact"].get<std::string>(),
                                d["majority"].get<std::string>(), d["majority_count"].get<size_t>(),
                                fmt::join(odd, ", ")));
  }
  Finding f = lines.empty()
                  ? core::Pass(fmt::format("{} facts uniform across {} nodes", e.data["facts_compared"].size(),
                                           e.data["nodes_returned"].get<size_t>()))
                  : core::Warn(Reason::kConfig, fmt::format("{} fact(s) differ across nodes", lines.size()));
  f.Details(lines);
  if (!e.data["unreachable"].empty())
    f.Detail(fmt::format("coverage partial: {} node(s) returned nothing", e.data["unreachable"].size()));
  return f;
}

Finding HeadWorkerConsistency(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("fleet.summary");
  if (auto p = NotAFleet(e)) return *p;
  const json& login = e.data.value("login", json());
  if (!login.is_object()) return core::Skip(Reason::kNotApplicable, "no login-node facts in this fleet audit");
  std::vector<std::string> diffs, lines;
  for (const char* fact : {"cuda toolkit", "nccl", "container toolkit", "enroot", "mpi"}) {
    // The nodes' majority value (one value when there is no drift).
    std::map<std::string, int> counts;
    for (const auto& n : e.data["nodes"]) {
      const json& v = n["facts"].value(fact, json());
      if (v.is_string()) ++counts[v.get<std::string>()];
    }
    if (counts.empty()) continue;
    auto best = std::max_element(counts.begin(), counts.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    const json& lv = login.value(fact, json());
    std::string here = lv.is_string() ? lv.get<std::string>() : "(not installed)";
    lines.push_back(fmt::format("{}: login {}, nodes {}", fact, here, best->first));
    if (here != best->first) diffs.push_back(fmt::format("{}: login node {} vs nodes {}", fact, here, best->first));
  }
  if (lines.empty()) return core::Skip(Reason::kNotApplicable, "none of the compared tools on the nodes");
  Finding f =
      diffs.empty()
          ? core::Pass("login node and workers carry the same CUDA, NCCL, container toolkit, enroot and MPI versions")
          : core::Warn(Reason::kConfig,
                       fmt::format("{} tool(s) differ between the login node and the workers", diffs.size()));
  return f.Details(diffs).Details(lines);
}

// nccl-ib-qps-entropy: on a multi-tier Clos, one queue pair per connection hashes every flow of a
// ring onto one path (ECMP/adaptive routing has nothing to spread); NCCL_IB_QPS_PER_CONNECTION >= 2
// gives it entropy. Tiers from `scontrol show topology` (switch Level), else the node count.
Finding NcclIbQps(const JudgeContext& ctx) {
  const Evidence& fleet = ctx.Get("fleet.summary");
  if (auto p = NotAFleet(fleet)) return *p;
  // Rails only (fleet fact "fabric rails"): frontend bonds, VFs and slow Ethernet carry no NCCL traffic.
  auto ports = FleetFact(fleet, "fabric rails");
  auto qps = FleetFact(fleet, "nccl ib qps");
  std::vector<std::string> rdma_nodes;
  for (const auto& [node, v] : ports) {
    if (util::ParseInt(v).value_or(0) > 0) rdma_nodes.push_back(node);
  }
  if (ports.empty()) return core::Warn(Reason::kEvidenceError, "no node reported its RDMA ports");
  if (rdma_nodes.empty())
    return core::Skip(Reason::kNotApplicable,
                      fmt::format("no InfiniBand or RoCE rail on any of the {} node(s)", ports.size()));
  // Tiers: the highest switch Level (0 = leaf) in Slurm's topology, the levels of the Kubernetes
  // scheduler's topology objects, else the GPU node count.
  FabricTiers tiers;
  if (ctx.target() == core::Target::kK8s) {
    tiers = FabricTiersOnKubernetes(ctx);
  } else {
    const Evidence& topo = ctx.Get("slurm.topology");
    const Evidence& nodes_e = ctx.Get("slurm.nodes");
    int max_level = -1;
    if (topo.ok()) {
      for (const auto& u : topo.data.value("units", json::array())) {
        if (auto l = util::ParseInt(u.value("Level", ""))) max_level = std::max<int>(max_level, static_cast<int>(*l));
      }
    }
    if (max_level >= 0) {
      tiers.levels = max_level + 1;
      tiers.why = max_level == 0 ? "topology has one switch level"
                                 : fmt::format("topology has {} switch levels", max_level + 1);
    }
    if (nodes_e.ok()) {
      for (const auto& n : Nodes(nodes_e)) tiers.gpu_nodes += n.gpus > 0;
    }
  }
  long long threshold = SlurmThresholds().value("multi_tier_node_threshold", 64);
  size_t node_count = std::max(tiers.gpu_nodes, ports.size());
  bool multi_tier = tiers.levels >= 2;
  std::string why = tiers.why;
  if (tiers.levels < 0) {
    multi_tier = static_cast<long long>(node_count) > threshold;
    why = fmt::format("no switch levels in the topology; {} GPU node(s) {} {}", node_count,
                      multi_tier ? ">" : "<=", threshold);
  }
  std::vector<std::string> low, lines;
  std::map<std::string, std::vector<std::string>> by_value;
  for (const auto& node : rdma_nodes) {
    auto it = qps.find(node);
    std::string v = it == qps.end() ? "unknown" : it->second;
    by_value[v].push_back(node);
    auto n = util::ParseInt(v);
    if (!n || *n < 2) low.push_back(node);
  }
  for (const auto& [v, ns] : by_value)
    lines.push_back(fmt::format("NCCL_IB_QPS_PER_CONNECTION={}: {} node(s) ({})", v, ns.size(),
                                util::Ellipsize(fmt::format("{}", fmt::join(ns, ", ")), 200)));
  Finding f =
      !multi_tier ? core::Pass(fmt::format("single-tier fabric ({}): one QP per connection is enough", why))
      : low.empty()
          ? core::Pass(fmt::format("NCCL_IB_QPS_PER_CONNECTION >= 2 on all {} RDMA node(s) of a multi-tier fabric",
                                   rdma_nodes.size()))
          : core::Warn(Reason::kConfig,
                       fmt::format(
                           "multi-tier fabric ({}) and NCCL_IB_QPS_PER_CONNECTION unset or 1 on {} of {} RDMA node(s): "
                           "flows cannot spread over the spine (sweep 2-8 with nccl-tests)",
                           why, low.size(), rdma_nodes.size()));
  return f.Observed(why).Expected(">= 2 on a multi-tier Clos (set in /etc/nccl.conf)").Details(lines);
}

// mnnvl-compute-domain: GB200/GB300 NVL72 racks share one NVLink domain across nodes only through
// IMEX (nvidia-imex on every node), and Slurm must place jobs inside a rack (topology/block).
Finding MnnvlComputeDomain(const JudgeContext& ctx) {
  if (ctx.target() == core::Target::kK8s) return MnnvlComputeDomainOnKubernetes(ctx);
  const Evidence& fleet = ctx.Get("fleet.summary");
  if (auto p = NotAFleet(fleet)) return *p;
  auto gpus = FleetFact(fleet, "gpus");
  auto imex = FleetFact(fleet, "nvidia-imex");
  std::vector<std::string> rack_nodes;
  for (const auto& [node, v] : gpus) {
    if (util::Contains(v, "GB200") || util::Contains(v, "GB300")) rack_nodes.push_back(node);
  }
  if (rack_nodes.empty())
    return core::Skip(Reason::kNotApplicable,
                      fmt::format("no GB200/GB300 (NVL72) node among the {} node(s)", gpus.size()));
  std::vector<std::string> without, unknown;
  for (const auto& n : rack_nodes) {
    auto it = imex.find(n);
    if (it == imex.end())
      unknown.push_back(n);
    else if (it->second != "running")
      without.push_back(n);
  }
  const Evidence& config = ctx.Get("slurm.config");
  std::string plugin = config.ok() ? Cfg(config, "TopologyPlugin") : "";
  std::vector<std::string> problems;
  if (!without.empty())
    problems.push_back(fmt::format("nvidia-imex not running on {} of {} NVL72 node(s): {}", without.size(),
                                   rack_nodes.size(),
                                   util::Ellipsize(fmt::format("{}", fmt::join(without, ", ")), 200)));
  if (config.ok() && plugin != "topology/block")
    problems.push_back(fmt::format("TopologyPlugin is {}, not topology/block: jobs can span racks",
                                   plugin.empty() ? "unset" : plugin));
  std::vector<std::string> lines = {
      fmt::format("NVL72 nodes: {}", rack_nodes.size()),
      "TopologyPlugin = " +
          (config.ok() ? (plugin.empty() ? std::string("(unset)") : plugin) : std::string("(unread)"))};
  if (!unknown.empty()) lines.push_back(fmt::format("process list unread on {} node(s)", unknown.size()));
  Finding f =
      !problems.empty() ? core::Warn(Reason::kConfig, problems.front())
      : !unknown.empty() || !config.ok()
          ? core::Warn(Reason::kUnverified, "IMEX or the topology plugin could not be read on every NVL72 node")
          : core::Pass(fmt::format("nvidia-imex on all {} NVL72 node(s), topology/block placement", rack_nodes.size()));
  return f.Expected("nvidia-imex on every NVL72 node and TopologyPlugin=topology/block")
      .Details(problems)
      .Details(lines);
}

// monitoring-readiness: ten parts of a production monitoring stack, seen from the login node and
// every compute node: >= 8 production, 5-7 partial, < 5 minimal.
Finding MonitoringReadiness(const JudgeContext& ctx) {
  if (ctx.target() == core::Target::kK8s) return MonitoringReadinessOnKubernetes(ctx);
  const Evidence& fleet = ctx.Get("fleet.summary");
  if (auto p = NotAFleet(fleet)) return *p;
  auto agents = FleetFact(fleet, "monitoring agents");
  auto gpus = FleetFact(fleet, "gpus");
  if (agents.empty()) return core::Warn(Reason::kEvidenceError, "no node reported its processes or listening ports");
  std::set<std::string> login = MonitoringAgents(ctx.Get("os.processes"), ctx.Get("net.listeners"));
  if (!ExporterAttribution(ctx.Get("gpu-exporter.config"), true).empty()) login.insert("gpu job labels");
  auto has = [](const std::string& list, const char* agent) { return util::Contains(list, agent); };
  // Nodes with GPUs, and how many of them (or of all nodes) run an agent.
  std::vector<std::string> gpu_nodes;
  for (const auto& [node, v] : gpus) {
    if (!v.empty() && v != "0") gpu_nodes.push_back(node);
  }
  auto on_all = [&](const std::vector<std::string>& nodes, const char* agent, std::vector<std::string>& missing) {
    for (const auto& n : nodes) {
      auto it = agents.find(n);
      if (it == agents.end() || !has(it->second, agent)) missing.push_back(n);
    }
    return !nodes.empty() && missing.empty();
  };
  auto anywhere = [&](const char* agent) {
    if (login.count(agent)) return std::string("login node");
    for (const auto& [node, v] : agents) {
      if (has(v, agent)) return node;
    }
    return std::string();
  };
  std::vector<std::string> all_nodes;
  for (const auto& [node, v] : agents) all_nodes.push_back(node);
  std::vector<ReadinessPart> parts;
  auto names = [](const std::vector<std::string>& v) {
    return util::Ellipsize(fmt::format("{}", fmt::join(v, ", ")), 120);
  };
  {
    std::vector<std::string> missing;
    bool ok = on_all(gpu_nodes, "gpu exporter", missing);
    parts.push_back({"GPU exporter (dcgm-exporter, :9400) on every GPU node", ok,
                     gpu_nodes.empty() ? "no GPU node reported"
                     : ok              ? fmt::format("{} GPU node(s)", gpu_nodes.size())
                                       : "missing on " + names(missing)});
  }
  {
    std::vector<std::string> missing;
    bool ok = on_all(all_nodes, "node exporter", missing);
    parts.push_back({"node-exporter (:9100) on every node", ok,
                     ok ? fmt::format("{} node(s)", all_nodes.size()) : "missing on " + names(missing)});
  }
  for (const auto& [agent, title] : std::vector<std::pair<const char*, const char*>>{
           {"prometheus", "Prometheus (or VictoriaMetrics) server (:9090)"},
           {"grafana", "Grafana (:3000)"},
           {"slurm exporter", "Slurm exporter"},
           {"alertmanager", "Alertmanager (:9093)"}}) {
    std::string where = anywhere(agent);
    parts.push_back({title, !where.empty(), where.empty() ? "not seen on the login or compute nodes" : "on " + where});
  }
  const Evidence& rules = ctx.Get("prometheus.rules");
  int alerts = rules.ok() ? rules.data.value("alerts", 0) : 0;
  parts.push_back({"alerting rules", alerts > 0,
                   rules.ok() ? fmt::format("{} alert rule(s) in {} file(s) under /etc/prometheus", alerts,
                                            rules.data["files"].size())
                              : "rules unread: " + rules.error});
  {
    std::vector<std::string> missing;
    bool shippers = on_all(all_nodes, "log shipper", missing);
    std::string store = anywhere("log store");
    parts.push_back({"log aggregation (a shipper on every node, or Loki/Elasticsearch)", shippers || !store.empty(),
                     shippers         ? "log shipper on every node"
                     : !store.empty() ? "log store on " + store
                                      : "no shipper on " + names(missing)});
  }
  const Evidence& sacct = ctx.Get("slurm.sacct");
  bool sacct_ok = sacct.ok() && sacct.data.value("exit_code", 1) == 0;
  parts.push_back({"job accounting (sacct answers)", sacct_ok, sacct_ok ? "sacct answers" : "sacct does not answer"});
  {
    std::vector<std::string> missing;
    bool ok = on_all(gpu_nodes, "gpu job labels", missing);
    parts.push_back({"GPU metrics labelled with the Slurm job", ok,
                     ok                  ? "dcgm-exporter --hpc-job-mapping-dir on every GPU node"
                     : gpu_nodes.empty() ? "no GPU node"
                                         : "not on " + names(missing)});
  }
  return ReadinessScore(parts,
                        ">= 8 of 10; a stack on a separate monitoring host is not visible from the cluster's nodes");
}

}  // namespace

void RegisterSlurmChecks(core::Registry& r) {
  using core::CheckInfo;
  r.Add(
      {CheckInfo{
           .id = "nccl-ib-qps-entropy",
           .category = "networking",
           .title = "NCCL_IB_QPS_PER_CONNECTION >= 2 on a multi-tier fabric",
           .rationale =
               "With one queue pair per connection every flow of a ring hashes to one spine path; more QPs give ECMP and adaptive routing entropy.",
           .remediation =
               "Set NCCL_IB_QPS_PER_CONNECTION=2 (or 4) in /etc/nccl.conf on every node; sweep 2-8 with nccl-tests.",
           .criterion = "nccl-ib-qps-entropy",
           .targets = kS | kK,
           // k8s.* evidence is collected on the Kubernetes target only (audit/plan.cc).
           .needs = {"fleet.summary", "slurm.topology", "slurm.nodes", "k8s.nodes", "k8s.topology"},
           .cluster = true,
           .node_needs = {"nccl.config", "rdma.devices"},
           .reproduce = "scontrol show topology | grep -o 'Level=[0-9]*' | sort -u; grep QPS /etc/nccl.conf; "
                        "kubectl get topologies.kueue.x-k8s.io -o yaml"},
       NcclIbQps});
  r.Add(
      {CheckInfo{
           .id = "monitoring-readiness",
           .category = "health",
           .title = "A production monitoring stack (10 parts, >= 8 present)",
           .rationale =
               "Exporters without a server, dashboards, alerts, logs and per-job labels still leave failures unseen.",
           .remediation =
               "dcgm-exporter and node-exporter on every node, Prometheus with alert rules and Alertmanager, Grafana, a Slurm exporter, "
               "a log shipper, accounting, and --hpc-job-mapping-dir for per-job GPU series.",
           .criterion = "monitoring-stack",
           .targets = kS | kK,
           // k8s.* evidence is collected on the Kubernetes target only (audit/plan.cc).
           .needs = {"fleet.summary", "os.processes", "net.listeners", "gpu-exporter.config", "prometheus.rules",
                     "slurm.sacct", "k8s.workloads", "k8s.operators", "k8s.alert-rules"},
           .cluster = true,
           .node_needs = {"os.processes", "net.listeners", "gpu-exporter.config", "gpu.inventory"},
           .reproduce = "ss -ltn | grep -E ':(9400|9100|9090|3000|9093) '; grep -rc 'alert:' /etc/prometheus"},
       MonitoringReadiness});
  r.Add(
      {CheckInfo{
           .id = "mnnvl-compute-domain",
           .category = "networking",
           .title = "NVL72 racks usable as one NVLink domain (IMEX, block topology)",
           .rationale =
               "A GB200/GB300 NVL72 rack shares NVLink across its nodes only through IMEX, and jobs must stay inside a rack to use it.",
           .remediation =
               "Slurm: run nvidia-imex on every NVL72 node (one IMEX domain per rack) and set TopologyPlugin=topology/block with one "
               "block per rack. Kubernetes: install the NVIDIA DRA driver for GPUs (ComputeDomains) and GPU Feature Discovery.",
           .criterion = "topology-conf",
           .targets = kS | kK,
           .needs = {"fleet.summary", "slurm.config", "k8s.nodes", "k8s.topology", "k8s.operators"},
           .cluster = true,
           .node_needs = {"gpu.inventory", "os.processes"},
           .reproduce = "systemctl is-active nvidia-imex; scontrol show config | grep TopologyPlugin; "
                        "kubectl get computedomains -A; kubectl get nodes -L nvidia.com/gpu.clique"},
       MnnvlComputeDomain});
  r.Add(
      {CheckInfo{.id = "slurm-commands",
                 .category = "access",
                 .title = "Slurm client commands respond",
                 .rationale =
                     "Users submit, watch and account for work through these commands; a missing one breaks workflows.",
                 .remediation = "Install the Slurm client package on the login nodes and fix the controller address.",
                 .criterion = "slurm-commands",
                 .targets = kS,
                 .needs = {"slurm.commands"},
                 .cluster = true,
                 .reproduce = "sinfo --version; sacct --version"},
       SlurmCommands});
  r.Add({CheckInfo{.id = "slurm-controller-health",
                   .category = "orchestration",
                   .title = "slurmctld up (primary and backup)",
                   .rationale = "A down controller stops scheduling; a down backup removes failover.",
                   .remediation = "Restart slurmctld; check the StateSaveLocation and the backup host.",
                   .criterion = "slurm-commands",
                   .targets = kS,
                   .needs = {"slurm.ping"},
                   .cluster = true,
                   .reproduce = "scontrol ping"},
         ControllerHealth});
  r.Add({CheckInfo{.id = "slurm-node-states",
                   .category = "orchestration",
                   .title = "GPU nodes idle, allocated or mixed (none down or drained)",
                   .rationale = "Down and drained GPU nodes are capacity the tenant pays for and cannot use.",
                   .remediation = "Resume or repair the listed nodes (scontrol update NodeName=... State=RESUME).",
                   .targets = kS,
                   .needs = {"slurm.nodes"},
                   .cluster = true,
                   .reproduce = "sinfo -N -o '%N %T %E'"},
         NodeStates});
  r.Add(
      {CheckInfo{
           .id = "slurm-gres-gpu",
           .category = "orchestration",
           .title = "GPUs declared as typed GRES matching the hardware",
           .rationale = "GPUs not declared as GRES cannot be requested; a wrong count over- or under-allocates.",
           .remediation =
               "Declare Gres=gpu:<type>:N per node (gres.conf with AutoDetect=nvml or File=/dev/nvidia*), GresTypes=gpu.",
           .targets = kS,
           .needs = {"slurm.config", "slurm.nodes", "fleet.summary"},
           .cluster = true,
           .node_needs = {"gpu.inventory"},
           .reproduce = "scontrol show node -o | grep -o 'Gres=[^ ]*'"},
       GresGpu});
  r.Add({CheckInfo{.id = "healthcheck-program",
                   .category = "health",
                   .title = "Slurm HealthCheckProgram wired (NHC or DCGM)",
                   .rationale = "Without a periodic node health check, jobs land on broken GPUs.",
                   .remediation =
                       "Install LBNL NHC (or a DCGM-based check) and set HealthCheckProgram and HealthCheckInterval.",
                   .criterion = "healthcheck-program",
                   .targets = kS,
                   .needs = {"slurm.config", "nhc.install"},
                   .cluster = true,
                   .reproduce = "scontrol show config | grep -i HealthCheck"},
         HealthCheckProgram});
  r.Add(
      {CheckInfo{
           .id = "dcgm-healthchecks-slurm",
           .category = "health",
           .title = "DCGM wired into Slurm's node health checks",
           .rationale =
               "DCGM catches GPU faults (ECC, PCIe, NVLink) between jobs only when the health program or prolog runs it.",
           .remediation = "Call dcgmi diag -r 1 (or a DCGM NHC check) from HealthCheckProgram/NHC or the prolog.",
           .criterion = "dcgm-healthchecks",
           .targets = kS,
           .needs = {"slurm.config", "nhc.install", "fleet.summary"},
           .cluster = true,
           .node_needs = {"dcgm.version"},
           .reproduce = "scontrol show config | grep -Ei 'HealthCheck|Prolog|Epilog'; grep -i dcgm /etc/nhc/nhc.conf"},
       DcgmHealthSlurm});
  r.Add(
      {CheckInfo{
           .id = "auto-remediation",
           .category = "health",
           .title = "Failing nodes are drained and returned automatically",
           .rationale =
               "At scale nodes fail daily; a person in the loop for every drain and return costs hours of capacity.",
           .remediation =
               "HealthCheckProgram (NHC with MARK_OFFLINE) to drain; ReturnToService=2, RebootProgram or ResumeProgram to return.",
           .criterion = "auto-remediation",
           .targets = kS | kK,
           .needs = {"slurm.config", "nhc.install", "k8s.workloads"},
           .cluster = true,
           .reproduce = "scontrol show config | grep -Ei 'HealthCheck|ReturnToService|RebootProgram|ResumeProgram'"},
       AutoRemediation});
  r.Add(
      {CheckInfo{
           .id = "lmod",
           .category = "software",
           .title = "Lmod offers cuda, an MPI (HPC-X) and nccl modules in every shell",
           .rationale =
               "Users pick toolkit, MPI and NCCL versions through modules; batch scripts run non-login shells.",
           .remediation =
               "Install Lmod, source it for non-login shells (BASH_ENV or /etc/bash.bashrc) and publish cuda, hpcx and nccl modules.",
           .criterion = "lmod",
           .targets = kS,
           .needs = {"modules.avail"},
           .cluster = true,
           .reproduce = "bash -c 'module -t avail'; bash -lc 'module -t avail'"},
       Lmod});
  r.Add(
      {CheckInfo{
           .id = "ssh-between-nodes",
           .category = "access",
           .title = "ssh without a password: login node to compute nodes, and between compute nodes",
           .rationale = "MPI launchers, debuggers and users' tools ssh between the nodes of a job.",
           .remediation =
               "Host-based authentication or cluster-wide keys for users between compute nodes (pam_slurm_adopt to keep it to their jobs).",
           .criterion = "ssh-between-nodes",
           .targets = kS,
           .needs = {"ssh.login", "fleet.summary"},
           .cluster = true,
           .node_needs = {"ssh.peer"},
           .reproduce = "srun -N2 bash -c 'ssh -o BatchMode=yes <other node> hostname'"},
       SshBetweenNodes});
  r.Add({CheckInfo{
             .id = "prolog-fast",
             .category = "orchestration",
             .title = "A GPU job step (or pod) starts quickly (prolog included)",
             .rationale = "A slow prolog (health checks, image pulls, cleanup) taxes every job and every restart.",
             .remediation =
                 "Move heavy work out of Prolog (HealthCheckProgram, async cleanup); keep Prolog under a few seconds.",
             .criterion = "prolog-fast",
             .targets = kS | kK,
             .needs = {"slurm.config", "probe.slurm-job", "probe.k8s-gpu-pod"},
             .probe = "slurm-job",
             .k8s_probe = "k8s-gpu-pod",
             .cluster = true,
             .reproduce = "time srun -N1 --gres=gpu:1 --time=1 true (Kubernetes: clustermax audit --k8s --probe "
                          "k8s-gpu-pod --check prolog-fast)"},
         PrologFast});
  r.Add({CheckInfo{
             .id = "topology-conf",
             .category = "networking",
             .title = "Topology-aware scheduling covers every GPU node",
             .rationale = "Without topology, multi-node jobs straddle switches and collectives slow down.",
             .remediation =
                 "Slurm: TopologyPlugin=topology/tree (or block for NVL72) with topology.conf covering the GPU "
                 "nodes. Kubernetes: a Kueue Topology named by the GPU ResourceFlavor, or Volcano HyperNodes, "
                 "over labels every GPU node carries (nvidia.com/gpu.clique as a level on NVL72).",
             .criterion = "topology-conf",
             .targets = kS | kK,
             .needs = {"slurm.config", "slurm.topology", "slurm.nodes", "fleet.summary", "k8s.nodes", "k8s.topology"},
             .cluster = true,
             .node_needs = {"gpu.inventory"},
             .reproduce = "scontrol show config | grep TopologyPlugin; scontrol show topology; "
                          "kubectl get topologies.kueue.x-k8s.io,resourceflavors.kueue.x-k8s.io,hypernodes -o yaml"},
         TopologyConf});
  r.Add({CheckInfo{.id = "pyxis",
                   .category = "orchestration",
                   .title = "Pyxis container plugin loaded in srun",
                   .rationale = "Pyxis lets users run containers in Slurm jobs with srun --container-image.",
                   .remediation = "Install nvslurm-plugin-pyxis and load spank_pyxis.so in plugstack.conf.",
                   .criterion = "pyxis",
                   .targets = kS,
                   .needs = {"slurm.srun-help"},
                   .cluster = true,
                   .reproduce = "srun --help | grep container-image"},
         Pyxis});
  r.Add({CheckInfo{.id = "mpi-srun-pmix",
                   .category = "software",
                   .title = "srun offers PMIx for MPI launch",
                   .rationale = "MPI jobs launched by srun need PMIx with current MPI libraries.",
                   .remediation = "Build Slurm with PMIx (mpi/pmix) and install libpmix.",
                   .criterion = "mpi-srun-pmix",
                   .targets = kS,
                   .needs = {"slurm.mpi"},
                   .cluster = true,
                   .reproduce = "srun --mpi=list"},
         MpiPmix});
  r.Add({CheckInfo{.id = "sacct-accounting",
                   .category = "orchestration",
                   .title = "Job accounting (slurmdbd) configured and sacct answers",
                   .rationale = "Without accounting, usage, fair share and post-mortems of jobs are impossible.",
                   .remediation = "Run slurmdbd and set AccountingStorageType=accounting_storage/slurmdbd.",
                   .criterion = "sacct-accounting",
                   .targets = kS,
                   .needs = {"slurm.config", "slurm.sacct"},
                   .cluster = true,
                   .reproduce = "sacct -X -n -S now-1hours"},
         SacctAccounting});
  r.Add(
      {CheckInfo{
           .id = "slurm-cgroup-enforcement",
           .category = "orchestration",
           .title = "cgroups confine jobs to their CPUs, memory and GPUs",
           .rationale =
               "Without ConstrainDevices a job on a shared node can use every GPU; without RAM limits one job can OOM the node.",
           .remediation =
               "TaskPlugin=task/cgroup,task/affinity, ProctrackType=proctrack/cgroup, ConstrainDevices/RAMSpace/Cores=yes in cgroup.conf.",
           .criterion = "resource-limits",
           .targets = kS,
           .needs = {"slurm.config", "slurm.cgroup-conf"},
           .cluster = true,
           .reproduce = "scontrol show config | grep -E 'TaskPlugin|ProctrackType'; cat cgroup.conf"},
       CgroupEnforcement});
  r.Add({CheckInfo{.id = "resource-limits",
                   .category = "orchestration",
                   .title = "Sensible per-GPU memory and CPU defaults",
                   .rationale = "Low default memory per GPU or CPU makes jobs OOM unless every user overrides it.",
                   .remediation = "Set DefMemPerGPU (>= 16 GB) and DefCpuPerGPU on the GPU partitions.",
                   .criterion = "resource-limits",
                   .targets = kS,
                   .needs = {"slurm.config", "slurm.partitions"},
                   .cluster = true,
                   .reproduce = "scontrol show config | grep -E 'DefMem|MaxMem'; scontrol show partition -o"},
         ResourceLimits});
  r.Add(
      {CheckInfo{.id = "cuda-visible-devices",
                 .category = "software",
                 .title = "The scheduler sets CUDA_VISIBLE_DEVICES in a GPU step",
                 .rationale = "Frameworks pick GPUs by CUDA_VISIBLE_DEVICES; unset, every job grabs GPU 0 or all GPUs.",
                 .remediation = "Declare GPUs as GRES with File= device paths so Slurm binds them.",
                 .targets = kS | kK,
                 .needs = {"slurm.step-env", "gpu.inventory"},
                 .reproduce = "srun --gres=gpu:8 env | grep CUDA_VISIBLE_DEVICES"},
       CudaVisibleDevices});
  r.Add({CheckInfo{.id = "worker-evidence-coverage",
                   .category = "orchestration",
                   .title = "Every node in scope returned evidence",
                   .rationale = "A node that did not answer is a node whose problems are unknown.",
                   .remediation = "Resume or repair the listed nodes, or lengthen --node-timeout.",
                   .targets = kS | kK,
                   .needs = {"fleet.summary"},
                   .cluster = true,
                   .reproduce = "clustermax audit --slurm -vv"},
         WorkerCoverage});
  r.Add(
      {CheckInfo{
           .id = "head-worker-consistency",
           .category = "software",
           .title = "The login node builds with what the workers run",
           .rationale =
               "Users compile on the login node and run on workers: different CUDA, NCCL or MPI versions break binaries.",
           .remediation = "Install the same toolkit versions on the login node as on the GPU nodes.",
           .targets = kS,
           .needs = {"fleet.summary", "cuda.toolkits", "nccl.libraries", "container-toolkit.version", "enroot.version",
                     "mpi.hpcx"},
           .cluster = true,
           .node_needs = {"cuda.toolkits", "nccl.libraries", "container-toolkit.version", "enroot.version", "mpi.hpcx"},
           .reproduce = "nvcc --version; enroot version (login node and a worker)"},
       HeadWorkerConsistency});
  r.Add(
      {CheckInfo{
           .id = "fleet-version-drift",
           .category = "software",
           .title = "One version of each component across the nodes",
           .rationale =
               "One node on another driver, kernel or firmware is the node that fails jobs in a way the others do not.",
           .remediation = "Bring the odd nodes to the majority version (or the fleet to the newest).",
           .targets = kS | kK,
           .needs = {"fleet.summary"},
           .cluster = true,
           // every fact the fleet summary compares
           .node_needs = {"os.kernel", "os.release", "gpu.inventory", "cuda.toolkits", "nccl.libraries", "nccl.config",
                          "rdma.devices", "os.processes", "container-toolkit.version", "runc.version", "dcgm.version",
                          "enroot.version", "mpi.hpcx"},
           .reproduce = "clustermax audit --slurm --json | jq .fleet.drift"},
       FleetDrift});
}

}  // namespace clustermax::checks
