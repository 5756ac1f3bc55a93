// Property: no check PASSes on a fact it did not read (issue 14: "a check PASSes only on evidence it
// read and understood"). Over every check and every fixture where the check PASSes, each leaf of the
// evidence the check declares in `needs` is perturbed; a leaf whose perturbation changes the finding
// is one the check reads, and blanking it out (removing it, or setting it to null) must not PASS.
//
// Fixtures are evidence sets on which many checks PASS: (a) every recorded bundle of
// tests/fixtures/bundles replayed through the collectors, (b) a healthy GPU node assembled from real
// parser output (the H100 `nvidia-smi -q -x` fixture, a captured kernel log through the kernel.xid
// collector) on top of the Debian bundle, and (c) the Slurm scheduler output recorded on the CI
// cluster (tests/fixtures/slurm) replayed through the collectors.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <set>

#include <fmt/format.h>

#include "audit/engine.h"
#include "checks/register.h"
#include "collect/collector.h"
#include "gpu/smi_xml.h"
#include "host/bundle.h"
#include "testutil.h"
#include "util/strings.h"
#include "util/time.h"

using namespace clustermax;
using clustermax::testing::Ok;
using clustermax::testing::Out;
using nlohmann::json;
namespace fs = std::filesystem;
namespace cmt = clustermax::testing;

namespace {

struct EvidenceFixture {
  std::string name;
  core::EvidenceSet evidence;
  core::Target target = core::Target::kStandalone;
  util::SysTime now;
};

util::SysTime Time(const std::string& rfc3339) { return *util::ParseRfc3339(rfc3339); }

// Every evidence id some check needs (fleet.summary is derived by the engine, never collected).
std::vector<std::string> AllNeeds() {
  std::set<std::string> ids;
  for (const auto& c : checks::DefaultRegistry().all()) {
    for (const auto& n : c.info.needs) {
      if (n != "fleet.summary") ids.insert(n);
    }
  }
  return {ids.begin(), ids.end()};
}

// (a) A recorded bundle replayed through the collectors, with every probe the bundle recorded.
EvidenceFixture FromBundle(const fs::path& file) {
  host::Bundle b = host::Bundle::Load(file);
  audit::Selection sel;
  sel.target = core::TargetFromString(b.manifest.target).value_or(core::Target::kStandalone);
  for (const auto& p : b.manifest.probes) sel.probes.insert(p);
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), sel);
  auto node = audit::ReplayNode(b, plan, {});
  return {file.filename().string(), std::move(node.evidence), sel.target, Time(b.manifest.started_at)};
}

// (b) A healthy H100 node: the Debian bundle's host facts, plus GPU, kernel-log and fabric evidence
// from real parser output. The H100 fixture's second GPU is sick on purpose (x8 link, ECC errors);
// here it is replaced by a copy of the healthy first one.
EvidenceFixture HealthyGpuNode() {
  EvidenceFixture f = FromBundle(cmt::Fixture("bundles/debian12-container-cpu.json"));
  f.name = "healthy-h100-node";
  f.target = core::Target::kStandalone;
  f.now = Time("2026-11-30T00:00:00Z");

  std::string error;
  auto snap = gpu::ParseNvidiaSmiXml(cmt::ReadFixture("parsers/nvidia-smi-q-x-h100-2gpu.xml"), &error);
  EXPECT_TRUE(snap) << error;
  json& devices = (*snap)["devices"];
  json healthy = devices[0];
  healthy["index"] = 1;
  if (healthy.contains("pci_bus_id")) healthy["pci_bus_id"] = "00000000:2A:00.0";
  if (healthy.contains("uuid")) healthy["uuid"] = "GPU-00000000-0000-0000-0000-000000000001";
  devices[1] = healthy;
  f.evidence["gpu.inventory"] = Ok("gpu.inventory", *snap);

  json pci = json::array();
  for (const char* bdf : {"0000:19:00.0", "0000:2a:00.0"}) {
    pci.push_back({{"bdf", bdf},
                   {"vendor", "0x10de"},
                   {"device", "0x2330"},
                   {"class", "0x030200"},
                   {"driver", "nvidia"},
                   {"gpu", true},
                   {"rdma_nic", false}});
  }
  for (const char* bdf : {"0000:1a:00.0", "0000:2b:00.0"}) {
    pci.push_back({{"bdf", bdf},
                   {"vendor", "0x15b3"},
                   {"device", "0x1021"},
                   {"class", "0x020700"},
                   {"driver", "mlx5_core"},
                   {"gpu", false},
                   {"rdma_nic", true}});
  }
  f.evidence["pci.devices"] = Ok("pci.devices", {{"devices", pci}, {"complete", true}, {"unreadable", 0}});

  // A kernel log with an application Xid only, through the kernel.xid collector (journalctl).
  host::Bundle b;
  b.PutWhich("journalctl", {host::IoStatus::kOk, "/usr/bin/journalctl"});
  b.PutCommand(
      {"journalctl", "-k", "--since=-7d", "-o", "short-iso", "--no-pager", "-q"},
      Out("2026-11-29T10:00:01+0000 gpu-01 kernel: NVRM: Xid (PCI:0000:19:00): 13, pid=1, Graphics Exception\n"));
  b.PutFile("/proc/sys/kernel/dmesg_restrict", {host::IoStatus::kOk, "0\n", false, ""});
  host::ReplayHost h(b);
  f.evidence["kernel.xid"] = collect::CollectEvidence(h, {"kernel.xid"}, {})["kernel.xid"];

  // DCGM: its version, and the quick diagnostic of a real 8-GPU DCGM 3.1 run (corpus, all PASS),
  // through the collectors.
  host::Bundle d;
  d.PutWhich("dcgmi", {host::IoStatus::kOk, "/usr/bin/dcgmi"});
  d.PutCommand({"dcgmi", "--version"}, Out("\ndcgmi  version: 4.5.3\n\n"));
  d.PutCommand({"dcgmi", "diag", "-r", "1", "-j"},
               Out(cmt::ReadFixture("corpus/dcgmi/diag-j-dcgm3.1.0-8gpu-warning-prefix-nulls-1.txt")));
  host::ReplayHost dh(d);
  collect::CollectOptions with_diag;
  with_diag.probes = {"dcgm-diag"};
  for (auto& [id, e] : collect::CollectEvidence(dh, {"dcgm.version", "probe.dcgm-diag"}, with_diag)) f.evidence[id] = e;

  // Two NDR InfiniBand ports, one per GPU, in the rdma.devices collector's shape.
  json rdma = json::array();
  for (int i = 0; i < 2; ++i) {
    rdma.push_back({{"name", "mlx5_" + std::to_string(i)},
                    {"vendor", "0x15b3"},
                    {"ports", json::array({{{"port", "1"},
                                            {"link_layer", "InfiniBand"},
                                            {"rate", "400 Gb/sec (4X NDR)"},
                                            {"state", "4: ACTIVE"},
                                            {"phys_state", "5: LinkUp"}}})}});
  }
  f.evidence["rdma.devices"] = Ok("rdma.devices", {{"devices", rdma}});
  return f;
}

// (c) The scheduler's view recorded on the CI cluster (Slurm 22.05.8), through the collectors.
EvidenceFixture SlurmScheduler() {
  host::Bundle b;
  b.PutCommand({"scontrol", "show", "config"}, Out(cmt::ReadFixture("slurm/scontrol-show-config.txt")));
  b.PutCommand({"scontrol", "show", "node", "-o"}, Out(cmt::ReadFixture("slurm/scontrol-show-node-o.txt")));
  b.PutCommand({"scontrol", "show", "partition", "-o"}, Out(cmt::ReadFixture("slurm/scontrol-show-partition-o.txt")));
  b.PutCommand({"scontrol", "show", "topology"}, Out(cmt::ReadFixture("slurm/scontrol-show-topology.txt")));
  b.PutCommand({"scontrol", "ping"}, Out(cmt::ReadFixture("slurm/scontrol-ping.txt")));
  b.PutCommand({"srun", "--mpi=list"}, Out(cmt::ReadFixture("slurm/srun-mpi-list.txt")));
  b.PutCommand({"srun", "--help"}, Out("Usage: srun [OPTIONS(0)... [executable(0) [args(0)...]]]\n"
                                       "      --container-image=[USER@][REGISTRY#]IMAGE[:TAG]|PATH\n"));
  b.PutCommand({"sacct", "-X", "-n", "-S", "now-1hours", "-o", "JobID"}, Out("1\n2\n"));
  host::ReplayHost h(b);
  EvidenceFixture f;
  f.name = "slurm-ci-scheduler";
  f.target = core::Target::kSlurm;
  f.now = Time("2026-11-30T00:00:00Z");
  f.evidence = collect::CollectEvidence(h, AllNeeds(), {});
  return f;
}

std::vector<EvidenceFixture> Fixtures() {
  std::vector<EvidenceFixture> out;
  std::vector<fs::path> bundles;
  for (const auto& e : fs::directory_iterator(cmt::Fixture("bundles"))) {
    if (e.path().extension() == ".json") bundles.push_back(e.path());
  }
  std::sort(bundles.begin(), bundles.end());
  for (const auto& p : bundles) out.push_back(FromBundle(p));
  out.push_back(HealthyGpuNode());
  out.push_back(SlurmScheduler());
  return out;
}

// A judge that throws is a tool-fault WARN in the engine; here too.
core::Finding JudgeSafe(const core::Check& c, const EvidenceFixture& f) {
  core::JudgeContext ctx(c.info, f.evidence, core::EmbeddedMinimumTable(), f.target, f.now);
  try {
    return c.judge(ctx);
  } catch (const std::exception& e) {
    core::Finding w = core::Warn(core::Reason::kToolFault, "check failed internally");
    w.Detail(e.what());
    return w;
  }
}

// What "the check reads the leaf" means: some perturbation of its value (never null, see
// Perturbations) moves the verdict, its reason, the observed value or the message. Details are left
// out on purpose: checks print facts they do not judge there (a GPU's index, a port's rate), which is
// fine. A fact only echoed in observed or the message (the log's source) is exempted below with its
// reason. The perturbations are coarse on purpose (x1000, negative, empty) so that thresholds
// (temperatures, counts) are crossed.
std::string Key(const core::Finding& f) {
  return fmt::format("{}|{}|{}|{}", core::ToString(f.verdict), core::ToString(f.reason), f.observed, f.message);
}

std::string Describe(const core::Finding& f) {
  std::string s = fmt::format("{} {} observed='{}' message='{}'", core::ToString(f.verdict), core::ToString(f.reason),
                              f.observed, f.message);
  for (size_t i = 0; i < f.details.size() && i < 3; ++i) s += "\n      detail: " + f.details[i];
  return s;
}

std::string EscapePointer(const std::string& key) {
  std::string out;
  for (char c : key) out += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
  return out;
}

// Leaves of `v` as JSON pointers. Arrays contribute only their first and last element: the same
// shape repeats, and this keeps the work bounded on large listings (processes, packages).
void Leaves(const json& v, const std::string& at, std::vector<std::string>& out) {
  if (v.is_object() && !v.empty()) {
    for (const auto& [k, child] : v.items()) Leaves(child, at + "/" + EscapePointer(k), out);
  } else if (v.is_array() && !v.empty()) {
    Leaves(v.front(), at + "/0", out);
    if (v.size() > 1) Leaves(v.back(), at + "/" + std::to_string(v.size() - 1), out);
  } else {
    out.push_back(at);
  }
}

// Values other than null: a null that makes a judge throw is a type error, not a read (the
// blanking step below tries null anyway). A null leaf has no value to perturb: it is skipped.
std::vector<json> Perturbations(const json& v) {
  std::vector<json> out;
  if (v.is_boolean()) {
    out.push_back(!v.get<bool>());
  } else if (v.is_number_integer() || v.is_number_unsigned()) {
    long long n = v.get<long long>();
    for (long long m : {n + 1, n * 2, n * 1000, n == 0 ? 1000LL : 0LL, -n - 1}) {
      if (m != n) out.push_back(m);
    }
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    for (double m : {d + 1, d * 2, d * 1000, d == 0 ? 1000.0 : 0.0, -d - 1}) {
      if (m != d) out.push_back(m);
    }
  } else if (v.is_string()) {
    out.push_back(v.get<std::string>() + "x");
    if (!v.get<std::string>().empty()) out.push_back("");
  } else if (v.is_array()) {
    out.push_back(json::array({"x"}));  // an empty container: its emptiness is the fact
  } else if (v.is_object()) {
    out.push_back(json::object({{"x", "x"}}));
  }
  return out;
}

// Leaves a check reads that may be blanked without losing the PASS, each with the reason. Keep it
// short: every entry is a judgement that the PASS rests on other facts the check did read.
struct Exemption {
  const char* check;
  const char* evidence;
  const char* pointer;  // a prefix of the JSON pointer, "*" matching any one segment
  const char* reason;
};
const Exemption kExemptions[] = {
    {"security-vmscape", "kvm.exposure", "/arch",
     "arch only gates the SKIP for non-x86 machines; the PASS rests on the kernel's own VMScape verdict (sysfs), which was read"},
    {"cuda-toolkit-present", "cuda.toolkits", "/default",
     "null is the collector's 'no nvcc on PATH'; the PASS rests on the toolkit list, and default is only echoed in observed"},
    {"perf-access", "perf.binary", "/installed",
     "installed only selects the not-installed FAIL; the PASS rests on the version perf printed, which proves the install"},
    {"security-dcgm", "dcgm.version", "/installed",
     "installed only selects the not-installed SKIP; the PASS rests on the version dcgmi printed, which proves the install"},
    {"dcgm-diag-quick", "dcgm.version", "/installed",
     "installed only selects the not-installed SKIP; the PASS rests on the diagnostic's own results"},
    // scontrol prints Gres= on every node record ("Gres=(null)" without GPUs); a record without it
    // is judged as a node without GPUs, and these checks judge GPU nodes only. The node is still
    // counted by the checks of all nodes (coverage, drift).
    {"slurm-node-states", "slurm.nodes", "/records/*/Gres",
     "a node record without Gres= is a node without GPUs (see above)"},
    {"slurm-gres-gpu", "slurm.nodes", "/records/*/Gres",
     "a node record without Gres= is a node without GPUs (see above)"},
    {"topology-conf", "slurm.nodes", "/records/*/Gres",
     "a node record without Gres= is a node without GPUs (see above)"},
    {"topology-conf", "k8s.nodes", "/nodes/*/labels",
     "a label removed describes a node without it; the PASS then rests on another placement the check read (JobSet on "
     "a label every GPU node still carries); a label of the wrong type is misshapen evidence (WARN)"},
    {"security-nvidia-driver", "gpu.inventory", "/driver_version",
     "a second source of the same fact: without NVML's version the check reads /proc/driver/nvidia/version "
     "(nvidia.proc-version) and names that source in its details"},
    {"ncu-profiling", "ncu.binary", "/installed",
     "installed only selects the not-installed FAIL; the PASS rests on the version ncu printed, which proves the install"},
    {"cuda-arch-support", "ncu.binary", "/installed",
     "installed only selects 'ncu not installed (graded by ncu-profiling)'; the PASS rests on the version ncu printed, "
     "compared with the GPU's minimum"},
    {"ncu-profiling-counters", "ncu.binary", "/installed",
     "installed only selects the not-installed SKIP; the PASS rests on the driver's RmProfilingAdminOnly parameter"},
    {"vm-iommu-passthrough", "iommu", "/cmdline_flags",
     "the kernel command line is only echoed in observed; the PASS rests on each device's IOMMU group read from sysfs"},
    {"gpu-count-consistent", "gpu.inventory", "/devices/*/virtualization_mode",
     "the mode only chooses the guest wording; without it a VM's count is still judged against the PCI bus, which was "
     "read (a VM holds the GPUs it was given, not the SKU's node count)"},
    {"gpu-xid-history", "kernel.xid", "/counts_by_day",
     "a count in a map keyed by day and code is a record, not a field: removing it describes a log without that event"},
    {"gpu-xid-history", "kernel.xid", "/source",
     "the log source is only named in observed ('from journalctl'); the verdict rests on the counts"},
    {"gpu-xid-history", "kernel.xid", "/truncated",
     "truncated only adds 'newest N of M listed' to observed; the per-day counts are exact whatever the events list holds"},
};

bool PointerMatches(const std::string& pattern, const std::string& pointer) {
  auto p = util::Split(pattern, '/', true), q = util::Split(pointer, '/', true);
  if (q.size() < p.size()) return false;
  for (size_t i = 0; i < p.size(); ++i) {
    if (p[i] != "*" && p[i] != q[i]) return false;
  }
  return true;
}

bool Exempt(const std::string& check, const std::string& evidence, const std::string& pointer) {
  for (const auto& e : kExemptions) {
    if (check == e.check && evidence == e.evidence && PointerMatches(e.pointer, pointer)) return true;
  }
  return false;
}

// Runs the property for one check on one fixture whose baseline is PASS. Returns the number of
// leaves the check was found to read.
int CheckOne(const core::Check& c, EvidenceFixture& f, const core::Finding& base,
             std::vector<std::string>& violations) {
  const std::string base_key = Key(base);
  int read = 0;
  for (const auto& id : c.info.needs) {
    auto it = f.evidence.find(id);
    if (it == f.evidence.end() || !it->second.ok()) continue;
    json& data = it->second.data;
    std::vector<std::string> leaves;
    Leaves(data, "", leaves);
    for (const auto& ptr_text : leaves) {
      if (ptr_text.empty()) continue;  // the whole document is an empty object: nothing to blank
      json::json_pointer ptr(ptr_text);
      json original = data.at(ptr);
      if (original.is_null()) continue;
      auto judge_with = [&](const std::function<void()>& mutate) {
        mutate();
        core::Finding r = JudgeSafe(c, f);
        data[ptr] = original;  // restores a removed member too
        return r;
      };
      bool reads = false;
      for (const auto& p : Perturbations(original)) {
        if (Key(judge_with([&] { data[ptr] = p; })) != base_key) {
          reads = true;
          break;
        }
      }
      if (!reads) continue;
      ++read;
      if (Exempt(c.info.id, id, ptr_text)) continue;
      auto where = fmt::format("check {} on fixture {}: evidence {} pointer {}", c.info.id, f.name, id, ptr_text);
      core::Finding nulled = judge_with([&] { data[ptr] = nullptr; });
      if (nulled.verdict == core::Verdict::kPass) {
        violations.push_back(fmt::format("{} set to null still PASSes:\n    {}", where, Describe(nulled)));
      }
      json& parent = data.at(ptr.parent_pointer());
      if (parent.is_object()) {
        std::string key = ptr.back();
        core::Finding removed = judge_with([&] { parent.erase(key); });
        if (removed.verdict == core::Verdict::kPass) {
          violations.push_back(fmt::format("{} removed still PASSes:\n    {}", where, Describe(removed)));
        }
      }
    }
  }
  return read;
}

}  // namespace

TEST(Property, NoCheckPassesOnAFactItDidNotRead) {
  auto start = std::chrono::steady_clock::now();
  auto fixtures = Fixtures();
  std::vector<std::string> violations;
  int passing = 0;
  std::map<std::string, int> passes_per_fixture;
  for (auto& f : fixtures) {
    for (const auto& c : checks::DefaultRegistry().all()) {
      if (!core::InMask(c.info.targets, f.target)) continue;  // the engine never judges it here
      core::Finding base = JudgeSafe(c, f);
      if (base.verdict != core::Verdict::kPass) continue;
      ++passing;
      ++passes_per_fixture[f.name];
      int read = CheckOne(c, f, base, violations);
      if (std::getenv("CLUSTERMAX_PROPERTY_VERBOSE")) {
        std::printf("PASS %-40s on %-36s reads %d leaves\n", c.info.id.c_str(), f.name.c_str(), read);
      }
    }
  }
  for (const auto& [name, n] : passes_per_fixture) std::printf("fixture %s: %d checks PASS\n", name.c_str(), n);
  std::string all;
  for (const auto& v : violations) all += v + "\n";
  EXPECT_TRUE(violations.empty()) << violations.size() << " violation(s):\n" << all;
  EXPECT_GE(passing, 40) << "too few (check, fixture) pairs PASS for the property to mean much";
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  std::printf("property: %d passing (check, fixture) pairs, %lld ms\n", passing, static_cast<long long>(ms));
}
