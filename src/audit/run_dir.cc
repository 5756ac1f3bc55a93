#include "audit/run_dir.h"

#include <fcntl.h>
#include <stdio.h>

#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "core/minimums.h"
#include "audit/render.h"
#include "util/files.h"

namespace clustermax::audit {
namespace fs = std::filesystem;

namespace {
// A node's bundle file name in a run directory: its name, made safe as one path component.
std::string BundleFileName(const std::string& hostname) {
  std::string name = hostname.empty() ? "node" : hostname;
  for (auto& c : name) {
    if (c == '/' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = '_';
  }
  if (name == "." || name == "..") name = "node";
  return name + ".json";
}
}  // namespace

RunDir::RunDir(fs::path out_dir, bool unique_name) : out_dir_(std::move(out_dir)), unique_name_(unique_name) {
  fs::path parent = out_dir_.parent_path().empty() ? fs::path(".") : out_dir_.parent_path();
  util::CreatePrivateDirectories(parent);
  tmp_ = util::MakePrivateTempDir(parent, fmt::format(".{}.partial-", out_dir_.filename().string()));
  util::CreatePrivateDirectories(tmp_ / "evidence");
}

RunDir::~RunDir() {
  std::error_code ec;
  if (!tmp_.empty()) fs::remove_all(tmp_, ec);
}

fs::path RunDir::EvidencePath(const std::string& name) {
  std::lock_guard lock(mu_);
  std::string file = BundleFileName(name);
  for (int k = 2; !names_.insert(file).second; ++k) file = BundleFileName(fmt::format("{}-{}", name, k));
  return tmp_ / "evidence" / file;
}

void RunDir::SaveEvidence(const std::string& name, std::string_view text) {
  util::WriteNewFile(EvidencePath(name), text);
}

void RunDir::SaveBundle(const std::string& name, const host::Bundle& b) { SaveEvidence(name, b.ToText()); }

fs::path RunDir::Commit(const Report& report) {
  util::WriteFileAtomic(tmp_ / "report.json", [&](const audit::Sink& write) {
    audit::WriteJson(report, write);
    write("\n");
  });
  util::WriteFileAtomic(tmp_ / "report.txt", [&](const audit::Sink& write) {
    audit::WriteText(report, {.verbosity = 2, .color = false}, write);
  });
  // The table the run was judged with, kept beside it: `audit review` judges with the same one.
  std::optional<std::string> table = report.minimums_origin == "embedded"
                                         ? std::optional<std::string>(core::EmbeddedMinimumTableText())
                                         : util::ReadLocalFile(report.minimums_origin);
  if (table) util::WriteFileAtomic(tmp_ / "minimum-versions.json", *table);
  util::SyncFilesystemOf(tmp_);
  for (int n = 1; n < 1000; ++n) {
    fs::path target = n == 1 ? out_dir_ : fs::path(fmt::format("{}-{}", out_dir_.string(), n));
    std::error_code ec;
    if (!unique_name_ && fs::is_directory(target, ec) && !fs::is_symlink(target, ec) && fs::is_empty(target, ec))
      fs::remove(target, ec);
    if (::renameat2(AT_FDCWD, tmp_.c_str(), AT_FDCWD, target.c_str(), RENAME_NOREPLACE) == 0) {
      tmp_.clear();
      return target;
    }
    int e = errno;
    if (e != EEXIST || !unique_name_) {
      if (e == EEXIST)
        throw std::runtime_error(fmt::format("output directory {} exists and is not empty", out_dir_.string()));
      throw std::runtime_error(fmt::format("cannot move the run into {}: {}", target.string(), std::strerror(e)));
    }
  }
  throw std::runtime_error(fmt::format("no free run directory name next to {}", out_dir_.string()));
}

}  // namespace clustermax::audit
