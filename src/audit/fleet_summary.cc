#include "audit/fleet_summary.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include <fmt/format.h>

#include "checks/common.h"

namespace clustermax::audit {
using nlohmann::json;

namespace {

// The node's evidence item when it was read (ok), else null.
const core::Evidence* Ev(const NodeEvidence& n, const char* id) {
  auto it = n.evidence.find(id);
  return it != n.evidence.end() && it->second.ok() ? &it->second : nullptr;
}

const json* Data(const NodeEvidence& n, const char* id) {
  const core::Evidence* e = Ev(n, id);
  return e ? &e->data : nullptr;
}

std::string Str(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// Sorted unique non-empty strings, joined.
std::string Joined(std::set<std::string> v) {
  v.erase("");
  return fmt::format("{}", fmt::join(v, ", "));
}

using Fact = std::function<std::string(const NodeEvidence&)>;

const std::vector<std::pair<std::string, Fact>>& Facts() {
  static const std::vector<std::pair<std::string, Fact>> k = {
      {"kernel",
       [](const NodeEvidence& n) {
         const json* d = Data(n, "os.kernel");
         return d ? Str(*d, "release") : "";
       }},
      {"os",
       [](const NodeEvidence& n) {
         const json* d = Data(n, "os.release");
         return d ? Str(*d, "pretty_name") : "";
       }},
      {"gpu driver",
       [](const NodeEvidence& n) {
         const json* d = Data(n, "gpu.inventory");
         return d ? Str(*d, "driver_version") : "";
       }},
      {"gpus",
       [](const NodeEvidence& n) -> std::string {
         const json* d = Data(n, "gpu.inventory");
         if (!d || !d->contains("devices") || !(*d)["devices"].is_array()) return "";
         std::map<std::string, int> models;
         for (const auto& g : (*d)["devices"]) ++models[Str(g, "name")];
         std::vector<std::string> parts;
         for (const auto& [m, c] : models) parts.push_back(fmt::format("{} x {}", c, m.empty() ? "?" : m));
         return parts.empty() ? "0" : fmt::format("{}", fmt::join(parts, ", "));
       }},
      {"gpu pcie link",
       [](const NodeEvidence& n) -> std::string {
         const json* d = Data(n, "gpu.inventory");
         if (!d || !d->contains("devices")) return "";
         std::set<std::string> v;
         for (const auto& g : (*d)["devices"]) {
           const json& p = g.value("pcie", json::object());
           if (p.is_object() && p.value("gen_current", json()).is_number() &&
               p.value("width_current", json()).is_number()) {
             v.insert(fmt::format("gen{} x{}", p["gen_current"].get<int>(), p["width_current"].get<int>()));
           }
         }
         return Joined(v);
       }},
      {"gpu ecc",
       [](const NodeEvidence& n) -> std::string {
         const json* d = Data(n, "gpu.inventory");
         if (!d || !d->contains("devices")) return "";
         std::set<std::string> v;
         for (const auto& g : (*d)["devices"]) {
           const json& e = g.value("ecc", json::object());
           if (e.is_object() && e.value("current", json()).is_boolean())
             v.insert(e["current"].get<bool>() ? "on" : "off");
         }
         return Joined(v);
       }},
      {"cuda toolkit",
       [](const NodeEvidence& n) -> std::string {
         const json* d = Data(n, "cuda.toolkits");
         if (!d || !d->contains("toolkits")) return "";
         std::set<std::string> v;
         for (const auto& t : (*d)["toolkits"]) v.insert(Str(t, "version"));
         return Joined(v);
       }},
      {"nccl",
       [](const NodeEvidence& n) -> std::string {
         const json* d = Data(n, "nccl.libraries");
         if (!d) return "";
         std::set<std::string> v;
         for (const auto& t : d->value("versions", json::array())) v.insert(Str(t, "version"));
         if (v.empty() && d->value("header", json()).is_object()) v.insert(Str((*d)["header"], "version"));
         return Joined(v);
       }},
      {"nic firmware",
       [](const NodeEvidence& n) -> std::string {
         const json* d = Data(n, "rdma.devices");
         if (!d || !d->contains("devices")) return "";
         std::set<std::string> v;
         for (const auto& t : (*d)["devices"]) v.insert(Str(t, "fw_ver"));
         return Joined(v);
       }},
      {"rdma ports",
       [](const NodeEvidence& n) -> std::string {
         // "8 x InfiniBand 400 Gb/s, 1 x RoCE 10 Gb/s not a rail (bond)": a node with a missing or slow port stands
         // out.
         const json* d = Data(n, "rdma.devices");
         if (!d) return "";
         std::map<std::string, int> kinds;
         for (const auto& p : checks::ClassifyRdmaPorts(*d)) {
           ++kinds[fmt::format("{} {}{}", p.kind, p.gbps ? fmt::format("{:g} Gb/s", *p.gbps) : "rate ?",
                               p.rail ? "" : " not a rail (" + p.why_not + ")")];
         }
         std::vector<std::string> parts;
         for (const auto& [k, c] : kinds) parts.push_back(fmt::format("{} x {}", c, k));
         return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
       }},
      {"fabric rails",
       [](const NodeEvidence& n) -> std::string {
         // The number of rails (checks::ClassifyRdmaPorts); bonds, VFs and slow Ethernet do not count.
         const json* d = Data(n, "rdma.devices");
         if (!d) return "";
         int rails = 0;
         for (const auto& p : checks::ClassifyRdmaPorts(*d)) rails += p.rail;
         return std::to_string(rails);
       }},
      {"nccl ib qps",
       [](const NodeEvidence& n) -> std::string {
         const core::Evidence* cfg = Ev(n, "nccl.config");
         if (!cfg) return "";
         std::string v = checks::NcclSetting(*cfg, "NCCL_IB_QPS_PER_CONNECTION");
         return v.empty() ? "unset" : v;
       }},
      {"nvidia-imex",
       [](const NodeEvidence& n) -> std::string {
         const core::Evidence* procs = Ev(n, "os.processes");
         if (!procs) return "";
         return checks::Running(*procs, "nvidia-imex") ? "running" : "not running";
       }},
      {"monitoring agents",
       [](const NodeEvidence& n) -> std::string {
         const core::Evidence *procs = Ev(n, "os.processes"), *net = Ev(n, "net.listeners"),
                              *cfg = Ev(n, "gpu-exporter.config");
         if (!procs && !net) return "";
         static const core::Evidence kUnread;  // not ok: MonitoringAgents skips it
         std::set<std::string> agents = checks::MonitoringAgents(procs ? *procs : kUnread, net ? *net : kUnread);
         if (cfg && !checks::ExporterAttribution(*cfg, true).empty()) agents.insert("gpu job labels");
         return agents.empty() ? "none" : Joined(agents);
       }},
      {"ssh to next node",
       [](const NodeEvidence& n) -> std::string {
         const json* d = Data(n, "ssh.peer");
         if (!d || !d->contains("peer") || !(*d)["peer"].is_string()) return "";
         int code = d->value("exit_code", -1);
         return code == 0 ? "ok" : fmt::format("fails (exit {})", code);
       }},
      {"container toolkit",
       [](const NodeEvidence& n) {
         const json* d = Data(n, "container-toolkit.version");
         return d ? Str(*d, "version") : "";
       }},
      {"runc",
       [](const NodeEvidence& n) {
         const json* d = Data(n, "runc.version");
         return d ? Str(*d, "version") : "";
       }},
      {"dcgm",
       [](const NodeEvidence& n) {
         const json* d = Data(n, "dcgm.version");
         return d ? Str(*d, "version") : "";
       }},
      {"enroot",
       [](const NodeEvidence& n) {
         const json* d = Data(n, "enroot.version");
         return d ? Str(*d, "version") : "";
       }},
      {"mpi",
       [](const NodeEvidence& n) -> std::string {
         const json* d = Data(n, "mpi.hpcx");
         if (!d) return "";
         std::set<std::string> v;
         for (const auto& x : d->value("hpcx_in_opt", json::array())) {
           if (x.is_string()) v.insert("hpcx " + x.get<std::string>());
         }
         if (v.empty() && d->value("mpirun", false)) v.insert("mpirun");
         return v.empty() ? "none" : Joined(v);
       }},
  };
  return k;
}

}  // namespace

NodeFacts FactsOf(const NodeEvidence& n) {
  NodeFacts f;
  f.node = n.node;
  f.partial = n.manifest.partial;
  f.values.reserve(Facts().size());
  for (const auto& [name, fn] : Facts()) f.values.push_back(fn(n));
  return f;
}

core::Evidence FleetSummary(const std::vector<const NodeEvidence*>& nodes,
                            const std::vector<UnreachableNode>& unreachable, const NodeEvidence* login) {
  std::vector<NodeFacts> facts;
  facts.reserve(nodes.size());
  for (const auto* n : nodes) facts.push_back(FactsOf(*n));
  std::vector<const NodeFacts*> ptrs;
  for (const auto& f : facts) ptrs.push_back(&f);
  NodeFacts login_facts;
  if (login) login_facts = FactsOf(*login);
  return FleetSummary(ptrs, unreachable, login ? &login_facts : nullptr);
}

core::Evidence FleetSummary(const std::vector<const NodeFacts*>& nodes, const std::vector<UnreachableNode>& unreachable,
                            const NodeFacts* login) {
  core::Evidence e;
  e.status = core::EvidenceStatus::kOk;
  json per_node = json::array();
  std::map<std::string, std::map<std::string, std::vector<std::string>>> groups;  // fact -> value -> nodes
  std::map<std::string, std::vector<std::string>> unknown;                        // fact -> nodes
  for (const auto* n : nodes) {
    json facts = json::object();
    size_t k = 0;
    for (const auto& [name, fn] : Facts()) {
      const std::string& v = n->values[k++];
      facts[name] = v.empty() ? json(nullptr) : json(v);
      if (v.empty())
        unknown[name].push_back(n->node);
      else
        groups[name][v].push_back(n->node);
    }
    per_node.push_back({{"node", n->node}, {"facts", facts}});
  }
  json drift = json::array();
  for (const auto& [name, fn] : Facts()) {
    const auto& g = groups[name];
    if (g.size() < 2) continue;
    std::vector<std::pair<std::string, std::vector<std::string>>> sorted(g.begin(), g.end());
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    json gj = json::array();
    for (const auto& [v, ns] : sorted) gj.push_back({{"value", v}, {"count", ns.size()}, {"nodes", ns}});
    json odd = json::array();
    for (size_t i = 1; i < sorted.size(); ++i) {
      for (const auto& nn : sorted[i].second) odd.push_back({{"node", nn}, {"value", sorted[i].first}});
    }
    drift.push_back({{"fact", name},
                     {"majority", sorted[0].first},
                     {"majority_count", sorted[0].second.size()},
                     {"groups", gj},
                     {"odd", odd},
                     {"unknown", unknown[name]}});
  }
  json un = json::array();
  for (const auto& u : unreachable) un.push_back({{"node", u.node}, {"reason", u.reason}});
  json partial = json::array();  // nodes that hit the per-node deadline: some evidence is missing
  for (const auto* n : nodes) {
    if (!n->partial.empty()) partial.push_back({{"node", n->node}, {"reason", n->partial}});
  }
  std::vector<std::string> compared;
  for (const auto& [name, fn] : Facts()) compared.push_back(name);
  json login_facts = nullptr;
  if (login) {
    login_facts = json::object();
    size_t k = 0;
    for (const auto& [name, fn] : Facts()) {
      const std::string& v = login->values[k++];
      login_facts[name] = v.empty() ? json(nullptr) : json(v);
    }
  }
  e.data = {{"login", login_facts},
            {"nodes_expected", nodes.size() + unreachable.size()},
            {"nodes_returned", nodes.size()},
            {"unreachable", un},
            {"partial", partial},
            {"nodes", per_node},
            {"facts_compared", compared},
            {"drift", drift}};
  return e;
}

}  // namespace clustermax::audit
