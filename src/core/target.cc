#include "core/target.h"

#include <algorithm>
#include <array>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/thresholds.h"
#include "util/strings.h"

namespace clustermax::core {
namespace {
struct Names {
  Target t;
  std::string_view name, short_name;
};
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
  for (const auto& n : kTargets)
    if (n.t == t) return n.name;
  return "standalone";
}

std::optional<Target> TargetFromString(std::string_view s) {
  for (const auto& n : kTargets)
    if (n.name == s || n.short_name == s) return n.t;
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

nlohmann::json TargetDetection::ToJson() const {
  return {{"target", ToString(target)}, {"decision", decision}, {"weighed", weighed}};
}

TargetDetection DetectTarget(const EvidenceSet& ev) {
  using nlohmann::json;
  static const Evidence kNone;
  auto get = [&](std::string_view id) -> const Evidence& {
    auto it = ev.find(id);
    return it == ev.end() ? kNone : it->second;
  };
  const Evidence& virt = get("os.virtualization");
  const Evidence& cpu = get("os.cpuinfo");
  const Evidence& pci = get("pci.devices");
  const json& d = virt.data;
  auto str = [&](const char* k) { return d.contains(k) && d[k].is_string() ? d[k].get<std::string>() : std::string(); };
  TargetDetection t;
  auto& w = t.weighed;
  if (!virt.ok()) w.push_back("unread: virtualisation markers (" + std::string(ToString(virt.status)) + ")");
  if (!cpu.ok()) w.push_back("unread: CPU flags (" + std::string(ToString(cpu.status)) + ")");
  if (!pci.ok()) w.push_back("unread: PCI inventory (" + std::string(ToString(pci.status)) + ")");
  if (d.contains("not_taken")) {
    std::vector<std::string> what;
    for (const auto& q : d["not_taken"]) what.push_back(q.is_string() ? q.get<std::string>() : q.dump());
    w.push_back(fmt::format("unread: {} (not taken from an image)", fmt::join(what, ", ")));
  }
  if (!str("slurm_job_id").empty()) {
    t.target = Target::kSlurm;
    t.decision = "SLURM_JOB_ID=" + str("slurm_job_id") + ": inside a Slurm job";
    w.push_back("scheduler: SLURM_JOB_ID=" + str("slurm_job_id"));
    return t;
  }
  if (!str("kubernetes_service_host").empty()) {
    t.target = Target::kK8s;
    t.decision = "KUBERNETES_SERVICE_HOST is set: inside a Kubernetes pod";
    w.push_back("scheduler: KUBERNETES_SERVICE_HOST is set");
    return t;
  }

  // Runtime container markers: facts of the running process tree, which an image cannot carry.
  std::vector<std::string> runtime, files, vm;
  for (const auto& tok : d.value("cgroup_tokens", json::array()))
    runtime.push_back("PID 1's cgroup names " + tok.get<std::string>());
  if (!str("container_env").empty()) runtime.push_back("container=" + str("container_env"));
  bool dockerenv = d.value("dockerenv", json()) == json(true);
  if (std::string c = str("container"); !c.empty() && c != "none") {
    // systemd-detect-virt answers "docker" from /.dockerenv alone: the same image file, no more.
    if (c == "docker" && dockerenv) {
      files.push_back("systemd-detect-virt --container: docker (from /.dockerenv only)");
    } else {
      runtime.push_back("systemd-detect-virt --container: " + c);
    }
  }
  if (d.value("containerenv", json()) == json(true)) runtime.push_back("/run/.containerenv present");
  std::string root_fs = str("root_fstype");
  if (root_fs == "overlay" || root_fs == "fuse-overlayfs" || root_fs == "aufs")
    runtime.push_back("root filesystem is " + root_fs);
  for (const auto& m : d.value("runtime_bind_mounts", json::array()))
    runtime.push_back(m.get<std::string>() + " is a separate mount (a runtime writes it)");
  // Files an image carries, and a PID 1 that is no init system: containers usually, but also
  // micro-VMs with their own init and VM images built from container layers.
  if (dockerenv) files.insert(files.begin(), "/.dockerenv present (a file in the image)");
  std::string pid1 = str("pid1");
  static const std::array<std::string_view, 6> kInits = {"systemd",     "init",  "upstart",
                                                         "openrc-init", "runit", "s6-svscan"};
  bool pid1_init = !pid1.empty() && std::find(kInits.begin(), kInits.end(), pid1) != kInits.end();
  if (!pid1.empty() && !pid1_init) files.push_back("PID 1 is " + pid1 + ", not an init system");
  // VM markers.
  if (cpu.ok() && cpu.data.value("hypervisor", false)) vm.push_back("the CPU has the hypervisor flag");
  if (std::string v = str("vm"); !v.empty() && v != "none") vm.push_back("systemd-detect-virt --vm: " + v);
  const json& names = EmbeddedThresholds().data()["vm_dmi_markers"]["names"];
  for (const char* k : {"dmi_sys_vendor", "dmi_product_name"}) {
    std::string v = str(k);
    for (const auto& n : names) {
      if (!v.empty() && util::ContainsIgnoreCase(v, n.get<std::string>())) {
        vm.push_back(fmt::format("DMI {} is '{}'", std::string_view(k).substr(4), v));
        break;
      }
    }
  }
  if (pci.ok()) {
    int virtio = 0;
    for (const auto& dev : pci.data.value("devices", json::array()))
      virtio += dev.value("vendor", "") == "0x1af4" ? 1 : 0;
    if (virtio > 0)
      vm.push_back(
          fmt::format("{} virtio PCI device(s) of {}", virtio, pci.data.value("devices", json::array()).size()));
  }
  for (const auto& m : runtime) w.push_back("container: " + m);
  for (const auto& m : files) w.push_back("container (weak): " + m);
  for (const auto& m : vm) w.push_back("vm: " + m);
  if (pid1_init) w.push_back("against container: PID 1 is " + pid1 + ", an init system");
  bool mounts_read = d.contains("root_fstype") && !d["root_fstype"].is_null();
  if (mounts_read && runtime.empty())
    w.push_back(fmt::format("against container: root filesystem is {}, no runtime bind mounts", root_fs));
  if (!mounts_read) w.push_back("unread: mounts (/proc/self/mountinfo)");
  if (pid1.empty()) w.push_back("unread: PID 1's name (/proc/1/comm)");

  if (!runtime.empty()) {
    t.target = Target::kContainer;
    t.decision = "container: runtime container marker (" + runtime.front() + ")";
  } else if (!files.empty() && !vm.empty()) {
    t.target = Target::kVm;
    t.decision = fmt::format(
        "vm: {} but no runtime container marker, and VM markers ({}): the image's leftover, not a container",
        files.front(), vm.front());
  } else if (!files.empty() && pid1_init && mounts_read) {
    t.target = Target::kStandalone;
    t.decision = fmt::format(
        "standalone: {} but PID 1 is {} and no runtime container marker: the image's leftover, not a container",
        files.front(), pid1);
  } else if (!files.empty()) {
    t.target = Target::kContainer;
    t.decision = "container: " + files.front() + ", nothing contradicts it";
  } else if (!vm.empty()) {
    t.target = Target::kVm;
    t.decision = "vm: " + vm.front();
  } else {
    t.target = Target::kStandalone;
    t.decision = "standalone: no VM, container or scheduler marker";
  }
  return t;
}

}  // namespace clustermax::core
