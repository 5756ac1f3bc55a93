// health: GPU memory health from NVML (ECC, row remapping, retired pages).
#include <fmt/format.h>

#include "checks/common.h"

namespace clustermax::checks {
namespace {

long long Num(const json& j, const char* key) {
  return j.is_object() && j.value(key, json()).is_number() ? j[key].get<long long>() : 0;
}
bool Flag(const json& j, const char* key) {
  return j.is_object() && j.value(key, json()).is_boolean() && j[key].get<bool>();
}

Finding GpuEccHealth(const JudgeContext& ctx) {
  const core::Evidence& gpu = ctx.Get("gpu.inventory");
  if (auto skip = SkipUnlessNvidia(ctx.Get("pci.devices"), gpu)) return *skip;
  if (auto p = core::EvidenceProblem(gpu, "GPU inventory")) return *p;
  if (gpu.data["devices"].empty()) return core::Skip(Reason::kNotApplicable, "no GPU visible");
  std::vector<std::string> fails, warns, lines, unread;
  for (const auto& d : gpu.data["devices"]) {
    std::string who = fmt::format("GPU {} ({})", d.value("index", 0),
                                  d.value("uuid", json()).is_string() ? d["uuid"].get<std::string>() : "?");
    const json& ecc = d.value("ecc", json::object());
    const json& rr = d.value("remapped_rows", json());
    const json& rp = d.value("retired_pages", json());
    // A counter that was not read (N/A, a layout we do not parse, a guest without ECC) is unknown,
    // never zero.
    bool ecc_off = ecc.value("current", json()).is_boolean() && !ecc["current"].get<bool>();
    if (!ecc_off && !ecc.value("volatile_uncorrected", json()).is_number())
      unread.push_back(who + ": uncorrectable ECC count not readable");
    if (!ecc.value("current", json()).is_boolean()) unread.push_back(who + ": ECC mode not readable");
    // Row remapping (Ampere and newer) reports both flags; a remap state we did not read is unknown.
    if (rr.is_object() && (!rr.value("pending", json()).is_boolean() || !rr.value("failure", json()).is_boolean())) {
      unread.push_back(who + ": row-remap pending/failure state not readable");
    }
    long long unc = Num(ecc, "volatile_uncorrected");
    long long corr = Num(ecc, "volatile_corrected");
    lines.push_back(
        fmt::format("{}: ECC {}, volatile uncorrected {}, corrected {}, remapped rows {}/{}{}{}, retired pages {}/{}",
                    who, ecc.value("current", json()).dump(), unc, corr, Num(rr, "correctable"),
                    Num(rr, "uncorrectable"), Flag(rr, "pending") ? ", remap pending" : "",
                    Flag(rr, "failure") ? ", REMAP FAILURE" : "", Num(rp, "single_bit"), Num(rp, "double_bit")));
    if (Flag(rr, "failure")) fails.push_back(who + ": row-remap failure");
    if (unc > 0) fails.push_back(fmt::format("{}: {} uncorrectable ECC error(s) since boot", who, unc));
    if (Flag(rr, "pending") || Flag(rp, "pending"))
      warns.push_back(who + ": remap/retirement pending (GPU reset needed)");
    if (ecc.value("current", json()).is_boolean() && !ecc["current"].get<bool>())
      warns.push_back(who + ": ECC disabled");
    if (corr > 20'000'000) warns.push_back(fmt::format("{}: {} correctable errors", who, corr));
    if (Num(rp, "double_bit") > 0)
      warns.push_back(fmt::format("{}: {} page(s) retired for double-bit errors", who, Num(rp, "double_bit")));
  }
  Finding f = !fails.empty()   ? core::Fail(Severity::kConfig, fmt::format("{} GPU memory failure(s), {} warning(s)",
                                                                           fails.size(), warns.size()))
              : !warns.empty() ? core::Warn(Reason::kConfig, fmt::format("{} GPU memory warning(s)", warns.size()))
              : !unread.empty()
                  ? core::Warn(Reason::kUnverified, fmt::format("ECC error counters not readable on {} of {} GPU(s)",
                                                                unread.size(), gpu.data["devices"].size()))
                  : core::Pass(fmt::format("ECC clean on all {} GPU(s)", gpu.data["devices"].size()));
  f.Details(fails).Details(warns).Details(unread);
  f.expected = "ECC on, no uncorrectable errors, no pending or failed remaps";
  return f.Details(lines);
}

}  // namespace

void RegisterHealthChecks(core::Registry& r) {
  r.Add(
      {core::CheckInfo{
           .id = "gpu-ecc-health",
           .category = "health",
           .title = "GPU memory healthy: ECC on, no uncorrectable errors, no pending or failed row remaps",
           .rationale =
               "Uncorrectable ECC errors and remap failures crash jobs and corrupt results; a pending remap needs a GPU reset.",
           .remediation =
               "Drain the node; reset the GPU for pending remaps; RMA on remap failure or recurring uncorrectable errors.",
           .criterion = "xid-monitoring",
           .targets = core::kS | core::kK | core::kSA | core::kV,
           .needs = {"gpu.inventory", "pci.devices"},
           .reproduce = "nvidia-smi -q -d ECC,ROW_REMAPPER,PAGE_RETIREMENT",
       },
       GpuEccHealth});
}

}  // namespace clustermax::checks
