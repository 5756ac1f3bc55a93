// Health mode (audit/health.*, cli/health.cc): verdicts from a node's evidence tree (a sysroot the
// test writes: kernel log, sysfs RDMA ports and counters, mountinfo), the state between runs, the
// lock, reason sanitization, and the scontrol drain/resume decisions and command lines.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "audit/health.h"
#include "host/local_host.h"
#include "testutil.h"
#include "util/strings.h"
#include "util/time.h"

namespace fs = std::filesystem;
namespace hl = clustermax::audit::health;
using clustermax::testing::RunBinary;
using clustermax::testing::ScratchDir;
using nlohmann::json;

namespace {

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}
void Append(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::app) << text; }

// Kernel-log lines (journalctl short-iso) of 2026-12-01, the day the tree's runs judge ("now" below).
const char* kBenign = "2026-12-01T10:00:00+0000 node1 kernel: e1000e: eth0 NIC Link is Up\n";
const char* kXid79 =
    "2026-12-01T10:05:00+0000 node1 kernel: NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus.\n";
const char* kXid13 =
    "2026-12-01T10:06:00+0000 node1 kernel: NVRM: Xid (PCI:0000:19:00): 13, pid=1234, name=python, Graphics Exception\n";
constexpr long long kNow = 1'796'126'400;  // 2026-12-01T12:00:00Z

// The same Xid 79 line stamped now (the binary judges with the real clock's 7-day window).
std::string Xid79Now() {
  return clustermax::util::FormatRfc3339(std::chrono::system_clock::now()) +
         " node1 kernel: NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus.\n";
}

// A node tree: an InfiniBand rail mlx5_0/1, ACTIVE, counters zero; a kernel log; mountinfo.
struct Node {
  fs::path root;
  explicit Node(const std::string& name) : root(ScratchDir(name)) {
    Write(root / "var/log/kern.log", kBenign);
    fs::path dev = root / "sys/class/infiniband/mlx5_0";
    Write(dev / "fw_ver", "28.39.1002\n");
    Write(dev / "device/vendor", "0x15b3\n");
    Write(dev / "device/device", "0x1021\n");
    Port("4: ACTIVE", "5: LinkUp");
    for (const char* c : {"link_downed", "link_error_recovery", "symbol_error", "port_rcv_errors",
                          "local_link_integrity_errors", "excessive_buffer_overrun_errors"}) {
      Counter(c, 0);
    }
    Write(root / "proc/self/mountinfo",
          "22 1 259:2 / / rw,relatime - ext4 /dev/nvme0n1p2 rw\n"
          "40 22 259:3 / /scratch rw,relatime - xfs /dev/nvme1n1 rw\n");
  }
  void Port(const std::string& state, const std::string& phys) {
    fs::path p = root / "sys/class/infiniband/mlx5_0/ports/1";
    Write(p / "state", state + "\n");
    Write(p / "phys_state", phys + "\n");
    Write(p / "rate", "400 Gb/sec (4X NDR)\n");
    Write(p / "link_layer", "InfiniBand\n");
  }
  void Counter(const std::string& c, long v) {
    Write(root / "sys/class/infiniband/mlx5_0/ports/1/counters" / c, std::to_string(v) + "\n");
  }

  // One run on this tree, with `prev` as the last run's state; returns the result (state in .next).
  hl::RunResult Run(const hl::State& prev, std::vector<std::string> mounts = {}, long long at = kNow) {
    clustermax::host::LocalHost h(root.string());
    clustermax::collect::CollectOptions o;
    o.kernel_log_file = "/var/log/kern.log";
    o.required_mounts = std::move(mounts);
    return hl::Run(h, o, prev, "node1", std::chrono::system_clock::time_point(std::chrono::seconds(at)));
  }
};

}  // namespace

TEST(Health, HealthyTreeIsHealthy) {
  Node n("health-ok");
  auto r = n.Run({});
  EXPECT_TRUE(r.verdict.healthy) << r.line << " " << json(r.verdict.failures).dump();
  EXPECT_EQ(r.line, "HEALTHY");
  EXPECT_EQ(r.next.updated_epoch, kNow);
  EXPECT_EQ(r.next.counters["mlx5_0/1"]["symbol_error"], 0);
}

TEST(Health, NewHardwareXidCountsOnceAndOldOneDoesNot) {
  Node n("health-xid");
  auto first = n.Run({});
  ASSERT_TRUE(first.verdict.healthy) << first.line;
  Append(n.root / "var/log/kern.log", kXid79);
  auto second = n.Run(first.next, {}, kNow + 300);
  EXPECT_FALSE(second.verdict.healthy);
  EXPECT_EQ(second.verdict.check, "gpu-xid-history");
  EXPECT_NE(second.line.find("UNHEALTHY: gpu-xid-history: "), std::string::npos) << second.line;
  EXPECT_NE(second.line.find("Xid 79"), std::string::npos) << second.line;
  // The next run has seen it: the same line is history, not a new fault.
  auto third = n.Run(second.next, {}, kNow + 600);
  EXPECT_TRUE(third.verdict.healthy) << third.line;
}

TEST(Health, ApplicationXidIsNotAFault) {
  Node n("health-xid13");
  auto first = n.Run({});
  Append(n.root / "var/log/kern.log", kXid13);
  auto second = n.Run(first.next, {}, kNow + 300);
  // Xid 13 is application-class in NVIDIA's catalog: reported, not a drain.
  EXPECT_TRUE(second.verdict.healthy) << second.line;
}

TEST(Health, FirstRunCountsEveryEventTheSourceShows) {
  Node n("health-first");
  Append(n.root / "var/log/kern.log", kXid79);
  auto r = n.Run({});
  EXPECT_FALSE(r.verdict.healthy);
  EXPECT_EQ(r.next.xid_seen.size(), 1u);
}

TEST(Health, DmesgStampsThatDriftDoNotMakeAnOldEventNew) {
  auto ev = [](const std::string& stamp) {
    return json{{"kind", "Xid"},
                {"code", 79},
                {"pci", "0000:19:00"},
                {"day", ""},
                {"line", "[" + stamp + "] NVRM: Xid (PCI:0000:19:00): 79, pid=0, GPU has fallen off the bus."}};
  };
  clustermax::core::EvidenceSet first = {
      {"kernel.xid",
       clustermax::testing::Ok("kernel.xid", {{"source", "dmesg"}, {"events", {ev("Tue Dec  1 10:00:01 2026")}}})}};
  hl::State s = hl::NextState(first, kNow, "", "");
  // dmesg -T recomputed the stamp one second later; and a second, real, event with the same text.
  clustermax::core::EvidenceSet again = {
      {"kernel.xid",
       clustermax::testing::Ok("kernel.xid", {{"source", "dmesg"}, {"events", {ev("Tue Dec  1 10:00:02 2026")}}})}};
  hl::ApplyState(again, s, kNow + 300);
  EXPECT_TRUE(again["kernel.xid"].data["events"].empty()) << again["kernel.xid"].data.dump();
  clustermax::core::EvidenceSet twice = {
      {"kernel.xid",
       clustermax::testing::Ok(
           "kernel.xid",
           {{"source", "dmesg"}, {"events", {ev("Tue Dec  1 10:09:00 2026"), ev("Tue Dec  1 10:00:02 2026")}}})}};
  hl::ApplyState(twice, s, kNow + 300);
  EXPECT_EQ(twice["kernel.xid"].data["events"].size(), 1u);
  EXPECT_EQ(twice["kernel.xid"].data["counts_by_day"]["undated"]["Xid 79"], 1);
}

TEST(Health, IbPortDown) {
  Node n("health-ibdown");
  n.Port("1: DOWN", "3: Disabled");
  auto r = n.Run({});
  EXPECT_FALSE(r.verdict.healthy);
  EXPECT_EQ(r.verdict.check, "ib-port-health") << r.line;
}

TEST(Health, CountersRisingSinceTheLastRun) {
  Node n("health-counters");
  n.Counter("symbol_error", 7);
  auto first = n.Run({});
  // History on the first run (one read): a warning, never a drain.
  EXPECT_TRUE(first.verdict.healthy) << first.line;
  auto same = n.Run(first.next, {}, kNow + 300);
  EXPECT_TRUE(same.verdict.healthy) << same.line;
  n.Counter("symbol_error", 9);
  auto rising = n.Run(same.next, {}, kNow + 600);
  EXPECT_FALSE(rising.verdict.healthy);
  EXPECT_EQ(rising.verdict.check, "ib-link-errors");
  ASSERT_FALSE(rising.verdict.failures.empty());
  EXPECT_NE(rising.verdict.failures[0].find("symbol_error: 7 -> 9"), std::string::npos) << rising.verdict.failures[0];
}

TEST(Health, RequiredMountMissing) {
  Node n("health-mount");
  // /scratch is mounted (in an image its stat is not taken: unread, never a drain).
  EXPECT_TRUE(n.Run({}, {"/scratch"}).verdict.healthy);
  auto r = n.Run({}, {"/lustre"});
  EXPECT_FALSE(r.verdict.healthy);
  EXPECT_EQ(r.verdict.check, "storage-mount-stable");
  EXPECT_NE(r.line.find("/lustre"), std::string::npos) << r.line;
}

TEST(Health, GpuFaultsFromNvmlAreJudgedByTheAuditJudges) {
  // ECC and remap verdicts are the audit's own (gpu-ecc-health); here only the health subset's
  // membership and order: a lost GPU is named before its ECC.
  const auto& c = hl::Checks();
  auto pos = [&](const char* id) { return std::find(c.begin(), c.end(), id) - c.begin(); };
  for (const char* id :
       {"gpu-drivers", "gpu-count-consistent", "gpu-xid-history", "gpu-ecc-health", "gpu-pcie-link", "nvlink-status",
        "gpu-throttle-reasons", "idle-thermals", "ib-port-health", "ib-link-errors", "storage-mount-stable"}) {
    EXPECT_LT(pos(id), static_cast<long>(c.size())) << id;
  }
  EXPECT_LT(pos("gpu-count-consistent"), pos("gpu-ecc-health"));
}

TEST(Health, StateParsing) {
  hl::State s;
  s.updated_epoch = 42;
  s.xid_seen = {"a", "b"};
  s.counters = {{"mlx5_0/1", {{"symbol_error", 3}}}};
  std::string why;
  auto back = hl::ParseState(s.ToJson().dump(), &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->updated_epoch, 42);
  EXPECT_EQ(back->xid_seen.size(), 2u);
  for (const char* bad : {"", "{", "[]", "null", R"({"version":2,"updated_epoch":1})",
                          R"({"version":1,"updated_epoch":"x"})", R"({"version":1,"updated_epoch":1,"xid_seen":[1]})",
                          R"({"version":1,"updated_epoch":1,"counters":{"p":{"c":"x"}}})"}) {
    EXPECT_FALSE(hl::ParseState(bad, &why)) << bad;
    EXPECT_FALSE(why.empty());
  }
}

TEST(Health, ReasonSanitized) {
  EXPECT_EQ(hl::SanitizeReason("a\nb\x1b[31m \"c\"\x7f"), "a b [31m 'c'");
  EXPECT_EQ(hl::SanitizeReason("x\xc2\x85y"), "x y");  // NEL, a C1 control
  std::string longer(500, 'x');
  std::string cut = hl::SanitizeReason(longer, 100);
  EXPECT_EQ(cut.size(), 100u);
  EXPECT_EQ(cut.substr(97), "...");
  std::string utf8;
  for (int i = 0; i < 100; ++i) utf8 += "\xc3\xa9";  // é
  cut = hl::SanitizeReason(utf8, 51);
  EXPECT_LE(cut.size(), 51u);
  EXPECT_EQ(clustermax::util::SanitizeUtf8(cut), cut);  // never a split sequence
  hl::Verdict v;
  v.healthy = false;
  v.check = "gpu-xid-history";
  v.reason = "x";
  EXPECT_EQ(hl::StatusLine(v), "UNHEALTHY: gpu-xid-history: x");
}

TEST(Health, DrainAndResumeCommandLines) {
  auto d = hl::DrainCommand("n1", "gpu-xid-history: Xid 79\nmore");
  ASSERT_EQ(d.size(), 5u);
  EXPECT_EQ(d[0], "scontrol");
  EXPECT_EQ(d[1], "update");
  EXPECT_EQ(d[2], "NodeName=n1");
  EXPECT_EQ(d[3], "State=DRAIN");
  EXPECT_EQ(d[4], "Reason=clustermax: gpu-xid-history: Xid 79 more");
  EXPECT_EQ(hl::ResumeCommand("n1"), (std::vector<std::string>{"scontrol", "update", "NodeName=n1", "State=RESUME"}));

  std::map<std::string, std::string> idle = {{"NodeName", "n1"}, {"State", "IDLE"}};
  std::map<std::string, std::string> ours = {{"State", "IDLE+DRAIN"},
                                             {"Reason", "clustermax: gpu-xid-history: x [root@2026-12-01T10:00:00]"}};
  std::map<std::string, std::string> admin = {{"State", "IDLE+DRAIN"},
                                              {"Reason", "replace DIMM [alice@2026-12-01T10:00:00]"}};
  EXPECT_EQ(hl::Decide(false, true, false, idle, "gpu-xid-history: x").action, hl::NodeAction::kDrain);
  EXPECT_EQ(hl::Decide(false, false, true, idle, "r").action, hl::NodeAction::kNone);                   // no --drain
  EXPECT_EQ(hl::Decide(false, true, false, ours, "gpu-xid-history: x").action, hl::NodeAction::kNone);  // same reason
  EXPECT_EQ(hl::Decide(false, true, false, ours, "ib-port-health: y").action,
            hl::NodeAction::kDrain);                                                    // ours, new reason
  EXPECT_EQ(hl::Decide(false, true, false, admin, "r").action, hl::NodeAction::kNone);  // an admin's drain is kept
  EXPECT_EQ(hl::Decide(true, true, true, ours, "").action, hl::NodeAction::kResume);
  EXPECT_EQ(hl::Decide(true, true, true, admin, "").action, hl::NodeAction::kNone);  // never resume an admin's drain
  EXPECT_EQ(hl::Decide(true, true, true, idle, "").action, hl::NodeAction::kNone);
  EXPECT_EQ(hl::Decide(true, true, false, ours, "").action, hl::NodeAction::kNone);  // no --resume
}

// ---- the command: exit codes, the lock, the state file, scontrol through a fake on PATH ----

namespace {

struct Cli {
  Node node;
  fs::path bin, log, state;
  explicit Cli(const std::string& name)
      : node(name),
        bin(node.root.parent_path() / (name + "-bin")),
        log(bin / "scontrol.log"),
        state(node.root.parent_path() / (name + "-state") / "state.json") {
    fs::remove_all(bin);
    fs::create_directories(bin);
    // A fake scontrol: logs its argv, answers `show node` with SCONTROL_NODE (a record line).
    Write(bin / "scontrol", "#!/bin/sh\necho \"$*\" >> " + log.string() + "\nif [ \"$1\" = show ]; then cat " +
                                (bin / "record").string() + "; fi\nexit 0\n");
    fs::permissions(bin / "scontrol", fs::perms::owner_all);
    Record("NodeName=n1 State=IDLE Reason=(null)");
  }
  void Record(const std::string& r) { Write(bin / "record", r + "\n"); }
  clustermax::testing::Shell Run(const std::string& extra) {
    return RunBinary("health --sysroot " + node.root.string() + " --kernel-log /var/log/kern.log --state " +
                         state.string() + " --node n1 " + extra,
                     "PATH=" + bin.string() + ":/usr/bin:/bin");
  }
  std::string Log() { return clustermax::util::ReadLocalFile(log).value_or(""); }
};

}  // namespace

TEST(HealthCli, DrainsWithOurReasonAndResumesOnlyOurDrain) {
  Cli c("health-cli");
  auto ok = c.Run("--drain --resume");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("HEALTHY"), std::string::npos) << ok.out;
  EXPECT_EQ(c.Log().find("update"), std::string::npos) << c.Log();  // healthy and not drained: nothing to do

  Append(c.node.root / "var/log/kern.log", Xid79Now());
  auto bad = c.Run("--drain --resume");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("UNHEALTHY: gpu-xid-history: "), std::string::npos) << bad.out;
  EXPECT_NE(c.Log().find("update NodeName=n1 State=DRAIN Reason=clustermax: gpu-xid-history: "), std::string::npos)
      << c.Log();

  // Drained by us: the next healthy run resumes it.
  c.Record("NodeName=n1 State=IDLE+DRAIN Reason=clustermax: gpu-xid-history: x [root@2026-12-01T10:00:00]");
  auto back = c.Run("--drain --resume");
  EXPECT_EQ(back.code, 0) << back.out;
  EXPECT_NE(c.Log().find("update NodeName=n1 State=RESUME"), std::string::npos) << c.Log();

  // Drained by an admin: never resumed.
  fs::remove(c.log);
  c.Record("NodeName=n1 State=IDLE+DRAIN Reason=bad DIMM [alice@2026-12-01T10:00:00]");
  auto admin = c.Run("--drain --resume -v");
  EXPECT_EQ(admin.code, 0) << admin.out;
  EXPECT_EQ(c.Log().find("update"), std::string::npos) << c.Log();
}

TEST(HealthCli, CorruptStateIsReportedAndReplaced) {
  Cli c("health-corrupt");
  Write(c.state, "{\"version\": 1, \"updated_epoch\": \x01 garbage");
  auto r = c.Run("");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("corrupt"), std::string::npos) << r.out;
  auto text = clustermax::util::ReadLocalFile(c.state);
  ASSERT_TRUE(text);
  std::string why;
  EXPECT_TRUE(hl::ParseState(*text, &why)) << why;
  EXPECT_EQ(fs::status(c.state).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
}

TEST(HealthCli, OverlappingRunExitsBusyAtOnce) {
  Cli c("health-lock");
  fs::create_directories(c.state.parent_path());
  int fd = ::open((c.state.string() + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_EX | LOCK_NB), 0);
  auto t0 = std::chrono::steady_clock::now();
  auto r = c.Run("--drain");
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ::close(fd);
  EXPECT_EQ(r.code, 75) << r.out;
  EXPECT_NE(r.out.find("BUSY: another clustermax health run holds"), std::string::npos) << r.out;
  EXPECT_LT(secs, 5.0);
  EXPECT_EQ(c.Log().find("update"), std::string::npos);  // a busy run never drains
}

TEST(HealthCli, FakeNvmlGpuFaultIsUnhealthy) {
  // The fake NVML: 8 H100s, GPU 3 with uncorrectable ECC errors, GPU 5 trained at x8.
  Cli c("health-nvml");
  Write(c.node.root.parent_path() / "health-nvml-kern.log", kBenign);
  auto r = RunBinary("health --kernel-log " + (c.node.root.parent_path() / "health-nvml-kern.log").string() +
                         " --state " + c.state.string() + " --node n1 --drain",
                     "PATH=" + c.bin.string() + ":/usr/bin:/bin LD_LIBRARY_PATH=" + CLUSTERMAX_FAKE_NVML_DIR);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("UNHEALTHY: gpu-ecc-health: "), std::string::npos) << r.out;
  EXPECT_NE(c.Log().find("State=DRAIN Reason=clustermax: gpu-ecc-health: "), std::string::npos) << c.Log();
}

TEST(HealthCli, HungNvmlIsUnhealthyAndTheRunBounded) {
  // A hung NVML (FAKE_NVML_HANG): abandoned at half of --timeout, the node unhealthy.
  Cli c("health-timeout");
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunBinary(
      "health --kernel-log /nonexistent --state " + c.state.string() + " --node n1 --timeout 2",
      "PATH=" + c.bin.string() + ":/usr/bin:/bin FAKE_NVML_HANG=1 LD_LIBRARY_PATH=" + CLUSTERMAX_FAKE_NVML_DIR);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("UNHEALTHY: gpu-drivers: the GPU management library did not answer within 1 s"),
            std::string::npos)
      << r.out;
  EXPECT_LT(secs, 4.0);
}
