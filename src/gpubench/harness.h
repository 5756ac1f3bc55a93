// The shared harness of the GPU benchmark helper (clustermax-gpu): CUDA and cuBLAS error
// handling, device buffers, the event-timed loop, the precision table, one cuBLASLt matmul, the
// per-device context, the sampled check of a matmul and the warm-up. Suites (suites/*.cc) are
// written against this and nothing else; helper.cc owns the command line and the line protocol
// (docs/gpu-helper-protocol.md).
#pragma once
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/kernels.h"

namespace clustermax::gpubench {
using nlohmann::json;

// A failed CUDA or cuBLAS call; `sticky` when the context is unusable afterwards.
struct Failure : std::runtime_error {
  Failure(const std::string& what, bool sticky_) : std::runtime_error(what), sticky(sticky_) {}
  bool sticky;
};

bool IsSticky(cudaError_t e);
void Check(cudaError_t e, const char* what);
void Check(cublasStatus_t e, const char* what);
#define CK(x) Check((x), #x)

struct DevFree {
  void operator()(void* p) const { cudaFree(p); }
};
using DevPtr = std::unique_ptr<void, DevFree>;
DevPtr Alloc(size_t bytes);
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

double Median(std::vector<double> v);

// Runs op `warmup` times untimed, then `iters` times each between two events; before every call
// the flush buffer is zeroed (defeats L2, as the MAMF finder does). Returns milliseconds per call.
std::vector<double> TimeLoop(cudaStream_t s, int warmup, int iters, void* flush, size_t flush_bytes,
                             const std::function<void()>& op);

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
const Precision& LookupPrecision(const std::string& name);

// Unit scale factors for a scaled mode: every block scale is 1 (so the reference is the plain
// product and the factor layout cannot change the result); the buffer is sized for the largest
// layout any mode uses (rows padded to 128, one factor per 16 elements plus padding, 4 bytes).
DevPtr UnitScales(int mode, int64_t rows, int64_t k, cudaStream_t s);

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
      throw Failure("cuBLASLt has no algorithm for " + p.name + " " + std::to_string(m) + "x" + std::to_string(n) +
                        "x" + std::to_string(k) + " on this GPU (" + cublasGetStatusName(st) + ")",
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
  // The algorithm's cuBLASLt id (CUBLASLT_ALGO_CONFIG_ID), -1 when it cannot be read.
  int AlgoId(size_t algo) const { return AlgoAttr(algo, CUBLASLT_ALGO_CONFIG_ID); }
  // Everything that picks the kernel and its summation order: id, tile, stages, split-K count,
  // reduction scheme, CTA swizzling, custom option, inner shape and (Hopper on) cluster shape
  // ("id/tile/stages/splitk/reduction/swizzle/custom/inner/cluster"; -1 for one that cannot be read).
  std::string AlgoConfig(size_t algo) const {
    std::string s;
    for (auto a : {CUBLASLT_ALGO_CONFIG_ID, CUBLASLT_ALGO_CONFIG_TILE_ID, CUBLASLT_ALGO_CONFIG_STAGES_ID,
                   CUBLASLT_ALGO_CONFIG_SPLITK_NUM, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                   CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION,
                   CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID})
      s += (s.empty() ? "" : "/") + std::to_string(AlgoAttr(algo, a));
    return s;
  }

  void Run(size_t algo, const void* a, const void* b, void* d, void* ws, size_t ws_bytes, cudaStream_t s) const {
    double alpha_d = 1.0, beta_d = 0.0;
    float alpha_f = 1.0f, beta_f = 0.0f;
    bool dbl = p_.scale_type == CUDA_R_64F;
    const void* alpha = dbl ? static_cast<const void*>(&alpha_d) : &alpha_f;
    const void* beta = dbl ? static_cast<const void*>(&beta_d) : &beta_f;
    CK(cublasLtMatmul(lt_, desc_, alpha, a, la_, b, lb_, beta, d, ld_, d, ld_, &algos_[algo].algo, ws, ws_bytes, s));
  }

 private:
  // One integer attribute of the algorithm's configuration. cuBLASLt refuses a buffer whose size
  // is not the attribute's own (seen on an H200: every attribute read as -1 with an 8-byte buffer),
  // so the size is asked first.
  int64_t AlgoAttr(size_t algo, cublasLtMatmulAlgoConfigAttributes_t attr) const {
    size_t size = 0, written = 0;
    if (cublasLtMatmulAlgoConfigGetAttribute(&algos_[algo].algo, attr, nullptr, 0, &size) != CUBLAS_STATUS_SUCCESS)
      return -1;
    if (size == sizeof(int32_t)) {
      int32_t v = 0;
      if (cublasLtMatmulAlgoConfigGetAttribute(&algos_[algo].algo, attr, &v, sizeof v, &written) ==
              CUBLAS_STATUS_SUCCESS &&
          written == sizeof v)
        return v;
    } else if (size == sizeof(int64_t)) {
      int64_t v = 0;
      if (cublasLtMatmulAlgoConfigGetAttribute(&algos_[algo].algo, attr, &v, sizeof v, &written) ==
              CUBLAS_STATUS_SUCCESS &&
          written == sizeof v)
        return v;
    } else if (size == sizeof(uint16_t)) {
      uint16_t v = 0;
      if (cublasLtMatmulAlgoConfigGetAttribute(&algos_[algo].algo, attr, &v, sizeof v, &written) ==
              CUBLAS_STATUS_SUCCESS &&
          written == sizeof v)
        return v;
    }
    return -1;
  }
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
  // Writes one line of the protocol now (helper.cc's Emit): for a suite that reports as it goes
  // (the burn-in's iterations) before its result line.
  std::function<void(const json&)> emit;
};
// The sampled check of a matmul: host-chosen (A row, B column, D index) triples, dot products on
// the device in double, (got, ref, absref) back to the caller for the tolerance rule.
json SampleCheck(Context& c, const void* a, DType at, const void* b, DType bt, const void* d, DType dt, int64_t k,
                 const std::vector<uint64_t>& a_off, const std::vector<uint64_t>& b_off,
                 const std::vector<uint64_t>& d_idx);

// Times each heuristic candidate briefly and returns the fastest (index, median ms per candidate).
std::pair<size_t, json> PickAlgo(Context& c, const LtGemm& g, const void* a, const void* b, void* d, int candidates);

// Keeps the GPU busy with a BF16 8192^3 matmul for `seconds` so clocks and temperature settle
// before anything is timed (a cold GPU reports inflated numbers).
double WarmUp(Context& c, double seconds);

// ---------------------------------------------------------------------------------------------
// A helper suite: the code that measures one item kind on one device. `run` reads the item's
// fields (docs/gpu-helper-protocol.md), measures, and returns the raw fields of its result line
// (times_ms, samples, ...); it throws Failure on a CUDA or cuBLAS error and json::exception on a
// malformed item. The harness adds type, id, kind, wall_s and error. A suite that changes the
// current device sets it back to c.device before it returns.
struct HelperSuite {
  const char* kind;
  json (*run)(Context& c, const json& item);
};

// The registered suites (suites/register.cc), one per item kind.
const std::vector<HelperSuite>& HelperSuites();

}  // namespace clustermax::gpubench
