#include <gtest/gtest.h>

#include "util/strings.h"
#include "util/time.h"

using namespace clustermax::util;

TEST(Strings, TrimSplit) {
  EXPECT_EQ(Trim("  a b \n"), "a b");
  EXPECT_EQ(Split("a::b", ':').size(), 2u);
  EXPECT_EQ(Split("a::b", ':', true).size(), 3u);
  EXPECT_EQ(SplitLines("x\r\ny\n").size(), 2u);
  EXPECT_EQ(SplitWhitespace(" a\tb  c ").size(), 3u);
}

TEST(Strings, Numbers) {
  EXPECT_EQ(ParseInt(" 42\n"), 42);
  EXPECT_FALSE(ParseInt("4x"));
  EXPECT_EQ(ParseHexOrDec("0x10de\n"), 0x10deu);
  EXPECT_FALSE(ParseHexOrDec("0x"));
}

TEST(Strings, HexRoundTripAndUtf8) {
  std::string bin("\x00\x01\xff\x10", 4);
  EXPECT_FALSE(IsValidUtf8(bin));
  EXPECT_EQ(HexDecode(HexEncode(bin)), bin);
  EXPECT_TRUE(IsValidUtf8("plain text °C"));
  EXPECT_FALSE(IsValidUtf8("\xc3"));
  EXPECT_FALSE(HexDecode("abc"));
}

TEST(Strings, ShellQuote) {
  EXPECT_EQ(ShellQuote("nvidia-smi"), "nvidia-smi");
  EXPECT_EQ(ShellQuote("{{.Server.Version}}"), "'{{.Server.Version}}'");
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(Time, Rfc3339RoundTrip) {
  auto t = ParseRfc3339("2026-09-25T04:03:23Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(FormatRfc3339(*t), "2026-09-25T04:03:23Z");
  EXPECT_EQ(FormatCompact(*t), "20260925T040323Z");
  EXPECT_FALSE(ParseRfc3339("yesterday"));
  EXPECT_NEAR(DaysBetween(*t, *ParseRfc3339("2026-10-05T04:03:23Z")), 10.0, 1e-9);
}
