// bench infer: the SSE reader, the chunk reader and vLLM's metric definitions on hand-made records,
// then the binary against a real loopback streaming server with scripted timings
// (tests/fixtures/infer/scripted_server.py), its figures checked against the timings the server was
// told to keep and, side by side, against a restatement of vLLM's calculate_metrics
// (tests/fixtures/infer/vllm_metrics.py) over the same recorded per-request timings.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "bench/infer.h"
#include "testutil.h"

namespace fs = std::filesystem;
using clustermax::testing::Accepts;
using clustermax::testing::FreePort;
using nlohmann::json;
using namespace clustermax::bench::infer;
using clustermax::testing::Fixture;
using clustermax::testing::RunShell;
using clustermax::testing::ScratchDir;

TEST(InferSse, EventsSplitAcrossPiecesCommentsAndLineEnds) {
  std::string stream =
      "data: {\"a\":1}\r\n\r\n: keep-alive\n\nevent: x\ndata: line one\ndata: line two\n\nid: 3\n\ndata: [DONE]\n\n";
  for (size_t piece : {1u, 3u, 7u, 1000u}) {
    SseParser p;
    std::vector<std::string> got;
    for (size_t at = 0; at < stream.size(); at += piece)
      ASSERT_TRUE(p.Feed(std::string_view(stream).substr(at, piece), [&](const std::string& d) { got.push_back(d); }));
    EXPECT_EQ(got, (std::vector<std::string>{"{\"a\":1}", "line one\nline two", "[DONE]"})) << piece;
  }
  // A line that never ends is refused at the limit, and nothing is delivered after.
  SseParser small(16);
  int calls = 0;
  EXPECT_FALSE(small.Feed(std::string(17, 'x'), [&](const std::string&) { ++calls; }));
  EXPECT_FALSE(small.Feed("data: 1\n\n", [&](const std::string&) { ++calls; }));
  EXPECT_EQ(calls, 0);
}

TEST(InferChunk, ChatCompletionsUsageErrorsAndGarbage) {
  auto c = ParseStreamChunk(json::parse(R"({"choices":[{"index":0,"delta":{"content":"Hi"}}]})"));
  EXPECT_TRUE(c.has_choices);
  EXPECT_EQ(c.text, "Hi");
  // vLLM's first chat chunk carries only the role: it has choices (vLLM times the first token there).
  c = ParseStreamChunk(json::parse(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})"));
  EXPECT_TRUE(c.has_choices);
  EXPECT_EQ(c.text, "");
  c = ParseStreamChunk(json::parse(R"({"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]})"));
  EXPECT_EQ(c.text, "hmm");
  c = ParseStreamChunk(json::parse(R"({"choices":[{"index":0,"text":" world"}]})"));
  EXPECT_EQ(c.text, " world");
  c = ParseStreamChunk(json::parse(R"({"choices":[],"usage":{"prompt_tokens":1024,"completion_tokens":7}})"));
  EXPECT_FALSE(c.has_choices);
  EXPECT_EQ(*c.prompt_tokens, 1024);
  EXPECT_EQ(*c.completion_tokens, 7);
  c = ParseStreamChunk(json::parse(R"({"error":{"message":"out of KV cache\u001b[2J\u0007","code":500}})"));
  EXPECT_NE(c.error.find("out of KV cache"), std::string::npos);
  // What the server said reaches the terminal without its control bytes.
  json shown = {
      {"points", {{{"shape", "1k/1k"}, {"metrics", {{"errors", {{"the server streamed an error: " + c.error, 2}}}}}}}}};
  std::string text = RenderInfer(shown);
  EXPECT_NE(text.find("out of KV cache"), std::string::npos) << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
  EXPECT_EQ(text.find('\a'), std::string::npos) << text;
  for (const char* bad : {R"([1,2])", R"({"choices":"x"})", R"({"choices":[3]})", R"({"choices":[{"delta":7}]})",
                          R"({"usage":{"completion_tokens":-5,"prompt_tokens":"x"}})", R"({"error":42})"}) {
    EXPECT_NO_THROW(c = ParseStreamChunk(json::parse(bad))) << bad;
    EXPECT_FALSE(c.completion_tokens.has_value()) << bad;
  }
}

TEST(InferMetrics, FollowVllmsDefinitions) {
  EXPECT_DOUBLE_EQ(Percentile({4, 1, 3, 2}, 90), 3.7);  // numpy.percentile([1,2,3,4], 90)
  EXPECT_DOUBLE_EQ(Percentile({5}, 99), 5);
  RequestRecord a;  // five tokens: first at 0.1 s, then four gaps of 0.1 s
  a.ok = true, a.ttft = 0.1, a.e2el = 0.5, a.itl = {0.1, 0.1, 0.1, 0.1}, a.output_tokens = 5, a.input_tokens = 10;
  a.usage = true;
  RequestRecord b;  // one token: no TPOT
  b.ok = true, b.ttft = 0.2, b.e2el = 0.2, b.output_tokens = 1, b.input_tokens = 10, b.usage = true;
  RequestRecord c;
  c.error = "HTTP 503: overloaded";
  Slo slo;
  slo.ttft_ms = 150;
  json m = SummarizePoint({a, b, c}, 2.0, slo, 2);
  EXPECT_EQ(m["completed"], 2);
  EXPECT_EQ(m["failed"], 1);
  EXPECT_EQ(m["errors"]["HTTP 503: overloaded"], 1);
  EXPECT_DOUBLE_EQ(m["request_throughput"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(m["output_throughput"].get<double>(), 3.0);  // (5 + 1) / 2 s; the failure counts 0
  EXPECT_DOUBLE_EQ(m["total_token_throughput"].get<double>(), 13.0);
  EXPECT_DOUBLE_EQ(m["output_throughput_per_gpu"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(m["ttft_ms"]["mean"].get<double>(), 150);
  EXPECT_DOUBLE_EQ(m["ttft_ms"]["p99"].get<double>(), 199);
  EXPECT_DOUBLE_EQ(m["ttft_ms"]["std"].get<double>(), 50);  // ddof 0
  EXPECT_EQ(m["tpot_ms"]["count"], 1);                      // b's single token has none
  EXPECT_DOUBLE_EQ(m["tpot_ms"]["mean"].get<double>(), 100);
  EXPECT_EQ(m["itl_ms"]["count"], 4);
  EXPECT_DOUBLE_EQ(m["e2el_ms"]["median"].get<double>(), 350);
  // Goodput: a meets the TTFT SLO, b (200 ms) does not, c failed.
  EXPECT_EQ(m["good_requests"], 1);
  EXPECT_DOUBLE_EQ(m["goodput"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(m["slo_attainment"].get<double>(), 0.3333);
  EXPECT_EQ(m["tokens_from"], "usage");
  // Nothing completed: zeros as vLLM prints them, no division by zero.
  json empty = SummarizePoint({c}, 0, {}, 0);
  EXPECT_EQ(empty["completed"], 0);
  EXPECT_EQ(empty["ttft_ms"]["mean"], 0);
  EXPECT_FALSE(empty.contains("goodput"));
}

TEST(InferPrompt, SyntheticPromptsHaveTheirLengthAndDifferPerIndex) {
  std::string p = SyntheticPrompt(1024, 7);
  EXPECT_EQ(std::count(p.begin(), p.end(), ' '), 1023);
  EXPECT_EQ(p, SyntheticPrompt(1024, 7));
  EXPECT_NE(p.substr(0, 40), SyntheticPrompt(1024, 8).substr(0, 40));
  EXPECT_EQ(SyntheticPrompt(0, 1), "");
}

namespace {

// The scripted server as a child process; its port from the file it writes.
struct ScriptedServer {
  pid_t pid = -1;
  int port = 0;
  explicit ScriptedServer(const std::string& args, const fs::path& dir) {
    fs::path port_file = dir / "port";
    fs::remove(port_file);
    pid = ::fork();
    if (pid == 0) {
      std::string cmd = fmt::format("exec python3 {} --port-file {} {}", Fixture("infer/scripted_server.py").string(),
                                    port_file.string(), args);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 200 && port == 0; ++i) {
      std::ifstream f(port_file);
      if (!(f >> port)) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~ScriptedServer() {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

json RunInfer(const std::string& args, const fs::path& out, int* code = nullptr) {
  auto r = RunShell(fmt::format("{} bench infer {} --out {} --json --exit-zero -q 2>{}", CLUSTERMAX_BINARY, args,
                                out.string(), (out.parent_path() / "infer.stderr").string()));
  if (code) *code = r.code;
  json j = json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

const json& Grade(const json& r, const std::string& id) {
  for (const auto& g : r["grades"])
    if (g["metric"] == id) return g;
  static const json none;
  return none;
}

}  // namespace

TEST(InferRun, ScriptedTimingsAreMeasuredAsVllmWouldReportThem) {
  // The server waits 150 ms for the first token, then 30 ms per token: 16 tokens per request.
  fs::path dir = ScratchDir("infer-run");
  ScriptedServer srv("--ttft-ms 150 --itl-ms 30", dir);
  ASSERT_GT(srv.port, 0);
  json r = RunInfer(fmt::format("--url http://127.0.0.1:{}/v1 --shapes 64/16 --concurrency 1,4 --requests 8 "
                                "--slo-ttft-ms 2000 --gpus 2",
                                srv.port),
                    dir / "run");
  ASSERT_EQ(r["kind"], "clustermax.bench.infer") << r.dump();
  EXPECT_EQ(r["target"]["model"], "scripted-model");  // from /v1/models
  ASSERT_EQ(r["points"].size(), 2u);
  for (const auto& p : r["points"]) {
    const json& m = p["metrics"];
    EXPECT_EQ(m["completed"], 8) << m.dump();
    EXPECT_EQ(m["output_tokens"], 8 * 16);
    EXPECT_EQ(m["input_tokens"], 8 * 64);  // the server counts the prompt's words
    EXPECT_EQ(m["tokens_from"], "usage");
    // Never below what the server waited; above it only by loopback and scheduling noise.
    EXPECT_GE(m["ttft_ms"]["min"].get<double>(), 150.0) << m.dump();
    EXPECT_LT(m["ttft_ms"]["median"].get<double>(), 150.0 + 400) << m.dump();
    EXPECT_EQ(m["itl_ms"]["count"], 8 * 15);
    EXPECT_NEAR(m["itl_ms"]["median"].get<double>(), 30.0, 25.0) << m.dump();
    EXPECT_NEAR(m["tpot_ms"]["median"].get<double>(), 30.0, 25.0) << m.dump();
    EXPECT_GE(m["e2el_ms"]["min"].get<double>(), 150.0 + 15 * 30) << m.dump();
    EXPECT_EQ(p["records"].size(), 8u);
  }
  EXPECT_EQ(Grade(r, "infer.failed-requests")["verdict"], "PASS");
  EXPECT_EQ(Grade(r, "infer.slo-attainment")["verdict"], "PASS");
  EXPECT_EQ(Grade(r, "infer.server-ready")["verdict"], "SKIP");
  // Side by side: vLLM's calculate_metrics restated over the same recorded timings.
  auto ref = RunShell(fmt::format("python3 {} {}", Fixture("infer/vllm_metrics.py").string(),
                                  (dir / "run" / "bench" / "infer.json").string()));
  ASSERT_EQ(ref.code, 0) << ref.out;
  json v = json::parse(ref.out);
  ASSERT_EQ(v.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const json& ours = r["points"][i]["metrics"];
    EXPECT_EQ(ours["completed"], v[i]["completed"]);
    for (const char* k : {"request_throughput", "output_throughput", "total_token_throughput", "goodput"})
      EXPECT_NEAR(ours[k].get<double>(), v[i][k].get<double>(), 1e-3 * v[i][k].get<double>() + 1e-4) << k;
    for (const char* d : {"ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"})
      for (const char* s : {"mean", "median", "std", "p90", "p99"})
        EXPECT_NEAR(ours[d][s].get<double>(), v[i][d][s].get<double>(), 0.01) << d << " " << s;
  }
}

TEST(InferRun, FailuresAreCountedNamedAndGraded) {
  // Every third request is refused with 503; a server without usage is counted by chunks.
  fs::path dir = ScratchDir("infer-fail");
  ScriptedServer srv("--ttft-ms 20 --itl-ms 5 --fail-every 3 --no-usage", dir);
  ASSERT_GT(srv.port, 0);
  json r = RunInfer(fmt::format("--url http://127.0.0.1:{}/v1/ --model m --endpoint completions --shapes 32/8 "
                                "--concurrency 2 --requests 9",
                                srv.port),
                    dir / "run");
  const json& m = r["points"][0]["metrics"];
  EXPECT_EQ(m["failed"], 3) << m.dump();
  EXPECT_EQ(m["completed"], 6);
  ASSERT_TRUE(m.contains("errors"));
  EXPECT_NE(m["errors"].begin().key().find("HTTP 503"), std::string::npos) << m.dump();
  EXPECT_EQ(m["tokens_from"], "chunks");
  EXPECT_EQ(m["output_tokens"], 6 * 8);
  EXPECT_EQ(Grade(r, "infer.failed-requests")["verdict"], "FAIL");
  EXPECT_EQ(Grade(r, "infer.slo-attainment")["verdict"], "SKIP");  // no SLO given
  EXPECT_EQ(r["verdict"], "FAIL");
  // Nobody listening: every request fails with curl's reason, nothing crashes.
  json dead = RunInfer("--url http://127.0.0.1:1/v1 --model m --concurrency 1 --requests 2 --shapes 8/4", dir / "dead");
  EXPECT_EQ(dead["points"][0]["metrics"]["failed"], 2) << dead.dump();
  // Usage errors.
  auto bad = RunShell(std::string(CLUSTERMAX_BINARY) + " bench infer --url http://x/v1 --shapes 1k 2>&1");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("--shapes"), std::string::npos) << bad.out;
  bad = RunShell(std::string(CLUSTERMAX_BINARY) + " bench infer --url ftp://x 2>&1");
  EXPECT_EQ(bad.code, 1) << bad.out;
}

TEST(InferRun, TheServerCommandIsTimedToReadyAndStoppedAfter) {
  // A server that takes a second to load before it listens: ready after at least that long.
  fs::path dir = ScratchDir("infer-server");
  int port = FreePort();
  std::string cmd =
      fmt::format("HF_TOKEN=hf_secret123 python3 {} --port-file {} --port {} --startup-s 1 --ttft-ms 10 --itl-ms 2",
                  Fixture("infer/scripted_server.py").string(), (dir / "port").string(), port);
  json r = RunInfer(fmt::format("--url http://127.0.0.1:{}/v1 --server-cmd '{}' --shapes 16/4 --concurrency 2 "
                                "--requests 4",
                                port, cmd),
                    dir / "run");
  ASSERT_TRUE(r["server"].contains("ready_s")) << r.dump();
  EXPECT_GE(r["server"]["ready_s"].get<double>(), 1.0);
  EXPECT_LT(r["server"]["ready_s"].get<double>(), 60.0);
  EXPECT_EQ(r["points"][0]["metrics"]["completed"], 4);
  EXPECT_EQ(Grade(r, "infer.server-ready")["verdict"], "PASS");
  // The command is kept, its secrets are not.
  EXPECT_NE(r["server"]["command"].get<std::string>().find("HF_TOKEN=<redacted>"), std::string::npos) << r["server"];
  EXPECT_EQ(r.dump().find("hf_secret123"), std::string::npos);
  // Stopped with its process group: nothing listens on the port any more.
  EXPECT_FALSE(Accepts(port));
  // A server command that dies is reported, and nothing is sent.
  json died =
      RunInfer("--url http://127.0.0.1:1/v1 --server-cmd 'echo loading weights; exit 3' --shapes 8/4", dir / "died");
  EXPECT_NE(died["server"].value("output_tail", "").find("loading weights"), std::string::npos) << died.dump();
  EXPECT_NE(died["server"].value("error", "").find("exited (3)"), std::string::npos) << died.dump();
  EXPECT_TRUE(died["points"].empty());
  EXPECT_EQ(Grade(died, "infer.server-ready")["verdict"], "FAIL");
}

TEST(InferMetrics, DocumentsOfTheWrongShapeNeitherThrowNorPass) {
  for (const char* text :
       {R"({"points": 3})", R"({"points": [1, {"metrics": 2}, {"shape": 5, "metrics": {"errors": 7, "ttft_ms": 1}}]})",
        R"({"server": {"ready_s": "soon"}, "target": [], "points": [{"metrics": {"slo_attainment": "x"}}]})", "[]"}) {
    json doc = json::parse(text);
    EXPECT_NO_THROW(RenderInfer(doc)) << text;
    std::vector<clustermax::bench::MetricValue> m;
    EXPECT_NO_THROW(m = InferMetrics(doc)) << text;
    for (const auto& v : m) EXPECT_FALSE(v.value.has_value()) << text << " " << v.id;
  }
}

TEST(InferRun, CtrlCKeepsWhatWasMeasuredAndStopsTheServer) {
  // Requests of 100 tokens at 100 ms each are in flight when SIGINT arrives: the run ends within
  // seconds, is saved as interrupted (INCOMPLETE), and the server it started is gone.
  fs::path dir = ScratchDir("infer-cancel");
  int port = FreePort();
  std::string server = fmt::format("python3 {} --port-file {} --port {} --ttft-ms 10 --itl-ms 100",
                                   Fixture("infer/scripted_server.py").string(), (dir / "port").string(), port);
  auto t0 = std::chrono::steady_clock::now();
  auto r = RunShell(fmt::format(
      "({} bench infer --url http://127.0.0.1:{}/v1 --server-cmd '{}' --shapes 8/100 --concurrency 2 --requests 4 "
      "--out {} --json --exit-zero -q > {} 2>/dev/null) & pid=$!; "
      "for i in $(seq 1 100); do [ -s {} ] && break; sleep 0.1; done; sleep 2; kill -INT $pid; wait $pid; echo rc=$?",
      CLUSTERMAX_BINARY, port, server, (dir / "run").string(), (dir / "out.json").string(), (dir / "port").string()));
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(secs, 30.0) << r.out;  // four requests would take 20 s uninterrupted, the run far less
  std::ifstream f(dir / "out.json");
  json j = json::parse(f, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  EXPECT_EQ(j["interrupted"], true) << j.dump().substr(0, 400);
  EXPECT_EQ(j["verdict"], "INCOMPLETE");
  EXPECT_FALSE(Accepts(port));
}
