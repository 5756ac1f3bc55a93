// bench history's parsers and arithmetic: sacct -P output captured on real clusters (sources in
// tests/fixtures/reliability/SOURCES.md), sacctmgr show event output recorded on the CI cluster's
// real slurmdbd (no public capture of it exists), causes from real drain reasons, the window
// arithmetic (overlaps counted once, open events, planned apart) on a history with a known answer,
// and the grades with one fact flipped at a time. The whole command runs against a real slurmctld
// with slurmdbd and MariaDB in slurm_test.cc.

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "bench/history.h"
#include "collect/parsers.h"
#include "testutil.h"
#include "util/strings.h"
#include "util/time.h"

using nlohmann::json;
using namespace clustermax;
namespace hist = clustermax::bench::history;

namespace {
json GradeOf(const json& r, const std::string& id) {
  const json& bars = bench::EmbeddedBenchThresholds();
  for (const auto& g : bench::Grade(hist::HistoryMetrics(r, bars), bars))
    if (g["metric"] == id) return g;
  return json();
}
constexpr double kDay = 86400;
}  // namespace

TEST(History, SlurmTimesAreUnixSecondsOrLocalIso) {
  EXPECT_DOUBLE_EQ(*hist::ParseSlurmTime("1764798489"), 1764798489);
  auto iso = hist::ParseSlurmTime("2024-08-08T19:12:57");
  ASSERT_TRUE(iso.has_value());
  EXPECT_NEAR(*iso, 1723144377, 14 * 3600 + 1);  // whatever the local zone
  // Junk, and times no Slurm wrote (before 1990, after 2200: past 2262 not even a time point).
  for (const char* none : {"Unknown", "None", "", "2024-13-45T99:00:00", "12345678901234567890", "0", "now",
                           "1012-01-31T15:19:24", "999999999999", "-30228972036", "86400"})
    EXPECT_FALSE(hist::ParseSlurmTime(none).has_value()) << none;
}

TEST(History, SacctRowsFromRealClustersAreRead) {
  std::vector<std::string> problems;
  // Spartan (University of Melbourne), Slurm -P with JobID: the TIMEOUT allocation, steps skipped.
  auto spartan =
      hist::ParseJobs(clustermax::testing::ReadFixture("reliability/sacct-P-spartan-timeout.txt"), &problems);
  ASSERT_EQ(spartan.size(), 1u);
  EXPECT_EQ(spartan[0].id, "26778282");
  EXPECT_EQ(spartan[0].state, "TIMEOUT");
  // CSU Alpine: a prompt line before the header, a FAILED job with its exit code.
  auto alpine = hist::ParseJobs(clustermax::testing::ReadFixture("reliability/sacct-P-alpine-csu.txt"), &problems);
  ASSERT_EQ(alpine.size(), 1u);
  EXPECT_EQ(alpine[0].state, "FAILED");
  EXPECT_EQ(alpine[0].exit_code, "1:0");
  EXPECT_TRUE(problems.empty()) << problems[0];
  // Slurm 23.11 in Docker, printed with -n (no header): the command's columns given as the header.
  std::string docker = "JobIDRaw|State|ExitCode|Partition|NodeList|AllocCPUS|ReqMem|ElapsedRaw|MaxRSS\n" +
                       clustermax::testing::ReadFixture("reliability/sacct-P-docker-2311-annotated.txt");
  auto jobs = hist::ParseJobs(docker, &problems);
  std::map<std::string, std::string> state;
  for (const auto& j : jobs) state[j.id] = j.state;
  EXPECT_EQ(state["9"], "NODE_FAIL");
  EXPECT_EQ(state["6"], "CANCELLED");  // "CANCELLED by 0"
  EXPECT_EQ(state["8"], "FAILED");
  EXPECT_EQ(state.count("1.batch"), 0u);
  // Without a header nothing is guessed.
  problems.clear();
  EXPECT_TRUE(
      hist::ParseJobs(clustermax::testing::ReadFixture("reliability/sacct-P-docker-2311-annotated.txt"), &problems)
          .empty());
  EXPECT_EQ(problems, std::vector<std::string>{"sacct: no header line"});
}

// Recorded on the CI cluster (Slurm 22.05.8, slurmdbd with MariaDB 10.11), SLURM_TIME_FORMAT=%s.
TEST(History, NodeEventsAndJobsFromARealSlurmdbd) {
  std::vector<std::string> problems;
  auto events =
      hist::ParseEvents(clustermax::testing::ReadFixture("reliability/sacctmgr-event-ci-2205.txt"), 1.8e9, &problems);
  EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems[0]);
  ASSERT_GE(events.size(), 2u);
  bool xid = false, down = false;
  for (const auto& e : events) {
    EXPECT_GT(e.end, e.start - 1) << e.node;
    if (e.reason.find("Xid 79") != std::string::npos) xid = hist::Cause(e.reason) == "gpu";
    if (e.state.find("DOWN") != std::string::npos) down = true;
  }
  EXPECT_TRUE(xid);
  EXPECT_TRUE(down);
  auto jobs = hist::ParseJobs(clustermax::testing::ReadFixture("reliability/sacct-P-ci-2205.txt"), &problems);
  bool node_fail = false;
  for (const auto& j : jobs) node_fail = node_fail || j.state == "NODE_FAIL";
  EXPECT_TRUE(node_fail);
}

TEST(History, CausesFromRealReasons) {
  EXPECT_EQ(hist::Cause("clustermax: gpu-xid-history: GPU fault in the kernel log within 7 days: Xid 79 x1: GPU has "
                        "fallen off the bus (hardware; RESTART_BM)"),
            "gpu");
  EXPECT_EQ(hist::Cause("NHC: check_nv_healthmon: Xid 48 on GPU 3 (double bit ECC)"), "gpu-memory");
  EXPECT_EQ(hist::Cause("xid 94 contained ECC error"), "gpu-memory");
  EXPECT_EQ(hist::Cause("gres/gpu count reported lower than configured (0 < 8)"), "gpu");
  EXPECT_EQ(hist::Cause("IB port 1 down on mlx5_3"), "network");
  EXPECT_EQ(hist::Cause("clustermax: storage-mount-stable: 1 expected shared mount(s) missing: /lustre"), "storage");
  EXPECT_EQ(hist::Cause("Not responding"), "host");
  EXPECT_EQ(hist::Cause("Node unexpectedly rebooted boot_time=1723144377 last response=1723144300"), "host");
  EXPECT_EQ(hist::Cause("Kill task failed"), "software");
  EXPECT_EQ(hist::Cause("Reboot ASAP : reboot issued"), "maintenance");
  EXPECT_EQ(hist::Cause("kernel upgrade"), "maintenance");
  EXPECT_EQ(hist::Cause("issue-5894"), "unknown");
  // Words, not substrings; planned work before the part it names.
  EXPECT_EQ(hist::Cause("set back to default"), "unknown");  // not "efa"
  EXPECT_EQ(hist::Cause("capsule"), "unknown");              // not "psu"
  EXPECT_EQ(hist::Cause("nvidia driver upgrade"), "maintenance");
  EXPECT_EQ(hist::Cause(""), "unknown");
}

// Three nodes over ten days: n1 out twice with overlapping events (a GPU fault, 24 h, then a drain
// for the same fault 12 h into it lasting 24 h: 36 h lost, not 48), n2 in planned maintenance for
// 10 h, n3 down since two hours before the end (open). One job of four killed by n1's fault.
TEST(History, TheWindowArithmeticHasAKnownAnswer) {
  const double to = 1.7e9, from = to - 10 * kDay;
  std::vector<hist::NodeEvent> ev = {
      {"n1", "DOWN", "Xid 79 GPU has fallen off the bus", "root(0)", from + kDay, from + 2 * kDay, false},
      {"n1", "DRAIN", "Xid 79 GPU has fallen off the bus", "root(0)", from + 1.5 * kDay, from + 2.5 * kDay, false},
      {"n2", "MAINT", "kernel upgrade", "root(0)", from + 3 * kDay, from + 3 * kDay + 10 * 3600, false},
      {"n3", "DOWN*", "Not responding", "slurm(64030)", to - 2 * 3600, to, true},
      // Before the window: clipped away; a non-outage without reason: ignored.
      {"n2", "DOWN", "Not responding", "slurm(64030)", from - 3 * kDay, from - 2 * kDay, false},
      {"n3", "IDLE", "", "", from + 5 * kDay, from + 6 * kDay, false}};
  std::vector<hist::JobRecord> jobs = {{"10", "NODE_FAIL", "0:0", "n[1-2]", from + 0.5 * kDay, from + kDay + 60, 2, 16},
                                       {"11", "COMPLETED", "0:0", "n2", from + 4 * kDay, from + 5 * kDay, 1, 8},
                                       {"12", "FAILED", "1:0", "n3", from + 6 * kDay, from + 6 * kDay + 3600, 1, 8},
                                       {"13", "CANCELLED", "0:0", "n1", 0, 0, 1, 8}};  // never started: not counted
  json r = hist::Summarize(ev, jobs, {"n1", "n2", "n3"}, from, to);
  EXPECT_EQ(r["window"]["nodes"], 3);
  EXPECT_DOUBLE_EQ(r["node_hours"]["total"].get<double>(), 720);
  EXPECT_DOUBLE_EQ(r["node_hours"]["lost_unplanned"].get<double>(), 38);  // 36 + 2
  EXPECT_DOUBLE_EQ(r["node_hours"]["lost_planned"].get<double>(), 10);
  EXPECT_NEAR(r["availability"].get<double>(), 1 - 38.0 / 720, 1e-6);
  EXPECT_EQ(r["failures"], 2);  // n1's two overlapping rows are one outage, and n3's
  EXPECT_NEAR(r["mtbf_node_hours"].get<double>(), (720 - 48) / 2.0, 0.01);
  EXPECT_NEAR(r["failures_per_node_month"].get<double>(), 2.0 / 3 / (10.0 / 30), 1e-4);
  EXPECT_EQ(r["jobs"]["total"], 3);
  EXPECT_EQ(r["jobs"]["node_fail"], 1);
  EXPECT_NEAR(r["jobs"]["node_fail_share"].get<double>(), 1.0 / 3, 1e-6);
  // Job 10: 12 h + 60 s on 2 nodes with 16 GPUs.
  double lost_h = (0.5 * kDay + 60) / 3600;
  EXPECT_NEAR(r["jobs"]["gpu_hours_lost_to_node_failure"].get<double>(), lost_h * 16, 1e-3);
  EXPECT_NEAR(r["jobs"]["goodput"].get<double>(), 1 - 2 * lost_h / (2 * lost_h + 24 + 1), 1e-5);
  ASSERT_EQ(r["interruptions"].size(), 1u);
  EXPECT_EQ(r["interruptions"][0]["cause"], "gpu");
  EXPECT_EQ(r["interruptions"][0]["node"], "n1");
  EXPECT_EQ(r["causes"][0]["cause"], "gpu");  // most interruptions first
  EXPECT_EQ(r["causes"][0]["interruptions"], 1);
  EXPECT_EQ(r["causes"][0]["events"], 2);
  EXPECT_DOUBLE_EQ(r["causes"][0]["node_hours_lost"].get<double>(), 36);  // merged, as the node lost it
  EXPECT_EQ(r["worst_nodes"][0]["node"], "n1");
  EXPECT_DOUBLE_EQ(r["worst_nodes"][0]["hours_lost"].get<double>(), 36);

  EXPECT_EQ(GradeOf(r, "rel.availability")["verdict"], "FAIL");  // 0.947, under 0.95
  EXPECT_EQ(GradeOf(r, "rel.node-mtbf")["verdict"], "FAIL");
  EXPECT_EQ(GradeOf(r, "rel.node-fail-jobs")["verdict"], "FAIL");
}

TEST(History, GradesNeedEvidenceAndAQuietHistoryPassesOnlyWhenLongEnough) {
  const double to = 1.7e9;
  // 10 nodes, 30 days, nothing happened: 7200 failure-free node-hours, beyond the MTBF bar.
  std::vector<std::string> nodes;
  for (int i = 0; i < 10; ++i) nodes.push_back("n" + std::to_string(i));
  json quiet = hist::Summarize({}, {{"1", "COMPLETED", "0:0", "n0", to - kDay, to - kDay + 60, 1, 8}}, nodes,
                               to - 30 * kDay, to);
  EXPECT_EQ(GradeOf(quiet, "rel.availability")["verdict"], "PASS");
  json m = GradeOf(quiet, "rel.node-mtbf");
  EXPECT_EQ(m["verdict"], "PASS");
  EXPECT_NE(m["detail"].get<std::string>().find("at least"), std::string::npos);
  EXPECT_EQ(GradeOf(quiet, "rel.node-fail-jobs")["verdict"], "PASS");
  // One node for a day: too short a history to vouch for its MTBF.
  json short_h = hist::Summarize({}, {}, {"n0"}, to - kDay, to);
  EXPECT_EQ(GradeOf(short_h, "rel.node-mtbf")["verdict"], "SKIP");
  EXPECT_EQ(GradeOf(short_h, "rel.node-fail-jobs")["verdict"], "SKIP");
  // Unread records: what Summarize made of nothing (availability 1, no failure) is no evidence.
  json unread = quiet;
  unread["events_error"] = "node events unread: sacctmgr: You are not running a supported accounting_storage plugin";
  unread["jobs_error"] = "jobs unread: sacct: Slurm accounting storage is disabled";
  for (const char* id : {"rel.availability", "rel.node-mtbf", "rel.node-fail-jobs"}) {
    json g = GradeOf(unread, id);
    EXPECT_EQ(g["verdict"], "SKIP") << id;
    EXPECT_NE(g["reason"].get<std::string>().find("unread"), std::string::npos) << g.dump();
  }
  // Raised bars: the same quiet history's lower bound no longer vouches for the MTBF.
  json bars = bench::EmbeddedBenchThresholds();
  for (auto& b : bars["metrics"])
    if (b["id"] == "rel.node-mtbf") b["pass"] = 10000;
  for (const auto& g : bench::Grade(hist::HistoryMetrics(quiet, bars), bars))
    if (g["metric"] == "rel.node-mtbf") EXPECT_EQ(g["verdict"], "SKIP") << g.dump();
  // Junk never throws.
  for (json junk : {json::object(), json{{"availability", "x"}, {"jobs", 3}}, json{{"causes", json::array({1})}}}) {
    EXPECT_NO_THROW(
        bench::Grade(hist::HistoryMetrics(junk, bench::EmbeddedBenchThresholds()), bench::EmbeddedBenchThresholds()));
    EXPECT_NO_THROW(hist::RenderHistory(junk));
  }
  // Hostile rows: short rows and huge fields are reported, not trusted.
  std::vector<std::string> problems;
  std::string text = "NodeName|TimeStart|TimeEnd|State|Reason|User\nn1|1700000000\n|1700000000|1700000100|DOWN|x|y\n" +
                     std::string("n2|") + std::string(100000, '9') + "|Unknown|DOWN|r|u\n";
  auto ev = hist::ParseEvents(text, to, &problems);
  EXPECT_TRUE(ev.empty());
  EXPECT_EQ(problems.size(), 2u);
}

namespace {
struct CtldRead {
  std::vector<hist::NodeEvent> events;
  std::map<std::string, std::string> killed;
  size_t undated = 0;
};
CtldRead ReadCtld(const std::string& text, double now) {
  hist::CtldLogReader r(now);
  for (const auto& line : util::SplitLines(text)) r.Feed(line);
  return {r.Events(), r.killed_jobs(), r.undated()};
}
CtldRead ReadCtldFixture(const std::string& name, double now) {
  return ReadCtld(clustermax::testing::ReadFixture("reliability/" + name), now);
}
std::vector<std::string> Summary(const std::vector<hist::NodeEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events)
    out.push_back(
        fmt::format("{} {} {} {}{}", e.node, e.state, hist::Cause(e.reason), e.end - e.start, e.open ? " open" : ""));
  return out;
}
double Local(const char* iso) { return *hist::ParseSlurmTime(iso); }
}  // namespace

// slurmctld logs posted publicly (tests/fixtures/reliability/SOURCES.md), read back into outages
// as sacctmgr would have recorded them: Slurm 22.05's own log format, the older one without
// milliseconds, and journald's syslog lines.
TEST(History, OutagesFromRealSlurmctldLogs) {
  double now = Local("2024-06-01T00:00:00");
  // Four nodes INVAL (too few CPUs at registration) until resumed by hand; then DOWN twice (not
  // responding), once returned to service by their registration, once resumed.
  auto dc = ReadCtldFixture("slurmctld-data-cluster-2205.log", now);
  auto s = Summary(dc.events);
  ASSERT_EQ(s.size(), 12u) << fmt::format("{}", fmt::join(s, "\n"));
  EXPECT_EQ(dc.events[0].start, Local("2024-01-31T15:19:24"));
  std::map<std::string, double> first;
  for (const auto& e : dc.events)
    if (!first.count(e.node)) first[e.node] = e.end - e.start;
  EXPECT_EQ(first["compute00"], Local("2024-01-31T15:36:53") - Local("2024-01-31T15:19:24"));
  EXPECT_EQ(first["compute03"], Local("2024-01-31T15:37:06") - Local("2024-01-31T15:19:24"));
  for (const auto& e : dc.events) {
    EXPECT_FALSE(e.open) << e.node;
    EXPECT_EQ(hist::Cause(e.reason), "host") << e.reason;
  }
  EXPECT_EQ(dc.events[0].state, "INVAL");
  EXPECT_EQ(dc.events[0].reason, "Low socket*core*thread count, Low CPUs");
  // The second outage: "not responding, setting DOWN" for compute[00-03], back at "returned to service".
  EXPECT_EQ(dc.events[4].reason, "Not responding");
  EXPECT_EQ(dc.events[4].start, Local("2024-02-01T15:08:08"));
  EXPECT_EQ(dc.events[4].end, Local("2024-02-01T15:21:26"));  // compute00 at 15:21:26.030

  // A node failed by the provider's health agent (reason first, then state), open until now.
  auto hp = ReadCtldFixture("slurmctld-hyperpod-resiliency.log", now);
  ASSERT_EQ(hp.events.size(), 1u);
  EXPECT_EQ(hp.events[0].node, "ip-10-1-73-87");
  EXPECT_EQ(hp.events[0].state, "FAIL");
  EXPECT_EQ(hp.events[0].reason, "Action:Replace");
  EXPECT_TRUE(hp.events[0].open);
  EXPECT_EQ(hp.events[0].end, now);

  // A cloud node that could not be resumed: DOWN with the provider's reason; its job requeued.
  auto aws = ReadCtldFixture("slurmctld-aws-parallelcluster-issue5670.log", now);
  ASSERT_EQ(aws.events.size(), 1u);
  EXPECT_EQ(aws.events[0].state, "DOWN");
  EXPECT_EQ(aws.events[0].reason, "(Code:LimitedInstanceCapacity)Failure when resuming nodes");
  EXPECT_EQ(aws.killed.size(), 1u);
  EXPECT_EQ(aws.killed["10"], "a10g-1x-spot-dy-a10g-1x-spot-cr-0-1");

  // Two nodes set DOWN after "returned to service" lines (of outages before the excerpt: no-ops).
  auto old = ReadCtldFixture("slurmctld-trinity-issue506.log", now);
  ASSERT_EQ(old.events.size(), 2u) << fmt::format("{}", fmt::join(Summary(old.events), "\n"));
  EXPECT_EQ(old.events[0].node, "c001");
  EXPECT_EQ(old.events[0].start, Local("2015-11-10T12:32:02"));
  EXPECT_EQ(old.events[1].node, "c002");

  // journald's lines (no year: taken from `now`): a GPU missing at registration is a GPU outage.
  auto mc = ReadCtldFixture("slurmctld-journal-magic-castle-issue361.log", now);
  ASSERT_EQ(mc.events.size(), 1u);
  EXPECT_EQ(mc.events[0].node, "nodegpu1");
  EXPECT_EQ(mc.events[0].reason, "gres/gpu count reported lower than configured (3 < 4)");
  EXPECT_EQ(hist::Cause(mc.events[0].reason), "gpu");
  EXPECT_EQ(mc.events[0].start, Local("2024-05-23T12:49:52"));

  // An unexpected reboot (DOWN) resumed by hand, then drains after a slurmd error, each with
  // the error as its reason.
  auto vg = ReadCtldFixture("slurmctld-journal-vagrant-2205.log", now);
  auto v = Summary(vg.events);
  ASSERT_EQ(v.size(), 4u) << fmt::format("{}", fmt::join(v, "\n"));
  EXPECT_EQ(vg.events[0].node, "worker1");
  EXPECT_EQ(vg.events[0].reason, "Node unexpectedly rebooted");
  // June 13 is after `now`: last year's.
  EXPECT_EQ(vg.events[0].start, Local("2023-06-13T06:48:47"));
  EXPECT_EQ(vg.events[0].end - vg.events[0].start, 315);
  EXPECT_EQ(vg.events[2].reason, "slurmd error running a job: Plugin initialization failed");
  EXPECT_EQ(hist::Cause(vg.events[2].reason), "software");

  // "not responding" alone is no outage (the node answers again before SlurmdTimeout).
  EXPECT_TRUE(ReadCtldFixture("slurmctld-thiao-slurm22-no-millis.log", now).events.empty());
  EXPECT_TRUE(ReadCtldFixture("slurmctld-aws-parallelcluster-issue6641.log", now).events.empty());
}

TEST(History, SlurmctldLogOneFactFlippedAndHostileLines) {
  double now = Local("2024-06-01T00:00:00");
  std::string text = clustermax::testing::ReadFixture("reliability/slurmctld-data-cluster-2205.log");
  // The last resume of compute02 turned into a DOWN: that outage stays open until now.
  std::string flipped = text;
  auto at = flipped.find("[2024-02-02T14:53:33.945] update_node: node compute02 state set to IDLE");
  ASSERT_NE(at, std::string::npos);
  flipped.replace(flipped.find("IDLE", at), 4, "DOWN");
  auto f = ReadCtld(flipped, now);
  ASSERT_EQ(f.events.size(), 12u);
  int open = 0;
  for (const auto& e : f.events)
    if (e.open) {
      ++open;
      EXPECT_EQ(e.node, "compute02");
    }
  EXPECT_EQ(open, 1);
  // A time that cannot be read is counted, never guessed; junk, a broken hostlist and a huge line
  // are skipped.
  auto h = ReadCtld(
      "[yesterday] update_node: node n1 state set to DOWN\n"
      "[2024-01-01T00:00:00] error: Nodes n[1- not responding, setting DOWN\n"
      "\xff\xfe\x01 update_node: node \x1b[31m state set to DRAIN\n" +
          std::string(200000, 'x') + " update_node: node n9 state set to DOWN\n" +
          "[2024-01-01T00:00:00] error: Nodes not responding, setting DOWN\n"
          "[2024-01-01T00:00:00] error: Nodes a[0-99999] not responding, setting DOWN\n"
          "[2024-01-01T00:00:00+99:99] update_node: node n7 state set to DOWN\n"
          "[2024-01-01T00:00:00+02:00] update_node: node n2 state set to DRAIN\n"
          "[2024-01-01T01:00:00Z] update_node: node n2 state set to IDLE\n",
      now);
  EXPECT_EQ(h.undated, 3u);  // "[yesterday]", no time at all, and an offset of +99:99
  ASSERT_EQ(h.events.size(), 1u) << fmt::format("{}", fmt::join(Summary(h.events), "\n"));
  EXPECT_EQ(h.events[0].node, "n2");
  EXPECT_EQ(h.events[0].end - h.events[0].start, 3 * 3600);  // +02:00 and Z: three hours apart
}

TEST(History, SlurmdErrorsNameEveryNodeOfTheirList) {
  // A hostlist with a comma inside its brackets: both nodes drained with the error as the reason.
  auto r = ReadCtld(
      "[2024-01-01T00:00:00] error: slurmd error running JobId=6 on node(s)=gpu[01,02]: Plugin initialization failed\n"
      "[2024-01-01T00:00:01] drain_nodes: node gpu01 state set to DRAIN\n"
      "[2024-01-01T00:00:01] drain_nodes: node gpu02 state set to DRAIN\n",
      Local("2024-06-01T00:00:00"));
  ASSERT_EQ(r.events.size(), 2u);
  for (const auto& e : r.events) EXPECT_EQ(e.reason, "slurmd error running a job: Plugin initialization failed");
}

namespace {
double At(const char* rfc3339) {
  return std::chrono::duration<double>(util::ParseRfc3339(rfc3339)->time_since_epoch()).count();
}
hist::NodeXids XidsFromFixture(const std::string& node, const std::string& fixture) {
  auto scan = collect::ParseGpuKernelLog(clustermax::testing::ReadFixture("corpus/kernel-log/" + fixture), 200);
  return {node, "dmesg", "", scan.days};
}
}  // namespace

// The nodes' Xid history (bench history --xid): real kernel logs (tests/fixtures/corpus/kernel-log,
// sources in tests/fixtures/corpus/SOURCES.md) of a node whose GPU fell off the bus (Xid 79, 2024-04-09) and of one
// with a workload's fault (Xid 13, 2024-08-30). Outages whose reason names no cause are put down to
// a hardware Xid of that node that day or the day before; planned work, application Xids, other
// days and unread logs are left alone.
TEST(History, OutagesArePutDownToAHardwareXidOfTheirNodeThatDay) {
  std::vector<hist::NodeXids> xids = {XidsFromFixture("gpu01", "xid-79-crashdump-dmesg-T-1.txt"),
                                      XidsFromFixture("gpu02", "xid-13-109-dmesg-T-1.txt"),
                                      {"gpu03", "", "journalctl: Permission denied", {}}};
  ASSERT_TRUE(xids[0].days.count("2024-04-09")) << xids[0].days.size();
  EXPECT_TRUE(hist::HardwareXid("Xid 79"));
  EXPECT_TRUE(hist::HardwareXid("Xid 48"));
  EXPECT_TRUE(hist::HardwareXid("SXid 12028"));
  EXPECT_TRUE(hist::HardwareXid("message: has fallen off the bus"));
  EXPECT_FALSE(hist::HardwareXid("Xid 13"));  // application
  EXPECT_FALSE(hist::HardwareXid("Xid 63"));  // informational: a row remapped, no fault by itself
  for (const char* junk : {"", "Xid", "Xid abc", "Xid 99999999999", "message: no such message", "Foo 79"})
    EXPECT_FALSE(hist::HardwareXid(junk)) << junk;

  double t = At("2024-04-09T03:00:00Z");
  std::vector<hist::NodeEvent> ev = {
      {"gpu01", "DOWN", "Not responding", "slurm", t, t + 3600, false},                 // the Xid's day
      {"gpu01", "DRAIN", "Kill task failed", "root", t + kDay, t + kDay + 600, false},  // the day after
      {"gpu01", "DRAIN", "Kill task failed", "root", t + 2 * kDay, t + 2 * kDay + 600, false},
      {"gpu01", "DRAIN", "scheduled maintenance", "root", t, t + 7200, false},
      {"gpu02", "DOWN", "Not responding", "slurm", At("2024-08-30T12:00:00Z"), At("2024-08-30T13:00:00Z"), false},
      {"gpu03", "DOWN", "Not responding", "slurm", t, t + 3600, false}};
  EXPECT_EQ(hist::AttributeXids(ev, xids), 3u);
  EXPECT_EQ(ev[0].xid, "Xid 79 on 2024-04-09 (1 in the kernel log that day)");
  EXPECT_EQ(hist::CauseOf(ev[0]), "gpu");
  EXPECT_EQ(ev[1].xid.rfind("Xid 79 on 2024-04-09", 0), 0u) << ev[1].xid;
  EXPECT_EQ(ev[2].xid, "");  // two days later: not this Xid's outage
  EXPECT_EQ(hist::CauseOf(ev[2]), "software");
  EXPECT_EQ(ev[3].xid, "");  // planned work stays planned
  EXPECT_EQ(hist::CauseOf(ev[3]), "maintenance");
  // gpu02's log holds three Xid 13 (the workload's) and one Xid 109 (a context-switch timeout: the
  // catalog's reset class): the outage is put down to the one of the GPU, not the most frequent.
  EXPECT_EQ(ev[4].xid, "Xid 109 on 2024-08-30 (1 in the kernel log that day)");
  EXPECT_EQ(ev[5].xid, "");  // its log was not read
  // Counted under the Xid's cause in the interruption table.
  json s = hist::Summarize(ev, {}, {"gpu01", "gpu02", "gpu03"}, t - 200 * kDay, t + 200 * kDay);
  std::map<std::string, long> events_by_cause;
  for (const auto& c : s["causes"]) events_by_cause[c["cause"].get<std::string>()] = c["events"].get<long>();
  EXPECT_EQ(events_by_cause["gpu"], 3) << s["causes"].dump();
  EXPECT_EQ(events_by_cause["host"], 1) << s["causes"].dump();
  // Workload Xids alone are no GPU fault.
  xids[1].days = {{"2024-08-30", {{"Xid 13", 3}, {"Xid 43", 1}}}};
  hist::AttributeXids(ev, xids);
  EXPECT_EQ(ev[4].xid, "");
  EXPECT_EQ(hist::CauseOf(ev[4]), "host");
  EXPECT_EQ(s["events"][0]["xid"], ev[0].xid) << s["events"].dump();
  // One fact flipped: the Xid 79 a workload's Xid 13. The driver's "GPU has fallen off the bus"
  // line of the same minute still names the GPU.
  std::string text = clustermax::testing::ReadFixture("corpus/kernel-log/xid-79-crashdump-dmesg-T-1.txt");
  std::string flipped = text;
  for (size_t at; (at = flipped.find("): 79, ")) != std::string::npos;) flipped.replace(at, 7, "): 13, ");
  ASSERT_NE(flipped, text);
  xids[0].days = collect::ParseGpuKernelLog(flipped, 200).days;
  EXPECT_EQ(hist::AttributeXids(ev, xids), 2u);
  EXPECT_EQ(ev[0].xid, "message: has fallen off the bus on 2024-04-09 (1 in the kernel log that day)");
  // The other fact: the same log ten days later. Nothing on the outages' days.
  std::string later = text;
  for (size_t at; (at = later.find("Tue Apr  9")) != std::string::npos;) later.replace(at, 10, "Fri Apr 19");
  ASSERT_NE(later, text);
  xids[0].days = collect::ParseGpuKernelLog(later, 200).days;
  EXPECT_EQ(hist::AttributeXids(ev, xids), 0u) << ev[0].xid << ev[1].xid;
  EXPECT_EQ(hist::CauseOf(ev[0]), "host");
  // An Xid of GPU memory makes it a GPU-memory outage.
  xids[0].days = {{"2024-04-09", {{"Xid 48", 2}, {"Xid 13", 5}}}};
  EXPECT_EQ(hist::AttributeXids(ev, xids), 2u);
  EXPECT_EQ(ev[0].xid, "Xid 48 on 2024-04-09 (2 in the kernel log that day)");
  EXPECT_EQ(hist::CauseOf(ev[0]), "gpu-memory");
}

TEST(History, TheXidHistoryCountsTheWindowAndSaysWhatItCouldNotRead) {
  std::vector<hist::NodeXids> xids = {XidsFromFixture("gpu01", "xid-79-crashdump-dmesg-T-1.txt"),
                                      XidsFromFixture("gpu02", "xid-13-109-dmesg-T-1.txt"),
                                      {"gpu03", "", "journalctl: Permission denied", {}},
                                      {"gpu04", "file:/x", "", {{"undated", {{"Xid 79", 3}}}}}};
  long all79 = 0;
  for (const auto& [day, counts] : xids[0].days)
    if (counts.count("Xid 79")) all79 += counts.at("Xid 79");
  ASSERT_GT(all79, 0);
  json x = hist::XidHistory(xids, At("2024-04-01T00:00:00Z"), At("2024-09-30T00:00:00Z"));
  EXPECT_EQ(x["nodes_read"], 3);
  EXPECT_EQ(x["nodes_unread"], 1);
  EXPECT_EQ(x["unread"][0]["node"], "gpu03");
  EXPECT_EQ(x["undated_events"], 3);
  EXPECT_EQ(x["by_key"]["Xid 79"], all79);
  EXPECT_GT(x["by_key"]["Xid 13"].get<long>(), 0);
  EXPECT_EQ(x["nodes_with_hardware_events"], 2) << x.dump();  // gpu02's Xid 109
  EXPECT_EQ(x["hardware_events"], all79 + 2) << x.dump();     // + the bus-loss message, Xid 109
  EXPECT_EQ(x["worst_nodes"][0]["node"], "gpu01");
  // Outside the window nothing counts.
  json before = hist::XidHistory(xids, At("2023-01-01T00:00:00Z"), At("2023-12-31T00:00:00Z"));
  EXPECT_EQ(before["events"], 0);
  EXPECT_EQ(before["hardware_events"], 0);
  // Rendered with the history.
  json r = {{"window", {{"from", "a"}, {"to", "b"}, {"nodes", 4}}}, {"xid_history", x}};
  r["xid_history"]["outages_attributed"] = 1;
  std::string text = hist::RenderHistory(r);
  EXPECT_NE(text.find("Xid history: 3 node(s) read, 1 unread"), std::string::npos) << text;
  EXPECT_NE(text.find("1 outage(s) put down to one"), std::string::npos) << text;
  EXPECT_NE(text.find("gpu01"), std::string::npos) << text;
}

// An analyst's run: saved sacctmgr/sacct output (the CI cluster's real rows, moved to the last
// hours) and a central syslog tree of the nodes' kernel logs, read here (--kernel-log without
// --xid). n3's "Not responding" is put down to its Xid 79; the missing n1 log is said.
TEST(History, SavedRecordsAndACentralKernelLogTree) {
  namespace fs = std::filesystem;
  fs::path dir = clustermax::testing::ScratchDir("history-xid-cli");
  auto now = std::chrono::system_clock::now();
  long t = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count() - 3 * 3600;
  std::ofstream(dir / "events.txt") << "NodeName|TimeStart|TimeEnd|State|Reason|User\n"
                                    << "n2|" << t << "|" << t + 3 << "|DRAIN|clustermax: gpu-xid-history: Xid 79 x1: "
                                    << "GPU has fallen off the bus|root(0)\n"
                                    << "n3|" << t + 33 << "|Unknown|DOWN*|Not responding|root(0)\n";
  std::ofstream(dir / "jobs.txt") << "JobIDRaw|State|ExitCode|Start|End|NNodes|NodeList|AllocTRES\n"
                                  << "35|NODE_FAIL|0:0|" << t + 5 << "|" << t + 33
                                  << "|1|n3|billing=1,cpu=1,gres/gpu=2,node=1\n";
  for (const char* n : {"n2", "n3"}) fs::create_directories(dir / "hosts" / n);
  std::string when = util::FormatRfc3339(now - std::chrono::hours(3));
  std::ofstream(dir / "hosts" / "n3" / "kern.log")
      << when << " n3 kernel: NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus.\n";
  std::ofstream(dir / "hosts" / "n2" / "kern.log") << when << " n2 kernel: EXT4-fs (nvme0n1p1): mounted\n";
  std::string args = "bench history --days 2 --events-file " + (dir / "events.txt").string() + " --jobs-file " +
                     (dir / "jobs.txt").string() + " --nodelist n[1-3] --kernel-log " +
                     (dir / "hosts" / "{node}" / "kern.log").string() + " --exit-zero --out ";
  auto r = clustermax::testing::RunBinary(args + (dir / "run-json").string() + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  json j = json::parse(r.out.substr(r.out.find('{'), r.out.rfind('}') - r.out.find('{') + 1));
  const json& x = j["xid_history"];
  EXPECT_EQ(x["nodes_read"], 2) << x.dump();
  EXPECT_EQ(x["unread"][0]["node"], "n1") << x.dump();
  EXPECT_EQ(x["hardware_events"], 1) << x.dump();
  EXPECT_EQ(x["outages_attributed"], 1) << x.dump();
  ASSERT_EQ(j["interruptions"].size(), 1u) << j.dump();
  EXPECT_EQ(j["interruptions"][0]["cause"], "gpu") << j["interruptions"].dump();
  EXPECT_EQ(j["interruptions"][0]["xid"].get<std::string>().rfind("Xid 79 on ", 0), 0u);
  for (const auto& c : j["causes"]) EXPECT_NE(c["cause"], "host") << j["causes"].dump();
  auto text = clustermax::testing::RunBinary(args + (dir / "run-text").string());
  EXPECT_NE(text.out.find("Xid history: 2 node(s) read, 1 unread"), std::string::npos) << text.out;
  // One log for every node is refused: without --xid, the path must name the node.
  auto refused = clustermax::testing::RunBinary("bench history --events-file " + (dir / "events.txt").string() +
                                                " --kernel-log /var/log/kern.log");
  EXPECT_NE(refused.code, 0);
  EXPECT_NE(refused.out.find("{node}"), std::string::npos) << refused.out;
}

// Only the first 500 interruptions are listed: one past them, put down to an Xid, leaves the
// listed ones as they were.
TEST(History, AnXidPastTheListedInterruptionsIsNotWrittenOnAnother) {
  double t = 1.79e9;
  std::vector<hist::NodeEvent> ev = {{"a", "DOWN", "Not responding", "slurm", t, t + 3600, false},
                                     {"b", "DOWN", "Not responding", "slurm", t, t + 3600, false}};
  ev[1].xid = "Xid 79 on 2026-09-21 (1 in the kernel log that day)";
  std::vector<hist::JobRecord> jobs;
  for (int i = 0; i < 501; ++i)
    jobs.push_back({std::to_string(i), "NODE_FAIL", "0:0", i < 500 ? "a" : "b", t - 600, t + 60, 1, 8});
  json s = hist::Summarize(ev, jobs, {"a", "b"}, t - kDay, t + kDay);
  ASSERT_EQ(s["interruptions"].size(), 500u);
  for (const auto& i : s["interruptions"]) EXPECT_FALSE(i.contains("xid")) << i.dump();
  long gpu = 0;
  for (const auto& c : s["causes"])
    if (c["cause"] == "gpu") gpu = c["interruptions"].get<long>();
  EXPECT_EQ(gpu, 1) << s["causes"].dump();
}
