#include "collect/collector.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "collect/memo.h"
#include "host/bundle.h"
#include "util/strings.h"

namespace clustermax::collect {

const std::vector<Collector>& Collectors() {
  static const std::vector<Collector> all = [] {
    std::vector<Collector> v;
    RegisterOsCollectors(v);
    RegisterGpuCollectors(v);
    RegisterSoftwareCollectors(v);
    RegisterNodeCollectors(v);
    RegisterServiceCollectors(v);
    RegisterAmdCollectors(v);
    RegisterSlurmCollectors(v);
    RegisterK8sCollectors(v);
    return v;
  }();
  return all;
}

const Collector* FindCollector(std::string_view id) {
  for (const auto& c : Collectors())
    if (c.info.id == id) return &c;
  return nullptr;
}

void DeclareFields(std::vector<Collector>& out, std::string_view id, std::vector<core::FieldSpec> fields) {
  for (auto& c : out) {
    if (c.info.id != id) continue;
    if (!c.info.fields.empty()) throw std::logic_error("fields of collector " + std::string(id) + " declared twice");
    c.info.fields = std::move(fields);
    return;
  }
  throw std::logic_error("DeclareFields: no collector " + std::string(id));
}

std::string FieldReferenceMarkdown() {
  auto cell = [](std::string s) {
    std::string out;
    for (char c : s) {
      if (c == '|')
        out += "\\|";
      else if (c == '\n')
        out += ' ';
      else
        out += c;
    }
    return out;
  };
  size_t fields = 0;
  for (const auto& c : Collectors()) fields += c.info.fields.size();
  std::string out =
      "# Evidence fields\n\n"
      "Generated from the collectors' declarations (`DeclareFields` next to each registration in src/collect/); "
      "a test fails when this file is stale. Regenerate with "
      "`CLUSTERMAX_UPDATE_FIELDS_DOC=1 build/tests/unit_tests --gtest_filter=EvidenceSchema.FieldReferenceIsCurrent`. "
      "How to declare and what the tests enforce: docs/evidence-fields.md.\n\n"
      "Paths: `a.b` a key of object `a`; `a[].b` a key of every element of array `a`; `a[]` the elements of `a`; "
      "`a{}` an object whose keys are free (the row types its values). A type ending in `?` may also be null. "
      "Every item may also carry `not_taken` (array of strings: the requests a files-only host could not answer).\n\n";
  out += std::to_string(Collectors().size()) + " collectors, " + std::to_string(fields) + " fields.\n";
  for (const auto& c : Collectors()) {
    out += "\n## " + c.info.id + "\n\n" + cell(c.info.description) +
           (c.info.probe.empty() ? "" : " (active probe `" + c.info.probe + "`)") + "\n\n";
    out += "| Field | Type | Unit | Meaning |\n|---|---|---|---|\n";
    for (const auto& f : c.info.fields) {
      out += "| `" + f.path + "` | " + std::string(core::ToString(f.type)) + (f.nullable ? "?" : "") + " | " +
             cell(f.unit) + " | " + cell(f.meaning) + " |\n";
    }
  }
  return out;
}

core::EvidenceStatus FromIo(host::IoStatus s) {
  switch (s) {
    case host::IoStatus::kOk:
      return core::EvidenceStatus::kOk;
    case host::IoStatus::kNotFound:
      return core::EvidenceStatus::kNotFound;
    case host::IoStatus::kPermissionDenied:
      return core::EvidenceStatus::kPermissionDenied;
    case host::IoStatus::kTimeout:
      return core::EvidenceStatus::kTimeout;
    case host::IoStatus::kNotRecorded:
      return core::EvidenceStatus::kNotCollected;
    case host::IoStatus::kNotTaken:
      return core::EvidenceStatus::kNotCollected;
    case host::IoStatus::kError:
      return core::EvidenceStatus::kError;
  }
  return core::EvidenceStatus::kError;
}

std::chrono::milliseconds TimeoutFor(const CollectOptions& o, const std::string& id) {
  auto it = o.timeouts.find(id);
  return it != o.timeouts.end() ? it->second : o.command_timeout;
}

host::CommandSpec Command(std::vector<std::string> argv, const CollectOptions& o, const std::string& id) {
  host::CommandSpec spec;
  spec.argv = std::move(argv);
  spec.timeout = TimeoutFor(o, id);
  return spec;
}

std::string Source(const host::CommandSpec& spec) { return "cmd:" + util::JoinArgv(spec.argv); }

bool MarkFailed(core::Evidence& e, host::IoStatus status, const std::string& error) {
  if (status == host::IoStatus::kOk) return false;
  e.status = FromIo(status);
  e.error = error;
  return true;
}

void FailFromCommand(core::Evidence& e, const host::CommandResult& r) { MarkFailed(e, r.status, r.error); }

std::optional<host::CommandResult> RunFor(core::Evidence& e, host::Host& h, std::vector<std::string> argv,
                                          const CollectOptions& o, const std::string& id) {
  auto spec = Command(std::move(argv), o, id);
  e.sources.push_back(Source(spec));
  auto r = h.Run(spec);
  if (r.status != host::IoStatus::kOk) {
    FailFromCommand(e, r);
    return std::nullopt;
  }
  return r;
}

namespace {

// Notes the requests a files-only host cannot answer (commands, PATH lookups, environment, NVML)
// while forwarding them, so the driver can say which evidence was not taken and why.
class NotTakenTracker : public host::HostWrapper {
 public:
  using HostWrapper::HostWrapper;
  host::CommandResult Run(const host::CommandSpec& spec) override {
    Note("command " + util::JoinArgv(spec.argv));
    return target().Run(spec);
  }
  host::WhichResult Which(const std::string& name) override {
    Note("PATH lookup " + name);
    return target().Which(name);
  }
  std::optional<std::string> GetEnv(const std::string& name) override {
    Note("environment " + name);
    return target().GetEnv(name);
  }
  host::NvmlResult QueryNvml(std::chrono::milliseconds timeout) override {
    Note("NVML");
    return target().QueryNvml(timeout);
  }
  const std::vector<std::string>& requests() const { return requests_; }

 private:
  void Note(std::string what) {
    std::lock_guard lock(mu_);  // a collector may fan out over threads
    if (std::find(requests_.begin(), requests_.end(), what) == requests_.end()) requests_.push_back(std::move(what));
  }
  std::mutex mu_;
  std::vector<std::string> requests_;
};

core::Evidence RunCollector(const Collector& c, host::Host& host, const CollectOptions& opts) {
  std::string reason = host.NotTakenReason();
  if (reason.empty()) return c.collect(host, opts);
  NotTakenTracker tracker(host);
  core::Evidence e = c.collect(tracker, opts);
  if (tracker.requests().empty()) return e;
  if (!c.info.keeps_files_in_image) {
    e.status = core::EvidenceStatus::kNotCollected;
    e.error = reason;
    e.data = nlohmann::json::object();
  }
  e.data["not_taken"] = tracker.requests();
  return e;
}

}  // namespace

core::EvidenceSet CollectEvidence(host::Host& host, const std::vector<std::string>& ids, const CollectOptions& opts,
                                  CollectorMemo* memo, std::map<std::string, uint64_t>* serials) {
  core::EvidenceSet out;
  int n = std::max(1, std::min<int>(opts.threads, static_cast<int>(ids.size())));
  auto* replay = n == 1 && memo ? dynamic_cast<host::ReplayHost*>(&host) : nullptr;
  // A collector's evidence as every path hands it on: sanitized (what a memo keeps, too).
  auto run = [&](const Collector& c, const std::string& id, host::Host& h) {
    // A collector that throws (a parser meeting input nobody expected) loses its own evidence
    // only: an exception must never unwind out of this worker thread.
    core::Evidence e;
    try {
      e = RunCollector(c, h, opts);
    } catch (const std::exception& ex) {
      e = core::Evidence{};
      e.status = core::EvidenceStatus::kError;
      e.error = std::string("collector failed internally: ") + ex.what();
    }
    e.id = id;
    core::SanitizeEvidence(e);
    return e;
  };
  auto evidence = [&](const std::string& id) {
    const Collector* c = FindCollector(id);
    if (c && (c->info.probe.empty() || opts.probes.count(c->info.probe))) {
      if (!replay || !c->info.probe.empty()) return run(*c, id, host);
      uint64_t serial = 0;
      core::Evidence e = memo->Collect(
          *c, *replay, [&](host::Host& h) { return run(*c, id, h); }, &serial);
      if (serial && serials) (*serials)[id] = serial;
      return e;
    }
    core::Evidence e;
    e.id = id;
    if (!c) {
      e.status = core::EvidenceStatus::kError;
      e.error = "no collector named " + id;
    } else {
      e.status = core::EvidenceStatus::kProbeDisabled;
      e.error = "active probe '" + c->info.probe + "' not requested (use --probe " + c->info.probe + " or --active)";
    }
    core::SanitizeEvidence(e);
    return e;
  };
  std::mutex mu;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next.fetch_add(1); i < ids.size(); i = next.fetch_add(1)) {
      core::Evidence e = evidence(ids[i]);
      std::lock_guard lock(mu);
      out[e.id] = std::move(e);
    }
  };
  if (n == 1) {
    worker();
    return out;
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  return out;
}

}  // namespace clustermax::collect
