// access: sudo and user management.
#include <fmt/format.h>

#include "checks/common.h"

namespace clustermax::checks {
namespace {

Finding SudoAvailable(const JudgeContext& ctx) {
  const core::Evidence& e = ctx.Get("access.sudo");
  if (e.status == core::EvidenceStatus::kNotFound) {
    return core::Warn(Reason::kConfig, "sudo is not installed").Observed("absent").Expected("passwordless sudo");
  }
  if (auto p = core::EvidenceProblem(e, "sudo -n true")) return *p;
  int rc = e.data["exit_code"];
  Finding f = rc == 0 ? core::Pass("passwordless sudo is available")
                      : core::Warn(Reason::kConfig, "sudo needs a password or is denied");
  f.observed = rc == 0 ? "granted" : fmt::format("exit {}: {}", rc, e.data.value("stderr", std::string()));
  f.expected = "sudo -n true exits 0";
  return f;
}

Finding UserManagement(const JudgeContext& ctx) {
  const core::Evidence& e = ctx.Get("access.user-management");
  if (auto p = core::EvidenceProblem(e, "user management tools")) return *p;
  bool tools = e.data["useradd"].is_string() && e.data["groupadd"].is_string();
  bool permitted = e.data.value("is_root", json(false)) == json(true) || e.data.value("sudo_all", false) ||
                   e.data.value("sudo_useradd", false);
  std::vector<std::string> missing;
  if (!e.data["useradd"].is_string()) missing.push_back("useradd");
  if (!e.data["groupadd"].is_string()) missing.push_back("groupadd");
  Finding f = tools && permitted ? core::Pass("useradd and groupadd are present and permitted")
              : !tools           ? core::Warn(Reason::kConfig, fmt::format("missing: {}", fmt::join(missing, ", ")))
                       : core::Warn(Reason::kConfig, "useradd/groupadd present but not permitted to this user");
  f.observed = fmt::format("tools {}, {}", tools ? "present" : "missing", permitted ? "permitted" : "not permitted");
  f.expected = "present and permitted";
  return f;
}

}  // namespace

void RegisterAccessChecks(core::Registry& r) {
  r.Add({core::CheckInfo{
             .id = "sudo-available",
             .category = "access",
             .title = "Passwordless sudo for the admin user",
             .rationale = "Cluster admins need root to install drivers, tune sysctls and manage users.",
             .remediation = "Grant the admin user NOPASSWD sudo.",
             .criterion = "sudo-available",
             .targets = core::kS | core::kSA | core::kV,
             .needs = {"access.sudo"},
             .reproduce = "sudo -n true; echo $?",
         },
         SudoAvailable});
  r.Add({core::CheckInfo{
             .id = "user-management",
             .category = "access",
             .title = "User and group management available",
             .rationale = "Teams onboard users themselves; without useradd/groupadd every change is a ticket.",
             .remediation = "Install passwd/shadow-utils and grant sudo for useradd/groupadd (or provide a portal).",
             .criterion = "user-management",
             .targets = core::kS | core::kSA | core::kV,
             .needs = {"access.user-management"},
             .reproduce = "command -v useradd groupadd; sudo -n -l",
         },
         UserManagement});
}

}  // namespace clustermax::checks
