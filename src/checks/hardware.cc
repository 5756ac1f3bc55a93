// hardware: GPU driver binding, PCIe link width, IOMMU domains, CPU frequency governor.
#include <fmt/format.h>

#include "checks/common.h"

namespace clustermax::checks {
namespace {

using core::CheckInfo;
using core::Evidence;

Finding VmIommu(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("iommu");
  if (auto p = core::EvidenceProblem(e, "IOMMU state")) return *p;
  const json& devices = e.data["devices"];
  if (devices.empty()) {
    if (!e.data.value("pci_inventory_complete", false))
      return core::Warn(Reason::kEvidenceError, "PCI inventory unreadable");
    return core::Skip(Reason::kNotApplicable, "no GPU and no RDMA device in the PCI inventory");
  }
  std::vector<std::string> translated, unread, lines;
  for (const auto& d : devices) {
    std::string bdf = d["bdf"];
    if (!d["domain_type"].is_string()) {
      // No iommu_group means the IOMMU is off for this device: DMA is untranslated.
      if (d.value("read_status", "") == "not-found") {
        lines.push_back(bdf + ": no IOMMU group (IOMMU off)");
        continue;
      }
      unread.push_back(bdf);
      continue;
    }
    std::string t = d["domain_type"];
    lines.push_back(fmt::format("{} ({}): {}", bdf, d.value("kind", ""), t));
    if (t != "identity") translated.push_back(bdf);
  }
  Finding f =
      !translated.empty()
          ? core::Warn(Reason::kConfig,
                       fmt::format("{} GPU/RDMA device(s) under full DMA translation (costs P2P and RDMA bandwidth)",
                                   translated.size()))
      : !unread.empty()
          ? core::Warn(Reason::kEvidenceError,
                       fmt::format("IOMMU domain type unreadable for {} device(s)", unread.size()))
          : core::Pass("every GPU and RDMA device is in an identity (passthrough) domain or the IOMMU is off");
  const json& flags = e.data.value("cmdline_flags", json());
  f.observed = fmt::format("cmdline: {}", !flags.is_array() ? "unread"
                                          : flags.empty()   ? "no iommu flags"
                                                          : flags.dump(-1, ' ', true, json::error_handler_t::replace));
  f.expected = "identity domains (iommu=pt) or IOMMU off";
  return f.Details(lines);
}

Finding CpuGovernor(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("cpu.governor");
  if (auto p = core::EvidenceProblem(e, "CPU frequency governors")) return *p;
  const json& g = e.data["governors"];
  int cpus = e.data.value("cpus", 0);
  if (g.empty()) {
    if (e.data.value("unreadable", 0) > 0)
      return core::Warn(Reason::kEvidenceError, "scaling_governor files unreadable");
    return core::Skip(
        Reason::kUnverified,
        fmt::format("cpufreq is not exposed on this node ({} CPUs; typical in VMs and firmware-managed platforms)",
                    cpus));
  }
  std::vector<std::string> parts;
  int performance = 0;
  for (const auto& [name, count] : g.items()) {
    parts.push_back(fmt::format("{} x{}", name, count.get<int>()));
    if (name == "performance") performance = count.get<int>();
  }
  int total = 0;
  for (const auto& [name, count] : g.items()) total += count.get<int>();
  int unreadable = e.data.value("unreadable", 0);
  Finding f = performance != total
                  ? core::Warn(Reason::kConfig, fmt::format("{} of {} CPUs are not on the performance governor",
                                                            total - performance, total))
              : unreadable > 0
                  ? core::Warn(Reason::kEvidenceError,
                               fmt::format("{} CPUs use the performance governor; {} CPUs' governors were not read",
                                           total, unreadable))
                  : core::Pass(fmt::format("all {} CPUs use the performance governor", total));
  f.observed = fmt::format("{}", fmt::join(parts, ", "));
  f.expected = "performance";
  if (e.data["driver"].is_string()) f.Detail("scaling driver " + e.data["driver"].get<std::string>());
  return f;
}

Finding GpuDrivers(const JudgeContext& ctx) {
  const Evidence& pci = ctx.Get("pci.devices");
  const Evidence& gpu = ctx.Get("gpu.inventory");
  if (auto p = core::EvidenceProblem(pci, "PCI inventory")) return *p;
  // A device the inventory did not classify may be a GPU: never counted as "not a GPU".
  for (const auto& d : pci.data["devices"]) {
    if (!d.value("gpu", json()).is_boolean()) {
      return core::Warn(Reason::kEvidenceError,
                        "PCI device " + d.value("bdf", json()).dump() + " is not classified as GPU or not");
    }
  }
  int pci_gpus = CountPciGpus(pci);
  if (pci_gpus == 0) {
    if (gpu.ok() && gpu.data.value("device_count", 0) > 0) {
      return core::Warn(Reason::kUnverified,
                        fmt::format("{} GPU(s) visible to {} but none in the PCI inventory (restricted /sys view?)",
                                    gpu.data.value("device_count", 0), gpu.data.value("source", std::string("NVML"))));
    }
    if (!pci.data.value("complete", false)) return core::Warn(Reason::kEvidenceError, "PCI inventory incomplete");
    return core::Skip(Reason::kNotApplicable, "no GPU in the PCI inventory (CPU-only node)");
  }
  std::vector<std::string> unbound, lines;
  for (const auto& d : pci.data["devices"]) {
    if (!d.value("gpu", false)) continue;
    std::string drv = d["driver"].is_string() ? d["driver"].get<std::string>() : "";
    bool vendor_driver = (drv == "nvidia" && d["vendor"] == "0x10de") || (drv == "amdgpu" && d["vendor"] == "0x1002");
    lines.push_back(fmt::format("{} {}:{} driver {}", d["bdf"].get<std::string>(), d["vendor"].get<std::string>(),
                                d["device"].get<std::string>(), drv.empty() ? "none" : drv));
    if (!vendor_driver) unbound.push_back(d["bdf"]);
  }
  Finding f;
  if (!unbound.empty()) {
    f = core::Fail(Severity::kMissing,
                   fmt::format("{} of {} GPU(s) not bound to the vendor driver", unbound.size(), pci_gpus));
  } else if (CountPciGpus(pci, "0x10de") > 0 && !gpu.ok()) {
    f = core::Warn(Reason::kEvidenceError,
                   "the NVIDIA driver is bound but the management library is unusable: " + gpu.error);
  } else if (CountPciGpus(pci, "0x10de") > 0 && gpu.data.value("device_count", 0) < CountPciGpus(pci, "0x10de")) {
    f = core::Fail(Severity::kMissing,
                   fmt::format("{} NVIDIA GPU(s) on the PCI bus but only {} visible to {}", CountPciGpus(pci, "0x10de"),
                               gpu.data.value("device_count", 0), gpu.data.value("source", std::string("NVML"))));
  } else {
    f = core::Pass(fmt::format("all {} GPU(s) bound to the vendor driver and visible", pci_gpus));
  }
  f.observed = fmt::format("{} PCI GPU(s), {} visible to the management library", pci_gpus,
                           gpu.ok() ? gpu.data.value("device_count", 0) : 0);
  f.expected = "every GPU bound and visible";
  return f.Details(lines);
}

Finding GpuPcieLink(const JudgeContext& ctx) {
  const Evidence& gpu = ctx.Get("gpu.inventory");
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), gpu)) return *skip;
  if (auto p = core::EvidenceProblem(gpu, "GPU inventory")) return *p;
  std::vector<std::string> degraded, unread, lines;
  for (const auto& d : gpu.data["devices"]) {
    const json& p = d.value("pcie", json::object());
    std::string who = fmt::format("GPU {} {}", d.value("index", 0),
                                  d.value("pci_bus_id", json()).is_string() ? d["pci_bus_id"].get<std::string>() : "");
    if (!p.value("width_current", json()).is_number() || !p.value("width_max", json()).is_number()) {
      unread.push_back(who);
      continue;
    }
    int cur = p["width_current"], max = p["width_max"];
    lines.push_back(fmt::format("{}: x{} of x{}, gen {} of {}", who, cur, max, p.value("gen_current", json()).dump(),
                                p.value("gen_max", json()).dump()));
    if (cur < max) degraded.push_back(who);
  }
  if (gpu.data["devices"].empty()) return core::Skip(Reason::kNotApplicable, "no GPU visible");
  Finding f =
      !degraded.empty() ? core::Fail(Severity::kConfig,
                                     fmt::format("{} GPU(s) trained below their maximum PCIe width", degraded.size()))
      : !unread.empty()
          ? core::Warn(Reason::kEvidenceError, fmt::format("PCIe width unreadable for {} GPU(s)", unread.size()))
          : core::Pass("every GPU at its maximum PCIe link width (idle speed is informational)");
  f.expected = "current width = maximum width";
  for (const auto& d : degraded) f.Detail("degraded: " + d);
  return f.Details(lines);
}

}  // namespace

void RegisterHardwareChecks(core::Registry& r) {
  r.Add(
      {CheckInfo{
           .id = "gpu-drivers",
           .category = "hardware",
           .title = "Every GPU bound to its vendor driver and visible to the management library",
           .rationale =
               "A GPU on the bus without its driver (or bound to nouveau/vfio-pci) is capacity the tenant pays for and cannot use.",
           .remediation = "Install and load the NVIDIA (or amdgpu) driver; check dmesg for GPUs that fell off the bus.",
           .criterion = "gpu-drivers",
           .targets = core::kS | core::kK | core::kSA | core::kV,
           .needs = {"pci.devices", "gpu.inventory"},
           .reproduce = "lspci -nnk -d 10de:; nvidia-smi -L",
       },
       GpuDrivers});
  r.Add(
      {CheckInfo{
           .id = "gpu-pcie-link",
           .category = "hardware",
           .title = "GPUs at their maximum PCIe link width",
           .rationale =
               "A GPU trained down to x8 or x4 halves or quarters host-device bandwidth: the classic 'GPU 7 is slow'.",
           .remediation = "Reseat the GPU or riser, check the slot and retimer; replace the part if it persists.",
           .targets = core::kS | core::kK | core::kSA,
           .needs = {"pci.devices", "gpu.inventory"},
           .reproduce = "nvidia-smi --query-gpu=index,pcie.link.width.current,pcie.link.width.max --format=csv",
       },
       GpuPcieLink});
  r.Add({CheckInfo{
             .id = "vm-iommu-passthrough",
             .category = "hardware",
             .title = "GPU and RDMA devices in IOMMU identity (passthrough) domains",
             .rationale = "Full DMA translation on GPUs and NICs costs peer-to-peer and GPUDirect RDMA bandwidth.",
             .remediation = "Boot with iommu=pt (intel_iommu=on iommu=pt or amd_iommu=on iommu=pt).",
             .criterion = "vm-iommu-passthrough",
             .targets = core::kS | core::kK | core::kSA | core::kV,
             .needs = {"iommu"},
             .reproduce = "cat /proc/cmdline; cat /sys/bus/pci/devices/*/iommu_group/type",
         },
         VmIommu});
  r.Add(
      {CheckInfo{
           .id = "cpu-power-governor",
           .category = "hardware",
           .title = "CPUs on the performance frequency governor",
           .rationale =
               "Power-saving governors add latency to the host threads that feed GPUs (data loading, NCCL proxies).",
           .remediation =
               "Set the governor to performance (cpupower frequency-set -g performance) or CpuFreqDef=Performance in Slurm.",
           .criterion = "cpu-power-governor",
           .targets = core::kS | core::kK | core::kSA | core::kV,
           .needs = {"cpu.governor"},
           .reproduce = "cat /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor | sort | uniq -c",
       },
       CpuGovernor});
}

}  // namespace clustermax::checks
