// Helper suite "grouped": MoE expert GEMMs (the grouped-gemm host suite).
// Hooks: run (reads the item, measures on c.device, returns the result fields). Registered in
// suites/register.cc; the host side that plans these items is src/bench/gpu_suites/.
#include "gpubench/harness.h"

#include <algorithm>
#include <map>
#include <random>

namespace clustermax::gpubench {
namespace {

// Grouped (MoE expert) GEMM: group g multiplies its m[g] rows of the contiguous activations
// A[sum m x k] by its own weights W_g (n x k stored, k contiguous) into its block of D. Each
// group's segment is padded to `row_align` rows (FP8 needs multiples of 16, as a contiguous MoE
// layout pads to its block size); the padded rows are computed but never counted or checked.
// Backends: cublas-grouped (cublasGemmGroupedBatchedEx, FP32/TF32/FP16/BF16), lt-graph (one
// cuBLASLt call per expert, captured in a CUDA graph), or auto: both briefly, the faster kept.
json RunGrouped(Context& c, const json& item) {
  std::string dtype = item.at("dtype");
  const Precision& p = LookupPrecision(dtype);
  int64_t n = item.at("n"), k = item.at("k");
  std::vector<int64_t> ms = item.at("m").get<std::vector<int64_t>>();
  std::string backend = item.value("backend", "auto");
  int64_t align = std::max<int64_t>(1, item.value("row_align", int64_t{1}));
  int warmup = item.value("warmup", 5), iters = item.value("iters", 30), samples = item.value("samples", 256);
  int64_t groups = static_cast<int64_t>(ms.size()), rows = 0;
  std::vector<int64_t> row_off, pm;  // padded rows per group
  for (int64_t m : ms) {
    row_off.push_back(rows);
    pm.push_back(m == 0 ? 0 : (m + align - 1) / align * align);
    rows += pm.back();
  }
  int64_t alloc_rows = std::max<int64_t>(rows, 1);
  DevPtr a = Alloc(ElementBytes(p.ab, alloc_rows * k));
  DevPtr w = Alloc(ElementBytes(p.ab, groups * n * k));
  DevPtr d = Alloc(ElementBytes(p.d, alloc_rows * n));
  CK(LaunchFill(a.get(), p.ab, alloc_rows * k, c.seed ^ 0xC, p.range, c.stream));
  CK(LaunchFill(w.get(), p.ab, groups * n * k, c.seed ^ 0xD, p.range, c.stream));
  auto elem = [&](const DevPtr& base, DType t, int64_t offset) {
    return static_cast<char*>(base.get()) + ElementBytes(t, offset);
  };
  std::vector<int64_t> live;  // groups with tokens: an expert without tokens does no work
  for (int64_t g = 0; g < groups; ++g) {
    if (ms[g] > 0) live.push_back(g);
  }
  bool scaled = p.a_mode >= 0;
  if (backend == "cublas-grouped" && scaled) {
    throw Failure("cublasGemmGroupedBatchedEx does not take " + p.name + "; use the lt-graph backend", false);
  }
  bool want_blas = !live.empty() && !scaled && (backend == "cublas-grouped" || backend == "auto");
  bool want_graph = !live.empty() && (backend == "lt-graph" || backend == "auto");
  if (!live.empty() && !want_blas && !want_graph) throw Failure("unknown grouped backend " + backend, false);

  // cublas-grouped: host arrays kept alive for the repeated calls, device pointer arrays.
  DevPtr ptrs;
  std::vector<cublasOperation_t> ta, tb;
  std::vector<int> gm, gn, gk, glda, gldb, gldc, gsize;
  std::vector<float> alpha, beta;
  std::function<void()> blas_op;
  if (want_blas) {
    bool uniform = std::all_of(live.begin(), live.end(), [&](int64_t g) { return pm[g] == pm[live[0]]; });
    size_t count = live.size();
    std::vector<void*> hp(3 * count);
    for (size_t i = 0; i < count; ++i) {
      int64_t g = live[i];
      hp[i] = elem(a, p.ab, row_off[g] * k);
      hp[count + i] = elem(w, p.ab, g * n * k);
      hp[2 * count + i] = elem(d, p.d, row_off[g] * n);
    }
    ptrs = Alloc(hp.size() * sizeof(void*));
    CK(cudaMemcpy(ptrs.get(), hp.data(), hp.size() * sizeof(void*), cudaMemcpyHostToDevice));
    size_t gc = uniform ? 1 : count;
    for (size_t i = 0; i < gc; ++i) {
      int64_t g = live[i];
      ta.push_back(CUBLAS_OP_T);
      tb.push_back(CUBLAS_OP_N);
      gm.push_back(static_cast<int>(pm[g]));
      gn.push_back(static_cast<int>(n));
      gk.push_back(static_cast<int>(k));
      glda.push_back(static_cast<int>(k));
      gldb.push_back(static_cast<int>(k));
      gldc.push_back(static_cast<int>(pm[g]));
      gsize.push_back(uniform ? static_cast<int>(count) : 1);
      alpha.push_back(1.0f);
      beta.push_back(0.0f);
    }
    auto** pa = static_cast<void**>(ptrs.get());
    CK(cublasSetStream(c.blas, c.stream));
    CK(cublasSetWorkspace(c.blas, c.workspace.get(), c.ws_bytes));
    blas_op = [&, pa, count, gc] {
      CK(cublasGemmGroupedBatchedEx(c.blas, ta.data(), tb.data(), gm.data(), gn.data(), gk.data(), alpha.data(), pa,
                                    p.ab_cuda, glda.data(), pa + count, p.ab_cuda, gldb.data(), beta.data(),
                                    pa + 2 * count, p.d_cuda, gldc.data(), static_cast<int>(gc), gsize.data(),
                                    p.compute));
    };
  }
  // lt-graph: one cuBLASLt plan per distinct row count, every expert's call captured once.
  std::vector<std::unique_ptr<LtGemm>> gemms;
  std::map<int64_t, LtGemm*> by_m;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  struct GraphFree {
    cudaGraph_t* g;
    cudaGraphExec_t* e;
    ~GraphFree() {
      if (*e) cudaGraphExecDestroy(*e);
      if (*g) cudaGraphDestroy(*g);
    }
  } graph_free{&graph, &exec};
  std::function<void()> graph_op;
  if (want_graph) {
    for (int64_t g : live) {
      if (!by_m.count(pm[g])) {
        gemms.push_back(
            std::make_unique<LtGemm>(c.lt, p, pm[g], n, k, item.value("fast_accum", false), c.ws_bytes, 1, c.stream));
        by_m[pm[g]] = gemms.back().get();
      }
    }
    CK(cudaStreamSynchronize(c.stream));
    CK(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeThreadLocal));
    try {
      for (int64_t g : live) {
        by_m[pm[g]]->Run(0, elem(a, p.ab, row_off[g] * k), elem(w, p.ab, g * n * k), elem(d, p.d, row_off[g] * n),
                         c.workspace.get(), c.ws_bytes, c.stream);
      }
    } catch (...) {
      cudaGraph_t dropped = nullptr;
      cudaStreamEndCapture(c.stream, &dropped);
      if (dropped) cudaGraphDestroy(dropped);
      throw;
    }
    CK(cudaStreamEndCapture(c.stream, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    graph_op = [&] { CK(cudaGraphLaunch(exec, c.stream)); };
  }
  // Pick: each candidate briefly (1 warm-up, 5 timed), the faster median kept.
  std::function<void()> op = [] {};
  std::string chosen = live.empty() ? "none" : want_blas ? "cublas-grouped" : "lt-graph";
  json tried = json::object();
  if (want_blas) op = blas_op;
  if (want_graph) op = graph_op;
  if (want_blas && want_graph) {
    double tb_ms = Median(TimeLoop(c.stream, 1, 5, c.flush.get(), c.flush_bytes, blas_op));
    double tg_ms = Median(TimeLoop(c.stream, 1, 5, c.flush.get(), c.flush_bytes, graph_op));
    tried = {{"cublas-grouped", tb_ms}, {"lt-graph", tg_ms}};
    chosen = tb_ms < tg_ms ? "cublas-grouped" : "lt-graph";
    op = tb_ms < tg_ms ? blas_op : graph_op;
  } else if (want_graph) {
    chosen = "lt-graph";
  }
  CK(cudaMemsetAsync(d.get(), 0xFF, ElementBytes(p.d, alloc_rows * n), c.stream));  // poison
  auto times = TimeLoop(c.stream, warmup, iters, c.flush.get(), c.flush_bytes, op);
  std::mt19937_64 rng(c.seed ^ static_cast<uint64_t>(rows * 7 + n * 3 + k));
  std::vector<uint64_t> ao, bo, di;
  for (int s = 0; s < samples && !live.empty(); ++s) {
    int64_t g = live[rng() % live.size()];
    uint64_t i = rng() % ms[g], j = rng() % n;  // valid rows only
    ao.push_back((row_off[g] + i) * k);
    bo.push_back(g * n * k + j * k);
    di.push_back(row_off[g] * n + j * pm[g] + i);
  }
  return {{"times_ms", times},
          {"backend", chosen},
          {"backend_ms", tried},
          {"row_align", align},
          {"samples", SampleCheck(c, a.get(), p.ab, w.get(), p.ab, d.get(), p.d, k, ao, bo, di)}};
}

}  // namespace

extern const HelperSuite kGroupedSuite = {"grouped", RunGrouped};

}  // namespace clustermax::gpubench
