#include "util/files.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "util/strings.h"

namespace clustermax::util {
namespace {

std::string Errno(int e) { return std::strerror(e); }

// A name no other process can predict: pid, a process-wide counter and random bits.
std::string UniqueSuffix() {
  static std::atomic<unsigned> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}() ^ (static_cast<uint64_t>(::getpid()) << 32)};
  return fmt::format("{}.{}.{:012x}", ::getpid(), counter.fetch_add(1), rng() & 0xffffffffffffull);
}

}  // namespace

namespace {
void WriteAll(int fd, std::string_view content, const std::filesystem::path& name) {
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("cannot write {}: {}", name.string(), Errno(errno)));
    }
    done += static_cast<size_t>(n);
  }
}
}  // namespace

void WriteNewFile(const std::filesystem::path& path, std::string_view content, unsigned mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create {}: {}", path.string(), Errno(errno)));
  ::fchmod(fd, mode);
  try {
    WriteAll(fd, content, path);
  } catch (...) {
    ::close(fd);
    ::unlink(path.c_str());
    throw;
  }
  if (::close(fd) != 0) {
    int e = errno;
    ::unlink(path.c_str());
    throw std::runtime_error(fmt::format("cannot write {}: {}", path.string(), Errno(e)));
  }
}

void SyncFilesystemOf(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("cannot open {}: {}", path.string(), Errno(errno)));
  int rc = ::syncfs(fd);
  int e = errno;
  ::close(fd);
  if (rc != 0) throw std::runtime_error(fmt::format("cannot flush {}: {}", path.string(), Errno(e)));
}

void WriteFileAtomic(const std::filesystem::path& path, std::string_view content, unsigned mode) {
  WriteFileAtomic(
      path, [&](const std::function<void(std::string_view)>& write) { write(content); }, mode);
}

void WriteFileAtomic(const std::filesystem::path& path,
                     const std::function<void(const std::function<void(std::string_view)>&)>& produce, unsigned mode) {
  std::filesystem::path tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    tmp = path;
    tmp += ".tmp." + UniqueSuffix();
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) throw std::runtime_error(fmt::format("cannot create {}: {}", tmp.string(), Errno(errno)));
  // The umask may have taken bits away, never added them; make the mode exact.
  ::fchmod(fd, mode);
  auto write = [&](std::string_view content) { WriteAll(fd, content, tmp); };
  try {
    produce(write);
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot flush {}: {}", tmp.string(), Errno(e)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("cannot rename {} to {}: {}", tmp.string(), path.string(), Errno(e)));
  }
}

void CreatePrivateDirectories(const std::filesystem::path& path) {
  if (path.empty()) return;
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      // A link we did not make could point anywhere: follow it only when it leads to a directory we own.
      if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::geteuid()) {
        throw std::runtime_error(
            fmt::format("{} is a symbolic link not to a directory of ours; refusing to write there", path.string()));
      }
      return;
    }
    if (!S_ISDIR(st.st_mode)) throw std::runtime_error(fmt::format("{} exists and is not a directory", path.string()));
    return;
  }
  if (path.has_parent_path() && path.parent_path() != path) CreatePrivateDirectories(path.parent_path());
  if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
    throw std::runtime_error(fmt::format("cannot create directory {}: {}", path.string(), Errno(errno)));
  }
}

std::filesystem::path MakePrivateTempDir(const std::filesystem::path& parent, std::string_view prefix) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    std::filesystem::path p = parent / fmt::format("{}{}", prefix, UniqueSuffix());
    if (::mkdir(p.c_str(), 0700) == 0) return p;
    if (errno != EEXIST)
      throw std::runtime_error(fmt::format("cannot create directory {}: {}", p.string(), Errno(errno)));
  }
  throw std::runtime_error(fmt::format("cannot create a unique directory in {}", parent.string()));
}

std::optional<std::string> ReadLocalFile(const std::filesystem::path& path, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    throw std::runtime_error(fmt::format("cannot open {}: {}", path.string(), Errno(errno)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(
        fmt::format("{} is not a regular file (a FIFO, device or directory is not read)", path.string()));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    throw std::runtime_error(fmt::format("{} is {} bytes, over the limit of {} bytes for one document", path.string(),
                                         st.st_size, max_bytes));
  }
  std::string out;
  out.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      throw std::runtime_error(fmt::format("cannot read {}: {}", path.string(), Errno(e)));
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {  // a file that grows while we read it
      ::close(fd);
      throw std::runtime_error(
          fmt::format("{} grew past the limit of {} bytes for one document", path.string(), max_bytes));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

std::string JsonText(const nlohmann::json& j, int indent) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

nlohmann::json EscapeControlsInJson(nlohmann::json j) {
  std::vector<nlohmann::json*> stack{&j};
  while (!stack.empty()) {
    nlohmann::json* v = stack.back();
    stack.pop_back();
    if (v->is_string()) {
      *v = EscapeControls(v->get_ref<const std::string&>());
    } else if (v->is_array()) {
      for (auto& x : *v) stack.push_back(&x);
    } else if (v->is_object()) {
      nlohmann::json fixed = nlohmann::json::object();
      for (auto it = v->begin(); it != v->end(); ++it) fixed[EscapeControls(it.key())] = std::move(it.value());
      *v = std::move(fixed);
      for (auto& x : *v) stack.push_back(&x);
    }
  }
  return j;
}

int JsonNestingDepth(std::string_view text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"')
      in_string = true;
    else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

nlohmann::json ParseJsonDocument(std::string_view text, std::string_view what) {
  if (JsonNestingDepth(text, kMaxJsonDepth) > kMaxJsonDepth) {
    throw std::runtime_error(fmt::format("{}: JSON nested deeper than {} levels; refused", what, kMaxJsonDepth));
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: not valid JSON ({})", what, e.what()));
  }
}

std::filesystem::path HomeDir() {
  if (const char* h = std::getenv("HOME"); h && *h) return h;
  if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir) return pw->pw_dir;
  return "/tmp";
}

std::filesystem::path StateDir() {
  std::filesystem::path dir = HomeDir() / ".clustermax";
  CreatePrivateDirectories(dir);
  struct stat st {};
  if (::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid() && (st.st_mode & 077) != 0) {
    ::chmod(dir.c_str(), 0700);
  }
  return dir;
}

std::string Hostname() {
  char host[256] = {0};
  if (::gethostname(host, sizeof host - 1) != 0) return "";
  return SanitizeUtf8(host);
}

std::string SelfExe() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) throw std::runtime_error("cannot resolve /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

}  // namespace clustermax::util
