// software: NCCL and profiling access.
#include <fmt/format.h>

#include "checks/common.h"

namespace clustermax::checks {
namespace {

using core::CheckInfo;
using core::Evidence;

Finding NcclInstalled(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("nccl.libraries");
  if (auto p = core::EvidenceProblem(e, "NCCL library search")) return *p;
  if (!e.data.value("versions", json()).is_array())
    return core::Warn(Reason::kEvidenceError, "NCCL library version list not read");
  const json& libs = e.data["libraries"];
  std::string version;
  std::string from;
  for (const auto& v : e.data["versions"]) {
    version = v["version"];
    from = v["path"];
    break;
  }
  if (version.empty() && e.data["header"].is_object()) {
    version = e.data["header"]["version"];
    from = e.data["header"]["path"];
  }
  Finding f;
  if (libs.empty() && ctx.target() == core::Target::kK8s) {
    // Kubernetes nodes run workloads from images, which bring their own NCCL; the host needs none.
    return core::Skip(Reason::kNotApplicable,
                      "no NCCL on the host: on Kubernetes the libraries come with the workloads' images");
  } else if (libs.empty()) {
    f = core::Fail(Severity::kMissing, "NCCL not found in the linker cache or the standard library directories");
    if (!e.data.value("ldconfig_ok", false)) f.Detail("ldconfig -p did not run; only directories were searched");
  } else if (version.empty()) {
    f = core::Warn(Reason::kEvidenceError,
                   fmt::format("NCCL found ({} file(s)) but its version could not be read", libs.size()));
  } else {
    f = core::Pass(fmt::format("NCCL {} found", version));
    f.Detail("version from " + from);
  }
  f.observed = version.empty() ? (libs.empty() ? "absent" : "present, version unknown") : version;
  f.expected = "installed with a readable version";
  for (const auto& l : libs) f.Detail(l.get<std::string>());
  return f;
}

Finding PerfAccess(const JudgeContext& ctx) {
  const Evidence& bin = ctx.Get("perf.binary");
  const Evidence& probe = ctx.Get("probe.perf-sample");
  if (NotInstalled(bin))
    return core::Fail(Severity::kMissing, "perf is not installed").Observed("absent").Expected("installed");
  if (auto p = core::EvidenceProblem(bin, "perf --version")) return *p;
  std::string v = bin.data["version"];
  if (probe.status == core::EvidenceStatus::kProbeDisabled) {
    return core::Pass(fmt::format("perf {} installed", v))
        .Observed(v)
        .Expected("installed")
        .Detail("probe perf-sample not requested");
  }
  if (auto p = core::EvidenceProblem(probe, "perf-sample probe")) return *p;
  std::string outcome = probe.data["outcome"];
  Finding f = outcome == "granted"
                  ? core::Pass(fmt::format("perf {} installed and counters sampled", v))
                  : core::Warn(Reason::kConfig, fmt::format("perf {} installed but sampling was {}", v, outcome));
  return f.Observed(v + ", probe " + outcome)
      .Expected("installed, sampling granted")
      .Detail(probe.data.value("output", std::string()));
}

// nccl-autoconfig: NCCL tunes channels, protocol and algorithm per topology and message size;
// pinning them system-wide trades that away for every job.
Finding NcclAutoconfig(const JudgeContext& ctx) {
  const Evidence& cfg = ctx.Get("nccl.config");
  if (auto p = core::EvidenceProblem(cfg, "NCCL configuration")) return *p;
  std::vector<std::string> pinned, seen, unreadable;
  for (const auto& f : cfg.data["files"]) {
    if (f.contains("error"))
      unreadable.push_back(f["path"].get<std::string>() + " (" + f["error"].get<std::string>() + ")");
    for (const auto& [k, v] : f["vars"].items()) {
      std::string where = fmt::format("{}={} in {}", k, v.get<std::string>(), f["path"].get<std::string>());
      seen.push_back(where);
      if (k == "NCCL_MIN_NCHANNELS" || k == "NCCL_PROTO" || k == "NCCL_ALGO") pinned.push_back(where);
    }
  }
  for (const auto& [k, v] : cfg.data["env"].items()) {
    std::string where = fmt::format("{}={} in the job environment", k, v.get<std::string>());
    seen.push_back(where);
    if (k == "NCCL_MIN_NCHANNELS" || k == "NCCL_PROTO" || k == "NCCL_ALGO") pinned.push_back(where);
  }
  if (seen.empty()) {
    const Evidence& libs = ctx.Get("nccl.libraries");
    bool nccl = libs.ok() && (!libs.data.value("libraries", json::array()).empty() || libs.data["header"].is_object());
    if (!nccl && unreadable.empty())
      return core::Skip(Reason::kNotApplicable, "no NCCL and no NCCL configuration on this node");
  }
  if (!unreadable.empty() && pinned.empty()) {
    return core::Warn(Reason::kEvidenceError, "NCCL configuration unreadable: " + unreadable[0]).Details(unreadable);
  }
  Finding f =
      pinned.empty()
          ? core::Pass(seen.empty()
                           ? "no NCCL overrides: NCCL tunes itself"
                           : fmt::format("{} NCCL setting(s), none pins channels, protocol or algorithm", seen.size()))
          : core::Warn(Reason::kConfig, fmt::format("NCCL pinned system-wide: {}", pinned[0]) +
                                            (pinned.size() > 1 ? fmt::format(" (+{} more)", pinned.size() - 1) : ""));
  return f.Details(seen)
      .Observed(pinned.empty() ? fmt::format("{} setting(s)", seen.size()) : fmt::format("{} pinned", pinned.size()))
      .Expected("NCCL_MIN_NCHANNELS, NCCL_PROTO, NCCL_ALGO unset");
}

// hpc-sdk: the NVIDIA HPC SDK in the release window, its compilers agreeing, its payload complete.
Finding HpcSdkCheck(const JudgeContext& ctx) {
  const Evidence& pci = ctx.Get("pci.devices");
  if (CountPciGpus(pci, "0x1002") > 0 && CountPciGpus(pci, "0x10de") == 0)
    return core::Skip(Reason::kNotApplicable, "AMD GPUs only");
  const Evidence& e = ctx.Get("hpcsdk.install");
  if (auto p = core::EvidenceProblem(e, "HPC SDK search")) return *p;
  if (!e.data.value("installed", false)) {
    return core::Fail(Severity::kMissing, "the NVIDIA HPC SDK is not installed (/opt/nvidia/hpc_sdk)")
        .Observed("absent")
        .Expected("an HPC SDK release in the window");
  }
  std::string rel = e.data["release"];
  std::vector<std::string> mismatch, missing;
  for (const auto& [c, v] : e.data["compilers"].items()) {
    if (!v.is_string() || v.get<std::string>() != rel)
      mismatch.push_back(fmt::format("{} reports {}", c, v.is_string() ? v.get<std::string>() : "nothing"));
  }
  for (const auto& [k, found] : e.data["payload"].items()) {
    if (!found.get<bool>()) missing.push_back(k);
  }
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "nvhpc", problem);
  if (!c) return *problem;
  Finding f =
      FromComparison(core::Compare(*c, {.version = rel}, ctx.now(), ctx.minimums().grace_period_days), "HPC SDK", rel);
  if (f.verdict != core::Verdict::kFail && !mismatch.empty()) {
    f = core::Fail(Severity::kConfig, fmt::format("HPC SDK {}: compiler versions disagree ({})", rel, mismatch[0]));
  }
  if (f.verdict != core::Verdict::kFail && !missing.empty()) {
    f = core::Fail(Severity::kMissing, fmt::format("HPC SDK {} is missing: {}", rel, fmt::join(missing, ", ")));
  }
  return f.Details(mismatch).Observed(fmt::format("{} ({}), {} of {} payload families", rel, e.data.value("arch", ""),
                                                  e.data["payload"].size() - missing.size(), e.data["payload"].size()));
}

Finding Sysctl(const JudgeContext& ctx, const char* key, int pass_max, int warn_max, const char* what) {
  const Evidence& e = ctx.Get("kernel.perf-sysctl");
  if (auto p = core::EvidenceProblem(e, "kernel sysctls")) return *p;
  if (!e.data[key].is_number()) {
    return core::Warn(Reason::kEvidenceError,
                      fmt::format("{} unreadable: {}", what, e.data.value(std::string(key) + "_error", std::string())));
  }
  int v = e.data[key];
  Finding f = v <= pass_max ? core::Pass(fmt::format("{} = {}", what, v))
              : v <= warn_max
                  ? core::Warn(Reason::kConfig, fmt::format("{} = {} restricts profiling for non-root users", what, v))
                  : core::Fail(Severity::kConfig, fmt::format("{} = {} disables profiling for users", what, v));
  return f.Observed(std::to_string(v)).Expected(fmt::format("<= {}", pass_max));
}

}  // namespace

void RegisterSoftwareChecks(core::Registry& r) {
  r.Add({CheckInfo{
             .id = "nccl-installed",
             .category = "software",
             .title = "NCCL installed with a readable version",
             .rationale = "Multi-GPU training needs NCCL on the host (outside containers too) at a known version; on "
                          "Kubernetes the images bring it, and a host copy is only reported.",
             .remediation = "Install libnccl2 and libnccl-dev from the CUDA repository (or HPC-X / HPC SDK's NCCL).",
             .criterion = "nccl-installed",
             .targets = core::kS | core::kK | core::kSA | core::kV | core::kC,
             .needs = {"nccl.libraries"},
             .reproduce = "ldconfig -p | grep libnccl",
         },
         NcclInstalled});
  r.Add({CheckInfo{
             .id = "hpc-sdk",
             .category = "software",
             .title = "NVIDIA HPC SDK in the release window, compilers agreeing, payload complete",
             .rationale =
                 "The HPC SDK brings matching compilers, MPI (HPC-X), NCCL, NVSHMEM, math libraries and profilers.",
             .remediation = "Install a current NVIDIA HPC SDK under /opt/nvidia/hpc_sdk on the compute nodes.",
             .criterion = "hpc-sdk",
             .targets = core::kS,
             .needs = {"pci.devices", "hpcsdk.install"},
             .reproduce = "ls /opt/nvidia/hpc_sdk/Linux_x86_64; nvc --version",
         },
         HpcSdkCheck});
  r.Add(
      {CheckInfo{
           .id = "nccl-autoconfig",
           .category = "networking",
           .title = "NCCL tunes itself: no channels, protocol or algorithm pinned system-wide",
           .rationale =
               "NCCL picks channels, protocol and algorithm per topology and message size; pinning them in /etc/nccl.conf slows most jobs.",
           .remediation =
               "Remove NCCL_MIN_NCHANNELS, NCCL_PROTO and NCCL_ALGO from /etc/nccl.conf, /etc/environment and modules; set them per job if ever.",
           .criterion = "nccl-autoconfig",
           .targets = core::kS | core::kK,
           .needs = {"nccl.config", "nccl.libraries"},
           .reproduce = "cat /etc/nccl.conf; grep NCCL_ /etc/environment; env | grep NCCL_",
       },
       NcclAutoconfig});
  r.Add({CheckInfo{
             .id = "perf-access",
             .category = "software",
             .title = "perf installed (and able to sample, with the perf-sample probe)",
             .rationale = "CPU-side profiling of data loaders and launch overhead needs perf.",
             .remediation = "Install linux-perf (Debian/Ubuntu: linux-tools-$(uname -r)).",
             .criterion = "perf-access",
             .targets = core::kS | core::kK | core::kSA | core::kV,
             .needs = {"perf.binary", "probe.perf-sample"},
             .probe = "perf-sample",
             .reproduce = "perf --version; perf stat -e cycles,instructions -- sleep 0.1",
         },
         PerfAccess});
  r.Add(
      {CheckInfo{
           .id = "perf-access-paranoid",
           .category = "software",
           .title = "perf_event_paranoid allows user profiling (<= 1)",
           .rationale =
               "perf_event_paranoid governs perf_event_open for every profiler (perf, Nsight Systems, py-spy native).",
           .remediation = "sysctl -w kernel.perf_event_paranoid=1 (persist in /etc/sysctl.d).",
           .criterion = "perf-access",
           .targets = core::kS | core::kK | core::kSA | core::kV,
           .needs = {"kernel.perf-sysctl"},
           .reproduce = "cat /proc/sys/kernel/perf_event_paranoid",
       },
       [](const JudgeContext& ctx) { return Sysctl(ctx, "perf_event_paranoid", 1, 2, "perf_event_paranoid"); }});
  r.Add({CheckInfo{
             .id = "perf-access-kptr",
             .category = "software",
             .title = "kptr_restrict is 0 (kernel symbols resolvable in profiles)",
             .rationale = "With kptr_restrict set, kernel frames in profiles show as unresolved addresses.",
             .remediation = "sysctl -w kernel.kptr_restrict=0 (persist in /etc/sysctl.d).",
             .criterion = "perf-access",
             .targets = core::kS | core::kK | core::kSA | core::kV,
             .needs = {"kernel.perf-sysctl"},
             .reproduce = "cat /proc/sys/kernel/kptr_restrict",
         },
         [](const JudgeContext& ctx) { return Sysctl(ctx, "kptr_restrict", 0, 2, "kptr_restrict"); }});
}

}  // namespace clustermax::checks
