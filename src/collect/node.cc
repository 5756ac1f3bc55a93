// Collectors for the complete node audit: processes, kernel modules, NVIDIA driver parameters,
// KVM and DPU exposure, BMC device nodes, SSH and identity configuration, block devices, kernel
// log Xid events, NUMA nodes, RDMA ports and stack, container runtime wiring, ncu and gdrcopy.
#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "collect/collector.h"
#include "collect/parsers.h"
#include "collect/pci.h"
#include "core/thresholds.h"
#include "util/files.h"
#include "util/strings.h"

namespace clustermax::collect {
namespace {

using core::Evidence;
using core::EvidenceStatus;
using nlohmann::json;

// Reads a small text file: its trimmed content, or null when it could not be read.
json SmallFile(host::Host& h, Evidence& e, const std::string& path, size_t max = 65536) {
  e.sources.push_back("file:" + path);
  auto r = h.ReadFile(path, max);
  return r.status == host::IoStatus::kOk ? json(std::string(util::Trim(r.content))) : json(nullptr);
}

// Whether a path exists: true, false, or null when it could not be told.
json Exists(host::Host& h, Evidence& e, const std::string& path) {
  e.sources.push_back("stat:" + path);
  auto s = h.Stat(path);
  if (s.status == host::IoStatus::kOk) return true;
  if (s.status == host::IoStatus::kNotFound) return false;
  return nullptr;
}

Evidence Processes(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"dir:/proc", "file:/proc/*/comm"};
  auto d = h.ListDir("/proc");
  if (MarkFailed(e, d.status, d.error)) return e;
  std::set<std::string> names;
  for (const auto& ent : d.entries) {
    if (!util::ParseInt(ent.name)) continue;
    auto c = h.ReadFile("/proc/" + ent.name + "/comm", 256);
    if (c.status == host::IoStatus::kOk) names.insert(std::string(util::Trim(c.content)));
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"names", std::vector<std::string>(names.begin(), names.end())}};
  return e;
}

Evidence KernelModules(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"file:/proc/modules", "dir:/sys/module/nvidia"};
  auto r = h.ReadFile("/proc/modules", 1u << 20);
  if (MarkFailed(e, r.status, r.error)) return e;
  std::vector<std::string> mods;
  for (const auto& line : util::SplitLines(r.content)) {
    auto parts = util::SplitWhitespace(line);
    if (!parts.empty()) mods.push_back(parts[0]);
  }
  std::sort(mods.begin(), mods.end());
  e.status = EvidenceStatus::kOk;
  e.data["loaded"] = mods;
  // dma-buf support of the NVIDIA module shows as dma_buf* entries below /sys/module/nvidia
  // (the reference searches four levels deep); the walk is bounded.
  json dmabuf = json::array();
  std::vector<std::pair<std::string, int>> stack = {{"/sys/module/nvidia", 0}};
  int visited = 0;
  while (!stack.empty() && visited < 400) {
    auto [dir, depth] = stack.back();
    stack.pop_back();
    auto l = h.ListDir(dir);
    ++visited;
    if (l.status != host::IoStatus::kOk) continue;
    for (const auto& ent : l.entries) {
      std::string path = dir + "/" + ent.name;
      if (ent.name.rfind("dma_buf", 0) == 0) dmabuf.push_back(path);
      if (ent.type == 'd' && depth + 1 < 4) stack.push_back({path, depth + 1});
    }
  }
  e.data["nvidia_dma_buf_entries"] = dmabuf;
  return e;
}

Evidence NvidiaParams(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.sources.push_back("file:/proc/driver/nvidia/params");
  auto p = h.ReadFile("/proc/driver/nvidia/params", 65536);
  e.data["params_status"] = ToString(p.status);
  json params = json::object();
  if (p.status == host::IoStatus::kOk) {
    for (const auto& [k, v] : ParseNvidiaParams(p.content)) params[k] = v;
  }
  e.data["params"] = params;
  json options = json::array();
  for (const char* dir : {"/etc/modprobe.d", "/run/modprobe.d", "/lib/modprobe.d", "/usr/lib/modprobe.d"}) {
    e.sources.push_back(std::string("dir:") + dir);
    auto l = h.ListDir(dir);
    if (l.status != host::IoStatus::kOk) continue;
    for (const auto& ent : l.entries) {
      if (ent.name.size() < 5 || ent.name.substr(ent.name.size() - 5) != ".conf") continue;
      std::string path = std::string(dir) + "/" + ent.name;
      auto f = h.ReadFile(path, 65536);
      if (f.status != host::IoStatus::kOk) continue;
      for (const auto& line : util::SplitLines(f.content)) {
        std::string_view t = util::Trim(line);
        if (t.empty() || t.front() == '#') continue;
        if (util::Contains(t, "NVreg_")) options.push_back({{"file", path}, {"line", std::string(t)}});
      }
    }
  }
  e.data["modprobe_options"] = options;
  return e;
}

Evidence KvmExposure(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.data["dev_kvm"] = Exists(h, e, "/dev/kvm");
  json nested = nullptr;
  bool nested_unreadable = false;
  for (const char* p : {"/sys/module/kvm_intel/parameters/nested", "/sys/module/kvm_amd/parameters/nested"}) {
    e.sources.push_back(std::string("file:") + p);
    auto r = h.ReadFile(p, 64);
    if (r.status == host::IoStatus::kOk)
      nested = std::string(util::Trim(r.content));
    else if (r.status != host::IoStatus::kNotFound)
      nested_unreadable = true;
  }
  e.data["nested"] = nested;  // "Y", "1", "N", "0"; null when no KVM module exposes it
  e.data["nested_unreadable"] = nested_unreadable;
  e.data["arch"] = SmallFile(h, e, "/proc/sys/kernel/arch", 64);
  e.data["vmscape"] = SmallFile(h, e, "/sys/devices/system/cpu/vulnerabilities/vmscape", 256);
  return e;
}

Evidence DpuRshim(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources.push_back("dir:/dev");
  auto d = h.ListDir("/dev");
  if (MarkFailed(e, d.status, d.error)) return e;
  json rshim = json::array();
  for (const auto& ent : d.entries) {
    if (ent.name.rfind("rshim", 0) == 0) rshim.push_back("/dev/" + ent.name);
  }
  e.status = EvidenceStatus::kOk;
  e.data["rshim_devices"] = rshim;
  e.data["tmfifo_net0"] = Exists(h, e, "/sys/class/net/tmfifo_net0");
  e.data["tmfifo_operstate"] = SmallFile(h, e, "/sys/class/net/tmfifo_net0/operstate", 64);
  return e;
}

Evidence BmcIpmi(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  json devices = json::array();
  bool unknown = false;
  for (const char* p : {"/dev/ipmi0", "/dev/ipmi/0", "/dev/ipmidev/0"}) {
    json x = Exists(h, e, p);
    if (x == json(true)) devices.push_back(p);
    if (x.is_null()) unknown = true;
  }
  e.data["devices"] = devices;
  e.data["device_check_complete"] = !unknown;
  e.data["ipmitool"] = nullptr;
  if (!devices.empty()) {
    e.sources.push_back("which:ipmitool");
    if (h.Which("ipmitool").status == host::IoStatus::kOk) {
      auto spec = Command({"ipmitool", "mc", "info"}, o, "bmc.ipmi");
      spec.timeout = std::min(spec.timeout, std::chrono::milliseconds(5000));
      e.sources.push_back(Source(spec));
      auto r = h.Run(spec);
      e.data["ipmitool"] = {{"status", ToString(r.status)},
                            {"exit_code", r.exit_code},
                            {"output", util::Ellipsize(util::Trim(r.out + r.err), 300)}};
    }
  }
  return e;
}

// sshd's effective settings: the first occurrence of a keyword wins, Include files are read in
// place (Debian and Ubuntu include /etc/ssh/sshd_config.d/*.conf at the top).
Evidence SshdConfig(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"file:/etc/ssh/sshd_config", "file:/etc/ssh/sshd_config.d/*.conf"};
  auto main = h.ReadFile("/etc/ssh/sshd_config", 1u << 20);
  if (main.status == host::IoStatus::kNotFound) {
    e.status = EvidenceStatus::kOk;
    e.data = {{"present", false}};
    return e;
  }
  if (MarkFailed(e, main.status, main.error)) return e;
  json settings = json::object();
  json files = json::array({"/etc/ssh/sshd_config"});
  std::function<void(const std::string&, int)> parse = [&](const std::string& text, int depth) {
    for (const auto& raw : util::SplitLines(text)) {
      std::string_view line = util::Trim(raw);
      if (line.empty() || line.front() == '#') continue;
      auto words = util::SplitWhitespace(line);
      std::string key = util::ToLower(words[0]);
      if (key == "match") return;  // settings below Match apply to some connections only
      if (key == "include" && depth < 3) {
        for (size_t i = 1; i < words.size(); ++i) {
          std::string pattern = words[i][0] == '/' ? words[i] : "/etc/ssh/" + words[i];
          size_t slash = pattern.rfind('/');
          std::string dir = pattern.substr(0, slash), glob = pattern.substr(slash + 1);
          auto l = h.ListDir(dir);
          if (l.status != host::IoStatus::kOk) continue;
          for (const auto& ent : l.entries) {
            bool match = glob == ent.name ||
                         (glob == "*.conf" && ent.name.size() > 5 && ent.name.substr(ent.name.size() - 5) == ".conf");
            if (!match) continue;
            auto f = h.ReadFile(dir + "/" + ent.name, 1u << 20);
            if (f.status != host::IoStatus::kOk) continue;
            files.push_back(dir + "/" + ent.name);
            parse(f.content, depth + 1);
          }
        }
        continue;
      }
      if (words.size() >= 2 && !settings.contains(key)) settings[key] = util::ToLower(words[1]);
    }
  };
  parse(main.content, 0);
  e.status = EvidenceStatus::kOk;
  e.data = {{"present", true}, {"settings", settings}, {"files", files}};
  return e;
}

Evidence IdentityProviders(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.sources.push_back("file:/etc/nsswitch.conf");
  auto ns = h.ReadFile("/etc/nsswitch.conf", 65536);
  json passwd = nullptr;
  if (ns.status == host::IoStatus::kOk) {
    for (const auto& line : util::SplitLines(ns.content)) {
      if (line.rfind("passwd:", 0) == 0) passwd = util::SplitWhitespace(line.substr(7));
    }
  }
  e.data["nsswitch_passwd"] = passwd;
  json modules = json::array();
  e.sources.push_back("dir:/etc/pam.d");
  auto pam = h.ListDir("/etc/pam.d");
  if (pam.status == host::IoStatus::kOk) {
    std::set<std::string> found;
    for (const auto& ent : pam.entries) {
      auto f = h.ReadFile("/etc/pam.d/" + ent.name, 65536);
      if (f.status != host::IoStatus::kOk) continue;
      for (const char* m : {"pam_sss", "pam_ldap", "pam_krb5", "pam_oauth2", "pam_okta", "pam_oidc",
                            "pam_google_authenticator", "pam_duo"}) {
        if (util::Contains(f.content, m)) found.insert(m);
      }
    }
    modules = std::vector<std::string>(found.begin(), found.end());
  }
  e.data["pam_modules"] = modules;
  e.sources.push_back("file:/etc/sssd/sssd.conf");
  auto sssd = h.ReadFile("/etc/sssd/sssd.conf", 65536);
  e.data["sssd_conf_status"] = ToString(sssd.status);
  json providers = json::array();
  if (sssd.status == host::IoStatus::kOk) {
    for (const auto& [k, v] : util::ParseKeyValueLines(sssd.content)) {
      if (k == "id_provider") providers.push_back(v);
    }
  }
  e.data["sssd_id_providers"] = providers;
  return e;
}

Evidence BlockDevices(host::Host& h, const CollectOptions& o) {
  Evidence e;
  auto r = RunFor(e, h, {"lsblk", "-d", "-b", "-P", "-o", "NAME,TYPE,SIZE,ROTA,TRAN,MODEL"}, o, "block.devices");
  if (!r) return e;
  if (r->exit_code != 0) {
    e.status = EvidenceStatus::kError;
    e.error = fmt::format("lsblk exit {}: {}", r->exit_code, util::Ellipsize(util::Trim(r->err), 200));
    return e;
  }
  json disks = json::array();
  for (const auto& pairs : ParseLsblkPairs(r->out)) {
    json d = pairs;
    d["nvme"] = d.value("name", "").rfind("nvme", 0) == 0 || d.value("tran", "") == "nvme";
    disks.push_back(d);
  }
  json mounts = json::array();
  e.sources.push_back("file:/proc/self/mountinfo");
  auto mi = h.ReadFile("/proc/self/mountinfo", 4u << 20);
  if (mi.status == host::IoStatus::kOk) {
    for (const auto& m : ParseMountinfo(mi.content))
      mounts.push_back({{"mount_point", m.mount_point}, {"fstype", m.fstype}, {"source", m.source}});
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"disks", disks}, {"mounts", mounts}};
  return e;
}

// NVIDIA Xid and NVSwitch SXid events from the kernel log of the last 7 days.
Evidence KernelLogXid(host::Host& h, const CollectOptions& o) {
  Evidence e;
  std::string text, source;
  std::string errors;
  if (!o.kernel_log_file.empty()) {
    // A kernel-log file named by the caller (rsyslog's kern.log, a test's evidence tree): read as
    // the rest of the node's files are, never mixed with journalctl or dmesg.
    e.sources.push_back("file:" + o.kernel_log_file);
    auto r = h.ReadFile(o.kernel_log_file, 64u << 20);
    if (MarkFailed(e, r.status, r.error)) return e;
    text = r.content;
    source = "file:" + o.kernel_log_file;
  }
  if (source.empty() && h.Which("journalctl").status == host::IoStatus::kOk) {
    auto spec = Command({"journalctl", "-k", "--since=" + o.kernel_log_since, "-o", "short-iso", "--no-pager", "-q"}, o,
                        "kernel.xid");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    if (r.status == host::IoStatus::kOk && r.exit_code == 0 && !util::Trim(r.out).empty()) {
      text = r.out;
      source = "journalctl";
    } else {
      errors += fmt::format("journalctl: {} exit {} {}; ", ToString(r.status), r.exit_code,
                            util::Ellipsize(util::Trim(r.err + r.error), 150));
    }
  }
  if (source.empty() && h.Which("dmesg").status == host::IoStatus::kOk) {
    auto spec = Command({"dmesg", "-T"}, o, "kernel.xid");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    if (r.status == host::IoStatus::kOk && r.exit_code == 0) {
      text = r.out;
      source = "dmesg";
    } else {
      errors += fmt::format("dmesg: {} exit {} {}", ToString(r.status), r.exit_code,
                            util::Ellipsize(util::Trim(r.err + r.error), 150));
    }
  }
  if (o.kernel_log_file.empty()) e.data["dmesg_restrict"] = SmallFile(h, e, "/proc/sys/kernel/dmesg_restrict", 16);
  if (source.empty()) {
    e.status = EvidenceStatus::kPermissionDenied;
    e.error = "kernel log unreadable: " + errors;
    return e;
  }
  // Xid, SXid and the driver's GPU-loss messages: exact counts per UTC day (the judge applies the
  // window, dmesg's lines included), the newest 200 events newest first.
  GpuLogScan scan = ParseGpuKernelLog(text, 200);
  json events = json::array();
  for (const auto& ev : scan.events) {
    json j = {{"kind", ev.kind}, {"pci", ev.pci}, {"day", ev.day}, {"line", ev.line}};
    if (ev.kind == "message")
      j["match"] = ev.match;
    else
      j["code"] = ev.code;
    events.push_back(std::move(j));
  }
  e.status = EvidenceStatus::kOk;
  e.data["source"] = source;
  e.data["events"] = events;
  e.data["counts_by_day"] = scan.days;
  e.data["total"] = scan.total;
  e.data["truncated"] = scan.truncated;
  return e;
}

Evidence NumaNodes(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"dir:/sys/devices/system/node", "file:/sys/devices/system/node/node*/{cpulist,meminfo}"};
  auto d = h.ListDir("/sys/devices/system/node");
  if (MarkFailed(e, d.status, d.error)) return e;
  json nodes = json::array();
  for (const auto& ent : d.entries) {
    if (ent.name.rfind("node", 0) != 0 || !util::ParseInt(ent.name.substr(4))) continue;
    std::string base = "/sys/devices/system/node/" + ent.name;
    auto cpus = h.ReadFile(base + "/cpulist", 4096);
    auto mem = h.ReadFile(base + "/meminfo", 65536);
    json total_kb = nullptr;
    if (mem.status == host::IoStatus::kOk) {
      if (auto kb = ParseMemTotalKb(mem.content)) total_kb = *kb;
    }
    nodes.push_back(
        {{"node", ent.name},
         {"cpulist", cpus.status == host::IoStatus::kOk ? json(std::string(util::Trim(cpus.content))) : json(nullptr)},
         {"mem_total_kb", total_kb}});
  }
  e.status = EvidenceStatus::kOk;
  e.data["nodes"] = nodes;
  e.data["arch"] = SmallFile(h, e, "/proc/sys/kernel/arch", 64);
  return e;
}

Evidence RdmaStack(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.data["mlx5_core"] = Exists(h, e, "/sys/module/mlx5_core");
  e.data["ib_core"] = Exists(h, e, "/sys/module/ib_core");
  e.data["efa"] = Exists(h, e, "/sys/module/efa");
  for (const char* tool : {"ibv_devices", "ibstat", "ofed_info", "rdma"}) {
    e.sources.push_back(std::string("which:") + tool);
    e.data["tools"][tool] = h.Which(tool).status == host::IoStatus::kOk;
  }
  if (e.data["tools"]["ofed_info"].get<bool>()) {
    if (auto r = RunFor(e, h, {"ofed_info", "-s"}, o, "rdma.stack")) {
      e.status = EvidenceStatus::kOk;
      e.data["ofed"] = util::Ellipsize(util::Trim(r->out), 200);
    } else {
      e.status = EvidenceStatus::kOk;  // the stack facts above stand; ofed_info's failure is recorded
      e.data["ofed_error"] = e.error;
      e.error.clear();
    }
  }
  return e;
}

Evidence ContainerRuntimes(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  for (const char* tool : {"docker", "containerd", "podman", "crio", "enroot", "singularity", "apptainer"}) {
    e.sources.push_back(std::string("which:") + tool);
    e.data["engines"][tool] = h.Which(tool).status == host::IoStatus::kOk;
  }
  json daemon = SmallFile(h, e, "/etc/docker/daemon.json", 1u << 20);
  json docker_nvidia = nullptr;
  if (daemon.is_string()) {
    try {
      json d = util::ParseJsonDocument(daemon.get<std::string>(), "/etc/docker/daemon.json");
      docker_nvidia = d.contains("runtimes") && d["runtimes"].contains("nvidia");
    } catch (const json::exception&) {
      docker_nvidia = util::Contains(daemon.get<std::string>(), "nvidia-container-runtime");
    }
  }
  e.data["docker_nvidia_runtime"] = docker_nvidia;
  json containerd = SmallFile(h, e, "/etc/containerd/config.toml", 1u << 20);
  e.data["containerd_nvidia_runtime"] =
      containerd.is_string() ? json(util::Contains(containerd.get<std::string>(), "nvidia")) : json(nullptr);
  json cdi = json::array();
  for (const char* dir : {"/etc/cdi", "/var/run/cdi"}) {
    e.sources.push_back(std::string("dir:") + dir);
    auto d = h.ListDir(dir);
    if (d.status != host::IoStatus::kOk) continue;
    for (const auto& ent : d.entries) {
      if (ent.name.rfind("nvidia", 0) == 0) cdi.push_back(std::string(dir) + "/" + ent.name);
    }
  }
  e.data["cdi_specs"] = cdi;
  return e;
}

Evidence NcuBinary(host::Host& h, const CollectOptions& o) {
  Evidence e;
  std::vector<std::string> candidates;
  e.sources.push_back("which:ncu");
  auto w = h.Which("ncu");
  if (w.status == host::IoStatus::kOk) candidates.push_back(w.path);
  for (const char* base : {"/usr/local", "/opt/nvidia/nsight-compute"}) {
    e.sources.push_back(std::string("dir:") + base);
    auto d = h.ListDir(base);
    if (d.status != host::IoStatus::kOk) continue;
    for (const auto& ent : d.entries) {
      std::string path = std::string(base) == "/usr/local"
                             ? (ent.name.rfind("cuda", 0) == 0 ? "/usr/local/" + ent.name + "/bin/ncu" : "")
                             : std::string(base) + "/" + ent.name + "/ncu";
      if (path.empty()) continue;
      if (h.Stat(path).status == host::IoStatus::kOk &&
          std::find(candidates.begin(), candidates.end(), path) == candidates.end()) {
        candidates.push_back(path);
      }
    }
  }
  e.status = EvidenceStatus::kOk;
  if (candidates.empty()) {
    e.data = {{"installed", false}, {"path", nullptr}, {"version", nullptr}};
    return e;
  }
  auto r = RunFor(e, h, {candidates.front(), "--version"}, o, "ncu.binary");
  e.data["installed"] = true;
  e.data["path"] = candidates.front();
  e.data["candidates"] = candidates;
  if (!r) {
    e.data["version"] = nullptr;
    return e;  // status set by RunFor
  }
  auto version = ParseNcuVersion(r->out + r->err);
  e.data["version"] = version ? json(*version) : json(nullptr);
  return e;
}

Evidence Gdrcopy(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  json libs = json::array();
  if (auto r = RunFor(e, h, {"ldconfig", "-p"}, o, "gdrcopy")) {
    for (const auto& ent : ParseLdconfig(r->out)) {
      if (ent.soname.rfind("libgdrapi.so", 0) == 0) libs.push_back(ent.path);
    }
  }
  e.status = EvidenceStatus::kOk;  // the other facts stand even if ldconfig failed
  e.data["libraries"] = libs;
  e.data["module"] = Exists(h, e, "/sys/module/gdrdrv");
  e.data["device"] = Exists(h, e, "/dev/gdrdrv");
  return e;
}

Evidence EssentialTools(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  const auto& t = core::EmbeddedThresholds().data();
  for (const auto& group : {"essential_tools", "package_managers"}) {
    for (const auto& tool : t.at(group)) {
      std::string name = tool;
      e.sources.push_back("which:" + name);
      e.data[group][name] = h.Which(name).status == host::IoStatus::kOk;
    }
  }
  return e;
}

// For each GPU, the nearest RDMA NIC (longest shared sysfs path) and the ACS Control register of
// every port below their common upstream bridge. Extended config space needs root.
Evidence PciAcs(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"dir:/sys/bus/pci/devices", "stat:/sys/bus/pci/devices/*", "file:/sys/bus/pci/devices/<port>/config"};
  PciInventory inv = ReadPciInventory(h);
  if (MarkFailed(e, inv.status, inv.error)) return e;
  auto chain_of = [&](const std::string& bdf) {
    auto s = h.Stat("/sys/bus/pci/devices/" + bdf);
    return s.status == host::IoStatus::kOk ? PciChain(s.link_target) : std::vector<std::string>{};
  };
  std::vector<std::pair<std::string, std::vector<std::string>>> gpus, nics;
  for (const auto& d : inv.devices) {
    if (d.IsGpu()) gpus.push_back({d.bdf, chain_of(d.bdf)});
    if (d.IsRdmaNic()) nics.push_back({d.bdf, chain_of(d.bdf)});
  }
  json pairs = json::array();
  for (const auto& [gpu, gchain] : gpus) {
    size_t best = 0;
    const std::pair<std::string, std::vector<std::string>>* nearest = nullptr;
    for (const auto& n : nics) {
      size_t k = 0;
      while (k < gchain.size() && k < n.second.size() && gchain[k] == n.second[k]) ++k;
      if (k > best) {
        best = k;
        nearest = &n;
      }
    }
    json pair = {{"gpu", gpu}, {"gpu_chain", gchain}};
    // A common switch needs at least a root port and a switch upstream port in common.
    if (!nearest || best < 2) {
      pair["nic"] = nearest ? json(nearest->first) : json(nullptr);
      pair["common_switch"] = false;
      pairs.push_back(pair);
      continue;
    }
    pair["nic"] = nearest->first;
    pair["common_switch"] = true;
    pair["common_upstream"] = gchain[best - 1];
    json ports = json::array();
    std::set<std::string> seen;
    for (const auto* chain : {&gchain, &nearest->second}) {
      for (size_t i = best; i + 1 < chain->size(); ++i) {  // switch ports below the common bridge, not the endpoint
        const std::string& port = (*chain)[i];
        if (!seen.insert(port).second) continue;
        auto cfg = h.ReadFile("/sys/bus/pci/devices/" + port + "/config", 4096);
        json pj = {{"bdf", port}, {"read_status", ToString(cfg.status)}, {"config_bytes", cfg.content.size()}};
        if (cfg.status == host::IoStatus::kOk) {
          AcsControl acs = ParseAcsControl(cfg.content);
          pj["extended_readable"] = !acs.unreadable;
          pj["acs_present"] = acs.present;
          pj["acs_control"] = acs.present ? json(acs.control) : json(nullptr);
          pj["redirect"] = acs.RedirectsP2p();
        }
        ports.push_back(pj);
      }
    }
    pair["ports"] = ports;
    pairs.push_back(pair);
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"pairs", pairs}, {"gpus", gpus.size()}, {"nics", nics.size()}};
  return e;
}

// Devices bound to vfio-pci and the members of their IOMMU groups.
Evidence PciPassthrough(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"dir:/sys/bus/pci/devices", "stat:/sys/bus/pci/devices/*/iommu_group",
               "dir:/sys/kernel/iommu_groups/*/devices"};
  PciInventory inv = ReadPciInventory(h);
  if (MarkFailed(e, inv.status, inv.error)) return e;
  json devices = json::array();
  for (const auto& d : inv.devices) {
    if (d.driver != "vfio-pci") continue;
    auto g = h.Stat("/sys/bus/pci/devices/" + d.bdf + "/iommu_group");
    json dj = {{"bdf", d.bdf}, {"gpu", d.IsGpu()}, {"nic", d.IsNetwork()}, {"group", nullptr}, {"members", nullptr}};
    if (g.status == host::IoStatus::kOk && !g.link_target.empty()) {
      std::string group = g.link_target.substr(g.link_target.rfind('/') + 1);
      dj["group"] = group;
      auto m = h.ListDir("/sys/kernel/iommu_groups/" + group + "/devices");
      if (m.status == host::IoStatus::kOk) {
        json members = json::array();
        for (const auto& ent : m.entries) members.push_back(ent.name);
        dj["members"] = members;
      }
    }
    devices.push_back(dj);
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"vfio_devices", devices}};
  return e;
}

// RDMA port error counters read twice, `counter_interval` apart, to tell live errors from history.
// The second read is a sampled read (its own bundle key), so a replay sees both samples and
// does not wait.
Evidence RdmaCounters(host::Host& h, const CollectOptions& o) {
  static const char* kCounters[] = {
      "link_downed",     "link_error_recovery",         "symbol_error",
      "port_rcv_errors", "local_link_integrity_errors", "excessive_buffer_overrun_errors"};
  Evidence e;
  e.sources = {"file:/sys/class/infiniband/*/ports/*/counters/* (read twice)"};
  auto d = h.ListDir("/sys/class/infiniband");
  if (d.status == host::IoStatus::kNotFound) {
    e.status = EvidenceStatus::kOk;
    e.data = {{"ports", json::array()}};
    return e;
  }
  if (MarkFailed(e, d.status, d.error)) return e;
  json ports = json::array();
  std::vector<std::string> files, dirs;  // dirs[i]: counter directory of ports[i]
  for (const auto& dev : d.entries) {
    auto pl = h.ListDir("/sys/class/infiniband/" + dev.name + "/ports");
    if (pl.status != host::IoStatus::kOk) continue;
    for (const auto& p : pl.entries) {
      json first = json::object();
      dirs.push_back("/sys/class/infiniband/" + dev.name + "/ports/" + p.name + "/counters/");
      for (const char* c : kCounters) {
        std::string path = dirs.back() + c;
        auto r = h.ReadFile(path, 64);
        auto v = r.status == host::IoStatus::kOk ? util::ParseInt(r.content) : std::nullopt;
        first[c] = v ? json(*v) : json(nullptr);
        if (v) files.push_back(path);
      }
      ports.push_back({{"port", dev.name + "/" + p.name}, {"first", first}, {"second", nullptr}});
    }
  }
  e.status = EvidenceStatus::kOk;
  e.data["interval_s"] = o.counter_interval.count() / 1000.0;
  if (!files.empty() && o.counter_interval.count() > 0) {
    h.Sleep(o.counter_interval);
    for (size_t i = 0; i < ports.size(); ++i) {
      json s = json::object();
      for (const char* c : kCounters) {
        auto r = h.ReadFileSample(dirs[i] + c, 1, 64);
        auto v = r.status == host::IoStatus::kOk ? util::ParseInt(r.content) : std::nullopt;
        s[c] = v ? json(*v) : json(nullptr);
      }
      ports[i]["second"] = s;
    }
  }
  e.data["ports"] = ports;
  return e;
}

Evidence OpensmConfig(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"file:/etc/opensm/opensm.conf"};
  auto r = h.ReadFile("/etc/opensm/opensm.conf", 1u << 20);
  e.status = EvidenceStatus::kOk;
  if (r.status == host::IoStatus::kNotFound) {
    e.data = {{"present", false}};
    return e;
  }
  if (MarkFailed(e, r.status, r.error)) return e;
  json keys = json::object();
  for (const auto& line : util::SplitLines(r.content)) {
    auto words = util::SplitWhitespace(line);
    if (words.size() >= 2 && words[0][0] != '#') {
      for (const char* k : {"sm_key", "sa_key", "m_key", "m_key_protection_level"}) {
        if (words[0] == k) keys[k] = words[1];
      }
    }
  }
  e.data = {{"present", true}, {"keys", keys}};
  return e;
}

// SR-IOV virtual functions of RDMA NICs (a physfn link marks a VF).
Evidence SriovVfs(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"dir:/sys/bus/pci/devices", "stat:/sys/bus/pci/devices/*/physfn"};
  PciInventory inv = ReadPciInventory(h);
  if (MarkFailed(e, inv.status, inv.error)) return e;
  json vfs = json::array();
  for (const auto& d : inv.devices) {
    if (!d.IsRdmaNic()) continue;
    auto s = h.Stat("/sys/bus/pci/devices/" + d.bdf + "/physfn");
    if (s.status == host::IoStatus::kOk) vfs.push_back({{"bdf", d.bdf}, {"physfn", s.link_target}});
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"vfs", vfs}};
  return e;
}

}  // namespace

void RegisterNodeCollectors(std::vector<Collector>& out) {
  out.push_back({{"os.processes", "Names of running processes", {"dir:/proc", "file:/proc/*/comm"}, ""}, Processes});
  out.push_back({{"kernel.modules",
                  "Loaded kernel modules and NVIDIA dma-buf support",
                  {"file:/proc/modules", "dir:/sys/module/nvidia (4 levels)"},
                  ""},
                 KernelModules});
  out.push_back({{"nvidia.params",
                  "NVIDIA driver parameters and NVreg_ modprobe options",
                  {"file:/proc/driver/nvidia/params", "dir:/etc/modprobe.d", "dir:/run/modprobe.d",
                   "dir:/lib/modprobe.d", "dir:/usr/lib/modprobe.d"},
                  ""},
                 NvidiaParams});
  out.push_back({{"kvm.exposure",
                  "/dev/kvm, nested virtualisation and the VMScape mitigation state",
                  {"stat:/dev/kvm", "file:/sys/module/kvm_*/parameters/nested",
                   "file:/sys/devices/system/cpu/vulnerabilities/vmscape"},
                  ""},
                 KvmExposure});
  out.push_back({{"dpu.rshim",
                  "BlueField RShim device nodes and tmfifo_net0 on the host",
                  {"dir:/dev", "stat:/sys/class/net/tmfifo_net0"},
                  ""},
                 DpuRshim});
  out.push_back({{"bmc.ipmi",
                  "In-band IPMI device nodes; ipmitool mc info when one exists",
                  {"stat:/dev/ipmi0", "stat:/dev/ipmi/0", "stat:/dev/ipmidev/0", "cmd:ipmitool mc info"},
                  ""},
                 BmcIpmi});
  out.push_back({{"ssh.sshd-config",
                  "Effective sshd settings (sshd_config and its Include files)",
                  {"file:/etc/ssh/sshd_config", "file:/etc/ssh/sshd_config.d/*.conf"},
                  ""},
                 SshdConfig});
  out.push_back({{"identity.providers",
                  "nsswitch passwd sources, PAM modules, sssd id providers",
                  {"file:/etc/nsswitch.conf", "dir:/etc/pam.d", "file:/etc/sssd/sssd.conf"},
                  ""},
                 IdentityProviders});
  out.push_back({{"block.devices",
                  "Disks (lsblk) and mounts",
                  {"cmd:lsblk -d -b -P -o NAME,TYPE,SIZE,ROTA,TRAN,MODEL", "file:/proc/self/mountinfo"},
                  ""},
                 BlockDevices});
  out.push_back({{"kernel.xid",
                  "NVIDIA Xid/SXid events in the kernel log of the last 7 days",
                  {"cmd:journalctl -k --since=-7d -o short-iso --no-pager -q", "cmd:dmesg -T",
                   "file:/proc/sys/kernel/dmesg_restrict"},
                  ""},
                 KernelLogXid});
  out.push_back({{"numa.nodes",
                  "NUMA nodes with their CPUs and memory",
                  {"dir:/sys/devices/system/node", "file:/proc/sys/kernel/arch"},
                  ""},
                 NumaNodes});
  out.push_back({{"rdma.stack",
                  "RDMA kernel modules, OFED and user-space tools",
                  {"stat:/sys/module/mlx5_core", "stat:/sys/module/ib_core", "which:ibv_devices", "cmd:ofed_info -s"},
                  ""},
                 RdmaStack});
  out.push_back({{"container.runtimes",
                  "Container engines and their NVIDIA runtime wiring (daemon.json, containerd, CDI)",
                  {"which:docker", "file:/etc/docker/daemon.json", "file:/etc/containerd/config.toml", "dir:/etc/cdi",
                   "dir:/var/run/cdi"},
                  ""},
                 ContainerRuntimes});
  out.push_back({{"ncu.binary",
                  "Nsight Compute (ncu) location and version",
                  {"which:ncu", "dir:/usr/local/cuda*/bin", "dir:/opt/nvidia/nsight-compute", "cmd:ncu --version"},
                  ""},
                 NcuBinary});
  out.push_back({{"tools.essential",
                  "Essential user tools and a package manager on PATH",
                  {"which:<each tool in data/node-thresholds.json>"},
                  ""},
                 EssentialTools});
  out.push_back({{"pci.acs",
                  "ACS Control of the switch ports between each GPU and its nearest RDMA NIC (PCI config space)",
                  {"stat:/sys/bus/pci/devices/*", "file:/sys/bus/pci/devices/<switch port>/config"},
                  ""},
                 PciAcs});
  out.push_back({{"pci.passthrough",
                  "Devices bound to vfio-pci and their IOMMU group members",
                  {"stat:/sys/bus/pci/devices/*/iommu_group", "dir:/sys/kernel/iommu_groups/*/devices"},
                  ""},
                 PciPassthrough});
  out.push_back({{"rdma.counters",
                  "RDMA port error counters, read twice to separate live errors from history",
                  {"file:/sys/class/infiniband/*/ports/*/counters/* (read twice, --counter-interval apart)"},
                  ""},
                 RdmaCounters});
  out.push_back({{"ib.opensm", "Local OpenSM keys (sm_key, m_key protection)", {"file:/etc/opensm/opensm.conf"}, ""},
                 OpensmConfig});
  out.push_back(
      {{"sriov.vfs", "SR-IOV virtual functions of RDMA NICs", {"stat:/sys/bus/pci/devices/*/physfn"}, ""}, SriovVfs});
  out.push_back({{"gdrcopy",
                  "gdrcopy library, gdrdrv module and /dev/gdrdrv",
                  {"cmd:ldconfig -p", "stat:/sys/module/gdrdrv", "stat:/dev/gdrdrv"},
                  ""},
                 Gdrcopy});

  using namespace field;
  DeclareFields(out, "os.processes", {{"names[]", Str, "", "distinct process names (comm, cut at 15 characters)"}});
  DeclareFields(out, "kernel.modules",
                {{"loaded[]", Str, "", "loaded modules (/proc/modules), sorted"},
                 {"nvidia_dma_buf_entries[]", Str, "", "dma_buf* entries below /sys/module/nvidia"}});
  DeclareFields(out, "nvidia.params",
                {{"params_status", Str, "", "status of the /proc/driver/nvidia/params read"},
                 {"params{}", Str, "", "driver parameter -> value"},
                 {"modprobe_options[].file", Str, "", "modprobe.d file"},
                 {"modprobe_options[].line", Str, "", "its NVreg_ line"}});
  DeclareFields(out, "kvm.exposure",
                {{"dev_kvm", Bool, "", "/dev/kvm exists; null when unknown", kNull},
                 {"nested", Str, "", "kvm_intel/kvm_amd nested parameter (Y, 1, N, 0); null when none", kNull},
                 {"nested_unreadable", Bool, "", "a nested parameter exists but could not be read"},
                 {"arch", Str, "", "kernel arch; null when unread", kNull},
                 {"vmscape", Str, "", "the vmscape vulnerability status; null when unread", kNull}});
  DeclareFields(out, "dpu.rshim",
                {{"rshim_devices[]", Str, "", "/dev/rshim* devices"},
                 {"tmfifo_net0", Bool, "", "the tmfifo_net0 interface exists; null when unknown", kNull},
                 {"tmfifo_operstate", Str, "", "its operstate; null when unread", kNull}});
  DeclareFields(out, "bmc.ipmi",
                {{"devices[]", Str, "", "IPMI device nodes present"},
                 {"device_check_complete", Bool, "", "every device node could be checked"},
                 {"ipmitool", Obj, "", "ipmitool mc info; null when not run", kNull},
                 {"ipmitool.status", Str, "", "its status"},
                 {"ipmitool.exit_code", Int, "", "its exit status"},
                 {"ipmitool.output", Str, "", "its output, cut"}});
  DeclareFields(out, "ssh.sshd-config",
                {{"present", Bool, "", "/etc/ssh/sshd_config exists"},
                 {"settings{}", Str, "", "effective keyword (lower case) -> first value (lower case)"},
                 {"files[]", Str, "", "configuration files read"}});
  DeclareFields(out, "identity.providers",
                {{"nsswitch_passwd", Arr, "", "sources of the passwd: line; null when unread", kNull},
                 {"nsswitch_passwd[]", Str, "", "one source (files, sss, ldap)"},
                 {"pam_modules", Arr, "", "identity PAM modules named in /etc/pam.d; null when unread", kNull},
                 {"pam_modules[]", Str, "", "pam_sss, pam_ldap ..."},
                 {"sssd_conf_status", Str, "", "status of the sssd.conf read"},
                 {"sssd_id_providers[]", Str, "", "id_provider values of sssd.conf"}});
  DeclareFields(out, "block.devices",
                {{"disks[]{}", Any, "", "lsblk -P key (lower case: name, type, size, rota, tran, model) -> value"},
                 {"disks[].nvme", Bool, "", "an NVMe disk"},
                 {"mounts[].mount_point", Str, "", "mount point"},
                 {"mounts[].fstype", Str, "", "filesystem type"},
                 {"mounts[].source", Str, "", "mount source"}});
  DeclareFields(out, "kernel.xid",
                {{"dmesg_restrict", Str, "", "kernel.dmesg_restrict; null when unread", kNull},
                 {"source", Str, "", "journalctl, dmesg or file:<path>"},
                 {"events[].kind", Str, "", "Xid, SXid or message"},
                 {"events[].code", Int, "", "Xid/SXid code"},
                 {"events[].match", Str, "", "catalog message matched (kind message)"},
                 {"events[].pci", Str, "", "PCI address of the line"},
                 {"events[].day", Str, "", "UTC day (2026-11-29), empty when undated"},
                 {"events[].line", Str, "", "the log line"},
                 {"counts_by_day{}{}", Int, "events", "day (or \"undated\") -> event key (\"Xid 79\") -> count"},
                 {"total", Int, "events", "events in the log"},
                 {"truncated", Bool, "", "the event list was cut (counts are exact)"}});
  DeclareFields(out, "numa.nodes",
                {{"nodes[].node", Str, "", "node0 ..."},
                 {"nodes[].cpulist", Str, "", "its CPUs (0-55,112-167); null when unread", kNull},
                 {"nodes[].mem_total_kb", Int, "KiB", "MemTotal of its meminfo; null when unread", kNull},
                 {"arch", Str, "", "kernel arch; null when unread", kNull}});
  DeclareFields(out, "rdma.stack",
                {{"mlx5_core", Bool, "", "mlx5_core loaded; null when unknown", kNull},
                 {"ib_core", Bool, "", "ib_core loaded; null when unknown", kNull},
                 {"efa", Bool, "", "efa loaded; null when unknown", kNull},
                 {"tools{}", Bool, "", "ibv_devices, ibstat, ofed_info, rdma -> on PATH"},
                 {"ofed", Str, "", "ofed_info -s"},
                 {"ofed_error", Str, "", "why ofed_info failed"}});
  DeclareFields(out, "container.runtimes",
                {{"engines{}", Bool, "", "docker, containerd, podman, crio, enroot, singularity, apptainer -> on PATH"},
                 {"docker_nvidia_runtime", Bool, "", "daemon.json names the nvidia runtime; null when unread", kNull},
                 {"containerd_nvidia_runtime", Bool, "", "containerd's config names nvidia; null when unread", kNull},
                 {"cdi_specs[]", Str, "", "NVIDIA CDI specs in /etc/cdi, /var/run/cdi"}});
  DeclareFields(out, "ncu.binary",
                {{"installed", Bool, "", "an ncu binary was found"},
                 {"path", Str, "", "the first one; null when none", kNull},
                 {"version", Str, "", "its version (2025.3.1); null when unread", kNull},
                 {"candidates[]", Str, "", "every ncu found"}});
  DeclareFields(out, "tools.essential",
                {{"essential_tools{}", Bool, "", "tool of data/node-thresholds.json -> on PATH"},
                 {"package_managers{}", Bool, "", "package manager -> on PATH"}});
  DeclareFields(out, "pci.acs",
                {{"pairs[].gpu", Str, "", "GPU PCI address"},
                 {"pairs[].gpu_chain[]", Str, "", "its PCI path, root first"},
                 {"pairs[].nic", Str, "", "nearest RDMA NIC; null when none", kNull},
                 {"pairs[].common_switch", Bool, "", "GPU and NIC share a PCIe switch"},
                 {"pairs[].common_upstream", Str, "", "their common upstream bridge"},
                 {"pairs[].ports[].bdf", Str, "", "switch port below it"},
                 {"pairs[].ports[].read_status", Str, "", "status of its config read"},
                 {"pairs[].ports[].config_bytes", Int, "bytes", "config space bytes read"},
                 {"pairs[].ports[].extended_readable", Bool, "", "extended config space was read"},
                 {"pairs[].ports[].acs_present", Bool, "", "it has an ACS capability"},
                 {"pairs[].ports[].acs_control", Int, "", "ACS Control register; null when absent", kNull},
                 {"pairs[].ports[].redirect", Bool, "", "P2P request/completion redirect on"},
                 {"gpus", Int, "GPUs", "GPUs in the PCI inventory"},
                 {"nics", Int, "NICs", "RDMA NICs in the PCI inventory"}});
  DeclareFields(out, "pci.passthrough",
                {{"vfio_devices[].bdf", Str, "", "device bound to vfio-pci"},
                 {"vfio_devices[].gpu", Bool, "", "a GPU"},
                 {"vfio_devices[].nic", Bool, "", "a network function"},
                 {"vfio_devices[].group", Str, "", "its IOMMU group; null when unread", kNull},
                 {"vfio_devices[].members", Arr, "", "devices of that group; null when unread", kNull},
                 {"vfio_devices[].members[]", Str, "", "PCI address"}});
  DeclareFields(out, "rdma.counters",
                {{"interval_s", Num, "s", "time between the two reads"},
                 {"ports[].port", Str, "", "mlx5_0/1"},
                 {"ports[].first{}", Int, "errors", "counter -> first read; null when unread", kNull},
                 {"ports[].second", Obj, "", "the second read; null when not taken", kNull},
                 {"ports[].second{}", Int, "errors", "counter -> second read; null when unread", kNull}});
  DeclareFields(out, "ib.opensm",
                {{"present", Bool, "", "/etc/opensm/opensm.conf exists"},
                 {"keys{}", Str, "", "sm_key, sa_key, m_key, m_key_protection_level -> value"}});
  DeclareFields(
      out, "sriov.vfs",
      {{"vfs[].bdf", Str, "", "an RDMA NIC virtual function"}, {"vfs[].physfn", Str, "", "link target of its physfn"}});
  DeclareFields(out, "gdrcopy",
                {{"libraries[]", Str, "", "libgdrapi.so paths in the ldconfig cache"},
                 {"module", Bool, "", "gdrdrv loaded; null when unknown", kNull},
                 {"device", Bool, "", "/dev/gdrdrv exists; null when unknown", kNull}});
}

}  // namespace clustermax::collect
