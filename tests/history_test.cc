// bench history's parsers and arithmetic: sacct -P output captured on real clusters (sources in
// tests/fixtures/reliability/SOURCES.md), sacctmgr show event output recorded on the CI cluster's
// real slurmdbd (no public capture of it exists), causes from real drain reasons, the window
// arithmetic (overlaps counted once, open events, planned apart) on a history with a known answer,
// and the grades with one fact flipped at a time. The whole command runs against a real slurmctld
// with slurmdbd and MariaDB in slurm_test.cc.

#include <gtest/gtest.h>

#include "bench/history.h"
#include "testutil.h"

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
  for (const char* none : {"Unknown", "None", "", "2024-13-45T99:00:00", "12345678901234567890", "0", "now"})
    EXPECT_FALSE(hist::ParseSlurmTime(none).has_value()) << none;
}

TEST(History, SacctRowsFromRealClustersAreRead) {
  std::vector<std::string> problems;
  // Spartan (University of Melbourne), Slurm -P with JobID: the TIMEOUT allocation, steps skipped.
  auto spartan = hist::ParseJobs(clustermax::testing::ReadFixture("reliability/sacct-P-spartan-timeout.txt"), &problems);
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
      hist::ParseJobs(clustermax::testing::ReadFixture("reliability/sacct-P-docker-2311-annotated.txt"), &problems).empty());
  EXPECT_EQ(problems, std::vector<std::string>{"sacct: no header line"});
}

// Recorded on the CI cluster (Slurm 22.05.8, slurmdbd with MariaDB 10.11), SLURM_TIME_FORMAT=%s.
TEST(History, NodeEventsAndJobsFromARealSlurmdbd) {
  std::vector<std::string> problems;
  auto events = hist::ParseEvents(clustermax::testing::ReadFixture("reliability/sacctmgr-event-ci-2205.txt"), 1.8e9, &problems);
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
    EXPECT_NO_THROW(bench::Grade(hist::HistoryMetrics(junk, bench::EmbeddedBenchThresholds()),
                                 bench::EmbeddedBenchThresholds()));
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
