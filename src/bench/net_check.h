// The data check of `bench net`'s collectives, shared by the TCP backend (bench/net_bench.cc) and
// the NCCL backend in the GPU helper (gpubench/nccl.cc), which includes it without linking the
// core libraries: header-only, standard library only.
//
// Every rank's input element i is InputValue(rank, i): small integers any rank can predict for any
// other, so sums over hundreds of ranks are exact in float32 and a wrong element is a wrong element.
#pragma once
#include <cstddef>
#include <string>

namespace clustermax::bench::net {

inline float InputValue(int rank, size_t i) { return static_cast<float>(((rank + 1) * 3 + i * 7) % 17) - 8.0f; }

// Elements of rank r's output of `collective` per rank: count x world for all_gather and alltoall,
// count otherwise (counts as nccl-tests: all_reduce, broadcast, reduce and sendrecv move `count`,
// all_gather `count` in, reduce_scatter `count` out, alltoall `count` to each peer).
inline size_t OutputElements(const std::string& collective, size_t count, int world) {
  return collective == "all_gather" || collective == "alltoall" ? count * static_cast<size_t>(world) : count;
}
// Elements of each rank's input.
inline size_t InputElements(const std::string& collective, size_t count, int world) {
  return collective == "reduce_scatter" || collective == "alltoall" ? count * static_cast<size_t>(world) : count;
}

// Wrong elements among out[0..len), which hold rank r's output elements first .. first+len-1
// (so a large output is checked piece by piece). reduce is a result at the root only.
inline long long WrongElements(const std::string& coll, const float* out, size_t first, size_t len, size_t count, int r,
                               int n, int root) {
  long long wrong = 0;
  for (size_t j = 0; j < len; ++j) {
    size_t g = first + j;
    float want = 0;
    if (coll == "all_reduce" || coll == "reduce") {
      if (coll == "reduce" && r != root) return 0;
      for (int k = 0; k < n; ++k) want += InputValue(k, g);
    } else if (coll == "all_gather") {
      want = InputValue(static_cast<int>(g / count), g % count);
    } else if (coll == "reduce_scatter") {
      for (int k = 0; k < n; ++k) want += InputValue(k, static_cast<size_t>(r) * count + g);
    } else if (coll == "alltoall") {
      want = InputValue(static_cast<int>(g / count), static_cast<size_t>(r) * count + g % count);
    } else if (coll == "broadcast") {
      want = InputValue(root, g);
    } else if (coll == "sendrecv") {
      want = InputValue(((r - 1) % n + n) % n, g);
    } else {
      return -1;
    }
    wrong += out[j] != want;
  }
  return wrong;
}

}  // namespace clustermax::bench::net
