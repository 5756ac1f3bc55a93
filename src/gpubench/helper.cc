// clustermax-gpu: the CUDA half of `clustermax bench gpu`. The core binary never links CUDA; it
// plans the work (src/bench/gpu_plan.*), runs this helper once per GPU with a job, and turns the
// raw timings and samples into figures and grades. This program measures and reports, nothing
// more: no statistics beyond the raw samples, no thresholds.
//
//   clustermax-gpu info                      devices and library versions (JSON, one line)
//   clustermax-gpu run --job FILE            one JSON line per item on stdout, progress on stderr
//   clustermax-gpu run --job-json '{...}'    the same with the job inline
//
// Exit codes: 0 done (an item's failure is in its line), 2 usage, 3 no usable CUDA device.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/kernels.h"

namespace clustermax::gpubench {
namespace {
using nlohmann::json;

// A failed CUDA or cuBLAS call; `sticky` when the context is unusable afterwards.
struct Failure : std::runtime_error {
  Failure(const std::string& what, bool sticky_) : std::runtime_error(what), sticky(sticky_) {}
  bool sticky;
};

bool IsSticky(cudaError_t e) {
  switch (e) {
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidPc:
    case cudaErrorECCUncorrectable:
    case cudaErrorAssert:
    case cudaErrorLaunchTimeout:
      return true;
    default:
      return false;
  }
}

void Check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    throw Failure(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")", IsSticky(e));
  }
}
void Check(cublasStatus_t e, const char* what) {
  if (e != CUBLAS_STATUS_SUCCESS) throw Failure(std::string(what) + ": " + cublasGetStatusName(e), false);
}
#define CK(x) Check((x), #x)

struct DevFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DevPtr = std::unique_ptr<void, DevFree>;
DevPtr Alloc(size_t bytes) {
  void* p = nullptr;
  CK(cudaMalloc(&p, std::max<size_t>(bytes, 256)));
  return DevPtr(p);
}
struct HostFree {
  void operator()(void* p) const { cudaFreeHost(p); }
};
using HostPtr = std::unique_ptr<void, HostFree>;

struct Events {
  std::vector<cudaEvent_t> ev;
  explicit Events(size_t n) : ev(n) {
    for (auto& e : ev) CK(cudaEventCreate(&e));
  }
  ~Events() {
    for (auto& e : ev) cudaEventDestroy(e);
  }
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Runs op `warmup` times untimed, then `iters` times each between two events; before every call
// the flush buffer is zeroed (defeats L2, as the MAMF finder does). Returns milliseconds per call.
std::vector<double> TimeLoop(cudaStream_t s, int warmup, int iters, void* flush, size_t flush_bytes,
                             const std::function<void()>& op) {
  for (int i = 0; i < warmup; ++i) {
    if (flush) CK(cudaMemsetAsync(flush, 0, flush_bytes, s));
    op();
  }
  Events ev(2 * static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    if (flush) CK(cudaMemsetAsync(flush, 0, flush_bytes, s));
    CK(cudaEventRecord(ev.ev[2 * i], s));
    op();
    CK(cudaEventRecord(ev.ev[2 * i + 1], s));
  }
  CK(cudaStreamSynchronize(s));
  std::vector<double> out;
  for (int i = 0; i < iters; ++i) {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev.ev[2 * i], ev.ev[2 * i + 1]));
    out.push_back(ms);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Precisions: element types, compute type and scaling mode per name (the plan's names).

struct Precision {
  std::string name;
  DType ab;
  cudaDataType_t ab_cuda;
  DType d;
  cudaDataType_t d_cuda;
  cublasComputeType_t compute;
  cudaDataType_t scale_type;
  int a_mode = -1, b_mode = -1;  // cublasLtMatmulMatrixScale_t, -1: no scale pointers
  float range = 1.0f;            // inputs uniform in [-range, range)
};

const Precision& LookupPrecision(const std::string& name) {
  static const std::vector<Precision> table = {
      {"fp64", DType::kF64, CUDA_R_64F, DType::kF64, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F},
      {"fp32", DType::kF32, CUDA_R_32F, DType::kF32, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F},
      {"tf32", DType::kF32, CUDA_R_32F, DType::kF32, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F},
      {"bf16", DType::kBF16, CUDA_R_16BF, DType::kBF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F},
      {"fp16", DType::kF16, CUDA_R_16F, DType::kF16, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F},
      {"fp8", DType::kE4M3, CUDA_R_8F_E4M3, DType::kBF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F,
       CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F},
      {"fp8-1x128", DType::kE4M3, CUDA_R_8F_E4M3, DType::kBF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F,
       CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F},
      {"fp8-128x128", DType::kE4M3, CUDA_R_8F_E4M3, DType::kBF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F,
       CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F},
      {"mxfp8", DType::kE4M3, CUDA_R_8F_E4M3, DType::kBF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F,
       CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0, CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0},
      {"nvfp4", DType::kE2M1, CUDA_R_4F_E2M1, DType::kBF16, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F,
       CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3, CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3},
  };
  for (const auto& p : table) {
    if (p.name == name) return p;
  }
  throw Failure("unknown precision " + name, false);
}

// Unit scale factors for a scaled mode: every block scale is 1 (so the reference is the plain
// product and the factor layout cannot change the result); the buffer is sized for the largest
// layout any mode uses (rows padded to 128, one factor per 16 elements plus padding, 4 bytes).
DevPtr UnitScales(int mode, int64_t rows, int64_t k, cudaStream_t s) {
  size_t count = static_cast<size_t>((rows + 127) / 128 * 128) * static_cast<size_t>(k / 16 + 8);
  DevPtr p = Alloc(count * 4);
  if (mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC32_UE8M0) {
    CK(cudaMemsetAsync(p.get(), 127, count * 4, s));  // 2^(127-127) = 1
  } else if (mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3) {
    CK(cudaMemsetAsync(p.get(), 0x38, count * 4, s));  // E4M3 1.0
  } else {
    CK(LaunchFillFloat(static_cast<float*>(p.get()), count, 1.0f, s));
  }
  return p;
}

// One cuBLASLt matmul D[m x n] = A[m x k] * B[k x n] in the "TN" layout every precision
// accepts: A stored row-major (k contiguous), B stored with k contiguous per column, D
// column-major. Element (i, kk) of A sits at i*k + kk, (kk, j) of B at j*k + kk, D(i, j) at j*m + i.
class LtGemm {
 public:
  LtGemm(cublasLtHandle_t lt, const Precision& p, int64_t m, int64_t n, int64_t k, bool fast_accum, size_t ws_bytes,
         int max_algos, cudaStream_t s)
      : lt_(lt), p_(p) {
    CK(cublasLtMatmulDescCreate(&desc_, p.compute, p.scale_type));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (p.a_mode >= 0) {
      a_scale_ = UnitScales(p.a_mode, m, k, s);
      b_scale_ = UnitScales(p.b_mode, n, k, s);
      void* ap = a_scale_.get();
      void* bp = b_scale_.get();
      CK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &ap, sizeof ap));
      CK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &bp, sizeof bp));
      if (p.a_mode != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F) {
        int32_t am = p.a_mode, bm = p.b_mode;
        CK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &am, sizeof am));
        CK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &bm, sizeof bm));
      }
      int8_t fa = fast_accum ? 1 : 0;
      CK(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fa, sizeof fa));
    }
    CK(cublasLtMatrixLayoutCreate(&la_, p.ab_cuda, k, m, k));
    CK(cublasLtMatrixLayoutCreate(&lb_, p.ab_cuda, k, n, k));
    CK(cublasLtMatrixLayoutCreate(&ld_, p.d_cuda, m, n, m));
    cublasLtMatmulPreference_t pref;
    CK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = ws_bytes;
    CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    algos_.resize(std::max(1, max_algos));
    int returned = 0;
    cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt_, desc_, la_, lb_, ld_, ld_, pref,
                                                       static_cast<int>(algos_.size()), algos_.data(), &returned);
    cublasLtMatmulPreferenceDestroy(pref);
    if (st != CUBLAS_STATUS_SUCCESS || returned == 0) {
      throw Failure("cuBLASLt has no algorithm for " + p.name + " " + std::to_string(m) + "x" + std::to_string(n) + "x" +
                        std::to_string(k) + " on this GPU (" + cublasGetStatusName(st) + ")",
                    false);
    }
    algos_.resize(returned);
  }
  ~LtGemm() {
    if (la_) cublasLtMatrixLayoutDestroy(la_);
    if (lb_) cublasLtMatrixLayoutDestroy(lb_);
    if (ld_) cublasLtMatrixLayoutDestroy(ld_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
  }
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  size_t algo_count() const { return algos_.size(); }

  void Run(size_t algo, const void* a, const void* b, void* d, void* ws, size_t ws_bytes, cudaStream_t s) const {
    double alpha_d = 1.0, beta_d = 0.0;
    float alpha_f = 1.0f, beta_f = 0.0f;
    bool dbl = p_.scale_type == CUDA_R_64F;
    const void* alpha = dbl ? static_cast<const void*>(&alpha_d) : &alpha_f;
    const void* beta = dbl ? static_cast<const void*>(&beta_d) : &beta_f;
    CK(cublasLtMatmul(lt_, desc_, alpha, a, la_, b, lb_, beta, d, ld_, d, ld_, &algos_[algo].algo, ws, ws_bytes, s));
  }

 private:
  cublasLtHandle_t lt_;
  const Precision& p_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t la_ = nullptr, lb_ = nullptr, ld_ = nullptr;
  DevPtr a_scale_, b_scale_;
  std::vector<cublasLtMatmulHeuristicResult_t> algos_;
};

// ---------------------------------------------------------------------------------------------

struct Context {
  int device = 0;
  cudaDeviceProp prop{};
  cudaStream_t stream = nullptr;
  cublasLtHandle_t lt = nullptr;
  cublasHandle_t blas = nullptr;
  DevPtr workspace;
  size_t ws_bytes = 64u << 20;
  DevPtr flush;
  size_t flush_bytes = 256u << 20;
  uint64_t seed = 0x636c75737465726dull;
};

// The sampled check of a matmul: host-chosen (A row, B column, D index) triples, dot products on
// the device in double, (got, ref, absref) back to the caller for the tolerance rule.
json SampleCheck(Context& c, const void* a, DType at, const void* b, DType bt, const void* d, DType dt, int64_t k,
                 const std::vector<uint64_t>& a_off, const std::vector<uint64_t>& b_off,
                 const std::vector<uint64_t>& d_idx) {
  int n = static_cast<int>(a_off.size());
  if (n == 0) return json{{"got", json::array()}, {"ref", json::array()}, {"absref", json::array()}};
  DevPtr offs = Alloc(3 * n * sizeof(uint64_t));
  DevPtr outs = Alloc(3 * n * sizeof(double));
  auto* o = static_cast<uint64_t*>(offs.get());
  CK(cudaMemcpyAsync(o, a_off.data(), n * 8, cudaMemcpyHostToDevice, c.stream));
  CK(cudaMemcpyAsync(o + n, b_off.data(), n * 8, cudaMemcpyHostToDevice, c.stream));
  CK(cudaMemcpyAsync(o + 2 * n, d_idx.data(), n * 8, cudaMemcpyHostToDevice, c.stream));
  auto* r = static_cast<double*>(outs.get());
  SampleArgs args{a, at, b, bt, d, dt, o, o + n, o + 2 * n, n, k, r, r + n, r + 2 * n};
  CK(LaunchSampleDots(args, c.stream));
  std::vector<double> host(3 * n);
  CK(cudaMemcpyAsync(host.data(), r, 3 * n * sizeof(double), cudaMemcpyDeviceToHost, c.stream));
  CK(cudaStreamSynchronize(c.stream));
  return json{{"got", std::vector<double>(host.begin(), host.begin() + n)},
              {"ref", std::vector<double>(host.begin() + n, host.begin() + 2 * n)},
              {"absref", std::vector<double>(host.begin() + 2 * n, host.end())}};
}

// Times each heuristic candidate briefly and returns the fastest (index, median ms per candidate).
std::pair<size_t, json> PickAlgo(Context& c, const LtGemm& g, const void* a, const void* b, void* d, int candidates) {
  size_t n = std::min<size_t>(g.algo_count(), std::max(1, candidates));
  json tried = json::array();
  size_t best = 0;
  double best_ms = 1e300;
  if (n == 1) return {0, tried};
  for (size_t i = 0; i < n; ++i) {
    try {
      auto t = TimeLoop(c.stream, 1, 5, c.flush.get(), c.flush_bytes,
                        [&] { g.Run(i, a, b, d, c.workspace.get(), c.ws_bytes, c.stream); });
      double ms = Median(t);
      tried.push_back(ms);
      if (ms < best_ms) {
        best_ms = ms;
        best = i;
      }
    } catch (const Failure& f) {
      if (f.sticky) throw;
      tried.push_back(nullptr);
    }
  }
  return {best, tried};
}

json RunGemm(Context& c, const json& item) {
  std::string dtype = item.at("dtype");
  const Precision& p = LookupPrecision(dtype);
  int64_t m = item.at("m"), n = item.at("n"), k = item.at("k");
  int warmup = item.value("warmup", 10), iters = item.value("iters", 50), samples = item.value("samples", 256);
  DevPtr a = Alloc(ElementBytes(p.ab, m * k)), b = Alloc(ElementBytes(p.ab, n * k)), d = Alloc(ElementBytes(p.d, m * n));
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
  json out = {{"times_ms", times}, {"samples", SampleCheck(c, a.get(), p.ab, b.get(), p.ab, d.get(), p.d, k, ao, bo, di)},
              {"algo", {{"candidates", g.algo_count()}, {"chosen", algo}, {"candidate_ms", tried}}}};
  return out;
}

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
                                    pa + 2 * count, p.d_cuda, gldc.data(), static_cast<int>(gc), gsize.data(), p.compute));
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
        gemms.push_back(std::make_unique<LtGemm>(c.lt, p, pm[g], n, k, item.value("fast_accum", false), c.ws_bytes, 1, c.stream));
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
  return {{"times_ms", times}, {"backend", chosen}, {"backend_ms", tried}, {"row_align", align},
          {"samples", SampleCheck(c, a.get(), p.ab, w.get(), p.ab, d.get(), p.d, k, ao, bo, di)}};
}

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

// Pins this thread (and so the pinned host memory it touches first) to the CPUs next to the GPU.
std::string BindNearGpu(int device) {
  char bus[32] = {0};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess) return "";
  std::string id(bus);
  for (auto& ch : id) ch = static_cast<char>(std::tolower(ch));
  std::ifstream f("/sys/bus/pci/devices/" + id + "/local_cpulist");
  std::string list;
  if (!f || !std::getline(f, list) || list.empty()) return "";
  cpu_set_t set;
  CPU_ZERO(&set);
  size_t pos = 0;
  while (pos < list.size()) {
    size_t comma = list.find(',', pos);
    std::string part = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t dash = part.find('-');
    try {
      int lo = std::stoi(part.substr(0, dash)), hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
      for (int cpu = lo; cpu <= hi && cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &set);
    } catch (const std::exception&) {
      return "";
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (sched_setaffinity(0, sizeof set, &set) != 0) return "";
  return list;
}

// Host<->device copies with pinned memory near the GPU: h2d, d2h, or bidir (both at once on two
// streams, bytes of both directions counted). Verified by a round trip compared byte for byte.
json RunPcie(Context& c, const json& item) {
  std::string dir = item.at("dir");
  size_t bytes = item.at("bytes");
  int iters = item.value("iters", 10);
  std::string cpus = BindNearGpu(c.device);
  void* h1 = nullptr;
  void* h2 = nullptr;
  CK(cudaHostAlloc(&h1, bytes, cudaHostAllocDefault));
  HostPtr hp1(h1);
  CK(cudaHostAlloc(&h2, bytes, cudaHostAllocDefault));
  HostPtr hp2(h2);
  std::mt19937_64 rng(c.seed);
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    uint64_t v = rng();
    std::memcpy(static_cast<char*>(h1) + i, &v, 8);
  }
  std::memset(h2, 0, bytes);
  DevPtr d1 = Alloc(bytes), d2 = Alloc(bytes);
  cudaStream_t other;
  CK(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  std::vector<double> times;
  try {
    std::function<void()> op;
    if (dir == "h2d") {
      op = [&] { CK(cudaMemcpyAsync(d1.get(), h1, bytes, cudaMemcpyHostToDevice, c.stream)); };
    } else if (dir == "d2h") {
      op = [&] { CK(cudaMemcpyAsync(h2, d1.get(), bytes, cudaMemcpyDeviceToHost, c.stream)); };
    } else if (dir == "bidir") {
      op = [&] {
        CK(cudaEventRecord(fork, c.stream));
        CK(cudaStreamWaitEvent(other, fork, 0));
        CK(cudaMemcpyAsync(d2.get(), h1, bytes, cudaMemcpyHostToDevice, c.stream));
        CK(cudaMemcpyAsync(h2, d1.get(), bytes, cudaMemcpyDeviceToHost, other));
        CK(cudaEventRecord(join, other));
        CK(cudaStreamWaitEvent(c.stream, join, 0));
      };
    } else {
      throw Failure("unknown pcie direction " + dir, false);
    }
    CK(cudaMemcpyAsync(d1.get(), h1, bytes, cudaMemcpyHostToDevice, c.stream));
    times = TimeLoop(c.stream, 2, iters, nullptr, 0, op);
    // Round trip: h1 -> d1 -> h2 must give h1 back.
    CK(cudaMemcpyAsync(d1.get(), h1, bytes, cudaMemcpyHostToDevice, c.stream));
    CK(cudaMemcpyAsync(h2, d1.get(), bytes, cudaMemcpyDeviceToHost, c.stream));
    CK(cudaStreamSynchronize(c.stream));
  } catch (...) {
    cudaStreamDestroy(other);
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    throw;
  }
  cudaStreamDestroy(other);
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
  uint64_t wrong = std::memcmp(h1, h2, bytes) == 0 ? 0 : 1;
  return {{"times_ms", times}, {"wrong", wrong}, {"cpus", cpus}};
}

// Peer copies between two GPUs of this process (cudaMemcpyPeerAsync on the source's stream);
// bidir runs the reverse copy at the same time on the destination. Verified on the destination
// by comparing with the source through peer access.
json RunP2p(const json& item, uint64_t seed) {
  int src = item.at("src"), dst = item.at("dst");
  size_t bytes = item.at("bytes");
  bool bidir = item.value("bidir", false);
  int iters = item.value("iters", 10);
  int can = 0, can_back = 0;
  CK(cudaDeviceCanAccessPeer(&can, dst, src));
  CK(cudaDeviceCanAccessPeer(&can_back, src, dst));
  auto enable = [](int from, int to) {
    CK(cudaSetDevice(from));
    cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
    if (e == cudaErrorPeerAccessAlreadyEnabled) {
      cudaGetLastError();
    } else {
      Check(e, "cudaDeviceEnablePeerAccess");
    }
  };
  if (can) enable(dst, src);
  if (can_back) enable(src, dst);
  CK(cudaSetDevice(src));
  DevPtr s_buf = Alloc(bytes), s_back = Alloc(bytes);
  cudaStream_t ss, ds;
  CK(cudaStreamCreateWithFlags(&ss, cudaStreamNonBlocking));
  CK(LaunchFill(s_buf.get(), DType::kF32, bytes / 4, seed, 1.0f, ss));
  CK(cudaSetDevice(dst));
  DevPtr d_buf = Alloc(bytes), d_src = Alloc(bytes);
  CK(cudaStreamCreateWithFlags(&ds, cudaStreamNonBlocking));
  CK(LaunchFill(d_src.get(), DType::kF32, bytes / 4, seed ^ 5, 1.0f, ds));
  CK(cudaStreamSynchronize(ds));
  CK(cudaSetDevice(src));
  cudaEvent_t fork, join;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  auto op = [&] {
    if (bidir) {
      CK(cudaEventRecord(fork, ss));
      CK(cudaStreamWaitEvent(ds, fork, 0));
    }
    CK(cudaMemcpyPeerAsync(d_buf.get(), dst, s_buf.get(), src, bytes, ss));
    if (bidir) {
      CK(cudaMemcpyPeerAsync(s_back.get(), src, d_src.get(), dst, bytes, ds));
      CK(cudaEventRecord(join, ds));
      CK(cudaStreamWaitEvent(ss, join, 0));
    }
  };
  auto times = TimeLoop(ss, 2, iters, nullptr, 0, op);
  uint64_t wrong = 0;
  bool verified = false;
  if (can) {
    CK(cudaSetDevice(dst));
    DevPtr counter = Alloc(8);
    CK(cudaMemsetAsync(counter.get(), 0, 8, ds));
    CK(LaunchCheckCopy(static_cast<float*>(s_buf.get()), static_cast<float*>(d_buf.get()), bytes / 4,
                       static_cast<unsigned long long*>(counter.get()), ds));
    CK(cudaMemcpyAsync(&wrong, counter.get(), 8, cudaMemcpyDeviceToHost, ds));
    CK(cudaStreamSynchronize(ds));
    verified = true;
  }
  cudaEventDestroy(fork);
  cudaEventDestroy(join);
  cudaStreamDestroy(ds);
  CK(cudaSetDevice(src));
  cudaStreamDestroy(ss);
  return {{"times_ms", times}, {"wrong", wrong}, {"verified", verified}, {"peer_access", can != 0}};
}

// Empty-kernel launches: by events (back to back, time per launch) and by wall clock (one launch
// and a stream synchronise each), SuperBench's two views.
json RunLaunch(Context& c, const json& item) {
  int count = item.value("count", 20000), wall = item.value("wall", 2000);
  for (int i = 0; i < 100; ++i) CK(LaunchEmpty(c.stream));
  CK(cudaStreamSynchronize(c.stream));
  std::vector<double> event_us;
  Events ev(2);
  for (int rep = 0; rep < 5; ++rep) {
    CK(cudaEventRecord(ev.ev[0], c.stream));
    for (int i = 0; i < count; ++i) CK(LaunchEmpty(c.stream));
    CK(cudaEventRecord(ev.ev[1], c.stream));
    CK(cudaEventSynchronize(ev.ev[1]));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev.ev[0], ev.ev[1]));
    event_us.push_back(ms * 1000.0 / count);
  }
  std::vector<double> wall_us;
  for (int i = 0; i < wall; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    CK(LaunchEmpty(c.stream));
    CK(cudaStreamSynchronize(c.stream));
    wall_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return {{"event_us", event_us}, {"wall_us", wall_us}};
}

// Keeps the GPU busy with a BF16 8192^3 matmul for `seconds` so clocks and temperature settle
// before anything is timed (a cold GPU reports inflated numbers).
double WarmUp(Context& c, double seconds) {
  if (seconds <= 0) return 0;
  static const std::string kWarmType = "bf16";
  const Precision& p = LookupPrecision(kWarmType);
  int64_t s = 8192;
  DevPtr a = Alloc(ElementBytes(p.ab, s * s)), b = Alloc(ElementBytes(p.ab, s * s)), d = Alloc(ElementBytes(p.d, s * s));
  CK(LaunchFill(a.get(), p.ab, s * s, c.seed ^ 0xE, 1.0f, c.stream));
  CK(LaunchFill(b.get(), p.ab, s * s, c.seed ^ 0xF, 1.0f, c.stream));
  LtGemm g(c.lt, p, s, s, s, false, c.ws_bytes, 1, c.stream);
  auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < 20; ++i) g.Run(0, a.get(), b.get(), d.get(), c.workspace.get(), c.ws_bytes, c.stream);
    CK(cudaStreamSynchronize(c.stream));
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return elapsed;
}

std::string Uuid(const cudaDeviceProp& p) {
  std::string s = "GPU-";
  const auto* b = reinterpret_cast<const unsigned char*>(p.uuid.bytes);
  char buf[4];
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
    std::snprintf(buf, sizeof buf, "%02x", b[i]);
    s += buf;
  }
  return s;
}

json DeviceInfo(int dev) {
  cudaDeviceProp p{};
  CK(cudaGetDeviceProperties(&p, dev));
  char bus[32] = {0};
  cudaDeviceGetPCIBusId(bus, sizeof bus, dev);
  int clock_khz = 0, mem_clock_khz = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev);
  cudaDeviceGetAttribute(&mem_clock_khz, cudaDevAttrMemoryClockRate, dev);
  return {{"index", dev},
          {"name", p.name},
          {"uuid", Uuid(p)},
          {"pci_bus_id", bus},
          {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"sm_count", p.multiProcessorCount},
          {"l2_bytes", p.l2CacheSize},
          {"memory_bytes", p.totalGlobalMem},
          {"memory_bus_bits", p.memoryBusWidth},
          {"max_sm_clock_mhz", clock_khz / 1000},
          {"max_memory_clock_mhz", mem_clock_khz / 1000}};
}

json Versions() {
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  auto fmt = [](int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); };
  size_t lt = cublasLtGetVersion();
  return {{"cuda_driver", fmt(driver)},
          {"cuda_runtime", fmt(runtime)},
          {"cublaslt", std::to_string(lt / 10000) + "." + std::to_string((lt / 100) % 100) + "." + std::to_string(lt % 100)}};
}

// Why no device can be used, in words: a missing driver is the common case on a CPU node.
std::string NoDeviceReason(cudaError_t e) {
  if (e == cudaSuccess) return "no CUDA device";
  std::string why = std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e);
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice) {
    void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) return "no NVIDIA driver on this node (libcuda.so.1 cannot be loaded): " + why;
    dlclose(h);
  }
  return why;
}

int Info() {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::cout << json{{"error", NoDeviceReason(e)}, {"versions", Versions()}}.dump() << "\n";
    return 3;
  }
  json devs = json::array();
  for (int i = 0; i < count; ++i) devs.push_back(DeviceInfo(i));
  std::cout << json{{"devices", devs}, {"versions", Versions()}}.dump() << "\n";
  return 0;
}

void Emit(const json& line) { std::cout << line.dump() << std::endl; }

int Run(const json& job) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    Emit({{"type", "error"}, {"error", NoDeviceReason(e)}});
    return 3;
  }
  Context c;
  c.device = job.value("device", 0);
  if (c.device < 0 || c.device >= count) {
    Emit({{"type", "error"}, {"error", "no CUDA device " + std::to_string(c.device)}});
    return 3;
  }
  bool dead = false;
  try {
    CK(cudaSetDevice(c.device));
    CK(cudaGetDeviceProperties(&c.prop, c.device));
    CK(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking));
    CK(cublasLtCreate(&c.lt));
    CK(cublasCreate(&c.blas));
    c.flush_bytes = job.value("flush_bytes", c.flush_bytes);
    c.workspace = Alloc(c.ws_bytes);
    c.flush = Alloc(c.flush_bytes);
    Emit({{"type", "device"}, {"device", DeviceInfo(c.device)}, {"versions", Versions()}});
    double warmed = WarmUp(c, job.value("warmup_s", 0.0));
    if (warmed > 0) Emit({{"type", "warmup"}, {"seconds", warmed}});
  } catch (const Failure& f) {
    Emit({{"type", "error"}, {"error", f.what()}});
    return 3;
  }
  for (const auto& item : job.at("items")) {
    json out = {{"type", "result"}, {"id", item.value("id", "")}, {"kind", item.value("kind", "")}};
    if (dead) {
      out["error"] = "not run: an earlier CUDA error left the GPU context unusable";
      Emit(out);
      continue;
    }
    std::cerr << "  " << item.value("id", "") << "\n";
    auto t0 = std::chrono::steady_clock::now();
    try {
      std::string kind = item.at("kind");
      json r;
      if (kind == "gemm") {
        r = RunGemm(c, item);
      } else if (kind == "grouped") {
        r = RunGrouped(c, item);
      } else if (kind == "membw") {
        r = RunMembw(c, item);
      } else if (kind == "pcie") {
        r = RunPcie(c, item);
      } else if (kind == "p2p") {
        r = RunP2p(item, c.seed);
        CK(cudaSetDevice(c.device));
      } else if (kind == "launch") {
        r = RunLaunch(c, item);
      } else {
        throw Failure("unknown item kind " + kind, false);
      }
      out.update(r);
    } catch (const Failure& f) {
      out["error"] = f.what();
      cudaGetLastError();
      if (f.sticky || cudaDeviceSynchronize() != cudaSuccess) dead = true;
    } catch (const json::exception& ex) {
      out["error"] = std::string("bad job item: ") + ex.what();
    }
    out["wall_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    Emit(out);
  }
  Emit({{"type", "done"}});
  return 0;
}

}  // namespace
}  // namespace clustermax::gpubench

int main(int argc, char** argv) {
  using clustermax::gpubench::Info;
  using clustermax::gpubench::Run;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "info") return Info();
  if (args.size() == 3 && args[0] == "run" && (args[1] == "--job-json" || args[1] == "--job")) {
    nlohmann::json job;
    try {
      if (args[1] == "--job") {
        std::ifstream f(args[2]);
        if (!f) {
          std::cerr << "clustermax-gpu: cannot read " << args[2] << "\n";
          return 2;
        }
        job = nlohmann::json::parse(f);
      } else {
        job = nlohmann::json::parse(args[2]);
      }
    } catch (const nlohmann::json::exception& e) {
      std::cerr << "clustermax-gpu: the job is not valid JSON: " << e.what() << "\n";
      return 2;
    }
    return Run(job);
  }
  std::cerr << "usage: clustermax-gpu info | clustermax-gpu run --job FILE | --job-json JSON\n";
  return 2;
}
