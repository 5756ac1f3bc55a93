// A unit test for every check. The checks below had no test of their own (no test named the check
// and judged it); each is judged here on literal evidence shaped like its collector's output:
// a PASS on evidence it read and understood, a WARN (or SKIP with a reason) on evidence it could not
// read or parse, and the FAIL/SKIP cases the check has. Every case names the one fact that decides it.
//
// The last test, CheckCoverage.EveryRegisteredCheckIsNamedByATest, keeps it so: it fails naming any
// registered check id that no test source compiled by tests/CMakeLists.txt mentions.
#include <filesystem>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "audit/fleet_summary.h"
#include "checks/register.h"
#include "testutil.h"
#include "util/files.h"
#include "util/time.h"

using namespace clustermax;
using core::EvidenceStatus;
using core::Reason;
using core::Severity;
using core::Verdict;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

core::Evidence Ok(json data) {
  core::Evidence e;
  e.status = EvidenceStatus::kOk;
  e.data = std::move(data);
  return e;
}
core::Evidence Failed(EvidenceStatus s, const std::string& error = "") {
  core::Evidence e;
  e.status = s;
  e.error = error;
  return e;
}

// Judges one check on `ev`; evidence the test does not supply is not-collected.
core::Finding J(const std::string& id, core::EvidenceSet ev, core::Target target = core::Target::kStandalone) {
  const core::Check* c = checks::DefaultRegistry().Find(id);
  if (!c) {
    ADD_FAILURE() << "no check " << id;
    return {};
  }
  for (const auto& n : c->info.needs) {
    if (!ev.count(n)) ev[n].status = EvidenceStatus::kNotCollected;
  }
  core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), target,
                         *util::ParseRfc3339("2026-11-30T00:00:00Z"));
  return c->judge(ctx);
}

std::string Text(const core::Finding& f) {
  std::string s =
      std::string(core::ToString(f.verdict)) + " " + std::string(core::ToString(f.reason)) + ": " + f.message;
  for (const auto& d : f.details) s += "\n  " + d;
  return s;
}

#define EXPECT_VERDICT(f, v, r)             \
  do {                                      \
    const core::Finding& f_ = (f);          \
    EXPECT_EQ(f_.verdict, (v)) << Text(f_); \
    EXPECT_EQ(f_.reason, (r)) << Text(f_);  \
  } while (0)

json Pci(std::vector<json> devices, bool complete = true) {
  json list = json::array();
  for (auto& d : devices) list.push_back(d);
  return {{"devices", list}, {"complete", complete}, {"unreadable", complete ? 0 : 1}};
}
json NvidiaGpu() {
  return {{"bdf", "0000:19:00.0"}, {"vendor", "0x10de"}, {"device", "0x2330"}, {"class", "0x030200"},
          {"driver", "nvidia"},    {"gpu", true},        {"rdma_nic", false}};
}
json ConnectX() {
  return {{"bdf", "0000:1a:00.0"}, {"vendor", "0x15b3"}, {"device", "0x1021"}, {"class", "0x020700"},
          {"driver", "mlx5_core"}, {"gpu", false},       {"rdma_nic", true}};
}
json BlueField() {
  return {{"bdf", "0000:2b:00.0"}, {"vendor", "0x15b3"}, {"device", "0xa2dc"}, {"class", "0x020000"},
          {"driver", "mlx5_core"}, {"gpu", false},       {"rdma_nic", true}};
}
json Inventory(const std::string& name = "NVIDIA H100 80GB HBM3") {
  return {{"source", "nvml"}, {"device_count", 1}, {"devices", json::array({{{"index", 0}, {"name", name}}})}};
}
// A node with one NVIDIA GPU (what SkipUnlessNvidia needs to judge the NVIDIA software checks).
core::EvidenceSet NvidiaNode() { return {{"pci.devices", Ok(Pci({NvidiaGpu()}))}, {"gpu.inventory", Ok(Inventory())}}; }
// A node whose complete PCI inventory has no NVIDIA GPU and no NVML.
core::EvidenceSet CpuNode() {
  core::EvidenceSet ev = {{"pci.devices", Ok(Pci({ConnectX()}))}};
  ev["gpu.inventory"] = Failed(EvidenceStatus::kNotFound);
  return ev;
}
// ToolVersion's shape: installed with a parsed version, or not installed.
json Tool(const std::string& version) { return {{"installed", true}, {"path", "/usr/bin/x"}, {"version", version}}; }
json NoTool() { return {{"installed", false}, {"path", nullptr}, {"version", nullptr}}; }

}  // namespace

// ---- access ----

TEST(CheckCoverage, SudoAvailable) {
  EXPECT_VERDICT(J("sudo-available", {{"access.sudo", Ok({{"exit_code", 0}, {"stderr", ""}})}}), Verdict::kPass,
                 Reason::kNone);
  auto denied =
      J("sudo-available", {{"access.sudo", Ok({{"exit_code", 1}, {"stderr", "sudo: a password is required"}})}});
  EXPECT_VERDICT(denied, Verdict::kWarn, Reason::kConfig);
  EXPECT_NE(denied.observed.find("a password is required"), std::string::npos) << denied.observed;
  EXPECT_VERDICT(J("sudo-available", {{"access.sudo", Failed(EvidenceStatus::kNotFound)}}), Verdict::kWarn,
                 Reason::kConfig);  // not installed
  EXPECT_VERDICT(J("sudo-available", {{"access.sudo", Failed(EvidenceStatus::kTimeout, "sudo -n true: 10 s")}}),
                 Verdict::kWarn, Reason::kEvidenceError);
  EXPECT_VERDICT(J("sudo-available", {}), Verdict::kWarn, Reason::kEvidenceError);
}

TEST(CheckCoverage, UserManagement) {
  json ok = {{"useradd", "/usr/sbin/useradd"},
             {"groupadd", "/usr/sbin/groupadd"},
             {"is_root", false},
             {"sudo_list_status", "ok"},
             {"sudo_list_exit", 0},
             {"sudo_all", true},
             {"sudo_useradd", false}};
  EXPECT_VERDICT(J("user-management", {{"access.user-management", Ok(ok)}}), Verdict::kPass, Reason::kNone);
  json root = ok;
  root["sudo_all"] = false;
  root["is_root"] = true;
  EXPECT_VERDICT(J("user-management", {{"access.user-management", Ok(root)}}), Verdict::kPass, Reason::kNone);
  json not_permitted = ok;
  not_permitted["sudo_all"] = false;
  auto np = J("user-management", {{"access.user-management", Ok(not_permitted)}});
  EXPECT_VERDICT(np, Verdict::kWarn, Reason::kConfig);
  EXPECT_EQ(np.observed, "tools present, not permitted");
  json missing = ok;
  missing["groupadd"] = nullptr;
  auto m = J("user-management", {{"access.user-management", Ok(missing)}});
  EXPECT_VERDICT(m, Verdict::kWarn, Reason::kConfig);
  EXPECT_EQ(m.message, "missing: groupadd");
  EXPECT_VERDICT(J("user-management", {{"access.user-management", Failed(EvidenceStatus::kPermissionDenied)}}),
                 Verdict::kWarn, Reason::kEvidenceError);
}

// ---- containers ----

TEST(CheckCoverage, Singularity) {
  auto pass =
      J("singularity",
        {{"apptainer.version",
          Ok({{"installed", true}, {"tool", "apptainer"}, {"path", "/usr/bin/apptainer"}, {"version", "1.3.4"}})}});
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.observed, "1.3.4");
  auto missing = J("singularity", {{"apptainer.version", Ok(NoTool())}});
  EXPECT_EQ(missing.verdict, Verdict::kFail) << Text(missing);
  EXPECT_EQ(missing.severity, Severity::kMissing);
  // apptainer ran but printed something unparsable: the collector's parse-error, never PASS.
  EXPECT_VERDICT(J("singularity", {{"apptainer.version", Failed(EvidenceStatus::kParseError, "exit 0; output: ???")}}),
                 Verdict::kWarn, Reason::kEvidenceError);
}

TEST(CheckCoverage, DockerWorkers) {
  json docker = {{"installed", true},
                 {"is_docker", true},
                 {"client_version", "27.3.1"},
                 {"client_raw", "Docker version 27.3.1, build ce12230"},
                 {"server_version", "27.3.1"}};
  auto pass = J("docker-workers", {{"docker.version", Ok(docker)}});
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.observed, "27.3.1");
  json shim = {
      {"installed", true}, {"is_docker", false}, {"client_version", nullptr}, {"client_raw", "podman version 5.2.2"}};
  auto s = J("docker-workers", {{"docker.version", Ok(shim)}});
  EXPECT_EQ(s.verdict, Verdict::kFail) << Text(s);
  EXPECT_NE(s.message.find("podman version 5.2.2"), std::string::npos) << s.message;
  EXPECT_EQ(J("docker-workers",
              {{"docker.version", Ok({{"installed", false}, {"is_docker", nullptr}, {"client_version", nullptr}})}})
                .verdict,
            Verdict::kFail);
  EXPECT_VERDICT(J("docker-workers", {{"docker.version", Failed(EvidenceStatus::kTimeout)}}), Verdict::kWarn,
                 Reason::kEvidenceError);
}

TEST(CheckCoverage, ContainerGpuLaunch) {
  auto with = [](json probe) {
    core::EvidenceSet ev = NvidiaNode();
    ev["probe.container-launch"] = Ok(std::move(probe));
    return J("container-gpu-launch", ev);
  };
  json ran = {{"engine", "docker"},
              {"image", "nvcr.io/nvidia/cuda:13.0.0-base-ubuntu24.04"},
              {"ran", true},
              {"exit_code", 0},
              {"gpus", json::array({"GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)"})},
              {"stderr", ""}};
  auto pass = with(ran);
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.observed, "1 GPU(s)");
  json blind = ran;
  blind["gpus"] = json::array();
  EXPECT_EQ(with(blind).verdict, Verdict::kFail);  // the container ran but listed no GPU
  json refused = ran;
  refused["ran"] = false;
  refused["exit_code"] = 125;
  refused["gpus"] = json::array();
  EXPECT_VERDICT(with(refused), Verdict::kWarn, Reason::kUnverified);  // docker itself failed: nothing was seen inside
  EXPECT_VERDICT(with({{"engine", nullptr}, {"ran", false}}), Verdict::kSkip, Reason::kNotApplicable);
  core::EvidenceSet off = NvidiaNode();
  off["probe.container-launch"] = Failed(EvidenceStatus::kProbeDisabled);
  EXPECT_VERDICT(J("container-gpu-launch", off), Verdict::kSkip, Reason::kProbeDisabled);
  core::EvidenceSet timeout = NvidiaNode();
  timeout["probe.container-launch"] = Failed(EvidenceStatus::kTimeout, "600 s");
  EXPECT_VERDICT(J("container-gpu-launch", timeout), Verdict::kWarn, Reason::kEvidenceError);
  core::EvidenceSet cpu = CpuNode();
  cpu["probe.container-launch"] = Ok(ran);
  EXPECT_VERDICT(J("container-gpu-launch", cpu), Verdict::kSkip, Reason::kNotApplicable);
}

// ---- fabric, hardware, gpu ----

TEST(CheckCoverage, SriovVfMadBlocked) {
  // This build has no ib-fabric-query probe: the check never passes, it says why.
  EXPECT_VERDICT(J("sriov-vf-mad-blocked", {{"sriov.vfs", Ok({{"vfs", json::array()}})}}, core::Target::kVm),
                 Verdict::kSkip, Reason::kNotApplicable);
  auto vf = J("sriov-vf-mad-blocked",
              {{"sriov.vfs", Ok({{"vfs", json::array({{{"bdf", "0000:1a:00.2"}, {"physfn", "../0000:1a:00.0"}}})}})}},
              core::Target::kVm);
  EXPECT_VERDICT(vf, Verdict::kSkip, Reason::kUnverified);
  EXPECT_NE(vf.message.find("1 RDMA VF(s)"), std::string::npos) << vf.message;
  EXPECT_VERDICT(
      J("sriov-vf-mad-blocked", {{"sriov.vfs", Failed(EvidenceStatus::kPermissionDenied)}}, core::Target::kVm),
      Verdict::kWarn, Reason::kEvidenceError);
}

TEST(CheckCoverage, HbmMemoryExposure) {
  json cpu_node = {{"node", "node0"}, {"cpulist", "0-71"}, {"mem_total_kb", 500LL * 1024 * 1024}};
  json hbm_node = {{"node", "node1"}, {"cpulist", ""}, {"mem_total_kb", 186LL * 1024 * 1024}};
  auto grace = [&](json nodes, json params) {
    return core::EvidenceSet{{"gpu.inventory", Ok(Inventory("NVIDIA GB200"))},
                             {"numa.nodes", Ok({{"nodes", nodes}, {"arch", "aarch64"}})},
                             {"nvidia.params", Ok({{"params", params}})}};
  };
  auto pass = J("hbm-memory-exposure", grace(json::array({cpu_node}), {{"CoherentGPUMemoryMode", "driver"}}));
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.observed, "CoherentGPUMemoryMode driver");
  auto onlined =
      J("hbm-memory-exposure", grace(json::array({cpu_node, hbm_node}), {{"CoherentGPUMemoryMode", "driver"}}));
  EXPECT_VERDICT(onlined, Verdict::kWarn, Reason::kConfig);
  EXPECT_NE(onlined.message.find("node1"), std::string::npos) << onlined.message;
  EXPECT_VERDICT(J("hbm-memory-exposure", grace(json::array({cpu_node}), {{"CoherentGPUMemoryMode", "numa"}})),
                 Verdict::kWarn, Reason::kConfig);
  core::EvidenceSet numa_unread = grace(json::array(), json::object());
  numa_unread["numa.nodes"] = Failed(EvidenceStatus::kPermissionDenied);
  EXPECT_VERDICT(J("hbm-memory-exposure", numa_unread), Verdict::kWarn, Reason::kEvidenceError);
  // Not a Grace platform: not applicable; an unreadable inventory is not proof of that.
  EXPECT_VERDICT(J("hbm-memory-exposure", {{"gpu.inventory", Ok(Inventory())}}), Verdict::kSkip,
                 Reason::kNotApplicable);
  EXPECT_VERDICT(J("hbm-memory-exposure", {{"gpu.inventory", Failed(EvidenceStatus::kTimeout)}}), Verdict::kWarn,
                 Reason::kEvidenceError);
  // A NUMA node whose CPU list (or memory size) was not read may be the HBM node: WARN, never PASS.
  json unread_node = hbm_node;
  unread_node["cpulist"] = nullptr;
  core::Finding unread =
      J("hbm-memory-exposure", grace(json::array({cpu_node, unread_node}), {{"CoherentGPUMemoryMode", "driver"}}));
  EXPECT_EQ(unread.verdict, Verdict::kWarn);
  EXPECT_EQ(unread.reason, Reason::kEvidenceError);
  unread_node = hbm_node;
  unread_node["mem_total_kb"] = nullptr;
  EXPECT_EQ(J("hbm-memory-exposure", grace(json::array({cpu_node, unread_node}), {{"CoherentGPUMemoryMode", "driver"}}))
                .verdict,
            Verdict::kWarn);
}

TEST(CheckCoverage, PcieAcs) {
  auto port = [](const std::string& bdf, bool redirect, bool readable = true) {
    json p = {
        {"bdf", bdf}, {"read_status", readable ? "ok" : "permission-denied"}, {"config_bytes", readable ? 4096 : 0}};
    if (readable) {
      p["extended_readable"] = true;
      p["acs_present"] = true;
      p["acs_control"] = redirect ? 0x1d : 0x11;
      p["redirect"] = redirect;
    }
    return p;
  };
  auto acs = [](std::vector<json> ports, bool common_switch = true) {
    json pair = {{"gpu", "0000:19:00.0"}, {"nic", "0000:1a:00.0"}, {"common_switch", common_switch}, {"ports", ports}};
    return core::EvidenceSet{{"pci.acs", Ok({{"pairs", json::array({pair})}, {"gpus", 1}, {"nics", 1}})}};
  };
  EXPECT_VERDICT(J("pcie-acs", acs({port("0000:18:00.0", false), port("0000:18:01.0", false)})), Verdict::kPass,
                 Reason::kNone);
  auto redirect = J("pcie-acs", acs({port("0000:18:00.0", false), port("0000:18:01.0", true)}));
  EXPECT_EQ(redirect.verdict, Verdict::kFail) << Text(redirect);
  EXPECT_EQ(redirect.severity, Severity::kConfig);
  EXPECT_NE(Text(redirect).find("0000:18:01.0 (GPU 0000:19:00.0 <-> NIC 0000:1a:00.0): ACSCtl 0x001d"),
            std::string::npos)
      << Text(redirect);
  // Config space unread (not root): never PASS.
  EXPECT_VERDICT(J("pcie-acs", acs({port("0000:18:00.0", false), port("0000:18:01.0", false, false)})), Verdict::kWarn,
                 Reason::kEvidenceError);
  // A guest's virtual bridges say nothing about the host's ACS, even with redirect off.
  EXPECT_VERDICT(J("pcie-acs", acs({port("0000:18:00.0", false)}), core::Target::kVm), Verdict::kWarn,
                 Reason::kAttestationRequired);
  EXPECT_VERDICT(J("pcie-acs", acs({port("0000:18:00.0", true)}, false)), Verdict::kSkip,
                 Reason::kNotApplicable);  // no shared switch
  EXPECT_VERDICT(J("pcie-acs", {{"pci.acs", Ok({{"pairs", json::array()}, {"gpus", 0}, {"nics", 1}})}}), Verdict::kSkip,
                 Reason::kNotApplicable);
  EXPECT_VERDICT(J("pcie-acs", {{"pci.acs", Failed(EvidenceStatus::kError, "no /sys/bus/pci")}}), Verdict::kWarn,
                 Reason::kEvidenceError);
}

TEST(CheckCoverage, VmIommuPassthrough) {
  auto iommu = [](std::vector<json> devices, bool complete = true) {
    json list = json::array();
    for (auto& d : devices) list.push_back(d);
    return core::EvidenceSet{{"iommu", Ok({{"cmdline_flags", json::array({"iommu=pt"})},
                                           {"iommu_units", json::array({"dmar0"})},
                                           {"devices", list},
                                           {"pci_inventory_complete", complete}})}};
  };
  auto dev = [](const std::string& bdf, json type, const std::string& status = "ok") {
    return json{{"bdf", bdf}, {"kind", "gpu"}, {"domain_type", type}, {"read_status", status}};
  };
  auto pass =
      J("vm-iommu-passthrough", iommu({dev("0000:19:00.0", "identity"), dev("0000:1a:00.0", nullptr, "not-found")}));
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.observed, "cmdline: [\"iommu=pt\"]");
  EXPECT_VERDICT(J("vm-iommu-passthrough", iommu({dev("0000:19:00.0", "identity"), dev("0000:1a:00.0", "DMA-FQ")})),
                 Verdict::kWarn, Reason::kConfig);
  EXPECT_VERDICT(J("vm-iommu-passthrough",
                   iommu({dev("0000:19:00.0", "identity"), dev("0000:1a:00.0", nullptr, "permission-denied")})),
                 Verdict::kWarn, Reason::kEvidenceError);
  EXPECT_VERDICT(J("vm-iommu-passthrough", iommu({})), Verdict::kSkip, Reason::kNotApplicable);
  EXPECT_VERDICT(J("vm-iommu-passthrough", iommu({}, false)), Verdict::kWarn,
                 Reason::kEvidenceError);  // no device seen: the listing failed
  EXPECT_VERDICT(J("vm-iommu-passthrough", {{"iommu", Failed(EvidenceStatus::kPermissionDenied)}}), Verdict::kWarn,
                 Reason::kEvidenceError);
}

TEST(CheckCoverage, CpuPowerGovernor) {
  auto gov = [](json governors, int cpus, int unreadable = 0, int missing = 0) {
    return core::EvidenceSet{{"cpu.governor", Ok({{"cpus", cpus},
                                                  {"governors", governors},
                                                  {"cpufreq_missing", missing},
                                                  {"unreadable", unreadable},
                                                  {"driver", "intel_pstate"}})}};
  };
  auto pass = J("cpu-power-governor", gov({{"performance", 64}}, 64));
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.observed, "performance x64");
  auto mixed = J("cpu-power-governor", gov({{"performance", 60}, {"powersave", 4}}, 64));
  EXPECT_VERDICT(mixed, Verdict::kWarn, Reason::kConfig);
  EXPECT_EQ(mixed.message, "4 of 64 CPUs are not on the performance governor");
  EXPECT_VERDICT(J("cpu-power-governor", gov(json::object(), 64, 64)), Verdict::kWarn, Reason::kEvidenceError);
  EXPECT_VERDICT(J("cpu-power-governor", gov(json::object(), 8, 0, 8)), Verdict::kSkip,
                 Reason::kUnverified);  // no cpufreq (a VM)
  EXPECT_VERDICT(J("cpu-power-governor", {{"cpu.governor", Failed(EvidenceStatus::kPermissionDenied)}}), Verdict::kWarn,
                 Reason::kEvidenceError);
  // 60 of 64 governors unread, the 4 read on performance: WARN evidence-error, never "all CPUs".
  core::Finding partly = J("cpu-power-governor", gov({{"performance", 4}}, 64, 60));
  EXPECT_EQ(partly.verdict, Verdict::kWarn);
  EXPECT_EQ(partly.reason, Reason::kEvidenceError);
}

// ---- isolation ----

TEST(CheckCoverage, GuestKernelCurrent) {
  auto pkgs = [](const std::string& running, std::vector<std::string> installed, json reboot) {
    json list = json::array();
    for (const auto& r : installed) list.push_back({{"package", "linux-image-" + r}, {"version", "x"}, {"release", r}});
    json d = {{"running", running}, {"installed", list}, {"package_manager", "dpkg"}};
    if (!reboot.is_null()) d["reboot_required"] = reboot;
    return core::EvidenceSet{{"kernel.packages", Ok(d)}};
  };
  EXPECT_VERDICT(
      J("guest-kernel-current", pkgs("6.8.0-137-generic", {"6.8.0-124-generic", "6.8.0-137-generic"}, false)),
      Verdict::kPass, Reason::kNone);
  // Another flavour's newer kernel does not count.
  EXPECT_VERDICT(
      J("guest-kernel-current", pkgs("6.8.0-137-generic", {"6.8.0-137-generic", "6.8.0-140-lowlatency"}, false)),
      Verdict::kPass, Reason::kNone);
  auto pending =
      J("guest-kernel-current", pkgs("6.8.0-124-generic", {"6.8.0-124-generic", "6.8.0-137-generic"}, false));
  EXPECT_EQ(pending.verdict, Verdict::kFail) << Text(pending);
  EXPECT_EQ(pending.expected, "newest installed: 6.8.0-137-generic");
  EXPECT_VERDICT(J("guest-kernel-current", pkgs("6.8.0-137-generic", {"6.8.0-137-generic"}, true)), Verdict::kWarn,
                 Reason::kConfig);
  // The reboot-required flag could not be stat'ed (absent from the evidence): unread, not "no reboot".
  EXPECT_VERDICT(J("guest-kernel-current", pkgs("6.8.0-137-generic", {"6.8.0-137-generic"}, nullptr)), Verdict::kWarn,
                 Reason::kEvidenceError);
  json no_db = {{"running", "6.8.0-137-generic"},
                {"installed", nullptr},
                {"package_db_error", "dpkg-query: timeout"},
                {"reboot_required", false}};
  auto db = J("guest-kernel-current", {{"kernel.packages", Ok(no_db)}});
  EXPECT_VERDICT(db, Verdict::kWarn, Reason::kEvidenceError);
  EXPECT_EQ(db.message, "dpkg-query: timeout");
  EXPECT_VERDICT(
      J("guest-kernel-current",
        {{"kernel.packages", Ok({{"running", nullptr}, {"installed", json::array()}, {"reboot_required", false}})}}),
      Verdict::kWarn, Reason::kEvidenceError);
}

TEST(CheckCoverage, UbuntuKernelFragnesiaDirtyFrag) {
  auto noble = [](json kernel) {
    core::EvidenceSet ev = {
        {"os.release", Ok({{"id", "ubuntu"}, {"codename", "noble"}, {"pretty_name", "Ubuntu 24.04.3 LTS"}})}};
    ev["os.kernel"] = kernel.is_null() ? Failed(EvidenceStatus::kPermissionDenied) : Ok({{"release", kernel}});
    return ev;
  };
  const char* id = "ubuntu-kernel-fragnesia-dirty-frag";
  auto pass = J(id, noble("6.8.0-124-generic"));  // the USN-8373-1 floor, ABI 124
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.observed, "6.8.0-124-generic");
  auto fail = J(id, noble("6.8.0-110-generic"));
  EXPECT_EQ(fail.verdict, Verdict::kFail) << Text(fail);
  EXPECT_EQ(fail.severity, Severity::kVersion);
  // A noble HWE kernel: another kernel line, for which the table has no floor.
  EXPECT_VERDICT(J(id, noble("6.11.0-29-generic")), Verdict::kWarn, Reason::kUnverified);
  EXPECT_VERDICT(J(id, noble("not-a-kernel")), Verdict::kWarn, Reason::kUnverified);
  EXPECT_VERDICT(J(id, noble(nullptr)), Verdict::kWarn, Reason::kEvidenceError);
  EXPECT_VERDICT(
      J(id, {{"os.release", Ok({{"id", "ubuntu"}, {"codename", "jammy"}, {"pretty_name", "Ubuntu 22.04.5 LTS"}})},
             {"os.kernel", Ok({{"release", "5.15.0-1-generic"}})}}),
      Verdict::kSkip, Reason::kNotApplicable);
  EXPECT_VERDICT(
      J(id, {{"os.release", Failed(EvidenceStatus::kNotFound)}, {"os.kernel", Ok({{"release", "6.8.0-110-generic"}})}}),
      Verdict::kWarn, Reason::kEvidenceError);
}

// ---- node ----

TEST(CheckCoverage, EssentialTools) {
  auto tools = [](bool missing_tool, bool pm) {
    json t = {{"essential_tools", {{"curl", true}, {"git", true}, {"tmux", !missing_tool}}},
              {"package_managers", {{"apt", pm}, {"dnf", false}}}};
    return core::EvidenceSet{{"tools.essential", Ok(t)}};
  };
  EXPECT_VERDICT(J("essential-tools", tools(false, true)), Verdict::kPass, Reason::kNone);
  auto m = J("essential-tools", tools(true, true));
  EXPECT_VERDICT(m, Verdict::kWarn, Reason::kConfig);
  EXPECT_EQ(m.message, "missing: tmux");
  auto no_pm = J("essential-tools", tools(false, false));
  EXPECT_VERDICT(no_pm, Verdict::kWarn, Reason::kConfig);
  EXPECT_NE(no_pm.message.find("a package manager"), std::string::npos);
  EXPECT_VERDICT(J("essential-tools", {{"tools.essential", Failed(EvidenceStatus::kError, "PATH unreadable")}}),
                 Verdict::kWarn, Reason::kEvidenceError);
}

TEST(CheckCoverage, RdmaDriverStack) {
  auto node = [](bool driver, bool ibstat) {
    return core::EvidenceSet{
        {"pci.devices", Ok(Pci({NvidiaGpu(), ConnectX()}))},
        {"rdma.devices",
         Ok({{"devices", json::array({{{"name", "mlx5_0"}, {"fw_ver", "28.43.8002"}, {"vendor", "0x15b3"}}})},
             {"pci_mellanox_functions", 1}})},
        {"rdma.stack",
         Ok({{"mlx5_core", driver},
             {"ib_core", driver},
             {"efa", false},
             {"tools", {{"ibv_devices", true}, {"ibstat", ibstat}, {"ofed_info", false}, {"rdma", true}}}})}};
  };
  auto pass = J("rdma-driver-stack", node(true, true));  // ofed_info is optional (inbox rdma-core)
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.observed, "1 NIC function(s), 1 RDMA device(s), inbox rdma-core");
  auto tools = J("rdma-driver-stack", node(true, false));
  EXPECT_VERDICT(tools, Verdict::kWarn, Reason::kConfig);
  EXPECT_EQ(tools.message, "RDMA utilities missing: ibstat");
  auto no_driver = J("rdma-driver-stack", node(false, true));
  EXPECT_EQ(no_driver.verdict, Verdict::kFail) << Text(no_driver);
  EXPECT_EQ(no_driver.severity, Severity::kMissing);
  core::EvidenceSet no_device = node(true, true);
  no_device["rdma.devices"] =
      Ok({{"devices", json::array()}, {"pci_mellanox_functions", 1}});  // /sys/class/infiniband absent
  EXPECT_EQ(J("rdma-driver-stack", no_device).verdict, Verdict::kFail);
  EXPECT_VERDICT(J("rdma-driver-stack", {{"pci.devices", Ok(Pci({NvidiaGpu()}))}}), Verdict::kSkip,
                 Reason::kNotApplicable);
  core::EvidenceSet stack_unread = node(true, true);
  stack_unread["rdma.stack"] = Failed(EvidenceStatus::kError, "sysfs unreadable");
  EXPECT_VERDICT(J("rdma-driver-stack", stack_unread), Verdict::kWarn, Reason::kEvidenceError);
  EXPECT_VERDICT(J("rdma-driver-stack", {{"pci.devices", Failed(EvidenceStatus::kPermissionDenied)}}), Verdict::kWarn,
                 Reason::kEvidenceError);
  // /sys/class/infiniband could not be listed with the driver loaded: WARN evidence-error, never FAIL.
  core::EvidenceSet devices_unread = node(true, true);
  devices_unread["rdma.devices"] = Failed(EvidenceStatus::kPermissionDenied);
  EXPECT_EQ(J("rdma-driver-stack", devices_unread).verdict, Verdict::kWarn);
  EXPECT_EQ(J("rdma-driver-stack", devices_unread).reason, Reason::kEvidenceError);
}

// ---- services ----

TEST(CheckCoverage, SecurityVirtioNetBluefield) {
  // The controller runs on the DPU: the host never passes it, it asks for an attestation.
  for (const char* id : {"security-virtio-net-bluefield", "security-virtio-net-bluefield-exposure"}) {
    SCOPED_TRACE(id);
    EXPECT_VERDICT(J(id, {{"pci.devices", Ok(Pci({NvidiaGpu(), BlueField()}))}}), Verdict::kWarn,
                   Reason::kAttestationRequired);
    EXPECT_VERDICT(J(id, {{"pci.devices", Ok(Pci({NvidiaGpu(), ConnectX()}))}}), Verdict::kSkip,
                   Reason::kNotApplicable);  // a ConnectX is no DPU
    EXPECT_VERDICT(J(id, {{"pci.devices", Failed(EvidenceStatus::kPermissionDenied)}}), Verdict::kWarn,
                   Reason::kEvidenceError);
  }
  auto n = J("security-virtio-net-bluefield", {{"pci.devices", Ok(Pci({BlueField()}))}});
  EXPECT_NE(n.message.find("1 BlueField function(s)"), std::string::npos) << n.message;
}

TEST(CheckCoverage, SecurityVirtioNetBluefieldExposure) {
  auto f = J("security-virtio-net-bluefield-exposure", {{"pci.devices", Ok(Pci({BlueField()}))}});
  EXPECT_VERDICT(f, Verdict::kWarn, Reason::kAttestationRequired);
  EXPECT_NE(f.message.find("NIC vs DPU mode"), std::string::npos) << f.message;
}

TEST(CheckCoverage, ObjectStorageEndpoint) {
  auto probe = [](bool reachable, std::vector<std::pair<std::string, bool>> steps) {
    json s = json::array();
    for (const auto& [op, ok] : steps) {
      json step = {{"op", op}, {"ok", ok}, {"ms", 12.5}};
      if (!ok) step["error"] = "403 AccessDenied";
      s.push_back(step);
    }
    json p = {{"endpoint", "https://s3.example"},
              {"bucket", "audit"},
              {"reachable", reachable},
              {"steps", s},
              {"credentials", "environment"}};
    return core::EvidenceSet{{"probe.s3", Ok({{"configured", true}, {"probe", p}})}};
  };
  const std::vector<std::pair<std::string, bool>> all = {
      {"HEAD", true}, {"PUT", true}, {"GET", true}, {"DELETE", true}};
  auto pass = J("object-storage-endpoint", probe(true, all));
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.message, "https://s3.example bucket audit: HEAD, PUT, GET and DELETE succeeded");
  auto put =
      J("object-storage-endpoint", probe(true, {{"HEAD", true}, {"PUT", false}, {"GET", true}, {"DELETE", true}}));
  EXPECT_VERDICT(put, Verdict::kWarn, Reason::kConfig);
  EXPECT_NE(Text(put).find("PUT: 403 AccessDenied"), std::string::npos) << Text(put);
  EXPECT_VERDICT(J("object-storage-endpoint", probe(true, {{"HEAD", true}, {"PUT", true}})), Verdict::kWarn,
                 Reason::kEvidenceError);  // stopped early
  EXPECT_EQ(J("object-storage-endpoint", probe(false, {{"HEAD", false}})).verdict, Verdict::kFail);
  EXPECT_VERDICT(J("object-storage-endpoint", {{"probe.s3", Ok({{"configured", false}})}}), Verdict::kSkip,
                 Reason::kPrerequisiteMissing);
  EXPECT_VERDICT(J("object-storage-endpoint", {{"probe.s3", Failed(EvidenceStatus::kProbeDisabled)}}), Verdict::kSkip,
                 Reason::kProbeDisabled);
  EXPECT_VERDICT(
      J("object-storage-endpoint", {{"probe.s3", Failed(EvidenceStatus::kParseError, "probe s3 exit 1: no steps")}}),
      Verdict::kWarn, Reason::kEvidenceError);
}

TEST(CheckCoverage, HpcxAvailable) {
  auto mpi = [](json env, json opt, json ucx, bool mpirun) {
    return core::EvidenceSet{
        {"mpi.hpcx", Ok({{"hpcx_dir_env", env}, {"hpcx_in_opt", opt}, {"mpirun", mpirun}, {"ucx_pml", ucx}})}};
  };
  EXPECT_VERDICT(J("hpcx-available", mpi("/opt/hpcx-v2.21", json::array(), nullptr, false)), Verdict::kPass,
                 Reason::kNone);
  EXPECT_VERDICT(J("hpcx-available", mpi(nullptr, json::array(), true, true)), Verdict::kPass, Reason::kNone);
  auto opt = J("hpcx-available", mpi(nullptr, json::array({"/opt/hpcx-v2.21"}), nullptr, false));
  EXPECT_VERDICT(opt, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(opt.details, std::vector<std::string>{"/opt/hpcx-v2.21"});
  auto plain = J("hpcx-available", mpi(nullptr, json::array(), false, true));
  EXPECT_VERDICT(plain, Verdict::kWarn, Reason::kConfig);
  EXPECT_EQ(plain.message, "an MPI is on PATH but not UCX-enabled, and no HPC-X");
  EXPECT_VERDICT(J("hpcx-available", mpi(nullptr, json::array(), nullptr, false)), Verdict::kWarn, Reason::kConfig);
  EXPECT_VERDICT(J("hpcx-available", {{"mpi.hpcx", Failed(EvidenceStatus::kNotCollected)}}, core::Target::kContainer),
                 Verdict::kWarn, Reason::kEvidenceError);
}

// ---- versions (floors from data/minimum-versions.json, judged on 2026-11-30) ----

TEST(CheckCoverage, SecurityNvidiaContainerToolkit) {
  auto tk = [](json data) {
    core::EvidenceSet ev = NvidiaNode();
    ev["container-toolkit.version"] = Ok(std::move(data));
    return J("security-nvidia-container-toolkit", ev);
  };
  auto pass = tk({{"installed", true}, {"tool", "nvidia-ctk"}, {"version", "1.19.1"}});  // NVIDIA-5850 floor
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.expected, ">= 1.19.1");
  auto fail = tk({{"installed", true}, {"tool", "nvidia-ctk"}, {"version", "1.19.0"}});
  EXPECT_EQ(fail.verdict, Verdict::kFail) << Text(fail);
  EXPECT_EQ(fail.severity, Severity::kVersion);
  EXPECT_EQ(tk({{"installed", true}, {"tool", "nvidia-ctk"}, {"version", "0.1.0"}}).verdict,
            Verdict::kFail);  // older than everything known
  EXPECT_VERDICT(tk({{"installed", true}, {"tool", "nvidia-ctk"}, {"version", "garbage"}}), Verdict::kWarn,
                 Reason::kUnverified);
  EXPECT_VERDICT(tk({{"installed", false}, {"version", nullptr}}), Verdict::kSkip, Reason::kNotApplicable);
  core::EvidenceSet unread = NvidiaNode();
  unread["container-toolkit.version"] = Failed(EvidenceStatus::kParseError, "exit 0; output: ???");
  EXPECT_VERDICT(J("security-nvidia-container-toolkit", unread), Verdict::kWarn, Reason::kEvidenceError);
  core::EvidenceSet cpu = CpuNode();
  cpu["container-toolkit.version"] = Ok({{"installed", true}, {"version", "1.0.0"}});
  EXPECT_VERDICT(J("security-nvidia-container-toolkit", cpu), Verdict::kSkip, Reason::kNotApplicable);
}

TEST(CheckCoverage, SecurityDcgm) {
  auto dcgm = [](json data) {
    core::EvidenceSet ev = NvidiaNode();
    ev["dcgm.version"] = Ok(std::move(data));
    return J("security-dcgm", ev);
  };
  EXPECT_VERDICT(dcgm(Tool("4.5.3")), Verdict::kPass, Reason::kNone);  // NVIDIA-5857 floor
  auto fail = dcgm(Tool("4.4.2"));
  EXPECT_EQ(fail.verdict, Verdict::kFail) << Text(fail);
  EXPECT_EQ(fail.observed, "4.4.2");
  EXPECT_EQ(dcgm(Tool("1.0.0")).verdict, Verdict::kFail);
  EXPECT_VERDICT(dcgm(Tool("four")), Verdict::kWarn, Reason::kUnverified);
  EXPECT_VERDICT(dcgm(NoTool()), Verdict::kSkip, Reason::kNotApplicable);
  core::EvidenceSet timeout = NvidiaNode();
  timeout["dcgm.version"] = Failed(EvidenceStatus::kTimeout);
  EXPECT_VERDICT(J("security-dcgm", timeout), Verdict::kWarn, Reason::kEvidenceError);
  core::EvidenceSet cpu = CpuNode();
  cpu["dcgm.version"] = Ok(Tool("1.0.0"));
  EXPECT_VERDICT(J("security-dcgm", cpu), Verdict::kSkip, Reason::kNotApplicable);
}

TEST(CheckCoverage, SecurityRunc) {
  auto runc = [](json data) { return J("security-runc", {{"runc.version", Ok(std::move(data))}}); };
  EXPECT_VERDICT(runc(Tool("1.2.8")), Verdict::kPass, Reason::kNone);  // the 1.2 line's floor (GHSA-9493-h29p-rfm2)
  EXPECT_VERDICT(runc(Tool("1.1.14")), Verdict::kPass, Reason::kNone);
  auto fail = runc(Tool("1.2.7"));
  EXPECT_EQ(fail.verdict, Verdict::kFail) << Text(fail);
  EXPECT_EQ(fail.expected, ">= 1.2.8 (1.2)");
  EXPECT_EQ(runc(Tool("1.1.13")).verdict, Verdict::kFail);
  EXPECT_EQ(runc(Tool("0.0.9")).verdict, Verdict::kFail);  // older than every rung: compared with the oldest, 0.1.0
  EXPECT_VERDICT(runc(Tool("runc")), Verdict::kWarn, Reason::kUnverified);  // unparsable version
  EXPECT_VERDICT(runc(NoTool()), Verdict::kSkip, Reason::kNotApplicable);
  EXPECT_VERDICT(J("security-runc", {{"runc.version", Failed(EvidenceStatus::kPermissionDenied)}}), Verdict::kWarn,
                 Reason::kEvidenceError);
}

TEST(CheckCoverage, SecurityConnectxFirmware) {
  auto fw = [](std::vector<json> fws, json pci_functions = 1) {
    json devices = json::array();
    int i = 0;
    for (const auto& v : fws) {
      devices.push_back({{"name", "mlx5_" + std::to_string(i++)},
                         {"vendor", "0x15b3"},
                         {"fw_ver", v},
                         {"fw_read_status", v.is_string() ? "ok" : "permission-denied"},
                         {"ports", json::array()}});
    }
    return J("security-connectx-firmware",
             {{"rdma.devices", Ok({{"devices", devices}, {"pci_mellanox_functions", pci_functions}})}});
  };
  auto pass = fw({"28.43.8002", "28.39.8002"});  // trains 43 and 39: minimum patch 8002 (a_id 5699)
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.message, "all 2 ConnectX device(s) meet the firmware floor");
  auto fail = fw({"28.43.8002", "28.43.2026"});
  EXPECT_EQ(fail.verdict, Verdict::kFail) << Text(fail);
  EXPECT_EQ(fail.observed, "28.43.2026");
  EXPECT_VERDICT(fw({"28.43.8002", nullptr}), Verdict::kWarn, Reason::kUnverified);  // one firmware unread
  EXPECT_VERDICT(fw({"16.31.1014"}), Verdict::kWarn, Reason::kUnverified);  // a train the bulletin does not list
  EXPECT_EQ(fw({"12.22.4030"}).verdict, Verdict::kFail);                    // older than every train the table knows
  EXPECT_VERDICT(fw({}, 0), Verdict::kSkip, Reason::kNotApplicable);        // no ConnectX at all
  EXPECT_VERDICT(fw({}, 2), Verdict::kWarn, Reason::kEvidenceError);        // ConnectX functions, no RDMA device
  EXPECT_VERDICT(fw({}, nullptr), Verdict::kWarn, Reason::kEvidenceError);  // PCI unread
  EXPECT_VERDICT(J("security-connectx-firmware", {{"rdma.devices", Failed(EvidenceStatus::kTimeout)}}), Verdict::kWarn,
                 Reason::kEvidenceError);
  // An EFA device (another vendor) is not graded against ConnectX floors.
  auto efa = J(
      "security-connectx-firmware",
      {{"rdma.devices", Ok({{"devices", json::array({{{"name", "rdmap0"}, {"vendor", "0x1d0f"}, {"fw_ver", "1.0.0"}}})},
                            {"pci_mellanox_functions", 0}})}});
  EXPECT_VERDICT(efa, Verdict::kSkip, Reason::kNotApplicable);
}

// ---- Slurm (judged until now only by the live cluster test, tests/slurm_test.cc) ----

TEST(CheckCoverage, SlurmCommands) {
  auto cmds = [](bool sacct_ok) {
    json list = json::array();
    for (const char* n : {"sinfo", "squeue", "scontrol", "salloc", "sbatch", "srun"}) {
      list.push_back({{"name", n}, {"command", std::string(n) + " --version"}, {"ok", true}});
    }
    json sacct = {{"name", "sacct"}, {"command", "sacct --version"}, {"ok", sacct_ok}};
    if (!sacct_ok) sacct["error"] = "not-found";
    list.push_back(sacct);
    return core::EvidenceSet{{"slurm.commands", Ok({{"commands", list}})}};
  };
  auto pass = J("slurm-commands", cmds(true), core::Target::kSlurm);
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.message, "all 7 Slurm commands respond");
  auto missing = J("slurm-commands", cmds(false), core::Target::kSlurm);
  EXPECT_VERDICT(missing, Verdict::kWarn, Reason::kConfig);
  EXPECT_EQ(missing.details, std::vector<std::string>{"sacct --version: not-found"});
  EXPECT_VERDICT(J("slurm-commands", {{"slurm.commands", Failed(EvidenceStatus::kError, "PATH unreadable")}},
                   core::Target::kSlurm),
                 Verdict::kWarn, Reason::kEvidenceError);
}

TEST(CheckCoverage, CudaVisibleDevices) {
  auto step = [](json cvd, const std::string& gpus = "8", int nvml = 8) {
    json env = {{"SLURM_JOB_ID", "42"},
                {"CLUSTERMAX_STEP_GPUS", gpus},
                {"CUDA_VISIBLE_DEVICES", cvd},
                {"SLURM_STEP_GPUS", cvd}};
    json devices = json::array();
    for (int i = 0; i < nvml; ++i) devices.push_back({{"index", i}, {"name", "NVIDIA H100 80GB HBM3"}});
    return core::EvidenceSet{{"slurm.step-env", Ok(env)},
                             {"gpu.inventory", Ok({{"device_count", nvml}, {"devices", devices}})}};
  };
  auto pass = J("cuda-visible-devices", step("0,1,2,3,4,5,6,7"), core::Target::kSlurm);
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_VERDICT(J("cuda-visible-devices", step(nullptr), core::Target::kSlurm), Verdict::kWarn,
                 Reason::kConfig);  // unset in a GPU step
  EXPECT_VERDICT(J("cuda-visible-devices", step("0,1,2,3"), core::Target::kSlurm), Verdict::kWarn,
                 Reason::kConfig);  // 4 listed, 8 asked
  auto nvml = J("cuda-visible-devices", step("0,1,2,3,4,5,6,7", "8", 4), core::Target::kSlurm);
  EXPECT_VERDICT(nvml, Verdict::kWarn, Reason::kConfig);
  EXPECT_NE(nvml.message.find("NVML in the step sees 4"), std::string::npos) << nvml.message;
  EXPECT_VERDICT(J("cuda-visible-devices", step("0", "0"), core::Target::kSlurm), Verdict::kSkip,
                 Reason::kUnverified);  // no GPU step
  EXPECT_VERDICT(
      J("cuda-visible-devices", {{"slurm.step-env", Failed(EvidenceStatus::kNotFound)}}, core::Target::kSlurm),
      Verdict::kWarn, Reason::kEvidenceError);
}

namespace {

audit::NodeEvidence Worker(const std::string& name, const std::string& cuda, const std::string& enroot,
                           const std::string& partial = "") {
  audit::NodeEvidence n;
  n.node = name;
  n.role = "compute";
  n.manifest.partial = partial;
  n.evidence["cuda.toolkits"] =
      Ok({{"toolkits", json::array({{{"nvcc", "/usr/local/cuda/bin/nvcc"}, {"version", cuda}, {"default", true}}})}});
  n.evidence["enroot.version"] = Ok({{"installed", true}, {"version", enroot}});
  return n;
}

core::EvidenceSet Fleet(const std::vector<audit::NodeEvidence>& nodes,
                        std::vector<audit::UnreachableNode> unreachable = {},
                        const audit::NodeEvidence* login = nullptr) {
  std::vector<const audit::NodeEvidence*> ptrs;
  for (const auto& n : nodes) ptrs.push_back(&n);
  return {{"fleet.summary", audit::FleetSummary(ptrs, unreachable, login)}};
}

}  // namespace

TEST(CheckCoverage, WorkerEvidenceCoverage) {
  std::vector<audit::NodeEvidence> three = {Worker("n1", "13.0", "3.5.0"), Worker("n2", "13.0", "3.5.0"),
                                            Worker("n3", "13.0", "3.5.0")};
  auto pass = J("worker-evidence-coverage", Fleet(three), core::Target::kSlurm);
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  EXPECT_EQ(pass.message, "3 of 3 nodes returned evidence");
  auto lost = J("worker-evidence-coverage", Fleet({three[0], three[1]}, {{"n3", "state drain: bad GPU"}}),
                core::Target::kSlurm);
  EXPECT_VERDICT(lost, Verdict::kWarn, Reason::kCoveragePartial);
  EXPECT_EQ(lost.details, std::vector<std::string>{"n3: state drain: bad GPU"});
  auto partial =
      J("worker-evidence-coverage", Fleet({three[0], three[1], Worker("n3", "13.0", "3.5.0", "node deadline 2 s")}),
        core::Target::kSlurm);
  EXPECT_VERDICT(partial, Verdict::kWarn, Reason::kCoveragePartial);
  EXPECT_NE(Text(partial).find("n3: partial (node deadline 2 s)"), std::string::npos) << Text(partial);
  // A single-node audit has no fleet: not applicable, said so.
  EXPECT_VERDICT(J("worker-evidence-coverage", {}, core::Target::kSlurm), Verdict::kSkip, Reason::kNotApplicable);
  EXPECT_VERDICT(J("worker-evidence-coverage", {{"fleet.summary", Failed(EvidenceStatus::kError, "no bundles")}},
                   core::Target::kSlurm),
                 Verdict::kWarn, Reason::kEvidenceError);
}

TEST(CheckCoverage, HeadWorkerConsistency) {
  std::vector<audit::NodeEvidence> nodes = {Worker("n1", "13.0", "3.5.0"), Worker("n2", "13.0", "3.5.0"),
                                            Worker("n3", "12.8", "3.5.0")};
  audit::NodeEvidence login = Worker("login1", "13.0", "3.5.0");
  login.role = "login";
  auto pass =
      J("head-worker-consistency", Fleet(nodes, {}, &login), core::Target::kSlurm);  // the nodes' majority: 13.0
  EXPECT_VERDICT(pass, Verdict::kPass, Reason::kNone);
  audit::NodeEvidence old_login = Worker("login1", "12.4", "3.5.0");
  old_login.role = "login";
  auto differs = J("head-worker-consistency", Fleet(nodes, {}, &old_login), core::Target::kSlurm);
  EXPECT_VERDICT(differs, Verdict::kWarn, Reason::kConfig);
  EXPECT_NE(Text(differs).find("cuda toolkit: login node 12.4 vs nodes 13.0"), std::string::npos) << Text(differs);
  // The login node's own facts were not collected: nothing to compare.
  EXPECT_VERDICT(J("head-worker-consistency", Fleet(nodes), core::Target::kSlurm), Verdict::kSkip,
                 Reason::kNotApplicable);
  EXPECT_VERDICT(
      J("head-worker-consistency", {{"fleet.summary", Failed(EvidenceStatus::kParseError)}}, core::Target::kSlurm),
      Verdict::kWarn, Reason::kEvidenceError);
}

// ---- the registry: every check is named by a test ----

namespace {

// The test sources compiled by tests/CMakeLists.txt (a file not built is no test).
std::vector<fs::path> CompiledTestSources() {
  fs::path dir = fs::path(CLUSTERMAX_TESTS_DIR);
  auto cmake = util::ReadLocalFile(dir / "CMakeLists.txt");
  if (!cmake) return {};
  std::vector<fs::path> out;
  std::set<std::string> seen;
  static const std::regex re(R"(\b([A-Za-z0-9_]+\.cc)\b)");
  for (std::sregex_iterator it(cmake->begin(), cmake->end(), re), end; it != end; ++it) {
    std::string name = (*it)[1].str();
    if (seen.insert(name).second && fs::exists(dir / name)) out.push_back(dir / name);
  }
  return out;
}

}  // namespace

TEST(CheckCoverage, EveryRegisteredCheckIsNamedByATest) {
  auto sources = CompiledTestSources();
  std::string names;
  std::string text;
  for (const auto& p : sources) {
    names += " " + p.filename().string();
    auto t = util::ReadLocalFile(p);
    ASSERT_TRUE(t) << p;
    text += *t;
  }
  // The scan must see the unit tests themselves, or it proves nothing.
  ASSERT_NE(names.find(" check_coverage_test.cc"), std::string::npos)
      << "test sources from " << CLUSTERMAX_TESTS_DIR << ":" << names;
  ASSERT_NE(names.find(" checks_test.cc"), std::string::npos) << names;
  int untested = 0;
  std::string list;
  for (const auto& c : checks::DefaultRegistry().all()) {
    if (text.find("\"" + c.info.id + "\"") != std::string::npos) continue;
    ++untested;
    list += (list.empty() ? "" : ", ") + c.info.id;
  }
  EXPECT_EQ(untested, 0) << untested << " registered check(s) named by no test in " << CLUSTERMAX_TESTS_DIR
                         << " (add a test that judges each, e.g. in check_coverage_test.cc): " << list;
  EXPECT_GE(checks::DefaultRegistry().all().size(), 100u);
}
