// The one list of check modules.
#pragma once
#include "core/check.h"

namespace clustermax::checks {

// Registers every check, in report order. Throws std::invalid_argument on a registry defect.
void RegisterAll(core::Registry& r);
const core::Registry& DefaultRegistry();

}  // namespace clustermax::checks
