// Collectors for the NVIDIA driver and GPU inventory: NVML first, `nvidia-smi -q -x` when NVML
// cannot be loaded. Both are recorded, so a GPU node's evidence replays anywhere.
#include <fmt/format.h>

#include "collect/collector.h"
#include "collect/parsers.h"
#include "gpu/smi_xml.h"
#include "util/strings.h"

namespace clustermax::collect {
namespace {

using collect::BoostSlider;
using core::Evidence;
using core::EvidenceStatus;
using nlohmann::json;

Evidence ProcNvidia(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.sources = {"file:/proc/driver/nvidia/version"};
  auto r = h.ReadFile("/proc/driver/nvidia/version", 65536);
  if (r.status == host::IoStatus::kNotFound) {
    e.status = EvidenceStatus::kOk;
    e.data = {{"loaded", false}};
    return e;
  }
  if (MarkFailed(e, r.status, r.error)) return e;
  auto v = ParseProcNvidiaVersion(r.content);
  if (!v) {
    e.status = EvidenceStatus::kParseError;
    e.error = util::Ellipsize(r.content, 300);
    return e;
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"loaded", true}, {"driver_version", v->driver_version}, {"open_module", v->open_module}};
  return e;
}

Evidence GpuInventory(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.sources.push_back("nvml:libnvidia-ml.so.1");
  auto n = h.QueryNvml(TimeoutFor(o, "gpu.inventory"));
  if (n.status == host::IoStatus::kOk) {
    e.status = EvidenceStatus::kOk;
    e.data = n.data;
    return e;
  }
  std::string nvml_error = fmt::format("NVML {}: {}", ToString(n.status), n.error);
  if (n.status == host::IoStatus::kTimeout) {
    e.status = EvidenceStatus::kTimeout;
    e.error = nvml_error;
    return e;
  }
  // NVML unusable: fall back to nvidia-smi's XML.
  e.sources.push_back("which:nvidia-smi");
  auto w = h.Which("nvidia-smi");
  if (w.status != host::IoStatus::kOk) {
    e.status = n.status == host::IoStatus::kNotFound ? EvidenceStatus::kNotFound : FromIo(n.status);
    e.error = nvml_error + "; nvidia-smi not on PATH";
    return e;
  }
  auto spec = Command({"nvidia-smi", "-q", "-x"}, o, "gpu.inventory");
  e.sources.push_back(Source(spec));
  auto r = h.Run(spec);
  if (r.status != host::IoStatus::kOk) {
    FailFromCommand(e, r);
    e.error = nvml_error + "; nvidia-smi: " + r.error;
    return e;
  }
  std::string perr;
  auto data = gpu::ParseNvidiaSmiXml(r.out, &perr);
  if (!data) {
    e.status = EvidenceStatus::kParseError;
    e.error = fmt::format("{}; nvidia-smi -q -x exit {}: {}; output: {}", nvml_error, r.exit_code, perr,
                          util::Ellipsize(util::Trim(r.out + r.err), 200));
    return e;
  }
  e.status = EvidenceStatus::kOk;
  e.data = *data;
  e.data["nvml_error"] = nvml_error;
  return e;
}

json SliderJson(const std::vector<BoostSlider>& rows) {
  json out = json::array();
  for (const auto& r : rows)
    out.push_back({{"gpu", r.gpu}, {"slider", r.slider}, {"max", r.max_value}, {"current", r.current}});
  return out;
}

// Reads the boost sliders; on success returns the rows, else marks `e` and returns nullopt.
// `supported` is false (and e ok) when nvidia-smi says the GPU has no slider.
std::optional<std::vector<BoostSlider>> ReadSliders(Evidence& e, host::Host& h, const CollectOptions& o,
                                                    const std::string& id, bool* supported) {
  *supported = true;
  auto r = RunFor(e, h, {"nvidia-smi", "boost-slider", "-l"}, o, id);
  if (!r) return std::nullopt;
  std::string text = r->out + r->err;
  auto rows = ParseBoostSliderList(r->out);
  if (r->exit_code == 0 && rows) return rows;
  if (util::ContainsIgnoreCase(text, "not supported") || util::ContainsIgnoreCase(text, "invalid combination") ||
      util::ContainsIgnoreCase(text, "no sliders")) {
    *supported = false;
    e.status = EvidenceStatus::kOk;
    e.data = {{"supported", false}, {"output", util::Ellipsize(util::Trim(text), 300)}};
    return std::nullopt;
  }
  e.status = r->exit_code == 0 ? EvidenceStatus::kParseError : EvidenceStatus::kError;
  e.error = fmt::format("nvidia-smi boost-slider -l exit {}: {}", r->exit_code, util::Ellipsize(util::Trim(text), 300));
  return std::nullopt;
}

// Notes the nvidia-smi lookup in `e`; false (e marked not-found) when it is not on PATH.
bool HaveNvidiaSmi(Evidence& e, host::Host& h) {
  e.sources.push_back("which:nvidia-smi");
  if (h.Which("nvidia-smi").status == host::IoStatus::kOk) return true;
  e.status = EvidenceStatus::kNotFound;
  e.error = "nvidia-smi not on PATH";
  return false;
}

Evidence BoostSliders(host::Host& h, const CollectOptions& o) {
  Evidence e;
  if (!HaveNvidiaSmi(e, h)) return e;
  bool supported = true;
  auto rows = ReadSliders(e, h, o, "gpu.boost-slider", &supported);
  if (!rows) return e;
  e.status = EvidenceStatus::kOk;
  e.data = {{"supported", true}, {"sliders", SliderJson(*rows)}};
  return e;
}

// Probe vboost-set: the reference's change (vboost 2, or the maximum when lower), read back, and
// every GPU's original value put back and read back again.
Evidence VboostSet(host::Host& h, const CollectOptions& o) {
  Evidence e;
  if (!HaveNvidiaSmi(e, h)) return e;
  bool supported = true;
  auto before = ReadSliders(e, h, o, "probe.vboost-set", &supported);
  if (!before) return e;
  std::vector<BoostSlider> vb;
  for (const auto& s : *before) {
    if (s.slider == "vboost") vb.push_back(s);
  }
  e.status = EvidenceStatus::kOk;
  if (vb.empty()) {
    e.data = {{"outcome", "no-slider"}, {"before", SliderJson(*before)}};
    return e;
  }
  int target = std::min(2, vb[0].max_value);
  json steps = json::array();
  auto run = [&](std::vector<std::string> argv) {
    auto r = RunFor(e, h, argv, o, "probe.vboost-set");
    e.status = EvidenceStatus::kOk;  // a refused command is an outcome here, not an evidence failure
    int code = r ? r->exit_code : -1;
    std::string text = r ? util::Ellipsize(util::Trim(r->out + r->err), 200) : e.error;
    steps.push_back({{"command", util::JoinArgv(argv)}, {"exit_code", code}, {"output", text}});
    return code == 0;
  };
  bool set_ok = run({"nvidia-smi", "boost-slider", "--vboost", std::to_string(target)});
  Evidence tmp;
  bool sup2 = true;
  auto after = ReadSliders(tmp, h, o, "probe.vboost-set", &sup2);
  bool restored_all = true;
  for (const auto& s : vb) {
    restored_all &=
        run({"nvidia-smi", "-i", std::to_string(s.gpu), "boost-slider", "--vboost", std::to_string(s.current)});
  }
  Evidence tmp2;
  auto restored = ReadSliders(tmp2, h, o, "probe.vboost-set", &sup2);
  int changed = 0, back = 0;
  for (const auto& s : vb) {
    if (after) {
      for (const auto& a : *after) changed += a.gpu == s.gpu && a.slider == "vboost" && a.current == target;
    }
    if (restored) {
      for (const auto& a : *restored) back += a.gpu == s.gpu && a.slider == "vboost" && a.current == s.current;
    }
  }
  int n = static_cast<int>(vb.size());
  std::string outcome = !set_ok && changed == 0 ? "denied" : changed < n ? "partial" : "accepted";
  if (changed > 0 && (back < n || !restored_all)) outcome = "not-reverted";
  e.data = {{"outcome", outcome},
            {"target", target},
            {"gpus", n},
            {"changed", changed},
            {"restored", back},
            {"before", SliderJson(*before)},
            {"after", after ? SliderJson(*after) : json(nullptr)},
            {"after_restore", restored ? SliderJson(*restored) : json(nullptr)},
            {"steps", steps}};
  return e;
}

}  // namespace

void RegisterGpuCollectors(std::vector<Collector>& out) {
  out.push_back({{"gpu.boost-slider",
                  "GPU boost sliders (vboost): current and allowed values",
                  {"cmd:nvidia-smi boost-slider -l"},
                  ""},
                 BoostSliders});
  out.push_back({{"probe.vboost-set",
                  "Set vboost, read it back, restore every GPU's original value",
                  {"cmd:nvidia-smi boost-slider --vboost N", "cmd:nvidia-smi -i I boost-slider --vboost ORIGINAL"},
                  "vboost-set"},
                 VboostSet});
  out.push_back({{"nvidia.proc-version",
                  "Loaded NVIDIA kernel module version (/proc/driver/nvidia/version)",
                  {"file:/proc/driver/nvidia/version"},
                  ""},
                 ProcNvidia});
  out.push_back({{"gpu.inventory",
                  "GPU snapshot through NVML (dlopen), else nvidia-smi -q -x",
                  {"nvml:libnvidia-ml.so.1", "cmd:nvidia-smi -q -x"},
                  ""},
                 GpuInventory});

  using namespace field;
  const std::vector<core::FieldSpec> slider = {{"gpu", Int, "", "GPU index"},
                                               {"slider", Str, "", "slider name (vboost)"},
                                               {"max", Int, "", "largest allowed value"},
                                               {"current", Int, "", "current value"}};
  auto rows = [&](const std::string& at, bool nullable) {
    std::vector<core::FieldSpec> f = {
        {at, Arr, "", "nvidia-smi boost-slider -l rows" + std::string(nullable ? "; null when the read failed" : ""),
         nullable}};
    for (const auto& x : slider) f.push_back({at + "[]." + x.path, x.type, x.unit, x.meaning});
    return f;
  };
  auto join = [](std::vector<core::FieldSpec> a, const std::vector<core::FieldSpec>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  DeclareFields(out, "gpu.boost-slider",
                join({{"supported", Bool, "", "nvidia-smi reports boost sliders for this GPU"},
                      {"output", Str, "", "nvidia-smi's answer when unsupported"}},
                     rows("sliders", false)));
  DeclareFields(out, "probe.vboost-set",
                join(join(join(join({{"outcome", Str, "", "no-slider, denied, partial, accepted or not-reverted"},
                                     {"target", Int, "", "vboost value set"},
                                     {"gpus", Int, "GPUs", "GPUs with a vboost slider"},
                                     {"changed", Int, "GPUs", "GPUs that read back the target"},
                                     {"restored", Int, "GPUs", "GPUs that read back their original value"},
                                     {"steps[].command", Str, "", "nvidia-smi command run"},
                                     {"steps[].exit_code", Int, "", "its exit status (-1: did not run)"},
                                     {"steps[].output", Str, "", "its output, cut"}},
                                    rows("before", false)),
                               rows("after", true)),
                          rows("after_restore", true)),
                     {}));
  DeclareFields(out, "nvidia.proc-version",
                {{"loaded", Bool, "", "/proc/driver/nvidia/version exists (the module is loaded)"},
                 {"driver_version", Str, "", "loaded kernel module version (580.95.05)"},
                 {"open_module", Bool, "", "the open kernel module (not the proprietary one)"}});
  DeclareFields(
      out, "gpu.inventory",
      {{"source", Str, "", "\"nvml\" or \"nvidia-smi\""},
       {"driver_version", Str, "", "driver version; null when unread", kNull},
       {"nvml_version", Str, "", "NVML version; null from nvidia-smi", kNull},
       {"cuda_driver_version", Any, "", "CUDA version the driver supports; null when unread", kNull},
       {"nvml_error", Str, "", "why NVML was not used (nvidia-smi fallback)"},
       {"errors[]", Str, "", "NVML calls that failed"},
       {"device_count", Int, "GPUs", "GPUs reported"},
       {"devices[].index", Int, "", "GPU index"},
       {"devices[].handle_error", Bool, "", "NVML returned no handle for this index"},
       {"devices[].name", Str, "", "product name", kNull},
       {"devices[].uuid", Str, "", "GPU UUID", kNull},
       {"devices[].serial", Str, "", "board serial", kNull},
       {"devices[].vbios", Str, "", "VBIOS version", kNull},
       {"devices[].pci_bus_id", Str, "", "PCI bus id", kNull},
       {"devices[].pci_device_id", Str, "", "PCI device id \"0x2330\"", kNull},
       {"devices[].memory_total_mib", Num, "MiB", "framebuffer memory", kNull},
       {"devices[].compute_capability", Str, "", "\"9.0\"", kNull},
       {"devices[].pcie.gen_current", Int, "", "current PCIe generation", kNull},
       {"devices[].pcie.gen_max", Int, "", "maximum PCIe generation", kNull},
       {"devices[].pcie.width_current", Int, "lanes", "current link width", kNull},
       {"devices[].pcie.width_max", Int, "lanes", "maximum link width", kNull},
       {"devices[].persistence_mode", Bool, "", "persistence mode on", kNull},
       {"devices[].virtualization_mode", Str, "", "None, Pass-Through, VGPU ...", kNull},
       {"devices[].ecc.current", Bool, "", "ECC enabled", kNull},
       {"devices[].ecc.pending", Bool, "", "ECC enabled after the next reset", kNull},
       {"devices[].ecc.volatile_corrected", Int, "errors", "corrected ECC errors since the driver loaded", kNull},
       {"devices[].ecc.volatile_uncorrected", Int, "errors", "uncorrected ECC errors since the driver loaded", kNull},
       {"devices[].ecc.aggregate_corrected", Int, "errors", "corrected ECC errors over the GPU's life", kNull},
       {"devices[].ecc.aggregate_uncorrected", Int, "errors", "uncorrected ECC errors over the GPU's life", kNull},
       {"devices[].remapped_rows", Obj, "", "row remapping; null when unsupported", kNull},
       {"devices[].remapped_rows.correctable", Int, "rows", "rows remapped for correctable errors", kNull},
       {"devices[].remapped_rows.uncorrectable", Int, "rows", "rows remapped for uncorrectable errors", kNull},
       {"devices[].remapped_rows.pending", Bool, "", "a remap waits for a GPU reset", kNull},
       {"devices[].remapped_rows.failure", Bool, "", "a remap failed", kNull},
       {"devices[].retired_pages", Obj, "", "page retirement (before Ampere); null when unsupported", kNull},
       {"devices[].retired_pages.single_bit", Int, "pages", "pages retired for single-bit errors", kNull},
       {"devices[].retired_pages.double_bit", Int, "pages", "pages retired for double-bit errors", kNull},
       {"devices[].retired_pages.pending", Bool, "", "a retirement waits for a reboot", kNull},
       {"devices[].power_draw_w", Num, "W", "power draw", kNull},
       {"devices[].power_limit_w", Num, "W", "enforced power limit", kNull},
       {"devices[].temperature_c", Num, "degC", "GPU temperature", kNull},
       {"devices[].clocks_mhz.sm", Num, "MHz", "SM clock", kNull},
       {"devices[].clocks_mhz.memory", Num, "MHz", "memory clock", kNull},
       {"devices[].clocks_mhz.sm_max", Num, "MHz", "maximum SM clock", kNull},
       {"devices[].clocks_mhz.memory_max", Num, "MHz", "maximum memory clock", kNull},
       {"devices[].utilization_gpu_pct", Num, "%", "GPU utilisation", kNull},
       {"devices[].clocks_event_reasons", Int, "", "bit mask of clock event (throttle) reasons", kNull},
       {"devices[].nvlink_active", Any, "links", "active NVLink links; null when unknown", kNull}});
}

}  // namespace clustermax::collect
