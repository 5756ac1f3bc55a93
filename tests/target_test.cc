// Issue 14, class 8: what a workload runs is graded in container mode too, and a present
// toolkit or a present /dev/kvm is never explained away. Realistic evidence: the recorded
// Firecracker VM bundle (tests/fixtures/bundles/debian12-container-cpu.json: hypervisor CPU flag,
// virtio-only PCI bus, ext4 root, PID 1 process_api) and planted image trees; each verdict has a
// mutation that changes one fact and flips it.
#include <fstream>

#include <gtest/gtest.h>

#include "audit/engine.h"
#include "checks/register.h"
#include "collect/collector.h"
#include "host/bundle.h"
#include "report/report.h"
#include "testutil.h"

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

}  // namespace

// ---- Class 8: what a container runs is graded in container mode ----

TEST(TargetScope, ContainerModeGradesTheWorkloadsToolkit) {
  host::Bundle b = Fixture();  // CUDA 13.0 toolkit, below the 13.1 floor
  auto r = JudgeBundle(b, core::Target::kContainer);
  EXPECT_EQ(Result(r, "cuda-toolkit-security").finding.verdict, Verdict::kFail) << Result(r, "cuda-toolkit-security").finding.message;
  EXPECT_EQ(Result(r, "cuda-toolkit-present").finding.verdict, Verdict::kPass) << Result(r, "cuda-toolkit-present").finding.message;
  EXPECT_EQ(Result(r, "nccl-installed").finding.verdict, Verdict::kPass);
  for (const char* id : {"cuda-toolkit-security", "cuda-toolkit-present", "cuda-driver-compat", "nccl-installed", "nccl-version-current",
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
  EXPECT_EQ(Result(r, "cuda-toolkit-security").finding.verdict, Verdict::kPass) << Result(r, "cuda-toolkit-security").finding.message;
}

TEST(TargetScope, APresentToolkitIsGradedAsPresentWithoutAGpu) {
  host::Bundle b = Fixture();  // no NVIDIA GPU on the bus, a CUDA 13.0 toolkit installed
  auto r = JudgeBundle(b, core::Target::kStandalone, {"cuda-toolkit-present", "cuda-toolkit-security"});
  EXPECT_EQ(Result(r, "cuda-toolkit-present").finding.verdict, Verdict::kPass) << Result(r, "cuda-toolkit-present").finding.message;
  EXPECT_EQ(Result(r, "cuda-toolkit-security").finding.verdict, Verdict::kFail);
  // Mutation: without the toolkit, its absence is excused where no NVIDIA GPU needs it.
  for (const auto& path : {"/usr/local/cuda-13.0/bin/nvcc", "/usr/local/cuda/bin/nvcc"}) {
    b.PutStat(path, {host::IoStatus::kNotFound, '?', 0, 0, "", "No such file or directory"});
    b.PutCommand({path, "--version"}, {host::IoStatus::kNotFound, -1, 0, "", "", 0, false, false, "", "not found"});
  }
  b.PutWhich("nvcc", {host::IoStatus::kNotFound, ""});
  r = JudgeBundle(b, core::Target::kStandalone, {"cuda-toolkit-present", "cuda-toolkit-security"});
  EXPECT_EQ(Result(r, "cuda-toolkit-present").finding.verdict, Verdict::kSkip) << Result(r, "cuda-toolkit-present").finding.message;
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
  EXPECT_EQ(Result(r, "security-januscape").finding.verdict, Verdict::kPass) << Result(r, "security-januscape").finding.message;
}
