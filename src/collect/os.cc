// Collectors for the operating system, kernel, PCI inventory, CPU and access facts.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "collect/collector.h"
#include "collect/pci.h"
#include "collect/parsers.h"
#include "util/strings.h"

namespace clustermax::collect {
namespace {

using core::Evidence;
using core::EvidenceStatus;
using nlohmann::json;

Evidence ReadInto(host::Host& h, const std::string& path, Evidence e) {
  e.sources.push_back("file:" + path);
  auto r = h.ReadFile(path, 1u << 20);
  if (r.status != host::IoStatus::kOk) {
    e.status = FromIo(r.status);
    e.error = r.error;
  } else {
    e.status = EvidenceStatus::kOk;
    e.data["text"] = r.content;
  }
  return e;
}

Evidence OsReleaseEvidence(host::Host& h, const CollectOptions&) {
  Evidence e = ReadInto(h, "/etc/os-release", {});
  if (!e.ok()) return e;
  std::string text = e.data["text"];
  auto r = ParseOsRelease(text);
  if (!r) {
    e.status = EvidenceStatus::kParseError;
    e.error = util::Ellipsize(text, 200);
    return e;
  }
  e.data = {{"id", r->id}, {"version_id", r->version_id}, {"codename", r->codename}, {"pretty_name", r->pretty_name}};
  return e;
}

Evidence OsKernel(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"file:/proc/sys/kernel/osrelease", "file:/proc/sys/kernel/hostname"};
  auto rel = h.ReadFile("/proc/sys/kernel/osrelease", 4096);
  auto host_name = h.ReadFile("/proc/sys/kernel/hostname", 4096);
  if (MarkFailed(e, rel.status, rel.error)) return e;
  e.status = EvidenceStatus::kOk;
  e.data["release"] = std::string(util::Trim(rel.content));
  e.data["hostname"] =
      host_name.status == host::IoStatus::kOk ? json(std::string(util::Trim(host_name.content))) : json(nullptr);
  return e;
}

Evidence OsVirtualization(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  auto detect = [&](const char* flag) -> json {
    auto spec = Command({"systemd-detect-virt", flag}, o, "os.virtualization");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    if (r.status != host::IoStatus::kOk) return nullptr;
    std::string v(util::Trim(r.out));
    return v.empty() ? json(nullptr) : json(v);  // "none" (exit 1) is a valid answer
  };
  e.data["vm"] = detect("--vm");
  e.data["container"] = detect("--container");
  auto exists = [&](const char* path) -> json {
    e.sources.push_back(std::string("stat:") + path);
    auto s = h.Stat(path);
    if (s.status == host::IoStatus::kOk) return true;
    if (s.status == host::IoStatus::kNotFound) return false;
    return nullptr;
  };
  e.data["dockerenv"] = exists("/.dockerenv");
  e.data["containerenv"] = exists("/run/.containerenv");
  e.sources.push_back("file:/proc/1/cgroup");
  auto cg = h.ReadFile("/proc/1/cgroup", 65536);
  json tokens = json::array();
  if (cg.status == host::IoStatus::kOk) {
    for (const char* t : {"docker", "containerd", "kubepods", "libpod", "lxc"}) {
      if (util::Contains(cg.content, t)) tokens.push_back(t);
    }
  }
  e.data["cgroup_tokens"] = tokens;
  auto env = h.GetEnv("container");
  e.data["container_env"] = env ? json(*env) : json(nullptr);
  for (const char* f : {"sys_vendor", "product_name"}) {
    std::string path = std::string("/sys/class/dmi/id/") + f;
    e.sources.push_back("file:" + path);
    auto r = h.ReadFile(path, 4096);
    e.data[std::string("dmi_") + f] =
        r.status == host::IoStatus::kOk ? json(std::string(util::Trim(r.content))) : json(nullptr);
  }
  for (const char* var : {"SLURM_JOB_ID", "KUBERNETES_SERVICE_HOST"}) {
    auto v = h.GetEnv(var);
    e.data[util::ToLower(var)] = v ? json(*v) : json(nullptr);
  }
  // PID 1's name: an init system boots a machine; a container runs its workload (or tini) there.
  e.sources.push_back("file:/proc/1/comm");
  auto comm = h.ReadFile("/proc/1/comm", 4096);
  e.data["pid1"] = comm.status == host::IoStatus::kOk ? json(std::string(util::Trim(comm.content))) : json(nullptr);
  // The root filesystem and the files a container runtime bind-mounts over the image.
  e.sources.push_back("file:/proc/self/mountinfo");
  auto mi = h.ReadFile("/proc/self/mountinfo", 4u << 20);
  e.data["root_fstype"] = nullptr;
  json binds = json::array();
  if (mi.status == host::IoStatus::kOk) {
    std::string root = "";
    for (const auto& m : ParseMountinfo(mi.content)) {
      if (m.mount_point == "/") root = m.fstype;
      if ((m.mount_point == "/etc/hostname" || m.mount_point == "/etc/hosts" || m.mount_point == "/etc/resolv.conf") &&
          std::find(binds.begin(), binds.end(), json(m.mount_point)) == binds.end()) {
        binds.push_back(m.mount_point);
      }
    }
    e.data["root_fstype"] = root;
  }
  e.data["runtime_bind_mounts"] = binds;
  return e;
}

Evidence OsCpuinfo(host::Host& h, const CollectOptions&) {
  Evidence e = ReadInto(h, "/proc/cpuinfo", {});
  if (!e.ok()) return e;
  std::string text = e.data["text"];
  auto c = ParseCpuinfo(text);
  if (!c) {
    e.status = EvidenceStatus::kParseError;
    e.error = util::Ellipsize(text, 200);
    return e;
  }
  e.data = {{"model", c->model},
            {"logical_cpus", c->logical_cpus},
            {"vmx", c->vmx},
            {"svm", c->svm},
            {"hypervisor", c->hypervisor}};
  return e;
}

Evidence PciDevices(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"dir:/sys/bus/pci/devices", "file:/sys/bus/pci/devices/*/{vendor,device,class}",
               "stat:/sys/bus/pci/devices/*/driver"};
  PciInventory inv = ReadPciInventory(h);
  if (MarkFailed(e, inv.status, inv.error)) return e;
  e.status = EvidenceStatus::kOk;
  e.data = ToJson(inv);
  return e;
}

Evidence KernelPackages(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  auto rel = h.ReadFile("/proc/sys/kernel/osrelease", 4096);
  e.sources.push_back("file:/proc/sys/kernel/osrelease");
  e.data["running"] = rel.status == host::IoStatus::kOk ? json(std::string(util::Trim(rel.content))) : json(nullptr);
  json installed = nullptr;
  std::string db_error;
  if (h.Which("dpkg-query").status == host::IoStatus::kOk) {
    auto spec = Command({"dpkg-query", "-W", "-f=${Package} ${Version} ${db:Status-Abbrev}\\n", "linux-image-*"}, o,
                        "kernel.packages");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    if (r.status == host::IoStatus::kOk && (r.exit_code == 0 || r.exit_code == 1)) {
      installed = json::array();
      for (const auto& line : util::SplitLines(r.out)) {
        auto parts = util::SplitWhitespace(line);
        if (parts.size() < 3 || parts[2].rfind("ii", 0) != 0) continue;  // installed packages only
        auto kr = KernelReleaseFromPackage(parts[0]);
        if (!kr) continue;
        installed.push_back({{"package", parts[0]}, {"version", parts[1]}, {"release", *kr}});
      }
      e.data["package_manager"] = "dpkg";
    } else {
      db_error = r.error.empty() ? util::Ellipsize(r.err, 200) : r.error;
    }
  } else if (h.Which("rpm").status == host::IoStatus::kOk) {
    auto spec = Command({"rpm", "-q", "--qf", "%{NAME} %{VERSION}-%{RELEASE}.%{ARCH}\\n", "kernel-core", "kernel"}, o,
                        "kernel.packages");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    if (r.status == host::IoStatus::kOk) {
      installed = json::array();
      for (const auto& p : ParseDpkgPackageList(r.out)) {
        installed.push_back({{"package", p.package}, {"version", p.version}, {"release", p.version}});
      }
      e.data["package_manager"] = "rpm";
    } else {
      db_error = r.error;
    }
  } else {
    db_error = "no package manager (dpkg-query, rpm) on PATH";
  }
  e.data["installed"] = installed;
  if (!db_error.empty()) e.data["package_db_error"] = db_error;
  for (const char* path : {"/var/run/reboot-required", "/run/reboot-required"}) {
    e.sources.push_back(std::string("stat:") + path);
    auto s = h.Stat(path);
    if (s.status == host::IoStatus::kOk) {
      e.data["reboot_required"] = true;
      auto pk = h.ReadFile(std::string(path) + ".pkgs", 65536);
      e.data["reboot_required_pkgs"] =
          pk.status == host::IoStatus::kOk ? json(util::SplitLines(pk.content)) : json::array();
      break;
    }
    if (s.status == host::IoStatus::kNotFound) e.data["reboot_required"] = false;
  }
  return e;
}

Evidence PerfSysctl(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  for (const char* name : {"perf_event_paranoid", "kptr_restrict"}) {
    std::string path = std::string("/proc/sys/kernel/") + name;
    e.sources.push_back("file:" + path);
    auto r = h.ReadFile(path, 4096);
    if (r.status != host::IoStatus::kOk) {
      e.data[name] = nullptr;
      e.data[std::string(name) + "_error"] = fmt::format("{}: {}", ToString(r.status), r.error);
      continue;
    }
    auto v = util::ParseInt(r.content);
    e.data[name] = v ? json(*v) : json(nullptr);
    if (!v) e.data[std::string(name) + "_error"] = "unparsable: " + util::Ellipsize(r.content, 40);
  }
  return e;
}

Evidence Iommu(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"file:/proc/cmdline", "dir:/sys/class/iommu", "file:/sys/bus/pci/devices/*/iommu_group/type"};
  auto cmd = h.ReadFile("/proc/cmdline", 65536);
  if (cmd.status != host::IoStatus::kOk) {
    e.status = FromIo(cmd.status);
    e.error = "/proc/cmdline: " + cmd.error;
    return e;
  }
  e.status = EvidenceStatus::kOk;
  json flags = json::array();
  for (const auto& tok : util::SplitWhitespace(cmd.content)) {
    if (tok.rfind("iommu", 0) == 0 || tok.rfind("intel_iommu", 0) == 0 || tok.rfind("amd_iommu", 0) == 0)
      flags.push_back(tok);
  }
  e.data["cmdline_flags"] = flags;
  auto units = h.ListDir("/sys/class/iommu");
  json unit_names = json::array();
  if (units.status == host::IoStatus::kOk) {
    for (const auto& u : units.entries) unit_names.push_back(u.name);
  }
  e.data["iommu_units"] = units.status == host::IoStatus::kOk ? unit_names : json(nullptr);
  PciInventory inv = ReadPciInventory(h);
  json devices = json::array();
  if (inv.status == host::IoStatus::kOk) {
    for (const auto& d : inv.devices) {
      if (!d.IsGpu() && !d.IsRdmaNic()) continue;
      auto t = h.ReadFile("/sys/bus/pci/devices/" + d.bdf + "/iommu_group/type", 256);
      devices.push_back(
          {{"bdf", d.bdf},
           {"kind", d.IsGpu() ? "gpu" : "rdma-nic"},
           {"domain_type", t.status == host::IoStatus::kOk ? json(std::string(util::Trim(t.content))) : json(nullptr)},
           {"read_status", ToString(t.status)}});
    }
  }
  e.data["devices"] = devices;
  e.data["pci_inventory_complete"] = inv.status == host::IoStatus::kOk;
  return e;
}

Evidence CpuGovernor(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"dir:/sys/devices/system/cpu", "file:/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
               "file:/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"};
  auto cpus = h.ListDir("/sys/devices/system/cpu");
  if (MarkFailed(e, cpus.status, cpus.error)) return e;
  e.status = EvidenceStatus::kOk;
  std::map<std::string, int> governors;
  int cpu_count = 0, unreadable = 0, missing = 0;
  for (const auto& ent : cpus.entries) {
    if (ent.name.size() < 4 || ent.name.rfind("cpu", 0) != 0 || !util::ParseInt(ent.name.substr(3))) continue;
    ++cpu_count;
    auto g = h.ReadFile("/sys/devices/system/cpu/" + ent.name + "/cpufreq/scaling_governor", 256);
    if (g.status == host::IoStatus::kOk) {
      ++governors[std::string(util::Trim(g.content))];
    } else if (g.status == host::IoStatus::kNotFound) {
      ++missing;
    } else {
      ++unreadable;
    }
  }
  e.data["cpus"] = cpu_count;
  e.data["governors"] = governors;
  e.data["cpufreq_missing"] = missing;
  e.data["unreadable"] = unreadable;
  auto d = h.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/scaling_driver", 256);
  e.data["driver"] = d.status == host::IoStatus::kOk ? json(std::string(util::Trim(d.content))) : json(nullptr);
  return e;
}

Evidence SudoNonInteractive(host::Host& h, const CollectOptions& o) {
  Evidence e;
  auto r = RunFor(e, h, {"sudo", "-n", "true"}, o, "access.sudo");
  if (!r) return e;
  e.status = EvidenceStatus::kOk;
  e.data = {{"exit_code", r->exit_code}, {"stderr", util::Ellipsize(util::Trim(r->err), 300)}};
  return e;
}

Evidence UserManagement(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  for (const char* tool : {"useradd", "groupadd"}) {
    e.sources.push_back(std::string("which:") + tool);
    auto w = h.Which(tool);
    e.data[tool] = w.status == host::IoStatus::kOk ? json(w.path) : json(nullptr);
  }
  auto uid = h.ReadFile("/proc/self/status", 65536);
  e.sources.push_back("file:/proc/self/status");
  json is_root = nullptr;
  if (uid.status == host::IoStatus::kOk) {
    for (const auto& line : util::SplitLines(uid.content)) {
      if (line.rfind("Uid:", 0) == 0) {
        auto parts = util::SplitWhitespace(line);
        if (parts.size() >= 3) is_root = parts[2] == "0";  // effective uid
      }
    }
  }
  e.data["is_root"] = is_root;
  auto spec = Command({"sudo", "-n", "-l"}, o, "access.user-management");
  e.sources.push_back(Source(spec));
  auto r = h.Run(spec);
  e.data["sudo_list_status"] = ToString(r.status);
  e.data["sudo_list_exit"] = r.exit_code;
  bool all = false, useradd = false;
  for (const auto& line : util::SplitLines(r.out)) {
    if (util::Contains(line, "(ALL") && util::Contains(line, " ALL")) all = true;
    if (util::Contains(line, "useradd")) useradd = true;
  }
  e.data["sudo_all"] = r.status == host::IoStatus::kOk && r.exit_code == 0 && all;
  e.data["sudo_useradd"] = r.status == host::IoStatus::kOk && r.exit_code == 0 && useradd;
  return e;
}

Evidence RdmaDevices(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"dir:/sys/class/infiniband", "file:/sys/class/infiniband/*/fw_ver",
               "file:/sys/class/infiniband/*/device/{vendor,device}", "stat:/sys/class/infiniband/*/device/physfn",
               "stat:/sys/class/net/*/bonding"};
  auto dir = h.ListDir("/sys/class/infiniband");
  json devices = json::array();
  if (dir.status == host::IoStatus::kOk) {
    for (const auto& d : dir.entries) {
      std::string base = "/sys/class/infiniband/" + d.name;
      auto fw = h.ReadFile(base + "/fw_ver", 256);
      auto vendor = h.ReadFile(base + "/device/vendor", 64);
      json ports = json::array();
      auto pl = h.ListDir(base + "/ports");
      if (pl.status == host::IoStatus::kOk) {
        for (const auto& p : pl.entries) {
          std::string pb = base + "/ports/" + p.name;
          auto rd = [&](const char* f) {
            auto r = h.ReadFile(pb + "/" + f, 256);
            return r.status == host::IoStatus::kOk ? json(std::string(util::Trim(r.content))) : json(nullptr);
          };
          // The first 16 PKey slots and the first 4 GID netdevs are enough to judge partitioning.
          json pkeys = json::array(), ndevs = json::array();
          for (int i = 0; i < 16; ++i) {
            json k = rd(("pkeys/" + std::to_string(i)).c_str());
            if (k.is_string()) pkeys.push_back(k);
          }
          for (int i = 0; i < 4; ++i) {
            json n = rd(("gid_attrs/ndevs/" + std::to_string(i)).c_str());
            if (n.is_string()) ndevs.push_back(n);
          }
          json link_layer = rd("link_layer");
          json port = {{"port", p.name},     {"state", rd("state")},     {"phys_state", rd("phys_state")},
                       {"rate", rd("rate")}, {"link_layer", link_layer}, {"pkeys", pkeys},
                       {"gid_ndevs", ndevs}};
          // RoCE: the type (RoCE v1 / v2) and address of the first 8 GIDs, for NCCL_IB_GID_INDEX.
          if (link_layer == "Ethernet") {
            json types = json::array(), gids = json::array();
            for (int i = 0; i < 8; ++i) {
              types.push_back(rd(("gid_attrs/types/" + std::to_string(i)).c_str()));
              gids.push_back(rd(("gids/" + std::to_string(i)).c_str()));
            }
            port["gid_types"] = types;
            port["gids"] = gids;
          }
          // A GID netdev that is a bond master (bonding/ directory): RDMA over a bond, not a rail.
          if (link_layer == "Ethernet") {
            json bond = false;
            for (const auto& n : ndevs) {
              auto st = h.Stat("/sys/class/net/" + n.get<std::string>() + "/bonding");
              if (st.status == host::IoStatus::kOk) {
                bond = n;
                break;
              }
              if (st.status != host::IoStatus::kNotFound) bond = nullptr;  // unread
            }
            port["bond_master"] = bond;
          }
          ports.push_back(port);
        }
      }
      // SR-IOV: a physfn link marks a VF whose physical function is on this machine; the PCI
      // device id tells a VF passed through to a guest (no physfn there).
      auto device_id = h.ReadFile(base + "/device/device", 64);
      auto physfn = h.Stat(base + "/device/physfn");
      json sriov_physfn =
          physfn.status == host::IoStatus::kOk
              ? json(physfn.link_target.empty() ? std::string("its physical function")
                                                : "PF " + physfn.link_target.substr(physfn.link_target.rfind('/') + 1))
          : physfn.status == host::IoStatus::kNotFound ? json(false)
                                                       : json(nullptr);
      devices.push_back(
          {{"name", d.name},
           {"device_id",
            device_id.status == host::IoStatus::kOk ? json(std::string(util::Trim(device_id.content))) : json(nullptr)},
           {"sriov_physfn", sriov_physfn},
           {"ports", ports},
           {"fw_ver", fw.status == host::IoStatus::kOk ? json(std::string(util::Trim(fw.content))) : json(nullptr)},
           {"fw_read_status", ToString(fw.status)},
           {"vendor",
            vendor.status == host::IoStatus::kOk ? json(std::string(util::Trim(vendor.content))) : json(nullptr)}});
    }
  } else if (dir.status != host::IoStatus::kNotFound) {
    e.status = FromIo(dir.status);
    e.error = dir.error;
    return e;
  }
  e.status = EvidenceStatus::kOk;
  e.data["devices"] = devices;
  PciInventory inv = ReadPciInventory(h);
  if (inv.status == host::IoStatus::kOk) {
    int mellanox = 0;
    for (const auto& p : inv.devices) mellanox += p.vendor == 0x15b3 && p.IsNetwork() ? 1 : 0;
    e.data["pci_mellanox_functions"] = mellanox;
  } else {
    e.data["pci_mellanox_functions"] = nullptr;
  }
  return e;
}

}  // namespace

void RegisterOsCollectors(std::vector<Collector>& out) {
  out.push_back(
      {{"os.release", "Distribution identity from /etc/os-release", {"file:/etc/os-release"}, ""}, OsReleaseEvidence});
  out.push_back({{"os.kernel",
                  "Running kernel release and hostname",
                  {"file:/proc/sys/kernel/osrelease", "file:/proc/sys/kernel/hostname"},
                  ""},
                 OsKernel});
  out.push_back({{"os.virtualization",
                  "VM and container markers (systemd-detect-virt, /.dockerenv, cgroups, PID 1, mounts, DMI)",
                  {"cmd:systemd-detect-virt --vm", "cmd:systemd-detect-virt --container", "stat:/.dockerenv",
                   "stat:/run/.containerenv", "file:/proc/1/cgroup", "file:/proc/1/comm", "file:/proc/self/mountinfo",
                   "file:/sys/class/dmi/id/sys_vendor", "file:/sys/class/dmi/id/product_name", "env:container",
                   "env:SLURM_JOB_ID", "env:KUBERNETES_SERVICE_HOST"},
                  "",
                  /*keeps_files_in_image=*/true},
                 OsVirtualization});
  out.push_back({{"os.cpuinfo", "CPU model, count and virtualisation flags", {"file:/proc/cpuinfo"}, ""}, OsCpuinfo});
  out.push_back({{"pci.devices",
                  "PCI inventory from sysfs (vendor, device, class, bound driver)",
                  {"dir:/sys/bus/pci/devices", "file:/sys/bus/pci/devices/*/{vendor,device,class}",
                   "stat:/sys/bus/pci/devices/*/driver"},
                  ""},
                 PciDevices});
  out.push_back({{"kernel.packages",
                  "Installed kernel packages and the reboot-required flag",
                  {"cmd:dpkg-query -W linux-image-*", "cmd:rpm -q kernel-core kernel", "stat:/var/run/reboot-required"},
                  ""},
                 KernelPackages});
  out.push_back({{"kernel.perf-sysctl",
                  "perf_event_paranoid and kptr_restrict",
                  {"file:/proc/sys/kernel/perf_event_paranoid", "file:/proc/sys/kernel/kptr_restrict"},
                  ""},
                 PerfSysctl});
  out.push_back({{"iommu",
                  "IOMMU kernel parameters, units and the DMA domain type of GPUs and RDMA NICs",
                  {"file:/proc/cmdline", "dir:/sys/class/iommu", "file:/sys/bus/pci/devices/*/iommu_group/type"},
                  ""},
                 Iommu});
  out.push_back({{"cpu.governor",
                  "cpufreq scaling governors of every CPU",
                  {"dir:/sys/devices/system/cpu", "file:/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor"},
                  ""},
                 CpuGovernor});
  out.push_back({{"access.sudo", "Passwordless sudo (sudo -n true; never prompts)", {"cmd:sudo -n true"}, ""},
                 SudoNonInteractive});
  out.push_back({{"access.user-management",
                  "useradd/groupadd present and permitted",
                  {"which:useradd", "which:groupadd", "cmd:sudo -n -l", "file:/proc/self/status"},
                  ""},
                 UserManagement});
  out.push_back({{"rdma.devices",
                  "RDMA devices and their firmware from sysfs",
                  {"dir:/sys/class/infiniband", "file:/sys/class/infiniband/*/fw_ver",
                   "file:/sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer}",
                   "file:/sys/class/infiniband/*/device/device", "stat:/sys/class/infiniband/*/device/physfn",
                   "stat:/sys/class/net/<GID netdev>/bonding", "dir:/sys/bus/pci/devices"},
                  ""},
                 RdmaDevices});

  using namespace field;
  DeclareFields(out, "os.release",
                {{"id", Str, "", "ID= of /etc/os-release (debian, ubuntu, rhel)"},
                 {"version_id", Str, "", "VERSION_ID= (\"12\", \"24.04\")"},
                 {"codename", Str, "", "VERSION_CODENAME= (bookworm), empty when absent"},
                 {"pretty_name", Str, "", "PRETTY_NAME="}});
  DeclareFields(out, "os.kernel",
                {{"release", Str, "", "running kernel release (/proc/sys/kernel/osrelease)"},
                 {"hostname", Str, "", "kernel hostname; null when unreadable", kNull}});
  DeclareFields(
      out, "os.virtualization",
      {{"vm", Str, "", "systemd-detect-virt --vm answer (\"none\", \"kvm\"); null when it did not run", kNull},
       {"container", Str, "", "systemd-detect-virt --container answer; null when it did not run", kNull},
       {"dockerenv", Bool, "", "/.dockerenv exists; null when the stat failed", kNull},
       {"containerenv", Bool, "", "/run/.containerenv exists; null when the stat failed", kNull},
       {"cgroup_tokens[]", Str, "", "container runtime names found in /proc/1/cgroup"},
       {"container_env", Str, "", "the environment variable `container`; null when unset", kNull},
       {"dmi_sys_vendor", Str, "", "/sys/class/dmi/id/sys_vendor; null when unreadable", kNull},
       {"dmi_product_name", Str, "", "/sys/class/dmi/id/product_name; null when unreadable", kNull},
       {"slurm_job_id", Str, "", "SLURM_JOB_ID of the collecting process; null when unset", kNull},
       {"kubernetes_service_host", Str, "", "KUBERNETES_SERVICE_HOST; null when unset", kNull},
       {"pid1", Str, "", "PID 1's command name (/proc/1/comm); null when unreadable", kNull},
       {"root_fstype", Str, "", "filesystem type mounted on /; null when mountinfo is unreadable", kNull},
       {"runtime_bind_mounts[]", Str, "", "/etc/hostname, /etc/hosts, /etc/resolv.conf when bind-mounted"}});
  DeclareFields(out, "os.cpuinfo",
                {{"model", Str, "", "CPU model name"},
                 {"logical_cpus", Int, "CPUs", "processor entries in /proc/cpuinfo"},
                 {"vmx", Bool, "", "Intel VT-x flag"},
                 {"svm", Bool, "", "AMD-V flag"},
                 {"hypervisor", Bool, "", "the hypervisor flag (running in a VM)"}});
  DeclareFields(out, "pci.devices",
                {{"devices[].bdf", Str, "", "PCI address 0000:19:00.0"},
                 {"devices[].vendor", Str, "", "vendor id \"0x10de\""},
                 {"devices[].device", Str, "", "device id \"0x2330\""},
                 {"devices[].class", Str, "", "class code \"0x030200\""},
                 {"devices[].driver", Str, "", "bound kernel driver; null when none", kNull},
                 {"devices[].gpu", Bool, "", "a GPU (display/3D controller of a GPU vendor)"},
                 {"devices[].rdma_nic", Bool, "", "an RDMA-capable NIC function"},
                 {"unreadable", Int, "devices", "devices whose sysfs files could not be read"},
                 {"complete", Bool, "", "every device was read"}});
  DeclareFields(
      out, "kernel.packages",
      {{"running", Str, "", "running kernel release; null when unreadable", kNull},
       {"installed", Arr, "", "installed kernel packages; null when the package database was not read", kNull},
       {"installed[].package", Str, "", "package name (linux-image-6.1.0-31-amd64, kernel-core)"},
       {"installed[].version", Str, "", "package version"},
       {"installed[].release", Str, "", "kernel release the package installs"},
       {"package_manager", Str, "", "\"dpkg\" or \"rpm\""},
       {"package_db_error", Str, "", "why the package database was not read"},
       {"reboot_required", Bool, "", "/var/run/reboot-required exists"},
       {"reboot_required_pkgs[]", Str, "", "packages named in reboot-required.pkgs"}});
  DeclareFields(out, "kernel.perf-sysctl",
                {{"perf_event_paranoid", Int, "", "kernel.perf_event_paranoid; null when unread", kNull},
                 {"perf_event_paranoid_error", Str, "", "why it was not read"},
                 {"kptr_restrict", Int, "", "kernel.kptr_restrict; null when unread", kNull},
                 {"kptr_restrict_error", Str, "", "why it was not read"}});
  DeclareFields(
      out, "iommu",
      {{"cmdline_flags[]", Str, "", "iommu=, intel_iommu=, amd_iommu= kernel parameters"},
       {"iommu_units", Arr, "", "entries of /sys/class/iommu; null when unreadable", kNull},
       {"iommu_units[]", Str, "", "an IOMMU unit name"},
       {"devices[].bdf", Str, "", "PCI address of a GPU or RDMA NIC"},
       {"devices[].kind", Str, "", "\"gpu\" or \"rdma-nic\""},
       {"devices[].domain_type", Str, "", "iommu_group/type (identity, DMA, DMA-FQ); null when unread", kNull},
       {"devices[].read_status", Str, "", "evidence status of the type read"},
       {"pci_inventory_complete", Bool, "", "the PCI inventory was read"}});
  DeclareFields(out, "cpu.governor",
                {{"cpus", Int, "CPUs", "cpuN directories"},
                 {"governors{}", Int, "CPUs", "scaling governor -> number of CPUs using it"},
                 {"cpufreq_missing", Int, "CPUs", "CPUs without cpufreq"},
                 {"unreadable", Int, "CPUs", "CPUs whose governor could not be read"},
                 {"driver", Str, "", "cpu0's scaling driver; null when unread", kNull}});
  DeclareFields(out, "access.sudo",
                {{"exit_code", Int, "", "exit status of sudo -n true"},
                 {"stderr", Str, "", "its standard error, cut at 300 characters"}});
  DeclareFields(out, "access.user-management",
                {{"useradd", Str, "", "path of useradd; null when not on PATH", kNull},
                 {"groupadd", Str, "", "path of groupadd; null when not on PATH", kNull},
                 {"is_root", Bool, "", "the effective uid is 0; null when unread", kNull},
                 {"sudo_list_status", Str, "", "status of sudo -n -l"},
                 {"sudo_list_exit", Int, "", "exit status of sudo -n -l"},
                 {"sudo_all", Bool, "", "sudo -n -l grants (ALL) ALL"},
                 {"sudo_useradd", Bool, "", "sudo -n -l names useradd"}});
  DeclareFields(out, "rdma.devices",
                {{"devices[].name", Str, "", "RDMA device (mlx5_0)"},
                 {"devices[].device_id", Str, "", "PCI device id; null when unread", kNull},
                 {"devices[].sriov_physfn", Any, "",
                  "false: no physfn link; \"PF <bdf>\": a VF of a local function; null: unread", kNull},
                 {"devices[].fw_ver", Str, "", "firmware version; null when unread", kNull},
                 {"devices[].fw_read_status", Str, "", "evidence status of the fw_ver read"},
                 {"devices[].vendor", Str, "", "PCI vendor id; null when unread", kNull},
                 {"devices[].ports[].port", Str, "", "port number"},
                 {"devices[].ports[].state", Str, "", "\"4: ACTIVE\"; null when unread", kNull},
                 {"devices[].ports[].phys_state", Str, "", "\"5: LinkUp\"; null when unread", kNull},
                 {"devices[].ports[].rate", Str, "Gb/s", "\"400 Gb/sec (4X NDR)\"; null when unread", kNull},
                 {"devices[].ports[].link_layer", Str, "", "InfiniBand or Ethernet; null when unread", kNull},
                 {"devices[].ports[].pkeys[]", Str, "", "the first 16 PKey slots"},
                 {"devices[].ports[].gid_ndevs[]", Str, "", "netdevs of the first 4 GIDs"},
                 {"devices[].ports[].gid_types[]", Str, "", "RoCE: type of the first 8 GIDs; null when unread", kNull},
                 {"devices[].ports[].gids[]", Str, "", "RoCE: the first 8 GIDs; null when unread", kNull},
                 {"devices[].ports[].bond_master", Any, "",
                  "RoCE: the GID netdev that is a bond master, false when none, null when unread", kNull},
                 {"pci_mellanox_functions", Int, "functions",
                  "Mellanox network functions in the PCI inventory; null when unread", kNull}});
}

}  // namespace clustermax::collect
