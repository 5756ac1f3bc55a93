// End to end: replaying a recorded bundle, golden reports at each verbosity, the binary's exit
// codes, a hung nvidia-smi, and review reproducing a live run.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

#include <fmt/format.h>

#include "audit/engine.h"
#include "audit/slurm_fanout.h"
#include "util/line_frames.h"
#include "checks/register.h"
#include "fault_host.h"
#include "host/local_host.h"
#include "audit/render.h"
#include "testutil.h"
#include "util/files.h"

using namespace clustermax;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

audit::Report ReplayFixture(const std::string& bundle, int* misses = nullptr) {
  host::Bundle b = host::Bundle::Load(clustermax::testing::Fixture("bundles/" + bundle));
  audit::Selection sel;
  sel.target = core::TargetFromString(b.manifest.target).value_or(core::Target::kStandalone);
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), sel);
  auto node = audit::ReplayNode(b, plan, {});
  if (misses) *misses = static_cast<int>(node.replay_misses.size());
  auto r = audit::Judge(plan, {node}, core::EmbeddedMinimumTable());
  r.mode = "replay";
  return r;
}

void CompareGolden(const std::string& name, const std::string& actual) {
  fs::path p = clustermax::testing::SourceDir() / "tests" / "golden" / name;
  if (std::getenv("CLUSTERMAX_UPDATE_GOLDEN")) {
    util::WriteFileAtomic(p, actual);
    return;
  }
  auto expected = util::ReadLocalFile(p);
  ASSERT_TRUE(expected) << "missing golden " << p << " (regenerate with CLUSTERMAX_UPDATE_GOLDEN=1)";
  EXPECT_EQ(*expected, actual) << "golden " << name
                               << " differs (regenerate with CLUSTERMAX_UPDATE_GOLDEN=1 if intended)";
}

using Proc = clustermax::testing::Shell;

// Runs the built binary through the shell; stderr is folded into out.
Proc RunCli(const std::string& args, const std::string& env = "") {
  return clustermax::testing::RunShell(env + " " + CLUSTERMAX_BINARY + " " + args + " 2>&1 </dev/null");
}

// The JSON document in a CLI output that also carries stderr lines.
json JsonFrom(const std::string& out) {
  size_t b = out.find('{'), e = out.rfind('}');
  return json::parse(out.substr(b, e - b + 1));
}

fs::path TempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("cm-e2e-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(Engine, FixtureReplaysCompletelyAndDeterministically) {
  int misses = -1;
  auto a = ReplayFixture("debian12-container-cpu.json", &misses);
  auto b = ReplayFixture("debian12-container-cpu.json");
  EXPECT_EQ(misses, 0) << "the fixture bundle lacks evidence the collectors now ask for: re-record it";
  EXPECT_EQ(audit::ToJson(a).dump(), audit::ToJson(b).dump());
  EXPECT_GE(a.results.size(), 15u);
  EXPECT_EQ(
      a.collected_at,
      host::Bundle::Load(clustermax::testing::Fixture("bundles/debian12-container-cpu.json")).manifest.started_at);
}

TEST(Engine, GoldenReports) {
  auto r = ReplayFixture("debian12-container-cpu.json");
  r.git_sha = "golden";  // the build's commit is not part of the report's content
  CompareGolden("debian12-container-cpu.json", audit::ToJson(r).dump(2) + "\n");
  for (int v = 0; v <= 3; ++v) {
    CompareGolden("debian12-container-cpu.v" + std::to_string(v) + ".txt",
                  audit::RenderText(r, {.verbosity = v, .color = false}));
  }
  // Colour only changes the tags.
  std::string colored = audit::RenderText(r, {.verbosity = 0, .color = true});
  EXPECT_NE(colored.find("\x1b[31mFAIL"), std::string::npos);
}

TEST(Engine, FleetRollUpNamesTheOddNode) {
  host::Bundle b1 = host::Bundle::Load(clustermax::testing::Fixture("bundles/debian12-container-cpu.json"));
  host::Bundle b2 = host::Bundle::Load(clustermax::testing::Fixture("bundles/debian12-container-cpu.json"));
  b2.manifest.hostname = "node-2";
  b2.PutFile("/proc/sys/kernel/perf_event_paranoid", {host::IoStatus::kOk, "4\n", false, ""});
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(),
                                      {.target = core::Target::kStandalone, .checks = {"perf-access-paranoid"}});
  auto r = audit::Judge(plan, {audit::ReplayNode(b1, plan, {}), audit::ReplayNode(b2, plan, {})},
                        core::EmbeddedMinimumTable());
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].finding.verdict, core::Verdict::kFail);
  EXPECT_EQ(r.results[0].finding.message.rfind("1 of 2 nodes FAIL", 0), 0u) << r.results[0].finding.message;
  ASSERT_EQ(r.results[0].finding.details.size(), 1u);
  EXPECT_EQ(r.results[0].finding.details[0].rfind("node-2:", 0), 0u);
}

TEST(Engine, ActiveProbesAreSkippedUnlessRequested) {
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), {.target = core::Target::kStandalone});
  for (const auto& pc : plan.checks) {
    if (pc.check->info.probe_required && pc.state != audit::PlanState::kNotInScope) {  // out of scope wins
      EXPECT_EQ(pc.state, audit::PlanState::kProbeDisabled) << pc.check->info.id;
    }
  }
  for (const auto& id : plan.collectors) {
    const auto* c = collect::FindCollector(id);
    ASSERT_NE(c, nullptr);
    if (!c->info.probe.empty()) {
      // Planned only for optional refinement; the collector must not touch the host.
      host::Bundle empty;
      host::ReplayHost h(empty);
      auto ev = collect::CollectEvidence(h, {id}, {});
      EXPECT_EQ(ev[id].status, core::EvidenceStatus::kProbeDisabled);
      EXPECT_TRUE(h.misses().empty()) << id << " touched the host without its probe";
    }
  }
  audit::Plan active = audit::BuildPlan(checks::DefaultRegistry(),
                                        {.target = core::Target::kStandalone, .probes = {"container-launch"}});
  for (const auto& pc : active.checks) {
    if (pc.check->info.probe == "container-launch" && pc.state != audit::PlanState::kNotInScope) {
      EXPECT_EQ(pc.state, audit::PlanState::kRun) << pc.check->info.id;
    }
  }
  EXPECT_THROW(audit::BuildPlan(checks::DefaultRegistry(), {.probes = {"rm-rf"}}), clustermax::UsageError);
  EXPECT_THROW(audit::BuildPlan(checks::DefaultRegistry(), {.profiles = {"nope"}}), clustermax::UsageError);
}

TEST(Engine, OutOfScopeChecksStillShowARow) {
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), {.target = core::Target::kContainer});
  auto r = audit::Judge(
      plan,
      {audit::ReplayNode(host::Bundle::Load(clustermax::testing::Fixture("bundles/debian12-container-cpu.json")), plan,
                         {})},
      core::EmbeddedMinimumTable());
  EXPECT_EQ(r.results.size(), checks::DefaultRegistry().all().size());
  bool saw = false;
  for (const auto& res : r.results) {
    if (res.info->id == "security-runc") {  // the host's container runtime: not a container's to grade
      EXPECT_EQ(res.finding.reason, core::Reason::kNotInScope);
      saw = true;
    }
  }
  EXPECT_TRUE(saw);
}

TEST(Cli, NonInteractiveRunNeedsATargetOrYes) {
  auto p = RunCli("audit --out /tmp/cm-should-not-exist");
  EXPECT_EQ(p.code, 1);
  EXPECT_NE(p.out.find("explicit target"), std::string::npos) << p.out;
  EXPECT_FALSE(fs::exists("/tmp/cm-should-not-exist"));
}

TEST(Cli, UsageErrorsExitOne) {
  EXPECT_EQ(RunCli("audit --profile nonsense --yes").code, 1);
  EXPECT_EQ(RunCli("audit --standalone --vm --yes").code, 1);
  EXPECT_EQ(RunCli("frobnicate").code, 1);
  EXPECT_EQ(RunCli("checks describe no-such-check").code, 1);
}

TEST(Cli, DryRunAndShowComeFromTheSamePlan) {
  auto dry = RunCli("audit --standalone --dry-run --profile security");
  ASSERT_EQ(dry.code, 0) << dry.out;
  json plan = JsonFrom(dry.out);
  auto show = RunCli("audit --standalone --show --profile security");
  ASSERT_EQ(show.code, 0);
  for (const auto& c : plan["checks"]) {
    EXPECT_NE(show.out.find(c["id"].get<std::string>()), std::string::npos);
    EXPECT_TRUE(c["category"] == "versions" || c["category"] == "isolation");
  }
  for (const auto& p : plan["probes"]) EXPECT_FALSE(p["enabled"].get<bool>());
}

TEST(Cli, LiveRunWritesArtifactsAndReviewReproducesIt) {
  fs::path dir = TempDir("live");
  auto live = RunCli("audit --standalone --yes --json --out " + (dir / "run").string(), "HOME=" + dir.string());
  ASSERT_TRUE(live.code == 0 || live.code == 2) << live.out;
  for (const char* f : {"report.json", "report.txt"}) EXPECT_TRUE(fs::exists(dir / "run" / f)) << f;
  ASSERT_TRUE(fs::is_directory(dir / "run" / "evidence"));
  json saved = json::parse(*util::ReadLocalFile(dir / "run" / "report.json"));
  EXPECT_EQ(saved["schema_version"], 1);
  EXPECT_EQ(saved["mode"], "live");
  // No partial directories are left behind.
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().filename().string().find(".partial"), std::string::npos);

  auto review = RunCli("audit review " + (dir / "run").string() + " --command raw --command 'find toolkit'");
  EXPECT_EQ(review.code, live.code) << review.out;
  EXPECT_NE(review.out.find("match(es)"), std::string::npos);

  // Re-judging the saved bundle gives the same findings as the live run.
  fs::path bundle;
  for (const auto& e : fs::directory_iterator(dir / "run" / "evidence")) bundle = e.path();
  auto replay = RunCli("audit --replay " + bundle.string() + " --json");
  EXPECT_EQ(replay.code, live.code);
  json rj = JsonFrom(replay.out);
  ASSERT_EQ(rj["results"].size(), saved["results"].size());
  for (size_t i = 0; i < rj["results"].size(); ++i) {
    json a = saved["results"][i], b = rj["results"][i];
    EXPECT_EQ(a["id"], b["id"]);
    EXPECT_EQ(a["status"], b["status"]) << a["id"];
    EXPECT_EQ(a["message"], b["message"]) << a["id"];
  }
  EXPECT_TRUE(rj["replay_misses"].empty()) << rj["replay_misses"].dump();
  fs::remove_all(dir);
}

TEST(Cli, RefusesToOverwriteANonEmptyRunDirectory) {
  fs::path dir = TempDir("overwrite");
  std::ofstream(dir / "keep.txt") << "precious";
  auto p = RunCli("audit --standalone --yes --profile access --out " + dir.string());
  EXPECT_EQ(p.code, 1) << p.out;
  EXPECT_TRUE(fs::exists(dir / "keep.txt"));
  fs::remove_all(dir);
}

TEST(Cli, HungNvidiaSmiDoesNotHangTheAudit) {
  fs::path dir = TempDir("hung");
  fs::path stub = dir / "nvidia-smi";
  std::ofstream(stub) << "#!/bin/sh\nsleep 600\n";
  fs::permissions(stub, fs::perms::owner_all);
  auto start = std::chrono::steady_clock::now();
  // An empty library path keeps any real NVML out, so the fallback to nvidia-smi is taken.
  auto p = RunCli(
      "audit --standalone --yes --json --command-timeout 1 --check gpu-drivers --check security-nvidia-driver --out " +
          (dir / "run").string(),
      "PATH=" + dir.string() + ":$PATH LD_LIBRARY_PATH=/nonexistent");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(secs, 20.0);
  ASSERT_TRUE(p.code == 0 || p.code == 2) << p.out;
  fs::path bundle;
  for (const auto& e : fs::directory_iterator(dir / "run" / "evidence")) bundle = e.path();
  json b = json::parse(*util::ReadLocalFile(bundle));
  bool saw_timeout = false;
  for (const auto& c : b["commands"]) {
    if (c["argv"][0] == "nvidia-smi") saw_timeout = c.value("timed_out", false) && c["status"] == "timeout";
  }
  EXPECT_TRUE(saw_timeout) << "nvidia-smi was not run and cut at its timeout";
  fs::remove_all(dir);
}

TEST(Cli, ChecksListAndMinimumsShow) {
  auto list = RunCli("checks list");
  EXPECT_EQ(list.code, 0);
  EXPECT_NE(list.out.find("security-nvidia-driver"), std::string::npos);
  auto desc = RunCli("checks describe cuda-toolkit-security");
  EXPECT_EQ(desc.code, 0);
  EXPECT_NE(desc.out.find("evidence: cuda.toolkits"), std::string::npos);
  auto probes = RunCli("checks probes");
  EXPECT_EQ(probes.code, 0);
  EXPECT_NE(probes.out.find("enroot-import\n  does:     enroot import"), std::string::npos) << probes.out;
  EXPECT_NE(probes.out.find("checks:   container-gpu-launch, nccl-topo-file-container"), std::string::npos)
      << probes.out;
  auto mins = RunCli("minimums show");
  EXPECT_EQ(mins.code, 0);
  EXPECT_NE(mins.out.find("nvidiaDriver"), std::string::npos);
  EXPECT_NE(mins.out.find("end-of-life: 390"), std::string::npos);
  fs::path bad = fs::temp_directory_path() / "cm-bad-minimums.json";
  util::WriteFileAtomic(bad, "{\"schema_version\": 7}");
  auto badrun = RunCli("minimums show --minimums " + bad.string());
  EXPECT_EQ(badrun.code, 1);
  EXPECT_NE(badrun.out.find("schema_version"), std::string::npos) << badrun.out;
  fs::remove(bad);
}

// Faults injected into every command of a recorded node: no crash, no PASS built on the faulted
// evidence, and the affected checks say why.
TEST(Engine, InjectedFaultsGiveWarnOrSkipNeverACrashOrAPass) {
  host::Bundle b = host::Bundle::Load(clustermax::testing::Fixture("bundles/debian12-container-cpu.json"));
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), {.target = core::Target::kStandalone});
  using F = host::FaultHost::Fault;
  for (F fault : {F::kTimeout, F::kPermissionDenied, F::kNotFound, F::kTruncate, F::kGarbage}) {
    host::ReplayHost replay(b);
    host::FaultHost h(replay);
    for (const char* cmd : {"nvcc", "/usr/local/cuda/bin/nvcc", "/usr/local/cuda-13.0/bin/nvcc", "perf", "docker",
                            "sudo", "ldconfig", "dpkg-query", "systemd-detect-virt"}) {
      h.FailCommand(cmd, fault);
    }
    h.FailPath("/proc/sys/kernel/perf_event_paranoid", fault);
    collect::CollectOptions opts;
    auto ev = collect::CollectEvidence(h, plan.collectors, opts);
    audit::NodeEvidence n{"faulty", b.manifest, ev, {}};
    auto r = audit::Judge(plan, {n}, core::EmbeddedMinimumTable());
    for (const auto& res : r.results) {
      const auto& f = res.finding;
      if (res.info->id != "minimum-table-current") {
        EXPECT_NE(f.reason, core::Reason::kToolFault) << res.info->id << ": " << f.message;
      }
      if (f.verdict == core::Verdict::kWarn || f.verdict == core::Verdict::kSkip) {
        EXPECT_NE(f.reason, core::Reason::kNone) << res.info->id;
      }
      // sudo's evidence is its exit code alone, so only faults that stop it from running count.
      bool faulted = res.info->id == "cuda-toolkit-security" || res.info->id == "perf-access" ||
                     res.info->id == "perf-access-paranoid" ||
                     (res.info->id == "sudo-available" && (fault == F::kTimeout || fault == F::kPermissionDenied));
      if (faulted && fault != F::kNotFound) {
        EXPECT_NE(f.verdict, core::Verdict::kPass) << res.info->id << " passed under fault " << static_cast<int>(fault);
      }
    }
    if (fault == F::kTimeout) {
      for (const auto& res : r.results) {
        if (res.info->id != "cuda-toolkit-security") continue;
        EXPECT_EQ(res.finding.verdict, core::Verdict::kWarn);
        std::string all = res.finding.message;
        for (const auto& d : res.finding.details) all += d;
        EXPECT_NE(all.find("timeout"), std::string::npos) << all;
      }
    }
  }
}

TEST(Cli, SysrootAuditsAPlantedTree) {
  fs::path root = TempDir("sysroot");
  fs::create_directories(root / "etc");
  fs::create_directories(root / "proc/sys/kernel");
  std::ofstream(root / "etc/os-release")
      << "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nID=ubuntu\nVERSION_ID=\"24.04\"\nVERSION_CODENAME=noble\n";
  std::ofstream(root / "proc/sys/kernel/osrelease") << "6.8.0-110-generic\n";
  std::ofstream(root / "proc/sys/kernel/hostname") << "planted-node\n";
  std::ofstream(root / "proc/sys/kernel/perf_event_paranoid") << "4\n";
  std::ofstream(root / "proc/sys/kernel/kptr_restrict") << "0\n";
  auto p = RunCli(
      "audit --standalone --yes --json --check ubuntu-kernel-fragnesia-dirty-frag --check perf-access-paranoid --sysroot " +
      root.string() + " --out " + (root / "run").string());
  EXPECT_EQ(p.code, 2) << p.out;
  json r = JsonFrom(p.out);
  EXPECT_EQ(r["nodes"][0], "planted-node");
  for (const auto& res : r["results"]) {
    EXPECT_EQ(res["status"], "FAIL") << res.dump();
  }
  fs::remove_all(root);
}

TEST(Cli, InteractivePromptDefaultsToNoAndExits130) {
  if (std::system("command -v script >/dev/null 2>&1") != 0) GTEST_SKIP() << "script(1) not installed";
  fs::path dir = TempDir("prompt");
  std::string run = std::string(CLUSTERMAX_BINARY) + " audit --standalone --out " + (dir / "run").string();
  // script(1) gives the binary a real terminal; an empty answer must decline.
  std::string cmd = "printf '\\n' | script -qec '" + run + "' /dev/null >/dev/null 2>&1";
  int st = std::system(cmd.c_str());
  EXPECT_EQ(WEXITSTATUS(st), 130);
  EXPECT_FALSE(fs::exists(dir / "run"));
  std::string yes = "printf 'y\\n' | script -qec '" + run + " --profile access' /dev/null >/dev/null 2>&1";
  st = std::system(yes.c_str());
  EXPECT_EQ(WEXITSTATUS(st), 0);
  EXPECT_TRUE(fs::exists(dir / "run" / "report.json"));
  fs::remove_all(dir);
}

// The NVML path, driven by the fake libnvidia-ml.so.1 built in the test tree (8 H100s; GPU 3 with
// uncorrectable ECC errors, GPU 5 at x8, GPU 6 with retired pages pending).
TEST(Cli, FakeNvmlDrivesTheGpuChecksAndReplaysWithoutIt) {
  fs::path dir = TempDir("nvml");
  std::string env = std::string("LD_LIBRARY_PATH=") + CLUSTERMAX_FAKE_NVML_DIR;
  auto p = RunCli("audit --standalone --yes --json --profile hardware --profile health --profile versions --out " +
                      (dir / "run").string() + " --record " + (dir / "node.json").string(),
                  env);
  ASSERT_EQ(p.code, 2) << p.out;
  json r = JsonFrom(p.out);
  std::map<std::string, json> by_id;
  for (const auto& res : r["results"]) by_id[res["id"]] = res;
  EXPECT_EQ(by_id["security-nvidia-driver"]["status"], "FAIL");
  EXPECT_EQ(by_id["security-nvidia-driver"]["observed"], "580.95.05");
  EXPECT_EQ(by_id["gpu-pcie-link"]["status"], "FAIL");
  EXPECT_NE(by_id["gpu-pcie-link"]["details"].dump().find("degraded: GPU 5 00000000:BB:00.0"), std::string::npos);
  EXPECT_EQ(by_id["gpu-ecc-health"]["status"], "FAIL");
  std::string ecc = by_id["gpu-ecc-health"]["details"].dump();
  EXPECT_NE(ecc.find("GPU 3 (GPU-fa4e0000-0000-4000-8000-000000000003): 4 uncorrectable"), std::string::npos) << ecc;
  EXPECT_NE(ecc.find("GPU 6"), std::string::npos) << ecc;
  EXPECT_EQ(by_id["gpu-drivers"]["status"], "WARN");  // NVML sees GPUs this machine's /sys does not
  // ... so the count is not verified either: 8 seen by the driver, none on the PCI bus.
  EXPECT_EQ(by_id["gpu-count-consistent"]["status"], "WARN");
  EXPECT_NE(by_id["gpu-count-consistent"]["message"].get<std::string>().find("disagree"), std::string::npos);
  EXPECT_EQ(by_id["nvlink-status"]["status"], "FAIL");
  EXPECT_NE(by_id["nvlink-status"]["details"].dump().find("GPU 2 00000000:4C:00.0: link(s) 7 inactive"),
            std::string::npos)
      << by_id["nvlink-status"]["details"].dump();
  for (const char* id : {"gpu-generation", "gpu-persistence-mode", "idle-thermals", "gpu-throttle-reasons"}) {
    EXPECT_EQ(by_id[id]["status"], "PASS") << id << ": " << by_id[id]["message"];
  }
  json bundle = json::parse(*util::ReadLocalFile(dir / "node.json"));
  EXPECT_EQ(bundle["nvml"]["status"], "ok");
  EXPECT_EQ(bundle["nvml"]["data"]["device_count"], 8);
  EXPECT_TRUE(bundle["nvml"]["data"]["errors"].empty()) << bundle["nvml"]["data"]["errors"].dump();

  // The same evidence re-judged on a machine without NVML gives the same findings.
  auto replay = RunCli("audit --replay " + (dir / "node.json").string() +
                       " --json --profile hardware --profile health --profile versions");
  EXPECT_EQ(replay.code, 2);
  json rr = JsonFrom(replay.out);
  ASSERT_EQ(rr["results"].size(), r["results"].size());
  for (size_t i = 0; i < rr["results"].size(); ++i) {
    EXPECT_EQ(rr["results"][i]["status"], r["results"][i]["status"]) << rr["results"][i]["id"];
    EXPECT_EQ(rr["results"][i]["details"], r["results"][i]["details"]) << rr["results"][i]["id"];
  }
  fs::remove_all(dir);
}

TEST(Cli, WedgedNvmlIsAbandonedAtItsDeadline) {
  fs::path dir = TempDir("nvml-hang");
  auto start = std::chrono::steady_clock::now();
  auto p = RunCli("audit --standalone --yes --json --check gpu-ecc-health --timeout gpu.inventory=1 --out " +
                      (dir / "run").string(),
                  std::string("FAKE_NVML_HANG=1 LD_LIBRARY_PATH=") + CLUSTERMAX_FAKE_NVML_DIR);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 20.0);
  ASSERT_EQ(p.code, 0) << p.out;
  json r = JsonFrom(p.out);
  EXPECT_EQ(r["results"][0]["status"], "SKIP");  // no NVIDIA GPU on this machine's PCI bus
  fs::path bundle;
  for (const auto& e : fs::directory_iterator(dir / "run" / "evidence")) bundle = e.path();
  json b = json::parse(*util::ReadLocalFile(bundle));
  EXPECT_EQ(b["nvml"]["status"], "timeout");
  fs::remove_all(dir);
}

TEST(Cli, NvmlInitFailureFallsBackAndNeverPasses) {
  fs::path dir = TempDir("nvml-fail");
  auto p = RunCli("audit --standalone --yes --json --check gpu-drivers --check security-nvidia-driver --out " +
                      (dir / "run").string(),
                  std::string("FAKE_NVML_FAIL_INIT=1 LD_LIBRARY_PATH=") + CLUSTERMAX_FAKE_NVML_DIR);
  ASSERT_TRUE(p.code == 0 || p.code == 2) << p.out;
  json report = JsonFrom(p.out);
  for (const auto& res : report["results"]) EXPECT_NE(res["status"], "PASS") << res.dump();
  fs::path bundle;
  for (const auto& e : fs::directory_iterator(dir / "run" / "evidence")) bundle = e.path();
  json b = json::parse(*util::ReadLocalFile(bundle));
  EXPECT_EQ(b["nvml"]["status"], "error");
  EXPECT_NE(b["nvml"]["error"].get<std::string>().find("Driver Not Loaded"), std::string::npos);
  fs::remove_all(dir);
}

// A real perf-sample probe recorded on this project's VM, where the PMU is not exposed: the probe
// ran, perf reported "<not supported>", and perf-access grades partial access as a WARN.
TEST(Engine, RecordedPerfProbeReplaysAsPartial) {
  host::Bundle b = host::Bundle::Load(clustermax::testing::Fixture("bundles/debian12-perf-sample-probe.json"));
  ASSERT_EQ(b.manifest.probes, std::vector<std::string>{"perf-sample"});
  audit::Plan plan =
      audit::BuildPlan(checks::DefaultRegistry(),
                       {.target = core::Target::kStandalone, .checks = {"perf-access"}, .probes = {"perf-sample"}});
  auto node = audit::ReplayNode(b, plan, {});
  EXPECT_TRUE(node.replay_misses.empty());
  auto r = audit::Judge(plan, {node}, core::EmbeddedMinimumTable());
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].finding.verdict, core::Verdict::kWarn);
  EXPECT_NE(r.results[0].finding.message.find("partial"), std::string::npos);
}

namespace {

// A planted sysfs: a GPU and a ConnectX behind one PCIe switch (upstream 01:00.0, downstream ports
// 02:08.0 and 02:10.0), each switch port with a 4 KiB config space carrying an ACS capability at
// 0x100 whose control register is `acs_control` (or only 256 bytes when `short_config`).
fs::path PlantPcieTree(const std::string& name, uint16_t acs_control, bool short_config) {
  fs::path root = TempDir(name);
  fs::path devs = root / "sys/devices/pci0000:00";
  struct Dev {
    std::string path, bdf, vendor, device, cls;
  };
  std::vector<Dev> all = {
      {"0000:00:01.0", "0000:00:01.0", "0x8086", "0x347a", "0x060400"},
      {"0000:00:01.0/0000:01:00.0", "0000:01:00.0", "0x1000", "0xc030", "0x060400"},
      {"0000:00:01.0/0000:01:00.0/0000:02:08.0", "0000:02:08.0", "0x1000", "0xc030", "0x060400"},
      {"0000:00:01.0/0000:01:00.0/0000:02:10.0", "0000:02:10.0", "0x1000", "0xc030", "0x060400"},
      {"0000:00:01.0/0000:01:00.0/0000:02:08.0/0000:19:00.0", "0000:19:00.0", "0x10de", "0x2330", "0x030200"},
      {"0000:00:01.0/0000:01:00.0/0000:02:10.0/0000:1a:00.0", "0000:1a:00.0", "0x15b3", "0x1021", "0x020700"}};
  fs::create_directories(root / "sys/bus/pci/devices");
  for (const auto& d : all) {
    fs::path p = devs / d.path;
    fs::create_directories(p);
    std::ofstream(p / "vendor") << d.vendor << "\n";
    std::ofstream(p / "device") << d.device << "\n";
    std::ofstream(p / "class") << d.cls << "\n";
    std::string cfg(short_config ? 256 : 4096, '\0');
    if (!short_config) {
      const unsigned char header[8] = {0x0d,
                                       0x00,
                                       0x01,
                                       0x00,
                                       0x1f,
                                       0x00,
                                       static_cast<unsigned char>(acs_control & 0xff),
                                       static_cast<unsigned char>(acs_control >> 8)};
      for (int i = 0; i < 8; ++i) cfg[0x100 + i] = static_cast<char>(header[i]);
    }
    std::ofstream(p / "config", std::ios::binary) << cfg;
    fs::create_symlink("../../../devices/pci0000:00/" + d.path, root / "sys/bus/pci/devices" / d.bdf);
  }
  return root;
}

std::string AcsVerdict(const fs::path& root) {
  auto p = RunCli("audit --standalone --yes --json --exit-zero --check pcie-acs --sysroot " + root.string() +
                  " --out " + (root / "run").string());
  EXPECT_EQ(p.code, 0) << p.out;
  json r = JsonFrom(p.out);
  return r["results"][0]["status"].get<std::string>() + ": " + r["results"][0]["message"].get<std::string>();
}

}  // namespace

TEST(Cli, PcieAcsReadFromConfigSpace) {
  fs::path redirect = PlantPcieTree("acs-on", 0x001d, false);  // SV, RR, CR, UF
  std::string v = AcsVerdict(redirect);
  EXPECT_EQ(v.rfind("FAIL", 0), 0u) << v;
  EXPECT_NE(v.find("2 switch port(s)"), std::string::npos) << v;
  fs::path clean = PlantPcieTree("acs-off", 0x0000, false);
  v = AcsVerdict(clean);
  EXPECT_EQ(v.rfind("PASS", 0), 0u) << v;
  fs::path unreadable = PlantPcieTree("acs-noroot", 0, true);
  v = AcsVerdict(unreadable);
  EXPECT_EQ(v.rfind("WARN", 0), 0u) << v;
  for (const auto& d : {redirect, clean, unreadable}) fs::remove_all(d);
}

TEST(Cli, FabricChecksOnAPlantedInfinibandTree) {
  fs::path root = TempDir("fabric");
  auto port = [&](const std::string& dev, const std::string& layer, std::vector<std::string> pkeys, int symbol_errors) {
    fs::path p = root / "sys/class/infiniband" / dev / "ports/1";
    fs::create_directories(p / "pkeys");
    fs::create_directories(p / "counters");
    fs::create_directories(p / "gid_attrs/ndevs");
    std::ofstream(p / "state") << "4: ACTIVE\n";
    std::ofstream(p / "phys_state") << "5: LinkUp\n";
    std::ofstream(p / "rate") << "400 Gb/sec (4X NDR)\n";
    std::ofstream(p / "link_layer") << layer << "\n";
    for (size_t i = 0; i < pkeys.size(); ++i) std::ofstream(p / "pkeys" / std::to_string(i)) << pkeys[i] << "\n";
    for (const char* c : {"link_downed", "link_error_recovery", "port_rcv_errors", "local_link_integrity_errors",
                          "excessive_buffer_overrun_errors"}) {
      std::ofstream(p / "counters" / c) << "0\n";
    }
    std::ofstream(p / "counters/symbol_error") << symbol_errors << "\n";
    std::ofstream(p / "gid_attrs/ndevs/0") << (layer == "Ethernet" ? "eth2.101" : "") << "\n";
    std::ofstream(root / "sys/class/infiniband" / dev / "fw_ver") << "28.43.2026\n";
  };
  port("mlx5_0", "InfiniBand", {"0xffff"}, 5);
  port("mlx5_1", "Ethernet", {"0xffff"}, 0);
  auto p = RunCli(
      "audit --standalone --yes --json --exit-zero --counter-interval 0.1 --profile networking --profile isolation --sysroot " +
      root.string() + " --out " + (root / "run").string());
  ASSERT_EQ(p.code, 0) << p.out;
  json r = JsonFrom(p.out);
  std::map<std::string, json> by_id;
  for (const auto& res : r["results"]) by_id[res["id"]] = res;
  EXPECT_EQ(by_id["ib-port-health"]["status"], "PASS") << by_id["ib-port-health"].dump();
  EXPECT_EQ(by_id["ib-tenant-isolation"]["reason"], "attestation-required");
  EXPECT_EQ(by_id["ufm-secured-bare-metal-cloud"]["reason"], "attestation-required");
  EXPECT_EQ(by_id["roce-tenant-isolation"]["reason"], "attestation-required");
  EXPECT_NE(by_id["roce-tenant-isolation"]["details"].dump().find("eth2.101"), std::string::npos);
  EXPECT_EQ(by_id["ib-link-errors"]["status"], "WARN") << by_id["ib-link-errors"].dump();  // history, not rising
  EXPECT_EQ(by_id["ib-management-keys"]["reason"], "attestation-required");
  fs::remove_all(root);
}

TEST(Engine, RisingCountersBetweenTheTwoSamplesFail) {
  host::Bundle b;
  auto dir = [](std::vector<std::string> names) {
    host::DirResult d;
    d.status = host::IoStatus::kOk;
    for (auto& n : names) d.entries.push_back({n, 'd'});
    return d;
  };
  b.PutDir("/sys/class/infiniband", dir({"mlx5_0"}));
  b.PutDir("/sys/class/infiniband/mlx5_0/ports", dir({"1"}));
  std::string base = "/sys/class/infiniband/mlx5_0/ports/1/counters/";
  for (const char* c : {"link_downed", "link_error_recovery", "symbol_error", "port_rcv_errors",
                        "local_link_integrity_errors", "excessive_buffer_overrun_errors"}) {
    b.PutFile(base + c, {host::IoStatus::kOk, "0\n", false, ""});
    b.PutFile(host::SampleKey(base + c, 1),
              {host::IoStatus::kOk, std::string(c) == "symbol_error" ? "17\n" : "0\n", false, ""});
  }
  host::ReplayHost h(b);
  auto start = std::chrono::steady_clock::now();
  auto ev = collect::CollectEvidence(h, {"rdma.counters"}, {});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
            2.0);  // replay does not sleep
  EXPECT_TRUE(h.misses().empty());
  audit::Plan plan =
      audit::BuildPlan(checks::DefaultRegistry(), {.target = core::Target::kStandalone, .checks = {"ib-link-errors"}});
  auto r = audit::Judge(plan, {audit::NodeEvidence{"n1", b.manifest, ev, {}}}, core::EmbeddedMinimumTable());
  EXPECT_EQ(r.results[0].finding.verdict, core::Verdict::kFail);
  EXPECT_NE(r.results[0].finding.details[0].find("symbol_error: 0 -> 17"), std::string::npos);
}

// The dcgm-diag probe with a dcgmi stub whose output uses the keys of DCGM's NvvsJsonStrings.h.
TEST(Cli, DcgmDiagProbeRunsOnlyWhenAskedAndGradesEveryResult) {
  fs::path dir = TempDir("dcgm");
  fs::path stub = dir / "dcgmi";
  std::ofstream(stub) << "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'dcgmi  version: 4.5.3'; exit 0; fi\n"
                      << "cat " << clustermax::testing::Fixture("parsers/dcgmi-diag-r1-fail.json").string()
                      << "\nexit 226\n";
  fs::permissions(stub, fs::perms::owner_all);
  std::string env = "PATH=" + dir.string() + ":$PATH LD_LIBRARY_PATH=" + CLUSTERMAX_FAKE_NVML_DIR;
  auto off = RunCli("audit --standalone --yes --json --check dcgm-diag-quick --out " + (dir / "r1").string(), env);
  ASSERT_EQ(off.code, 0) << off.out;
  EXPECT_EQ(JsonFrom(off.out)["results"][0]["reason"], "probe-disabled");
  auto on = RunCli(
      "audit --standalone --yes --json --probe dcgm-diag --check dcgm-diag-quick --out " + (dir / "r2").string(), env);
  ASSERT_EQ(on.code, 2) << on.out;
  json r = JsonFrom(on.out)["results"][0];
  EXPECT_EQ(r["status"], "FAIL");
  std::string details = r["details"].dump();
  EXPECT_NE(details.find("Hardware / memory on GPU 1: A memory mismatch was detected on GPU 1 (error_id 85)"),
            std::string::npos)
      << details;
  EXPECT_NE(details.find("Deployment / pcie on GPU 1"), std::string::npos) << details;
  fs::remove_all(dir);
}

// The streaming fleet judge (FleetJudge: one bundle per core in memory, compact findings, the report
// written piece by piece) gives byte for byte the report of the reference path (every node's
// evidence in memory, Judge, ToJson/RenderText), for a fleet whose login bundle is not first (cluster
// checks are judged speculatively until it arrives), with drift, a node name given twice and a
// bundle given twice, and for a replay without a login node (every check on every node).
TEST(FleetJudge, StreamingReportIsByteIdenticalToTheReferenceJudge) {
  fs::path dir = fs::temp_directory_path() / ("cm-fleet-stream-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  json base = json::parse(*util::ReadLocalFile(clustermax::testing::Fixture("bundles/debian12-container-cpu.json")));
  auto write = [&](const std::string& file, const std::string& host, const std::string& role, int variant) {
    json b = base;
    b["manifest"]["hostname"] = host;
    b["manifest"]["role"] = role;
    b["manifest"]["started_at"] = fmt::format("2026-11-30T10:00:{:02d}Z", variant % 60);
    if (variant % 7 == 3)
      b["files"]["/proc/sys/kernel/osrelease"] = {{"status", "ok"}, {"content", "6.1.0-99-amd64\n"}};
    if (variant % 11 == 5) b["files"].erase("/etc/os-release");
    // Text the JSON writer must escape (quotes, backslashes, control characters) reaches findings.
    if (variant % 5 == 2) {
      b["files"]["/etc/os-release"]["content"] =
          "PRETTY_NAME=\"Debian \\\"q\\\" \\\\ \x01x\"\nID=debian\nVERSION_ID=\"12\"\n";
    }
    fs::path p = dir / file;
    util::WriteFileAtomic(p, b.dump());
    return p.string();
  };
  // The reference replays every node on its own (no collector or judge memo).
  auto reference = [&](const std::vector<std::string>& paths, const audit::Plan& plan) {
    std::vector<audit::NodeEvidence> all, kept;
    collect::CollectOptions one;
    one.threads = 1;  // collectors in the plan's order, as a replay runs them (the order of misses)
    for (const auto& p : paths) all.push_back(audit::ReplayNode(host::Bundle::Load(p), plan, one));
    std::set<std::pair<std::string, std::string>> seen;
    for (auto& n : all) {
      if (seen.insert({n.node, n.manifest.started_at}).second) kept.push_back(std::move(n));
    }
    return audit::Judge(plan, kept, core::EmbeddedMinimumTable());
  };
  auto compare = [&](const std::vector<std::string>& paths, bool expect_fleet) {
    audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), {.target = core::Target::kSlurm});
    audit::Report ref = reference(paths, plan);
    std::vector<audit::FleetJudge::Duplicate> dups;
    std::vector<size_t> kept;
    audit::Report got = audit::ReplayAndJudgeFiles(paths, plan, {}, core::EmbeddedMinimumTable(), &dups, &kept);
    EXPECT_EQ(!got.fleet.is_null(), expect_fleet);
    EXPECT_EQ(got.nodes, ref.nodes);
    EXPECT_EQ(dups.size(), 1u);
    EXPECT_EQ(kept.size() + dups.size(), paths.size());
    std::string json_ref = util::JsonText(audit::ToJson(ref)), json_got;
    audit::WriteJson(got, [&](std::string_view p) { json_got.append(p); });
    EXPECT_GT(json_ref.size(), 100000u);
    EXPECT_TRUE(json_ref == json_got) << "JSON reports differ (" << json_ref.size() << " and " << json_got.size()
                                      << " bytes)";
    // The streamed writer on the reference report too, and ToJson on the streamed one.
    std::string json_ref_streamed;
    audit::WriteJson(ref, [&](std::string_view p) { json_ref_streamed.append(p); });
    EXPECT_TRUE(json_ref == json_ref_streamed);
    EXPECT_TRUE(json_ref == util::JsonText(audit::ToJson(got)));
    for (int v = 0; v <= 3; ++v) {
      std::string text_ref = audit::RenderText(ref, {.verbosity = v, .color = false}), text_got;
      audit::WriteText(got, {.verbosity = v, .color = false}, [&](std::string_view p) { text_got.append(p); });
      EXPECT_TRUE(text_ref == text_got) << "text reports differ at verbosity " << v;
    }
    return got;
  };
  std::vector<std::string> fleet, plain;
  for (int i = 0; i < 24; ++i) {
    if (i == 5) fleet.push_back(write("login.json", "login1", "login", 59));
    fleet.push_back(write(fmt::format("n{:02d}.json", i), i == 9 ? "n03" : fmt::format("n{:02d}", i), "compute", i));
    plain.push_back(write(fmt::format("p{:02d}.json", i), i == 9 ? "p03" : fmt::format("p{:02d}", i), "", i));
  }
  fleet.push_back(fleet[2]);  // the same bundle twice: judged once
  plain.push_back(plain[2]);
  audit::Report f = compare(fleet, true);
  ASSERT_FALSE(f.fleet.is_null());
  EXPECT_FALSE(f.fleet["drift"].empty()) << f.fleet["drift"].dump();
  EXPECT_EQ(f.fleet["nodes_returned"], 24);
  compare(plain, false);
  fs::remove_all(dir);
}

// The live fleet path end to end without a cluster: a login host whose sinfo lists 30 nodes and whose
// srun writes every node's framed bundle interleaved line by line, in pieces of awkward sizes, with
// one node silent, one sending a corrupt bundle and one document under a name that is no node of the
// step. FanOutThroughSlurm hands each bundle on as soon as it is whole (never holding srun's output:
// keep_stdout is off), FleetStream judges it on the worker that read it, and the report is byte for
// byte the reference judgement of the same bundles held in memory.
namespace {
class FakeSlurmLogin : public host::HostWrapper {
 public:
  FakeSlurmLogin(host::Host& base, std::string sinfo, std::vector<std::string> lines)
      : HostWrapper(base), sinfo_(std::move(sinfo)), lines_(std::move(lines)) {}
  host::CommandResult Run(const host::CommandSpec& spec) override {
    if (spec.argv[0] == "sinfo") return clustermax::testing::Out(sinfo_);
    if (spec.argv[0] != "srun") return HostWrapper::Run(spec);
    EXPECT_FALSE(spec.keep_stdout);
    std::string all;
    for (const auto& l : lines_) all += l + "\n";
    size_t sizes[] = {1, 7, 4096, 65536, 333, 1000, 2};
    for (size_t at = 0, k = 0; at < all.size(); ++k) {
      size_t n = std::min(sizes[k % 7], all.size() - at);
      spec.on_stdout(std::string_view(all).substr(at, n));
      at += n;
    }
    return clustermax::testing::Out("");
  }

 private:
  std::string sinfo_;
  std::vector<std::string> lines_;
};
}  // namespace

TEST(FleetStream, ASlurmFanOutStreamedInPiecesGivesTheReferenceReport) {
  json base = json::parse(*util::ReadLocalFile(clustermax::testing::Fixture("bundles/debian12-container-cpu.json")));
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), {.target = core::Target::kSlurm});
  collect::CollectOptions one;
  one.threads = 1;
  auto variant = [&](int i, const std::string& role) {
    json b = base;
    b["manifest"]["hostname"] = role == "login" ? "login1" : fmt::format("c{:02d}", i);
    b["manifest"]["role"] = role;
    if (i % 7 == 3) b["files"]["/proc/sys/kernel/osrelease"] = {{"status", "ok"}, {"content", "6.1.0-99-amd64\n"}};
    if (i % 5 == 2) b["files"].erase("/etc/os-release");
    return host::Bundle::FromJson(b);
  };
  std::string sinfo;
  std::vector<std::vector<std::string>> per_node;
  std::vector<host::Bundle> expected;  // in name order: the nodes that return a readable bundle
  for (int i = 29; i >= 0; --i) {      // sinfo's order is not the name order
    std::string name = fmt::format("c{:02d}", i);
    sinfo += name + "|idle|gpu:8|none\n";
    if (i == 11) continue;                                 // silent
    host::Bundle b = variant(i, i == 5 ? "" : "compute");  // c05's manifest is completed by the fan-out
    auto lines = audit::BundleLines(name, b);
    if (i == 17) lines = util::FrameLines("CLUSTERMAX-BUNDLE", name, "{\"manifest\": [");
    if (i == 23) lines = util::FrameLines("CLUSTERMAX-BUNDLE", name, "z1:eJzLSM3JyVcozy/KSQEAGgQEXQ=!");  // not base64
    if (i == 7)
      lines =
          util::FrameLines("CLUSTERMAX-BUNDLE", name, b.ToJson().dump(-1, ' ', true));  // JSON, as older nodes send it
    per_node.push_back(lines);
  }
  for (int i = 0; i < 30; ++i) {
    if (i != 11 && i != 17 && i != 23) expected.push_back(variant(i, "compute"));
  }
  per_node.push_back(audit::BundleLines("intruder", variant(99, "compute")));
  // Interleaved: one line of every node in turn (the worst case for what is held), labelled.
  std::vector<std::string> lines = {"srun: some warning"};
  for (size_t k = 0;; ++k) {
    bool any = false;
    for (size_t n = 0; n < per_node.size(); ++n) {
      if (k < per_node[n].size()) lines.push_back(fmt::format("{}: {}", n, per_node[n][k])), any = true;
    }
    if (!any) break;
  }
  host::Bundle empty;
  host::ReplayHost replay(empty);
  FakeSlurmLogin login(replay, sinfo, lines);

  audit::NodeEvidence login_node = audit::ReplayNode(variant(0, "login"), plan, one);
  audit::SlurmFanOutOptions fo;
  fo.self_exe = "/usr/bin/clustermax";
  std::optional<audit::FleetStream> judged;
  std::vector<std::string> targets;
  std::atomic<int> handed{0};
  audit::BundleStream stream;
  stream.workers = 3;
  stream.on_targets = [&](const std::vector<std::string>& t) {
    targets = t;
    judged.emplace(login_node, t.size(), plan, collect::CollectOptions{}, core::EmbeddedMinimumTable());
  };
  stream.on_bundle = [&](size_t i, host::Bundle b, const std::string& text) {
    EXPECT_EQ(b.manifest.hostname, targets[i]);
    EXPECT_EQ(b.manifest.role, "compute");
    // The text is the node's document as sent: read again, the same bundle.
    EXPECT_TRUE(host::Bundle::Parse(text).ToJson() == b.ToJson()) << targets[i];
    ++handed;
    judged->Add(i, b);
  };
  audit::FanOutResult fr = audit::FanOutThroughSlurm(login, fo, stream);
  ASSERT_EQ(targets.size(), 30u);
  EXPECT_EQ(targets.front(), "c00");
  EXPECT_EQ(handed.load(), 27);
  EXPECT_TRUE(fr.bundles.empty());
  EXPECT_EQ(fr.strangers, 1u);
  ASSERT_EQ(fr.unreachable.size(), 3u);
  // In sinfo's order: c23, c17, c11.
  EXPECT_EQ(fr.unreachable[0].node, "c23");
  EXPECT_EQ(fr.unreachable[0].reason, "bundle unreadable: deflated document is not base64");
  EXPECT_EQ(fr.unreachable[1].node, "c17");
  EXPECT_NE(fr.unreachable[1].reason.find("bundle unreadable"), std::string::npos) << fr.unreachable[1].reason;
  EXPECT_EQ(fr.unreachable[2].node, "c11");
  EXPECT_EQ(fr.unreachable[2].reason, "returned nothing");
  audit::Report got = judged->Finish(fr.unreachable);

  // The reference: every node's evidence in memory, judged at once.
  std::vector<audit::NodeEvidence> all = {login_node};
  for (const auto& b : expected) all.push_back(audit::ReplayNode(b, plan, one));
  audit::Report ref = audit::Judge(plan, all, core::EmbeddedMinimumTable(), fr.unreachable);
  EXPECT_EQ(got.nodes, ref.nodes);
  std::string json_ref = util::JsonText(audit::ToJson(ref)), json_got;
  audit::WriteJson(got, [&](std::string_view p) { json_got.append(p); });
  EXPECT_TRUE(json_ref == json_got) << "JSON reports differ (" << json_ref.size() << " and " << json_got.size()
                                    << " bytes)";
  EXPECT_EQ(got.fleet["nodes_returned"], 27);
  EXPECT_EQ(got.fleet["nodes_expected"], 30);

  // The collecting form keeps every bundle, in name order.
  audit::FanOutResult kept = audit::FanOutThroughSlurm(login, fo);
  ASSERT_EQ(kept.bundles.size(), 27u);
  for (size_t i = 0; i < kept.bundles.size(); ++i)
    EXPECT_EQ(kept.bundles[i].manifest.hostname, expected[i].manifest.hostname);
}
