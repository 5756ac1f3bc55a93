#include "checks/register.h"

#include <cstdlib>

#include <fmt/format.h>

#include "checks/common.h"
#include "core/thresholds.h"

namespace clustermax::checks {

void RegisterAll(core::Registry& r) {
  RegisterVersionChecks(r);
  RegisterIsolationChecks(r);
  RegisterHardwareChecks(r);
  RegisterSoftwareChecks(r);
  RegisterContainerChecks(r);
  RegisterHealthChecks(r);
  RegisterAccessChecks(r);
  RegisterGpuChecks(r);
  RegisterNodeChecks(r);
  RegisterFabricChecks(r);
  RegisterServiceChecks(r);
  RegisterSlurmChecks(r);
}

const core::Registry& DefaultRegistry() {
  static const core::Registry registry = [] {
    core::Registry r;
    RegisterAll(r);
    return r;
  }();
  return registry;
}

int CountPciGpus(const core::Evidence& pci, std::string_view vendor) {
  if (!pci.ok()) return 0;
  int n = 0;
  for (const auto& d : pci.data.value("devices", json::array())) {
    if (d.value("gpu", false) && (vendor.empty() || d.value("vendor", "") == vendor)) ++n;
  }
  return n;
}

int CountBlueField(const core::Evidence& pci) {
  if (!pci.ok()) return 0;
  const auto& ids = core::EmbeddedThresholds().data()["bluefield_pci_device_ids"];
  int n = 0;
  for (const auto& d : pci.data["devices"]) {
    if (d["vendor"] == "0x15b3" && std::find(ids.begin(), ids.end(), d["device"]) != ids.end()) ++n;
  }
  return n;
}

std::optional<Finding> SkipUnlessNvidia(const core::Evidence& pci, const core::Evidence& gpu) {
  if (gpu.ok() && gpu.data.value("device_count", 0) > 0) return std::nullopt;
  if (pci.ok() && pci.data.value("complete", false) && CountPciGpus(pci, "0x10de") == 0) {
    return core::Skip(Reason::kNotApplicable, "no NVIDIA GPU in the PCI inventory");
  }
  return std::nullopt;
}

Finding FromComparison(const core::Comparison& c, const std::string& what, const std::string& observed) {
  Finding f;
  switch (c.outcome) {
    case core::Outcome::kPass:
      f = core::Pass(fmt::format("{} {}: {}", what, observed, c.message));
      if (c.grace_active) f.reason = Reason::kGracePeriod;
      break;
    case core::Outcome::kFail:
      f = core::Fail(Severity::kVersion, fmt::format("{} {}: {}", what, observed, c.message));
      break;
    case core::Outcome::kNewerThanCurrent:
      f = core::Warn(Reason::kToolFault, fmt::format("{} {}: {}", what, observed, c.message));
      break;
    case core::Outcome::kNotApplicable:
      f = core::Skip(Reason::kNotApplicable, fmt::format("{} {}: {}", what, observed, c.message));
      break;
    case core::Outcome::kUnknown:
      f = core::Warn(Reason::kUnverified, fmt::format("{} {}: {}", what, observed, c.message));
      break;
  }
  f.observed = observed;
  f.expected = c.floor.empty() ? "" : fmt::format(">= {}{}", c.floor, c.key.empty() || c.key == "*" ? "" : " (" + c.key + ")");
  if (!c.advisory.empty()) f.Detail(fmt::format("advisory {} {}", c.advisory, c.advisory_url));
  for (const auto& cve : c.cves) f.Detail(cve);
  if (c.grace_active) {
    f.Detail(c.grace_unconfirmed ? "grace-period (availability unconfirmed)" : "grace-period until " + c.grace_ends);
  }
  return f;
}

const core::Component* Component(const JudgeContext& ctx, std::string_view id, std::optional<Finding>& problem) {
  const core::Component* c = ctx.minimums().Find(id);
  if (!c) {
    problem = core::Warn(Reason::kToolFault,
                         fmt::format("minimum table ({}) has no component '{}'", ctx.minimums().origin, id));
  }
  return c;
}

bool Running(const core::Evidence& procs, std::string_view prefix) {
  if (!procs.ok()) return false;
  for (const auto& n : procs.data.value("names", json::array())) {
    if (n.is_string() && n.get<std::string>().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string NcclSetting(const core::Evidence& cfg, const char* key) {
  if (!cfg.ok()) return "";
  const json& env = cfg.data.value("env", json::object());
  if (env.contains(key) && env[key].is_string()) return env[key];
  for (const auto& f : cfg.data.value("files", json::array())) {
    if (f.contains("vars") && f["vars"].contains(key) && f["vars"][key].is_string()) return f["vars"][key];
  }
  return "";
}

std::optional<double> PortRateGbps(const json& rate) {
  if (!rate.is_string()) return std::nullopt;
  const std::string& s = rate.get_ref<const std::string&>();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v <= 0) return std::nullopt;
  return v;
}

bool NotInstalled(const core::Evidence& e) { return e.ok() && e.data.contains("installed") && !e.data["installed"].get<bool>(); }

}  // namespace clustermax::checks
