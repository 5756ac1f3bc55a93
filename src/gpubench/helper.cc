// clustermax-gpu: the CUDA half of `clustermax bench gpu`. The core binary never links CUDA; it
// plans the work (src/bench/gpu_plan.*), runs this helper once per GPU with a job, and turns the
// raw timings and samples into figures and grades. This program measures and reports, nothing
// more: no statistics beyond the raw samples, no thresholds.
//
//   clustermax-gpu info                      devices and library versions (JSON, one line)
//   clustermax-gpu run --job FILE            one JSON line per item on stdout, progress on stderr
//   clustermax-gpu run --job-json '{...}'    the same with the job inline
//   clustermax-gpu nccl --job-json '{...}'   one rank of bench net's NCCL backend (nccl.cc)
//
// Exit codes: 0 done (an item's failure is in its line), 2 usage, 3 no usable CUDA device.
//
// The measuring code lives in suites/*.cc (one file per item kind, listed in suites/register.cc)
// on the shared harness (harness.h); this file is the command line and the line protocol
// (docs/gpu-helper-protocol.md): it finds each item's suite by its "kind".
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpubench/harness.h"

namespace clustermax::gpubench {
namespace {

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
          {"cublaslt",
           std::to_string(lt / 10000) + "." + std::to_string((lt / 100) % 100) + "." + std::to_string(lt % 100)}};
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

const HelperSuite* FindSuite(const std::string& kind) {
  for (const auto& s : HelperSuites()) {
    if (kind == s.kind) return &s;
  }
  return nullptr;
}

int Run(const json& job) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    Emit({{"type", "error"}, {"error", NoDeviceReason(e)}});
    return 3;
  }
  Context c;
  c.emit = Emit;
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
      const HelperSuite* suite = FindSuite(kind);
      if (!suite) throw Failure("unknown item kind " + kind, false);
      json r = suite->run(c, item);
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

namespace clustermax::gpubench {
int RunNccl(const nlohmann::json& job);  // nccl.cc
}

int main(int argc, char** argv) {
  using clustermax::gpubench::Info;
  using clustermax::gpubench::Run;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "info") return Info();
  if (args.size() == 3 && args[0] == "nccl" && args[1] == "--job-json") {
    nlohmann::json job;
    try {
      job = nlohmann::json::parse(args[2]);
    } catch (const nlohmann::json::exception& e) {
      std::cerr << "clustermax-gpu: the job is not valid JSON: " << e.what() << "\n";
      return 2;
    }
#ifdef CLUSTERMAX_HAVE_NCCL
    return clustermax::gpubench::RunNccl(job);
#else
    std::cout << nlohmann::json{{"type", "error"},
                                {"error", "this clustermax-gpu was built without nccl.h: no NCCL backend"}}
                     .dump()
              << std::endl;
    return 3;
#endif
  }
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
  std::cerr << "usage: clustermax-gpu info | clustermax-gpu run --job FILE | --job-json JSON | clustermax-gpu nccl "
               "--job-json JSON\n";
  return 2;
}