// A `bench gpu` suite as one unit: its descriptor (GpuSuite) holds everything the harness needs to
// plan, run, grade and render it, so a suite is one file under src/bench/gpu_suites/ plus one line
// in gpu_suites/register.cc (and, on the helper side, one file under src/gpubench/suites/ when it
// needs a new item kind). docs/adding-a-gpu-suite.md walks through it; the helper's line protocol
// is docs/gpu-helper-protocol.md.
//
//   gpu_bench_run.cc   the harness: helper jobs, the run policies, per-GPU records, RunGpuBench
//   gpu_telemetry.cc   NVML sampling while the suites run
//   gpu_grade.cc       metrics and bars of the whole result (each suite adds its own)
//   gpu_render.cc      the text of the whole result and --list (each suite renders its own block)
#pragma once
#include <filesystem>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/gpu_plan.h"
#include "bench/grade.h"

namespace clustermax::bench {

// What one helper run (one job on one GPU) printed.
struct GpuJobOutcome {
  std::vector<nlohmann::json> lines;  // parsed JSON lines, in order
  std::string failure;                // why the helper stopped early ("" when it printed "done")
};

// Runs the GPU helper (clustermax-gpu run) on one job: through `job_file` (written first) or, when
// that is empty, inline on the command line (a small job). Lines that are not JSON are dropped.
GpuJobOutcome RunHelperJob(const std::string& helper, const nlohmann::json& job, const std::filesystem::path& job_file,
                           double timeout_s);

// The harness as a suite's own run hook sees it.
class GpuSuiteRunner {
 public:
  virtual ~GpuSuiteRunner() = default;
  virtual const std::vector<int>& gpus() const = 0;  // CUDA device indices, in run order
  virtual const GpuPlanOptions& plan() const = 0;    // filled in for these GPUs
  // Runs the items without "na" on each GPU of `on` (one helper per GPU; all at once when
  // `concurrent`); the first run of the whole bench carries the warm-up. Nothing runnable: no helper.
  virtual std::vector<GpuJobOutcome> RunOn(const std::vector<int>& on, const nlohmann::json& items,
                                           const std::string& tag, bool concurrent) = 0;
  // One helper run of `job` as given ({"device", "items", "warmup_s"}), its file named `file_name`.
  virtual GpuJobOutcome RunJob(const nlohmann::json& job, const std::string& file_name) = 0;
};

// How the harness runs a suite's items when the suite has no run hook of its own.
enum class GpuRunPolicy {
  kEveryGpuAtOnce,           // one helper per GPU, every GPU at once
  kAloneThenEveryGpuAtOnce,  // one GPU after another, then every GPU at once as ".all-gpus" rows
  kFirstGpuSeesAll,          // one helper on the first GPU runs every item (src/dst: positions in the GPU list)
};

// Peak figures and floors of one GPU model as the bars of data/gpu-peaks.json are built from them.
class GpuBars {
 public:
  GpuBars(const nlohmann::json& model, const nlohmann::json& floors);
  // A bar at floors[floor] x peak; without a peak a bar that grades nothing (SKIP, "no_bar").
  void Add(const std::string& id, const std::string& title, const char* unit, const char* floor,
           std::optional<double> peak, const std::string& peak_what, bool higher = true);
  // A bar taken as it is from floors[floor] (pass, warn, source).
  void AddAbsolute(const std::string& id, const std::string& title, const char* unit, const char* floor, bool higher);
  void AddRaw(nlohmann::json bar) { metrics_.push_back(std::move(bar)); }
  // model[key] or model[table][key] when the model has it as a number.
  std::optional<double> Peak(const std::string& key) const;
  std::optional<double> Peak(const std::string& table, const std::string& key) const;
  const nlohmann::json& metrics() const { return metrics_; }

 private:
  nlohmann::json model_, floors_, metrics_ = nlohmann::json::array();
  std::string model_id_;
};

// What a suite's render hook gets besides its own block of the result.
struct GpuRenderContext {
  nlohmann::json model;  // the peaks record of the first GPU, or null
  bool multi = false;    // more than one GPU
};

struct GpuSuite {
  std::string key;          // CLI name and key under result["suites"] ("gemm")
  std::string description;  // one line for --list
  std::string shapes;       // the shape-set line of --list ("" when the suite has none to show)
  std::string helper_kind;  // the helper suite (src/gpubench/suites) its items go to, by "kind"
  // The items of the suite ({"id", "kind", ...}; "na": reason when this node cannot run one).
  nlohmann::json (*plan)(const GpuPlanOptions& o) = nullptr;
  GpuRunPolicy policy = GpuRunPolicy::kEveryGpuAtOnce;
  // Replaces the policy: runs `rows` (each with "gpus": []) and may add rows and fields to
  // `suite_out` (mamf: its second stage and the summary).
  void (*run)(GpuSuiteRunner& runner, const GpuSuite& self, nlohmann::json& rows, nlohmann::json& suite_out) = nullptr;
  // The headline figure of a row per GPU record: the across-GPU summary (slowest, best, spread).
  const char* headline = "gbps";
  const char* unit = "GB/s";
  bool higher = true;
  // The figure gpu.consistency compares across GPUs (nullptr: none); a tie goes to the lower order.
  const char* consistency_key = nullptr;
  int consistency_order = 0;
  // Grading: the suite's metric values (nothing when it did not run) and its bars.
  void (*metrics)(const nlohmann::json& result, std::vector<MetricValue>& out) = nullptr;
  void (*bars)(GpuBars& bars) = nullptr;
  // Its block of the text report (called only when the suite ran).
  void (*render)(std::string& out, const nlohmann::json& suite, const GpuRenderContext& ctx) = nullptr;
};

// Every suite, in run order (gpu_suites/register.cc).
const std::vector<GpuSuite>& GpuSuiteTable();
const GpuSuite* FindGpuSuite(const std::string& key);

// Fills each row's per-GPU records from the helpers' outcomes (outcomes[i] belongs to gpus[i])
// and the across-GPU summary of the suite's headline figure.
void CollectGpuRows(nlohmann::json& rows, const std::vector<int>& gpus, const std::vector<GpuJobOutcome>& outcomes,
                    const GpuSuite& suite);

// --- for suites' plan hooks (gpu_plan.cc) -----------------------------------------------------
// Precisions with scale factors (cuBLASLt's FP8 and block-scaled paths).
bool ScaledPrecision(const std::string& p);
// `wanted` (each checked against GpuPrecisions()), or `defaults` when empty.
std::vector<std::string> PickPrecisions(const std::vector<std::string>& wanted,
                                        const std::vector<std::string>& defaults);
// One dense GEMM item, "na" when the precision is not native or it does not fit in memory.
nlohmann::json GemmPlanItem(const std::string& id, const std::string& prec, int64_t m, int64_t n, int64_t k, int warmup,
                            int iters, int candidates, const GpuPlanOptions& o);
std::string ShapeName(int64_t m, int64_t n, int64_t k);

// --- for suites' metrics hooks (gpu_grade.cc) -------------------------------------------------
struct PerGpuBest {
  std::map<int, double> value;  // gpu -> best (or worst for lower-is-better) over the rows
  std::map<int, std::string> where;
  std::string na_reason;
};
// Over the rows of `suite` that `pick` selects: per GPU the best value of `key`.
PerGpuBest BestPerGpu(const nlohmann::json& result, const std::string& suite, const char* key,
                      const std::function<bool(const nlohmann::json&)>& pick, bool higher = true);
// The node's value: the slowest GPU's, with where it came from.
MetricValue NodeValue(const std::string& id, const PerGpuBest& b, bool higher, const std::string& what);
// The precisions ("dtype") of a suite's rows, in order.
std::vector<std::string> PrecisionsIn(const nlohmann::json& result, const std::string& suite);

// --- for suites' render hooks (gpu_render.cc) -------------------------------------------------
std::string GpuCell(const nlohmann::json& row);       // the slowest GPU's headline, "n/a" or "error"
std::string GpuRowStatus(const nlohmann::json& row);  // "ok", the first wrong or failed GPU, or n/a
std::string GpuSpread(const nlohmann::json& row);
std::string GpuPeakPct(const nlohmann::json& row, const nlohmann::json& model, const char* key);
// The common table: id, headline, % of peak (HBM for GB/s), spread, check.
void RenderGpuTable(std::string& out, const std::string& key, const nlohmann::json& suite, const std::string& title,
                    const char* unit, bool peak, const GpuRenderContext& ctx);

}  // namespace clustermax::bench
