// The S3 client and benchmark against a real S3-compatible server: s3rver (npm, installed by
// scripts/s3rver.sh, which the test command runs), started on a free loopback port for each test
// and stopped by PID. s3rver verifies no SigV4 signature (see test-infrastructure.md), so signing
// is tested against AWS's published example in bench_test.cc; here the protocol around it.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "bench/grade.h"
#include "bench/s3.h"
#include "bench/s3_bench.h"
#include "test_server.h"
#include "testutil.h"

extern char** environ;
using clustermax::testing::Accepts;
using clustermax::testing::FreePort;
using namespace clustermax::bench;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// One s3rver process with bucket ci-bucket; killed by PID in the destructor.
class S3rver {
 public:
  S3rver() : port_(FreePort()) {
    dir_ = fs::path(CLUSTERMAX_BUILD_DIR) / "test-scratch" / ("s3rver-" + std::to_string(port_));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "data");
    std::string bin = CLUSTERMAX_S3RVER;
    if (!fs::exists(bin))
      throw std::runtime_error("s3rver not installed at " + bin + ": run scripts/s3rver.sh install");
    std::vector<std::string> args = {bin,
                                     "-d",
                                     (dir_ / "data").string(),
                                     "-a",
                                     "127.0.0.1",
                                     "-p",
                                     std::to_string(port_),
                                     "-s",
                                     "--configure-bucket",
                                     "ci-bucket"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<std::string> env_store;
    for (char** e = environ; *e; ++e) {
      if (std::string(*e).rfind("NODE_OPTIONS=", 0) != 0) env_store.emplace_back(*e);
    }
    env_store.emplace_back("NODE_OPTIONS=--openssl-legacy-provider");  // s3rver's DES continuation tokens
    std::vector<char*> envp;
    for (auto& e : env_store) envp.push_back(e.data());
    envp.push_back(nullptr);
    if (posix_spawn(&pid_, bin.c_str(), nullptr, nullptr, argv.data(), envp.data()) != 0)
      throw std::runtime_error("spawn s3rver");
    for (int i = 0; i < 200 && !Accepts(port_); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!Accepts(port_)) throw std::runtime_error("s3rver did not start on port " + std::to_string(port_));
  }
  ~S3rver() {
    Kill(SIGTERM);
    fs::remove_all(dir_);
  }
  void Kill(int sig) {
    if (pid_ > 0) {
      ::kill(pid_, sig);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  int port() const { return port_; }

 private:
  int port_;
  pid_t pid_ = -1;
  fs::path dir_;
};

S3Config Config(const S3rver& s) {
  S3Config c;
  c.endpoint = s.endpoint();
  c.bucket = "ci-bucket";
  c.credentials = {"S3RVER", "S3RVER", "", "test"};  // s3rver's built-in key
  c.backoff_s = 0.01;
  return c;
}

std::string Pattern(size_t n, int seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + static_cast<size_t>(seed) * 7) % 251);
  return s;
}

}  // namespace

TEST(S3rverClient, EveryOperationRoundTrips) {
  S3rver server;
  S3Client c(Config(server));
  ASSERT_TRUE(c.HeadBucket().ok());
  std::string small = Pattern(4096, 1);
  S3Response put = c.Put("t/small", small.data(), small.size());
  ASSERT_TRUE(put.ok()) << put.Describe();
  EXPECT_EQ(put.bytes, 4096u);
  EXPECT_FALSE(put.etag.empty());
  S3Response get = c.Get("t/small", small.data(), small.size());
  ASSERT_TRUE(get.ok()) << get.Describe();
  EXPECT_EQ(get.bytes, 4096u);
  std::string other = Pattern(4096, 2);
  EXPECT_TRUE(c.Get("t/small", other.data(), other.size()).mismatch);  // the verification can fail
  std::string range;
  ASSERT_TRUE(c.GetRange("t/small", 10, 19, &range).ok());
  EXPECT_EQ(range, small.substr(10, 10));
  EXPECT_TRUE(c.Head("t/small").ok());
  EXPECT_EQ(c.Head("t/absent").status, 404);
  S3Response missing = c.Get("t/absent");
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.error_code, "NoSuchKey");

  // LIST across pages (s3rver's continuation tokens).
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(c.Put("t/list/o" + std::to_string(i), small.data(), 10).ok());
  std::vector<std::string> keys;
  std::string token;
  int pages = 0;
  do {
    std::string next;
    S3Response l = c.List("t/list/", 3, token, keys, next);
    ASSERT_TRUE(l.ok()) << l.Describe();
    token = next;
    ++pages;
  } while (!token.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(keys.size(), 7u);

  // Multipart: 12 MiB in 5 MiB parts, read back byte for byte.
  std::string big = Pattern(12u << 20, 3);
  std::string upload;
  S3Response mp =
      c.PutMultipart("t/big", big.data(), big.size(), 5u << 20, [&](const std::string& id) { upload = id; });
  ASSERT_TRUE(mp.ok()) << mp.Describe();
  EXPECT_FALSE(upload.empty());
  EXPECT_EQ(mp.bytes, big.size());
  S3Response gb = c.Get("t/big", big.data(), big.size());
  ASSERT_TRUE(gb.ok()) << gb.Describe();
  EXPECT_EQ(gb.bytes, big.size());

  EXPECT_TRUE(c.Delete("t/small").ok());
  EXPECT_EQ(c.Head("t/small").status, 404);
}

TEST(S3rverClient, VirtualHostedAddressing) {
  S3rver server;
  S3Config cfg = Config(server);
  cfg.addressing = "virtual";
  cfg.endpoint = "http://s3.amazonaws.com:" + std::to_string(server.port());
  cfg.connect_to = fmt::format("ci-bucket.s3.amazonaws.com:{}:127.0.0.1:{}", server.port(), server.port());
  S3Client c(cfg);
  EXPECT_EQ(c.Url("a/b"), fmt::format("http://ci-bucket.s3.amazonaws.com:{}/a/b", server.port()));
  std::string d = Pattern(100, 4);
  ASSERT_TRUE(c.Put("v/obj", d.data(), d.size()).ok());
  // Visible through path-style addressing too: the same bucket was addressed.
  S3Client path(Config(server));
  EXPECT_TRUE(path.Get("v/obj", d.data(), d.size()).ok());
}

TEST(S3rverBench, SmallRunMeasuresEveryOperationAndDeletesEverything) {
  S3rver server;
  S3BenchOptions o;
  o.config = Config(server);
  o.sizes = {4096, 6u << 20};
  o.concurrency = {1, 2};
  o.duration_s = 0.3;
  o.part_size = 5u << 20;
  o.multipart_threshold = 5u << 20;
  o.mixed_s = 1;
  o.mixed_object = 8192;
  o.list_page = 5;
  json r = RunS3Bench(o);
  ASSERT_EQ(r["transfers"].size(), 8u);  // 2 sizes x 2 stream counts x PUT/GET
  for (const auto& t : r["transfers"]) {
    EXPECT_EQ(t["status"], "ok") << t.dump();
    EXPECT_GT(t["ops"].get<uint64_t>(), 0u);
    EXPECT_EQ(t["bytes"].get<uint64_t>(), t["ops"].get<uint64_t>() * t["object_bytes"].get<uint64_t>());
    EXPECT_EQ(t["latency"]["count"], t["ops"]);
    EXPECT_EQ(t["multipart"].get<bool>(), t["op"] == "PUT" && t["object_bytes"] == (6u << 20));
  }
  const json& l = r["list"][0];
  EXPECT_EQ(l["status"], "ok") << l.dump();
  EXPECT_EQ(l["keys"], l["prefix_objects"]);
  EXPECT_GE(l["pages"].get<uint64_t>(), 1u);
  EXPECT_EQ(r["mixed"]["status"], "ok");
  EXPECT_GT(r["mixed"]["ops"].get<uint64_t>(), 0u);
  EXPECT_EQ(r["delete"]["failed"], 0u);
  EXPECT_EQ(r["requests"]["failed"], 0u);
  EXPECT_TRUE(r["cleanup"]["leftovers"].empty());
  // Nothing of the run is left in the bucket.
  S3Client c(Config(server));
  std::vector<std::string> keys;
  std::string next;
  ASSERT_TRUE(c.List(r["prefix"], 1000, "", keys, next).ok());
  EXPECT_TRUE(keys.empty()) << keys.size();
  // The credentials' values are nowhere in the result.
  EXPECT_EQ(r.dump().find("\"S3RVER\""), std::string::npos);
  json g = Grade(S3Metrics(r), EmbeddedBenchThresholds());
  EXPECT_EQ(g.size(), 5u);
  for (const auto& x : g) EXPECT_NE(x["verdict"], "SKIP") << x.dump();
}

TEST(S3rverBench, ClearErrorsBeforeAnythingIsWritten) {
  S3rver server;
  S3BenchOptions o;
  o.config = Config(server);
  o.config.bucket = "no-such-bucket";
  try {
    RunS3Bench(o);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
  o.config = Config(server);
  o.config.credentials = {"WRONGKEY", "x", "", "test"};
  try {
    RunS3Bench(o);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("denied"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("InvalidAccessKeyId"), std::string::npos) << e.what();
  }
  o.config = Config(server);
  o.config.endpoint = "http://127.0.0.1:" + std::to_string(FreePort());  // nothing listens there
  try {
    RunS3Bench(o);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot reach"), std::string::npos) << e.what();
  }
}

TEST(S3rverBench, ServerStoppedMidRunIsReportedNotHung) {
  auto server = std::make_unique<S3rver>();
  S3BenchOptions o;
  o.config = Config(*server);
  o.config.max_retries = 1;
  o.config.connect_timeout_s = 1;
  o.sizes = {4096};
  o.concurrency = {2};
  o.duration_s = 1.5;
  o.mixed_s = 0;
  json r;
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(700));
    server->Kill(SIGKILL);
  });
  auto t0 = std::chrono::steady_clock::now();
  r = RunS3Bench(o);
  killer.join();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(wall, 60.0);
  EXPECT_GT(r["requests"]["failed"].get<uint64_t>(), 0u);
  bool any_error = false;
  for (const auto& t : r["transfers"]) any_error = any_error || t["status"] == "error";
  EXPECT_TRUE(any_error) << r["transfers"].dump();
  EXPECT_FALSE(r["cleanup"]["leftovers"].empty());  // could not delete: said so, not hidden
  json g = Grade(S3Metrics(r), EmbeddedBenchThresholds());
  EXPECT_EQ(WorstVerdict(g), "FAIL");
}

namespace {

// A loopback stand-in for an S3 endpoint with one fault: PUT, DELETE, HEAD and LIST answer as S3
// does (a LIST is always empty), and every object GET is cut short (a Content-Length larger than
// the body sent, then the connection closes) after `get_delay`. One connection at a time.
class CutGetServer {
 public:
  explicit CutGetServer(std::chrono::milliseconds get_delay) : get_delay_(get_delay) {
    fd_ = testing_server::ListenLoopback(64, &port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~CutGetServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  int gets() const { return gets_; }
  int puts() const { return puts_; }

 private:
  void Serve() {
    while (true) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string req = testing_server::ReadRequest(c);
      std::string method = req.substr(0, req.find(' '));
      std::string target = req.substr(method.size() + 1, req.find(' ', method.size() + 1) - method.size() - 1);
      std::string resp;
      if (method == "GET" && target.find("list-type=2") != std::string::npos) {
        std::string xml =
            "<?xml version=\"1.0\"?><ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>";
        resp = fmt::format("HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: {}\r\n\r\n{}",
                           xml.size(), xml);
      } else if (method == "GET") {
        ++gets_;
        std::this_thread::sleep_for(get_delay_);
        resp = "HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n0123456789";
      } else if (method == "PUT") {
        ++puts_;
        resp = "HTTP/1.1 200 OK\r\nETag: \"0123\"\r\nContent-Length: 0\r\n\r\n";
      } else if (method == "DELETE") {
        resp = "HTTP/1.1 204 No Content\r\n\r\n";
      } else if (method == "HEAD") {
        resp = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
      } else {
        resp = "HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\n\r\n";
      }
      resp.insert(resp.find("\r\n") + 2, "Connection: close\r\n");
      ::send(c, resp.data(), resp.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
  std::chrono::milliseconds get_delay_;
  int fd_ = -1, port_ = 0;
  std::atomic<int> gets_{0}, puts_{0};
  std::thread thread_;
};

std::string Slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// What the user's credentials look like in these tests: none of them may appear in any output.
const char* kUrlPassword = "Pw-S3cret-7781";
const char* kAccessKey = "AKIDTESTKEY00017781";
const char* kSecretKey = "SeCrEtKeyValue00017781";
std::string CredentialEnv() {
  return fmt::format("AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY={}", kAccessKey, kSecretKey);
}
void ExpectNoCredential(const std::string& text, const std::string& where) {
  for (const char* secret : {kUrlPassword, kAccessKey, kSecretKey}) {
    EXPECT_EQ(text.find(secret), std::string::npos) << secret << " in " << where << ":\n" << text;
  }
}

}  // namespace

// An endpoint whose every GET is cut short: the successful PUTs (hundreds of them) must not dilute
// the failures into a WARN. GET is graded on its own: FAIL, and the command exits 2 like any bench
// FAIL. The endpoint carries a password in its URL and the keys come from the environment: none of
// them appears on stdout, stderr or in any file the run writes.
TEST(S3FakeServer, EveryGetCutShortFailsAndNoCredentialLeaks) {
  CutGetServer server(std::chrono::milliseconds(1000));  // one GET fills the GET row's second
  fs::path out = fs::path(CLUSTERMAX_BUILD_DIR) / "test-scratch" / "s3-cut-get";
  fs::remove_all(out);
  fs::create_directories(out);
  fs::path run = out / "run", err = out / "stderr.txt";
  std::string endpoint = fmt::format("http://cmuser:{}@127.0.0.1:{}", kUrlPassword, server.port());
  auto c = clustermax::testing::RunShell(fmt::format(
      "{} {} bench s3 --endpoint {} --bucket ci-bucket --sizes 4K --concurrency 1 --duration 1 --mixed 0 --retries 0 --out {} 2>{}",
      CredentialEnv(), CLUSTERMAX_BINARY, endpoint, run.string(), err.string()));
  std::string stderr_text = Slurp(err);
  EXPECT_EQ(c.code, 2) << c.out << stderr_text;
  EXPECT_GT(server.puts(), 0);
  EXPECT_GT(server.gets(), 0);
  ExpectNoCredential(c.out, "stdout");
  ExpectNoCredential(stderr_text, "stderr");
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(run)) {
    if (!e.is_regular_file()) continue;
    ++files;
    ExpectNoCredential(Slurp(e.path()), e.path().string());
  }
  EXPECT_EQ(files, 1);
  json r = json::parse(Slurp(run / "bench" / "s3.json"));
  EXPECT_EQ(r["endpoint"], fmt::format("http://***@127.0.0.1:{}", server.port()));
  EXPECT_NE(c.out.find(fmt::format("http://***@127.0.0.1:{}", server.port())), std::string::npos) << c.out;
  const json& get = r["requests"]["by_op"]["GET"];
  EXPECT_GT(get["total"].get<uint64_t>(), 0u);
  EXPECT_EQ(get["failed"], get["total"]);
  EXPECT_EQ(r["requests"]["by_op"]["PUT"]["failed"], 0u);
  EXPECT_LT(r["requests"]["failed"].get<double>() / r["requests"]["total"].get<double>(), 0.01);  // diluted overall
  EXPECT_EQ(r["verdict"], "FAIL");
  bool graded = false;
  for (const auto& g : r["grades"]) {
    if (g["metric"] != "s3.error-rate") continue;
    graded = true;
    EXPECT_EQ(g["verdict"], "FAIL") << g.dump();
    EXPECT_EQ(g["value"], 100.0);
  }
  EXPECT_TRUE(graded);
  fs::remove_all(out);
}

// The error paths say where without the credentials: an endpoint that does not answer, and the
// audit's s3-probe answering on stdout.
TEST(S3FakeServer, ErrorsAndTheProbeNameTheEndpointWithoutItsPassword) {
  int dead_port = FreePort();
  std::string dead = fmt::format("http://cmuser:{}@127.0.0.1:{}", kUrlPassword, dead_port);
  fs::path out = fs::path(CLUSTERMAX_BUILD_DIR) / "test-scratch" / "s3-redact-errors";
  fs::remove_all(out);
  fs::create_directories(out);
  auto c =
      clustermax::testing::RunShell(fmt::format("{} {} bench s3 --endpoint {} --bucket ci-bucket --retries 0 --out {}",
                                                CredentialEnv(), CLUSTERMAX_BINARY, dead, (out / "run").string()));
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_NE(c.out.find(fmt::format("cannot reach http://***@127.0.0.1:{}", dead_port)), std::string::npos) << c.out;
  ExpectNoCredential(c.out, "bench s3 error");

  auto bad = clustermax::testing::RunShell(
      fmt::format("{} {} bench s3 --endpoint ftp://cmuser:{}@127.0.0.1 --bucket ci-bucket --out {}", CredentialEnv(),
                  CLUSTERMAX_BINARY, kUrlPassword, (out / "run").string()));
  EXPECT_EQ(bad.code, 1) << bad.out;
  ExpectNoCredential(bad.out, "bad endpoint error");

  CutGetServer server(std::chrono::milliseconds(0));
  auto probe = clustermax::testing::RunShell(
      fmt::format("{} {} probe s3 --endpoint http://cmuser:{}@127.0.0.1:{} --bucket ci-bucket 2>&1", CredentialEnv(),
                  CLUSTERMAX_BINARY, kUrlPassword, server.port()));
  EXPECT_EQ(probe.code, 0) << probe.out;
  ExpectNoCredential(probe.out, "probe s3");
  EXPECT_NE(probe.out.find(fmt::format("http://***@127.0.0.1:{}", server.port())), std::string::npos) << probe.out;
  fs::remove_all(out);
}

namespace {
using Cli = clustermax::testing::Shell;
Cli RunBinary(const std::string& args, const std::string& env = "") {
  return clustermax::testing::RunShell(env + " " + CLUSTERMAX_BINARY + " " + args + " 2>/dev/null </dev/null");
}
json ObjectStorageResult(const std::string& extra, const std::string& env, const fs::path& out) {
  fs::remove_all(out);
  Cli c = RunBinary(
      "audit --standalone --yes --json --exit-zero --check object-storage-endpoint --out " + out.string() + " " + extra,
      env);
  json r = json::parse(c.out);
  return r["results"].at(0);
}
}  // namespace

// The audit's s3-probe, end to end: the binary runs `probe s3` as a recorded command through the
// host seam; the check grades it; the recorded bundle replays to the same verdict without a server.
TEST(S3rverAuditProbe, ObjectStorageEndpointGradedAndReplayed) {
  S3rver server;
  fs::path base = fs::path(CLUSTERMAX_BUILD_DIR) / "test-scratch" / "s3-audit";
  fs::create_directories(base);
  const std::string creds = "AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER";
  std::string target = "--s3-endpoint " + server.endpoint() + " --s3-bucket ci-bucket";

  json off = ObjectStorageResult(target, creds, base / "off");
  EXPECT_EQ(off["status"], "SKIP");
  EXPECT_EQ(off["reason"], "probe-disabled");

  json none = ObjectStorageResult("--probe s3-probe", creds, base / "none");
  EXPECT_EQ(none["status"], "SKIP");
  EXPECT_EQ(none["reason"], "prerequisite-missing");

  fs::path bundle = base / "bundle.json";
  fs::remove(bundle);
  json ok = ObjectStorageResult("--probe s3-probe " + target + " --record " + bundle.string(), creds, base / "ok");
  EXPECT_EQ(ok["status"], "PASS") << ok.dump();
  EXPECT_EQ(ok["details"].size(), 5u) << ok.dump();  // credentials source + 4 operations
  EXPECT_NE(ok.dump().find("credentials from environment"), std::string::npos)
      << ok.dump();  // the child inherited them

  json missing = ObjectStorageResult("--probe s3-probe --s3-endpoint " + server.endpoint() + " --s3-bucket nope", creds,
                                     base / "missing");
  EXPECT_EQ(missing["status"], "WARN") << missing.dump();
  EXPECT_NE(missing.dump().find("NoSuchBucket"), std::string::npos);

  json down = ObjectStorageResult(
      "--probe s3-probe --s3-endpoint http://127.0.0.1:" + std::to_string(FreePort()) + " --s3-bucket ci-bucket", creds,
      base / "down");
  EXPECT_EQ(down["status"], "FAIL") << down.dump();

  // The bundle holds the probe's answer, not the secret; replay needs no server.
  std::ifstream bf(bundle);
  std::string text((std::istreambuf_iterator<char>(bf)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("\"/proc/self/exe\""), std::string::npos);
  EXPECT_NE(text.find("CLUSTERMAX_S3_ENDPOINT"), std::string::npos);
  EXPECT_EQ(text.find("\"S3RVER\""), std::string::npos);  // neither key nor secret
  server.Kill(SIGTERM);
  Cli replay = RunBinary("audit --json --exit-zero --check object-storage-endpoint --replay " + bundle.string());
  json rr = json::parse(replay.out)["results"].at(0);
  EXPECT_EQ(rr["status"], "PASS") << replay.out;
  fs::remove_all(base);
}
