// bench burnin's kernel, its node task and its pure analysis: the PRNG and the checksums against
// their published reference values, the GEMM against the naive loop bit for bit (any blocking,
// any thread count) and its checksum under mutation, short real runs on this machine (their
// figures, decimation, cancellation, memory the node lacks), the vote (a corrupted node named
// from its first bad iteration, a tie vouching for nobody, one node alone checking only itself,
// nodes with other inputs left out), drift and the slowest node on series with known answers,
// lost nodes, junk documents, the grades with one fact flipped at a time, and the table.

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>

#include "bench/burnin.h"
#include "testutil.h"
#include "util/cancel.h"

using nlohmann::json;
using namespace clustermax;
namespace burnin = clustermax::bench::burnin;

namespace {

const std::string kSumA = "1111111111111111", kSumB = "2222222222222222", kMemA = "aaaaaaaaaaaaaaaa",
                  kMemB = "bbbbbbbbbbbbbbbb";

// A synthetic node document of `count` iterations; each figure and sum a function of the iteration.
struct Series {
  int count = 12;
  std::function<double(int)> gflops = [](int) { return 100.0; };
  std::function<double(int)> gbps = [](int) { return 20.0; };
  std::function<std::string(int)> gemm_sum = [](int) { return kSumA; };
  std::function<std::string(int)> mem_sum = [](int) { return kMemA; };
};
json Doc(const std::string& node, const Series& s = {}) {
  json it = json::array();
  for (int i = 0; i < s.count; ++i)
    it.push_back({{"i", i},
                  {"t", 1.0 * (i + 1)},
                  {"gemm_gflops", s.gflops(i)},
                  {"gemm_sum", s.gemm_sum(i)},
                  {"mem_gbps", s.gbps(i)},
                  {"mem_sum", s.mem_sum(i)}});
  return {{"node", node},
          {"rank", 0},
          {"inputs", {{"matrix_n", 256}, {"mem_mb", 256}, {"seed", 1}, {"kernel", "cpu-fp64-v1 x86_64"}}},
          {"iterations", it},
          {"iteration_count", s.count},
          {"completed", true},
          {"seconds", s.count * 1.0}};
}

json Result(const std::map<std::string, json>& docs, const std::map<std::string, std::string>& lost = {}) {
  return {{"kind", "clustermax.bench.burnin"},
          {"options", {{"duration_s", 12}, {"matrix_n", 256}, {"mem_mb", 256}, {"seed", 1}, {"threads", 1}}},
          {"summary", burnin::Summarize(docs, lost)}};
}

// The bars proposed for data/bench-thresholds.json, here so that these tests grade without them.
const json& Bars() {
  static const json bars = bench::ParseBenchThresholds(R"({"metrics": [
    {"id": "burnin.sdc", "unit": "nodes", "better": "lower", "pass": 0, "warn": 0, "source": "proposed"},
    {"id": "burnin.slowest-ratio", "unit": "ratio", "better": "higher", "pass": 0.95, "warn": 0.9, "source": "proposed"},
    {"id": "burnin.drift", "unit": "ratio", "better": "higher", "pass": -0.05, "warn": -0.1, "source": "proposed"},
    {"id": "burnin.completed", "unit": "ratio", "better": "higher", "pass": 1, "warn": 0.9, "source": "proposed"},
    {"id": "burnin.lost-nodes", "unit": "nodes", "better": "lower", "pass": 0, "warn": 0, "source": "proposed"},
    {"id": "burnin.gpu-errors", "unit": "GPUs", "better": "lower", "pass": 0, "warn": 0, "source": "proposed"},
    {"id": "burnin.throttled", "unit": "GPUs", "better": "lower", "pass": 0, "warn": 1000000, "source": "proposed"}]})",
                                                       "burnin_test");
  return bars;
}
json GradeOf(const json& result, const std::string& id) {
  for (const auto& g : bench::Grade(burnin::BurnInMetrics(result), Bars()))
    if (g["metric"] == id) return g;
  return json();
}

double Flip(double v, int bit) {
  uint64_t w;
  std::memcpy(&w, &v, sizeof w);
  w ^= uint64_t{1} << bit;
  std::memcpy(&v, &w, sizeof w);
  return v;
}

std::optional<double> MemAvailableMb() {
  std::ifstream in("/proc/meminfo");
  std::string key, rest;
  double kb = 0;
  while (in >> key >> kb) {
    std::getline(in, rest);
    if (key == "MemAvailable:") return kb / 1024;
  }
  return std::nullopt;
}

}  // namespace

// Vigna's splitmix64.c from state 0, and the FNV test suite's FNV-1a 64 values: the streams and
// checksums every node computes are the published algorithms, not look-alikes.
TEST(BurnIn, ThePrngAndTheChecksumGiveTheirPublishedReferenceValues) {
  uint64_t state = 0;
  EXPECT_EQ(burnin::SplitMix64(state), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(burnin::SplitMix64(state), 0x6e789e6aa1b965f4ULL);
  EXPECT_EQ(burnin::SplitMix64(state), 0x06c45d188009454fULL);
  EXPECT_EQ(burnin::Fnv1a64Hex("", 0), "cbf29ce484222325");
  EXPECT_EQ(burnin::Fnv1a64Hex("a", 1), "af63dc4c8601ec8c");
  EXPECT_EQ(burnin::Fnv1a64Hex("foobar", 6), "85944171f73967e8");
  // The fill lies in [-1, 1) and is the same stream for the same seed.
  std::vector<double> a(1000), b(1000);
  uint64_t s1 = 7, s2 = 7;
  burnin::FillUniform(s1, a.data(), a.size());
  burnin::FillUniform(s2, b.data(), b.size());
  EXPECT_EQ(a, b);
  for (double v : a) EXPECT_TRUE(v >= -1.0 && v < 1.0) << v;
  EXPECT_EQ(burnin::KernelId().rfind("cpu-fp64-v1 ", 0), 0u);
}

// Every C[i][j] is the naive loop's sum in the same order: equal bit for bit (EXPECT_EQ on
// doubles), over sizes that cut the cache blocks unevenly and any number of threads.
TEST(BurnIn, TheGemmIsTheNaiveLoopBitForBitWhateverTheBlockingAndThreads) {
  double a2[] = {1, 2, 3, 4}, b2[] = {5, 6, 7, 8}, c2[4];
  ASSERT_TRUE(burnin::Gemm(a2, b2, c2, 2));
  EXPECT_EQ(std::vector<double>(c2, c2 + 4), (std::vector<double>{19, 22, 43, 50}));
  for (int n : {17, 67, 130}) {
    std::vector<double> a(n * n), b(n * n), c1(n * n), c3(n * n, 42.0), naive(n * n);
    uint64_t s = 99;
    burnin::FillUniform(s, a.data(), a.size());
    burnin::FillUniform(s, b.data(), b.size());
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        double sum = 0;
        for (int k = 0; k < n; ++k) sum += a[i * n + k] * b[k * n + j];
        naive[i * n + j] = sum;
      }
    ASSERT_TRUE(burnin::Gemm(a.data(), b.data(), c1.data(), n, 1));
    ASSERT_TRUE(burnin::Gemm(a.data(), b.data(), c3.data(), n, 3));  // C overwritten, not added to
    EXPECT_EQ(c1, naive) << "n=" << n;
    EXPECT_EQ(c3, naive) << "n=" << n << ", 3 threads";
  }
}

// The checksum is a fingerprint of the whole result: repeatable, moved by one bit flipped in an
// input element, and by any one bit flipped in the result. (An input's lowest mantissa bit may be
// rounded away in the sums it enters: corruption is seen where it reaches the result.)
TEST(BurnIn, TheGemmChecksumRepeatsAndChangesWhenOneInputBitFlips) {
  const int n = 32;
  std::vector<double> a(n * n), b(n * n), c(n * n);
  uint64_t s = 1;
  burnin::FillUniform(s, a.data(), a.size());
  burnin::FillUniform(s, b.data(), b.size());
  auto sum = [&] {
    burnin::Gemm(a.data(), b.data(), c.data(), n);
    return burnin::Fnv1a64Hex(c.data(), c.size() * sizeof(double));
  };
  const std::string first = sum();
  EXPECT_EQ(first.size(), 16u);
  EXPECT_EQ(sum(), first);
  a[5 * n + 7] = Flip(a[5 * n + 7], 51);
  EXPECT_NE(sum(), first) << "one bit of A";
  a[5 * n + 7] = Flip(a[5 * n + 7], 51);
  EXPECT_EQ(sum(), first) << "restored";
  b[n * n - 1] = Flip(b[n * n - 1], 63);
  EXPECT_NE(sum(), first) << "the sign bit of B";
  b[n * n - 1] = Flip(b[n * n - 1], 63);
  sum();
  ASSERT_EQ(burnin::Fnv1a64Hex(c.data(), c.size() * sizeof(double)), first);
  for (int bit = 0; bit < 64; ++bit) {
    c[3] = Flip(c[3], bit);
    EXPECT_NE(burnin::Fnv1a64Hex(c.data(), c.size() * sizeof(double)), first) << "bit " << bit << " of C";
    c[3] = Flip(c[3], bit);
  }
  // The memory pass's word checksum too.
  std::string w = burnin::WordChecksumHex(c.data(), c.size());
  c[c.size() - 1] = Flip(c[c.size() - 1], 63);
  EXPECT_NE(burnin::WordChecksumHex(c.data(), c.size()), w);
}

TEST(BurnIn, TheJobIsClampedAndJunkTakesTheDefaults) {
  auto d = burnin::OptionsFromJob(json::object());
  EXPECT_EQ(d.duration_s, 60);
  EXPECT_EQ(d.matrix_n, 256);
  EXPECT_EQ(d.mem_mb, 256);
  EXPECT_EQ(d.seed, 1u);
  EXPECT_EQ(d.max_iterations, 0);
  EXPECT_EQ(d.threads, 1);
  auto big = burnin::OptionsFromJob(
      {{"duration_s", 1e308}, {"matrix_n", 1e308}, {"mem_mb", 1e9}, {"max_iterations", 1e300}, {"threads", 5000}});
  EXPECT_EQ(big.duration_s, 30 * 86400);
  EXPECT_EQ(big.matrix_n, 4096);
  EXPECT_EQ(big.mem_mb, 65536);
  EXPECT_EQ(big.max_iterations, 1000000000000000LL);
  EXPECT_EQ(big.threads, 1024);
  auto small = burnin::OptionsFromJob({{"duration_s", -5}, {"matrix_n", 2}, {"mem_mb", -1}, {"seed", -3}});
  EXPECT_EQ(small.duration_s, 0);
  EXPECT_EQ(small.matrix_n, 16);
  EXPECT_EQ(small.mem_mb, 1);
  EXPECT_EQ(small.seed, 1u) << "a negative seed is junk";
  auto junk = burnin::OptionsFromJob({{"duration_s", "NaN"},
                                      {"matrix_n", json::array({1})},
                                      {"mem_mb", json::object()},
                                      {"seed", 1.5},
                                      {"max_iterations", true},
                                      {"threads", nullptr}});
  EXPECT_EQ(junk.duration_s, 60);
  EXPECT_EQ(junk.matrix_n, 256);
  EXPECT_EQ(junk.mem_mb, 256);
  EXPECT_EQ(junk.seed, 1u);
  EXPECT_EQ(junk.max_iterations, 0);
  EXPECT_EQ(junk.threads, 1);
  EXPECT_EQ(burnin::OptionsFromJob({{"seed", 18446744073709551615ULL}}).seed, 18446744073709551615ULL);
  EXPECT_EQ(burnin::OptionsFromJob({{"matrix_n", std::nan("")}}).matrix_n, 256);
  EXPECT_GE(burnin::OptionsFromJob({{"threads", 0}}).threads, 1) << "0: every CPU the task may use";
  EXPECT_NO_THROW(burnin::OptionsFromJob(json("not an object")));
}

TEST(BurnIn, ATinyRealRunReturnsIterationsWithPositiveFigures) {
  json job = {{"duration_s", 0.3}, {"matrix_n", 32}, {"mem_mb", 1}};
  int calls = 0;
  json d = burnin::RunBurnInRankJob(job, "n1", 0, [&](const json& rec) {
    EXPECT_EQ(rec["i"], calls);
    ++calls;
  });
  ASSERT_FALSE(d.contains("error")) << d.dump();
  EXPECT_EQ(d["completed"], true);
  EXPECT_FALSE(d.contains("cancelled"));
  EXPECT_GE(d["seconds"].get<double>(), 0.3);
  EXPECT_EQ(d["inputs"]["matrix_n"], 32);
  EXPECT_EQ(d["inputs"]["kernel"], burnin::KernelId());
  const json& it = d["iterations"];
  ASSERT_GE(it.size(), 2u) << d.dump();
  EXPECT_EQ(d["iteration_count"], calls);
  EXPECT_EQ(it.size(), static_cast<size_t>(calls)) << "fewer than 10000: none dropped";
  double last_t = -1;
  for (const auto& r : it) {
    EXPECT_GT(r["gemm_gflops"].get<double>(), 0) << r.dump();
    EXPECT_GT(r["mem_gbps"].get<double>(), 0) << r.dump();
    EXPECT_GE(r["t"].get<double>(), last_t);
    last_t = r["t"].get<double>();
    // The inputs never change: every iteration computes the same bits.
    EXPECT_EQ(r["gemm_sum"], it[0]["gemm_sum"]);
    EXPECT_EQ(r["mem_sum"], it[0]["mem_sum"]);
  }
  EXPECT_EQ(it[0]["gemm_sum"].get<std::string>().size(), 16u);
  ASSERT_EQ(d["distinct_sums"]["gemm"].size(), 1u);
  EXPECT_EQ(d["distinct_sums"]["gemm"][0]["count"], calls);

  // Another "node" with two threads computes the same bits: what the vote relies on.
  json job2 = {{"duration_s", 3600}, {"max_iterations", 2}, {"matrix_n", 32}, {"mem_mb", 1}, {"threads", 2}};
  json d2 = burnin::RunBurnInRankJob(job2, "n2", 1);
  ASSERT_EQ(d2["iterations"].size(), 2u) << d2.dump();
  EXPECT_EQ(d2["iterations"][0]["gemm_sum"], it[0]["gemm_sum"]);
  EXPECT_EQ(d2["iterations"][0]["mem_sum"], it[0]["mem_sum"]);
  // Another seed: other inputs, other bits.
  json d3 = burnin::RunBurnInRankJob({{"duration_s", 0}, {"matrix_n", 32}, {"mem_mb", 1}, {"seed", 2}}, "n3", 2);
  EXPECT_NE(d3["iterations"][0]["gemm_sum"], it[0]["gemm_sum"]);
  EXPECT_NE(d3["iterations"][0]["mem_sum"], it[0]["mem_sum"]);

  json s = burnin::Summarize({{"n1", d}, {"n2", d2}}, {});
  EXPECT_EQ(s["sdc_vote"], "majority");
  EXPECT_EQ(s["sdc"].size(), 0u) << s.dump();
  EXPECT_EQ(s["sdc_compared"]["iterations"], 2);
  EXPECT_EQ(s["lost"].size(), 0u);
  EXPECT_GT(s["fleet"]["gemm_gflops"]["median"].get<double>(), 0);
  // The seed-2 node ran other inputs: left out of the vote, not taken for corruption.
  json s3 = burnin::Summarize({{"n1", d}, {"n2", d2}, {"n3", d3}}, {});
  EXPECT_EQ(s3["sdc"].size(), 0u) << s3.dump();
  ASSERT_EQ(s3["not_compared"].size(), 1u);
  EXPECT_EQ(s3["not_compared"][0]["node"], "n3");
}

TEST(BurnIn, MaxIterationsAndCancellationEndTheRun) {
  json d =
      burnin::RunBurnInRankJob({{"duration_s", 3600}, {"max_iterations", 3}, {"matrix_n", 16}, {"mem_mb", 1}}, "n1", 0);
  EXPECT_EQ(d["iteration_count"], 3);
  EXPECT_EQ(d["completed"], true);

  util::CancelFlag() = true;
  json c = burnin::RunBurnInRankJob({{"duration_s", 3600}, {"matrix_n", 16}, {"mem_mb", 1}}, "n2", 1);
  util::CancelFlag() = false;
  EXPECT_EQ(c["completed"], false);
  EXPECT_EQ(c["cancelled"], true);
  EXPECT_EQ(c["iterations"].size(), 0u);
  // Cancelled by the operator is not lost.
  json s = burnin::Summarize({{"n1", d}, {"n2", c}}, {});
  EXPECT_EQ(s["lost"].size(), 0u) << s.dump();
  EXPECT_EQ(s["sdc_vote"], "single node");
}

// Linux overcommits: memory the node lacks would end in the OOM killer, so it is refused with
// the figures before anything is allocated.
TEST(BurnIn, MemoryTheNodeDoesNotHaveIsAnErrorNotACrash) {
  auto avail = MemAvailableMb();
  const double need = 65536 + 3 * 128;  // mem_mb 65536 and three 4096 x 4096 matrices
  if (!avail || *avail * 0.9 >= need) GTEST_SKIP() << "this machine has the memory";
  // One iteration at most, should the figures ever let it run.
  json d = burnin::RunBurnInRankJob({{"matrix_n", 4096}, {"mem_mb", 65536}, {"duration_s", 0}, {"max_iterations", 1}},
                                    "n1", 0);
  ASSERT_TRUE(d.contains("error")) << d.dump();
  EXPECT_NE(d["error"].get<std::string>().find("MiB available"), std::string::npos) << d.dump();
  EXPECT_EQ(d["completed"], false);
  json s = burnin::Summarize({{"n1", d}}, {});
  ASSERT_EQ(s["lost"].size(), 1u);
  EXPECT_EQ(s["lost"][0]["reason"], d["error"]);
}

// Past 10000 records only every k-th is kept (k doubling), always the multiples of k, so nodes
// decimated alike still meet at the same indices; the tally of sums still counts every iteration.
TEST(BurnIn, ALongRunKeepsEveryKthIteration) {
  json d = burnin::RunBurnInRankJob({{"duration_s", 3600}, {"max_iterations", 12000}, {"matrix_n", 16}, {"mem_mb", 1}},
                                    "n1", 0);
  EXPECT_EQ(d["iteration_count"], 12000);
  EXPECT_EQ(d["decimated"], 2);
  EXPECT_EQ(d["iterations"].size(), 6000u);
  for (const auto& r : d["iterations"]) ASSERT_EQ(r["i"].get<long long>() % 2, 0) << r.dump();
  EXPECT_EQ(d["distinct_sums"]["gemm"][0]["count"], 12000);
}

TEST(BurnIn, ANodeWhoseGemmSumDiffersFromIterationFiveOnIsNamed) {
  Series bad;
  bad.gemm_sum = [](int i) { return i >= 5 ? kSumB : kSumA; };
  bad.mem_sum = [](int i) { return i == 9 ? kMemB : kMemA; };
  json s = burnin::Summarize({{"a", Doc("a")}, {"b", Doc("b", bad)}, {"c", Doc("c")}}, {});
  EXPECT_EQ(s["sdc_vote"], "majority");
  EXPECT_EQ(s["sdc_compared"]["nodes"], 3);
  EXPECT_EQ(s["sdc_compared"]["iterations"], 12);
  ASSERT_EQ(s["sdc"].size(), 2u) << s.dump();
  EXPECT_EQ(s["sdc"][0],
            (json{{"node", "b"}, {"kind", "gemm"}, {"first_iteration", 5}, {"count", 7}, {"by", "peers"}}));
  EXPECT_EQ(s["sdc"][1], (json{{"node", "b"}, {"kind", "mem"}, {"first_iteration", 9}, {"count", 1}, {"by", "peers"}}));
  EXPECT_EQ(s["sdc_undecided"], 0);
  // A node that is wrong from its very first iteration is still the odd one out.
  Series wrong;
  wrong.gemm_sum = [](int) { return kSumB; };
  json w = burnin::Summarize({{"a", Doc("a")}, {"b", Doc("b")}, {"c", Doc("c", wrong)}}, {});
  ASSERT_EQ(w["sdc"].size(), 1u) << w.dump();
  EXPECT_EQ(w["sdc"][0]["node"], "c");
  EXPECT_EQ(w["sdc"][0]["first_iteration"], 0);
  EXPECT_EQ(w["sdc"][0]["count"], 12);
}

// Without a strict majority nobody is vouched for: two against two, or one against one.
TEST(BurnIn, ATieVouchesForNobody) {
  Series other;
  other.gemm_sum = [](int) { return kSumB; };
  json s = burnin::Summarize({{"a", Doc("a")}, {"b", Doc("b")}, {"c", Doc("c", other)}, {"d", Doc("d", other)}}, {});
  EXPECT_EQ(s["sdc"].size(), 0u) << s.dump();
  EXPECT_EQ(s["sdc_undecided"], 12);
  EXPECT_EQ(s["sdc_undecided_first"], 0);
  EXPECT_EQ(s["sdc_undecided_nodes"], (json{"a", "b", "c", "d"}));
  Series once;
  once.gemm_sum = [](int i) { return i == 4 ? kSumB : kSumA; };
  json two = burnin::Summarize({{"a", Doc("a")}, {"b", Doc("b", once)}}, {});
  EXPECT_EQ(two["sdc_undecided"], 1);
  EXPECT_EQ(two["sdc_undecided_first"], 4);
  // b's own iterations disagree (one off its usual sum): named by itself, since no peer could.
  ASSERT_EQ(two["sdc"].size(), 1u) << two.dump();
  EXPECT_EQ(two["sdc"][0]["node"], "b");
  EXPECT_EQ(two["sdc"][0]["by"], "self");
  EXPECT_EQ(two["sdc"][0]["first_iteration"], 4);
}

// One node: no vote, said so; it still checks its iterations against each other (inputs never
// change), over every iteration it ran when its tally says more than its kept records.
TEST(BurnIn, OneNodeAloneCannotBeVotedOnButStillChecksItself) {
  json s = burnin::Summarize({{"a", Doc("a")}}, {});
  EXPECT_EQ(s["sdc_vote"], "single node");
  EXPECT_EQ(s["sdc"].size(), 0u);
  Series flaky;
  flaky.mem_sum = [](int i) { return i == 7 ? kMemB : kMemA; };
  json f = burnin::Summarize({{"a", Doc("a", flaky)}}, {});
  ASSERT_EQ(f["sdc"].size(), 1u) << f.dump();
  EXPECT_EQ(f["sdc"][0], (json{{"node", "a"}, {"kind", "mem"}, {"first_iteration", 7}, {"count", 1}, {"by", "self"}}));
  // Decimated: the kept records agree, the node's tally saw 3 odd sums among 20000.
  json d = Doc("a");
  d["decimated"] = 2;
  d["distinct_sums"] = {{"gemm", json::array({{{"sum", kSumA}, {"count", 19997}, {"first", 0}},
                                              {{"sum", kSumB}, {"count", 3}, {"first", 12345}}})},
                        {"mem", json::array({{{"sum", kMemA}, {"count", 20000}, {"first", 0}}})}};
  json t = burnin::Summarize({{"a", d}}, {});
  ASSERT_EQ(t["sdc"].size(), 1u) << t.dump();
  EXPECT_EQ(t["sdc"][0]["count"], 3);
  EXPECT_EQ(t["sdc"][0]["first_iteration"], 12345);
}

TEST(BurnIn, DriftIsTheLastQuarterAgainstTheFirst) {
  // 12 iterations: the first quarter (3) at 100, the middle at 90, the last quarter at 80.
  Series slowing;
  slowing.gflops = [](int i) { return i < 3 ? 100.0 : i < 9 ? 90.0 : 80.0; };
  slowing.gbps = [](int i) { return i < 3 ? 20.0 : 21.0; };
  json s = burnin::Summarize({{"a", Doc("a")}, {"b", Doc("b", slowing)}}, {});
  const json& b = s["nodes"][1];
  EXPECT_EQ(b["node"], "b");
  EXPECT_DOUBLE_EQ(b["gemm_drift"].get<double>(), -0.2);
  EXPECT_DOUBLE_EQ(b["mem_drift"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(b["gemm_gflops"].get<double>(), 90);
  EXPECT_DOUBLE_EQ(s["nodes"][0]["gemm_drift"].get<double>(), 0);
  EXPECT_EQ(s["worst_drift"], (json{{"node", "b"}, {"kind", "gemm"}, {"drift", -0.2}, {"iterations", 12}}));
  // A slow first iteration (a cold cache) among the first quarter's does not move its median.
  Series warmup;
  warmup.count = 16;
  warmup.gflops = [](int i) { return i == 0 ? 10.0 : i >= 12 ? 95.0 : 100.0; };
  json w = burnin::Summarize({{"a", Doc("a", warmup)}}, {});
  EXPECT_DOUBLE_EQ(w["nodes"][0]["gemm_drift"].get<double>(), -0.05);
  // Under 8 iterations: no drift, and why.
  Series brief;
  brief.count = 7;
  json r = burnin::Summarize({{"a", Doc("a", brief)}}, {});
  EXPECT_TRUE(r["nodes"][0]["gemm_drift"].is_null());
  EXPECT_EQ(r["nodes"][0]["drift_why"], "7 iteration(s): drift needs 8");
  EXPECT_FALSE(r.contains("worst_drift"));
  EXPECT_EQ(r["drift_why"], "no node ran 8 iterations");
}

TEST(BurnIn, TheSlowestNodeIsNamedWithItsRatioToTheFleetMedian) {
  auto at = [](double g, double m) {
    Series s;
    s.gflops = [g](int) { return g; };
    s.gbps = [m](int) { return m; };
    return s;
  };
  json s =
      burnin::Summarize({{"a", Doc("a", at(100, 20))}, {"b", Doc("b", at(110, 18))}, {"c", Doc("c", at(90, 20))}}, {});
  const json& g = s["fleet"]["gemm_gflops"];
  EXPECT_EQ(g["nodes"], 3);
  EXPECT_DOUBLE_EQ(g["median"].get<double>(), 100);
  EXPECT_EQ(g["slowest"]["node"], "c");
  EXPECT_DOUBLE_EQ(g["slowest"]["value"].get<double>(), 90);
  EXPECT_DOUBLE_EQ(g["slowest"]["ratio"].get<double>(), 0.9);
  const json& m = s["fleet"]["mem_gbps"];
  EXPECT_EQ(m["slowest"]["node"], "b");
  EXPECT_DOUBLE_EQ(m["slowest"]["ratio"].get<double>(), 0.9);
  // An even count: the median is the mean of the middle two.
  json four = burnin::Summarize({{"a", Doc("a", at(100, 20))},
                                 {"b", Doc("b", at(110, 20))},
                                 {"c", Doc("c", at(80, 20))},
                                 {"d", Doc("d", at(120, 20))}},
                                {});
  EXPECT_DOUBLE_EQ(four["fleet"]["gemm_gflops"]["median"].get<double>(), 105);
  EXPECT_DOUBLE_EQ(four["fleet"]["gemm_gflops"]["slowest"]["ratio"].get<double>(), 0.7619);
}

TEST(BurnIn, LostNodesAreListedAndTheOthersStillSummarized) {
  Series died;
  died.count = 6;
  json c = Doc("c", died);
  c["completed"] = false;  // no cancel: died mid-run (its streamed records assembled by the caller)
  json e = Doc("e");
  e["completed"] = false;
  e["cancelled"] = true;
  json s = burnin::Summarize({{"a", Doc("a")}, {"b", Doc("b")}, {"c", c}, {"e", e}},
                             {{"d", "srun: error: n4: task 3: Killed"}});
  ASSERT_EQ(s["lost"].size(), 2u) << s.dump();
  EXPECT_EQ(s["lost"][0], (json{{"node", "c"},
                                {"reason", "stopped before the end: neither completed nor cancelled"},
                                {"last_iteration", 5},
                                {"last_t", 6.0}}));
  EXPECT_EQ(s["lost"][1], (json{{"node", "d"},
                                {"reason", "srun: error: n4: task 3: Killed"},
                                {"last_iteration", nullptr},
                                {"last_t", nullptr}}));
  EXPECT_EQ(s["nodes"].size(), 5u);
  EXPECT_DOUBLE_EQ(s["nodes"][0]["gemm_gflops"].get<double>(), 100);
  EXPECT_EQ(s["nodes"][3]["node"], "d");
  EXPECT_TRUE(s["nodes"][3]["gemm_gflops"].is_null());
  EXPECT_EQ(s["nodes"][4]["cancelled"], true);
  EXPECT_FALSE(s["nodes"][4].contains("lost"));
  EXPECT_EQ(s["sdc_compared"]["nodes"], 4) << "the lost node's iterations still vote";
  EXPECT_EQ(s["fleet"]["gemm_gflops"]["nodes"], 4);
  EXPECT_EQ(s["sdc"].size(), 0u);
}

TEST(BurnIn, JunkDocumentsNeverThrow) {
  json bad_rec = json::array({"x",
                              nullptr,
                              json::array({1, 2}),
                              {{"i", "0"}, {"gemm_gflops", "NaN"}},
                              {{"i", -1}, {"gemm_sum", kSumA}},
                              {{"i", 1.5}, {"gemm_sum", kSumA}},
                              {{"i", 1e308}, {"gemm_sum", kSumA}},
                              {{"i", 2}, {"gemm_gflops", 1e308}, {"mem_gbps", -5}, {"gemm_sum", 7}, {"t", "late"}},
                              {{"i", 2}, {"gemm_gflops", 1e308}, {"gemm_sum", kSumB}},
                              {{"i", 3}, {"gemm_gflops", 1e308}, {"mem_gbps", 1e-300}, {"gemm_sum", "\xff\xfe"}}});
  std::map<std::string, json> docs = {
      {"s", "a string"},
      {"n", nullptr},
      {"arr", json::array({1, 2, 3})},
      {"o1", {{"iterations", "many"}, {"inputs", json::array()}, {"completed", "yes"}, {"rank", "zero"}}},
      {"o2", {{"iterations", bad_rec}, {"inputs", {{"matrix_n", "big"}, {"seed", -1}}}, {"error", "\xc3\x28 bad"}}},
      {"o3",
       {{"iterations", bad_rec},
        {"completed", true},
        {"decimated", 1e308},
        {"iteration_count", "NaN"},
        {"distinct_sums",
         {{"gemm", json::array({{{"sum", 1}, {"count", 1e308}, {"first", -4}}, "x"})},
          {"mem", "none"},
          {"gemm_other", {{"count", 1e20}, {"first", "no"}}}}}}},
      {"\x1b[31mevil\n", Doc("x")},
  };
  json s;
  ASSERT_NO_THROW(s = burnin::Summarize(docs, {{"gone", ""}, {"\xff", "\xff"}}));
  EXPECT_NO_THROW(s.dump()) << "valid UTF-8 throughout";
  json r = {{"summary", s}, {"options", {{"matrix_n", "x"}}}};
  EXPECT_NO_THROW(bench::Grade(burnin::BurnInMetrics(r), Bars()));
  EXPECT_NO_THROW(burnin::RenderBurnIn(r));
  for (json junk : {json(), json("x"), json::array(), json{{"summary", "x"}},
                    json{{"summary", {{"nodes", "x"}, {"sdc", json::array({1, "a", nullptr})}, {"fleet", 3}}}},
                    json{{"summary",
                          {{"nodes", json::array({{{"node", 1}, {"gemm_gflops", "fast"}, {"gemm_drift", 1e308}}})},
                           {"sdc", json::array({{{"node", nullptr}, {"count", "many"}}})},
                           {"sdc_undecided", 1e308},
                           {"sdc_undecided_nodes", "a"},
                           {"fleet", {{"gemm_gflops", {{"nodes", 1e308}, {"slowest", {{"ratio", 1e308}}}}}}},
                           {"worst_drift", {{"drift", "-0.2"}}},
                           {"lost", json::array({{{"node", "d"}, {"last_t", 1e308}}, 5})}}},
                         {"options", json::array()}}}) {
    EXPECT_NO_THROW(bench::Grade(burnin::BurnInMetrics(junk), Bars())) << junk.dump();
    EXPECT_NO_THROW(burnin::RenderBurnIn(junk)) << junk.dump();
  }
  EXPECT_NO_THROW(burnin::Summarize({}, {}));
  EXPECT_EQ(burnin::Summarize({}, {})["sdc_vote"], "no iterations");
}

TEST(BurnIn, GradesFollowOneFactFlippedAtATime) {
  const std::map<std::string, json> clean = {{"a", Doc("a")}, {"b", Doc("b")}, {"c", Doc("c")}};
  json base = Result(clean);
  for (const char* id : {"burnin.sdc", "burnin.slowest-ratio", "burnin.drift", "burnin.completed", "burnin.lost-nodes"})
    EXPECT_EQ(GradeOf(base, id)["verdict"], "PASS") << id << ": " << GradeOf(base, id).dump();
  EXPECT_DOUBLE_EQ(GradeOf(base, "burnin.sdc")["value"].get<double>(), 0);
  EXPECT_NE(GradeOf(base, "burnin.sdc")["detail"].get<std::string>().find("3 nodes computed the same bits"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(GradeOf(base, "burnin.slowest-ratio")["value"].get<double>(), 1);
  // The GPU-only grades on a CPU run: SKIP saying why, never PASS.
  for (const char* id : {"burnin.gpu-errors", "burnin.throttled"}) {
    EXPECT_EQ(GradeOf(base, id)["verdict"], "SKIP") << id;
    EXPECT_NE(GradeOf(base, id).dump().find("not a GPU burn-in"), std::string::npos) << GradeOf(base, id).dump();
  }

  // SDC on b.
  auto docs = clean;
  Series bad;
  bad.gemm_sum = [](int i) { return i >= 5 ? kSumB : kSumA; };
  docs["b"] = Doc("b", bad);
  json sdc = GradeOf(Result(docs), "burnin.sdc");
  EXPECT_EQ(sdc["verdict"], "FAIL");
  EXPECT_DOUBLE_EQ(sdc["value"].get<double>(), 1);
  EXPECT_NE(sdc["detail"].get<std::string>().find("b: GEMM result differed from the majority's at 7 iteration(s), "
                                                  "from iteration 5"),
            std::string::npos)
      << sdc.dump();
  // A tie: no node named, and still a FAIL saying the nodes disagree.
  Series other;
  other.gemm_sum = [](int) { return kSumB; };
  json tie = GradeOf(Result({{"a", Doc("a")}, {"b", Doc("b", other)}}), "burnin.sdc");
  EXPECT_EQ(tie["verdict"], "FAIL");
  EXPECT_NE(tie["detail"].get<std::string>().find("no majority"), std::string::npos) << tie.dump();

  // One node: neither the vote nor the fleet can be measured.
  json one = Result({{"a", Doc("a")}});
  EXPECT_EQ(GradeOf(one, "burnin.sdc")["verdict"], "SKIP");
  EXPECT_NE(GradeOf(one, "burnin.sdc")["reason"].get<std::string>().find("one node"), std::string::npos);
  EXPECT_EQ(GradeOf(one, "burnin.slowest-ratio")["verdict"], "SKIP");
  EXPECT_EQ(GradeOf(one, "burnin.drift")["verdict"], "PASS");

  // c slower: 0.93 of the median warns, 0.85 fails.
  for (auto [g, verdict] : {std::pair{93.0, "WARN"}, std::pair{85.0, "FAIL"}}) {
    auto slow = clean;
    Series s;
    s.gflops = [g = g](int) { return g; };
    slow["c"] = Doc("c", s);
    json grade = GradeOf(Result(slow), "burnin.slowest-ratio");
    EXPECT_EQ(grade["verdict"], verdict) << grade.dump();
    EXPECT_NE(grade["detail"].get<std::string>().find("slowest node c"), std::string::npos) << grade.dump();
  }

  // a slowing down: 7 % warns, 20 % fails.
  for (auto [end, verdict] : {std::pair{93.0, "WARN"}, std::pair{80.0, "FAIL"}}) {
    auto drifting = clean;
    Series s;
    s.gflops = [end = end](int i) { return i < 9 ? 100.0 : end; };
    drifting["a"] = Doc("a", s);
    json grade = GradeOf(Result(drifting), "burnin.drift");
    EXPECT_EQ(grade["verdict"], verdict) << grade.dump();
    EXPECT_NE(grade["detail"].get<std::string>().find("a: GEMM throughput"), std::string::npos) << grade.dump();
  }
  // Too short for a drift: not measured, and why.
  Series brief;
  brief.count = 5;
  json short_run = GradeOf(Result({{"a", Doc("a", brief)}, {"b", Doc("b", brief)}}), "burnin.drift");
  EXPECT_EQ(short_run["verdict"], "SKIP");
  EXPECT_EQ(short_run["reason"], "no node ran 8 iterations");

  // d lost.
  json lost = GradeOf(Result(clean, {{"d", "node failure"}}), "burnin.lost-nodes");
  EXPECT_EQ(lost["verdict"], "FAIL");
  EXPECT_DOUBLE_EQ(lost["value"].get<double>(), 1);
  EXPECT_NE(lost["detail"].get<std::string>().find("d (node failure, no iteration came back)"), std::string::npos)
      << lost.dump();

  // Nothing ran: every grade SKIP, none PASS.
  json none = Result({});
  for (const char* id : {"burnin.sdc", "burnin.slowest-ratio", "burnin.drift", "burnin.completed", "burnin.lost-nodes"})
    EXPECT_EQ(GradeOf(none, id)["verdict"], "SKIP") << id;

  // Stopped early (Ctrl-C): b ran 3 s of the 12 asked and is not lost; the run proves only that.
  auto stopped = clean;
  Series part;
  part.count = 3;
  stopped["b"] = Doc("b", part);
  stopped["b"]["completed"] = false;
  stopped["b"]["cancelled"] = true;
  json early = Result(stopped);
  early["interrupted"] = true;
  json done = GradeOf(early, "burnin.completed");
  EXPECT_EQ(done["verdict"], "FAIL") << done.dump();
  EXPECT_DOUBLE_EQ(done["value"].get<double>(), 0.25);
  EXPECT_NE(done["detail"].get<std::string>().find("b stopped after 3.0 s of the 12 s asked (the run was interrupted)"),
            std::string::npos)
      << done.dump();
  EXPECT_EQ(GradeOf(early, "burnin.lost-nodes")["verdict"], "PASS") << "cancelled is not lost";
  stopped["b"]["seconds"] = 11.5;
  EXPECT_EQ(GradeOf(Result(stopped), "burnin.completed")["verdict"], "WARN");
}

TEST(BurnIn, TheTableShowsTheRunAndEscapesWhatNodesWrote) {
  Series bad;
  bad.gemm_sum = [](int i) { return i >= 5 ? kSumB : kSumA; };
  json r = Result({{"a", Doc("a")}, {"b", Doc("b", bad)}, {"c", Doc("c")}}, {{"d", "node failure"}});
  std::string text = burnin::RenderBurnIn(r);
  EXPECT_NE(text.find("Burn-in: 4 node(s), 12 s, GEMM fp64 n=256, memory 256 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("100.00"), std::string::npos) << text;
  EXPECT_NE(text.find("SDC: b's GEMM result differed from the majority's from iteration 5 (7 iteration(s))"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Lost: d (node failure), no iteration came back"), std::string::npos) << text;
  EXPECT_NE(text.find("LOST: node failure"), std::string::npos) << text;

  json hostile = Result({{"a\x1b[2J\nSDC: none", Doc("a")}}, {{"b", "gone\x1b]0;title\x07"}});
  std::string h = burnin::RenderBurnIn(hostile);
  EXPECT_EQ(h.find('\x1b'), std::string::npos) << h;
  EXPECT_EQ(h.find('\x07'), std::string::npos) << h;
  EXPECT_EQ(h.find("\nSDC: none"), std::string::npos) << "a node's name cannot forge a line:\n" << h;
}

// Each group of alike nodes votes on its own: a corrupted node among the seed-2 nodes is named
// although the seed-1 nodes are more; a node alike to no other is left out, with why.
TEST(BurnIn, EveryGroupOfAlikeNodesVotesWithinItself) {
  auto seeded = [](const std::string& node, int seed, const Series& s = {}) {
    json d = Doc(node, s);
    d["inputs"]["seed"] = seed;
    return d;
  };
  Series bad;
  bad.mem_sum = [](int i) { return i >= 3 ? kMemB : kMemA; };
  json s = burnin::Summarize({{"a", Doc("a")},
                              {"b", Doc("b")},
                              {"c", Doc("c")},
                              {"x", seeded("x", 2)},
                              {"y", seeded("y", 2)},
                              {"z", seeded("z", 2, bad)},
                              {"lone", seeded("lone", 3)}},
                             {});
  EXPECT_EQ(s["sdc_vote"], "majority");
  EXPECT_EQ(s["sdc_compared"]["nodes"], 6);
  EXPECT_EQ(s["sdc_compared"]["groups"], 2);
  ASSERT_EQ(s["sdc"].size(), 1u) << s.dump();
  EXPECT_EQ(s["sdc"][0], (json{{"node", "z"}, {"kind", "mem"}, {"first_iteration", 3}, {"count", 9}, {"by", "peers"}}));
  ASSERT_EQ(s["not_compared"].size(), 1u) << s.dump();
  EXPECT_EQ(s["not_compared"][0]["node"], "lone");
  EXPECT_NE(s["not_compared"][0]["why"].get<std::string>().find("no other node ran"), std::string::npos);
  // The fleet is the largest group.
  EXPECT_EQ(s["fleet"]["gemm_gflops"]["nodes"], 3);
  // Two nodes alike to no other: nothing to vote on, and the grade says so instead of passing.
  json apart = burnin::Summarize({{"a", Doc("a")}, {"x", seeded("x", 2)}}, {});
  EXPECT_EQ(apart["sdc_vote"], "no alike nodes");
  json r = {{"options", {{"duration_s", 12}, {"matrix_n", 256}, {"mem_mb", 256}}}, {"summary", apart}};
  json g = GradeOf(r, "burnin.sdc");
  EXPECT_EQ(g["verdict"], "SKIP") << g.dump();
  EXPECT_NE(g["reason"].get<std::string>().find("no two nodes ran the same inputs"), std::string::npos);
}

// A long run keeps every k-th iteration; the vote sees those, and the named node's own tally of
// every iteration counts the ones between.
TEST(BurnIn, UnderDecimationTheNamedNodesCountIsOfEveryIteration) {
  auto decimated = [](const std::string& node, bool bad) {
    Series s;
    s.gemm_sum = [bad](int i) { return bad && i >= 5 ? kSumB : kSumA; };
    json d = Doc(node, s);
    json kept = json::array();
    for (auto& r : d["iterations"])
      if (r["i"].get<int>() % 2 == 0) kept.push_back(r);
    d["iterations"] = kept;
    d["decimated"] = 2;
    d["distinct_sums"]["gemm"] =
        bad ? json::array({{{"sum", kSumA}, {"count", 5}, {"first", 0}}, {{"sum", kSumB}, {"count", 7}, {"first", 5}}})
            : json::array({{{"sum", kSumA}, {"count", 12}, {"first", 0}}});
    d["distinct_sums"]["mem"] = json::array({{{"sum", kMemA}, {"count", 12}, {"first", 0}}});
    return d;
  };
  json s =
      burnin::Summarize({{"a", decimated("a", false)}, {"b", decimated("b", true)}, {"c", decimated("c", false)}}, {});
  EXPECT_EQ(s["sdc_compared"]["iterations"], 6) << "iterations 0, 2, ... 10 were kept";
  ASSERT_EQ(s["sdc"].size(), 1u) << s.dump();
  EXPECT_EQ(s["sdc"][0]["node"], "b");
  EXPECT_EQ(s["sdc"][0]["count"], 7) << "the kept records alone show 3 (6, 8, 10)";
  EXPECT_EQ(s["sdc"][0]["first_iteration"], 5) << "the kept records alone show 6";
}

// Slurm's task cgroup caps the job below the node's free memory: the least room over every level.
TEST(BurnIn, TheCgroupsMemoryLimitIsReadAtEveryLevel) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / ("burnin-cgroup-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto put = [](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  };
  // v2: the job's level caps at 1 GiB with 256 MiB used; the step's level has no limit ("max").
  put(root / "system.slice/slurmstepd.scope/job_7/memory.max", "1073741824\n");
  put(root / "system.slice/slurmstepd.scope/job_7/memory.current", "268435456\n");
  put(root / "system.slice/slurmstepd.scope/job_7/step_0/memory.max", "max\n");
  put(root / "system.slice/slurmstepd.scope/job_7/step_0/memory.current", "1048576\n");
  auto v2 = burnin::CgroupMemoryLeftMb("0::/system.slice/slurmstepd.scope/job_7/step_0\n", root);
  ASSERT_TRUE(v2.has_value());
  EXPECT_DOUBLE_EQ(*v2, 768);
  // A lower limit above it wins.
  put(root / "system.slice/memory.max", "536870912");
  put(root / "system.slice/memory.current", "0");
  EXPECT_DOUBLE_EQ(*burnin::CgroupMemoryLeftMb("0::/system.slice/slurmstepd.scope/job_7/step_0", root), 512);
  // Over its limit: nothing left, never negative.
  put(root / "system.slice/memory.current", "999999999999");
  EXPECT_DOUBLE_EQ(*burnin::CgroupMemoryLeftMb("0::/system.slice/slurmstepd.scope/job_7/step_0", root), 0);
  // v1: the memory controller's line; unlimited (near 2^63) is no limit.
  put(root / "memory/slurm/uid_0/job_8/memory.limit_in_bytes", "2147483648");
  put(root / "memory/slurm/uid_0/job_8/memory.usage_in_bytes", "1073741824");
  EXPECT_DOUBLE_EQ(*burnin::CgroupMemoryLeftMb("12:cpuset:/slurm/uid_0/job_8\n4:memory:/slurm/uid_0/job_8\n", root),
                   1024);
  put(root / "memory/slurm/uid_0/job_9/memory.limit_in_bytes", "9223372036854771712");
  EXPECT_FALSE(burnin::CgroupMemoryLeftMb("4:memory:/slurm/uid_0/job_9", root).has_value());
  // No limit anywhere, junk, a path climbing out of the root: nothing read, nothing thrown.
  EXPECT_FALSE(burnin::CgroupMemoryLeftMb("0::/user.slice", root).has_value());
  EXPECT_FALSE(burnin::CgroupMemoryLeftMb("", root).has_value());
  EXPECT_FALSE(burnin::CgroupMemoryLeftMb("junk\n::\n0::/../../etc\n4:memory:/../..", root).has_value());
  put(root / "junkdir/memory.max", "12abc");
  EXPECT_FALSE(burnin::CgroupMemoryLeftMb("0::/junkdir", root).has_value());
  fs::remove_all(root);
  // This process: whatever it reads, it reads without throwing; the CPUs it may use are counted.
  std::ifstream in("/proc/self/cgroup");
  std::string self((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NO_THROW(burnin::CgroupMemoryLeftMb(self));
  EXPECT_GE(burnin::CpusAllowed(), 1);
  EXPECT_LE(burnin::CpusAllowed(), static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_EQ(burnin::OptionsFromJob({{"threads", 0}}).threads, burnin::CpusAllowed());
}

// ---- The GPU load (burnin --gpu): the node side against the fake helper (tests/fake_gpu) and the
// fake NVML (tests/fake_nvml); the helper's CUDA half needs a GPU (scripts/device-check.sh burnin).

namespace {

std::string FakeHelper() {
  return (clustermax::testing::SourceDir() / "tests" / "fake_gpu" / "clustermax-gpu").string();
}

struct GpuRun {
  clustermax::testing::Shell shell;
  json result;
};
GpuRun RunGpuBurnIn(const std::string& name, const std::string& env, const std::string& args = "--duration 1") {
  auto out = clustermax::testing::ScratchDir("burnin-gpu-" + name);
  GpuRun r;
  r.shell = clustermax::testing::RunBinary(
      "burnin --local --gpu --exit-zero --helper " + FakeHelper() + " " + args + " --out " + out.string(),
      std::string("LD_LIBRARY_PATH=") + CLUSTERMAX_FAKE_NVML_DIR + " FAKE_GPU_NVML_UUIDS=1 " + env);
  std::ifstream f(out / "bench" / "burnin.json");
  if (f) r.result = json::parse(f, nullptr, false);
  return r;
}
const json* Grade(const json& result, const std::string& id) {
  if (!result.contains("grades") || !result["grades"].is_array()) return nullptr;
  for (const auto& m : result["grades"])
    if (m.value("metric", "") == id) return &m;
  return nullptr;
}
const json* UnitOf(const json& result, const std::string& suffix) {
  for (const auto& n : result["summary"]["nodes"])
    if (n.value("node", "").size() >= suffix.size() &&
        n["node"].get<std::string>().compare(n["node"].get<std::string>().size() - suffix.size(), suffix.size(),
                                             suffix) == 0)
      return &n;
  return nullptr;
}

}  // namespace

TEST(BurnInGpu, EveryGpuIsAUnitComparedWithItsAlikePeersWithTelemetry) {
  auto r = RunGpuBurnIn("sound", "FAKE_GPU_COUNT=3 FAKE_NVML_HEALTHY=1");
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  const json& s = r.result["summary"];
  ASSERT_EQ(s["nodes"].size(), 3u) << s.dump();
  EXPECT_EQ(s["sdc_vote"], "majority");
  EXPECT_EQ(s["sdc_compared"]["nodes"], 3);
  EXPECT_TRUE(s["sdc"].empty());
  EXPECT_TRUE(s["lost"].empty());
  const json* g1 = UnitOf(r.result, "/gpu1");
  ASSERT_NE(g1, nullptr);
  EXPECT_EQ((*g1)["gpu_name"], "NVIDIA H200");
  EXPECT_GT((*g1)["iterations"].get<int>(), 5);
  EXPECT_DOUBLE_EQ((*g1)["gemm_gflops"].get<double>(), 700000.0);
  // Telemetry from NVML, matched to the helper's GPU by UUID; the ECC counters read twice.
  ASSERT_TRUE(g1->contains("telemetry")) << g1->dump();
  EXPECT_DOUBLE_EQ((*g1)["telemetry"]["temperature_c_max"].get<double>(), 31.0);
  EXPECT_TRUE((*g1)["telemetry"]["held_back"].empty());
  ASSERT_TRUE(g1->contains("gpu_errors"));
  EXPECT_TRUE((*g1)["gpu_errors"].empty());
  EXPECT_EQ(r.result["options"]["backend"], "gpu");
  EXPECT_EQ(r.result["options"]["matrix_n"], 8192);
  for (const char* id :
       {"burnin.sdc", "burnin.gpu-errors", "burnin.throttled", "burnin.completed", "burnin.lost-nodes"}) {
    const json* m = Grade(r.result, id);
    ASSERT_NE(m, nullptr) << id;
    EXPECT_EQ((*m)["verdict"], "PASS") << id << " " << m->dump();
  }
  EXPECT_NE(r.shell.out.find("GEMM TFLOP/s"), std::string::npos) << r.shell.out;
  EXPECT_NE(r.shell.out.find("700.0"), std::string::npos) << r.shell.out;
}

// The helper's lines from a real H200 (scripts/device-check.sh, 2026-12-04: BF16 n=8192, 3 GiB
// triad, cuBLASLt 13.1 algorithm 66; the same sums in every repetition and in a second process),
// replayed by three GPUs: alike units vote together and agree; then one recorded sum is flipped.
TEST(BurnInGpu, ARealH200RunReplayedAgreesAndOneFlippedSumIsNamed) {
  std::string replay =
      " FAKE_GPU_REPLAY=" + clustermax::testing::Fixture("gpu/h200-burnin-helper-lines-2026-12-04.jsonl").string();
  auto r = RunGpuBurnIn("h200", "FAKE_GPU_COUNT=3 FAKE_NVML_HEALTHY=1" + replay);
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  const json& s = r.result["summary"];
  ASSERT_EQ(s["nodes"].size(), 3u) << s.dump();
  EXPECT_EQ(s["sdc_vote"], "majority");
  EXPECT_EQ(s["sdc_compared"]["nodes"], 3);
  EXPECT_EQ(s["sdc_compared"]["iterations"], 3);
  EXPECT_TRUE(s["sdc"].empty()) << s.dump();
  const json* g0 = UnitOf(r.result, "/gpu0");
  ASSERT_NE(g0, nullptr);
  EXPECT_EQ((*g0)["iterations"], 3);
  EXPECT_EQ((*g0)["completed"], true);
  // The medians of the recorded iterations: 705.5, 702.9 and 702.6 TFLOP/s; 4204.1, 4203.3 and
  // 4202.2 GB/s.
  EXPECT_NEAR((*g0)["gemm_gflops"].get<double>(), 702921.7, 0.1);
  EXPECT_NEAR((*g0)["mem_gbps"].get<double>(), 4203.3, 0.01);
  EXPECT_EQ((*Grade(r.result, "burnin.sdc"))["verdict"], "PASS");

  auto bad = RunGpuBurnIn("h200-flip", "FAKE_GPU_COUNT=3 FAKE_NVML_HEALTHY=1 FAKE_GPU_FLIP=1:1" + replay);
  ASSERT_EQ(bad.shell.code, 0) << bad.shell.out;
  const json& sdc = bad.result["summary"]["sdc"];
  ASSERT_EQ(sdc.size(), 1u) << bad.result["summary"].dump();
  EXPECT_NE(sdc[0]["node"].get<std::string>().find("/gpu1"), std::string::npos);
  EXPECT_EQ(sdc[0]["first_iteration"], 1);
  EXPECT_EQ((*Grade(bad.result, "burnin.sdc"))["verdict"], "FAIL");
}

TEST(BurnInGpu, AGpuComputingOtherBitsIsNamedFromItsFirstBadIteration) {
  auto r = RunGpuBurnIn("flip", "FAKE_GPU_COUNT=3 FAKE_NVML_HEALTHY=1 FAKE_GPU_FLIP=2:4");
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  const json& sdc = r.result["summary"]["sdc"];
  ASSERT_EQ(sdc.size(), 1u) << r.result["summary"].dump();
  EXPECT_NE(sdc[0]["node"].get<std::string>().find("/gpu2"), std::string::npos);
  EXPECT_EQ(sdc[0]["kind"], "gemm");
  EXPECT_EQ(sdc[0]["by"], "peers");
  EXPECT_EQ(sdc[0]["first_iteration"], 4);
  const json* m = Grade(r.result, "burnin.sdc");
  ASSERT_NE(m, nullptr);
  EXPECT_EQ((*m)["verdict"], "FAIL");
  EXPECT_NE((*m)["detail"].get<std::string>().find("/gpu2"), std::string::npos) << m->dump();
}

TEST(BurnInGpu, AGpuWhoseHelperDiesIsLostAndTheOthersFinish) {
  auto r = RunGpuBurnIn("die", "FAKE_GPU_COUNT=3 FAKE_NVML_HEALTHY=1 FAKE_GPU_DIE=0:3");
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  const json& lost = r.result["summary"]["lost"];
  ASSERT_EQ(lost.size(), 1u) << r.result["summary"].dump();
  EXPECT_NE(lost[0]["node"].get<std::string>().find("/gpu0"), std::string::npos);
  EXPECT_NE(lost[0]["reason"].get<std::string>().find("signal 9"), std::string::npos) << lost.dump();
  EXPECT_EQ(lost[0]["last_iteration"], 2);  // the iterations it reported before dying are kept
  EXPECT_EQ((*UnitOf(r.result, "/gpu1"))["completed"], true);
  EXPECT_EQ((*UnitOf(r.result, "/gpu2"))["completed"], true);
  EXPECT_EQ((*Grade(r.result, "burnin.lost-nodes"))["verdict"], "FAIL");
}

TEST(BurnInGpu, AnEccErrorThatAppearsDuringTheRunAndThrottlingAreNamed) {
  auto flag = clustermax::testing::ScratchDir("burnin-gpu-eccflag") / "ecc";
  auto r = RunGpuBurnIn("ecc", "FAKE_GPU_COUNT=2 FAKE_NVML_HEALTHY=1 FAKE_NVML_THROTTLE=1 FAKE_NVML_ECC_FLAG=" +
                                   flag.string() + " FAKE_GPU_TOUCH=1:2:" + flag.string());
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  const json* g1 = UnitOf(r.result, "/gpu1");
  ASSERT_NE(g1, nullptr);
  ASSERT_EQ((*g1)["gpu_errors"].size(), 2u) << g1->dump();
  EXPECT_NE((*g1)["gpu_errors"][0].get<std::string>().find("uncorrectable ECC errors (volatile) rose from 0 to 3"),
            std::string::npos);
  EXPECT_NE((*g1)["gpu_errors"][1].get<std::string>().find("row remapping became pending"), std::string::npos);
  EXPECT_TRUE((*UnitOf(r.result, "/gpu0"))["gpu_errors"].empty());
  const json* e = Grade(r.result, "burnin.gpu-errors");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ((*e)["verdict"], "FAIL");
  EXPECT_EQ((*e)["value"], 1);
  // GPU 0 ran held back by HW thermal slowdown: a warning naming it.
  EXPECT_EQ((*UnitOf(r.result, "/gpu0"))["telemetry"]["held_back"], json::array({"HW thermal slowdown"}));
  const json* t = Grade(r.result, "burnin.throttled");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ((*t)["verdict"], "WARN") << t->dump();
  EXPECT_NE((*t)["detail"].get<std::string>().find("/gpu0: HW thermal slowdown"), std::string::npos) << t->dump();
  EXPECT_NE(r.shell.out.find("ERROR uncorrectable ECC"), std::string::npos) << r.shell.out;
}

TEST(BurnInGpu, NoHelperOrNoGpuIsSaidNeverPassed) {
  auto none = RunGpuBurnIn("none", "FAKE_GPU_NONE=1");
  ASSERT_EQ(none.shell.code, 0) << none.shell.out;
  ASSERT_EQ(none.result["summary"]["lost"].size(), 1u);
  EXPECT_NE(none.result["summary"]["lost"][0]["reason"].get<std::string>().find("no GPU: no CUDA device"),
            std::string::npos);
  EXPECT_EQ((*Grade(none.result, "burnin.sdc"))["verdict"], "SKIP");
  auto missing =
      clustermax::testing::RunBinary("burnin --local --gpu --helper /nonexistent/clustermax-gpu --duration 1 --out " +
                                     clustermax::testing::ScratchDir("burnin-gpu-missing").string());
  EXPECT_NE(missing.out.find("no GPU helper"), std::string::npos) << missing.out;
  // Usage: GPU sizes are checked against the GPU's ranges; --helper only with --gpu.
  EXPECT_NE(clustermax::testing::RunBinary("burnin --local --matrix-n 8192").code, 0);
  EXPECT_NE(clustermax::testing::RunBinary("burnin --local --helper x").code, 0);
  EXPECT_NE(clustermax::testing::RunBinary("burnin --local --nodelist n1").code, 0);
}

TEST(BurnInGpu, HealthChangesBetweenTwoSnapshotsFlipOneFactAtATime) {
  // The device shape of docs/evidence-bundle.md, as NVML and nvidia-smi give it.
  const json base = json::parse(R"({"ecc": {"current": true, "volatile_corrected": 2, "volatile_uncorrected": 0,
      "aggregate_corrected": 5, "aggregate_uncorrected": 0},
      "remapped_rows": {"correctable": 1, "uncorrectable": 0, "pending": false, "failure": false},
      "retired_pages": {"single_bit": 0, "double_bit": 0, "pending": false}})");
  long long corrected = -1;
  EXPECT_TRUE(burnin::GpuHealthChanges(base, base, corrected).empty());
  EXPECT_EQ(corrected, -1);  // untouched when nothing was corrected in between
  struct Flip {
    const char* path;
    json value;
    const char* says;
  } flips[] = {{"/ecc/volatile_uncorrected", 1, "uncorrectable ECC errors (volatile) rose from 0 to 1"},
               {"/remapped_rows/uncorrectable", 2, "rows remapped for uncorrectable errors rose from 0 to 2"},
               {"/remapped_rows/pending", true, "row remapping became pending"},
               {"/remapped_rows/failure", true, "row remapping failed"},
               {"/retired_pages/double_bit", 1, "pages retired for double-bit errors rose from 0 to 1"},
               {"/retired_pages/pending", true, "page retirement became pending"}};
  for (const auto& f : flips) {
    json after = base;
    after[json::json_pointer(f.path)] = f.value;
    auto got = burnin::GpuHealthChanges(base, after, corrected);
    ASSERT_EQ(got.size(), 1u) << f.path;
    EXPECT_NE(got[0].find(f.says), std::string::npos) << got[0];
  }
  json after = base;
  after["ecc"]["volatile_corrected"] = 7;
  EXPECT_TRUE(burnin::GpuHealthChanges(base, after, corrected).empty());  // corrected: counted, not an error
  EXPECT_EQ(corrected, 5);
  // Unread counters (null, absent, junk) are no change either way.
  json junk = {{"ecc", nullptr}, {"remapped_rows", "x"}, {"retired_pages", json::array()}};
  EXPECT_TRUE(burnin::GpuHealthChanges(junk, base, corrected).empty());
  EXPECT_TRUE(burnin::GpuHealthChanges(base, junk, corrected).empty());
}

TEST(BurnInGpu, UnitsAreNamedFromTheNodeAndIndexNeverFromTheirText) {
  std::map<std::string, json> docs = {
      {"n1",
       {{"backend", "gpu"}, {"gpus", {{{"gpu", 0}, {"node", "forged/gpu9"}}, {{"gpu", 3}}, {{"gpu", "x"}}, "junk"}}}},
      {"n2", {{"backend", "gpu"}, {"gpus", json::array()}, {"error", "no GPU"}}},
      {"n3", {{"node", "n3"}, {"completed", true}}}};
  auto units = burnin::UnitsOf(docs);
  std::vector<std::string> names;
  for (const auto& [k, v] : units) names.push_back(k);
  EXPECT_EQ(names, (std::vector<std::string>{"n1/gpu0", "n1/gpu3", "n1/unit2", "n1/unit3", "n2", "n3"}));
  EXPECT_EQ(units["n1/gpu0"]["node"], "n1/gpu0");
  EXPECT_EQ(units["n2"]["error"], "no GPU");
}

TEST(BurnInGpu, CtrlCStopsTheHelpersAndKeepsWhatTheyReported) {
  auto out = clustermax::testing::ScratchDir("burnin-gpu-int");
  auto t0 = std::chrono::steady_clock::now();
  auto sh =
      clustermax::testing::RunShell(std::string("LD_LIBRARY_PATH=") + CLUSTERMAX_FAKE_NVML_DIR +
                                    " FAKE_GPU_NVML_UUIDS=1 FAKE_GPU_COUNT=2 FAKE_NVML_HEALTHY=1 timeout -s INT 3 " +
                                    CLUSTERMAX_BINARY + " burnin --local --gpu --exit-zero --helper " + FakeHelper() +
                                    " --duration 60 --out " + out.string() + " 2>&1 </dev/null");
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 40) << sh.out;
  std::ifstream f(out / "bench" / "burnin.json");
  ASSERT_TRUE(f) << sh.out;
  json r = json::parse(f);
  EXPECT_EQ(r["interrupted"], true);
  EXPECT_TRUE(r["summary"]["lost"].empty()) << r["summary"].dump();
  for (const auto& n : r["summary"]["nodes"]) {
    EXPECT_EQ(n["cancelled"], true);
    // What the helpers reported before the stop is kept; how many iterations fit in 3 s depends
    // on the machine (7 under ASan on a busy 2-core runner), so any is enough.
    EXPECT_GT(n["iterations"].get<int>(), 0);
  }
  const json* c = Grade(r, "burnin.completed");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ((*c)["verdict"], "FAIL");
  EXPECT_NE((*c)["detail"].get<std::string>().find("the run was interrupted"), std::string::npos) << c->dump();
}

TEST(BurnInGpu, GpusAreNamedByNvmlsIndexNotCudas) {
  // Inside a job CUDA numbers only the GPUs it may see: CUDA's GPU 0 is board 3 here (as
  // CUDA_VISIBLE_DEVICES=3,4,5 would make it), and the report must point at board 3.
  auto r = RunGpuBurnIn("offset", "FAKE_GPU_COUNT=3 FAKE_NVML_HEALTHY=1 FAKE_GPU_CUDA_OFFSET=3 FAKE_GPU_FLIP=1:0");
  ASSERT_EQ(r.shell.code, 0) << r.shell.out;
  ASSERT_NE(UnitOf(r.result, "/gpu3"), nullptr) << r.result["summary"].dump();
  ASSERT_NE(UnitOf(r.result, "/gpu4"), nullptr) << r.result["summary"].dump();
  EXPECT_DOUBLE_EQ((*UnitOf(r.result, "/gpu3"))["telemetry"]["temperature_c_max"].get<double>(), 33.0);
  const json& sdc = r.result["summary"]["sdc"];
  ASSERT_FALSE(sdc.empty());
  EXPECT_NE(sdc[0]["node"].get<std::string>().find("/gpu4"), std::string::npos) << sdc.dump();
}
