// Helper suite "membw": device memory bandwidth (the membw host suite).
// Hooks: run (reads the item, measures on c.device, returns the result fields). Registered in
// suites/register.cc; the host side that plans these items is src/bench/gpu_suites/.
#include "gpubench/harness.h"

#include <algorithm>
#include <cmath>

namespace clustermax::gpubench {
namespace {

// Streaming kernels (copy, read, triad) and the copy engine (memcpy) over arrays far larger than
// L2. The launch shape is picked like a GEMM algorithm: each candidate briefly, the fastest kept.
json RunMembw(Context& c, const json& item) {
  std::string op = item.at("op");
  size_t bytes = item.at("bytes");
  int iters = item.value("iters", 20);
  size_t n = bytes / 4 / 1024 * 1024;
  DevPtr a = Alloc(n * 4), b = Alloc(n * 4), cc = Alloc(n * 4);
  auto* fa = static_cast<float*>(a.get());
  auto* fb = static_cast<float*>(b.get());
  auto* fc = static_cast<float*>(cc.get());
  CK(LaunchFill(fa, DType::kF32, n, c.seed ^ 1, 1.0f, c.stream));
  CK(LaunchFill(fb, DType::kF32, n, c.seed ^ 2, 1.0f, c.stream));
  CK(LaunchFill(fc, DType::kF32, n, c.seed ^ 3, 1.0f, c.stream));
  const float q = 0.75f;
  int blocks_cap = 256 * 1024;
  DevPtr partial = Alloc(static_cast<size_t>(blocks_cap) * sizeof(double));
  auto* pd = static_cast<double*>(partial.get());
  auto launch = [&](int blocks) {
    if (op == "copy") {
      CK(LaunchCopy(fa, fb, n, blocks, c.stream));
    } else if (op == "read") {
      CK(LaunchRead(fa, n, pd, blocks, c.stream));
    } else if (op == "triad") {
      CK(LaunchTriad(fa, fb, fc, q, n, blocks, c.stream));
    } else if (op == "memcpy") {
      CK(cudaMemcpyAsync(fb, fa, n * 4, cudaMemcpyDeviceToDevice, c.stream));
    } else {
      throw Failure("unknown membw op " + op, false);
    }
  };
  int best_blocks = 0;
  json tried = json::array();
  if (op != "memcpy") {
    double best = 1e300;
    for (int per_sm : {2, 4, 8, 16, 32}) {
      int blocks = std::min(blocks_cap, per_sm * c.prop.multiProcessorCount);
      double ms = Median(TimeLoop(c.stream, 1, 3, nullptr, 0, [&] { launch(blocks); }));
      tried.push_back({{"blocks", blocks}, {"ms", ms}});
      if (ms < best) {
        best = ms;
        best_blocks = blocks;
      }
    }
  }
  auto times = TimeLoop(c.stream, 2, iters, nullptr, 0, [&] { launch(best_blocks); });
  DevPtr counter = Alloc(sizeof(double) + sizeof(unsigned long long));
  CK(cudaMemsetAsync(counter.get(), 0, sizeof(double) + sizeof(unsigned long long), c.stream));
  uint64_t wrong = 0;
  if (op == "copy" || op == "memcpy") {
    auto* w = static_cast<unsigned long long*>(counter.get());
    CK(LaunchCheckCopy(fa, fb, n, w, c.stream));
    CK(cudaMemcpyAsync(&wrong, w, 8, cudaMemcpyDeviceToHost, c.stream));
  } else if (op == "triad") {
    auto* w = static_cast<unsigned long long*>(counter.get());
    CK(LaunchCheckTriad(fa, fb, fc, q, n, w, c.stream));
    CK(cudaMemcpyAsync(&wrong, w, 8, cudaMemcpyDeviceToHost, c.stream));
  } else {
    auto* sum = static_cast<double*>(counter.get());
    CK(LaunchReadCheck(fa, n, sum, c.stream));
    std::vector<double> parts(best_blocks);
    double check = 0;
    CK(cudaMemcpyAsync(parts.data(), pd, best_blocks * sizeof(double), cudaMemcpyDeviceToHost, c.stream));
    CK(cudaMemcpyAsync(&check, sum, sizeof check, cudaMemcpyDeviceToHost, c.stream));
    CK(cudaStreamSynchronize(c.stream));
    double total = 0;
    for (double v : parts) total += v;
    // Rounding of the float partial sums (256 values each) adds up to ~1e-2 over a GiB; a
    // bound of 1e-6 * n (~270) is far above that and far below what skipped blocks would miss.
    wrong = std::abs(total - check) > 1e-6 * static_cast<double>(n) ? 1 : 0;
  }
  CK(cudaStreamSynchronize(c.stream));
  return {{"times_ms", times}, {"elements", n}, {"wrong", wrong}, {"blocks", best_blocks}, {"blocks_tried", tried}};
}

}  // namespace

extern const HelperSuite kMembwSuite = {"membw", RunMembw};

}  // namespace clustermax::gpubench
