// Audit targets (what kind of system is being audited) and the target masks checks declare.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/evidence.h"

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

std::string_view ToString(Target t);  // "standalone", "vm", ...
std::optional<Target> TargetFromString(std::string_view s);
std::string MaskToString(TargetMask m);  // "S K SA V C"
inline bool InMask(TargetMask m, Target t) { return (m & Bit(t)) != 0; }

// Target detection: every marker weighed, and the decision by one documented rule
// (docs/ARCHITECTURE.md, "Target detection"). Pure: evidence in ("os.virtualization",
// "os.cpuinfo", "pci.devices"; any of them may be missing), decision out.
//  1. SLURM_JOB_ID, then KUBERNETES_SERVICE_HOST: the scheduler's target.
//  2. A runtime container marker (a container cgroup of PID 1, the `container` variable,
//     systemd-detect-virt --container unless its "docker" rests on /.dockerenv alone,
//     /run/.containerenv, an overlay root, /etc/hostname,
//     /etc/hosts or /etc/resolv.conf bind-mounted): container, whatever runs below it.
//  3. Only image files (/.dockerenv) or a PID 1 that is no init system: a container unless the
//     machine boots itself: VM markers (hypervisor CPU flag, a VM's DMI names, virtio PCI
//     devices, systemd-detect-virt --vm) with no runtime marker, or PID 1 an init system with
//     the mounts read and no runtime marker. Then the file is a leftover of the image.
//  4. VM markers: vm. 5. Otherwise standalone (bare metal).
struct TargetDetection {
  Target target = Target::kStandalone;
  std::string decision;  // the rule that decided, in words
  std::vector<std::string>
      weighed;  // every marker read, "container: ...", "vm: ...", "against container: ...", "unread: ..."
  nlohmann::json ToJson() const;
};
TargetDetection DetectTarget(const EvidenceSet& ev);

}  // namespace clustermax::core
