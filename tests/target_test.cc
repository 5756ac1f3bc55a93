// Issue 14, classes 7 and 8: an image (--sysroot) is never graded with the auditing host's tools,
// and target detection weighs every marker and hides no finding. Realistic evidence: the recorded
// Firecracker VM bundle (tests/fixtures/bundles/debian12-container-cpu.json: hypervisor CPU flag,
// virtio-only PCI bus, ext4 root, PID 1 process_api) and planted image trees; each verdict has a
// mutation that changes one fact and flips it.
#include <fstream>

#include <gtest/gtest.h>

#include "audit/engine.h"
#include "checks/register.h"
#include "collect/collector.h"
#include "core/minimums.h"
#include "core/target.h"
#include "host/bundle.h"
#include "host/local_host.h"
#include "audit/render.h"
#include "testutil.h"
#include "util/time.h"

namespace fs = std::filesystem;
using namespace clustermax;
using core::Verdict;
using nlohmann::json;
namespace cmt = clustermax::testing;

namespace {

host::Bundle Fixture() { return host::Bundle::Load(cmt::Fixture("bundles/debian12-container-cpu.json")); }

const audit::CheckResult& Result(const audit::Report& r, const std::string& id) {
  for (const auto& res : r.results) {
    if (res.info->id == id) return res;
  }
  throw std::runtime_error("no result " + id);
}

audit::Report JudgeBundle(const host::Bundle& b, core::Target target, std::vector<std::string> checks = {}) {
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), {.target = target, .checks = std::move(checks)});
  return audit::Judge(plan, {audit::ReplayNode(b, plan, {})}, core::EmbeddedMinimumTable());
}

core::TargetDetection Detect(const host::Bundle& b) {
  host::ReplayHost h(b);
  return core::DetectTarget(collect::CollectEvidence(h, {"os.virtualization", "os.cpuinfo", "pci.devices"}, {}));
}

void SetMountinfoRoot(host::Bundle& b, const std::string& fstype) {
  std::string mi = b.File("/proc/self/mountinfo")->content;
  std::string from = "/ / rw,relatime - ext4 /dev/vda";
  size_t at = mi.find(from);
  ASSERT_NE(at, std::string::npos);
  mi.replace(at, from.size(), "/ / rw,relatime - " + fstype + " overlay");
  b.PutFile("/proc/self/mountinfo", {host::IoStatus::kOk, mi, false, ""});
}

}  // namespace

// ---- Class 8: detection ----

TEST(TargetDetection, AVmWhoseImageCarriesDockerenvIsAVm) {
  host::Bundle b = Fixture();
  // As on the machine this bundle came from: systemd-detect-virt says "docker" from /.dockerenv.
  b.PutStat("/.dockerenv", {host::IoStatus::kOk, 'f', 0644, 0, "", ""});
  b.PutCommand({"systemd-detect-virt", "--container"},
               {host::IoStatus::kOk, 0, 0, "docker\n", "", 5, false, false, "/usr/bin/systemd-detect-virt", ""});
  b.PutCommand({"systemd-detect-virt", "--vm"},
               {host::IoStatus::kOk, 0, 0, "bhyve\n", "", 5, false, false, "/usr/bin/systemd-detect-virt", ""});
  b.PutFile("/proc/1/cgroup", {host::IoStatus::kOk, "1:cpu:/\n0::/\n", false, ""});
  auto d = Detect(b);
  EXPECT_EQ(d.target, core::Target::kVm) << d.decision;
  EXPECT_NE(d.decision.find("/.dockerenv"), std::string::npos) << d.decision;
  std::string all = json(d.weighed).dump();
  EXPECT_NE(all.find("hypervisor flag"), std::string::npos) << all;
  EXPECT_NE(all.find("5 virtio PCI device(s) of 6"), std::string::npos) << all;
  EXPECT_NE(all.find("PID 1 is process_api"), std::string::npos) << all;
  EXPECT_NE(all.find("root filesystem is ext4"), std::string::npos) << all;
  EXPECT_NE(all.find("systemd-detect-virt --container: docker (from /.dockerenv only)"), std::string::npos) << all;

  // Mutation: an overlay root is a runtime container marker: a container on that VM.
  SetMountinfoRoot(b, "overlay");
  d = Detect(b);
  EXPECT_EQ(d.target, core::Target::kContainer) << d.decision;
  EXPECT_NE(d.decision.find("root filesystem is overlay"), std::string::npos) << d.decision;
}

TEST(TargetDetection, RuntimeBindMountsMakeAContainerEvenOnAVm) {
  host::Bundle b = Fixture();
  std::string mi = b.File("/proc/self/mountinfo")->content;
  b.PutFile(
      "/proc/self/mountinfo",
      {host::IoStatus::kOk,
       mi + "612 600 254:0 /var/lib/docker/containers/3f2a/hostname /etc/hostname rw,relatime - ext4 /dev/vda rw\n",
       false, ""});
  auto d = Detect(b);
  EXPECT_EQ(d.target, core::Target::kContainer) << d.decision;
  EXPECT_NE(d.decision.find("/etc/hostname"), std::string::npos) << d.decision;
}

TEST(TargetDetection, BareMetalWithALeftoverDockerenvAndSystemdIsStandalone) {
  host::Bundle b;
  b.PutStat("/.dockerenv", {host::IoStatus::kOk, 'f', 0644, 0, "", ""});
  b.PutFile("/proc/1/comm", {host::IoStatus::kOk, "systemd\n", false, ""});
  b.PutFile("/proc/1/cgroup", {host::IoStatus::kOk, "0::/init.scope\n", false, ""});
  b.PutFile("/proc/self/mountinfo",
            {host::IoStatus::kOk, "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n", false, ""});
  b.PutFile("/proc/cpuinfo",
            {host::IoStatus::kOk, "processor\t: 0\nmodel name\t: AMD EPYC 9654\nflags\t\t: fpu svm\n\n", false, ""});
  auto d = Detect(b);
  EXPECT_EQ(d.target, core::Target::kStandalone) << d.decision;
  // Mutation: PID 1 is the workload, not an init system: the marker stands, a container.
  b.PutFile("/proc/1/comm", {host::IoStatus::kOk, "python3\n", false, ""});
  d = Detect(b);
  EXPECT_EQ(d.target, core::Target::kContainer) << d.decision;
}

TEST(TargetDetection, DetectionIsRecordedInTheReportAndItsHeader) {
  host::Bundle b = Fixture();
  b.PutStat("/.dockerenv", {host::IoStatus::kOk, 'f', 0644, 0, "", ""});
  b.manifest.target_detection = Detect(b).ToJson();
  host::Bundle copy = host::Bundle::FromJson(b.ToJson());  // the manifest keeps it
  auto r = JudgeBundle(copy, core::Target::kVm, {"cuda-toolkit-security"});
  ASSERT_TRUE(r.target_detection.is_object());
  EXPECT_EQ(r.target_detection["target"], "vm");
  EXPECT_EQ(audit::ToJson(r)["target_detection"]["target"], "vm");
  std::string text = audit::RenderText(r, {.verbosity = 1, .color = false});
  EXPECT_NE(text.find("target detection: vm: /.dockerenv present"), std::string::npos) << text;
  EXPECT_NE(text.find("  weighed: vm: the CPU has the hypervisor flag"), std::string::npos) << text;
}

// ---- Class 8: what a container runs is graded in container mode ----

TEST(TargetScope, ContainerModeGradesTheWorkloadsToolkit) {
  host::Bundle b = Fixture();  // CUDA 13.0 toolkit, below the 13.1 floor
  auto r = JudgeBundle(b, core::Target::kContainer);
  EXPECT_EQ(Result(r, "cuda-toolkit-security").finding.verdict, Verdict::kFail)
      << Result(r, "cuda-toolkit-security").finding.message;
  EXPECT_EQ(Result(r, "cuda-toolkit-present").finding.verdict, Verdict::kPass)
      << Result(r, "cuda-toolkit-present").finding.message;
  EXPECT_EQ(Result(r, "nccl-installed").finding.verdict, Verdict::kPass);
  for (const char* id :
       {"cuda-toolkit-security", "cuda-toolkit-present", "cuda-driver-compat", "nccl-installed", "nccl-version-current",
        "cuda-arch-support", "hpcx-available", "ncu-profiling", "security-rocm"}) {
    EXPECT_TRUE(core::InMask(checks::DefaultRegistry().Find(id)->info.targets, core::Target::kContainer)) << id;
  }
  // Mutation: a toolkit at the floor passes in the same container.
  std::vector<std::string> nvcc = {"/usr/local/cuda-13.0/bin/nvcc", "--version"};
  auto out = b.Command(nvcc);
  ASSERT_TRUE(out);
  for (const auto& path : {"/usr/local/cuda-13.0/bin/nvcc", "/usr/local/cuda/bin/nvcc"}) {
    auto c = *b.Command({path, "--version"});
    std::string& s = c.out;
    for (size_t at; (at = s.find("13.0")) != std::string::npos;) s.replace(at, 4, "13.1");
    b.PutCommand({path, "--version"}, c);
  }
  r = JudgeBundle(b, core::Target::kContainer, {"cuda-toolkit-security"});
  EXPECT_EQ(Result(r, "cuda-toolkit-security").finding.verdict, Verdict::kPass)
      << Result(r, "cuda-toolkit-security").finding.message;
}

TEST(TargetScope, APresentToolkitIsGradedAsPresentWithoutAGpu) {
  host::Bundle b = Fixture();  // no NVIDIA GPU on the bus, a CUDA 13.0 toolkit installed
  auto r = JudgeBundle(b, core::Target::kStandalone, {"cuda-toolkit-present", "cuda-toolkit-security"});
  EXPECT_EQ(Result(r, "cuda-toolkit-present").finding.verdict, Verdict::kPass)
      << Result(r, "cuda-toolkit-present").finding.message;
  EXPECT_EQ(Result(r, "cuda-toolkit-security").finding.verdict, Verdict::kFail);
  // Mutation: without the toolkit, its absence is excused where no NVIDIA GPU needs it.
  for (const auto& path : {"/usr/local/cuda-13.0/bin/nvcc", "/usr/local/cuda/bin/nvcc"}) {
    b.PutStat(path, {host::IoStatus::kNotFound, '?', 0, 0, "", "No such file or directory"});
    b.PutCommand({path, "--version"}, {host::IoStatus::kNotFound, -1, 0, "", "", 0, false, false, "", "not found"});
  }
  b.PutWhich("nvcc", {host::IoStatus::kNotFound, ""});
  r = JudgeBundle(b, core::Target::kStandalone, {"cuda-toolkit-present", "cuda-toolkit-security"});
  EXPECT_EQ(Result(r, "cuda-toolkit-present").finding.verdict, Verdict::kSkip)
      << Result(r, "cuda-toolkit-present").finding.message;
  EXPECT_EQ(Result(r, "cuda-toolkit-security").finding.verdict, Verdict::kSkip);
}

TEST(TargetScope, JanuscapeDoesNotCallNestingImpossibleWithDevKvmPresent) {
  host::Bundle b = Fixture();  // no vmx/svm in /proc/cpuinfo, /dev/kvm present (a PVM-capable guest)
  auto r = JudgeBundle(b, core::Target::kVm, {"security-januscape"});
  const auto& f = Result(r, "security-januscape").finding;
  EXPECT_EQ(f.verdict, Verdict::kWarn) << f.message;
  EXPECT_EQ(f.message.find("impossible"), std::string::npos) << f.message;
  // Mutation: /dev/kvm absent: now nested virtualisation is impossible.
  b.PutStat("/dev/kvm", {host::IoStatus::kNotFound, '?', 0, 0, "", "No such file or directory"});
  r = JudgeBundle(b, core::Target::kVm, {"security-januscape"});
  EXPECT_EQ(Result(r, "security-januscape").finding.verdict, Verdict::kPass)
      << Result(r, "security-januscape").finding.message;
}

// ---- Class 7: --sysroot ----

TEST(Sysroot, LocalHostTakesNoCommandEvidenceFromAnImage) {
  fs::path root = cmt::ScratchDir("image-host");
  host::LocalHost image(root.string());
  EXPECT_EQ(image.Run({{"true"}}).status, host::IoStatus::kNotTaken);
  EXPECT_EQ(image.Which("sh").status, host::IoStatus::kNotTaken);
  EXPECT_FALSE(image.GetEnv("PATH"));
  EXPECT_EQ(image.QueryNvml(std::chrono::milliseconds(100)).status, host::IoStatus::kNotTaken);
  EXPECT_FALSE(image.NotTakenReason().empty());
  // Mutation: the live machine (no sysroot) runs them.
  host::LocalHost live;
  EXPECT_EQ(live.Run({{"true"}}).status, host::IoStatus::kOk);
  EXPECT_TRUE(live.NotTakenReason().empty());
  fs::remove_all(root);
}

TEST(Sysroot, AnImagesBundleNeverGradesTheHostsToolkit) {
  host::Bundle b = Fixture();  // the toolkit answers were recorded from commands
  auto r = JudgeBundle(b, core::Target::kStandalone, {"cuda-toolkit-security"});
  EXPECT_EQ(Result(r, "cuda-toolkit-security").finding.verdict, Verdict::kFail);
  EXPECT_TRUE(r.not_taken.empty());
  // Mutation: the same answers in the bundle of an image (the manifest names a sysroot): they would
  // have been the auditing host's, so they are not collected, with the reason.
  b.manifest.sysroot = "/mnt/images/node-image";
  r = JudgeBundle(b, core::Target::kStandalone, {"cuda-toolkit-security"});
  const auto& f = Result(r, "cuda-toolkit-security").finding;
  EXPECT_EQ(f.verdict, Verdict::kWarn) << f.message;
  EXPECT_NE(f.message.find("command evidence cannot be taken from an image (--sysroot)"), std::string::npos)
      << f.message;
  ASSERT_FALSE(r.not_taken.empty());
  EXPECT_NE(json(r.not_taken).dump().find("cuda.toolkits"), std::string::npos) << json(r.not_taken).dump();
  std::string text = audit::RenderText(r, {.verbosity = 0, .color = false});
  EXPECT_NE(text.find("NOT TAKEN FROM THE IMAGE"), std::string::npos) << text;
}

TEST(Sysroot, CliNamesTheImageAndListsWhatItCouldNotTake) {
  fs::path root = cmt::ScratchDir("image-cli") / "gpu-image-2026";
  fs::create_directories(root / "etc");
  fs::create_directories(root / "usr/local/cuda/bin");
  std::ofstream(root / "etc/os-release")
      << "PRETTY_NAME=\"Ubuntu 24.04.1 LTS\"\nID=ubuntu\nVERSION_ID=\"24.04\"\nVERSION_CODENAME=noble\n";
  std::ofstream(root / "usr/local/cuda/bin/nvcc")
      << "#!/bin/sh\necho 'Cuda compilation tools, release 12.2, V12.2.140'\n";
  fs::permissions(root / "usr/local/cuda/bin/nvcc", fs::perms::owner_all);
  auto run = [&](const std::string& out) {
    auto p = cmt::RunBinary(
        "audit --standalone --yes --json --exit-zero --check cuda-toolkit-security --check docker-workers --check security-docker --sysroot " +
        root.string() + " --out " + (root.parent_path() / out).string());
    EXPECT_EQ(p.code, 0) << p.out;
    size_t b = p.out.find('{'), e = p.out.rfind('}');
    return json::parse(p.out.substr(b, e - b + 1));
  };
  json r = run("run1");
  EXPECT_EQ(r["nodes"][0], "gpu-image-2026");  // no /etc/hostname: the directory's name, never this host's
  EXPECT_FALSE(r["not_taken"].empty()) << r.dump();
  for (const auto& res : r["results"]) {
    if (res["id"] != "cuda-toolkit-security" && res["id"] != "security-docker") continue;
    EXPECT_EQ(res["status"], "WARN") << res.dump();
    EXPECT_NE(res["message"].get<std::string>().find("--sysroot"), std::string::npos) << res.dump();
  }
  // Mutation: the image names itself.
  std::ofstream(root / "etc/hostname") << "gpu-node-17\n";
  r = run("run2");
  EXPECT_EQ(r["nodes"][0], "gpu-node-17");
  fs::remove_all(root.parent_path());
}

// nccl-installed on Kubernetes: the workloads' images bring NCCL, so a host without it is SKIP
// there and FAIL (missing) on Slurm; a host copy is graded the same on both.
TEST(TargetScope, NcclOnTheHostIsNotRequiredOnKubernetes) {
  const core::Check* c = checks::DefaultRegistry().Find("nccl-installed");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(core::InMask(c->info.targets, core::Target::kK8s));
  auto judge = [&](core::Target t, json data) {
    core::EvidenceSet ev;
    core::Evidence e;
    e.status = core::EvidenceStatus::kOk;
    e.data = std::move(data);
    ev["nccl.libraries"] = e;
    core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), t, *util::ParseRfc3339("2026-12-01T00:00:00Z"));
    return c->judge(ctx).verdict;
  };
  json none = {{"libraries", json::array()}, {"versions", json::array()}, {"header", nullptr}, {"ldconfig_ok", true}};
  EXPECT_EQ(judge(core::Target::kK8s, none), Verdict::kSkip);
  EXPECT_EQ(judge(core::Target::kSlurm, none), Verdict::kFail);
  json found = {{"libraries", {"/usr/lib/x86_64-linux-gnu/libnccl.so.2"}},
                {"versions", {{{"version", "2.27.3"}, {"path", "/usr/lib/x86_64-linux-gnu/libnccl.so.2"}}}},
                {"header", nullptr},
                {"ldconfig_ok", true}};
  EXPECT_EQ(judge(core::Target::kK8s, found), Verdict::kPass);
  EXPECT_EQ(judge(core::Target::kSlurm, found), Verdict::kPass);
}
