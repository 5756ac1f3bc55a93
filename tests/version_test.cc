#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "util/version.h"

using namespace clustermax::util;

TEST(Version, Numeric) {
  auto v = ParseNumericVersion("1:580.95.05-0ubuntu1");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->parts[0], 580);
  EXPECT_EQ(v->parts[2], 5);
  EXPECT_EQ(*ParseNumericVersion("13.1"), *ParseNumericVersion("13.1.0.0"));
  EXPECT_LT(*ParseNumericVersion("13.0"), *ParseNumericVersion("13.1"));
  EXPECT_FALSE(ParseNumericVersion("none"));
}

TEST(Version, Prerelease) {
  auto p = [](const char* s) { return *ParsePrereleaseVersion(s); };
  EXPECT_LT(ComparePrerelease(p("1.5.0-rc.2"), p("1.5.0-rc.3")), 0);
  EXPECT_LT(ComparePrerelease(p("1.5.0-rc.3"), p("1.5.0")), 0);
  EXPECT_LT(ComparePrerelease(p("1.5.0-rc3"), p("1.5.0")), 0);
  EXPECT_LT(ComparePrerelease(p("29.7.0-rc.1"), p("29.7.0")), 0);
  EXPECT_LT(ComparePrerelease(p("1.0.0-rc8.0.20190930145003-cad42f6e0932"), p("1.0.0")), 0);
  EXPECT_LT(ComparePrerelease(p("1.2.3-0.20200122160610-2fc03cc11c77"), p("1.2.3")), 0);
  EXPECT_EQ(ComparePrerelease(p("1.1.12-1"), p("1.1.12")), 0);  // Debian revision is not a pre-release
}

// dpkg's own ordering is the oracle: every pair is checked against `dpkg --compare-versions`.
TEST(Version, DebianOrderingMatchesDpkg) {
  if (std::system("command -v dpkg >/dev/null 2>&1") != 0) GTEST_SKIP() << "dpkg not installed";
  std::vector<std::pair<std::string, std::string>> pairs = {{"1:8.2.2+ds-0ubuntu1.4", "1:8.2.2+ds-0ubuntu1.10"},
                                                            {"1.0~rc1", "1.0"},
                                                            {"1.0", "1.0-1"},
                                                            {"2:1.0", "1:9.9"},
                                                            {"1.0a", "1.0+"},
                                                            {"6.8.0-124.124", "6.8.0-87.88"},
                                                            {"1.2.3", "1.2.3"},
                                                            {"0.9~", "0.9"},
                                                            {"1.0.0", "1.0"},
                                                            {"6.8.0-124-generic", "6.8.0-137-generic"},
                                                            {"1.0-1ubuntu1", "1.0-1"}};
  for (const auto& [a, b] : pairs) {
    int ours = CompareDebianVersions(a, b);
    std::string lt = "dpkg --compare-versions '" + a + "' lt '" + b + "'";
    std::string eq = "dpkg --compare-versions '" + a + "' eq '" + b + "'";
    int expected = std::system(lt.c_str()) == 0 ? -1 : (std::system(eq.c_str()) == 0 ? 0 : 1);
    EXPECT_EQ(ours, expected) << a << " vs " << b;
  }
}

TEST(Version, KernelAbi) {
  auto k = ParseKernelAbi("6.8.0-124-generic");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->line, "6.8.0");
  EXPECT_EQ(k->abi, 124);
  EXPECT_EQ(ParseKernelAbi("6.8.0-124.124")->abi, 124);
  EXPECT_FALSE(ParseKernelAbi("6.18.44"));
}
