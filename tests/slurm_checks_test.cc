// Slurm parsing and the scheduler checks on output recorded from the real CI cluster
// (tests/fixtures/slurm/, Slurm 22.05.8), replayed through the collectors; the fleet summary,
// the roll-up over unreachable nodes, and the bundle line protocol of the fan-out.
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "audit/fleet_summary.h"
#include "audit/slurm_fanout.h"
#include "checks/register.h"
#include "collect/collector.h"
#include "collect/parsers.h"
#include "testutil.h"
#include "util/slurm_text.h"
#include "util/strings.h"
#include "util/time.h"

using namespace clustermax;
using clustermax::testing::Out;
using clustermax::testing::ReadFixture;
using nlohmann::json;

namespace {

// A bundle answering the scheduler commands with recorded output.
host::Bundle Scheduler(const std::string& nodes_fixture = "slurm/scontrol-show-node-o.txt") {
  host::Bundle b;
  b.PutCommand({"scontrol", "show", "config"}, Out(ReadFixture("slurm/scontrol-show-config.txt")));
  b.PutCommand({"scontrol", "show", "node", "-o"}, Out(ReadFixture(nodes_fixture)));
  b.PutCommand({"scontrol", "show", "partition", "-o"}, Out(ReadFixture("slurm/scontrol-show-partition-o.txt")));
  b.PutCommand({"scontrol", "show", "topology"}, Out(ReadFixture("slurm/scontrol-show-topology.txt")));
  b.PutCommand({"scontrol", "ping"}, Out(ReadFixture("slurm/scontrol-ping.txt")));
  b.PutCommand({"srun", "--mpi=list"}, Out(ReadFixture("slurm/srun-mpi-list.txt")));
  b.PutCommand(
      {"srun", "--help"},
      Out("Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]]\n      --mpi=type  type of MPI being used\n"));
  b.PutCommand({"sacct", "-X", "-n", "-S", "now-1hours", "-o", "JobID"},
               Out("", 1, ReadFixture("slurm/sacct-disabled.txt")));
  return b;
}

core::Finding Judge(const std::string& check, const host::Bundle& b) {
  const core::Check* c = checks::DefaultRegistry().Find(check);
  EXPECT_NE(c, nullptr) << check;
  host::ReplayHost replay(b);
  core::EvidenceSet ev = collect::CollectEvidence(replay, c->info.needs, {});
  core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), core::Target::kSlurm,
                         *util::ParseRfc3339("2026-11-30T00:00:00Z"));
  return c->judge(ctx);
}

std::string All(const core::Finding& f) {
  std::string s = f.message;
  for (const auto& d : f.details) s += "\n" + d;
  return s;
}

}  // namespace

TEST(SlurmText, BareVersions) {
  EXPECT_EQ(collect::ParseBareVersion("3.4.1\n"), "3.4.1");  // enroot version
  EXPECT_EQ(collect::ParseBareVersion("apptainer version 1.3.4\n"), "1.3.4");
  EXPECT_FALSE(collect::ParseBareVersion("command not found"));
}

TEST(SlurmText, Hostlists) {
  EXPECT_EQ(*util::ExpandHostlist("n[1-3]"), (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(*util::ExpandHostlist("gpu[08-10,12],login1"),
            (std::vector<std::string>{"gpu08", "gpu09", "gpu10", "gpu12", "login1"}));
  EXPECT_EQ(*util::ExpandHostlist("a[1-2]-ib"), (std::vector<std::string>{"a1-ib", "a2-ib"}));
  EXPECT_FALSE(util::ExpandHostlist("n[1-"));
  EXPECT_FALSE(util::ExpandHostlist("n[3-1]"));
  EXPECT_TRUE(util::ExpandHostlist("")->empty());
}

TEST(SlurmText, GresStrings) {
  auto g = util::ParseGres("gpu:h100:8(S:0-1),gpu:a100:2,shard:16");
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g[0].type, "h100");
  EXPECT_EQ(g[0].count, 8);
  EXPECT_EQ(g[1].count, 2);
  EXPECT_EQ(g[2].name, "shard");
  EXPECT_EQ(g[2].count, 16);
  EXPECT_EQ(util::ParseGres("gpu:4")[0].type, "");
  EXPECT_TRUE(util::ParseGres("(null)").empty());
}

TEST(SlurmText, RecordedOutputParses) {
  auto cfg = util::ParseScontrolConfig(ReadFixture("slurm/scontrol-show-config.txt"));
  EXPECT_GT(cfg.size(), 150u);
  EXPECT_EQ(cfg["TopologyPlugin"], "topology/tree");
  EXPECT_EQ(cfg["HealthCheckInterval"], "300 sec");
  EXPECT_EQ(cfg["JobDefaults"], "DefMemPerGPU=8192");
  auto nodes = util::ParseScontrolRecords(ReadFixture("slurm/scontrol-show-node-o-n3-down.txt"));
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[2]["NodeName"], "n3");
  EXPECT_EQ(nodes[2]["State"], "IDLE+NOT_RESPONDING");
  EXPECT_EQ(nodes[0]["Gres"], "gpu:h100:8");
  EXPECT_NE(nodes[0]["OS"].find("Linux"), std::string::npos);  // a value with spaces stays whole
  auto ping = util::ParseScontrolPing(ReadFixture("slurm/scontrol-ping.txt"));
  ASSERT_EQ(ping.size(), 1u);
  EXPECT_EQ(ping[0].role, "primary");
  EXPECT_TRUE(ping[0].up);
  auto mpi = util::ParseMpiList(ReadFixture("slurm/srun-mpi-list.txt"));
  EXPECT_NE(std::find(mpi.begin(), mpi.end(), "pmix_v4"), mpi.end());
  EXPECT_NE(std::find(mpi.begin(), mpi.end(), "pmi2"), mpi.end());
}

TEST(SlurmChecks, GradedFromRecordedClusterOutput) {
  host::Bundle b = Scheduler();
  auto topo = Judge("topology-conf", b);
  EXPECT_EQ(topo.verdict, core::Verdict::kPass) << All(topo);
  auto limits = Judge("resource-limits", b);
  EXPECT_EQ(limits.verdict, core::Verdict::kWarn) << All(limits);
  EXPECT_NE(All(limits).find("DefMemPerGPU 8192 MB < 16384"), std::string::npos) << All(limits);
  auto mpi = Judge("mpi-srun-pmix", b);
  EXPECT_EQ(mpi.verdict, core::Verdict::kPass) << All(mpi);
  auto sacct = Judge("sacct-accounting", b);
  EXPECT_EQ(sacct.verdict, core::Verdict::kWarn);
  EXPECT_NE(All(sacct).find("accounting storage is disabled"), std::string::npos) << All(sacct);
  auto pyxis = Judge("pyxis", b);
  EXPECT_EQ(pyxis.verdict, core::Verdict::kWarn);
  auto hc = Judge("healthcheck-program", b);  // /usr/sbin/nhc wired, but no nhc.conf with checks
  EXPECT_EQ(hc.verdict, core::Verdict::kWarn) << All(hc);
  auto ping = Judge("slurm-controller-health", b);
  EXPECT_EQ(ping.verdict, core::Verdict::kPass);
  auto cg = Judge("slurm-cgroup-enforcement", b);
  EXPECT_EQ(cg.verdict, core::Verdict::kWarn);
  EXPECT_NE(All(cg).find("proctrack/linuxproc"), std::string::npos) << All(cg);
  auto states = Judge("slurm-node-states", b);
  EXPECT_EQ(states.verdict, core::Verdict::kPass) << All(states);
  // A single-node audit has no fleet: the fleet checks say so.
  EXPECT_EQ(Judge("fleet-version-drift", b).verdict, core::Verdict::kSkip);
}

TEST(SlurmChecks, ANotRespondingNodeIsNamed) {
  auto f = Judge("slurm-node-states", Scheduler("slurm/scontrol-show-node-o-n3-down.txt"));
  EXPECT_EQ(f.verdict, core::Verdict::kWarn);
  EXPECT_NE(All(f).find("n3: IDLE+NOT_RESPONDING"), std::string::npos) << All(f);
}

TEST(SlurmChecks, FailedCommandsAreEvidenceErrorsNotVerdicts) {
  host::Bundle b;
  host::CommandResult gone;
  gone.status = host::IoStatus::kTimeout;
  gone.error = "timed out";
  b.PutCommand({"scontrol", "show", "config"}, gone);
  auto f = Judge("topology-conf", b);
  EXPECT_EQ(f.verdict, core::Verdict::kWarn);
  EXPECT_EQ(f.reason, core::Reason::kEvidenceError);
}

namespace {
audit::NodeEvidence Node(const std::string& name, const std::string& driver) {
  audit::NodeEvidence n;
  n.node = name;
  n.role = "compute";
  core::Evidence gpu;
  gpu.status = core::EvidenceStatus::kOk;
  gpu.data = {{"driver_version", driver},
              {"devices", json::array({{{"name", "NVIDIA H100"}}, {{"name", "NVIDIA H100"}}})}};
  n.evidence["gpu.inventory"] = gpu;
  core::Evidence k;
  k.status = core::EvidenceStatus::kOk;
  k.data = {{"release", "6.8.0-60-generic"}, {"hostname", name}};
  n.evidence["os.kernel"] = k;
  return n;
}
}  // namespace

TEST(FleetSummary, DriftNamesTheOddNodesAndUnknownsAreNotDrift) {
  auto a = Node("n1", "580.95.05"), b = Node("n2", "580.95.05"), c = Node("n3", "570.86.10"),
       d = Node("n4", "580.95.05");
  d.evidence.erase("gpu.inventory");  // n4's GPU evidence is missing: unknown, not a second version
  core::Evidence s = audit::FleetSummary({&a, &b, &c, &d}, {{"n5", "not responding"}});
  EXPECT_EQ(s.data["nodes_expected"], 5);
  EXPECT_EQ(s.data["nodes_returned"], 4);
  ASSERT_EQ(s.data["drift"].size(), 1u) << s.data["drift"].dump();
  const json& dr = s.data["drift"][0];
  EXPECT_EQ(dr["fact"], "gpu driver");
  EXPECT_EQ(dr["majority"], "580.95.05");
  EXPECT_EQ(dr["majority_count"], 2);
  EXPECT_EQ(dr["odd"][0]["node"], "n3");
  EXPECT_EQ(dr["unknown"], json::array({"n4"}));
}

TEST(FleetJudge, UnreachableNodesKeepNodeChecksFromPassing) {
  audit::Plan plan = audit::BuildPlan(
      checks::DefaultRegistry(), {.target = core::Target::kSlurm, .checks = {"fleet-version-drift", "security-runc"}});
  audit::NodeEvidence login;
  login.node = "login1";
  login.role = "login";
  core::Evidence runc;
  runc.status = core::EvidenceStatus::kOk;
  runc.data = {{"installed", false}, {"path", nullptr}, {"version", nullptr}};
  auto n1 = Node("n1", "580.95.05"), n2 = Node("n2", "580.95.05");
  n1.evidence["runc.version"] = runc;
  n2.evidence["runc.version"] = runc;
  auto r = audit::Judge(plan, {login, n1, n2}, core::EmbeddedMinimumTable(), {{"n3", "state drain: bad GPU"}});
  ASSERT_EQ(r.results.size(), 2u);
  for (const auto& res : r.results) {
    if (res.info->id == "security-runc") {
      EXPECT_EQ(res.nodes.size(), 2u);  // judged on the compute nodes only
      EXPECT_EQ(res.finding.verdict, core::Verdict::kWarn);
      EXPECT_EQ(res.finding.reason, core::Reason::kCoveragePartial);
      EXPECT_NE(res.finding.message.find("2 of 3 nodes"), std::string::npos) << res.finding.message;
      EXPECT_NE(All(res.finding).find("n3: no evidence (state drain: bad GPU)"), std::string::npos);
    } else {
      EXPECT_EQ(res.nodes.size(), 1u);  // cluster check: once, on the login node
      EXPECT_EQ(res.nodes[0].node, "login1");
      EXPECT_EQ(res.finding.verdict, core::Verdict::kPass) << All(res.finding);
    }
  }
  EXPECT_EQ(r.fleet["nodes_expected"], 3);
}

TEST(FanOutLines, RoundTripThroughLabelsAndNoise) {
  host::Bundle b;
  b.manifest.hostname = "n7";
  b.manifest.role = "compute";
  std::string out;  // text that deflates poorly, so the document spans many lines
  for (int i = 0; i < 3000; ++i) out += std::to_string(i * 7919 % 10007) + " ";
  out += " ü";
  b.PutCommand({"echo", "ünïcode"}, Out(out));
  auto lines = audit::BundleLines("n7", b);
  ASSERT_GT(lines.size(), 5u);
  for (const auto& l : lines) EXPECT_LT(l.size(), 1000u);
  std::string text = "srun: warning: something\n";
  for (size_t i = lines.size(); i-- > 0;) text += "3: " + lines[i] + "\n";  // any order, labelled
  std::map<std::string, std::string> errors;
  auto got = audit::ParseBundleLines(text, errors);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(got[0].manifest.hostname, "n7");
  auto cmd = got[0].Command({"echo", "ünïcode"});
  ASSERT_TRUE(cmd);
  EXPECT_EQ(cmd->out, out);
  // A missing part: reported, not half-parsed.
  std::string partial;
  for (size_t i = 1; i < lines.size(); ++i) partial += lines[i] + "\n";
  errors.clear();
  EXPECT_TRUE(audit::ParseBundleLines(partial, errors).empty());
  EXPECT_NE(errors["n7"].find("incomplete"), std::string::npos);
}

TEST(SlurmChecks, AutoRemediationNeedsDrainAndReturn) {
  // Recorded config: HealthCheckProgram=/usr/sbin/nhc, ReturnToService=2. One bundle per case.
  auto with = [](const std::string& nhc_conf, const std::string& return_to_service) {
    host::Bundle b = Scheduler();
    std::string cfg = ReadFixture("slurm/scontrol-show-config.txt");
    cfg.replace(cfg.find("ReturnToService         = 2"), 27, "ReturnToService         = " + return_to_service);
    b.PutCommand({"scontrol", "show", "config"}, Out(cfg));
    b.PutFile("/etc/nhc/nhc.conf", {host::IoStatus::kOk, nhc_conf, false, ""});
    return Judge("auto-remediation", b);
  };
  auto f = with("* || check_fs_mount_rw -f /\n", "2");
  EXPECT_EQ(f.verdict, core::Verdict::kPass) << All(f);
  EXPECT_NE(f.message.find("ReturnToService=2"), std::string::npos);
  auto no_drain = with("* || export MARK_OFFLINE=0\n* || check_fs_mount_rw -f /\n", "2");
  EXPECT_EQ(no_drain.verdict, core::Verdict::kWarn);
  EXPECT_NE(no_drain.message.find("nothing drains"), std::string::npos) << All(no_drain);
  auto by_hand = with("* || check_fs_mount_rw -f /\n", "1");
  EXPECT_EQ(by_hand.verdict, core::Verdict::kWarn);
  EXPECT_NE(by_hand.message.find("return only by hand"), std::string::npos) << All(by_hand);
}

TEST(SlurmChecks, DcgmWiredIntoTheHealthProgram) {
  host::Bundle b = Scheduler();
  b.PutFile("/etc/nhc/nhc.conf", {host::IoStatus::kOk, "* || check_fs_mount_rw -f /\n", false, ""});
  auto none = Judge("dcgm-healthchecks-slurm", b);
  EXPECT_EQ(none.verdict, core::Verdict::kWarn) << All(none);
  b.PutFile("/etc/nhc/nhc.conf",
            {host::IoStatus::kOk, "* || check_fs_mount_rw -f /\n* || check_cmd_status -t 60 -r 0 dcgmi diag -r 1\n",
             false, ""});
  auto wired = Judge("dcgm-healthchecks-slurm", b);
  EXPECT_EQ(wired.verdict, core::Verdict::kPass) << All(wired);
  EXPECT_NE(All(wired).find("dcgmi diag -r 1"), std::string::npos);
  // No node of the fleet has DCGM: the prerequisite is missing, not a configuration finding.
  const core::Check* c = checks::DefaultRegistry().Find("dcgm-healthchecks-slurm");
  host::ReplayHost replay(b);
  core::EvidenceSet ev = collect::CollectEvidence(replay, {"slurm.config", "nhc.install"}, {});
  ev["fleet.summary"].status = core::EvidenceStatus::kOk;
  ev["fleet.summary"].data = {{"nodes", json::array({{{"node", "n1"}, {"facts", {{"dcgm", nullptr}}}},
                                                     {{"node", "n2"}, {"facts", {{"dcgm", nullptr}}}}})}};
  core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), core::Target::kSlurm,
                         *util::ParseRfc3339("2026-11-30T00:00:00Z"));
  auto skip = c->judge(ctx);
  EXPECT_EQ(skip.reason, core::Reason::kPrerequisiteMissing);
}

TEST(SlurmChecks, LmodInBothShellsWithTheToolchainModules) {
  const std::string script =
      "type module >/dev/null 2>&1 || { echo CLUSTERMAX-NO-MODULE-COMMAND; exit 0; }; module -t avail 2>&1";
  auto with = [&](const std::string& plain, const std::string& login) {
    host::Bundle b;
    b.PutCommand({"bash", "-c", script}, Out(plain));
    b.PutCommand({"bash", "-lc", script}, Out(login));
    b.PutEnv("LMOD_CMD", std::string("/usr/share/lmod/lmod/libexec/lmod"));
    b.PutEnv("MODULEPATH", std::string("/opt/modulefiles"));
    return Judge("lmod", b);
  };
  // `module -t avail` prints "/path:" headers and one module per line.
  std::string avail = "/opt/modulefiles:\ncuda/12.8\ncuda/13.0\nhpcx/2.24\nnccl/2.28.9\npython/3.12\n";
  auto ok = with(avail, avail);
  EXPECT_EQ(ok.verdict, core::Verdict::kPass) << All(ok);
  auto login_only = with("CLUSTERMAX-NO-MODULE-COMMAND\n", avail);
  EXPECT_EQ(login_only.verdict, core::Verdict::kWarn);
  EXPECT_NE(login_only.message.find("only in a login shell"), std::string::npos);
  auto missing = with("/opt/modulefiles:\ncuda/13.0\npython/3.12\n", "/opt/modulefiles:\ncuda/13.0\npython/3.12\n");
  EXPECT_NE(missing.message.find("hpcx/mpi, nccl"), std::string::npos) << missing.message;
  auto none = with("CLUSTERMAX-NO-MODULE-COMMAND\n", "CLUSTERMAX-NO-MODULE-COMMAND\n");
  EXPECT_NE(none.message.find("no module system"), std::string::npos);
}

TEST(SlurmChecks, PrologFastTimesAGpuStep) {
  auto with = [](double gpu_seconds, int gpu_exit, bool probe) {
    host::Bundle b = Scheduler();
    host::CommandResult cpu = Out("");
    cpu.duration_ms = 800;
    host::CommandResult gpu =
        Out("", gpu_exit,
            gpu_exit ? "srun: error: Unable to allocate resources: Requested node configuration is not available" : "");
    gpu.duration_ms = gpu_seconds * 1000;
    b.PutCommand({"srun", "-N1", "-n1", "--time=1", "--job-name=clustermax-probe", "true"}, cpu);
    b.PutCommand({"srun", "-N1", "-n1", "--time=1", "--job-name=clustermax-probe", "--gres=gpu:1", "true"}, gpu);
    const core::Check* c = checks::DefaultRegistry().Find("prolog-fast");
    host::ReplayHost replay(b);
    collect::CollectOptions o;
    if (probe) o.probes = {"slurm-job"};
    core::EvidenceSet ev = collect::CollectEvidence(replay, c->info.needs, o);
    core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), core::Target::kSlurm,
                           *util::ParseRfc3339("2026-11-30T00:00:00Z"));
    return c->judge(ctx);
  };
  EXPECT_EQ(with(2.5, 0, false).reason, core::Reason::kProbeDisabled);
  auto fast = with(2.5, 0, true);
  EXPECT_EQ(fast.verdict, core::Verdict::kPass) << All(fast);
  EXPECT_NE(fast.observed.find("CPU step 0.8 s"), std::string::npos) << fast.observed;
  EXPECT_EQ(with(45, 0, true).verdict, core::Verdict::kWarn);
  EXPECT_EQ(with(150, 0, true).verdict, core::Verdict::kFail);
  auto failed = with(0.2, 1, true);
  EXPECT_EQ(failed.reason, core::Reason::kUnverified);
  EXPECT_NE(failed.message.find("Requested node configuration"), std::string::npos) << failed.message;
}

namespace {
// A compute node for the fabric facts: its RDMA ports, its NCCL configuration and its processes.
audit::NodeEvidence FabricNode(const std::string& name, const std::string& qps,
                               const std::string& gpu_name = "NVIDIA H100 80GB HBM3", bool imex = false) {
  audit::NodeEvidence n = Node(name, "580.95.05");
  n.evidence["gpu.inventory"].data["devices"] = json::array({{{"name", gpu_name}}});
  core::Evidence rdma;
  rdma.status = core::EvidenceStatus::kOk;
  rdma.data = {{"devices", json::array({{{"name", "mlx5_0"},
                                         {"ports", json::array({{{"port", "1"},
                                                                 {"link_layer", "InfiniBand"},
                                                                 {"rate", "400 Gb/sec (4X NDR)"},
                                                                 {"state", "4: ACTIVE"}}})}}})}};
  n.evidence["rdma.devices"] = rdma;
  core::Evidence cfg;
  cfg.status = core::EvidenceStatus::kOk;
  json vars = json::object();
  if (!qps.empty()) vars["NCCL_IB_QPS_PER_CONNECTION"] = qps;
  cfg.data = {{"env", json::object()},
              {"files", json::array({{{"path", "/etc/nccl.conf"}, {"found", true}, {"vars", vars}}})}};
  n.evidence["nccl.config"] = cfg;
  core::Evidence procs;
  procs.status = core::EvidenceStatus::kOk;
  procs.data = {{"names", imex ? json::array({"systemd", "nvidia-imex"}) : json::array({"systemd"})}};
  n.evidence["os.processes"] = procs;
  return n;
}

// Judges a cluster check on the login node: scheduler evidence from the recorded bundle, the fleet
// summary from the given compute nodes.
core::Finding JudgeFleet(const std::string& check, const host::Bundle& b, std::vector<audit::NodeEvidence> nodes) {
  const core::Check* c = checks::DefaultRegistry().Find(check);
  EXPECT_NE(c, nullptr) << check;
  std::vector<std::string> needs;
  for (const auto& n : c->info.needs) {
    if (n != "fleet.summary") needs.push_back(n);
  }
  host::ReplayHost replay(b);
  core::EvidenceSet ev = collect::CollectEvidence(replay, needs, {});
  std::vector<const audit::NodeEvidence*> ptrs;
  for (const auto& n : nodes) ptrs.push_back(&n);
  ev["fleet.summary"] = audit::FleetSummary(ptrs, {});
  core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), core::Target::kSlurm,
                         *util::ParseRfc3339("2026-11-30T00:00:00Z"));
  return c->judge(ctx);
}
}  // namespace

TEST(SlurmChecks, QpsPerConnectionOnAMultiTierFabric) {
  host::Bundle b = Scheduler();  // the recorded topology has a spine at Level=1: two tiers
  auto low = JudgeFleet("nccl-ib-qps-entropy", b, {FabricNode("n1", "4"), FabricNode("n2", ""), FabricNode("n3", "1")});
  EXPECT_EQ(low.verdict, core::Verdict::kWarn) << All(low);
  EXPECT_NE(low.message.find("2 switch levels"), std::string::npos) << low.message;
  EXPECT_NE(low.message.find("2 of 3"), std::string::npos) << low.message;
  EXPECT_NE(All(low).find("NCCL_IB_QPS_PER_CONNECTION=unset: 1 node(s) (n2)"), std::string::npos) << All(low);
  auto ok = JudgeFleet("nccl-ib-qps-entropy", b, {FabricNode("n1", "4"), FabricNode("n2", "2"), FabricNode("n3", "2")});
  EXPECT_EQ(ok.verdict, core::Verdict::kPass) << All(ok);
  // One switch level: one QP is enough.
  host::Bundle flat = Scheduler();
  flat.PutCommand({"scontrol", "show", "topology"}, Out("SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=n[1-3]\n"));
  EXPECT_EQ(JudgeFleet("nccl-ib-qps-entropy", flat, {FabricNode("n1", ""), FabricNode("n2", "")}).verdict,
            core::Verdict::kPass);
  // No RDMA anywhere: not applicable.
  auto tcp = FabricNode("n1", "");
  tcp.evidence["rdma.devices"].data = {{"devices", json::array()}};
  EXPECT_EQ(JudgeFleet("nccl-ib-qps-entropy", b, {tcp}).reason, core::Reason::kNotApplicable);
  // The plan collects the NCCL configuration and RDMA ports on every node even when this check is alone.
  audit::Plan plan =
      audit::BuildPlan(checks::DefaultRegistry(), {.target = core::Target::kSlurm, .checks = {"nccl-ib-qps-entropy"}});
  for (const char* id : {"nccl.config", "rdma.devices"}) {
    EXPECT_NE(std::find(plan.node_collectors.begin(), plan.node_collectors.end(), id), plan.node_collectors.end())
        << id;
  }
  EXPECT_EQ(std::find(plan.node_collectors.begin(), plan.node_collectors.end(), "slurm.topology"),
            plan.node_collectors.end());
}

TEST(SlurmChecks, Nvl72NeedsImexOnEveryNodeAndBlockTopology) {
  host::Bundle b = Scheduler();  // TopologyPlugin=topology/tree in the recorded configuration
  auto h100 = JudgeFleet("mnnvl-compute-domain", b, {FabricNode("n1", "2"), FabricNode("n2", "2")});
  EXPECT_EQ(h100.reason, core::Reason::kNotApplicable);
  auto partial =
      JudgeFleet("mnnvl-compute-domain", b,
                 {FabricNode("n1", "2", "NVIDIA GB200", true), FabricNode("n2", "2", "NVIDIA GB200", false)});
  EXPECT_EQ(partial.verdict, core::Verdict::kWarn);
  EXPECT_NE(All(partial).find("not running on 1 of 2 NVL72 node(s): n2"), std::string::npos) << All(partial);
  EXPECT_NE(All(partial).find("not topology/block"), std::string::npos) << All(partial);
  host::Bundle block = Scheduler();
  std::string cfg = ReadFixture("slurm/scontrol-show-config.txt");
  size_t at = cfg.find("TopologyPlugin");
  ASSERT_NE(at, std::string::npos);
  size_t eol = cfg.find('\n', at);
  cfg.replace(at, eol - at, "TopologyPlugin          = topology/block");
  block.PutCommand({"scontrol", "show", "config"}, Out(cfg));
  auto ok = JudgeFleet("mnnvl-compute-domain", block,
                       {FabricNode("n1", "2", "NVIDIA GB200", true), FabricNode("n2", "2", "NVIDIA GB200", true)});
  EXPECT_EQ(ok.verdict, core::Verdict::kPass) << All(ok);
}

TEST(SlurmChecks, MonitoringReadinessScoresTenParts) {
  using namespace std::string_literals;
  auto node = [](const std::string& name, std::vector<std::string> procs, bool job_labels) {
    audit::NodeEvidence n = FabricNode(name, "2");
    n.evidence["os.processes"].data = {{"names", procs}};
    core::Evidence cfg;
    cfg.status = core::EvidenceStatus::kOk;
    json argv = job_labels ? json::array({"/usr/bin/dcgm-exporter", "--hpc-job-mapping-dir", "/run/dcgm-job-map"})
                           : json::array({"/usr/bin/dcgm-exporter"});
    cfg.data = {{"processes",
                 json::array({{{"pid", "812"}, {"argv", argv}, {"env", json::object()}, {"environ_status", "ok"}}})},
                {"units", json::array()}};
    n.evidence["gpu-exporter.config"] = cfg;
    return n;
  };
  host::Bundle b = Scheduler();  // sacct is disabled in the recorded cluster: one part missing
  std::vector<std::string> agents = {"systemd", "dcgm-exporter", "node_exporter", "promtail"};
  std::vector<std::string> server = agents;
  for (const char* s : {"prometheus", "grafana", "alertmanager", "prometheus-slur"}) server.push_back(s);
  auto production = JudgeFleet("monitoring-readiness", b, {node("n1", server, true), node("n2", agents, true)});
  EXPECT_EQ(production.verdict, core::Verdict::kPass) << All(production);
  EXPECT_NE(production.message.find("8/10"), std::string::npos) << production.message;
  EXPECT_NE(All(production).find("[x] Slurm exporter: on n1"), std::string::npos) << All(production);
  EXPECT_NE(All(production).find("[ ] alerting rules"), std::string::npos);
  auto partial = JudgeFleet("monitoring-readiness", b,
                            {node("n1", {"dcgm-exporter", "node_exporter", "promtail", "prometheus", "grafana"}, false),
                             node("n2", {"dcgm-exporter", "node_exporter", "promtail"}, false)});
  EXPECT_EQ(partial.verdict, core::Verdict::kWarn) << All(partial);
  EXPECT_NE(partial.message.find("5/10"), std::string::npos) << partial.message;
  auto minimal =
      JudgeFleet("monitoring-readiness", b, {node("n1", {"dcgm-exporter"}, false), node("n2", {"systemd"}, false)});
  EXPECT_EQ(minimal.verdict, core::Verdict::kFail) << All(minimal);
  EXPECT_NE(All(minimal).find("missing on n2"), std::string::npos) << All(minimal);  // n2 has no GPU exporter
}

TEST(SlurmChecks, SshFromEachNodeToTheNext) {
  // Each compute node's ssh.peer collector: node i to node i+1, the last wrapping to the first.
  auto peer = [](const std::string& self, const std::string& next, const host::CommandResult& ssh) {
    host::Bundle b;
    b.PutEnv("SLURM_JOB_NODELIST", std::string("n[1-3]"));
    b.PutEnv("SLURMD_NODENAME", self);
    b.PutCommand({"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "StrictHostKeyChecking=accept-new",
                  next, "hostname"},
                 ssh);
    host::ReplayHost h(b);
    audit::NodeEvidence n = Node(self, "580.95.05");
    n.evidence["ssh.peer"] = collect::CollectEvidence(h, {"ssh.peer"}, {})["ssh.peer"];
    return n;
  };
  // The login node's ssh.login collector: sinfo's first responsive node, then ssh to it.
  auto login = [](const host::CommandResult& ssh) {
    host::Bundle b = Scheduler();
    b.PutCommand({"sinfo", "-h", "-N", "-o", "%N", "-t", "idle,mixed,allocated"}, Out("n1\nn2\nn3\n"));
    b.PutCommand({"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "StrictHostKeyChecking=accept-new",
                  "n1", "hostname"},
                 ssh);
    return b;
  };
  auto ok = JudgeFleet("ssh-between-nodes", login(Out("n1\n")),
                       {peer("n1", "n2", Out("n2\n")), peer("n2", "n3", Out("n3\n")), peer("n3", "n1", Out("n1\n"))});
  EXPECT_EQ(ok.verdict, core::Verdict::kPass) << All(ok);
  EXPECT_NE(ok.message.find("between all 3 compute node(s)"), std::string::npos) << ok.message;
  auto denied =
      JudgeFleet("ssh-between-nodes", login(Out("n1\n")),
                 {peer("n1", "n2", Out("n2\n")), peer("n2", "n3", Out("", 255, "n3: Permission denied (publickey).\n")),
                  peer("n3", "n1", Out("n1\n"))});
  EXPECT_EQ(denied.verdict, core::Verdict::kWarn);
  EXPECT_NE(denied.message.find("n2 -> next node: fails (exit 255)"), std::string::npos) << denied.message;
  auto from_login =
      JudgeFleet("ssh-between-nodes", login(Out("", 255, "n1: Permission denied (publickey).\n")),
                 {peer("n1", "n2", Out("n2\n")), peer("n2", "n3", Out("n3\n")), peer("n3", "n1", Out("n1\n"))});
  EXPECT_EQ(from_login.verdict, core::Verdict::kWarn);
  EXPECT_NE(from_login.message.find("login -> n1: exit 255"), std::string::npos) << from_login.message;
  // A one-node step has no peer: the login direction alone is unverified.
  host::Bundle solo_env;
  solo_env.PutEnv("SLURM_JOB_NODELIST", std::string("n1"));
  solo_env.PutEnv("SLURMD_NODENAME", std::string("n1"));
  host::ReplayHost h(solo_env);
  audit::NodeEvidence solo = Node("n1", "580.95.05");
  solo.evidence["ssh.peer"] = collect::CollectEvidence(h, {"ssh.peer"}, {})["ssh.peer"];
  EXPECT_EQ(JudgeFleet("ssh-between-nodes", login(Out("n1\n")), {solo}).reason, core::Reason::kUnverified);
}

// Issue "Verdicts that hold", class 6: Slurm accepts plugin names without their type prefix, as
// real sites write them (tests/fixtures/corpus/slurm: NVIDIA's circe SuperPOD and Tuebingen's CFC
// both have TaskPlugin=affinity,cgroup). Read as no cgroup plugin before.
TEST(SlurmChecks, PluginNamesWithoutTheirTypePrefixAreRead) {
  std::string config = ReadFixture("slurm/scontrol-show-config.txt");
  auto with = [&](const std::string& task, const std::string& proctrack) {
    std::string c = config;
    c.replace(c.find("task/none"), 9, task);
    c.replace(c.find("proctrack/linuxproc"), 19, proctrack);
    host::Bundle b = Scheduler();
    b.PutCommand({"scontrol", "show", "config"}, Out(c));
    return All(Judge("slurm-cgroup-enforcement", b));
  };
  std::string bare = with("affinity,cgroup", "cgroup");
  EXPECT_EQ(bare.find("no task/cgroup"), std::string::npos) << bare;
  EXPECT_EQ(bare.find("ProctrackType"), std::string::npos) << bare;
  std::string prefixed = with("task/affinity,task/cgroup", "proctrack/cgroup");
  EXPECT_EQ(prefixed.find("no task/cgroup"), std::string::npos) << prefixed;
  // Mutation: the same list without cgroup is still a gap.
  std::string without = with("affinity", "cgroup");
  EXPECT_NE(without.find("no task/cgroup"), std::string::npos) << without;
}

// Issue "Verdicts that hold", class 6: real sites' slurm.conf and topology.conf
// (tests/fixtures/corpus/slurm, SOURCES.md), printed as slurmctld would print them.
namespace {

// `scontrol show node -o` for the NodeName and PartitionName lines of a slurm.conf: name, Gres,
// state and partitions (the other keys are not judged by these checks).
std::string NodesFromSlurmConf(const std::string& conf) {
  std::vector<std::pair<std::string, std::string>> nodes;  // name, Gres
  std::map<std::string, std::vector<std::string>> partitions;
  for (const auto& raw : util::SplitLines(conf)) {
    std::string line = raw.substr(0, raw.find('#'));
    std::map<std::string, std::string> kv;
    std::string first;
    for (const auto& w : util::SplitWhitespace(line)) {
      size_t eq = w.find('=');
      if (eq == std::string::npos) continue;
      std::string key = util::ToLower(w.substr(0, eq));
      if (first.empty()) first = key;
      kv[key] = w.substr(eq + 1);
    }
    if (first == "nodename" && kv["nodename"] != "DEFAULT") {
      std::vector<std::string> names = util::ExpandHostlist(kv["nodename"]).value();
      for (const auto& n : names) nodes.push_back({n, kv.count("gres") ? kv["gres"] : "(null)"});
    } else if (first == "partitionname") {
      std::vector<std::string> names = util::ExpandHostlist(kv["nodes"]).value();
      for (const auto& n : names) partitions[n].push_back(kv["partitionname"]);
    }
  }
  std::string out;
  for (const auto& [name, gres] : nodes) {
    out += fmt::format("NodeName={} Arch=x86_64 Gres={} State=IDLE{}\n", name, gres,
                       partitions.count(name) ? fmt::format(" Partitions={}", fmt::join(partitions[name], ",")) : "");
  }
  return out;
}

// topology.conf without its comment lines, as `scontrol show topology` lists the same units.
std::string TopologyFromConf(const std::string& conf) {
  std::string out;
  for (const auto& line : util::SplitLines(conf)) {
    if (!util::Trim(line).empty() && util::Trim(line)[0] != '#') out += line + "\n";
  }
  return out;
}

host::Bundle Site(const std::string& slurm_conf, const std::string& topology_conf = "") {
  host::Bundle b = Scheduler();
  b.PutCommand({"scontrol", "show", "node", "-o"}, Out(NodesFromSlurmConf(ReadFixture("corpus/slurm/" + slurm_conf))));
  if (!topology_conf.empty())
    b.PutCommand({"scontrol", "show", "topology"}, Out(TopologyFromConf(ReadFixture("corpus/slurm/" + topology_conf))));
  return b;
}

std::string WithConfig(std::string config, const std::string& key, const std::string& value) {
  size_t at = config.find(key + " ");
  EXPECT_NE(at, std::string::npos) << key;
  config.replace(at, config.find('\n', at) - at, fmt::format("{:<24}= {}", key, value));
  return config;
}

}  // namespace

// Tuebingen's CFC cluster declares no GRES on any node (GresTypes=gpu, CPU nodes). Before:
// "topology/tree covers all 0 GPU nodes" PASSed.
TEST(SlurmChecks, TopologyWithNoGpuGresIsNotAPass) {
  host::Bundle b = Site("tuebingen-cfc-slurm.conf", "tuebingen-cfc-topology.conf");
  auto none = Judge("topology-conf", b);
  EXPECT_EQ(none.verdict, core::Verdict::kSkip) << All(none);
  EXPECT_NE(none.message.find("no node declares GPU GRES"), std::string::npos) << none.message;
  // Mutation: one node declares GPUs, and the real file's names (cfc[01-16]) miss it (cfc001).
  std::string nodes = NodesFromSlurmConf(ReadFixture("corpus/slurm/tuebingen-cfc-slurm.conf"));
  nodes.replace(nodes.find("Gres=(null)"), 11, "Gres=gpu:4");
  b.PutCommand({"scontrol", "show", "node", "-o"}, Out(nodes));
  auto one = Judge("topology-conf", b);
  EXPECT_EQ(one.verdict, core::Verdict::kWarn) << All(one);
  EXPECT_NE(All(one).find("not covered: cfc001"), std::string::npos) << All(one);
}

// NVIDIA's circe SuperPOD declares no GRES on its 98 DGX nodes. When the nodes report GPUs, that is
// a WARN; when they report none, not applicable.
TEST(SlurmChecks, TopologyWithGpusButNoGresWarns) {
  host::Bundle b = Site("nvidia-circe-superpod-slurm.conf", "circe-superpod-topology.conf");
  auto gpus = JudgeFleet("topology-conf", b, {Node("circe-n001", "580.95.05"), Node("circe-n002", "580.95.05")});
  EXPECT_EQ(gpus.verdict, core::Verdict::kWarn) << All(gpus);
  EXPECT_NE(gpus.message.find("GPUs present on 2 node(s) but no node declares GPU GRES"), std::string::npos)
      << gpus.message;
  // Mutation: the nodes report no GPU.
  auto cpu1 = Node("circe-n001", "580.95.05"), cpu2 = Node("circe-n002", "580.95.05");
  cpu1.evidence["gpu.inventory"].data["devices"] = json::array();
  cpu2.evidence["gpu.inventory"].data["devices"] = json::array();
  auto cpu = JudgeFleet("topology-conf", b, {cpu1, cpu2});
  EXPECT_EQ(cpu.verdict, core::Verdict::kSkip) << All(cpu);
  EXPECT_EQ(cpu.reason, core::Reason::kNotApplicable);
}

// circe runs HealthCheckProgram=/scratch/mlperf/admin/scripts/nhc.sh every 3600 s: a site script.
// Before: "nhc" in its path made it NHC, judged against the login node's (absent) nhc.conf: WARN.
TEST(SlurmChecks, ASiteHealthCheckScriptIsNotJudgedByTheLoginNodesNhc) {
  std::string config = ReadFixture("slurm/scontrol-show-config.txt");
  config = WithConfig(WithConfig(config, "HealthCheckInterval", "3600 sec"), "HealthCheckProgram",
                      "/scratch/mlperf/admin/scripts/nhc.sh");
  host::Bundle b = Scheduler();
  b.PutCommand({"scontrol", "show", "config"}, Out(config));
  auto site = Judge("healthcheck-program", b);
  EXPECT_EQ(site.verdict, core::Verdict::kPass) << All(site);
  EXPECT_NE(
      site.message.find("site health check program /scratch/mlperf/admin/scripts/nhc.sh configured, interval 3600 s"),
      std::string::npos)
      << site.message;
  EXPECT_EQ(All(site).find("nhc.conf"), std::string::npos) << All(site);
  // Mutation: the program is NHC itself, and the login node has no nhc.conf with checks.
  b.PutCommand({"scontrol", "show", "config"}, Out(WithConfig(config, "HealthCheckProgram", "/usr/sbin/nhc")));
  auto nhc = Judge("healthcheck-program", b);
  EXPECT_EQ(nhc.verdict, core::Verdict::kWarn) << All(nhc);
  EXPECT_NE(nhc.message.find("nhc.conf has no active check"), std::string::npos) << nhc.message;
  // clustermax health through the wrapper its package installs: named as such, not a site script.
  b.PutCommand({"scontrol", "show", "config"},
               Out(WithConfig(config, "HealthCheckProgram", "/usr/libexec/clustermax/health-check.sh")));
  auto ours = Judge("healthcheck-program", b);
  EXPECT_EQ(ours.verdict, core::Verdict::kPass) << All(ours);
  EXPECT_NE(ours.message.find("clustermax health every 3600 s"), std::string::npos) << ours.message;
  EXPECT_EQ(All(ours).find("a site script"), std::string::npos) << All(ours);
}

// VinUni's lab: partition slurmpar holds slurmnode[1-7] with Gres=gpu:1 and slurmnode[8-10] with gpu:2.
TEST(SlurmChecks, APartitionsNodesWithDifferentGpuGresAreNamed) {
  auto vinuni = Judge("slurm-gres-gpu", Site("vinuni-slurm.conf"));
  EXPECT_EQ(vinuni.verdict, core::Verdict::kWarn) << All(vinuni);
  EXPECT_NE(
      All(vinuni).find(
          "partition slurmpar: nodes differ in GPU GRES: gpu:1 on 7 node(s); odd: slurmnode8, slurmnode9, slurmnode10 (gpu:2)"),
      std::string::npos)
      << All(vinuni);
  // xjhpc: partition xj-h100-ib-1 of two nodes with Gres=gpu:h100:8, a CPU partition beside it.
  host::Bundle b = Site("xjhpc-nodes.conf");
  auto uniform = Judge("slurm-gres-gpu", b);
  EXPECT_EQ(uniform.verdict, core::Verdict::kPass) << All(uniform);
  // Mutation: one of the two declares no GRES.
  std::string nodes = NodesFromSlurmConf(ReadFixture("corpus/slurm/xjhpc-nodes.conf"));
  size_t at = nodes.find("NodeName=xjhpc-164-101-ai");
  nodes.replace(nodes.find("Gres=gpu:h100:8", at), 15, "Gres=(null)");
  b.PutCommand({"scontrol", "show", "node", "-o"}, Out(nodes));
  auto odd = Judge("slurm-gres-gpu", b);
  EXPECT_EQ(odd.verdict, core::Verdict::kWarn) << All(odd);
  EXPECT_NE(All(odd).find("partition xj-h100-ib-1: nodes differ in GPU GRES"), std::string::npos) << All(odd);
  EXPECT_NE(All(odd).find("xjhpc-164-101-ai (no GPU GRES)"), std::string::npos) << All(odd);
}
