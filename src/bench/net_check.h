// The data check of `bench net`'s collectives, shared by the TCP backend (bench/net_bench.cc) and
// the NCCL backend in the GPU helper (gpubench/nccl.cc fills and checks on the GPU with the same
// functions, gpubench/kernels.cu), which includes it without linking the core libraries:
// header-only, nothing but the standard library, and callable from CUDA device code.
//
// Every rank's input element i is InputValue(rank, i): small integers any rank can predict for any
// other, so sums over hundreds of ranks are exact in float32 and a wrong element is a wrong element.
#pragma once
#include <cstddef>
#include <string>

#if defined(__CUDACC__)
#define CMX_NET_HD __host__ __device__
#else
#define CMX_NET_HD
#endif

namespace clustermax::bench::net {

enum NetCollective : int {
  kAllReduce = 0,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kBroadcast,
  kReduce,
  kSendRecv,
  kUnknownCollective
};
inline int CollectiveId(const std::string& c) {
  const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv"};
  for (int i = 0; i < kUnknownCollective; ++i)
    if (c == names[i]) return i;
  return kUnknownCollective;
}

CMX_NET_HD inline float InputValue(int rank, unsigned long long i) {
  return static_cast<float>((static_cast<unsigned long long>(rank + 1) * 3 + i * 7) % 17) - 8.0f;
}

// The sum of InputValue(k, i) over ranks k = 0 .. n-1. The ranks' values run through all 17
// residues every 17 ranks (3 and 17 are coprime), and a full period sums to 0, so only the last
// n mod 17 ranks count: at most 16 terms, for any world size.
CMX_NET_HD inline float SumOfInputs(int n, unsigned long long i) {
  float s = 0;
  for (int k = 0; k < n % 17; ++k) s += InputValue(k, i);
  return s;
}

// What output element g of rank r must hold (false: not a result, as reduce off the root).
CMX_NET_HD inline bool ExpectedOutput(int coll, unsigned long long g, unsigned long long count, int r, int n, int root,
                                      float* want) {
  switch (coll) {
    case kAllReduce:
      *want = SumOfInputs(n, g);
      return true;
    case kReduce:
      if (r != root) return false;
      *want = SumOfInputs(n, g);
      return true;
    case kAllGather:
      *want = InputValue(static_cast<int>(g / count), g % count);
      return true;
    case kReduceScatter:
      *want = SumOfInputs(n, static_cast<unsigned long long>(r) * count + g);
      return true;
    case kAllToAll:
      *want = InputValue(static_cast<int>(g / count), static_cast<unsigned long long>(r) * count + g % count);
      return true;
    case kBroadcast:
      *want = InputValue(root, g);
      return true;
    case kSendRecv:
      *want = InputValue(((r - 1) % n + n) % n, g);
      return true;
    default:
      return false;
  }
}

// Elements of rank r's output of `collective` per rank: count x world for all_gather and alltoall,
// count otherwise (counts as nccl-tests: all_reduce, broadcast, reduce and sendrecv move `count`,
// all_gather `count` in, reduce_scatter `count` out, alltoall `count` to each peer).
inline size_t OutputElements(const std::string& collective, size_t count, int world) {
  return collective == "all_gather" || collective == "alltoall" ? count * static_cast<size_t>(world) : count;
}
// How many ranks nccl-tests divides a size over: the user-visible bytes of all_gather,
// reduce_scatter and alltoall are count x world elements, of the others count.
inline size_t SizeSplit(const std::string& collective, int world) {
  return collective == "all_gather" || collective == "reduce_scatter" || collective == "alltoall"
             ? static_cast<size_t>(world)
             : 1;
}
// Elements of each rank's input.
inline size_t InputElements(const std::string& collective, size_t count, int world) {
  return collective == "reduce_scatter" || collective == "alltoall" ? count * static_cast<size_t>(world) : count;
}

// Wrong elements among out[0..len), which hold rank r's output elements first .. first+len-1
// (so a large output is checked piece by piece); -1 for an unknown collective.
inline long long WrongElements(const std::string& collective, const float* out, size_t first, size_t len, size_t count,
                               int r, int n, int root) {
  int coll = CollectiveId(collective);
  if (coll == kUnknownCollective) return -1;
  long long wrong = 0;
  float want = 0;
  for (size_t j = 0; j < len; ++j) {
    if (ExpectedOutput(coll, first + j, count, r, n, root, &want)) wrong += out[j] != want;
  }
  return wrong;
}

}  // namespace clustermax::bench::net
