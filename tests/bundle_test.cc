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

// host::ParseJson's exact behaviour, pinned when simdjson was replaced by RapidJSON (the expected
// values were produced by the simdjson implementation): integers that fit int64 are signed, larger
// ones up to uint64 unsigned, anything wider is refused (never rounded to a double); doubles are
// correctly rounded; the last duplicate key wins; escapes decode; invalid UTF-8, lone surrogates,
// a BOM, trailing content and malformed numbers are errors.
TEST(Bundle, ParseJsonKeepsNumbersKeysEscapesAndRefusalsExactly) {
  using nlohmann::json;
  auto dump = [](std::string_view text) { return ParseJson(text).dump(-1, ' ', true); };
  json edges = ParseJson("[9223372036854775807, -9223372036854775808, 9223372036854775808, 18446744073709551615, 0, -0, 7]");
  EXPECT_EQ(edges.dump(), "[9223372036854775807,-9223372036854775808,9223372036854775808,18446744073709551615,0,0,7]");
  EXPECT_TRUE(edges[0].is_number_integer() && !edges[0].is_number_unsigned());
  EXPECT_EQ(edges[0].get<int64_t>(), INT64_MAX);
  EXPECT_EQ(edges[1].get<int64_t>(), INT64_MIN);
  EXPECT_TRUE(edges[2].is_number_unsigned());
  EXPECT_EQ(edges[2].get<uint64_t>(), uint64_t{9223372036854775808ull});
  EXPECT_TRUE(edges[3].is_number_unsigned());
  EXPECT_EQ(edges[3].get<uint64_t>(), UINT64_MAX);
  EXPECT_TRUE(edges[4].is_number_integer() && !edges[4].is_number_unsigned());
  EXPECT_TRUE(edges[5].is_number_integer() && !edges[5].is_number_unsigned());  // -0 is the integer 0
  EXPECT_TRUE(edges[6].is_number_integer() && !edges[6].is_number_unsigned());
  EXPECT_EQ(dump("[0, -0, 1.0, -0.0, 1e2, 1E-2, 0.1, 2.2250738585072014e-308, 4.9e-324, 1e-400, -1e-400, 1e308]"),
            "[0,0,1.0,-0.0,100.0,0.01,0.1,2.2250738585072014e-308,5e-324,0.0,-0.0,1e+308]");
  EXPECT_EQ(dump("[0.30000000000000004, 1.7976931348623157e308, 3.141592653589793238462643383279, 1e-5, 100000000000000000000.0]"),
            "[0.30000000000000004,1.7976931348623157e+308,3.141592653589793,1e-05,1e+20]");
  json d = ParseJson("[1.5, -2.0]");
  EXPECT_TRUE(d[0].is_number_float() && d[1].is_number_float());
  EXPECT_EQ(dump(R"({"a":1,"a":2,"b":{"c":[]},"a":3})"), R"({"a":3,"b":{"c":[]}})");
  EXPECT_EQ(dump(R"(["\u00e9\ud83d\ude00\n\t\"\\\/\u0000x", "\u00e9"])"), R"(["\u00e9\ud83d\ude00\n\t\"\\/\u0000x","\u00e9"])");
  EXPECT_EQ(ParseJson(R"(["\u0000"])")[0].get<std::string>(), std::string(1, '\0'));
  EXPECT_EQ(dump(" \t\r\n[true,false,null] \n"), "[true,false,null]");
  EXPECT_EQ(dump("\"\xc3\xa9\""), R"("\u00e9")");
  for (const std::string& bad : std::vector<std::string>{"[18446744073709551616]", "[-9223372036854775809]", "[123456789012345678901234567890]", "[1e400]",
                          "[-1e400]", R"(["\ud800"])", R"(["\udc00"])", R"(["\ud800\u0041"])", "[\"\xff\"]", "{\"\xc3\x28\":1}",
                          "[\"ok\"] \xff", "\xef\xbb\xbf{\"a\":1}", "{\"a\":1} x", "[1,]", "[01]", "[1.]", "[-]", "[\"a\tb\"]", "",
                          "   ", "[1]" + std::string(1, '\0'), "[1]" + std::string(1, '\0') + "x", "[NaN]", "[Infinity]", "{'a':1}",
                          "[\"\xed\xa0\x80\"]", "[\"\xc0\x80\"]", "[1e]", "[.5]", "[+1]", "{\"a\"}", "[1 2]"}) {
    try {
      json j = ParseJson(bad);
      ADD_FAILURE() << "accepted: " << ::testing::PrintToString(bad) << " as " << j.dump(-1, ' ', true, json::error_handler_t::replace);
    } catch (const BundleError& e) {
      EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
    }
  }
}
