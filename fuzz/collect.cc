// Every collector (collect/*.cc: the kernel log's Xid lines, /proc and /sys files, ibstat,
// ibv_devinfo, rdma, dcgmi, nvidia-smi, systemctl, Slurm commands, container runtimes, ...) run
// against a host whose every answer comes from the input, then every check judged on that
// evidence and the report rendered as text and JSON. Nothing touches the machine: FuzzHost
// answers files, listings, stats, commands, PATH lookups, the environment and NVML itself.
//
// The input is cut into parts at NUL bytes; a request gets the part picked by a hash of what it
// asks for (path, argv), so a text fixture (one part) is the answer to every request.
#include <functional>
#include <string>

#include "audit/engine.h"
#include "audit/plan.h"
#include "checks/register.h"
#include "collect/collector.h"
#include "core/check.h"
#include "core/minimums.h"
#include "fuzz_common.h"
#include "util/files.h"
#include "audit/render.h"

using namespace clustermax;

namespace {

class FuzzHost : public host::Host {
 public:
  explicit FuzzHost(std::string_view input) : parts_(fuzz::SplitNul(input)) {}

  host::FileResult ReadFile(const std::string& path, size_t max_bytes) override {
    std::string_view p = Part(path);
    host::FileResult r;
    if (p.empty()) {
      r.status = Status(path);
      r.error = "fuzz: no answer";
      return r;
    }
    r.status = host::IoStatus::kOk;
    r.content = std::string(p.substr(0, max_bytes));
    r.truncated = p.size() > max_bytes;
    return r;
  }
  host::FileResult ReadFileSample(const std::string& path, int sample, size_t max_bytes) override {
    return ReadFile(host::SampleKey(path, sample), max_bytes);
  }
  host::DirResult ListDir(const std::string& path) override {
    std::string_view p = Part("dir:" + path);
    host::DirResult r;
    if (p.empty()) {
      r.status = Status(path);
      return r;
    }
    r.status = host::IoStatus::kOk;
    // One entry a line ("name", "name/" a directory, "name@" a link), as sorted names. At most 8:
    // every listing gets the same answer, so nested walks (/sys/class/infiniband/*/ports/*/counters/*)
    // multiply, and 64 entries made 262,144 reads of one input (seconds, a harness artefact).
    size_t start = 0;
    while (start < p.size() && r.entries.size() < 8) {
      size_t nl = p.find('\n', start);
      std::string_view line = p.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
      start = nl == std::string_view::npos ? p.size() : nl + 1;
      if (line.empty() || line.size() > 128) continue;
      host::DirEntry e{std::string(line), 'f'};
      if (line.back() == '/')
        e = {std::string(line.substr(0, line.size() - 1)), 'd'};
      else if (line.back() == '@')
        e = {std::string(line.substr(0, line.size() - 1)), 'l'};
      if (!e.name.empty()) r.entries.push_back(std::move(e));
    }
    std::sort(r.entries.begin(), r.entries.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    return r;
  }
  host::StatResult Stat(const std::string& path) override {
    std::string_view p = Part("stat:" + path);
    host::StatResult r;
    if (p.empty()) {
      r.status = Status(path);
      return r;
    }
    size_t h = Hash(p);
    r.status = host::IoStatus::kOk;
    r.type = "fdlcbps"[h % 7];
    r.mode = static_cast<uint32_t>(h >> 3) & 07777;
    r.size = p.size();
    if (r.type == 'l') r.link_target = std::string(p.substr(0, 256));
    return r;
  }
  host::CommandResult Run(const host::CommandSpec& spec) override {
    std::string key;
    for (const auto& a : spec.argv) key += a + " ";
    std::string_view p = Part(key);
    host::CommandResult r;
    size_t h = Hash(key) ^ p.size();
    if (h % 17 == 0) {
      r.status = host::IoStatus::kTimeout;
      r.timed_out = true;
      return r;
    }
    r.status = host::IoStatus::kOk;
    r.exit_code = h % 5 == 0 ? static_cast<int>(h % 3) : 0;
    r.out = std::string(p.substr(0, spec.max_output));
    r.err = h % 7 == 0 ? std::string(p.substr(0, 200)) : "";
    r.truncated = p.size() > spec.max_output;
    r.resolved = "/usr/bin/" + (spec.argv.empty() ? std::string() : spec.argv[0]);
    return r;
  }
  host::WhichResult Which(const std::string& name) override {
    if (Hash("which:" + name) % 11 == 0) return {host::IoStatus::kNotFound, ""};
    return {host::IoStatus::kOk, "/usr/bin/" + name};
  }
  std::optional<std::string> GetEnv(const std::string& name) override {
    std::string_view p = Part("env:" + name);
    if (p.empty() || p.size() > 4096) return std::nullopt;
    return std::string(p);
  }
  host::NvmlResult QueryNvml(std::chrono::milliseconds) override {
    host::NvmlResult r;
    std::string_view p = Part("nvml");
    if (util::JsonNestingDepth(p, util::kMaxJsonDepth) > util::kMaxJsonDepth) return r;  // as the bundle reader refuses
    auto j = nlohmann::json::parse(p, nullptr, false);
    if (j.is_discarded()) {
      r.error = "fuzz: not JSON";
      return r;
    }
    r.status = host::IoStatus::kOk;
    r.data = std::move(j);
    return r;
  }
  void Sleep(std::chrono::milliseconds) override {}

 private:
  static size_t Hash(std::string_view s) { return std::hash<std::string_view>{}(s); }
  std::string_view Part(const std::string& key) const { return parts_[Hash(key) % parts_.size()]; }
  host::IoStatus Status(const std::string& key) const {
    static constexpr host::IoStatus kFailures[] = {host::IoStatus::kNotFound, host::IoStatus::kPermissionDenied,
                                                   host::IoStatus::kTimeout, host::IoStatus::kError};
    return kFailures[Hash(key) % 4];
  }
  std::vector<std::string_view> parts_;
};

struct Fixture {
  std::vector<audit::Plan> plans;  // one per target
  std::vector<std::string> collectors;
  collect::CollectOptions opts;
  Fixture() {
    audit::Selection sel;
    for (const auto& p : core::Probes()) sel.probes.insert(p.name);
    for (auto t : {core::Target::kStandalone, core::Target::kVm, core::Target::kContainer, core::Target::kSlurm,
                   core::Target::kK8s}) {
      sel.target = t;
      plans.push_back(audit::BuildPlan(checks::DefaultRegistry(), sel));
    }
    for (const auto& c : collect::Collectors()) collectors.push_back(c.info.id);
    opts.threads = 1;
    opts.probes = sel.probes;
    opts.counter_interval = std::chrono::milliseconds(0);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Fixture fx;
  std::string_view input = fuzz::AsText(data, size);
  try {
    FuzzHost h(input);
    audit::NodeEvidence n;
    n.node = "fuzz";
    n.manifest.hostname = "fuzz";
    n.manifest.started_at = "2026-11-30T12:00:00Z";
    n.evidence = collect::CollectEvidence(h, fx.collectors, fx.opts);
    const audit::Plan& plan = fx.plans[size % fx.plans.size()];
    audit::Report r = audit::Judge(plan, {n}, core::EmbeddedMinimumTable());
    (void)audit::ToJson(r).dump();
    (void)audit::RenderText(r, {.verbosity = 3});
  } catch (const std::exception&) {
  }
  return 0;
}
