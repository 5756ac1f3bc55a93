// The benchmark's own corner of a filesystem: a fresh directory under the user's path, every file
// and directory created in it recorded, and only those removed at the end (also after Ctrl-C).
// It never deletes anything it did not create. Cancellation is one process-wide flag that SIGINT
// and SIGTERM set; workers poll it between operations.
#pragma once
#include <atomic>
#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/cancel.h"

namespace clustermax::bench {

// Cancellation is the process-wide flag of util/cancel.h.
using util::CancelFlag;
using util::Cancelled;
using util::InstallCancelHandlers;

// A progress callback that also reports how far a run of `steps` steps is: each line announces the
// start of the next step, so the fraction done before it is (steps announced so far) / steps.
// `fraction` empty: `progress` unchanged.
inline std::function<void(const std::string&)> CountingSteps(std::function<void(const std::string&)> progress,
                                                             std::function<void(double)> fraction, int steps) {
  if (!fraction || steps <= 0) return progress;
  auto done = std::make_shared<int>(0);
  return [progress = std::move(progress), fraction = std::move(fraction), steps, done](const std::string& line) {
    fraction(std::min(1.0, static_cast<double>((*done)++) / steps));
    if (progress) progress(line);
  };
}

struct SpaceInfo {
  uint64_t free_bytes = 0, total_bytes = 0;
  std::string fs_type;  // "ext4", "xfs", "tmpfs", "nfs", "lustre", ... or "0x<magic>"
};
// statvfs + statfs of `path`; throws with the path and errno text.
SpaceInfo QuerySpace(const std::filesystem::path& path);

// Throws a clear error unless `need` bytes plus a safety margin fit in the free space of `path`.
void RequireFreeSpace(const std::filesystem::path& path, uint64_t need, const std::string& what);

class Workspace {
 public:
  // mkdir(parent/clustermax-bench-<host>-<pid>-<random>, 0700); fails if it exists. Throws.
  explicit Workspace(const std::filesystem::path& parent);
  ~Workspace();
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;

  const std::filesystem::path& root() const { return root_; }
  // Creates (and records) a directory below root(); the parent must exist.
  std::filesystem::path MakeDir(const std::filesystem::path& relative);
  // Records a file path the caller is about to create with O_CREAT|O_EXCL. Thread-safe.
  void Track(const std::filesystem::path& file);

  struct CleanupReport {
    uint64_t files_removed = 0, dirs_removed = 0;
    std::vector<std::string> leftovers;  // what could not be removed (not ours, or an error)
    nlohmann::json ToJson() const;
  };
  // Unlinks every recorded file and removes recorded directories, deepest first. Idempotent.
  CleanupReport Cleanup();

 private:
  std::filesystem::path root_;
  std::mutex mu_;
  std::vector<std::filesystem::path> files_, dirs_;
  bool cleaned_ = false;
  CleanupReport report_;
};

}  // namespace clustermax::bench
