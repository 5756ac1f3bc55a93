// The folders of src/ form layers (docs/ARCHITECTURE.md, "Folders"): each may include only the
// folders listed for it here, and the graph of includes between folders has no cycle. A new
// include that crosses a layer the wrong way fails here, naming the file and the line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <string>

namespace {
namespace fs = std::filesystem;

// Folder -> the folders of ours it may include (besides itself).
const std::map<std::string, std::set<std::string>>& Allowed() {
  static const std::map<std::string, std::set<std::string>> allowed = {
      {"util", {}},
      {"core", {"util"}},
      {"gpu", {"util"}},
      {"host", {"gpu", "core", "util"}},
      {"collect", {"host", "gpu", "core", "util"}},
      {"checks", {"core", "util"}},
      {"audit", {"collect", "checks", "host", "gpu", "core", "util"}},
      {"report", {"collect", "core", "util"}},
      {"bench", {"host", "gpu", "core", "util"}},
      {"rating", {"core", "util"}},
      {"store", {"rating", "core", "util"}},
      {"web", {"bench", "report", "store", "rating", "core", "util"}},
      {"cli",
       {"audit", "bench", "checks", "collect", "report", "rating", "store", "web", "host", "gpu", "core", "util"}},
      // The CUDA helper links nothing of ours; it includes one header-only file, bench/net_check.h,
      // the collectives' data check it shares with the core (HeaderOnlyFor below holds it to that).
      {"gpubench", {"bench"}},
  };
  return allowed;
}

TEST(Layering, EveryIncludeStaysInItsLayer) {
  const fs::path src = fs::path(CLUSTERMAX_SOURCE_DIR) / "src";
  const std::regex include(R"re(^\s*#\s*include\s*"([a-z_]+)/[^"]+")re");
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(src)) {
    if (!e.is_regular_file()) continue;
    std::string ext = e.path().extension().string();
    if (ext != ".h" && ext != ".cc" && ext != ".cu") continue;
    std::string folder = fs::relative(e.path(), src).begin()->string();
    if (folder == e.path().filename().string()) continue;  // src/main.cc: the entry point
    auto allowed = Allowed().find(folder);
    ASSERT_NE(allowed, Allowed().end()) << "src/" << folder << " is not in the layer table of tests/layering_test.cc";
    ++files;
    std::ifstream in(e.path());
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      std::string to = m[1];
      if (to == folder || !Allowed().count(to)) continue;  // its own folder, or a library's ("nlohmann/json.hpp")
      EXPECT_TRUE(allowed->second.count(to)) << fs::relative(e.path(), src).string() << ":" << n << " includes " << to
                                             << "/, which " << folder << "/ may not include";
    }
  }
  EXPECT_GT(files, 100);
}

TEST(Layering, TheGpuHelperIncludesOnlyHeaderOnlyFilesOfOurs) {
  // What the helper may include of ours must need no linking: bench/net_check.h only, and that
  // file includes nothing but the standard library.
  const fs::path src = fs::path(CLUSTERMAX_SOURCE_DIR) / "src";
  const std::regex include(R"re(^\s*#\s*include\s*"([a-z_]+/[^"]+)")re");
  for (const auto& e : fs::recursive_directory_iterator(src / "gpubench")) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, include)) continue;
      std::string to = m[1];
      if (to.rfind("gpubench/", 0) == 0 || to.rfind("nlohmann/", 0) == 0) continue;
      EXPECT_EQ(to, "bench/net_check.h") << e.path().filename().string();
    }
  }
  std::ifstream check(src / "bench" / "net_check.h");
  std::string line;
  while (std::getline(check, line)) EXPECT_EQ(line.find("#include \""), std::string::npos) << line;
}

TEST(Layering, TheLayersHaveNoCycle) {
  std::map<std::string, int> state;  // 1 on the current path, 2 done
  std::function<void(const std::string&, std::string)> visit = [&](const std::string& f, std::string path) {
    path += f;
    ASSERT_NE(state[f], 1) << "cycle: " << path;
    if (state[f] == 2) return;
    state[f] = 1;
    for (const auto& to : Allowed().at(f)) visit(to, path + " -> ");
    state[f] = 2;
  };
  for (const auto& [f, _] : Allowed()) visit(f, "");
}

}  // namespace
