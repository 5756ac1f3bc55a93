// Helper suite "burnin": the GPU load of `clustermax burnin --gpu` (bench/burnin.h) on c.device. A
// BF16 cuBLASLt GEMM and a triad over device memory, repeated for the item's seconds; every
// repetition's output is checksummed on the device (LaunchWordHash) so that a GPU whose results
// differ from its peers' on identical inputs, or from its own earlier ones, shows. One
// {"type": "iteration"} line per iteration as it ends (so a run cut short keeps what it did), then
// the result line.
//
// Item: {"kind": "burnin", "n" (GEMM n x n x n, default 8192), "mem_mb" (the triad's three arrays
// together, default 3072), "seed", "seconds", "max_iterations" (0: no limit), "gemm_target_s" and
// "mem_target_s" (time of one iteration's repetitions, defaults 1 and 0.25: the repetition counts
// are set from the first timing and may differ between GPUs; the sums do not depend on them)}.
//
// Lines: {"type": "burnin-start", "kernel", "gemm_reps", "mem_reps", "algo_id"}; per iteration
// {"type": "iteration", "i", "t", "gemm_gflops", "gemm_sum", "mem_gbps", "mem_sum"}. gemm_sum is
// the checksum of the product when every repetition agreed, else "mixed:FIRST/OTHER" (a sum no
// sound GPU produces); mem_sum the same for the triad.
#include "gpubench/harness.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

namespace clustermax::gpubench {
namespace {

std::string Hex(unsigned long long v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", v);
  return buf;
}

// The iteration's checksum: the repetitions' when they all agree; else "mixed:" with the first
// and the first that differs, a sum no sound GPU gives (so peers and the GPU's own other
// iterations outvote it, whichever repetition went wrong).
std::string Agreed(const std::vector<unsigned long long>& h) {
  for (size_t r = 1; r < h.size(); ++r)
    if (h[r] != h[0]) return "mixed:" + Hex(h[0]) + "/" + Hex(h[r]);
  return Hex(h.empty() ? 0 : h[0]);
}

json RunBurnIn(Context& c, const json& item) {
  const Precision& p = LookupPrecision("bf16");
  const int64_t n = std::clamp<int64_t>(item.value("n", 8192), 256, 32768) / 64 * 64;
  const size_t mem_bytes = static_cast<size_t>(std::clamp<int64_t>(item.value("mem_mb", 3072), 3, 1 << 20)) << 20;
  const size_t words = mem_bytes / 3 / 4 / 1024 * 1024;  // floats per triad array, a multiple of 4
  const uint64_t seed = item.value("seed", uint64_t{1});
  const double seconds = item.value("seconds", 60.0);
  const long long max_iter = item.value("max_iterations", 0LL);
  const double gemm_target = std::clamp(item.value("gemm_target_s", 1.0), 0.001, 60.0);
  const double mem_target = std::clamp(item.value("mem_target_s", 0.25), 0.001, 60.0);

  DevPtr a = Alloc(ElementBytes(p.ab, n * n)), b = Alloc(ElementBytes(p.ab, n * n)),
         d = Alloc(ElementBytes(p.d, n * n));
  DevPtr ma = Alloc(words * 4), mb = Alloc(words * 4), mc = Alloc(words * 4);
  // Inputs from the seed alone: the same bits on every GPU.
  CK(LaunchFill(a.get(), p.ab, n * n, seed ^ 0xA11CEull, p.range, c.stream));
  CK(LaunchFill(b.get(), p.ab, n * n, seed ^ 0xB0Bull, p.range, c.stream));
  CK(LaunchFill(mb.get(), DType::kF32, words, seed ^ 0xC0FFEEull, 1.0f, c.stream));
  CK(LaunchFill(mc.get(), DType::kF32, words, seed ^ 0xD00Dull, 1.0f, c.stream));
  // The heuristic's first algorithm, never a timed pick: a pick by timing could differ between
  // GPUs and so would the bits. Its id is part of the kernel's identity.
  LtGemm g(c.lt, p, n, n, n, false, c.ws_bytes, 1, c.stream);
  const size_t d_words = ElementBytes(p.d, n * n) / 4;
  auto* fa = static_cast<float*>(ma.get());
  auto* fb = static_cast<const float*>(mb.get());
  auto* fc = static_cast<const float*>(mc.get());
  const int blocks = 8 * c.prop.multiProcessorCount;
  const float q = 3.0f;

  // Repetition counts from one timed run of each (after one untimed).
  auto once = [&](const std::function<void()>& op) {
    op();
    CK(cudaStreamSynchronize(c.stream));
    auto t0 = std::chrono::steady_clock::now();
    op();
    CK(cudaStreamSynchronize(c.stream));
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  auto gemm = [&] { g.Run(0, a.get(), b.get(), d.get(), c.workspace.get(), c.ws_bytes, c.stream); };
  auto triad = [&] { CK(LaunchTriad(fa, fb, fc, q, words, blocks, c.stream)); };
  const int gemm_reps = static_cast<int>(std::clamp(std::lround(gemm_target / std::max(once(gemm), 1e-6)), 1L, 4096L));
  const int mem_reps = static_cast<int>(std::clamp(std::lround(mem_target / std::max(once(triad), 1e-6)), 1L, 4096L));

  const int reps_max = std::max(gemm_reps, mem_reps);
  DevPtr hashes = Alloc(static_cast<size_t>(reps_max) * 8);
  auto* hd = static_cast<unsigned long long*>(hashes.get());
  std::vector<unsigned long long> hh(reps_max);
  Events ev(2 * static_cast<size_t>(reps_max));
  char kernel[512];
  std::snprintf(kernel, sizeof kernel, "gpu-bf16-v2 %s sm_%d%d %d SMs cuBLASLt %zu algo %s", c.prop.name, c.prop.major,
                c.prop.minor, c.prop.multiProcessorCount, cublasLtGetVersion(), g.AlgoConfig(0).c_str());
  if (c.emit)
    c.emit({{"type", "burnin-start"},
            {"kernel", kernel},
            {"gemm_reps", gemm_reps},
            {"mem_reps", mem_reps},
            {"algo_id", g.AlgoId(0)},
            {"n", n},
            {"mem_mb", mem_bytes >> 20}});

  // reps repetitions of op, each followed by the checksum of what it wrote; seconds of op alone.
  auto timed = [&](int reps, const std::function<void()>& op, const void* out, size_t out_words) {
    for (int r = 0; r < reps; ++r) {
      CK(cudaEventRecord(ev.ev[2 * r], c.stream));
      op();
      CK(cudaEventRecord(ev.ev[2 * r + 1], c.stream));
      CK(LaunchWordHash(static_cast<const uint32_t*>(out), out_words, hd + r, c.stream));
    }
    CK(cudaMemcpyAsync(hh.data(), hd, static_cast<size_t>(reps) * 8, cudaMemcpyDeviceToHost, c.stream));
    CK(cudaStreamSynchronize(c.stream));
    double ms = 0;
    for (int r = 0; r < reps; ++r) {
      float x = 0;
      CK(cudaEventElapsedTime(&x, ev.ev[2 * r], ev.ev[2 * r + 1]));
      ms += x;
    }
    return ms / 1e3;
  };
  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  const double bytes = 3.0 * static_cast<double>(words) * 4;
  auto t0 = std::chrono::steady_clock::now();
  auto since = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  long long i = 0;
  for (;; ++i) {
    double gs = timed(gemm_reps, gemm, d.get(), d_words);
    std::string gsum = Agreed({hh.begin(), hh.begin() + gemm_reps});
    double ms = timed(mem_reps, triad, fa, words);
    std::string msum = Agreed({hh.begin(), hh.begin() + mem_reps});
    json rec = {{"type", "iteration"},
                {"i", i},
                {"t", std::round(since() * 1000) / 1000},
                {"gemm_gflops", gs > 0 ? json(flops * gemm_reps / gs / 1e9) : json(nullptr)},
                {"gemm_sum", gsum},
                {"mem_gbps", ms > 0 ? json(bytes * mem_reps / ms / 1e9) : json(nullptr)},
                {"mem_sum", msum}};
    if (c.emit) c.emit(rec);
    if (max_iter > 0 && i + 1 >= max_iter) break;
    if (since() >= seconds) break;
  }
  return {{"iterations", i + 1}, {"seconds", since()}, {"kernel", kernel}};
}

}  // namespace

extern const HelperSuite kBurnInSuite = {"burnin", RunBurnIn};

}  // namespace clustermax::gpubench
