// Checks judged on literal evidence: no host involved.
#include <gtest/gtest.h>

#include "audit/engine.h"
#include "checks/register.h"
#include "testutil.h"
#include "util/time.h"

using namespace clustermax;
using clustermax::testing::Ok;
using core::EvidenceStatus;
using core::Verdict;
using nlohmann::json;

namespace {

json NvidiaPci(int gpus) {
  json devices = json::array();
  for (int i = 0; i < gpus; ++i) {
    devices.push_back({{"bdf", "0000:1" + std::to_string(i) + ":00.0"},
                       {"vendor", "0x10de"},
                       {"device", "0x2330"},
                       {"class", "0x030200"},
                       {"driver", "nvidia"},
                       {"gpu", true},
                       {"rdma_nic", false}});
  }
  return {{"devices", devices}, {"complete", true}, {"unreadable", 0}};
}

core::Finding JudgeWith(const std::string& check, core::EvidenceSet ev,
                        core::Target target = core::Target::kStandalone) {
  const core::Check* c = checks::DefaultRegistry().Find(check);
  EXPECT_NE(c, nullptr) << check;
  core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), target,
                         *util::ParseRfc3339("2026-11-30T00:00:00Z"));
  return c->judge(ctx);
}

core::EvidenceSet DriverEvidence(const std::string& version) {
  return {{"pci.devices", Ok("pci.devices", NvidiaPci(8))},
          {"gpu.inventory",
           Ok("gpu.inventory",
              {{"source", "nvml"}, {"driver_version", version}, {"device_count", 8}, {"devices", json::array()}})},
          {"nvidia.proc-version", Ok("nvidia.proc-version", {{"loaded", true}, {"driver_version", version}})}};
}

}  // namespace

TEST(Checks, NvidiaDriverBranches) {
  EXPECT_EQ(JudgeWith("security-nvidia-driver", DriverEvidence("580.159.03")).verdict, Verdict::kPass);
  auto f = JudgeWith("security-nvidia-driver", DriverEvidence("580.95.05"));
  EXPECT_EQ(f.verdict, Verdict::kFail);
  EXPECT_EQ(f.severity, core::Severity::kVersion);
  EXPECT_EQ(f.observed, "580.95.05");
  EXPECT_EQ(f.expected, ">= 580.159.03 (580)");
  EXPECT_EQ(JudgeWith("security-nvidia-driver", DriverEvidence("550.127.05")).verdict, Verdict::kFail);
  EXPECT_EQ(JudgeWith("security-nvidia-driver", DriverEvidence("575.57.08")).verdict, Verdict::kWarn);
}

TEST(Checks, NvidiaDriverNotApplicableOnlyWithACompleteInventory) {
  core::EvidenceSet cpu_only = {{"pci.devices", Ok("pci.devices", NvidiaPci(0))}};
  cpu_only["gpu.inventory"].status = EvidenceStatus::kNotFound;
  auto f = JudgeWith("security-nvidia-driver", cpu_only);
  EXPECT_EQ(f.verdict, Verdict::kSkip);
  EXPECT_EQ(f.reason, core::Reason::kNotApplicable);
  core::EvidenceSet unreadable;  // PCI listing failed: never "not applicable", never PASS
  unreadable["pci.devices"].status = EvidenceStatus::kPermissionDenied;
  unreadable["gpu.inventory"].status = EvidenceStatus::kNotFound;
  EXPECT_EQ(JudgeWith("security-nvidia-driver", unreadable).verdict, Verdict::kWarn);
}

TEST(Checks, GpusWithoutDriverFail) {
  core::EvidenceSet ev = {{"pci.devices", Ok("pci.devices", NvidiaPci(2))},
                          {"nvidia.proc-version", Ok("nvidia.proc-version", {{"loaded", false}})}};
  ev["gpu.inventory"].status = EvidenceStatus::kNotFound;
  EXPECT_EQ(JudgeWith("security-nvidia-driver", ev).verdict, Verdict::kFail);
}

TEST(Checks, CudaToolkitDefaultAndOlderExtras) {
  auto tk = [](json toolkits) {
    return core::EvidenceSet{{"cuda.toolkits", Ok("cuda.toolkits", {{"toolkits", toolkits}})}};
  };
  EXPECT_EQ(JudgeWith("cuda-toolkit-security",
                      tk(json::array({{{"nvcc", "/usr/local/cuda/bin/nvcc"}, {"version", "13.0"}, {"default", true}}})))
                .verdict,
            Verdict::kFail);
  auto extra = JudgeWith(
      "cuda-toolkit-security",
      tk(json::array({{{"nvcc", "/usr/local/cuda/bin/nvcc"}, {"version", "13.1"}, {"default", true}},
                      {{"nvcc", "/usr/local/cuda-12.4/bin/nvcc"}, {"version", "12.4"}, {"default", false}}})));
  EXPECT_EQ(extra.verdict, Verdict::kWarn);
  EXPECT_EQ(JudgeWith("cuda-toolkit-security", tk(json::array())).verdict, Verdict::kSkip);
}

TEST(Checks, DockerNeedsTheServerVersion) {
  auto d = [](json data) { return core::EvidenceSet{{"docker.version", Ok("docker.version", data)}}; };
  EXPECT_EQ(JudgeWith("security-docker", d({{"installed", true},
                                            {"is_docker", true},
                                            {"client_version", "29.7.0"},
                                            {"server_version", nullptr},
                                            {"server_error", "Cannot connect"}}))
                .verdict,
            Verdict::kWarn);
  EXPECT_EQ(
      JudgeWith(
          "security-docker",
          d({{"installed", true}, {"is_docker", true}, {"client_version", "29.7.0"}, {"server_version", "29.6.1"}}))
          .verdict,
      Verdict::kFail);
  EXPECT_EQ(
      JudgeWith(
          "security-docker",
          d({{"installed", true}, {"is_docker", true}, {"client_version", "29.7.0"}, {"server_version", "29.7.0"}}))
          .verdict,
      Verdict::kPass);
  EXPECT_EQ(JudgeWith("security-docker", d({{"installed", false}})).verdict, Verdict::kSkip);
}

TEST(Checks, PerfSysctlGrades) {
  auto s = [](int paranoid, int kptr) {
    return core::EvidenceSet{
        {"kernel.perf-sysctl", Ok("kernel.perf-sysctl", {{"perf_event_paranoid", paranoid}, {"kptr_restrict", kptr}})}};
  };
  EXPECT_EQ(JudgeWith("perf-access-paranoid", s(1, 0)).verdict, Verdict::kPass);
  EXPECT_EQ(JudgeWith("perf-access-paranoid", s(2, 0)).verdict, Verdict::kWarn);
  EXPECT_EQ(JudgeWith("perf-access-paranoid", s(3, 0)).verdict, Verdict::kFail);
  EXPECT_EQ(JudgeWith("perf-access-kptr", s(1, 1)).verdict, Verdict::kWarn);
  EXPECT_EQ(JudgeWith("perf-access-kptr", s(1, 0)).verdict, Verdict::kPass);
}

TEST(Checks, PciGpuEccAndLinkFromTheSmiFixtureShape) {
  json gpu = {{"source", "nvidia-smi"},
              {"driver_version", "580.95.05"},
              {"device_count", 2},
              {"devices",
               json::array({{{"index", 0},
                             {"uuid", "GPU-a"},
                             {"pci_bus_id", "00000000:19:00.0"},
                             {"pcie", {{"width_current", 16}, {"width_max", 16}, {"gen_current", 5}, {"gen_max", 5}}},
                             {"ecc", {{"current", true}, {"volatile_uncorrected", 0}, {"volatile_corrected", 0}}},
                             {"remapped_rows", {{"pending", false}, {"failure", false}}}},
                            {{"index", 1},
                             {"uuid", "GPU-b"},
                             {"pci_bus_id", "00000000:3B:00.0"},
                             {"pcie", {{"width_current", 8}, {"width_max", 16}, {"gen_current", 5}, {"gen_max", 5}}},
                             {"ecc", {{"current", true}, {"volatile_uncorrected", 2}, {"volatile_corrected", 3}}},
                             {"remapped_rows", {{"pending", true}, {"failure", false}}}}})}};
  core::EvidenceSet ev = {{"pci.devices", Ok("pci.devices", NvidiaPci(2))},
                          {"gpu.inventory", Ok("gpu.inventory", gpu)}};
  auto link = JudgeWith("gpu-pcie-link", ev);
  EXPECT_EQ(link.verdict, Verdict::kFail);
  auto ecc = JudgeWith("gpu-ecc-health", ev);
  EXPECT_EQ(ecc.verdict, Verdict::kFail);
  EXPECT_NE(ecc.details.front().find("GPU 1"), std::string::npos);
  EXPECT_EQ(JudgeWith("gpu-drivers", ev).verdict, Verdict::kPass);
}

// Principle 1: missing evidence is never a PASS. Every check, fed evidence that failed to
// collect in each possible way, must not pass.
TEST(Checks, NoCheckPassesOnMissingEvidence) {
  for (auto status : {EvidenceStatus::kNotFound, EvidenceStatus::kPermissionDenied, EvidenceStatus::kTimeout,
                      EvidenceStatus::kParseError, EvidenceStatus::kError, EvidenceStatus::kNotCollected}) {
    for (const auto& c : checks::DefaultRegistry().all()) {
      if (c.info.needs.empty()) continue;  // judges our own data (the minimum table), not the node
      core::EvidenceSet ev;
      for (const auto& n : c.info.needs) {
        ev[n].id = n;
        ev[n].status = status;
        ev[n].error = "injected";
      }
      auto f = JudgeWith(c.info.id, ev);
      EXPECT_NE(f.verdict, Verdict::kPass) << c.info.id << " passed on " << core::ToString(status);
      EXPECT_NE(f.reason, core::Reason::kToolFault) << c.info.id << ": " << f.message;
      if (f.verdict == Verdict::kWarn || f.verdict == Verdict::kSkip) {
        EXPECT_NE(f.reason, core::Reason::kNone) << c.info.id << " has a WARN/SKIP without a reason";
      }
    }
  }
}

// Evidence of an unexpected shape (collected "ok" but without the fields a judge reads) must never
// crash the audit or read outside the document: the engine turns it into a tool-fault row.
TEST(Checks, UnexpectedEvidenceShapesBecomeToolFaultsNotCrashes) {
  audit::Plan plan = audit::BuildPlan(
      checks::DefaultRegistry(),
      {.target = core::Target::kStandalone, .probes = {"perf-sample", "container-launch", "dcgm-diag"}});
  audit::NodeEvidence node;
  node.node = "odd";
  for (const auto& pc : plan.checks) {
    for (const auto& n : pc.check->info.needs) node.evidence[n] = Ok(n, json::object());
  }
  auto r = audit::Judge(plan, {node}, core::EmbeddedMinimumTable());
  ASSERT_EQ(r.results.size(), checks::DefaultRegistry().all().size());
  int tool_faults = 0;
  for (const auto& res : r.results) {
    if (res.finding.reason == core::Reason::kToolFault && res.info->id != "minimum-table-current") {
      ++tool_faults;
      EXPECT_NE(res.finding.message.find("check failed internally"), std::string::npos) << res.finding.message;
    }
  }
  EXPECT_GT(tool_faults, 0);  // the shapes are impossible for our collectors, so some judges do trip
}
