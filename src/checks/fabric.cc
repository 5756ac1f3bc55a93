// Fabric checks judged from sysfs RDMA evidence: port error counters, partitions (PKeys), RoCE
// tenancy, subnet-manager keys, SR-IOV VFs and the UFM security profile.
#include <regex>
#include <set>

#include <fmt/format.h>

#include "checks/common.h"
#include "core/thresholds.h"
#include "util/strings.h"

namespace clustermax::checks {
namespace {

using core::CheckInfo;
using core::Evidence;

struct Port {
  std::string name, link_layer, state;
  json pkeys, ndevs;
};

std::vector<Port> Ports(const Evidence& e) {
  std::vector<Port> out;
  for (const auto& d : e.data.value("devices", json::array())) {
    for (const auto& p : d.value("ports", json::array())) {
      out.push_back({d["name"].get<std::string>() + "/" + p["port"].get<std::string>(),
                     p["link_layer"].is_string() ? p["link_layer"].get<std::string>() : "",
                     p["state"].is_string() ? p["state"].get<std::string>() : "", p.value("pkeys", json::array()),
                     p.value("gid_ndevs", json::array())});
    }
  }
  return out;
}

bool HasLayer(const std::vector<Port>& ports, std::string_view layer) {
  for (const auto& p : ports) {
    if (p.link_layer == layer) return true;
  }
  return false;
}

Finding UfmProfile(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("rdma.devices");
  if (auto p = core::EvidenceProblem(e, "RDMA devices")) return *p;
  if (!HasLayer(Ports(e), "InfiniBand"))
    return core::Skip(Reason::kNotApplicable, "no InfiniBand (RoCE, EFA or Ethernet only)");
  return core::
      Warn(Reason::kAttestationRequired,
           "InfiniBand fabric: the UFM Secured Bare Metal Cloud profile (M_Key protection, GUID allow-list, SA trust, MAD rate "
           "limits) is only visible to the provider")
          .Observed("InfiniBand present")
          .Expected("provider attestation of the UFM security profile");
}

Finding IbTenantIsolation(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("rdma.devices");
  if (auto p = core::EvidenceProblem(e, "RDMA devices")) return *p;
  std::vector<std::string> default_full, custom, lines;
  int active_ib = 0;
  for (const auto& p : Ports(e)) {
    if (p.link_layer != "InfiniBand" || p.state.find("ACTIVE") == std::string::npos) continue;
    ++active_ib;
    bool has_custom = false, has_default_full = false;
    std::vector<std::string> keys;
    for (const auto& k : p.pkeys) {
      auto v = util::ParseHexOrDec(k.get<std::string>());
      if (!v || (*v & 0x7fff) == 0) continue;  // empty slot
      keys.push_back(k);
      if ((*v & 0x7fff) == 0x7fff)
        has_default_full |= (*v & 0x8000) != 0;
      else
        has_custom = true;
    }
    lines.push_back(
        fmt::format("{}: {}", p.name, keys.empty() ? "no PKey read" : fmt::format("{}", fmt::join(keys, " "))));
    if (has_custom && !has_default_full)
      custom.push_back(p.name);
    else
      default_full.push_back(p.name);
  }
  if (active_ib == 0) return core::Skip(Reason::kNotApplicable, "no active InfiniBand port");
  Finding f =
      default_full.empty()
          ? core::Pass(fmt::format(
                "a non-default partition on all {} active IB port(s); the default partition is limited or absent",
                active_ib))
          : core::Warn(Reason::kAttestationRequired,
                       fmt::format("{} of {} active IB port(s) are full members of the default partition: "
                                   "isolation cannot be proven from the node",
                                   default_full.size(), active_ib));
  return f.Expected("tenant PKey, default partition limited-only").Details(lines);
}

Finding RoceTenantIsolation(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("rdma.devices");
  if (auto p = core::EvidenceProblem(e, "RDMA devices")) return *p;
  // The GPU fabric's RoCE rails only: a frontend or storage port over Ethernet is not the fabric.
  std::vector<std::string> lines;
  bool roce = false;
  const auto classes = ClassifyRdmaPorts(e.data);
  for (const auto& c : classes) {
    if (!c.rail || c.kind != "RoCE") continue;
    roce = true;
    lines.push_back(fmt::format("{}: GID netdevs {}", c.name, (*c.port).value("gid_ndevs", json::array()).dump()));
  }
  if (!roce) return core::Skip(Reason::kNotApplicable, "no RoCE rail").Details(NotRailLines(classes));
  return core::Warn(Reason::kAttestationRequired,
                    "RoCE fabric: one VLAN (or VRF/VXLAN) per tenant can only be attested by the provider")
      .Expected("attested per-tenant VLAN, GIDs on the tenant VLAN interface")
      .Details(lines);
}

Finding IbManagementKeys(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("rdma.devices");
  const Evidence& sm = ctx.Get("ib.opensm");
  if (auto p = core::EvidenceProblem(e, "RDMA devices")) return *p;
  if (!HasLayer(Ports(e), "InfiniBand")) return core::Skip(Reason::kNotApplicable, "no InfiniBand");
  if (auto p = core::EvidenceProblem(sm, "OpenSM configuration")) return *p;
  if (!sm.data.value("present", false)) {
    return core::Warn(Reason::kAttestationRequired,
                      "no subnet manager on this node: SM, SA and M_Key settings need the provider's attestation");
  }
  const json& k = sm.data["keys"];
  auto zero = [&](const char* key) {
    if (!k.contains(key)) return true;  // OpenSM's default key is 0
    auto v = util::ParseHexOrDec(k[key].get<std::string>());
    return v && *v == 0;
  };
  bool unprotected = zero("sm_key") && zero("m_key_protection_level");
  Finding f =
      unprotected
          ? core::Warn(Reason::kConfig,
                       "the local OpenSM runs with sm_key 0 and no M_Key protection (a FAIL on a multi-tenant fabric)")
          : core::Pass("the local OpenSM sets a non-zero SM key or M_Key protection");
  return f.Observed(k.dump()).Expected("non-zero sm_key and m_key_protection_level > 0");
}

Finding SriovVfMad(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("sriov.vfs");
  if (auto p = core::EvidenceProblem(e, "SR-IOV functions")) return *p;
  if (e.data["vfs"].empty()) return core::Skip(Reason::kNotApplicable, "no SR-IOV virtual function of an RDMA NIC");
  return core::Skip(
             Reason::kUnverified,
             fmt::format(
                 "{} RDMA VF(s): whether SMP MADs are blocked needs the ib-fabric-query probe, not part of this build",
                 e.data["vfs"].size()))
      .Observed(e.data["vfs"].dump());
}

Finding IbLinkErrors(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("rdma.counters");
  if (auto p = core::EvidenceProblem(e, "RDMA error counters")) return *p;
  const json& ports = e.data["ports"];
  if (ports.empty()) return core::Skip(Reason::kNotApplicable, "no InfiniBand or RoCE port");
  std::vector<std::string> rising, history;
  bool second_read = false;
  for (const auto& p : ports) {
    std::string name = p["port"];
    for (const auto& [counter, v] : p["first"].items()) {
      if (!v.is_number()) continue;
      long long a = v.get<long long>();
      const json& b = p["second"].is_object() ? p["second"].value(counter, json()) : json();
      if (b.is_number()) {
        second_read = true;
        if (b.get<long long>() > a)
          rising.push_back(fmt::format("{} {}: {} -> {}", name, counter, a, b.get<long long>()));
      }
      if (a > 0) history.push_back(fmt::format("{} {}: {}", name, counter, a));
    }
  }
  Finding f =
      !rising.empty()
          ? core::Fail(
                Severity::kConfig,
                fmt::format("{} error counter(s) rising during the sampling window (live link errors)", rising.size()))
      : !history.empty() ? core::Warn(Reason::kConfig,
                                      fmt::format("{} non-zero error counter(s) (history; not rising)", history.size()))
                         : core::Pass(fmt::format("all error counters zero on {} port(s)", ports.size()));
  f.observed =
      second_read ? fmt::format("two reads {:.0f} s apart", e.data.value("interval_s", 0.0)) : "one read (no interval)";
  f.expected = "zero, and not rising";
  return f.Details(rising).Details(history);
}

// hca-naming: NCCL and the rail-aware tools expect mlx5_N; a custom scheme works only with
// NCCL_IB_HCA set to it.
Finding HcaNaming(const JudgeContext& ctx) {
  const Evidence& rdma = ctx.Get("rdma.devices");
  if (auto p = core::EvidenceProblem(rdma, "RDMA devices")) return *p;
  std::vector<std::string> names, custom;
  static const std::regex mlx(R"(^mlx5_\d+$)");
  // Only rail devices matter to NCCL_IB_HCA: mlx5_bond_0 or a guest's Ethernet VF keep their names.
  std::set<std::string> rail_devices;
  for (const auto& p : ClassifyRdmaPorts(rdma.data)) {
    if (p.rail) rail_devices.insert(p.name.substr(0, p.name.rfind('/')));
  }
  for (const auto& d : rdma.data.value("devices", json::array())) {
    std::string n = d.value("name", "");
    names.push_back(n);
    if (!std::regex_match(n, mlx) && (rail_devices.count(n) || d.value("ports", json::array()).empty()))
      custom.push_back(n);
  }
  if (names.empty()) return core::Skip(Reason::kNotApplicable, "no RDMA device");
  std::string hca = NcclSetting(ctx.Get("nccl.config"), "NCCL_IB_HCA");
  std::string observed = fmt::format("{}{}", fmt::join(names, ", "), hca.empty() ? "" : "; NCCL_IB_HCA=" + hca);
  if (custom.empty())
    return core::Pass(fmt::format("{} RDMA device(s) named mlx5_N", names.size()))
        .Observed(observed)
        .Expected("mlx5_N, or NCCL_IB_HCA matching a custom scheme");
  if (!hca.empty()) {
    return core::Pass(fmt::format("custom HCA names ({}) with NCCL_IB_HCA={}", custom[0], hca))
        .Observed(observed)
        .Expected("mlx5_N, or NCCL_IB_HCA matching a custom scheme");
  }
  return core::Warn(Reason::kConfig,
                    fmt::format("custom HCA names ({}) without NCCL_IB_HCA: NCCL may pick the wrong ports",
                                fmt::join(custom, ", ")))
      .Observed(observed)
      .Expected("mlx5_N, or NCCL_IB_HCA matching a custom scheme");
}

// nccl-roce-gid-index: on RoCE, NCCL_IB_GID_INDEX must point at a RoCE v2 GID with a routable
// address (commonly index 3); otherwise NCCL may pick RoCE v1 or a link-local GID.
Finding NcclRoceGidIndex(const JudgeContext& ctx) {
  const Evidence& rdma = ctx.Get("rdma.devices");
  if (auto p = core::EvidenceProblem(rdma, "RDMA devices")) return *p;
  // Only RoCE rails: a frontend bond, a VF or a slow Ethernet port is not NCCL's fabric.
  std::vector<std::pair<std::string, json>> roce;  // copies: the ports outlive no temporary
  const auto ports = ClassifyRdmaPorts(rdma.data);
  for (const auto& p : ports) {
    if (p.rail && p.kind == "RoCE") roce.push_back({p.name, *p.port});
  }
  std::vector<std::string> not_rails = NotRailLines(ports);
  if (roce.empty())
    return core::Skip(Reason::kNotApplicable, not_rails.empty() ? "no RoCE port" : "no RoCE rail").Details(not_rails);
  std::string idx = NcclSetting(ctx.Get("nccl.config"), "NCCL_IB_GID_INDEX");
  if (idx.empty()) {
    return core::
        Warn(Reason::kConfig,
             fmt::format(
                 "NCCL_IB_GID_INDEX is unset on a RoCE node ({} RoCE rail(s)): NCCL may pick a RoCE v1 or link-local GID",
                 roce.size()))
            .Details(not_rails)
            .Observed("unset")
            .Expected("NCCL_IB_GID_INDEX pointing at a RoCE v2 GID (commonly 3)");
  }
  auto n = util::ParseInt(idx);
  if (!n || *n < 0 || *n > 7)
    return core::Warn(Reason::kConfig, "NCCL_IB_GID_INDEX = " + idx + " is not an index this audit reads (0-7)");
  std::vector<std::string> bad, lines;
  for (const auto& [name, p] : roce) {
    const json types = p.value("gid_types", json::array());
    const json gids = p.value("gids", json::array());
    std::string type =
        *n < static_cast<long long>(types.size()) && types[*n].is_string() ? types[*n].get<std::string>() : "";
    std::string gid =
        *n < static_cast<long long>(gids.size()) && gids[*n].is_string() ? gids[*n].get<std::string>() : "";
    lines.push_back(
        fmt::format("{}: GID {} = {} ({})", name, *n, gid.empty() ? "none" : gid, type.empty() ? "no type" : type));
    bool v2 = util::ContainsIgnoreCase(type, "v2");
    bool link_local = gid.rfind("fe80:", 0) == 0;
    bool empty = gid.empty() || gid == "0000:0000:0000:0000:0000:0000:0000:0000";
    if (!v2 || link_local || empty) bad.push_back(lines.back());
  }
  Finding f =
      bad.empty()
          ? core::Pass(fmt::format("NCCL_IB_GID_INDEX={} is a routable RoCE v2 GID on all {} port(s)", *n, roce.size()))
          : core::Warn(Reason::kConfig,
                       fmt::format("NCCL_IB_GID_INDEX={} is not a routable RoCE v2 GID on {} of {} port(s): {}", *n,
                                   bad.size(), roce.size(), bad[0]));
  return f.Details(lines)
      .Details(not_rails)
      .Observed("NCCL_IB_GID_INDEX=" + idx)
      .Expected("a RoCE v2 GID with a routable address (commonly 3)");
}

// fabric-class: the GPU-to-GPU fabric, one RDMA NIC per GPU at the GPU generation's rate. Only rails
// count (ClassifyRdmaPorts: InfiniBand, RoCE >= 100 Gb/s on a physical function, EFA); bonds, VFs
// and slow Ethernet are listed as not rails.
Finding FabricClass(const JudgeContext& ctx) {
  const Evidence& pci = ctx.Get("pci.devices");
  const Evidence& gpu = ctx.Get("gpu.inventory");
  const Evidence& rdma = ctx.Get("rdma.devices");
  int gpus = gpu.ok() ? static_cast<int>(gpu.data.value("devices", json::array()).size()) : 0;
  if (gpus == 0 && pci.ok()) gpus = CountPciGpus(pci);
  if (gpus == 0) {
    if (!gpu.ok() && !pci.ok())
      return core::Warn(Reason::kEvidenceError, "neither the GPU inventory nor the PCI bus could be read");
    return core::Skip(Reason::kNotApplicable, "no GPU on this node");
  }
  if (auto p = core::EvidenceProblem(rdma, "RDMA devices")) return *p;
  const json& fabric = core::EmbeddedThresholds().data()["fabric"];
  std::string model_name;  // "" when unread: never looked up
  if (gpu.ok() && !gpu.data["devices"].empty())
    model_name = gpu.data["devices"][0].value("name", json()).is_string()
                     ? gpu.data["devices"][0]["name"].get<std::string>()
                     : "";
  model_name = std::string(util::Trim(model_name));
  auto model = model_name.empty() ? std::nullopt : core::EmbeddedThresholds().Model(model_name);
  std::optional<double> per_gpu;
  if (model && fabric["per_gpu_gbps"].contains(model->pattern))
    per_gpu = fabric["per_gpu_gbps"][model->pattern].get<double>();
  auto generation = [&](double gbps) {
    std::string g;
    for (const auto& row : fabric["ib_generations"]) {
      if (gbps >= row[1].get<double>()) g = row[0].get<std::string>();
    }
    return g;
  };
  std::vector<std::string> lines, inactive;
  int fabric_ports = 0;
  double active_gbps = 0;
  std::set<std::string> kinds;
  const auto ports = ClassifyRdmaPorts(rdma.data);
  for (const auto& p : ports) {
    bool active = p.state.find("ACTIVE") != std::string::npos;
    lines.push_back(
        fmt::format("{}: {} {}{} {} — {}", p.name, p.kind, p.gbps ? fmt::format("{:g} Gb/s", *p.gbps) : "rate ?",
                    p.kind == "InfiniBand" && p.gbps ? " (" + generation(*p.gbps) + ")" : "",
                    p.state.empty() ? "state ?" : p.state, p.rail ? "rail" : "not a rail (" + p.why_not + ")"));
    if (!p.rail) continue;
    ++fabric_ports;
    kinds.insert(p.kind);
    if (active)
      active_gbps += p.gbps.value_or(0);
    else
      inactive.push_back(p.name + " " + (p.state.empty() ? "state unread" : p.state));
  }
  for (auto& l : NotRailLines(ports)) lines.push_back(std::move(l));
  std::string expected = per_gpu ? fmt::format("one active IB/RoCE/EFA NIC per GPU, {} x {:g} Gb/s", gpus, *per_gpu)
                                 : fmt::format("one active IB/RoCE/EFA NIC per GPU ({} GPUs)", gpus);
  if (rdma.data.value("devices", json::array()).empty()) {
    // A cluster offering whose GPU nodes have no RDMA NIC runs multi-node NCCL over TCP.
    return core::Fail(
               Severity::kMissing,
               fmt::format("no RDMA device on a node with {} GPU(s): multi-node traffic falls back to TCP sockets",
                           gpus))
        .Observed("no /sys/class/infiniband device")
        .Expected(expected);
  }
  std::vector<std::string> problems;
  if (fabric_ports < gpus) problems.push_back(fmt::format("{} fabric port(s) for {} GPU(s)", fabric_ports, gpus));
  if (!inactive.empty())
    problems.push_back(fmt::format("{} fabric port(s) not ACTIVE ({})", inactive.size(), fmt::join(inactive, ", ")));
  if (per_gpu && fabric_ports > 0 && active_gbps < gpus * *per_gpu) {
    problems.push_back(fmt::format("{:g} Gb/s of active fabric for {} GPU(s), below {} x {:g} Gb/s", active_gbps, gpus,
                                   gpus, *per_gpu));
  }
  std::string observed = fmt::format("{} fabric port(s) ({}), {:g} Gb/s active, {} GPU(s)", fabric_ports,
                                     fmt::join(kinds, "+"), active_gbps, gpus);
  Finding f =
      !problems.empty() ? core::Warn(Reason::kConfig, fmt::format("{}", fmt::join(problems, "; ")))
      : model_name.empty()
          ? core::Warn(Reason::kUnverified,
                       fmt::format("{} fabric port(s) for {} GPU(s); the GPU model could not be read, so the per-GPU "
                                   "fabric rate cannot be judged",
                                   fabric_ports, gpus))
      : !per_gpu
          ? core::Warn(Reason::kUnverified,
                       fmt::format("{} fabric port(s) for {} GPU(s); no expected per-GPU rate for GPU model '{}'",
                                   fabric_ports, gpus, model_name))
          : core::Pass(fmt::format("{} active {} fabric port(s), {:g} Gb/s for {} GPU(s)", fabric_ports,
                                   fmt::join(kinds, "+"), active_gbps, gpus));
  return f.Observed(observed).Expected(expected).Details(lines);
}

// sharp-enabled: SHARP offloads all-reduce into InfiniBand switches (NCCL CollNet through the
// nccl-rdma-sharp plugin). Usable only when the Aggregation Manager answers: that needs the
// ib-fabric-query probe (sharp_hello) or an NCCL run that chose CollNet, neither of which a passive
// read proves, so the best passive verdict is "components present".
Finding SharpEnabled(const JudgeContext& ctx) {
  const Evidence& rdma = ctx.Get("rdma.devices");
  if (auto p = core::EvidenceProblem(rdma, "RDMA devices")) return *p;
  bool ib = false;
  for (const auto& d : rdma.data.value("devices", json::array())) {
    for (const auto& p : d.value("ports", json::array())) ib |= p.value("link_layer", json()) == "InfiniBand";
  }
  if (!ib) return core::Skip(Reason::kNotApplicable, "no InfiniBand port (SHARP is an InfiniBand switch feature)");
  const Evidence& sharp = ctx.Get("sharp.install");
  const Evidence& nccl = ctx.Get("nccl.libraries");
  if (auto p = core::EvidenceProblem(sharp, "SHARP installation")) return *p;
  std::vector<std::string> parts;
  for (const auto& d : sharp.data["hpcx_sharp"]) parts.push_back("HPC-X SHARP " + d.get<std::string>());
  for (const auto& [k, v] : sharp.data["env"].items()) parts.push_back(k + "=" + v.get<std::string>());
  for (const auto& f : sharp.data["config_files"]) parts.push_back("AM configuration " + f.get<std::string>());
  bool plugin = false;
  if (nccl.ok()) {
    for (const auto& p : nccl.data.value("net_plugins", json::array())) {
      std::string path = p;
      parts.push_back("NCCL net plugin " + path);
      plugin |= util::Contains(path, "sharp") || util::Contains(path, "libnccl-net.so");
    }
  }
  if (parts.empty()) {
    return core::Warn(Reason::kConfig,
                      "InfiniBand fabric without SHARP: no HPC-X SHARP, no NCCL SHARP plugin, no SHARP configuration")
        .Expected("HPC-X SHARP and the NCCL SHARP (CollNet) plugin, with the Aggregation Manager running");
  }
  return core::
      Warn(Reason::kUnverified,
           fmt::format(
               "SHARP components present ({}{}); whether the Aggregation Manager answers needs the ib-fabric-query probe "
               "(sharp_hello) or an NCCL run using CollNet, not part of this build",
               parts[0], plugin ? ", NCCL plugin" : ", no NCCL SHARP plugin"))
          .Details(parts)
          .Expected("SHARP usable: sharp_hello answers, or NCCL uses CollNet");
}

// nccl-topo-file-container: a VM (or any node whose PCI view is not the real one) needs an NCCL
// topology file, and a job in a container sees it only if the runtime mounts it.
Finding NcclTopoFileContainer(const JudgeContext& ctx) {
  const Evidence& topo = ctx.Get("nccl.topo-file");
  if (auto p = core::EvidenceProblem(topo, "NCCL topology files")) return *p;
  const json& files = topo.data["files"];
  const json* host_file = nullptr;
  for (const auto& f : files) {
    if (f.value("exists", false)) {
      host_file = &f;
      break;
    }
  }
  std::string setting = topo.data["setting"].is_string() ? topo.data["setting"].get<std::string>() : "";
  if (!setting.empty() && (files.empty() || !files[0].value("exists", false))) {
    return core::Warn(
               Reason::kConfig,
               fmt::format("NCCL_TOPO_FILE={} (from {}) does not exist on the node: NCCL falls back to what it detects",
                           setting, topo.data.value("setting_source", "")))
        .Observed("missing")
        .Expected("the topology file NCCL_TOPO_FILE names");
  }
  if (!host_file) {
    const Evidence& virt = ctx.Get("os.virtualization");
    std::string vm = virt.ok() && virt.data.value("vm", json()).is_string() ? virt.data["vm"].get<std::string>() : "";
    if (vm == "none")
      return core::Pass("bare metal without a topology file: NCCL reads the real PCI topology")
          .Observed("no file")
          .Expected("no file needed on bare metal");
    if (vm.empty())
      return core::Warn(Reason::kUnverified, "no NCCL topology file, and whether this is a VM is unknown")
          .Observed("no file");
    return core::
        Warn(Reason::kConfig,
             fmt::format(
                 "VM ({}) without an NCCL topology file: NCCL sees the flat virtual PCI topology and picks poor rings",
                 vm))
            .Observed("no file")
            .Expected("NCCL_TOPO_FILE pointing at the provider's topology XML");
  }
  std::string path = (*host_file)["path"];
  std::string sha = (*host_file)["sha256"].is_string() ? (*host_file)["sha256"].get<std::string>() : "";
  if (host_file->value("xml_ok", json()) == false) {
    return core::Warn(Reason::kConfig, fmt::format("{} is not valid XML: NCCL ignores it", path)).Observed(path);
  }
  std::string observed = fmt::format("{} ({} bytes, sha256 {})", path, host_file->value("size", json()).dump(),
                                     sha.empty() ? "?" : sha.substr(0, 12));
  const Evidence& probe = ctx.Get("probe.nccl-topo-container");
  if (probe.status == core::EvidenceStatus::kProbeDisabled) {
    return core::Skip(
               Reason::kProbeDisabled,
               fmt::format("host topology file {}: comparing it inside a container needs --probe container-launch",
                           path))
        .Observed(observed);
  }
  if (auto p = core::EvidenceProblem(probe, "container launch")) return *p;
  if (!probe.data.value("launched", false)) {
    if (probe.data.value("pyxis_absent", false) || probe.data.contains("reason")) {
      return core::Skip(Reason::kPrerequisiteMissing,
                        "no pyxis container launcher: " + probe.data.value("reason", probe.data.value("stderr", "")))
          .Observed(observed);
    }
    return core::Warn(Reason::kUnverified,
                      fmt::format("the pyxis container did not start (exit {}): {}", probe.data.value("exit_code", -1),
                                  probe.data.value("stderr", "")))
        .Observed(observed);
  }
  if (probe.data.value("missing", false)) {
    return core::Warn(
               Reason::kConfig,
               fmt::format("{} is missing inside the container: jobs in containers run with NCCL's own (virtual) view",
                           path))
        .Observed(observed)
        .Expected("the same file inside the container (an enroot mount hook or pyxis --container-mounts)");
  }
  std::string inside = probe.data.value("sha256", json()).is_string() ? probe.data["sha256"].get<std::string>() : "";
  if (inside != sha) {
    return core::Warn(Reason::kConfig, fmt::format("{} differs inside the container (sha256 {} vs {} on the host)",
                                                   path, inside.substr(0, 12), sha.substr(0, 12)))
        .Observed(observed)
        .Expected("the same file inside the container");
  }
  return core::Pass(fmt::format("{} is identical inside the pyxis container ({})", path, probe.data.value("image", "")))
      .Observed(observed);
}

}  // namespace

void RegisterFabricChecks(core::Registry& r) {
  using core::kK;
  using core::kS;
  using core::kSA;
  using core::kV;
  r.Add(
      {CheckInfo{
           .id = "nccl-topo-file-container",
           .category = "networking",
           .title = "NCCL topology file present where needed, and the same inside containers",
           .rationale =
               "In a VM NCCL sees a flat virtual PCI tree unless given the real topology; a containerised job sees the file only if it is mounted.",
           .remediation =
               "Install the provider's topology XML, set NCCL_TOPO_FILE in /etc/nccl.conf, and mount it into containers (enroot mount hook).",
           .criterion = "nccl-topo-file-container",
           .targets = kS,
           .needs = {"nccl.topo-file", "probe.nccl-topo-container", "os.virtualization"},
           .probe = "container-launch",
           .reproduce = "echo $NCCL_TOPO_FILE; ls /etc/nccl; srun --container-image=IMAGE sha256sum $NCCL_TOPO_FILE"},
       NcclTopoFileContainer});
  r.Add(
      {CheckInfo{
           .id = "sharp-enabled",
           .category = "networking",
           .title = "SHARP in-network reductions available on InfiniBand",
           .rationale =
               "SHARP reduces all-reduce traffic in the switches: up to twice the bus bandwidth for large collectives.",
           .remediation =
               "Enable SHARP in UFM/OpenSM (Aggregation Manager), install HPC-X SHARP and the nccl-rdma-sharp plugin, set NCCL_COLLNET_ENABLE=1.",
           .targets = kS | kK,
           .needs = {"rdma.devices", "sharp.install", "nccl.libraries"},
           .reproduce = "ls -d /opt/hpcx*/sharp; ldconfig -p | grep libnccl-net; ls /etc/sharp"},
       SharpEnabled});
  r.Add(
      {CheckInfo{
           .id = "fabric-class",
           .category = "networking",
           .title = "One RDMA fabric NIC per GPU at the GPU generation's rate",
           .rationale =
               "Multi-node training moves gradients over the GPU fabric: fewer or slower NICs than GPUs cap every collective; none means TCP.",
           .remediation =
               "Provide one InfiniBand, RoCEv2 or EFA NIC per GPU at the expected rate (400 Gb/s for H100-class) and bring every port ACTIVE.",
           .criterion = "fabric-class",
           .targets = kS | kK,
           .needs = {"rdma.devices", "gpu.inventory", "pci.devices"},
           .reproduce = "grep -H '' /sys/class/infiniband/*/ports/*/{rate,state,link_layer}; nvidia-smi -L"},
       FabricClass});
  r.Add(
      {CheckInfo{
           .id = "nccl-roce-gid-index",
           .category = "networking",
           .title = "NCCL_IB_GID_INDEX points at a routable RoCE v2 GID",
           .rationale =
               "On RoCE, the wrong GID index makes NCCL use RoCE v1 or a link-local address: no routing across the fabric.",
           .remediation =
               "Set NCCL_IB_GID_INDEX in /etc/nccl.conf to the RoCE v2 GID of the fabric address (commonly 3).",
           .criterion = "nccl-autoconfig",
           .targets = kS | kK,
           .needs = {"rdma.devices", "nccl.config"},
           .reproduce =
               "cat /sys/class/infiniband/*/ports/1/gid_attrs/types/3 /sys/class/infiniband/*/ports/1/gids/3; grep GID /etc/nccl.conf"},
       NcclRoceGidIndex});
  r.Add(
      {CheckInfo{
           .id = "hca-naming",
           .category = "networking",
           .title = "RDMA devices named mlx5_N (or NCCL_IB_HCA set to the custom names)",
           .rationale =
               "NCCL, UCX and rail-aware launch scripts assume mlx5_N; custom names need NCCL_IB_HCA or NCCL may use the wrong ports.",
           .remediation = "Keep the kernel's mlx5_N names, or set NCCL_IB_HCA in /etc/nccl.conf to the custom names.",
           .criterion = "hca-naming",
           .targets = kS | kK,  // K: on every node through the fan-out's node collector
           .needs = {"rdma.devices", "nccl.config"},
           .reproduce = "ls /sys/class/infiniband; grep NCCL_IB_HCA /etc/nccl.conf"},
       HcaNaming});
  r.Add({CheckInfo{.id = "ufm-secured-bare-metal-cloud",
                   .category = "isolation",
                   .title = "InfiniBand runs the UFM Secured Bare Metal Cloud profile",
                   .rationale = "Without M_Key protection and MAD controls a tenant can reconfigure the shared fabric.",
                   .remediation = "Enable the UFM Secured Bare Metal Cloud profile and provide an attestation.",
                   .criterion = "ufm-secured-bare-metal-cloud",
                   .targets = kS | kK | kSA,
                   .needs = {"rdma.devices"},
                   .reproduce = "cat /sys/class/infiniband/*/ports/*/link_layer"},
         UfmProfile});
  r.Add({CheckInfo{.id = "ib-tenant-isolation",
                   .category = "networking",
                   .title = "InfiniBand ports are in a tenant partition (PKey)",
                   .rationale = "On a flat default partition every host on the fabric can reach every other.",
                   .remediation = "Assign tenant PKeys and make the default partition limited-only on tenant ports.",
                   .criterion = "ib-tenant-isolation",
                   .targets = kS | kK | kSA,
                   .needs = {"rdma.devices"},
                   .reproduce = "cat /sys/class/infiniband/*/ports/*/pkeys/*"},
         IbTenantIsolation});
  r.Add({CheckInfo{
             .id = "roce-tenant-isolation",
             .category = "networking",
             .title = "RoCE traffic is separated per tenant",
             .rationale = "Untagged RoCE on a shared Ethernet fabric mixes tenants' RDMA traffic.",
             .remediation = "One VLAN (or VRF/VXLAN) per tenant with GIDs bound to the tenant interface; attest it.",
             .targets = kS | kK | kSA,
             .needs = {"rdma.devices"},
             .reproduce = "cat /sys/class/infiniband/*/ports/*/gid_attrs/ndevs/*"},
         RoceTenantIsolation});
  r.Add({CheckInfo{.id = "ib-management-keys",
                   .category = "networking",
                   .title = "Subnet-manager keys set (SM key, M_Key protection)",
                   .rationale = "With zero keys any node can act as or reprogram the subnet manager.",
                   .remediation = "Set sm_key, sa_key and m_key with m_key_protection_level >= 1 (or attest UFM keys).",
                   .criterion = "ufm-secured-bare-metal-cloud",
                   .targets = kS | kK | kSA,
                   .needs = {"rdma.devices", "ib.opensm"},
                   .reproduce = "grep -E 'sm_key|m_key' /etc/opensm/opensm.conf"},
         IbManagementKeys});
  r.Add({CheckInfo{.id = "sriov-vf-mad-blocked",
                   .category = "networking",
                   .title = "SR-IOV VFs cannot send subnet-management MADs",
                   .rationale = "A VF that can send SMP MADs reaches the subnet-manager plane of the shared fabric.",
                   .remediation = "Disable SMP on VFs (firmware/UFM setting).",
                   .targets = kV | kSA,
                   .needs = {"sriov.vfs"},
                   .reproduce = "ls -l /sys/bus/pci/devices/*/physfn"},
         SriovVfMad});
  r.Add({CheckInfo{
             .id = "ib-link-errors",
             .category = "networking",
             .title = "No live RDMA link errors",
             .rationale = "Rising symbol or receive errors mean a bad cable or transceiver: retransmits and stalls.",
             .remediation = "Replace the cable or transceiver; check the switch port.",
             .criterion = "fabric-class",
             .targets = kS | kK | kSA,
             .needs = {"rdma.counters"},
             .reproduce =
                 "grep -H '' /sys/class/infiniband/*/ports/*/counters/{link_downed,symbol_error,port_rcv_errors}"},
         IbLinkErrors});
}

}  // namespace clustermax::checks
