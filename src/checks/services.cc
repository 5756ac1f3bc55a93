// Checks on services and platform facts: dcgm-exporter version, QEMU virtio-serial, exposed
// observability endpoints, ARM SMMU CMDQV, HPC-X, CUDA architecture support and shared mounts.
#include <regex>
#include <set>

#include <fmt/format.h>

#include "checks/common.h"
#include "core/thresholds.h"
#include "util/strings.h"
#include "util/version.h"

namespace clustermax::checks {
namespace {

using core::CheckInfo;
using core::Evidence;

Finding DcgmExporterVersion(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("dcgm-exporter.version");
  if (NotInstalled(e))
    return core::Skip(Reason::kNotApplicable,
                      "dcgm-exporter is not installed on this node (presence is graded by monitoring-stack)");
  if (auto p = core::EvidenceProblem(e, "dcgm-exporter --version")) return *p;
  std::optional<Finding> problem;
  const core::Component* exporter = Component(ctx, "dcgmExporter", problem);
  const core::Component* dcgm = Component(ctx, "dcgm", problem);
  if (!exporter || !dcgm) return *problem;
  std::string v = e.data["exporter_version"];
  auto c = core::Compare(*exporter, {.version = v}, ctx.now(), ctx.minimums().grace_period_days);
  Finding f = FromComparison(c, "dcgm-exporter", v);
  if (f.verdict == core::Verdict::kPass && e.data["dcgm_version"].is_string()) {
    std::string d = e.data["dcgm_version"];
    auto cd = core::Compare(*dcgm, {.version = d}, ctx.now(), ctx.minimums().grace_period_days);
    if (cd.outcome != core::Outcome::kPass) f = FromComparison(cd, "DCGM embedded in dcgm-exporter", d);
  }
  return f;
}

Finding QemuVirtioSerial(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("qemu.virtio");
  const Evidence& os = ctx.Get("os.release");
  if (auto p = core::EvidenceProblem(e, "virtio ports")) return *p;
  std::vector<std::string> qemu_ports;
  for (const auto& p : e.data["virtio_ports"]) {
    if (p.get<std::string>().rfind("org.qemu", 0) == 0) qemu_ports.push_back(p);
  }
  if (!qemu_ports.empty()) {
    return core::Warn(Reason::kAttestationRequired,
                      "QEMU guest with a virtio-serial channel: the host's QEMU must carry the CVE-2024-3446 fix")
        .Details(qemu_ports);
  }
  if (!e.data["qemu_package"].is_string())
    return core::Skip(Reason::kNotApplicable, "not a QEMU guest with virtio-serial, and no QEMU on this host");
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "ubuntuNoble.qemu", problem);
  if (!c) return *problem;
  std::string v = e.data["qemu_package"];
  std::string codename = os.ok() ? os.data.value("codename", "") : "";
  return FromComparison(
      core::Compare(*c, {.version = v, .release = codename}, ctx.now(), ctx.minimums().grace_period_days),
      "qemu-system-x86", v);
}

Finding ObservabilityIsolation(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("net.listeners");
  if (auto p = core::EvidenceProblem(e, "listening sockets")) return *p;
  const std::map<long long, std::string> kPorts = {{9090, "Prometheus"},
                                                   {9100, "node-exporter"},
                                                   {9400, "dcgm-exporter"},
                                                   {3000, "Grafana"},
                                                   {8080, "Slurm exporter"}};
  std::vector<std::string> exposed, local;
  for (const auto& l : e.data["listen"]) {
    auto it = kPorts.find(l["port"].get<long long>());
    if (it == kPorts.end()) continue;
    std::string line = fmt::format("{} on port {} ({}{})", it->second, it->first, l["scope"].get<std::string>(),
                                   l["ipv6"].get<bool>() ? ", IPv6" : "");
    if (l["scope"] == "loopback")
      local.push_back(line);
    else
      exposed.push_back(line);
  }
  if (exposed.empty())
    return core::Skip(Reason::kNotApplicable, "no observability endpoint listens beyond loopback on this node")
        .Details(local);
  return core::Warn(
             Reason::kUnverified,
             fmt::format("{} observability endpoint(s) reachable from the network; whose series they serve needs the "
                         "metrics-scrape probe (not part of this build) or an attestation",
                         exposed.size()))
      .Details(exposed);
}

Finding ArmSmmuCmdqv(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("arm.smmu");
  if (auto p = core::EvidenceProblem(e, "ARM platform facts")) return *p;
  if (e.data["arch"] != "aarch64") return core::Skip(Reason::kNotApplicable, "not aarch64");
  if (ctx.target() != core::Target::kVm) return core::Skip(Reason::kNotApplicable, "not a guest");
  std::string midr = e.data["midr"].is_string() ? e.data["midr"].get<std::string>() : "";
  auto v = util::ParseHexOrDec(midr);
  bool grace = v && ((*v >> 24) & 0xff) == 0x41 && ((*v >> 4) & 0xfff) == 0xd4f;  // Arm Neoverse V2
  if (!grace) return core::Skip(Reason::kNotApplicable, "not a Grace (Neoverse V2) CPU: MIDR " + midr);
  bool smmu = !e.data["iommu_units"].empty();
  bool cmdqv = e.data.value("cmdqv_module", false);
  if (!smmu) return core::Warn(Reason::kConfig, "Grace guest without a virtual SMMUv3");
  return cmdqv ? core::Pass("CMDQV present in a Grace guest with SMMUv3")
               : core::Warn(Reason::kConfig, "Grace guest with SMMUv3 but no CMDQV (tegra241_cmdqv)");
}

Finding HpcxAvailable(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("mpi.hpcx");
  if (auto p = core::EvidenceProblem(e, "MPI and HPC-X")) return *p;
  bool hpcx_env = e.data["hpcx_dir_env"].is_string();
  bool hpcx_opt = !e.data["hpcx_in_opt"].empty();
  bool ucx_mpi = e.data["ucx_pml"] == json(true);
  if (hpcx_env || ucx_mpi)
    return core::Pass(hpcx_env ? "HPC-X is set up (HPCX_DIR)" : "a UCX-enabled Open MPI is on PATH");
  if (hpcx_opt) {
    return core::Pass("HPC-X is installed under /opt (source hpcx-init.sh, or use srun --mpi=pmix)")
        .Details(e.data["hpcx_in_opt"].get<std::vector<std::string>>());
  }
  return core::Warn(Reason::kConfig, e.data.value("mpirun", false)
                                         ? "an MPI is on PATH but not UCX-enabled, and no HPC-X"
                                         : "no HPC-X and no MPI on PATH");
}

Finding CudaArchSupport(const JudgeContext& ctx) {
  const Evidence& gpu = ctx.Get("gpu.inventory");
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), gpu)) return *skip;
  const Evidence& tk = ctx.Get("cuda.toolkits");
  const Evidence& ncu = ctx.Get("ncu.binary");
  if (auto p = core::EvidenceProblem(tk, "CUDA toolkits")) return *p;
  if (tk.data["toolkits"].empty()) return core::Skip(Reason::kPrerequisiteMissing, "no CUDA toolkit");
  if (auto p = core::EvidenceProblem(gpu, "GPU inventory")) return *p;
  std::string name = !gpu.data.value("devices", json::array()).empty() && gpu.data["devices"][0]["name"].is_string()
                         ? gpu.data["devices"][0]["name"].get<std::string>()
                         : "";
  const json* need = nullptr;
  for (const auto& m : core::EmbeddedThresholds().data()["cuda_arch_minimums"]) {
    if (!name.empty() && name.find(m["pattern"].get<std::string>()) != std::string::npos) {
      need = &m;
      break;
    }
  }
  if (!need) return core::Warn(Reason::kUnverified, "no architecture minimum known for '" + name + "'");
  // Each tool PASSes only on a version read and compared; ncu absent is ncu-profiling's FAIL, not
  // this check's.
  std::vector<std::string> short_of, unread, compared;
  std::string toolkit;
  for (const auto& t : tk.data["toolkits"]) {
    if (t.value("default", false) && t.value("version", json()).is_string()) toolkit = t["version"];
  }
  auto below = [](const std::string& have, const std::string& need) {
    auto h = util::ParseNumericVersion(have), n = util::ParseNumericVersion(need);
    return !h || !n ? std::optional<bool>() : std::optional<bool>(*h < *n);
  };
  std::string nvcc_need = (*need)["nvcc"].get<std::string>(), ncu_need = (*need)["ncu"].get<std::string>();
  if (auto b = toolkit.empty() ? std::nullopt : below(toolkit, nvcc_need); !b) {
    unread.push_back(toolkit.empty() ? "no default toolkit with a readable version"
                                     : "nvcc version '" + toolkit + "' not understood");
  } else {
    compared.push_back("nvcc " + toolkit);
    if (*b) short_of.push_back(fmt::format("nvcc {} < {}", toolkit, nvcc_need));
  }
  std::string ncu_v =
      ncu.ok() && ncu.data.value("version", json()).is_string() ? ncu.data["version"].get<std::string>() : "";
  if (NotInstalled(ncu)) {
    compared.push_back("ncu not installed (graded by ncu-profiling)");
  } else if (auto b = ncu_v.empty() ? std::nullopt : below(ncu_v, ncu_need); !b) {
    unread.push_back(ncu_v.empty() ? "ncu version unread" : "ncu version '" + ncu_v + "' not understood");
  } else {
    compared.push_back("ncu " + ncu_v);
    if (*b) short_of.push_back(fmt::format("ncu {} < {}", ncu_v, ncu_need));
  }
  Finding f = !short_of.empty()
                  ? core::Warn(Reason::kConfig, fmt::format("too old for {}: {}", name, fmt::join(short_of, "; ")))
              : !unread.empty() ? core::Warn(Reason::kUnverified, fmt::format("support for {} not verified: {}", name,
                                                                              fmt::join(unread, "; ")))
                                : core::Pass("toolkit and profiler support " + name);
  f.observed = fmt::format("{}", fmt::join(compared, ", "));
  return f.Expected(fmt::format("nvcc >= {}, ncu >= {}", nvcc_need, ncu_need));
}

Finding StorageMountStable(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("storage.shared-mounts");
  if (auto p = core::EvidenceProblem(e, "mounts")) return *p;
  std::vector<std::string> missing, hung, pending, lines;
  for (const auto& x : e.data["expected"]) {
    bool found = false;
    for (const auto& m : e.data["mounted"]) found |= m["mount_point"] == x["mount_point"];
    if (!found)
      (x.value("noauto", false) ? pending : missing)
          .push_back(x["mount_point"].get<std::string>() + " (" + x["fstype"].get<std::string>() + ")");
  }
  for (const auto& m : e.data["mounted"]) {
    lines.push_back(fmt::format("{} {} from {}: stat {}", m["mount_point"].get<std::string>(),
                                m["fstype"].get<std::string>(), m["source"].get<std::string>(),
                                m["stat"].get<std::string>()));
    if (m["stat"] != "ok") hung.push_back(m["mount_point"]);
  }
  if (e.data["expected"].empty() && e.data["mounted"].empty())
    return core::Skip(Reason::kNotApplicable, "no shared (network) filesystem configured");
  Finding f = !hung.empty() ? core::Fail(Severity::kConfig,
                                         fmt::format("{} shared mount(s) did not answer stat within 2 s", hung.size()))
                                  .Details(hung)
              : !missing.empty()
                  ? core::Fail(Severity::kMissing, fmt::format("{} expected shared mount(s) missing", missing.size()))
                        .Details(missing)
              : !pending.empty()
                  ? core::Warn(Reason::kConfig, "automount not yet triggered").Details(pending)
                  : core::Pass(fmt::format("{} shared mount(s) present and responsive", e.data["mounted"].size()));
  return f.Expected("every fstab network mount present and answering").Details(lines);
}

// The AMD GPU programs on the node ("MI300X"), from sysfs product names and the model table.
std::optional<Finding> AmdPrograms(const Evidence& amd, std::vector<std::string>& programs) {
  if (auto p = core::EvidenceProblem(amd, "AMD GPU stack")) return p;
  if (amd.data["gpus"].empty()) return core::Skip(Reason::kNotApplicable, "no AMD GPU");
  std::set<std::string> seen;
  for (const auto& g : amd.data["gpus"]) {
    std::string name = g["product_name"].is_string() ? g["product_name"].get<std::string>() : "";
    auto m = core::EmbeddedThresholds().Model(name);
    seen.insert(m && m->vendor == "amd" ? m->pattern : (name.empty() ? "unknown" : name));
  }
  programs.assign(seen.begin(), seen.end());
  return std::nullopt;
}

// Grades `release` for every program; any fail fails, any unknown is unknown.
Finding GradePrograms(const JudgeContext& ctx, const char* component, const std::vector<std::string>& programs,
                      const std::string& release, bool proven, const std::string& what) {
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, component, problem);
  if (!c) return *problem;
  std::vector<core::Comparison> cmps;
  for (const auto& p : programs)
    cmps.push_back(core::Compare(*c, {.version = release, .program = p, .release_proven = proven}, ctx.now(),
                                 ctx.minimums().grace_period_days));
  const core::Comparison* worst = &cmps.front();
  for (const auto& cmp : cmps) {
    if (cmp.outcome == core::Outcome::kFail ||
        (cmp.outcome == core::Outcome::kUnknown && worst->outcome == core::Outcome::kPass))
      worst = &cmp;
  }
  Finding f = FromComparison(*worst, what, release);
  for (const auto& cmp : cmps) f.Detail(fmt::format("{}: {}", cmp.key, cmp.message));
  return f;
}

Finding Rocm(const JudgeContext& ctx) {
  const Evidence& amd = ctx.Get("amd.stack");
  std::vector<std::string> programs;
  if (auto f = AmdPrograms(amd, programs)) return *f;
  if (!amd.data["rocm_version"].is_string())
    return core::Skip(Reason::kNotApplicable, "ROCm is not installed on the host (/opt/rocm/.info/version)");
  return GradePrograms(ctx, "rocm", programs, amd.data["rocm_version"], true, "ROCm");
}

Finding AmdDriver(const JudgeContext& ctx) {
  const Evidence& amd = ctx.Get("amd.stack");
  std::vector<std::string> programs;
  if (auto f = AmdPrograms(amd, programs)) return *f;
  std::vector<std::string> unbound;
  const json& loaded = amd.data["loaded_srcversion"];
  const json& installed = amd.data["installed_srcversion"];
  if (!loaded.is_string() || !installed.is_string() || loaded != installed)
    unbound.push_back("loaded module srcversion differs from the installed one (or unread)");
  const json& owner = amd.data["module_owner"];
  if (!owner.is_string() || owner.get<std::string>().find("amdgpu-dkms") == std::string::npos)
    unbound.push_back("the module file is not owned by amdgpu-dkms");
  static const std::regex origin(R"(^https://repo\.radeon\.com/amdgpu/([0-9][0-9.]*)/ubuntu/?$)");
  std::string release;
  const json& origins = amd.data["dkms_origins"];
  std::smatch m;
  std::string first = origins.size() == 1 ? origins[0].get<std::string>() : "";
  if (origins.size() != 1 || !std::regex_match(first, m, origin)) {
    unbound.push_back(
        fmt::format("the installed amdgpu-dkms needs exactly one repo.radeon.com/amdgpu/<release> origin (found {})",
                    origins.size()));
  } else {
    release = m[1].str();
  }
  if (!unbound.empty()) {
    return core::Warn(Reason::kUnverified, "the amdgpu release cannot be bound to the loaded module")
        .Details(unbound)
        .Detail("programs: " + fmt::format("{}", fmt::join(programs, ", ")));
  }
  return GradePrograms(ctx, "amdDriver", programs, release, true, "amdgpu release");
}

std::optional<Finding> NeedBlueField(const JudgeContext& ctx, int& count) {
  const Evidence& pci = ctx.Get("pci.devices");
  if (auto p = core::EvidenceProblem(pci, "PCI inventory")) return p;
  count = CountBlueField(pci);
  if (count == 0) return core::Skip(Reason::kNotApplicable, "no BlueField in the PCI inventory");
  return std::nullopt;
}

Finding VirtioNetBluefield(const JudgeContext& ctx) {
  int n = 0;
  if (auto f = NeedBlueField(ctx, n)) return *f;
  return core::Warn(
             Reason::kAttestationRequired,
             fmt::format("{} BlueField function(s): the VIRTIO-Net controller version runs on the DPU's Arm cores "
                         "and needs the dpu-ssh probe (not part of this build) or an attestation",
                         n))
      .Expected("GA >= 25.10.6, LTS23 >= 23.10.23, LTS24 >= 24.10.50, LTS25 >= 25.10.2");
}

Finding VirtioNetBluefieldExposure(const JudgeContext& ctx) {
  int n = 0;
  if (auto f = NeedBlueField(ctx, n)) return *f;
  return core::Warn(Reason::kAttestationRequired,
                    "BlueField present: NIC vs DPU mode (mlxconfig, root) and the controller state decide latent "
                    "exposure; neither is readable passively from the host");
}

Finding ObjectStorageEndpoint(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("probe.s3");
  if (auto p = core::EvidenceProblem(e, "clustermax probe s3")) return *p;
  if (!e.data.value("configured", false)) {
    return core::Skip(Reason::kPrerequisiteMissing,
                      "no object storage endpoint configured (--s3-endpoint URL --s3-bucket NAME)");
  }
  const json& p = e.data["probe"];
  std::vector<std::string> lines, bad;
  for (const auto& s : p["steps"]) {
    std::string line = fmt::format("{}: {} ({} ms)", s["op"].get<std::string>(),
                                   s["ok"].get<bool>() ? "ok" : s.value("error", "failed"), s["ms"].get<double>());
    lines.push_back(line);
    if (!s["ok"].get<bool>()) bad.push_back(line);
  }
  std::string where = fmt::format("{} bucket {}", p["endpoint"].get<std::string>(), p["bucket"].get<std::string>());
  Finding f =
      !p["reachable"].get<bool>()
          ? core::Fail(Severity::kConfig, fmt::format("{} is configured but unreachable", where))
      : !bad.empty()
          ? core::Warn(Reason::kConfig, fmt::format("{} answers, but {} operation(s) failed", where, bad.size()))
      : p["steps"].size() < 4 ? core::Warn(Reason::kEvidenceError, fmt::format("{}: the probe stopped early", where))
                              : core::Pass(fmt::format("{}: HEAD, PUT, GET and DELETE succeeded", where));
  f.Detail("credentials from " + p.value("credentials", std::string("?")));
  return f.Expected("HEAD bucket, PUT, GET (same bytes) and DELETE of a small object all succeed").Details(lines);
}

Finding DcgmDiagQuick(const JudgeContext& ctx) {
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  const Evidence& dcgm = ctx.Get("dcgm.version");
  if (NotInstalled(dcgm)) return core::Skip(Reason::kPrerequisiteMissing, "DCGM is not installed");
  const Evidence& e = ctx.Get("probe.dcgm-diag");
  if (auto p = core::EvidenceProblem(e, "dcgmi diag -r 1")) return *p;
  if (!e.data["runtime_error"].get<std::string>().empty()) {
    return core::Warn(Reason::kEvidenceError,
                      "dcgmi diag could not run: " + e.data["runtime_error"].get<std::string>());
  }
  std::vector<std::string> fails, warns, unknown;
  int passed = 0;
  for (const auto& r : e.data["results"]) {
    std::string who = fmt::format("{} / {}{}", r["category"].get<std::string>(), r["test"].get<std::string>(),
                                  r["gpu"].get<std::string>().empty() ? "" : " on GPU " + r["gpu"].get<std::string>());
    std::string why = r["warnings"].empty()
                          ? ""
                          : ": " + fmt::format("{}", fmt::join(r["warnings"].get<std::vector<std::string>>(), "; "));
    if (r["status"] == "fail")
      fails.push_back(who + why);
    else if (r["status"] == "warn")
      warns.push_back(who + why);
    else if (r["status"] == "pass")
      ++passed;
    else if (r["status"] != "skip" && r["status"] != "skipped" && r["status"] != "not run")
      unknown.push_back(who + ": result " + r["status"].dump());
  }
  if (fails.empty() && warns.empty() && passed == 0)
    return core::Warn(Reason::kEvidenceError, "dcgmi diag returned no test result");
  Finding f =
      !fails.empty()   ? core::Fail(Severity::kConfig, fmt::format("{} DCGM diagnostic result(s) failed", fails.size()))
      : !warns.empty() ? core::Warn(Reason::kConfig, fmt::format("{} DCGM diagnostic warning(s)", warns.size()))
      : !unknown.empty() ? core::Warn(Reason::kEvidenceError,
                                      fmt::format("{} DCGM diagnostic result(s) not understood", unknown.size()))
                         : core::Pass(fmt::format("all {} DCGM level-1 results passed", passed));
  return f.Expected("every test passes").Details(fails).Details(warns).Details(unknown);
}

// dcgm-healthchecks: the DCGM host engine on a GPU node (what HealthCheckProgram, NHC and the
// diagnostics talk to).
Finding DcgmHealth(const JudgeContext& ctx) {
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  const Evidence& dcgm = ctx.Get("dcgm.version");
  const Evidence& procs = ctx.Get("os.processes");
  bool engine = Running(procs, "nv-hostengine");
  if (NotInstalled(dcgm)) {
    if (engine)
      return core::Pass("nv-hostengine runs (dcgmi not on PATH)")
          .Observed("host engine running")
          .Expected("DCGM host engine available");
    return core::Fail(Severity::kMissing, "DCGM is not installed (no dcgmi, no nv-hostengine)")
        .Observed("absent")
        .Expected("DCGM host engine available");
  }
  if (auto p = core::EvidenceProblem(dcgm, "dcgmi --version")) return *p;
  std::string v = dcgm.data.value("version", json("")).is_string() ? dcgm.data["version"].get<std::string>() : "";
  if (!procs.ok())
    return core::Warn(Reason::kEvidenceError, fmt::format("DCGM {} installed; the process list is unreadable", v));
  Finding f =
      engine ? core::Pass(fmt::format("DCGM {} with nv-hostengine running", v))
             : core::Warn(
                   Reason::kConfig,
                   fmt::format(
                       "DCGM {} installed but nv-hostengine is not running (systemctl enable --now nvidia-dcgm)", v));
  return f.Observed(fmt::format("dcgmi {}, host engine {}", v, engine ? "running" : "stopped"))
      .Expected("DCGM host engine available");
}

// monitoring-stack: a GPU metrics exporter on the node (dcgm-exporter, or AMD's device metrics
// exporter), by process or by its port (9400).
Finding MonitoringStack(const JudgeContext& ctx) {
  const Evidence& pci = ctx.Get("pci.devices");
  const Evidence& gpu = ctx.Get("gpu.inventory");
  bool amd = CountPciGpus(pci, "0x1002") > 0;
  if (!amd) {
    if (auto skip = SkipUnlessNvidia(pci, gpu)) return *skip;
  }
  const Evidence& procs = ctx.Get("os.processes");
  const Evidence& net = ctx.Get("net.listeners");
  if (!procs.ok() && !net.ok())
    return core::Warn(Reason::kEvidenceError, "neither the process list nor the listening sockets are readable");
  std::vector<std::string> seen;
  if (Running(procs, "dcgm-exporter")) seen.push_back("dcgm-exporter process");
  if (Running(procs, "device-metrics-")) seen.push_back("AMD device-metrics-exporter process");
  if (net.ok()) {
    for (const auto& l : net.data.value("listen", json::array())) {
      if (l.value("port", 0) == 9400) seen.push_back(fmt::format("port 9400 listening ({})", l.value("scope", "")));
    }
  }
  if (seen.empty()) {
    return core::Fail(Severity::kMissing,
                      "no GPU metrics exporter on this node (no dcgm-exporter process, nothing on port 9400)")
        .Observed("none")
        .Expected("dcgm-exporter (port 9400) or AMD device-metrics-exporter");
  }
  return core::Pass("GPU metrics exporter: " + seen[0])
      .Details(seen)
      .Observed(seen[0])
      .Expected("a GPU metrics exporter");
}

// gpu-job-attribution: GPU series carry the Slurm job (dcgm-exporter --hpc-job-mapping-dir /
// DCGM_HPC_JOB_MAPPING_DIR, fed by a prolog) or the pod (--kubernetes / DCGM_EXPORTER_KUBERNETES),
// so a slow GPU can be tied to the job that saw it.
Finding GpuJobAttribution(const JudgeContext& ctx) {
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  const Evidence& cfg = ctx.Get("gpu-exporter.config");
  const Evidence& procs = ctx.Get("os.processes");
  if (auto p = core::EvidenceProblem(cfg, "GPU exporter configuration")) return *p;
  const json& ps = cfg.data["processes"];
  if (ps.empty() && !Running(procs, "dcgm-exporter")) {
    return core::Skip(Reason::kPrerequisiteMissing, "no GPU metrics exporter runs on this node (monitoring-stack)");
  }
  bool slurm = ctx.target() == core::Target::kSlurm;
  const char* flag = slurm ? "--hpc-job-mapping-dir" : "--kubernetes";
  const char* env_key = slurm ? "DCGM_HPC_JOB_MAPPING_DIR" : "DCGM_EXPORTER_KUBERNETES";
  std::vector<std::string> found = ExporterAttribution(cfg, slurm), lines;
  bool environ_unread = false;
  for (const auto& p : ps) {
    std::vector<std::string> argv = p["argv"].get<std::vector<std::string>>();
    lines.push_back(fmt::format("pid {}: {}", p["pid"].get<std::string>(),
                                util::Ellipsize(fmt::format("{}", fmt::join(argv, " ")), 200)));
    environ_unread |= p.value("environ_status", "") != "ok";
  }
  std::string what = slurm ? "Slurm job (hpc_job label)" : "pod and namespace";
  if (!found.empty()) {
    return core::Pass(fmt::format("dcgm-exporter labels GPU series with the {}: {}", what, found[0]))
        .Details(found)
        .Details(lines)
        .Expected(std::string(flag) + " or " + env_key);
  }
  if (environ_unread) {
    return core::
        Warn(Reason::kUnverified,
             fmt::format(
                 "dcgm-exporter's command line and unit files do not set {}; its environment is root-only (run the audit as root)",
                 flag))
            .Details(lines)
            .Expected(std::string(flag) + " or " + env_key);
  }
  return core::Warn(Reason::kConfig,
                    fmt::format("dcgm-exporter runs without {} / {}: GPU metrics cannot be tied to the {}", flag,
                                env_key, what))
      .Details(lines)
      .Expected(std::string(flag) + " or " + env_key);
}

// xid-monitoring: something captures Xid events (dcgm-exporter with the Xid counter, a GPU
// health agent, NHC with DCGM) and the kernel log leaves the node (a log shipper).
Finding XidMonitoring(const JudgeContext& ctx) {
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  const Evidence& procs = ctx.Get("os.processes");
  const Evidence& mon = ctx.Get("xid.monitors");
  if (!procs.ok()) return core::Warn(Reason::kEvidenceError, "the process list is unreadable");
  std::vector<std::string> capture, shipping;
  bool exporter = Running(procs, "dcgm-exporter");
  bool counter_listed = false, counters_file = false;
  if (mon.ok()) {
    for (const auto& c : mon.data.value("exporter_counters", json::array())) {
      counters_file = true;
      counter_listed |= c.value("xid_errors", false);
    }
  }
  if (exporter && (counter_listed || !counters_file))
    capture.push_back(counters_file ? "dcgm-exporter with DCGM_FI_DEV_XID_ERRORS"
                                    : "dcgm-exporter (default counters include Xid errors)");
  for (const char* agent : {"node-problem-de", "gpud", "nvsentinel", "nv-hostengine"}) {
    if (Running(procs, agent)) capture.push_back(std::string(agent) + " running");
  }
  for (const char* shipper :
       {"promtail", "fluent-bit", "fluentd", "vector", "filebeat", "otelcol", "alloy", "datadog-agent"}) {
    if (Running(procs, shipper)) shipping.push_back(std::string(shipper) + " running");
  }
  std::vector<std::string> lines = capture;
  lines.insert(lines.end(), shipping.begin(), shipping.end());
  std::string observed = fmt::format("capture: {}; log shipping: {}", capture.empty() ? "none" : capture[0],
                                     shipping.empty() ? "none" : shipping[0]);
  Finding f =
      !capture.empty() && !shipping.empty() ? core::Pass("Xid events are captured and kernel logs shipped")
      : !capture.empty() ? core::Warn(Reason::kConfig, "Xid events are captured, but no kernel-log shipper runs")
      : !shipping.empty()
          ? core::Warn(
                Reason::kConfig,
                "kernel logs are shipped, but nothing captures Xid events (no dcgm-exporter, no GPU health agent)")
          : core::Warn(Reason::kConfig, "nothing captures Xid events and no kernel-log shipper runs");
  return f.Details(lines).Observed(observed).Expected("an Xid monitor and a kernel-log shipper");
}

// shared-fs: a parallel or network filesystem on the node, home on shared storage.
// shared-home-quota: a shared home without per-user quotas lets one user fill it for everyone.
Finding SharedHomeQuota(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("storage.home-quota");
  if (auto p = core::EvidenceProblem(e, "home quota")) return *p;
  if (!e.data["home"].is_string())
    return core::Warn(Reason::kEvidenceError, "HOME is unset: the home filesystem is unknown");
  static const std::set<std::string> shared = {"nfs",       "nfs4",   "lustre",    "gpfs",   "ceph", "fuse.ceph-fuse",
                                               "glusterfs", "wekafs", "fuse.weka", "beegfs", "cifs"};
  std::string home = e.data["home"],
              fstype = e.data.value("fstype", json()).is_string() ? e.data["fstype"].get<std::string>() : "";
  std::string mp = e.data.value("mount_point", json()).is_string() ? e.data["mount_point"].get<std::string>() : "";
  std::string where = fmt::format("{} on {} ({})", home, mp.empty() ? "?" : mp, fstype.empty() ? "?" : fstype);
  if (!shared.count(fstype)) return core::Skip(Reason::kNotApplicable, "home is not on a shared filesystem: " + where);
  const json& q = e.data.value("quota", json());
  std::string user = e.data["user"].is_string() ? e.data["user"].get<std::string>() : "";
  std::vector<std::string> notes;
  if (user == "root") notes.push_back("audited as root, which normally has no quota: run the audit as a regular user");
  if (!q.is_object())
    return core::Warn(Reason::kUnverified, "no user name to ask the quota tool for: " + where).Details(notes);
  std::string tool = q.value("tool", "");
  if (q.value("status", "") == "not-found") {
    return core::Warn(
               Reason::kUnverified,
               fmt::format(
                   "{} is not installed: the per-user quota on {} cannot be read (provider documentation may state it)",
                   tool, where))
        .Details(notes);
  }
  if (q.value("status", "") != "ok") {
    return core::Warn(Reason::kEvidenceError, fmt::format("{} did not answer ({}): {}", q.value("command", tool),
                                                          q.value("status", ""), q.value("stderr", "")));
  }
  std::vector<std::string> limited, rows;
  for (const auto& r : q.value("rows", json::array())) {
    std::string line = fmt::format("{}: used {}, quota {}, limit {}", r.value("filesystem", ""), r.value("used", ""),
                                   r.value("soft", ""), r.value("hard", ""));
    rows.push_back(line);
    if (r.value("limited", false)) limited.push_back(line);
  }
  Finding f =
      !limited.empty()
          ? core::Pass(fmt::format("per-user quota on the shared home ({}): {}", fstype, limited[0]))
          : core::Warn(Reason::kConfig,
                       fmt::format(
                           "no per-user quota reported for {} on the shared home {}: one user can fill it for everyone",
                           user.empty() ? "this user" : user, where));
  if (rows.empty() && !q.value("output", "").empty()) rows.push_back(util::Ellipsize(q.value("output", ""), 300));
  return f.Observed(q.value("command", tool))
      .Expected("a per-user block quota on the shared home")
      .Details(rows)
      .Details(notes);
}

Finding SharedFs(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("storage.shared-mounts");
  if (auto p = core::EvidenceProblem(e, "mounts")) return *p;
  static const std::set<std::string> parallel = {"lustre", "gpfs", "wekafs",   "fuse.weka",
                                                 "beegfs", "ceph", "glusterfs"};
  std::vector<std::string> par, net, lines;
  bool home = false;
  for (const auto& m : e.data["mounted"]) {
    std::string mp = m["mount_point"], fs = m["fstype"];
    lines.push_back(fmt::format("{} ({}) from {}", mp, fs, m.value("source", "")));
    (parallel.count(fs) ? par : net).push_back(mp + " (" + fs + ")");
    if (mp == "/home" || mp.rfind("/home/", 0) == 0) home = true;
  }
  if (par.empty() && net.empty()) {
    return core::Fail(Severity::kMissing, "no shared filesystem mounted on this node")
        .Observed("local filesystems only")
        .Expected("a parallel filesystem, home on shared storage");
  }
  std::string observed =
      fmt::format("{} parallel, {} network mount(s); home {}", par.size(), net.size(), home ? "shared" : "local");
  Finding f =
      !par.empty() && home ? core::Pass(fmt::format("parallel filesystem {}; home on shared storage", par[0]))
      : !par.empty() ? core::Warn(Reason::kConfig, fmt::format("parallel filesystem {}, but home is local", par[0]))
      : home         ? core::Warn(Reason::kConfig,
                                  fmt::format("network filesystem only ({}): throughput is graded by bench storage", net[0]))
             : core::Warn(Reason::kConfig, fmt::format("network filesystem only ({}) and home is local", net[0]));
  return f.Details(lines).Observed(observed).Expected("a parallel filesystem, home on shared storage");
}

}  // namespace

void RegisterServiceChecks(core::Registry& r) {
  using core::kC;
  using core::kK;
  using core::kS;
  using core::kSA;
  using core::kV;
  r.Add({CheckInfo{.id = "dcgm-healthchecks",
                   .category = "health",
                   .title = "DCGM host engine available on GPU nodes",
                   .rationale = "DCGM's host engine serves health watches, diagnostics and the metrics exporters.",
                   .remediation = "Install datacenter-gpu-manager and enable the nvidia-dcgm service.",
                   .criterion = "dcgm-healthchecks",
                   .targets = kS,
                   .needs = {"pci.devices", "gpu.inventory", "dcgm.version", "os.processes"},
                   .reproduce = "dcgmi --version; systemctl is-active nvidia-dcgm; pgrep nv-hostengine"},
         DcgmHealth});
  r.Add(
      {CheckInfo{.id = "monitoring-stack",
                 .category = "health",
                 .title = "A GPU metrics exporter runs on the node",
                 .rationale = "Without per-GPU metrics (dcgm-exporter on :9400) nobody sees a slow or throttling GPU.",
                 .remediation =
                     "Run dcgm-exporter (systemd unit or DaemonSet) on every GPU node and scrape it with Prometheus.",
                 .criterion = "monitoring-stack",
                 .targets = kS | kK,
                 .needs = {"pci.devices", "gpu.inventory", "os.processes", "net.listeners"},
                 .reproduce = "pgrep -a dcgm-exporter; ss -ltn | grep 9400"},
       MonitoringStack});
  r.Add(
      {CheckInfo{
           .id = "gpu-job-attribution",
           .category = "health",
           .title = "GPU metrics carry the job (Slurm) or pod (Kubernetes) that used the GPU",
           .rationale = "A slow or failing GPU is actionable only when its series say which job saw it.",
           .remediation =
               "Slurm: run dcgm-exporter with --hpc-job-mapping-dir (a prolog writes one file per GPU with the job id). Kubernetes: DCGM_EXPORTER_KUBERNETES=true with the pod-resources socket mounted.",
           .criterion = "gpu-job-attribution",
           .targets = kS | kK,
           .needs = {"pci.devices", "gpu.inventory", "os.processes", "gpu-exporter.config"},
           .reproduce =
               "tr '\\0' ' ' < /proc/$(pgrep -o dcgm-exporter)/cmdline; grep -r hpc-job-mapping /etc/systemd/system/dcgm-exporter.service"},
       GpuJobAttribution});
  r.Add(
      {CheckInfo{
           .id = "xid-monitoring",
           .category = "health",
           .title = "Xid events are captured and kernel logs shipped",
           .rationale = "An Xid nobody records is a GPU fault nobody acts on: it must reach a monitor and a log store.",
           .remediation =
               "Keep DCGM_FI_DEV_XID_ERRORS in dcgm-exporter's counters (or run a GPU health agent) and ship kernel logs (promtail, Fluent Bit).",
           .criterion = "xid-monitoring",
           .targets = kS | kK,
           .needs = {"pci.devices", "gpu.inventory", "os.processes", "xid.monitors"},
           .reproduce =
               "grep XID /etc/dcgm-exporter/default-counters.csv; pgrep -a 'promtail|fluent-bit|node-problem'"},
       XidMonitoring});
  r.Add(
      {CheckInfo{
           .id = "shared-home-quota",
           .category = "storage",
           .title = "Per-user quota on the shared home",
           .rationale =
               "Without per-user quotas one runaway job or checkpoint fills the shared home and stops every user's work.",
           .remediation =
               "Enable user quotas on the home filesystem (Lustre/GPFS/XFS project or user quotas, rquotad for NFS) and document them.",
           .criterion = "shared-fs",
           .targets = kS,
           .needs = {"storage.home-quota"},
           .reproduce = "quota -s; lfs quota -u $USER <mount>; mmlsquota -u $USER"},
       SharedHomeQuota});
  r.Add(
      {CheckInfo{
           .id = "shared-fs",
           .category = "storage",
           .title = "A parallel filesystem is mounted, with home on shared storage",
           .rationale = "Multi-node training needs one namespace for code, data and checkpoints on every node.",
           .remediation =
               "Mount the parallel filesystem (Lustre, GPFS, Weka, VAST, BeeGFS) on every node at the same path; put home on it.",
           .criterion = "shared-fs",
           .targets = kS,
           .needs = {"storage.shared-mounts"},
           .reproduce = "findmnt -t lustre,gpfs,wekafs,beegfs,ceph,nfs,nfs4"},
       SharedFs});
  r.Add({CheckInfo{.id = "security-dcgm-exporter",
                   .category = "versions",
                   .title = "dcgm-exporter at or above 4.8.2 (embedded DCGM >= 4.5.3)",
                   .rationale = "dcgm-exporter runs privileged on GPU nodes and embeds DCGM.",
                   .remediation = "Upgrade dcgm-exporter to 4.5.3-4.8.2 or newer.",
                   .references = {{"NVIDIA a_id 5857", "https://nvidia.custhelp.com/app/answers/detail/a_id/5857/"}},
                   .targets = kS | kK | kSA,
                   .needs = {"dcgm-exporter.version"},
                   .reproduce = "dcgm-exporter --version"},
         DcgmExporterVersion});
  r.Add({CheckInfo{.id = "security-rocm",
                   .category = "versions",
                   .title = "ROCm at or above its GPU program's floor",
                   .rationale = "ROCm advisories (AMD-SB-6018/6024/6027) are fixed per Instinct generation.",
                   .remediation = "Upgrade ROCm to the program's fixed release.",
                   .targets = kS | kSA | kV | kC,
                   .needs = {"amd.stack"},
                   .reproduce = "cat /opt/rocm/.info/version; amd-smi static --asic"},
         Rocm});
  r.Add({CheckInfo{.id = "security-amd-driver",
                   .category = "versions",
                   .title = "AMD GPU driver release >= 31.40, bound to the loaded module",
                   .rationale =
                       "AMD-SB-6034 (CVE-2026-43603) is fixed in driver release 31.40; only the loaded module counts.",
                   .remediation = "Install amdgpu-dkms 31.40+ from repo.radeon.com and reboot (or reload amdgpu).",
                   .references = {{"AMD-SB-6034",
                                   "https://www.amd.com/en/resources/product-security/bulletin/amd-sb-6034.html"}},
                   .targets = kS | kK | kSA | kV,
                   .needs = {"amd.stack"},
                   .reproduce = "modinfo -F srcversion amdgpu; apt-cache policy amdgpu-dkms"},
         AmdDriver});
  r.Add({CheckInfo{.id = "security-virtio-net-bluefield",
                   .category = "versions",
                   .title = "BlueField VIRTIO-Net controller at its release line's floor",
                   .rationale = "CVE-2026-65094 in the VIRTIO-Net emulation controller running on the DPU.",
                   .remediation = "Upgrade the DOCA VIRTIO-Net controller to the fixed release of its line.",
                   .criterion = "security-virtio-net-bluefield",
                   .references = {{"NVIDIA a_id 5815", "https://nvidia.custhelp.com/app/answers/detail/a_id/5815/"}},
                   .targets = kS | kK | kSA,
                   .needs = {"pci.devices"},
                   .reproduce = "virtnet version (on the DPU)"},
         VirtioNetBluefield});
  r.Add({CheckInfo{.id = "security-virtio-net-bluefield-exposure",
                   .category = "isolation",
                   .title = "No latent VIRTIO-Net exposure on BlueField",
                   .rationale = "An idle controller in NIC mode with a vulnerable version is a latent exposure.",
                   .remediation = "Keep the controller patched or removed; attest the platform mode.",
                   .criterion = "security-virtio-net-bluefield",
                   .targets = kS | kK | kSA,
                   .needs = {"pci.devices"},
                   .reproduce = "mlxconfig -d <bdf> q INTERNAL_CPU_MODEL"},
         VirtioNetBluefieldExposure});
  r.Add({CheckInfo{.id = "dcgm-diag-quick",
                   .category = "health",
                   .title = "DCGM quick diagnostic (dcgmi diag -r 1) passes",
                   .rationale = "DCGM's level-1 diagnostic catches deployment and basic hardware faults in seconds.",
                   .remediation = "Follow the DCGM_FR codes; drain and RMA GPUs that fail.",
                   .criterion = "dcgm-healthchecks",
                   .targets = kS | kK | kSA | kV,
                   .needs = {"pci.devices", "gpu.inventory", "dcgm.version", "probe.dcgm-diag"},
                   .probe = "dcgm-diag",
                   .probe_required = true,
                   .reproduce = "dcgmi diag -r 1 -j"},
         DcgmDiagQuick});
  r.Add({CheckInfo{.id = "security-qemu-virtio-serial",
                   .category = "isolation",
                   .title = "QEMU virtio-serial fixed (CVE-2024-3446)",
                   .rationale = "A guest can escape through QEMU's virtio devices on unpatched hosts.",
                   .remediation = "Upgrade qemu-system on the host (Noble >= 1:8.2.2+ds-0ubuntu1.10).",
                   .criterion = "security-qemu-virtio-serial",
                   .references = {{"USN-7744-1", "https://ubuntu.com/security/notices/USN-7744-1"}},
                   .targets = kS | kK | kSA | kV,
                   .needs = {"qemu.virtio", "os.release"},
                   .reproduce = "ls /dev/virtio-ports; dpkg-query -W qemu-system-x86"},
         QemuVirtioSerial});
  r.Add(
      {CheckInfo{.id = "security-observability-isolation",
                 .category = "isolation",
                 .title = "Monitoring endpoints do not expose other tenants",
                 .rationale =
                     "A shared Prometheus or exporter reachable from tenant nodes leaks other tenants' jobs and hosts.",
                 .remediation =
                     "Bind exporters to a management network or put authentication in front; attest tenant separation.",
                 .criterion = "security-observability-isolation",
                 .targets = kS | kK | kSA | kV,
                 .needs = {"net.listeners"},
                 .reproduce = "ss -ltn"},
       ObservabilityIsolation});
  r.Add({CheckInfo{.id = "arm-smmu-cmdqv",
                   .category = "hardware",
                   .title = "Grace guests have SMMUv3 with CMDQV",
                   .rationale =
                       "Without CMDQV, IOMMU invalidations trap to the hypervisor and GPU DMA slows down in Grace VMs.",
                   .remediation = "Expose the CMDQV (tegra241_cmdqv) to the guest.",
                   .criterion = "arm-smmu-cmdqv",
                   .targets = kV,
                   .needs = {"arm.smmu"},
                   .reproduce = "ls /sys/class/iommu; lsmod | grep cmdqv"},
         ArmSmmuCmdqv});
  r.Add({CheckInfo{.id = "hpcx-available",
                   .category = "software",
                   .title = "HPC-X or a UCX-enabled MPI is available",
                   .rationale = "MPI jobs over InfiniBand need UCX; HPC-X bundles it with SHARP and NCCL plugins.",
                   .remediation = "Install HPC-X (or Open MPI built with UCX) and expose it via modules.",
                   .targets = kS | kSA | kV | kC,
                   .needs = {"mpi.hpcx"},
                   .reproduce = "ompi_info --parsable | grep pml:ucx; ls -d /opt/hpcx*"},
         HpcxAvailable});
  r.Add({CheckInfo{.id = "cuda-arch-support",
                   .category = "software",
                   .title = "Toolkit and profiler support the GPU architecture",
                   .rationale = "An nvcc or ncu older than the GPU cannot build for or profile it.",
                   .remediation = "Install a toolkit and Nsight Compute new enough for the GPU.",
                   .targets = kS | kSA | kV | kC,
                   .needs = {"pci.devices", "gpu.inventory", "cuda.toolkits", "ncu.binary"},
                   .reproduce = "nvcc --version; ncu --version"},
         CudaArchSupport});
  r.Add({CheckInfo{
             .id = "object-storage-endpoint",
             .category = "storage",
             .title = "S3 object storage endpoint reachable and usable",
             .rationale =
                 "Checkpoint offload and dataset streaming need an S3 endpoint that accepts reads, writes and deletes.",
             .remediation = "Check the endpoint URL, the bucket policy and the credentials given to the tenant.",
             .targets = kS | kK | kSA | kV,
             .needs = {"probe.s3"},
             .probe = "s3-probe",
             .probe_required = true,
             .reproduce = "clustermax probe s3 --endpoint URL --bucket NAME"},
         ObjectStorageEndpoint});
  r.Add({CheckInfo{.id = "storage-mount-stable",
                   .category = "storage",
                   .title = "Shared mounts present and responsive",
                   .rationale = "A missing or hung shared filesystem stalls every job that touches it.",
                   .remediation = "Remount the filesystem; investigate the storage servers for hung mounts.",
                   .criterion = "shared-fs",
                   .targets = kS | kK | kSA,
                   .needs = {"storage.shared-mounts"},
                   .reproduce = "findmnt -t nfs,nfs4,lustre; timeout 2 stat <mount point>"},
         StorageMountStable});
}

}  // namespace clustermax::checks
