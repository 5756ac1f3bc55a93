#include "checks/register.h"

#include "checks/common.h"

namespace clustermax::checks {

void RegisterAll(core::Registry& r) {
  RegisterVersionChecks(r);
  RegisterIsolationChecks(r);
  RegisterHardwareChecks(r);
  RegisterSoftwareChecks(r);
  RegisterContainerChecks(r);
  RegisterHealthChecks(r);
  RegisterAccessChecks(r);
  RegisterGpuChecks(r);
  RegisterNodeChecks(r);
  RegisterFabricChecks(r);
  RegisterServiceChecks(r);
  RegisterSlurmChecks(r);
  RegisterKubernetesChecks(r);
}

const core::Registry& DefaultRegistry() {
  static const core::Registry registry = [] {
    core::Registry r;
    RegisterAll(r);
    return r;
  }();
  return registry;
}

}  // namespace clustermax::checks
