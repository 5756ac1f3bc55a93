// collect::CollectorMemo: a replay that takes evidence from the memo gives exactly the evidence a
// replay without it gives, whatever differs between the nodes; a collector that is not a function
// of its answers, or whose answers differ on every node, is given up.
#include <gtest/gtest.h>

#include <atomic>

#include <fmt/format.h>

#include "audit/engine.h"
#include "audit/plan.h"
#include "checks/register.h"
#include "collect/memo.h"
#include "host/bundle.h"
#include "testutil.h"
#include "util/files.h"

using namespace clustermax;
using nlohmann::json;

namespace {

json Base() {
  return json::parse(*util::ReadLocalFile(clustermax::testing::Fixture("bundles/debian12-container-cpu.json")));
}

// Node `i` of a fleet made from the fixture: most answers as recorded, some changed per node the
// way nodes of one image differ (hostname, counters, a package, a missing file, a command's output,
// a directory listing, the order of an environment variable), some shared by groups of nodes.
json Variant(const json& base, int i) {
  json b = base;
  b["manifest"]["hostname"] = fmt::format("n{:02d}", i);
  auto file = [&](const std::string& path) -> json& { return b["files"][path]; };
  if (b["files"].contains("/proc/sys/kernel/hostname"))
    file("/proc/sys/kernel/hostname")["content"] = fmt::format("n{:02d}\n", i);
  if (i % 3 == 1) file("/proc/sys/kernel/osrelease") = {{"status", "ok"}, {"content", "6.1.0-99-amd64\n"}};
  if (i % 4 == 2) b["files"].erase("/etc/os-release");
  if (i % 5 == 3 && b["files"].contains("/proc/meminfo"))
    file("/proc/meminfo")["content"] = "MemTotal:       1048576 kB\n";
  if (i % 6 == 4) file("/etc/os-release") = {{"status", "error"}, {"error", "permission denied"}};
  for (auto& c : b["commands"]) {
    if (i % 4 == 1 && !c["stdout"].is_null())
      c["stdout"] = c["stdout"].get<std::string>() + fmt::format("extra line {}\n", i % 2);
    c["duration_ms"] = 1.5 * i;  // never read outside the active probes: must not defeat the memo
  }
  if (i % 7 == 5) {
    for (auto& [path, d] : b["dirs"].items()) {
      if (d.contains("entries") && !d["entries"].empty()) {
        d["entries"].erase(d["entries"].begin());
        break;
      }
    }
  }
  if (i % 2 == 1) b["env"]["SLURM_JOB_ID"] = std::to_string(100 + i);
  return b;
}

void ExpectSameEvidence(const audit::NodeEvidence& a, const audit::NodeEvidence& b, int node) {
  ASSERT_EQ(a.evidence.size(), b.evidence.size()) << "node " << node;
  for (const auto& [id, e] : a.evidence) {
    auto it = b.evidence.find(id);
    ASSERT_NE(it, b.evidence.end()) << id;
    const core::Evidence& f = it->second;
    EXPECT_EQ(e.status, f.status) << "node " << node << " " << id;
    EXPECT_EQ(e.data, f.data) << "node " << node << " " << id;
    EXPECT_EQ(e.error, f.error) << "node " << node << " " << id;
    EXPECT_EQ(e.sources, f.sources) << "node " << node << " " << id;
    EXPECT_EQ(e.invalid_utf8, f.invalid_utf8) << "node " << node << " " << id;
  }
  EXPECT_EQ(a.replay_misses, b.replay_misses) << "node " << node;
  EXPECT_EQ(a.node, b.node);
}

// Replays run their collectors in order on one thread (the order of the misses they record).
collect::CollectOptions OneThread() {
  collect::CollectOptions one;
  one.threads = 1;
  return one;
}

audit::Plan FullPlan() {
  audit::Selection sel;
  sel.target = core::Target::kSlurm;
  return audit::BuildPlan(checks::DefaultRegistry(), sel);
}

}  // namespace

TEST(Memo, ReplayWithTheMemoIsTheReplayWithout) {
  json base = Base();
  audit::Plan plan = FullPlan();
  collect::CollectOptions one = OneThread();
  collect::CollectorMemo memo;
  for (int i = 0; i < 40; ++i) {
    host::Bundle b = host::Bundle::FromJson(Variant(base, i));
    audit::NodeEvidence with = audit::ReplayNode(b, plan, one, &memo);
    audit::NodeEvidence without = audit::ReplayNode(b, plan, one);
    ExpectSameEvidence(with, without, i);
    EXPECT_TRUE(without.memo_serials.empty());
  }
  auto s = memo.stats();
  EXPECT_GT(s.reused, s.collected) << "40 nodes of one image: most evidence comes from the memo";
  EXPECT_GT(s.collected, 0u);
}

TEST(Memo, SerialsNameIdenticalEvidence) {
  json base = Base();
  audit::Plan plan = FullPlan();
  collect::CollectOptions one = OneThread();
  collect::CollectorMemo memo;
  std::map<uint64_t, core::Evidence> seen;
  size_t shared = 0;
  for (int i = 0; i < 24; ++i) {
    host::Bundle b = host::Bundle::FromJson(Variant(base, i));
    audit::NodeEvidence n = audit::ReplayNode(b, plan, one, &memo);
    for (const auto& [id, serial] : n.memo_serials) {
      ASSERT_NE(serial, 0u);
      const core::Evidence& e = n.evidence.at(id);
      auto [it, fresh] = seen.try_emplace(serial, e);
      if (!fresh) {
        ++shared;
        EXPECT_EQ(it->second.id, e.id);
        EXPECT_EQ(it->second.data, e.data) << id;
        EXPECT_EQ(it->second.status, e.status) << id;
      }
    }
  }
  EXPECT_GT(shared, 100u);
}

TEST(Memo, CollectorsDoNotReadCommandDurations) {
  // The memo compares command answers without their duration: no collector but the active probes
  // (never memoised) may read it. Every command's duration changed, every other collector's
  // evidence stays the same.
  json base = Base();
  audit::Plan plan = FullPlan();
  json slow = base;
  for (auto& c : slow["commands"]) c["duration_ms"] = 98765.4;
  collect::CollectOptions one = OneThread();
  audit::NodeEvidence a = audit::ReplayNode(host::Bundle::FromJson(base), plan, one);
  audit::NodeEvidence b = audit::ReplayNode(host::Bundle::FromJson(slow), plan, one);
  for (const auto& [id, e] : a.evidence) {
    const collect::Collector* c = collect::FindCollector(id);
    if (!c || !c->info.probe.empty()) continue;
    EXPECT_EQ(e.data, b.evidence.at(id).data)
        << id << " reads a command's duration: make it an active probe or digest duration_ms";
  }
}

TEST(Memo, ACollectorThatIsNotAFunctionOfItsAnswersIsGivenUp) {
  host::Bundle b = host::Bundle::FromJson(Base());
  host::ReplayHost replay(b);
  std::atomic<int> calls{0};
  collect::Collector fickle;
  fickle.info.id = "test.fickle";
  // Asks another question on its third run with the same answers: not memoisable.
  auto run = [&](host::Host& h) {
    int k = calls++;
    auto r = h.ReadFile(k == 2 ? "/etc/hostname" : "/etc/os-release", 4096);
    core::Evidence e;
    e.id = "test.fickle";
    e.status = core::EvidenceStatus::kOk;
    e.data = {{"run", k}, {"bytes", r.content.size()}};
    return e;
  };
  collect::CollectorMemo memo;
  uint64_t serial = 0;
  core::Evidence first = memo.Collect(fickle, replay, run, &serial);
  EXPECT_NE(serial, 0u);
  core::Evidence second = memo.Collect(fickle, replay, run, &serial);
  EXPECT_EQ(second.data, first.data) << "the same answers: taken from the memo";
  EXPECT_EQ(calls, 1);
  // Another answer to its first question, and then another question than before: given up, and
  // every run from then on gives its own evidence.
  EXPECT_EQ(memo.stats().given_up, 0u);
  json changed = Base();
  changed["files"]["/etc/os-release"]["content"] = "ID=other\n";
  host::Bundle b2 = host::Bundle::FromJson(changed);
  host::ReplayHost other(b2);
  calls = 2;
  core::Evidence third = memo.Collect(fickle, other, run, &serial);
  EXPECT_EQ(third.data["run"], 2);
  EXPECT_EQ(memo.stats().given_up, 1u);
  EXPECT_EQ(serial, 0u);
  core::Evidence fourth = memo.Collect(fickle, replay, run, &serial);
  EXPECT_EQ(fourth.data["run"], 3) << "given up: the collector runs";
  EXPECT_EQ(serial, 0u);
}

TEST(Memo, ACollectorWhoseAnswersDifferOnEveryNodeIsGivenUpAndMemoryStaysFlat) {
  json base = Base();
  collect::Collector counter;
  counter.info.id = "test.counter";
  auto run = [&](host::Host& h) {
    core::Evidence e;
    e.id = "test.counter";
    e.status = core::EvidenceStatus::kOk;
    e.data = {{"hostname", h.ReadFile("/proc/sys/kernel/hostname", 4096).content}};
    return e;
  };
  collect::CollectorMemo memo;
  for (size_t i = 0; i < collect::CollectorMemo::kGiveUpAfter + 10; ++i) {
    json v = base;
    v["files"]["/proc/sys/kernel/hostname"] = {{"status", "ok"}, {"content", fmt::format("node{}\n", i)}};
    host::Bundle b = host::Bundle::FromJson(v);
    host::ReplayHost replay(b);
    uint64_t serial = 0;
    core::Evidence e = memo.Collect(counter, replay, run, &serial);
    EXPECT_EQ(e.data["hostname"], fmt::format("node{}\n", i));
    if (i > collect::CollectorMemo::kGiveUpAfter) EXPECT_EQ(serial, 0u);
  }
  auto s = memo.stats();
  EXPECT_EQ(s.given_up, 1u);
  EXPECT_EQ(s.reused, 0u);
  EXPECT_EQ(s.collected, collect::CollectorMemo::kGiveUpAfter + 10);
}

TEST(Memo, MissesAreRecordedOnceWhetherTheMemoAnswersOrNot) {
  json base = Base();
  base["files"].erase("/etc/os-release");  // asked by os collectors: a miss on every node
  audit::Plan plan = FullPlan();
  collect::CollectOptions one = OneThread();
  collect::CollectorMemo memo;
  for (int i = 0; i < 3; ++i) {
    json v = base;
    if (i == 2)
      v["files"]["/proc/sys/kernel/osrelease"] = {{"status", "ok"},
                                                  {"content", "6.12.0\n"}};  // a walk that stops midway
    host::Bundle b = host::Bundle::FromJson(v);
    audit::NodeEvidence with = audit::ReplayNode(b, plan, one, &memo);
    audit::NodeEvidence without = audit::ReplayNode(b, plan, one);
    EXPECT_FALSE(with.replay_misses.empty());
    EXPECT_EQ(with.replay_misses, without.replay_misses) << "node " << i;
  }
}
