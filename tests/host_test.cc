// The real host seam: argv execution, separate streams, timeouts that kill the process group,
// missing binaries, sysroot re-rooting; and the fault-injecting host.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "fault_host.h"
#include "host/bundle.h"
#include "host/local_host.h"

using namespace clustermax::host;
namespace fs = std::filesystem;

namespace {
std::string util_trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  while (!s.empty() && s.front() == ' ') s.erase(s.begin());
  return s;
}
}  // namespace

TEST(LocalHost, RunsArgvWithSeparateStreams) {
  LocalHost h;
  auto r = h.Run({{"sh", "-c", "echo out; echo err >&2; exit 3"}});
  ASSERT_EQ(r.status, IoStatus::kOk);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_FALSE(r.resolved.empty());
}

// stdin is /dev/null, or the bytes given (kubectl create -f -); a child that never reads a large
// input is not blocked by it, nor are we.
TEST(LocalHost, StdinIsNullOrTheGivenBytes) {
  LocalHost h;
  EXPECT_EQ(h.Run({{"cat"}}).out, "");
  CommandSpec spec{{"cat"}};
  spec.stdin_data = "{\"kind\": \"Namespace\"}";
  auto r = h.Run(spec);
  ASSERT_EQ(r.status, IoStatus::kOk);
  EXPECT_EQ(r.out, spec.stdin_data);
  CommandSpec big{{"true"}, std::chrono::seconds(10)};
  big.stdin_data.assign(8u << 20, 'x');
  auto b = h.Run(big);
  EXPECT_EQ(b.status, IoStatus::kOk);
  EXPECT_EQ(b.exit_code, 0);
  CommandSpec all{{"sh", "-c", "cat | wc -c"}, std::chrono::seconds(10)};
  all.stdin_data.assign(8u << 20, 'x');
  EXPECT_EQ(util_trim(h.Run(all).out), std::to_string(8u << 20));
}

TEST(LocalHost, ArgvIsNotAShellString) {
  LocalHost h;
  auto r = h.Run({{"echo", "$(id)", ";", "true"}});
  ASSERT_EQ(r.status, IoStatus::kOk);
  EXPECT_EQ(r.out, "$(id) ; true\n");
}

TEST(LocalHost, HungCommandIsKilledAtTheTimeoutWithItsChildren) {
  LocalHost h;
  auto start = std::chrono::steady_clock::now();
  CommandSpec spec{{"sh", "-c", "sleep 30 & sleep 30; echo never"}, std::chrono::milliseconds(300)};
  auto r = h.Run(spec);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, IoStatus::kTimeout);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(secs, 5.0);
  EXPECT_NE(r.error.find("timed out"), std::string::npos);
}

TEST(LocalHost, StopWhenEndsTheCommandWithSigtermAndSaysSo) {
  // A watchdog's stop: the predicate turns true once the command has printed, the group gets
  // SIGTERM (srun passes it on to its tasks), and the result says it was stopped, not timed out.
  LocalHost h;
  auto start = std::chrono::steady_clock::now();
  bool seen = false;
  CommandSpec spec{{"sh", "-c", "echo ready; sleep 30 & sleep 30"}, std::chrono::seconds(60)};
  spec.on_stdout = [&](std::string_view piece) { seen |= piece.find("ready") != std::string_view::npos; };
  spec.stop_when = [&] { return seen; };
  auto r = h.Run(spec);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(r.stopped);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.signal, SIGTERM);
  EXPECT_LT(secs, 5.0);
  // Never asked: runs to its end.
  CommandSpec plain{{"sh", "-c", "echo done"}, std::chrono::seconds(10)};
  plain.stop_when = [] { return false; };
  auto p = h.Run(plain);
  EXPECT_FALSE(p.stopped);
  EXPECT_EQ(p.out, "done\n");
}

TEST(LocalHost, MissingBinaryIsNotFound) {
  LocalHost h;
  auto r = h.Run({{"clustermax-no-such-tool-xyz", "--version"}});
  EXPECT_EQ(r.status, IoStatus::kNotFound);
  EXPECT_EQ(h.Which("clustermax-no-such-tool-xyz").status, IoStatus::kNotFound);
}

TEST(LocalHost, OutputIsCappedAndMarkedTruncated) {
  LocalHost h;
  CommandSpec spec{{"sh", "-c", "head -c 100000 /dev/zero"}};
  spec.max_output = 1000;
  auto r = h.Run(spec);
  ASSERT_EQ(r.status, IoStatus::kOk);
  EXPECT_EQ(r.out.size(), 1000u);
  EXPECT_TRUE(r.truncated);
}

TEST(LocalHost, SysrootReRootsFileReads) {
  fs::path root = fs::temp_directory_path() / "cm-sysroot-test";
  fs::remove_all(root);
  fs::create_directories(root / "proc/sys/kernel");
  std::ofstream(root / "proc/sys/kernel/perf_event_paranoid") << "3\n";
  fs::create_symlink("../../x/y", root / "proc/sys/link");
  LocalHost h(root.string());
  auto f = h.ReadFile("/proc/sys/kernel/perf_event_paranoid", 100);
  ASSERT_EQ(f.status, IoStatus::kOk);
  EXPECT_EQ(f.content, "3\n");
  EXPECT_EQ(h.ReadFile("/proc/sys/kernel/nope", 100).status, IoStatus::kNotFound);
  auto d = h.ListDir("/proc/sys");
  ASSERT_EQ(d.status, IoStatus::kOk);
  ASSERT_EQ(d.entries.size(), 2u);
  auto s = h.Stat("/proc/sys/link");
  EXPECT_EQ(s.type, 'l');
  EXPECT_EQ(s.link_target, "../../x/y");
  fs::remove_all(root);
}

// A host root (a fan-out pod's view of its node): files under it as with a sysroot, but commands
// are looked up in the node's own directories and taken, and the environment is the pod's. (That
// they run chrooted there is proven by scripts/portable-test.sh, which has root and a real root.)
TEST(LocalHost, HostRootFindsTheNodesOwnTools) {
  fs::path root = fs::temp_directory_path() / ("cm-hostroot-test-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "usr/bin");
  fs::create_directories(root / "etc");
  std::ofstream(root / "etc/os-release") << "ID=node\n";
  std::ofstream(root / "usr/bin/nvidia-smi") << "#!/bin/sh\n";
  fs::permissions(root / "usr/bin/nvidia-smi", fs::perms::owner_all);
  std::ofstream(root / "usr/bin/not-executable") << "x";
  fs::create_symlink("/etc/alternatives/editor", root / "usr/bin/editor");  // resolved inside the root, later
  fs::create_directories(root / "proc/1/net");
  std::ofstream(root / "proc/1/mountinfo") << "node's mounts\n";
  std::ofstream(root / "proc/1/net/tcp") << "node's sockets\n";
  LocalHost h = LocalHost::HostRoot(root.string());
  EXPECT_EQ(h.NotTakenReason(), "");
  // "self" in the node's /proc would be this collector in its pod: the node's own view is PID 1's.
  EXPECT_EQ(h.ReadFile("/proc/self/mountinfo", 100).content, "node's mounts\n");
  EXPECT_EQ(h.ReadFile("/proc/net/tcp", 100).content, "node's sockets\n");
  EXPECT_EQ(LocalHost(root.string()).ReadFile("/proc/self/mountinfo", 100).status, IoStatus::kNotFound);  // an image
  EXPECT_EQ(h.ReadFile("/etc/os-release", 100).content, "ID=node\n");
  auto w = h.Which("nvidia-smi");
  ASSERT_EQ(w.status, IoStatus::kOk);
  EXPECT_EQ(w.path, "/usr/bin/nvidia-smi");  // its path inside the node
  EXPECT_EQ(h.Which("editor").path, "/usr/bin/editor");
  EXPECT_NE(h.Which("not-executable").status, IoStatus::kOk);
  EXPECT_NE(h.Which("sh").status, IoStatus::kOk);  // this machine's /bin/sh is not the node's
  ::setenv("CLUSTERMAX_NODE_NAME", "gpu-7", 1);
  EXPECT_EQ(h.GetEnv("CLUSTERMAX_NODE_NAME").value_or(""), "gpu-7");
  ::unsetenv("CLUSTERMAX_NODE_NAME");
  // A command that is not the node's is not run from this machine.
  CommandSpec spec{{"sh", "-c", "echo here"}, std::chrono::seconds(5)};
  EXPECT_EQ(h.Run(spec).status, IoStatus::kNotFound);
  // An image (--sysroot) takes no command at all.
  EXPECT_EQ(LocalHost(root.string()).Which("nvidia-smi").status, IoStatus::kNotTaken);
  fs::remove_all(root);
}

TEST(LocalHost, UnreadableFileIsPermissionDenied) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads everything";
  LocalHost h;
  EXPECT_EQ(h.ReadFile("/etc/shadow", 100).status, IoStatus::kPermissionDenied);
}

TEST(LocalHost, NvmlAbsentIsNotFoundNotACrash) {
  if (std::getenv("CLUSTERMAX_EXPECT_NVML")) GTEST_SKIP() << "NVML expected on this machine";
  LocalHost h;
  auto r = h.QueryNvml(std::chrono::seconds(5));
  if (r.status == IoStatus::kOk) GTEST_SKIP() << "a real NVML is present";
  EXPECT_EQ(r.status, IoStatus::kNotFound);
  EXPECT_NE(r.error.find("libnvidia-ml"), std::string::npos);
}

TEST(FaultHost, InjectsEachFault) {
  LocalHost real;
  FaultHost h(real);
  h.FailCommand("nvidia-smi", FaultHost::Fault::kTimeout);
  h.FailCommand("runc", FaultHost::Fault::kPermissionDenied);
  h.FailCommand("docker", FaultHost::Fault::kNotFound);
  h.FailCommand("echo", FaultHost::Fault::kTruncate);
  h.FailPath("/proc/sys/kernel", FaultHost::Fault::kPermissionDenied);
  h.FailNvml(FaultHost::Fault::kTimeout);
  EXPECT_EQ(h.Run({{"nvidia-smi", "-q", "-x"}}).status, IoStatus::kTimeout);
  EXPECT_EQ(h.Which("nvidia-smi").status, IoStatus::kOk);  // faulted commands look installed
  EXPECT_EQ(h.Run({{"runc", "--version"}}).status, IoStatus::kPermissionDenied);
  EXPECT_EQ(h.Which("docker").status, IoStatus::kNotFound);
  auto t = h.Run({{"echo", "0123456789"}});
  EXPECT_TRUE(t.truncated);
  EXPECT_EQ(t.out.size(), 5u);
  EXPECT_EQ(h.ReadFile("/proc/sys/kernel/osrelease", 100).status, IoStatus::kPermissionDenied);
  EXPECT_EQ(h.QueryNvml(std::chrono::seconds(1)).status, IoStatus::kTimeout);
}

// A tool that exits 0 but leaves a background process holding its stdout: the command is reported
// by its own exit status (not as a timeout) soon after it exits, with the output that arrived, and
// the background process (same process group) is killed.
TEST(LocalHost, ExitedCommandWhoseChildHoldsStdoutIsNotATimeout) {
  fs::path pidfile = fs::temp_directory_path() / ("cm-held-stdout-" + std::to_string(::getpid()) + ".pid");
  fs::remove(pidfile);
  LocalHost h;
  auto start = std::chrono::steady_clock::now();
  CommandSpec spec{{"sh", "-c", "sleep 30 & echo $! > " + pidfile.string() + "; echo hi"},
                   std::chrono::milliseconds(5000)};
  auto r = h.Run(spec);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.status, IoStatus::kOk) << r.error;
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "hi\n");
  EXPECT_LT(secs, 3.0);
  EXPECT_NE(r.error.find("output cut"), std::string::npos) << r.error;
  std::ifstream f(pidfile);
  pid_t sleeper = 0;
  f >> sleeper;
  ASSERT_GT(sleeper, 0);
  // SIGKILL was sent before Run returned: the sleeper is gone, or a zombie where nothing reaps
  // orphans (a container's pid 1).
  auto dead = [](pid_t p) {
    if (::kill(p, 0) != 0 && errno == ESRCH) return true;
    std::ifstream st("/proc/" + std::to_string(p) + "/stat");
    std::string line;
    std::getline(st, line);
    size_t paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
  };
  bool gone = false;
  for (int i = 0; i < 200 && !gone; ++i) {
    gone = dead(sleeper);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!gone) ::kill(sleeper, SIGKILL);
  EXPECT_TRUE(gone) << "pid " << sleeper << " survived";
  fs::remove(pidfile);
}

// The exit status of such a command is its own, not 0.
TEST(LocalHost, ExitedCommandWhoseChildHoldsStdoutKeepsItsExitStatus) {
  LocalHost h;
  CommandSpec spec{{"sh", "-c", "sleep 30 & echo out; echo err >&2; exit 7"}, std::chrono::milliseconds(5000)};
  auto r = h.Run(spec);
  EXPECT_EQ(r.status, IoStatus::kOk);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}
