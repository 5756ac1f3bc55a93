// `clustermax health`: the passive node health check for Slurm's HealthCheckProgram, a prolog or
// epilog, or a timer (audit/health.h; docs/ARCHITECTURE.md "Health mode").
// Exit status: 0 healthy, 2 unhealthy (also when the run ran past --timeout), 1 the tool could not
// do its job (usage), 75 another health run holds the lock (nothing was checked).
#pragma once

namespace clustermax::cli {

inline constexpr int kExitHealthBusy = 75;  // EX_TEMPFAIL

}  // namespace clustermax::cli
