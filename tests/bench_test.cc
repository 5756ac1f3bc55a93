// Benchmarks without a server: the latency histogram, the storage benchmark run for real on a
// small directory (its bookkeeping checked against what it was asked to do), the workspace's
// cleanup rules, grading, sizes, credentials, and libcurl's SigV4 signing against AWS's published
// examples (through a loopback listener that records the request).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "bench/grade.h"
#include "bench/histogram.h"
#include "bench/s3.h"
#include "bench/s3_bench.h"
#include "bench/storage.h"
#include "bench/storage_scaling.h"
#include "bench/workspace.h"
#include "test_server.h"
#include "testutil.h"

using namespace clustermax::bench;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {
// A scratch directory on the build tree's filesystem (a disk, so O_DIRECT works; /tmp may be tmpfs).
fs::path Scratch(const std::string& name) {
  fs::path p = fs::path(CLUSTERMAX_BUILD_DIR) / "test-scratch" / name;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
std::vector<std::string> Entries(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}
const json& Workload(const json& r, const std::string& id) {
  for (const auto& w : r["workloads"]) {
    if (w["id"] == id) return w;
  }
  throw std::runtime_error("no workload " + id);
}
}  // namespace

TEST(Histogram, PercentilesWithinBucketPrecisionOfTheExactValues) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(10.0, 2.0);  // ~20 us median, long tail
  std::vector<uint64_t> v;
  LatencyHistogram h;
  for (int i = 0; i < 100000; ++i) {
    auto x = static_cast<uint64_t>(dist(rng));
    v.push_back(x);
    h.Record(x);
  }
  std::sort(v.begin(), v.end());
  EXPECT_EQ(h.count(), v.size());
  EXPECT_EQ(h.min(), v.front());
  EXPECT_EQ(h.max(), v.back());
  for (double p : {1.0, 50.0, 90.0, 99.0, 99.9, 100.0}) {
    size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * v.size()));
    double exact = static_cast<double>(v[std::max<size_t>(rank, 1) - 1]);
    double got = static_cast<double>(h.Percentile(p));
    EXPECT_GE(got, exact) << p;  // the bucket's upper edge, never below the true sample
    EXPECT_LE(got, exact * (1 + 1.0 / 128) + 1) << p;
  }
}

TEST(Histogram, SmallValuesAreExactAndMergeAddsUp) {
  LatencyHistogram a, b;
  for (uint64_t i = 1; i <= 100; ++i) a.Record(i);
  for (uint64_t i = 101; i <= 200; ++i) b.Record(i);
  a.Merge(b);
  EXPECT_EQ(a.count(), 200u);
  EXPECT_EQ(a.Percentile(50), 100u);
  EXPECT_EQ(a.Percentile(100), 200u);
  EXPECT_DOUBLE_EQ(a.mean(), 100.5);
  EXPECT_EQ(LatencyHistogram().Percentile(50), 0u);
  for (uint64_t x : {uint64_t{255}, uint64_t{256}, uint64_t{1} << 40, UINT64_MAX}) {
    EXPECT_GE(LatencyHistogram::BucketUpperEdge(LatencyHistogram::BucketIndex(x)), x);
  }
}

TEST(StorageBench, OnePassBookkeepingMatchesWhatItWasAskedToDo) {
  fs::path dir = Scratch("storage-onepass");
  StorageOptions o;
  o.path = dir;
  o.files = 2;
  o.size = 8u << 20;  // two files of 4 MiB
  o.duration_s = 0;   // one pass: exact byte and op counts
  o.threads = 3;      // random workloads: 3 threads x (4 MiB / bs) random reads each
  o.iodepth = 4;
  o.ckpt_ranks = 2;
  o.ckpt_shards = 3;
  o.ckpt_size = 6u << 20;
  o.ckpt_block = 256u << 10;
  o.meta_threads = 2;
  o.meta_dirs = 4;
  o.meta_files = 40;
  json r = RunStorageBench(o);
  // io_uring on this kernel, with the ring flags fio uses where the kernel has them (5.19+/6.1+).
  if (r["engine"] == "io_uring") {
    std::string setup = r.value("io_uring_setup", "");
    EXPECT_TRUE(setup == "coop-taskrun,single-issuer,defer-taskrun" || setup == "coop-taskrun" || setup == "default")
        << setup;
  } else {
    EXPECT_FALSE(r.contains("io_uring_setup"));
  }

  for (const char* id :
       {"seq-write-1m-direct", "seq-write-1m-buffered", "seq-read-1m-direct", "seq-read-1m-buffered"}) {
    const json& w = Workload(r, id);
    ASSERT_EQ(w["status"], "ok") << w.dump();
    EXPECT_EQ(w["bytes"], 8u << 20) << id;
    EXPECT_EQ(w["ops"], 8u) << id;
    EXPECT_EQ(w["latency"]["count"], 8u) << id;
    EXPECT_EQ(w["threads"], 2);
    EXPECT_GT(w["bw_bytes_per_s"].get<double>(), 0);
  }
  const json& rr = Workload(r, "rand-read-4k-buffered");
  ASSERT_EQ(rr["status"], "ok");
  EXPECT_EQ(rr["ops"], 3u * 1024u);
  EXPECT_EQ(rr["bytes"], 3u * 1024u * 4096u);
  EXPECT_EQ(rr["per_thread"].size(), 3u);
  const json& rd = Workload(r, "rand-read-64k-direct");
  ASSERT_EQ(rd["status"], "ok");
  EXPECT_EQ(rd["ops"], 3u * 64u);
  // IOPS and bandwidth are the counts over the slowest thread's time.
  EXPECT_NEAR(rd["iops"].get<double>(), rd["ops"].get<double>() / rd["seconds"].get<double>(),
              rd["iops"].get<double>() * 0.01);
  EXPECT_LE(rd["latency"]["p50_us"].get<double>(), rd["latency"]["p99_us"].get<double>());

  const json& c = r["checkpoint"];
  ASSERT_EQ(c["status"], "ok") << c.dump();
  EXPECT_EQ(c["shard_bytes"], 1u << 20);
  EXPECT_EQ(c["runs"][0]["write"]["bytes"], 6u << 20);
  EXPECT_EQ(c["runs"][0]["read"]["bytes"], 6u << 20);
  EXPECT_EQ(c["runs"][0]["write"]["per_rank"][1]["bytes"], 3u << 20);

  const json& m = r["metadata"];
  ASSERT_EQ(m["status"], "ok") << m.dump();
  ASSERT_EQ(m["phases"].size(), 5u);
  for (const auto& p : m["phases"]) EXPECT_EQ(p["ops"], 40u) << p["id"];

  // Everything it made is gone; nothing else was there.
  EXPECT_TRUE(r["cleanup"]["leftovers"].empty());
  EXPECT_TRUE(Entries(dir).empty());
  EXPECT_FALSE(r["interrupted"].get<bool>());
}

TEST(StorageBench, StampedSectorsAreAllDistinctAndLeaveTheHeaderAlone) {
  // A buffer filled once with one repeated 512-byte pattern: the worst case for a dedup array.
  std::vector<char> a(1u << 20), b;
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<char>(i % 512 * 7);
  b = a;
  StampSectors(a.data(), a.size(), 1);
  StampSectors(b.data(), b.size(), 2);
  std::set<std::string> seen;
  for (size_t off = 0; off < a.size(); off += 512) {
    seen.insert(std::string(a.data() + off, 512));
    seen.insert(std::string(b.data() + off, 512));
  }
  EXPECT_EQ(seen.size(), 2u * a.size() / 512);  // unique within a write and across two writes
  for (size_t i = 0; i < 496; ++i) EXPECT_EQ(a[i], static_cast<char>(i % 512 * 7)) << i;  // headers survive
  // A tail shorter than a sector is left as it was.
  std::vector<char> c(700, 'x');
  StampSectors(c.data(), c.size(), 3);
  EXPECT_EQ(std::string(c.data() + 512, 188), std::string(188, 'x'));
}

TEST(StorageBench, TimeBasedRunCountsOnlyAfterTheRampAndStopsOnTime) {
  fs::path dir = Scratch("storage-timed");
  StorageOptions o;
  o.path = dir;
  o.files = 1;
  o.size = 4u << 20;
  o.duration_s = 0.4;
  o.ramp_s = 0.2;
  o.tests = {"rand-read-4k-buffered"};
  o.threads = 2;
  auto t0 = std::chrono::steady_clock::now();
  json r = RunStorageBench(o);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const json& w = Workload(r, "rand-read-4k-buffered");
  ASSERT_EQ(w["status"], "ok");
  EXPECT_EQ(w["bytes"].get<uint64_t>(), w["ops"].get<uint64_t>() * 4096);
  EXPECT_EQ(w["latency"]["count"], w["ops"]);
  EXPECT_NEAR(w["seconds"].get<double>(), 0.4, 0.3);
  EXPECT_LT(wall, 10.0);
  EXPECT_EQ(r["workloads"].size(), 1u);
  EXPECT_FALSE(r.contains("checkpoint"));
  EXPECT_TRUE(Entries(dir).empty());
  // A window so short that no request is counted: an error with the reason, never 0 GB/s.
  o.duration_s = 1e-9;
  o.ramp_s = 0;
  json none = RunStorageBench(o);
  const json& z = Workload(none, "rand-read-4k-buffered");
  EXPECT_EQ(z["status"], "error") << z.dump();
  EXPECT_NE(z.value("reason", "").find("no I/O completed"), std::string::npos) << z.dump();
  for (const auto& m : StorageMetrics(none)) EXPECT_FALSE(m.value && m.id == "storage.seq-read");
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(StorageBench, RefusesBeforeWritingWhenTheSizeDoesNotFit) {
  fs::path dir = Scratch("storage-nospace");
  StorageOptions o;
  o.path = dir;
  o.size = uint64_t{1} << 50;  // 1 PiB
  try {
    RunStorageBench(o);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not enough free space"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(Entries(dir).empty());
  o.size = 8u << 20;
  o.tests = {"seq-write-9m"};
  EXPECT_THROW(RunStorageBench(o), std::invalid_argument);
  o.tests = {};
  o.files = 0;
  EXPECT_THROW(RunStorageBench(o), std::invalid_argument);
}

TEST(StorageBench, CancelStopsTheRunAndStillCleansUp) {
  fs::path dir = Scratch("storage-cancel");
  StorageOptions o;
  o.path = dir;
  o.files = 1;
  o.size = 4u << 20;
  o.duration_s = 30;
  o.tests = {"rand-read-4k-buffered", "metadata"};
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    CancelFlag().store(true);
  });
  auto t0 = std::chrono::steady_clock::now();
  json r = RunStorageBench(o);
  stopper.join();
  CancelFlag().store(false);
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(wall, 10.0);
  EXPECT_TRUE(r["interrupted"].get<bool>());
  EXPECT_EQ(Workload(r, "rand-read-4k-buffered")["status"], "interrupted");
  EXPECT_FALSE(r.contains("metadata"));
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(Workspace, RemovesOnlyWhatItCreated) {
  fs::path dir = Scratch("workspace");
  std::ofstream(dir / "precious.txt") << "not ours";
  fs::path root;
  {
    Workspace ws(dir);
    root = ws.root();
    EXPECT_EQ(root.parent_path(), dir);
    fs::path sub = ws.MakeDir("a");
    ws.Track(sub / "mine.bin");
    std::ofstream(sub / "mine.bin") << "x";
    std::ofstream(sub / "foreign.bin") << "someone else's";  // not tracked
    auto rep = ws.Cleanup();
    EXPECT_EQ(rep.files_removed, 1u);
    ASSERT_EQ(rep.leftovers.size(), 2u);  // "a" is not empty, so neither is the root
    EXPECT_TRUE(fs::exists(sub / "foreign.bin"));
  }
  EXPECT_TRUE(fs::exists(dir / "precious.txt"));
  fs::remove_all(root);
  EXPECT_THROW(Workspace(dir / "missing"), std::runtime_error);
}

TEST(Grade, BarsHigherAndLowerAndMissingValues) {
  json t = ParseBenchThresholds(R"({"metrics":[
    {"id":"a","unit":"GB/s","better":"higher","pass":5,"warn":2,"source":"s"},
    {"id":"b","unit":"ms","better":"lower","pass":2,"warn":5,"source":"s"}]})",
                                "t");
  json g = Grade({{"a", 5.0, "", "d"},
                  {"a", 3.0, "", ""},
                  {"a", 1.0, "", ""},
                  {"b", 2.0, "", ""},
                  {"b", 4.0, "", ""},
                  {"b", 9.0, "", ""},
                  {"a", std::nullopt, "not run", ""}},
                 t);
  std::vector<std::string> verdicts;
  for (const auto& x : g) verdicts.push_back(x["verdict"]);
  EXPECT_EQ(verdicts, (std::vector<std::string>{"PASS", "WARN", "FAIL", "PASS", "WARN", "FAIL", "SKIP"}));
  EXPECT_EQ(g[6]["reason"], "not run");
  EXPECT_EQ(WorstVerdict(g), "FAIL");
  EXPECT_EQ(WorstVerdict(json::array()), "SKIP");
  EXPECT_THROW(Grade({{"zzz", 1.0, "", ""}}, t), std::logic_error);
  EXPECT_THROW(ParseBenchThresholds(
                   R"({"metrics":[{"id":"a","unit":"x","better":"higher","pass":1,"warn":2,"source":"s"}]})", "t"),
               std::runtime_error);  // warn bar beyond pass
  EXPECT_THROW(ParseBenchThresholds("{", "t"), std::runtime_error);
}

TEST(Grade, EveryMetricTheBenchmarksProduceHasABar) {
  const json& t = EmbeddedBenchThresholds();
  EXPECT_NO_THROW(Grade(StorageMetrics(json::object()), t));
  EXPECT_NO_THROW(Grade(S3Metrics(json::object()), t));
  // With nothing measured, every grade is SKIP: a missing figure never passes.
  EXPECT_EQ(WorstVerdict(Grade(StorageMetrics(json::object()), t)), "SKIP");
}

TEST(Grade, BufferedFiguresAreNotGradedWhenTheDataFitsInTheCache) {
  json r = {{"options", {{"fits_in_page_cache", true}}},
            {"workloads", json::array({{{"id", "seq-read-1m-direct"}, {"status", "ok"}, {"bw_bytes_per_s", 1e9}},
                                       {{"id", "seq-read-1m-buffered"}, {"status", "ok"}, {"bw_bytes_per_s", 20e9}}})}};
  auto m = StorageMetrics(r);
  ASSERT_TRUE(m[0].value);
  EXPECT_DOUBLE_EQ(*m[0].value, 1.0);
  r["options"]["fits_in_page_cache"] = false;
  EXPECT_DOUBLE_EQ(*StorageMetrics(r)[0].value, 20.0);
}

TEST(Sizes, ParseBinaryUnits) {
  EXPECT_EQ(ParseSize("4096"), 4096u);
  EXPECT_EQ(ParseSize("4k"), 4096u);
  EXPECT_EQ(ParseSize("1M"), 1u << 20);
  EXPECT_EQ(ParseSize("64MiB"), 64u << 20);
  EXPECT_EQ(ParseSize("1.5G"), 3u << 29);
  EXPECT_THROW(ParseSize("lots"), std::invalid_argument);
  EXPECT_THROW(ParseSize("3X"), std::invalid_argument);
}

TEST(S3Credentials, EnvironmentThenProfileFileThenAnonymous) {
  fs::path dir = Scratch("aws");
  std::ofstream(dir / "credentials")
      << "[default]\naws_access_key_id = AKDEFAULT\naws_secret_access_key = sdefault\n\n"
         "[ci]\naws_access_key_id=AKCI\naws_secret_access_key=sci\naws_session_token=tok\n[broken]\naws_access_key_id=x\n";
  std::map<std::string, std::string> env;
  auto getenv = [&](const char* k) -> const char* {
    auto it = env.find(k);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  env["AWS_SHARED_CREDENTIALS_FILE"] = (dir / "credentials").string();
  EXPECT_EQ(LoadS3Credentials("", getenv).access_key, "AKDEFAULT");
  auto ci = LoadS3Credentials("ci", getenv);
  EXPECT_EQ(ci.secret_key, "sci");
  EXPECT_EQ(ci.session_token, "tok");
  env["AWS_PROFILE"] = "ci";
  EXPECT_EQ(LoadS3Credentials("", getenv).access_key, "AKCI");
  EXPECT_THROW(LoadS3Credentials("nope", getenv), std::runtime_error);
  EXPECT_THROW(LoadS3Credentials("broken", getenv), std::runtime_error);
  env["AWS_ACCESS_KEY_ID"] = "AKENV";
  env["AWS_SECRET_ACCESS_KEY"] = "senv";
  auto e = LoadS3Credentials("", getenv);
  EXPECT_EQ(e.access_key, "AKENV");
  EXPECT_EQ(e.source.find("senv"), std::string::npos);  // the source names where, never the secret
  env.clear();
  env["AWS_SHARED_CREDENTIALS_FILE"] = (dir / "absent").string();
  EXPECT_TRUE(LoadS3Credentials("", getenv).anonymous());
}

TEST(S3Xml, ListAndErrorBodies) {
  std::vector<std::string> keys;
  std::string next;
  bool truncated = false;
  ParseListObjects(
      R"(<?xml version="1.0"?><ListBucketResult><Contents><Key>a/1</Key></Contents><Contents><Key>a/2</Key></Contents>
    <IsTruncated>true</IsTruncated><NextContinuationToken>tok==</NextContinuationToken></ListBucketResult>)",
      keys, next, truncated);
  EXPECT_EQ(keys, (std::vector<std::string>{"a/1", "a/2"}));
  EXPECT_TRUE(truncated);
  EXPECT_EQ(next, "tok==");
  EXPECT_THROW(ParseListObjects("<html>oops</html>", keys, next, truncated), std::runtime_error);
  EXPECT_THROW(ParseListObjects("not xml <", keys, next, truncated), std::runtime_error);
  std::string code, msg;
  ParseS3Error("<Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message></Error>", code,
               msg);
  EXPECT_EQ(code, "NoSuchBucket");
  EXPECT_EQ(AwsEscape("a b/c+d~", true), "a%20b/c%2Bd~");
  EXPECT_EQ(AwsEscape("a/b", false), "a%2Fb");
}

// AWS's documented S3 SigV4 example (GET Object with a Range header, "Signature Calculations for
// the Authorization Header: Transferring Payload in a Single Chunk"), signed by libcurl through
// our client and captured by a loopback listener.
TEST(S3SigV4, MatchesTheAwsDocumentedGetObjectExample) {
  testing_server::RecordingServer server({"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"});
  S3Config c;
  c.endpoint = "http://s3.amazonaws.com";
  c.bucket = "examplebucket";
  c.addressing = "virtual";
  c.connect_to = fmt::format("examplebucket.s3.amazonaws.com:80:127.0.0.1:{}", server.port());
  c.credentials = {"AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "", "test"};
  c.fixed_amz_date = "20130524T000000Z";
  S3Client client(c);
  std::string body;
  S3Response r = client.GetRange("test.txt", 0, 9, &body);
  ASSERT_TRUE(r.ok()) << r.Describe();
  std::string req = server.Requests().at(0);
  EXPECT_NE(req.find("GET /test.txt HTTP/1.1"), std::string::npos) << req;
  EXPECT_NE(
      req.find("Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
               "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
               "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
      std::string::npos)
      << req;
  EXPECT_EQ(req.find("wJalrXUtnFEMI"), std::string::npos);  // the secret never travels
}

TEST(S3Client, PutSendsAnUnsignedPayloadHashAndRetriesThrottling) {
  testing_server::RecordingServer server({
      "HTTP/1.1 503 Slow Down\r\nContent-Length: 95\r\n\r\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>   ",
      "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n",
      "HTTP/1.1 200 OK\r\nETag: \"abc\"\r\nContent-Length: 0\r\n\r\n",
  });
  S3Config c;
  c.endpoint = fmt::format("http://127.0.0.1:{}", server.port());
  c.bucket = "b";
  c.credentials = {"AK", "SECRET", "", "test"};
  c.backoff_s = 0.01;
  S3Client client(c);
  std::string data(1000, 'x');
  S3Response r = client.Put("k/1", data.data(), data.size());
  ASSERT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.retries, 2);
  EXPECT_TRUE(r.throttled);
  EXPECT_EQ(r.etag, "\"abc\"");
  EXPECT_EQ(r.bytes, 1000u);
  auto reqs = server.Requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_NE(reqs[0].find("PUT /b/k/1 HTTP/1.1"), std::string::npos);
  EXPECT_NE(reqs[0].find("x-amz-content-sha256: UNSIGNED-PAYLOAD"), std::string::npos);
  EXPECT_NE(reqs[0].find("SignedHeaders=host;x-amz-content-sha256;x-amz-date"), std::string::npos);
  // Every header that is signed is also sent (an unsent signed header breaks real AWS).
  EXPECT_EQ(reqs[0].find("expect;"), std::string::npos);
}

TEST(S3Client, GivesUpAfterTheRetryBudgetAndSaysWhy) {
  testing_server::RecordingServer server({"HTTP/1.1 503 Slow Down\r\nContent-Length: 0\r\n\r\n"}, /*repeat_last=*/true);
  S3Config c;
  c.endpoint = fmt::format("http://127.0.0.1:{}", server.port());
  c.bucket = "b";
  c.max_retries = 2;
  c.backoff_s = 0.01;
  S3Client client(c);
  S3Response r = client.Get("k");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.status, 503);
  EXPECT_EQ(r.retries, 2);
  EXPECT_EQ(server.Requests().size(), 3u);
  EXPECT_NE(r.Describe().find("503"), std::string::npos);
  EXPECT_THROW(S3Client(S3Config{"ftp://x", "b"}), std::invalid_argument);
}

// The command as a user runs it: Ctrl-C (SIGINT) mid-run exits 130, removes the workspace, and
// still writes the (interrupted) result.
TEST(BenchCli, StorageInterruptedBySigintCleansUpAndSaysSo) {
  fs::path dir = Scratch("cli-sigint");
  fs::path out = Scratch("cli-sigint-out");
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int devnull = ::open("/dev/null", O_WRONLY);
    ::dup2(devnull, 1);
    ::dup2(devnull, 2);
    ::execl(CLUSTERMAX_BINARY, CLUSTERMAX_BINARY, "bench", "storage", "--path", dir.c_str(), "--size", "16M", "--files",
            "2", "--duration", "60", "--tests", "seq-write-1m-buffered", "--out", out.c_str(),
            static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until the workload runs (its workspace exists), then interrupt.
  for (int i = 0; i < 100 && Entries(dir).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_FALSE(Entries(dir).empty());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto t0 = std::chrono::steady_clock::now();
  ::kill(pid, SIGINT);
  int status = 0;
  ::waitpid(pid, &status, 0);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_LT(secs, 10.0);
  EXPECT_TRUE(Entries(dir).empty());
  std::ifstream f(out / "bench" / "storage.json");
  ASSERT_TRUE(f.good());
  json r = json::parse(f);
  EXPECT_TRUE(r["interrupted"].get<bool>());
  EXPECT_TRUE(r["cleanup"]["leftovers"].empty());
  // Not a result: never PASS, and neither rated nor stored as a complete run.
  EXPECT_EQ(r["verdict"], "INCOMPLETE");
  std::string cli = CLUSTERMAX_BINARY;
  auto rate = clustermax::testing::RunShell(cli + " rate " + out.string() + " 2>&1");
  EXPECT_EQ(rate.code, 1) << rate.out;
  EXPECT_NE(rate.out.find("an interrupted benchmark run (INCOMPLETE)"), std::string::npos) << rate.out;
  auto ingest =
      clustermax::testing::RunShell(cli + " db --db " + (out / "r.db").string() + " ingest " + out.string() + " 2>&1");
  EXPECT_EQ(ingest.code, 1) << ingest.out;
  EXPECT_NE(ingest.out.find("interrupted"), std::string::npos) << ingest.out;
}

// On a terminal a long benchmark keeps one progress line with the time left; in a log it prints
// its steps as plain lines and no control characters.
TEST(BenchCli, ProgressWithAnEstimateOnATerminalPlainLinesInALog) {
  fs::path dir = Scratch("cli-progress");
  std::string cmd =
      std::string(CLUSTERMAX_BINARY) + " bench storage --path " + dir.string() +
      " --quick --size 16M --files 2 --duration 1 --ramp 0 --tests seq-write-1m-buffered,seq-read-1m-buffered,metadata --exit-zero --json --out " +
      Scratch("cli-progress-out").string();
  // `script` gives the command a pseudo-terminal, as an interactive shell would.
  auto tty = clustermax::testing::RunShell("TERM=xterm script -qec '" + cmd + " --force' /dev/null");
  EXPECT_EQ(tty.code, 0) << tty.out;
  EXPECT_NE(tty.out.find("\r\x1b[K  "), std::string::npos) << tty.out;
  EXPECT_NE(tty.out.find(" elapsed, ETA "), std::string::npos) << tty.out;
  auto log = clustermax::testing::RunShell(cmd + " --force 2>&1 >/dev/null");
  EXPECT_EQ(log.code, 0) << log.out;
  EXPECT_NE(log.out.find("  seq-write-1m-buffered: "), std::string::npos) << log.out;
  EXPECT_EQ(log.out.find('\r'), std::string::npos) << log.out;
  EXPECT_EQ(log.out.find("ETA"), std::string::npos) << log.out;
}

TEST(BenchCli, BadOptionsAreUsageErrors) {
  fs::path dir = Scratch("cli-usage");
  auto r = clustermax::testing::RunShell(std::string(CLUSTERMAX_BINARY) + " bench storage --path " + dir.string() +
                                         " --tests nope");
  const std::string& text = r.out;
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(text.find("unknown storage test 'nope'"), std::string::npos) << text;
  EXPECT_TRUE(Entries(dir).empty());
}

TEST(StorageScaling, CountsDoubleAndSumsAreTheNodesResults) {
  EXPECT_EQ(ScalingCounts(1), std::vector<int>({1}));
  EXPECT_EQ(ScalingCounts(3), std::vector<int>({1, 2, 3}));
  EXPECT_EQ(ScalingCounts(8), std::vector<int>({1, 2, 4, 8}));
  EXPECT_EQ(ScalingCounts(12), std::vector<int>({1, 2, 4, 8, 12}));
  // Real per-node results (a one-pass run on a scratch directory), with the bandwidth of one node
  // scaled to make a slow node in the two-node step.
  fs::path dir = Scratch("storage-scaling");
  StorageOptions o;
  o.path = dir;
  o.files = 2;
  o.size = 8u << 20;
  o.duration_s = 0;
  o.tests = {"seq-write-1m-direct", "seq-read-1m-direct",
             "metadata"};  // 8 MiB fits the page cache: only direct I/O is graded
  o.meta_threads = 2;
  o.meta_dirs = 2;
  o.meta_files = 20;
  json one = RunStorageBench(o);
  ASSERT_FALSE(one.contains("error")) << one.dump();
  json slow = one;
  for (auto& w : slow["workloads"]) {
    if (w["status"] == "ok") w["bw_bytes_per_s"] = w["bw_bytes_per_s"].get<double>() / 2;
  }
  double read1 = 0;
  for (const auto& m : StorageMetrics(one)) {
    if (m.id == "storage.seq-read") read1 = m.value.value_or(0);
  }
  ASSERT_GT(read1, 0);
  ScalingStep s1{1, {"n1"}, {{"n1", one}}, {}, 2.0, ""};
  ScalingStep s2{2, {"n1", "n2"}, {{"n1", one}, {"n2", slow}}, {}, 2.5, ""};
  ScalingStep s3{3, {"n1", "n2", "n3"}, {{"n1", one}, {"n2", one}}, {{"n3", "srun: error: n3: task 2: Exited"}}, 3.0,
                 ""};
  json r = ScalingResult({s1, s2, s3}, {{"path", dir.string()}, {"tests", "io"}, {"size", "8 MiB"}, {"duration_s", 0}});
  const json& a2 = r["steps"][1]["aggregate"]["storage.seq-read"];
  EXPECT_NEAR(a2["sum"].get<double>(), 1.5 * read1, 1e-9);
  EXPECT_EQ(a2["worst_node"], "n2");
  EXPECT_NEAR(a2["worst_value"].get<double>(), read1 / 2, 1e-9);
  EXPECT_NEAR(a2["efficiency"].get<double>(), 0.75, 1e-9);
  // Latency: the worst node, and how much slower than one node alone (same results: x1.00).
  const json& open2 = r["steps"][1]["aggregate"]["storage.small-file-open"];
  EXPECT_FALSE(open2.contains("sum"));
  EXPECT_NEAR(open2["slowdown"].get<double>(), 1.0, 1e-9);
  // The three-node step lost a node: named, and the grades come from the largest complete step.
  EXPECT_EQ(r["steps"][2]["returned"], 2);
  EXPECT_EQ(r["steps"][2]["missing"][0]["node"], "n3");
  EXPECT_EQ(r["largest_complete_step"], 2);
  for (const auto& m : ScalingMetrics(r)) {
    if (m.id == "storage.seq-read") {
      ASSERT_TRUE(m.value);
      EXPECT_NEAR(*m.value, read1 / 2, 1e-9);
      EXPECT_NE(m.detail.find("worst of 2 nodes at once (n2)"), std::string::npos) << m.detail;
    }
    if (m.id == "storage.checkpoint-write") {
      EXPECT_FALSE(m.value);  // not run: SKIP, never PASS
    }
  }
  std::string table = RenderScaling(r);
  EXPECT_NE(table.find("seq read GB/s (sum | worst | eff.)"), std::string::npos) << table;
  EXPECT_NE(table.find("0.75"), std::string::npos) << table;
  EXPECT_NE(table.find("n3: srun: error"), std::string::npos) << table;
  json none = ScalingResult(
      {ScalingStep{1, {"n1"}, {}, {{"n1", "returned nothing"}}, 1.0, "srun: error: Unable to allocate resources"}},
      json::object());
  EXPECT_TRUE(none["largest_complete_step"].is_null());
  for (const auto& m : ScalingMetrics(none)) EXPECT_FALSE(m.value);
}

// Every kind of S3 operation is graded on its own: thousands of good PUTs do not dilute a GET that
// always fails, and a kind whose every request failed is FAIL whatever the bars.
TEST(Grade, S3ErrorRateIsTheWorstKindOfOperation) {
  json r = {{"requests",
             {{"total", 1003},
              {"failed", 1},
              {"retries", 0},
              {"throttled", 0},
              {"errors", json::array()},
              {"by_op",
               {{"PUT", {{"total", 1000}, {"failed", 0}, {"failed_pct", 0.0}}},
                {"GET", {{"total", 1}, {"failed", 1}, {"failed_pct", 100.0}}},
                {"LIST", {{"total", 2}, {"failed", 0}, {"failed_pct", 0.0}}}}}}}};
  auto values = S3Metrics(r);
  const MetricValue* err = nullptr;
  for (const auto& v : values) {
    if (v.id == "s3.error-rate") err = &v;
  }
  ASSERT_NE(err, nullptr);
  ASSERT_TRUE(err->value.has_value());
  EXPECT_DOUBLE_EQ(*err->value, 100.0);
  json g = Grade({*err}, EmbeddedBenchThresholds());
  EXPECT_EQ(g[0]["verdict"], "FAIL") << g.dump();
  EXPECT_NE(g[0]["detail"].get<std::string>().find("every GET request failed"), std::string::npos) << g.dump();

  // Whatever the bars: even a threshold file that tolerates 100 % cannot pass a dead GET.
  json lax = ParseBenchThresholds(
      R"({"metrics":[{"id":"s3.error-rate","unit":"%","better":"lower","pass":100,"warn":100,"source":"s"}]})", "t");
  EXPECT_EQ(Grade({*err}, lax)[0]["verdict"], "FAIL");

  // A kind with some failures is graded by its own rate.
  r["requests"]["by_op"]["GET"] = {{"total", 200}, {"failed", 1}, {"failed_pct", 0.5}};
  for (const auto& v : S3Metrics(r)) {
    if (v.id != "s3.error-rate") continue;
    EXPECT_DOUBLE_EQ(*v.value, 0.5);
    EXPECT_EQ(Grade({v}, EmbeddedBenchThresholds())[0]["verdict"], "WARN");
  }
}

TEST(S3Redact, UserinfoAndCredentialValuesNeverLeave) {
  S3Config c;
  c.endpoint = "http://alice:Pa55-w0rd-x@s3.example.com:9000";
  c.credentials = {"AKIDEXAMPLE0001", "wJalrXUtnFEMI/K7MDENG", "SessionTokenValue", "environment"};
  EXPECT_EQ(RedactSecrets(c.endpoint, c), "http://***@s3.example.com:9000");
  EXPECT_EQ(RedactSecrets("cannot reach https://u:p@h/b?x=1 now", c), "cannot reach https://***@h/b?x=1 now");
  EXPECT_EQ(RedactSecrets("key AKIDEXAMPLE0001 secret wJalrXUtnFEMI/K7MDENG token SessionTokenValue pw Pa55-w0rd-x", c),
            "key *** secret *** token *** pw ***");
  EXPECT_EQ(RedactSecrets("http://host:9000/bucket/a@b and user@mail", c), "http://host:9000/bucket/a@b and user@mail");
  json doc = {{"endpoint", c.endpoint}, {"errors", {{{"error", "403 for AKIDEXAMPLE0001"}}}}};
  RedactSecrets(doc, c);
  EXPECT_EQ(doc.dump().find("Pa55"), std::string::npos);
  EXPECT_EQ(doc.dump().find("AKIDEXAMPLE0001"), std::string::npos);
  // The client's own message about a bad endpoint does not repeat the password.
  try {
    S3Client bad(S3Config{"ftp://alice:Pa55-w0rd-x@host", "b"});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find("Pa55"), std::string::npos) << e.what();
  }
  // Virtual-hosted addressing puts the bucket in front of the host, not of the userinfo.
  c.bucket = "bk";
  c.addressing = "virtual";
  EXPECT_EQ(S3Client(c).Url("k"), "http://alice:Pa55-w0rd-x@bk.s3.example.com:9000/k");
}

// `bench --out DIR` never replaces an earlier result silently: the second run is refused before
// any work (no workspace made) and names the file; --force replaces it. The run directory and its
// bench/ are private (0700).
TEST(BenchCli, OutWithAnEarlierResultIsRefusedUnlessForced) {
  fs::path dir = Scratch("cli-out-twice");
  fs::path out = Scratch("cli-out-twice-out") / "run";
  std::string cmd = std::string(CLUSTERMAX_BINARY) + " bench storage -q --exit-zero --path " + dir.string() +
                    " --size 4M --files 1 --duration 0 --ramp 0 --tests seq-write-1m-buffered --out " + out.string();
  auto first = clustermax::testing::RunShell(cmd);
  ASSERT_EQ(first.code, 0) << first.out;
  fs::path file = out / "bench" / "storage.json";
  ASSERT_TRUE(fs::exists(file));
  EXPECT_EQ(fs::status(out).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fs::status(out / "bench").permissions() & fs::perms::all, fs::perms::owner_all);
  std::string before = *clustermax::util::ReadLocalFile(file);

  auto t0 = std::chrono::steady_clock::now();
  auto second = clustermax::testing::RunShell(cmd);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(second.code, 1) << second.out;
  EXPECT_NE(second.out.find(file.string()), std::string::npos) << second.out;
  EXPECT_NE(second.out.find("--force"), std::string::npos) << second.out;
  EXPECT_EQ(*clustermax::util::ReadLocalFile(file), before);
  EXPECT_TRUE(Entries(dir).empty());
  EXPECT_LT(secs, 5.0);

  auto forced = clustermax::testing::RunShell(cmd + " --force");
  EXPECT_EQ(forced.code, 0) << forced.out;
  EXPECT_NE(*clustermax::util::ReadLocalFile(file), before);
  EXPECT_NE(clustermax::testing::RunShell(std::string(CLUSTERMAX_BINARY) + " bench storage --help").out.find("--force"),
            std::string::npos);
}
