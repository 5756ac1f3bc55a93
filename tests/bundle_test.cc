#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "host/bundle.h"
#include "host/local_host.h"
#include "testutil.h"
#include "util/files.h"

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
  json edges =
      ParseJson("[9223372036854775807, -9223372036854775808, 9223372036854775808, 18446744073709551615, 0, -0, 7]");
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
  EXPECT_EQ(
      dump(
          "[0.30000000000000004, 1.7976931348623157e308, 3.141592653589793238462643383279, 1e-5, 100000000000000000000.0]"),
      "[0.30000000000000004,1.7976931348623157e+308,3.141592653589793,1e-05,1e+20]");
  json d = ParseJson("[1.5, -2.0]");
  EXPECT_TRUE(d[0].is_number_float() && d[1].is_number_float());
  EXPECT_EQ(dump(R"({"a":1,"a":2,"b":{"c":[]},"a":3})"), R"({"a":3,"b":{"c":[]}})");
  EXPECT_EQ(dump(R"(["\u00e9\ud83d\ude00\n\t\"\\\/\u0000x", "\u00e9"])"),
            R"(["\u00e9\ud83d\ude00\n\t\"\\/\u0000x","\u00e9"])");
  EXPECT_EQ(ParseJson(R"(["\u0000"])")[0].get<std::string>(), std::string(1, '\0'));
  EXPECT_EQ(dump(" \t\r\n[true,false,null] \n"), "[true,false,null]");
  EXPECT_EQ(dump("\"\xc3\xa9\""), R"("\u00e9")");
  for (const std::string& bad : std::vector<std::string>{"[18446744073709551616]",
                                                         "[-9223372036854775809]",
                                                         "[123456789012345678901234567890]",
                                                         "[1e400]",
                                                         "[-1e400]",
                                                         R"(["\ud800"])",
                                                         R"(["\udc00"])",
                                                         R"(["\ud800\u0041"])",
                                                         "[\"\xff\"]",
                                                         "{\"\xc3\x28\":1}",
                                                         "[\"ok\"] \xff",
                                                         "\xef\xbb\xbf{\"a\":1}",
                                                         "{\"a\":1} x",
                                                         "[1,]",
                                                         "[01]",
                                                         "[1.]",
                                                         "[-]",
                                                         "[\"a\tb\"]",
                                                         "",
                                                         "   ",
                                                         "[1]" + std::string(1, '\0'),
                                                         "[1]" + std::string(1, '\0') + "x",
                                                         "[NaN]",
                                                         "[Infinity]",
                                                         "{'a':1}",
                                                         "[\"\xed\xa0\x80\"]",
                                                         "[\"\xc0\x80\"]",
                                                         "[1e]",
                                                         "[.5]",
                                                         "[+1]",
                                                         "{\"a\"}",
                                                         "[1 2]"}) {
    try {
      json j = ParseJson(bad);
      ADD_FAILURE() << "accepted: " << ::testing::PrintToString(bad) << " as "
                    << j.dump(-1, ' ', true, json::error_handler_t::replace);
    } catch (const BundleError& e) {
      EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
    }
  }
}

// Bundle::Parse reads a bundle straight into its parts: every part typed as it is read. A mistyped
// value is refused naming where it was; keys it does not know (a later version's) are skipped with
// whatever they hold; the last of duplicate keys wins; texts stored as hex come back as bytes.
TEST(Bundle, ParseChecksEveryPartAndSkipsWhatItDoesNotKnow) {
  using nlohmann::json;
  json base =
      ParseJson(*clustermax::util::ReadLocalFile(clustermax::testing::Fixture("bundles/debian12-container-cpu.json")));
  // The fixture as read and written back is the fixture (every part kept; it predates two
  // manifest fields, written empty).
  for (const char* k : {"role", "partial"}) {
    if (!base["manifest"].contains(k)) base["manifest"][k] = "";
  }
  json back = Bundle::Parse(base.dump()).ToJson();
  EXPECT_TRUE(back == base) << json::diff(base, back).dump().substr(0, 2000);

  auto refused = [&](json b, const std::string& expect) {
    try {
      Bundle::Parse(b.dump());
      ADD_FAILURE() << "accepted a bundle that should mention: " << expect;
    } catch (const BundleError& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  };
  auto with = [&](const std::function<void(json&)>& change) {
    json b = base;
    change(b);
    return b;
  };
  refused(with([](json& b) { b["files"] = json::array(); }), "files is not an object");
  refused(with([](json& b) { b["commands"] = json::object(); }), "commands is not an array");
  refused(with([](json& b) { b["files"]["/etc/os-release"] = "text"; }),
          "files entry /etc/os-release is not an object");
  refused(with([](json& b) { b["files"]["/etc/os-release"]["content"] = 7; }),
          "content of files entry /etc/os-release is not a string");
  refused(with([](json& b) { b["files"]["/etc/os-release"]["truncated"] = "yes"; }),
          "truncated of files entry /etc/os-release is not true or false");
  refused(with([](json& b) { b["files"]["/etc/os-release"].erase("status"); }),
          "files entry /etc/os-release has no status");
  refused(with([](json& b) {
            b["files"]["/etc/os-release"]["content"] = json::object({{"a", 1}});
          }),
          "content of files entry /etc/os-release is not a scalar");
  refused(with([](json& b) {
            b["files"]["/x"] = {{"status", "ok"}, {"content", "zz"}, {"content_encoding", "hex"}};
          }),
          "content of files entry /x is not valid hex");
  refused(with([](json& b) { b["commands"][0]["exit_code"] = "0"; }), "exit_code of commands entry 0 is not a number");
  refused(with([](json& b) {
            b["commands"][0]["argv"] = json::array({"ls", 1});
          }),
          "argv of commands entry 0 holds a non-string");
  refused(with([](json& b) { b["commands"][0].erase("argv"); }), "commands entry 0 has no argv");
  refused(with([](json& b) {
            b["dirs"] = {{"/d", {{"status", "ok"}, {"entries", json::array({json::array({"a"})})}}}};
          }),
          "a directory entry of dirs entry /d is not a [name, type] pair");
  refused(with([](json& b) {
            b["stats"] = {{"/s", {{"status", "ok"}, {"mode", "0755"}}}};
          }),
          "mode of stats entry /s is not a number");
  refused(with([](json& b) { b.erase("env"); }), "no env part");
  refused(with([](json& b) { b.erase("manifest"); }), "the manifest is not an object");
  refused(with([](json& b) { b["format_version"] = 2; }), "unsupported bundle format_version 2");
  refused(with([](json& b) { b.erase("format"); }), "missing format marker");
  refused(json::array({1, 2}), "not a bundle object");

  // Unknown keys at every level, with nested values, are skipped; the rest is read as usual.
  json future = with([](json& b) {
    b["future_part"] = {{"a", json::array({json::object({{"b", json::array({1, 2, json::object()})}})})}};
    b["files"]["/etc/os-release"]["checksum"] = {{"sha256", "00"}, {"parts", json::array({1, 2})}};
    b["commands"][0]["cgroup"] = json::array({json::array({"x"})});
    b["dirs"] = {
        {"/d",
         {{"status", "ok"},
          {"entries", json::array({json::array({"a", "f", json::object({{"inode", 5}})}), json::array({"b", "d"})})}}}};
    b["which"]["ghost"] = json::object({{"path", "/x"}});  // not a string: not found
    b["env"]["ODD"] = 5;                                   // not a string: unset
  });
  Bundle b = Bundle::Parse(future.dump());
  EXPECT_EQ(b.File("/etc/os-release")->content, base["files"]["/etc/os-release"]["content"].get<std::string>());
  ASSERT_TRUE(b.Dir("/d"));
  ASSERT_EQ(b.Dir("/d")->entries.size(), 2u);
  EXPECT_EQ(b.Dir("/d")->entries[0].name, "a");
  EXPECT_EQ(b.Dir("/d")->entries[1].type, 'd');
  EXPECT_EQ(b.WhichOf("ghost")->status, IoStatus::kNotFound);
  ASSERT_TRUE(b.Env("ODD"));
  EXPECT_FALSE(b.Env("ODD")->has_value());

  // The last duplicate wins, for an entry and for a whole part; hex text comes back as bytes.
  std::string text = base.dump();
  text.insert(
      text.size() - 1,
      R"(,"files":{"/a":{"status":"ok","content":"one"},"/a":{"status":"ok","content":"00ff","content_encoding":"hex"}})");
  Bundle d = Bundle::Parse(text);
  ASSERT_TRUE(d.File("/a"));
  EXPECT_EQ(d.File("/a")->content, std::string("\0\xff", 2));
  EXPECT_FALSE(d.File("/etc/os-release")) << "the second files part replaced the first";

  // JSON-level refusals stay JSON-level: invalid UTF-8 inside a file's content, nesting too deep
  // inside a part nobody reads.
  std::string bad = base.dump();
  bad.insert(bad.find("\"content\":\"") + 11, "\xff");
  EXPECT_THROW(Bundle::Parse(bad), BundleError);
  std::string deep = base.dump();
  deep.insert(deep.size() - 1, ",\"future\":" + std::string(300, '[') + std::string(300, ']'));
  try {
    Bundle::Parse(deep);
    ADD_FAILURE() << "deep input accepted";
  } catch (const BundleError& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper than"), std::string::npos) << e.what();
  }
}
