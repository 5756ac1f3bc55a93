// `clustermax health`: one line on stdout, an exit status, and optionally the node drained or
// resumed through scontrol. The judgement is audit/health.*; here are the files, the lock, the
// deadline and the scheduler.
#include "cli/health.h"

#include "cli/command.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <chrono>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "audit/health.h"
#include "cli/cli.h"
#include "host/local_host.h"
#include "util/files.h"
#include "util/slurm_text.h"
#include "util/strings.h"
#include "util/time.h"

namespace clustermax::cli {
namespace {

namespace fs = std::filesystem;
namespace hl = audit::health;
using nlohmann::json;

struct HealthOptions {
  bool drain = false, resume = false, verbose = false, json_out = false;
  std::string state, node, sysroot, kernel_log;
  std::vector<std::string> require_mounts;
  double timeout_s = 20;
};

fs::path DefaultStatePath() {
  if (::geteuid() == 0) return "/var/lib/clustermax/health-state.json";
  return util::StateDir() / "health-state.json";
}

std::string NodeName(const HealthOptions& o) {
  if (!o.node.empty()) return o.node;
  if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) return n;
  std::string h = util::Hostname();
  return h.substr(0, h.find('.'));  // Slurm's NodeName is the short name
}

// Runs scontrol (PATH lookup, 10 s), returning stdout or an error text.
host::CommandResult Scontrol(const std::vector<std::string>& argv) {
  static host::LocalHost real;
  host::CommandSpec spec;
  spec.argv = argv;
  spec.timeout = std::chrono::seconds(10);
  spec.redact = false;
  return real.Run(spec);
}

std::string Describe(const host::CommandResult& r) {
  if (r.status != host::IoStatus::kOk) return fmt::format("{} ({})", r.error, host::ToString(r.status));
  return fmt::format("exit {}: {}", r.exit_code, util::Ellipsize(util::Trim(r.err + r.out), 200));
}

// Drains or resumes the node per hl::Decide; messages on stderr. False when scontrol failed.
bool ActOnNode(const HealthOptions& o, bool healthy, const std::string& reason) {
  if (!(o.drain && !healthy) && !(o.resume && healthy)) return true;
  std::string node = NodeName(o);
  auto show = Scontrol(hl::ShowNodeCommand(node));
  std::map<std::string, std::string> record;
  if (show.status == host::IoStatus::kOk && show.exit_code == 0) {
    record = util::ParseScontrolRecord(util::Trim(show.out));
  } else {
    std::cerr << "clustermax health: warning: scontrol show node " << util::EscapeControls(node) << ": "
              << util::EscapeControls(Describe(show)) << "\n";
    if (healthy) return false;  // never resume a node whose drain reason we could not read
  }
  hl::Decision d = hl::Decide(healthy, o.drain, o.resume, record, reason);
  if (d.action == hl::NodeAction::kNone) {
    if (!d.why.empty() && o.verbose)
      std::cerr << "clustermax health: " << util::EscapeControls(node) << ": " << util::EscapeControls(d.why) << "\n";
    return true;
  }
  auto argv = d.action == hl::NodeAction::kDrain ? hl::DrainCommand(node, reason) : hl::ResumeCommand(node);
  auto r = Scontrol(argv);
  if (r.status != host::IoStatus::kOk || r.exit_code != 0) {
    std::cerr << "clustermax health: error: " << util::EscapeControls(util::JoinArgv(argv)) << ": "
              << util::EscapeControls(Describe(r)) << "\n";
    return false;
  }
  std::cerr << "clustermax health: " << (d.action == hl::NodeAction::kDrain ? "drained " : "resumed ")
            << util::EscapeControls(node) << "\n";
  return true;
}

// The state of the last run; a corrupt or unreadable one is reported and replaced.
hl::State LoadState(const fs::path& state_path) {
  hl::State prev;
  try {
    if (auto text = util::ReadLocalFile(state_path, 1u << 20)) {
      std::string why;
      if (auto s = hl::ParseState(*text, &why))
        prev = *s;
      else
        std::cerr << "clustermax health: warning: state " << util::EscapeControls(state_path.string())
                  << " is corrupt (" << why << "); starting afresh\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "clustermax health: warning: state unreadable (" << util::EscapeControls(e.what())
              << "); starting afresh\n";
  }
  return prev;
}

int RunHealth(const HealthOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  fs::path state_path = o.state.empty() ? DefaultStatePath() : fs::path(o.state);
  if (state_path.parent_path().empty()) state_path = fs::path(".") / state_path;
  util::CreatePrivateDirectories(state_path.parent_path());

  // One run at a time: a second one exits at once (never piles up behind a hung first).
  fs::path lock_path = state_path.string() + ".lock";
  int lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd < 0)
    throw std::runtime_error(fmt::format("cannot open the lock file {}: {}", lock_path.string(), std::strerror(errno)));
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK)
      throw std::runtime_error(fmt::format("cannot lock {}: {}", lock_path.string(), std::strerror(errno)));
    std::cout << "BUSY: another clustermax health run holds " << util::EscapeControls(lock_path.string()) << "\n"
              << std::flush;
    return kExitHealthBusy;
  }

  // The deadline: whatever is still running by then, the node is reported unhealthy (a hung NVML
  // or filesystem is a fault) and the process ends; the state is left as it was.
  // Shared with the watchdog thread, which may outlive this function.
  struct Once {
    std::mutex mu;
    bool done = false;
  };
  auto once = std::make_shared<Once>();
  auto finish = [o, once](const std::string& line, bool healthy, const std::string& reason) {
    std::lock_guard lock(once->mu);
    if (once->done) return false;
    once->done = true;
    std::cout << line << "\n" << std::flush;
    ActOnNode(o, healthy, reason);
    return true;
  };
  std::thread([finish, secs = o.timeout_s] {
    std::this_thread::sleep_for(std::chrono::duration<double>(secs));
    std::string reason = fmt::format("health: the checks did not finish within {} s", secs);
    if (finish("UNHEALTHY: " + reason, false, reason)) std::_Exit(kExitFail);
  }).detach();

  hl::State prev = LoadState(state_path);

  auto now = std::chrono::system_clock::now();
  collect::CollectOptions opts;
  auto budget = std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  opts.command_timeout = std::min<std::chrono::milliseconds>(std::chrono::milliseconds(10'000), budget / 2);
  opts.kernel_log_file = o.kernel_log;
  opts.required_mounts = o.require_mounts;
  host::LocalHost local(o.sysroot);
  std::string node = NodeName(o);
  hl::RunResult res = hl::Run(local, opts, prev, node, now);
  const hl::Verdict& v = res.verdict;
  const std::string& line = res.line;

  if (o.verbose) {
    for (const auto& f : v.failures) std::cerr << "  FAIL " << f << "\n";
    for (const auto& w : v.warnings) std::cerr << "  WARN " << w << "\n";
  }
  try {
    util::WriteFileAtomic(state_path, util::JsonText(res.next.ToJson()) + "\n");
  } catch (const std::exception& e) {
    std::cerr << "clustermax health: warning: state not saved: " << util::EscapeControls(e.what()) << "\n";
  }
  if (o.json_out) {
    json j = {{"status", v.healthy ? "healthy" : "unhealthy"},
              {"line", line},
              {"check", v.check},
              {"reason", v.reason},
              {"failures", v.failures},
              {"warnings", v.warnings},
              {"node", node},
              {"seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()}};
    std::cerr << util::JsonText(j) << "\n";
  }
  if (!finish(line, v.healthy, v.check + ": " + v.reason)) {
    // The deadline fired while the verdict was being written: that exit stands.
    std::this_thread::sleep_for(std::chrono::hours(1));
  }
  return v.healthy ? kExitOk : kExitFail;
}

}  // namespace

void AddHealthCommands(CLI::App& app, Commands& table) {
  auto o = std::make_shared<HealthOptions>();
  auto* cmd =
      app.add_subcommand("health",
                         "Passive node health check for Slurm's HealthCheckProgram, prolog/epilog or a timer: "
                         "prints HEALTHY or 'UNHEALTHY: <check>: <reason>'; exit 0 healthy, 2 unhealthy, 75 busy");
  cmd->add_flag("--drain", o->drain,
                "When unhealthy, drain this node: scontrol update NodeName=... State=DRAIN Reason='clustermax: ...'");
  cmd->add_flag("--resume", o->resume, "When healthy, resume this node if (and only if) clustermax drained it");
  cmd->add_option("--node", o->node, "Slurm node name (default SLURMD_NODENAME, else the short host name)");
  cmd->add_option(
      "--state", o->state,
      "State file (default /var/lib/clustermax/health-state.json as root, else ~/.clustermax/health-state.json)");
  cmd->add_option("--timeout", o->timeout_s,
                  "Seconds for the whole run; past it the node is reported unhealthy (default 20)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--require-mount", o->require_mounts,
                  "A mount point that must be mounted and answer stat (repeatable)");
  cmd->add_option("--kernel-log", o->kernel_log,
                  "Read Xid/SXid lines from this kernel-log file instead of journalctl/dmesg");
  cmd->add_option("--sysroot", o->sysroot,
                  "Judge the files under DIR (commands and NVML are not taken; tests and images)")
      ->check(CLI::ExistingDirectory);
  cmd->add_flag("-v,--verbose", o->verbose, "Every failing and warning check on stderr");
  cmd->add_flag("--json", o->json_out, "A JSON summary on stderr (stdout stays one line)");
  table.Add(cmd, [o] { return RunHealth(*o); });
}

}  // namespace clustermax::cli
