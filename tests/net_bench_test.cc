// bench net's TCP backend with real sockets on loopback, ranks as threads of this process (the
// Slurm launch itself is tested on the CI cluster in slurm_test.cc), and its pure parts: the pair
// schedule, the straggler analysis and the grades.
#include <arpa/inet.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/grade.h"
#include "bench/net_bench.h"
#include "bench/net_comm.h"
#include "bench/net_interop.h"
#include "bench/pmix.h"
#include "testutil.h"
#include "util/strings.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace clustermax::bench::net;

namespace {

fs::path FreshDir(const std::string& name) {
  fs::path base = fs::temp_directory_path() / ("cmx-net-test-" + std::to_string(::getpid()));
  fs::create_directories(base);
  fs::path d = base / name;
  fs::remove_all(d);
  return d;
}

// Runs `body` on `nodes.size()` ranks (threads), rank r on node nodes[r], all in one group.
// Returns the exceptions' messages by rank ("" when none).
std::vector<std::string> OnRanks(const std::vector<std::string>& nodes, CommOptions o,
                                 const std::function<void(Comm&)>& body) {
  int n = static_cast<int>(nodes.size());
  std::vector<std::string> errors(n);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto c = Comm::Connect(RankInfo{r, n, 0, nodes[r]}, o);
        body(*c);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

}  // namespace

TEST(NetComm, EveryCollectiveDeliversTheRightDataOnOneToFiveRanks) {
  // Sizes that do not divide evenly, a size past the 1 MiB pipeline piece, both placements.
  json job = {{"collectives", Collectives()}, {"iters", 1}, {"warmup", 0}, {"check", true}, {"root", 1}};
  job["sizes"] = std::vector<uint64_t>{4, 60, 4004, (1u << 20) + 4 * 37};
  for (int n = 1; n <= 5; ++n) {
    std::vector<std::string> nodes;
    for (int r = 0; r < n; ++r) nodes.push_back(r < 2 ? "a" : "b");  // loopback and published peers
    CommOptions o;
    o.rendezvous = FreshDir("coll-" + std::to_string(n));
    o.timeout_s = 30;
    PrepareRendezvous(o.rendezvous);
    json result;
    auto errors = OnRanks(nodes, o, [&](Comm& c) {
      json r = RunCollectiveJob(c, job);
      if (c.rank() == 0) result = r;
    });
    for (const auto& e : errors) ASSERT_EQ(e, "") << n << " ranks";
    ASSERT_EQ(result["ranks"], n);
    ASSERT_EQ(result["collectives"].size(), Collectives().size());
    for (const auto& t : result["collectives"]) {
      EXPECT_EQ(t["wrong"], 0) << n << " ranks: " << t.dump();
      ASSERT_FALSE(t["rows"].empty()) << t["collective"];
      for (const auto& row : t["rows"]) {
        for (const char* p : {"out_of_place", "in_place"}) {
          EXPECT_EQ(row[p]["wrong"], 0) << t["collective"] << " " << row.dump();
          EXPECT_GT(row[p]["time_us"].get<double>(), 0.0);
        }
      }
    }
    // nccl-tests' size rules: all_gather on n ranks rounds the size down to a multiple of 4n.
    for (const auto& t : result["collectives"]) {
      if (t["collective"] != "all_gather") continue;
      for (const auto& row : t["rows"]) EXPECT_EQ(row["bytes"].get<uint64_t>() % (4 * n), 0u);
      EXPECT_EQ(t["rows"].back()["count"].get<uint64_t>(), ((1u << 20) + 4 * 37) / (4 * n));
    }
    // busbw = algbw x nccl-tests' factor.
    for (const auto& t : result["collectives"]) {
      const json& row = t["rows"].back()["out_of_place"];
      double factor = BusBwFactor(t["collective"].get<std::string>(), n).value();
      EXPECT_NEAR(row["busbw"].get<double>(), row["algbw"].get<double>() * factor,
                  0.002 + 0.001 * row["busbw"].get<double>());
    }
  }
}

TEST(NetComm, PmixIsLoadedAtRunTimeAndItsAbsenceIsNamed) {
  // The node binary never links libpmix: a missing library is a sentence naming the package, and
  // outside srun --mpi=pmix nothing reaches for it. (The exchange itself runs for real in
  // SlurmFleet.NetRanksMeetThroughPmixWithoutASharedDirectory.)
  std::string why = PmixLoadError("libpmix-absent.so.2");
  EXPECT_NE(why.find("libpmix2"), std::string::npos) << why;
  EXPECT_NE(why.find("--launch pmix"), std::string::npos) << why;
  if (void* h = ::dlopen("libpmix.so.2", RTLD_NOW | RTLD_LOCAL)) {  // scripts/install-deps.sh installs it
    ::dlclose(h);
    EXPECT_EQ(PmixLoadError("libpmix.so.2"), "");
  }
  ::unsetenv("PMIX_RANK");
  EXPECT_FALSE(UnderPmix());
}

TEST(NetComm, TheDataCheckCountsEachWrongElement) {
  // A correct all_reduce output, then one element flipped: the check must see exactly one.
  int n = 3;
  size_t count = 1000;
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i)
    for (int k = 0; k < n; ++k) out[i] += InputValue(k, i);
  EXPECT_EQ(WrongElements("all_reduce", out.data(), 0, out.size(), count, 0, n, 0), 0);
  out[517] += 1;
  EXPECT_EQ(WrongElements("all_reduce", out.data(), 0, out.size(), count, 0, n, 0), 1);
  // all_gather: rank 1's block in the wrong place is count x wrong... only where values differ.
  std::vector<float> ag(count * n);
  for (int k = 0; k < n; ++k)
    for (size_t i = 0; i < count; ++i) ag[k * count + i] = InputValue(k, i);
  EXPECT_EQ(WrongElements("all_gather", ag.data(), 0, ag.size(), count, 2, n, 0), 0);
  std::swap(ag[3], ag[count + 3]);
  EXPECT_EQ(WrongElements("all_gather", ag.data(), 0, ag.size(), count, 2, n, 0), 2);
  // reduce: only the root's output is a result.
  std::vector<float> junk(count, 1234.f);
  EXPECT_EQ(WrongElements("reduce", junk.data(), 0, junk.size(), count, 1, n, 0), 0);
  EXPECT_EQ(WrongElements("reduce", junk.data(), 0, junk.size(), count, 0, n, 0), static_cast<long long>(count));
}

TEST(NetComm, AStrangerOnTheRankPortIsDroppedAndTheMeshStillForms) {
  CommOptions o;
  o.rendezvous = FreshDir("stranger");
  o.timeout_s = 20;
  PrepareRendezvous(o.rendezvous);
  std::atomic<bool> done{false};
  std::string err1;
  float sum = 0;
  // Rank 1 listens first; a stranger connects to it with a wrong token before rank 0 does.
  std::thread r1([&] {
    try {
      auto c = Comm::Connect(RankInfo{1, 2, 0, "b"}, o);
      float x = 2, y = 0;
      c->AllReduce(&x, &y, 1);
      sum = y;
    } catch (const std::exception& e) {
      err1 = e.what();
    }
    done = true;
  });
  fs::path entry = o.rendezvous / "rank-1";
  for (int i = 0; i < 200 && !fs::exists(entry); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::ifstream in(entry);
  std::string node, addr;
  int port = 0;
  ASSERT_TRUE(in >> node >> addr >> port);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa), 0);
  std::string junk = "CMXNET01" + std::string(32, '0') + std::string(12, '\0');
  ASSERT_EQ(::send(fd, junk.data(), junk.size(), 0), static_cast<ssize_t>(junk.size()));
  std::string err0;
  std::thread r0([&] {
    try {
      auto c = Comm::Connect(RankInfo{0, 2, 0, "a"}, o);
      float x = 5, y = 0;
      c->AllReduce(&x, &y, 1);
    } catch (const std::exception& e) {
      err0 = e.what();
    }
  });
  r0.join();
  r1.join();
  ::close(fd);
  EXPECT_EQ(err0, "");
  EXPECT_EQ(err1, "");
  EXPECT_EQ(sum, 7.0f);
}

TEST(NetComm, ARankThatNeverAppearsIsNamed) {
  CommOptions o;
  o.rendezvous = FreshDir("absent");
  o.timeout_s = 1;
  PrepareRendezvous(o.rendezvous);
  // World of three, rank 2 never starts.
  std::vector<std::string> errors(2);
  std::vector<std::thread> t;
  for (int r = 0; r < 2; ++r)
    t.emplace_back([&, r] {
      try {
        Comm::Connect(RankInfo{r, 3, 0, "a"}, o);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& x : t) x.join();
  for (const auto& e : errors) EXPECT_NE(e.find("rank(s) 2 never appeared"), std::string::npos) << e;
  // Without the launcher's token nothing starts, and the message says where it looked.
  CommOptions none;
  none.rendezvous = FreshDir("no-token");
  none.timeout_s = 0.2;
  try {
    Comm::Connect(RankInfo{0, 1, 0, "a"}, none);
    ADD_FAILURE() << "connected without a token";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no rendezvous token"), std::string::npos) << e.what();
  }
}

TEST(NetComm, PairTestsMeasureBothWaysAndThrottleSlowsOneSide) {
  CommOptions o;
  o.rendezvous = FreshDir("pair");
  o.timeout_s = 20;
  PrepareRendezvous(o.rendezvous);
  Comm::StreamResult fast, slow;
  std::vector<double> lat;
  auto errors = OnRanks({"a", "b"}, o, [&](Comm& c) {
    auto x = c.StreamThroughput(0, 1, 4, 0.5);
    if (c.rank() == 0) fast = x;
    auto l = c.PingPong(0, 1, 200);
    if (c.rank() == 0) lat = l;
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  EXPECT_EQ(fast.streams, 4);
  EXPECT_GT(fast.bytes, 0u);
  EXPECT_GT(fast.bytes_per_s, 0.0);
  ASSERT_EQ(lat.size(), 200u);
  EXPECT_TRUE(std::is_sorted(lat.begin(), lat.end()));
  EXPECT_GT(lat.front(), 0.0);
  // The tests' planted slow node: 20 MB/s on the sender.
  CommOptions t = o;
  t.rendezvous = FreshDir("pair-throttled");
  PrepareRendezvous(t.rendezvous);
  t.throttle_bytes_per_s = 20e6;
  errors = OnRanks({"a", "b"}, t, [&](Comm& c) {
    auto x = c.StreamThroughput(0, 1, 4, 0.5);
    if (c.rank() == 0) slow = x;
  });
  for (const auto& e : errors) ASSERT_EQ(e, "");
  EXPECT_LT(slow.bytes_per_s, 30e6) << slow.bytes_per_s;
  EXPECT_LT(slow.bytes_per_s, fast.bytes_per_s / 3);
}

TEST(NetComm, TheThrottleHookNamesNodes) {
  ::setenv("CLUSTERMAX_NET_TEST_THROTTLE", "n1=50, n3 = 2.5 ,bad,n4=x", 1);
  EXPECT_EQ(ThrottleFromEnv("n1"), 50e6);
  EXPECT_EQ(ThrottleFromEnv("n3"), 2.5e6);
  EXPECT_EQ(ThrottleFromEnv("n2"), 0);
  EXPECT_EQ(ThrottleFromEnv("n4"), 0);
  ::unsetenv("CLUSTERMAX_NET_TEST_THROTTLE");
  EXPECT_EQ(ThrottleFromEnv("n1"), 0);
}

TEST(NetPlan, SizeSweepIsNcclTestsStyle) {
  EXPECT_EQ(SizeSweep(8, 64, 2), (std::vector<uint64_t>{8, 16, 32, 64}));
  EXPECT_EQ(SizeSweep(8, 100, 4), (std::vector<uint64_t>{8, 32, 100}));
  EXPECT_EQ(SizeSweep(1 << 20, 1 << 20, 2), (std::vector<uint64_t>{1 << 20}));
  EXPECT_THROW(SizeSweep(8, 64, 1), std::invalid_argument);
  EXPECT_THROW(SizeSweep(64, 8, 2), std::invalid_argument);
}

TEST(NetPlan, PairRoundsAreDisjointAndCoverWhatTheyPromise) {
  for (int n = 2; n <= 11; ++n) {
    for (bool all : {true, false}) {
      std::set<std::pair<int, int>> seen;
      for (const auto& round : PairRounds(n, all)) {
        std::set<int> busy;
        for (const auto& [a, b] : round) {
          EXPECT_LT(a, b);
          EXPECT_TRUE(busy.insert(a).second) << n << " node " << a << " twice in a round";
          EXPECT_TRUE(busy.insert(b).second) << n << " node " << b << " twice in a round";
          EXPECT_TRUE(seen.insert({a, b}).second) << n << " pair repeated";
        }
      }
      if (all) {
        EXPECT_EQ(seen.size(), static_cast<size_t>(n * (n - 1) / 2)) << n;
        EXPECT_LE(PairRounds(n, all).size(), static_cast<size_t>(n)) << n;
      } else {
        // Each node with both ring neighbours (one when n == 2).
        for (int i = 0; i < n; ++i) EXPECT_TRUE(seen.count(std::minmax(i, (i + 1) % n))) << n << " " << i;
        EXPECT_LE(PairRounds(n, all).size(), 3u) << n;
      }
    }
  }
  EXPECT_TRUE(PairRounds(1, true).empty());
}

namespace {
std::vector<PairFigure> Fleet(const std::vector<std::string>& nodes, double fast,
                              const std::function<double(const std::string&, const std::string&)>& bw) {
  std::vector<PairFigure> v;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (size_t j = i + 1; j < nodes.size(); ++j) {
      double x = bw(nodes[i], nodes[j]);
      v.push_back({nodes[i], nodes[j], x > 0 ? x : fast});
    }
  return v;
}
}  // namespace

TEST(NetPlan, ASlowNodeIsNamedAndConfirmedAgainstAGoodOne) {
  std::vector<std::string> nodes = {"n1", "n2", "n3", "n4", "n5"};
  auto pairs = Fleet(nodes, 100, [](const std::string& a, const std::string& b) {
    return a == "n3" || b == "n3" ? 20.0 : 95.0 + (a < b ? 1 : 0);
  });
  auto a = AnalyzePairs(pairs, 0.7);
  EXPECT_NEAR(a.reference_gbps, 96, 1e-9);
  EXPECT_EQ(a.suspect_nodes, std::vector<std::string>{"n3"});
  EXPECT_TRUE(a.suspect_links.empty());
  EXPECT_EQ(a.good_nodes, (std::vector<std::string>{"n1", "n2", "n4", "n5"}));
  auto rounds = RetestRounds(a);
  ASSERT_EQ(rounds.size(), 1u);
  ASSERT_EQ(rounds[0].size(), 1u);
  EXPECT_EQ(rounds[0][0].first, "n3");
  // Still slow with a good node: the node.
  std::vector<std::string> transient;
  auto c = Judge(a, {{"n3", rounds[0][0].second, 19}}, 0.7, &transient);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, "node");
  EXPECT_EQ(c[0].name, "n3");
  EXPECT_NE(c[0].why.find("again 19.00 Gb/s"), std::string::npos) << c[0].why;
  // Fast on retest: transient, nobody blamed.
  transient.clear();
  EXPECT_TRUE(Judge(a, {{"n3", "n1", 97}}, 0.7, &transient).empty());
  ASSERT_EQ(transient.size(), 1u);
  EXPECT_NE(transient[0].find("n3"), std::string::npos);
  // The planted node of the CI test: three nodes, the slow one in two of three pairs.
  auto three = AnalyzePairs({{"n1", "n2", 1.6}, {"n1", "n3", 42}, {"n2", "n3", 1.6}}, 0.7);
  EXPECT_EQ(three.suspect_nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(three.good_nodes, (std::vector<std::string>{"n1", "n3"}));
}

TEST(NetPlan, ASlowLinkBetweenTwoGoodNodesIsTheLink) {
  std::vector<std::string> nodes = {"a", "b", "c", "d"};
  auto pairs =
      Fleet(nodes, 100, [](const std::string& x, const std::string& y) { return x == "a" && y == "b" ? 30.0 : 0.0; });
  auto an = AnalyzePairs(pairs, 0.7);
  EXPECT_TRUE(an.suspect_nodes.empty());
  ASSERT_EQ(an.suspect_links.size(), 1u);
  EXPECT_EQ(an.good_nodes, (std::vector<std::string>{"c", "d"}));
  auto rounds = RetestRounds(an);
  std::set<std::pair<std::string, std::string>> asked;
  for (const auto& r : rounds)
    for (const auto& p : r) asked.insert(p);
  EXPECT_TRUE(asked.count({"a", "b"}));
  EXPECT_TRUE(asked.count({"a", "c"}));
  EXPECT_TRUE(asked.count({"b", "d"}));
  auto c = Judge(an, {{"a", "b", 31}, {"a", "c", 99}, {"b", "d", 98}}, 0.7, nullptr);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, "link");
  EXPECT_EQ(c[0].name, "a<->b");
  EXPECT_NE(c[0].why.find("the path between them"), std::string::npos) << c[0].why;
  // One end slow with a good node: that end, not the link.
  c = Judge(an, {{"a", "b", 31}, {"a", "c", 99}, {"b", "d", 20}}, 0.7, nullptr);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].kind, "node");
  EXPECT_EQ(c[0].name, "b");
  // A healthy fleet has nothing to retest and nobody to blame.
  auto healthy = AnalyzePairs(Fleet(nodes, 100, [](auto&, auto&) { return 0.0; }), 0.7);
  EXPECT_TRUE(healthy.slow_pairs.empty());
  EXPECT_TRUE(RetestRounds(healthy).empty());
  EXPECT_TRUE(Judge(healthy, {}, 0.7, nullptr).empty());
}

TEST(NetPlan, GradesFailOnWrongDataAndOnANamedCulprit) {
  json bars = clustermax::bench::EmbeddedBenchThresholds();
  auto verdict = [&](const json& r, const std::string& id) {
    json g = clustermax::bench::Grade(NetMetrics(r), bars);
    for (const auto& x : g)
      if (x["metric"] == id) return x["verdict"].get<std::string>();
    return std::string("none");
  };
  json table = {{"collective", "all_reduce"}, {"wrong", 0}, {"rows", json::array()}};
  json r = {{"single", {{"collectives", {table}}}}};
  EXPECT_EQ(verdict(r, "net.wrong-elements"), "PASS");
  r["single"]["collectives"][0]["wrong"] = 1;
  EXPECT_EQ(verdict(r, "net.wrong-elements"), "FAIL");
  // Wrong data in a scaling step counts as well.
  json r2 = {{"scaling", {{"steps", {{{"result", {{"collectives", {table}}}}}}}}}};
  r2["scaling"]["steps"][0]["result"]["collectives"][0]["wrong"] = 3;
  EXPECT_EQ(verdict(r2, "net.wrong-elements"), "FAIL");
  EXPECT_EQ(verdict(json::object(), "net.wrong-elements"), "SKIP");

  json p = {{"reference_gbps", 40.0},
            {"nodes", {{{"node", "n1"}, {"median_gbps", 39.0}}, {{"node", "n2"}, {"median_gbps", 38.0}}}},
            {"culprits", json::array()},
            {"pairs", {{{"a", "n1"}, {"b", "n2"}, {"latency_p99_us", 50.0}}}}};
  EXPECT_EQ(verdict({{"pairwise", p}}, "net.pairwise-worst-node"), "PASS");
  EXPECT_EQ(verdict({{"pairwise", p}}, "net.host-latency-p99"), "PASS");
  p["culprits"].push_back({{"kind", "link"}, {"name", "n1<->n2"}});
  EXPECT_EQ(verdict({{"pairwise", p}}, "net.pairwise-worst-node"), "FAIL");
  p["culprits"] = json::array();
  p["nodes"][1]["median_gbps"] = 30.0;  // 0.75 of the reference
  EXPECT_EQ(verdict({{"pairwise", p}}, "net.pairwise-worst-node"), "WARN");
  EXPECT_EQ(verdict({{"scaling", {{"efficiency", 0.95}}}}, "net.scaling-efficiency"), "PASS");
  EXPECT_EQ(verdict({{"scaling", {{"efficiency", 0.5}}}}, "net.scaling-efficiency"), "FAIL");
  EXPECT_EQ(verdict({{"rails", {{"spread", 0.85}}}}, "net.rail-spread"), "WARN");
  EXPECT_EQ(verdict({{"rails", {{"why", "one rail"}}}}, "net.rail-spread"), "SKIP");
}

TEST(NetImport, NcclTestsAndPerftestFilesLandInTheResultSchema) {
  auto read = [](const std::string& name) { return clustermax::testing::ReadFixture("net/" + name); };
  // An H100 2-node all_reduce: the file's own busbw figures, kept as printed.
  json a = ImportFile("h100-2node-gcp-a3mega-all_reduce.txt", read("nccl-tests/h100-2node-gcp-a3mega-all_reduce.txt"));
  ASSERT_EQ(a["tool"], "nccl-tests") << a.dump();
  const json& t = a["result"]["collectives"][0];
  EXPECT_EQ(t["collective"], "all_reduce");
  EXPECT_EQ(t["busbw_at_max"], 338.82);
  EXPECT_EQ(t["wrong"], 0);
  EXPECT_FALSE(t["failed"].get<bool>());
  EXPECT_TRUE(t["rows"].back()["out_of_place"]["busbw"].is_number());
  // The V100 run whose checks failed: graded FAIL even where no wrong count was printed.
  json v = ImportFile("v100.txt", read("nccl-tests/v100-dgx2-12gpu-oldformat-5collectives-errors.txt"));
  ASSERT_EQ(v["tool"], "nccl-tests");
  bool any_failed = false;
  for (const auto& c : v["result"]["collectives"]) any_failed |= c["failed"].get<bool>();
  EXPECT_TRUE(any_failed);
  json result = {{"imported", json::array({v})}};
  json g = clustermax::bench::Grade(NetMetrics(result), clustermax::bench::EmbeddedBenchThresholds());
  EXPECT_EQ(g[0]["metric"], "net.wrong-elements");
  EXPECT_EQ(g[0]["verdict"], "FAIL") << g[0].dump();
  // The healthy one passes the same grade.
  g = clustermax::bench::Grade(NetMetrics({{"imported", json::array({a})}}),
                               clustermax::bench::EmbeddedBenchThresholds());
  EXPECT_EQ(g[0]["verdict"], "PASS") << g[0].dump();
  // perftest: rows in Gb/s whatever the unit the file used.
  json p = ImportFile("bw.txt", read("perftest/ib_write_bw-ndr400-cx7-report_gbits-client.txt"));
  ASSERT_EQ(p["tool"], "perftest");
  EXPECT_EQ(p["result"]["device"], "mlx5_0");
  EXPECT_EQ(p["result"]["rows"].back()["average_gbps"], 392.34);
  json mib = ImportFile("mib.txt", read("perftest/ib_send_bw-ndr400-cx7-mib_sec-client.txt"));
  ASSERT_EQ(mib["tool"], "perftest");
  EXPECT_GT(mib["result"]["rows"].back()["average_gbps"].get<double>(), 300.0) << mib.dump();
  // Anything else is named, not guessed.
  json junk = ImportFile("notes.txt", "hello\n\xff\xfe\n");
  EXPECT_TRUE(junk.contains("error"));
  EXPECT_FALSE(junk.contains("tool"));
}

TEST(NetImport, OneNodeAllReduceIsGradedAgainstItsGpuModel) {
  auto grade = [](const json& result) {
    json g = clustermax::bench::Grade(NetMetrics(result), clustermax::bench::EmbeddedBenchThresholds());
    for (const auto& x : g)
      if (x["metric"] == "net.node-allreduce") return x;
    return json();
  };
  // An 8-GPU MI300X rccl-tests run: no reference for the model, said so.
  json mi =
      ImportFile("mi300x.txt", clustermax::testing::ReadFixture("net/nccl-tests/mi300x-8gpu-rccl-all_reduce.txt"));
  json g = grade({{"imported", json::array({mi})}});
  EXPECT_EQ(g["verdict"], "SKIP") << g.dump();
  EXPECT_NE(g.value("reason", "").find("no all_reduce reference"), std::string::npos) << g.dump();
  // The H100 capture is two nodes (16 ranks): not a one-node figure.
  json h =
      ImportFile("h100.txt", clustermax::testing::ReadFixture("net/nccl-tests/h100-2node-gcp-a3mega-all_reduce.txt"));
  ASSERT_EQ(h["tool"], "nccl-tests");
  g = grade({{"imported", json::array({h})}});
  EXPECT_EQ(g["verdict"], "SKIP") << g.dump();
  EXPECT_NE(g.value("reason", "").find("16 ranks"), std::string::npos) << g.dump();
  // Mutations of it: as if one node of 8 H100s. 338.82 GB/s over Ring's 368.6 passes; over NVLS's
  // 480 (NCCL reported NVLS) it fails.
  json& t = h["result"]["collectives"][0];
  t["ranks"] = 8;
  t["devices"] = json::array({"NVIDIA H100 80GB HBM3"});
  t["nccl"]["nvls"] = false;
  g = grade({{"imported", json::array({h})}});
  EXPECT_EQ(g["verdict"], "PASS") << g.dump();
  EXPECT_NEAR(g["value"].get<double>(), 338.82 / 368.6, 0.001);
  t["nccl"]["nvls"] = true;
  g = grade({{"imported", json::array({h})}});
  EXPECT_EQ(g["verdict"], "FAIL") << g.dump();
  // A single-node NCCL run names its algorithm from NCCL's tuning lines.
  json single = {
      {"transport", "nccl"},
      {"device", "NVIDIA H200"},
      {"ranks", 8},
      {"nccl",
       {{"nvls", true}, {"tuning", {{{"collective", "AllReduce"}, {"bytes", 1 << 30}, {"algorithm", "RING"}}}}}},
      {"collectives",
       {{{"collective", "all_reduce"}, {"ranks", 8}, {"busbw_at_max", 360.0}, {"rows", {{{"bytes", 1 << 30}}}}}}}};
  g = grade({{"single", single}});
  EXPECT_EQ(g["verdict"], "PASS") << g.dump();
  EXPECT_NE(g.value("detail", "").find("Ring reference 367.2"), std::string::npos) << g.dump();
}

TEST(NetComm, TheClosedFormSumMatchesTheSumOverEveryRank) {
  // SumOfInputs adds at most 16 ranks; the plain sum over every rank must agree for any world.
  for (int n : {1, 2, 3, 8, 16, 17, 18, 33, 34, 100, 512, 1000, 4097}) {
    for (unsigned long long i : {0ull, 1ull, 16ull, 123457ull, (1ull << 33) + 5}) {
      float s = 0;
      for (int k = 0; k < n; ++k) s += InputValue(k, i);
      EXPECT_EQ(SumOfInputs(n, i), s) << n << " ranks, element " << i;
    }
  }
  // Checking a large output in pieces gives the same count as in one go.
  size_t count = 10000;
  std::vector<float> out(count);
  for (size_t i = 0; i < count; ++i) out[i] = SumOfInputs(5, i) + (i % 997 == 3 ? 1 : 0);
  long long whole = WrongElements("all_reduce", out.data(), 0, count, count, 0, 5, 0);
  long long pieces = WrongElements("all_reduce", out.data(), 0, 4000, count, 0, 5, 0) +
                     WrongElements("all_reduce", out.data() + 4000, 4000, count - 4000, count, 0, 5, 0);
  EXPECT_EQ(whole, 11);
  EXPECT_EQ(pieces, whole);
  EXPECT_EQ(WrongElements("gather", out.data(), 0, count, count, 0, 5, 0), -1);
}

TEST(NetPlan, UncheckedAndSkippedPlacementsAreNotCleanOnes) {
  // --no-check: every wrong is null, so the table's is null and the grade is SKIP, not PASS.
  json raw = {{"collective", "all_reduce"},
              {"rows",
               {{{"bytes", 1024},
                 {"count", 256},
                 {"out_of_place", {{"time_us", 10.0}, {"wrong", nullptr}}},
                 {"in_place", {{"time_us", 12.0}, {"wrong", nullptr}}}}}}};
  json t = SummarizeTable(raw, 2);
  EXPECT_TRUE(t["wrong"].is_null()) << t.dump();
  json g = clustermax::bench::Grade(NetMetrics({{"single", {{"collectives", json::array({t})}}}}),
                                    clustermax::bench::EmbeddedBenchThresholds());
  EXPECT_EQ(g[0]["metric"], "net.wrong-elements");
  EXPECT_EQ(g[0]["verdict"], "SKIP") << g[0].dump();
  // NCCL's in-place alltoall is skipped: it neither counts as 0 GB/s nor drags the average down.
  json a2a = {{"collective", "alltoall"},
              {"rows",
               {{{"bytes", 4096},
                 {"count", 512},
                 {"out_of_place", {{"time_us", 4.096}, {"wrong", 0}}},
                 {"in_place", {{"skipped", "in place is not defined for grouped send/receive"}}}}}}};
  json s = SummarizeTable(a2a, 2);
  EXPECT_EQ(s["avg_busbw"], s["peak_busbw"]) << s.dump();
  EXPECT_EQ(s["wrong"], 0);
  EXPECT_TRUE(s["rows"][0]["in_place"].contains("skipped"));
  EXPECT_FALSE(s["rows"][0]["in_place"].contains("busbw"));
  // A pair of an NCCL pairwise run with wrong elements fails the grade.
  json pairs = {{"pairwise", {{"pairs", {{{"a", "n1"}, {"b", "n2"}, {"gbps", 100.0}, {"wrong", 4}}}}}}};
  g = clustermax::bench::Grade(NetMetrics(pairs), clustermax::bench::EmbeddedBenchThresholds());
  EXPECT_EQ(g[0]["verdict"], "FAIL") << g[0].dump();
  // Documents of the wrong shape do not throw.
  EXPECT_NO_THROW(NetMetrics({{"single", {{"collectives", {1, "x", nullptr}}}}, {"imported", {{{"result", 3}}}}}));
  EXPECT_NO_THROW(SummarizeTable({{"collective", "all_reduce"}, {"rows", {1, "x"}}}, 2));
}

namespace {
std::string VerdictOf(const json& result, const std::string& id, json* grade = nullptr) {
  json g = clustermax::bench::Grade(NetMetrics(result), clustermax::bench::EmbeddedBenchThresholds());
  for (const auto& x : g)
    if (x["metric"] == id) {
      if (grade) *grade = x;
      return x["verdict"].get<std::string>();
    }
  return "none";
}

// One port's figures as RunRdmaPair reports them.
json RdmaPort(const std::string& dev, double write, double p99, double rate = 400) {
  return {{"device", dev},         {"port", 1},           {"link_layer", "InfiniBand"},
          {"rate_gbps", rate},     {"write_gbps", write}, {"read_gbps", write},
          {"lat_p50_us", p99 / 2}, {"lat_p99_us", p99},   {"bytes", 8388608}};
}
}  // namespace

TEST(NetPlan, RdmaBlamesTheHcaThatIsSlowWithEveryPartner) {
  // A ring of three nodes (the rdma mode's pairing): n2's mlx5_1 reaches 150 of 400 Gb/s with both
  // its partners, while n1's and n3's mlx5_1 reach 390 with each other. The HCA at fault is n2's,
  // not its peers' (each of which was slow once).
  auto pair = [](const char* a, const char* b, double w1) {
    return json{{"a", a},
                {"b", b},
                {"library", "libibverbs.so.1"},
                {"memory", "host"},
                {"ports", {RdmaPort("mlx5_0", 392, 2.1), RdmaPort("mlx5_1", w1, 2.4)}}};
  };
  json sec = SummarizeRdma({pair("n1", "n2", 150), pair("n2", "n3", 150), pair("n3", "n1", 390)});
  ASSERT_EQ(sec["hcas"].size(), 6u) << sec.dump();
  EXPECT_EQ(sec["worst_line_ratio"], 0.375) << sec.dump();
  EXPECT_NE(sec["worst_line_ratio_detail"].get<std::string>().find("n2 mlx5_1 port 1"), std::string::npos);
  for (const auto& h : sec["hcas"]) {
    if (h["node"] != "n2" && h["device"] == "mlx5_1") {
      EXPECT_EQ(h["best_write_gbps"], 390.0) << h.dump();
    }
    EXPECT_EQ(h["partners"].size(), 2u);
  }
  json result = {{"rdma", sec}};
  json g;
  EXPECT_EQ(VerdictOf(result, "net.rdma-write-line-ratio", &g), "FAIL") << g.dump();
  EXPECT_EQ(VerdictOf(result, "net.rdma-latency-p99", &g), "PASS") << g.dump();
  EXPECT_EQ(g["value"], 2.4);
  // Healthy: every HCA at 0.975 of its line.
  result["rdma"] = SummarizeRdma({pair("n1", "n2", 390), pair("n2", "n3", 390), pair("n3", "n1", 390)});
  EXPECT_EQ(VerdictOf(result, "net.rdma-write-line-ratio"), "PASS");
  // A port that failed with every partner is at 0 of its line; a slow latency tail warns.
  json bad = pair("n1", "n2", 390);
  bad["ports"][1] = {{"device", "mlx5_1"}, {"port", 1}, {"rate_gbps", 400}, {"error", "IBV_WC_RETRY_EXC_ERR"}};
  bad["ports"][0]["lat_p99_us"] = 7.5;
  result["rdma"] = SummarizeRdma({bad});
  EXPECT_EQ(result["rdma"]["worst_line_ratio"], 0.0) << result["rdma"].dump();
  EXPECT_EQ(VerdictOf(result, "net.rdma-write-line-ratio"), "FAIL");
  EXPECT_EQ(VerdictOf(result, "net.rdma-latency-p99"), "WARN");
  // Nothing measured (the CI cluster: no HCA): SKIP with the nodes' reason, never PASS.
  result["rdma"] = SummarizeRdma({{{"a", "n1"}, {"b", "n2"}, {"error", "n1: no RDMA device"}}});
  EXPECT_EQ(VerdictOf(result, "net.rdma-write-line-ratio", &g), "SKIP");
  EXPECT_NE(g.dump().find("n1: no RDMA device"), std::string::npos) << g.dump();
  EXPECT_EQ(VerdictOf(json::object(), "net.rdma-latency-p99"), "SKIP");
  // Documents of the wrong shape do not throw.
  EXPECT_NO_THROW(SummarizeRdma({1, "x", {{"ports", 3}}, {{"ports", {1, {{"device", 2}}}}}}));
}

TEST(NetPlan, RdmaCreditsEachEndAtItsOwnRateAndNeverPassesAnUnmeasuredPort) {
  // n1's mlx5_0 links at 400, n2's at 200 (peer_rate_gbps): 190 Gb/s is 0.475 of n1's line and 0.95
  // of n2's.
  json p = RdmaPort("mlx5_0", 190, 2.0);
  p["peer_rate_gbps"] = 200;
  json sec = SummarizeRdma({{{"a", "n1"}, {"b", "n2"}, {"ports", {p}}}});
  for (const auto& h : sec["hcas"]) {
    EXPECT_EQ(h["line_ratio"], h["node"] == "n1" ? 0.475 : 0.95) << h.dump();
    EXPECT_EQ(h["rate_gbps"], h["node"] == "n1" ? 400 : 200) << h.dump();
  }
  // A latency test that failed after a good write keeps the write's figure.
  json late = RdmaPort("mlx5_0", 390, 2.0);
  late["error"] = "the peer's write 7 did not arrive within 60 s";
  sec = SummarizeRdma({{{"a", "n1"}, {"b", "n2"}, {"ports", {late}}}});
  EXPECT_EQ(sec["worst_line_ratio"], 0.975) << sec.dump();
  EXPECT_EQ(sec["hcas"][0]["errors"].size(), 1u);
  // A port that is down on one side is not measured: the grade fails, whatever the others reached.
  json down = {{"a", "n1"},
               {"b", "n2"},
               {"ports", {RdmaPort("mlx5_0", 392, 2.0)}},
               {"unmatched", {{{"device", "mlx5_1"}, {"port", 1}, {"why", "n2 mlx5_1 port 1: not ACTIVE (1: DOWN)"}}}}};
  json g;
  EXPECT_EQ(VerdictOf({{"rdma", SummarizeRdma({down})}}, "net.rdma-write-line-ratio", &g), "FAIL") << g.dump();
  EXPECT_NE(g.dump().find("mlx5_1"), std::string::npos) << g.dump();
  // Ports left out by --rdma-devices are not a problem.
  down["unmatched"][0]["why"] = "not among the devices asked for";
  EXPECT_EQ(VerdictOf({{"rdma", SummarizeRdma({down})}}, "net.rdma-write-line-ratio"), "PASS");
  // Every port of a node down: nothing measured where RDMA applies is 0 of the line, not a SKIP.
  json dead = {{"a", "n1"}, {"b", "n2"}, {"error", "n2: no active RDMA port (mlx5_0 port 1: not ACTIVE)"}};
  sec = SummarizeRdma({dead});
  EXPECT_EQ(sec["worst_line_ratio"], 0.0) << sec.dump();
  EXPECT_EQ(VerdictOf({{"rdma", sec}}, "net.rdma-write-line-ratio"), "FAIL");
}

TEST(NetPlan, PerNicBusbwIsGradedAgainstTheHcaLineRate) {
  // NCCL per-rail runs: one HCA carries the all_reduce; 47 GB/s of a 400 Gb/s (50 GB/s) NIC is
  // 0.94 (performance.md 12.4's 46-48 GB/s), 30 GB/s is 0.6.
  json hcas = json::array();
  for (int i = 0; i < 8; ++i) hcas.push_back({{"device", fmt::format("mlx5_{}", i)}, {"port", 1}, {"rate_gbps", 400}});
  json rails = {
      {"rails", {{{"rail", "mlx5_0"}, {"busbw_at_max", 47.0}, {"result", {{"transport", "nccl"}, {"hcas", hcas}}}}}}};
  json g;
  EXPECT_EQ(VerdictOf({{"rails", rails}}, "net.nic-busbw-ratio", &g), "PASS") << g.dump();
  EXPECT_EQ(g["value"], 0.94);
  rails["rails"].push_back({{"rail", "mlx5_3:1"}, {"busbw_at_max", 30.0}, {"result", {{"hcas", hcas}}}});
  EXPECT_EQ(VerdictOf({{"rails", rails}}, "net.nic-busbw-ratio", &g), "FAIL") << g.dump();
  EXPECT_NE(g.dump().find("mlx5_3:1"), std::string::npos);
  // Fabric-only across two nodes: 370 GB/s over eight NICs is 46.25 GB/s each, 0.925.
  json t = {{"collective", "all_reduce"}, {"busbw_at_max", 370.0}, {"rows", {{{"bytes", 17179869184LL}}}}};
  json fab = {{"nodes", {"a", "b"}}, {"hcas", hcas}, {"collectives", {t}}};
  EXPECT_EQ(VerdictOf({{"fabric_only", fab}}, "net.nic-busbw-ratio", &g), "PASS") << g.dump();
  EXPECT_EQ(g["value"], 0.925);
  // One node's fabric-only run never crossed a NIC; a TCP run has no HCAs: SKIP, not PASS.
  fab["nodes"] = {"a"};
  EXPECT_EQ(VerdictOf({{"fabric_only", fab}}, "net.nic-busbw-ratio"), "SKIP");
  EXPECT_EQ(VerdictOf({{"rails", {{"rails", {{{"rail", "lo"}, {"busbw_at_max", 3.0}, {"result", json::object()}}}}}}},
                      "net.nic-busbw-ratio"),
            "SKIP");
}

TEST(NetPlan, APairThatFailedCountsAsTheSlowestAndItsNodeIsNamed) {
  // n4 never answered: its pairs count 0 Gb/s (the launcher's rule), so it is the suspect, and a
  // failed retest against a good node makes it the culprit.
  std::vector<PairFigure> pairs = {{"n1", "n2", 90}, {"n1", "n3", 91}, {"n2", "n3", 92},
                                   {"n1", "n4", 0},  {"n2", "n4", 0},  {"n3", "n4", 0}};
  auto a = AnalyzePairs(pairs, 0.7);
  EXPECT_EQ(a.suspect_nodes, std::vector<std::string>{"n4"});
  auto c = Judge(a, {{"n4", "n1", 0}}, 0.7, nullptr);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].name, "n4");
}

TEST(NetImport, ThroughTheBinaryAFileIsGradedAndABadModeRefused) {
  fs::path out = FreshDir("import-run");
  std::string bin = CLUSTERMAX_BINARY;
  std::string file =
      clustermax::testing::Fixture("net/nccl-tests/v100-dgx2-12gpu-oldformat-5collectives-errors.txt").string();
  auto r = clustermax::testing::RunShell(bin + " bench net --import " + file + " --json --out " + out.string() +
                                         " 2>/dev/null");
  EXPECT_EQ(r.code, 2) << r.out;  // the run's nccl-tests check FAILED: a FAIL grade, exit 2
  json j = json::parse(r.out);
  EXPECT_EQ(j["backend"], "import");
  ASSERT_EQ(j["imported"].size(), 1u);
  EXPECT_EQ(j["imported"][0]["tool"], "nccl-tests");
  EXPECT_EQ(j["verdict"], "FAIL");
  EXPECT_TRUE(fs::exists(out / "bench" / "net.json"));
  auto bad = clustermax::testing::RunShell(bin + " bench net --modes single,bogus 2>&1");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("unknown mode 'bogus'"), std::string::npos) << bad.out;
  bad = clustermax::testing::RunShell(bin + " bench net --modes rdma --rdma-bytes 2G 2>&1");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("--rdma-bytes: from 1 byte to 1G"), std::string::npos) << bad.out;
  bad = clustermax::testing::RunShell(bin + " bench net --launch carrier-pigeon 2>&1");
  EXPECT_NE(bad.code, 0) << bad.out;
}
