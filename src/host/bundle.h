// Evidence bundle: every answer a host gave during one collection on one node (files, listings,
// stats, commands, PATH lookups, environment variables, NVML), with a manifest. Written by
// RecordingHost, read by ReplayHost. Format: docs/evidence-bundle.md (one JSON document).
#pragma once
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/host.h"

namespace clustermax::host {

inline constexpr int kBundleFormatVersion = 1;

// Parses JSON text with RapidJSON's SAX reader straight into an nlohmann value (several times faster
// than nlohmann's own parser on evidence-sized documents; iterative, so deep input cannot exhaust the
// stack; nesting past util::kMaxJsonDepth refused). Throws BundleError("not valid JSON (...)").
nlohmann::json ParseJson(std::string_view text);

class BundleError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Manifest {
  int format_version = kBundleFormatVersion;
  std::string tool_version;
  std::string git_sha;
  std::vector<std::string> argv;
  std::string hostname;
  std::string started_at;  // RFC 3339; judging uses it as "now" so a replay re-judges identically
  std::string finished_at;
  std::string sysroot;
  std::string target;               // the audit target this node was collected for
  std::vector<std::string> probes;  // active probes that were enabled
  // "" a single-node audit (every check); "login" the scheduler's view in a fleet audit (cluster
  // checks); "compute" a node of the fleet (node checks).
  std::string role;
  std::string partial;  // non-empty: the collection stopped early (why)
  long uid = -1;
  // What target detection weighed and decided (core::TargetDetection::ToJson, plus "chosen" and
  // "by" when a flag overrode it); null when the bundle was not collected by `audit`.
  nlohmann::json target_detection;
};

class Bundle {
 public:
  Bundle() = default;
  Bundle(const Bundle&) = delete;
  Bundle& operator=(const Bundle&) = delete;
  Bundle(Bundle&& o) noexcept;
  Bundle& operator=(Bundle&& o) noexcept;

  Manifest manifest;

  void PutFile(const std::string& path, const FileResult& r);
  void PutDir(const std::string& path, const DirResult& r);
  void PutStat(const std::string& path, const StatResult& r);
  void PutCommand(const std::vector<std::string>& argv, const CommandResult& r);
  void PutWhich(const std::string& name, const WhichResult& r);
  void PutEnv(const std::string& name, const std::optional<std::string>& value);
  void PutNvml(const NvmlResult& r);

  std::optional<FileResult> File(const std::string& path) const;
  std::optional<DirResult> Dir(const std::string& path) const;
  std::optional<StatResult> StatOf(const std::string& path) const;
  std::optional<CommandResult> Command(const std::vector<std::string>& argv) const;
  std::optional<WhichResult> WhichOf(const std::string& name) const;
  std::optional<std::optional<std::string>> Env(const std::string& name) const;
  std::optional<NvmlResult> Nvml() const;
  // The recorded answer in place (nullptr: none), for a bundle no longer recorded into (a replay):
  // the pointer stays valid while the bundle lives and nothing is put into it.
  const FileResult* PeekFile(const std::string& path) const;
  const DirResult* PeekDir(const std::string& path) const;
  const CommandResult* PeekCommand(const std::vector<std::string>& argv) const;

  // No answer of any kind recorded: nothing to judge (a replay refuses it as an evidence error).
  bool Empty() const;

  nlohmann::json ToJson() const;
  // Reads a bundle document (format checked, every part typed as it is read; the text is used as
  // the parser's buffer). Throws BundleError naming what is wrong.
  static Bundle Parse(std::string text);
  static Bundle FromJson(const nlohmann::json& j);        // Parse of the value's text; throws BundleError
  static Bundle Load(const std::filesystem::path& path);  // throws BundleError
  std::string ToText() const;                             // the JSON text Save writes
  void Save(const std::filesystem::path& path) const;     // atomic

  // The answers, by kind (what Parse fills).
  struct Parts {
    std::map<std::string, FileResult> files;
    std::map<std::string, DirResult> dirs;
    std::map<std::string, StatResult> stats;
    std::map<std::string, std::pair<std::vector<std::string>, CommandResult>> commands;  // by CommandKey
    std::map<std::string, WhichResult> which;
    std::map<std::string, std::optional<std::string>> env;
    std::optional<NvmlResult> nvml;
  };

 private:
  mutable std::mutex mu_;
  Parts parts_;
};

// Records every answer of the wrapped host into `bundle`.
class RecordingHost : public HostWrapper {
 public:
  RecordingHost(Host& target, Bundle& bundle) : HostWrapper(target), bundle_(bundle) {}
  FileResult ReadFile(const std::string& path, size_t max_bytes) override;
  FileResult ReadFileSample(const std::string& path, int sample, size_t max_bytes) override;
  DirResult ListDir(const std::string& path) override;
  StatResult Stat(const std::string& path) override;
  CommandResult Run(const CommandSpec& spec) override;
  WhichResult Which(const std::string& name) override;
  std::optional<std::string> GetEnv(const std::string& name) override;
  NvmlResult QueryNvml(std::chrono::milliseconds timeout) override;

 private:
  Bundle& bundle_;
};

// Answers only from a bundle. A request the bundle lacks comes back as IoStatus::kNotRecorded
// (never from the real machine) and is listed in misses(), which the report shows loudly.
class ReplayHost : public Host {
 public:
  explicit ReplayHost(const Bundle& bundle) : bundle_(bundle) {}
  FileResult ReadFile(const std::string& path, size_t max_bytes) override;
  FileResult ReadFileSample(const std::string& path, int sample, size_t max_bytes) override;
  DirResult ListDir(const std::string& path) override;
  StatResult Stat(const std::string& path) override;
  CommandResult Run(const CommandSpec& spec) override;
  WhichResult Which(const std::string& name) override;
  std::optional<std::string> GetEnv(const std::string& name) override;
  NvmlResult QueryNvml(std::chrono::milliseconds timeout) override;
  void Sleep(std::chrono::milliseconds) override {}
  // The bundle of an image (its manifest names a sysroot) was collected from files only.
  std::string NotTakenReason() const override;
  std::vector<std::string> misses() const;
  // Undoing the misses of questions asked ahead (collect::CollectorMemo): their number now, and
  // forgetting those recorded after such a mark.
  size_t MissCount() const;
  void DropMissesFrom(size_t mark);
  const Bundle& bundle() const { return bundle_; }

 private:
  void Miss(std::string what);
  const Bundle& bundle_;
  mutable std::mutex mu_;
  std::vector<std::string> misses_;
};

}  // namespace clustermax::host
