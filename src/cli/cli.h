// Command-line entry point: the only layer that knows argv, stdout, stderr and exit codes.
// Exit codes (docs/ARCHITECTURE.md): 0 clean, 2 any FAIL in the selected checks,
// 1 the tool could not do its job (including usage errors), 130 declined at the prompt.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "audit/engine.h"

namespace clustermax::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitToolError = 1;
inline constexpr int kExitFail = 2;
inline constexpr int kExitDeclined = 130;

int Main(int argc, char** argv);

// A saved run: its report selection and every node bundle. Throws on a missing or corrupt run.
struct SavedRun {
  std::filesystem::path dir;
  audit::Selection selection;
  std::vector<host::Bundle> bundles;
  std::vector<audit::UnreachableNode> unreachable;  // a fleet run's nodes that returned nothing
};
SavedRun LoadRun(const std::filesystem::path& path);

// `audit review`: re-judges a saved run with the current rules.
struct ReviewOptions {
  std::string path;
  std::vector<std::string> commands;
  int verbosity = 0;
  bool color = false;
  std::string minimums_file;
};
int Review(const ReviewOptions& o);

}  // namespace clustermax::cli
