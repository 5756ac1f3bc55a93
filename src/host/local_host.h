// LocalHost: the real machine. With a sysroot, every file path (/proc, /sys, /etc, /dev, /var,
// /usr, /opt, ...) is re-rooted under it, so a mounted node image or a test tree can be audited.
// An image has no processes of its own: with a sysroot, commands, PATH lookups and NVML answer
// kNotTaken and the environment is empty (the auditing host's tools never stand for the image's).
// A host root (a pod of the Kubernetes fan-out, with the node's `/` mounted read-only at /host) is
// the node itself seen from a container: files are read under it as with a sysroot, and commands
// run inside it (this binary re-executes itself to chroot there, RunInRoot), so the node's own
// nvidia-smi, dpkg and kernel tools answer; the environment and NVML are the pod's.
#pragma once
#include <string>

#include "host/host.h"

namespace clustermax::host {

class LocalHost : public Host {
 public:
  explicit LocalHost(std::string sysroot = "");
  static LocalHost HostRoot(std::string root);
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
  bool in_root_ = false;  // a host root: commands run chrooted into sysroot_
};

// The trampoline of a host root's commands, run as `clustermax __in-root ROOT PROGRAM ARGS...`:
// chroot(ROOT), chdir("/"), exec PROGRAM (a path inside ROOT). Returns only on failure (127, with
// the reason on stderr). Needs CAP_SYS_CHROOT, which the fan-out's pod is given and nothing more.
int RunInRoot(int argc, char** argv);
inline constexpr const char* kInRootCommand = "__in-root";

}  // namespace clustermax::host
