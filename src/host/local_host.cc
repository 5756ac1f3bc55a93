#include "host/local_host.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <thread>

#include "gpu/nvml.h"
#include "host/process.h"
#include "host/redact.h"
#include "util/files.h"
#include "util/strings.h"

namespace clustermax::host {
namespace {

IoStatus FromErrno(int e) {
  switch (e) {
    case ENOENT:
    case ENOTDIR:
    case ENODEV:
    case ENXIO:
      return IoStatus::kNotFound;
    case EACCES:
    case EPERM:
      return IoStatus::kPermissionDenied;
    default:
      return IoStatus::kError;
  }
}

char TypeOf(mode_t m) {
  if (S_ISDIR(m)) return 'd';
  if (S_ISREG(m)) return 'f';
  if (S_ISLNK(m)) return 'l';
  if (S_ISCHR(m)) return 'c';
  if (S_ISBLK(m)) return 'b';
  if (S_ISFIFO(m)) return 'p';
  if (S_ISSOCK(m)) return 's';
  return '?';
}

}  // namespace

LocalHost::LocalHost(std::string sysroot) : sysroot_(std::move(sysroot)) {
  while (sysroot_.size() > 1 && sysroot_.back() == '/') sysroot_.pop_back();
  if (sysroot_ == "/") sysroot_.clear();
}

LocalHost LocalHost::HostRoot(std::string root) {
  LocalHost h(std::move(root));
  h.in_root_ = !h.sysroot_.empty();
  return h;
}

int RunInRoot(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ROOT PROGRAM [ARGS...]\n", kInRootCommand);
    return 127;
  }
  if (::chroot(argv[2]) != 0 || ::chdir("/") != 0) {
    std::fprintf(stderr, "clustermax: cannot enter the host root %s: %s\n", argv[2], std::strerror(errno));
    return 127;
  }
  ::execv(argv[3], argv + 3);
  std::fprintf(stderr, "clustermax: cannot execute %s in the host root: %s\n", argv[3], std::strerror(errno));
  return 127;
}

std::string LocalHost::Rooted(const std::string& path) const {
  if (sysroot_.empty() || path.empty() || path[0] != '/') return path;
  if (in_root_) {
    // The node's /proc is the host's, but "self" there is this collector in its pod (its mounts,
    // its namespaces): the node's own view is its init's, PID 1 (the pod shares the host's PIDs).
    for (const char* self : {"/proc/self/", "/proc/thread-self/"}) {
      if (path.rfind(self, 0) == 0) return sysroot_ + "/proc/1/" + path.substr(std::strlen(self));
    }
    if (path == "/proc/mounts" || path.rfind("/proc/net/", 0) == 0) return sysroot_ + "/proc/1" + path.substr(5);
  }
  return sysroot_ + path;
}

FileResult LocalHost::ReadFile(const std::string& path, size_t max_bytes) {
  FileResult r;
  int fd = ::open(Rooted(path).c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    r.status = FromErrno(errno);
    r.error = std::strerror(errno);
    return r;
  }
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      r.status = FromErrno(e);
      if (r.status == IoStatus::kNotFound) r.status = IoStatus::kError;  // opened but unreadable (sysfs EIO/ENODEV)
      r.error = std::strerror(e);
      r.content.clear();
      return r;
    }
    if (n == 0) break;
    size_t room = max_bytes - r.content.size();
    r.content.append(buf, std::min(room, static_cast<size_t>(n)));
    if (static_cast<size_t>(n) > room) {
      r.truncated = true;
      break;
    }
  }
  ::close(fd);
  r.status = IoStatus::kOk;
  r.content = RedactFile(path, std::move(r.content));  // secrets never leave the node (host/redact.h)
  return r;
}

DirResult LocalHost::ListDir(const std::string& path) {
  DirResult r;
  std::string rooted = Rooted(path);
  DIR* d = ::opendir(rooted.c_str());
  if (!d) {
    r.status = FromErrno(errno);
    r.error = std::strerror(errno);
    return r;
  }
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    DirEntry de{name, '?'};
    switch (e->d_type) {
      case DT_DIR:
        de.type = 'd';
        break;
      case DT_REG:
        de.type = 'f';
        break;
      case DT_LNK:
        de.type = 'l';
        break;
      case DT_CHR:
        de.type = 'c';
        break;
      case DT_BLK:
        de.type = 'b';
        break;
      case DT_FIFO:
        de.type = 'p';
        break;
      case DT_SOCK:
        de.type = 's';
        break;
      default: {
        struct stat st {};
        if (::lstat((rooted + "/" + name).c_str(), &st) == 0) de.type = TypeOf(st.st_mode);
      }
    }
    r.entries.push_back(std::move(de));
  }
  ::closedir(d);
  std::sort(r.entries.begin(), r.entries.end(), [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  r.status = IoStatus::kOk;
  return r;
}

StatResult LocalHost::Stat(const std::string& path) {
  StatResult r;
  std::string rooted = Rooted(path);
  struct stat st {};
  if (::lstat(rooted.c_str(), &st) != 0) {
    r.status = FromErrno(errno);
    r.error = std::strerror(errno);
    return r;
  }
  r.status = IoStatus::kOk;
  r.type = TypeOf(st.st_mode);
  r.mode = st.st_mode & 07777;
  r.size = static_cast<uint64_t>(st.st_size);
  if (r.type == 'l') {
    char buf[4096];
    ssize_t n = ::readlink(rooted.c_str(), buf, sizeof buf - 1);
    if (n >= 0) r.link_target.assign(buf, static_cast<size_t>(n));
  }
  return r;
}

std::string LocalHost::NotTakenReason() const {
  return sysroot_.empty() || in_root_ ? std::string() : std::string(kNotTakenFromImage);
}

WhichResult LocalHost::Which(const std::string& name) {
  WhichResult r;
  if (!sysroot_.empty() && !in_root_) {
    r.status = IoStatus::kNotTaken;
    return r;
  }
  if (in_root_) {
    // The node's PATH is not ours: the usual system directories, looked up under the root. A link
    // (/usr/bin/x -> /etc/alternatives/x) names a path inside the root: taken as it is, exec follows it there.
    std::vector<std::string> dirs = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"};
    if (name.find('/') != std::string::npos) dirs = {""};
    for (const auto& dir : dirs) {
      std::string inside = dir.empty() ? name : dir + "/" + name;
      struct stat st {};
      if (::lstat(Rooted(inside).c_str(), &st) == 0 &&
          (S_ISLNK(st.st_mode) || (S_ISREG(st.st_mode) && (st.st_mode & 0111)))) {
        r.status = IoStatus::kOk;
        r.path = inside;
        return r;
      }
    }
    return r;
  }
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) {
      r.status = IoStatus::kOk;
      r.path = name;
    }
    return r;
  }
  const char* p = std::getenv("PATH");
  std::string path = p ? p : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const auto& dir : util::Split(path, ':')) {
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0) {
      r.status = IoStatus::kOk;
      r.path = candidate;
      return r;
    }
  }
  return r;
}

CommandResult LocalHost::Run(const CommandSpec& spec) {
  if (spec.argv.empty()) {
    CommandResult r;
    r.status = IoStatus::kError;
    r.error = "empty argv";
    return r;
  }
  if (!sysroot_.empty() && !in_root_) {
    CommandResult r;
    r.status = IoStatus::kNotTaken;
    r.error = std::string(kNotTakenFromImage);
    return r;
  }
  WhichResult w = Which(spec.argv[0]);
  if (w.status != IoStatus::kOk) {
    CommandResult r;
    r.status = IoStatus::kNotFound;
    r.error = spec.argv[0] + ": command not found";
    return r;
  }
  // A fixed locale keeps the output of the tools we parse stable.
  std::string program = w.path;
  std::vector<std::string> argv = spec.argv;
  if (in_root_) {
    program = util::SelfExe();
    argv.insert(argv.begin(), {program, kInRootCommand, sysroot_, w.path});
    argv.erase(argv.begin() + 4);  // argv[0] of the command: exec is given its path inside the root
  }
  CommandResult r = RunProcess(program, argv, spec.timeout, spec.max_output, {"LC_ALL=C", "LANG=C"}, spec.on_stdout,
                               spec.keep_stdout, spec.stdin_data, spec.stop_when, spec.stop_signal);
  if (in_root_) r.resolved = w.path;
  if (spec.redact) {
    r.out = RedactText(std::move(r.out));
    r.err = RedactText(std::move(r.err));
  }
  return r;
}

std::optional<std::string> LocalHost::GetEnv(const std::string& name) {
  if (!sysroot_.empty() && !in_root_) return std::nullopt;  // an image has no environment; ours is not its
  const char* v = std::getenv(name.c_str());
  if (!v) return std::nullopt;
  return RedactEnv(name, v);
}

void LocalHost::Sleep(std::chrono::milliseconds d) { std::this_thread::sleep_for(d); }

NvmlResult LocalHost::QueryNvml(std::chrono::milliseconds timeout) {
  if (!sysroot_.empty() && !in_root_) {
    NvmlResult r;
    r.status = IoStatus::kNotTaken;
    r.error = std::string(kNotTakenFromImage);
    return r;
  }
  gpu::NvmlQuery q = gpu::QueryNvml(timeout);
  NvmlResult r;
  switch (q.status) {
    case gpu::NvmlStatus::kOk:
      r.status = IoStatus::kOk;
      break;
    case gpu::NvmlStatus::kNotFound:
      r.status = IoStatus::kNotFound;
      break;
    case gpu::NvmlStatus::kTimeout:
      r.status = IoStatus::kTimeout;
      break;
    case gpu::NvmlStatus::kError:
      r.status = IoStatus::kError;
      break;
  }
  r.data = std::move(q.data);
  r.error = std::move(q.error);
  return r;
}

}  // namespace clustermax::host
