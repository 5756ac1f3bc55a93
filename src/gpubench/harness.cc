#include "gpubench/harness.h"

#include <algorithm>
#include <chrono>
#include <random>

namespace clustermax::gpubench {

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

DevPtr Alloc(size_t bytes) {
  void* p = nullptr;
  CK(cudaMalloc(&p, std::max<size_t>(bytes, 256)));
  return DevPtr(p);
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

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

double WarmUp(Context& c, double seconds) {
  if (seconds <= 0) return 0;
  static const std::string kWarmType = "bf16";
  const Precision& p = LookupPrecision(kWarmType);
  int64_t s = 8192;
  DevPtr a = Alloc(ElementBytes(p.ab, s * s)), b = Alloc(ElementBytes(p.ab, s * s)),
         d = Alloc(ElementBytes(p.d, s * s));
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

}  // namespace clustermax::gpubench
