// `clustermax-gpu nccl --job-json JSON`: one rank of `bench net`'s NCCL backend. NCCL is loaded at
// run time (libnccl.so.2: the node's, or the CUDA toolkit's), so the helper's other suites run on
// nodes without it. The job names this rank's place (rank, world, local_rank), the rendezvous
// directory on the shared filesystem (rank 0 writes NCCL's unique id there, the others read it:
// no daemon), the collectives, sizes, iterations and whether to check the data.
//
// Method (nccl-tests', performance.md 5.3): per collective and size, warm-up, then `iters`
// operations enqueued back to back, timed on the host around the batch and the stream
// synchronisation; the time is averaged over the ranks; then one checked run per placement whose
// output is copied back piece by piece and compared with bench/net_check.h. alltoall is grouped
// ncclSend/ncclRecv, as nccl-tests does it. This program reports raw times and wrong counts; the
// core binary turns them into algbw/busbw.
#include <dlfcn.h>
#include <nccl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "bench/net_check.h"
#include "gpubench/kernels.h"

namespace clustermax::gpubench {
namespace {
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
namespace net = clustermax::bench::net;

struct Nccl {
  void* lib = nullptr;
  decltype(&ncclGetVersion) GetVersion = nullptr;
  decltype(&ncclGetUniqueId) GetUniqueId = nullptr;
  decltype(&ncclCommInitRank) CommInitRank = nullptr;
  decltype(&ncclCommDestroy) CommDestroy = nullptr;
  decltype(&ncclGetErrorString) GetErrorString = nullptr;
  decltype(&ncclAllReduce) AllReduce = nullptr;
  decltype(&ncclAllGather) AllGather = nullptr;
  decltype(&ncclReduceScatter) ReduceScatter = nullptr;
  decltype(&ncclBroadcast) Broadcast = nullptr;
  decltype(&ncclReduce) Reduce = nullptr;
  decltype(&ncclSend) Send = nullptr;
  decltype(&ncclRecv) Recv = nullptr;
  decltype(&ncclGroupStart) GroupStart = nullptr;
  decltype(&ncclGroupEnd) GroupEnd = nullptr;
};

template <class F>
void Sym(void* lib, F& f, const char* name) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (!f) throw std::runtime_error(std::string("libnccl.so.2 lacks ") + name);
}

// NCCL, or why it cannot be loaded.
Nccl LoadNccl() {
  Nccl n;
  n.lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (!n.lib)
    throw std::runtime_error(std::string("NCCL is not installed on this node (libnccl.so.2: ") + dlerror() + ")");
  Sym(n.lib, n.GetVersion, "ncclGetVersion");
  Sym(n.lib, n.GetUniqueId, "ncclGetUniqueId");
  Sym(n.lib, n.CommInitRank, "ncclCommInitRank");
  Sym(n.lib, n.CommDestroy, "ncclCommDestroy");
  Sym(n.lib, n.GetErrorString, "ncclGetErrorString");
  Sym(n.lib, n.AllReduce, "ncclAllReduce");
  Sym(n.lib, n.AllGather, "ncclAllGather");
  Sym(n.lib, n.ReduceScatter, "ncclReduceScatter");
  Sym(n.lib, n.Broadcast, "ncclBroadcast");
  Sym(n.lib, n.Reduce, "ncclReduce");
  Sym(n.lib, n.Send, "ncclSend");
  Sym(n.lib, n.Recv, "ncclRecv");
  Sym(n.lib, n.GroupStart, "ncclGroupStart");
  Sym(n.lib, n.GroupEnd, "ncclGroupEnd");
  return n;
}

void Cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

struct Rank {
  Nccl nccl;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  int rank = 0, world = 1;
  void Check(ncclResult_t r, const char* what) {
    if (r != ncclSuccess && r != ncclInProgress)
      throw std::runtime_error(std::string(what) + ": " + nccl.GetErrorString(r));
  }
};

std::string Hex(const void* p, size_t n) {
  static const char* d = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<const unsigned char*>(p)[i];
    s += d[c >> 4];
    s += d[c & 15];
  }
  return s;
}

bool Unhex(const std::string& s, void* p, size_t n) {
  if (s.size() < 2 * n) return false;
  auto v = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
  for (size_t i = 0; i < n; ++i) {
    int hi = v(s[2 * i]), lo = v(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    static_cast<unsigned char*>(p)[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

// Rank 0 publishes NCCL's unique id in the rendezvous directory (written aside, renamed into place,
// mode 0600); the others wait for it.
ncclUniqueId ShareId(Rank& r, const fs::path& dir, double timeout_s) {
  ncclUniqueId id{};
  fs::path file = dir / "nccl-id";
  if (r.rank == 0) {
    r.Check(r.nccl.GetUniqueId(&id), "ncclGetUniqueId");
    fs::path tmp = dir / (".nccl-id." + std::to_string(::getpid()));
    {
      std::ofstream f(tmp);
      f << Hex(&id, sizeof id) << "\n";
      if (!f) throw std::runtime_error("cannot write " + tmp.string());
    }
    fs::permissions(tmp, fs::perms::owner_read | fs::perms::owner_write);
    fs::rename(tmp, file);
    return id;
  }
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  for (;;) {
    std::ifstream f(file);
    std::string text;
    if (f >> text && Unhex(text, &id, sizeof id)) return id;
    if (Clock::now() > deadline) throw std::runtime_error("rank 0 published no NCCL id in " + dir.string());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Op(Rank& r, const std::string& c, const float* s, float* d, size_t count, int root) {
  auto& n = r.nccl;
  if (c == "all_reduce") r.Check(n.AllReduce(s, d, count, ncclFloat, ncclSum, r.comm, r.stream), "ncclAllReduce");
  if (c == "all_gather") r.Check(n.AllGather(s, d, count, ncclFloat, r.comm, r.stream), "ncclAllGather");
  if (c == "reduce_scatter")
    r.Check(n.ReduceScatter(s, d, count, ncclFloat, ncclSum, r.comm, r.stream), "ncclReduceScatter");
  if (c == "broadcast") r.Check(n.Broadcast(s, d, count, ncclFloat, root, r.comm, r.stream), "ncclBroadcast");
  if (c == "reduce") r.Check(n.Reduce(s, d, count, ncclFloat, ncclSum, root, r.comm, r.stream), "ncclReduce");
  if (c == "alltoall" || c == "sendrecv") {
    r.Check(n.GroupStart(), "ncclGroupStart");
    if (c == "alltoall") {
      for (int p = 0; p < r.world; ++p) {
        r.Check(n.Send(s + p * count, count, ncclFloat, p, r.comm, r.stream), "ncclSend");
        r.Check(n.Recv(d + p * count, count, ncclFloat, p, r.comm, r.stream), "ncclRecv");
      }
    } else {
      r.Check(n.Send(s, count, ncclFloat, (r.rank + 1) % r.world, r.comm, r.stream), "ncclSend");
      r.Check(n.Recv(d, count, ncclFloat, (r.rank - 1 + r.world) % r.world, r.comm, r.stream), "ncclRecv");
    }
    r.Check(n.GroupEnd(), "ncclGroupEnd");
  }
}

// A sum over the ranks of one double (times and wrong counts), through NCCL itself.
double SumOverRanks(Rank& r, double v, double* dev) {
  Cuda(cudaMemcpyAsync(dev, &v, sizeof v, cudaMemcpyHostToDevice, r.stream), "cudaMemcpy");
  r.Check(r.nccl.AllReduce(dev, dev, 1, ncclDouble, ncclSum, r.comm, r.stream), "ncclAllReduce");
  double out = 0;
  Cuda(cudaMemcpyAsync(&out, dev, sizeof out, cudaMemcpyDeviceToHost, r.stream), "cudaMemcpy");
  Cuda(cudaStreamSynchronize(r.stream), "cudaStreamSynchronize");
  return out;
}

void FillDevice(float* dev, size_t n, int rank, cudaStream_t s) {
  Cuda(LaunchNetFill(dev, n, rank, s), "fill");
  Cuda(cudaStreamSynchronize(s), "cudaStreamSynchronize");
}

// Wrong elements of this rank's output, counted on the GPU (bench/net_check.h's ExpectedOutput).
long long CheckDevice(const std::string& c, const float* dev, size_t count, Rank& r, int root,
                      unsigned long long* dev_wrong) {
  Cuda(cudaMemsetAsync(dev_wrong, 0, sizeof *dev_wrong, r.stream), "cudaMemset");
  Cuda(LaunchNetCheck(dev, net::OutputElements(c, count, r.world), count, net::CollectiveId(c), r.rank, r.world, root,
                      dev_wrong, r.stream),
       "check");
  unsigned long long wrong = 0;
  Cuda(cudaMemcpyAsync(&wrong, dev_wrong, sizeof wrong, cudaMemcpyDeviceToHost, r.stream), "cudaMemcpy");
  Cuda(cudaStreamSynchronize(r.stream), "cudaStreamSynchronize");
  return static_cast<long long>(wrong);
}

// Progress for the watchdog: a rank whose peer died waits inside NCCL forever; the watchdog ends it.
std::atomic<long long> g_progress_ms{0};
long long NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now().time_since_epoch()).count();
}

json Placement(Rank& r, const std::string& c, float* in, float* out, size_t count, bool in_place, int root, int iters,
               int warmup, bool check, double* dev_scalar, unsigned long long* dev_wrong) {
  // Grouped send/receive in one buffer has no defined order between a peer's receive and our own
  // send of the same region (nccl-tests' in-place alltoall reports errors for that reason).
  if (in_place && (c == "alltoall" || c == "sendrecv"))
    return {{"skipped", "in place is not defined for grouped send/receive"}};
  size_t in_n = net::InputElements(c, count, r.world);
  // In place, as NCCL defines it: all_gather's input at out + rank x count, reduce_scatter's
  // output at in + rank x count, the rest in one buffer.
  const float* src = in_place ? (c == "all_gather" ? out + static_cast<size_t>(r.rank) * count : out) : in;
  float* dst = in_place ? (c == "reduce_scatter" ? out + static_cast<size_t>(r.rank) * count : out) : out;
  for (int i = 0; i < warmup; ++i) Op(r, c, src, dst, count, root);
  Cuda(cudaStreamSynchronize(r.stream), "cudaStreamSynchronize");
  SumOverRanks(r, 0, dev_scalar);  // everyone starts together
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) Op(r, c, src, dst, count, root);
  Cuda(cudaStreamSynchronize(r.stream), "cudaStreamSynchronize");
  double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / std::max(1, iters);
  double avg = SumOverRanks(r, us, dev_scalar) / r.world;
  json p = {{"time_us", avg}, {"wrong", nullptr}};
  if (check) {
    float* fill_at = in_place ? (c == "all_gather" ? out + static_cast<size_t>(r.rank) * count : out) : in;
    FillDevice(fill_at, in_n, r.rank, r.stream);
    Op(r, c, src, dst, count, root);
    Cuda(cudaStreamSynchronize(r.stream), "cudaStreamSynchronize");
    long long w = CheckDevice(c, in_place && c == "reduce_scatter" ? dst : out, count, r, root, dev_wrong);
    p["wrong"] = static_cast<long long>(SumOverRanks(r, static_cast<double>(w), dev_scalar));
  }
  g_progress_ms = NowMs();
  return p;
}

}  // namespace

int RunNccl(const json& job) {
  auto fail = [](const std::string& why) {
    std::cout << json{{"type", "error"}, {"error", why}}.dump() << std::endl;
    return 3;
  };
  Rank r;
  try {
    r.nccl = LoadNccl();
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  int devices = 0;
  cudaError_t ce = cudaGetDeviceCount(&devices);
  if (ce != cudaSuccess || devices == 0)
    return fail(ce == cudaSuccess ? "no CUDA device" : std::string("no CUDA device: ") + cudaGetErrorString(ce));
  try {
    r.rank = job.at("rank").get<int>();
    r.world = job.at("world").get<int>();
    // A peer that dies leaves the others blocked inside NCCL with no error: after `stall_s` without
    // a finished row, this rank says so and ends (srun then ends the step).
    double stall_s = job.value("stall_s", 600.0);
    g_progress_ms = NowMs();
    std::thread([stall_s, rank = r.rank] {
      for (;;) {
        std::this_thread::sleep_for(std::chrono::seconds(1));
        if (NowMs() - g_progress_ms.load() > static_cast<long long>(stall_s * 1000)) {
          std::cout << json{{"type", "error"},
                            {"error", "rank " + std::to_string(rank) + ": no progress for " +
                                          std::to_string(static_cast<int>(stall_s)) +
                                          " s inside NCCL (a peer rank failed or the fabric hangs)"}}
                           .dump()
                    << std::endl;
          std::_Exit(3);
        }
      }
    }).detach();
    int local = job.value("local_rank", 0);
    int dev = local % devices;
    Cuda(cudaSetDevice(dev), "cudaSetDevice");
    Cuda(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreate");
    ncclUniqueId id = ShareId(r, job.at("rendezvous").get<std::string>(), job.value("timeout_s", 120.0));
    r.Check(r.nccl.CommInitRank(&r.comm, r.world, id, r.rank), "ncclCommInitRank");
    int version = 0;
    r.nccl.GetVersion(&version);
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, dev);
    double* scalar = nullptr;
    Cuda(cudaMalloc(&scalar, sizeof(double)), "cudaMalloc");
    unsigned long long* wrong_counter = nullptr;
    Cuda(cudaMalloc(&wrong_counter, sizeof(unsigned long long)), "cudaMalloc");
    int iters = job.value("iters", 20), warmup = job.value("warmup", 5), root = job.value("root", 0);
    bool check = job.value("check", true);
    json tables = json::array();
    for (const auto& jc : job.at("collectives")) {
      std::string c = jc.get<std::string>();
      size_t split = net::SizeSplit(c, r.world);
      size_t max_count = 0;
      for (const auto& s : job.at("sizes")) max_count = std::max<size_t>(max_count, s.get<uint64_t>() / (4 * split));
      if (max_count == 0) continue;
      float *in = nullptr, *out = nullptr;
      Cuda(cudaMalloc(&in, net::InputElements(c, max_count, r.world) * sizeof(float)), "cudaMalloc");
      Cuda(cudaMalloc(&out,
                      std::max(net::OutputElements(c, max_count, r.world), net::InputElements(c, max_count, r.world)) *
                          sizeof(float)),
           "cudaMalloc");
      json rows = json::array();
      for (const auto& s : job.at("sizes")) {
        size_t count = s.get<uint64_t>() / (4 * split);
        if (count == 0) continue;
        FillDevice(in, net::InputElements(c, count, r.world), r.rank, r.stream);
        json row = {{"bytes", count * 4 * split}, {"count", count}};
        row["root"] = c == "broadcast" || c == "reduce" ? root : -1;
        row["out_of_place"] = Placement(r, c, in, out, count, false, root, iters, warmup, check, scalar, wrong_counter);
        row["in_place"] = Placement(r, c, in, out, count, true, root, iters, warmup, check, scalar, wrong_counter);
        rows.push_back(row);
      }
      cudaFree(in);
      cudaFree(out);
      tables.push_back({{"collective", c}, {"rows", rows}});
    }
    cudaFree(scalar);
    cudaFree(wrong_counter);
    r.nccl.CommDestroy(r.comm);
    if (r.rank == 0) {
      json line = {{"type", "nccl-result"},
                   {"ranks", r.world},
                   {"nccl_version", std::to_string(version / 10000) + "." + std::to_string(version / 100 % 100) + "." +
                                        std::to_string(version % 100)},
                   {"device", prop.name},
                   {"collectives", tables}};
      std::cout << line.dump() << std::endl;
    } else {
      std::cout << json{{"type", "done"}}.dump() << std::endl;
    }
    return 0;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}

}  // namespace clustermax::gpubench
