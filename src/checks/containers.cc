// containers: an active probe that starts a GPU container.
#include <fmt/format.h>

#include "checks/common.h"

namespace clustermax::checks {
namespace {

Finding ContainerGpuLaunch(const JudgeContext& ctx) {
  const core::Evidence& e = ctx.Get("probe.container-launch");
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  if (auto p = core::EvidenceProblem(e, "container launch")) return *p;
  if (!e.data["engine"].is_string())
    return core::Skip(Reason::kNotApplicable, "no container engine (docker) on this node");
  std::string image = e.data.value("image", "");
  if (!e.data.value("ran", false)) {
    return core::Warn(Reason::kUnverified,
                      fmt::format("the container did not start (exit {})", e.data.value("exit_code", -1)))
        .Observed("launch failed")
        .Expected("GPUs listed inside " + image)
        .Detail(e.data.value("stderr", std::string()));
  }
  size_t n = e.data["gpus"].size();
  Finding f = n > 0 ? core::Pass(fmt::format("{} GPU(s) listed inside the container", n))
                    : core::Fail(Severity::kConfig, "the container ran but saw no GPU");
  f.observed = fmt::format("{} GPU(s)", n);
  f.expected = "GPUs listed inside " + image;
  for (const auto& g : e.data["gpus"]) f.Detail(g.get<std::string>());
  return f;
}

// enroot-import: the pull path pyxis jobs use (registry, credentials, temporary space) works.
Finding EnrootImport(const JudgeContext& ctx) {
  const core::Evidence& e = ctx.Get("probe.enroot-import");
  if (auto p = core::EvidenceProblem(e, "enroot import")) return *p;
  if (!e.data.value("installed", false))
    return core::Skip(Reason::kPrerequisiteMissing, "enroot is not installed on this node");
  std::string image = e.data.value("image", ""), status = e.data.value("status", "");
  std::vector<std::string> details;
  if (!e.data.value("output_tail", "").empty()) details.push_back(e.data.value("output_tail", ""));
  if (!e.data.value("cleaned_up", true))
    details.push_back("could not remove " + e.data.value("file", "") + ": remove it by hand");
  if (status == "timeout") {
    return core::Warn(
               Reason::kConfig,
               fmt::format("enroot import of {} did not finish within {:g} s (registry reachability or bandwidth)",
                           image, e.data.value("timeout_s", 30.0)))
        .Details(details)
        .Expected("the import finishes");
  }
  if (status != "ok" || e.data.value("exit_code", 1) != 0) {
    return core::Warn(Reason::kConfig,
                      fmt::format("enroot import of {} failed (exit {}): registry, credentials or temporary space",
                                  image, e.data.value("exit_code", -1)))
        .Details(details)
        .Expected("the import succeeds");
  }
  return core::Pass(fmt::format("enroot imported {} in {:.1f} s", image, e.data.value("seconds", 0.0)))
      .Details(details)
      .Expected("the import succeeds");
}

// Worker tools of a Slurm cluster: installed (PASS) or not (FAIL missing), from each node's evidence.
Finding WorkerTool(const JudgeContext& ctx, const char* id, const std::string& name, const std::string& why_missing) {
  const core::Evidence& e = ctx.Get(id);
  if (auto p = core::EvidenceProblem(e, name)) return *p;
  if (!e.data.value("installed", false))
    return core::Fail(Severity::kMissing, name + " is not installed" + why_missing);
  std::string v = e.data.value("version", json()).is_string() ? e.data["version"].get<std::string>() : "?";
  return core::Pass(fmt::format("{} {} installed", e.data.value("tool", name), v)).Observed(v);
}

Finding Enroot(const JudgeContext& ctx) {
  return WorkerTool(ctx, "enroot.version", "enroot", " (pyxis runs containers through enroot)");
}
Finding Singularity(const JudgeContext& ctx) {
  return WorkerTool(ctx, "apptainer.version", "Apptainer or Singularity", "");
}
Finding DockerWorkers(const JudgeContext& ctx) {
  const core::Evidence& e = ctx.Get("docker.version");
  if (auto p = core::EvidenceProblem(e, "docker --version")) return *p;
  if (!e.data.value("installed", false))
    return core::Fail(Severity::kMissing, "Docker is not installed on this worker");
  if (!e.data.value("is_docker", false)) {
    return core::Fail(Severity::kMissing, "`docker` here is not Docker (a podman or nerdctl shim): " +
                                              e.data.value("client_raw", std::string()));
  }
  return core::Pass("Docker " + e.data["client_version"].get<std::string>() + " installed")
      .Observed(e.data["client_version"].get<std::string>());
}

}  // namespace

void RegisterContainerChecks(core::Registry& r) {
  r.Add({core::CheckInfo{
             .id = "enroot",
             .category = "containers",
             .title = "enroot installed on the workers",
             .rationale =
                 "Pyxis runs `srun --container-image` through enroot; without it Slurm jobs cannot use containers.",
             .remediation = "Install enroot (and enroot+caps) on every GPU node.",
             .criterion = "enroot",
             .targets = core::kS,
             .needs = {"enroot.version"},
             .reproduce = "enroot version"},
         Enroot});
  r.Add({core::CheckInfo{.id = "singularity",
                         .category = "containers",
                         .title = "Apptainer or Singularity installed on the workers",
                         .rationale = "HPC users run SIF images with Apptainer/Singularity without root.",
                         .remediation = "Install Apptainer (or SingularityCE) on every GPU node.",
                         .criterion = "singularity",
                         .targets = core::kS,
                         .needs = {"apptainer.version"},
                         .reproduce = "apptainer --version || singularity --version"},
         Singularity});
  r.Add({core::CheckInfo{.id = "docker-workers",
                         .category = "containers",
                         .title = "Docker installed on the workers",
                         .rationale = "Users expect to build and run Docker images on the GPU nodes they rent.",
                         .remediation = "Install Docker Engine (not a podman shim) on the workers.",
                         .criterion = "docker-workers",
                         .targets = core::kS,
                         .needs = {"docker.version"},
                         .reproduce = "docker --version"},
         DockerWorkers});
  r.Add(
      {core::CheckInfo{
           .id = "enroot-import",
           .category = "containers",
           .title = "enroot imports an image from a registry",
           .rationale =
               "pyxis jobs start by importing their image: a blocked registry, missing credentials or a full temp dir fail every job.",
           .remediation =
               "Open the registry (or run a local mirror), put credentials in ~/.config/enroot/.credentials, size ENROOT_CACHE_PATH/TMPDIR.",
           .criterion = "enroot",
           .targets = core::kS,
           .needs = {"probe.enroot-import"},
           .probe = "enroot-import",
           .probe_required = true,
           .reproduce = "enroot import -o /tmp/probe.sqsh docker://busybox:1.36 && rm /tmp/probe.sqsh"},
       EnrootImport});
  r.Add({core::CheckInfo{
             .id = "container-gpu-launch",
             .category = "containers",
             .title = "A GPU container starts and sees the GPUs",
             .rationale = "Toolkit wiring is only proven by a container that actually lists the GPUs.",
             .remediation =
                 "Install the NVIDIA Container Toolkit and configure the runtime (nvidia-ctk runtime configure).",
             .criterion = "docker-workers",
             .targets = core::kS | core::kK | core::kSA | core::kV,
             .needs = {"probe.container-launch", "pci.devices", "gpu.inventory"},
             .probe = "container-launch",
             .probe_required = true,
             .reproduce = "docker run --rm --gpus all IMAGE nvidia-smi -L",
         },
         ContainerGpuLaunch});
}

}  // namespace clustermax::checks
