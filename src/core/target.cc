#include "core/target.h"

#include <array>

namespace clustermax::core {
namespace {
struct Names { Target t; std::string_view name, short_name; };
// Display order follows the catalog's column order: S K SA V C.
constexpr std::array<Names, 5> kTargets{{
    {Target::kSlurm, "slurm", "S"},
    {Target::kK8s, "k8s", "K"},
    {Target::kStandalone, "standalone", "SA"},
    {Target::kVm, "vm", "V"},
    {Target::kContainer, "container", "C"},
}};
}  // namespace

std::string_view ToString(Target t) {
  for (const auto& n : kTargets) if (n.t == t) return n.name;
  return "standalone";
}

std::string_view ShortName(Target t) {
  for (const auto& n : kTargets) if (n.t == t) return n.short_name;
  return "SA";
}

std::optional<Target> TargetFromString(std::string_view s) {
  for (const auto& n : kTargets) if (n.name == s || n.short_name == s) return n.t;
  return std::nullopt;
}

std::string MaskToString(TargetMask m) {
  std::string out;
  for (const auto& n : kTargets) {
    if (!InMask(m, n.t)) continue;
    if (!out.empty()) out.push_back(' ');
    out += n.short_name;
  }
  return out;
}

}  // namespace clustermax::core
