// versions: installed versions against the minimum-version table (advisory-backed floors).
#include <fmt/format.h>

#include "checks/common.h"
#include "util/strings.h"

namespace clustermax::checks {
namespace {

using core::CheckInfo;
using core::Evidence;
using core::Skip;
using core::Warn;

constexpr char kNv[] = "https://nvidia.custhelp.com/app/answers/detail/a_id/";

Finding NvidiaDriver(const JudgeContext& ctx) {
  const Evidence& pci = ctx.Get("pci.devices");
  const Evidence& gpu = ctx.Get("gpu.inventory");
  const Evidence& proc = ctx.Get("nvidia.proc-version");
  if (auto skip = SkipUnlessNvidia(pci, gpu)) return *skip;
  std::string version, source;
  if (gpu.ok() && gpu.data.value("driver_version", json()).is_string()) {
    version = gpu.data["driver_version"];
    source = gpu.data.value("source", "nvml");
  } else if (proc.ok() && proc.data.value("loaded", false)) {
    version = proc.data["driver_version"];
    source = "/proc/driver/nvidia/version";
  }
  if (version.empty()) {
    if (!pci.ok() && !gpu.ok() && gpu.status == core::EvidenceStatus::kNotFound) {
      return Warn(Reason::kEvidenceError,
                  "no PCI inventory and no NVIDIA management library: cannot tell whether NVIDIA GPUs exist");
    }
    if (gpu.status == core::EvidenceStatus::kNotFound && CountPciGpus(pci, "0x10de") > 0 &&
        !(proc.ok() && proc.data.value("loaded", false))) {
      return core::Fail(Severity::kMissing, "NVIDIA GPUs on the PCI bus but no NVIDIA driver is loaded")
          .Observed(fmt::format("{} NVIDIA GPU(s), no driver", CountPciGpus(pci, "0x10de")));
    }
    if (auto p = core::EvidenceProblem(gpu, "NVIDIA driver version")) return *p;
    return Warn(Reason::kEvidenceError, "NVIDIA driver version could not be read");
  }
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "nvidiaDriver", problem);
  if (!c) return *problem;
  auto cmp = core::Compare(*c, {.version = version}, ctx.now(), ctx.minimums().grace_period_days);
  return FromComparison(cmp, "driver", version).Detail("read from " + source);
}

Finding ContainerToolkitVersion(const JudgeContext& ctx) {
  const Evidence& tk = ctx.Get("container-toolkit.version");
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  if (NotInstalled(tk))
    return Skip(Reason::kNotApplicable,
                "NVIDIA Container Toolkit not installed (presence is graded by container-toolkit)");
  if (auto p = core::EvidenceProblem(tk, "NVIDIA Container Toolkit version")) return *p;
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "nvidiaContainerToolkit", problem);
  if (!c) return *problem;
  std::string v = tk.data["version"];
  return FromComparison(core::Compare(*c, {.version = v}, ctx.now(), ctx.minimums().grace_period_days), "toolkit", v)
      .Detail("read with " + tk.data.value("tool", std::string("nvidia-ctk")) + " --version");
}

Finding CudaToolkit(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("cuda.toolkits");
  if (auto p = core::EvidenceProblem(e, "CUDA toolkit inventory")) return *p;
  const json& toolkits = e.data["toolkits"];
  if (toolkits.empty())
    return Skip(Reason::kNotApplicable, "no CUDA toolkit on this host (presence is graded by cuda-toolkit-present)");
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "cudaToolkit", problem);
  if (!c) return *problem;
  std::vector<std::string> lines;
  std::optional<Finding> default_finding;
  int older_non_default = 0, unreadable = 0;
  std::string default_version;
  for (const auto& t : toolkits) {
    std::string nvcc = t["nvcc"];
    if (!t["version"].is_string()) {
      ++unreadable;
      lines.push_back(fmt::format("{}: unreadable ({})", nvcc, t.value("error", "")));
      continue;
    }
    std::string v = t["version"];
    auto cmp = core::Compare(*c, {.version = v}, ctx.now(), ctx.minimums().grace_period_days);
    lines.push_back(fmt::format("{}: {} ({}){}", nvcc, v, core::ToString(cmp.outcome),
                                t.value("default", false) ? " default" : ""));
    if (t.value("default", false)) {
      if (!default_finding) {
        default_finding = FromComparison(cmp, "default toolkit", v);
        default_version = v;
      }
    } else if (cmp.outcome == core::Outcome::kFail) {
      ++older_non_default;
    }
  }
  Finding f;
  if (default_finding && default_finding->verdict != core::Verdict::kPass) {
    f = *default_finding;
  } else if (older_non_default > 0) {
    f = Warn(Reason::kConfig,
             fmt::format("the default toolkit passes, but {} older toolkit(s) below {} are also installed",
                         older_non_default, c->floors.front().version));
    f.observed = default_version;
    f.expected = ">= " + c->floors.front().version;
  } else if (!default_finding || unreadable > 0) {
    f = Warn(Reason::kEvidenceError, "a CUDA toolkit version could not be read");
  } else {
    f = *default_finding;
  }
  return f.Details(lines);
}

Finding Runc(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("runc.version");
  if (NotInstalled(e)) return Skip(Reason::kNotApplicable, "runc not installed");
  if (auto p = core::EvidenceProblem(e, "runc version")) return *p;
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "runc", problem);
  if (!c) return *problem;
  std::string v = e.data["version"];
  return FromComparison(core::Compare(*c, {.version = v}, ctx.now(), ctx.minimums().grace_period_days), "runc", v);
}

Finding Docker(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("docker.version");
  if (NotInstalled(e))
    return Skip(Reason::kNotApplicable, "Docker not installed (presence on workers is graded by docker-workers)");
  if (auto p = core::EvidenceProblem(e, "Docker version")) return *p;
  if (!e.data.value("is_docker", false)) {
    return Skip(Reason::kNotApplicable,
                "the docker command is not Docker Engine: " + e.data.value("client_raw", std::string()));
  }
  if (!e.data["server_version"].is_string()) {
    std::string client = e.data["client_version"].is_string() ? e.data["client_version"].get<std::string>() : "?";
    return Warn(Reason::kUnverified, "only the Docker client version is readable; the daemon did not answer")
        .Observed("client " + client)
        .Detail(e.data.value("server_error", std::string()));
  }
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "docker", problem);
  if (!c) return *problem;
  std::string v = e.data["server_version"];
  return FromComparison(core::Compare(*c, {.version = v}, ctx.now(), ctx.minimums().grace_period_days), "Docker server",
                        v);
}

Finding ConnectxFirmware(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("rdma.devices");
  if (auto p = core::EvidenceProblem(e, "RDMA device inventory")) return *p;
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "connectxFirmware", problem);
  if (!c) return *problem;
  std::vector<std::string> lines;
  int fails = 0, unknown = 0, passes = 0;
  std::string worst_observed;
  for (const auto& d : e.data["devices"]) {
    if (d.value("vendor", json()).is_string() && d["vendor"] != "0x15b3") continue;
    std::string name = d["name"];
    if (!d["fw_ver"].is_string()) {
      ++unknown;
      lines.push_back(fmt::format("{}: firmware not read ({})", name, d.value("fw_read_status", "")));
      continue;
    }
    std::string fw = d["fw_ver"];
    auto cmp = core::Compare(*c, {.version = fw}, ctx.now(), ctx.minimums().grace_period_days);
    lines.push_back(fmt::format("{}: {} {}", name, fw, cmp.message));
    if (cmp.outcome == core::Outcome::kFail) {
      ++fails;
      worst_observed = fw;
    } else if (cmp.outcome == core::Outcome::kPass) {
      ++passes;
    } else {
      ++unknown;
    }
  }
  int total = fails + unknown + passes;
  const json& pci_count = e.data["pci_mellanox_functions"];
  if (total == 0) {
    if (pci_count.is_number() && pci_count.get<int>() == 0) {
      return Skip(Reason::kNotApplicable, "no Mellanox/NVIDIA (15b3) network device in the PCI inventory");
    }
    if (pci_count.is_number()) {
      return Warn(
          Reason::kEvidenceError,
          fmt::format("{} ConnectX PCI function(s) but no RDMA device in /sys/class/infiniband", pci_count.get<int>()));
    }
    return Warn(Reason::kEvidenceError, "PCI inventory unreadable and no RDMA device listed");
  }
  Finding f = fails > 0     ? core::Fail(Severity::kVersion,
                                         fmt::format("{} of {} ConnectX device(s) below the firmware floor", fails, total))
              : unknown > 0 ? Warn(Reason::kUnverified,
                                   fmt::format("{} of {} ConnectX device(s) could not be graded", unknown, total))
                            : core::Pass(fmt::format("all {} ConnectX device(s) meet the firmware floor", total));
  f.observed = worst_observed;
  f.expected = "train-specific floor (a_id 5699)";
  return f.Details(lines);
}

Finding Dcgm(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("dcgm.version");
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  if (NotInstalled(e))
    return Skip(Reason::kNotApplicable, "DCGM not installed (presence is graded by dcgm-healthchecks)");
  if (auto p = core::EvidenceProblem(e, "DCGM version")) return *p;
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "dcgm", problem);
  if (!c) return *problem;
  std::string v = e.data["version"];
  return FromComparison(core::Compare(*c, {.version = v}, ctx.now(), ctx.minimums().grace_period_days), "DCGM", v);
}

Finding MinimumTableCurrent(const JudgeContext& ctx) {
  const auto& t = ctx.minimums();
  auto s = core::TableStaleness(t, ctx.now());
  Finding f =
      s.stale
          ? Warn(Reason::kToolFault,
                 fmt::format("the minimum-version table is {:.0f} days old (limit {}): it may miss recent advisories; "
                             "install a newer one with: clustermax minimums update FILE|URL",
                             s.age_days, t.max_age_days))
          : core::Pass(fmt::format("the minimum-version table is {:.0f} days old", s.age_days));
  f.observed = fmt::format("generated {} ({})", t.generated_text, t.origin);
  f.expected = fmt::format("<= {} days old", t.max_age_days);
  // A key between a family's rows that the table neither lists nor declares unlisted grades
  // unknown on every node: most likely a row was lost. Our fault, like staleness.
  auto gaps = core::MinimumTableGaps(t);
  if (!gaps.empty()) {
    std::vector<std::string> named;
    for (const auto& g : gaps) named.push_back(fmt::format("{} {} ({})", g.family, g.key, g.component));
    std::string gap_text =
        fmt::format("the minimum-version table has {} gap(s): {}", gaps.size(), fmt::join(named, ", "));
    if (f.verdict == core::Verdict::kPass) {
      f = Warn(Reason::kToolFault, gap_text).Observed(f.observed).Expected(f.expected);
    } else {
      f.message += "; " + gap_text;
    }
    f.expected += ", every key between a family's oldest and newest row listed or declared unlisted";
    for (const auto& g : gaps)
      f.Detail(
          fmt::format("{}: {} {} is neither listed, end-of-life nor declared unlisted", g.component, g.family, g.key));
  }
  return f;
}

}  // namespace

void RegisterVersionChecks(core::Registry& r) {
  using core::kC;
  using core::kK;
  using core::kS;
  using core::kSA;
  using core::kV;
  r.Add(
      {CheckInfo{
           .id = "security-nvidia-driver",
           .category = "versions",
           .title = "NVIDIA driver at or above its branch's security floor",
           .rationale = "GPU driver bulletins fix privilege escalation and denial of service in the kernel module; an "
                        "end-of-life branch gets no fixes at all.",
           .remediation = "Upgrade to the newest release of a supported branch (see the advisory), or move off an "
                          "end-of-life branch.",
           .criterion = "security-nvidia-driver",
           .references = {{"NVIDIA a_id 5821", std::string(kNv) + "5821/"},
                          {"NVIDIA a_id 5747", std::string(kNv) + "5747/"}},
           .targets = kS | kK | kSA | kV | kC,
           .needs = {"pci.devices", "gpu.inventory", "nvidia.proc-version"},
           .reproduce = "nvidia-smi --query-gpu=driver_version --format=csv,noheader",
       },
       NvidiaDriver});
  r.Add({CheckInfo{
             .id = "security-nvidia-container-toolkit",
             .category = "versions",
             .title = "NVIDIA Container Toolkit at or above 1.19.1",
             .rationale = "Toolkit advisories (e.g. NVIDIAScape) let a container escape to the host.",
             .remediation = "Upgrade nvidia-container-toolkit to the fixed release.",
             .criterion = "security-nvidia-container-toolkit",
             .references = {{"NVIDIA a_id 5850", std::string(kNv) + "5850/"},
                            {"CVE-2026-24260", "https://www.cve.org/CVERecord?id=CVE-2026-24260"}},
             .targets = kS | kK | kSA | kV,
             .needs = {"container-toolkit.version", "pci.devices", "gpu.inventory"},
             .reproduce = "nvidia-ctk --version",
         },
         ContainerToolkitVersion});
  r.Add({CheckInfo{
             .id = "cuda-toolkit-security",
             .category = "versions",
             .title = "Every installed CUDA toolkit at or above 13.1",
             .rationale = "CUDA toolkit bulletins fix code execution in the compiler and binary utilities users run on "
                          "untrusted inputs.",
             .remediation =
                 "Install CUDA 13.1 or newer and make it the default (/usr/local/cuda); remove older toolkits.",
             .criterion = "cuda-toolkit-security",
             .references = {{"NVIDIA a_id 5755", std::string(kNv) + "5755/"}},
             .targets = kS | kSA | kV | kC,  // the toolkit a workload builds with, in a container too
             .needs = {"cuda.toolkits"},
             .reproduce = "nvcc --version",
         },
         CudaToolkit});
  r.Add(
      {CheckInfo{
           .id = "security-runc",
           .category = "versions",
           .title = "runc at or above the fixed release of its minor line",
           .rationale =
               "runc container-escape advisories (GHSA-xjvp-4fhw-gc47 and earlier) affect every container on the node.",
           .remediation = "Upgrade runc (or containerd.io, which bundles it) to the fixed release of its minor line.",
           .criterion = "security-runc",
           .references = {{"GHSA-xjvp-4fhw-gc47", "https://osv.dev/vulnerability/GHSA-xjvp-4fhw-gc47"}},
           .targets = kS | kK | kSA | kV,
           .needs = {"runc.version"},
           .reproduce = "runc --version",
       },
       Runc});
  r.Add(
      {CheckInfo{
           .id = "security-docker",
           .category = "versions",
           .title = "Docker Engine (daemon) at or above 29.7.0",
           .rationale = "The daemon's version is what is exposed; the client version proves nothing about the server.",
           .remediation = "Upgrade docker-ce (Docker Engine) to 29.7.0 or newer.",
           .criterion = "security-docker",
           .references = {{"Docker Engine 29.7.0", "https://docs.docker.com/engine/release-notes/29/#2970"},
                          {"CVE-2026-17106", "https://www.cve.org/CVERecord?id=CVE-2026-17106"}},
           .targets = kS | kK | kSA | kV | kC,
           .needs = {"docker.version"},
           .reproduce = "docker version --format '{{.Server.Version}}'",
       },
       Docker});
  r.Add({CheckInfo{
             .id = "security-connectx-firmware",
             .category = "versions",
             .title = "ConnectX firmware at or above its train's floor",
             .rationale = "NIC firmware advisories affect the fabric every tenant shares.",
             .remediation =
                 "Update the adapter firmware (mlxfwmanager / the vendor bundle) to the fixed patch of its train.",
             .criterion = "security-connectx-firmware",
             .references = {{"NVIDIA a_id 5699", std::string(kNv) + "5699/"}},
             .targets = kS | kK | kSA | kV,
             .needs = {"rdma.devices"},
             .reproduce = "cat /sys/class/infiniband/*/fw_ver",
         },
         ConnectxFirmware});
  r.Add({CheckInfo{
             .id = "security-dcgm",
             .category = "versions",
             .title = "DCGM at or above 4.5.3",
             .rationale = "The DCGM host engine runs privileged on every GPU node.",
             .remediation = "Upgrade datacenter-gpu-manager to 4.5.3 or newer.",
             .references = {{"NVIDIA a_id 5857", std::string(kNv) + "5857/"},
                            {"CVE-2026-47483", "https://www.cve.org/CVERecord?id=CVE-2026-47483"}},
             .targets = kS | kK | kSA | kV,
             .needs = {"dcgm.version", "pci.devices", "gpu.inventory"},
             .reproduce = "dcgmi --version",
         },
         Dcgm});
  r.Add(
      {CheckInfo{
           .id = "minimum-table-current",
           .category = "versions",
           .title = "Minimum-version table is recent",
           .rationale =
               "A stale table may miss advisories published since it was generated; this is our fault, not the provider's.",
           .remediation = "Use a newer clustermax release or pass a current table with --minimums FILE.",
           .targets = core::kAllTargets,
           .needs = {},
           .reproduce = "clustermax minimums show",
       },
       MinimumTableCurrent});
}

}  // namespace clustermax::checks
