// `bench gpu`, the part that needs no GPU: what to run (suites, precisions, shape tables, MoE
// routing), how to count it (FLOPs and bytes), how to judge a result (tolerances, the sampled
// check, statistics) and which precisions a GPU runs natively. The CUDA helper (src/gpubench)
// executes the items the suites plan (src/bench/gpu_suites/, one file per suite, on the helpers of
// this file); src/bench/gpu_bench_run.cc runs the helper and assembles the result. Shapes and
// methods: performance.md sections 3 and 4.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::bench {

// The suites, in run order (the keys of GpuSuiteTable(), src/bench/gpu_suite.h).
const std::vector<std::string>& GpuSuites();
// GEMM precisions, in table order (fp64 ... nvfp4).
const std::vector<std::string>& GpuPrecisions();

struct MoeModel {
  std::string id, name;
  int64_t hidden, moe_intermediate;  // the routed experts' H and I
  int experts, top_k;
};
// Kimi K2.5, Kimi K3 (routed, latent 3584), DeepSeek V3, DeepSeek V4 Pro (performance.md 3.3.1).
const std::vector<MoeModel>& MoeModels();

// Whether `precision` runs natively on a GPU of this compute capability ("9.0"); the reason when
// not (never an emulated number presented as native).
std::optional<std::string> PrecisionUnavailable(const std::string& precision, const std::string& compute_capability);

struct GpuPlanOptions {
  std::vector<std::string> suites;      // empty: all
  std::vector<std::string> precisions;  // gemm and mamf (empty: each suite's default)
  std::vector<std::string> models;      // grouped-gemm (empty: all)
  bool full = false;                    // full sweeps instead of quick ones
  bool fp8_fast_accum = false;
  std::string grouped_backend = "auto";  // unscaled types: auto, cublas-grouped or lt-graph
  std::string compute_capability = "9.0";
  uint64_t memory_bytes = uint64_t{80} << 30;  // smallest GPU of the node: sizes fit in it
  int gpu_count = 1;
};

// Throws std::invalid_argument naming the first unknown suite, precision or model (with the known
// ones), so a typo stops the command before any GPU work, directory or thread is started.
void ValidateGpuPlanOptions(const GpuPlanOptions& o);

// Items of one suite (its descriptor's plan hook), as the helper takes them ({"id", "kind", ...}); an item the GPU
// cannot run carries "na": reason and is not sent. Suites: gemm, mamf (stage 1), grouped-gemm, gemv, membw, pcie, p2p
// (all ordered pairs, uni and bidirectional), launch.
nlohmann::json PlanSuite(const std::string& suite, const GpuPlanOptions& o);
// MAMF stage 2 (gpu_suites/mamf.cc): the best `keep` shapes of stage 1 and the neighbours of the best one (+-256 in
// every dimension) measured again with the full protocol (50 warm-ups, 100 timed); their ids end
// in ".stage2", so they stand beside the stage-1 rows of the same shape.
nlohmann::json PlanMamfRefine(const nlohmann::json& stage1_rows, const std::string& precision, const GpuPlanOptions& o,
                              int keep = 6);

// Tokens per expert for `groups` experts averaging `tokens` each: uniform, or skewed (Zipf with
// exponent 1 over the experts, same total, largest-remainder rounding; some experts get none).
std::vector<int64_t> RouteTokens(int groups, int64_t tokens, bool skewed);

// FLOPs and bytes moved: dense 2*m*n*k and A+B+D; grouped counts valid rows only and the weights
// of experts that received tokens.
double GemmFlops(int64_t m, int64_t n, int64_t k);
double GemmBytes(const std::string& precision, int64_t m, int64_t n, int64_t k);
double GroupedFlops(const std::vector<int64_t>& m, int64_t n, int64_t k);
double GroupedBytes(const std::string& precision, const std::vector<int64_t>& m, int64_t n, int64_t k);
// Bytes of one element of the inputs and of the output of a precision's GEMM.
double InputElementBytes(const std::string& precision);
double OutputElementBytes(const std::string& precision);

struct Tolerance {
  double elem;  // |got - ref| <= elem * sum|a*b| per sample
  double diff;  // 1 - 2*sum(x*y)/sum(x^2 + y^2) over the samples (DeepGEMM's calc_diff)
};
Tolerance ToleranceFor(const std::string& precision);

// Judges the helper's samples {"got", "ref", "absref"}: {"checked", "wrong", "max_rel_err",
// "diff", "diff_limit", "ok"}. A NaN (the poisoned output left unwritten) is wrong.
nlohmann::json JudgeSamples(const nlohmann::json& samples, const std::string& precision);

// Median, mean, min, max, p99 and coefficient of variation of a sample list (times in ms).
nlohmann::json Stats(const std::vector<double>& v);

}  // namespace clustermax::bench
