// The step's PMIx, for `bench net`'s ranks launched with srun --mpi=pmix: Slurm's PMIx server
// (the mpi/pmix plugin inside slurmstepd) carries each task's entry to every other task of the
// step, so the ranks find each other without a shared filesystem and without a daemon of ours.
// libpmix is loaded at run time (dlopen "libpmix.so.2"), never linked: the node binary starts
// where it is absent, and only a PMIx launch needs it.
#pragma once
#include <string>
#include <vector>

namespace clustermax::bench::net {

// True when this process is a task of a PMIx-launched step (PMIX_RANK and PMIX_NAMESPACE set).
bool UnderPmix();

// The step's one exchange: publishes `value` for this task, waits at the step-wide fence (every
// task of the step must call this exactly once; the fence collects the data) and returns every
// task's value by PMIx rank. Throws std::runtime_error naming what failed (libpmix absent, the
// server refusing, the fence timing out after `timeout_s`).
std::vector<std::string> PmixAllGather(const std::string& value, double timeout_s);

// The message when libpmix cannot be loaded from `library` (empty: it loads); a test seam for the
// absent-library path.
std::string PmixLoadError(const char* library);

}  // namespace clustermax::bench::net
