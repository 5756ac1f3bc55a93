// Typed evidence: every collector declares the fields of its data (collect::CollectorInfo::fields,
// docs/evidence-fields.md). These tests hold the declarations to what the collectors produce on
// recorded input, and the judges' reads to the declarations:
//  - every collector declares well-formed fields;
//  - every recorded bundle (tests/fixtures/bundles), replayed, and the captured command outputs of
//    tests/fixtures (slurm, parsers, corpus/nvidia-smi-xml) through their collectors give data whose
//    every key is declared, with the declared type;
//  - judging every check on a bundle's evidence gives the same report when every undeclared key is
//    removed first (a judge that reads an undeclared key would see a difference);
//  - every key literal a judge file reads from evidence (data["x"], .value("x", ...), .contains("x"))
//    is a declared field name of the evidence its checks declare in `needs` (src/checks/*.cc, and
//    src/audit/fleet_summary.cc against every collector).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "audit/engine.h"
#include "audit/plan.h"
#include "checks/common.h"
#include "checks/register.h"
#include "collect/collector.h"
#include "core/thresholds.h"
#include "core/check.h"
#include "gpu/smi_xml.h"
#include "host/bundle.h"
#include "audit/render.h"
#include "testutil.h"
#include "util/files.h"

using namespace clustermax;
using nlohmann::json;
namespace fs = std::filesystem;
namespace cmt = clustermax::testing;

namespace {

const collect::Collector& CollectorOf(const std::string& id) {
  const collect::Collector* c = collect::FindCollector(id);
  if (!c) throw std::logic_error("no collector " + id);
  return *c;
}

// Checks one evidence item against its collector's declaration; `where` names the input.
int ExpectDeclared(const core::Evidence& e, const std::string& where) {
  if (!e.ok()) return 0;
  const collect::Collector* c = collect::FindCollector(e.id);
  if (!c) {
    ADD_FAILURE() << where << ": evidence " << e.id << " has no collector";
    return 0;
  }
  for (const auto& p : core::CheckDeclaredFields(c->info.fields, e.data)) {
    ADD_FAILURE() << where << ": collector " << e.id << ": " << p;
  }
  return 1;
}

std::vector<fs::path> Bundles() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(cmt::Fixture("bundles"))) {
    if (e.path().extension() == ".json") out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

audit::Plan FullPlan(const host::Bundle& b) {
  audit::Selection sel;
  sel.target = core::TargetFromString(b.manifest.target).value_or(core::Target::kStandalone);
  for (const auto& p : core::Probes()) sel.probes.insert(p.name);
  return audit::BuildPlan(checks::DefaultRegistry(), sel);
}

// Every collector's evidence from a bundle: the plan's replay, and the collectors no check of the
// plan needs run on the same recorded answers.
core::EvidenceSet ReplayAll(const host::Bundle& b, const audit::Plan& plan) {
  core::EvidenceSet ev = audit::ReplayNode(b, plan, {}).evidence;
  std::vector<std::string> rest;
  for (const auto& c : collect::Collectors()) {
    if (!ev.count(c.info.id)) rest.push_back(c.info.id);
  }
  host::ReplayHost h(b);
  collect::CollectOptions o;
  for (const auto& p : core::Probes()) o.probes.insert(p.name);
  for (auto& [id, e] : collect::CollectEvidence(h, rest, o)) ev[id] = std::move(e);
  return ev;
}

}  // namespace

TEST(EvidenceSchema, FieldPathsAreCheckedForShape) {
  for (const char* ok : {"running", "gpus[].uuid", "devices[].ports[].rate", "tokens[]", "settings{}", "days{}{}",
                         "days{}.x", "SLURM_JOB_ID"}) {
    EXPECT_EQ(core::FieldPathProblem(ok), "") << ok;
  }
  for (const char* bad : {"", ".x", "x.", "x..y", "x[", "x[]y", "x y", "_x", "x-y"}) {
    EXPECT_NE(core::FieldPathProblem(bad), "") << bad;
  }
}

TEST(EvidenceSchema, CheckerFindsUndeclaredKeysAndWrongTypes) {
  using core::FieldType;
  std::vector<core::FieldSpec> f = {{"running", FieldType::kString, "", "kernel", true},
                                    {"devices[].ports[].rate", FieldType::kString, "Gb/s", "rate"},
                                    {"counts{}{}", FieldType::kInteger, "", "day -> key -> count"},
                                    {"tokens[]", FieldType::kString, "", "tokens"}};
  json good = {{"running", nullptr},
               {"devices", {{{"ports", {{{"rate", "400 Gb/sec"}}}}}}},
               {"counts", {{"2026-11-29", {{"Xid 79", 2}}}}},
               {"tokens", {"docker"}},
               {"not_taken", {"command x"}}};
  EXPECT_TRUE(core::CheckDeclaredFields(f, good).empty());
  json renamed = good;
  renamed["devices"][0]["ports"][0].erase("rate");
  renamed["devices"][0]["ports"][0]["speed"] = "400 Gb/sec";
  auto p = core::CheckDeclaredFields(f, renamed);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_EQ(p[0], "undeclared key 'speed' at devices[].ports[]");
  json typed = good;
  typed["running"] = 6;
  typed["counts"]["2026-11-29"]["Xid 79"] = "2";
  typed["tokens"] = {1};
  p = core::CheckDeclaredFields(f, typed);
  ASSERT_EQ(p.size(), 3u) << json(p).dump();
  EXPECT_EQ(p[0], "'counts{}{}' is a string, declared integer");
  EXPECT_EQ(p[1], "'running' is an integer, declared string or null");
  EXPECT_EQ(p[2], "'tokens[]' is an integer, declared string");
  // The projection keeps declared keys only.
  json projected = core::ProjectDeclaredFields(f, renamed);
  EXPECT_FALSE(projected["devices"][0]["ports"][0].contains("speed"));
  EXPECT_EQ(projected["counts"], good["counts"]);
  EXPECT_EQ(projected["not_taken"], good["not_taken"]);
}

TEST(EvidenceSchema, EveryCollectorDeclaresWellFormedFields) {
  int fields = 0;
  for (const auto& c : collect::Collectors()) {
    EXPECT_FALSE(c.info.fields.empty()) << "collector " << c.info.id << " declares no fields (collect/" << c.info.id
                                        << ": DeclareFields next to its registration)";
    std::set<std::string> seen;
    for (const auto& f : c.info.fields) {
      ++fields;
      EXPECT_EQ(core::FieldPathProblem(f.path), "") << c.info.id << ": '" << f.path << "'";
      EXPECT_TRUE(seen.insert(f.path).second) << c.info.id << ": '" << f.path << "' declared twice";
      EXPECT_FALSE(f.meaning.empty()) << c.info.id << ": '" << f.path << "' has no meaning";
      EXPECT_NE(f.path, "not_taken") << c.info.id << ": not_taken is the driver's, declared for every collector";
    }
  }
  EXPECT_GT(fields, 300);
}

TEST(EvidenceSchema, RecordedBundlesMatchTheDeclarations) {
  auto bundles = Bundles();
  ASSERT_GE(bundles.size(), 2u);
  for (const auto& path : bundles) {
    host::Bundle b = host::Bundle::Load(path.string());
    auto ev = ReplayAll(b, FullPlan(b));
    int checked = 0;
    for (const auto& [id, e] : ev) checked += ExpectDeclared(e, "bundle " + path.filename().string());
    EXPECT_GT(checked, 30) << path;
  }
}

// The checks above see a renamed or retyped field: dropping one declaration, or declaring another
// type, fails on the recorded bundle's own evidence.
TEST(EvidenceSchema, ADroppedOrRetypedDeclarationFailsOnTheRecordedBundle) {
  host::Bundle b = host::Bundle::Load(cmt::Fixture("bundles/debian12-container-cpu.json").string());
  auto ev = ReplayAll(b, FullPlan(b));
  const core::Evidence& e = ev.at("os.kernel");
  ASSERT_TRUE(e.ok()) << e.error;
  auto fields = CollectorOf("os.kernel").info.fields;
  ASSERT_TRUE(core::CheckDeclaredFields(fields, e.data).empty());
  auto dropped = fields;
  std::erase_if(dropped, [](const core::FieldSpec& f) { return f.path == "hostname"; });
  EXPECT_EQ(core::CheckDeclaredFields(dropped, e.data), std::vector<std::string>{"undeclared key 'hostname'"});
  auto retyped = fields;
  for (auto& f : retyped) {
    if (f.path == "release") f.type = core::FieldType::kInteger;
  }
  EXPECT_EQ(core::CheckDeclaredFields(retyped, e.data),
            std::vector<std::string>{"'release' is a string, declared integer"});
}

// The recorded Slurm answers of tests/fixtures/slurm through the Slurm collectors.
TEST(EvidenceSchema, RecordedSlurmOutputsMatchTheDeclarations) {
  host::Bundle b;
  auto put = [&](std::vector<std::string> argv, const std::string& file) {
    b.PutCommand(argv, cmt::Out(cmt::ReadFixture("slurm/" + file)));
  };
  put({"scontrol", "show", "config"}, "scontrol-show-config.txt");
  put({"scontrol", "show", "node", "-o"}, "scontrol-show-node-o.txt");
  put({"scontrol", "show", "partition", "-o"}, "scontrol-show-partition-o.txt");
  put({"scontrol", "show", "topology"}, "scontrol-show-topology.txt");
  put({"scontrol", "ping"}, "scontrol-ping.txt");
  put({"srun", "--mpi=list"}, "srun-mpi-list.txt");
  put({"sacct", "-X", "-n", "-S", "now-1hours", "-o", "JobID"}, "sacct-disabled.txt");
  host::ReplayHost h(b);
  auto ev = collect::CollectEvidence(h,
                                     {"slurm.config", "slurm.nodes", "slurm.partitions", "slurm.topology", "slurm.ping",
                                      "slurm.mpi", "slurm.sacct", "slurm.cgroup-conf"},
                                     {});
  int checked = 0;
  for (const auto& [id, e] : ev) checked += ExpectDeclared(e, "tests/fixtures/slurm");
  EXPECT_GE(checked, 7);
}

// nvidia-smi -q -x captures (tests/fixtures/parsers, corpus/nvidia-smi-xml) in gpu.inventory's shape.
TEST(EvidenceSchema, CapturedNvidiaSmiXmlMatchesGpuInventory) {
  std::vector<fs::path> files = {cmt::Fixture("parsers/nvidia-smi-q-x-h100-2gpu.xml")};
  for (const auto& e : fs::directory_iterator(cmt::Fixture("corpus/nvidia-smi-xml"))) {
    if (e.path().extension() == ".xml" || e.path().extension() == ".txt") files.push_back(e.path());
  }
  int parsed = 0;
  for (const auto& f : files) {
    std::string err;
    auto data = gpu::ParseNvidiaSmiXml(*util::ReadLocalFile(f), &err);
    if (!data) continue;  // captures the parser refuses are parse-errors, not data
    ++parsed;
    core::Evidence e = cmt::Ok("gpu.inventory", *data);
    e.data["nvml_error"] = "NVML not-found: (replayed capture)";
    ExpectDeclared(e, f.filename().string());
  }
  EXPECT_GE(parsed, 2);
}

// A judge that reads a key nobody declared sees a difference when undeclared keys are removed.
TEST(EvidenceSchema, JudgesReadOnlyDeclaredFields) {
  for (const auto& path : Bundles()) {
    host::Bundle b = host::Bundle::Load(path.string());
    audit::Plan plan = FullPlan(b);
    audit::NodeEvidence node = audit::ReplayNode(b, plan, {});
    audit::NodeEvidence projected = node;
    for (auto& [id, e] : projected.evidence) {
      if (const collect::Collector* c = collect::FindCollector(id); c && e.ok())
        e.data = core::ProjectDeclaredFields(c->info.fields, e.data);
    }
    auto full = audit::Judge(plan, {node}, core::EmbeddedMinimumTable());
    auto only_declared = audit::Judge(plan, {projected}, core::EmbeddedMinimumTable());
    json a = audit::ToJson(full), p = audit::ToJson(only_declared);
    ASSERT_TRUE(a.contains("results"));
    EXPECT_EQ(a["results"], p["results"]) << path.filename();
  }
}

// ---- the judges' key literals against the declarations ----

namespace {

// The evidence keys a judge source file reads: data["x"], data.value("x", ...), .contains("x"),
// .at("x") and the ["x"] / .value("x") that follow them on a JSON value taken from evidence.
std::set<std::string> KeyLiterals(const std::string& text) {
  std::set<std::string> out;
  static const std::regex re(
      R"re((?:\[|\.value\(|\.contains\(|\.at\(|\.count\()"([A-Za-z_][A-Za-z0-9_]*)"\s*[\],)])re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1].str());
  return out;
}

// Every segment name a collector declares ("devices[].ports[].rate" -> devices, ports, rate).
std::set<std::string> DeclaredNames(const std::vector<std::string>& ids) {
  std::set<std::string> out = {"not_taken"};
  for (const auto& id : ids) {
    const collect::Collector* c = collect::FindCollector(id);
    if (!c) continue;
    for (const auto& f : c->info.fields) {
      std::string seg;
      for (char ch : f.path + ".") {
        if (ch == '.' || ch == '[' || ch == '{') {
          if (!seg.empty()) out.insert(seg);
          seg.clear();
        } else if (ch != ']' && ch != '}') {
          seg += ch;
        }
      }
    }
  }
  return out;
}

}  // namespace

TEST(EvidenceSchema, KeyLiteralsOfAJudge) {
  EXPECT_EQ(
      KeyLiterals(
          R"(std::string running = e.data["running"]; os.data.value("codename", ""); e.data.contains("reboot_required");
                           for (const auto& p : e.data["installed"]) p.at("release"); needs.count("gpu.inventory");)"),
      (std::set<std::string>{"running", "codename", "reboot_required", "installed", "release"}));
}

TEST(EvidenceSchema, JudgeKeyLiteralsAreDeclaredFieldsOfTheirNeeds) {
  // Each judge file with the registration of its checks: their `needs` (and `node_needs`).
  const std::map<std::string, void (*)(core::Registry&)> files = {
      {"access.cc", checks::RegisterAccessChecks},       {"containers.cc", checks::RegisterContainerChecks},
      {"fabric.cc", checks::RegisterFabricChecks},       {"gpu.cc", checks::RegisterGpuChecks},
      {"hardware.cc", checks::RegisterHardwareChecks},   {"health.cc", checks::RegisterHealthChecks},
      {"isolation.cc", checks::RegisterIsolationChecks}, {"node.cc", checks::RegisterNodeChecks},
      {"services.cc", checks::RegisterServiceChecks},    {"slurm.cc", checks::RegisterSlurmChecks},
      {"software.cc", checks::RegisterSoftwareChecks},   {"versions.cc", checks::RegisterVersionChecks}};
  // Literals that are not field names: keys of a map the declaration leaves free ("records[]{}"),
  // each with the collector and free map it is read from (the declaration must have that map), and
  // keys of data/node-thresholds.json (checked to be there).
  struct FreeKey {
    std::string key, collector, path;
  };
  const std::vector<FreeKey> free_keys = {{"CoherentGPUMemoryMode", "nvidia.params", "params{}"},
                                          {"RmProfilingAdminOnly", "nvidia.params", "params{}"},
                                          {"passwordauthentication", "ssh.sshd-config", "settings{}"},
                                          {"pubkeyauthentication", "ssh.sshd-config", "settings{}"},
                                          {"NodeName", "slurm.nodes", "records[]{}"},
                                          {"State", "slurm.nodes", "records[]{}"},
                                          {"Reason", "slurm.nodes", "records[]{}"},
                                          {"Gres", "slurm.nodes", "records[]{}"},
                                          {"PartitionName", "slurm.partitions", "records[]{}"},
                                          {"Nodes", "slurm.partitions", "records[]{}"},
                                          {"Level", "slurm.topology", "units[]{}"},
                                          {"Partitions", "slurm.nodes", "records[]{}"},
                                          {"cpu", "probe.slurm-job", "steps{}.ran"},
                                          {"gpu", "probe.slurm-job", "steps{}.ran"},
                                          {"size", "block.devices", "disks[]{}"},
                                          {"gpus", "fleet.summary", "nodes[].facts{}"}};
  std::map<std::string, const FreeKey*> free_by_key;
  for (const auto& f : free_keys) {
    free_by_key[f.key] = &f;
    const auto& fields = CollectorOf(f.collector).info.fields;
    bool declared = false;
    for (const auto& x : fields) declared |= x.path == f.path;
    EXPECT_TRUE(declared) << f.collector << " no longer declares the free map " << f.path << " that \"" << f.key
                          << "\" is read from";
  }
  std::set<std::string> threshold_keys;
  std::vector<const json*> stack = {&core::EmbeddedThresholds().data()};
  while (!stack.empty()) {
    const json* j = stack.back();
    stack.pop_back();
    if (j->is_object()) {
      for (auto it = j->begin(); it != j->end(); ++it) {
        threshold_keys.insert(it.key());
        stack.push_back(&it.value());
      }
    } else if (j->is_array()) {
      for (const auto& x : *j) stack.push_back(&x);
    }
  }
  // The helpers of register.cc read the evidence of every check that calls them: any collector.
  std::vector<std::string> all_ids;
  for (const auto& c : collect::Collectors()) all_ids.push_back(c.info.id);
  std::map<std::string, std::vector<std::string>> needs_of;
  for (const auto& [file, reg] : files) {
    core::Registry r;
    reg(r);
    for (const auto& c : r.all()) {
      for (const auto& n : c.info.needs) needs_of["checks/" + file].push_back(n);
      for (const auto& n : c.info.node_needs) needs_of["checks/" + file].push_back(n);
    }
  }
  needs_of["checks/register.cc"] = all_ids;
  // The fleet summary reads the nodes' evidence too (and writes fleet.summary's own keys).
  needs_of["audit/fleet_summary.cc"] = all_ids;
  int literals = 0;
  for (const auto& [file, ids] : needs_of) {
    auto text = util::ReadLocalFile(cmt::SourceDir() / "src" / file);
    ASSERT_TRUE(text) << file;
    std::set<std::string> declared = DeclaredNames(ids);
    for (const auto& key : KeyLiterals(*text)) {
      ++literals;
      if (declared.count(key) || threshold_keys.count(key)) continue;
      if (auto f = free_by_key.find(key);
          f != free_by_key.end() && std::count(ids.begin(), ids.end(), f->second->collector))
        continue;
      ADD_FAILURE() << "src/" << file << " reads \"" << key
                    << "\", which no collector its checks need declares (a renamed or undeclared field)";
    }
  }
  EXPECT_GT(literals, 100);
}

// docs/evidence-fields-reference.md is generated from the declarations, like docs/checks.md.
TEST(EvidenceSchema, FieldReferenceIsCurrent) {
  fs::path p = cmt::SourceDir() / "docs" / "evidence-fields-reference.md";
  std::string expected = collect::FieldReferenceMarkdown();
  if (std::getenv("CLUSTERMAX_UPDATE_FIELDS_DOC")) {
    util::WriteFileAtomic(p, expected, 0644);
    return;
  }
  auto committed = util::ReadLocalFile(p);
  ASSERT_TRUE(committed) << p << " missing (CLUSTERMAX_UPDATE_FIELDS_DOC=1 writes it)";
  EXPECT_EQ(*committed, expected) << p << " is stale: rerun this test with CLUSTERMAX_UPDATE_FIELDS_DOC=1";
}
