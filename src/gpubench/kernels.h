// Device kernels of the GPU benchmark helper (kernels.cu), callable from plain C++ (harness.cc, suites/*.cc).
// Element types are named by DType; every launcher is asynchronous on the given stream.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace clustermax::gpubench {

enum class DType : int { kF64 = 0, kF32 = 1, kBF16 = 2, kF16 = 3, kE4M3 = 4, kE2M1 = 5 };

// Bytes for n elements (E2M1 packs two per byte, rounded up).
size_t ElementBytes(DType t, size_t n);

// Uniform random values in [-range, range) from a counter-based hash of (seed, index), converted
// to the element type; E2M1 gets random bytes (all 16 codes are finite values).
cudaError_t LaunchFill(void* p, DType t, size_t n, uint64_t seed, float range, cudaStream_t s);
// Every float of p set to v.
cudaError_t LaunchFillFloat(float* p, size_t n, float v, cudaStream_t s);
// bench net: p[i] = InputValue(rank, i) for n elements; and the count of rank's n output elements
// that differ from ExpectedOutput (bench/net_check.h) added to *wrong (device memory).
cudaError_t LaunchNetFill(float* p, size_t n, int rank, cudaStream_t s);
cudaError_t LaunchNetCheck(const float* out, size_t n, size_t count, int collective, int rank, int world, int root,
                           unsigned long long* wrong, cudaStream_t s);

// One dot product per sample in double precision: ref[i] = sum_k A[a_off[i] + k] * B[b_off[i] + k],
// absref[i] = sum_k |A * B|, got[i] = D[d_idx[i]] read as double. Offsets are element offsets.
struct SampleArgs {
  const void* a;
  DType a_type;
  const void* b;
  DType b_type;
  const void* d;
  DType d_type;
  const uint64_t* a_off;
  const uint64_t* b_off;
  const uint64_t* d_idx;
  int samples;
  int64_t k;
  double* got;
  double* ref;
  double* absref;
};
cudaError_t LaunchSampleDots(const SampleArgs& args, cudaStream_t s);

// Streaming kernels over n floats (n a multiple of 4), grid-stride, float4 accesses.
cudaError_t LaunchCopy(const float* a, float* b, size_t n, int blocks, cudaStream_t s);
cudaError_t LaunchTriad(float* a, const float* b, const float* c, float scalar, size_t n, int blocks, cudaStream_t s);
// Sum of a into partial[blockIdx.x] (double); `blocks` partials.
cudaError_t LaunchRead(const float* a, size_t n, double* partial, int blocks, cudaStream_t s);
// Counts mismatches of the copy (b == a) or triad (a == b + scalar * c) results into *wrong.
cudaError_t LaunchCheckCopy(const float* a, const float* b, size_t n, unsigned long long* wrong, cudaStream_t s);
cudaError_t LaunchCheckTriad(const float* a, const float* b, const float* c, float scalar, size_t n,
                             unsigned long long* wrong, cudaStream_t s);
// A second, differently shaped reduction of a (atomics on one double), for checking LaunchRead.
cudaError_t LaunchReadCheck(const float* a, size_t n, double* sum, cudaStream_t s);

// The burn-in's checksum of `words` 32-bit words: the sum mod 2^64 of Mix64(Mix64(index) ^ word)
// (SplitMix64's finalizer) over every word, written to *out (device memory). A sum, so the order the blocks run in cannot change
// it; a mix per word, so any one changed bit changes it. Equal on every GPU for equal data.
cudaError_t LaunchWordHash(const uint32_t* p, size_t words, unsigned long long* out, cudaStream_t s);

cudaError_t LaunchEmpty(cudaStream_t s);

}  // namespace clustermax::gpubench
