// containers: an active probe that starts a GPU container.
#include <fmt/format.h>

#include "checks/common.h"

namespace clustermax::checks {
namespace {

Finding ContainerGpuLaunch(const JudgeContext& ctx) {
  const core::Evidence& e = ctx.Get("probe.container-launch");
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *skip;
  if (auto p = core::EvidenceProblem(e, "container launch")) return *p;
  if (!e.data["engine"].is_string()) return core::Skip(Reason::kNotApplicable, "no container engine (docker) on this node");
  std::string image = e.data.value("image", "");
  if (!e.data.value("ran", false)) {
    return core::Warn(Reason::kUnverified, fmt::format("the container did not start (exit {})", e.data.value("exit_code", -1)))
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

}  // namespace

void RegisterContainerChecks(core::Registry& r) {
  r.Add({core::CheckInfo{
             .id = "container-gpu-launch",
             .category = "containers",
             .title = "A GPU container starts and sees the GPUs",
             .rationale = "Toolkit wiring is only proven by a container that actually lists the GPUs.",
             .remediation = "Install the NVIDIA Container Toolkit and configure the runtime (nvidia-ctk runtime configure).",
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
