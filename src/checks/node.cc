// Node checks beyond the GPU snapshot: KVM and DPU exposure, BMC, CUDA/NCCL/ncu currency,
// container runtime wiring, access configuration, local NVMe, Xid history and the RDMA stack.
#include <fmt/format.h>

#include "checks/common.h"
#include "core/thresholds.h"
#include "core/xid_catalog.h"
#include "util/strings.h"
#include "util/time.h"
#include "util/version.h"

namespace clustermax::checks {
namespace {

using core::CheckInfo;
using core::Evidence;

bool Truthy(const json& v) { return v.is_string() && (v == "Y" || v == "y" || v == "1"); }

Finding Januscape(const JudgeContext& ctx) {
  const Evidence& cpu = ctx.Get("os.cpuinfo");
  const Evidence& kvm = ctx.Get("kvm.exposure");
  if (auto p = core::EvidenceProblem(cpu, "CPU flags")) return *p;
  if (auto p = core::EvidenceProblem(kvm, "KVM state")) return *p;
  const json vmx = cpu.data.value("vmx", json()), svm = cpu.data.value("svm", json());
  bool virt_flag = vmx == json(true) || svm == json(true);
  // "No vmx/svm" needs both flags read; one present flag is enough for the rest.
  if (!virt_flag && (!vmx.is_boolean() || !svm.is_boolean()))
    return core::Warn(Reason::kEvidenceError, "CPU virtualisation flags (vmx/svm) not read");
  if (!virt_flag) {
    // Without vmx/svm, hardware-assisted KVM cannot run; but a /dev/kvm that is present anyway is
    // a KVM without those flags (PVM-style nesting, or flags hidden from /proc/cpuinfo): not ruled out.
    if (kvm.data["dev_kvm"] == json(true)) {
      return core::Warn(Reason::kUnverified,
                        "the CPU exposes no vmx/svm flag, but /dev/kvm is present: a KVM without hardware "
                        "virtualisation flags (PVM, or flags hidden from /proc/cpuinfo) may still run guests")
          .Observed("no vmx/svm, /dev/kvm present")
          .Expected("no /dev/kvm, or nested virtualisation off");
    }
    if (kvm.data["dev_kvm"] == json(false)) {
      return core::Pass("the CPU exposes no vmx/svm flag and /dev/kvm is absent: nested virtualisation is impossible")
          .Observed("no vmx/svm, no /dev/kvm");
    }
    return core::Warn(Reason::kEvidenceError,
                      "the CPU exposes no vmx/svm flag, but whether /dev/kvm exists was not read")
        .Observed("no vmx/svm");
  }
  if (kvm.data["dev_kvm"] == json(false)) return core::Pass("/dev/kvm is absent").Observed("vmx/svm, no /dev/kvm");
  if (!kvm.data["nested"].is_string()) {
    if (kvm.data.value("nested_unreadable", false) || kvm.data["dev_kvm"].is_null()) {
      return core::Warn(Reason::kEvidenceError, "KVM nested parameter or /dev/kvm unreadable");
    }
    return core::Pass("no KVM module exposes nested virtualisation").Observed("/dev/kvm present, nested unset");
  }
  if (!Truthy(kvm.data["nested"]))
    return core::Pass("nested virtualisation is disabled").Observed("nested=" + kvm.data["nested"].get<std::string>());
  bool guest = ctx.target() == core::Target::kVm || cpu.data.value("hypervisor", false);
  if (guest) {
    return core::Warn(Reason::kAttestationRequired,
                      "vmx/svm, /dev/kvm and nested virtualisation are all exposed to this guest; the vulnerable "
                      "kernel is the hypervisor's")
        .Observed("all three exposure facts present (guest)");
  }
  const Evidence& os = ctx.Get("os.release");
  const Evidence& kernel = ctx.Get("os.kernel");
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "ubuntuNoble.linuxJanuscape", problem);
  if (!c) return *problem;
  if (!os.ok() || !kernel.ok() || os.data.value("codename", "") != c->release) {
    return core::Warn(Reason::kUnverified,
                      "nested virtualisation exposed on bare metal; the kernel fix can only be graded on Ubuntu Noble")
        .Observed("all three exposure facts present");
  }
  std::string rel = kernel.data["release"];
  auto cmp = core::Compare(*c, {.version = rel, .release = c->release}, ctx.now(), ctx.minimums().grace_period_days);
  return FromComparison(cmp, "kernel (nested KVM exposed)", rel);
}

Finding Vmscape(const JudgeContext& ctx) {
  const Evidence& kvm = ctx.Get("kvm.exposure");
  const Evidence& procs = ctx.Get("os.processes");
  if (auto p = core::EvidenceProblem(kvm, "KVM state")) return *p;
  if (kvm.data["arch"].is_string() && kvm.data["arch"] != "x86_64")
    return core::Skip(Reason::kNotApplicable, "not x86_64");
  bool guest = ctx.target() == core::Target::kVm;
  if (guest)
    return core::Warn(Reason::kAttestationRequired,
                      "x86_64 guest: the hypervisor host must carry the VMScape mitigation");
  const json& state = kvm.data["vmscape"];
  bool runs_guests = Running(procs, "qemu");
  if (state.is_string()) {
    std::string s = state;
    if (s.rfind("Vulnerable", 0) == 0 && runs_guests) {
      return core::Fail(Severity::kVersion, "this KVM host runs guests and the kernel reports VMScape as vulnerable")
          .Observed(s);
    }
    if (s.rfind("Vulnerable", 0) == 0)
      return core::Skip(Reason::kNotApplicable, "kernel reports vulnerable, but no KVM guests run here").Observed(s);
    return core::Pass("the kernel reports: " + s).Observed(s).Expected("Mitigation or Not affected");
  }
  if (!runs_guests) return core::Skip(Reason::kNotApplicable, "bare metal not running KVM guests");
  return core::Warn(Reason::kUnverified, "KVM guests run here but the kernel does not report the VMScape state");
}

Finding DpuHostIsolation(const JudgeContext& ctx) {
  const Evidence& pci = ctx.Get("pci.devices");
  const Evidence& dpu = ctx.Get("dpu.rshim");
  if (auto p = core::EvidenceProblem(pci, "PCI inventory")) return *p;
  int bluefield = CountBlueField(pci);
  if (bluefield == 0) return core::Skip(Reason::kNotApplicable, "no BlueField in the PCI inventory");
  if (auto p = core::EvidenceProblem(dpu, "RShim device nodes")) return *p;
  std::vector<std::string> exposed;
  for (const auto& r : dpu.data["rshim_devices"]) exposed.push_back(r.get<std::string>());
  if (dpu.data["tmfifo_net0"] == json(true))
    exposed.push_back("tmfifo_net0 (" + dpu.data.value("tmfifo_operstate", json("?")).dump() + ")");
  Finding f = !exposed.empty()
                  ? core::Fail(Severity::kConfig, "the host can reach the DPU control plane").Details(exposed)
                  : core::Warn(Reason::kAttestationRequired,
                               "no RShim device or tmfifo interface on the host; INTERNAL_CPU_RSHIM "
                               "needs mlxconfig with root to confirm");
  f.observed = fmt::format("{} BlueField function(s), {} exposure(s)", bluefield, exposed.size());
  f.expected = "no /dev/rshim*, no tmfifo_net0";
  return f;
}

Finding BmcIpmi(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("bmc.ipmi");
  if (auto p = core::EvidenceProblem(e, "IPMI device nodes")) return *p;
  if (!e.data.value("devices", json()).is_array())
    return core::Warn(Reason::kEvidenceError, "IPMI device node list not read");
  if (e.data["devices"].empty()) {
    if (!e.data.value("device_check_complete", false))
      return core::Warn(Reason::kEvidenceError, "IPMI device nodes could not be checked");
    return core::Pass("no in-band IPMI device node").Observed("none").Expected("no in-band BMC access");
  }
  std::string devs = e.data["devices"].dump();
  const json& t = e.data["ipmitool"];
  if (!t.is_object())
    return core::Warn(Reason::kUnverified, "IPMI device node present but ipmitool is not installed to test it")
        .Observed(devs);
  if (t["status"] == "ok" && t["exit_code"] == 0) {
    return core::Fail(Severity::kConfig,
                      "an in-band IPMI command succeeds from this node: the tenant can talk to the BMC")
        .Observed(devs)
        .Detail(t.value("output", std::string()));
  }
  return core::Pass("IPMI device present but in-band commands are refused")
      .Observed(devs)
      .Detail(t.value("output", std::string()));
}

Finding CudaToolkitPresent(const JudgeContext& ctx) {
  // A toolkit that is installed is graded as present (cuda-toolkit-security grades the same
  // toolkit, GPU or not); only its absence is excused where no NVIDIA GPU needs it.
  const Evidence& e = ctx.Get("cuda.toolkits");
  if (!e.ok() || e.data["toolkits"].empty()) {
    if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  }
  if (auto p = core::EvidenceProblem(e, "CUDA toolkit inventory")) return *p;
  if (e.data["toolkits"].empty())
    return core::Fail(Severity::kMissing, "no CUDA toolkit (nvcc) on this node")
        .Observed("absent")
        .Expected("nvcc present");
  return core::Pass(fmt::format("{} CUDA toolkit(s); default {}", e.data["toolkits"].size(), e.data["default"].dump()))
      .Observed(e.data["default"].is_string() ? e.data["default"].get<std::string>() : "no default on PATH")
      .Expected("nvcc present");
}

Finding CudaDriverCompat(const JudgeContext& ctx) {
  const Evidence& gpu = ctx.Get("gpu.inventory");
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), gpu)) return *skip;
  const Evidence& tk = ctx.Get("cuda.toolkits");
  if (auto p = core::EvidenceProblem(tk, "CUDA toolkit inventory")) return *p;
  std::string toolkit;
  for (const auto& t : tk.data["toolkits"]) {
    if (t.value("default", false) && t["version"].is_string()) toolkit = t["version"];
  }
  if (tk.data["toolkits"].empty()) return core::Skip(Reason::kPrerequisiteMissing, "no CUDA toolkit installed");
  if (toolkit.empty()) return core::Warn(Reason::kEvidenceError, "default toolkit version unreadable");
  if (auto p = core::EvidenceProblem(gpu, "driver CUDA capability")) return *p;
  if (!gpu.data["cuda_driver_version"].is_string())
    return core::Warn(Reason::kEvidenceError, "driver CUDA capability unreadable");
  std::string driver = gpu.data["cuda_driver_version"];
  auto a = util::ParseNumericVersion(toolkit), b = util::ParseNumericVersion(driver);
  if (!a || !b) return core::Warn(Reason::kEvidenceError, "unparsable versions");
  Finding f =
      *a <= *b ? core::Pass(fmt::format("toolkit {} runs on a driver supporting CUDA {}", toolkit, driver))
               : core::Warn(Reason::kConfig,
                            fmt::format("toolkit {} is newer than the driver's CUDA {} (needs forward compatibility)",
                                        toolkit, driver));
  return f.Observed("toolkit " + toolkit + ", driver CUDA " + driver).Expected("toolkit <= driver CUDA version");
}

Finding NcclVersionCurrent(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("nccl.libraries");
  if (auto p = core::EvidenceProblem(e, "NCCL library search")) return *p;
  if (!e.data.value("versions", json()).is_array())
    return core::Warn(Reason::kEvidenceError, "NCCL library version list not read");
  std::string version;
  if (!e.data["versions"].empty())
    version = e.data["versions"][0]["version"];
  else if (e.data["header"].is_object())
    version = e.data["header"]["version"];
  if (e.data["libraries"].empty())
    return core::Skip(Reason::kPrerequisiteMissing, "NCCL not installed (graded by nccl-installed)");
  if (version.empty()) return core::Warn(Reason::kEvidenceError, "NCCL version unreadable");
  std::string floor = core::EmbeddedThresholds().data()["nccl"]["recommended_min"];
  bool ok = *util::ParseNumericVersion(version) >= *util::ParseNumericVersion(floor);
  Finding f = ok ? core::Pass(fmt::format("NCCL {} >= {}", version, floor))
                 : core::Warn(Reason::kConfig, fmt::format("NCCL {} is older than {}", version, floor));
  return f.Observed(version).Expected(">= " + floor);
}

Finding NcuProfiling(const JudgeContext& ctx) {
  const Evidence& gpu = ctx.Get("gpu.inventory");
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), gpu)) return *skip;
  const Evidence& e = ctx.Get("ncu.binary");
  if (NotInstalled(e))
    return core::Fail(Severity::kMissing, "Nsight Compute (ncu) is not installed")
        .Observed("absent")
        .Expected("installed");
  if (auto p = core::EvidenceProblem(e, "ncu --version")) return *p;
  if (!e.data["version"].is_string())
    return core::Warn(Reason::kEvidenceError, "ncu found but its version is unreadable");
  std::string v = e.data["version"];
  std::string name =
      gpu.ok() && !gpu.data.value("devices", json::array()).empty() && gpu.data["devices"][0]["name"].is_string()
          ? gpu.data["devices"][0]["name"].get<std::string>()
          : "";
  std::string need;
  for (const auto& m : core::EmbeddedThresholds().data()["cuda_arch_minimums"]) {
    if (!name.empty() && name.find(m["pattern"].get<std::string>()) != std::string::npos) {
      need = m["ncu"];
      break;
    }
  }
  if (!need.empty() && *util::ParseNumericVersion(v) < *util::ParseNumericVersion(need)) {
    return core::Warn(Reason::kConfig, fmt::format("ncu {} is older than {} needs ({})", v, name, need))
        .Observed(v)
        .Expected(">= " + need);
  }
  return core::Pass("ncu " + v + " installed").Observed(v).Expected(need.empty() ? "installed" : ">= " + need);
}

Finding NcuCounters(const JudgeContext& ctx) {
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  const Evidence& ncu = ctx.Get("ncu.binary");
  if (NotInstalled(ncu))
    return core::Skip(Reason::kPrerequisiteMissing, "ncu is not installed (graded by ncu-profiling)");
  const Evidence& e = ctx.Get("nvidia.params");
  if (auto p = core::EvidenceProblem(e, "NVIDIA driver parameters")) return *p;
  const json& admin_only = e.data["params"].value("RmProfilingAdminOnly", json());
  if (admin_only.is_string()) {
    std::string v = admin_only;
    Finding f = v == "0" ? core::Pass("GPU performance counters are open to users")
                         : core::Warn(Reason::kConfig,
                                      "GPU performance counters are restricted to admins (ERR_NVGPUCTRPERM for users)");
    return f.Observed("RmProfilingAdminOnly: " + v).Expected("RmProfilingAdminOnly: 0");
  }
  for (const auto& o : e.data["modprobe_options"]) {
    std::string line = o["line"];
    auto pos = line.find("NVreg_RestrictProfilingToAdminUsers=");
    if (pos == std::string::npos) continue;
    char v = line[pos + std::string("NVreg_RestrictProfilingToAdminUsers=").size()];
    Finding f = v == '0' ? core::Pass("modprobe option opens GPU counters to users")
                         : core::Warn(Reason::kConfig, "modprobe option restricts GPU counters to admins");
    return f.Observed(line).Expected("NVreg_RestrictProfilingToAdminUsers=0").Detail(o["file"].get<std::string>());
  }
  return core::Skip(Reason::kUnverified, "driver parameters unreadable and no modprobe option set");
}

Finding ContainerToolkit(const JudgeContext& ctx) {
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  const Evidence& rt = ctx.Get("container.runtimes");
  const Evidence& tk = ctx.Get("container-toolkit.version");
  if (auto p = core::EvidenceProblem(rt, "container runtimes")) return *p;
  bool engine = false;
  for (const char* e : {"docker", "containerd", "podman", "crio"}) engine |= rt.data["engines"].value(e, false);
  if (!engine) return core::Skip(Reason::kNotApplicable, "no container engine on this node");
  if (tk.ok() && tk.data.value("installed", false))
    return core::Pass("NVIDIA Container Toolkit installed").Observed(tk.data["version"].dump());
  bool wired = rt.data["docker_nvidia_runtime"] == json(true) || rt.data["containerd_nvidia_runtime"] == json(true) ||
               !rt.data["cdi_specs"].empty();
  if (wired) return core::Pass("a GPU runtime or CDI spec is configured").Observed(rt.data["cdi_specs"].dump());
  if (auto p = core::EvidenceProblem(tk, "NVIDIA Container Toolkit")) return *p;
  return core::Fail(Severity::kMissing,
                    "a container engine runs here without the NVIDIA Container Toolkit, a GPU runtime or a CDI spec")
      .Observed("absent")
      .Expected("toolkit, nvidia runtime or CDI spec");
}

Finding EssentialTools(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("tools.essential");
  if (auto p = core::EvidenceProblem(e, "tool lookup")) return *p;
  std::vector<std::string> missing;
  for (const auto& [tool, present] : e.data["essential_tools"].items()) {
    if (!present.get<bool>()) missing.push_back(tool);
  }
  bool pm = false;
  for (const auto& [tool, present] : e.data["package_managers"].items()) pm |= present.get<bool>();
  if (!pm) missing.push_back("a package manager (apt, dnf, yum, zypper)");
  Finding f = missing.empty() ? core::Pass("every essential tool is on PATH")
                              : core::Warn(Reason::kConfig, fmt::format("missing: {}", fmt::join(missing, ", ")));
  return f.Observed(fmt::format("{} missing", missing.size())).Expected("all present");
}

Finding SshPubkeyAuth(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("ssh.sshd-config");
  if (auto p = core::EvidenceProblem(e, "sshd configuration")) return *p;
  if (!e.data.value("present", false)) return core::Skip(Reason::kNotApplicable, "no sshd configuration on this node");
  const json& s = e.data["settings"];
  std::string pubkey = s.value("pubkeyauthentication", "yes (default)");
  std::string password = s.value("passwordauthentication", "yes (default)");
  Finding f = pubkey.rfind("no", 0) == 0     ? core::Warn(Reason::kConfig, "public-key authentication is off")
              : password.rfind("no", 0) != 0 ? core::Warn(Reason::kConfig, "password authentication is on")
                                             : core::Pass("public-key authentication on, passwords off");
  return f.Observed(fmt::format("PubkeyAuthentication {}, PasswordAuthentication {}", pubkey, password))
      .Expected("PubkeyAuthentication yes, PasswordAuthentication no")
      .Details(e.data["files"].get<std::vector<std::string>>());
}

Finding ExternalIdp(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("identity.providers");
  const Evidence& procs = ctx.Get("os.processes");
  if (auto p = core::EvidenceProblem(e, "identity configuration")) return *p;
  std::vector<std::string> found;
  if (procs.ok()) {
    for (const auto& n : procs.data["names"]) {
      if (n == "sssd") found.push_back("sssd running");
    }
  }
  if (e.data["nsswitch_passwd"].is_array()) {
    for (const auto& src : e.data["nsswitch_passwd"]) {
      if (src == "sss" || src == "ldap") found.push_back("nsswitch passwd: " + src.get<std::string>());
    }
  }
  for (const auto& m : e.data["pam_modules"]) found.push_back("PAM " + m.get<std::string>());
  for (const auto& p : e.data["sssd_id_providers"]) found.push_back("sssd id_provider " + p.get<std::string>());
  Finding f = !found.empty()
                  ? core::Pass("external identity integration detected").Details(found)
                  : core::Warn(Reason::kConfig, "no external identity provider (sssd, LDAP, OIDC/OAuth PAM) detected");
  return f.Observed(found.empty() ? "local accounts only" : found.front()).Expected("an external IdP");
}

Finding LocalNvme(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("block.devices");
  if (auto p = core::EvidenceProblem(e, "block devices")) return *p;
  std::vector<std::string> nvme, mounted;
  double total = 0;
  for (const auto& d : e.data["disks"]) {
    if (!d.value("nvme", false)) continue;
    nvme.push_back(d.value("name", ""));
    total += std::stod(d.value("size", std::string("0")));
  }
  for (const auto& m : e.data["mounts"]) {
    if (m["source"].get<std::string>().rfind("/dev/nvme", 0) == 0 ||
        m["source"].get<std::string>().rfind("/dev/md", 0) == 0) {
      mounted.push_back(m["mount_point"].get<std::string>() + " (" + m["source"].get<std::string>() + ")");
    }
  }
  Finding f =
      nvme.empty() ? core::Warn(Reason::kConfig, "no local NVMe drive")
      : mounted.empty()
          ? core::Warn(Reason::kConfig, fmt::format("{} NVMe drive(s) present but none mounted", nvme.size()))
          : core::Pass(fmt::format("{} NVMe drive(s), {:.1f} TB, mounted", nvme.size(), total / 1e12)).Details(mounted);
  return f.Observed(fmt::format("{} NVMe, {:.1f} TB", nvme.size(), total / 1e12))
      .Expected("local NVMe mounted as scratch");
}

// Every GPU event of the kernel log graded by NVIDIA's catalog (data/xid-catalog.json): hardware
// and reset classes FAIL (the node watch list of data/node-thresholds.json, e.g. a contained ECC
// error, WARNs), a code the catalog does not know WARNs (unknown is never clean), application and
// informational events are listed. Counts are exact and the 7-day window applies to every source;
// lines without a date (plain dmesg) count as recent.
Finding XidHistory(const JudgeContext& ctx) {
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  const Evidence& e = ctx.Get("kernel.xid");
  if (auto p = core::EvidenceProblem(e, "kernel log")) return *p;
  constexpr int kWindowDays = 7;
  const auto& catalog = core::EmbeddedXidCatalog();
  const json& watch = core::EmbeddedThresholds().data()["xid"]["watch"];
  std::map<std::string, long> counts;
  long undated = 0, unread_events = 0;
  if (e.data.contains("counts_by_day")) {
    for (const auto& [day, keys] : e.data["counts_by_day"].items()) {
      bool in_window = day == "undated";
      if (!in_window) {
        auto start = util::ParseRfc3339(day);
        in_window = !start || util::DaysBetween(*start, ctx.now()) < kWindowDays + 1;  // an unparsable day counts
      }
      if (!in_window) continue;
      for (const auto& [key, n] : keys.items()) {
        counts[key] += n.get<long>();
        if (day == "undated") undated += n.get<long>();
      }
    }
  } else {
    // A bundle recorded before counts were kept: its event list, as read.
    for (const auto& ev : e.data.value("events", json::array())) {
      if (!ev.is_object() || !ev.value("kind", json()).is_string() || !ev.value("code", json()).is_number_integer()) {
        ++unread_events;  // a listed event not understood: never counted as no event
        continue;
      }
      counts[fmt::format("{} {}", ev["kind"].get<std::string>(), ev["code"].get<int>())]++;
    }
  }
  std::vector<std::string> fail, warn, info;
  for (const auto& [key, n] : counts) {
    std::string severity, name, action;
    bool known = false;
    if (key.rfind("message: ", 0) == 0) {
      if (const auto* m = catalog.Message(key.substr(9))) known = true, severity = m->severity, name = m->kind;
    } else {
      auto space = key.find(' ');
      auto code = util::ParseInt(key.substr(space + 1));
      const core::XidEntry* x = !code                       ? nullptr
                                : key.rfind("SXid", 0) == 0 ? catalog.Sxid(static_cast<int>(*code))
                                                            : catalog.Xid(static_cast<int>(*code));
      if (x) known = true, severity = x->severity, name = x->name, action = x->action;
      if (x && key.rfind("Xid", 0) == 0 && severity == "hardware" &&
          std::find(watch.begin(), watch.end(), *code) != watch.end())
        severity = "watch";
    }
    std::string line =
        fmt::format("{} x{}: {}", key, n,
                    !known ? "not in NVIDIA's catalog"
                           : fmt::format("{} ({}{})", name, severity, action.empty() ? "" : "; " + action));
    if (!known)
      warn.push_back(line);
    else if (severity == "hardware" || severity == "reset")
      fail.push_back(line);
    else if (severity == "watch" || (severity == "application" && key.rfind("message: ", 0) == 0))
      warn.push_back(line);
    else
      info.push_back(line);
  }
  long events = 0;
  for (const auto& [k, n] : counts) events += n;
  Finding f =
      !fail.empty() ? core::Fail(Severity::kConfig, fmt::format("GPU fault in the kernel log within {} days: {}",
                                                                kWindowDays, fail.front()))
      : !warn.empty()
          ? core::Warn(Reason::kConfig, fmt::format("GPU event to watch within {} days: {}", kWindowDays, warn.front()))
      : unread_events > 0
          ? core::Warn(Reason::kUnverified, fmt::format("{} listed GPU event(s) could not be read", unread_events))
          : core::Pass(fmt::format("no hardware or reset-class GPU event in {} days ({} other event(s))", kWindowDays,
                                   events));
  f.observed =
      fmt::format("{} GPU event(s) in {} days from {}{}{}", events, kWindowDays, e.data.value("source", std::string()),
                  undated ? fmt::format(", {} undated (counted)", undated) : "",
                  e.data.value("truncated", false)
                      ? fmt::format("; newest {} of {} listed", e.data["events"].size(), e.data.value("total", 0L))
                      : "");
  f.expected = "no hardware or reset-class Xid/SXid, no GPU-loss message (" + catalog.source() + ")";
  f.Details(fail).Details(warn).Details(info);
  size_t shown = 0;
  for (const auto& ev : e.data.value("events", json::array())) {
    if (!ev.is_object() || !ev.value("line", json()).is_string()) continue;  // a listing, judged by nothing
    if (shown++ >= 5) break;
    f.details.push_back("newest: " + ev["line"].get<std::string>());
  }
  return f;
}

Finding IbPortHealth(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("rdma.devices");
  if (auto p = core::EvidenceProblem(e, "RDMA devices")) return *p;
  // A rail that is down FAILs; a port that is not a rail (a bond, a VF, slow Ethernet: the one rule
  // of ClassifyRdmaPorts) that is down is a WARN naming why it is not a rail, never a fabric FAIL.
  std::vector<std::string> down, side_down, unread, lines;
  auto classes = ClassifyRdmaPorts(e.data);
  for (const auto& c : classes) {
    const json& p = *c.port;
    std::string state = p["state"].is_string() ? p["state"].get<std::string>() : "?";
    std::string phys = p["phys_state"].is_string() ? p["phys_state"].get<std::string>() : "?";
    lines.push_back(fmt::format("{}: {}, {}, {}, {}{}", c.name, state, phys,
                                p["rate"].is_string() ? p["rate"].get<std::string>() : "?",
                                p["link_layer"].is_string() ? p["link_layer"].get<std::string>() : "?",
                                c.rail ? "" : " (not a rail: " + c.why_not + ")"));
    // A state sysfs did not give is unread, not down.
    if (!p["state"].is_string() || !p["phys_state"].is_string()) {
      unread.push_back(c.name + ": " + state + ", " + phys);
    } else if (state.find("ACTIVE") == std::string::npos || phys.find("LinkUp") == std::string::npos) {
      (c.rail ? down : side_down)
          .push_back(c.name + ": " + state + ", " + phys + (c.rail ? "" : " (not a rail: " + c.because + ")"));
    }
  }
  size_t ports = classes.size();
  if (ports == 0) return core::Skip(Reason::kNotApplicable, "no InfiniBand or RoCE port");
  Finding f = !down.empty()
                  ? core::Fail(Severity::kConfig, fmt::format("{} of {} RDMA port(s) not active", down.size(), ports))
                        .Details(down)
              : !unread.empty()
                  ? core::Warn(Reason::kEvidenceError,
                               fmt::format("the state of {} of {} RDMA port(s) was not read", unread.size(), ports))
                        .Details(unread)
              : !side_down.empty()
                  ? core::Warn(Reason::kConfig,
                               fmt::format("{} RDMA port(s) that are not fabric rails are not active; every rail is",
                                           side_down.size()))
                        .Details(side_down)
                  : core::Pass(fmt::format("all {} RDMA port(s) active and linked up", ports));
  return f.Expected("4: ACTIVE, 5: LinkUp").Details(lines);
}

Finding RdmaDriverStack(const JudgeContext& ctx) {
  const Evidence& pci = ctx.Get("pci.devices");
  const Evidence& dev = ctx.Get("rdma.devices");
  const Evidence& stack = ctx.Get("rdma.stack");
  if (auto p = core::EvidenceProblem(pci, "PCI inventory")) return *p;
  int nics = 0;
  for (const auto& d : pci.data["devices"]) nics += d.value("rdma_nic", false) ? 1 : 0;
  if (nics == 0) return core::Skip(Reason::kNotApplicable, "no RDMA NIC in the PCI inventory");
  if (auto p = core::EvidenceProblem(stack, "RDMA stack")) return *p;
  bool driver = stack.data["mlx5_core"] == json(true) || stack.data["efa"] == json(true);
  // No /sys/class/infiniband is no device; one that could not be listed is unknown, never none.
  if (driver && !dev.ok() && dev.status != core::EvidenceStatus::kNotFound)
    return *core::EvidenceProblem(dev, "RDMA devices");
  int devices = dev.ok() ? static_cast<int>(dev.data["devices"].size()) : 0;
  std::vector<std::string> missing_tools;
  for (const auto& [tool, present] : stack.data["tools"].items()) {
    if (!present.get<bool>() && tool != "ofed_info") missing_tools.push_back(tool);
  }
  Finding f =
      !driver || devices == 0
          ? core::Fail(Severity::kMissing, fmt::format("{} RDMA NIC function(s) but no RDMA driver/device", nics))
      : !missing_tools.empty()
          ? core::Warn(Reason::kConfig, fmt::format("RDMA utilities missing: {}", fmt::join(missing_tools, ", ")))
          : core::Pass(fmt::format("{} RDMA device(s) with driver and utilities", devices));
  f.observed = fmt::format("{} NIC function(s), {} RDMA device(s), {}", nics, devices,
                           stack.data.value("ofed", json("inbox rdma-core")).get<std::string>());
  f.expected = "driver loaded, devices and utilities present";
  return f;
}

}  // namespace

void RegisterNodeChecks(core::Registry& r) {
  using core::kC;
  using core::kK;
  using core::kS;
  using core::kSA;
  using core::kV;
  r.Add(
      {CheckInfo{
           .id = "security-januscape",
           .category = "isolation",
           .title = "Nested KVM not exposed on an unpatched kernel (Januscape)",
           .rationale = "CVE-2026-53359: a guest with nested virtualisation can escape on unpatched KVM hosts.",
           .remediation =
               "Disable nested virtualisation and /dev/kvm for tenants until the kernel is patched (Noble >= 6.8.0-137).",
           .criterion = "security-januscape",
           .references = {{"USN-8630-1", "https://ubuntu.com/security/notices/USN-8630-1"},
                          {"CVE-2026-53359", "https://www.cve.org/CVERecord?id=CVE-2026-53359"}},
           .targets = kS | kK | kSA | kV,
           .needs = {"os.cpuinfo", "kvm.exposure", "os.release", "os.kernel"},
           .reproduce = "grep -cE 'vmx|svm' /proc/cpuinfo; ls -l /dev/kvm; cat /sys/module/kvm_*/parameters/nested"},
       Januscape});
  r.Add({CheckInfo{
             .id = "security-vmscape",
             .category = "isolation",
             .title = "KVM hosts mitigate VMScape",
             .rationale =
                 "CVE-2025-40300: a guest can leak host memory through branch prediction on unmitigated x86 KVM hosts.",
             .remediation = "Run a kernel with the VMScape mitigation (Noble >= 6.8.0-87.88).",
             .criterion = "security-vmscape",
             .references = {{"USN-7861-1", "https://ubuntu.com/security/notices/USN-7861-1"}},
             .targets = kS | kK | kSA | kV,
             .needs = {"kvm.exposure", "os.processes"},
             .reproduce = "cat /sys/devices/system/cpu/vulnerabilities/vmscape"},
         Vmscape});
  r.Add({CheckInfo{
             .id = "security-dpu-host-isolation",
             .category = "isolation",
             .title = "The host cannot reach the BlueField DPU control plane",
             .rationale =
                 "RShim or tmfifo access from the host lets a tenant reflash or control the DPU that isolates it.",
             .remediation =
                 "mlxprivhost -d <dev> r --disable_rshim --disable_tracer --disable_counter_rd --disable_port_owner",
             .criterion = "security-dpu-host-isolation",
             .targets = kS | kK | kSA,
             .needs = {"pci.devices", "dpu.rshim"},
             .reproduce = "ls /dev/rshim*; ip link show tmfifo_net0"},
         DpuHostIsolation});
  r.Add(
      {CheckInfo{.id = "security-bmc-ipmi",
                 .category = "isolation",
                 .title = "No in-band BMC access from the tenant",
                 .rationale = "In-band IPMI lets a tenant change firmware settings, power state and users of the BMC.",
                 .remediation = "Remove the ipmi_si/ipmi_devintf modules or block in-band access on the BMC.",
                 .criterion = "security-bmc-ipmi",
                 .targets = kS | kK | kSA | kV,
                 .needs = {"bmc.ipmi"},
                 .reproduce = "ls /dev/ipmi*; ipmitool mc info"},
       BmcIpmi});
  r.Add({CheckInfo{.id = "cuda-toolkit-present",
                   .category = "software",
                   .title = "A CUDA toolkit (nvcc) is installed",
                   .rationale =
                       "Users build extensions and kernels on the node; without nvcc every job ships its own toolkit.",
                   .remediation = "Install a current CUDA toolkit under /usr/local/cuda.",
                   .criterion = "hpc-sdk",
                   .targets = kS | kSA | kV | kC,
                   .needs = {"pci.devices", "gpu.inventory", "cuda.toolkits"},
                   .reproduce = "nvcc --version"},
         CudaToolkitPresent});
  r.Add(
      {CheckInfo{.id = "cuda-driver-compat",
                 .category = "software",
                 .title = "The default CUDA toolkit runs on the installed driver",
                 .rationale =
                     "A toolkit newer than the driver's CUDA version fails at run time without forward compatibility.",
                 .remediation = "Upgrade the driver or install the cuda-compat package matching the toolkit.",
                 .targets = kS | kSA | kV | kC,
                 .needs = {"pci.devices", "gpu.inventory", "cuda.toolkits"},
                 .reproduce = "nvcc --version; nvidia-smi | head -4"},
       CudaDriverCompat});
  r.Add({CheckInfo{.id = "nccl-version-current",
                   .category = "software",
                   .title = "NCCL at or above the recommended floor",
                   .rationale = "Older NCCL releases miss fabric and topology fixes that cost collective bandwidth.",
                   .remediation = "Install a current libnccl2.",
                   .criterion = "nccl-installed",
                   .targets = kS | kK | kSA | kV | kC,
                   .needs = {"nccl.libraries"},
                   .reproduce = "ldconfig -p | grep libnccl"},
         NcclVersionCurrent});
  r.Add({CheckInfo{.id = "ncu-profiling",
                   .category = "software",
                   .title = "Nsight Compute installed and new enough for the GPU",
                   .rationale = "Kernel-level profiling is how users find why a kernel is slow.",
                   .remediation = "Install Nsight Compute (part of the CUDA toolkit or standalone).",
                   .criterion = "ncu-profiling",
                   .targets = kS | kK | kSA | kV | kC,
                   .needs = {"pci.devices", "gpu.inventory", "ncu.binary"},
                   .reproduce = "ncu --version"},
         NcuProfiling});
  r.Add(
      {CheckInfo{.id = "ncu-profiling-counters",
                 .category = "software",
                 .title = "GPU performance counters open to users",
                 .rationale = "With counters admin-only, ncu fails for users with ERR_NVGPUCTRPERM.",
                 .remediation =
                     "options nvidia NVreg_RestrictProfilingToAdminUsers=0 in /etc/modprobe.d, then reload the driver.",
                 .criterion = "ncu-profiling",
                 .targets = kS | kK | kSA | kV,
                 .needs = {"pci.devices", "gpu.inventory", "ncu.binary", "nvidia.params"},
                 .reproduce = "grep RmProfilingAdminOnly /proc/driver/nvidia/params"},
       NcuCounters});
  r.Add(
      {CheckInfo{.id = "container-toolkit",
                 .category = "containers",
                 .title = "GPU containers are wired: toolkit, nvidia runtime or CDI",
                 .rationale = "Without the toolkit or a CDI spec, containers on a GPU node cannot see the GPUs.",
                 .remediation =
                     "Install nvidia-container-toolkit and run nvidia-ctk runtime configure (or generate a CDI spec).",
                 .criterion = "container-toolkit",
                 .targets = kS | kK | kSA | kV,
                 .needs = {"pci.devices", "gpu.inventory", "container.runtimes", "container-toolkit.version"},
                 .reproduce = "nvidia-ctk --version; ls /etc/cdi"},
       ContainerToolkit});
  r.Add({CheckInfo{.id = "essential-tools",
                   .category = "access",
                   .title = "Essential tools on PATH",
                   .rationale = "Users expect git, curl, tmux, numactl and the like without filing a ticket.",
                   .remediation = "Install the missing packages.",
                   .targets = kS | kSA | kV,
                   .needs = {"tools.essential"},
                   .reproduce = "command -v python3 git curl wget vim nano jq ssh rsync lspci ip numactl tmux screen"},
         EssentialTools});
  r.Add({CheckInfo{.id = "ssh-pubkey-auth",
                   .category = "access",
                   .title = "sshd: public keys on, passwords off",
                   .rationale = "Password logins on GPU nodes invite brute force; keys are the expected access path.",
                   .remediation = "PubkeyAuthentication yes and PasswordAuthentication no in /etc/ssh/sshd_config.d/.",
                   .criterion = "external-idp",
                   .targets = kS | kSA | kV,
                   .needs = {"ssh.sshd-config"},
                   .reproduce = "sshd -T | grep -i authentication"},
         SshPubkeyAuth});
  r.Add({CheckInfo{.id = "external-idp",
                   .category = "access",
                   .title = "An external identity provider is integrated",
                   .rationale = "Teams manage access centrally (LDAP, SSO) rather than with local accounts per node.",
                   .remediation = "Integrate sssd (LDAP/AD) or an OIDC PAM module.",
                   .criterion = "external-idp",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"identity.providers", "os.processes"},
                   .reproduce = "grep passwd /etc/nsswitch.conf; systemctl is-active sssd"},
         ExternalIdp});
  r.Add({CheckInfo{.id = "local-nvme",
                   .category = "storage",
                   .title = "Local NVMe present and mounted as scratch",
                   .rationale = "Model and dataset caches need fast local disk.",
                   .remediation = "Mount the NVMe drives (RAID0) as /scratch or similar.",
                   .criterion = "default-storage-class",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"block.devices"},
                   .reproduce = "lsblk -d -o NAME,SIZE,TRAN,MODEL; findmnt"},
         LocalNvme});
  r.Add({CheckInfo{
             .id = "gpu-xid-history",
             .category = "health",
             .title = "No hardware-indicative Xid in the last 7 days",
             .rationale = "Xid 48, 64, 74, 79, 95 point at failing GPU memory, NVLink or a GPU that fell off the bus.",
             .remediation = "Drain the node and run DCGM diagnostics; RMA on repeat.",
             .criterion = "xid-monitoring",
             .targets = kS | kK | kSA | kV,
             .needs = {"pci.devices", "gpu.inventory", "kernel.xid"},
             .reproduce = "journalctl -k --since=-7d | grep -E 'NVRM: S?Xid'"},
         XidHistory});
  r.Add({CheckInfo{.id = "ib-port-health",
                   .category = "networking",
                   .title = "Every RDMA port active and linked up",
                   .rationale = "A down fabric port removes a rail: NCCL falls back or stalls.",
                   .remediation = "Check cables, transceivers and the switch port.",
                   .criterion = "fabric-class",
                   .targets = kS | kK | kSA,
                   .needs = {"rdma.devices"},
                   .reproduce = "cat /sys/class/infiniband/*/ports/*/{state,phys_state,rate}"},
         IbPortHealth});
  r.Add({CheckInfo{.id = "rdma-driver-stack",
                   .category = "networking",
                   .title = "RDMA NICs have a loaded driver and working utilities",
                   .rationale = "RDMA NICs without a driver stack leave the fabric unused.",
                   .remediation = "Install rdma-core (or DOCA-OFED) and load mlx5_ib / efa.",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"pci.devices", "rdma.devices", "rdma.stack"},
                   .reproduce = "ibv_devices; ofed_info -s"},
         RdmaDriverStack});
}

}  // namespace clustermax::checks
