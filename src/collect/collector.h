// Collectors: each reads one source through host::Host and returns one Evidence item with its
// own collection status. Collectors never judge. The registry is explicit (one Register* call
// per file), ids name the source ("os.release", "gpu.inventory"), not the check.
#pragma once
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/evidence.h"
#include "host/host.h"

namespace clustermax::collect {

struct CollectOptions {
  std::chrono::milliseconds command_timeout{10'000};
  // Per-collector overrides ("gpu.inventory" -> 30 s), from --timeout ID=SECONDS.
  std::map<std::string, std::chrono::milliseconds> timeouts;
  std::set<std::string> probes;  // active probes enabled by name
  std::string probe_image = "nvcr.io/nvidia/cuda:13.0.1-base-ubuntu24.04";
  // A small image for the enroot-import probe (enroot's URI form: docker://[REGISTRY#]IMAGE).
  std::string enroot_image = "docker://busybox:1.36";
  int threads = 8;
  // Time between the two reads of the RDMA error counters (live errors vs history); 0: one read.
  std::chrono::milliseconds counter_interval{10'000};
  // kernel.xid: read this kernel-log file (through the host, so under a sysroot too) instead of
  // journalctl/dmesg; and journalctl's --since value (health mode narrows it to its last run).
  std::string kernel_log_file;
  std::string kernel_log_since = "-7d";
  // storage.shared-mounts: mount points that must be mounted whatever their filesystem
  // (health --require-mount), listed with the fstab's network mounts.
  std::vector<std::string> required_mounts;
};

struct CollectorInfo {
  std::string id;
  std::string description;
  std::vector<std::string> sources;  // files, commands and libraries it touches
  std::string probe;                 // non-empty: an active probe; runs only when enabled
  // On a host that audits files only (Host::NotTakenReason, --sysroot) a collector that asks for a
  // command, PATH lookup, environment variable or NVML is marked not collected with that reason.
  // A collector whose data records such an answer as unknown and stands on its files (the
  // virtualisation markers) keeps its evidence; the requests are listed all the same.
  bool keeps_files_in_image = false;
  // The keys of the evidence's data, with type, unit and meaning (docs/evidence-fields.md); set by
  // DeclareFields next to the registration. tests/evidence_schema_test.cc holds every recorded
  // bundle and every judge's reads to them.
  std::vector<core::FieldSpec> fields;
};

using CollectFn = std::function<core::Evidence(host::Host&, const CollectOptions&)>;

struct Collector {
  CollectorInfo info;
  CollectFn collect;
};

const std::vector<Collector>& Collectors();
const Collector* FindCollector(std::string_view id);

// Runs the named collectors concurrently on `host`. A probe collector whose probe is not enabled
// yields status probe-disabled without touching the host. On a host that audits files only, the
// requests it could not take are listed in the evidence's data["not_taken"] (see CollectorInfo).
// With a memo (a replay of many nodes, one thread: opts.threads == 1, `host` a host::ReplayHost),
// a collector's evidence comes from the memo when this node answers it as an earlier node did
// (collect/memo.h); active probes always run. `serials` (with a memo) gets the memo's serial of each
// evidence item kept there (CollectorMemo::Collect).
class CollectorMemo;
core::EvidenceSet CollectEvidence(host::Host& host, const std::vector<std::string>& ids, const CollectOptions& opts,
                                  CollectorMemo* memo = nullptr, std::map<std::string, uint64_t>* serials = nullptr);

// ---- helpers shared by the collector files ----
core::EvidenceStatus FromIo(host::IoStatus s);
// Timeout for collector `id`: an override, or the default.
std::chrono::milliseconds TimeoutFor(const CollectOptions& o, const std::string& id);
host::CommandSpec Command(std::vector<std::string> argv, const CollectOptions& o, const std::string& id);
std::string Source(const host::CommandSpec& spec);  // "cmd:perf --version"
// When a read did not succeed, marks `e` with its status and error and returns true.
bool MarkFailed(core::Evidence& e, host::IoStatus status, const std::string& error);
// Marks `e` failed from a command result that did not run (not found, timeout, denied...).
void FailFromCommand(core::Evidence& e, const host::CommandResult& r);
// Runs argv with collector `id`'s timeout and notes it in e.sources. When the command could not
// run (not found, timeout, denied), marks `e` failed and returns nullopt.
std::optional<host::CommandResult> RunFor(core::Evidence& e, host::Host& h, std::vector<std::string> argv,
                                          const CollectOptions& o, const std::string& id);

// Sets the declared fields of collector `id` (already in `out`); throws std::logic_error when there
// is no such collector or it was declared before.
void DeclareFields(std::vector<Collector>& out, std::string_view id, std::vector<core::FieldSpec> fields);
// The declared fields of every collector as a Markdown reference (docs/evidence-fields-reference.md;
// tests/evidence_schema_test.cc fails when that file is stale).
std::string FieldReferenceMarkdown();
// Short names for the declarations.
namespace field {
inline constexpr core::FieldType Str = core::FieldType::kString;
inline constexpr core::FieldType Num = core::FieldType::kNumber;
inline constexpr core::FieldType Int = core::FieldType::kInteger;
inline constexpr core::FieldType Bool = core::FieldType::kBool;
inline constexpr core::FieldType Obj = core::FieldType::kObject;
inline constexpr core::FieldType Arr = core::FieldType::kArray;
inline constexpr core::FieldType Any = core::FieldType::kAny;
inline constexpr bool kNull = true;  // the value may also be null
}  // namespace field

void RegisterOsCollectors(std::vector<Collector>& out);
void RegisterGpuCollectors(std::vector<Collector>& out);
void RegisterSoftwareCollectors(std::vector<Collector>& out);
void RegisterNodeCollectors(std::vector<Collector>& out);
void RegisterServiceCollectors(std::vector<Collector>& out);
void RegisterAmdCollectors(std::vector<Collector>& out);
void RegisterSlurmCollectors(std::vector<Collector>& out);
void RegisterK8sCollectors(std::vector<Collector>& out);

}  // namespace clustermax::collect
