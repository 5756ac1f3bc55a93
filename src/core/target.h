// Audit targets (what kind of system is being audited) and the target masks checks declare.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clustermax::core {

enum class Target : uint8_t { kStandalone, kVm, kContainer, kSlurm, kK8s };

using TargetMask = uint8_t;
constexpr TargetMask Bit(Target t) { return static_cast<TargetMask>(1u << static_cast<int>(t)); }
constexpr TargetMask kSA = Bit(Target::kStandalone);
constexpr TargetMask kV = Bit(Target::kVm);
constexpr TargetMask kC = Bit(Target::kContainer);
constexpr TargetMask kS = Bit(Target::kSlurm);
constexpr TargetMask kK = Bit(Target::kK8s);
constexpr TargetMask kAllTargets = kSA | kV | kC | kS | kK;

std::string_view ToString(Target t);          // "standalone", "vm", ...
std::string_view ShortName(Target t);         // "SA", "V", "C", "S", "K"
std::optional<Target> TargetFromString(std::string_view s);
std::string MaskToString(TargetMask m);       // "S K SA V C"
inline bool InMask(TargetMask m, Target t) { return (m & Bit(t)) != 0; }

}  // namespace clustermax::core
