// Collectors for services and platform facts: dcgm-exporter, QEMU virtio-serial, listening
// sockets, ARM SMMU, HPC-X/MPI and shared mounts.
#include <algorithm>

#include <fmt/format.h>

#include "collect/collector.h"
#include "collect/parsers.h"
#include "util/strings.h"

namespace clustermax::collect {
namespace {

using core::Evidence;
using core::EvidenceStatus;
using nlohmann::json;

Evidence DcgmExporter(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.sources.push_back("which:dcgm-exporter");
  auto w = h.Which("dcgm-exporter");
  e.status = EvidenceStatus::kOk;
  if (w.status != host::IoStatus::kOk) {
    e.data = {{"installed", false}};
    return e;
  }
  auto r = RunFor(e, h, {"dcgm-exporter", "--version"}, o, "dcgm-exporter.version");
  if (!r) return e;
  std::string text = r->out + r->err;
  // Versions are published as <dcgm>-<exporter> (e.g. 4.5.3-4.8.2).
  e.data = {{"installed", true}, {"raw", util::Ellipsize(util::Trim(text), 200)}};
  if (auto v = ParseDcgmExporterVersion(text)) {
    e.data["dcgm_version"] = v->dcgm ? json(*v->dcgm) : json(nullptr);
    e.data["exporter_version"] = v->exporter;
  } else {
    e.status = EvidenceStatus::kParseError;
    e.error = "no version in: " + util::Ellipsize(util::Trim(text), 200);
  }
  return e;
}

Evidence QemuVirtio(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.sources.push_back("dir:/dev/virtio-ports");
  auto d = h.ListDir("/dev/virtio-ports");
  json ports = json::array();
  if (d.status == host::IoStatus::kOk) {
    for (const auto& ent : d.entries) ports.push_back(ent.name);
  }
  e.data["virtio_ports"] = ports;
  e.data["virtio_ports_status"] = ToString(d.status);
  e.data["qemu_package"] = nullptr;
  if (h.Which("dpkg-query").status == host::IoStatus::kOk) {
    auto spec = Command({"dpkg-query", "-W", "-f=${Version} ${db:Status-Abbrev}", "qemu-system-x86"}, o, "qemu.virtio");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    if (r.status == host::IoStatus::kOk && r.exit_code == 0) {
      auto parts = util::SplitWhitespace(r.out);
      if (parts.size() >= 2 && parts[1].rfind("ii", 0) == 0) e.data["qemu_package"] = parts[0];
    }
  }
  return e;
}

// LISTEN sockets from /proc/net/tcp{,6}: "sl local_address rem_address st ..." with hex addresses.
Evidence Listeners(host::Host& h, const CollectOptions&) {
  Evidence e;
  json listen = json::array();
  bool any_read = false;
  for (const char* path : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    e.sources.push_back(std::string("file:") + path);
    auto r = h.ReadFile(path, 4u << 20);
    if (r.status != host::IoStatus::kOk) continue;
    any_read = true;
    bool v6 = std::string(path).back() == '6';
    for (const auto& l : ParseProcNetTcpListeners(r.content, v6))
      listen.push_back({{"port", l.port}, {"ipv6", v6}, {"scope", l.scope}});
  }
  if (!any_read) {
    e.status = EvidenceStatus::kPermissionDenied;
    e.error = "/proc/net/tcp unreadable";
    return e;
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"listen", listen}};
  return e;
}

Evidence ArmSmmu(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.sources = {"file:/proc/sys/kernel/arch", "file:/sys/devices/system/cpu/cpu0/regs/identification/midr_el1",
               "dir:/sys/class/iommu", "stat:/sys/module/tegra241_cmdqv"};
  auto arch = h.ReadFile("/proc/sys/kernel/arch", 64);
  e.data["arch"] = arch.status == host::IoStatus::kOk ? json(std::string(util::Trim(arch.content))) : json(nullptr);
  auto midr = h.ReadFile("/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", 64);
  e.data["midr"] = midr.status == host::IoStatus::kOk ? json(std::string(util::Trim(midr.content))) : json(nullptr);
  auto units = h.ListDir("/sys/class/iommu");
  json names = json::array();
  if (units.status == host::IoStatus::kOk) {
    for (const auto& u : units.entries) names.push_back(u.name);
  }
  e.data["iommu_units"] = names;
  e.data["cmdqv_module"] = h.Stat("/sys/module/tegra241_cmdqv").status == host::IoStatus::kOk;
  return e;
}

Evidence MpiHpcx(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.sources = {"env:HPCX_DIR", "dir:/opt", "which:mpirun", "cmd:ompi_info --parsable"};
  auto env = h.GetEnv("HPCX_DIR");
  e.data["hpcx_dir_env"] = env ? json(*env) : json(nullptr);
  json opt = json::array();
  auto d = h.ListDir("/opt");
  if (d.status == host::IoStatus::kOk) {
    for (const auto& ent : d.entries) {
      if (ent.name.rfind("hpcx", 0) == 0) opt.push_back("/opt/" + ent.name);
    }
  }
  e.data["hpcx_in_opt"] = opt;
  e.data["mpirun"] = h.Which("mpirun").status == host::IoStatus::kOk;
  e.data["ucx_pml"] = nullptr;
  if (h.Which("ompi_info").status == host::IoStatus::kOk) {
    auto r = h.Run(Command({"ompi_info", "--parsable"}, o, "mpi.hpcx"));
    if (r.status == host::IoStatus::kOk && r.exit_code == 0) e.data["ucx_pml"] = util::Contains(r.out, "mca:pml:ucx");
  }
  return e;
}

// Network filesystems expected from /etc/fstab against what is mounted, and a `stat` of each
// shared mount point with a short deadline (a hung NFS or Lustre mount never answers).
Evidence SharedMounts(host::Host& h, const CollectOptions& o) {
  static const std::vector<std::string> kNetFs = {"nfs",    "nfs4",      "lustre", "gpfs", "ceph",    "glusterfs",
                                                  "wekafs", "fuse.weka", "beegfs", "cifs", "virtiofs"};
  auto is_net = [&](const std::string& t) { return std::find(kNetFs.begin(), kNetFs.end(), t) != kNetFs.end(); };
  Evidence e;
  e.sources = {"file:/etc/fstab", "file:/proc/self/mountinfo", "cmd:stat -c %n <mount point> (2 s)"};
  auto fstab = h.ReadFile("/etc/fstab", 1u << 20);
  auto mi = h.ReadFile("/proc/self/mountinfo", 4u << 20);
  if (MarkFailed(e, mi.status, mi.error)) return e;
  json expected = json::array(), mounted = json::array();
  if (fstab.status == host::IoStatus::kOk) {
    for (const auto& line : util::SplitLines(fstab.content)) {
      auto f = util::SplitWhitespace(line);
      if (f.size() < 3 || f[0][0] == '#' || !is_net(f[2])) continue;
      expected.push_back({{"mount_point", f[1]},
                          {"fstype", f[2]},
                          {"noauto", util::Contains(f.size() > 3 ? f[3] : "", "noauto") ||
                                         util::Contains(f.size() > 3 ? f[3] : "", "x-systemd.automount")}});
    }
  }
  // Mount points the caller requires (health --require-mount), whatever their filesystem.
  auto required = [&](const std::string& mp) {
    return std::find(o.required_mounts.begin(), o.required_mounts.end(), mp) != o.required_mounts.end();
  };
  for (const auto& r : o.required_mounts) {
    bool listed = false;
    for (auto& x : expected) {
      if (x["mount_point"] == r)
        listed = true, x["noauto"] = false;  // required: an automount not yet triggered is missing
    }
    if (!listed) expected.push_back({{"mount_point", r}, {"fstype", "required"}, {"noauto", false}});
  }
  for (const auto& line : util::SplitLines(mi.content)) {
    auto parts = util::SplitWhitespace(line);
    size_t sep = std::find(parts.begin(), parts.end(), "-") - parts.begin();
    if (parts.size() < 5 || sep + 2 >= parts.size() || !(is_net(parts[sep + 1]) || required(parts[4]))) continue;
    auto spec = Command({"stat", "-c", "%n", parts[4]}, o, "storage.shared-mounts");
    spec.timeout = std::min(spec.timeout, std::chrono::milliseconds(2000));
    auto r = h.Run(spec);
    mounted.push_back(
        {{"mount_point", parts[4]},
         {"fstype", parts[sep + 1]},
         {"source", parts[sep + 2]},
         {"stat", r.status == host::IoStatus::kOk && r.exit_code == 0 ? "ok" : std::string(ToString(r.status))}});
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"fstab_status", ToString(fstab.status)}, {"expected", expected}, {"mounted", mounted}};
  return e;
}

// The shared home's per-user quota: the mount holding $HOME (longest mount-point prefix in
// mountinfo), then the filesystem's own quota tool, run as the auditing user.
Evidence HomeQuota(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.sources = {"env:HOME", "env:USER", "file:/proc/self/mountinfo"};
  auto home = h.GetEnv("HOME");
  auto user = h.GetEnv("USER");
  if (!user || user->empty()) user = h.GetEnv("LOGNAME");
  auto mi = h.ReadFile("/proc/self/mountinfo", 4u << 20);
  if (MarkFailed(e, mi.status, mi.error)) return e;
  e.status = EvidenceStatus::kOk;
  e.data = {{"home", home ? json(*home) : json(nullptr)},
            {"user", user ? json(*user) : json(nullptr)},
            {"mount_point", nullptr},
            {"fstype", nullptr}};
  if (!home || home->empty() || (*home)[0] != '/') return e;
  std::string best, fstype, source;
  for (const auto& line : util::SplitLines(mi.content)) {
    auto parts = util::SplitWhitespace(line);
    size_t sep = std::find(parts.begin(), parts.end(), "-") - parts.begin();
    if (parts.size() < 5 || sep + 2 >= parts.size()) continue;
    const std::string& mp = parts[4];
    bool contains = mp == "/" || *home == mp || (home->rfind(mp, 0) == 0 && (*home)[mp.size()] == '/');
    if (contains && mp.size() >= best.size()) {
      best = mp;
      fstype = parts[sep + 1];
      source = parts[sep + 2];
    }
  }
  e.data["mount_point"] = best;
  e.data["fstype"] = fstype;
  e.data["source"] = source;
  // The quota tool of the filesystem; ext4, XFS and NFS (rquotad) answer `quota`.
  std::vector<std::string> argv;
  std::string u = user.value_or("");
  if (fstype == "lustre")
    argv = {"lfs", "quota", "-u", u, best};
  else if (fstype == "gpfs")
    argv = {"mmlsquota", "-u", u};
  else if (fstype == "ceph" || fstype == "fuse.ceph-fuse")
    argv = {"getfattr", "-n", "ceph.quota.max_bytes", "--only-values", *home};
  else
    argv = {"quota", "-s", "-w"};
  if (u.empty() && argv[0] != "quota" && argv[0] != "getfattr") return e;
  auto spec = Command(argv, o, "storage.home-quota");
  e.sources.push_back(Source(spec));
  auto r = h.Run(spec);
  json q = {{"tool", argv[0]},
            {"command", util::JoinArgv(argv)},
            {"status", ToString(r.status)},
            {"exit_code", r.exit_code},
            {"output", util::Ellipsize(util::Trim(r.out), 2000)},
            {"stderr", util::Ellipsize(util::Trim(r.err + r.error), 300)}};
  if (r.status == host::IoStatus::kOk) {
    if (argv[0] == "getfattr") {
      auto bytes = util::ParseInt(util::Trim(r.out));
      q["none"] = r.exit_code != 0 || !bytes || *bytes == 0;
      q["rows"] = bytes && *bytes > 0 ? json::array({{{"filesystem", best},
                                                      {"used", ""},
                                                      {"soft", ""},
                                                      {"hard", std::to_string(*bytes)},
                                                      {"limited", true}}})
                                      : json::array();
    } else {
      QuotaReport rep = ParseQuotaReport(r.out);
      json rows = json::array();
      for (const auto& row : rep.rows)
        rows.push_back({{"filesystem", row.filesystem},
                        {"used", row.used},
                        {"soft", row.soft},
                        {"hard", row.hard},
                        {"limited", row.limited}});
      q["none"] = rep.none;
      q["rows"] = rows;
    }
  }
  e.data["quota"] = q;
  return e;
}

// The running GPU metrics exporter's configuration: its command line and environment
// (/proc/<pid>/environ is root-only: permission-denied is recorded, not fatal), the systemd unit
// and defaults files that start it, and the HPC job-mapping directory when one is configured.
Evidence GpuExporterConfig(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"dir:/proc", "file:/proc/*/comm", "file:/proc/<dcgm-exporter>/cmdline",
               "file:/proc/<dcgm-exporter>/environ"};
  auto d = h.ListDir("/proc");
  if (MarkFailed(e, d.status, d.error)) return e;
  json procs = json::array();
  for (const auto& ent : d.entries) {
    if (!util::ParseInt(ent.name)) continue;
    auto c = h.ReadFile("/proc/" + ent.name + "/comm", 256);
    if (c.status != host::IoStatus::kOk || util::Trim(c.content).rfind("dcgm-exporter", 0) != 0) continue;
    json p = {{"pid", ent.name}, {"argv", json::array()}, {"env", json::object()}};
    auto cmd = h.ReadFile("/proc/" + ent.name + "/cmdline", 64 * 1024);
    if (cmd.status == host::IoStatus::kOk) {
      for (const auto& a : util::Split(cmd.content, '\0')) p["argv"].push_back(a);
    }
    auto env = h.ReadFile("/proc/" + ent.name + "/environ", 256 * 1024);
    p["environ_status"] = ToString(env.status);
    if (env.status == host::IoStatus::kOk) {
      for (const auto& kv : util::Split(env.content, '\0')) {
        if (kv.rfind("DCGM_", 0) == 0 && kv.find('=') != std::string::npos)
          p["env"][kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
      }
    }
    procs.push_back(p);
    if (procs.size() >= 4) break;
  }
  json units = json::array();
  for (const char* path : {"/etc/systemd/system/dcgm-exporter.service", "/lib/systemd/system/dcgm-exporter.service",
                           "/usr/lib/systemd/system/dcgm-exporter.service", "/etc/default/dcgm-exporter",
                           "/etc/sysconfig/dcgm-exporter"}) {
    e.sources.push_back(std::string("file:") + path);
    auto f = h.ReadFile(path, 64 * 1024);
    if (f.status != host::IoStatus::kOk) continue;
    json lines = json::array();
    for (const auto& line : util::SplitLines(f.content)) {
      std::string_view t = util::Trim(line);
      if (util::Contains(t, "ExecStart") || util::Contains(t, "DCGM_") || util::Contains(t, "--"))
        lines.push_back(std::string(t));
    }
    units.push_back({{"path", path}, {"lines", lines}});
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"processes", procs}, {"units", units}};
  return e;
}

// Prometheus alerting rules on this host: rule files under /etc/prometheus (and its rules
// directories), each with its count of "alert:" rules.
Evidence PrometheusRules(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  json files = json::array();
  int alerts = 0;
  for (const char* dir :
       {"/etc/prometheus", "/etc/prometheus/rules", "/etc/prometheus/rules.d", "/etc/prometheus/alerts"}) {
    e.sources.push_back(std::string("dir:") + dir);
    auto d = h.ListDir(dir);
    if (d.status != host::IoStatus::kOk) continue;
    for (const auto& ent : d.entries) {
      const std::string& n = ent.name;
      bool yaml = n.ends_with(".yml") || n.ends_with(".yaml") || n.ends_with(".rules");
      if (!yaml || ent.type == 'd' || files.size() >= 64) continue;
      auto f = h.ReadFile(std::string(dir) + "/" + n, 1u << 20);
      if (f.status != host::IoStatus::kOk) continue;
      int count = 0;
      for (const auto& line : util::SplitLines(f.content)) {
        std::string_view t = util::Trim(line);
        if (t.rfind("- alert:", 0) == 0 || t.rfind("alert:", 0) == 0) ++count;
      }
      if (count == 0) continue;
      alerts += count;
      files.push_back({{"path", std::string(dir) + "/" + n}, {"alerts", count}});
    }
  }
  e.data = {{"files", files}, {"alerts", alerts}};
  return e;
}

// SHARP (in-network reductions on InfiniBand): HPC-X's SHARP directory, the SHARP environment, the
// Aggregation Manager's configuration files and a running sharp_am / sharpd.
Evidence SharpInstall(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.sources = {"dir:/opt",
               "stat:/opt/hpcx*/sharp",
               "env:HPCX_SHARP_DIR",
               "env:SHARP_HOME",
               "stat:/etc/sharp/sharp_am_auth.conf",
               "stat:/etc/sharp/sharp_am.cfg"};
  json dirs = json::array();
  auto d = h.ListDir("/opt");
  if (d.status == host::IoStatus::kOk) {
    for (const auto& ent : d.entries) {
      if (ent.name.rfind("hpcx", 0) != 0) continue;
      for (const std::string sub : {"/sharp", "/sharp/lib/libsharp.so"}) {
        std::string path = "/opt/" + ent.name + sub;
        if (h.Stat(path).status == host::IoStatus::kOk) {
          dirs.push_back(path);
          break;
        }
      }
    }
  }
  json env = json::object();
  for (const char* k : {"HPCX_SHARP_DIR", "SHARP_HOME", "NCCL_COLLNET_ENABLE", "SHARP_COLL_ENABLE_SAT"}) {
    if (auto v = h.GetEnv(k)) env[k] = *v;
  }
  json am = json::array();
  for (const char* f : {"/etc/sharp/sharp_am_auth.conf", "/etc/sharp/sharp_am.cfg", "/etc/sharp/sharpd.cfg"}) {
    if (h.Stat(f).status == host::IoStatus::kOk) am.push_back(f);
  }
  e.data = {{"hpcx_sharp", dirs}, {"env", env}, {"config_files", am}};
  return e;
}

// What would capture a GPU Xid: the dcgm-exporter counters file (DCGM_FI_DEV_XID_ERRORS), and
// the agents that ship kernel logs or watch GPUs (read from the process list by the check).
Evidence XidMonitors(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  json counters = json::array();
  for (const char* p : {"/etc/dcgm-exporter/default-counters.csv", "/etc/dcgm-exporter/dcp-metrics-included.csv"}) {
    e.sources.push_back(std::string("file:") + p);
    auto f = h.ReadFile(p, 1u << 20);
    if (f.status != host::IoStatus::kOk) continue;
    bool xid = false;
    for (const auto& line : util::SplitLines(f.content)) {
      std::string t(util::Trim(line));
      if (!t.empty() && t[0] != '#' && util::Contains(t, "DCGM_FI_DEV_XID_ERRORS")) xid = true;
    }
    counters.push_back({{"path", p}, {"xid_errors", xid}});
  }
  e.data = {{"exporter_counters", counters}};
  return e;
}

}  // namespace

void RegisterServiceCollectors(std::vector<Collector>& out) {
  out.push_back({{"dcgm-exporter.version",
                  "dcgm-exporter binary version (<dcgm>-<exporter>)",
                  {"cmd:dcgm-exporter --version"},
                  ""},
                 DcgmExporter});
  out.push_back({{"qemu.virtio",
                  "QEMU virtio-serial ports in a guest; the host's qemu-system-x86 package",
                  {"dir:/dev/virtio-ports", "cmd:dpkg-query -W qemu-system-x86"},
                  ""},
                 QemuVirtio});
  out.push_back({{"xid.monitors",
                  "dcgm-exporter counters files (DCGM_FI_DEV_XID_ERRORS)",
                  {"file:/etc/dcgm-exporter/default-counters.csv", "file:/etc/dcgm-exporter/dcp-metrics-included.csv"},
                  ""},
                 XidMonitors});
  out.push_back({{"net.listeners",
                  "Listening TCP sockets and their bind scope",
                  {"file:/proc/net/tcp", "file:/proc/net/tcp6"},
                  ""},
                 Listeners});
  out.push_back({{"arm.smmu",
                  "aarch64 CPU identity, SMMU units and the CMDQV driver",
                  {"file:/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "dir:/sys/class/iommu",
                   "stat:/sys/module/tegra241_cmdqv"},
                  ""},
                 ArmSmmu});
  out.push_back({{"mpi.hpcx",
                  "HPC-X and MPI with UCX",
                  {"env:HPCX_DIR", "dir:/opt", "which:mpirun", "cmd:ompi_info --parsable"},
                  ""},
                 MpiHpcx});
  out.push_back({{"gpu-exporter.config",
                  "dcgm-exporter's command line, environment and unit files (HPC job mapping, Kubernetes mode)",
                  {"dir:/proc", "file:/proc/<pid>/cmdline", "file:/proc/<pid>/environ",
                   "file:/etc/systemd/system/dcgm-exporter.service"},
                  ""},
                 GpuExporterConfig});
  out.push_back({{"prometheus.rules",
                  "Prometheus alerting rule files under /etc/prometheus and their alert counts",
                  {"dir:/etc/prometheus", "dir:/etc/prometheus/rules", "dir:/etc/prometheus/rules.d"},
                  ""},
                 PrometheusRules});
  out.push_back({{"sharp.install",
                  "SHARP: HPC-X SHARP directory, SHARP environment, Aggregation Manager configuration",
                  {"dir:/opt", "env:HPCX_SHARP_DIR", "env:SHARP_HOME", "stat:/etc/sharp/sharp_am.cfg"},
                  ""},
                 SharpInstall});
  out.push_back(
      {{"storage.home-quota",
        "The per-user quota on the filesystem holding $HOME (quota, lfs quota, mmlsquota, CephFS xattr)",
        {"env:HOME", "file:/proc/self/mountinfo", "cmd:quota -s -w | lfs quota -u USER MOUNT | mmlsquota -u USER"},
        ""},
       HomeQuota});
  out.push_back({{"storage.shared-mounts",
                  "Network filesystems in fstab vs mounted, each stat'ed with a 2 s deadline",
                  {"file:/etc/fstab", "file:/proc/self/mountinfo", "cmd:stat -c %n <mount point>"},
                  ""},
                 SharedMounts});

  using namespace field;
  DeclareFields(
      out, "dcgm-exporter.version",
      {{"installed", Bool, "", "dcgm-exporter is on PATH"},
       {"raw", Str, "", "its --version output, cut at 200 characters"},
       {"dcgm_version", Str, "",
        "DCGM release it is built on (the <dcgm> of <dcgm>-<exporter>); null when it prints one version", kNull},
       {"exporter_version", Str, "", "exporter release (the <exporter> of <dcgm>-<exporter>)"}});
  DeclareFields(out, "qemu.virtio",
                {{"virtio_ports[]", Str, "", "entries of /dev/virtio-ports"},
                 {"virtio_ports_status", Str, "", "status of that directory read"},
                 {"qemu_package", Str, "", "installed qemu-system-x86 version; null when none", kNull}});
  DeclareFields(out, "xid.monitors",
                {{"exporter_counters[].path", Str, "", "dcgm-exporter counters file"},
                 {"exporter_counters[].xid_errors", Bool, "", "it exports DCGM_FI_DEV_XID_ERRORS"}});
  DeclareFields(out, "net.listeners",
                {{"listen[].port", Int, "", "TCP port in LISTEN state"},
                 {"listen[].ipv6", Bool, "", "from /proc/net/tcp6"},
                 {"listen[].scope", Str, "", "any, loopback or address"}});
  DeclareFields(out, "arm.smmu",
                {{"arch", Str, "", "kernel arch (aarch64); null when unread", kNull},
                 {"midr", Str, "", "cpu0 MIDR_EL1; null when unread", kNull},
                 {"iommu_units[]", Str, "", "entries of /sys/class/iommu"},
                 {"cmdqv_module", Bool, "", "the tegra241_cmdqv module is loaded"}});
  DeclareFields(out, "mpi.hpcx",
                {{"hpcx_dir_env", Str, "", "HPCX_DIR; null when unset", kNull},
                 {"hpcx_in_opt[]", Str, "", "/opt/hpcx* directories"},
                 {"mpirun", Bool, "", "mpirun is on PATH"},
                 {"ucx_pml", Bool, "", "ompi_info lists the UCX PML; null when ompi_info did not answer", kNull}});
  DeclareFields(out, "gpu-exporter.config",
                {{"processes[].pid", Str, "", "a dcgm-exporter process"},
                 {"processes[].argv[]", Str, "", "its command line"},
                 {"processes[].env{}", Str, "", "DCGM_* variable -> value in its environment"},
                 {"processes[].environ_status", Str, "", "status of the /proc/<pid>/environ read"},
                 {"units[].path", Str, "", "unit or defaults file"},
                 {"units[].lines[]", Str, "", "its ExecStart, DCGM_ and -- lines"}});
  DeclareFields(out, "prometheus.rules",
                {{"files[].path", Str, "", "rule file"},
                 {"files[].alerts", Int, "rules", "alert: rules in it"},
                 {"alerts", Int, "rules", "alert rules in all files"}});
  DeclareFields(out, "sharp.install",
                {{"hpcx_sharp[]", Str, "", "HPC-X SHARP directories or libraries"},
                 {"env{}", Str, "", "HPCX_SHARP_DIR, SHARP_HOME, NCCL_COLLNET_ENABLE, SHARP_COLL_ENABLE_SAT -> value"},
                 {"config_files[]", Str, "", "SHARP Aggregation Manager configuration files present"}});
  DeclareFields(out, "storage.home-quota",
                {{"home", Str, "", "$HOME; null when unset", kNull},
                 {"user", Str, "", "$USER (or $LOGNAME); null when unset", kNull},
                 {"mount_point", Str, "", "mount holding $HOME; null when $HOME is unset", kNull},
                 {"fstype", Str, "", "its filesystem type", kNull},
                 {"source", Str, "", "its mount source"},
                 {"quota.tool", Str, "", "quota, lfs, mmlsquota or getfattr"},
                 {"quota.command", Str, "", "command run"},
                 {"quota.status", Str, "", "its status"},
                 {"quota.exit_code", Int, "", "its exit status"},
                 {"quota.output", Str, "", "its output, cut at 2000 characters"},
                 {"quota.stderr", Str, "", "its standard error, cut"},
                 {"quota.none", Bool, "", "the tool says the user has no quota"},
                 {"quota.rows[].filesystem", Str, "", "filesystem of a quota row"},
                 {"quota.rows[].used", Str, "", "block usage as printed"},
                 {"quota.rows[].soft", Str, "", "soft quota as printed"},
                 {"quota.rows[].hard", Str, "", "hard limit as printed"},
                 {"quota.rows[].limited", Bool, "", "soft or hard > 0"}});
  DeclareFields(out, "storage.shared-mounts",
                {{"fstab_status", Str, "", "status of the /etc/fstab read"},
                 {"expected[].mount_point", Str, "", "network (or required) mount point of fstab"},
                 {"expected[].fstype", Str, "", "its filesystem type (\"required\" for --require-mount)"},
                 {"expected[].noauto", Bool, "", "noauto or x-systemd.automount"},
                 {"mounted[].mount_point", Str, "", "mounted network filesystem"},
                 {"mounted[].fstype", Str, "", "its type"},
                 {"mounted[].source", Str, "", "its source"},
                 {"mounted[].stat", Str, "", "\"ok\" or the status of stat with a 2 s deadline"}});
}

}  // namespace clustermax::collect

namespace clustermax::collect {
namespace {

using core::Evidence;
using core::EvidenceStatus;
using nlohmann::json;

// AMD GPUs (product names from sysfs), ROCm's version, and the facts that bind an amdgpu release
// to the loaded module: srcversion loaded vs installed, the module file, the package that owns
// it, and the repository origins of the installed amdgpu-dkms version.
Evidence AmdStack(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.sources = {"file:/sys/bus/pci/devices/*/product_name",
               "file:/opt/rocm/.info/version",
               "file:/sys/module/amdgpu/{version,srcversion}",
               "cmd:modinfo -F srcversion amdgpu",
               "cmd:modinfo -F filename amdgpu",
               "cmd:dpkg-query -S <module>",
               "cmd:apt-cache policy amdgpu-dkms"};
  json gpus = json::array();
  auto d = h.ListDir("/sys/bus/pci/devices");
  if (d.status == host::IoStatus::kOk) {
    for (const auto& ent : d.entries) {
      std::string base = "/sys/bus/pci/devices/" + ent.name;
      auto v = h.ReadFile(base + "/vendor", 64);
      auto c = h.ReadFile(base + "/class", 64);
      if (v.status != host::IoStatus::kOk || util::Trim(v.content) != "0x1002" || c.status != host::IoStatus::kOk)
        continue;
      auto cls = util::ParseHexOrDec(c.content).value_or(0) >> 8;
      if (cls != 0x0300 && cls != 0x0302 && cls != 0x0380 && cls != 0x1200) continue;
      auto p = h.ReadFile(base + "/product_name", 256);
      gpus.push_back({{"bdf", ent.name},
                      {"product_name",
                       p.status == host::IoStatus::kOk ? json(std::string(util::Trim(p.content))) : json(nullptr)}});
    }
  }
  e.data["gpus"] = gpus;
  if (gpus.empty()) return e;
  auto small = [&](const std::string& path) {
    auto r = h.ReadFile(path, 256);
    return r.status == host::IoStatus::kOk ? json(std::string(util::Trim(r.content))) : json(nullptr);
  };
  e.data["rocm_version"] = small("/opt/rocm/.info/version");
  e.data["loaded_version"] = small("/sys/module/amdgpu/version");
  e.data["loaded_srcversion"] = small("/sys/module/amdgpu/srcversion");
  auto run = [&](std::vector<std::string> argv) -> json {
    if (h.Which(argv[0]).status != host::IoStatus::kOk) return nullptr;
    auto r = h.Run(Command(std::move(argv), o, "amd.stack"));
    return r.status == host::IoStatus::kOk && r.exit_code == 0 ? json(std::string(util::Trim(r.out))) : json(nullptr);
  };
  e.data["installed_srcversion"] = run({"modinfo", "-F", "srcversion", "amdgpu"});
  json filename = run({"modinfo", "-F", "filename", "amdgpu"});
  e.data["module_file"] = filename;
  e.data["module_owner"] =
      filename.is_string() ? run({"dpkg-query", "-S", filename.get<std::string>()}) : json(nullptr);
  json policy = run({"apt-cache", "policy", "amdgpu-dkms"});
  // The installed version's block in `apt-cache policy`: "*** <version> <prio>" followed by origin lines.
  json origins = json::array();
  json installed = nullptr;
  if (policy.is_string()) {
    AptPolicy p = ParseAptCachePolicy(policy.get<std::string>());
    if (p.installed) installed = *p.installed;
    origins = p.origins;
  }
  e.data["dkms_installed"] = installed;
  e.data["dkms_origins"] = origins;
  return e;
}

Evidence DcgmDiagProbe(host::Host& h, const CollectOptions& o) {
  Evidence e;
  auto spec = Command({"dcgmi", "diag", "-r", "1", "-j"}, o, "probe.dcgm-diag");
  if (!o.timeouts.count("probe.dcgm-diag")) spec.timeout = std::chrono::seconds(90);
  e.sources.push_back(Source(spec));
  auto r = h.Run(spec);
  if (r.status != host::IoStatus::kOk) {
    FailFromCommand(e, r);
    return e;
  }
  std::string err;
  auto d = ParseDcgmDiagJson(r.out, &err);
  if (!d) {
    e.status = EvidenceStatus::kParseError;
    e.error =
        fmt::format("dcgmi diag exit {}: {}; {}", r.exit_code, err, util::Ellipsize(util::Trim(r.out + r.err), 300));
    return e;
  }
  json results = json::array();
  for (const auto& x : d->results) {
    results.push_back(
        {{"category", x.category}, {"test", x.test}, {"status", x.status}, {"gpu", x.gpu}, {"warnings", x.warnings}});
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"exit_code", r.exit_code}, {"results", results}, {"runtime_error", d->runtime_error}};
  return e;
}

// Runs this binary's `probe s3` (argv[0] /proc/self/exe: the same on every machine, so the
// recorded command replays anywhere); its JSON answer is the evidence. The endpoint comes from
// the environment (CLUSTERMAX_S3_ENDPOINT, _BUCKET, _REGION or AWS_REGION, _ADDRESSING; the CLI's
// --s3-* flags set them), read through the host so that a replay finds the same configuration.
// Credentials stay in the environment of the child, never in argv or the bundle.
Evidence S3Probe(host::Host& h, const CollectOptions& o) {
  Evidence e;
  auto env = [&](const char* k, const std::string& fallback) { return h.GetEnv(k).value_or(fallback); };
  std::string endpoint = env("CLUSTERMAX_S3_ENDPOINT", ""), bucket = env("CLUSTERMAX_S3_BUCKET", "");
  if (endpoint.empty() || bucket.empty()) {
    e.status = EvidenceStatus::kOk;
    e.data = {{"configured", false}};
    return e;
  }
  std::string region = env("CLUSTERMAX_S3_REGION", env("AWS_REGION", "us-east-1"));
  std::string addressing = env("CLUSTERMAX_S3_ADDRESSING", "path");
  auto spec = Command({"/proc/self/exe", "probe", "s3", "--endpoint", endpoint, "--bucket", bucket, "--region", region,
                       "--addressing", addressing},
                      o, "probe.s3");
  if (!o.timeouts.count("probe.s3")) spec.timeout = std::chrono::seconds(30);
  e.sources.push_back(Source(spec));
  auto r = h.Run(spec);
  if (r.status != host::IoStatus::kOk) {
    FailFromCommand(e, r);
    return e;
  }
  try {
    json j = json::parse(r.out);
    if (!j.contains("steps") || !j["steps"].is_array()) throw std::runtime_error("no steps");
    e.data = {{"configured", true}, {"probe", j}};
    e.status = EvidenceStatus::kOk;
  } catch (const std::exception& ex) {
    e.status = EvidenceStatus::kParseError;
    e.error = fmt::format("probe s3 exit {}: {}; {}", r.exit_code, ex.what(),
                          util::Ellipsize(util::Trim(r.out + r.err), 300));
  }
  return e;
}

}  // namespace

void RegisterAmdCollectors(std::vector<Collector>& out) {
  out.push_back({{"probe.s3",
                  "clustermax probe s3: HEAD bucket, PUT, GET, DELETE one object",
                  {"cmd:/proc/self/exe probe s3 --endpoint <url> --bucket <b>"},
                  "s3-probe"},
                 S3Probe});
  out.push_back({{"probe.dcgm-diag", "dcgmi diag -r 1 -j", {"cmd:dcgmi diag -r 1 -j"}, "dcgm-diag"}, DcgmDiagProbe});
  out.push_back(
      {{"amd.stack",
        "AMD GPUs, ROCm version and the amdgpu release bound to the loaded module",
        {"file:/sys/bus/pci/devices/*/product_name", "file:/opt/rocm/.info/version",
         "file:/sys/module/amdgpu/srcversion", "cmd:modinfo -F srcversion amdgpu", "cmd:apt-cache policy amdgpu-dkms"},
        ""},
       AmdStack});

  using namespace field;
  DeclareFields(out, "probe.s3",
                {{"configured", Bool, "", "an S3 endpoint and bucket are configured"},
                 {"probe.endpoint", Str, "", "endpoint URL, secrets redacted"},
                 {"probe.bucket", Str, "", "bucket"},
                 {"probe.addressing", Str, "", "path or virtual"},
                 {"probe.credentials", Str, "", "where the credentials came from"},
                 {"probe.reachable", Bool, "", "HEAD bucket got an HTTP answer"},
                 {"probe.steps[].op", Str, "", "HEAD bucket, PUT N B, GET (compared), DELETE"},
                 {"probe.steps[].ok", Bool, "", "the step succeeded"},
                 {"probe.steps[].status", Int, "", "HTTP status (0: none)"},
                 {"probe.steps[].ms", Num, "ms", "its duration"},
                 {"probe.steps[].error", Str, "", "what failed"}});
  DeclareFields(out, "probe.dcgm-diag",
                {{"exit_code", Int, "", "dcgmi diag's exit status"},
                 {"results[].category", Str, "", "diagnostic category"},
                 {"results[].test", Str, "", "test name"},
                 {"results[].status", Str, "", "pass, fail, warn, skip ... (lower case)"},
                 {"results[].gpu", Str, "", "GPU id(s); empty for system-wide results"},
                 {"results[].warnings[]", Str, "", "warning texts"},
                 {"runtime_error", Str, "", "dcgmi's runtime error, empty when none"}});
  DeclareFields(out, "amd.stack",
                {{"gpus[].bdf", Str, "", "PCI address of an AMD GPU"},
                 {"gpus[].product_name", Str, "", "its product name; null when unread", kNull},
                 {"rocm_version", Str, "", "/opt/rocm/.info/version; null when unread", kNull},
                 {"loaded_version", Str, "", "loaded amdgpu module version", kNull},
                 {"loaded_srcversion", Str, "", "loaded amdgpu srcversion", kNull},
                 {"installed_srcversion", Str, "", "modinfo's srcversion of the installed module", kNull},
                 {"module_file", Str, "", "modinfo's file name of amdgpu", kNull},
                 {"module_owner", Str, "", "dpkg-query -S of that file", kNull},
                 {"dkms_installed", Str, "", "installed amdgpu-dkms version (apt-cache policy)", kNull},
                 {"dkms_origins[]", Str, "", "repository URLs of the installed version"}});
}

}  // namespace clustermax::collect
