// LocalHost: the real machine. With a sysroot, every file path (/proc, /sys, /etc, /dev, /var,
// /usr, /opt, ...) is re-rooted under it, so a mounted node image or a test tree can be audited.
// An image has no processes of its own: with a sysroot, commands, PATH lookups and NVML answer
// kNotTaken and the environment is empty (the auditing host's tools never stand for the image's).
#pragma once
#include <string>

#include "host/host.h"

namespace clustermax::host {

class LocalHost : public Host {
 public:
  explicit LocalHost(std::string sysroot = "");
  FileResult ReadFile(const std::string& path, size_t max_bytes) override;
  FileResult ReadFileSample(const std::string& path, int, size_t max_bytes) override {
    return ReadFile(path, max_bytes);
  }
  DirResult ListDir(const std::string& path) override;
  StatResult Stat(const std::string& path) override;
  CommandResult Run(const CommandSpec& spec) override;
  WhichResult Which(const std::string& name) override;
  std::optional<std::string> GetEnv(const std::string& name) override;
  NvmlResult QueryNvml(std::chrono::milliseconds timeout) override;
  void Sleep(std::chrono::milliseconds d) override;
  std::string NotTakenReason() const override;

 private:
  std::string Rooted(const std::string& path) const;
  std::string sysroot_;
};

}  // namespace clustermax::host
