// `bench gpu` without a GPU: plans (shapes, precisions, availability), FLOP and byte accounting,
// the sampled check and its tolerances, statistics, the analysis of helper lines, grading on a
// result recorded on a real H200, and the command end to end with the real helper (no driver here:
// SKIP) and with a stand-in helper (tests/fake_gpu) for several GPUs, wrong results and a crash.
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "bench/gpu_bench.h"
#include "bench/gpu_plan.h"
#include "testutil.h"

namespace clustermax::bench {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

GpuPlanOptions Hopper() {
  GpuPlanOptions o;
  o.compute_capability = "9.0";
  o.memory_bytes = uint64_t{141} << 30;
  return o;
}

const json* Find(const json& items, const std::string& id) {
  for (const auto& i : items) {
    if (i["id"] == id) return &i;
  }
  return nullptr;
}

TEST(GpuPlan, PrecisionsAreNativeOrNotApplicableWithTheReason) {
  EXPECT_FALSE(PrecisionUnavailable("bf16", "9.0"));
  EXPECT_FALSE(PrecisionUnavailable("fp8-1x128", "9.0"));
  auto mx = PrecisionUnavailable("mxfp8", "9.0");
  ASSERT_TRUE(mx);
  EXPECT_NE(mx->find("sm_90"), std::string::npos);
  EXPECT_NE(mx->find("Blackwell"), std::string::npos);
  EXPECT_TRUE(PrecisionUnavailable("nvfp4", "9.0"));
  EXPECT_FALSE(PrecisionUnavailable("nvfp4", "10.0"));
  EXPECT_FALSE(PrecisionUnavailable("mxfp8", "12.0"));
  EXPECT_TRUE(PrecisionUnavailable("fp8", "8.0"));
  EXPECT_FALSE(PrecisionUnavailable("fp8", "8.9"));
  EXPECT_TRUE(PrecisionUnavailable("tf32", "7.0"));
  EXPECT_FALSE(PrecisionUnavailable("fp64", "7.0"));
  EXPECT_THROW(PrecisionUnavailable("int3", "9.0"), std::invalid_argument);
  EXPECT_THROW(PrecisionUnavailable("bf16", "hopper"), std::invalid_argument);
}

TEST(GpuPlan, GemmQuickAndFullShapes) {
  GpuPlanOptions o = Hopper();
  json q = PlanSuite("gemm", o);
  EXPECT_EQ(q.size(), GpuPrecisions().size());
  const json* bf16 = Find(q, "gemm.dense.bf16.8192x8192x8192");
  ASSERT_NE(bf16, nullptr);
  EXPECT_EQ((*bf16)["kind"], "gemm");
  EXPECT_DOUBLE_EQ((*bf16)["flops"].get<double>(), 2.0 * 8192 * 8192 * 8192);
  EXPECT_FALSE(bf16->contains("na"));
  const json* fp4 = Find(q, "gemm.dense.nvfp4.8192x8192x8192");
  ASSERT_NE(fp4, nullptr);
  EXPECT_TRUE(fp4->contains("na"));
  EXPECT_EQ((*Find(q, "gemm.dense.fp8.8192x8192x8192"))["fast_accum"], false);
  o.full = true;
  o.precisions = {"bf16"};
  json f = PlanSuite("gemm", o);
  EXPECT_EQ(f.size(), 3u);
  // A shape that does not fit the GPU's memory is not applicable, with the size.
  o.memory_bytes = uint64_t{2} << 30;
  json small = PlanSuite("gemm", o);
  EXPECT_TRUE((*Find(small, "gemm.dense.bf16.16384x16384x16384")).contains("na"));
  o.precisions = {"bf17"};
  EXPECT_THROW(PlanSuite("gemm", o), std::invalid_argument);
  EXPECT_THROW(PlanSuite("nope", o), std::invalid_argument);
}

TEST(GpuPlan, MamfSweepsAndRefinement) {
  GpuPlanOptions o = Hopper();
  json q = PlanSuite("mamf", o);
  EXPECT_EQ(q.size(), 2u * 125);  // bf16 and fp8, 5 x 5 x 5 coarse grid
  for (const auto& it : q) {
    EXPECT_EQ(it["warmup"], 5);
    EXPECT_EQ(it["iters"], 20);
  }
  o.full = true;
  o.precisions = {"bf16"};
  json f = PlanSuite("mamf", o);
  EXPECT_EQ(f.size(), 16u * 16 * 16);  // 1024..16384 step 1024, as the reference's broad sweep
  EXPECT_EQ(f[0]["warmup"], 50);
  EXPECT_EQ(f[0]["iters"], 100);
  // Stage 2: the best 6 of stage 1 and the 27 neighbours of the best (one is the best itself).
  json rows = json::array();
  for (int i = 0; i < 10; ++i) {
    rows.push_back(
        {{"precision", "bf16"}, {"m", 1024 * (i + 1)}, {"n", 4096}, {"k", 8192}, {"tflops_mean", 500.0 + i}});
  }
  rows.push_back({{"precision", "fp8"}, {"m", 1}, {"n", 1}, {"k", 1}, {"tflops_mean", 9999.0}});
  json r = PlanMamfRefine(rows, "bf16", Hopper());
  EXPECT_EQ(r.size(), 6u + 26u);
  EXPECT_EQ(r[0]["m"], 10240);  // the best first
  for (const auto& it : r) {
    EXPECT_EQ(it["stage"], 2);
    EXPECT_EQ(it["iters"], 100);
    EXPECT_EQ(it["dtype"], "bf16");
  }
  EXPECT_NE(Find(r, "mamf.bf16.9984x3840x7936.stage2"), nullptr);
  EXPECT_TRUE(PlanMamfRefine(json::array(), "bf16", Hopper()).empty());
}

TEST(GpuPlan, MoeShapesFromTheModelTables) {
  GpuPlanOptions o = Hopper();
  o.models = {"dsv3", "kimi-k3"};
  o.precisions = {"bf16"};
  json g = PlanSuite("grouped-gemm", o);
  EXPECT_EQ(g.size(), 2u * 2 * 5 * 2);  // models x projections x T x routing
  const json* up = Find(g, "gemm.grouped.dsv3.gate_up.bf16.ep8.t64.uniform");
  ASSERT_NE(up, nullptr);
  EXPECT_EQ((*up)["k"], 7168);
  EXPECT_EQ((*up)["n"], 4096);
  EXPECT_EQ((*up)["groups"], 32);  // 256 experts at EP 8
  EXPECT_EQ((*up)["m"].size(), 32u);
  EXPECT_EQ((*up)["backend"], "auto");
  EXPECT_EQ((*up)["row_align"], 1);
  const json* down = Find(g, "gemm.grouped.kimi-k3.down.bf16.ep8.t4096.skewed");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ((*down)["k"], 3072);
  EXPECT_EQ((*down)["n"], 3584);  // the latent expert width
  EXPECT_EQ((*down)["groups"], 112);
  o.precisions = {"fp8"};
  json f = PlanSuite("grouped-gemm", o);
  EXPECT_EQ(f[0]["backend"], "lt-graph");
  EXPECT_EQ(f[0]["row_align"], 16);
  o.models = {"gpt-oss"};
  EXPECT_THROW(PlanSuite("grouped-gemm", o), std::invalid_argument);
}

TEST(GpuPlan, RoutingKeepsTheTokenCount) {
  EXPECT_EQ(RouteTokens(4, 8, false), (std::vector<int64_t>{8, 8, 8, 8}));
  for (int64_t t : {1, 8, 64, 4096}) {
    auto s = RouteTokens(48, t, true);
    ASSERT_EQ(s.size(), 48u);
    EXPECT_EQ(std::accumulate(s.begin(), s.end(), int64_t{0}), 48 * t);
    EXPECT_GT(s.front(), s.back());
  }
  auto decode = RouteTokens(48, 1, true);
  EXPECT_GT(std::count(decode.begin(), decode.end(), 0), 10);  // many experts get nothing
  EXPECT_TRUE(RouteTokens(0, 5, true).empty());
}

TEST(GpuPlan, FlopAndByteAccounting) {
  EXPECT_DOUBLE_EQ(GemmFlops(2, 3, 4), 48);
  EXPECT_DOUBLE_EQ(GemmBytes("bf16", 2, 3, 4), 2.0 * (2 * 4 + 4 * 3) + 2.0 * 2 * 3);
  EXPECT_DOUBLE_EQ(GemmBytes("fp8", 2, 3, 4), 1.0 * (2 * 4 + 4 * 3) + 2.0 * 2 * 3);  // BF16 output
  EXPECT_DOUBLE_EQ(GemmBytes("nvfp4", 2, 3, 4), 0.5 * (2 * 4 + 4 * 3) + 2.0 * 2 * 3);
  EXPECT_DOUBLE_EQ(GemmBytes("fp32", 1, 1, 1), 12);
  // Grouped: useful FLOPs only; an expert without tokens moves no weights.
  EXPECT_DOUBLE_EQ(GroupedFlops({2, 0, 1}, 3, 4), GemmFlops(2, 3, 4) + GemmFlops(1, 3, 4));
  EXPECT_DOUBLE_EQ(GroupedBytes("bf16", {2, 0, 1}, 3, 4), GemmBytes("bf16", 2, 3, 4) + GemmBytes("bf16", 1, 3, 4));
  json membw = PlanSuite("membw", Hopper());
  EXPECT_DOUBLE_EQ((*Find(membw, "mem.stream.triad"))["bytes_moved"].get<double>(), 3.0 * (1u << 30));
  EXPECT_DOUBLE_EQ((*Find(membw, "mem.stream.read"))["bytes_moved"].get<double>(), 1.0 * (1u << 30));
  json gemv = PlanSuite("gemv", Hopper());
  EXPECT_EQ((*Find(gemv, "mem.gemv.bf16.n1"))["n"], 1);
}

TEST(GpuPlan, PeerPairsNeedTwoGpus) {
  GpuPlanOptions o = Hopper();
  json one = PlanSuite("p2p", o);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_TRUE(one[0].contains("na"));
  o.gpu_count = 8;
  json eight = PlanSuite("p2p", o);
  EXPECT_EQ(eight.size(), 2u * 8 * 7);
  EXPECT_NE(Find(eight, "bw.device-device.7-0.bidir"), nullptr);
}

TEST(GpuCheck, SamplesWithinTolerancePass) {
  json s = {{"got", {1.0, -2.0, 3.0}}, {"ref", {1.0, -2.001, 3.0}}, {"absref", {10.0, 10.0, 10.0}}};
  json j = JudgeSamples(s, "bf16");
  EXPECT_TRUE(j["ok"].get<bool>());
  EXPECT_EQ(j["wrong"], 0);
  EXPECT_NEAR(j["max_rel_err"].get<double>(), 1e-4, 1e-9);
  // The same error is too large for FP32.
  EXPECT_FALSE(JudgeSamples(s, "fp32")["ok"].get<bool>());
}

TEST(GpuCheck, PoisonLeftInTheOutputAndWrongValuesFail) {
  json nan = {{"got", {nullptr, 1.0}}, {"ref", {1.0, 1.0}}, {"absref", {1.0, 1.0}}};
  json j = JudgeSamples(nan, "fp8");
  EXPECT_EQ(j["wrong"], 1);
  EXPECT_FALSE(j["ok"].get<bool>());
  json off = {{"got", {2.0, 1.0}}, {"ref", {1.0, 1.0}}, {"absref", {1.0, 1.0}}};
  EXPECT_EQ(JudgeSamples(off, "fp8")["wrong"], 1);
  // DeepGEMM's diff: identical vectors give 0, a scaled copy does not.
  json same = {{"got", {1.0, 2.0}}, {"ref", {1.0, 2.0}}, {"absref", {1.0, 2.0}}};
  EXPECT_DOUBLE_EQ(JudgeSamples(same, "fp64")["diff"].get<double>(), 0.0);
  json scaled = {{"got", {1.01, 2.02}}, {"ref", {1.0, 2.0}}, {"absref", {100.0, 200.0}}};
  json d = JudgeSamples(scaled, "fp8");
  EXPECT_GT(d["diff"].get<double>(), 0.0);
  EXPECT_LT(d["diff"].get<double>(), 1e-3);
  // Nothing checked is never a pass.
  EXPECT_FALSE(JudgeSamples({{"got", json::array()}, {"ref", json::array()}, {"absref", json::array()}}, "bf16")["ok"]
                   .get<bool>());
}

TEST(GpuCheck, Statistics) {
  json s = Stats({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s["median"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(s["mean"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(s["min"].get<double>(), 1);
  EXPECT_DOUBLE_EQ(s["max"].get<double>(), 4);
  EXPECT_DOUBLE_EQ(s["p99"].get<double>(), 4);
  EXPECT_NEAR(s["cv"].get<double>(), std::sqrt(5.0 / 3) / 2.5, 1e-12);
  EXPECT_DOUBLE_EQ(Stats({5})["median"].get<double>(), 5);
  EXPECT_EQ(Stats({})["count"], 0);
}

TEST(GpuAnalyze, HelperLinesBecomeFigures) {
  json item = {{"id", "g"}, {"kind", "gemm"}, {"dtype", "bf16"}, {"flops", 2e12}, {"bytes", 1e9}};
  json line = {{"type", "result"},
               {"id", "g"},
               {"times_ms", {2.0, 4.0, 2.0}},
               {"samples", {{"got", {1.0}}, {"ref", {1.0}}, {"absref", {1.0}}}},
               {"wall_s", 0.5}};
  json r = AnalyzeGpuItem(item, line);
  EXPECT_EQ(r["status"], "ok");
  EXPECT_DOUBLE_EQ(r["tflops"].get<double>(), 1000);      // median 2 ms
  EXPECT_DOUBLE_EQ(r["tflops_max"].get<double>(), 1000);  // min 2 ms
  EXPECT_DOUBLE_EQ(r["tflops_mean"].get<double>(), 750);  // mean 8/3 ms
  EXPECT_DOUBLE_EQ(r["gbps"].get<double>(), 500);
  line["samples"]["got"] = {nullptr};
  EXPECT_EQ(AnalyzeGpuItem(item, line)["status"], "wrong");
  json na = AnalyzeGpuItem(item, {{"error", "cuBLASLt has no algorithm for fp8-128x128 ..."}});
  EXPECT_EQ(na["status"], "n/a");
  EXPECT_EQ(AnalyzeGpuItem(item, {{"error", "cudaMalloc: cudaErrorMemoryAllocation"}})["status"], "error");
  EXPECT_EQ(AnalyzeGpuItem(item, {{"times_ms", json::array()}})["status"], "error");
  json copy = {{"id", "c"}, {"kind", "membw"}, {"bytes_moved", 2e9}};
  json c = AnalyzeGpuItem(copy, {{"times_ms", {1.0}}, {"wrong", 3}});
  EXPECT_EQ(c["status"], "wrong");
  EXPECT_DOUBLE_EQ(c["gbps"].get<double>(), 2000);
  json launch = AnalyzeGpuItem({{"kind", "launch"}}, {{"event_us", {3.0, 4.0, 5.0}}, {"wall_us", {9.0}}});
  EXPECT_DOUBLE_EQ(launch["event_us"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(launch["wall_us"].get<double>(), 9.0);
}

TEST(GpuPeaks, ModelsMatchByName) {
  const json& peaks = EmbeddedGpuPeaks();
  EXPECT_EQ(MatchGpuModel("NVIDIA H200", peaks)["id"], "H200");
  EXPECT_EQ(MatchGpuModel("NVIDIA H100 80GB HBM3", peaks)["id"], "H100");
  EXPECT_TRUE(MatchGpuModel("NVIDIA H100 PCIe", peaks).is_null());  // other peaks: no bar, SKIP
  EXPECT_EQ(MatchGpuModel("NVIDIA GB200", peaks)["id"], "GB200");
  EXPECT_EQ(MatchGpuModel("NVIDIA B200", peaks)["id"], "B200");
  EXPECT_EQ(MatchGpuModel("AMD Instinct MI300X", peaks)["id"], "MI300X");
  EXPECT_TRUE(MatchGpuModel("Tesla T4", peaks).is_null());
  for (const auto& m : peaks["models"]) {
    for (const auto& p : GpuPrecisions()) EXPECT_TRUE(m["tflops"].contains(p)) << m["id"] << " " << p;
    EXPECT_GT(m["hbm_tbps"].get<double>(), 0);
  }
  for (const auto& [k, f] : peaks["floors"].items()) {
    bool lower = k == "launch_us" || k == "consistency";
    EXPECT_TRUE(lower ? f["pass"] <= f["warn"] : f["pass"] >= f["warn"]) << k;
  }
}

json H200Result() { return json::parse(clustermax::testing::ReadFixture("gpu/h200-bench-gpu-2026-11-30.json")); }

std::string VerdictOf(const json& grades, const std::string& id) {
  for (const auto& g : grades) {
    if (g["metric"] == id) return g["verdict"];
  }
  return "missing";
}

TEST(GpuGrade, RecordedH200Run) {
  json r = H200Result();
  json grades = GradeGpu(r);
  EXPECT_EQ(VerdictOf(grades, "gpu.gemm.bf16"), "PASS");     // 677 of 989 TFLOPS, bar 0.60
  EXPECT_EQ(VerdictOf(grades, "gpu.mamf.bf16"), "PASS");     // 790 of the published 794
  EXPECT_EQ(VerdictOf(grades, "gpu.mamf.fp8"), "WARN");      // 1296 of the published 1453
  EXPECT_EQ(VerdictOf(grades, "gpu.grouped.bf16"), "FAIL");  // cublas grouped at ~350 TFLOPS
  EXPECT_EQ(VerdictOf(grades, "gpu.gemm.mxfp8"), "SKIP");
  EXPECT_EQ(VerdictOf(grades, "gpu.hbm"), "PASS");
  EXPECT_EQ(VerdictOf(grades, "gpu.host-link.h2d"), "PASS");
  EXPECT_EQ(VerdictOf(grades, "gpu.peer"), "SKIP");  // one GPU
  EXPECT_EQ(VerdictOf(grades, "gpu.consistency"), "SKIP");
  EXPECT_EQ(VerdictOf(grades, "gpu.launch"), "PASS");
  // The block-scaled FP8 path gave wrong values at one token per expert: a FAIL, never hidden.
  EXPECT_EQ(VerdictOf(grades, "gpu.wrong-results"), "FAIL");
  r["grades"] = grades;
  r["verdict"] = WorstVerdict(grades);
  std::string text = RenderGpu(r);
  EXPECT_NE(text.find("NVIDIA H200"), std::string::npos);
  EXPECT_NE(text.find("WRONG on GPU 0"), std::string::npos);
  EXPECT_NE(text.find("mamf"), std::string::npos);
  EXPECT_NE(text.find("790.0 1024x8192x16384"), std::string::npos);
}

TEST(GpuGrade, UnknownModelGetsNoBarButStillChecksResults) {
  json r = H200Result();
  r["gpus"][0]["name"] = "NVIDIA L40S";
  json grades = GradeGpu(r);
  EXPECT_EQ(VerdictOf(grades, "gpu.gemm.bf16"), "SKIP");
  EXPECT_EQ(VerdictOf(grades, "gpu.hbm"), "SKIP");
  EXPECT_EQ(VerdictOf(grades, "gpu.wrong-results"), "FAIL");
  EXPECT_EQ(VerdictOf(grades, "gpu.launch"), "PASS");  // an absolute bar
}

// --- the command -----------------------------------------------------------------------------

std::string Cli() { return CLUSTERMAX_BINARY; }
std::string FakeHelper() {
  return (clustermax::testing::SourceDir() / "tests" / "fake_gpu" / "clustermax-gpu").string();
}
fs::path OutDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("cm-gpu-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}
json Saved(const fs::path& dir) {
  std::ifstream f(dir / "bench" / "gpu.json");
  return json::parse(f);
}

TEST(GpuCommand, ListShowsEverySuitePrecisionAndModel) {
  auto r = clustermax::testing::RunShell(Cli() + " bench gpu --list");
  EXPECT_EQ(r.code, 0);
  for (const auto& s : GpuSuites()) EXPECT_NE(r.out.find(s), std::string::npos) << s;
  for (const auto& p : GpuPrecisions()) EXPECT_NE(r.out.find(p), std::string::npos) << p;
  for (const auto& m : MoeModels()) EXPECT_NE(r.out.find(m.id), std::string::npos) << m.id;
}

TEST(GpuCommand, NoGpuHereIsASkipWithTheReasonAndNothingSaved) {
  fs::path real = fs::path(CLUSTERMAX_BUILD_DIR) / "clustermax-gpu";
  fs::path out = OutDir("nogpu");
  if (fs::exists(real)) {
    // The real helper, built by this build, on a machine without an NVIDIA driver.
    auto r = clustermax::testing::RunShell(Cli() + " bench gpu -q --out " + out.string());
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("SKIP (no usable CUDA GPU"), std::string::npos) << r.out;
  }
  auto missing =
      clustermax::testing::RunShell(Cli() + " bench gpu -q --helper /nonexistent/clustermax-gpu --out " + out.string());
  EXPECT_EQ(missing.code, 0);
  EXPECT_NE(missing.out.find("does not exist"), std::string::npos);
  auto none = clustermax::testing::RunShell("FAKE_GPU_NONE=1 " + Cli() + " bench gpu -q --helper " + FakeHelper() +
                                            " --out " + out.string());
  EXPECT_EQ(none.code, 0);
  EXPECT_NE(none.out.find("no usable CUDA GPU: no CUDA device"), std::string::npos) << none.out;
  // Nothing measured: nothing kept (an empty run directory on every call helped nobody).
  EXPECT_NE(none.out.find("nothing measured: no result saved"), std::string::npos) << none.out;
  EXPECT_FALSE(fs::exists(out / "bench" / "gpu.json"));
  auto bad = clustermax::testing::RunShell(Cli() + " bench gpu warp-drive");
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find("unknown GPU suite"), std::string::npos);
  fs::remove_all(out);
}

// A typo in --precisions or --models stops the command before any GPU work, telemetry thread or
// directory (it was accepted silently, or aborted with exit 134 once telemetry ran).
TEST(GpuCommand, TyposInPrecisionsAndModelsAreRefusedUpFront) {
  fs::path out = OutDir("typo");
  auto prec = clustermax::testing::RunShell("FAKE_GPU_COUNT=1 " + Cli() + " bench gpu -q --helper " + FakeHelper() +
                                            " --out " + out.string() + " --precisions bf16,bf17 gemm");
  EXPECT_EQ(prec.code, 1) << prec.out;
  EXPECT_NE(prec.out.find("unknown precision 'bf17'"), std::string::npos) << prec.out;
  auto model = clustermax::testing::RunShell("FAKE_GPU_COUNT=1 " + Cli() + " bench gpu -q --helper " + FakeHelper() +
                                             " --out " + out.string() + " --models typo grouped-gemm");
  EXPECT_EQ(model.code, 1) << model.out;
  EXPECT_NE(model.out.find("unknown model 'typo' (known: "), std::string::npos) << model.out;
  EXPECT_FALSE(fs::exists(out));
}

TEST(GpuCommand, EveryGpuAtOnceAndTheSlowOneIsNamed) {
  fs::path out = OutDir("two");
  auto r = clustermax::testing::RunShell("FAKE_GPU_COUNT=2 FAKE_GPU_SLOW=1 " + Cli() +
                                         " bench gpu -q --no-telemetry --warmup 0 --helper " + FakeHelper() +
                                         " --out " + out.string() + " gemm membw launch p2p");
  json res = Saved(out);
  EXPECT_EQ(res["status"], "ok");
  ASSERT_EQ(res["gpus"].size(), 2u);
  const json& row = *Find(res["suites"]["gemm"]["items"], "gemm.dense.bf16.8192x8192x8192");
  ASSERT_EQ(row["gpus"].size(), 2u);
  EXPECT_EQ(row["summary"]["slowest_gpu"], 1);
  EXPECT_NEAR(row["summary"]["spread_pct"].get<double>(), 16.67, 0.05);
  // A 17 % slower GPU: flagged by the consistency grade, and the node graded by it.
  EXPECT_EQ(VerdictOf(res["grades"], "gpu.consistency"), "WARN");
  EXPECT_EQ(res["suites"]["p2p"]["items"].size(), 4u);
  EXPECT_NE(r.out.find("slowest of 2 GPUs: GPU 1"), std::string::npos) << r.out;
  fs::remove_all(out);
}

TEST(GpuCommand, WrongResultsFailTheRun) {
  fs::path out = OutDir("wrong");
  auto r = clustermax::testing::RunShell("FAKE_GPU_WRONG=gemm.dense.fp16 " + Cli() +
                                         " bench gpu -q --no-telemetry --warmup 0 --helper " + FakeHelper() +
                                         " --out " + out.string() + " gemm");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("WRONG on GPU 0"), std::string::npos);
  EXPECT_EQ(VerdictOf(Saved(out)["grades"], "gpu.wrong-results"), "FAIL");
  fs::remove_all(out);
}

TEST(GpuCommand, AHelperThatDiesKeepsWhatItReported) {
  fs::path out = OutDir("crash");
  auto r = clustermax::testing::RunShell("FAKE_GPU_CRASH=gemm.dense.fp16 " + Cli() +
                                         " bench gpu -q --no-telemetry --warmup 0 --helper " + FakeHelper() +
                                         " --out " + out.string() + " gemm launch");
  json res = Saved(out);
  const json& items = res["suites"]["gemm"]["items"];
  EXPECT_EQ((*Find(items, "gemm.dense.bf16.8192x8192x8192"))["gpus"][0]["status"], "ok");
  const json& lost = (*Find(items, "gemm.dense.fp16.8192x8192x8192"))["gpus"][0];
  EXPECT_EQ(lost["status"], "error");
  EXPECT_NE(lost["error"].get<std::string>().find("signal 11"), std::string::npos) << lost.dump();
  // The next suite runs in a fresh helper.
  EXPECT_EQ(res["suites"]["launch"]["items"][0]["gpus"][0]["status"], "ok");
  fs::remove_all(out);
}

TEST(GpuCommand, BadGpuIndexIsAUsageError) {
  auto r = clustermax::testing::RunShell(Cli() + " bench gpu --gpus 0,x --helper " + FakeHelper());
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("--gpus"), std::string::npos);
}

}  // namespace
}  // namespace clustermax::bench
