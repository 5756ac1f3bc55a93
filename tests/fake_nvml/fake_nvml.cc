// A fake libnvidia-ml.so.1 for tests: the NVML entry points clustermax calls, answering for an
// 8-GPU HGX H100 node. GPU 3 has uncorrectable ECC errors, GPU 5 is trained down to PCIe x8 and
// GPU 6 has retired pages with a retirement pending, and link 7 of GPU 2 is down. FAKE_NVML_DRIVER overrides the driver
// version; FAKE_NVML_FAIL_INIT=1 makes nvmlInit fail (driver not loaded); FAKE_NVML_HANG=1
// makes nvmlInit hang (a wedged driver).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <cstring>

extern "C" {

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
struct nvmlMemory_t {
  unsigned long long total, free, used;
};
struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlUtilization_t {
  unsigned int gpu, memory;
};

enum { kSuccess = 0, kUninitialized = 1, kInvalidArgument = 2, kNotSupported = 3, kDriverNotLoaded = 9 };
static const unsigned kGpus = 8;
static const unsigned kBus[kGpus] = {0x19, 0x3b, 0x4c, 0x5d, 0x9b, 0xbb, 0xcb, 0xdb};

// FAKE_NVML_HEALTHY: none of the planted faults below (x8 link, ECC errors, retired pages, a down
// NVLink): a healthy node for the health-check tests.
static bool Faulty() { return std::getenv("FAKE_NVML_HEALTHY") == nullptr; }
// FAKE_NVML_ECC_FLAG=PATH: once PATH exists, GPU 1 has 3 uncorrectable volatile ECC errors and a row
// remapping pending (an error that appears while something runs). FAKE_NVML_THROTTLE=1: GPU 0's
// clocks are held back by HW thermal slowdown.
static bool EccFlag() {
  const char* p = std::getenv("FAKE_NVML_ECC_FLAG");
  return p && ::access(p, F_OK) == 0;
}
static unsigned Index(nvmlDevice_t d) { return static_cast<unsigned>(reinterpret_cast<unsigned long>(d) - 1); }
static int Copy(char* dst, unsigned len, const char* src) {
  if (std::strlen(src) + 1 > len) return kInvalidArgument;
  std::strcpy(dst, src);
  return kSuccess;
}

nvmlReturn_t nvmlInit_v2() {
  if (std::getenv("FAKE_NVML_HANG")) ::sleep(600);
  if (std::getenv("FAKE_NVML_FAIL_INIT")) return kDriverNotLoaded;
  return kSuccess;
}
nvmlReturn_t nvmlShutdown() { return kSuccess; }
const char* nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case kDriverNotLoaded:
      return "Driver Not Loaded";
    case kNotSupported:
      return "Not Supported";
    case kInvalidArgument:
      return "Invalid Argument";
    default:
      return "Unknown Error";
  }
}
nvmlReturn_t nvmlSystemGetDriverVersion(char* v, unsigned len) {
  const char* d = std::getenv("FAKE_NVML_DRIVER");
  // FAKE_NVML_DRIVER_ON=NODE=VERSION: one Slurm node (SLURMD_NODENAME) reports another driver (drift tests).
  const char* on = std::getenv("FAKE_NVML_DRIVER_ON");
  const char* node = std::getenv("SLURMD_NODENAME");
  static std::string odd;
  if (on && node) {
    std::string spec(on);
    size_t eq = spec.find('=');
    if (eq != std::string::npos && spec.substr(0, eq) == node) {
      odd = spec.substr(eq + 1);
      d = odd.c_str();
    }
  }
  return Copy(v, len, d ? d : "580.95.05");
}
nvmlReturn_t nvmlSystemGetNVMLVersion(char* v, unsigned len) { return Copy(v, len, "13.580.95.05"); }
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* v) {
  *v = 13000;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned* n) {
  *n = kGpus;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  if (i >= kGpus) return kInvalidArgument;
  *d = reinterpret_cast<nvmlDevice_t>(static_cast<unsigned long>(i) + 1);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t, char* n, unsigned len) { return Copy(n, len, "NVIDIA H100 80GB HBM3"); }
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char* u, unsigned len) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "GPU-fa4e0000-0000-4000-8000-00000000000%u", Index(d));
  return Copy(u, len, buf);
}
nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char* s, unsigned len) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "165012345678%u", Index(d));
  return Copy(s, len, buf);
}
nvmlReturn_t nvmlDeviceGetVbiosVersion(nvmlDevice_t, char* v, unsigned len) { return Copy(v, len, "96.00.99.00.01"); }
nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof *p);
  p->bus = kBus[Index(d)];
  p->pciDeviceId = 0x233010DE;
  p->pciSubSystemId = 0x16C110DE;
  std::snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
  std::snprintf(p->busIdLegacy, sizeof p->busIdLegacy, "0000:%02X:00.0", p->bus);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t* m) {
  m->total = 85520809984ULL;
  m->used = 1ULL << 20;
  m->free = m->total - m->used;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t, int* major, int* minor) {
  *major = 9;
  *minor = 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t, unsigned* g) {
  *g = 5;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t, unsigned* g) {
  *g = 5;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned* w) {
  *w = Faulty() && Index(d) == 5 ? 8 : 16;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t, unsigned* w) {
  *w = 16;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t, unsigned* m) {
  *m = 1;
  return kSuccess;
}
// FAKE_NVML_VIRT: the virtualization mode (0 none, 1 pass-through, 2 vGPU).
nvmlReturn_t nvmlDeviceGetVirtualizationMode(nvmlDevice_t, unsigned* m) {
  const char* v = std::getenv("FAKE_NVML_VIRT");
  *m = v ? static_cast<unsigned>(std::atoi(v)) : 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t, unsigned* cur, unsigned* pend) {
  *cur = 1;
  *pend = 1;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int error_type, int counter_type, unsigned long long* n) {
  *n = (Faulty() && Index(d) == 3 && error_type == 1) ? (counter_type == 0 ? 4 : 9) : 0;
  if (EccFlag() && Index(d) == 1 && error_type == 1 && counter_type == 0) *n = 3;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned* corr, unsigned* unc, unsigned* pending,
                                       unsigned* failure) {
  *corr = 0;
  *unc = 0;
  *pending = EccFlag() && Index(d) == 1 ? 1 : 0;
  *failure = 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned* count, unsigned long long*) {
  *count = (Faulty() && Index(d) == 6 && cause == 1) ? 2 : 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, unsigned* pending) {
  *pending = Faulty() && Index(d) == 6 ? 1 : 0;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t, unsigned* mw) {
  *mw = 71250;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t, unsigned* mw) {
  *mw = 700000;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int, unsigned* t) {
  *t = 30 + Index(d);
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t, int type, unsigned* c) {
  *c = type == 2 ? 2619 : 345;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t, int type, unsigned* c) {
  *c = type == 2 ? 2619 : 1980;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t, nvmlUtilization_t* u) {
  u->gpu = 0;
  u->memory = 0;
  return kSuccess;
}
// 18 NVLinks per GPU; link 7 of GPU 2 is down.
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned link, unsigned* active) {
  if (link >= 18) return kInvalidArgument;
  *active = (Faulty() && Index(d) == 2 && link == 7) ? 0 : 1;
  return kSuccess;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long* r) {
  *r = std::getenv("FAKE_NVML_THROTTLE") && Index(d) == 0 ? 0x41 : 0x1;
  return kSuccess;
}
// nvmlDeviceGetSerial may be unsupported on some boards; the real library then returns 3.
}
