// isolation: kernel currency and distro kernel fixes.
#include <algorithm>

#include <fmt/format.h>

#include "checks/common.h"
#include "util/strings.h"
#include "util/version.h"

namespace clustermax::checks {
namespace {

using core::CheckInfo;
using core::Evidence;

std::string Flavour(const std::string& release) {
  // "6.8.0-124-generic" -> "generic"; "6.1.0-31-cloud-amd64" -> "cloud-amd64"
  size_t d1 = release.find('-');
  size_t d2 = d1 == std::string::npos ? std::string::npos : release.find('-', d1 + 1);
  return d2 == std::string::npos ? "" : release.substr(d2 + 1);
}

Finding GuestKernelCurrent(const JudgeContext& ctx) {
  const Evidence& e = ctx.Get("kernel.packages");
  if (auto p = core::EvidenceProblem(e, "kernel package inventory")) return *p;
  if (!e.data["running"].is_string()) return core::Warn(Reason::kEvidenceError, "running kernel release unreadable");
  std::string running = e.data["running"];
  // The collector sets the flag only when it could stat the reboot-required file: absent is unread.
  const json flag = e.data.contains("reboot_required") ? e.data["reboot_required"] : json();
  bool reboot_flag = flag == json(true);
  if (!e.data["installed"].is_array()) {
    std::string why = e.data.value("package_db_error", std::string("package database unreadable"));
    return core::Warn(Reason::kEvidenceError, (reboot_flag ? "reboot-required flag present; " : std::string()) + why)
        .Observed(running);
  }
  std::string flavour = Flavour(running);
  std::string newest = running;
  std::vector<std::string> same_flavour;
  for (const auto& p : e.data["installed"]) {
    std::string rel = p["release"];
    if (Flavour(rel) != flavour) continue;
    same_flavour.push_back(rel);
    // Kernel releases order like Debian versions ("6.8.0-124-generic" < "6.8.0-137-generic").
    if (util::CompareDebianVersions(rel, newest) > 0) newest = rel;
  }
  Finding f;
  if (newest != running) {
    f = core::Fail(Severity::kVersion,
                   fmt::format("a newer kernel {} is installed but {} is running (reboot pending)", newest, running));
  } else if (!flag.is_boolean()) {
    f = core::Warn(Reason::kEvidenceError,
                   "the running kernel is the newest installed, but the reboot-required flag could not be read");
  } else if (reboot_flag) {
    f = core::Warn(Reason::kConfig, "the running kernel is the newest installed, but the reboot-required flag is set");
    for (const auto& pkg : e.data.value("reboot_required_pkgs", json::array()))
      f.Detail("reboot-required by " + pkg.get<std::string>());
  } else if (same_flavour.empty()) {
    f = core::Pass(
        fmt::format("no installed kernel package of flavour '{}' is newer than the running {}", flavour, running));
  } else {
    f = core::Pass(fmt::format("running the newest installed kernel of flavour '{}'", flavour));
  }
  f.observed = running;
  f.expected = "newest installed: " + newest;
  for (const auto& k : same_flavour) f.Detail("installed " + k);
  return f;
}

Finding Fragnesia(const JudgeContext& ctx) {
  const Evidence& os = ctx.Get("os.release");
  const Evidence& kernel = ctx.Get("os.kernel");
  if (auto p = core::EvidenceProblem(os, "/etc/os-release")) return *p;
  std::optional<Finding> problem;
  const core::Component* c = Component(ctx, "ubuntuNoble.linuxFragnesia", problem);
  if (!c) return *problem;
  std::string codename = os.data.value("codename", "");
  if (codename != c->release) {
    return core::Skip(Reason::kNotApplicable,
                      fmt::format("applies to Ubuntu {} only; this is {}", c->release,
                                  os.data.value("pretty_name", std::string("another distribution"))));
  }
  if (auto p = core::EvidenceProblem(kernel, "running kernel release")) return *p;
  std::string rel = kernel.data["release"];
  auto cmp = core::Compare(*c, {.version = rel, .release = codename}, ctx.now(), ctx.minimums().grace_period_days);
  return FromComparison(cmp, "kernel", rel);
}

}  // namespace

void RegisterIsolationChecks(core::Registry& r) {
  r.Add({CheckInfo{
             .id = "guest-kernel-current",
             .category = "isolation",
             .title = "Running kernel is the newest installed (no reboot pending)",
             .rationale = "Kernel security updates do nothing until the node reboots into them.",
             .remediation = "Drain the node and reboot into the newest installed kernel.",
             .criterion = "guest-kernel-current",
             .targets = core::kS | core::kK | core::kSA | core::kV,
             .needs = {"kernel.packages"},
             .reproduce = "uname -r; dpkg-query -W 'linux-image-*'; ls /var/run/reboot-required",
         },
         GuestKernelCurrent});
  r.Add({CheckInfo{
             .id = "ubuntu-kernel-fragnesia-dirty-frag",
             .category = "isolation",
             .title = "Ubuntu 24.04 kernel carries the Fragnesia/Dirty Frag fix (ABI >= 124)",
             .rationale = "CVE-2026-46300 lets a local user escalate to root on unpatched Noble 6.8 kernels.",
             .remediation = "Install linux-image 6.8.0-124 or newer and reboot.",
             .criterion = "ubuntu-kernel-fragnesia-dirty-frag",
             .references = {{"USN-8373-1", "https://ubuntu.com/security/notices/USN-8373-1"},
                            {"CVE-2026-46300", "https://www.cve.org/CVERecord?id=CVE-2026-46300"}},
             .targets = core::kS | core::kK | core::kSA | core::kV,
             .needs = {"os.release", "os.kernel"},
             .reproduce = "uname -r; grep VERSION_CODENAME /etc/os-release",
         },
         Fragnesia});
}

}  // namespace clustermax::checks
