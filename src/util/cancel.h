// Cancellation by the operator: one process-wide flag that SIGINT, SIGTERM, SIGHUP and SIGUSR1 (what
// srun forwards to a task asked to stop: cli/ steps) set once the handlers
// are installed. Long loops (a benchmark's workers, a fan-out waiting for its pods) poll it between
// operations and then clean up what they created instead of dying half-way.
#pragma once
#include <atomic>

namespace clustermax::util {

// The flag itself; tests may set it directly.
std::atomic<bool>& CancelFlag();
// SIGINT, SIGTERM, SIGHUP and SIGUSR1 set the flag instead of ending the process (for the rest of the
// process).
void InstallCancelHandlers();
bool Cancelled();

// The handlers for one scope: installed on construction, the previous ones (and a clear flag)
// restored on destruction, so a Ctrl-C after the scope ends the process as usual.
class CancelScope {
 public:
  CancelScope();
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  struct Saved;
  Saved* saved_;
};

}  // namespace clustermax::util
