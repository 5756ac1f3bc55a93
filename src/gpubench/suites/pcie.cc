// Helper suite "pcie": pinned host <-> device copies (the pcie host suite).
// Hooks: run (reads the item, measures on c.device, returns the result fields). Registered in
// suites/register.cc; the host side that plans these items is src/bench/gpu_suites/.
#include "gpubench/harness.h"

#include <sched.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <random>

namespace clustermax::gpubench {
namespace {

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

}  // namespace

extern const HelperSuite kPcieSuite = {"pcie", RunPcie};

}  // namespace clustermax::gpubench
