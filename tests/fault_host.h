// A test double of the machine seam: a HostWrapper that injects failures (timeout, permission
// denied, not found, truncation, garbage) per path prefix, per command name and for NVML. Test
// code only: it is built into the test binaries, never into the shipped one.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "host/host.h"

namespace clustermax::host {

class FaultHost : public HostWrapper {
 public:
  enum class Fault { kTimeout, kPermissionDenied, kNotFound, kTruncate, kGarbage };
  using HostWrapper::HostWrapper;
  void FailPath(std::string prefix, Fault f) { path_faults_.emplace_back(std::move(prefix), f); }
  void FailCommand(std::string argv0, Fault f) { command_faults_.emplace_back(std::move(argv0), f); }
  void FailNvml(Fault f) { nvml_fault_ = f; }
  FileResult ReadFile(const std::string& path, size_t max_bytes) override;
  FileResult ReadFileSample(const std::string& path, int, size_t max_bytes) override {
    return ReadFile(path, max_bytes);
  }
  DirResult ListDir(const std::string& path) override;
  CommandResult Run(const CommandSpec& spec) override;
  WhichResult Which(const std::string& name) override;
  NvmlResult QueryNvml(std::chrono::milliseconds timeout) override;

 private:
  std::optional<Fault> PathFault(const std::string& path) const;
  std::optional<Fault> CommandFault(const std::string& argv0) const;
  std::vector<std::pair<std::string, Fault>> path_faults_;
  std::vector<std::pair<std::string, Fault>> command_faults_;
  std::optional<Fault> nvml_fault_;
};

}  // namespace clustermax::host
