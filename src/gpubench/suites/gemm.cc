// Helper suite "gemm": one cuBLASLt matmul per item (the gemm, mamf and gemv host suites).
// Hooks: run (reads the item, measures on c.device, returns the result fields). Registered in
// suites/register.cc; the host side that plans these items is src/bench/gpu_suites/.
#include "gpubench/harness.h"

#include <random>

namespace clustermax::gpubench {
namespace {

json RunGemm(Context& c, const json& item) {
  std::string dtype = item.at("dtype");
  const Precision& p = LookupPrecision(dtype);
  int64_t m = item.at("m"), n = item.at("n"), k = item.at("k");
  int warmup = item.value("warmup", 10), iters = item.value("iters", 50), samples = item.value("samples", 256);
  DevPtr a = Alloc(ElementBytes(p.ab, m * k)), b = Alloc(ElementBytes(p.ab, n * k)),
         d = Alloc(ElementBytes(p.d, m * n));
  CK(LaunchFill(a.get(), p.ab, m * k, c.seed ^ 0xA, p.range, c.stream));
  CK(LaunchFill(b.get(), p.ab, n * k, c.seed ^ 0xB, p.range, c.stream));
  LtGemm g(c.lt, p, m, n, k, item.value("fast_accum", false), c.ws_bytes, item.value("candidates", 4), c.stream);
  auto [algo, tried] = PickAlgo(c, g, a.get(), b.get(), d.get(), item.value("candidates", 4));
  CK(cudaMemsetAsync(d.get(), 0xFF, ElementBytes(p.d, m * n), c.stream));  // poison: NaN in every float type
  auto times = TimeLoop(c.stream, warmup, iters, c.flush.get(), c.flush_bytes,
                        [&] { g.Run(algo, a.get(), b.get(), d.get(), c.workspace.get(), c.ws_bytes, c.stream); });
  std::mt19937_64 rng(c.seed ^ static_cast<uint64_t>(m * 131 + n * 17 + k));
  std::vector<uint64_t> ao, bo, di;
  int64_t count = std::min<int64_t>(samples, m * n);
  for (int64_t s = 0; s < count; ++s) {
    uint64_t i = rng() % m, j = rng() % n;
    ao.push_back(i * k);
    bo.push_back(j * k);
    di.push_back(j * m + i);
  }
  json out = {{"times_ms", times},
              {"samples", SampleCheck(c, a.get(), p.ab, b.get(), p.ab, d.get(), p.d, k, ao, bo, di)},
              {"algo", {{"candidates", g.algo_count()}, {"chosen", algo}, {"candidate_ms", tried}}}};
  return out;
}

}  // namespace

extern const HelperSuite kGemmSuite = {"gemm", RunGemm};

}  // namespace clustermax::gpubench
