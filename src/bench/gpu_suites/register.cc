// The `bench gpu` suites, in run order: one line per suite file of this directory. Adding a suite:
// docs/adding-a-gpu-suite.md.
#include "bench/gpu_suite.h"

namespace clustermax::bench {

GpuSuite GemmSuite();
GpuSuite MamfSuite();
GpuSuite GroupedGemmSuite();
GpuSuite GemvSuite();
GpuSuite MembwSuite();
GpuSuite PcieSuite();
GpuSuite P2pSuite();
GpuSuite LaunchSuite();

const std::vector<GpuSuite>& GpuSuiteTable() {
  static const std::vector<GpuSuite> table = {
      GemmSuite(), MamfSuite(), GroupedGemmSuite(), GemvSuite(), MembwSuite(), PcieSuite(), P2pSuite(), LaunchSuite(),
  };
  return table;
}

const GpuSuite* FindGpuSuite(const std::string& key) {
  for (const auto& s : GpuSuiteTable()) {
    if (s.key == key) return &s;
  }
  return nullptr;
}

}  // namespace clustermax::bench
