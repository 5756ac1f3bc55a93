// The helper's suite table: one line per suite file. Adding a suite: write suites/NAME.cc with
// `extern const HelperSuite kNameSuite = {"kind", Run};`, declare it and list it here
// (docs/adding-a-gpu-suite.md).
#include "gpubench/harness.h"

namespace clustermax::gpubench {

extern const HelperSuite kGemmSuite, kGroupedSuite, kMembwSuite, kPcieSuite, kP2pSuite, kLaunchSuite, kBurnInSuite,
    kLoadSuite;

const std::vector<HelperSuite>& HelperSuites() {
  static const std::vector<HelperSuite> s = {kGemmSuite, kGroupedSuite, kMembwSuite,  kPcieSuite,
                                             kP2pSuite,  kLaunchSuite,  kBurnInSuite, kLoadSuite};
  return s;
}

}  // namespace clustermax::gpubench
