// `clustermax minimums update FILE|URL`: a newer table is verified and installed atomically in
// ~/.clustermax, audits use it, a run keeps the table it was judged with and review reuses it.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/minimums.h"
#include "test_server.h"
#include "testutil.h"
#include "util/files.h"
#include "util/time.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace clustermax;
namespace cmt = clustermax::testing;

namespace {

// The embedded table with another generation date.
std::string TableGenerated(const std::string& when) {
  json t = json::parse(core::EmbeddedMinimumTableText());
  t["generated"] = when;
  return t.dump(1);
}

std::string DaysAgo(int days) {
  return util::FormatRfc3339(std::chrono::system_clock::now() - std::chrono::hours(24 * days));
}

}  // namespace

TEST(MinimumsUpdate, ANewerTableIsVerifiedInstalledAndUsed) {
  fs::path d = cmt::ScratchDir("minimums-update");
  std::string env = "HOME=" + d.string();
  fs::path installed = d / ".clustermax" / "minimum-versions.json";
  std::ofstream(d / "newer.json") << TableGenerated(DaysAgo(1));
  auto r = cmt::RunBinary("minimums update " + (d / "newer.json").string(), env);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("installed " + installed.string()), std::string::npos) << r.out;
  ASSERT_TRUE(fs::exists(installed));
  struct stat st {};
  ASSERT_EQ(::stat(installed.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // In use from now on: `minimums show` and an audit's report name it.
  auto show = cmt::RunBinary("minimums show", env);
  EXPECT_NE(show.out.find("minimum-version table: " + installed.string()), std::string::npos) << show.out;
  auto audit =
      cmt::RunBinary("audit --standalone --yes --check security-runc --json --out " + (d / "run").string(), env);
  ASSERT_TRUE(audit.code == 0 || audit.code == 2) << audit.out;
  json report = json::parse(*util::ReadLocalFile(d / "run" / "report.json"));
  EXPECT_EQ(report["minimum_table"]["origin"], installed.string());
  // The run keeps the table it was judged with, byte for byte.
  EXPECT_EQ(*util::ReadLocalFile(d / "run" / "minimum-versions.json"), *util::ReadLocalFile(installed));
  // The same table again: nothing to do.
  auto again = cmt::RunBinary("minimums update " + (d / "newer.json").string(), env);
  EXPECT_EQ(again.code, 0);
  EXPECT_NE(again.out.find("already in use"), std::string::npos) << again.out;
}

TEST(MinimumsUpdate, OlderBrokenOrFutureTablesAreRefusedAndNothingChanges) {
  fs::path d = cmt::ScratchDir("minimums-refuse");
  std::string env = "HOME=" + d.string();
  fs::path installed = d / ".clustermax" / "minimum-versions.json";
  std::ofstream(d / "old.json") << TableGenerated("2020-01-01T00:00:00Z");
  auto old = cmt::RunBinary("minimums update " + (d / "old.json").string(), env);
  EXPECT_EQ(old.code, 1) << old.out;
  EXPECT_NE(old.out.find("older than the table in use (embedded"), std::string::npos) << old.out;
  EXPECT_FALSE(fs::exists(installed));
  std::ofstream(d / "future.json") << TableGenerated("2099-01-01T00:00:00Z");
  auto future = cmt::RunBinary("minimums update " + (d / "future.json").string(), env);
  EXPECT_EQ(future.code, 1);
  EXPECT_NE(future.out.find("in the future"), std::string::npos) << future.out;
  // A table that does not parse as a whole (one component without its floors) installs nothing.
  json broken = json::parse(TableGenerated(DaysAgo(1)));
  broken["components"][0].erase("floors");
  broken["components"][0].erase("branches");
  std::ofstream(d / "broken.json") << broken.dump();
  auto bad = cmt::RunBinary("minimums update " + (d / "broken.json").string(), env);
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_FALSE(fs::exists(installed));
  // A table with a lost row (a driver branch between two listed ones) is refused, naming it.
  json gap = json::parse(TableGenerated(DaysAgo(1)));
  for (auto& c : gap["components"]) {
    if (c["id"] != "nvidiaDriver") continue;
    json kept = json::array();
    for (const auto& f : c["floors"]) {
      if (f["key"] != "570") kept.push_back(f);
    }
    c["floors"] = kept;
  }
  std::ofstream(d / "gap.json") << gap.dump();
  auto gapped = cmt::RunBinary("minimums update " + (d / "gap.json").string(), env);
  EXPECT_EQ(gapped.code, 1) << gapped.out;
  EXPECT_NE(gapped.out.find("driver branch 570"), std::string::npos) << gapped.out;
  EXPECT_FALSE(fs::exists(installed));
  std::ofstream(d / "deep.json") << std::string(100000, '[');
  EXPECT_EQ(cmt::RunBinary("minimums update " + (d / "deep.json").string(), env).code, 1);
  EXPECT_EQ(cmt::RunBinary("minimums update " + (d / "missing.json").string(), env).code, 1);
  EXPECT_FALSE(fs::exists(installed));
  // --force installs an older table (a deliberate rollback) ...
  auto forced = cmt::RunBinary("minimums update --force " + (d / "old.json").string(), env);
  EXPECT_EQ(forced.code, 0) << forced.out;
  EXPECT_TRUE(fs::exists(installed));
  // ... but audits keep using whichever is newer, the embedded one here.
  auto show = cmt::RunBinary("minimums show", env);
  EXPECT_NE(show.out.find("minimum-version table: embedded"), std::string::npos) << show.out;
  // An installed table that is garbage warns and falls back to the embedded one.
  util::WriteFileAtomic(installed, "{not json");
  auto garbage = cmt::RunBinary("minimums show", env);
  EXPECT_EQ(garbage.code, 0);
  EXPECT_NE(garbage.out.find("the installed minimum table is unusable"), std::string::npos) << garbage.out;
}

TEST(MinimumsUpdate, FromAUrlOverHttp) {
  fs::path d = cmt::ScratchDir("minimums-url");
  std::string env = "HOME=" + d.string();
  std::string body = TableGenerated(DaysAgo(2));
  testing_server::RecordingServer server(
      {fmt::format("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{}", body.size(),
                   body),
       "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"});
  std::string url = fmt::format("http://user:secret@127.0.0.1:{}/minimum-versions.json", server.port());
  auto r = cmt::RunBinary("minimums update " + url, env);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("secret"), std::string::npos) << "URL credentials are not printed: " << r.out;
  EXPECT_EQ(*util::ReadLocalFile(d / ".clustermax" / "minimum-versions.json"), body);
  auto missing = cmt::RunBinary("minimums update --force " + url, env);
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.out.find("HTTP 404"), std::string::npos) << missing.out;
  ASSERT_EQ(server.Requests().size(), 2u);
  EXPECT_EQ(server.Requests()[0].rfind("GET /minimum-versions.json HTTP/1.1", 0), 0u) << server.Requests()[0];
  auto ftp = cmt::RunBinary("minimums update ftp://127.0.0.1/x.json", env);
  EXPECT_EQ(ftp.code, 1);
}
