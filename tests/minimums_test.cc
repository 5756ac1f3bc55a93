// The comparator test vectors of docs/minimum-versions.md (section 3.3 of the reference), plus
// grace periods, staleness and malformed tables.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "checks/register.h"
#include "core/check.h"
#include "core/minimums.h"
#include "util/time.h"

using namespace clustermax;
using core::Outcome;

namespace {

// After every grace window in the embedded table, so grace never hides a verdict here.
util::SysTime Later() { return *util::ParseRfc3339("2026-11-30T00:00:00Z"); }

Outcome Cmp(const char* component, core::VersionInput in, util::SysTime now = Later()) {
  const auto& t = core::EmbeddedMinimumTable();
  const core::Component* c = t.Find(component);
  EXPECT_NE(c, nullptr) << component;
  return core::Compare(*c, in, now, t.grace_period_days).outcome;
}
Outcome V(const char* component, const char* version) { return Cmp(component, {.version = version}); }

}  // namespace

TEST(Minimums, EmbeddedTableLoads) {
  const auto& t = core::EmbeddedMinimumTable();
  EXPECT_EQ(t.schema_version, 1);
  EXPECT_EQ(t.generated_text, "2026-09-25T04:03:23Z");
  EXPECT_GE(t.components.size(), 16u);
  for (const char* id :
       {"nvidiaDriver", "nvidiaContainerToolkit", "cudaToolkit", "runc", "docker", "connectxFirmware", "dcgm",
        "dcgmExporter", "nvhpc", "rocm", "amdDriver", "ubuntuNoble.linuxFragnesia", "ubuntuNoble.linuxJanuscape",
        "ubuntuNoble.linuxVmscape", "ubuntuNoble.qemu", "virtioNetBluefield"}) {
    EXPECT_NE(t.Find(id), nullptr) << id;
  }
}

TEST(Minimums, BranchMap) {
  EXPECT_EQ(V("nvidiaDriver", "580.95.05"), Outcome::kFail);
  EXPECT_EQ(V("nvidiaDriver", "580.159.03"), Outcome::kPass);
  EXPECT_EQ(V("nvidiaDriver", "600.10.01"), Outcome::kPass);
  EXPECT_EQ(V("nvidiaDriver", "575.57.08"), Outcome::kUnknown);
  // Older than the oldest end-of-life branch the table knows: FAIL, not "not listed".
  EXPECT_EQ(V("nvidiaDriver", "384.111"), Outcome::kFail);
  EXPECT_EQ(V("nvidiaDriver", "367.48"), Outcome::kFail);
  EXPECT_EQ(V("nvidiaDriver", "470.256.02"), Outcome::kFail);  // end-of-life
  EXPECT_EQ(V("nvidiaDriver", "550.127.05"), Outcome::kFail);
  EXPECT_EQ(V("nvidiaDriver", "garbage"), Outcome::kUnknown);
}

TEST(Minimums, SingleFloors) {
  EXPECT_EQ(V("nvidiaContainerToolkit", "1.19.0"), Outcome::kFail);
  EXPECT_EQ(V("nvidiaContainerToolkit", "1.19.1"), Outcome::kPass);
  EXPECT_EQ(V("nvidiaContainerToolkit", "1.18.2"), Outcome::kFail);
  EXPECT_EQ(V("cudaToolkit", "12.9"), Outcome::kFail);
  EXPECT_EQ(V("cudaToolkit", "13.0"), Outcome::kFail);
  EXPECT_EQ(V("cudaToolkit", "13.1"), Outcome::kPass);
  EXPECT_EQ(V("cudaToolkit", "13.2"), Outcome::kPass);
  EXPECT_EQ(V("docker", "29.6.1"), Outcome::kFail);
  EXPECT_EQ(V("docker", "29.7.0-rc.1"), Outcome::kFail);
  EXPECT_EQ(V("docker", "29.7.0"), Outcome::kPass);
  EXPECT_EQ(V("docker", "28.5.2"), Outcome::kFail);
}

TEST(Minimums, Ladder) {
  EXPECT_EQ(V("runc", "1.3.5"), Outcome::kFail);
  EXPECT_EQ(V("runc", "1.3.6"), Outcome::kPass);
  EXPECT_EQ(V("runc", "1.4.2"), Outcome::kFail);
  EXPECT_EQ(V("runc", "1.5.0-rc.2"), Outcome::kFail);
  EXPECT_EQ(V("runc", "1.5.0"), Outcome::kPass);
  EXPECT_EQ(V("runc", "1.6.0"), Outcome::kPass);
  EXPECT_EQ(V("runc", "0.0.9"), Outcome::kFail);
}

TEST(Minimums, TrainMap) {
  EXPECT_EQ(V("connectxFirmware", "28.43.8002"), Outcome::kPass);
  EXPECT_EQ(V("connectxFirmware", "28.43.2026"), Outcome::kFail);
  EXPECT_EQ(V("connectxFirmware", "28.46.3048"), Outcome::kPass);
  EXPECT_EQ(V("connectxFirmware", "28.47.1000"), Outcome::kPass);
  EXPECT_EQ(V("connectxFirmware", "16.31.1014"), Outcome::kUnknown);  // a gap between listed trains
  // Older than every train the table knows: unmaintained, FAIL (was "not listed", WARN).
  EXPECT_EQ(V("connectxFirmware", "16.20.1010"), Outcome::kFail);
}

TEST(Minimums, ReleaseWindow) {
  EXPECT_EQ(V("nvhpc", "26.3"), Outcome::kFail);
  EXPECT_EQ(V("nvhpc", "26.5"), Outcome::kPass);
  EXPECT_EQ(V("nvhpc", "26.9"), Outcome::kPass);
  EXPECT_EQ(V("nvhpc", "26.11"), Outcome::kNewerThanCurrent);
}

TEST(Minimums, ProgramMap) {
  EXPECT_EQ(Cmp("rocm", {.version = "6.4.1", .program = "MI300X"}), Outcome::kFail);
  EXPECT_EQ(Cmp("rocm", {.version = "6.4.2", .program = "MI300X"}), Outcome::kPass);
  EXPECT_EQ(Cmp("amdDriver", {.version = "31.30", .program = "MI355X"}), Outcome::kFail);
  EXPECT_EQ(Cmp("amdDriver", {.version = "31.40", .program = "MI355X"}), Outcome::kPass);
  EXPECT_EQ(Cmp("amdDriver", {.version = "31.40.1", .program = "MI355X"}), Outcome::kPass);
  EXPECT_EQ(Cmp("amdDriver", {.version = "31.50", .program = "MI355X"}), Outcome::kPass);
  EXPECT_EQ(Cmp("amdDriver", {.version = "31.40", .program = "MI355X", .release_proven = false}), Outcome::kUnknown);
  for (const char* p : {"MI100", "MI999X", "Radeon RX 7900"}) {
    EXPECT_EQ(Cmp("amdDriver", {.version = "31.40", .program = p}), Outcome::kUnknown) << p;
  }
}

TEST(Minimums, DistroPackages) {
  EXPECT_EQ(Cmp("ubuntuNoble.linuxFragnesia", {.version = "6.8.0-110-generic", .release = "noble"}), Outcome::kFail);
  EXPECT_EQ(Cmp("ubuntuNoble.linuxFragnesia", {.version = "6.8.0-124-generic", .release = "noble"}), Outcome::kPass);
  EXPECT_EQ(Cmp("ubuntuNoble.linuxFragnesia", {.version = "6.11.0-29-generic", .release = "noble"}), Outcome::kUnknown);
  EXPECT_EQ(Cmp("ubuntuNoble.linuxFragnesia", {.version = "6.8.0-110-generic", .release = "jammy"}),
            Outcome::kNotApplicable);
  EXPECT_EQ(Cmp("ubuntuNoble.qemu", {.version = "1:8.2.2+ds-0ubuntu1.4", .release = "noble"}), Outcome::kFail);
  EXPECT_EQ(Cmp("ubuntuNoble.qemu", {.version = "1:8.2.2+ds-0ubuntu1.10", .release = "noble"}), Outcome::kPass);
}

TEST(Minimums, ReleaseLines) {
  EXPECT_EQ(V("virtioNetBluefield", "25.10.6"), Outcome::kPass);
  EXPECT_EQ(V("virtioNetBluefield", "25.10.4"), Outcome::kUnknown);
  EXPECT_EQ(Cmp("virtioNetBluefield", {.version = "25.10.4", .line = "GA"}), Outcome::kFail);
  EXPECT_EQ(Cmp("virtioNetBluefield", {.version = "25.10.4", .line = "LTS25"}), Outcome::kPass);
  EXPECT_EQ(V("virtioNetBluefield", "24.10.49"), Outcome::kFail);
  EXPECT_EQ(V("virtioNetBluefield", "23.10.22"), Outcome::kFail);
  EXPECT_EQ(V("virtioNetBluefield", "1.7.21"), Outcome::kFail);
}

TEST(Minimums, GracePeriod) {
  // Toolkit floor 1.19.1: bulletin 2026-06-30, fix available earlier; window ends 2026-07-03.
  auto inside = *util::ParseRfc3339("2026-07-01T12:00:00Z");
  const auto& t = core::EmbeddedMinimumTable();
  auto c = core::Compare(*t.Find("nvidiaContainerToolkit"), {.version = "1.19.0"}, inside, t.grace_period_days);
  EXPECT_EQ(c.outcome, Outcome::kPass);
  EXPECT_TRUE(c.grace_active);
  EXPECT_EQ(c.grace_ends, "2026-07-03T00:00:00Z");
  auto after = *util::ParseRfc3339("2026-07-03T00:00:01Z");
  EXPECT_EQ(core::Compare(*t.Find("nvidiaContainerToolkit"), {.version = "1.19.0"}, after, t.grace_period_days).outcome,
            Outcome::kFail);
  // An end-of-life branch never gets grace.
  EXPECT_EQ(core::Compare(*t.Find("nvidiaDriver"), {.version = "470.1.1"}, inside, t.grace_period_days).outcome,
            Outcome::kFail);
}

TEST(Minimums, GraceRespectsPreviousFloor) {
  std::string json = R"({"schema_version":1,"generated":"2026-07-01T00:00:00Z","components":[
    {"id":"x","kind":"minimum","floors":[{"key":"*","version":"2.0","previous_version":"1.5",
     "bulletin_released":"2026-07-01T00:00:00Z","available":"2026-07-01T00:00:00Z","availability_status":"confirmed"}]}]})";
  auto t = core::ParseMinimumTable(json, "test");
  auto now = *util::ParseRfc3339("2026-07-02T00:00:00Z");
  EXPECT_EQ(core::Compare(t.components[0], {.version = "1.8"}, now, 3).outcome, Outcome::kPass);
  EXPECT_EQ(core::Compare(t.components[0], {.version = "1.4"}, now, 3).outcome, Outcome::kFail);
}

TEST(Minimums, Staleness) {
  const auto& t = core::EmbeddedMinimumTable();
  EXPECT_FALSE(core::TableStaleness(t, *util::ParseRfc3339("2026-10-01T00:00:00Z")).stale);
  EXPECT_TRUE(core::TableStaleness(t, *util::ParseRfc3339("2026-11-30T00:00:00Z")).stale);
}

TEST(Minimums, MalformedTablesAreRejectedClearly) {
  EXPECT_THROW(core::ParseMinimumTable("{", "t"), core::MinimumTableError);
  EXPECT_THROW(
      core::ParseMinimumTable(R"({"schema_version":2,"generated":"2026-01-01T00:00:00Z","components":[]})", "t"),
      core::MinimumTableError);
  EXPECT_THROW(
      core::ParseMinimumTable(
          R"({"schema_version":1,"generated":"2026-01-01T00:00:00Z","components":[{"id":"a","kind":"magic","floors":[{"key":"*","version":"1"}]}]})",
          "t"),
      core::MinimumTableError);
  EXPECT_THROW(core::ParseMinimumTable(R"({"schema_version":1,"generated":"soon","components":[]})", "t"),
               core::MinimumTableError);
}

// ---- Coverage of the keyed families: every branch, train, minor or GPU program between a family's
// oldest and newest row is listed, end-of-life or declared unlisted with its reason.

namespace {
std::vector<std::string> GapNames(const core::MinimumTable& t) {
  std::vector<std::string> out;
  for (const auto& g : core::MinimumTableGaps(t)) out.push_back(g.component + " " + g.key);
  return out;
}
core::MinimumTable Without(const char* component, const char* key) {
  core::MinimumTable t = core::EmbeddedMinimumTable();
  for (auto& c : t.components) {
    if (c.id != component) continue;
    auto n = c.floors.size();
    std::erase_if(c.floors, [&](const core::Floor& f) { return f.key == key; });
    EXPECT_EQ(c.floors.size(), n - 1) << component << " has no row " << key;
  }
  return t;
}
}  // namespace

TEST(MinimumGaps, EmbeddedTableHasNone) {
  EXPECT_EQ(GapNames(core::EmbeddedMinimumTable()), std::vector<std::string>{});
  // Every declared unlisted key carries its reason, and is not also listed.
  for (const auto& c : core::EmbeddedMinimumTable().components) {
    for (const auto& [key, why] : c.unlisted_keys) {
      EXPECT_FALSE(why.empty()) << c.id << " " << key;
      for (const auto& f : c.floors) EXPECT_NE(f.key, key) << c.id << ": " << key << " is both listed and unlisted";
    }
  }
}

TEST(MinimumGaps, ARemovedRowIsNamed) {
  EXPECT_EQ(GapNames(Without("nvidiaDriver", "570")), std::vector<std::string>{"nvidiaDriver 570"});
  EXPECT_EQ(GapNames(Without("connectxFirmware", "39")), std::vector<std::string>{"connectxFirmware 39"});
  EXPECT_EQ(GapNames(Without("runc", "1.2")), std::vector<std::string>{"runc 1.2"});
  // A GPU program another programMap component knows.
  EXPECT_EQ(GapNames(Without("rocm", "MI300A")), std::vector<std::string>{"rocm MI300A"});
  // The oldest or newest row only narrows the family: nothing lies outside it to miss.
  EXPECT_EQ(GapNames(Without("nvidiaDriver", "595")), std::vector<std::string>{});
  // An end-of-life key, or a declared unlisted one, is covered; dropping the declaration is a gap.
  core::MinimumTable t = core::EmbeddedMinimumTable();
  for (auto& c : t.components) {
    if (c.id == "nvidiaDriver") c.unlisted_keys.erase("575");
  }
  auto gaps = core::MinimumTableGaps(t);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].component, "nvidiaDriver");
  EXPECT_EQ(gaps[0].key, "575");
  EXPECT_EQ(gaps[0].family, "driver branch");
}

TEST(MinimumGaps, UnlistedKeysParseAndGradeUnknown) {
  const auto* drv = core::EmbeddedMinimumTable().Find("nvidiaDriver");
  ASSERT_NE(drv, nullptr);
  EXPECT_EQ(drv->unlisted_keys.count("575"), 1u);
  EXPECT_EQ(V("nvidiaDriver", "575.57.08"), Outcome::kUnknown);  // declared unlisted is never a pass
  EXPECT_EQ(V("connectxFirmware", "28.40.1000"), Outcome::kUnknown);
}

TEST(MinimumGaps, TheTableCheckWarnsNamingTheGap) {
  const core::Check* c = checks::DefaultRegistry().Find("minimum-table-current");
  ASSERT_NE(c, nullptr);
  core::EvidenceSet none;
  auto judge = [&](const core::MinimumTable& t) {
    core::JudgeContext ctx(c->info, none, t, core::Target::kStandalone, *util::ParseRfc3339("2026-09-26T00:00:00Z"));
    return c->judge(ctx);
  };
  EXPECT_EQ(judge(core::EmbeddedMinimumTable()).verdict, core::Verdict::kPass);
  // A table loaded from text with one driver row removed.
  auto text = nlohmann::json::parse(core::EmbeddedMinimumTableText());
  for (auto& comp : text["components"]) {
    if (comp["id"] != "nvidiaDriver") continue;
    auto& floors = comp["floors"];
    for (size_t i = 0; i < floors.size(); ++i) {
      if (floors[i]["key"] == "580") floors.erase(i);
    }
  }
  auto f = judge(core::ParseMinimumTable(text.dump(), "mutated.json"));
  EXPECT_EQ(f.verdict, core::Verdict::kWarn);
  EXPECT_EQ(f.reason, core::Reason::kToolFault);
  EXPECT_NE(f.message.find("driver branch 580 (nvidiaDriver)"), std::string::npos) << f.message;
  // Stale and gapped: one WARN naming both.
  core::MinimumTable mutated = core::ParseMinimumTable(text.dump(), "mutated.json");
  core::JudgeContext late(c->info, none, mutated, core::Target::kStandalone,
                          *util::ParseRfc3339("2026-11-30T00:00:00Z"));
  auto stale = c->judge(late);
  EXPECT_EQ(stale.verdict, core::Verdict::kWarn);
  EXPECT_NE(stale.message.find("days old"), std::string::npos) << stale.message;
  EXPECT_NE(stale.message.find("580"), std::string::npos) << stale.message;
}
