#include "gpu/nvml.h"

#include <dlfcn.h>

#include <future>
#include <memory>
#include <thread>

#include <fmt/format.h>

namespace clustermax::gpu {
namespace {

using nlohmann::json;

// The few NVML declarations we use (this machine has no nvml.h). Layouts follow nvml.h.
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t kSuccess = 0;
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

class Nvml {
 public:
  ~Nvml() {
    if (shutdown_) shutdown_();
  }
  bool Load(std::string& error) {
    handle_ = ::dlopen(kNvmlLibrary, RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      const char* e = ::dlerror();
      error = e ? e : "dlopen failed";
      return false;
    }
    auto init = Sym<nvmlReturn_t (*)()>("nvmlInit_v2");
    if (!init) init = Sym<nvmlReturn_t (*)()>("nvmlInit");
    error_string_ = Sym<const char* (*)(nvmlReturn_t)>("nvmlErrorString");
    if (!init) {
      error = "libnvidia-ml has no nvmlInit";
      return false;
    }
    nvmlReturn_t rc = init();
    if (rc != kSuccess) {
      error = fmt::format("nvmlInit failed: {}", Err(rc));
      return false;
    }
    shutdown_ = Sym<nvmlReturn_t (*)()>("nvmlShutdown");
    return true;
  }

  template <typename F>
  F Sym(const char* name) {
    return reinterpret_cast<F>(::dlsym(handle_, name));
  }

  std::string Err(nvmlReturn_t rc) const {
    if (error_string_) {
      const char* s = error_string_(rc);
      if (s) return s;
    }
    return fmt::format("NVML error {}", rc);
  }

 private:
  void* handle_ = nullptr;  // never dlclose'd: NVML may keep threads alive
  const char* (*error_string_)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*shutdown_)() = nullptr;
};

// Calls an NVML getter; on success stores the value, otherwise null plus an error line.
struct Snapshot {
  Nvml& nvml;
  json errors = json::array();

  template <typename Fn, typename... Args>
  bool Call(const char* name, std::string_view what, Fn* fn, Args... args) {
    if (!fn) {
      errors.push_back(fmt::format("{}: {} not exported", what, name));
      return false;
    }
    nvmlReturn_t rc = fn(args...);
    if (rc != kSuccess) {
      errors.push_back(fmt::format("{}: {}: {}", what, name, nvml.Err(rc)));
      return false;
    }
    return true;
  }
};

json QueryDevice(Nvml& nvml, Snapshot& s, unsigned index, nvmlDevice_t dev) {
  std::string who = fmt::format("gpu {}", index);
  json d;
  d["index"] = index;
  char buf[256];
  auto str = [&](const char* sym, const char* key) {
    auto fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned)>(sym);
    buf[0] = 0;
    d[key] = s.Call(sym, who, fn, dev, buf, static_cast<unsigned>(sizeof buf)) ? json(std::string(buf)) : json(nullptr);
  };
  str("nvmlDeviceGetName", "name");
  str("nvmlDeviceGetUUID", "uuid");
  str("nvmlDeviceGetSerial", "serial");
  str("nvmlDeviceGetVbiosVersion", "vbios");

  nvmlPciInfo_t pci{};
  auto pci_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, nvmlPciInfo_t*)>("nvmlDeviceGetPciInfo_v3");
  if (s.Call("nvmlDeviceGetPciInfo_v3", who, pci_fn, dev, &pci)) {
    d["pci_bus_id"] = std::string(pci.busId);
    d["pci_device_id"] = fmt::format("0x{:08X}", pci.pciDeviceId);
  } else {
    d["pci_bus_id"] = nullptr;
    d["pci_device_id"] = nullptr;
  }

  nvmlMemory_t mem{};
  auto mem_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, nvmlMemory_t*)>("nvmlDeviceGetMemoryInfo");
  d["memory_total_mib"] =
      s.Call("nvmlDeviceGetMemoryInfo", who, mem_fn, dev, &mem) ? json(mem.total >> 20) : json(nullptr);

  int major = 0, minor = 0;
  auto cc_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, int*, int*)>("nvmlDeviceGetCudaComputeCapability");
  d["compute_capability"] = s.Call("nvmlDeviceGetCudaComputeCapability", who, cc_fn, dev, &major, &minor)
                                ? json(fmt::format("{}.{}", major, minor))
                                : json(nullptr);

  auto uint_get = [&](const char* sym) -> json {
    unsigned v = 0;
    auto fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>(sym);
    return s.Call(sym, who, fn, dev, &v) ? json(v) : json(nullptr);
  };
  d["pcie"] = {{"gen_current", uint_get("nvmlDeviceGetCurrPcieLinkGeneration")},
               {"gen_max", uint_get("nvmlDeviceGetMaxPcieLinkGeneration")},
               {"width_current", uint_get("nvmlDeviceGetCurrPcieLinkWidth")},
               {"width_max", uint_get("nvmlDeviceGetMaxPcieLinkWidth")}};

  // A guest's GPUs (pass-through, vGPU) say so; the node-level SKU facts do not apply to a guest.
  {
    unsigned mode = 0;
    auto fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned*)>("nvmlDeviceGetVirtualizationMode");
    static constexpr const char* kModes[] = {"None", "Pass-Through", "VGPU", "Host VGPU", "Host VSGA"};
    d["virtualization_mode"] = s.Call("nvmlDeviceGetVirtualizationMode", who, fn, dev, &mode)
                                   ? json(mode < 5 ? std::string(kModes[mode]) : fmt::format("unknown ({})", mode))
                                   : json(nullptr);
  }

  json pm = uint_get("nvmlDeviceGetPersistenceMode");
  d["persistence_mode"] = pm.is_null() ? json(nullptr) : json(pm.get<unsigned>() != 0);

  unsigned cur = 0, pend = 0;
  auto ecc_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned*, unsigned*)>("nvmlDeviceGetEccMode");
  json ecc;
  if (s.Call("nvmlDeviceGetEccMode", who, ecc_fn, dev, &cur, &pend)) {
    ecc["current"] = cur != 0;
    ecc["pending"] = pend != 0;
  } else {
    ecc["current"] = nullptr;
    ecc["pending"] = nullptr;
  }
  auto total_fn =
      nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*)>("nvmlDeviceGetTotalEccErrors");
  const std::pair<const char*, std::pair<int, int>> counters[] = {{"volatile_corrected", {0, 0}},
                                                                  {"volatile_uncorrected", {1, 0}},
                                                                  {"aggregate_corrected", {0, 1}},
                                                                  {"aggregate_uncorrected", {1, 1}}};
  for (const auto& [key, types] : counters) {
    unsigned long long v = 0;
    ecc[key] = s.Call("nvmlDeviceGetTotalEccErrors", who, total_fn, dev, types.first, types.second, &v) ? json(v)
                                                                                                        : json(nullptr);
  }
  d["ecc"] = ecc;

  unsigned corr = 0, unc = 0, pending = 0, failure = 0;
  auto rr_fn =
      nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned*, unsigned*, unsigned*, unsigned*)>("nvmlDeviceGetRemappedRows");
  if (s.Call("nvmlDeviceGetRemappedRows", who, rr_fn, dev, &corr, &unc, &pending, &failure)) {
    d["remapped_rows"] = {
        {"correctable", corr}, {"uncorrectable", unc}, {"pending", pending != 0}, {"failure", failure != 0}};
  } else {
    d["remapped_rows"] = nullptr;
  }

  auto rp_fn =
      nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*, unsigned long long*)>("nvmlDeviceGetRetiredPages");
  unsigned sbe = 0, dbe = 0;
  bool have_sbe =
      s.Call("nvmlDeviceGetRetiredPages", who, rp_fn, dev, 0, &sbe, static_cast<unsigned long long*>(nullptr));
  bool have_dbe =
      s.Call("nvmlDeviceGetRetiredPages", who, rp_fn, dev, 1, &dbe, static_cast<unsigned long long*>(nullptr));
  json rp_pending = uint_get("nvmlDeviceGetRetiredPagesPendingStatus");
  if (have_sbe || have_dbe) {
    d["retired_pages"] = {{"single_bit", have_sbe ? json(sbe) : json(nullptr)},
                          {"double_bit", have_dbe ? json(dbe) : json(nullptr)},
                          {"pending", rp_pending.is_null() ? json(nullptr) : json(rp_pending.get<unsigned>() != 0)}};
  } else {
    d["retired_pages"] = nullptr;
  }

  json power = uint_get("nvmlDeviceGetPowerUsage");
  json limit = uint_get("nvmlDeviceGetEnforcedPowerLimit");
  d["power_draw_w"] = power.is_null() ? json(nullptr) : json(power.get<unsigned>() / 1000.0);
  d["power_limit_w"] = limit.is_null() ? json(nullptr) : json(limit.get<unsigned>() / 1000.0);

  unsigned temp = 0;
  auto temp_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetTemperature");
  d["temperature_c"] = s.Call("nvmlDeviceGetTemperature", who, temp_fn, dev, 0, &temp) ? json(temp) : json(nullptr);

  auto clock_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetClockInfo");
  auto max_clock_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*)>("nvmlDeviceGetMaxClockInfo");
  unsigned sm = 0, memc = 0, sm_max = 0, mem_max = 0;
  d["clocks_mhz"] = {
      {"sm", s.Call("nvmlDeviceGetClockInfo", who, clock_fn, dev, 1, &sm) ? json(sm) : json(nullptr)},
      {"memory", s.Call("nvmlDeviceGetClockInfo", who, clock_fn, dev, 2, &memc) ? json(memc) : json(nullptr)},
      {"sm_max",
       s.Call("nvmlDeviceGetMaxClockInfo", who, max_clock_fn, dev, 1, &sm_max) ? json(sm_max) : json(nullptr)},
      {"memory_max",
       s.Call("nvmlDeviceGetMaxClockInfo", who, max_clock_fn, dev, 2, &mem_max) ? json(mem_max) : json(nullptr)}};

  nvmlUtilization_t util{};
  auto util_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, nvmlUtilization_t*)>("nvmlDeviceGetUtilizationRates");
  d["utilization_gpu_pct"] =
      s.Call("nvmlDeviceGetUtilizationRates", who, util_fn, dev, &util) ? json(util.gpu) : json(nullptr);

  // NVLink: query links until the driver says the index does not exist; a GPU without NVLink
  // answers "not supported" on link 0 and gets null.
  auto link_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned, unsigned*)>("nvmlDeviceGetNvLinkState");
  json links = nullptr;
  if (link_fn) {
    json states = json::array();
    for (unsigned link = 0; link < 18; ++link) {
      unsigned active = 0;
      if (link_fn(dev, link, &active) != kSuccess) break;
      states.push_back(active != 0);
    }
    if (!states.empty()) links = states;
  }
  d["nvlink_active"] = links;

  unsigned long long reasons = 0;
  const char* reasons_sym = "nvmlDeviceGetCurrentClocksEventReasons";
  auto reasons_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*)>(reasons_sym);
  if (!reasons_fn) {
    reasons_sym = "nvmlDeviceGetCurrentClocksThrottleReasons";
    reasons_fn = nvml.Sym<nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*)>(reasons_sym);
  }
  d["clocks_event_reasons"] = s.Call(reasons_sym, who, reasons_fn, dev, &reasons) ? json(reasons) : json(nullptr);
  return d;
}

NvmlQuery QueryNow() {
  NvmlQuery r;
  Nvml nvml;
  std::string error;
  if (!nvml.Load(error)) {
    r.status = error.find("dlopen") != std::string::npos || error.find("cannot open") != std::string::npos ||
                       error.find("No such file") != std::string::npos
                   ? NvmlStatus::kNotFound
                   : NvmlStatus::kError;
    r.error = error;
    return r;
  }
  Snapshot s{nvml};
  json data;
  data["source"] = "nvml";
  char buf[96];
  auto sys_str = [&](const char* sym) -> json {
    auto fn = nvml.Sym<nvmlReturn_t (*)(char*, unsigned)>(sym);
    buf[0] = 0;
    return s.Call(sym, "system", fn, buf, static_cast<unsigned>(sizeof buf)) ? json(std::string(buf)) : json(nullptr);
  };
  data["driver_version"] = sys_str("nvmlSystemGetDriverVersion");
  data["nvml_version"] = sys_str("nvmlSystemGetNVMLVersion");
  int cuda = 0;
  auto cuda_fn = nvml.Sym<nvmlReturn_t (*)(int*)>("nvmlSystemGetCudaDriverVersion_v2");
  if (!cuda_fn) cuda_fn = nvml.Sym<nvmlReturn_t (*)(int*)>("nvmlSystemGetCudaDriverVersion");
  data["cuda_driver_version"] = s.Call("nvmlSystemGetCudaDriverVersion", "system", cuda_fn, &cuda)
                                    ? json(fmt::format("{}.{}", cuda / 1000, (cuda % 1000) / 10))
                                    : json(nullptr);
  unsigned count = 0;
  auto count_fn = nvml.Sym<nvmlReturn_t (*)(unsigned*)>("nvmlDeviceGetCount_v2");
  if (!s.Call("nvmlDeviceGetCount_v2", "system", count_fn, &count)) {
    r.status = NvmlStatus::kError;
    r.error = "nvmlDeviceGetCount failed";
    data["errors"] = s.errors;
    r.data = data;
    return r;
  }
  data["device_count"] = count;
  json devices = json::array();
  auto handle_fn = nvml.Sym<nvmlReturn_t (*)(unsigned, nvmlDevice_t*)>("nvmlDeviceGetHandleByIndex_v2");
  for (unsigned i = 0; i < count; ++i) {
    nvmlDevice_t dev = nullptr;
    if (!s.Call("nvmlDeviceGetHandleByIndex_v2", fmt::format("gpu {}", i), handle_fn, i, &dev)) {
      devices.push_back({{"index", i}, {"handle_error", true}});
      continue;
    }
    devices.push_back(QueryDevice(nvml, s, i, dev));
  }
  data["devices"] = devices;
  data["errors"] = s.errors;
  r.status = NvmlStatus::kOk;
  r.data = data;
  return r;
}

}  // namespace

NvmlQuery QueryNvml(std::chrono::milliseconds timeout) {
  auto task = std::make_shared<std::packaged_task<NvmlQuery()>>(QueryNow);
  auto result = task->get_future();
  std::thread([task] { (*task)(); }).detach();
  if (result.wait_for(timeout) != std::future_status::ready) {
    NvmlQuery r;
    r.status = NvmlStatus::kTimeout;
    r.error = fmt::format("NVML did not answer within {} ms (query abandoned)", timeout.count());
    return r;
  }
  return result.get();
}

}  // namespace clustermax::gpu
