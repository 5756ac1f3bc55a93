// `bench gpu`: runs the CUDA helper (clustermax-gpu, next to the binary) once per GPU and suite,
// all GPUs at once, samples clocks, power and temperature through NVML meanwhile, and turns the
// helper's raw timings and samples into figures, checks and grades. Without the helper, a CUDA
// driver or a GPU the result is a SKIP with the reason (exit 0). The result is documented in
// docs/bench-schema.md ("bench gpu"). The suites are units (src/bench/gpu_suite.h, one file each
// under gpu_suites/); this API is split as run (gpu_bench_run.cc), telemetry (gpu_telemetry.cc),
// grading (gpu_grade.cc) and rendering (gpu_render.cc).
#pragma once
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/gpu_plan.h"
#include "bench/grade.h"

namespace clustermax::bench {

struct GpuBenchOptions {
  GpuPlanOptions plan;             // suites, precisions, models, full/quick (GPU fields filled in here)
  std::vector<int> gpus;           // CUDA device indices; empty: all
  std::string helper;              // path of clustermax-gpu; empty: next to this binary, then PATH
  std::optional<double> warmup_s;  // GPU warm-up before timing (default 10 s quick, 30 s full)
  double job_timeout_s = 1800;     // per helper run (one suite on one GPU)
  bool telemetry = true;           // NVML sampling during the run
  std::filesystem::path work_dir;  // where job files go (a temporary directory when empty)
  std::function<void(const std::string&)> progress;
  std::function<void(double)> fraction;  // how far the run is, 0..1, at each suite
};

// The helper to run: `explicit_path`, else $CLUSTERMAX_GPU_HELPER, else clustermax-gpu in the
// directory of this executable. Empty when none exists.
std::string FindGpuHelper(const std::string& explicit_path);

nlohmann::json RunGpuBench(const GpuBenchOptions& o);

// Turns one helper output line ({"type": "result", ...}) for `item` into the per-GPU record
// (statistics, TFLOPS or GB/s, the check); pure, so it is tested with recorded lines.
nlohmann::json AnalyzeGpuItem(const nlohmann::json& item, const nlohmann::json& line);

// The peaks record of data/gpu-peaks.json matching a device name ("NVIDIA H200"), or null.
const nlohmann::json& EmbeddedGpuPeaks();
nlohmann::json MatchGpuModel(const std::string& device_name, const nlohmann::json& peaks);

// Metric values and the per-model bars of a `bench gpu` result (bars depend on the GPU model, so
// they are built here in the thresholds shape Grade() takes).
std::vector<MetricValue> GpuMetrics(const nlohmann::json& result);
nlohmann::json GpuThresholds(const nlohmann::json& result, const nlohmann::json& peaks);

// GpuMetrics graded against GpuThresholds of the embedded peaks; a metric without a bar for this
// GPU model is a SKIP with the reason.
nlohmann::json GradeGpu(const nlohmann::json& result);

std::string RenderGpu(const nlohmann::json& result);
// `bench gpu --list`: suites, shape sets, precisions and models.
std::string RenderGpuList();

}  // namespace clustermax::bench
