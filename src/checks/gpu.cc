// GPU checks judged from the GPU snapshot (NVML or nvidia-smi) and the PCI inventory: generation,
// counts, persistence, idle thermals, throttling, NVLink, and the GPUDirect / gdrcopy stack.
#include <regex>

#include <fmt/format.h>

#include "checks/common.h"
#include "core/thresholds.h"

namespace clustermax::checks {
namespace {

using core::CheckInfo;
using core::Evidence;

std::string Who(const json& d) {
  return fmt::format("GPU {} {}", d.value("index", 0),
                     d.value("pci_bus_id", json()).is_string() ? d["pci_bus_id"].get<std::string>() : "");
}

// The GPU snapshot's devices, or a finding explaining why they cannot be judged.
std::optional<Finding> NeedDevices(const JudgeContext& ctx, const Evidence*& gpu) {
  gpu = &ctx.Get("gpu.inventory");
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), *gpu)) return skip;
  if (auto p = core::EvidenceProblem(*gpu, "GPU inventory")) return p;
  auto devices = gpu->data.find("devices");
  if (devices == gpu->data.end() || !devices->is_array() || devices->empty())
    return core::Skip(Reason::kNotApplicable, "no GPU visible to the management library");
  return std::nullopt;
}

Finding GpuGeneration(const JudgeContext& ctx) {
  const Evidence* gpu = nullptr;
  if (auto f = NeedDevices(ctx, gpu)) return *f;
  const auto& t = core::EmbeddedThresholds();
  std::vector<std::string> old, unknown, names;
  for (const auto& d : gpu->data["devices"]) {
    std::string name = d.value("name", json()).is_string() ? d["name"].get<std::string>() : "";
    names.push_back(name);
    auto m = t.Model(name);
    if (!m)
      unknown.push_back(Who(d) + ": " + (name.empty() ? "name unreadable" : name));
    else if (!m->h100_or_newer)
      old.push_back(fmt::format("{}: {} ({})", Who(d), name, m->generation));
  }
  Finding f =
      !old.empty() ? core::Fail(Severity::kVersion, fmt::format("{} GPU(s) older than H100", old.size())).Details(old)
      : !unknown.empty() ? core::Warn(Reason::kUnverified, "GPU model not in the generation table").Details(unknown)
                         : core::Pass(fmt::format("all {} GPU(s) are H100-class or newer", names.size()));
  f.observed = names.empty() ? "" : names.front();
  f.expected = "H100 or newer";
  return f;
}

Finding GpuCountConsistent(const JudgeContext& ctx) {
  const Evidence* gpu = nullptr;
  if (auto f = NeedDevices(ctx, gpu)) return *f;
  const Evidence& pci = ctx.Get("pci.devices");
  int visible = static_cast<int>(gpu->data["devices"].size());
  int on_bus = CountPciGpus(pci, "0x10de");
  std::string name = gpu->data["devices"][0].value("name", json()).is_string()
                         ? gpu->data["devices"][0]["name"].get<std::string>()
                         : "";
  auto model = core::EmbeddedThresholds().Model(name);
  // A pass-through or vGPU guest holds the GPUs it was given, not the SKU's node count, whatever
  // target the audit was started with: the GPUs themselves say so.
  std::string guest_mode;
  for (const auto& d : gpu->data["devices"]) {
    std::string m =
        d.value("virtualization_mode", json()).is_string() ? d["virtualization_mode"].get<std::string>() : "";
    if (m == "Pass-Through" || m == "VGPU") guest_mode = m;
  }
  Finding f;
  if (pci.ok() && on_bus > visible) {
    f = core::Fail(
        Severity::kMissing,
        fmt::format("{} NVIDIA GPU(s) on the PCI bus but only {} visible (a GPU was lost)", on_bus, visible));
  } else if (pci.ok() && on_bus < visible) {
    // Every GPU the driver sees sits on the PCI bus: fewer there means the bus listing was not read
    // whole (or not understood), so neither count can be trusted to PASS.
    f = core::Warn(Reason::kUnverified,
                   fmt::format("{} GPU(s) visible to the driver but {} NVIDIA GPU(s) found on the PCI bus: the two "
                               "listings disagree",
                               visible, on_bus));
  } else if (!pci.ok() && (!guest_mode.empty() || ctx.target() == core::Target::kVm ||
                           ctx.target() == core::Target::kContainer || !model || !model->gpus_per_node)) {
    // Only the PCI bus can say that a GPU it holds is not visible: unread, nothing is verified.
    f = core::Warn(
        Reason::kUnverified,
        fmt::format("{} GPU(s) visible; the PCI listing was not read, so a lost GPU would not show", visible));
  } else if (!guest_mode.empty()) {
    f = core::Pass(
        fmt::format("{} GPU(s) visible in a {} guest (the GPUs report it); the node count of the SKU does not apply",
                    visible, guest_mode));
  } else if (model && model->gpus_per_node && visible < *model->gpus_per_node && ctx.target() != core::Target::kVm &&
             ctx.target() != core::Target::kContainer) {
    f = core::Fail(Severity::kMissing, fmt::format("{} {} GPU(s) visible; the SKU has {} per node", visible,
                                                   model->pattern, *model->gpus_per_node));
  } else if (!model || !model->gpus_per_node) {
    f = core::Warn(Reason::kUnverified,
                   fmt::format("{} GPU(s) visible; expected count unknown for '{}'", visible, name));
  } else if (visible < *model->gpus_per_node) {
    // A VM or container holds the GPUs it was given, not the SKU's node count.
    f = core::Pass(fmt::format(
        "{} GPU(s) visible, as the PCI bus says (a {} holds the GPUs it was given, not the "
        "{} of a {} node)",
        visible, ctx.target() == core::Target::kVm ? "VM" : "container", *model->gpus_per_node, model->pattern));
  } else {
    f = core::Pass(fmt::format("{} GPU(s) visible, as the PCI bus and the SKU say", visible));
  }
  f.observed = fmt::format("{} visible, {} on the PCI bus", visible, pci.ok() ? std::to_string(on_bus) : "?");
  f.expected = model && model->gpus_per_node ? fmt::format("{} per {} node", *model->gpus_per_node, model->pattern)
                                             : "all GPUs visible";
  return f;
}

Finding PersistenceMode(const JudgeContext& ctx) {
  const Evidence* gpu = nullptr;
  if (auto f = NeedDevices(ctx, gpu)) return *f;
  const Evidence& procs = ctx.Get("os.processes");
  bool daemon = Running(procs, "nvidia-persiste");  // nvidia-persistenced, as comm shows it
  std::vector<std::string> off, unknown;
  for (const auto& d : gpu->data["devices"]) {
    const json& pm = d.value("persistence_mode", json());
    if (!pm.is_boolean())
      unknown.push_back(Who(d));
    else if (!pm.get<bool>())
      off.push_back(Who(d));
  }
  Finding f = daemon                           ? core::Pass("nvidia-persistenced is running")
              : off.empty() && unknown.empty() ? core::Pass("persistence mode enabled on every GPU")
              : !off.empty()
                  ? core::Warn(Reason::kConfig,
                               fmt::format("persistence mode disabled on {} GPU(s) and nvidia-persistenced not running",
                                           off.size()))
                        .Details(off)
                  : core::Warn(Reason::kEvidenceError, "persistence mode unreadable").Details(unknown);
  f.expected = "enabled, or nvidia-persistenced running";
  return f;
}

Finding IdleThermals(const JudgeContext& ctx) {
  const Evidence* gpu = nullptr;
  if (auto f = NeedDevices(ctx, gpu)) return *f;
  const auto& t = core::EmbeddedThresholds();
  double warn_c = t.data()["idle"]["temperature_warn_c"], fail_c = t.data()["idle"]["temperature_fail_c"];
  std::vector<std::string> hot, over, lines, unread;
  int idle = 0;
  for (const auto& d : gpu->data["devices"]) {
    const json& util = d.value("utilization_gpu_pct", json());
    if (!util.is_number()) {  // unknown: neither idle nor busy
      unread.push_back(Who(d) + ": utilisation not read");
      continue;
    }
    if (util.get<double>() > 0) continue;  // busy: not judged at idle
    ++idle;
    std::string name = d.value("name", json()).is_string() ? d["name"].get<std::string>() : "";
    auto m = t.Model(name);
    double ceiling = t.IdlePowerCeiling(m ? m->power_class : "other");
    const json& p = d.value("power_draw_w", json());
    const json& c = d.value("temperature_c", json());
    lines.push_back(fmt::format("{}: {} W (ceiling {:.0f} W), {} C", Who(d), p.dump(), ceiling, c.dump()));
    if (c.is_number() && c.get<double>() >= fail_c)
      hot.push_back(fmt::format("{}: {} C at idle", Who(d), c.dump()));
    else if ((c.is_number() && c.get<double>() > warn_c) || (p.is_number() && p.get<double>() > ceiling)) {
      over.push_back(fmt::format("{}: {} W, {} C", Who(d), p.dump(), c.dump()));
    } else if (!c.is_number() || !p.is_number()) {
      unread.push_back(fmt::format("{}: power {} W, temperature {} C not read", Who(d), p.dump(), c.dump()));
    }
  }
  if (idle == 0)
    return core::Skip(Reason::kUnverified, "no idle GPU at sampling time (all busy or utilisation unreadable)")
        .Details(unread);
  Finding f =
      !hot.empty()
          ? core::Fail(Severity::kConfig, fmt::format("{} idle GPU(s) at or above {:.0f} C", hot.size(), fail_c))
                .Details(hot)
      : !over.empty() ? core::Warn(Reason::kConfig,
                                   fmt::format("{} idle GPU(s) above the power or temperature ceiling", over.size()))
                            .Details(over)
      : !unread.empty()
          ? core::Warn(Reason::kUnverified,
                       fmt::format("power or temperature not read on {} of {} idle GPU(s)", unread.size(), idle))
                .Details(unread)
          : core::Pass(fmt::format("{} idle GPU(s) within power and temperature ceilings", idle));
  f.expected = fmt::format("idle power <= class ceiling, temperature <= {:.0f} C", warn_c);
  f.Detail("one sample taken at collection time");
  return f.Details(lines);
}

Finding ThrottleReasons(const JudgeContext& ctx) {
  const Evidence* gpu = nullptr;
  if (auto f = NeedDevices(ctx, gpu)) return *f;
  constexpr unsigned long long kHwSlowdown = 0x8, kSwThermal = 0x20, kHwThermal = 0x40, kHwPowerBrake = 0x80;
  std::vector<std::string> fails, warns, unknown;
  for (const auto& d : gpu->data["devices"]) {
    const json& r = d.value("clocks_event_reasons", json());
    if (!r.is_number()) {
      unknown.push_back(Who(d));
      continue;
    }
    auto bits = r.get<unsigned long long>();
    std::vector<std::string> active;
    if (bits & kHwSlowdown) active.push_back("HW slowdown");
    if (bits & kHwThermal) active.push_back("HW thermal slowdown");
    if (bits & kHwPowerBrake) active.push_back("HW power brake");
    if (!active.empty())
      fails.push_back(fmt::format("{}: {}", Who(d), fmt::join(active, ", ")));
    else if (bits & kSwThermal)
      warns.push_back(Who(d) + ": SW thermal slowdown");
  }
  Finding f =
      !fails.empty()
          ? core::Fail(Severity::kConfig, fmt::format("{} GPU(s) throttled by hardware", fails.size())).Details(fails)
      : !warns.empty()   ? core::Warn(Reason::kConfig, "software thermal slowdown active").Details(warns)
      : !unknown.empty() ? core::Warn(Reason::kEvidenceError, "clock event reasons unreadable").Details(unknown)
                         : core::Pass("no hardware or thermal slowdown active on any GPU");
  f.expected = "no HW slowdown, HW thermal, HW power brake or SW thermal reason";
  return f;
}

Finding NvlinkStatus(const JudgeContext& ctx) {
  const Evidence* gpu = nullptr;
  if (auto f = NeedDevices(ctx, gpu)) return *f;
  const auto& t = core::EmbeddedThresholds();
  std::vector<std::string> down, lines;
  int with_links = 0;
  std::optional<int> expected;
  for (const auto& d : gpu->data["devices"]) {
    const json& links = d.value("nvlink_active", json());
    if (!links.is_array()) continue;
    ++with_links;
    std::string name = d.value("name", json()).is_string() ? d["name"].get<std::string>() : "";
    auto m = t.Model(name);
    expected = m ? m->nvlinks : std::nullopt;
    int active = 0;
    std::vector<std::string> inactive;
    for (size_t i = 0; i < links.size(); ++i) {
      if (links[i].get<bool>())
        ++active;
      else
        inactive.push_back(std::to_string(i));
    }
    lines.push_back(fmt::format("{}: {} of {} links active", Who(d), active, links.size()));
    if (!inactive.empty())
      down.push_back(fmt::format("{}: link(s) {} inactive", Who(d), fmt::join(inactive, ", ")));
    else if (expected && active < *expected)
      down.push_back(fmt::format("{}: {} links, the SKU has {}", Who(d), active, *expected));
  }
  if (with_links == 0) {
    // SKUs without NVLink (T4, L4, L40S, A10): nothing to check, from either source.
    bool none_has_nvlink = !gpu->data["devices"].empty();
    for (const auto& d : gpu->data["devices"]) {
      auto m = t.Model(d.value("name", json()).is_string() ? d["name"].get<std::string>() : "");
      if (!m || !m->nvlinks || *m->nvlinks != 0) none_has_nvlink = false;
    }
    if (none_has_nvlink) return core::Skip(Reason::kNotApplicable, "the GPU model has no NVLink");
    if (gpu->data.value("source", "") == "nvidia-smi")
      return core::Warn(Reason::kUnverified, "NVLink state is not in nvidia-smi -q -x; NVML was not usable");
    return core::Skip(Reason::kNotApplicable, "no GPU reports NVLink (PCIe-only GPUs)");
  }
  Finding f =
      !down.empty()
          ? core::Fail(Severity::kConfig, fmt::format("{} GPU(s) with NVLink links down", down.size())).Details(down)
      : !expected
          ? core::Warn(Reason::kUnverified, "every reported link is active; expected link count unknown for this SKU")
          : core::Pass(fmt::format("all {} links active on {} GPU(s)", *expected, with_links));
  f.expected = expected ? fmt::format("{} active links per GPU", *expected) : "every link active";
  return f.Details(lines);
}

bool ModuleLoaded(const Evidence& mods, std::string_view name) {
  if (!mods.ok()) return false;
  for (const auto& m : mods.data["loaded"]) {
    if (m == name) return true;
  }
  return false;
}

// RDMA NICs from the PCI inventory, or nullopt when the inventory is unreadable.
std::optional<int> RdmaNics(const Evidence& pci) {
  if (!pci.ok()) return std::nullopt;
  int n = 0;
  for (const auto& d : pci.data["devices"]) n += d.value("rdma_nic", false) ? 1 : 0;
  return n;
}

Finding Gdrcopy(const JudgeContext& ctx) {
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  auto nics = RdmaNics(ctx.Get("pci.devices"));
  bool node_scope = ctx.target() == core::Target::kStandalone || ctx.target() == core::Target::kVm;
  if (node_scope && nics && *nics == 0)
    return core::Skip(Reason::kNotApplicable, "no RDMA NIC on this node (gdrcopy matters with GPUDirect RDMA)");
  const Evidence& e = ctx.Get("gdrcopy");
  if (auto p = core::EvidenceProblem(e, "gdrcopy")) return *p;
  bool lib = !e.data["libraries"].empty();
  bool module = e.data["module"] == json(true) || ModuleLoaded(ctx.Get("kernel.modules"), "gdrdrv");
  bool device = e.data["device"] == json(true);
  Finding f =
      lib && module && device ? core::Pass("libgdrapi present, gdrdrv loaded, /dev/gdrdrv present")
      : !lib && !module
          ? core::Fail(Severity::kMissing, "gdrcopy is not installed (no libgdrapi, no gdrdrv module)")
          : core::Warn(Reason::kConfig, fmt::format("gdrcopy incomplete: library {}, module {}, device {}",
                                                    lib ? "yes" : "no", module ? "yes" : "no", device ? "yes" : "no"));
  f.observed = fmt::format("library {}, module {}, /dev/gdrdrv {}", lib ? "yes" : "no", module ? "yes" : "no",
                           device ? "yes" : "no");
  f.expected = "all three";
  return f;
}

struct GdrState {
  bool open_module = false, dmabuf = false, peermem = false;
};

std::optional<Finding> GdrApplies(const JudgeContext& ctx, GdrState& s) {
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return skip;
  auto nics = RdmaNics(ctx.Get("pci.devices"));
  if (!nics) return core::Warn(Reason::kEvidenceError, "PCI inventory unreadable: RDMA NICs unknown");
  if (*nics == 0) return core::Skip(Reason::kNotApplicable, "no RDMA NIC (TCP-only node: fabric-class grades that)");
  const Evidence& proc = ctx.Get("nvidia.proc-version");
  const Evidence& mods = ctx.Get("kernel.modules");
  if (auto p = core::EvidenceProblem(mods, "loaded kernel modules")) return p;
  s.open_module = proc.ok() && proc.data.value("open_module", false);
  s.dmabuf = s.open_module && !mods.data["nvidia_dma_buf_entries"].empty();
  s.peermem = ModuleLoaded(mods, "nvidia_peermem");
  return std::nullopt;
}

Finding GpudirectRdma(const JudgeContext& ctx) {
  GdrState s;
  if (auto f = GdrApplies(ctx, s)) return *f;
  Finding f = s.dmabuf ? core::Pass("NVIDIA open kernel module with dma-buf support (the modern GPUDirect RDMA path)")
              : s.peermem ? core::Warn(Reason::kConfig, "only the legacy nvidia_peermem path is available")
                          : core::Fail(Severity::kMissing,
                                       "no GPUDirect RDMA path: neither dma-buf on the open module nor nvidia_peermem");
  f.observed = fmt::format("open module {}, dma-buf {}, nvidia_peermem {}", s.open_module ? "yes" : "no",
                           s.dmabuf ? "yes" : "no", s.peermem ? "loaded" : "not loaded");
  f.expected = "open module with dma-buf";
  return f;
}

Finding PeermemLegacy(const JudgeContext& ctx) {
  GdrState s;
  if (auto f = GdrApplies(ctx, s)) return *f;
  if (!s.peermem) return core::Pass("nvidia_peermem not loaded").Observed("not loaded");
  if (s.dmabuf)
    return core::Pass("nvidia_peermem loaded alongside dma-buf (NCCL prefers dma-buf)").Observed("loaded with dma-buf");
  return core::Warn(Reason::kConfig, "nvidia_peermem is the only GPUDirect RDMA path")
      .Observed("loaded, no dma-buf")
      .Expected("dma-buf path");
}

Finding HbmExposure(const JudgeContext& ctx) {
  const Evidence& gpu = ctx.Get("gpu.inventory");
  const Evidence& numa = ctx.Get("numa.nodes");
  bool grace = false;
  if (gpu.ok()) {
    for (const auto& d : gpu.data.value("devices", json::array())) {
      std::string name = d.value("name", json()).is_string() ? d["name"].get<std::string>() : "";
      for (const char* p : {"GH200", "GB200", "GB300"}) grace |= name.find(p) != std::string::npos;
    }
  }
  if (!grace) {
    if (!gpu.ok() && gpu.status != core::EvidenceStatus::kNotFound) return *core::EvidenceProblem(gpu, "GPU inventory");
    return core::Skip(Reason::kNotApplicable, "not a coherent Grace platform (GH200, GB200, GB300)");
  }
  if (auto p = core::EvidenceProblem(numa, "NUMA nodes")) return *p;
  std::vector<std::string> hbm, unread;
  for (const auto& n : numa.data["nodes"]) {
    // A node whose CPU list or memory size was not read may be the HBM node: never counted as not.
    if (!n["cpulist"].is_string() || !n["mem_total_kb"].is_number()) {
      unread.push_back(n["node"].is_null() ? "?" : n["node"].dump());
      continue;
    }
    bool cpuless = n["cpulist"].get<std::string>().empty();
    bool big = n["mem_total_kb"].get<long long>() >= 64LL * 1024 * 1024;
    if (cpuless && big) hbm.push_back(n["node"]);
  }
  const json& mode =
      ctx.Get("nvidia.params").data.value("params", json::object()).value("CoherentGPUMemoryMode", json());
  Finding f = !hbm.empty()
                  ? core::Warn(Reason::kConfig,
                               fmt::format("GPU HBM onlined as system memory on NUMA node(s) {}", fmt::join(hbm, ", ")))
              : mode.is_string() && mode != "driver"
                  ? core::Warn(Reason::kConfig, "CoherentGPUMemoryMode is not 'driver' (CDMM off)")
              : !unread.empty()
                  ? core::Warn(Reason::kEvidenceError, fmt::format("NUMA node(s) {} not read (CPU list or memory size)",
                                                                   fmt::join(unread, ", ")))
                  : core::Pass("no GPU HBM onlined as system memory");
  f.observed = mode.is_string() ? "CoherentGPUMemoryMode " + mode.get<std::string>() : "CoherentGPUMemoryMode unread";
  f.expected = "CDMM (driver) and no memory-only NUMA node";
  return f;
}

Finding PcieAcs(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("pci.acs");
  if (auto p = core::EvidenceProblem(e, "PCI topology")) return *p;
  if (e.data["gpus"] == 0 || e.data["nics"] == 0)
    return core::Skip(Reason::kNotApplicable, "no GPU or no RDMA NIC: no GPU-NIC P2P path");
  std::vector<std::string> redirect, unreadable, lines;
  int switched = 0;
  for (const auto& p : e.data["pairs"]) {
    if (!p.value("common_switch", false)) continue;
    ++switched;
    for (const auto& port : p["ports"]) {
      std::string where = fmt::format("{} (GPU {} <-> NIC {})", port["bdf"].get<std::string>(),
                                      p["gpu"].get<std::string>(), p["nic"].get<std::string>());
      if (!port.value("extended_readable", false)) {
        unreadable.push_back(where);
      } else if (port.value("redirect", false)) {
        redirect.push_back(fmt::format("{}: ACSCtl 0x{:04x}", where, port["acs_control"].get<int>()));
      } else {
        lines.push_back(fmt::format("{}: {}", where,
                                    port.value("acs_present", false)
                                        ? fmt::format("ACSCtl 0x{:04x}", port["acs_control"].get<int>())
                                        : "no ACS"));
      }
    }
  }
  if (switched == 0) return core::Skip(Reason::kNotApplicable, "no GPU shares a PCIe switch with an RDMA NIC");
  bool guest = ctx.target() == core::Target::kVm;
  Finding f;
  if (!redirect.empty() && !guest) {
    f = core::Fail(Severity::kConfig,
                   fmt::format("P2P redirect enabled on {} switch port(s) between GPUs and NICs", redirect.size()));
  } else if (guest) {
    f = core::Warn(Reason::kAttestationRequired, "a guest's virtual bridges do not reflect the host's ACS settings");
  } else if (!unreadable.empty()) {
    f = core::Warn(Reason::kEvidenceError,
                   fmt::format("extended config space of {} port(s) unreadable (needs root)", unreadable.size()));
  } else {
    f = core::Pass(fmt::format("no P2P redirect on the switch ports of {} GPU-NIC path(s)", switched));
  }
  f.expected = "P2P Request/Completion Redirect off on every port between GPU and NIC";
  return f.Details(redirect).Details(unreadable).Details(lines);
}

Finding PciePassthrough(const JudgeContext& ctx) {
  if (ctx.target() == core::Target::kVm) {
    return core::Warn(Reason::kAttestationRequired,
                      "guest: the host's IOMMU grouping of passed-through devices is not visible");
  }
  const Evidence& e = ctx.Get("pci.passthrough");
  if (auto p = core::EvidenceProblem(e, "vfio devices")) return *p;
  const json& devs = e.data["vfio_devices"];
  if (devs.empty()) return core::Skip(Reason::kNotApplicable, "no device bound to vfio-pci (single-tenant host)");
  std::vector<std::string> shared, unread;
  for (const auto& d : devs) {
    std::string bdf = d["bdf"];
    if (!d["members"].is_array()) {
      unread.push_back(bdf);
      continue;
    }
    std::string slot = bdf.substr(0, bdf.rfind('.'));  // functions of the same device share a group legitimately
    for (const auto& m : d["members"]) {
      std::string mb = m;
      if (mb.substr(0, mb.rfind('.')) != slot)
        shared.push_back(fmt::format("{} shares IOMMU group {} with {}", bdf, d["group"].get<std::string>(), mb));
    }
  }
  Finding f = !shared.empty()
                  ? core::Fail(Severity::kConfig, "a passed-through device shares its IOMMU group with another device")
                        .Details(shared)
              : !unread.empty()
                  ? core::Warn(Reason::kEvidenceError, "IOMMU groups unreadable").Details(unread)
                  : core::Pass(fmt::format("all {} passed-through device(s) alone in their IOMMU groups", devs.size()));
  return f.Expected("each passed-through device alone in its IOMMU group");
}

Finding NvlinkBoundary(const JudgeContext& ctx) {
  const Evidence* gpu = nullptr;
  if (auto f = NeedDevices(ctx, gpu)) return *f;
  int with_links = 0;
  for (const auto& d : gpu->data["devices"]) with_links += d.value("nvlink_active", json()).is_array() ? 1 : 0;
  if (with_links == 0) {
    if (gpu->data.value("source", "") == "nvidia-smi")
      return core::Warn(Reason::kUnverified, "NVLink state unreadable without NVML");
    return core::Pass("no NVLink: no GPU shares a fabric with another tenant").Observed("no NVLink");
  }
  if (ctx.target() == core::Target::kVm || ctx.target() == core::Target::kContainer) {
    return core::Warn(Reason::kAttestationRequired,
                      "NVLink GPUs in a VM or container: peers outside this tenant cannot be ruled out from inside")
        .Observed(fmt::format("{} NVLink GPU(s)", with_links));
  }
  const Evidence& pci = ctx.Get("pci.devices");
  int on_bus = CountPciGpus(pci, "0x10de");
  int visible = static_cast<int>(gpu->data["devices"].size());
  std::string name = gpu->data["devices"][0].value("name", json()).is_string()
                         ? gpu->data["devices"][0]["name"].get<std::string>()
                         : "";
  auto model = core::EmbeddedThresholds().Model(name);
  if (model && model->gpus_per_node && *model->gpus_per_node < 8 && name.find("GB") != std::string::npos) {
    return core::Warn(Reason::kAttestationRequired,
                      "NVL72-class GPUs: the NVLink domain spans trays beyond this node; the clique needs attestation")
        .Observed(name);
  }
  if (pci.ok() && on_bus == visible) {
    return core::Pass(fmt::format("whole node: all {} NVLink GPU(s) on this board are in the tenant's hands", visible))
        .Observed(fmt::format("{} of {} GPUs visible", visible, on_bus));
  }
  return core::Warn(
      Reason::kUnverified,
      fmt::format("{} GPU(s) visible, {} on the PCI bus: NVLink peers may belong to others", visible, on_bus));
}

Finding FabricManager(const JudgeContext& ctx) {
  const Evidence& pci = ctx.Get("pci.devices");
  const Evidence& procs = ctx.Get("os.processes");
  if (auto p = core::EvidenceProblem(pci, "PCI inventory")) return *p;
  int nvswitch = 0;
  for (const auto& d : pci.data["devices"]) {
    if (d["vendor"] == "0x10de" && d["class"].get<std::string>().rfind("0x0680", 0) == 0) ++nvswitch;
  }
  if (nvswitch == 0) return core::Skip(Reason::kNotApplicable, "no NVSwitch on the PCI bus");
  if (auto p = core::EvidenceProblem(procs, "process list")) return *p;
  bool running = Running(procs, "nv-fabricmanage");
  Finding f =
      running ? core::Pass(fmt::format("NVIDIA Fabric Manager runs for {} NVSwitch(es)", nvswitch))
              : core::Fail(
                    Severity::kMissing,
                    fmt::format(
                        "{} NVSwitch(es) but Fabric Manager is not running: CUDA reports 'system not yet initialized'",
                        nvswitch));
  return f.Observed(running ? "nv-fabricmanager running" : "not running").Expected("nv-fabricmanager running");
}

// vboost: the reference's control. B300/GB300 have no slider; the probe proves a change is
// accepted (and is put back); without it the current value is shown and nothing is claimed.
Finding VboostControl(const JudgeContext& ctx) {
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  const Evidence& inv = ctx.Get("gpu.inventory");
  if (inv.ok()) {
    static const std::regex b300(R"(\bg?b300\b)", std::regex::icase);
    for (const auto& d : inv.data.value("devices", json::array())) {
      std::string name = d.value("name", json("")).is_string() ? d["name"].get<std::string>() : "";
      if (std::regex_search(name, b300)) return core::Skip(Reason::kNotApplicable, name + " has no boost slider");
    }
  }
  const Evidence& list = ctx.Get("gpu.boost-slider");
  if (auto p = core::EvidenceProblem(list, "nvidia-smi boost-slider -l")) return *p;
  if (!list.data.value("supported", false)) {
    return core::Skip(Reason::kNotApplicable, "the driver offers no boost slider on this GPU")
        .Detail(list.data.value("output", std::string()));
  }
  std::vector<std::string> values;
  for (const auto& sl : list.data["sliders"]) {
    if (sl["slider"] == "vboost")
      values.push_back(
          fmt::format("GPU {}: vboost {} of {}", sl["gpu"].get<int>(), sl["current"].get<int>(), sl["max"].get<int>()));
  }
  if (values.empty()) return core::Skip(Reason::kNotApplicable, "no vboost slider among the GPU's sliders");
  std::string observed = values.size() == 1 ? values[0] : fmt::format("{} GPUs; {}", values.size(), values[0]);
  const Evidence& probe = ctx.Get("probe.vboost-set");
  if (probe.status == core::EvidenceStatus::kProbeDisabled) {
    Finding f = core::Skip(Reason::kProbeDisabled,
                           "vboost readable (" + observed + "); whether it can be set needs the vboost-set probe");
    for (const auto& v : values) f.Detail(v);
    return f.Observed(observed).Expected("a vboost change accepted on every GPU (probe vboost-set)");
  }
  if (auto p = core::EvidenceProblem(probe, "vboost-set probe")) return *p;
  std::string outcome = probe.data.value("outcome", "");
  int n = probe.data.value("gpus", 0), changed = probe.data.value("changed", 0),
      restored = probe.data.value("restored", 0);
  std::string target = std::to_string(probe.data.value("target", 0));
  Finding f =
      outcome == "accepted" ? core::Pass(fmt::format("vboost set to {} on all {} GPU(s) and restored", target, n))
      : outcome == "not-reverted"
          ? core::Warn(Reason::kConfig,
                       fmt::format("vboost changed on {} of {} GPU(s) but only {} restored: check the slider by hand",
                                   changed, n, restored))
      : outcome == "denied" ? core::Warn(Reason::kConfig, "setting vboost was refused (passive read only)")
                            : core::Warn(Reason::kConfig, fmt::format("vboost changed on {} of {} GPU(s)", changed, n));
  for (const auto& st : probe.data.value("steps", json::array())) {
    f.Detail(
        fmt::format("{} -> exit {} {}", st.value("command", ""), st.value("exit_code", -1), st.value("output", "")));
  }
  return f.Observed(fmt::format("{}; probe: {}", observed, outcome))
      .Expected("a vboost change accepted on every GPU, then reverted");
}

}  // namespace

void RegisterGpuChecks(core::Registry& r) {
  using core::kC;
  using core::kK;
  using core::kS;
  using core::kSA;
  using core::kV;
  r.Add({CheckInfo{.id = "gpu-generation",
                   .category = "hardware",
                   .title = "GPUs are H100-class or newer",
                   .rationale = "The rating's hard gate: an offering of only pre-H100 GPUs is Underperforming.",
                   .remediation = "Offer H100-class or newer GPUs.",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"pci.devices", "gpu.inventory"},
                   .critical = true,
                   .reproduce = "nvidia-smi -L"},
         GpuGeneration});
  r.Add({CheckInfo{.id = "gpu-count-consistent",
                   .category = "hardware",
                   .title = "Every GPU on the bus is visible, at the SKU's count",
                   .rationale = "A GPU that fell off the bus is the classic silent loss: the node runs on 7 of 8.",
                   .remediation = "Check dmesg for Xid 79 / fallen-off-the-bus, reseat or RMA the GPU, then reboot.",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"pci.devices", "gpu.inventory"},
                   .reproduce = "lspci -d 10de: | wc -l; nvidia-smi -L | wc -l"},
         GpuCountConsistent});
  r.Add(
      {CheckInfo{
           .id = "gpu-persistence-mode",
           .category = "hardware",
           .title = "GPU persistence mode on (or nvidia-persistenced running)",
           .rationale =
               "Without persistence the driver tears down and reinitialises GPUs between jobs: slow starts, lost state.",
           .remediation = "Enable the nvidia-persistenced service.",
           .targets = kS | kK | kSA | kV,
           .needs = {"pci.devices", "gpu.inventory", "os.processes"},
           .reproduce = "nvidia-smi --query-gpu=persistence_mode --format=csv"},
       PersistenceMode});
  r.Add(
      {CheckInfo{
           .id = "idle-thermals",
           .category = "hardware",
           .title = "Idle GPUs within power and temperature ceilings",
           .rationale =
               "An idle GPU drawing too much power or running hot points at cooling, a stuck process or a failing part.",
           .remediation = "Check airflow and inlet temperature; look for stray processes; reset or RMA the GPU.",
           .criterion = "idle-thermals",
           .targets = kS | kK | kSA | kV,
           .needs = {"pci.devices", "gpu.inventory"},
           .reproduce = "nvidia-smi --query-gpu=index,name,temperature.gpu,power.draw,utilization.gpu --format=csv"},
       IdleThermals});
  r.Add({CheckInfo{.id = "nvlink-status",
                   .category = "hardware",
                   .title = "Every expected NVLink link active",
                   .rationale = "A down NVLink silently halves collective bandwidth on that GPU.",
                   .remediation = "Reset the GPU/NVSwitch fabric; reseat or RMA the baseboard if links stay down.",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"pci.devices", "gpu.inventory"},
                   .reproduce = "nvidia-smi nvlink --status"},
         NvlinkStatus});
  r.Add({CheckInfo{.id = "gdrcopy",
                   .category = "hardware",
                   .title = "gdrcopy installed: libgdrapi, gdrdrv module, /dev/gdrdrv",
                   .rationale = "NCCL and UCX use gdrcopy for low-latency GPU memory copies.",
                   .remediation = "Install gdrcopy (gdrdrv-dkms and libgdrapi) and load gdrdrv.",
                   .criterion = "gdrcopy",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"pci.devices", "gpu.inventory", "gdrcopy", "kernel.modules"},
                   .reproduce = "ldconfig -p | grep gdrapi; lsmod | grep gdrdrv; ls -l /dev/gdrdrv"},
         Gdrcopy});
  r.Add(
      {CheckInfo{
           .id = "gpudirect-rdma",
           .category = "hardware",
           .title = "A GPUDirect RDMA path exists (dma-buf on the open module)",
           .rationale =
               "Without GPUDirect RDMA every inter-node transfer bounces through host memory: the rating's hard gate.",
           .remediation =
               "Use the NVIDIA open kernel module (dma-buf) with a recent kernel and rdma-core, or load nvidia_peermem.",
           .criterion = "gpudirect-rdma",
           .targets = kS | kK | kSA | kV,
           .needs = {"pci.devices", "gpu.inventory", "nvidia.proc-version", "kernel.modules"},
           .critical = true,
           .reproduce = "cat /proc/driver/nvidia/version; lsmod | grep nvidia_peermem"},
       GpudirectRdma});
  r.Add({CheckInfo{.id = "gpudirect-rdma-peermem-legacy",
                   .category = "hardware",
                   .title = "nvidia_peermem is not the only GPUDirect path",
                   .rationale =
                       "nvidia_peermem is the legacy path; dma-buf is what NCCL prefers and what newer stacks support.",
                   .remediation = "Move to the open kernel module with dma-buf.",
                   .criterion = "gpudirect-rdma",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"pci.devices", "gpu.inventory", "nvidia.proc-version", "kernel.modules"},
                   .reproduce = "lsmod | grep nvidia_peermem"},
         PeermemLegacy});
  r.Add(
      {CheckInfo{
           .id = "vboost-control",
           .category = "hardware",
           .title = "The GPU boost slider (vboost) can be set",
           .rationale =
               "Memory-bound work gains from vboost; a provider that locks the slider takes that choice from the user.",
           .remediation =
               "Allow nvidia-smi boost-slider --vboost for the tenant (driver permissions, no management lock).",
           .criterion = "vboost-control",
           .targets = kS | kK | kSA | kV,
           .needs = {"pci.devices", "gpu.inventory", "gpu.boost-slider", "probe.vboost-set"},
           .probe = "vboost-set",
           .reproduce = "nvidia-smi boost-slider -l; nvidia-smi boost-slider --vboost 2 (then back)"},
       VboostControl});
  r.Add({CheckInfo{.id = "hbm-memory-exposure",
                   .category = "hardware",
                   .title = "Grace platforms keep GPU HBM out of system memory (CDMM)",
                   .rationale = "HBM onlined as NUMA memory lets the kernel place host allocations in GPU memory.",
                   .remediation = "Load the driver with CoherentGPUMemoryMode=driver (CDMM) and keep HBM offline.",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"gpu.inventory", "numa.nodes", "nvidia.params"},
                   .reproduce = "numactl -H; grep CoherentGPUMemoryMode /proc/driver/nvidia/params"},
         HbmExposure});
  r.Add(
      {CheckInfo{
           .id = "pcie-acs",
           .category = "hardware",
           .title = "PCIe ACS does not redirect GPU-NIC peer traffic",
           .rationale = "ACS P2P redirect forces GPUDirect traffic up to the root complex: a rating hard gate.",
           .remediation =
               "Disable ACS P2P Request/Completion Redirect on the switch ports (BIOS or setpci at boot) on bare metal.",
           .criterion = "pcie-acs",
           .targets = kS | kK | kSA | kV,
           .needs = {"pci.acs"},
           .critical = true,
           .reproduce = "sudo lspci -vvv | grep -E '^[0-9a-f]|ACSCtl'"},
       PcieAcs});
  r.Add({CheckInfo{.id = "security-pcie-passthrough",
                   .category = "isolation",
                   .title = "Passed-through devices are alone in their IOMMU groups",
                   .rationale = "A passed-through GPU or NIC sharing an IOMMU group allows DMA across tenants.",
                   .remediation = "Enable ACS on the host's switches or pass through whole groups only.",
                   .criterion = "security-pcie-passthrough",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"pci.passthrough"},
                   .reproduce = "ls /sys/kernel/iommu_groups/*/devices"},
         PciePassthrough});
  r.Add({CheckInfo{
             .id = "security-nvlink-boundary",
             .category = "isolation",
             .title = "NVLink peers all belong to this tenant",
             .rationale = "GPUs joined by NVLink can read each other's memory; a shared NVLink domain crosses tenants.",
             .remediation = "Allocate whole NVLink domains (whole HGX nodes, whole NVL72 cliques) per tenant.",
             .criterion = "security-nvlink-boundary",
             .targets = kS | kK | kSA | kV,
             .needs = {"pci.devices", "gpu.inventory"},
             .reproduce = "nvidia-smi topo -m"},
         NvlinkBoundary});
  r.Add({CheckInfo{
             .id = "fabric-manager",
             .category = "hardware",
             .title = "Fabric Manager runs on NVSwitch systems",
             .rationale = "Without Fabric Manager an HGX node's GPUs cannot use NVLink and CUDA fails to initialise.",
             .remediation = "Install and start nvidia-fabricmanager matching the driver version.",
             .targets = kS | kK | kSA,
             .needs = {"pci.devices", "os.processes"},
             .reproduce = "systemctl is-active nvidia-fabricmanager"},
         FabricManager});
  r.Add(
      {CheckInfo{.id = "gpu-throttle-reasons",
                 .category = "health",
                 .title = "No hardware or thermal clock slowdown at idle",
                 .rationale =
                     "HW slowdown, HW thermal or power-brake throttling at idle means a cooling, power or board fault.",
                 .remediation = "Check cooling and power delivery; drain and RMA if it persists.",
                 .criterion = "idle-thermals",
                 .targets = kS | kK | kSA | kV,
                 .needs = {"pci.devices", "gpu.inventory"},
                 .reproduce = "nvidia-smi -q -d PERFORMANCE"},
       ThrottleReasons});
}

}  // namespace clustermax::checks
