#include "host/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

#include <fmt/format.h>

extern char** environ;

namespace clustermax::host {
namespace {
using Clock = std::chrono::steady_clock;

// How long the pipes may stay open after the child has exited (a descendant holding them).
constexpr std::chrono::milliseconds kPipeGrace{300};
// How often the poll loop looks for the child's exit while output is still open.
constexpr std::chrono::milliseconds kExitPoll{20};

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
};

std::vector<std::string> MergeEnv(const std::vector<std::string>& extra) {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& kv : extra) {
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

CommandResult RunProcess(const std::string& path, const std::vector<std::string>& argv,
                         std::chrono::milliseconds timeout, size_t max_output, const std::vector<std::string>& env,
                         const std::function<void(std::string_view)>& on_stdout, bool keep_stdout,
                         const std::string& stdin_data, const std::function<bool()>& stop_when, int stop_signal) {
  CommandResult r;
  r.resolved = path;
  auto start = Clock::now();
  Pipe out, err;
  if (::pipe2(out.fd, O_CLOEXEC) != 0 || ::pipe2(err.fd, O_CLOEXEC) != 0) {
    r.status = IoStatus::kError;
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  int in_fd = -1;
  if (!stdin_data.empty()) {
    in_fd = ::memfd_create("clustermax-stdin", MFD_CLOEXEC);
    bool ok = in_fd >= 0;
    for (size_t off = 0; ok && off < stdin_data.size();) {
      ssize_t n = ::write(in_fd, stdin_data.data() + off, stdin_data.size() - off);
      if (n < 0 && errno == EINTR) continue;
      ok = n > 0;
      off += n > 0 ? static_cast<size_t>(n) : 0;
    }
    if (!ok || ::lseek(in_fd, 0, SEEK_SET) != 0) {
      if (in_fd >= 0) ::close(in_fd);
      r.status = IoStatus::kError;
      r.error = std::string("stdin: ") + std::strerror(errno);
      return r;
    }
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (in_fd >= 0)
    posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
  else
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err.fd[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  sigset_t dfl;
  sigemptyset(&dfl);
  sigaddset(&dfl, SIGPIPE);
  sigaddset(&dfl, SIGINT);
  sigaddset(&dfl, SIGTERM);
  posix_spawnattr_setsigdefault(&attr, &dfl);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> envs = MergeEnv(env);
  std::vector<char*> cenv;
  for (const auto& e : envs) cenv.push_back(const_cast<char*>(e.c_str()));
  cenv.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawn(&pid, path.c_str(), &fa, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (in_fd >= 0) ::close(in_fd);
  ::close(out.fd[1]);
  out.fd[1] = -1;
  ::close(err.fd[1]);
  err.fd[1] = -1;
  if (rc != 0) {
    r.status = rc == ENOENT ? IoStatus::kNotFound : (rc == EACCES ? IoStatus::kPermissionDenied : IoStatus::kError);
    r.error = std::string("cannot execute ") + path + ": " + std::strerror(rc);
    return r;
  }

  auto deadline = start + timeout;
  std::string* bufs[2] = {&r.out, &r.err};
  pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
  int open_fds = 2;
  char chunk[65536];
  auto read_ready = [&] {
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(fds[i].fd, chunk, sizeof chunk);
      if (got <= 0) {
        if (got < 0 && errno == EINTR) continue;
        fds[i].fd = -1;
        --open_fds;
        continue;
      }
      if (i == 0 && on_stdout) on_stdout(std::string_view(chunk, static_cast<size_t>(got)));
      if (i == 0 && !keep_stdout) continue;
      size_t room = bufs[i]->size() < max_output ? max_output - bufs[i]->size() : 0;
      size_t take = std::min(room, static_cast<size_t>(got));
      bufs[i]->append(chunk, take);
      if (take < static_cast<size_t>(got)) r.truncated = true;
    }
  };
  // The child's exit is noticed without reaping it (WNOWAIT): its pid, and so its process group
  // id, stays reserved until the waitpid below, so killing the group can never hit a stranger.
  // Once it has exited, the pipes get a short grace period: a descendant that still holds them
  // (`tool & exit 0`) must not turn a finished command into a timeout.
  bool exited = false;  // the child has exited (a zombie not yet reaped)
  bool cut = false;     // it exited, but a descendant held the pipes past the grace period
  Clock::time_point grace_end;
  while (open_fds > 0) {
    auto now = Clock::now();
    if (!exited) {
      siginfo_t si{};
      int w = ::waitid(P_PID, static_cast<id_t>(pid), &si, WEXITED | WNOHANG | WNOWAIT);
      if ((w == 0 && si.si_pid == pid) || (w < 0 && errno == ECHILD)) {
        exited = true;
        grace_end = std::min(deadline, now + kPipeGrace);
      }
    }
    if (!exited && !r.stopped && stop_when && stop_when()) {
      // Asked to stop: stop_signal to the group now, KILL (as a timeout) if it is still there in
      // 35 s (srun forwards SIGUSR1 to its tasks, which stop and send what they have).
      r.stopped = true;
      ::kill(-pid, stop_signal);
      deadline = std::min(deadline, now + std::chrono::seconds(35));
    }
    auto limit = exited ? grace_end : deadline;
    if (now >= limit) {
      (exited ? cut : r.timed_out) = true;
      break;
    }
    // Until the child exits, wake up now and then to look for its exit.
    auto wait =
        std::min(std::chrono::duration_cast<std::chrono::milliseconds>(limit - now) + std::chrono::milliseconds(1),
                 exited ? kPipeGrace : kExitPoll);
    int n = ::poll(fds, 2, static_cast<int>(wait.count()));
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    read_ready();
  }

  int status = 0;
  std::string left_behind;
  // After SIGKILL, wait at most a second: a child stuck in uninterruptible I/O (a hung NFS mount)
  // cannot die until the I/O returns, and the audit must not wait for it.
  auto reap_after_kill = [&] {
    ::kill(-pid, SIGKILL);
    for (int i = 0; i < 500; ++i) {
      if (::waitpid(pid, &status, WNOHANG) != 0) return;
      ::usleep(2000);
    }
    left_behind = "; the process did not exit after SIGKILL (uninterruptible I/O?) and was left behind";
  };
  if (r.timed_out) {
    reap_after_kill();
  } else if (cut) {
    // Kill what is left of the group (the child is a zombie, its group id still reserved), keep
    // what the pipes already hold, then reap the child for its real exit status.
    ::kill(-pid, SIGKILL);
    while (open_fds > 0 && ::poll(fds, 2, 0) > 0) read_ready();
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    r.error = fmt::format(
        "exited, but a process it started still held its stdout/stderr {} ms later: output cut there, "
        "its process group killed",
        kPipeGrace.count());
  } else {
    // Streams closed; the child may still be running (e.g. it closed stdout). Wait up to the deadline.
    while (true) {
      pid_t w = ::waitpid(pid, &status, WNOHANG);
      if (w == pid) break;
      if (w < 0 && errno != EINTR) break;
      if (Clock::now() >= deadline) {
        r.timed_out = true;
        reap_after_kill();
        break;
      }
      ::usleep(2000);
    }
  }
  r.duration_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  if (r.timed_out) {
    r.status = IoStatus::kTimeout;
    r.error = "timed out after " + std::to_string(timeout.count()) + " ms; process group killed";
    r.error += left_behind;
    return r;
  }
  r.status = IoStatus::kOk;
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.signal = WTERMSIG(status);
    r.exit_code = 128 + r.signal;
  }
  return r;
}

}  // namespace clustermax::host
