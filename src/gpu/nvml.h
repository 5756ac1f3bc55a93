// NVML, bound at run time with dlopen("libnvidia-ml.so.1"): the binary starts on any Linux node,
// with or without a GPU. QueryNvml() takes one snapshot of the system and every device as JSON
// (the shape documented in docs/evidence-bundle.md, "GPU snapshot"); the same shape comes from
// ParseNvidiaSmiXml() (gpu/smi_xml.h) when NVML is absent, so checks never care which it was.
// A hung driver cannot hang the audit: the query runs on its own thread and is abandoned at the
// deadline (status timeout).
#pragma once
#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

namespace clustermax::gpu {

// How a query ended. The host seam maps it onto its own status (host::LocalHost::QueryNvml), so
// this layer knows nothing of hosts: gpu/ sits below host/ (no include cycle).
enum class NvmlStatus { kOk, kNotFound, kTimeout, kError };

struct NvmlQuery {
  NvmlStatus status = NvmlStatus::kError;
  nlohmann::json data;  // the GPU snapshot (docs/evidence-bundle.md); partial data with kError
  std::string error;
};

// Library name to load; tests point LD_LIBRARY_PATH at a fake one.
inline constexpr const char* kNvmlLibrary = "libnvidia-ml.so.1";

NvmlQuery QueryNvml(std::chrono::milliseconds timeout);

}  // namespace clustermax::gpu
