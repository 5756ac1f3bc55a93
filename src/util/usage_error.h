// The one error type for "the caller asked for something this tool cannot do as asked": an
// unknown profile, check or probe name, a malformed option value, two targets at once. Thrown by
// any layer (planning, the audit pipeline, the CLI); the CLI prints it as "clustermax: error: ..."
// and exits 1. Machine failures are never usage errors: they are evidence statuses.
#pragma once
#include <stdexcept>

namespace clustermax {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace clustermax
