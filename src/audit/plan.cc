#include "audit/plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "collect/collector.h"

namespace clustermax::audit {

const std::map<std::string, std::vector<std::string>>& Profiles() {
  static const std::map<std::string, std::vector<std::string>> k{
      {"security", {"versions", "isolation"}},
      {"versions", {"versions"}},
      {"isolation", {"isolation"}},
      {"hardware", {"hardware"}},
      {"software", {"software"}},
      {"containers", {"containers"}},
      {"orchestration", {"orchestration"}},
      {"networking", {"networking"}},
      {"storage", {"storage"}},
      {"health", {"health"}},
      {"access", {"access"}},
      {"all", core::Categories()},
  };
  return k;
}

Plan BuildPlan(const core::Registry& registry, const Selection& sel) {
  std::set<std::string> categories;
  std::vector<std::string> profiles = sel.profiles.empty() ? std::vector<std::string>{"all"} : sel.profiles;
  for (const auto& p : profiles) {
    auto it = Profiles().find(p);
    if (it == Profiles().end()) {
      std::vector<std::string> names;
      for (const auto& [n, _] : Profiles()) names.push_back(n);
      throw UsageError(fmt::format("unknown profile '{}' (known: {})", p, fmt::join(names, ", ")));
    }
    categories.insert(it->second.begin(), it->second.end());
  }
  for (const auto& id : sel.checks) {
    if (!registry.Find(id)) throw UsageError(fmt::format("unknown check id '{}' (see: clustermax checks list)", id));
  }
  for (const auto& p : sel.probes) {
    if (!core::FindProbe(p)) throw UsageError(fmt::format("unknown probe '{}'", p));
  }
  Plan plan;
  plan.selection = sel;
  std::set<std::string> collectors, node_collectors, cluster_collectors;
  for (const auto& c : registry.all()) {
    bool selected = sel.checks.empty() ? categories.count(c.info.category) > 0
                                       : std::find(sel.checks.begin(), sel.checks.end(), c.info.id) != sel.checks.end();
    if (!selected) continue;
    PlannedCheck pc{&c, PlanState::kRun};
    if (!core::InMask(c.info.targets, sel.target)) {
      pc.state = PlanState::kNotInScope;
    } else if (c.info.probe_required && !sel.probes.count(c.info.ProbeFor(sel.target))) {
      pc.state = PlanState::kProbeDisabled;
    }
    if (pc.state == PlanState::kRun) {
      // The Kubernetes API view (k8s.*) is asked for on the Kubernetes target only: a row judged on
      // both schedulers reads it there and the scheduler's evidence on Slurm, and a Slurm audit
      // never calls kubectl. A row whose halves measure through different probes runs only this
      // target's.
      const std::string& other = c.info.k8s_probe.empty()           ? std::string()
                                 : sel.target == core::Target::kK8s ? c.info.probe
                                                                    : c.info.k8s_probe;
      std::vector<std::string> needs;
      for (const auto& n : c.info.needs) {
        const auto* from = collect::FindCollector(n);
        if (!other.empty() && from && from->info.probe == other) continue;
        if (sel.target == core::Target::kK8s || !n.starts_with("k8s.")) needs.push_back(n);
      }
      collectors.insert(needs.begin(), needs.end());
      (c.info.cluster ? cluster_collectors : node_collectors).insert(needs.begin(), needs.end());
      collectors.insert(c.info.node_needs.begin(), c.info.node_needs.end());
      node_collectors.insert(c.info.node_needs.begin(), c.info.node_needs.end());
    }
    plan.checks.push_back(pc);
  }
  // Report order: by category (Categories() order), then registration order within a category.
  auto rank = [](const std::string& cat) {
    const auto& cats = core::Categories();
    return std::find(cats.begin(), cats.end(), cat) - cats.begin();
  };
  std::stable_sort(plan.checks.begin(), plan.checks.end(), [&](const PlannedCheck& a, const PlannedCheck& b) {
    return rank(a.check->info.category) < rank(b.check->info.category);
  });
  plan.collectors.assign(collectors.begin(), collectors.end());
  plan.node_collectors.assign(node_collectors.begin(), node_collectors.end());
  plan.cluster_collectors.assign(cluster_collectors.begin(), cluster_collectors.end());
  return plan;
}

nlohmann::json Plan::ToJson() const {
  using nlohmann::json;
  json checks_json = json::array();
  for (const auto& pc : checks) {
    const auto& i = pc.check->info;
    checks_json.push_back({{"id", i.id},
                           {"category", i.category},
                           {"mode", i.Mode()},
                           {"state", pc.state == PlanState::kRun          ? "run"
                                     : pc.state == PlanState::kNotInScope ? "skip: not-in-scope"
                                                                          : "skip: probe-disabled"},
                           {"needs", i.needs}});
  }
  json collectors_json = json::array();
  json probes_json = json::array();
  for (const auto& id : collectors) {
    const auto* c = collect::FindCollector(id);
    json cj = {{"id", id}};
    if (c) {
      cj["sources"] = c->info.sources;
      if (!c->info.probe.empty()) {
        bool enabled = selection.probes.count(c->info.probe) > 0;
        cj["probe"] = c->info.probe;
        cj["runs"] = enabled;
      } else {
        cj["runs"] = true;
      }
    }
    collectors_json.push_back(cj);
  }
  for (const auto& p : core::Probes()) {
    probes_json.push_back({{"name", p.name},
                           {"enabled", selection.probes.count(p.name) > 0},
                           {"side_effects", p.side_effects},
                           {"budget_s", p.budget_s}});
  }
  return {{"target", core::ToString(selection.target)},
          {"profiles", selection.profiles.empty() ? std::vector<std::string>{"all"} : selection.profiles},
          {"checks", checks_json},
          {"collectors", collectors_json},
          {"probes", probes_json}};
}

}  // namespace clustermax::audit
