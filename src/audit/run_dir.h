// A run directory: report.json, report.txt, minimum-versions.json and evidence/<node>.json, made
// atomically. Everything goes to a hidden temporary directory that Commit renames into place
// (and that is removed if the run never gets there). Evidence can be saved while the run goes on
// (a fleet's bundles as they arrive), from any thread.
// The directory is private (0700: evidence names users, mounts and versions) and made under a name
// no other user can predict or pre-create.
// With `unique_name` (the default run directory) a name already taken gets a suffix (-2, -3 ...):
// two audits in the same second both keep their runs. The rename never replaces: renameat2's
// RENAME_NOREPLACE makes the choice of name atomic against another process doing the same.
#pragma once
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <string_view>

#include "audit/engine.h"

namespace clustermax::audit {

class RunDir {
 public:
  RunDir(std::filesystem::path out_dir, bool unique_name);
  ~RunDir();
  RunDir(const RunDir&) = delete;
  RunDir& operator=(const RunDir&) = delete;

  // evidence/<name>.json (made safe as one path component, and unique: -2, -3 ... when taken).
  std::filesystem::path EvidencePath(const std::string& name);
  // Evidence files are written once, into the hidden directory: no temporary name, no flush each;
  // Commit flushes them all at once before the directory appears.
  void SaveEvidence(const std::string& name, std::string_view text);
  void SaveBundle(const std::string& name, const host::Bundle& b);
  // Writes the report (streamed: a large fleet's report is never held whole) and the minimum
  // table it was judged with, flushes, and moves the directory into place. Returns where.
  std::filesystem::path Commit(const Report& report);

 private:
  std::filesystem::path out_dir_, tmp_;
  bool unique_name_;
  std::mutex mu_;
  std::set<std::string> names_;
};

}  // namespace clustermax::audit
