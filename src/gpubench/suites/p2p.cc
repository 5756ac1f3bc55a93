// Helper suite "p2p": peer copies between two GPUs of this process (the p2p host suite).
// Hooks: run (reads the item, measures on c.device, returns the result fields). Registered in
// suites/register.cc; the host side that plans these items is src/bench/gpu_suites/.
#include "gpubench/harness.h"

namespace clustermax::gpubench {
namespace {

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

// The copies switch devices; the harness's device is set back afterwards.
json RunP2pOnContext(Context& c, const json& item) {
  json r = RunP2p(item, c.seed);
  CK(cudaSetDevice(c.device));
  return r;
}

}  // namespace

extern const HelperSuite kP2pSuite = {"p2p", RunP2pOnContext};

}  // namespace clustermax::gpubench
