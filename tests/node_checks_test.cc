// The complete-node checks on literal evidence, and their collectors on hand-built bundles.
#include <gtest/gtest.h>

#include "checks/register.h"
#include "collect/collector.h"
#include "collect/parsers.h"
#include "host/bundle.h"
#include "testutil.h"
#include "util/time.h"

using namespace clustermax;
using core::EvidenceStatus;
using core::Verdict;
using nlohmann::json;

namespace {

core::Evidence Ok(json data) {
  core::Evidence e;
  e.status = EvidenceStatus::kOk;
  e.data = std::move(data);
  return e;
}

json Pci(std::vector<json> devices) {
  json list = json::array();
  for (auto& d : devices) list.push_back(d);
  return {{"devices", list}, {"complete", true}, {"unreadable", 0}};
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

core::Finding J(const std::string& id, core::EvidenceSet ev, core::Target target = core::Target::kStandalone) {
  const core::Check* c = checks::DefaultRegistry().Find(id);
  EXPECT_NE(c, nullptr) << id;
  for (const auto& n : c->info.needs) {
    if (!ev.count(n)) ev[n].status = EvidenceStatus::kNotCollected;  // evidence a test does not supply
  }
  core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), target,
                         *util::ParseRfc3339("2026-11-30T00:00:00Z"));
  return c->judge(ctx);
}

core::EvidenceSet GpuNode() {
  return {{"pci.devices", Ok(Pci({NvidiaGpu(), ConnectX()}))},
          {"gpu.inventory", Ok({{"device_count", 1},
                                {"cuda_driver_version", "13.0"},
                                {"devices", json::array({{{"index", 0}, {"name", "NVIDIA H100 80GB HBM3"}}})}})}};
}

}  // namespace

TEST(NodeChecks, JanuscapeBareMetalNobleBelowFloorFails) {
  core::EvidenceSet ev = {{"os.cpuinfo", Ok({{"vmx", true}, {"svm", false}, {"hypervisor", false}})},
                          {"kvm.exposure", Ok({{"dev_kvm", true}, {"nested", "Y"}})},
                          {"os.release", Ok({{"codename", "noble"}})},
                          {"os.kernel", Ok({{"release", "6.8.0-124-generic"}})}};
  EXPECT_EQ(J("security-januscape", ev).verdict, Verdict::kFail);
  ev["os.kernel"] = Ok({{"release", "6.8.0-137-generic"}});
  EXPECT_EQ(J("security-januscape", ev).verdict, Verdict::kPass);
  ev["os.cpuinfo"] = Ok({{"vmx", true}, {"hypervisor", true}});
  auto guest = J("security-januscape", ev, core::Target::kVm);
  EXPECT_EQ(guest.verdict, Verdict::kWarn);
  EXPECT_EQ(guest.reason, core::Reason::kAttestationRequired);
  ev["kvm.exposure"] = Ok({{"dev_kvm", true}, {"nested", "N"}});
  EXPECT_EQ(J("security-januscape", ev).verdict, Verdict::kPass);
}

TEST(NodeChecks, VmscapeReadsTheKernelsOwnVerdict) {
  core::EvidenceSet ev = {{"kvm.exposure", Ok({{"arch", "x86_64"}, {"vmscape", "Vulnerable"}})},
                          {"os.processes", Ok({{"names", json::array({"qemu-system-x86", "sshd"})}})}};
  EXPECT_EQ(J("security-vmscape", ev).verdict, Verdict::kFail);
  ev["kvm.exposure"] = Ok({{"arch", "x86_64"}, {"vmscape", "Mitigation: IBPB before exit to userspace"}});
  EXPECT_EQ(J("security-vmscape", ev).verdict, Verdict::kPass);
  ev["kvm.exposure"] = Ok({{"arch", "aarch64"}, {"vmscape", nullptr}});
  EXPECT_EQ(J("security-vmscape", ev).verdict, Verdict::kSkip);
}

TEST(NodeChecks, DpuAndBmcExposureFailOnReadEvidenceOnly) {
  core::EvidenceSet dpu = {
      {"pci.devices", Ok(Pci({BlueField()}))},
      {"dpu.rshim", Ok({{"rshim_devices", json::array({"/dev/rshim0"})}, {"tmfifo_net0", false}})}};
  EXPECT_EQ(J("security-dpu-host-isolation", dpu).verdict, Verdict::kFail);
  dpu["dpu.rshim"] = Ok({{"rshim_devices", json::array()}, {"tmfifo_net0", false}});
  EXPECT_EQ(J("security-dpu-host-isolation", dpu).reason, core::Reason::kAttestationRequired);
  core::EvidenceSet bmc = {
      {"bmc.ipmi", Ok({{"devices", json::array({"/dev/ipmi0"})},
                       {"device_check_complete", true},
                       {"ipmitool", {{"status", "ok"}, {"exit_code", 0}, {"output", "Device ID : 32"}}}})}};
  EXPECT_EQ(J("security-bmc-ipmi", bmc).verdict, Verdict::kFail);
  bmc["bmc.ipmi"].data["ipmitool"]["exit_code"] = 1;
  EXPECT_EQ(J("security-bmc-ipmi", bmc).verdict, Verdict::kPass);
  bmc["bmc.ipmi"].data["ipmitool"] = nullptr;
  EXPECT_EQ(J("security-bmc-ipmi", bmc).verdict, Verdict::kWarn);
}

TEST(NodeChecks, GpuDirectPaths) {
  auto ev = GpuNode();
  ev["nvidia.proc-version"] = Ok({{"loaded", true}, {"open_module", true}, {"driver_version", "580.159.03"}});
  ev["kernel.modules"] = Ok({{"loaded", json::array({"nvidia", "mlx5_ib"})},
                             {"nvidia_dma_buf_entries", json::array({"/sys/module/nvidia/x/dma_buf"})}});
  EXPECT_EQ(J("gpudirect-rdma", ev).verdict, Verdict::kPass);
  ev["nvidia.proc-version"].data["open_module"] = false;
  ev["kernel.modules"] =
      Ok({{"loaded", json::array({"nvidia", "nvidia_peermem"})}, {"nvidia_dma_buf_entries", json::array()}});
  EXPECT_EQ(J("gpudirect-rdma", ev).verdict, Verdict::kWarn);
  EXPECT_EQ(J("gpudirect-rdma-peermem-legacy", ev).verdict, Verdict::kWarn);
  ev["kernel.modules"] = Ok({{"loaded", json::array({"nvidia"})}, {"nvidia_dma_buf_entries", json::array()}});
  auto none = J("gpudirect-rdma", ev);
  EXPECT_EQ(none.verdict, Verdict::kFail);
  EXPECT_TRUE(checks::DefaultRegistry().Find("gpudirect-rdma")->info.critical);
  ev["gdrcopy"] = Ok({{"libraries", json::array()}, {"module", false}, {"device", false}});
  EXPECT_EQ(J("gdrcopy", ev).verdict, Verdict::kFail);
}

TEST(NodeChecks, SoftwareCurrency) {
  auto ev = GpuNode();
  ev["cuda.toolkits"] =
      Ok({{"toolkits", json::array({{{"nvcc", "/usr/local/cuda/bin/nvcc"}, {"version", "13.1"}, {"default", true}}})},
          {"default", "/usr/local/cuda/bin/nvcc"}});
  EXPECT_EQ(J("cuda-driver-compat", ev).verdict, Verdict::kWarn);  // toolkit 13.1 on a CUDA 13.0 driver
  EXPECT_EQ(J("cuda-toolkit-present", ev).verdict, Verdict::kPass);
  ev["nccl.libraries"] = Ok({{"libraries", json::array({"/usr/lib/libnccl.so.2"})},
                             {"versions", json::array({{{"path", "x"}, {"version", "2.18.3"}}})},
                             {"header", nullptr}});
  EXPECT_EQ(J("nccl-version-current", ev).verdict, Verdict::kWarn);
  ev["ncu.binary"] = Ok({{"installed", false}});
  EXPECT_EQ(J("ncu-profiling", ev).verdict, Verdict::kFail);
  EXPECT_EQ(J("ncu-profiling-counters", ev).reason, core::Reason::kPrerequisiteMissing);
  ev["ncu.binary"] = Ok({{"installed", true}, {"version", "2025.3.0.0"}});
  ev["nvidia.params"] = Ok({{"params", {{"RmProfilingAdminOnly", "1"}}}, {"modprobe_options", json::array()}});
  EXPECT_EQ(J("ncu-profiling-counters", ev).verdict, Verdict::kWarn);
  ev["nvidia.params"] =
      Ok({{"params", json::object()},
          {"modprobe_options", json::array({{{"file", "/etc/modprobe.d/nv.conf"},
                                             {"line", "options nvidia NVreg_RestrictProfilingToAdminUsers=0"}}})}});
  EXPECT_EQ(J("ncu-profiling-counters", ev).verdict, Verdict::kPass);
}

TEST(NodeChecks, ContainerWiringAccessAndStorage) {
  auto ev = GpuNode();
  ev["container.runtimes"] = Ok({{"engines", {{"docker", true}}},
                                 {"docker_nvidia_runtime", false},
                                 {"containerd_nvidia_runtime", nullptr},
                                 {"cdi_specs", json::array()}});
  ev["container-toolkit.version"] = Ok({{"installed", false}});
  EXPECT_EQ(J("container-toolkit", ev).verdict, Verdict::kFail);
  ev["container.runtimes"].data["cdi_specs"] = json::array({"/etc/cdi/nvidia.yaml"});
  EXPECT_EQ(J("container-toolkit", ev).verdict, Verdict::kPass);
  core::EvidenceSet ssh = {
      {"ssh.sshd-config",
       Ok({{"present", true}, {"settings", {{"passwordauthentication", "no"}}}, {"files", json::array()}})}};
  EXPECT_EQ(J("ssh-pubkey-auth", ssh).verdict, Verdict::kPass);
  ssh["ssh.sshd-config"].data["settings"] = json::object();  // OpenSSH defaults allow passwords
  EXPECT_EQ(J("ssh-pubkey-auth", ssh).verdict, Verdict::kWarn);
  core::EvidenceSet idp = {{"identity.providers", Ok({{"nsswitch_passwd", json::array({"files", "sss"})},
                                                      {"pam_modules", json::array()},
                                                      {"sssd_id_providers", json::array()}})}};
  EXPECT_EQ(J("external-idp", idp).verdict, Verdict::kPass);
  core::EvidenceSet disk = {
      {"block.devices",
       Ok({{"disks", json::array({{{"name", "nvme0n1"}, {"size", "3840755982336"}, {"nvme", true}}})},
           {"mounts", json::array({{{"mount_point", "/scratch"}, {"source", "/dev/nvme0n1"}, {"fstype", "xfs"}}})}})}};
  EXPECT_EQ(J("local-nvme", disk).verdict, Verdict::kPass);
}

TEST(NodeChecks, XidClassesFromTheData) {
  auto ev = GpuNode();
  ev["kernel.xid"] =
      Ok({{"source", "journalctl"}, {"events", json::array({{{"kind", "Xid"}, {"pci", "0000:3b:00"}, {"code", 13}}})}});
  EXPECT_EQ(J("gpu-xid-history", ev).verdict, Verdict::kPass);
  ev["kernel.xid"].data["events"].push_back({{"kind", "Xid"}, {"pci", "0000:3b:00"}, {"code", 94}});
  EXPECT_EQ(J("gpu-xid-history", ev).verdict, Verdict::kWarn);
  ev["kernel.xid"].data["events"].push_back({{"kind", "Xid"}, {"pci", "0000:3b:00"}, {"code", 79}});
  EXPECT_EQ(J("gpu-xid-history", ev).verdict, Verdict::kFail);
  // An event listed but not understood (its code as text) is never counted as no event.
  auto junk = GpuNode();
  junk["kernel.xid"] = Ok(
      {{"source", "journalctl"}, {"events", json::array({{{"kind", "Xid"}, {"code", "79"}, {"line", "Xid ... 79"}}})}});
  auto w = J("gpu-xid-history", junk);
  EXPECT_EQ(w.verdict, Verdict::kWarn) << w.message;
  EXPECT_EQ(w.reason, core::Reason::kUnverified);
}

TEST(NodeChecks, GpuCountInAGuestNeedsThePciListing) {
  auto ev = GpuNode();
  ev["gpu.inventory"].data["devices"][0]["virtualization_mode"] = "Pass-Through";
  EXPECT_EQ(J("gpu-count-consistent", ev, core::Target::kVm).verdict, Verdict::kPass);
  // The PCI listing unread: a GPU given to the VM but lost would not show.
  ev["pci.devices"].status = core::EvidenceStatus::kPermissionDenied;
  ev["pci.devices"].error = "denied";
  auto f = J("gpu-count-consistent", ev, core::Target::kVm);
  EXPECT_EQ(f.verdict, Verdict::kWarn) << f.message;
  // The bus listing fewer GPUs than the driver sees: the listings disagree.
  auto fewer = GpuNode();
  fewer["pci.devices"] = Ok(Pci({ConnectX()}));
  EXPECT_EQ(J("gpu-count-consistent", fewer, core::Target::kVm).verdict, Verdict::kWarn);
}

TEST(NodeCollectors, XidEventsParsedFromTheKernelLog) {
  host::Bundle b;
  b.PutWhich("journalctl", {host::IoStatus::kOk, "/usr/bin/journalctl"});
  host::CommandResult r;
  r.status = host::IoStatus::kOk;
  r.exit_code = 0;
  r.out =
      "2026-11-29T10:00:01+0000 gpu-01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python, GPU has fallen off the bus.\n"
      "2026-11-29T10:05:00+0000 gpu-01 kernel: NVRM: Xid (PCI:0000:bb:00): 13, pid=99, Graphics Exception\n"
      "2026-11-29T11:00:00+0000 gpu-01 kernel: nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 41\n"
      "2026-11-29T11:00:00+0000 gpu-01 kernel: eth0: link up\n";
  b.PutCommand({"journalctl", "-k", "--since=-7d", "-o", "short-iso", "--no-pager", "-q"}, r);
  b.PutFile("/proc/sys/kernel/dmesg_restrict", {host::IoStatus::kOk, "1\n", false, ""});
  host::ReplayHost h(b);
  auto ev = collect::CollectEvidence(h, {"kernel.xid"}, {});
  const auto& e = ev["kernel.xid"];
  ASSERT_TRUE(e.ok()) << e.error;
  ASSERT_EQ(e.data["events"].size(), 3u);  // newest first
  EXPECT_EQ(e.data["events"][2]["code"], 79);
  EXPECT_EQ(e.data["events"][2]["pci"], "0000:3b:00");
  EXPECT_EQ(e.data["events"][0]["kind"], "SXid");
  EXPECT_EQ(e.data["events"][0]["code"], 12028);
  EXPECT_EQ(e.data["counts_by_day"]["2026-11-29"]["Xid 79"], 1);
  EXPECT_EQ(e.data["total"], 3);
}

TEST(NodeCollectors, SshdIncludeFilesAndFirstValueWins) {
  host::Bundle b;
  b.PutFile(
      "/etc/ssh/sshd_config",
      {host::IoStatus::kOk,
       "Include /etc/ssh/sshd_config.d/*.conf\nPasswordAuthentication yes\nMatch User bob\n  PubkeyAuthentication no\n",
       false, ""});
  host::DirResult d;
  d.status = host::IoStatus::kOk;
  d.entries = {{"50-cloud-init.conf", 'f'}, {"README", 'f'}};
  b.PutDir("/etc/ssh/sshd_config.d", d);
  b.PutFile("/etc/ssh/sshd_config.d/50-cloud-init.conf",
            {host::IoStatus::kOk, "PasswordAuthentication no\n", false, ""});
  host::ReplayHost h(b);
  auto ev = collect::CollectEvidence(h, {"ssh.sshd-config"}, {});
  const auto& e = ev["ssh.sshd-config"];
  ASSERT_TRUE(e.ok()) << e.error;
  EXPECT_EQ(e.data["settings"]["passwordauthentication"], "no");      // the include came first
  EXPECT_FALSE(e.data["settings"].contains("pubkeyauthentication"));  // only under Match
  EXPECT_TRUE(h.misses().empty());
}

TEST(NodeChecks, PassthroughNvlinkBoundaryFabricManager) {
  core::EvidenceSet vfio = {
      {"pci.passthrough",
       Ok({{"vfio_devices", json::array({{{"bdf", "0000:19:00.0"},
                                          {"group", "41"},
                                          {"members", json::array({"0000:19:00.0", "0000:19:00.1"})}}})}})}};
  EXPECT_EQ(J("security-pcie-passthrough", vfio).verdict, Verdict::kPass);  // functions of one device
  vfio["pci.passthrough"].data["vfio_devices"][0]["members"].push_back("0000:1a:00.0");
  EXPECT_EQ(J("security-pcie-passthrough", vfio).verdict, Verdict::kFail);
  EXPECT_EQ(J("security-pcie-passthrough", vfio, core::Target::kVm).reason, core::Reason::kAttestationRequired);

  auto ev = GpuNode();
  ev["gpu.inventory"].data["devices"][0]["nvlink_active"] = json::array({true, true});
  EXPECT_EQ(J("security-nvlink-boundary", ev).verdict, Verdict::kPass);  // whole node: 1 of 1 on the bus
  EXPECT_EQ(J("security-nvlink-boundary", ev, core::Target::kVm).verdict, Verdict::kWarn);
  ev["pci.devices"] = Ok(Pci({NvidiaGpu(), NvidiaGpu()}));
  EXPECT_EQ(J("security-nvlink-boundary", ev).verdict, Verdict::kWarn);  // a GPU on the board is not ours

  json nvswitch = {{"bdf", "0000:05:00.0"}, {"vendor", "0x10de"}, {"device", "0x22a3"},
                   {"class", "0x068000"},   {"gpu", false},       {"rdma_nic", false}};
  core::EvidenceSet fm = {{"pci.devices", Ok(Pci({NvidiaGpu(), nvswitch}))},
                          {"os.processes", Ok({{"names", json::array({"sshd"})}})}};
  EXPECT_EQ(J("fabric-manager", fm).verdict, Verdict::kFail);
  fm["os.processes"] = Ok({{"names", json::array({"nv-fabricmanage"})}});
  EXPECT_EQ(J("fabric-manager", fm).verdict, Verdict::kPass);
}

TEST(NodeChecks, ServicesAndPlatform) {
  core::EvidenceSet exp = {
      {"dcgm-exporter.version", Ok({{"installed", true}, {"dcgm_version", "4.4.1"}, {"exporter_version", "4.8.2"}})}};
  EXPECT_EQ(J("security-dcgm-exporter", exp).verdict, Verdict::kFail);  // embedded DCGM below 4.5.3
  exp["dcgm-exporter.version"].data["dcgm_version"] = "4.5.3";
  EXPECT_EQ(J("security-dcgm-exporter", exp).verdict, Verdict::kPass);

  core::EvidenceSet qemu = {
      {"qemu.virtio", Ok({{"virtio_ports", json::array({"org.qemu.guest_agent.0"})}, {"qemu_package", nullptr}})}};
  EXPECT_EQ(J("security-qemu-virtio-serial", qemu).reason, core::Reason::kAttestationRequired);
  qemu["qemu.virtio"] = Ok({{"virtio_ports", json::array()}, {"qemu_package", "1:8.2.2+ds-0ubuntu1.4"}});
  qemu["os.release"] = Ok({{"codename", "noble"}});
  EXPECT_EQ(J("security-qemu-virtio-serial", qemu).verdict, Verdict::kFail);

  core::EvidenceSet net = {
      {"net.listeners", Ok({{"listen", json::array({{{"port", 9400}, {"ipv6", false}, {"scope", "any"}}})}})}};
  EXPECT_EQ(J("security-observability-isolation", net).verdict, Verdict::kWarn);
  net["net.listeners"] = Ok({{"listen", json::array({{{"port", 9090}, {"ipv6", false}, {"scope", "loopback"}}})}});
  EXPECT_EQ(J("security-observability-isolation", net).verdict, Verdict::kSkip);

  core::EvidenceSet arm = {{"arm.smmu", Ok({{"arch", "aarch64"},
                                            {"midr", "0x00000000410fd4f0"},
                                            {"iommu_units", json::array({"smmu3.0"})},
                                            {"cmdqv_module", false}})}};
  EXPECT_EQ(J("arm-smmu-cmdqv", arm, core::Target::kVm).verdict, Verdict::kWarn);
  arm["arm.smmu"].data["cmdqv_module"] = true;
  EXPECT_EQ(J("arm-smmu-cmdqv", arm, core::Target::kVm).verdict, Verdict::kPass);

  core::EvidenceSet mounts = {
      {"storage.shared-mounts",
       Ok({{"expected", json::array({{{"mount_point", "/home"}, {"fstype", "nfs4"}, {"noauto", false}}})},
           {"mounted", json::array()}})}};
  EXPECT_EQ(J("storage-mount-stable", mounts).verdict, Verdict::kFail);
  mounts["storage.shared-mounts"].data["mounted"] =
      json::array({{{"mount_point", "/home"}, {"fstype", "nfs4"}, {"source", "fs:/home"}, {"stat", "timeout"}}});
  auto hung = J("storage-mount-stable", mounts);
  EXPECT_EQ(hung.verdict, Verdict::kFail);
  EXPECT_NE(hung.message.find("did not answer"), std::string::npos);

  auto ev = GpuNode();
  ev["cuda.toolkits"] =
      Ok({{"toolkits", json::array({{{"nvcc", "/usr/local/cuda/bin/nvcc"}, {"version", "11.4"}, {"default", true}}})}});
  ev["ncu.binary"] = Ok({{"installed", true}, {"version", "2023.2.0.0"}});
  EXPECT_EQ(J("cuda-arch-support", ev).verdict, Verdict::kWarn);  // H100 needs nvcc >= 11.8
  // Both read and new enough: PASS. Then one fact at a time made unreadable: never a PASS on a
  // version not compared (before, an unreadable one was skipped and the check passed).
  ev["cuda.toolkits"].data["toolkits"][0]["version"] = "12.4";
  auto ok = J("cuda-arch-support", ev);
  EXPECT_EQ(ok.verdict, Verdict::kPass) << ok.message;
  EXPECT_EQ(ok.observed, "nvcc 12.4, ncu 2023.2.0.0");
  auto no_default = ev;
  no_default["cuda.toolkits"].data["toolkits"][0]["default"] = false;
  EXPECT_EQ(J("cuda-arch-support", no_default).verdict, Verdict::kWarn);
  auto junk_nvcc = ev;
  junk_nvcc["cuda.toolkits"].data["toolkits"][0]["version"] = "twelve";
  auto jn = J("cuda-arch-support", junk_nvcc);
  EXPECT_EQ(jn.verdict, Verdict::kWarn);
  EXPECT_NE(jn.message.find("not understood"), std::string::npos) << jn.message;
  auto ncu_unread = ev;
  ncu_unread["ncu.binary"].data["version"] = nullptr;
  EXPECT_EQ(J("cuda-arch-support", ncu_unread).verdict, Verdict::kWarn);
  auto ncu_old = ev;
  ncu_old["ncu.binary"].data["version"] = "2021.1.0.0";
  EXPECT_EQ(J("cuda-arch-support", ncu_old).verdict, Verdict::kWarn);
  // ncu absent is ncu-profiling's FAIL; here the toolkit alone is judged.
  auto ncu_absent = ev;
  ncu_absent["ncu.binary"] = Ok({{"installed", false}});
  auto na = J("cuda-arch-support", ncu_absent);
  EXPECT_EQ(na.verdict, Verdict::kPass) << na.message;
  EXPECT_NE(na.observed.find("ncu not installed"), std::string::npos) << na.observed;
}

TEST(NodeCollectors, ListenersFromProcNetTcp) {
  host::Bundle b;
  b.PutFile(
      "/proc/net/tcp",
      {host::IoStatus::kOk,
       "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
       "   0: 00000000:24B8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0 100 0 0 10 0\n"
       "   1: 0100007F:2382 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0 100 0 0 10 0\n"
       "   2: 0A00000A:0016 0B00000A:C350 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0 100 0 0 10 0\n",
       false, ""});
  b.PutFile("/proc/net/tcp6", {host::IoStatus::kNotFound, "", false, "No such file or directory"});
  host::ReplayHost h(b);
  auto ev = collect::CollectEvidence(h, {"net.listeners"}, {});
  const auto& l = ev["net.listeners"].data["listen"];
  ASSERT_EQ(l.size(), 2u);  // the ESTABLISHED row is not a listener
  EXPECT_EQ(l[0]["port"], 9400);
  EXPECT_EQ(l[0]["scope"], "any");
  EXPECT_EQ(l[1]["port"], 9090);
  EXPECT_EQ(l[1]["scope"], "loopback");
}

namespace {

// An MI300X node: sysfs product name, ROCm version, loaded and installed amdgpu, and
// `apt-cache policy amdgpu-dkms` in its real layout.
host::Bundle AmdBundle(const std::string& loaded_src, const std::string& origin_release, const std::string& rocm) {
  host::Bundle b;
  host::DirResult d;
  d.status = host::IoStatus::kOk;
  d.entries = {{"0000:05:00.0", 'l'}};
  b.PutDir("/sys/bus/pci/devices", d);
  std::string base = "/sys/bus/pci/devices/0000:05:00.0/";
  b.PutFile(base + "vendor", {host::IoStatus::kOk, "0x1002\n", false, ""});
  b.PutFile(base + "class", {host::IoStatus::kOk, "0x120000\n", false, ""});
  b.PutFile(base + "product_name", {host::IoStatus::kOk, "AMD Instinct MI300X\n", false, ""});
  b.PutFile("/opt/rocm/.info/version", {host::IoStatus::kOk, rocm + "-120\n", false, ""});
  b.PutFile("/sys/module/amdgpu/version", {host::IoStatus::kOk, "6.12.12\n", false, ""});
  b.PutFile("/sys/module/amdgpu/srcversion", {host::IoStatus::kOk, loaded_src + "\n", false, ""});
  auto ok = [](std::string out) {
    host::CommandResult r;
    r.status = host::IoStatus::kOk;
    r.exit_code = 0;
    r.out = std::move(out);
    return r;
  };
  for (const char* t : {"modinfo", "dpkg-query", "apt-cache"})
    b.PutWhich(t, {host::IoStatus::kOk, std::string("/usr/bin/") + t});
  b.PutCommand({"modinfo", "-F", "srcversion", "amdgpu"}, ok("3F2C5D9E1A8B7C6D5E4F3A2\n"));
  b.PutCommand({"modinfo", "-F", "filename", "amdgpu"},
               ok("/lib/modules/6.8.0-124-generic/updates/dkms/amdgpu.ko.zst\n"));
  b.PutCommand({"dpkg-query", "-S", "/lib/modules/6.8.0-124-generic/updates/dkms/amdgpu.ko.zst"},
               ok("amdgpu-dkms: /lib/modules/6.8.0-124-generic/updates/dkms/amdgpu.ko.zst\n"));
  b.PutCommand(
      {"apt-cache", "policy", "amdgpu-dkms"},
      ok("amdgpu-dkms:\n  Installed: 1:6.12.12.60402-2164967.24.04\n  Candidate: 1:6.12.12.60402-2164967.24.04\n  Version table:\n"
         " *** 1:6.12.12.60402-2164967.24.04 500\n        500 https://repo.radeon.com/amdgpu/" +
         origin_release + "/ubuntu noble/main amd64 Packages\n        100 /var/lib/dpkg/status\n"));
  return b;
}

core::Finding JudgeBundle(const std::string& check, const host::Bundle& b) {
  host::ReplayHost h(b);
  auto ev = collect::CollectEvidence(h, {"amd.stack"}, {});
  EXPECT_TRUE(ev["amd.stack"].ok()) << ev["amd.stack"].error;
  return J(check, ev);
}

}  // namespace

TEST(NodeChecks, AmdDriverBoundToTheLoadedModule) {
  auto pass = JudgeBundle("security-amd-driver", AmdBundle("3F2C5D9E1A8B7C6D5E4F3A2", "31.40", "6.4.2"));
  EXPECT_EQ(pass.verdict, Verdict::kPass) << pass.message;
  auto fail = JudgeBundle("security-amd-driver", AmdBundle("3F2C5D9E1A8B7C6D5E4F3A2", "31.30", "6.4.2"));
  EXPECT_EQ(fail.verdict, Verdict::kFail) << fail.message;
  auto stale = JudgeBundle("security-amd-driver", AmdBundle("0000OLDLOADEDMODULE00000", "31.40", "6.4.2"));
  EXPECT_EQ(stale.verdict, Verdict::kWarn) << stale.message;  // an update installed while the old module runs
  EXPECT_EQ(stale.reason, core::Reason::kUnverified);
  EXPECT_EQ(JudgeBundle("security-rocm", AmdBundle("x", "31.40", "6.4.1")).verdict, Verdict::kFail);
  EXPECT_EQ(JudgeBundle("security-rocm", AmdBundle("x", "31.40", "6.4.2")).verdict, Verdict::kPass);
}

// vboost: `nvidia-smi boost-slider -l` as recorded on an H200 (driver 580.159.04, 2026-11-30).
TEST(NodeChecks, VboostSliderParsedFromRecordedOutput) {
  auto rows =
      collect::ParseBoostSliderList(clustermax::testing::ReadFixture("parsers/nvidia-smi-boost-slider-h200.txt"));
  ASSERT_TRUE(rows);
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].gpu, 0);
  EXPECT_EQ((*rows)[0].slider, "vboost");
  EXPECT_EQ((*rows)[0].max_value, 4);
  EXPECT_EQ((*rows)[0].current, 0);
  EXPECT_FALSE(collect::ParseBoostSliderList("No devices were found\n"));
}

namespace {
host::CommandResult Out(const std::string& out, int code = 0) {
  host::CommandResult r;
  r.status = host::IoStatus::kOk;
  r.exit_code = code;
  r.out = out;
  return r;
}
std::string SliderTable(int current) {
  return "+---+\n| GPU Boost Slider |\n| GPU     Slider       Max Value    Current Value |\n|===|\n"
         "|   0     vboost           4              " +
         std::to_string(current) +
         "       |\n"
         "|   1     vboost           4              " +
         std::to_string(current) + "       |\n+---+\n";
}
}  // namespace

TEST(NodeChecks, VboostProbeSetsReadsBackAndRestores) {
  // A replayed node where the change is accepted: list (0), set 2, list (2), restore both, list (0).
  host::Bundle b;
  b.PutWhich("nvidia-smi", {host::IoStatus::kOk, "/usr/bin/nvidia-smi"});
  std::vector<host::CommandResult> lists = {Out(SliderTable(0)), Out(SliderTable(2)), Out(SliderTable(0))};
  b.PutCommand({"nvidia-smi", "boost-slider", "-l"}, lists[0]);
  b.PutCommand({"nvidia-smi", "boost-slider", "--vboost", "2"}, Out(""));
  b.PutCommand({"nvidia-smi", "-i", "0", "boost-slider", "--vboost", "0"}, Out(""));
  b.PutCommand({"nvidia-smi", "-i", "1", "boost-slider", "--vboost", "0"}, Out(""));
  host::ReplayHost h(b);
  collect::CollectOptions o;
  o.probes = {"vboost-set"};
  auto ev = collect::CollectEvidence(h, {"gpu.boost-slider", "probe.vboost-set"}, o);
  ASSERT_TRUE(ev["gpu.boost-slider"].ok()) << ev["gpu.boost-slider"].error;
  EXPECT_EQ(ev["gpu.boost-slider"].data["sliders"].size(), 2u);
  const auto& p = ev["probe.vboost-set"];
  ASSERT_TRUE(p.ok()) << p.error;
  // A replay answers every read of the list with the first recording: the change does not show,
  // which the probe reports as refused-or-partial, never as accepted.
  EXPECT_NE(p.data["outcome"], "accepted");
  EXPECT_EQ(p.data["steps"].size(), 3u);  // set, and one restore per GPU

  // The judgement on each outcome.
  core::EvidenceSet set = GpuNode();
  set["gpu.boost-slider"] =
      Ok({{"supported", true},
          {"sliders", json::array({{{"gpu", 0}, {"slider", "vboost"}, {"max", 4}, {"current", 0}}})}});
  core::EvidenceSet off = set;
  off["probe.vboost-set"].status = EvidenceStatus::kProbeDisabled;
  auto skip = J("vboost-control", off);
  EXPECT_EQ(skip.verdict, Verdict::kSkip);
  EXPECT_EQ(skip.reason, core::Reason::kProbeDisabled);
  EXPECT_NE(skip.message.find("vboost 0 of 4"), std::string::npos) << skip.message;
  set["probe.vboost-set"] = Ok(
      {{"outcome", "accepted"}, {"gpus", 1}, {"changed", 1}, {"restored", 1}, {"target", 2}, {"steps", json::array()}});
  EXPECT_EQ(J("vboost-control", set).verdict, Verdict::kPass);
  set["probe.vboost-set"] = Ok({{"outcome", "denied"},
                                {"gpus", 1},
                                {"changed", 0},
                                {"restored", 0},
                                {"target", 2},
                                {"steps", json::array({{{"command", "nvidia-smi boost-slider --vboost 2"},
                                                        {"exit_code", 4},
                                                        {"output", "Insufficient Permissions"}}})}});
  auto denied = J("vboost-control", set);
  EXPECT_EQ(denied.verdict, Verdict::kWarn);
  EXPECT_EQ(denied.details.size(), 1u);
  set["probe.vboost-set"] = Ok({{"outcome", "not-reverted"},
                                {"gpus", 2},
                                {"changed", 2},
                                {"restored", 1},
                                {"target", 2},
                                {"steps", json::array()}});
  EXPECT_NE(J("vboost-control", set).message.find("only 1 restored"), std::string::npos);
  // B300 has no slider; a GPU the driver offers none on; no NVIDIA GPU at all.
  core::EvidenceSet b300 = set;
  b300["gpu.inventory"] =
      Ok({{"device_count", 1}, {"devices", json::array({{{"index", 0}, {"name", "NVIDIA B300 SXM6 AC"}}})}});
  EXPECT_EQ(J("vboost-control", b300).reason, core::Reason::kNotApplicable);
  set["gpu.boost-slider"] = Ok({{"supported", false}, {"output", "Not Supported"}});
  EXPECT_EQ(J("vboost-control", set).reason, core::Reason::kNotApplicable);
  core::EvidenceSet cpu = {{"pci.devices", Ok(Pci({ConnectX()}))}, {"gpu.inventory", Ok({{"device_count", 0}})}};
  EXPECT_EQ(J("vboost-control", cpu).reason, core::Reason::kNotApplicable);
}

TEST(NodeChecks, NcclAutoconfigListsWhatIsPinned) {
  host::Bundle b;
  b.PutFile("/etc/nccl.conf",
            {host::IoStatus::kOk, "# site defaults\nNCCL_IB_HCA=mlx5\nNCCL_PROTO=Simple\n", false, ""});
  b.PutFile("/etc/environment", {host::IoStatus::kOk, "PATH=\"/usr/bin\"\nNCCL_ALGO=Ring\n", false, ""});
  b.PutEnv("NCCL_CONF_FILE", std::nullopt);
  for (const char* k :
       {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_PROTO", "NCCL_ALGO", "NCCL_IB_QPS_PER_CONNECTION",
        "NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_TOPO_FILE", "NCCL_NET_GDR_LEVEL"}) {
    b.PutEnv(k, std::string(k) == "NCCL_MIN_NCHANNELS" ? std::optional<std::string>("4") : std::nullopt);
  }
  host::ReplayHost h(b);
  auto ev = collect::CollectEvidence(h, {"nccl.config"}, {});
  ASSERT_TRUE(ev["nccl.config"].ok()) << ev["nccl.config"].error;
  EXPECT_TRUE(h.misses().empty());
  core::EvidenceSet set = {{"nccl.config", ev["nccl.config"]}};
  auto f = J("nccl-autoconfig", set);
  EXPECT_EQ(f.verdict, Verdict::kWarn);
  EXPECT_NE(f.message.find("NCCL_PROTO=Simple in /etc/nccl.conf"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("+2 more"), std::string::npos) << f.message;  // NCCL_ALGO, NCCL_MIN_NCHANNELS
  EXPECT_EQ(f.details.size(), 4u);

  // Only harmless settings: PASS with them listed; nothing at all and no NCCL: not applicable.
  core::EvidenceSet clean = {
      {"nccl.config",
       Ok({{"files", json::array({{{"path", "/etc/nccl.conf"}, {"found", true}, {"vars", {{"NCCL_IB_HCA", "mlx5"}}}}})},
           {"env", json::object()}})}};
  EXPECT_EQ(J("nccl-autoconfig", clean).verdict, Verdict::kPass);
  core::EvidenceSet none = {
      {"nccl.config",
       Ok({{"files", json::array({{{"path", "/etc/nccl.conf"}, {"found", false}, {"vars", json::object()}}})},
           {"env", json::object()}})},
      {"nccl.libraries", Ok({{"libraries", json::array()}, {"header", nullptr}, {"versions", json::array()}})}};
  EXPECT_EQ(J("nccl-autoconfig", none).reason, core::Reason::kNotApplicable);
  core::EvidenceSet denied = {{"nccl.config", Ok({{"files", json::array({{{"path", "/etc/nccl.conf"},
                                                                          {"found", false},
                                                                          {"vars", json::object()},
                                                                          {"error", "permission-denied: EACCES"}}})},
                                                  {"env", json::object()}})}};
  EXPECT_EQ(J("nccl-autoconfig", denied).reason, core::Reason::kEvidenceError);
}

TEST(NodeChecks, DcgmHostEngineAndMetricsExporter) {
  core::EvidenceSet ev = GpuNode();
  ev["dcgm.version"] = Ok({{"installed", true}, {"version", "4.5.3"}});
  ev["os.processes"] = Ok({{"names", {"systemd", "nv-hostengine", "dcgm-exporter"}}});
  ev["net.listeners"] = Ok({{"listen", json::array({{{"port", 9400}, {"ipv6", false}, {"scope", "any"}}})}});
  EXPECT_EQ(J("dcgm-healthchecks", ev, core::Target::kSlurm).verdict, Verdict::kPass);
  auto exporter = J("monitoring-stack", ev, core::Target::kSlurm);
  EXPECT_EQ(exporter.verdict, Verdict::kPass);
  EXPECT_EQ(exporter.details.size(), 2u);
  ev["os.processes"] = Ok({{"names", {"systemd"}}});
  ev["net.listeners"] = Ok({{"listen", json::array()}});
  auto stopped = J("dcgm-healthchecks", ev, core::Target::kSlurm);
  EXPECT_EQ(stopped.verdict, Verdict::kWarn);
  EXPECT_NE(stopped.message.find("not running"), std::string::npos);
  auto none = J("monitoring-stack", ev, core::Target::kSlurm);
  EXPECT_EQ(none.verdict, Verdict::kFail);
  EXPECT_EQ(none.severity, core::Severity::kMissing);
  ev["dcgm.version"] = Ok({{"installed", false}});
  EXPECT_EQ(J("dcgm-healthchecks", ev, core::Target::kSlurm).verdict, Verdict::kFail);
  core::EvidenceSet cpu = {{"pci.devices", Ok(Pci({ConnectX()}))}, {"gpu.inventory", Ok({{"device_count", 0}})}};
  EXPECT_EQ(J("monitoring-stack", cpu, core::Target::kSlurm).reason, core::Reason::kNotApplicable);
  EXPECT_EQ(J("dcgm-healthchecks", cpu, core::Target::kSlurm).reason, core::Reason::kNotApplicable);
}

TEST(NodeChecks, HcaNamingExpectsMlx5OrNcclIbHca) {
  auto rdma = [](std::vector<std::string> names) {
    json devs = json::array();
    for (const auto& n : names) devs.push_back({{"name", n}, {"ports", json::array()}});
    return Ok({{"devices", devs}});
  };
  json no_conf = {{"files", json::array()}, {"env", json::object()}};
  core::EvidenceSet ev = {{"rdma.devices", rdma({"mlx5_0", "mlx5_1"})}, {"nccl.config", Ok(no_conf)}};
  EXPECT_EQ(J("hca-naming", ev, core::Target::kSlurm).verdict, Verdict::kPass);
  ev["rdma.devices"] = rdma({"roce_p0_rail0", "roce_p1_rail1"});
  auto custom = J("hca-naming", ev, core::Target::kSlurm);
  EXPECT_EQ(custom.verdict, Verdict::kWarn);
  EXPECT_NE(custom.message.find("without NCCL_IB_HCA"), std::string::npos);
  ev["nccl.config"] = Ok({{"files", json::array({{{"path", "/etc/nccl.conf"},
                                                  {"found", true},
                                                  {"vars", {{"NCCL_IB_HCA", "=roce_p0_rail0,roce_p1_rail1"}}}}})},
                          {"env", json::object()}});
  EXPECT_EQ(J("hca-naming", ev, core::Target::kSlurm).verdict, Verdict::kPass);
  ev["rdma.devices"] = rdma({});
  EXPECT_EQ(J("hca-naming", ev, core::Target::kSlurm).reason, core::Reason::kNotApplicable);
}

TEST(NodeChecks, HpcSdkReleaseCompilersAndPayload) {
  auto dir = [](std::vector<std::pair<std::string, char>> names) {
    host::DirResult d;
    d.status = host::IoStatus::kOk;
    for (const auto& [n, t] : names) d.entries.push_back({n, t});
    return d;
  };
  auto bundle = [&](const std::string& fortran_version, bool with_nvshmem) {
    host::Bundle b;
    const std::string base = "/opt/nvidia/hpc_sdk/Linux_x86_64/26.9";
    b.PutDir("/opt/nvidia/hpc_sdk", dir({{"Linux_x86_64", 'd'}, {"modulefiles", 'd'}}));
    b.PutDir("/opt/nvidia/hpc_sdk/Linux_x86_64", dir({{"26.7", 'd'}, {"26.9", 'd'}, {"2026", 'd'}}));
    for (const char* c : {"nvc", "nvc++"}) {
      b.PutCommand({base + "/compilers/bin/" + c, "--version"},
                   Out(std::string("\n") + c + " 26.9-0 64-bit target on x86-64 Linux -tp znver3\n"));
    }
    b.PutCommand({base + "/compilers/bin/nvfortran", "--version"},
                 Out("\nnvfortran " + fortran_version + "-0 64-bit target on x86-64 Linux\n"));
    b.PutDir(base + "/comm_libs", dir({{"13.0", 'd'}}));
    std::vector<std::pair<std::string, char>> comm = {{"nccl", 'd'}, {"hpcx", 'd'}};
    if (with_nvshmem) comm.push_back({"nvshmem", 'd'});
    b.PutDir(base + "/comm_libs/13.0", dir(comm));
    b.PutDir(base + "/math_libs", dir({{"13.0", 'd'}}));
    b.PutDir(base + "/math_libs/13.0", dir({{"targets", 'd'}}));
    b.PutDir(base + "/profilers", dir({{"Nsight_Compute", 'd'}, {"Nsight_Systems", 'd'}}));
    b.PutDir(base + "/profilers/Nsight_Compute", dir({}));
    b.PutDir(base + "/profilers/Nsight_Systems", dir({}));
    host::ReplayHost h(b);
    return collect::CollectEvidence(h, {"hpcsdk.install"}, {})["hpcsdk.install"];
  };
  core::EvidenceSet ev = GpuNode();
  ev["hpcsdk.install"] = bundle("26.9", true);
  ASSERT_TRUE(ev["hpcsdk.install"].ok()) << ev["hpcsdk.install"].error;
  EXPECT_EQ(ev["hpcsdk.install"].data["release"], "26.9");  // the newest YY.M, not "2026"
  auto ok = J("hpc-sdk", ev, core::Target::kSlurm);
  EXPECT_EQ(ok.verdict, Verdict::kPass) << ok.message;
  ev["hpcsdk.install"] = bundle("26.7", true);
  auto mismatch = J("hpc-sdk", ev, core::Target::kSlurm);
  EXPECT_EQ(mismatch.verdict, Verdict::kFail);
  EXPECT_NE(mismatch.message.find("nvfortran reports 26.7"), std::string::npos) << mismatch.message;
  ev["hpcsdk.install"] = bundle("26.9", false);
  auto missing = J("hpc-sdk", ev, core::Target::kSlurm);
  EXPECT_EQ(missing.verdict, Verdict::kFail);
  EXPECT_NE(missing.message.find("nvshmem"), std::string::npos) << missing.message;
  ev["hpcsdk.install"] = Ok({{"installed", false}});
  EXPECT_EQ(J("hpc-sdk", ev, core::Target::kSlurm).severity, core::Severity::kMissing);
}

TEST(NodeChecks, XidMonitoringNeedsCaptureAndShipping) {
  host::Bundle b;
  b.PutFile("/etc/dcgm-exporter/default-counters.csv",
            {host::IoStatus::kOk,
             "# Format\nDCGM_FI_DEV_SM_CLOCK, gauge, SM clock\nDCGM_FI_DEV_XID_ERRORS, gauge, Last Xid\n", false, ""});
  host::ReplayHost h(b);
  auto mon = collect::CollectEvidence(h, {"xid.monitors"}, {})["xid.monitors"];
  ASSERT_TRUE(mon.ok());
  EXPECT_EQ(mon.data["exporter_counters"][0]["xid_errors"], true);
  core::EvidenceSet ev = GpuNode();
  ev["xid.monitors"] = mon;
  ev["os.processes"] = Ok({{"names", {"dcgm-exporter", "promtail"}}});
  EXPECT_EQ(J("xid-monitoring", ev, core::Target::kSlurm).verdict, Verdict::kPass);
  ev["os.processes"] = Ok({{"names", {"dcgm-exporter"}}});
  EXPECT_NE(J("xid-monitoring", ev, core::Target::kSlurm).message.find("no kernel-log shipper"), std::string::npos);
  ev["xid.monitors"] =
      Ok({{"exporter_counters",
           json::array({{{"path", "/etc/dcgm-exporter/default-counters.csv"}, {"xid_errors", false}}})}});
  ev["os.processes"] = Ok({{"names", {"dcgm-exporter", "fluent-bit"}}});
  EXPECT_NE(J("xid-monitoring", ev, core::Target::kSlurm).message.find("nothing captures"),
            std::string::npos);  // Xid counter removed
}

TEST(NodeChecks, SharedFsWantsAParallelFilesystemAndSharedHome) {
  auto mounts = [](std::vector<std::pair<std::string, std::string>> m) {
    json list = json::array();
    for (const auto& [mp, fs] : m)
      list.push_back({{"mount_point", mp}, {"fstype", fs}, {"source", "srv:/x"}, {"stat", "ok"}});
    return Ok({{"expected", json::array()}, {"mounted", list}});
  };
  core::EvidenceSet ev = {{"storage.shared-mounts", mounts({{"/lustre", "lustre"}, {"/home", "nfs4"}})}};
  EXPECT_EQ(J("shared-fs", ev, core::Target::kSlurm).verdict, Verdict::kPass);
  ev["storage.shared-mounts"] = mounts({{"/lustre", "lustre"}});
  EXPECT_NE(J("shared-fs", ev, core::Target::kSlurm).message.find("home is local"), std::string::npos);
  ev["storage.shared-mounts"] = mounts({{"/home", "nfs4"}});
  EXPECT_EQ(J("shared-fs", ev, core::Target::kSlurm).verdict, Verdict::kWarn);
  ev["storage.shared-mounts"] = mounts({});
  EXPECT_EQ(J("shared-fs", ev, core::Target::kSlurm).verdict, Verdict::kFail);
}

TEST(NodeChecks, NcclRoceGidIndexPointsAtARoutableV2Gid) {
  // A RoCE port as sysfs shows it: GID 0/1 link-local (v1, v2), GID 2/3 the fabric address (v1, v2).
  json port = {{"port", "1"},
               {"link_layer", "Ethernet"},
               {"gid_types", {"IB/RoCE v1", "RoCE v2", "IB/RoCE v1", "RoCE v2", nullptr, nullptr, nullptr, nullptr}},
               {"gids",
                {"fe80:0000:0000:0000:5aa2:e1ff:fe11:2233", "fe80:0000:0000:0000:5aa2:e1ff:fe11:2233",
                 "0000:0000:0000:0000:0000:ffff:0a00:0011", "0000:0000:0000:0000:0000:ffff:0a00:0011", nullptr, nullptr,
                 nullptr, nullptr}}};
  core::EvidenceSet ev = {
      {"rdma.devices", Ok({{"devices", json::array({{{"name", "mlx5_0"}, {"ports", json::array({port})}}})}})}};
  auto conf = [](std::optional<std::string> idx) {
    json vars = json::object();
    if (idx) vars["NCCL_IB_GID_INDEX"] = *idx;
    return Ok({{"files", json::array({{{"path", "/etc/nccl.conf"}, {"found", true}, {"vars", vars}}})},
               {"env", json::object()}});
  };
  ev["nccl.config"] = conf("3");
  EXPECT_EQ(J("nccl-roce-gid-index", ev, core::Target::kSlurm).verdict, Verdict::kPass);
  ev["nccl.config"] = conf("1");  // v2 but link-local
  EXPECT_EQ(J("nccl-roce-gid-index", ev, core::Target::kSlurm).verdict, Verdict::kWarn);
  ev["nccl.config"] = conf("2");  // routable but RoCE v1
  EXPECT_EQ(J("nccl-roce-gid-index", ev, core::Target::kSlurm).verdict, Verdict::kWarn);
  ev["nccl.config"] = conf(std::nullopt);
  EXPECT_NE(J("nccl-roce-gid-index", ev, core::Target::kSlurm).message.find("unset"), std::string::npos);
  ev["rdma.devices"] = Ok(
      {{"devices",
        json::array({{{"name", "mlx5_0"}, {"ports", json::array({{{"port", "1"}, {"link_layer", "InfiniBand"}}})}}})}});
  EXPECT_EQ(J("nccl-roce-gid-index", ev, core::Target::kSlurm).reason, core::Reason::kNotApplicable);
}

TEST(NodeChecks, FabricClassOneNicPerGpuAtTheGenerationsRate) {
  auto port = [](const std::string& layer, const std::string& rate, const std::string& state) {
    return json{{"port", "1"}, {"link_layer", layer}, {"rate", rate}, {"state", state}, {"phys_state", "5: LinkUp"}};
  };
  auto rdma = [&](int n, const std::string& rate, int down = 0, bool frontend = true) {
    json devs = json::array();
    for (int i = 0; i < n; ++i) {
      devs.push_back({{"name", "mlx5_" + std::to_string(i)},
                      {"vendor", "0x15b3"},
                      {"ports", json::array({port("InfiniBand", rate, i < down ? "1: DOWN" : "4: ACTIVE")})}});
    }
    if (frontend)
      devs.push_back({{"name", "mlx5_bond_0"},
                      {"vendor", "0x15b3"},
                      {"ports", json::array({port("Ethernet", "25 Gb/sec (1X EDR)", "4: ACTIVE")})}});
    return Ok({{"devices", devs}});
  };
  auto gpus = [](int n, const std::string& name) {
    json d = json::array();
    for (int i = 0; i < n; ++i) d.push_back({{"index", i}, {"name", name}});
    return Ok({{"devices", d}});
  };
  core::EvidenceSet ev = {{"pci.devices", Ok(Pci({NvidiaGpu(), ConnectX()}))},
                          {"gpu.inventory", gpus(8, "NVIDIA H100 80GB HBM3")},
                          {"rdma.devices", rdma(8, "400 Gb/sec (4X NDR)")}};
  auto ok = J("fabric-class", ev, core::Target::kSlurm);
  EXPECT_EQ(ok.verdict, Verdict::kPass) << ok.message;
  EXPECT_NE(ok.message.find("8 active InfiniBand fabric port(s), 3200 Gb/s for 8 GPU(s)"), std::string::npos)
      << ok.message;
  bool frontend_named = false;
  for (const auto& d : ok.details)
    frontend_named |=
        d.find("mlx5_bond_0/1: RoCE 25 Gb/s") != std::string::npos && d.find("not a rail (bond)") != std::string::npos;
  EXPECT_TRUE(frontend_named);
  // Half the rate (HDR on H100), a missing NIC, a port down: each a WARN naming the cause.
  ev["rdma.devices"] = rdma(8, "200 Gb/sec (4X HDR)");
  auto slow = J("fabric-class", ev, core::Target::kSlurm);
  EXPECT_EQ(slow.verdict, Verdict::kWarn);
  EXPECT_NE(slow.message.find("1600 Gb/s of active fabric for 8 GPU(s), below 8 x 400 Gb/s"), std::string::npos)
      << slow.message;
  ev["rdma.devices"] = rdma(7, "400 Gb/sec (4X NDR)");
  EXPECT_NE(J("fabric-class", ev, core::Target::kSlurm).message.find("7 fabric port(s) for 8 GPU(s)"),
            std::string::npos);
  ev["rdma.devices"] = rdma(8, "400 Gb/sec (4X NDR)", 1);
  auto down = J("fabric-class", ev, core::Target::kSlurm);
  EXPECT_EQ(down.verdict, Verdict::kWarn);
  EXPECT_NE(down.message.find("mlx5_0/1 1: DOWN"), std::string::npos) << down.message;
  // A100 expects 200 Gb/s per GPU.
  ev["gpu.inventory"] = gpus(8, "NVIDIA A100-SXM4-80GB");
  ev["rdma.devices"] = rdma(8, "200 Gb/sec (4X HDR)");
  EXPECT_EQ(J("fabric-class", ev, core::Target::kSlurm).verdict, Verdict::kPass);
  // No RDMA at all on a cluster GPU node: TCP only.
  ev["rdma.devices"] = Ok({{"devices", json::array()}});
  auto tcp = J("fabric-class", ev, core::Target::kSlurm);
  EXPECT_EQ(tcp.verdict, Verdict::kFail);
  EXPECT_EQ(tcp.severity, core::Severity::kMissing);
  // EFA (vendor 0x1d0f): 32 x 100 Gb/s for 8 GPUs is 400 Gb/s per GPU.
  json efa = json::array();
  for (int i = 0; i < 32; ++i)
    efa.push_back({{"name", "rdmap" + std::to_string(i)},
                   {"vendor", "0x1d0f"},
                   {"ports", json::array({port("Unspecified", "100 Gb/sec", "4: ACTIVE")})}});
  ev["gpu.inventory"] = gpus(8, "NVIDIA H100 80GB HBM3");
  ev["rdma.devices"] = Ok({{"devices", efa}});
  auto aws = J("fabric-class", ev, core::Target::kSlurm);
  EXPECT_EQ(aws.verdict, Verdict::kPass) << aws.message;
  EXPECT_NE(aws.message.find("EFA"), std::string::npos);
  // A CPU node: not applicable; an unreadable RDMA listing: an evidence problem, never a verdict.
  core::EvidenceSet cpu = {{"pci.devices", Ok(Pci({ConnectX()}))},
                           {"gpu.inventory", Ok({{"devices", json::array()}})},
                           {"rdma.devices", rdma(1, "400 Gb/sec")}};
  EXPECT_EQ(J("fabric-class", cpu, core::Target::kSlurm).reason, core::Reason::kNotApplicable);
  ev["rdma.devices"].status = EvidenceStatus::kPermissionDenied;
  EXPECT_NE(J("fabric-class", ev, core::Target::kSlurm).verdict, Verdict::kPass);
}

TEST(NodeChecks, SharedHomeQuotaReadsTheHomeFilesystemsTool) {
  const std::string mountinfo =
      "22 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n"
      "40 22 0:45 / /home rw,relatime shared:20 - nfs4 nfs1:/export/home rw,vers=4.2\n"
      "41 22 0:46 / /lustre rw,relatime shared:21 - lustre 10.0.0.1@o2ib:/scratch rw\n";
  auto collect = [&](const std::string& home, const std::string& user, std::optional<host::CommandResult> answer,
                     std::vector<std::string> argv) {
    host::Bundle b;
    b.PutFile("/proc/self/mountinfo", {host::IoStatus::kOk, mountinfo, false, ""});
    b.PutEnv("HOME", home);
    b.PutEnv("USER", user);
    if (answer) b.PutCommand(argv, *answer);
    host::ReplayHost h(b);
    return collect::CollectEvidence(h, {"storage.home-quota"}, {})["storage.home-quota"];
  };
  const std::string nfs_report =
      "Disk quotas for user alice (uid 1000): \n     Filesystem   space   quota   limit   grace   files   quota   limit   grace\n"
      "nfs1:/export/home   1024M   5120M   6144M            12345       0       0\n";
  core::EvidenceSet ev;
  ev["storage.home-quota"] = collect("/home/alice", "alice", Out(nfs_report), {"quota", "-s", "-w"});
  ASSERT_TRUE(ev["storage.home-quota"].ok()) << ev["storage.home-quota"].error;
  EXPECT_EQ(ev["storage.home-quota"].data["mount_point"], "/home");
  EXPECT_EQ(ev["storage.home-quota"].data["fstype"], "nfs4");
  auto ok = J("shared-home-quota", ev, core::Target::kSlurm);
  EXPECT_EQ(ok.verdict, Verdict::kPass) << ok.message;
  EXPECT_NE(ok.message.find("quota 5120M, limit 6144M"), std::string::npos) << ok.message;
  // No quota for this user: WARN naming the home; `quota` prints nothing and exits 1 when no filesystem has quotas.
  ev["storage.home-quota"] = collect("/home/alice", "alice", Out("", 1), {"quota", "-s", "-w"});
  auto none = J("shared-home-quota", ev, core::Target::kSlurm);
  EXPECT_EQ(none.verdict, Verdict::kWarn);
  EXPECT_EQ(none.reason, core::Reason::kConfig);
  EXPECT_NE(none.message.find("/home/alice on /home (nfs4)"), std::string::npos) << none.message;
  // Lustre home: lfs quota on the mount, as the user.
  ev["storage.home-quota"] = collect(
      "/lustre/home/alice", "alice",
      Out("Disk quotas for usr alice (uid 1000):\n     Filesystem  kbytes   quota   limit   grace   files   quota   limit   grace\n"
          "        /lustre    4096       0 104857600       -      12       0       0       -\n"),
      {"lfs", "quota", "-u", "alice", "/lustre"});
  EXPECT_EQ(J("shared-home-quota", ev, core::Target::kSlurm).verdict, Verdict::kPass);
  // The tool is not installed: unverified, never a PASS.
  host::CommandResult missing;
  missing.status = host::IoStatus::kNotFound;
  ev["storage.home-quota"] = collect("/home/alice", "alice", missing, {"quota", "-s", "-w"});
  auto unverified = J("shared-home-quota", ev, core::Target::kSlurm);
  EXPECT_EQ(unverified.reason, core::Reason::kUnverified);
  // Root has no quota by design: said so.
  ev["storage.home-quota"] = collect("/home/root", "root", Out("", 1), {"quota", "-s", "-w"});
  auto root = J("shared-home-quota", ev, core::Target::kSlurm);
  bool noted = false;
  for (const auto& d : root.details) noted |= d.find("audited as root") != std::string::npos;
  EXPECT_TRUE(noted);
  // A local home: not applicable.
  ev["storage.home-quota"] = collect("/root", "root", std::nullopt, {});
  EXPECT_EQ(J("shared-home-quota", ev, core::Target::kSlurm).reason, core::Reason::kNotApplicable);
}

TEST(NodeChecks, GpuJobAttributionFromTheExportersFlagsEnvironmentOrUnit) {
  auto bundle = [](const std::string& cmdline, std::optional<std::string> environ, const std::string& unit) {
    host::Bundle b;
    host::DirResult proc;
    proc.status = host::IoStatus::kOk;
    proc.entries = {{"1", 'd'}, {"812", 'd'}, {"self", 'l'}};
    b.PutDir("/proc", proc);
    b.PutFile("/proc/1/comm", {host::IoStatus::kOk, "systemd\n", false, ""});
    b.PutFile("/proc/812/comm", {host::IoStatus::kOk, "dcgm-exporter\n", false, ""});
    b.PutFile("/proc/812/cmdline", {host::IoStatus::kOk, cmdline, false, ""});
    if (environ)
      b.PutFile("/proc/812/environ", {host::IoStatus::kOk, *environ, false, ""});
    else
      b.PutFile("/proc/812/environ", {host::IoStatus::kPermissionDenied, "", false, "Permission denied"});
    if (!unit.empty()) b.PutFile("/etc/systemd/system/dcgm-exporter.service", {host::IoStatus::kOk, unit, false, ""});
    host::ReplayHost h(b);
    auto ev = collect::CollectEvidence(h, {"gpu-exporter.config", "os.processes"}, {});
    return ev;
  };
  using namespace std::string_literals;
  core::EvidenceSet ev = GpuNode();
  auto with = [&](core::EvidenceSet more) {
    for (auto& [k, v] : more) ev[k] = v;
    return ev;
  };
  // Flag on the command line (NUL-separated, as /proc shows it).
  auto flag = J("gpu-job-attribution",
                with(bundle("/usr/bin/dcgm-exporter\0--hpc-job-mapping-dir\0/run/dcgm-job-map\0"s, std::nullopt, "")),
                core::Target::kSlurm);
  EXPECT_EQ(flag.verdict, Verdict::kPass) << flag.message;
  EXPECT_NE(flag.message.find("--hpc-job-mapping-dir /run/dcgm-job-map"), std::string::npos) << flag.message;
  // The environment variable (readable as root).
  auto env =
      J("gpu-job-attribution",
        with(bundle("/usr/bin/dcgm-exporter\0"s, "PATH=/usr/bin\0DCGM_HPC_JOB_MAPPING_DIR=/var/run/jobs\0"s, "")),
        core::Target::kSlurm);
  EXPECT_EQ(env.verdict, Verdict::kPass) << env.message;
  // The unit file's Environment= line.
  auto unit =
      J("gpu-job-attribution",
        with(bundle(
            "/usr/bin/dcgm-exporter\0"s, std::nullopt,
            "[Service]\nEnvironment=DCGM_HPC_JOB_MAPPING_DIR=/run/dcgm-job-map\nExecStart=/usr/bin/dcgm-exporter\n")),
        core::Target::kSlurm);
  EXPECT_EQ(unit.verdict, Verdict::kPass) << unit.message;
  // Nothing set, environment unreadable: unverified; readable and absent: WARN config.
  auto hidden =
      J("gpu-job-attribution",
        with(bundle("/usr/bin/dcgm-exporter\0-f\0/etc/dcgm-exporter/default-counters.csv\0"s, std::nullopt, "")),
        core::Target::kSlurm);
  EXPECT_EQ(hidden.reason, core::Reason::kUnverified) << hidden.message;
  auto none =
      J("gpu-job-attribution", with(bundle("/usr/bin/dcgm-exporter\0"s, "PATH=/usr/bin\0"s, "")), core::Target::kSlurm);
  EXPECT_EQ(none.verdict, Verdict::kWarn);
  EXPECT_EQ(none.reason, core::Reason::kConfig);
  // Kubernetes mode.
  auto k8s = J("gpu-job-attribution", with(bundle("/usr/bin/dcgm-exporter\0"s, "DCGM_EXPORTER_KUBERNETES=true\0"s, "")),
               core::Target::kK8s);
  EXPECT_EQ(k8s.verdict, Verdict::kPass) << k8s.message;
  // No exporter at all: the prerequisite is missing (monitoring-stack grades that).
  ev = GpuNode();
  ev["gpu-exporter.config"] = Ok({{"processes", json::array()}, {"units", json::array()}});
  ev["os.processes"] = Ok({{"names", {"systemd"}}});
  EXPECT_EQ(J("gpu-job-attribution", ev, core::Target::kSlurm).reason, core::Reason::kPrerequisiteMissing);
}

TEST(NodeChecks, SharpOnInfinibandIsAtBestUnverifiedWithoutAProbe) {
  auto rdma = [](const std::string& layer) {
    return Ok(
        {{"devices",
          json::array({{{"name", "mlx5_0"},
                        {"ports", json::array({{{"port", "1"}, {"link_layer", layer}, {"state", "4: ACTIVE"}}})}}})}});
  };
  auto collect = [](bool with_sharp) {
    host::Bundle b;
    host::DirResult opt;
    opt.status = host::IoStatus::kOk;
    if (with_sharp) opt.entries = {{"hpcx-v2.24-gcc-doca_ofed-ubuntu24.04-cuda13-x86_64", 'd'}};
    b.PutDir("/opt", opt);
    if (with_sharp) {
      host::StatResult st;
      st.status = host::IoStatus::kOk;
      st.type = 'd';
      b.PutStat("/opt/hpcx-v2.24-gcc-doca_ofed-ubuntu24.04-cuda13-x86_64/sharp", st);
    }
    b.PutCommand(
        {"ldconfig", "-p"},
        Out(std::string("\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2\n") +
            (with_sharp ? "\tlibnccl-net.so (libc6,x86-64) => /opt/hpcx/nccl_rdma_sharp_plugin/lib/libnccl-net.so\n"
                        : "")));
    host::ReplayHost h(b);
    return collect::CollectEvidence(h, {"sharp.install", "nccl.libraries"}, {});
  };
  core::EvidenceSet ev = collect(true);
  ASSERT_EQ(ev["nccl.libraries"].data["net_plugins"].size(), 1u) << ev["nccl.libraries"].data.dump();
  ev["rdma.devices"] = rdma("InfiniBand");
  auto present = J("sharp-enabled", ev, core::Target::kSlurm);
  EXPECT_EQ(present.verdict, Verdict::kWarn);
  EXPECT_EQ(present.reason, core::Reason::kUnverified) << present.message;
  EXPECT_NE(present.message.find("NCCL plugin"), std::string::npos) << present.message;
  ev = collect(false);
  ev["rdma.devices"] = rdma("InfiniBand");
  auto absent = J("sharp-enabled", ev, core::Target::kSlurm);
  EXPECT_EQ(absent.reason, core::Reason::kConfig) << absent.message;
  ev["rdma.devices"] = rdma("Ethernet");
  EXPECT_EQ(J("sharp-enabled", ev, core::Target::kSlurm).reason, core::Reason::kNotApplicable);
}

TEST(NodeChecks, EnrootImportProbePullsIntoItsOwnFileAndRemovesIt) {
  const std::string file = "/scratch/tmp/clustermax-enroot-import-alice.sqsh";
  auto collect = [&](std::optional<host::CommandResult> import, bool installed = true) {
    host::Bundle b;
    b.PutWhich("enroot", installed ? host::WhichResult{host::IoStatus::kOk, "/usr/bin/enroot"} : host::WhichResult{});
    b.PutEnv("TMPDIR", "/scratch/tmp");
    b.PutEnv("USER", "alice");
    b.PutCommand({"rm", "-f", "--", file}, Out(""));
    if (import) b.PutCommand({"enroot", "import", "-o", file, "docker://busybox:1.36"}, *import);
    host::ReplayHost h(b);
    collect::CollectOptions o;
    o.probes = {"enroot-import"};
    auto ev = collect::CollectEvidence(h, {"probe.enroot-import"}, o);
    EXPECT_TRUE(h.misses().empty()) << h.misses().front();  // exactly these commands, this file
    return ev;
  };
  auto ok = Out(
      "[INFO] Querying registry for permission grant\n[INFO] Fetching image manifest list\n[INFO] Creating squashfs filesystem...\n");
  ok.duration_ms = 4200;
  auto pass = J("enroot-import", collect(ok), core::Target::kSlurm);
  EXPECT_EQ(pass.verdict, Verdict::kPass) << pass.message;
  EXPECT_NE(pass.message.find("in 4.2 s"), std::string::npos) << pass.message;
  host::CommandResult denied = Out("", 1);
  denied.err =
      "[INFO] Querying registry for permission grant\n[ERROR] URL https://auth.docker.io/token returned error code: 401 Unauthorized\n";
  auto fail = J("enroot-import", collect(denied), core::Target::kSlurm);
  EXPECT_EQ(fail.verdict, Verdict::kWarn);
  EXPECT_NE(fail.details.at(0).find("401 Unauthorized"), std::string::npos);
  host::CommandResult slow;
  slow.status = host::IoStatus::kTimeout;
  EXPECT_NE(J("enroot-import", collect(slow), core::Target::kSlurm).message.find("did not finish within 30 s"),
            std::string::npos);
  EXPECT_EQ(J("enroot-import", collect(std::nullopt, false), core::Target::kSlurm).reason,
            core::Reason::kPrerequisiteMissing);
  // Without --probe enroot-import nothing runs.
  host::Bundle empty;
  host::ReplayHost h(empty);
  auto off = collect::CollectEvidence(h, {"probe.enroot-import"}, {});
  EXPECT_EQ(off["probe.enroot-import"].status, EvidenceStatus::kProbeDisabled);
  EXPECT_TRUE(h.misses().empty());
}

TEST(NodeChecks, NcclTopologyFileOnTheHostAndInsideAPyxisContainer) {
  const std::string xml =
      "<system version=\"1\">\n  <cpu numaid=\"0\" affinity=\"ffff\" arch=\"x86_64\" vendor=\"GenuineIntel\">\n"
      "    <pci busid=\"0000:17:00.0\" class=\"0x060400\"/>\n  </cpu>\n</system>\n";
  const std::string host_sum = std::string(64, 'a');
  std::vector<std::string> srun = {"srun",
                                   "--overlap",
                                   "-N1",
                                   "-n1",
                                   "--jobid=42",
                                   "--nodelist=n1",
                                   "--container-image=nvcr.io/nvidia/cuda:13.0.1-base-ubuntu24.04",
                                   "--no-container-mount-home",
                                   "--container-remap-root",
                                   "--no-container-entrypoint",
                                   "sha256sum",
                                   "/etc/nccl/topo.xml"};
  auto collect = [&](bool with_file, std::optional<host::CommandResult> inside, bool probe = true) {
    host::Bundle b;
    b.PutEnv("NCCL_TOPO_FILE", std::nullopt);
    b.PutFile("/etc/nccl.conf",
              {host::IoStatus::kOk,
               with_file ? "NCCL_TOPO_FILE=/etc/nccl/topo.xml\nNCCL_IB_QPS_PER_CONNECTION=2\n" : "", false, ""});
    host::DirResult etc;
    etc.status = host::IoStatus::kOk;
    if (with_file) etc.entries = {{"topo.xml", 'f'}};
    b.PutDir("/etc/nccl", etc);
    if (with_file) {
      host::StatResult st;
      st.status = host::IoStatus::kOk;
      st.type = 'f';
      st.size = xml.size();
      b.PutStat("/etc/nccl/topo.xml", st);
      b.PutFile("/etc/nccl/topo.xml", {host::IoStatus::kOk, xml, false, ""});
      b.PutCommand({"sha256sum", "/etc/nccl/topo.xml"}, Out(host_sum + "  /etc/nccl/topo.xml\n"));
    }
    b.PutWhich("srun", {host::IoStatus::kOk, "/usr/bin/srun"});
    b.PutEnv("SLURM_JOB_ID", "42");
    b.PutEnv("SLURMD_NODENAME", "n1");
    if (inside) b.PutCommand(srun, *inside);
    host::ReplayHost h(b);
    collect::CollectOptions o;
    if (probe) o.probes = {"container-launch"};
    return collect::CollectEvidence(h, {"nccl.topo-file", "probe.nccl-topo-container"}, o);
  };
  auto with_virt = [](core::EvidenceSet ev, const std::string& vm) {
    ev["os.virtualization"] = Ok({{"vm", vm}});
    return ev;
  };
  auto same = J("nccl-topo-file-container", with_virt(collect(true, Out(host_sum + "  /etc/nccl/topo.xml\n")), "kvm"),
                core::Target::kSlurm);
  EXPECT_EQ(same.verdict, Verdict::kPass) << same.message;
  host::CommandResult gone = Out("", 1);
  gone.err =
      "sha256sum: /etc/nccl/topo.xml: No such file or directory\nsrun: error: n1: task 0: Exited with exit code 1\n";
  auto missing = J("nccl-topo-file-container", with_virt(collect(true, gone), "kvm"), core::Target::kSlurm);
  EXPECT_EQ(missing.verdict, Verdict::kWarn);
  EXPECT_NE(missing.message.find("missing inside the container"), std::string::npos) << missing.message;
  auto differs =
      J("nccl-topo-file-container",
        with_virt(collect(true, Out(std::string(64, 'b') + "  /etc/nccl/topo.xml\n")), "kvm"), core::Target::kSlurm);
  EXPECT_NE(differs.message.find("differs inside the container"), std::string::npos) << differs.message;
  host::CommandResult no_pyxis = Out("", 1);
  no_pyxis.err = "srun: unrecognized option '--container-image=nvcr.io/nvidia/cuda:13.0.1-base-ubuntu24.04'\n";
  EXPECT_EQ(J("nccl-topo-file-container", with_virt(collect(true, no_pyxis), "kvm"), core::Target::kSlurm).reason,
            core::Reason::kPrerequisiteMissing);
  auto disabled =
      J("nccl-topo-file-container", with_virt(collect(true, std::nullopt, false), "kvm"), core::Target::kSlurm);
  EXPECT_EQ(disabled.reason, core::Reason::kProbeDisabled) << disabled.message;
  // No file: fine on bare metal, a WARN in a VM.
  EXPECT_EQ(
      J("nccl-topo-file-container", with_virt(collect(false, std::nullopt), "none"), core::Target::kSlurm).verdict,
      Verdict::kPass);
  auto vm = J("nccl-topo-file-container", with_virt(collect(false, std::nullopt), "kvm"), core::Target::kSlurm);
  EXPECT_EQ(vm.verdict, Verdict::kWarn);
  EXPECT_NE(vm.message.find("VM (kvm)"), std::string::npos) << vm.message;
}
