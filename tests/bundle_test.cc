#include <gtest/gtest.h>

#include <filesystem>

#include "host/bundle.h"
#include "host/local_host.h"
#include "testutil.h"

using namespace clustermax::host;
namespace fs = std::filesystem;

TEST(Bundle, RecordThenReplayAnswersIdentically) {
  LocalHost live;
  Bundle b;
  RecordingHost rec(live, b);
  auto f = rec.ReadFile("/proc/sys/kernel/osrelease", 4096);
  auto missing = rec.ReadFile("/no/such/file", 4096);
  auto d = rec.ListDir("/proc/sys/kernel");
  auto c = rec.Run({{"sh", "-c", "printf 'a\\nb'; printf err >&2; exit 4"}});
  auto w = rec.Which("sh");
  auto e = rec.GetEnv("CLUSTERMAX_SURELY_UNSET_VAR");
  fs::path p = fs::temp_directory_path() / "cm-bundle-test.json";
  b.Save(p);
  Bundle loaded = Bundle::Load(p);
  ReplayHost rep(loaded);
  EXPECT_EQ(rep.ReadFile("/proc/sys/kernel/osrelease", 4096).content, f.content);
  EXPECT_EQ(rep.ReadFile("/no/such/file", 4096).status, missing.status);
  EXPECT_EQ(rep.ListDir("/proc/sys/kernel").entries.size(), d.entries.size());
  auto rc = rep.Run({{"sh", "-c", "printf 'a\\nb'; printf err >&2; exit 4"}});
  EXPECT_EQ(rc.out, c.out);
  EXPECT_EQ(rc.err, "err");
  EXPECT_EQ(rc.exit_code, 4);
  EXPECT_EQ(rep.Which("sh").path, w.path);
  EXPECT_EQ(rep.GetEnv("CLUSTERMAX_SURELY_UNSET_VAR"), e);
  EXPECT_TRUE(rep.misses().empty());
  fs::remove(p);
}

TEST(Bundle, ReplayNeverFallsThroughToTheMachine) {
  Bundle b;
  ReplayHost rep(b);
  auto r = rep.ReadFile("/etc/os-release", 4096);
  EXPECT_EQ(r.status, IoStatus::kNotRecorded);
  EXPECT_TRUE(r.content.empty());
  EXPECT_EQ(rep.Run({{"uname", "-r"}}).status, IoStatus::kNotRecorded);
  EXPECT_EQ(rep.misses().size(), 2u);
  EXPECT_NE(rep.misses()[1].find("uname -r"), std::string::npos);
}

TEST(Bundle, BinaryContentRoundTripsAsHex) {
  Bundle b;
  std::string config("\x10\xde\x00\x23\xff", 5);
  b.PutFile("/sys/bus/pci/devices/0000:19:00.0/config", {IoStatus::kOk, config, false, ""});
  auto j = b.ToJson();
  EXPECT_EQ(j["files"]["/sys/bus/pci/devices/0000:19:00.0/config"]["content_encoding"], "hex");
  Bundle back = Bundle::FromJson(j);
  EXPECT_EQ(back.File("/sys/bus/pci/devices/0000:19:00.0/config")->content, config);
}

TEST(Bundle, CorruptBundlesAreRefusedWithAClearError) {
  fs::path p = fs::temp_directory_path() / "cm-bad-bundle.json";
  clustermax::util::WriteFileAtomic(p, "{\"format\": \"clustermax-evidence-bundle\", \"format_version\": 1");
  try {
    Bundle::Load(p);
    FAIL() << "expected BundleError";
  } catch (const BundleError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos);
  }
  clustermax::util::WriteFileAtomic(p, "{\"something\": 1}");
  EXPECT_THROW(Bundle::Load(p), BundleError);
  fs::remove(p);
}

TEST(Bundle, CommittedFixtureLoads) {
  Bundle b = Bundle::Load(clustermax::testing::Fixture("bundles/debian12-container-cpu.json"));
  EXPECT_EQ(b.manifest.hostname, "vm");
  EXPECT_TRUE(b.File("/etc/os-release").has_value());
}
