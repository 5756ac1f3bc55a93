// The helpers of checks/common.h, shared by the check files. Pure functions of evidence.
#include "checks/common.h"

#include <cstdlib>

#include <fmt/format.h>

#include "core/thresholds.h"
#include "util/strings.h"

namespace clustermax::checks {

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
  f.expected =
      c.floor.empty() ? "" : fmt::format(">= {}{}", c.floor, c.key.empty() || c.key == "*" ? "" : " (" + c.key + ")");
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

std::vector<std::string> ExporterAttribution(const core::Evidence& cfg, bool slurm) {
  std::vector<std::string> found;
  if (!cfg.ok()) return found;
  const std::string flag = slurm ? "--hpc-job-mapping-dir" : "--kubernetes";
  const std::string env_key = slurm ? "DCGM_HPC_JOB_MAPPING_DIR" : "DCGM_EXPORTER_KUBERNETES";
  for (const auto& p : cfg.data.value("processes", json::array())) {
    std::vector<std::string> argv = p.value("argv", std::vector<std::string>{});
    for (size_t i = 0; i < argv.size(); ++i) {
      const std::string& a = argv[i];
      if (a.rfind(flag, 0) == 0 || (!slurm && a == "-k")) {
        std::string value = a.find('=') != std::string::npos ? a.substr(a.find('=') + 1)
                            : slurm && i + 1 < argv.size()   ? argv[i + 1]
                                                             : "";
        found.push_back(value.empty() ? flag : flag + " " + value);
      }
    }
    const json& env = p.value("env", json::object());
    if (env.contains(env_key) && env[env_key].is_string()) {
      std::string v = env[env_key];
      if (slurm ? !v.empty() : (v == "true" || v == "1")) found.push_back(env_key + "=" + v);
    }
  }
  for (const auto& u : cfg.data.value("units", json::array())) {
    for (const auto& l : u.value("lines", json::array())) {
      std::string line = l.is_string() ? l.get<std::string>() : "";
      if (util::Contains(line, flag) || util::Contains(line, env_key))
        found.push_back(u.value("path", "") + ": " + util::Ellipsize(line, 160));
    }
  }
  return found;
}

std::set<std::string> MonitoringAgents(const core::Evidence& procs, const core::Evidence& listeners) {
  // comm names are cut at 15 characters: "prometheus-slur" is prometheus-slurm-exporter.
  static const std::vector<std::pair<const char*, const char*>> by_name = {{"dcgm-exporter", "gpu exporter"},
                                                                           {"device-metrics-", "gpu exporter"},
                                                                           {"node_exporter", "node exporter"},
                                                                           {"node-exporter", "node exporter"},
                                                                           {"promtail", "log shipper"},
                                                                           {"fluent-bit", "log shipper"},
                                                                           {"fluentd", "log shipper"},
                                                                           {"filebeat", "log shipper"},
                                                                           {"vector", "log shipper"},
                                                                           {"alloy", "log shipper"},
                                                                           {"grafana-agent", "log shipper"},
                                                                           {"otelcol", "log shipper"},
                                                                           {"prometheus-slur", "slurm exporter"},
                                                                           {"slurm_exporter", "slurm exporter"},
                                                                           {"slurm-exporter", "slurm exporter"},
                                                                           {"prometheus", "prometheus"},
                                                                           {"vmagent", "prometheus"},
                                                                           {"victoria-metric", "prometheus"},
                                                                           {"grafana", "grafana"},
                                                                           {"alertmanager", "alertmanager"},
                                                                           {"vmalert", "alertmanager"},
                                                                           {"loki", "log store"},
                                                                           {"elasticsearch", "log store"},
                                                                           {"opensearch", "log store"}};
  static const std::vector<std::pair<int, const char*>> by_port = {{9400, "gpu exporter"}, {9100, "node exporter"},
                                                                   {9090, "prometheus"},   {3000, "grafana"},
                                                                   {9093, "alertmanager"}, {3100, "log store"}};
  std::set<std::string> out;
  if (procs.ok()) {
    for (const auto& n : procs.data.value("names", json::array())) {
      if (!n.is_string()) continue;
      const std::string& name = n.get_ref<const std::string&>();
      for (const auto& [prefix, agent] : by_name) {
        // "prometheus" must not swallow "prometheus-slur": the longer names come first in the table.
        if (name.rfind(prefix, 0) == 0) {
          out.insert(agent);
          break;
        }
      }
    }
  }
  if (listeners.ok()) {
    for (const auto& l : listeners.data.value("listen", json::array())) {
      int port = l.value("port", 0);
      for (const auto& [p, agent] : by_port) {
        if (port == p) out.insert(agent);
      }
    }
  }
  return out;
}

Finding ReadinessScore(const std::vector<ReadinessPart>& parts, const std::string& expected) {
  int score = 0, unread = 0;
  std::vector<std::string> lines, absent;
  for (const auto& p : parts) {
    score += p.ok;
    unread += !p.ok && p.unread;
    lines.push_back(fmt::format("[{}] {}: {}", p.ok ? "x" : p.unread ? "?" : " ", p.name, p.where));
    if (!p.ok) absent.push_back(p.name);
  }
  auto band = [](int s) { return s >= 8 ? 2 : s >= 5 ? 1 : 0; };
  std::string summary = fmt::format("monitoring readiness {}/{}", score, parts.size());
  std::string missing = util::Ellipsize(fmt::format("{}", fmt::join(absent, "; ")), 240);
  Finding f = band(score) != band(score + unread)
                  ? core::Warn(core::Reason::kUnverified, fmt::format("{} with {} part(s) unread: between {} and {}",
                                                                      summary, unread, score, score + unread))
              : score >= 8 ? core::Pass(summary + " (production)")
              : score >= 5
                  ? core::Warn(core::Reason::kConfig, fmt::format("{} (partial): missing {}", summary, missing))
                  : core::Fail(core::Severity::kMissing, fmt::format("{} (minimal): missing {}", summary, missing));
  return f.Observed(summary).Expected(expected).Details(lines);
}

std::optional<double> PortRateGbps(const json& rate) {
  if (!rate.is_string()) return std::nullopt;
  const std::string& s = rate.get_ref<const std::string&>();
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || v <= 0) return std::nullopt;
  return v;
}

std::vector<RdmaPortClass> ClassifyRdmaPorts(const json& data) {
  const json& fabric = core::EmbeddedThresholds().data()["fabric"];
  double min_gbps = fabric.value("fabric_min_gbps", 100.0);
  std::set<std::string> vf_ids;  // Mellanox SR-IOV VF device ids (pci.ids)
  for (const auto& id : fabric.value("mellanox_vf_device_ids", json::array()))
    vf_ids.insert(util::ToLower(id.get<std::string>()));
  auto str = [](const json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  std::vector<RdmaPortClass> out;
  if (!data.is_object() || !data.contains("devices") || !data["devices"].is_array()) return out;
  for (const auto& d : data["devices"]) {
    std::string dev = str(d, "name");
    bool efa = str(d, "vendor") == "0x1d0f";
    std::string physfn =
        str(d, "sriov_physfn");  // the PF's PCI address when this function is a VF of a PF on this node
    bool vf_id = !efa && vf_ids.count(util::ToLower(str(d, "device_id"))) > 0;
    if (!d.is_object() || !d.contains("ports") || !d["ports"].is_array()) continue;
    for (const auto& p : d["ports"]) {  // by reference: c.port points into the evidence
      RdmaPortClass c;
      c.name = dev + "/" + str(p, "port");
      c.port = &p;
      c.state = str(p, "state");
      c.gbps = PortRateGbps(p.value("rate", json()));
      std::string layer = str(p, "link_layer");
      c.kind = efa                     ? "EFA"
               : layer == "InfiniBand" ? "InfiniBand"
               : layer == "Ethernet"   ? "RoCE"
               : layer.empty()         ? "?"
                                       : layer;
      std::string bond = str(p, "bond_master");
      auto no = [&](const char* why, std::string because) {
        c.why_not = why;
        c.because = std::move(because);
      };
      std::string rate = c.gbps ? fmt::format("{:g} Gb/s", *c.gbps) : "an unread rate";
      if (efa) {
        c.rail = true;
      } else if (dev.find("_bond") != std::string::npos || !bond.empty()) {
        no("bond", fmt::format("RDMA device over a bond ({}): a bonded frontend or storage link, not a per-GPU rail",
                               bond.empty() ? dev : bond));
      } else if (!physfn.empty()) {
        no("SR-IOV VF", fmt::format("SR-IOV virtual function of {} (its physical function is counted)", physfn));
      } else if (vf_id && c.kind != "InfiniBand") {
        no("SR-IOV VF",
           fmt::format("{} SR-IOV virtual function (device {}): a guest's accelerated networking, not a rail",
                       layer.empty() ? "non-InfiniBand" : layer, str(d, "device_id")));
      } else if (c.kind == "InfiniBand") {
        c.rail = true;  // any rate: a down port reports a placeholder rate and is still a rail
      } else if (c.kind == "RoCE" && (!c.gbps || *c.gbps >= min_gbps)) {
        c.rail = true;  // an unread rate is unknown: judged as a rail (its 0 Gb/s shows), never hidden
      } else if (c.kind == "RoCE") {
        no("slow Ethernet",
           fmt::format("Ethernet at {}, below the {:g} Gb/s rail speed (frontend or storage)", rate, min_gbps));
      } else {
        no("no fabric link layer",
           fmt::format("link layer {}: neither InfiniBand nor Ethernet", layer.empty() ? "unread" : layer));
      }
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::vector<std::string> NotRailLines(const std::vector<RdmaPortClass>& ports) {
  std::vector<std::string> out;
  for (const auto& p : ports) {
    if (!p.rail) out.push_back(fmt::format("not counted as a rail: {} because {}", p.name, p.because));
  }
  return out;
}

bool NotInstalled(const core::Evidence& e) {
  return e.ok() && e.data.contains("installed") && !e.data["installed"].get<bool>();
}

}  // namespace clustermax::checks
