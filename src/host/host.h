// Host: the only door to the machine. Every file read, directory listing, stat, environment
// lookup, command and NVML query goes through it, so a run can be recorded into an evidence
// bundle and replayed elsewhere. Implementations never throw for machine failures: each result
// carries an IoStatus, and a non-zero exit code is data, not an error.
// Thread-safety: every implementation is safe to call from several collector threads at once.
#pragma once
#include <chrono>
#include <csignal>
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::host {

enum class IoStatus {
  kOk,
  kNotFound,
  kPermissionDenied,
  kTimeout,
  kError,
  kNotRecorded,  // replay only: the bundle has no answer for this request
  kNotTaken,     // the machine being audited cannot answer it (an image under --sysroot has no commands)
};

// Why a host audits files only: with --sysroot the files are the image's, but a command, PATH
// lookup, environment variable or NVML query would be answered by the auditing host.
inline constexpr std::string_view kNotTakenFromImage = "command evidence cannot be taken from an image (--sysroot)";
std::string_view ToString(IoStatus s);
// The bundle key of a sampled read: "<path>#sample<N>".
std::string SampleKey(const std::string& path, int sample);
IoStatus IoStatusFromString(std::string_view s);

struct FileResult {
  IoStatus status = IoStatus::kError;
  std::string content;
  bool truncated = false;
  std::string error;
};

struct DirEntry {
  std::string name;
  char type = '?';  // 'd' directory, 'f' file, 'l' link, 'c' char device, 'b' block, 'p' fifo, 's' socket
};

struct DirResult {
  IoStatus status = IoStatus::kError;
  std::vector<DirEntry> entries;  // sorted by name
  std::string error;
};

struct StatResult {
  IoStatus status = IoStatus::kError;
  char type = '?';
  uint32_t mode = 0;  // permission bits
  uint64_t size = 0;
  std::string link_target;  // readlink() for symbolic links
  std::string error;
};

struct CommandSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH; never a shell string
  std::chrono::milliseconds timeout{10'000};
  size_t max_output = 8u << 20;  // per stream; beyond it output is dropped and `truncated` set
  // LocalHost redacts secrets from a tool's output (host/redact.h). Off only for our own framed
  // documents coming back from other nodes (already redacted there, and they must arrive byte-exact).
  bool redact = true;
  // Called with each piece of stdout as it arrives (progress of a long command); the result still
  // carries the whole output unless `keep_stdout` is false (a stream read only here, never held).
  // Not recorded in a bundle; a replayed command never calls it.
  std::function<void(std::string_view)> on_stdout;
  bool keep_stdout = true;
  // The child's standard input (an object for `kubectl create --raw PATH -f -`); empty: /dev/null.
  // Not part of a bundle's key: commands that differ only by stdin must differ in argv too.
  std::string stdin_data;
  // Polled while the command runs (LocalHost): true stops it (stop_signal to its process group,
  // SIGKILL 35 s later) and sets the result's `stopped`. A watchdog, or Ctrl-C. Not recorded in a
  // bundle.
  std::function<bool()> stop_when;
  // SIGTERM by default; srun is sent SIGUSR1, which it forwards to its tasks (they stop and send
  // what they have), where SIGTERM makes srun SIGKILL them.
  int stop_signal = SIGTERM;
};

struct CommandResult {
  IoStatus status = IoStatus::kError;  // kOk: it ran (whatever the exit code)
  int exit_code = -1;
  int signal = 0;  // terminating signal, 0 if it exited
  std::string out;
  std::string err;
  double duration_ms = 0;
  bool timed_out = false;
  bool truncated = false;
  std::string resolved;  // absolute path that was executed
  std::string error;     // why it could not run
  bool stopped = false;  // ended by CommandSpec::stop_when
};

struct WhichResult {
  IoStatus status = IoStatus::kNotFound;
  std::string path;
};

struct NvmlResult {
  IoStatus status = IoStatus::kError;
  nlohmann::json data;  // the GPU snapshot of gpu::QueryNvml (src/gpu/nvml.h)
  std::string error;
};

class Host {
 public:
  virtual ~Host() = default;
  virtual FileResult ReadFile(const std::string& path, size_t max_bytes = 4u << 20) = 0;
  // A later read of a file that changes over time (a counter): sample 1 is the first read after
  // ReadFile's. Recorded under its own key, so a replay returns each sample as it was.
  virtual FileResult ReadFileSample(const std::string& path, int sample, size_t max_bytes) = 0;
  virtual DirResult ListDir(const std::string& path) = 0;
  virtual StatResult Stat(const std::string& path) = 0;  // lstat(); link target for links
  virtual CommandResult Run(const CommandSpec& spec) = 0;
  virtual WhichResult Which(const std::string& name) = 0;  // PATH lookup of an executable
  virtual std::optional<std::string> GetEnv(const std::string& name) = 0;
  virtual NvmlResult QueryNvml(std::chrono::milliseconds timeout) = 0;
  // Waits between two samples of a counter. A replay does not wait.
  virtual void Sleep(std::chrono::milliseconds d) = 0;
  // Non-empty when this host audits files only (an image under --sysroot, or the replay of its
  // bundle): Run, Which and QueryNvml answer kNotTaken and GetEnv nothing, and the collection
  // driver marks the evidence that asked for them not collected, with this reason.
  virtual std::string NotTakenReason() const { return {}; }
};

// Forwards every call to a target host; subclasses override what they need (leveldb EnvWrapper).
class HostWrapper : public Host {
 public:
  explicit HostWrapper(Host& target) : target_(target) {}
  FileResult ReadFile(const std::string& path, size_t max_bytes) override { return target_.ReadFile(path, max_bytes); }
  FileResult ReadFileSample(const std::string& path, int sample, size_t max_bytes) override {
    return target_.ReadFileSample(path, sample, max_bytes);
  }
  DirResult ListDir(const std::string& path) override { return target_.ListDir(path); }
  StatResult Stat(const std::string& path) override { return target_.Stat(path); }
  CommandResult Run(const CommandSpec& spec) override { return target_.Run(spec); }
  WhichResult Which(const std::string& name) override { return target_.Which(name); }
  std::optional<std::string> GetEnv(const std::string& name) override { return target_.GetEnv(name); }
  NvmlResult QueryNvml(std::chrono::milliseconds timeout) override { return target_.QueryNvml(timeout); }
  void Sleep(std::chrono::milliseconds d) override { target_.Sleep(d); }
  std::string NotTakenReason() const override { return target_.NotTakenReason(); }

 protected:
  Host& target() { return target_; }

 private:
  Host& target_;
};

}  // namespace clustermax::host
