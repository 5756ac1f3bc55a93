#include "bench/workspace.h"
#include "util/files.h"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

namespace clustermax::bench {
namespace fs = std::filesystem;

namespace {

std::string FsTypeName(long magic) {
  switch (static_cast<unsigned long>(magic)) {
    case 0xEF53:
      return "ext4";  // ext2/3/4 share the magic
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x6969:
      return "nfs";
    case 0x0BD00BD0:
      return "lustre";
    case 0x47504653:
      return "gpfs";
    case 0x00C36400:
      return "ceph";
    case 0x65735546:
      return "fuse";
    case 0x794C7630:
      return "overlayfs";
    case 0x2FC12FC1:
      return "zfs";
    case 0xFE534D42:
      return "smb2";
    case 0x5346414F:
      return "afs";
    case 0x013111A8:
      return "ibrix";
    case 0x19830326:
      return "beegfs";  // BeeGFS client magic
    case 0xA501FCF5:
      return "vxfs";
    case 0xAAD7AAEA:
      return "panfs";
    case 0x24051905:
      return "ubifs";
    default:
      return fmt::format("0x{:x}", static_cast<unsigned long>(magic));
  }
}

std::string HumanBytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 5) v /= 1024, ++u;
  return fmt::format("{:.1f} {}", v, units[u]);
}
}  // namespace

SpaceInfo QuerySpace(const fs::path& path) {
  struct statvfs v {};
  if (::statvfs(path.c_str(), &v) != 0) {
    throw std::runtime_error(fmt::format("cannot stat filesystem of {}: {}", path.string(), std::strerror(errno)));
  }
  SpaceInfo s;
  s.free_bytes = static_cast<uint64_t>(v.f_bavail) * v.f_frsize;
  s.total_bytes = static_cast<uint64_t>(v.f_blocks) * v.f_frsize;
  struct statfs f {};
  if (::statfs(path.c_str(), &f) == 0) s.fs_type = FsTypeName(static_cast<long>(f.f_type));
  return s;
}

void RequireFreeSpace(const fs::path& path, uint64_t need, const std::string& what) {
  SpaceInfo s = QuerySpace(path);
  // Leave at least 5 % of the filesystem (and 256 MiB) free after the benchmark wrote everything.
  uint64_t margin = std::max<uint64_t>(s.total_bytes / 20, uint64_t{256} << 20);
  if (s.free_bytes < need || s.free_bytes - need < margin) {
    throw std::runtime_error(
        fmt::format("not enough free space under {}: the benchmark writes {} ({}), {} is free and {} must stay free; "
                    "lower the sizes",
                    path.string(), HumanBytes(need), what, HumanBytes(s.free_bytes), HumanBytes(margin)));
  }
}

Workspace::Workspace(const fs::path& parent) {
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) throw std::runtime_error(fmt::format("{} is not a directory", parent.string()));
  std::string host = util::Hostname();
  std::random_device rd;
  for (int attempt = 0; attempt < 8; ++attempt) {
    fs::path candidate = parent / fmt::format("clustermax-bench-{}-{}-{:08x}", host, ::getpid(), rd());
    if (::mkdir(candidate.c_str(), 0700) == 0) {
      root_ = candidate;
      return;
    }
    if (errno != EEXIST) {
      throw std::runtime_error(
          fmt::format("cannot create a directory under {}: {}", parent.string(), std::strerror(errno)));
    }
  }
  throw std::runtime_error("cannot find a fresh directory name under " + parent.string());
}

Workspace::~Workspace() { Cleanup(); }

fs::path Workspace::MakeDir(const fs::path& relative) {
  fs::path p = root_ / relative;
  if (::mkdir(p.c_str(), 0700) != 0) {
    throw std::runtime_error(fmt::format("cannot create {}: {}", p.string(), std::strerror(errno)));
  }
  std::lock_guard lock(mu_);
  dirs_.push_back(p);
  return p;
}

void Workspace::Track(const fs::path& file) {
  std::lock_guard lock(mu_);
  files_.push_back(file);
}

Workspace::CleanupReport Workspace::Cleanup() {
  std::lock_guard lock(mu_);
  if (cleaned_) return report_;
  cleaned_ = true;
  for (const auto& f : files_) {
    if (::unlink(f.c_str()) == 0) {
      ++report_.files_removed;
    } else if (errno != ENOENT) {
      report_.leftovers.push_back(fmt::format("{} ({})", f.string(), std::strerror(errno)));
    }
  }
  // Deepest first: directories were created parent before child.
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    if (::rmdir(it->c_str()) == 0) {
      ++report_.dirs_removed;
    } else if (errno != ENOENT) {
      report_.leftovers.push_back(fmt::format("{} ({})", it->string(), std::strerror(errno)));
    }
  }
  if (::rmdir(root_.c_str()) == 0) {
    ++report_.dirs_removed;
  } else if (errno != ENOENT) {
    report_.leftovers.push_back(fmt::format("{} ({})", root_.string(), std::strerror(errno)));
  }
  return report_;
}

nlohmann::json Workspace::CleanupReport::ToJson() const {
  return {{"files_removed", files_removed}, {"dirs_removed", dirs_removed}, {"leftovers", leftovers}};
}

}  // namespace clustermax::bench
