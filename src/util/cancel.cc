#include "util/cancel.h"

#include <csignal>

namespace clustermax::util {

namespace {
// Constant-initialised at namespace scope: the signal handler touches no function-local static
// (whose first use takes a guard lock, which is not async-signal-safe) and only a lock-free atomic.
std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void OnCancelSignal(int) { g_cancel.store(true); }

void Install(struct sigaction* old_int, struct sigaction* old_term, struct sigaction* old_hup,
             struct sigaction* old_usr1) {
  struct sigaction sa {};
  sa.sa_handler = OnCancelSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, old_int);
  sigaction(SIGTERM, &sa, old_term);
  sigaction(SIGHUP, &sa, old_hup);  // the operator's ssh session dropped
  // How a Slurm task is asked to stop and send what it has: srun forwards SIGUSR1 to its tasks,
  // where a SIGTERM to srun makes it SIGKILL them.
  sigaction(SIGUSR1, &sa, old_usr1);
}
}  // namespace

std::atomic<bool>& CancelFlag() { return g_cancel; }

void InstallCancelHandlers() { Install(nullptr, nullptr, nullptr, nullptr); }

bool Cancelled() { return g_cancel.load(std::memory_order_relaxed); }

struct CancelScope::Saved {
  struct sigaction old_int = {}, old_term = {}, old_hup = {}, old_usr1 = {};
};

CancelScope::CancelScope() : saved_(new Saved) {
  Install(&saved_->old_int, &saved_->old_term, &saved_->old_hup, &saved_->old_usr1);
}

CancelScope::~CancelScope() {
  sigaction(SIGINT, &saved_->old_int, nullptr);
  sigaction(SIGTERM, &saved_->old_term, nullptr);
  sigaction(SIGHUP, &saved_->old_hup, nullptr);
  sigaction(SIGUSR1, &saved_->old_usr1, nullptr);
  g_cancel.store(false);
  delete saved_;
}

}  // namespace clustermax::util
