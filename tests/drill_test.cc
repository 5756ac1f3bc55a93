// bench drill's pure parts and its node task: the synthetic fault lines read back by our own
// kernel-log parser (what a health check sees), mountinfo and fstab, the node task's writes
// (never through a link, never creating a log, never blocking on a FIFO) and its inject/restore
// pair, the node watch on state sequences observed on the CI cluster and in public scontrol output,
// who drained a node from its reason, and the grades with one fact flipped at a time. The drills
// themselves run for real on the CI Slurm cluster (slurm_test.cc).

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "bench/drill.h"
#include "collect/parsers.h"
#include "testutil.h"
#include "util/slurm_text.h"
#include "util/strings.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace clustermax;
namespace drill = clustermax::bench::drill;

namespace {

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

json GradeOf(const json& r, const std::string& id) {
  json grades = bench::Grade(drill::DrillMetrics(r), bench::EmbeddedBenchThresholds());
  for (const auto& g : grades)
    if (g["metric"] == id) return g;
  return json();
}

}  // namespace

TEST(Drill, FaultLinesAreReadAsTheXidAndSXidTheyStandFor) {
  std::string log = "2026-12-03T21:48:09Z n2 kernel: " + drill::FaultLine("xid", 79, "0000:19:00") + "\n" +
                    "2026-12-03T21:49:09Z n2 kernel: " + drill::FaultLine("sxid", 12022, "0000:05:00.0") + "\n";
  auto scan = collect::ParseGpuKernelLog(log, 10);
  ASSERT_EQ(scan.events.size(), 2u) << log;
  // Newest first.
  EXPECT_EQ(scan.events[0].Key(), "SXid 12022");
  EXPECT_EQ(scan.events[1].Key(), "Xid 79");
  EXPECT_EQ(scan.events[1].pci, "0000:19:00");
  EXPECT_EQ(scan.events[1].day, "2026-12-03");
  // Marked as a drill for whoever reads the log later.
  EXPECT_NE(drill::FaultLine("xid", 48, "0000:19:00").find("clustermax-drill"), std::string::npos);
  EXPECT_NE(drill::FaultLine("sxid", 12022, "0000:05:00.0").find("synthetic"), std::string::npos);
}

TEST(Drill, MountPointsAndFstabTargetsAreDecoded) {
  // The kernel's own example line (Documentation/filesystems/proc.rst), one with a space (\040),
  // and a real Debian 12 VM's fstab.
  std::string mountinfo =
      "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue\n"
      "22 28 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
      "91 28 0:44 / /mnt/shared\\040data rw,relatime shared:50 - nfs4 fs:/export rw,vers=4.2\n"
      "truncated line\n";
  auto points = drill::MountPoints(mountinfo);
  EXPECT_EQ(points, (std::vector<std::string>{"/mnt2", "/proc", "/mnt/shared data"}));
  std::string fstab =
      "# /etc/fstab: static file system information.\n"
      "#\n"
      "# <file system> <mount point>   <type>  <options>       <dump>  <pass>\n"
      "UUID=3b6f4c0e-7d0a-4c1a-9d1e-2f0f3c1e7a11 /               ext4    errors=remount-ro 0       1\n"
      "\n"
      "   fs:/export /mnt/shared\\040data nfs4 defaults,_netdev 0 0\n"
      "/swapfile none swap sw 0 0\n";
  EXPECT_EQ(drill::FstabTargets(fstab), (std::vector<std::string>{"/", "/mnt/shared data", "none"}));
}

TEST(Drill, TheNodeTaskWritesTheKernelLogOnlyWhereItShould) {
  fs::path dir = clustermax::testing::ScratchDir("drill-kmsg");
  fs::path log = dir / "n2.log";
  std::ofstream(log) << "2026-12-01T10:00:00Z n2 kernel: e1000e: eth0 NIC Link is Up\n";
  json job = {{"kind", "xid"}, {"code", 79}, {"pci", "0000:19:00"}, {"kmsg", (dir / "{node}.log").string()}};
  json d = drill::RunDrillRankJob(job, "n2");
  EXPECT_FALSE(d.contains("error")) << d.dump();
  EXPECT_GT(d["t_inject"].get<double>(), 1.7e9);
  std::string text = ReadAll(log);
  EXPECT_EQ(text.rfind("2026-12-01T10:00:00Z", 0), 0u) << "appended, not replaced";
  EXPECT_NE(text.find(" n2 kernel: NVRM: Xid (PCI:0000:19:00): 79, pid=0, name=clustermax-drill"), std::string::npos)
      << text;
  EXPECT_EQ(collect::ParseGpuKernelLog(text, 10).events.size(), 1u);

  // A kernel log is never created, followed through a link, or waited on (a FIFO with no reader).
  fs::create_symlink(log, dir / "link.log");
  fs::path fifo = dir / "fifo.log";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& bad :
       {(dir / "absent.log").string(), (dir / "link.log").string(), fifo.string(), dir.string()}) {
    job["kmsg"] = bad;
    json e = drill::RunDrillRankJob(job, "n2");
    EXPECT_TRUE(e.contains("error")) << bad << ": " << e.dump();
    EXPECT_FALSE(e.contains("t_inject")) << e.dump();
  }
  EXPECT_FALSE(fs::exists(dir / "absent.log"));
  EXPECT_EQ(ReadAll(log), text) << "nothing written through the link";
  // Not root: /dev/kmsg says why.
  if (::geteuid() != 0) {
    job["kmsg"] = "/dev/kmsg";
    EXPECT_NE(drill::RunDrillRankJob(job, "n2")["error"].get<std::string>().find("needs root"), std::string::npos);
  }
}

TEST(Drill, ACommandFaultIsRestoredAfterItsTimeEvenWhenNobodyNotices) {
  fs::path dir = clustermax::testing::ScratchDir("drill-command");
  fs::path flag = dir / "fault";
  json job = {{"kind", "command"},
              {"inject", "touch " + flag.string()},
              {"restore", "rm " + flag.string()},
              {"restore_after_s", 0.4}};
  // Outside Slurm scontrol is absent or knows no such node: never detected on the node.
  json d = drill::RunDrillRankJob(job, "clustermax-test-no-such-node");
  EXPECT_FALSE(d.contains("error")) << d.dump();
  EXPECT_EQ(d["detected_on_node"], false);
  EXPECT_GE(d["t_restore"].get<double>() - d["t_inject"].get<double>(), 0.4);
  EXPECT_FALSE(d.contains("restore_error")) << d.dump();
  EXPECT_FALSE(fs::exists(flag));
  EXPECT_EQ(d["undo"], "rm " + flag.string());

  // A failed injection is an error, and whatever it did is restored all the same.
  job["inject"] = "touch " + flag.string() + "; exit 3";
  json e = drill::RunDrillRankJob(job, "n");
  EXPECT_NE(e["error"].get<std::string>().find("inject command"), std::string::npos) << e.dump();
  EXPECT_FALSE(fs::exists(flag));
  // A failing restore is reported, not hidden.
  job["inject"] = "true";
  job["restore"] = "echo cannot put it back >&2; exit 1";
  json f = drill::RunDrillRankJob(job, "n");
  EXPECT_NE(f["restore_error"].get<std::string>().find("cannot put it back"), std::string::npos) << f.dump();
}

TEST(Drill, ADcgmInjectionIsKeptUpUntilItsTimeThenClearedAndARefusalIsAnError) {
  // A stand-in dcgmi on PATH: logs each call and answers as dcgmi does ("Successfully injected
  // field info." on success; an error line and exit code 255 when nv-hostengine refuses).
  fs::path dir = clustermax::testing::ScratchDir("drill-dcgm");
  fs::path log = dir / "calls";
  {
    std::ofstream f(dir / "dcgmi");
    f << "#!/bin/sh\necho \"$*\" >> " << log.string() << "\n"
      << "if [ -e " << (dir / "refuse").string() << " ]; then\n"
      << "  echo 'Error: unable to establish a connection to the specified host: localhost'; exit 255\nfi\n"
      << "echo 'Successfully injected field info.'\n";
  }
  fs::permissions(dir / "dcgmi", fs::perms::owner_all);
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  setenv("PATH", (dir.string() + ":" + path).c_str(), 1);
  json job = {{"kind", "dcgm"}, {"gpu", 3}, {"field", 230}, {"code", 79}, {"restore_after_s", 2.6}};
  json d = drill::RunDrillRankJob(job, "clustermax-test-no-such-node");
  auto calls = util::SplitLines(ReadAll(log));
  std::ofstream(dir / "refuse").put('x');
  json refused = drill::RunDrillRankJob(job, "n");
  fs::remove(dir / "refuse");
  fs::remove(dir / "dcgmi");
  json absent = drill::RunDrillRankJob(job, "n");
  setenv("PATH", path.c_str(), 1);

  EXPECT_FALSE(d.contains("error")) << d.dump();
  EXPECT_EQ(d["detected_on_node"], false);
  EXPECT_GE(d["t_restore"].get<double>() - d["t_inject"].get<double>(), 2.6);
  EXPECT_FALSE(d.contains("restore_error")) << d.dump();
  EXPECT_EQ(d["undo"], "dcgmi test --inject --gpuid 3 -f 230 -v 0");
  // Injected at once, again about every second while nobody noticed, then cleared with 0.
  ASSERT_GE(calls.size(), 3u) << ReadAll(log);
  EXPECT_EQ(calls.front(), "test --inject --gpuid 3 -f 230 -v 79");
  EXPECT_EQ(calls[1], "test --inject --gpuid 3 -f 230 -v 79");
  EXPECT_EQ(calls.back(), "test --inject --gpuid 3 -f 230 -v 0");
  EXPECT_EQ(d["injections"].get<size_t>(), calls.size() - 1);
  // nv-hostengine refusing is an error (never a drill that timed a fault which was never there),
  // and the clearing injection is tried and its refusal said too.
  EXPECT_TRUE(util::Contains(refused.value("error", ""), "unable to establish a connection")) << refused.dump();
  EXPECT_FALSE(refused.contains("t_inject"));
  EXPECT_TRUE(refused.contains("restore_error")) << refused.dump();
  EXPECT_TRUE(util::Contains(absent.value("error", ""), "dcgmi is not installed")) << absent.dump();
}

TEST(Drill, AGpuIsDrainedAndSlurmdRestartedThenBothUndone) {
  // A stand-in nvidia-smi on PATH logs its calls; the slurmd restart is a command that logs too.
  fs::path dir = clustermax::testing::ScratchDir("drill-gpu");
  fs::path log = dir / "calls";
  {
    std::ofstream f(dir / "nvidia-smi");
    f << "#!/bin/sh\necho \"nvidia-smi $*\" >> " << log.string() << "\n"
      << "[ -e " << (dir / "busy").string() << " ] && { echo 'Unable to drain: the GPU is in use'; exit 3; }\n"
      << "echo \"Successfully set GPU $3 drain state to: $5.\"\n";
  }
  fs::permissions(dir / "nvidia-smi", fs::perms::owner_all);
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin";
  setenv("PATH", (dir.string() + ":" + path).c_str(), 1);
  json job = {{"kind", "gpu"},
              {"pci", "0000:19:00.0"},
              {"slurmd_restart", "echo restart slurmd on {node} >> " + log.string()},
              {"restore_after_s", 0.4}};
  json d = drill::RunDrillRankJob(job, "clustermax-test-no-such-node");
  std::string calls = ReadAll(log);
  fs::remove(log);
  std::ofstream(dir / "busy").put('x');
  json busy = drill::RunDrillRankJob(job, "n");
  std::string busy_calls = ReadAll(log);
  fs::remove(dir / "busy");
  json bad = job;
  bad["pci"] = "0000:19:00.0; reboot";
  json refused = drill::RunDrillRankJob(bad, "n");
  fs::remove(dir / "nvidia-smi");
  json absent = drill::RunDrillRankJob(job, "n");
  setenv("PATH", path.c_str(), 1);

  EXPECT_FALSE(d.contains("error")) << d.dump();
  EXPECT_EQ(d["did"],
            "drained GPU 0000:19:00.0 with nvidia-smi, then restarted slurmd: echo restart slurmd on "
            "clustermax-test-no-such-node >> " +
                log.string());
  EXPECT_EQ(util::SplitLines(calls),
            (std::vector<std::string>{
                "nvidia-smi drain -p 0000:19:00.0 -m 1", "restart slurmd on clustermax-test-no-such-node",
                "nvidia-smi drain -p 0000:19:00.0 -m 0", "restart slurmd on clustermax-test-no-such-node"}))
      << calls;
  EXPECT_GE(d["t_restore"].get<double>() - d["t_inject"].get<double>(), 0.4);
  EXPECT_FALSE(d.contains("restore_error")) << d.dump();
  EXPECT_TRUE(util::Contains(d["undo"].get<std::string>(), "nvidia-smi drain -p 0000:19:00.0 -m 0 && echo restart"));
  // A GPU in use is not drained: an error, no restart, and the undrain is still tried.
  EXPECT_TRUE(util::Contains(busy.value("error", ""), "Unable to drain")) << busy.dump();
  EXPECT_FALSE(busy.contains("t_inject"));
  EXPECT_FALSE(util::Contains(busy_calls, "restart slurmd")) << busy_calls;
  EXPECT_TRUE(util::Contains(busy_calls, "-m 0")) << busy_calls;
  // The address goes into a shell line: anything but domain:bus:device.function is refused.
  EXPECT_TRUE(util::Contains(refused.value("error", ""), "not a GPU's PCI address")) << refused.dump();
  EXPECT_TRUE(util::Contains(absent.value("error", ""), "nvidia-smi drain")) << absent.dump();
  EXPECT_FALSE(absent.contains("t_inject"));
  EXPECT_TRUE(drill::IsGpuAddress("00000000:3B:00.0"));
  EXPECT_FALSE(drill::IsGpuAddress("0000:19:00"));
  EXPECT_EQ(util::ForNode("/var/log/{node}/{node}.log", "gpu07"), "/var/log/gpu07/gpu07.log");
  EXPECT_EQ(util::ForNode("{node}", "{node}"), "{node}");
  EXPECT_EQ(util::ForNode("{nod}", "x"), "{nod}");
}

TEST(Drill, AMountIsTakenAwayOnlyWhenItCanBePutBack) {
  fs::path dir = clustermax::testing::ScratchDir("drill-mount");
  std::ofstream(dir / "fstab") << "# nothing\n";
  json job = {{"kind", "mount"}, {"mount", (dir / "not-a-mount").string()}, {"fstab", (dir / "fstab").string()}};
  fs::create_directories(dir / "not-a-mount");
  EXPECT_NE(drill::RunDrillRankJob(job, "n")["error"].get<std::string>().find("not a mount point"), std::string::npos);
  // "/" is mounted but not in this fstab: refused before anything is unmounted.
  job["mount"] = "/";
  json d = drill::RunDrillRankJob(job, "n");
  EXPECT_NE(d["error"].get<std::string>().find("could not mount it again"), std::string::npos) << d.dump();
  EXPECT_FALSE(d.contains("t_inject"));
  EXPECT_NE(drill::RunDrillRankJob({{"kind", "power"}}, "n")["error"].get<std::string>().find("unknown"),
            std::string::npos);
}

// The states n2 went through in the CI cluster's Xid drill (HealthCheckInterval=5, clustermax
// health --drain --resume): IDLE, drained with our reason 4.6 s after the fault, not responding
// while slurmd reran the check, IDLE again at 10.38 s.
TEST(Drill, TheWatchTimesDetectionDrainAndReturn) {
  const double t0 = 1764798489.0;
  drill::NodeWatch w("n2");
  std::map<std::string, std::string> idle = {{"NodeName", "n2"}, {"State", "IDLE"}};
  std::map<std::string, std::string> drained = {
      {"NodeName", "n2"},
      {"State", "IDLE+DRAIN"},
      {"Reason",
       "clustermax: gpu-xid-history: GPU fault in the kernel log within 7 days: Xid 79 x1: GPU has fallen off the "
       "bus (hardware; RESTART_BM) [root@2026-12-03T21:48:13]"}};
  std::map<std::string, std::string> silent = {{"NodeName", "n2"}, {"State", "IDLE+NOT_RESPONDING"}};
  w.Observe(t0 - 3.0, drained);  // a drain before the fault is not its detection
  w.Observe(t0 - 1.0, idle);
  w.Observe(t0 + 0.0, idle);
  EXPECT_FALSE(w.Detected(t0));
  w.Observe(t0 + 4.6, drained);
  w.Observe(t0 + 5.1, drained);
  w.Observe(t0 + 9.86, silent);
  EXPECT_TRUE(w.Detected(t0));
  EXPECT_FALSE(w.Back(t0));
  w.Observe(t0 + 10.38, idle);
  w.Observe(t0 + 12.0, drained);  // a later drain is another story
  EXPECT_TRUE(w.Back(t0));
  json r = w.Result(t0);
  EXPECT_DOUBLE_EQ(r["detect_s"].get<double>(), 4.6);
  EXPECT_DOUBLE_EQ(r["back_s"].get<double>(), 10.38);
  EXPECT_DOUBLE_EQ(r["return_s"].get<double>(), 10.38);
  EXPECT_DOUBLE_EQ(r["in_drain_s"].get<double>(), 5.78);
  EXPECT_EQ(r["detected_by"], "clustermax");
  EXPECT_EQ(r["states"].size(), 6u) << r.dump();
  EXPECT_DOUBLE_EQ(r["states"][0][0].get<double>(), -3.0);
  EXPECT_EQ(r["states"][3][1], "IDLE+NOT_RESPONDING");

  // Replaced by a new node before the old one came back: that is the return.
  drill::NodeWatch x("gpu07");
  x.Observe(t0 + 1, {{"State", "MIXED"}});
  x.Observe(t0 + 61, {{"State", "DOWN+DRAIN"}, {"Reason", "NHC: check_hw_gpu: Xid 79"}});
  x.Replaced(t0 + 900, "gpu99");
  x.Observe(t0 + 4000, {{"State", "IDLE"}});
  json rx = x.Result(t0);
  EXPECT_EQ(rx["replaced_by"], "gpu99");
  EXPECT_DOUBLE_EQ(rx["return_s"].get<double>(), 900);
  EXPECT_DOUBLE_EQ(rx["in_drain_s"].get<double>(), 839);
  EXPECT_EQ(rx["detected_by"], "NHC");

  // A node gone from Slurm altogether (removed for repair) counts as taken out.
  drill::NodeWatch g("gpu08");
  g.Observe(t0 + 1, {{"State", "ALLOCATED"}});
  g.Observe(t0 + 30, {});
  EXPECT_TRUE(g.Detected(t0));
  EXPECT_EQ(g.Result(t0)["states"][1][1], "(gone from Slurm)");
  // Never out of service: nothing detected, nothing returned.
  drill::NodeWatch n("gpu09");
  n.Observe(t0 + 1, {{"State", "IDLE"}});
  n.Observe(t0 + 2, {{"State", "MIXED"}});
  EXPECT_FALSE(n.Result(t0).contains("detect_s"));
  EXPECT_FALSE(n.Result(t0).contains("return_s"));
}

// Reasons seen on real clusters (tests/fixtures/reliability/SOURCES.md) and our own.
TEST(Drill, WhoDrainedTheNodeIsReadFromItsReason) {
  std::string fixture =
      clustermax::testing::ReadFixture("reliability/scontrol-show-node-h100-kill-task-failed-2205.txt");
  std::string line;
  for (auto l : util::SplitLines(fixture))
    if (l.find('=') != std::string_view::npos) line += " " + std::string(util::Trim(l));
  auto rec = util::ParseScontrolRecord(util::Trim(line));
  ASSERT_EQ(rec["State"], "IDLE+DRAIN");
  drill::NodeWatch w("localhost");
  w.Observe(100, rec);
  EXPECT_EQ(w.Result(90)["reason"], "Kill task failed [root@2024-08-08T19:12:57]");
  EXPECT_EQ(w.Result(90)["detected_by"], "Slurm");
  EXPECT_EQ(drill::DetectedBy("gres/gpu count reported lower than configured (0 < 8)"), "Slurm");
  EXPECT_EQ(drill::DetectedBy("Not responding [slurm@2021-11-30T13:22:56]"), "Slurm");
  EXPECT_EQ(drill::DetectedBy("clustermax: storage-mount-stable: 1 expected shared mount(s) missing"), "clustermax");
  EXPECT_EQ(drill::DetectedBy("NHC: check_fs_mount:  /scratch not mounted"), "NHC");
  EXPECT_EQ(drill::DetectedBy("DCGM health: XID error on GPU 3"), "DCGM");
  EXPECT_EQ(drill::DetectedBy("issue-5894"), "other");
  EXPECT_EQ(drill::DetectedBy(""), "");
}

TEST(Drill, GradesFollowTheSlowestNodeAndFailWhatWasNeverSeen) {
  json base = {
      {"kind", "clustermax.bench.drill"},
      {"drill", {{"kind", "xid"}, {"what", "synthetic Xid 79"}, {"detect_timeout_s", 900}, {"return_timeout_s", 3600}}},
      {"nodes", json::array({{{"node", "n1"}, {"detect_s", 4.6}, {"return_s", 10.4}, {"in_drain_s", 5.8}},
                             {{"node", "n2"}, {"detect_s", 70.0}, {"return_s", 1900.0}, {"in_drain_s", 1830}}})}};
  json d = GradeOf(base, "rel.drill-detect");
  EXPECT_EQ(d["verdict"], "PASS");
  EXPECT_DOUBLE_EQ(d["value"].get<double>(), 70.0);
  EXPECT_NE(d["detail"].get<std::string>().find("n2"), std::string::npos);
  EXPECT_EQ(GradeOf(base, "rel.drill-return")["verdict"], "PASS");

  json slow = base;
  slow["nodes"][1]["detect_s"] = 700.0;
  EXPECT_EQ(GradeOf(slow, "rel.drill-detect")["verdict"], "FAIL");
  slow["nodes"][1]["detect_s"] = 300.0;
  EXPECT_EQ(GradeOf(slow, "rel.drill-detect")["verdict"], "WARN");

  json unseen = base;
  unseen["nodes"][1].erase("detect_s");
  unseen["nodes"][1].erase("return_s");
  json u = GradeOf(unseen, "rel.drill-detect");
  EXPECT_EQ(u["verdict"], "FAIL");
  EXPECT_NE(u.dump().find("n2: not marked bad within 900 s"), std::string::npos) << u.dump();
  // The other node still gives the return figure.
  EXPECT_DOUBLE_EQ(GradeOf(unseen, "rel.drill-return")["value"].get<double>(), 10.4);

  json stuck = base;
  stuck["nodes"][1].erase("return_s");
  stuck["nodes"][1]["resumed_by_drill"] = true;
  json s = GradeOf(stuck, "rel.drill-return");
  EXPECT_EQ(s["verdict"], "FAIL");
  EXPECT_NE(s.dump().find("the drill resumed it"), std::string::npos) << s.dump();

  // A node where no fault went in measured nothing about the cluster: the other node decides.
  json failed = base;
  failed["nodes"][0] = {{"node", "n1"}, {"error", "/dev/kmsg: Permission denied (writing the kernel log needs root)"}};
  EXPECT_EQ(GradeOf(failed, "rel.drill-detect")["verdict"], "PASS");
  failed["nodes"].erase(1);
  json f = GradeOf(failed, "rel.drill-detect");
  EXPECT_EQ(f["verdict"], "SKIP");
  EXPECT_NE(f["reason"].get<std::string>().find("needs root"), std::string::npos) << f.dump();
  // The drill could not put its fault back: the node is not back as it was.
  json left = base;
  left["nodes"][0]["restore_error"] = "mount: /scratch: special device fs:/export does not exist";
  json lg = GradeOf(left, "rel.drill-return");
  EXPECT_EQ(lg["verdict"], "FAIL");
  EXPECT_NE(lg.dump().find("could not restore"), std::string::npos) << lg.dump();

  json none = base;
  none["nodes"] = json::array();
  EXPECT_EQ(GradeOf(none, "rel.drill-detect")["verdict"], "SKIP");
  // Junk in a result read back never throws.
  for (json junk : {json::object(), json{{"nodes", "x"}}, json{{"nodes", json::array({1, "a", nullptr})}},
                    json{{"nodes", json::array({{{"detect_s", "fast"}, {"node", 3}}})}, {"drill", 7}}}) {
    EXPECT_NO_THROW(bench::Grade(drill::DrillMetrics(junk), bench::EmbeddedBenchThresholds())) << junk.dump();
    EXPECT_NO_THROW(drill::RenderDrill(junk)) << junk.dump();
  }
  std::string text = drill::RenderDrill(base);
  EXPECT_NE(text.find("time to detect         70.0 s"), std::string::npos) << text;
  json hostile = base;
  hostile["nodes"][0]["reason"] = "bad\x1b[2Jreason";
  EXPECT_EQ(drill::RenderDrill(hostile).find('\x1b'), std::string::npos);
}
