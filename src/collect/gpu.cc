// Collectors for the NVIDIA driver and GPU inventory: NVML first, `nvidia-smi -q -x` when NVML
// cannot be loaded. Both are recorded, so a GPU node's evidence replays anywhere.
#include <fmt/format.h>

#include "collect/collector.h"
#include "collect/parsers.h"
#include "gpu/smi_xml.h"
#include "util/strings.h"

namespace clustermax::collect {
namespace {

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

}  // namespace

void RegisterGpuCollectors(std::vector<Collector>& out) {
  out.push_back({{"nvidia.proc-version", "Loaded NVIDIA kernel module version (/proc/driver/nvidia/version)",
                  {"file:/proc/driver/nvidia/version"}, ""},
                 ProcNvidia});
  out.push_back({{"gpu.inventory", "GPU snapshot through NVML (dlopen), else nvidia-smi -q -x",
                  {"nvml:libnvidia-ml.so.1", "cmd:nvidia-smi -q -x"}, ""},
                 GpuInventory});
}

}  // namespace clustermax::collect
