// Collectors of the Slurm scheduler's view (run on the login node of a fleet audit) and of the
// GPU step a node collector runs in. Slurm 22.05 has no `scontrol --json`: text output is parsed by
// collect/slurm_parse.*.
#include <algorithm>

#include <fmt/format.h>

#include "collect/collector.h"
#include "util/slurm_text.h"
#include "util/strings.h"

namespace clustermax::collect {
namespace {

using core::Evidence;
using core::EvidenceStatus;
using nlohmann::json;

// A command whose success is itself the fact (exit code and output kept).
Evidence CommandFacts(host::Host& h, const CollectOptions& o, const std::string& id, std::vector<std::string> argv,
                      const std::function<void(const host::CommandResult&, Evidence&)>& parse) {
  Evidence e;
  auto r = RunFor(e, h, std::move(argv), o, id);
  if (!r) return e;
  e.status = EvidenceStatus::kOk;
  e.data = {{"exit_code", r->exit_code}, {"stderr", util::Ellipsize(util::Trim(r->err), 300)}};
  if (parse) parse(*r, e);
  return e;
}

Evidence Commands(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  json cmds = json::array();
  const std::vector<std::vector<std::string>> probes = {
      {"sinfo", "--version"},  {"squeue", "--version"}, {"scontrol", "--version"}, {"salloc", "--version"},
      {"sbatch", "--version"}, {"srun", "--version"},   {"sacct", "--version"}};
  for (const auto& argv : probes) {
    auto spec = Command(argv, o, "slurm.commands");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    json c = {{"command", util::JoinArgv(argv)}, {"name", argv[0]}};
    if (r.status != host::IoStatus::kOk) {
      c["ok"] = false;
      c["error"] = fmt::format("{}: {}", ToString(FromIo(r.status)), r.error);
    } else {
      c["ok"] = r.exit_code == 0;
      c["output"] = util::Ellipsize(util::Trim(r.out + r.err), 200);
      if (r.exit_code != 0)
        c["error"] = fmt::format("exit {}: {}", r.exit_code, util::Ellipsize(util::Trim(r.err), 200));
    }
    cmds.push_back(c);
  }
  e.data = {{"commands", cmds}};
  return e;
}

Evidence Config(host::Host& h, const CollectOptions& o) {
  return CommandFacts(h, o, "slurm.config", {"scontrol", "show", "config"},
                      [](const host::CommandResult& r, Evidence& e) {
                        auto m = util::ParseScontrolConfig(r.out);
                        if (r.exit_code != 0 || m.empty()) {
                          e.status = EvidenceStatus::kError;
                          e.error = fmt::format("scontrol show config exit {}: {}", r.exit_code,
                                                util::Ellipsize(util::Trim(r.err + r.out), 300));
                          return;
                        }
                        e.data["config"] = m;
                      });
}

Evidence Records(host::Host& h, const CollectOptions& o, const std::string& id, std::vector<std::string> argv) {
  return CommandFacts(h, o, id, argv, [id](const host::CommandResult& r, Evidence& e) {
    if (r.exit_code != 0) {
      e.status = EvidenceStatus::kError;
      e.error = fmt::format("{} exit {}: {}", id, r.exit_code, util::Ellipsize(util::Trim(r.err + r.out), 300));
      return;
    }
    json recs = json::array();
    for (const auto& rec : util::ParseScontrolRecords(r.out)) recs.push_back(rec);
    e.data["records"] = recs;
  });
}

Evidence Nodes(host::Host& h, const CollectOptions& o) {
  return Records(h, o, "slurm.nodes", {"scontrol", "show", "node", "-o"});
}
Evidence Partitions(host::Host& h, const CollectOptions& o) {
  return Records(h, o, "slurm.partitions", {"scontrol", "show", "partition", "-o"});
}

Evidence Topology(host::Host& h, const CollectOptions& o) {
  return CommandFacts(h, o, "slurm.topology", {"scontrol", "show", "topology"},
                      [](const host::CommandResult& r, Evidence& e) {
                        json units = json::array();
                        for (const auto& rec : util::ParseScontrolRecords(r.out)) {
                          if (rec.count("SwitchName") || rec.count("BlockName")) units.push_back(rec);
                        }
                        e.data["units"] = units;
                        e.data["raw"] = util::Ellipsize(util::Trim(r.out + r.err), 400);
                      });
}

Evidence Ping(host::Host& h, const CollectOptions& o) {
  return CommandFacts(h, o, "slurm.ping", {"scontrol", "ping"}, [](const host::CommandResult& r, Evidence& e) {
    json cs = json::array();
    for (const auto& c : util::ParseScontrolPing(r.out + r.err))
      cs.push_back({{"role", c.role}, {"host", c.host}, {"up", c.up}});
    e.data["controllers"] = cs;
    e.data["raw"] = util::Ellipsize(util::Trim(r.out + r.err), 300);
  });
}

Evidence SrunHelp(host::Host& h, const CollectOptions& o) {
  return CommandFacts(h, o, "slurm.srun-help", {"srun", "--help"}, [](const host::CommandResult& r, Evidence& e) {
    e.data["container_image"] = util::Contains(r.out + r.err, "--container-image");
  });
}

Evidence MpiList(host::Host& h, const CollectOptions& o) {
  return CommandFacts(h, o, "slurm.mpi", {"srun", "--mpi=list"}, [](const host::CommandResult& r, Evidence& e) {
    e.data["plugins"] = util::ParseMpiList(r.out + r.err);
    e.data["raw"] = util::Ellipsize(util::Trim(r.out + r.err), 300);
  });
}

Evidence Sacct(host::Host& h, const CollectOptions& o) {
  return CommandFacts(h, o, "slurm.sacct", {"sacct", "-X", "-n", "-S", "now-1hours", "-o", "JobID"}, nullptr);
}

// The cgroup.conf next to the slurm.conf the controller reports (SLURM_CONF in `show config`).
Evidence CgroupConf(host::Host& h, const CollectOptions& o) {
  Evidence e;
  auto r = RunFor(e, h, {"scontrol", "show", "config"}, o, "slurm.cgroup-conf");
  if (!r) return e;
  auto cfg = util::ParseScontrolConfig(r->out);
  std::string conf = cfg.count("SLURM_CONF") ? cfg["SLURM_CONF"] : "/etc/slurm/slurm.conf";
  std::string path = conf.substr(0, conf.rfind('/') + 1) + "cgroup.conf";
  e.sources.push_back("file:" + path);
  auto f = h.ReadFile(path, 1u << 20);
  e.status = EvidenceStatus::kOk;
  e.data = {{"path", path}};
  if (f.status == host::IoStatus::kNotFound) {
    e.data["present"] = false;
    return e;
  }
  if (MarkFailed(e, f.status, f.error)) return e;
  json keys = json::object();
  for (const auto& line : util::SplitLines(f.content)) {
    std::string t(util::Trim(line.substr(0, line.find('#'))));
    size_t eq = t.find('=');
    if (eq == std::string::npos) continue;
    keys[std::string(util::Trim(t.substr(0, eq)))] = std::string(util::Trim(t.substr(eq + 1)));
  }
  e.data["present"] = true;
  e.data["keys"] = keys;
  return e;
}

Evidence Nhc(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  json bins = json::array();
  for (const char* p : {"/usr/sbin/nhc", "/usr/bin/nhc", "/usr/local/sbin/nhc"}) {
    e.sources.push_back(std::string("stat:") + p);
    if (h.Stat(p).status == host::IoStatus::kOk) bins.push_back(p);
  }
  e.sources.push_back("file:/etc/nhc/nhc.conf");
  auto f = h.ReadFile("/etc/nhc/nhc.conf", 1u << 20);
  int active = 0;
  json dcgm_lines = json::array();
  json mark_offline = nullptr;  // NHC's default (unset) marks failing nodes offline
  if (f.status == host::IoStatus::kOk) {
    for (const auto& line : util::SplitLines(f.content)) {
      std::string t(util::Trim(line));
      if (t.empty() || t[0] == '#') continue;
      ++active;
      if (util::ContainsIgnoreCase(t, "dcgm") || util::Contains(t, "nv-hostengine"))
        dcgm_lines.push_back(util::Ellipsize(t, 160));
      size_t at = t.find("MARK_OFFLINE=");
      if (at != std::string::npos) mark_offline = t.compare(at + 13, 1, "0") != 0;
    }
  }
  e.data = {{"binaries", bins},
            {"conf_present", f.status == host::IoStatus::kOk},
            {"active_lines", active},
            {"dcgm_lines", dcgm_lines},
            {"mark_offline", mark_offline}};
  return e;
}

// Lmod (or Environment Modules): `module -t avail` in a non-login and in a login shell; the module
// names, one per line on stderr ("/path:" headers skipped).
Evidence Modules(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  json shells = json::object();
  const std::string script =
      "type module >/dev/null 2>&1 || { echo CLUSTERMAX-NO-MODULE-COMMAND; exit 0; }; module -t avail 2>&1";
  for (const auto& [name, flag] :
       std::vector<std::pair<std::string, std::string>>{{"non-login", "-c"}, {"login", "-lc"}}) {
    auto spec = Command({"bash", flag, script}, o, "modules.avail");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    json sh = {{"ran", r.status == host::IoStatus::kOk}};
    if (r.status != host::IoStatus::kOk) {
      sh["error"] = r.error;
    } else {
      std::string text = r.out + r.err;
      bool missing = util::Contains(text, "CLUSTERMAX-NO-MODULE-COMMAND");
      json mods = json::array();
      if (!missing) {
        for (const auto& line : util::SplitLines(text)) {
          std::string t(util::Trim(line));
          if (t.empty() || t.back() == ':' || t.find(' ') != std::string::npos) continue;
          mods.push_back(t);
        }
      }
      sh["module_command"] = !missing;
      sh["modules"] = mods;
    }
    shells[name] = sh;
  }
  e.data = {{"shells", shells},
            {"lmod_cmd", h.GetEnv("LMOD_CMD").value_or("")},
            {"modulepath", h.GetEnv("MODULEPATH").value_or("")}};
  e.sources.push_back("env:LMOD_CMD");
  e.sources.push_back("env:MODULEPATH");
  return e;
}

// `ssh <node> hostname`, keys only (BatchMode, 5 s to connect), into e.data: ran, exit_code, output.
// A refused or unreachable node is the finding, not missing evidence: e stays ok.
void SshTo(Evidence& e, host::Host& h, const CollectOptions& o, const std::string& node, const std::string& id) {
  auto r = RunFor(e, h,
                  {"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "StrictHostKeyChecking=accept-new",
                   node, "hostname"},
                  o, id);
  e.status = EvidenceStatus::kOk;
  e.data["ran"] = r.has_value();
  e.data["exit_code"] = r ? r->exit_code : -1;
  e.data["output"] = r ? util::Ellipsize(util::Trim(r->out + r->err), 300) : e.error;
  e.error.clear();
}

// ssh from this node to the next node of the job step (node i to node i+1, the last to the first),
// key-based only: BatchMode, a 5 s connect timeout. Outside a multi-node step there is no peer.
Evidence SshPeer(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.sources = {"env:SLURM_JOB_NODELIST", "env:SLURMD_NODENAME"};
  auto list = h.GetEnv("SLURM_JOB_NODELIST");
  auto self = h.GetEnv("SLURMD_NODENAME");
  auto nodes = list ? util::ExpandHostlist(*list) : std::nullopt;
  if (!nodes || !self || nodes->size() < 2) {
    e.data = {{"peer", nullptr}, {"reason", "not in a multi-node Slurm step"}};
    return e;
  }
  auto it = std::find(nodes->begin(), nodes->end(), *self);
  if (it == nodes->end()) {
    e.data = {{"peer", nullptr}, {"reason", "this node (" + *self + ") is not in SLURM_JOB_NODELIST"}};
    return e;
  }
  std::string peer = (it + 1 == nodes->end()) ? nodes->front() : *(it + 1);
  e.data = {{"from", *self}, {"peer", peer}};
  SshTo(e, h, o, peer, "ssh.peer");
  return e;
}

// ssh from the login node to a compute node (the first responsive one sinfo lists), keys only.
Evidence SshLogin(host::Host& h, const CollectOptions& o) {
  Evidence e;
  auto list = RunFor(e, h, {"sinfo", "-h", "-N", "-o", "%N", "-t", "idle,mixed,allocated"}, o, "ssh.login");
  if (!list) return e;
  e.status = EvidenceStatus::kOk;
  auto names = util::SplitWhitespace(list->out);
  if (list->exit_code != 0 || names.empty()) {
    e.data = {{"target", nullptr},
              {"reason", list->exit_code != 0 ? "sinfo failed: " + util::Ellipsize(util::Trim(list->err), 200)
                                              : "no idle, mixed or allocated node"}};
    return e;
  }
  e.data = {{"target", names.front()}};
  SshTo(e, h, o, names.front(), "ssh.login");
  return e;
}

// Probe slurm-job: a GPU step and a CPU-only baseline step, each `true`, timed end to end (queue,
// allocation, prolog, launch, epilog). A step that does not run within its timeout is reported.
Evidence SlurmJob(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  json steps = json::object();
  for (const auto& [name, extra] :
       std::vector<std::pair<std::string, std::vector<std::string>>>{{"cpu", {}}, {"gpu", {"--gres=gpu:1"}}}) {
    std::vector<std::string> argv = {"srun", "-N1", "-n1", "--time=1", "--job-name=clustermax-probe"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back("true");
    auto spec = Command(argv, o, "probe.slurm-job");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    steps[name] = {
        {"command", util::JoinArgv(argv)},
        {"ran", r.status == host::IoStatus::kOk},
        {"timed_out", r.timed_out},
        {"exit_code", r.status == host::IoStatus::kOk ? r.exit_code : -1},
        {"seconds", r.duration_ms / 1000.0},
        {"output", util::Ellipsize(util::Trim(r.out + r.err + (r.status == host::IoStatus::kOk ? "" : r.error)), 300)}};
  }
  e.data = {{"steps", steps}};
  return e;
}

// The environment of the step the node collector runs in (fleet audits request the node's GPUs).
Evidence StepEnv(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  for (const char* k :
       {"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURMD_NODENAME", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "SLURM_GPUS_ON_NODE",
        "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CLUSTERMAX_STEP_GPUS"}) {
    e.sources.push_back(std::string("env:") + k);
    auto v = h.GetEnv(k);
    e.data[k] = v ? json(*v) : json(nullptr);
  }
  return e;
}

// Derived by the engine from every node's evidence (audit/fleet_summary.*); a single-node audit
// has no fleet.
Evidence FleetSummaryPlaceholder(host::Host&, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kNotCollected;
  e.error = "single-node audit: no fleet to compare";
  return e;
}

}  // namespace

void RegisterSlurmCollectors(std::vector<Collector>& out) {
  out.push_back({{"slurm.commands",
                  "Slurm client commands answer --version",
                  {"cmd:sinfo|squeue|scontrol|salloc|sbatch|srun|sacct --version"},
                  ""},
                 Commands});
  out.push_back({{"slurm.config", "scontrol show config", {"cmd:scontrol show config"}, ""}, Config});
  out.push_back({{"slurm.nodes", "scontrol show node -o", {"cmd:scontrol show node -o"}, ""}, Nodes});
  out.push_back(
      {{"slurm.partitions", "scontrol show partition -o", {"cmd:scontrol show partition -o"}, ""}, Partitions});
  out.push_back({{"slurm.topology", "scontrol show topology", {"cmd:scontrol show topology"}, ""}, Topology});
  out.push_back({{"slurm.ping", "scontrol ping", {"cmd:scontrol ping"}, ""}, Ping});
  out.push_back({{"slurm.srun-help", "srun --help (pyxis adds --container-image)", {"cmd:srun --help"}, ""}, SrunHelp});
  out.push_back({{"slurm.mpi", "srun --mpi=list", {"cmd:srun --mpi=list"}, ""}, MpiList});
  out.push_back(
      {{"slurm.sacct", "sacct -X -n -S now-1hours -o JobID", {"cmd:sacct -X -n -S now-1hours -o JobID"}, ""}, Sacct});
  out.push_back({{"slurm.cgroup-conf",
                  "cgroup.conf beside the controller's slurm.conf",
                  {"cmd:scontrol show config", "file:<dir of SLURM_CONF>/cgroup.conf"},
                  ""},
                 CgroupConf});
  out.push_back({{"modules.avail",
                  "Lmod/Environment Modules: module -t avail in a non-login and a login bash",
                  {"cmd:bash -c 'module -t avail'", "cmd:bash -lc 'module -t avail'", "env:LMOD_CMD", "env:MODULEPATH"},
                  ""},
                 Modules});
  out.push_back(
      {{"nhc.install", "LBNL NHC binary and /etc/nhc/nhc.conf", {"stat:/usr/sbin/nhc", "file:/etc/nhc/nhc.conf"}, ""},
       Nhc});
  out.push_back({{"ssh.login",
                  "ssh (keys only, 5 s) from the login node to the first idle, mixed or allocated compute node",
                  {"cmd:sinfo -h -N -o %N -t idle,mixed,allocated",
                   "cmd:ssh -o BatchMode=yes -o ConnectTimeout=5 <node> hostname"},
                  ""},
                 SshLogin});
  out.push_back({{"ssh.peer",
                  "ssh (keys only, 5 s) from this node to the next node of the job step",
                  {"env:SLURM_JOB_NODELIST", "env:SLURMD_NODENAME",
                   "cmd:ssh -o BatchMode=yes -o ConnectTimeout=5 <next node> hostname"},
                  ""},
                 SshPeer});
  out.push_back({{"probe.slurm-job",
                  "srun -N1 --time=1 true with and without --gres=gpu:1, timed",
                  {"cmd:srun -N1 -n1 --time=1 --job-name=clustermax-probe [--gres=gpu:1] true"},
                  "slurm-job"},
                 SlurmJob});
  out.push_back({{"slurm.step-env",
                  "Environment of the Slurm step the node collector runs in",
                  {"env:CUDA_VISIBLE_DEVICES, SLURM_*"},
                  ""},
                 StepEnv});
  out.push_back({{"fleet.summary",
                  "Derived from every node's evidence: coverage, per-node facts, drift",
                  {"(computed by the engine)"},
                  ""},
                 FleetSummaryPlaceholder});

  using namespace field;
  // CommandFacts' shape, with what a collector adds.
  auto command = [](std::vector<core::FieldSpec> extra) {
    std::vector<core::FieldSpec> f = {{"exit_code", Int, "", "the command's exit status"},
                                      {"stderr", Str, "", "its standard error, cut at 300 characters"}};
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  };
  DeclareFields(out, "slurm.commands",
                {{"commands[].command", Str, "", "\"sinfo --version\" ..."},
                 {"commands[].name", Str, "", "the client command"},
                 {"commands[].ok", Bool, "", "it ran and exited 0"},
                 {"commands[].output", Str, "", "its output, cut"},
                 {"commands[].error", Str, "", "why it failed"}});
  DeclareFields(out, "slurm.config", command({{"config{}", Str, "", "scontrol show config: parameter -> value"}}));
  DeclareFields(out, "slurm.nodes",
                command({{"records[]{}", Str, "", "one node of scontrol show node -o: key -> value"}}));
  DeclareFields(out, "slurm.partitions",
                command({{"records[]{}", Str, "", "one partition of scontrol show partition -o: key -> value"}}));
  DeclareFields(out, "slurm.topology",
                command({{"units[]{}", Str, "", "a SwitchName or BlockName record: key -> value"},
                         {"raw", Str, "", "the command's output, cut at 400 characters"}}));
  DeclareFields(out, "slurm.ping",
                command({{"controllers[].role", Str, "", "primary, backup ..."},
                         {"controllers[].host", Str, "", "controller host"},
                         {"controllers[].up", Bool, "", "it answered"},
                         {"raw", Str, "", "the command's output, cut"}}));
  DeclareFields(out, "slurm.srun-help",
                command({{"container_image", Bool, "", "srun --help lists --container-image (pyxis)"}}));
  DeclareFields(out, "slurm.mpi",
                command({{"plugins[]", Str, "", "MPI plugins srun --mpi=list names"},
                         {"raw", Str, "", "the command's output, cut"}}));
  DeclareFields(out, "slurm.sacct", command({}));
  DeclareFields(out, "slurm.cgroup-conf",
                {{"path", Str, "", "cgroup.conf beside SLURM_CONF"},
                 {"present", Bool, "", "the file exists"},
                 {"keys{}", Str, "", "key -> value of its settings"}});
  DeclareFields(out, "modules.avail",
                {{"shells{}.ran", Bool, "", "non-login / login bash ran"},
                 {"shells{}.error", Str, "", "why it did not"},
                 {"shells{}.module_command", Bool, "", "a module command exists in that shell"},
                 {"shells{}.modules[]", Str, "", "module -t avail names"},
                 {"lmod_cmd", Str, "", "$LMOD_CMD, empty when unset"},
                 {"modulepath", Str, "", "$MODULEPATH, empty when unset"}});
  DeclareFields(out, "nhc.install",
                {{"binaries[]", Str, "", "nhc binaries found"},
                 {"conf_present", Bool, "", "/etc/nhc/nhc.conf was read"},
                 {"active_lines", Int, "lines", "non-comment lines of nhc.conf"},
                 {"dcgm_lines[]", Str, "", "its lines naming DCGM or nv-hostengine"},
                 {"mark_offline", Bool, "", "MARK_OFFLINE set and not 0; null when unset (NHC's default: on)", kNull}});
  const std::vector<core::FieldSpec> ssh = {{"ran", Bool, "", "ssh ran"},
                                            {"exit_code", Int, "", "its exit status (-1: did not run)"},
                                            {"output", Str, "", "its output or error, cut"},
                                            {"reason", Str, "", "why no node was tried"}};
  auto with = [](std::vector<core::FieldSpec> a, const std::vector<core::FieldSpec>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  DeclareFields(out, "ssh.login", with({{"target", Str, "", "compute node tried; null when none", kNull}}, ssh));
  DeclareFields(out, "ssh.peer",
                with({{"from", Str, "", "this node (SLURMD_NODENAME)"},
                      {"peer", Str, "", "the next node of the step; null outside a multi-node step", kNull}},
                     ssh));
  DeclareFields(out, "probe.slurm-job",
                {{"steps{}.command", Str, "", "cpu / gpu step: srun command"},
                 {"steps{}.ran", Bool, "", "srun ran"},
                 {"steps{}.timed_out", Bool, "", "it hit its timeout"},
                 {"steps{}.exit_code", Int, "", "its exit status (-1: did not run)"},
                 {"steps{}.seconds", Num, "s", "end-to-end time"},
                 {"steps{}.output", Str, "", "its output, cut"}});
  std::vector<core::FieldSpec> env;
  for (const char* k :
       {"SLURM_JOB_ID", "SLURM_STEP_ID", "SLURMD_NODENAME", "SLURM_STEP_GPUS", "SLURM_JOB_GPUS", "SLURM_GPUS_ON_NODE",
        "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "CLUSTERMAX_STEP_GPUS"}) {
    env.push_back({k, Str, "", std::string("$") + k + " of the step; null when unset", kNull});
  }
  DeclareFields(out, "slurm.step-env", env);
  // Derived by the engine (audit/fleet_summary.cc), never by this collector.
  DeclareFields(out, "fleet.summary",
                {{"login", Obj, "", "the login node's facts; null without a login node", kNull},
                 {"login{}", Str, "", "fact -> value; null when unknown", kNull},
                 {"nodes_expected", Int, "nodes", "nodes the fan-out asked"},
                 {"nodes_returned", Int, "nodes", "nodes that answered"},
                 {"unreachable[].node", Str, "", "node that did not answer"},
                 {"unreachable[].reason", Str, "", "why"},
                 {"partial[].node", Str, "", "node with partial evidence"},
                 {"partial[].reason", Str, "", "why"},
                 {"nodes[].node", Str, "", "node name"},
                 {"nodes[].facts{}", Str, "", "compared fact of that node -> value; null when unknown", kNull},
                 {"facts_compared[]", Str, "", "names of the facts compared"},
                 {"drift[].fact", Str, "", "fact compared across nodes"},
                 {"drift[].majority", Str, "", "the most common value"},
                 {"drift[].majority_count", Int, "nodes", "nodes with it"},
                 {"drift[].groups[].value", Str, "", "a value"},
                 {"drift[].groups[].count", Int, "nodes", "nodes with it"},
                 {"drift[].groups[].nodes[]", Str, "", "those nodes"},
                 {"drift[].odd[].node", Str, "", "a node off the majority"},
                 {"drift[].odd[].value", Str, "", "its value"},
                 {"drift[].unknown[]", Str, "", "nodes where the fact is unknown"}});
}

}  // namespace clustermax::collect
