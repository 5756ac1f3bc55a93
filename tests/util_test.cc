#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

#include "util/progress.h"

#include "util/compress.h"
#include "util/line_frames.h"
#include "util/work_queue.h"
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

// A cut string stays valid UTF-8: the cut moves back to the start of a character.
TEST(Strings, EllipsizeNeverSplitsACharacter) {
  EXPECT_EQ(Ellipsize("short", 10), "short");
  EXPECT_EQ(Ellipsize("abcdefghij", 8), "abcde...");
  std::string degrees =
      "20\xc2\xb0"
      "C and more";                           // 20°C: the degree sign is two bytes at [2, 4)
  EXPECT_EQ(Ellipsize(degrees, 6), "20...");  // a cut at 3 would split it
  EXPECT_TRUE(IsValidUtf8(Ellipsize(degrees, 6)));
  for (size_t max = 0; max < degrees.size(); ++max) EXPECT_TRUE(IsValidUtf8(Ellipsize(degrees, max))) << max;
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

// A launcher that splits a long line in two (the second piece labelled, without the marker): the
// part is rejoined; a part left short is an error naming it, never a shortened document.
TEST(LineFrames, SplitPartsAreRejoinedOrNamed) {
  std::string a(2500, 'a');
  a[1234] = '"';
  auto la = clustermax::util::FrameLines("CM-X", "n1", a, 1000);
  std::string first = la[1].substr(0, 300), rest = la[1].substr(300);
  std::string text = "0: " + la[0] + "\n1: other task\n0: " + first + "\n0: " + rest + "\n0: " + la[2] + "\n";
  std::map<std::string, std::string> errors;
  auto docs = clustermax::util::UnframeLines("CM-X", text, errors, 1000);
  EXPECT_TRUE(errors.empty()) << errors["n1"];
  EXPECT_EQ(docs["n1"], a);
  errors.clear();
  auto cut =
      clustermax::util::UnframeLines("CM-X", "0: " + la[0] + "\n0: " + first + "\n0: " + la[2] + "\n", errors, 1000);
  EXPECT_EQ(cut.count("n1"), 0u);
  EXPECT_NE(errors["n1"].find("part 2 of 3 arrived cut short"), std::string::npos) << errors["n1"];
}

TEST(LineFrames, RoundTripThroughInterleavedLabelledOutput) {
  std::string a(2500, 'a'), b = "{\"k\": \"v w\"}";
  auto la = clustermax::util::FrameLines("CM-X", "n1", a, 1000),
       lb = clustermax::util::FrameLines("CM-X", "n2", b, 1000);
  ASSERT_EQ(la.size(), 3u);
  // srun --label prefixes "0: "; other output and other markers are ignored.
  std::string text = "noise\n0: " + la[2] + "\n1: " + lb[0] + "\nCM-Y n9 0 1 x\n0: " + la[0] + "\r\n0: " + la[1] + "\n";
  std::map<std::string, std::string> errors;
  auto docs = clustermax::util::UnframeLines("CM-X", text, errors, 1000);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(docs["n1"], a);
  EXPECT_EQ(docs["n2"], b);
  EXPECT_EQ(docs.count("n9"), 0u);
  // A missing part, and parts that disagree on the count: named, never half a document.
  errors.clear();
  auto partial = clustermax::util::UnframeLines("CM-X", la[0] + "\n" + la[2] + "\n" + "CM-X n2 0 2 {\nCM-X n2 1 3 }\n",
                                                errors, 1000);
  EXPECT_TRUE(partial.empty());
  EXPECT_NE(errors["n1"].find("incomplete (2 of 3 parts arrived)"), std::string::npos) << errors["n1"];
  EXPECT_NE(errors["n2"].find("disagree"), std::string::npos);
}

// Progress: on a terminal one line rewritten in place with the fraction, the time spent and an
// estimate; elsewhere plain phase lines and nothing else.
namespace {
std::string Captured(bool tty, const std::function<void(clustermax::util::Progress&)>& use) {
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = ::open_memstream(&buf, &len);
  {
    clustermax::util::Progress p(f, tty);
    use(p);
  }
  std::fclose(f);
  std::string out(buf, len);
  std::free(buf);
  return out;
}
}  // namespace

TEST(Progress, ATerminalGetsOneLineWithAnEstimateALogGetsPlainLines) {
  auto work = [](clustermax::util::Progress& p) {
    p.Text("PUT 64M objects, 8 streams");
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    p.Fraction(0.25);
    p.Fraction(0.26);  // within a quarter second: not drawn
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    p.Count(3, 10, "nodes answered");
  };
  std::string tty = Captured(true, work);
  EXPECT_NE(tty.find("\r\x1b[K  PUT 64M objects, 8 streams"), std::string::npos) << tty;
  EXPECT_NE(tty.find("3 of 10 nodes answered"), std::string::npos) << tty;
  EXPECT_NE(tty.find("30 %"), std::string::npos) << tty;
  EXPECT_NE(tty.find("25 %, 0:00 elapsed, ETA 0:0"), std::string::npos) << tty;
  EXPECT_EQ(tty.find("26 %"), std::string::npos) << "redrawn at most four times a second: " << tty;
  EXPECT_EQ(tty.find('\n'), std::string::npos) << "a terminal line is rewritten, never scrolled";
  EXPECT_EQ(tty.substr(tty.size() - 4), "\r\x1b[K") << "the line is cleared at the end";
  std::string log = Captured(false, work);
  EXPECT_EQ(log, "  PUT 64M objects, 8 streams\n");  // no estimates, no control characters in a log
  EXPECT_EQ(clustermax::util::FormatDuration(65), "1:05");
  EXPECT_EQ(clustermax::util::FormatDuration(3723), "1:02:03");
}

// The stream form: fed in pieces of any size, each document leaves the moment its last part
// arrives and nothing of it is held after; a key is delivered once; the bytes held are bounded.
TEST(LineFrames, AStreamDeliversEachDocumentWhenWholeAndHoldsNoMore) {
  std::string a(2500, 'a'), b(1700, 'b');
  auto la = clustermax::util::FrameLines("CM-X", "n1", a, 1000),
       lb = clustermax::util::FrameLines("CM-X", "n2", b, 1000);
  std::string text = "0: " + la[0] + "\n1: " + lb[0] + "\n0: " + la[1] + "\n1: " + lb[1] + "\n0: " + la[2] + "\n";
  size_t n2_done_at = text.find(lb[1]) + lb[1].size() + 1;  // after its newline
  for (size_t piece : {1u, 3u, 999u, 100000u}) {
    std::vector<std::pair<std::string, size_t>> got;  // key, bytes fed when delivered
    size_t fed = 0;
    std::map<std::string, std::string> docs;
    clustermax::util::FrameReader reader(
        "CM-X",
        [&](const std::string& key, std::string doc) {
          got.emplace_back(key, fed);
          docs[key] = std::move(doc);
        },
        1000);
    for (size_t at = 0; at < text.size(); at += piece) {
      std::string_view p = std::string_view(text).substr(at, piece);
      fed = at + p.size();
      reader.Feed(p);
    }
    reader.Finish();
    ASSERT_EQ(got.size(), 2u) << piece;
    EXPECT_EQ(got[0].first, "n2");
    // n2 left with the piece that completed its last line, not later.
    EXPECT_GE(got[0].second, n2_done_at);
    EXPECT_LT(got[0].second, n2_done_at + piece);
    EXPECT_EQ(docs["n1"], a);
    EXPECT_EQ(docs["n2"], b);
    EXPECT_EQ(reader.pending_bytes(), 0u);
    EXPECT_TRUE(reader.errors().empty());
  }
  // A key already delivered is not delivered again; an unterminated last line is read at Finish.
  int calls = 0;
  clustermax::util::FrameReader again(
      "CM-X", [&](const std::string&, std::string) { ++calls; }, 1000);
  again.Feed(lb[0] + "\n" + lb[1] + "\n" + lb[0] + "\n" + lb[1] + "\nCM-X n3 0 1 {}");
  EXPECT_EQ(calls, 1);
  again.Finish();
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(again.delivered(), 2u);
  // More than max_pending bytes of unfinished documents: the key growing past it is refused, its
  // parts dropped, and the stream read on.
  std::string big(10000, 'c');
  auto lc = clustermax::util::FrameLines("CM-X", "n4", big, 1000);
  std::map<std::string, std::string> kept;
  clustermax::util::FrameReader bounded(
      "CM-X", [&](const std::string& k, std::string d) { kept[k] = std::move(d); }, 1000, 4000);
  for (size_t i = 0; i + 1 < lc.size(); ++i) bounded.Feed(lc[i] + "\n");
  EXPECT_LE(bounded.pending_bytes(), 4000u);
  bounded.Feed(lb[0] + "\n" + lb[1] + "\n" + lc.back() + "\n");
  bounded.Finish();
  EXPECT_EQ(kept.count("n4"), 0u);
  EXPECT_EQ(kept["n2"], b);
  EXPECT_NE(bounded.errors().at("n4").find("more than 4000 bytes"), std::string::npos);
  // A part before the last longer than a part: refused, never a document with extra bytes.
  clustermax::util::FrameReader longer(
      "CM-X", [&](const std::string& k, std::string) { ADD_FAILURE() << k; }, 1000);
  longer.Feed("CM-X n6 0 2 " + std::string(1001, 'y') + "\nCM-X n6 1 2 z\n");
  longer.Finish();
  EXPECT_NE(longer.errors().at("n6").find("longer than a part"), std::string::npos);
  // A line of a megabyte without a newline is cut at 64 KiB, not held whole.
  clustermax::util::FrameReader huge(
      "CM-X", [&](const std::string&, std::string) {}, 1000);
  huge.Feed("CM-X n5 0 2 ");
  for (int i = 0; i < 1024; ++i) huge.Feed(std::string(1024, 'x'));
  EXPECT_EQ(huge.pending_bytes(), 0u);
  huge.Feed("\n");
  EXPECT_EQ(huge.pending_bytes(), 0u);
  huge.Finish();
  EXPECT_NE(huge.errors().at("n5").find("part 1 of 2 is longer than a part (65524 of 1000 bytes)"), std::string::npos)
      << huge.errors().at("n5");
}

TEST(WorkQueue, RunsEveryJobBoundedAndRethrowsTheFirstError) {
  for (unsigned threads : {0u, 1u, 3u}) {
    std::atomic<int> done{0}, running{0}, most{0};
    clustermax::util::WorkQueue q(threads, 2);
    for (int i = 0; i < 200; ++i) {
      q.Push([&] {
        int now = ++running;
        int m = most.load();
        while (now > m && !most.compare_exchange_weak(m, now)) {
        }
        ++done;
        --running;
      });
    }
    q.Finish();
    EXPECT_EQ(done.load(), 200) << threads;
    EXPECT_LE(most.load(), static_cast<int>(std::max(1u, threads)));
  }
  clustermax::util::WorkQueue q(2, 2);
  std::atomic<int> after{0};
  q.Push([] { throw std::runtime_error("job 1 failed"); });
  for (int i = 0; i < 50; ++i) q.Push([&] { ++after; });
  try {
    q.Finish();
    ADD_FAILURE() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "job 1 failed");
  }
}

// The fan-out's wire form: deflate + base64 round-trips any bytes; corrupt, cut or trailing input
// and a document that inflates past its bound are refused with the reason, never half-read.
TEST(Compress, RoundTripsAndRefusesWhatIsNotAWholeStream) {
  using namespace clustermax::util;
  std::string json = "{\"files\": {\"/proc/cpuinfo\": \"" + std::string(100000, 'x') + "\"}}";
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  for (const std::string& doc : {std::string(), std::string("a"), std::string("ab"), std::string("abc"), json, all}) {
    std::string wire = Base64Encode(Deflate(doc));
    EXPECT_EQ(wire.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/="),
              std::string::npos);
    auto raw = Base64Decode(wire);
    ASSERT_TRUE(raw);
    EXPECT_EQ(Inflate(*raw, 1 << 20), doc);
  }
  EXPECT_LT(Base64Encode(Deflate(json)).size(), json.size() / 20);
  EXPECT_EQ(Base64Encode("foob"), "Zm9vYg==");
  EXPECT_EQ(*Base64Decode("Zm9vYmE="), "fooba");
  EXPECT_FALSE(Base64Decode("Zm9vYg="));     // length
  EXPECT_FALSE(Base64Decode("Zm9v\nYg=="));  // a newline
  EXPECT_FALSE(Base64Decode("Zm=vYg=="));    // padding inside
  EXPECT_FALSE(Base64Decode("Zg=a"));        // "x=y" is not padding
  std::string z = Deflate(json);
  try {
    Inflate(z.substr(0, z.size() / 2), 1 << 20);
    ADD_FAILURE() << "a cut stream was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cut short"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Inflate(z + "x", 1 << 20), std::runtime_error);
  EXPECT_THROW(Inflate("not zlib at all", 1 << 20), std::runtime_error);
  // 64 MiB of zeros deflate to about 64 KiB: refused at a 1 MiB bound, without inflating it all.
  std::string bomb = Deflate(std::string(64 << 20, '\0'));
  EXPECT_LT(bomb.size(), 100000u);
  try {
    Inflate(bomb, 1 << 20);
    ADD_FAILURE() << "inflated past the bound";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("past 1048576 bytes"), std::string::npos) << e.what();
  }
}
