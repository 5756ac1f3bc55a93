#include "host/host.h"

#include <array>
#include <utility>

namespace clustermax::host {
namespace {
constexpr std::array<std::pair<IoStatus, std::string_view>, 7> kNames{{
    {IoStatus::kOk, "ok"},
    {IoStatus::kNotFound, "not-found"},
    {IoStatus::kPermissionDenied, "permission-denied"},
    {IoStatus::kTimeout, "timeout"},
    {IoStatus::kError, "error"},
    {IoStatus::kNotRecorded, "not-recorded"},
    {IoStatus::kNotTaken, "not-taken"},
}};
}  // namespace

std::string_view ToString(IoStatus s) {
  for (const auto& [k, v] : kNames)
    if (k == s) return v;
  return "error";
}

IoStatus IoStatusFromString(std::string_view s) {
  for (const auto& [k, v] : kNames)
    if (v == s) return k;
  return IoStatus::kError;
}

std::string SampleKey(const std::string& path, int sample) { return path + "#sample" + std::to_string(sample); }

}  // namespace clustermax::host
