// Parser for `nvidia-smi -q -x` (DTD v8 through v12 element names), producing the same GPU
// snapshot JSON as QueryNvml(). Pure; "N/A" and missing elements become null.
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace clustermax::gpu {

// Returns nullopt (and sets *error) when the text is not an nvidia_smi_log document.
std::optional<nlohmann::json> ParseNvidiaSmiXml(std::string_view xml, std::string* error);

}  // namespace clustermax::gpu
