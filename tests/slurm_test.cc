// The fleet audit against a real Slurm cluster on this machine (scripts/slurm-ci.sh: Debian's
// slurmctld, three slurmd on their own ports, munge, 8 fake GPUs per node as GRES character
// devices). The nodes load the fake NVML (tests/fake_nvml) through the environment srun forwards,
// so every node "has" 8 H100s. One cluster serves every test; tests that change its configuration
// restart it. Run as one ctest test (the cluster's ports are fixed), never in parallel.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "testutil.h"
#include "util/strings.h"
#include "util/time.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kDir = fs::path(CLUSTERMAX_BUILD_DIR) / "slurm-ci";
const std::string kScript = std::string(CLUSTERMAX_SOURCE_DIR) + "/scripts/slurm-ci.sh";

using Proc = clustermax::testing::Shell;
Proc Sh(const std::string& cmd) { return clustermax::testing::RunShell(cmd); }

json JsonFrom(const std::string& out) {
  size_t b = out.find('{'), e = out.rfind('}');
  if (b == std::string::npos || e == std::string::npos) {
    ADD_FAILURE() << "no JSON: " << out;
    return json::object();
  }
  return json::parse(out.substr(b, e - b + 1));
}

std::string Env() {
  return "SLURM_CONF=" + (kDir / "slurm.conf").string() + " LD_LIBRARY_PATH=" + CLUSTERMAX_FAKE_NVML_DIR +
         " NO_COLOR=1";
}

void Up(const std::string& env = "") {
  Sh("bash " + kScript + " down " + kDir.string());
  Proc p = Sh(env + " bash " + kScript + " up " + kDir.string() + " 3");
  ASSERT_EQ(p.code, 0) << p.out;
}

fs::path last_run;  // the run directory of the latest Audit()

// Runs a fleet audit and returns the JSON report (stdout) and the process result.
json Audit(const std::string& extra, Proc* proc = nullptr, const std::string& env = "") {
  fs::path out = kDir / "runs" / std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  last_run = out;
  Proc p = Sh(Env() + " " + env + " " + CLUSTERMAX_BINARY + " audit --slurm --yes --json --exit-zero --out " +
              out.string() + " " + extra + " 2>" + (kDir / "audit.stderr").string());
  if (proc) *proc = p;
  return JsonFrom(p.out);
}

const json& Result(const json& report, const std::string& id) {
  for (const auto& r : report["results"]) {
    if (r["id"] == id) return r;
  }
  static json none = json::object();
  ADD_FAILURE() << "no result " << id;
  return none;
}

class SlurmCluster : public ::testing::Environment {
 public:
  void SetUp() override {
    Proc p = Sh("bash " + kScript + " install");
    ASSERT_EQ(p.code, 0) << p.out;
    fs::create_directories(kDir);
    fs::remove_all(kDir / "runs");
    Up();
  }
  void TearDown() override {
    Sh("bash " + kScript + " down " + kDir.string());
    Sh("bash " + std::string(CLUSTERMAX_SOURCE_DIR) + "/scripts/slurm-ci-accounting.sh down " + kDir.string());
  }
};

}  // namespace

TEST(SlurmFleet, AuditsEveryNodeThroughOneStep) {
  Proc p;
  auto t0 = std::chrono::steady_clock::now();
  json r = Audit("", &p);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r["fleet"].is_null()) << p.out;
  EXPECT_EQ(r["fleet"]["nodes_expected"], 3);
  EXPECT_EQ(r["fleet"]["nodes_returned"], 3);
  EXPECT_TRUE(r["fleet"]["unreachable"].empty());
  EXPECT_TRUE(r["fleet"]["drift"].empty()) << r["fleet"]["drift"].dump();
  EXPECT_LT(secs, 60.0);
  // Every node's facts: 8 H100s from the (fake) NVML each node loaded in its step.
  ASSERT_EQ(r["fleet"]["nodes"].size(), 3u);
  for (const auto& n : r["fleet"]["nodes"])
    EXPECT_NE(n["facts"]["gpus"].get<std::string>().find("8 x"), std::string::npos) << n.dump();
  // Node checks were judged on three nodes; scheduler checks once.
  const json& ecc = Result(r, "gpu-ecc-health");
  EXPECT_EQ(ecc["nodes"].size(), 3u);
  EXPECT_EQ(Result(r, "slurm-commands")["nodes"].size(), 1u);
  EXPECT_EQ(Result(r, "slurm-commands")["status"], "PASS") << Result(r, "slurm-commands").dump();
  EXPECT_EQ(Result(r, "slurm-controller-health")["status"], "PASS");
  EXPECT_EQ(Result(r, "slurm-node-states")["status"], "PASS");
  EXPECT_EQ(Result(r, "worker-evidence-coverage")["status"], "PASS");
  EXPECT_EQ(Result(r, "fleet-version-drift")["status"], "PASS");
  // GRES gpu:h100:8 matches the 8 GPUs each node's NVML reports.
  EXPECT_EQ(Result(r, "slurm-gres-gpu")["status"], "PASS") << Result(r, "slurm-gres-gpu").dump();
  // The step asked for the node's 8 GPUs; Slurm set CUDA_VISIBLE_DEVICES=0..7 on every node.
  const json& cvd = Result(r, "cuda-visible-devices");
  EXPECT_EQ(cvd["status"], "PASS") << cvd.dump();
  EXPECT_EQ(cvd["nodes"].size(), 3u);
  // The CI cluster has no health check, no topology and no accounting: graded, not hidden.
  EXPECT_EQ(Result(r, "healthcheck-program")["status"], "FAIL");
  EXPECT_EQ(Result(r, "topology-conf")["status"], "WARN");
  EXPECT_EQ(Result(r, "sacct-accounting")["status"], "WARN");
  EXPECT_EQ(Result(r, "slurm-cgroup-enforcement")["status"], "WARN");
  EXPECT_EQ(Result(r, "resource-limits")["status"], "WARN");
  // Worker tools graded per node (none installed on the CI machine), and the login node compared with them.
  EXPECT_EQ(Result(r, "enroot")["status"], "FAIL");
  EXPECT_EQ(Result(r, "enroot")["nodes"].size(), 3u);
  EXPECT_NE(Result(r, "head-worker-consistency")["status"], "WARN") << Result(r, "head-worker-consistency").dump();
  // The matrix has a column per node.
  bool found = false;
  for (const auto& m : r["fleet"]["matrix"]) {
    if (m["check"] == "gpu-ecc-health") found = m["verdicts"].size() == 3;
  }
  EXPECT_TRUE(found);
  // Run directory: the login node's bundle and three node bundles.
  fs::path run = kDir / "runs";
  size_t bundles = 0;
  for (const auto& d : fs::recursive_directory_iterator(run))
    bundles += d.path().parent_path().filename() == "evidence";
  EXPECT_GE(bundles, 4u);
}

TEST(SlurmFleet, PlantedConfigurationsAreGraded) {
  // Health check wired, topology covering the GPU nodes, and n3 without GRES.
  // popen runs /bin/sh: multi-line values go in single quotes with real newlines.
  Up("SLURM_CI_EXTRA='TopologyPlugin=topology/tree\nHealthCheckProgram=/bin/true\nHealthCheckInterval=60' "
     "SLURM_CI_TOPOLOGY='SwitchName=s1 Nodes=n[1-3]' "
     "SLURM_CI_NODE_LINES='NodeName=n[1-2] NodeHostname=@HOST@ NodeAddr=127.0.0.1 Port=[17001-17002] CPUs=2 RealMemory=4000 Gres=gpu:h100:8 State=UNKNOWN\n"
     "NodeName=n3 NodeHostname=@HOST@ NodeAddr=127.0.0.1 Port=17003 CPUs=2 RealMemory=4000 State=UNKNOWN' "
     "SLURM_CI_GRES_NODES='n[1-2]'");
  json r = Audit("--nodelist=n[1-2]");  // the GPU step needs GPUs on every node of the step
  EXPECT_EQ(Result(r, "healthcheck-program")["status"], "PASS") << Result(r, "healthcheck-program").dump();
  EXPECT_EQ(Result(r, "topology-conf")["status"], "PASS") << Result(r, "topology-conf").dump();
  // n3 is not in the step, so its GPUs are unknown: the GRES check sees n3 declare none. With the
  // node evidence of n1 and n2, their counts match.
  json all = Audit("");
  const json& gres = Result(all, "slurm-gres-gpu");
  std::string text = gres.dump();
  EXPECT_NE(text.find("n3: Gres=(none)"), std::string::npos) << text;
  // n3 has GPUs (its NVML sees 8) but no GRES: not schedulable, a FAIL.
  EXPECT_EQ(gres["status"], "FAIL") << text;
  Up();
}

TEST(SlurmFleet, TheSlurmJobProbeTimesARealGpuStep) {
  // Opt-in only: without the probe the check says so; with it two real one-node steps run.
  json off = Audit("--check prolog-fast");
  EXPECT_EQ(Result(off, "prolog-fast")["reason"], "probe-disabled");
  json r = Audit("--check prolog-fast --probe slurm-job");
  const json& p = Result(r, "prolog-fast");
  EXPECT_EQ(p["status"], "PASS") << p.dump();
  EXPECT_NE(p["observed"].get<std::string>().find("GPU step"), std::string::npos) << p.dump();
}

TEST(SlurmFleet, DriftOnOneNodeIsNamed) {
  json r = Audit("", nullptr, "FAKE_NVML_DRIVER_ON=n2=570.86.10");
  ASSERT_FALSE(r["fleet"].is_null());
  bool named = false;
  for (const auto& d : r["fleet"]["drift"]) {
    if (d["fact"] != "gpu driver") continue;
    EXPECT_EQ(d["majority"], "580.95.05");
    ASSERT_EQ(d["odd"].size(), 1u);
    EXPECT_EQ(d["odd"][0]["node"], "n2");
    EXPECT_EQ(d["odd"][0]["value"], "570.86.10");
    named = true;
  }
  EXPECT_TRUE(named) << r["fleet"]["drift"].dump();
  const json& drift = Result(r, "fleet-version-drift");
  EXPECT_EQ(drift["status"], "WARN");
  EXPECT_NE(drift.dump().find("n2 (570.86.10)"), std::string::npos) << drift.dump();
}

// On a terminal the fan-out says how many nodes have answered while the step runs (it was silent
// until the end); the same audit in a log prints no such line.
TEST(SlurmFleet, OnATerminalTheNodesAnsweredAreCounted) {
  fs::path out = kDir / "runs" / "tty";
  std::string cmd = Env() + " TERM=xterm " + CLUSTERMAX_BINARY +
                    " audit --slurm --yes --exit-zero --check slurm-node-states --check gpu-ecc-health --out " +
                    out.string() + " >/dev/null";
  Proc tty = Sh("script -qec '" + cmd + "' /dev/null");
  EXPECT_NE(tty.out.find("of 3 nodes answered"), std::string::npos) << tty.out;
  auto why = [&] {  // the nodes left out and why, when the count is not 3 of 3
    auto text = clustermax::util::ReadLocalFile(out / "report.json");
    return text ? JsonFrom(*text)["fleet"]["unreachable"].dump() : std::string("no report");
  };
  EXPECT_NE(tty.out.find("3 of 3 nodes answered"), std::string::npos) << tty.out << why();
  Proc log = Sh(Env() + " " + CLUSTERMAX_BINARY + " audit --slurm --yes --exit-zero --check slurm-node-states --out " +
                (kDir / "runs" / "log").string() + " 2>&1 >/dev/null");
  EXPECT_EQ(log.out.find("nodes answered"), std::string::npos) << log.out;
}

TEST(SlurmFleet, InsideAnAllocationTheStepOverlapsIt) {
  Proc p = Sh(Env() + " timeout 120 salloc -N2 --gres=gpu:8 " + CLUSTERMAX_BINARY +
              " audit --slurm --yes --json --exit-zero --out " + (kDir / "runs" / "salloc").string() + " 2>" +
              (kDir / "salloc.stderr").string());
  json r = JsonFrom(p.out);
  EXPECT_EQ(r["fleet"]["nodes_expected"], 2) << r["fleet"].dump() << p.out;
  EXPECT_EQ(r["fleet"]["nodes_returned"], 2);
}

// Every slurmd of the test cluster shares this machine, so CLUSTERMAX_BINARY itself is on every
// "node" whether or not srun broadcast it. The audit therefore runs a copy of the binary that only
// the login side can see: under a tmpfs mounted in a private mount namespace (unshare -m), which
// the slurmd, started outside it, cannot see. A node can then run only srun --bcast's copy; the
// same audit without --bcast is the control that proves the copy is hidden from the nodes.
TEST(SlurmFleet, BroadcastCopiesTheBinaryFirst) {
  if (Sh("unshare -m true").code != 0) GTEST_SKIP() << "cannot make a mount namespace here (unshare -m)";
  fs::path hidden = kDir / "hidden-bin", runs = kDir / "runs", copies = kDir / "bcast";
  fs::create_directories(hidden);
  fs::create_directories(runs);
  fs::remove_all(copies);  // srun writes its copies here (slurm_bcast_<job>.<step>_<node>), not in /tmp
  fs::create_directories(copies);
  std::string bin = (hidden / "clustermax").string();
  auto audit = [&](const std::string& name, const std::string& extra) {
    return Env() + " " + bin + " audit --slurm --yes --json --exit-zero --nodes=2 --out " + (runs / name).string() +
           " " + extra + " >" + (kDir / (name + ".json")).string() + " 2>" + (kDir / (name + ".stderr")).string() +
           "\n";
  };
  // Room for the binary whatever the build (a sanitizer build's is several hundred MB).
  std::uintmax_t room = fs::file_size(CLUSTERMAX_BINARY) + (64u << 20);
  std::string script =
      "mount -t tmpfs -o size=" + std::to_string(room) + " none " + hidden.string() + " || exit 9\n" + "cp " +
      CLUSTERMAX_BINARY + " " + bin + " || exit 8\n" +
      audit("bcast", "--bcast=" + copies.string() + "/") +  // a directory: srun names the copy per node
      audit("no-bcast", "") + "exit 0\n";
  std::ofstream(kDir / "bcast.sh") << script;
  Proc p = Sh("unshare -m sh " + (kDir / "bcast.sh").string());
  if (p.code == 9) GTEST_SKIP() << "no tmpfs mount here: " << p.out;
  ASSERT_EQ(p.code, 0) << p.out;
  ASSERT_FALSE(fs::exists(bin)) << "the tmpfs leaked out of its mount namespace: the nodes could see the binary";
  auto read = [&](const std::string& name) {
    std::ifstream in(kDir / name);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  json with = JsonFrom(read("bcast.json"));
  EXPECT_EQ(with["fleet"]["nodes_returned"], 2) << with["fleet"].dump() << read("bcast.stderr");
  EXPECT_TRUE(with["fleet"]["unreachable"].empty()) << with["fleet"]["unreachable"].dump();
  std::set<std::string> copied;  // the node each broadcast copy was written for
  for (const auto& f : fs::directory_iterator(copies)) {
    std::string name = f.path().filename().string();
    if (name.rfind("slurm_bcast_", 0) == 0 && name.find('_', 12) != std::string::npos)
      copied.insert(name.substr(name.rfind('_') + 1));
  }
  EXPECT_EQ(copied, (std::set<std::string>{"n1", "n2"})) << "srun --bcast left no copy for each node in " << copies;
  // The control: without --bcast the nodes cannot exec the login's hidden path, so none answers.
  std::string without = read("no-bcast.json");
  json ctl = without.find('{') == std::string::npos ? json::object() : JsonFrom(without);
  const json fleet = ctl.contains("fleet") && ctl["fleet"].is_object() ? ctl["fleet"] : json::object();
  EXPECT_EQ(fleet.value("nodes_returned", 0), 0)
      << "without --bcast the nodes still ran the binary: the test cannot tell a broadcast copy from the original\n"
      << without << read("no-bcast.stderr");
  fs::remove_all(copies);  // a copy of the binary per node: hundreds of MB in a sanitizer build
}

TEST(SlurmFleet, ANodeDeadlineSendsWhatItHas) {
  // Every node's NVML hangs; the node deadline sends the rest in time and says what is partial.
  auto t0 = std::chrono::steady_clock::now();
  json r = Audit("--node-timeout=2 --command-timeout=30", nullptr, "FAKE_NVML_HANG=1");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 20.0);
  EXPECT_EQ(r["fleet"]["nodes_returned"], 3) << r["fleet"].dump();
  EXPECT_EQ(r["fleet"]["partial"].size(), 3u) << r["fleet"].dump();
  const json& cov = Result(r, "worker-evidence-coverage");
  EXPECT_EQ(cov["status"], "WARN") << cov.dump();
  EXPECT_NE(cov.dump().find("node deadline"), std::string::npos);
  EXPECT_NE(Result(r, "gpu-ecc-health")["status"], "PASS");
}

TEST(SlurmFleet, StorageScalingRunsOneStepPerNodeCount) {
  // The storage benchmark from 1, 2 and 3 nodes at once on a shared directory (here all three
  // slurmd share this machine's disk), each node in its own workspace, everything removed after.
  fs::path shared = kDir / "shared-storage";
  fs::remove_all(shared);
  fs::create_directories(shared);
  fs::path out = kDir / "runs" / "scaling";
  Proc p = Sh(
      Env() + " " + CLUSTERMAX_BINARY + " bench storage --scale --path " + shared.string() + " --out " + out.string() +
      " --size 32M --files 2 --duration 4 --ramp 0 --tests seq-write-1m-direct,seq-read-1m-direct --json --exit-zero 2>" +
      (kDir / "scale.stderr").string());
  ASSERT_EQ(p.code, 0) << p.out;
  json r = JsonFrom(p.out);
  EXPECT_EQ(r["kind"], "clustermax.bench.storage-scaling");
  ASSERT_EQ(r["steps"].size(), 3u) << r.dump();
  for (int k = 1; k <= 3; ++k) {
    const json& s = r["steps"][k - 1];
    EXPECT_EQ(s["nodes"], k);
    EXPECT_EQ(s["returned"], k) << s.dump();
    ASSERT_TRUE(s["aggregate"].contains("storage.seq-write")) << s.dump();
    const json& w = s["aggregate"]["storage.seq-write"];
    EXPECT_EQ(w["nodes"], k) << s.dump() << "\n" << Sh("cat " + (kDir / "scale.stderr").string()).out;
    ASSERT_TRUE(w.contains("sum")) << s.dump();
    EXPECT_GT(w["sum"].get<double>(), 0.0) << s.dump();
    EXPECT_LE(w["worst_value"].get<double>(), w["sum"].get<double>());
    if (k > 1) {
      EXPECT_TRUE(w.contains("efficiency")) << w.dump();
    }
  }
  EXPECT_EQ(r["largest_complete_step"], 3);
  EXPECT_FALSE(r["grades"].empty());
  EXPECT_TRUE(fs::exists(out / "bench" / "storage-scaling.json"));
  // Every node's workspace is gone.
  size_t left = 0;
  for (const auto& e : fs::directory_iterator(shared))
    left += e.path().filename().string().rfind("clustermax-bench-", 0) == 0;
  EXPECT_EQ(left, 0u);
  // The table names every step.
  Proc table =
      Sh(Env() + " " + CLUSTERMAX_BINARY + " bench storage --scale --nodes 2 --path " + shared.string() + " --out " +
         out.string() + "-2 --size 16M --files 1 --duration 1 --ramp 0 --tests seq-write-1m-direct --exit-zero -q");
  EXPECT_NE(table.out.find("seq write GB/s (sum | worst | eff.)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("2/2"), std::string::npos) << table.out;
}

TEST(SlurmFleet, NetRunsEveryModeAndNamesAPlantedSlowNode) {
  // bench net's TCP backend over the three slurmd: every mode as real job steps, the ranks meeting
  // through a rendezvous directory (here on the one disk all three nodes share), and n2's sends
  // paced to 200 MB/s by the tests' hook, which the pairwise search must name.
  fs::path rdv = kDir / "rendezvous";
  fs::remove_all(rdv);
  fs::path out = kDir / "runs" / "net";
  Proc p = Sh(
      Env() + " CLUSTERMAX_NET_TEST_THROTTLE=n2=200 " + CLUSTERMAX_BINARY + " bench net --rendezvous " + rdv.string() +
      " --out " + out.string() +
      " --tasks-per-node 2 --backend tcp --max-bytes 1M --factor 16 --iters 2 --rails lo --seconds 1 --latency-iters 200"
      " --slow-ratio 0.4"
      " --json --exit-zero 2>" +
      (kDir / "net.stderr").string());
  ASSERT_EQ(p.code, 0) << p.out << Sh("cat " + (kDir / "net.stderr").string()).out;
  json r = JsonFrom(p.out);
  EXPECT_EQ(r["kind"], "clustermax.bench.net");
  // Single node: every collective, two ranks, the data checked.
  ASSERT_TRUE(r["single"].contains("collectives")) << r["single"].dump();
  EXPECT_EQ(r["single"]["collectives"].size(), 7u);
  EXPECT_EQ(r["single"]["ranks"], 2);
  for (const auto& t : r["single"]["collectives"]) {
    EXPECT_EQ(t["wrong"], 0) << t.dump();
    EXPECT_GT(t["peak_busbw"].get<double>(), 0.0) << t.dump();
  }
  // Scaling: 1, 2 and 3 nodes at two ranks each.
  ASSERT_EQ(r["scaling"]["steps"].size(), 3u) << r["scaling"].dump();
  for (int k = 1; k <= 3; ++k) {
    const json& s = r["scaling"]["steps"][k - 1];
    EXPECT_EQ(s["nodes"], k);
    EXPECT_EQ(s["result"]["ranks"], 2 * k) << s.dump();
    EXPECT_EQ(s["result"]["nodes"].size(), static_cast<size_t>(k)) << s.dump();
  }
  EXPECT_TRUE(r["scaling"]["efficiency"].is_number()) << r["scaling"].dump();
  // Fabric-only: same-node peers through the published address, not loopback.
  EXPECT_EQ(r["fabric_only"]["ranks"], 6) << r["fabric_only"].dump();
  EXPECT_EQ(r["fabric_only"]["transport"].get<std::string>().find("loopback"), std::string::npos);
  // Per rail: one run bound to the named interface.
  ASSERT_EQ(r["rails"]["rails"].size(), 1u) << r["rails"].dump();
  EXPECT_EQ(r["rails"]["rails"][0]["rail"], "lo");
  EXPECT_GT(r["rails"]["rails"][0]["busbw_at_max"].get<double>(), 0.0) << r["rails"].dump();
  EXPECT_NE(r["rails"]["rails"][0]["result"]["transport"].get<std::string>().find("tcp/lo"), std::string::npos);
  // Pairwise: every pair, n2 slow with both partners, confirmed against a good node, named.
  const json& pw = r["pairwise"];
  ASSERT_EQ(pw["pairs"].size(), 3u) << pw.dump();
  for (const auto& x : pw["pairs"]) {
    bool has_n2 = x["a"] == "n2" || x["b"] == "n2";
    EXPECT_EQ(x.value("slow", false), has_n2) << x.dump();
    EXPECT_GT(x["latency_p50_us"].get<double>(), 0.0);
  }
  ASSERT_EQ(pw["culprits"].size(), 1u) << pw.dump();
  EXPECT_EQ(pw["culprits"][0]["kind"], "node");
  EXPECT_EQ(pw["culprits"][0]["name"], "n2");
  ASSERT_EQ(pw["retests"].size(), 1u);
  EXPECT_EQ(pw["retests"][0]["a"], "n2");
  for (const auto& g : r["grades"]) {
    if (g["metric"] == "net.pairwise-worst-node") {
      EXPECT_EQ(g["verdict"], "FAIL") << g.dump();
    }
    if (g["metric"] == "net.wrong-elements") {
      EXPECT_EQ(g["verdict"], "PASS") << g.dump();
    }
  }
  // RDMA: this machine has no HCA (and no rdma_rxe to make one), so the ring of verbs steps runs
  // and every pair says why; the grades SKIP, never PASS.
  ASSERT_TRUE(r.contains("rdma")) << r.dump();
  EXPECT_EQ(r["rdma"]["pairs"].size(), 3u) << r["rdma"].dump();
  EXPECT_NE(r["rdma"].value("why", "").find("n1: no RDMA device"), std::string::npos) << r["rdma"].dump();
  for (const auto& g : r["grades"])
    if (g["metric"] == "net.rdma-write-line-ratio" || g["metric"] == "net.rdma-latency-p99") {
      EXPECT_EQ(g["verdict"], "SKIP") << g.dump();
    }
  EXPECT_EQ(r["verdict"], "FAIL");
  EXPECT_TRUE(fs::exists(out / "bench" / "net.json"));
  // Every step's rendezvous directory is gone.
  EXPECT_TRUE(fs::is_empty(rdv));
  // Without the planted node nobody is blamed. The three slurmd share two cores, so one pair's TCP
  // figure swings by a third from run to run: the bar for "slow" is set under that swing here (a
  // real fabric is steadier; the planted node is 25 times slower either way).
  Proc clean = Sh(Env() + " " + CLUSTERMAX_BINARY + " bench net --backend tcp --modes pairwise --rendezvous " +
                  rdv.string() + " --out " + out.string() +
                  "-clean --seconds 1 --latency-iters 100 --slow-ratio 0.4 --json --exit-zero 2>/dev/null");
  json c = JsonFrom(clean.out);
  EXPECT_TRUE(c["pairwise"]["culprits"].empty()) << c["pairwise"].dump();
  EXPECT_EQ(c["pairwise"]["pairs"].size(), 3u);
}

TEST(SlurmFleet, NetRanksMeetThroughPmixWithoutASharedDirectory) {
  // srun --mpi=pmix: Slurm's PMIx server carries every task's address and rank 0's token. The
  // rendezvous path is a regular file, so nothing could meet there: a figure proves PMIx carried it.
  fs::path blocker = kDir / "no-rendezvous";
  { std::ofstream(blocker) << "not a directory\n"; }
  Proc p = Sh(Env() + " " + CLUSTERMAX_BINARY + " bench net --launch pmix --backend tcp --modes scaling,pairwise" +
              " --rendezvous " + (blocker / "sub").string() + " --out " + (kDir / "runs" / "net-pmix").string() +
              " --tasks-per-node 2 --max-bytes 256K --factor 16 --iters 2 --seconds 0.5 --latency-iters 100"
              " --slow-ratio 0.2 --json --exit-zero 2>" +
              (kDir / "net-pmix.stderr").string());
  ASSERT_EQ(p.code, 0) << p.out << Sh("cat " + (kDir / "net-pmix.stderr").string()).out;
  json r = JsonFrom(p.out);
  EXPECT_EQ(r["options"]["launch"], "pmix");
  // 1, 2 and 3 nodes at two tasks each: six ranks over the three slurmd, the data checked.
  ASSERT_EQ(r["scaling"]["steps"].size(), 3u) << r["scaling"].dump();
  for (const auto& st : r["scaling"]["steps"]) {
    ASSERT_TRUE(st.contains("result")) << st.dump();
    EXPECT_EQ(st["result"]["met_through"], "pmix") << st.dump();
    EXPECT_EQ(st["result"]["ranks"].get<int>(), 2 * st["nodes"].get<int>());
    for (const auto& t : st["result"]["collectives"]) EXPECT_EQ(t["wrong"], 0) << t.dump();
  }
  // Pairs: each pair is its own group inside the step's one PMIx exchange.
  ASSERT_EQ(r["pairwise"]["pairs"].size(), 3u) << r["pairwise"].dump();
  for (const auto& x : r["pairwise"]["pairs"]) {
    EXPECT_EQ(x["met_through"], "pmix") << x.dump();
    EXPECT_GT(x["gbps"].get<double>(), 0.0) << x.dump();
  }
  // A rank that fails before the exchange (no such interface) still tells the others through PMIx,
  // so the step ends with the reason instead of waiting out the fence.
  auto t0 = std::chrono::steady_clock::now();
  Proc rail = Sh(Env() + " " + CLUSTERMAX_BINARY + " bench net --launch pmix --backend tcp --modes per-rail" +
                 " --rails bogus0 --out " + (kDir / "runs" / "net-pmix-rail").string() +
                 " --max-bytes 1K --json --exit-zero 2>/dev/null");
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 60.0);
  json rr = JsonFrom(rail.out);
  ASSERT_EQ(rr["rails"]["rails"].size(), 1u) << rr.dump();
  EXPECT_NE(rr["rails"]["rails"][0].value("error", "").find("bogus0"), std::string::npos) << rr["rails"].dump();
  // Launched without PMIx, the same blocked path fails with a reason that points at --launch pmix.
  Proc f = Sh(Env() + " " + CLUSTERMAX_BINARY + " bench net --backend tcp --modes single --rank-timeout 5" +
              " --rendezvous " + (blocker / "sub").string() + " --out " + (kDir / "runs" / "net-nofs").string() +
              " --max-bytes 1K --json --exit-zero 2>&1");
  EXPECT_NE(f.out.find("--launch pmix"), std::string::npos) << f.out;
}

// Last: it kills a node.
TEST(SlurmFleet, AKilledNodeIsReportedAndTheRestKept) {
  std::ifstream pidf(kDir / "slurmd-n3.pid");
  pid_t pid = 0;
  ASSERT_TRUE(pidf >> pid);
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  fs::remove(kDir / "slurmd-n3.pid");  // a SIGKILLed slurmd leaves it; never signal a recycled PID
  auto t0 = std::chrono::steady_clock::now();
  json r = Audit("--fleet-timeout=90");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 100.0);
  ASSERT_FALSE(r["fleet"].is_null());
  EXPECT_EQ(r["fleet"]["nodes_expected"], 3);
  EXPECT_EQ(r["fleet"]["nodes_returned"], 2);
  ASSERT_EQ(r["fleet"]["unreachable"].size(), 1u);
  EXPECT_EQ(r["fleet"]["unreachable"][0]["node"], "n3");
  EXPECT_FALSE(r["fleet"]["unreachable"][0]["reason"].get<std::string>().empty());
  // Node checks say "N of M" and never PASS on a partial fleet.
  const json& ecc = Result(r, "gpu-ecc-health");
  EXPECT_NE(ecc["message"].get<std::string>().find("of 3 nodes"), std::string::npos) << ecc.dump();
  EXPECT_NE(ecc["status"], "PASS");
  EXPECT_EQ(Result(r, "worker-evidence-coverage")["status"], "WARN");
  // The saved run re-judges the same way, unreachable node included, without Slurm.
  Proc review = Sh(std::string(CLUSTERMAX_BINARY) + " audit review " + last_run.string() + " --command report");
  EXPECT_NE(review.out.find("fleet: 2 of 3 nodes returned evidence"), std::string::npos) << review.out;
  EXPECT_NE(review.out.find("no evidence from n3"), std::string::npos) << review.out;
  Proc restart = Sh(Env() + " bash " + kScript + " restart-node " + kDir.string() + " n3");
  EXPECT_EQ(restart.code, 0) << restart.out;
}

// `clustermax health` as the cluster's HealthCheckProgram: every node runs it every
// HealthCheckInterval with its own evidence (a kernel-log file and extra arguments the test plants
// under health/<node>/). A new hardware Xid in n2's log drains n2 with our reason; it is old on the
// next run, so n2 resumes. A missing required mount keeps n2 drained until it is removed. A drain
// by an administrator is never resumed.
namespace {
std::map<std::string, std::string> NodeRecord(const std::string& node) {
  Proc p = Sh("SLURM_CONF=" + (kDir / "slurm.conf").string() + " scontrol show node -o " + node);
  std::map<std::string, std::string> out;
  std::string line = p.out.substr(0, p.out.find('\n'));
  // Reason= runs to the end of the record's fields; every other value is one word.
  size_t r = line.find(" Reason=");
  if (r != std::string::npos) {
    out["Reason"] = line.substr(r + 8);
    line = line.substr(0, r);
  }
  std::istringstream in(line);
  for (std::string w; in >> w;) {
    size_t eq = w.find('=');
    if (eq != std::string::npos) out[w.substr(0, eq)] = w.substr(eq + 1);
  }
  return out;
}
// Seconds until `pred(record of node)` holds, or -1 after `limit_s`.
double WaitFor(const std::string& node, const std::function<bool(std::map<std::string, std::string>&)>& pred,
               double limit_s) {
  auto t0 = std::chrono::steady_clock::now();
  while (true) {
    auto rec = NodeRecord(node);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (pred(rec)) return secs;
    if (secs > limit_s) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}
bool Drained(std::map<std::string, std::string>& r) { return r["State"].find("DRAIN") != std::string::npos; }
bool Idle(std::map<std::string, std::string>& r) { return r["State"] == "IDLE"; }
}  // namespace

// The cluster with `clustermax health` as its HealthCheckProgram every `interval` seconds on every
// node, each node's evidence under HD/<node>/ (kern.log, and extra arguments in args); returns HD
// once every node has run it and is idle.
static void UpWithHealthCheck(int kInterval, fs::path* out) {
  fs::path hd = kDir / "health";
  *out = hd;
  fs::remove_all(hd);
  for (const char* n : {"n1", "n2", "n3"}) {
    fs::create_directories(hd / n);
    std::ofstream(hd / n / "kern.log") << "2026-12-01T10:00:00+0000 ci kernel: e1000e: eth0 NIC Link is Up\n";
  }
  // The wrapper: slurmd runs the program with a bare environment and SLURMD_NODENAME set (60 s at most).
  std::ofstream(hd / "hc.sh")
      << "#!/bin/sh\n"
         "# HealthCheckProgram of the CI cluster: clustermax health on this slurmd's evidence.\n"
         "export PATH=/usr/sbin:/usr/bin:/sbin:/bin SLURM_CONF="
      << (kDir / "slurm.conf").string()
      << "\n"
         "# 8 healthy H100s (the fake NVML), so the GPU checks judge and the Xid check applies.\n"
         "export LD_LIBRARY_PATH="
      << CLUSTERMAX_FAKE_NVML_DIR
      << " FAKE_NVML_HEALTHY=1\n"
         "d="
      << hd.string()
      << "/${SLURMD_NODENAME:?}\n"
         "exec "
      << CLUSTERMAX_BINARY
      << " health --drain --resume --node \"$SLURMD_NODENAME\" --kernel-log \"$d/kern.log\""
         " --state \"$d/state.json\" --timeout 10 $(cat \"$d/args\" 2>/dev/null) >>\"$d/out.log\" 2>&1\n";
  fs::permissions(hd / "hc.sh", fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                    fs::perms::others_read | fs::perms::others_exec);
  Up("SLURM_CI_EXTRA='HealthCheckProgram=" + (hd / "hc.sh").string() +
     "\nHealthCheckInterval=" + std::to_string(kInterval) + "\nHealthCheckNodeState=ANY'");
  // Every node has run it and is healthy.
  for (const char* n : {"n1", "n2", "n3"}) {
    for (int i = 0; i < 100 && !fs::exists(hd / n / "state.json"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    ASSERT_TRUE(fs::exists(hd / n / "state.json")) << n;
    EXPECT_GE(WaitFor(n, Idle, 15), 0) << n << ": " << NodeRecord(n)["State"];
  }
}

TEST(SlurmFleet, HealthCheckProgramDrainsAndResumes) {
  constexpr int kInterval = 5;
  fs::path hd;
  ASSERT_NO_FATAL_FAILURE(UpWithHealthCheck(kInterval, &hd));

  // A hardware Xid appears in n2's kernel log: drained with our reason within the interval.
  std::ofstream(hd / "n2" / "kern.log", std::ios::app)
      << clustermax::util::FormatRfc3339(std::chrono::system_clock::now())
      << " ci kernel: NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus.\n";
  double drain_s = WaitFor("n2", Drained, 3 * kInterval);
  std::cout << "[ health ] n2 drained " << drain_s << " s after the Xid was planted (HealthCheckInterval=" << kInterval
            << ")\n";
  ASSERT_GE(drain_s, 0) << NodeRecord("n2")["State"];
  EXPECT_LE(drain_s, kInterval + 3.0);
  std::string reason = NodeRecord("n2")["Reason"];
  EXPECT_EQ(reason.rfind("clustermax: gpu-xid-history: ", 0), 0u) << reason;
  EXPECT_NE(reason.find("Xid 79"), std::string::npos) << reason;
  EXPECT_EQ(NodeRecord("n1")["State"], "IDLE");
  EXPECT_EQ(NodeRecord("n3")["State"], "IDLE");
  // Only new errors count: the next run sees the Xid as old and resumes the node it drained.
  double resume_s = WaitFor("n2", Idle, 3 * kInterval);
  std::cout << "[ health ] n2 back to IDLE " << resume_s << " s later\n";
  EXPECT_GE(resume_s, 0) << NodeRecord("n2")["State"];

  // A persistent fault: a required mount that is missing keeps n2 drained until it is removed.
  std::ofstream(hd / "n2" / "args") << "--require-mount /clustermax-ci-absent\n";
  EXPECT_GE(WaitFor("n2", Drained, 3 * kInterval), 0);
  EXPECT_NE(NodeRecord("n2")["Reason"].find("clustermax: storage-mount-stable: "), std::string::npos)
      << NodeRecord("n2")["Reason"];
  std::this_thread::sleep_for(std::chrono::seconds(2 * kInterval));
  auto held = NodeRecord("n2");
  EXPECT_TRUE(Drained(held)) << held["State"];
  fs::remove(hd / "n2" / "args");
  double back_s = WaitFor("n2", Idle, 3 * kInterval);
  std::cout << "[ health ] n2 back to IDLE " << back_s << " s after the mount fault was removed\n";
  EXPECT_GE(back_s, 0);

  // An administrator's drain is never resumed by a healthy run.
  Sh("SLURM_CONF=" + (kDir / "slurm.conf").string() + " scontrol update NodeName=n3 State=DRAIN Reason=maintenance");
  std::this_thread::sleep_for(std::chrono::seconds(2 * kInterval + 1));
  auto n3 = NodeRecord("n3");
  EXPECT_TRUE(Drained(n3)) << n3["State"];
  EXPECT_EQ(n3["Reason"].rfind("maintenance", 0), 0u) << n3["Reason"];
  // The other tests expect the cluster without a health check, every node idle (slurmctld keeps
  // a drain across its restart).
  Sh("SLURM_CONF=" + (kDir / "slurm.conf").string() + " scontrol update NodeName=n3 State=RESUME");
  Up();
}

// bench drill on the real cluster, with `clustermax health` as its HealthCheckProgram: a synthetic
// Xid written into n2's kernel log through a job step drains n2 (time to detect), our health check
// resumes it on its next run (time in drain, time to return); a mount n2 needs, unmounted by the
// drill, drains n2 until the drill mounts it again from its fstab; a fault nobody notices fails
// the detect grade and its node is left as it was; a drained node is refused.
TEST(SlurmFleet, DrillsTimeDetectionDrainAndReturnThroughTheHealthCheck) {
  constexpr int kInterval = 5;
  fs::path hd;
  ASSERT_NO_FATAL_FAILURE(UpWithHealthCheck(kInterval, &hd));
  auto drill = [&](const std::string& args, const std::string& name) {
    fs::path out = kDir / "runs" / name;
    fs::remove_all(out);
    Proc p = Sh(Env() + " " + CLUSTERMAX_BINARY + " bench drill " + args + " --json --exit-zero --out " + out.string() +
                " 2>" + (kDir / "drill.stderr").string());
    EXPECT_EQ(p.code, 0) << p.out << Sh("cat " + (kDir / "drill.stderr").string()).out;
    json r = JsonFrom(p.out);
    std::cout << "[ drill ] " << name << ": " << r["nodes"].dump() << "\n";
    return r;
  };
  auto grade = [](const json& r, const std::string& id) {
    for (const auto& g : r["grades"])
      if (g["metric"] == id) return g;
    return json();
  };

  // Xid 79 through /dev/kmsg's stand-in: n2's kernel-log file, written by a task on n2.
  json x = drill(
      "xid --node n2 --kmsg " + (hd / "{node}" / "kern.log").string() + " --detect-timeout 60 --return-timeout 60",
      "drill-xid");
  EXPECT_EQ(x["kind"], "clustermax.bench.drill");
  ASSERT_EQ(x["nodes"].size(), 1u) << x.dump();
  const json& n2 = x["nodes"][0];
  EXPECT_EQ(n2["node"], "n2");
  ASSERT_TRUE(n2.contains("detect_s")) << n2.dump();
  // Within one HealthCheckInterval plus the check's own run (a slow 2-core machine gets room).
  EXPECT_LE(n2["detect_s"].get<double>(), kInterval + 6.0) << n2.dump();
  EXPECT_EQ(n2["detected_by"], "clustermax") << n2.dump();
  EXPECT_NE(n2["reason"].get<std::string>().find("Xid 79"), std::string::npos) << n2.dump();
  ASSERT_TRUE(n2.contains("return_s")) << n2.dump();
  EXPECT_GT(n2["return_s"].get<double>(), n2["detect_s"].get<double>());
  EXPECT_NEAR(n2["in_drain_s"].get<double>(), n2["return_s"].get<double>() - n2["detect_s"].get<double>(), 0.02);
  EXPECT_FALSE(n2.contains("resumed_by_drill")) << n2.dump();
  EXPECT_NE(
      Sh("cat " + (hd / "n2" / "kern.log").string()).out.find("Xid (PCI:0000:19:00): 79, pid=0, name=clustermax-drill"),
      std::string::npos);
  EXPECT_EQ(grade(x, "rel.drill-detect")["verdict"], "PASS") << x["grades"].dump();
  EXPECT_EQ(grade(x, "rel.drill-return")["verdict"], "PASS") << x["grades"].dump();
  EXPECT_TRUE(fs::exists(kDir / "runs" / "drill-xid" / "bench" / "drill.json"));
  EXPECT_GE(WaitFor("n2", Idle, 15), 0);

  // A mount n2 requires (its health check's --require-mount), taken away and put back from fstab.
  fs::path src = kDir / "mnt-src", mnt = kDir / "mnt-n2", fstab = kDir / "drill.fstab";
  fs::create_directories(src);
  fs::create_directories(mnt);
  std::ofstream(fstab) << "# the CI cluster's stand-in for /etc/fstab\n"
                       << src.string() << " " << mnt.string() << " none bind 0 0\n";
  Sh("umount " + mnt.string() + " 2>/dev/null");
  if (Sh("mount --fstab " + fstab.string() + " " + mnt.string()).code == 0) {
    std::ofstream(hd / "n2" / "args") << "--require-mount " << mnt.string() << "\n";
    std::this_thread::sleep_for(std::chrono::seconds(kInterval + 1));
    EXPECT_EQ(NodeRecord("n2")["State"], "IDLE") << NodeRecord("n2")["Reason"];
    json m = drill("mount --node n2 --mount " + mnt.string() + " --fstab " + fstab.string() +
                       " --detect-timeout 60 --return-timeout 60",
                   "drill-mount");
    const json& d = m["nodes"][0];
    ASSERT_TRUE(d.contains("detect_s")) << d.dump();
    EXPECT_NE(d["reason"].get<std::string>().find("storage-mount-stable"), std::string::npos) << d.dump();
    ASSERT_TRUE(d.contains("restore_s")) << d.dump();
    EXPECT_GE(d["restore_s"].get<double>(), d["detect_s"].get<double>()) << d.dump();
    EXPECT_FALSE(d.contains("restore_error")) << d.dump();
    ASSERT_TRUE(d.contains("return_s")) << d.dump();
    EXPECT_GE(d["return_s"].get<double>(), d["restore_s"].get<double>()) << d.dump();
    EXPECT_EQ(Sh("mountpoint -q " + mnt.string()).code, 0) << "the drill did not mount it again";
    EXPECT_EQ(grade(m, "rel.drill-return")["verdict"], "PASS") << m["grades"].dump();
    fs::remove(hd / "n2" / "args");
    Sh("umount " + mnt.string());
  } else {
    std::cout << "[ drill ] mount drill not run: no bind mounts here\n";
  }

  // A fault no health check looks for: not detected, FAIL, and the node untouched.
  json c = drill("command --node n3 --inject 'touch " + (kDir / "ignored-fault").string() + "' --restore 'rm -f " +
                     (kDir / "ignored-fault").string() + "' --detect-timeout 6 --return-timeout 8",
                 "drill-unnoticed");
  const json& u = c["nodes"][0];
  EXPECT_FALSE(u.contains("detect_s")) << u.dump();
  EXPECT_FALSE(fs::exists(kDir / "ignored-fault")) << "restored after --detect-timeout";
  json g = grade(c, "rel.drill-detect");
  EXPECT_EQ(g["verdict"], "FAIL") << c["grades"].dump();
  EXPECT_NE(g.dump().find("not marked bad within 6 s"), std::string::npos) << g.dump();
  EXPECT_GE(WaitFor("n3", Idle, 15), 0) << NodeRecord("n3")["State"];

  // A node out of service is never drilled (nor resumed at the end).
  Sh("SLURM_CONF=" + (kDir / "slurm.conf").string() + " scontrol update NodeName=n1 State=DRAIN Reason=maintenance");
  json refused = drill("xid --node n1 --kmsg " + (hd / "{node}" / "kern.log").string(), "drill-refused");
  EXPECT_NE(refused["nodes"][0]["error"].get<std::string>().find("not in service before"), std::string::npos)
      << refused.dump();
  EXPECT_EQ(NodeRecord("n1")["Reason"].rfind("maintenance", 0), 0u);
  Sh("SLURM_CONF=" + (kDir / "slurm.conf").string() + " scontrol update NodeName=n1 State=RESUME");
  Up();
}

// bench drill gpu on the real cluster: one GPU of n1 taken from the scheduler. A stand-in
// nvidia-smi on PATH (there is no GPU here) does what `nvidia-smi drain -m 1` does to what slurmd
// sees: n1's gres.conf line loses a device, and the drill's slurmd restart (scripts/slurm-ci.sh
// restart-node, where a site runs systemctl) makes n1 register 7 of its 8 configured GPUs.
// slurmctld itself marks n1 bad (MIXED+DRAIN+INVALID_REG: time to detect), the drill puts the GPU
// back and restarts slurmd again: the valid registration clears INVALID_REG, but Slurm 22.05 keeps
// the drain until someone resumes the node. Nothing here does, so the node is not back by
// --return-timeout, the return grade FAILs, and the drill resumes it, as it says.
TEST(SlurmFleet, AGpuTakenFromTheSchedulerIsSeenBySlurmAndPutBack) {
  fs::path bin = kDir / "gpu-drill-bin", gres = kDir / "gres.conf", saved = kDir / "gres.conf.before-drill";
  fs::path calls = kDir / "nvidia-smi.calls";
  fs::create_directories(bin);
  fs::remove(calls);
  fs::copy_file(gres, saved, fs::copy_options::overwrite_existing);
  std::string before = Sh("cat " + gres.string()).out;
  {
    std::ofstream f(bin / "nvidia-smi");
    f << "#!/bin/sh\n"
      << "echo \"$SLURMD_NODENAME $*\" >> " << calls.string() << "\n"
      << "[ \"$1 $2 $4\" = 'drain -p -m' ] || { echo \"unexpected: $*\" >&2; exit 2; }\n"
      << "if [ \"$5\" = 1 ]; then\n"
      << "  { echo AutoDetect=off; for n in n1 n2 n3; do last=7; [ \"$n\" = \"$SLURMD_NODENAME\" ] && last=6\n"
      << "      echo \"NodeName=$n Name=gpu Type=h100 File=" << (kDir / "dev").string()
      << "/nvidia[0-$last]\"; done; } > " << gres.string() << ".new && mv " << gres.string() << ".new " << gres.string()
      << "\n"
      << "else cp " << saved.string() << " " << gres.string() << "; fi\n"
      << "echo \"Successfully set GPU $3 drain state to: $5.\"\n";
  }
  fs::permissions(bin / "nvidia-smi", fs::perms::owner_all);
  fs::path out = kDir / "runs" / "drill-gpu";
  fs::remove_all(out);
  std::string restart = "bash " + kScript + " restart-node " + kDir.string() + " {node} </dev/null >/dev/null 2>&1";
  Proc p = Sh(Env() + " PATH=" + bin.string() + ":$PATH " + CLUSTERMAX_BINARY +
              " bench drill gpu --node n1 --pci 0000:19:00.0 --slurmd-restart '" + restart +
              "' --detect-timeout 60 --return-timeout 15 --json --exit-zero --out " + out.string() + " 2>" +
              (kDir / "drill.stderr").string());
  EXPECT_EQ(p.code, 0) << p.out << Sh("cat " + (kDir / "drill.stderr").string()).out;
  json r = JsonFrom(p.out);
  std::cout << "[ drill ] gpu: " << r["nodes"].dump() << "\n";
  ASSERT_EQ(r["nodes"].size(), 1u) << r.dump();
  const json& n1 = r["nodes"][0];
  EXPECT_EQ(r["drill"]["pci"], "0000:19:00.0");
  ASSERT_TRUE(n1.contains("detect_s")) << n1.dump();
  EXPECT_LE(n1["detect_s"].get<double>(), 30.0) << n1.dump();
  EXPECT_EQ(n1["detected_by"], "Slurm") << n1.dump();
  EXPECT_NE(n1["reason"].get<std::string>().find("gres/gpu count reported lower than configured (7 < 8)"),
            std::string::npos)
      << n1.dump();
  EXPECT_FALSE(n1.contains("restore_error")) << n1.dump();
  ASSERT_TRUE(n1.contains("restore_s")) << n1.dump();
  EXPECT_GE(n1["restore_s"].get<double>(), n1["detect_s"].get<double>()) << n1.dump();
  EXPECT_FALSE(n1.contains("return_s")) << n1.dump();
  EXPECT_EQ(n1["resumed_by_drill"], true) << n1.dump();
  bool invalid_seen = false;
  for (const auto& st : n1["states"]) invalid_seen |= st[1].get<std::string>().find("INVAL") != std::string::npos;
  EXPECT_TRUE(invalid_seen) << n1["states"].dump();
  EXPECT_EQ(Sh("cat " + calls.string()).out, "n1 drain -p 0000:19:00.0 -m 1\nn1 drain -p 0000:19:00.0 -m 0\n");
  EXPECT_EQ(Sh("cat " + gres.string()).out, before);
  for (const auto& g : r["grades"]) {
    if (g["metric"] == "rel.drill-detect") {
      EXPECT_EQ(g["verdict"], "PASS") << g.dump();
    }
    if (g["metric"] == "rel.drill-return") {
      EXPECT_EQ(g["verdict"], "FAIL") << g.dump();
      EXPECT_NE(g.dump().find("the drill resumed it"), std::string::npos) << g.dump();
    }
  }
  EXPECT_GE(WaitFor("n1", Idle, 20), 0) << NodeRecord("n1")["State"];
  EXPECT_NE(NodeRecord("n1")["Gres"].find("gpu:h100:8"), std::string::npos) << NodeRecord("n1")["Gres"];
  if (::testing::Test::HasFailure()) {
    fs::copy_file(saved, gres, fs::copy_options::overwrite_existing);
    Up();
  }
}

// bench history on the real cluster with accounting (slurmdbd and MariaDB from Debian,
// scripts/slurm-ci-accounting.sh): a job on n3 whose slurmd dies ends NODE_FAIL, n2 is drained for
// a GPU fault and resumed; the report finds both node events with their causes, the job killed by
// n3's failure matched to it, and node-hours lost.
TEST(SlurmFleet, HistoryReadsNodeEventsAndJobsFromARealSlurmdbd) {
  const std::string acct = "bash " + std::string(CLUSTERMAX_SOURCE_DIR) + "/scripts/slurm-ci-accounting.sh ";
  // A fresh accounting database: only what this test does is in it.
  Sh(acct + "down " + kDir.string());
  fs::remove_all(kDir / "mysql");
  fs::remove(kDir / "slurmdbd.conf");
  Proc a = Sh(acct + "up " + kDir.string() + " 2>" + (kDir / "accounting.log").string());
  ASSERT_EQ(a.code, 0) << a.out << Sh("cat " + (kDir / "accounting.log").string()).out;
  // GPUs in the jobs' records (AccountingStorageTRES), as GPU sites configure it.
  Up("SLURM_CI_EXTRA='" + a.out + "\nAccountingStorageTRES=gres/gpu'");
  const std::string conf = "SLURM_CONF=" + (kDir / "slurm.conf").string() + " ";
  // slurmctld registered with slurmdbd.
  for (int i = 0; i < 100 && Sh(conf + "sacctmgr -n -P show cluster format=ControlHost").out.find_first_not_of(" \n") ==
                                 std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  // n2 drained for a GPU fault for a few seconds.
  Sh(conf +
     "scontrol update NodeName=n2 State=DRAIN Reason='clustermax: gpu-xid-history: Xid 79 x1: GPU has fallen "
     "off the bus'");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  Sh(conf + "scontrol update NodeName=n2 State=RESUME");
  // A job on n3, whose slurmd is killed: n3 goes DOWN (SlurmdTimeout=10), the job NODE_FAIL.
  Proc sb = Sh(conf + "sbatch --parsable --no-requeue -N1 -w n3 --gres=gpu:2 --output=/dev/null --wrap='sleep 600'");
  ASSERT_EQ(sb.code, 0) << sb.out;
  std::string job = sb.out.substr(0, sb.out.find_first_of(";\n"));
  ASSERT_GE(WaitFor(
                "n3",
                [](auto& r) {
                  return r["State"].find("ALLOC") != std::string::npos || r["State"].find("MIXED") != std::string::npos;
                },
                30),
            0);
  {
    std::ifstream pidf(kDir / "slurmd-n3.pid");
    pid_t pid = 0;
    ASSERT_TRUE(pidf >> pid);
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    fs::remove(kDir / "slurmd-n3.pid");
  }
  double down_s = WaitFor(
      "n3", [](auto& r) { return r["State"].find("DOWN") != std::string::npos; }, 90);
  ASSERT_GE(down_s, 0) << NodeRecord("n3")["State"];
  std::string state;
  for (int i = 0; i < 150 && state != "NODE_FAIL"; ++i) {
    state = std::string(clustermax::util::Trim(Sh(conf + "sacct -n -X -P -j " + job + " -o State").out));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(state, "NODE_FAIL");
  // Read while n3 is still down: its event is open (TimeEnd Unknown) and lasts until now.
  for (int i = 0; i < 150 && Sh(conf + "sacctmgr -n -P show event Event=Node Nodes=n3 format=State").out.find("DOWN") ==
                                 std::string::npos;
       ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  fs::path out = kDir / "runs" / "history";
  fs::remove_all(out);
  Proc p = Sh(Env() + " " + CLUSTERMAX_BINARY + " bench history --days 1 --json --exit-zero --out " + out.string());
  ASSERT_EQ(p.code, 0) << p.out;
  json r = JsonFrom(p.out);
  std::cout << "[ history ] " << r["node_hours"].dump() << " " << r["causes"].dump() << " " << r["jobs"].dump() << "\n";
  EXPECT_EQ(r["kind"], "clustermax.bench.history");
  EXPECT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["window"]["nodes"], 3);
  std::map<std::string, std::string> cause_of;
  for (const auto& e : r["events"]) cause_of[e["node"].get<std::string>()] = e["cause"];
  EXPECT_EQ(cause_of["n2"], "gpu") << r["events"].dump();
  EXPECT_EQ(cause_of["n3"], "host") << r["events"].dump();
  EXPECT_GE(r["failures"].get<int>(), 2);
  EXPECT_GT(r["node_hours"]["lost_unplanned"].get<double>(), 0);
  EXPECT_LT(r["availability"].get<double>(), 1.0);
  EXPECT_EQ(r["jobs"]["node_fail"], 1) << r["jobs"].dump();
  EXPECT_GT(r["jobs"]["gpu_hours_lost_to_node_failure"].get<double>(), 0) << r["jobs"].dump();
  ASSERT_EQ(r["interruptions"].size(), 1u) << r.dump();
  EXPECT_EQ(r["interruptions"][0]["job"], job);
  EXPECT_EQ(r["interruptions"][0]["node"], "n3");
  EXPECT_EQ(r["interruptions"][0]["cause"], "host");
  EXPECT_EQ(r["grades"].size(), 3u);
  // The same outages from slurmctld's own log (a cluster without accounting, or purged events);
  // the jobs still from sacct.
  std::string ctld_log = (kDir / "slurmctld.log").string();
  fs::path out_log = kDir / "runs" / "history-log";
  fs::remove_all(out_log);
  Proc pl = Sh(Env() + " " + CLUSTERMAX_BINARY + " bench history --days 1 --json --exit-zero --slurmctld-log " +
               ctld_log + " --out " + out_log.string());
  ASSERT_EQ(pl.code, 0) << pl.out;
  json rl = JsonFrom(pl.out);
  EXPECT_EQ(rl["sources"]["events"], "slurmctld log " + ctld_log);
  EXPECT_FALSE(rl.contains("events_error")) << rl.dump();
  bool n2_gpu = false, n3_open_host = false;
  for (const auto& e : rl["events"]) {
    if (e["node"] == "n2" && e["cause"] == "gpu") n2_gpu = true;
    if (e["node"] == "n3" && e["cause"] == "host" && e.value("open", false)) n3_open_host = true;
  }
  EXPECT_TRUE(n2_gpu) << rl["events"].dump();
  EXPECT_TRUE(n3_open_host) << rl["events"].dump();
  EXPECT_EQ(rl["jobs"]["node_fail"], 1) << rl["jobs"].dump();
  EXPECT_GT(rl["slurmctld_log"]["lines"].get<int>(), 0);
  // Record what this real slurmdbd printed, for the parser tests (tests/fixtures/reliability).
  if (const char* rec = std::getenv("CLUSTERMAX_RECORD_HISTORY")) {
    Sh("env SLURM_TIME_FORMAT=%s " + conf +
       "sacctmgr -P show event Start=now-24hours End=now Event=Node Format=NodeName,Start,End,State,Reason,User >" +
       std::string(rec) + "/sacctmgr-event-ci-2205.txt");
    Sh("env SLURM_TIME_FORMAT=%s " + conf +
       "sacct -a -X -P -S now-24hours -E now -o JobIDRaw,State,ExitCode,Start,End,NNodes,NodeList,AllocTRES >" +
       std::string(rec) + "/sacct-P-ci-2205.txt");
    Sh("grep -E 'update_node|drain_nodes|not responding|returned to service|on failed node|failure of node' " +
       ctld_log + " >" + std::string(rec) + "/slurmctld-ci-2205.log");
  }
  Sh(conf + "scancel " + job);
  Sh(Env() + " bash " + kScript + " restart-node " + kDir.string() + " n3");
  Sh(conf + "scontrol update NodeName=n3 State=RESUME");
  EXPECT_GE(WaitFor("n3", Idle, 30), 0) << NodeRecord("n3")["State"];
  Sh(acct + "down " + kDir.string());
  Up();
  // Without accounting sacctmgr fails: slurmctld's log (SlurmctldLogFile, readable here) is read
  // instead, and the result says so.
  fs::remove_all(out_log);
  Proc pn =
      Sh(Env() + " " + CLUSTERMAX_BINARY + " bench history --days 1 --json --exit-zero --out " + out_log.string());
  ASSERT_EQ(pn.code, 0) << pn.out;
  json rn = JsonFrom(pn.out);
  EXPECT_EQ(rn["sources"]["events"], "slurmctld log " + ctld_log) << rn.dump();
  EXPECT_NE(rn["problems"].dump().find("node events from slurmctld's log"), std::string::npos) << rn.dump();
  EXPECT_FALSE(rn.contains("events_error")) << rn.dump();
  EXPECT_GE(rn["events"].size(), 2u) << rn.dump();

  // The nodes' Xid history through one job step (--xid): n3's kernel log holds an Xid 79 at each
  // of its outages, n1's only an application Xid, n2's log is missing. n3's DOWN ("Not
  // responding", a host cause by its reason) is put down to the Xid; n2's drain keeps its own cause.
  fs::path xd = kDir / "xid";
  fs::remove_all(xd);
  for (const char* n : {"n1", "n3"}) fs::create_directories(xd / n);
  std::string today = clustermax::util::FormatRfc3339(std::chrono::system_clock::now());
  // One Xid 79 at the start of each of n3's "Not responding" outages the log gave above: the Xid's
  // UTC day is then the outage's, whenever the test runs (a fixed time failed across midnight).
  int n3_lines = 0;
  {
    std::ofstream k(xd / "n3" / "kern.log");
    for (const auto& e : rn["events"])
      if (e["node"] == "n3" && e.value("reason", "").find("ot responding") != std::string::npos) {
        k << e["start"].get<std::string>()
          << " n3 kernel: NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus.\n";
        ++n3_lines;
      }
  }
  ASSERT_GE(n3_lines, 1) << rn["events"].dump();
  std::ofstream(xd / "n1" / "kern.log") << today
                                        << " n1 kernel: NVRM: Xid (PCI:0000:19:00): 13, pid=4242, Graphics "
                                           "Exception: ESR 0x504648=0x10000\n";
  fs::remove_all(out_log);
  Proc px = Sh(Env() + " " + CLUSTERMAX_BINARY + " bench history --days 1 --xid --kernel-log " +
               (xd / "{node}" / "kern.log").string() + " --json --exit-zero --out " + out_log.string() + " 2>" +
               (kDir / "history.stderr").string());
  ASSERT_EQ(px.code, 0) << px.out << Sh("cat " + (kDir / "history.stderr").string()).out;
  json rx = JsonFrom(px.out);
  const json& xh = rx["xid_history"];
  std::cout << "[ history ] xid: " << xh.dump() << "\n";
  EXPECT_EQ(xh["nodes_read"], 2) << xh.dump();
  EXPECT_EQ(xh["nodes_unread"], 1) << xh.dump();
  EXPECT_EQ(xh["unread"][0]["node"], "n2") << xh.dump();
  EXPECT_EQ(xh["events"], n3_lines + 1) << xh.dump();
  EXPECT_EQ(xh["hardware_events"], n3_lines) << xh.dump();
  EXPECT_EQ(xh["worst_nodes"][0]["node"], "n3") << xh.dump();
  EXPECT_GE(xh["outages_attributed"].get<int>(), 1) << xh.dump();
  bool n3_gpu = false;
  for (const auto& e : rx["events"]) {
    if (e["node"] == "n3" && e.value("reason", "").find("ot responding") != std::string::npos) {
      EXPECT_EQ(e["cause"], "gpu") << e.dump();
      EXPECT_EQ(e.value("xid", "").rfind("Xid 79 on ", 0), 0u) << e.dump();
      n3_gpu = true;
    }
    if (e["node"] == "n1" || e["node"] == "n2") {
      EXPECT_FALSE(e.contains("xid")) << e.dump();
    }
  }
  EXPECT_TRUE(n3_gpu) << rx["events"].dump();
}

// clustermax burnin on the real cluster with the CPU backend: every node runs the same load; n3's
// slurmd is killed mid-run: n3 is reported lost, n1 and n2 finish, agree bit for bit, and the
// lost-node grade FAILs naming n3.
TEST(SlurmFleet, BurnInKeepsGoingWhenANodeDiesAndComparesTheRest) {
  fs::path out = kDir / "runs" / "burnin";
  fs::remove_all(out);
  // "n3 dies": its slurmd, and the burn-in task it runs with the task's slurmstepd (all three
  // slurmd share this host: n3's task is the one whose environment names n3).
  std::thread killer([] {
    std::this_thread::sleep_for(std::chrono::seconds(8));
    std::ifstream pidf(kDir / "slurmd-n3.pid");
    pid_t pid = 0;
    if (pidf >> pid) ::kill(pid, SIGKILL);
    fs::remove(kDir / "slurmd-n3.pid");
    for (const auto& e : fs::directory_iterator("/proc")) {
      std::string name = e.path().filename();
      if (name.find_first_not_of("0123456789") != std::string::npos) continue;
      std::ifstream cmd(e.path() / "cmdline"), env(e.path() / "environ");
      std::string c((std::istreambuf_iterator<char>(cmd)), {}), v((std::istreambuf_iterator<char>(env)), {});
      if (c.find("burnin") == std::string::npos || c.find("--rank-job") == std::string::npos) continue;
      if (v.find(std::string("SLURMD_NODENAME=n3") + '\0') == std::string::npos) continue;
      std::ifstream st(e.path() / "stat");
      std::string stat((std::istreambuf_iterator<char>(st)), {});
      pid_t task = std::stoi(name), parent = 0;
      std::istringstream in(stat.substr(stat.rfind(')') + 2));
      std::string state;
      in >> state >> parent;
      ::kill(task, SIGKILL);
      if (parent > 1) ::kill(parent, SIGKILL);
    }
  });
  Proc p = Sh(Env() + " " + CLUSTERMAX_BINARY +
              " burnin --duration 20 --matrix-n 64 --mem-mb 8 --threads 1 --json --exit-zero --out " + out.string() +
              " 2>" + (kDir / "burnin.stderr").string());
  killer.join();
  EXPECT_EQ(p.code, 0) << p.out << Sh("cat " + (kDir / "burnin.stderr").string()).out;
  json r = JsonFrom(p.out);
  const json& s = r["summary"];
  std::cout << "[ burnin ] " << s["fleet"].dump() << " lost " << s["lost"].dump() << " sdc " << s["sdc"].dump() << "\n";
  EXPECT_EQ(r["kind"], "clustermax.bench.burnin");
  ASSERT_EQ(s["lost"].size(), 1u) << s.dump();
  EXPECT_EQ(s["lost"][0]["node"], "n3");
  EXPECT_TRUE(s["sdc"].empty()) << s.dump();
  EXPECT_EQ(s["sdc_vote"], "majority");
  int completed = 0;
  for (const auto& n : s["nodes"])
    if (n["completed"] == true) ++completed;
  EXPECT_EQ(completed, 2) << s["nodes"].dump();
  for (const auto& g : r["grades"]) {
    if (g["metric"] == "burnin.lost-nodes") {
      EXPECT_EQ(g["verdict"], "FAIL");
      EXPECT_NE(g.dump().find("n3"), std::string::npos) << g.dump();
    }
    if (g["metric"] == "burnin.sdc") EXPECT_EQ(g["verdict"], "PASS") << g.dump();
    if (g["metric"] == "burnin.completed") EXPECT_EQ(g["verdict"], "PASS") << g.dump();
  }
  EXPECT_NE(Sh("cat " + (kDir / "burnin.stderr").string()).out.find("ETA"), std::string::npos);

  // Ctrl-C a minute's burn-in after a few seconds: the tasks stop and send what they ran, and
  // the part run is not taken for the whole (burnin.completed FAILs), nor a node for lost.
  fs::path cut = kDir / "runs" / "burnin-cut";
  fs::remove_all(cut);
  auto t0 = std::chrono::steady_clock::now();
  Proc c = Sh(Env() + " timeout -s INT 10 " + CLUSTERMAX_BINARY +
              " burnin --nodelist n1,n2 --duration 60 --matrix-n 64 --mem-mb 8 --threads 1 --json --exit-zero --out " +
              cut.string() + " 2>" + (kDir / "burnin-cut.stderr").string());
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 45) << "a cancelled burn-in stops, it does not run out its duration";
  json cr = JsonFrom(c.out);
  ASSERT_TRUE(cr.is_object()) << c.out << Sh("cat " + (kDir / "burnin-cut.stderr").string()).out;
  EXPECT_EQ(cr["interrupted"], true) << cr.dump();
  EXPECT_TRUE(cr["summary"]["lost"].empty()) << cr["summary"].dump();
  bool graded = false;
  for (const auto& g : cr["grades"])
    if (g["metric"] == "burnin.completed") {
      graded = true;
      EXPECT_EQ(g["verdict"], "FAIL") << g.dump();
      EXPECT_NE(g.dump().find("the run was interrupted"), std::string::npos) << g.dump();
    }
  EXPECT_TRUE(graded) << cr["grades"].dump();
  Proc restart = Sh(Env() + " bash " + kScript + " restart-node " + kDir.string() + " n3");
  EXPECT_EQ(restart.code, 0) << restart.out;
  Sh("SLURM_CONF=" + (kDir / "slurm.conf").string() + " scontrol update NodeName=n3 State=RESUME");
  EXPECT_GE(WaitFor("n3", Idle, 30), 0) << NodeRecord("n3")["State"];
}

// bench lifecycle on the real cluster: jobs submitted until RUNNING, an allocation of the three
// nodes with their GPUs (GRES), srun launching inside it on 1, 2 and 3 nodes, `import torch` from
// Debian's python3-torch on every node cold and warm, a model directory read into memory, and n2
// rebooted through the cluster's RebootProgram (scripts/slurm-ci-reboot.sh restarts its slurmd)
// until schedulable again.
TEST(SlurmFleet, LifecycleTimesJobsLaunchesImportsAModelLoadAndAReboot) {
  if (Sh("/usr/bin/python3 -c 'import torch'").code != 0) GTEST_SKIP() << "no python3-torch (scripts/install-deps.sh)";
  fs::path model = kDir / "model";
  fs::remove_all(model);
  fs::create_directories(model);
  {
    std::ofstream w(model / "model.safetensors", std::ios::binary);
    std::string chunk(1 << 20, 'm');
    for (int i = 0; i < 48; ++i) w << chunk;
    std::ofstream(model / "config.json") << "{}";
  }
  auto boot_before = NodeRecord("n2")["BootTime"];
  fs::path out = kDir / "runs" / "lifecycle";
  fs::remove_all(out);
  Proc p = Sh(Env() + " " + CLUSTERMAX_BINARY + " bench lifecycle --python /usr/bin/python3 --repeat 2 --warm-runs 2" +
              " --model-path " + model.string() + " --reboot n2 --reboot-timeout 120 --json --exit-zero --out " +
              out.string() + " 2>" + (kDir / "lifecycle.stderr").string());
  ASSERT_EQ(p.code, 0) << p.out << Sh("cat " + (kDir / "lifecycle.stderr").string()).out;
  json r = JsonFrom(p.out);
  std::cout << "[ lifecycle ] " << r["job_start"].dump() << "\n[ lifecycle ] " << r["launch"].dump()
            << "\n[ lifecycle ] " << r["reboot"].dump() << "\n";
  EXPECT_EQ(r["kind"], "clustermax.bench.lifecycle");
  ASSERT_EQ(r["job_start"]["samples"].size(), 2u) << r["job_start"].dump();
  EXPECT_GT(r["job_start"]["median_s"].get<double>(), 0);
  EXPECT_EQ(r["alloc"]["nodes"], 3);
  EXPECT_EQ(r["alloc"]["gpus_per_node"], 8);
  EXPECT_EQ(r["alloc"]["gpus_seen"], 8) << r["alloc"].dump();
  ASSERT_EQ(r["launch"].size(), 3u) << r["launch"].dump();
  for (int k = 1; k <= 3; ++k) {
    const json& l = r["launch"][k - 1];
    EXPECT_EQ(l["nodes"], k);
    EXPECT_FALSE(l.contains("error")) << l.dump();
    EXPECT_EQ(l["samples"].size(), 2u);
    EXPECT_GT(l["median_s"].get<double>(), 0);
  }
  for (const char* n : {"n1", "n2", "n3"}) {
    const json& node = r["nodes"][n];
    ASSERT_EQ(node["imports"].size(), 1u) << r["nodes"].dump();
    const json& imp = node["imports"][0];
    EXPECT_EQ(imp["package"], "torch");
    EXPECT_FALSE(imp.contains("error")) << imp.dump();
    EXPECT_GT(imp["cold_s"].get<double>(), imp["interpreter_s"].get<double>()) << imp.dump();
    EXPECT_GT(imp["dropped_files"].get<int>(), 100) << imp.dump();
    EXPECT_EQ(node["model"]["bytes"].get<uint64_t>(), (48u << 20) + 2) << node["model"].dump();
    EXPECT_GT(node["model"]["cold_gbps"].get<double>(), 0);
  }
  ASSERT_EQ(r["reboot"].size(), 1u);
  const json& b = r["reboot"][0];
  EXPECT_EQ(b["node"], "n2");
  EXPECT_FALSE(b.contains("error")) << b.dump();
  EXPECT_GT(b["back_s"].get<double>(), b["issued_s"].get<double>()) << b.dump();
  EXPECT_NE(b["boot_time_after"], b["boot_time_before"]) << b.dump();
  // slurmd derives BootTime from the uptime: it may read a second later than the test saw.
  auto boot_s = [](const std::string& t) {
    auto p = clustermax::util::ParseRfc3339(t + "Z");
    return p ? std::chrono::duration<double>(p->time_since_epoch()).count() : -1e9;
  };
  EXPECT_NEAR(boot_s(b["boot_time_before"].get<std::string>()), boot_s(boot_before), 1.0);
  std::set<std::string> graded;
  for (const auto& g : r["grades"])
    if (g["verdict"] != "SKIP") graded.insert(g["metric"].get<std::string>());
  for (const char* id :
       {"life.job-start", "life.alloc-gpus", "life.srun-launch", "life.import-cold", "life.model-load", "life.reboot"})
    EXPECT_TRUE(graded.count(id)) << id << " " << r["grades"].dump();
  EXPECT_TRUE(fs::exists(out / "bench" / "lifecycle.json"));
  // Nothing is left behind: no job of ours, every node schedulable.
  EXPECT_EQ(Sh(Env() + " squeue -h -n clustermax-lifecycle").out, "");
  EXPECT_EQ(Sh(Env() + " sinfo -h -o '%D %t'").out, "3 idle\n");
}

// bench train on the real cluster: the built-in transformer on Debian's PyTorch (CPU), one task per
// node over gloo, read as it runs. With --deterministic every rank trains on the same batches, so
// their exact losses agree; a node given a different learning rate (as a node computing
// differently would) is named. A run that stops making progress is stopped by the watchdog.
TEST(SlurmFleet, TrainRunsTheBuiltinTransformerAndNamesANodeComputingDifferently) {
  if (Sh("/usr/bin/python3 -c 'import torch'").code != 0) GTEST_SKIP() << "no python3-torch (scripts/install-deps.sh)";
  auto train = [&](const std::string& name, const std::string& args, Proc* proc = nullptr) {
    fs::path out = kDir / "runs" / ("train-" + name);
    fs::remove_all(out);
    Proc p = Sh(Env() + " " + CLUSTERMAX_BINARY + " bench train --python /usr/bin/python3 --json --exit-zero --out " +
                out.string() + " " + args + " 2>" + (kDir / ("train-" + name + ".stderr")).string());
    if (proc) *proc = p;
    EXPECT_EQ(p.code, 0) << p.out << Sh("cat " + (kDir / ("train-" + name + ".stderr")).string()).out;
    return JsonFrom(p.out);
  };
  auto grade = [](const json& r, const std::string& id) {
    for (const auto& g : r["grades"])
      if (g["metric"] == id) return g;
    return json::object();
  };
  json r = train("same", "--recipe builtin-tiny --steps 8 --warmup 2 --deterministic");
  const json& s = r["summary"];
  std::cout << "[ train ] " << s.dump() << "\n";
  EXPECT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["options"]["nodes"], 3);
  EXPECT_EQ(r["options"]["tasks_per_node"], 1);
  EXPECT_EQ(r["rank_nodes"], json({{"0", "n1"}, {"1", "n2"}, {"2", "n3"}}));
  EXPECT_EQ(s["steps_logged"], 8);
  EXPECT_EQ(s["ranks_logged"], 3);
  EXPECT_EQ(s["loss_decreased"], true) << s["loss_curve"].dump();
  EXPECT_GT(s["tokens_per_s_per_gpu"].get<double>(), 0);
  // MFU is the model's TFLOP/s over the ranks' measured fp32 matmul peak.
  EXPECT_EQ(s["measured_matmul_tflops"]["ranks"], 3);
  // Both figures are rounded in the result: equal to a few parts in ten thousand.
  EXPECT_NEAR(s["mfu"].get<double>(), s["tflops_per_gpu"].get<double>() / s["peak_tflops"].get<double>(),
              1e-3 * s["mfu"].get<double>());
  EXPECT_EQ(s["determinism"]["steps_compared"], 8);
  EXPECT_TRUE(s["determinism"]["differing"].empty()) << s["determinism"].dump();
  EXPECT_EQ(grade(r, "train.determinism")["verdict"], "PASS");
  EXPECT_EQ(grade(r, "train.completed")["verdict"], "PASS");
  EXPECT_NE(grade(r, "train.rank-spread")["verdict"], "SKIP");

  // n2 trains with another learning rate: its parameters, and from step 2 its losses, differ.
  json recipes = json::parse(Sh("cat " + std::string(CLUSTERMAX_SOURCE_DIR) + "/data/train/recipes.json").out);
  json tiny = recipes["recipes"][0];
  json cmd = {"/bin/sh", "-c", "if [ \"$SLURMD_NODENAME\" = n2 ]; then exec \"$@\" --lr 0.05; fi; exec \"$@\"", "sh"};
  for (const auto& a : tiny["command"]) cmd.push_back(a);
  tiny["name"] = "tiny-n2-differs";
  tiny["command"] = cmd;
  std::ofstream(kDir / "recipe-n2.json") << tiny.dump();
  json d = train("n2", "--recipe-file " + (kDir / "recipe-n2.json").string() + " --steps 6 --warmup 1 --deterministic");
  const json& diff = d["summary"]["determinism"]["differing"];
  ASSERT_EQ(diff.size(), 1u) << d["summary"].dump();
  EXPECT_EQ(diff[0]["node"], "n2");
  EXPECT_EQ(diff[0]["rank"], 1);
  EXPECT_GE(diff[0]["first_step"].get<int>(), 2);
  EXPECT_EQ(grade(d, "train.determinism")["verdict"], "FAIL");

  // A run that logs one step and then hangs: stopped by the watchdog, with the job gone.
  json hang = {
      {"name", "hang"},
      {"device", "cpu"},
      {"command",
       {"/bin/sh", "-c",
        "echo 'CMAX-TRAIN {\"event\":\"step\",\"rank\":0,\"step\":1,\"loss\":1.0,\"step_s\":0.1,\"tokens\":1}'; "
        "exec sleep 300"}}};
  std::ofstream(kDir / "recipe-hang.json") << hang.dump();
  auto t0 = std::chrono::steady_clock::now();
  json h = train("hang",
                 "--recipe-file " + (kDir / "recipe-hang.json").string() + " --steps 5 --warmup 0 --stall-timeout 3");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 60);
  EXPECT_NE(h.value("error", "").find("no progress for 3 s after step 1"), std::string::npos) << h.dump();
  EXPECT_EQ(grade(h, "train.completed")["verdict"], "FAIL");
  for (int i = 0; i < 50 && !Sh(Env() + " squeue -h -n clustermax-train").out.empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(Sh(Env() + " squeue -h -n clustermax-train").out, "");
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new SlurmCluster);
  return RUN_ALL_TESTS();
}
