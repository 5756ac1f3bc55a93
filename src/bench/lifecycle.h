// `bench lifecycle`: the timings a cluster's user lives with (performance.md 8). The login side
// (cli/bench_lifecycle.cc) times what Slurm does: a job from submission to running, srun launching
// on 1, 2, 4 ... N nodes, an allocation with GPUs, a container started through pyxis, a node
// rebooted to schedulable again. Each node, as a task of a job step, times what happens on it
// (RunLifeRankJob): `python -c "import PACKAGE"` on each storage tier cold (the package's files
// dropped from the page cache first, posix_fadvise DONTNEED: no root needed) and warm, a package
// installed into a fresh virtual environment from the site's index, a model's files read from a
// shared filesystem or S3 into host memory, a container image imported and first started with each
// runtime the node has. Everything that pulls data or changes state runs only when asked for by
// name; every step is bounded in time.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/grade.h"

namespace clustermax::bench::life {

// Median of samples (the mean of the middle two for an even count); 0 for none.
double Median(std::vector<double> v);

// A storage tier whose import time is measured: a name, and either a directory that holds the
// package (a virtual environment's root, whose bin/python is then used, or a directory put on
// PYTHONPATH) or none (the interpreter's own installation).
struct Tier {
  std::string name, dir;
};
// "name=DIR" or "DIR" (named after the directory's last component). Throws UsageError.
Tier ParseTier(const std::string& spec);
// A dotted Python module name ("torch", "numpy.linalg"): nothing a shell or Python could run.
bool ValidModuleName(const std::string& name);

// The files below `path` (or `path` itself), dropped from the page cache (posix_fadvise DONTNEED,
// as any user may for files they can read). Symbolic links to directories are not followed. The
// number of files dropped; at most `max_files`.
size_t DropFromPageCache(const std::filesystem::path& path, size_t max_files = 500000);

// Reads every file below `path` (symbolic links to files followed, to directories not) with
// `threads` readers in 16 MiB pieces into host memory buffers, as a model loader does. Fills
// {"files", "bytes", "seconds", "gbps"} or {"error"}.
nlohmann::json ReadTree(const std::filesystem::path& path, int threads);

// enroot takes docker://[REGISTRY#]IMAGE: "nvcr.io/nvidia/pytorch:24.05-py3" becomes
// "docker://nvcr.io#nvidia/pytorch:24.05-py3"; Docker Hub names stay as they are.
std::string EnrootUri(const std::string& image);

// One task's work in a lifecycle step; the document it reports (framed by the CLI).
// kind "probe": {"node", "rank", "t_start" (Unix seconds), "gpus_visible"}.
// kind "node": {"node", "imports": [...], "pip": {...}, "model": {...}, "s3": {...},
// "containers": [...]}, each part present when the job asked for it.
nlohmann::json RunLifeRankJob(const nlohmann::json& job, const std::string& node, int rank);

// Node states of `scontrol show node -o`: the State= value split at '+' ("IDLE+DRAIN+REBOOT_ISSUED"
// -> {"IDLE", "DRAIN", "REBOOT_ISSUED"}); empty when the line has none. A '*' suffix (not
// responding) becomes the flag "NOT_RESPONDING".
std::vector<std::string> NodeStateFlags(const std::string& scontrol_line);
// The node can take jobs: IDLE, MIXED or ALLOCATED with no DOWN, DRAIN, FAIL, REBOOT, NOT_RESPONDING
// or POWER flag.
bool Schedulable(const std::vector<std::string>& flags);

// A parsed `scontrol show node` record (util::ParseScontrolRecord) whose State is Schedulable; false
// for an empty record or one without a State.
bool InService(const std::map<std::string, std::string>& record);

std::vector<MetricValue> LifecycleMetrics(const nlohmann::json& result);
std::string RenderLifecycle(const nlohmann::json& result);

}  // namespace clustermax::bench::life
