// Kubernetes checks: the cluster as its API shows it to the audit identity (cluster checks, judged
// once from the evidence "k8s.*"), and the kubelet's CPU manager on each node. Pure functions of
// evidence; a list that could not be read is WARN evidence-error, never a PASS.
#include <regex.h>

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "checks/common.h"
#include "util/k8s_names.h"
#include "util/strings.h"

namespace clustermax::checks {
namespace {

using core::CheckInfo;
using core::Evidence;
using core::kK;

const json& Arr(const Evidence& e, const char* key) {
  static const json empty = json::array();
  auto it = e.data.find(key);
  return it != e.data.end() && it->is_array() ? *it : empty;
}

std::string S(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : "";
}
// The number at `key`; -1 when absent or not a number (the probes' "unknown").
double NumberAt(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_number() ? o[key].get<double>() : -1.0;
}
// True only when `key` holds the boolean true.
bool TrueAt(const json& o, const char* key) {
  return o.is_object() && o.contains(key) && o[key].is_boolean() && o[key].get<bool>();
}

bool Contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

// A resource quantity ("8", "8k" never for devices) as a count; 0 when absent or not a plain number.
long long Quantity(const json& m, const std::string& key) {
  if (!m.is_object() || !m.contains(key) || !m[key].is_string()) return 0;
  return util::ParseInt(m[key].get<std::string>()).value_or(0);
}

// ---- GPU nodes ----

struct GpuNode {
  std::string name;
  long long advertised = 0;  // nvidia.com/gpu + amd.com/gpu allocatable
  bool labelled = false;     // labels say it has GPUs (GFD, NFD PCI vendor, provider labels)
  const json* node = nullptr;
};

std::vector<GpuNode> GpuNodes(const Evidence& nodes) {
  std::vector<GpuNode> out;
  for (const auto& n : Arr(nodes, "nodes")) {
    GpuNode g;
    g.name = S(n, "name");
    g.advertised = Quantity(n.value("allocatable", json::object()), "nvidia.com/gpu") +
                   Quantity(n.value("allocatable", json::object()), "amd.com/gpu");
    g.labelled = util::k8s::GpuLabelled(n.value("labels", json::object()));
    g.node = &n;
    if (g.advertised > 0 || g.labelled) out.push_back(g);
  }
  return out;
}

std::string Names(const std::vector<std::string>& v, size_t max = 8) {
  std::vector<std::string> shown(v.begin(), v.begin() + std::min(v.size(), max));
  std::string s = fmt::format("{}", fmt::join(shown, ", "));
  if (v.size() > max) s += fmt::format(" and {} more", v.size() - max);
  return s;
}

// ---- workloads ----

// Workloads whose namespace, name or an image contains one of `needles`.
std::vector<const json*> Workloads(const Evidence& w, std::initializer_list<std::string_view> needles) {
  std::vector<const json*> out;
  for (const auto& x : Arr(w, "workloads")) {
    std::string hay = S(x, "namespace") + "/" + S(x, "name");
    for (const auto& i : x.value("images", json::array()))
      if (i.is_string()) hay += " " + i.get<std::string>();
    for (auto n : needles) {
      if (Contains(hay, n)) {
        out.push_back(&x);
        break;
      }
    }
  }
  return out;
}

bool AnyReady(const std::vector<const json*>& ws) {
  for (const json* w : ws)
    if (w->value("ready", 0) > 0) return true;
  return false;
}

std::string Describe(const json& w) {
  return fmt::format("{} {}/{}: {} of {} ready", S(w, "kind"), S(w, "namespace"), S(w, "name"), w.value("ready", 0),
                     w.value("desired", 0));
}

// An active probe was asked for (its evidence is not "disabled" or absent from the plan).
bool Probed(const Evidence& probe) {
  return probe.status != core::EvidenceStatus::kProbeDisabled && probe.status != core::EvidenceStatus::kNotCollected;
}

bool HasResource(const Evidence& groups, std::string_view resource) {
  for (const auto& r : Arr(groups, "resources"))
    if (r.is_string() && r.get<std::string>() == resource) return true;
  return false;
}

// The shape the judges read of each k8s.* evidence item (the collectors' declared fields, see
// src/collect/k8s.cc): a top-level key with its type, and for arrays the keys every element holds.
// Types: 's' string, 'i' integer, 'b' bool, 'a' array, 'o' object, 'S' array of strings, 'm' object
// of strings (labels).
struct Shape {
  const char* key;
  char type;
  std::vector<std::pair<const char*, char>> items;
};
const std::map<std::string, std::vector<Shape>, std::less<>>& Shapes() {
  static const std::map<std::string, std::vector<Shape>, std::less<>> m = {
      {"k8s.version", {{"git_version", 's', {}}, {"minor", 's', {}}}},
      {"k8s.api-groups", {{"groups", 'o', {}}, {"resources", 'a', {}}}},
      {"k8s.nodes",
       {{"nodes",
         'a',
         {{"name", 's'},
          {"labels", 'm'},
          {"markers", 'o'},
          {"allocatable", 'o'},
          {"kubelet", 's'},
          {"unschedulable", 'b'}}}}},
      {"k8s.workloads",
       {{"workloads",
         'a',
         {{"kind", 's'}, {"namespace", 's'}, {"name", 's'}, {"desired", 'i'}, {"ready", 'i'}, {"images", 'a'}}}}},
      {"k8s.pods",
       {{"pods", 'a', {{"namespace", 's'}, {"name", 's'}, {"node", 's'}, {"phase", 's'}, {"owner_name", 's'}}}}},
      {"k8s.namespaces", {{"namespaces", 'a', {{"name", 's'}, {"markers", 'o'}}}}},
      {"k8s.storage",
       {{"classes", 'a', {{"name", 's'}, {"provisioner", 's'}, {"default", 'b'}}},
        {"claims", 'a', {{"namespace", 's'}, {"name", 's'}, {"access_modes", 'a'}, {"phase", 's'}}}}},
      {"k8s.network",
       {{"load_balancers", 'a', {{"namespace", 's'}, {"name", 's'}, {"ingress", 'a'}}},
        {"ingress_classes", 'a', {{"name", 's'}, {"controller", 's'}, {"default", 'b'}}},
        {"gateway_classes", 'a', {{"name", 's'}, {"controller", 's'}}},
        {"address_pools", 'a', {{"name", 's'}, {"addresses", 'a'}}}}},
      {"k8s.operators",
       {{"cluster_policies", 'a', {{"name", 's'}, {"state", 's'}}},
        {"nic_cluster_policies", 'a', {{"name", 's'}, {"state", 's'}}},
        {"amd_device_configs", 'a', {{"name", 's'}, {"namespace", 's'}, {"state", 's'}}},
        {"service_monitors", 'a', {{"name", 's'}, {"namespace", 's'}}},
        {"dra_drivers", 'a', {}},
        {"api_services", 'a', {{"name", 's'}, {"message", 's'}}},
        {"volcano_scheduler_config", 's', {}}}},
      {"k8s.topology",
       {{"kueue_topologies", 'a', {{"name", 's'}, {"levels", 'S'}}},
        {"resource_flavors", 'a', {{"name", 's'}, {"topology", 's'}, {"node_labels", 'm'}}},
        {"hypernodes", 'a', {{"name", 's'}, {"tier", 'i'}, {"members", 'a'}}},
        {"compute_domain_crd", 'b', {}},
        {"compute_domains", 'a', {{"namespace", 's'}, {"name", 's'}, {"status", 's'}}},
        {"jobset", 'b', {}}}},
      {"k8s.alert-rules", {{"served", 'b', {}}, {"rules", 'a', {{"namespace", 's'}, {"name", 's'}, {"alerts", 'i'}}}}},
      {"k8s.rbac",
       {{"grants",
         'a',
         {{"role", 's'},
          {"binding", 's'},
          {"subject_kind", 's'},
          {"subject", 's'},
          {"subject_namespace", 's'},
          {"verbs", 'a'}}},
        {"roles", 'i', {}},
        {"bindings", 'i', {}},
        {"malformed", 'i', {}}}},
      {"k8s.access", {{"reviews", 'a', {{"verb", 's'}, {"resource", 's'}, {"subresource", 's'}, {"scope", 's'}}}}},
  };
  return m;
}

bool OfType(const json& v, char t) {
  switch (t) {
    case 's':
      return v.is_string();
    case 'i':
      return v.is_number_integer();
    case 'b':
      return v.is_boolean();
    case 'a':
      return v.is_array();
    case 'o':
      return v.is_object();
    case 'S':
      return v.is_array() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); });
    case 'm':
      return v.is_object() && std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_string(); });
  }
  return false;
}

// Why the evidence does not have the shape its judges read; empty when it does.
std::string Misshapen(std::string_view id, const Evidence& e) {
  auto it = Shapes().find(id);
  if (it == Shapes().end()) return "";
  for (const auto& sh : it->second) {
    if (!e.data.contains(sh.key) || !OfType(e.data[sh.key], sh.type))
      return fmt::format("'{}' missing or mistyped", sh.key);
    if (sh.type != 'a') continue;
    for (const auto& item : e.data[sh.key]) {
      if (sh.items.empty()) continue;
      if (!item.is_object()) return fmt::format("an element of '{}' is not an object", sh.key);
      for (const auto& [k, t] : sh.items)
        if (!item.contains(k) || !OfType(item[k], t)) return fmt::format("'{}[].{}' missing or mistyped", sh.key, k);
    }
  }
  return "";
}

// The first unread or misshapen item among `ids`, as a WARN finding.
std::optional<Finding> Unread(const JudgeContext& ctx, std::initializer_list<std::pair<const char*, const char*>> ids) {
  for (const auto& [id, what] : ids) {
    const Evidence& e = ctx.Get(id);
    if (auto p = core::EvidenceProblem(e, what)) return p;
    if (auto why = Misshapen(id, e); !why.empty())
      return core::Warn(Reason::kEvidenceError, fmt::format("{} could not be read: {}", what, why));
  }
  return std::nullopt;
}

// ---- orchestration ----

Finding GpuOperator(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.nodes", "node list"}})) return *p;
  auto gpus = GpuNodes(ctx.Get("k8s.nodes"));
  if (gpus.empty()) return core::Skip(Reason::kNotApplicable, "no node advertises or is labelled with GPUs");
  if (auto p = Unread(ctx, {{"k8s.operators", "operator resources"}, {"k8s.workloads", "workload list"}})) return *p;
  const Evidence& ops = ctx.Get("k8s.operators");
  const Evidence& w = ctx.Get("k8s.workloads");
  std::vector<std::string> silent, details;
  for (const auto& g : gpus)
    if (g.advertised == 0) silent.push_back(g.name);
  bool dra = false;
  for (const auto& d : Arr(ops, "dra_drivers"))
    if (d.is_string() && Contains(d.get<std::string>(), "gpu")) dra = true;
  if (!silent.empty() && !dra) {
    return core::Fail(Severity::kMissing, fmt::format("{} of {} GPU nodes advertise no GPU resource: {}", silent.size(),
                                                      gpus.size(), Names(silent)))
        .Observed(fmt::format("{} GPU node(s) without nvidia.com/gpu or amd.com/gpu allocatable", silent.size()))
        .Expected("every GPU node advertises its GPUs (device plugin or DRA)");
  }
  // The operator: NVIDIA's ClusterPolicy, or AMD's DeviceConfig / device plugin.
  std::vector<std::string> policies;
  bool ready = false;
  for (const auto& p : Arr(ops, "cluster_policies")) {
    policies.push_back(fmt::format("ClusterPolicy {}: state '{}'", S(p, "name"), S(p, "state")));
    if (S(p, "state") == "ready") ready = true;
  }
  for (const auto& p : Arr(ops, "amd_device_configs")) {
    policies.push_back(fmt::format("DeviceConfig {}/{}: state '{}'", S(p, "namespace"), S(p, "name"), S(p, "state")));
    ready = true;  // AMD's DeviceConfig has no overall state; its DaemonSets below decide
  }
  auto daemons = Workloads(w, {"nvidia-driver-daemonset", "nvidia-container-toolkit", "nvidia-device-plugin",
                               "nvidia-dcgm-exporter", "gpu-feature-discovery", "amd-gpu", "device-plugin"});
  std::vector<std::string> degraded;
  for (const json* d : daemons) {
    if (S(*d, "kind") != "DaemonSet") continue;
    details.push_back(Describe(*d));
    if (d->value("ready", 0) < d->value("desired", 0)) degraded.push_back(S(*d, "name"));
  }
  details.insert(details.begin(), policies.begin(), policies.end());
  long long total = 0;
  for (const auto& g : gpus) total += g.advertised;
  std::string advertised = fmt::format("{} GPU node(s) advertise {} GPUs", gpus.size(), total);
  if (policies.empty()) {
    return core::Warn(Reason::kConfig, fmt::format("{}, but no GPU operator manages them (manual device plugin{})",
                                                   advertised, dra ? " or DRA" : ""))
        .Observed("no ClusterPolicy or DeviceConfig")
        .Expected("the NVIDIA or AMD GPU Operator, ready")
        .Details(details);
  }
  if (!ready || !degraded.empty()) {
    return core::Warn(
               Reason::kConfig,
               fmt::format("GPU operator degraded: {}{}", ready ? "" : "policy not ready",
                           degraded.empty() ? "" : (ready ? "" : "; ") + ("DaemonSets not ready: " + Names(degraded))))
        .Observed(advertised)
        .Details(details);
  }
  return core::Pass(fmt::format("GPU operator ready; {}", advertised)).Observed(advertised).Details(details);
}

// RDMA device resources a node advertises to pods.
std::vector<std::string> RdmaResources(const json& node) {
  std::vector<std::string> out;
  const json& alloc = node.value("allocatable", json::object());
  if (!alloc.is_object()) return out;
  for (const auto& [k, v] : alloc.items()) {
    bool rdma = k.starts_with("rdma/") || k.starts_with("nvidia.com/rdma") || k == "vpc.amazonaws.com/efa" ||
                k.starts_with("nvidia.com/hostdev") || k.starts_with("nvidia.com/sriov");
    if (rdma && Quantity(alloc, k) > 0) out.push_back(k);
  }
  return out;
}

bool RdmaLabelled(const json& node) {
  const json& labels = node.value("labels", json::object());
  if (!labels.is_object()) return false;
  for (const auto& [k, v] : labels.items()) {
    std::string val = v.is_string() ? v.get<std::string>() : "";
    if (k == "network.nvidia.com/operator.mofed.driver-version" && !val.empty()) return true;
    if (k == "feature.node.kubernetes.io/rdma.capable" && val == "true") return true;
    if (k == "feature.node.kubernetes.io/pci-15b3.present" && val == "true") return true;
  }
  return false;
}

Finding NetworkOperator(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.nodes", "node list"}})) return *p;
  auto gpus = GpuNodes(ctx.Get("k8s.nodes"));
  if (gpus.empty()) return core::Skip(Reason::kNotApplicable, "no node advertises or is labelled with GPUs");
  if (auto p = Unread(ctx, {{"k8s.operators", "operator resources"}})) return *p;
  const Evidence& ops = ctx.Get("k8s.operators");
  std::vector<std::string> with, without, capable_without, details;
  for (const auto& g : gpus) {
    auto res = RdmaResources(*g.node);
    if (!res.empty()) {
      with.push_back(g.name);
      details.push_back(fmt::format("{}: {}", g.name, fmt::join(res, ", ")));
    } else {
      without.push_back(g.name);
      if (RdmaLabelled(*g.node)) capable_without.push_back(g.name);
    }
  }
  bool dra = false;
  for (const auto& d : Arr(ops, "dra_drivers"))
    if (d.is_string() && (Contains(d.get<std::string>(), "rdma") || Contains(d.get<std::string>(), "network")))
      dra = true;
  std::vector<std::string> degraded;
  for (const auto& p : Arr(ops, "nic_cluster_policies")) {
    details.push_back(fmt::format("NicClusterPolicy {}: state '{}'", S(p, "name"), S(p, "state")));
    if (S(p, "state") != "ready") degraded.push_back(S(p, "name"));
  }
  if (with.empty() && !dra) {
    if (!capable_without.empty()) {
      return core::Fail(Severity::kMissing, fmt::format("GPU nodes with RDMA NICs expose no RDMA resource to pods: {}",
                                                        Names(capable_without)))
          .Observed("no rdma/*, nvidia.com/rdma* or EFA resource on any GPU node")
          .Expected("RDMA resources on every GPU node (Network Operator, EFA device plugin or a DRA network driver)")
          .Details(details);
    }
    return core::Skip(Reason::kUnverified,
                      "no GPU node advertises RDMA resources or carries RDMA labels: no RDMA NIC is known (a TCP-only "
                      "fabric is graded by fabric-class)")
        .Details(details);
  }
  if (!without.empty() && !dra) {
    return core::Warn(Reason::kConfig, fmt::format("RDMA resources on {} of {} GPU nodes; missing on {}", with.size(),
                                                   gpus.size(), Names(without)))
        .Details(details);
  }
  if (!degraded.empty())
    return core::Warn(Reason::kConfig, "Network Operator installed but not ready: " + Names(degraded)).Details(details);
  return core::Pass(fmt::format("RDMA resources advertised on all {} GPU nodes{}", gpus.size(), dra ? " (or DRA)" : ""))
      .Details(details);
}

// A multi-node or scheduling component: a custom resource served and a controller running.
struct Controller {
  std::string name;
  std::vector<std::string> resources;         // any of them served
  std::vector<std::string_view> controllers;  // workload name/namespace/image fragments
};

// "name: CRD served, controller <ready>" lines, and whether any component is served and running.
bool Judged(const JudgeContext& ctx, const std::vector<Controller>& comps, std::vector<std::string>& details,
            std::vector<std::string>& running) {
  const Evidence& groups = ctx.Get("k8s.api-groups");
  const Evidence& w = ctx.Get("k8s.workloads");
  for (const auto& c : comps) {
    std::vector<std::string> served;
    for (const auto& r : c.resources)
      if (HasResource(groups, r)) served.push_back(r);
    std::vector<const json*> ctrl;
    for (auto needle : c.controllers)
      for (const json* x : Workloads(w, {needle}))
        if (std::find(ctrl.begin(), ctrl.end(), x) == ctrl.end()) ctrl.push_back(x);
    if (served.empty() && ctrl.empty()) continue;
    std::vector<std::string> cs;
    for (const json* x : ctrl) cs.push_back(Describe(*x));
    details.push_back(fmt::format(
        "{}: {}; {}", c.name, served.empty() ? "no resource served" : fmt::format("serves {}", fmt::join(served, ", ")),
        cs.empty() ? "no controller found" : fmt::format("{}", fmt::join(cs, "; "))));
    if ((!served.empty() || c.resources.empty()) && AnyReady(ctrl)) running.push_back(c.name);
  }
  return !running.empty();
}

std::optional<Finding> UnreadApi(const JudgeContext& ctx) {
  return Unread(ctx, {{"k8s.api-groups", "API discovery"}, {"k8s.workloads", "workload list"}});
}

Finding MpiOperator(const JudgeContext& ctx) {
  if (auto p = UnreadApi(ctx)) return *p;
  std::vector<std::string> details, running;
  Judged(ctx,
         {{"MPI Operator", {"mpijobs.kubeflow.org"}, {"mpi-operator"}},
          {"Kubeflow Training Operator", {"pytorchjobs.kubeflow.org"}, {"training-operator"}},
          {"Kubeflow Trainer", {"trainjobs.trainer.kubeflow.org"}, {"kubeflow-trainer", "trainer-controller-manager"}},
          {"JobSet", {"jobsets.jobset.x-k8s.io"}, {"jobset-controller"}},
          {"Volcano jobs", {"jobs.batch.volcano.sh"}, {"volcano-controller"}}},
         details, running);
  if (running.empty())
    return core::Warn(Reason::kConfig,
                      "no multi-node job launcher runs (MPI Operator, Training Operator, Trainer, "
                      "JobSet or Volcano jobs)")
        .Details(details);
  return core::Pass("multi-node launcher running: " + Names(running)).Details(details);
}

const std::vector<Controller>& Schedulers() {
  static const std::vector<Controller> c = {
      {"Kueue", {"clusterqueues.kueue.x-k8s.io"}, {"kueue-controller-manager", "kueue/kueue"}},
      {"Volcano", {"queues.scheduling.volcano.sh"}, {"volcano-scheduler"}},
      {"KAI Scheduler", {}, {"kai-scheduler"}}};
  return c;
}

Finding WorkloadSchedulers(const JudgeContext& ctx) {
  if (auto p = UnreadApi(ctx)) return *p;
  std::vector<std::string> details, running;
  Judged(ctx, Schedulers(), details, running);
  if (running.empty())
    return core::Warn(Reason::kConfig, "no GPU-aware batch scheduler runs (Kueue, Volcano, KAI Scheduler)")
        .Details(details);
  return core::Pass("batch scheduler running: " + Names(running)).Details(details);
}

// Volcano's scheduler configuration names the plugin ("- name: gang").
bool VolcanoPlugin(const JudgeContext& ctx, std::string_view plugin) {
  const std::string& conf = ctx.Get("k8s.operators").data.value("volcano_scheduler_config", std::string());
  for (const auto& line : util::SplitLines(conf)) {
    auto t = util::Trim(line);
    if (t.starts_with("- ")) t = util::Trim(t.substr(2));
    if (t.starts_with("name:") && util::Trim(t.substr(5)) == plugin) return true;
  }
  return false;
}

Finding GangScheduling(const JudgeContext& ctx) {
  if (auto p = UnreadApi(ctx)) return *p;
  if (auto p = Unread(ctx, {{"k8s.operators", "operator resources"}})) return *p;
  std::vector<std::string> details, running;
  Judged(
      ctx,
      {{"Kueue (all-or-nothing admission)", {"workloads.kueue.x-k8s.io"}, {"kueue-controller-manager", "kueue/kueue"}},
       {"KAI Scheduler (PodGroups)", {}, {"kai-scheduler"}},
       {"scheduler-plugins coscheduling", {"podgroups.scheduling.x-k8s.io"}, {"scheduler-plugins", "coscheduling"}}},
      details, running);
  std::vector<std::string> volcano;
  Judged(ctx, {{"Volcano", {"queues.scheduling.volcano.sh"}, {"volcano-scheduler"}}}, details, volcano);
  if (!volcano.empty()) {
    bool gang = VolcanoPlugin(ctx, "gang");
    details.push_back(fmt::format("Volcano scheduler configuration: gang plugin {}", gang ? "enabled" : "not found"));
    if (gang) running.push_back("Volcano gang plugin");
  }
  if (running.empty()) return core::Warn(Reason::kConfig, "no gang-scheduling mechanism is active").Details(details);
  return core::Pass("gang scheduling: " + Names(running)).Details(details);
}

Finding BinPacking(const JudgeContext& ctx) {
  if (auto p = UnreadApi(ctx)) return *p;
  if (auto p = Unread(ctx, {{"k8s.operators", "operator resources"}})) return *p;
  std::vector<std::string> details, running;
  Judged(ctx, {{"KAI Scheduler", {}, {"kai-scheduler"}}}, details, running);
  std::vector<std::string> volcano;
  Judged(ctx, {{"Volcano", {"queues.scheduling.volcano.sh"}, {"volcano-scheduler"}}}, details, volcano);
  if (!volcano.empty()) {
    bool binpack = VolcanoPlugin(ctx, "binpack");
    details.push_back(
        fmt::format("Volcano scheduler configuration: binpack plugin {}", binpack ? "enabled" : "not found"));
    if (binpack) running.push_back("Volcano binpack plugin");
  }
  if (running.empty())
    return core::Warn(Reason::kConfig,
                      "no bin-packing policy seen (Volcano binpack, KAI Scheduler); the default "
                      "kube-scheduler spreads pods (LeastAllocated)")
        .Details(details);
  return core::Pass("bin-packing: " + Names(running)).Details(details);
}

// ---- networking ----

// Workload fragments of the controller an IngressClass names.
std::vector<std::string_view> IngressControllerPods(std::string_view controller) {
  if (Contains(controller, "ingress-nginx") || Contains(controller, "nginx")) return {"ingress-nginx", "nginx-ingress"};
  if (Contains(controller, "traefik")) return {"traefik"};
  if (Contains(controller, "haproxy")) return {"haproxy"};
  if (Contains(controller, "contour")) return {"contour"};
  if (Contains(controller, "istio")) return {"istio"};
  if (Contains(controller, "kong")) return {"kong"};
  if (Contains(controller, "ingress.k8s.aws")) return {"aws-load-balancer-controller"};
  if (Contains(controller, "cilium")) return {"cilium"};
  return {};
}

Finding IngressController(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.network", "networking resources"}, {"k8s.workloads", "workload list"}})) return *p;
  const Evidence& net = ctx.Get("k8s.network");
  const Evidence& w = ctx.Get("k8s.workloads");
  std::vector<std::string> details, working;
  for (const auto& ic : Arr(net, "ingress_classes")) {
    std::string ctrl = S(ic, "controller");
    std::vector<const json*> pods;
    for (auto needle : IngressControllerPods(ctrl))
      for (const json* x : Workloads(w, {needle})) pods.push_back(x);
    bool up = AnyReady(pods);
    details.push_back(fmt::format(
        "IngressClass {}{} ({}): {}", S(ic, "name"), ic.value("default", false) ? " (default)" : "", ctrl,
        pods.empty() ? "no controller workload found" : (up ? "controller ready" : "controller not ready")));
    if (up) working.push_back("IngressClass " + S(ic, "name"));
  }
  for (const auto& gc : Arr(net, "gateway_classes")) {
    bool accepted = TrueAt(gc, "accepted");
    details.push_back(fmt::format("GatewayClass {} ({}): {}", S(gc, "name"), S(gc, "controller"),
                                  accepted ? "Accepted" : "not accepted"));
    if (accepted) working.push_back("GatewayClass " + S(gc, "name"));
  }
  if (working.empty()) {
    return core::Warn(Reason::kConfig, Arr(net, "ingress_classes").empty() && Arr(net, "gateway_classes").empty()
                                           ? "no IngressClass or GatewayClass"
                                           : "no IngressClass with a running controller and no accepted GatewayClass")
        .Details(details);
  }
  return core::Pass("ingress: " + Names(working)).Details(details);
}

Finding LoadBalancer(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.network", "networking resources"}})) return *p;
  const Evidence& net = ctx.Get("k8s.network");
  std::vector<std::string> served, pending, details;
  for (const auto& s : Arr(net, "load_balancers")) {
    std::string name = S(s, "namespace") + "/" + S(s, "name");
    const json& ing = s.value("ingress", json::array());
    if (ing.is_array() && !ing.empty()) {
      served.push_back(name);
      details.push_back(fmt::format("Service {}: {}", name, ing[0].is_string() ? ing[0].get<std::string>() : ""));
    } else {
      pending.push_back(name);
      details.push_back(fmt::format("Service {}: no address", name));
    }
  }
  size_t pools = 0;
  for (const auto& p : Arr(net, "address_pools")) {
    details.push_back(
        fmt::format("MetalLB pool {}: {}", S(p, "name"), fmt::join(p.value("addresses", json::array()), ", ")));
    if (!p.value("addresses", json::array()).empty()) ++pools;
  }
  const Evidence& probe = ctx.Get("probe.k8s-lb");
  if (Probed(probe)) {
    if (auto p = core::EvidenceProblem(probe, "k8s-lb probe")) return p->Details(details);
    if (!probe.data.value("created", false))
      return core::Warn(Reason::kUnverified, "the k8s-lb probe could not create its Service: " + S(probe.data, "error"))
          .Details(details);
    if (S(probe.data, "address").empty())
      return core::Fail(Severity::kMissing, fmt::format("a new LoadBalancer Service got no address within {:.0f} s",
                                                        probe.data.value("budget_s", 0.0)))
          .Details(details);
    details.push_back(fmt::format("probe: a new LoadBalancer Service got {} in {:.0f} s", S(probe.data, "address"),
                                  probe.data.value("seconds", 0.0)));
    return core::Pass(
               fmt::format("a new LoadBalancer Service got an address in {:.0f} s", probe.data.value("seconds", 0.0)))
        .Details(details);
  }
  if (!served.empty())
    return core::Pass(fmt::format("{} LoadBalancer Service(s) have an address", served.size())).Details(details);
  if (!pending.empty())
    return core::Warn(Reason::kConfig,
                      fmt::format("LoadBalancer Service(s) pending without an address: {}", Names(pending)))
        .Details(details);
  if (!Arr(net, "address_pools").empty() && pools == 0)
    return core::Warn(Reason::kConfig, "MetalLB is installed without address pools").Details(details);
  return core::Warn(Reason::kUnverified, "no LoadBalancer Service exists to show that the cluster assigns addresses")
      .Details(details);
}

// ---- storage ----

// The k8s-pvc probe's claims of `mode` (ReadWriteOnce: the default class's; ReadWriteMany: one per
// RWX-capable class). nullopt with *problem set when the probe was asked for and did not answer;
// nullopt alone when it was not asked for.
std::optional<std::vector<json>> ProbeClaims(const JudgeContext& ctx, const std::string& mode,
                                             std::optional<Finding>* problem) {
  const Evidence& p = ctx.Get("probe.k8s-pvc");
  if (!Probed(p)) return std::nullopt;
  if (auto f = core::EvidenceProblem(p, "k8s-pvc probe")) {
    *problem = f;
    return std::nullopt;
  }
  if (!S(p.data, "error").empty()) {
    *problem = core::Warn(Reason::kUnverified, "the k8s-pvc probe made no claim: " + S(p.data, "error"));
    return std::nullopt;
  }
  std::vector<json> out;
  for (const auto& c : Arr(p, "claims"))
    if (S(c, "access_mode") == mode) out.push_back(c);
  return out;
}

// What the k8s-pvc probe found of one claim and the pod that mounted it: usable (bound, and a pod
// ran with it mounted), failed (not bound within the budget, or bound and the scheduled pod could
// not mount it), or unverified (refused, or the pod did not get to the mount: not scheduled, image
// pull failed ...); with the line that says so.
struct ClaimResult {
  enum Outcome { kUsable, kFailed, kUnverified } outcome;
  std::string line;
};
ClaimResult ReadClaim(const json& c) {
  std::string cls = S(c, "class").empty() ? "the default class" : "class " + S(c, "class");
  std::string what = fmt::format("probe: {} claim on {}", S(c, "access_mode"), cls);
  if (!TrueAt(c, "created")) return {ClaimResult::kUnverified, what + " refused: " + S(c, "error")};
  const json& pod = c.contains("pod") ? c["pod"] : json();
  bool scheduled = !S(pod, "scheduled").empty();
  std::string why = !S(pod, "failure").empty()        ? S(pod, "failure")
                    : !S(pod, "event").empty()        ? S(pod, "event")
                    : !S(pod, "state_reason").empty() ? S(pod, "state_reason") + " " + S(pod, "state_message")
                    : !scheduled                      ? "not scheduled: " + S(pod, "message")
                                                      : "no container started";
  if (!TrueAt(c, "bound")) {
    // WaitForFirstConsumer: the scheduler picks the pod's node first (the claim's selected-node
    // annotation), then the provisioner makes the volume there; no node picked is the scheduler's.
    if (TrueAt(c, "waits_for_consumer") && S(c, "selected_node").empty() && !scheduled)
      return {ClaimResult::kUnverified,
              fmt::format("{} waits for a consumer (WaitForFirstConsumer) and its pod was not placed ({})", what,
                          util::Ellipsize(why, 300))};
    if (!S(c, "selected_node").empty())
      return {ClaimResult::kFailed,
              fmt::format("{} was not provisioned on {}, the node chosen for its pod, within the budget (still {})",
                          what, S(c, "selected_node"), S(c, "phase").empty() ? "unread" : S(c, "phase"))};
    return {ClaimResult::kFailed, fmt::format("{} did not bind within the budget (still {})", what,
                                              S(c, "phase").empty() ? "unread" : S(c, "phase"))};
  }
  std::string bound = fmt::format("{} bound in {:.0f} s", what, NumberAt(c, "seconds"));
  if (!pod.is_object()) return {ClaimResult::kUsable, bound};  // a bundle of a build that made no pod
  if (!TrueAt(pod, "accepted"))
    return {ClaimResult::kUnverified, bound + "; the pod to mount it was refused: " + S(pod, "error")};
  bool ran = !S(pod, "started").empty() && !(S(pod, "state") == "terminated" && NumberAt(pod, "exit_code") != 0);
  if (ran)
    return {ClaimResult::kUsable,
            fmt::format("{}; a pod mounted it and ran {:.0f} s after its creation", bound, NumberAt(pod, "start_s"))};
  // Scheduled, and the kubelet could not attach or mount it: its FailedMount (FailedAttachVolume)
  // event, or a container still being created with no image pull begun (the kubelet mounts the
  // volumes first; a pull that has begun means they are mounted, and the image is the hold-up).
  bool pulling = TrueAt(pod, "image_started");
  bool mount = !S(pod, "failure").empty() ||
               (!pulling && (S(pod, "state_reason") == "ContainerCreating" || S(pod, "state").empty()));
  if (scheduled && mount)
    return {ClaimResult::kFailed,
            fmt::format("{}; the pod on {} could not mount it: {}", bound, S(pod, "node"), util::Ellipsize(why, 300))};
  return {ClaimResult::kUnverified,
          fmt::format("{}; the pod to mount it did not run ({})", bound, util::Ellipsize(why, 300))};
}

Finding CsiRwx(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.storage", "storage classes and claims"}})) return *p;
  const Evidence& st = ctx.Get("k8s.storage");
  std::vector<std::string> rwx, bound, details;
  for (const auto& c : Arr(st, "classes")) {
    bool yes = util::k8s::RwxProvisioner(S(c, "provisioner"));
    details.push_back(
        fmt::format("StorageClass {} ({}){}", S(c, "name"), S(c, "provisioner"), yes ? ": RWX-capable" : ""));
    if (yes) rwx.push_back(S(c, "name"));
  }
  for (const auto& pvc : Arr(st, "claims")) {
    bool many = false;
    for (const auto& m : pvc.value("access_modes", json::array()))
      if (m == "ReadWriteMany") many = true;
    if (many && S(pvc, "phase") == "Bound") bound.push_back(S(pvc, "namespace") + "/" + S(pvc, "name"));
  }
  if (!bound.empty()) details.push_back("bound ReadWriteMany claims: " + Names(bound));
  if (rwx.empty() && bound.empty())
    return core::Warn(Reason::kConfig, "no RWX-capable StorageClass and no bound ReadWriteMany claim").Details(details);
  std::optional<Finding> problem;
  if (auto claims = ProbeClaims(ctx, "ReadWriteMany", &problem)) {
    std::vector<std::string> failed, unverified;
    for (const auto& c : *claims) {
      auto r = ReadClaim(c);
      details.push_back(r.line);
      if (r.outcome == ClaimResult::kFailed) failed.push_back(S(c, "class"));
      if (r.outcome == ClaimResult::kUnverified) unverified.push_back(S(c, "class"));
    }
    if (!failed.empty())
      return core::Fail(Severity::kMissing,
                        fmt::format("a ReadWriteMany claim on {} did not bind, or no pod could mount it, within the "
                                    "probe's budget",
                                    Names(failed)))
          .Details(details);
    if (!unverified.empty())
      return core::Warn(Reason::kUnverified,
                        fmt::format("the probe could not show a ReadWriteMany claim on {} in use", Names(unverified)))
          .Details(details);
  } else if (problem) {
    return problem->Details(details);
  }
  return core::Pass(rwx.empty() ? fmt::format("{} ReadWriteMany claim(s) bound", bound.size())
                                : "RWX-capable StorageClass: " + Names(rwx))
      .Details(details);
}

Finding DefaultStorageClass(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.storage", "storage classes and claims"}})) return *p;
  std::vector<std::string> defaults, details;
  for (const auto& c : Arr(ctx.Get("k8s.storage"), "classes")) {
    details.push_back(fmt::format("StorageClass {} ({}){}", S(c, "name"), S(c, "provisioner"),
                                  c.value("default", false) ? ": default" : ""));
    if (c.value("default", false)) defaults.push_back(S(c, "name"));
  }
  if (defaults.size() == 1) {
    std::optional<Finding> problem;
    if (auto claims = ProbeClaims(ctx, "ReadWriteOnce", &problem)) {
      for (const auto& c : *claims) {
        auto r = ReadClaim(c);
        details.push_back(r.line);
        if (r.outcome == ClaimResult::kFailed)
          return core::Fail(Severity::kMissing,
                            fmt::format("a claim on the default class {} did not bind, or no pod could mount it, "
                                        "within the probe's budget",
                                        defaults[0]))
              .Details(details);
        if (r.outcome == ClaimResult::kUnverified)
          return core::Warn(Reason::kUnverified, "the probe could not show a claim on the default class in use")
              .Details(details);
      }
    } else if (problem) {
      return problem->Details(details);
    }
    return core::Pass("default StorageClass: " + defaults[0]).Details(details);
  }
  if (defaults.empty())
    return core::Warn(Reason::kConfig, "no default StorageClass: claims without a class stay Pending").Details(details);
  return core::Warn(Reason::kConfig, fmt::format("{} StorageClasses are marked default ({}): which one a claim gets is "
                                                 "not defined by the class list",
                                                 defaults.size(), Names(defaults)))
      .Details(details);
}

// ---- health ----

Finding NodeProblemDetector(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.nodes", "node list"}, {"k8s.workloads", "workload list"}, {"k8s.pods", "pod list"}}))
    return *p;
  auto gpus = GpuNodes(ctx.Get("k8s.nodes"));
  if (gpus.empty()) return core::Skip(Reason::kNotApplicable, "no node advertises or is labelled with GPUs");
  std::vector<std::string> details;
  long long desired = 0, ready = 0;
  for (const json* d : Workloads(ctx.Get("k8s.workloads"), {"node-problem-detector"})) {
    if (S(*d, "kind") != "DaemonSet") continue;
    details.push_back(Describe(*d));
    desired += d->value("desired", 0LL);
    ready += d->value("ready", 0LL);
  }
  if (details.empty()) return core::Warn(Reason::kConfig, "no node-problem-detector DaemonSet");
  // Which GPU nodes run one: its Running pods name their node.
  std::set<std::string> covered;
  for (const auto& p : Arr(ctx.Get("k8s.pods"), "pods")) {
    if (S(p, "phase") == "Running" &&
        (Contains(S(p, "owner_name"), "node-problem-detector") || Contains(S(p, "name"), "node-problem-detector")))
      covered.insert(S(p, "node"));
  }
  std::vector<std::string> missing;
  for (const auto& g : gpus)
    if (!covered.count(g.name)) missing.push_back(g.name);
  if (!covered.empty() && !missing.empty())
    return core::Warn(Reason::kCoveragePartial, fmt::format("node-problem-detector missing on {} of {} GPU nodes: {}",
                                                            missing.size(), gpus.size(), Names(missing)))
        .Details(details);
  if (covered.empty() && (ready < desired || desired < static_cast<long long>(gpus.size())))
    return core::Warn(Reason::kCoveragePartial,
                      fmt::format("node-problem-detector ready on {} of {} scheduled nodes, {} GPU nodes", ready,
                                  desired, gpus.size()))
        .Details(details);
  return core::Pass(fmt::format("node-problem-detector running on all {} GPU nodes{}", gpus.size(),
                                covered.empty() ? " (by its DaemonSet's status: no pod of it listed)" : ""))
      .Details(details);
}

Finding MetricsServer(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.operators", "API services"}})) return *p;
  for (const auto& a : Arr(ctx.Get("k8s.operators"), "api_services")) {
    if (S(a, "name") != "v1beta1.metrics.k8s.io") continue;
    if (a.contains("available") && a["available"] == true)
      return core::Pass("the resource metrics API (v1beta1.metrics.k8s.io) is available");
    return core::Warn(Reason::kConfig, "the resource metrics API is registered but not available: " + S(a, "message"));
  }
  return core::Warn(Reason::kConfig, "no resource metrics API (metrics-server): kubectl top and the HPA have no data");
}

// ---- access ----

// The access review's answer: true, false, or nullopt when it failed or was not asked.
std::optional<bool> Allowed(const Evidence& access, std::string_view verb, std::string_view resource,
                            std::string_view scope) {
  for (const auto& r : Arr(access, "reviews")) {
    if (S(r, "verb") == verb && S(r, "resource") == resource && S(r, "scope") == scope && S(r, "subresource").empty())
      return r.contains("allowed") && r["allowed"].is_boolean() ? std::optional<bool>(r["allowed"].get<bool>())
                                                                : std::nullopt;
  }
  return std::nullopt;
}

struct Ask {
  const char* verb;
  const char* resource;
  const char* scope;
};
std::string Label(const Ask& a) {
  return fmt::format("{} {}{}", a.verb, a.resource,
                     std::string_view(a.scope) == "all"  ? " -A"
                     : std::string_view(a.scope).empty() ? " (own namespace)"
                                                         : "");
}

// Denied and unanswered reviews among `asks`.
void Sort(const Evidence& access, const std::vector<Ask>& asks, std::vector<std::string>& denied,
          std::vector<std::string>& unknown) {
  for (const auto& a : asks) {
    auto v = Allowed(access, a.verb, a.resource, a.scope);
    if (!v)
      unknown.push_back(Label(a));
    else if (!*v)
      denied.push_back(Label(a));
  }
}

Finding HelmAccess(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.access", "access reviews"}})) return *p;
  const Evidence& a = ctx.Get("k8s.access");
  auto deploy_anywhere = [&] {
    auto all = Allowed(a, "create", "deployments.apps", "all"), own = Allowed(a, "create", "deployments.apps", "");
    if ((all && *all) || (own && *own)) return std::optional<bool>(true);
    if (all && own) return std::optional<bool>(false);
    return std::optional<bool>();
  }();
  if (deploy_anywhere == false)
    return core::Fail(Severity::kConfig,
                      "the audit identity cannot create Deployments in any namespace: no chart installs");
  std::vector<std::string> cdenied, cunknown, ndenied, nunknown;
  Sort(a,
       {{"create", "customresourcedefinitions.apiextensions.k8s.io", "cluster"},
        {"create", "clusterroles.rbac.authorization.k8s.io", "cluster"},
        {"create", "clusterrolebindings.rbac.authorization.k8s.io", "cluster"},
        {"create", "namespaces", "cluster"}},
       cdenied, cunknown);
  Sort(a, {{"create", "deployments.apps", ""}, {"create", "secrets", ""}, {"create", "serviceaccounts", ""}}, ndenied,
       nunknown);
  if (!cunknown.empty() || !nunknown.empty() || !deploy_anywhere) {
    cunknown.insert(cunknown.end(), nunknown.begin(), nunknown.end());
    return core::Warn(Reason::kEvidenceError, "access reviews failed: " + Names(cunknown));
  }
  if (!ndenied.empty()) return core::Warn(Reason::kConfig, "namespaced install rights missing: " + Names(ndenied));
  if (!cdenied.empty())
    return core::Warn(Reason::kConfig,
                      "only namespaced install rights: charts with CRDs or cluster roles cannot be "
                      "installed (denied: " +
                          Names(cdenied) + ")");
  return core::Pass(
      "cluster-scoped and namespaced install rights present (CRDs, cluster roles, namespaces, "
      "deployments, secrets, service accounts)");
}

Finding RbacAccess(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.access", "access reviews"}})) return *p;
  const Evidence& a = ctx.Get("k8s.access");
  auto anywhere = [&](const char* res) {
    auto all = Allowed(a, "create", res, "all"), own = Allowed(a, "create", res, "");
    return (all && *all) || (own && *own) ? 1 : (all && own) ? 0 : -1;
  };
  if (anywhere("pods") == 0 || anywhere("jobs.batch") == 0)
    return core::Fail(Severity::kConfig, fmt::format("the audit identity cannot create {} in any namespace: it cannot "
                                                     "run workloads",
                                                     anywhere("pods") == 0 ? "pods" : "jobs"));
  std::vector<std::string> denied, unknown;
  Sort(a,
       {{"list", "nodes", "cluster"},
        {"list", "pods", "all"},
        {"create", "pods", "all"},
        {"create", "jobs.batch", "all"},
        {"create", "persistentvolumeclaims", "all"},
        {"create", "services", "all"},
        {"create", "roles.rbac.authorization.k8s.io", ""},
        {"create", "rolebindings.rbac.authorization.k8s.io", ""}},
       denied, unknown);
  if (!unknown.empty()) return core::Warn(Reason::kEvidenceError, "access reviews failed: " + Names(unknown));
  if (!denied.empty()) return core::Warn(Reason::kConfig, "denied: " + Names(denied, 10));
  return core::Pass(
      "every workload verb allowed: list nodes and pods, create pods, jobs, claims and services in every "
      "namespace, and roles and bindings in its own");
}

// Namespaces of the platform (control plane, operators, monitoring): grants there are listed for
// review, not failed.
bool SystemNamespace(std::string_view ns) {
  return ns.starts_with("kube-") || ns.starts_with("openshift") || ns.ends_with("-system") ||
         ns.starts_with("gpu-operator") || ns.starts_with("nvidia") || ns.ends_with("-operator") ||
         ns == "monitoring" || ns.starts_with("prometheus") || ns == "cattle-system" || ns.starts_with("cattle-") ||
         ns == "network-operator" || ns == "istio-system" || ns == "cert-manager" || ns == "calico-system" ||
         ns == "tigera-operator";
}

bool AllowListed(const json& g) {
  std::string kind = S(g, "subject_kind"), name = S(g, "subject");
  if (kind == "Group") return name == "system:masters" || name == "system:nodes";
  if (kind == "User")
    return name == "system:kube-controller-manager" || name == "system:kube-scheduler" ||
           name.starts_with("system:node:") || name == "kube-apiserver-kubelet-client" ||
           name == "system:kube-apiserver" || name == "kube-apiserver" || name == "system:apiserver";
  return false;
}

Finding NodesProxy(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.rbac", "roles and bindings"}})) return *p;
  const Evidence& rbac = ctx.Get("k8s.rbac");
  std::vector<std::string> fail, review, details;
  for (const auto& g : Arr(rbac, "grants")) {
    if (AllowListed(g)) continue;
    std::string subject = S(g, "subject_kind") == "ServiceAccount"
                              ? fmt::format("ServiceAccount {}/{}", S(g, "subject_namespace"), S(g, "subject"))
                              : fmt::format("{} {}", S(g, "subject_kind"), S(g, "subject"));
    std::string line = fmt::format("{} holds {} on nodes/proxy through {} ({})", subject,
                                   fmt::join(g.value("verbs", json::array()), ","), S(g, "binding"), S(g, "role"));
    details.push_back(line);
    if (S(g, "subject_kind") == "ServiceAccount" && !SystemNamespace(S(g, "subject_namespace")))
      fail.push_back(subject);
    else
      review.push_back(subject);
  }
  if (auto v = [&]() -> std::optional<bool> {
        const Evidence& a = ctx.Get("k8s.access");
        if (!a.ok()) return std::nullopt;
        for (const auto& r : Arr(a, "reviews"))
          if (S(r, "subresource") == "proxy" && r.contains("allowed") && r["allowed"].is_boolean())
            return r["allowed"].get<bool>();
        return std::nullopt;
      }())
    details.push_back(fmt::format("the audit identity {} get nodes/proxy", *v ? "may" : "may not"));
  if (!fail.empty()) {
    return core::Fail(Severity::kConfig,
                      fmt::format("workload service account(s) in user namespaces can reach every kubelet's API "
                                  "(exec into any pod on the node) through nodes/proxy: {}",
                                  Names(fail)))
        .Details(details);
  }
  long long malformed = rbac.data.value("malformed", 0LL);
  if (malformed > 0)
    return core::Warn(Reason::kEvidenceError,
                      fmt::format("{} RBAC object(s) could not be read: the grant list may be incomplete", malformed))
        .Details(details);
  if (!review.empty())
    return core::Warn(Reason::kConfig, "nodes/proxy granted to platform identities (review): " + Names(review))
        .Details(details);
  return core::Pass(fmt::format("no subject outside the control plane holds nodes/proxy ({} roles, {} bindings read)",
                                rbac.data.value("roles", 0LL), rbac.data.value("bindings", 0LL)))
      .Details(details);
}

Finding VclusterTenancy(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.version", "API server version"}, {"k8s.namespaces", "namespace list"}})) return *p;
  const Evidence& nodes = ctx.Get("k8s.nodes");
  const Evidence& w = ctx.Get("k8s.workloads");
  // Unreadable nodes or workloads are the finding here (hidden host facts); read ones must be whole.
  for (const auto& [id, e] : {std::pair<const char*, const Evidence*>{"k8s.nodes", &nodes}, {"k8s.workloads", &w}})
    if (auto why = Misshapen(id, *e); e->ok() && !why.empty())
      return core::Warn(Reason::kEvidenceError, fmt::format("{} could not be read: {}", id, why));
  std::vector<std::string> markers, details;
  for (const auto& ns : Arr(ctx.Get("k8s.namespaces"), "namespaces")) {
    const json m = ns.value("markers", json::object());  // a named copy: items() must not outlive it
    for (const auto& [key, v] : m.items()) markers.push_back(fmt::format("namespace {}: {}", S(ns, "name"), key));
  }
  bool nodes_visible = nodes.ok() && !Arr(nodes, "nodes").empty();
  std::set<std::string> kubelet_minors;
  if (nodes.ok()) {
    for (const auto& n : Arr(nodes, "nodes")) {
      const json m = n.value("markers", json::object());
      for (const auto& [key, v] : m.items()) markers.push_back(fmt::format("node {}: {}", S(n, "name"), key));
      std::string kv = S(n, "kubelet");
      auto parts = util::Split(kv.starts_with("v") ? kv.substr(1) : kv, '.');
      if (parts.size() >= 2) kubelet_minors.insert(parts[1]);
    }
  }
  std::string server_minor = ctx.Get("k8s.version").data.value("minor", std::string());
  while (!server_minor.empty() && !std::isdigit(static_cast<unsigned char>(server_minor.back())))
    server_minor.pop_back();
  details.push_back(fmt::format(
      "API server {}; kubelets {}", ctx.Get("k8s.version").data.value("git_version", std::string()),
      kubelet_minors.empty() ? std::string("not visible") : fmt::format("1.{}", fmt::join(kubelet_minors, ", 1."))));
  bool daemonsets_visible = w.ok() && std::any_of(Arr(w, "workloads").begin(), Arr(w, "workloads").end(),
                                                  [](const json& x) { return S(x, "kind") == "DaemonSet"; });
  bool vcluster = !markers.empty();
  details.insert(details.end(), markers.begin(), markers.begin() + std::min<size_t>(markers.size(), 8));
  if (!nodes_visible || !daemonsets_visible) {
    return core::Warn(Reason::kUnverified,
                      fmt::format("{}host facts are hidden from the audit identity ({}): node-level checks through the "
                                  "API are unverified",
                                  vcluster ? "vCluster: " : "",
                                  !nodes_visible ? (nodes.ok() ? "no node listed" : "nodes not readable")
                                                 : "no DaemonSet visible"))
        .Details(details);
  }
  return core::Pass(vcluster ? "vCluster with its nodes, DaemonSets and operators visible to the audit"
                             : "a dedicated cluster: nodes, DaemonSets and operators visible to the audit")
      .Details(details);
}

// ---- node: the kubelet ----

Finding KubeletCpuManager(const JudgeContext& ctx) {
  if (auto s = SkipUnlessNvidia(ctx.Get("pci.devices"), ctx.Get("gpu.inventory"))) return *s;
  const Evidence& e = ctx.Get("kubelet.cpu-manager");
  if (auto p = core::EvidenceProblem(e, "kubelet CPU manager files")) return *p;
  if (!e.data.value("kubelet", false))
    return core::Warn(Reason::kUnverified,
                      "no kubelet file readable here (/var/lib/kubelet): the CPU manager policy is "
                      "unknown");
  std::string policy = e.data["state_policy"].is_string()    ? e.data["state_policy"].get<std::string>()
                       : e.data["config_policy"].is_string() ? e.data["config_policy"].get<std::string>()
                                                             : "";
  if (policy == "static") return core::Pass("kubelet CPU manager policy: static").Observed(policy);
  return core::Warn(Reason::kConfig, fmt::format("kubelet CPU manager policy '{}': GPU pods get no exclusive, "
                                                 "NUMA-aligned cores",
                                                 policy.empty() ? "unknown" : policy))
      .Observed(policy)
      .Expected("static");
}

}  // namespace

// ---- the Kubernetes half of Slurm+Kubernetes rows ----

// auto-remediation: something detects failing nodes (node-problem-detector or a GPU health agent)
// and something acts on it (cordon, drain, reboot or replace): NVSentinel, IBM Autopilot, gpud,
// medik8s (node-healthcheck, self-node-remediation), the machine-health-check of Cluster API.
Finding AutoRemediationOnKubernetes(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.workloads", "workload list"}})) return *p;
  const Evidence& w = ctx.Get("k8s.workloads");
  auto detect = Workloads(w, {"node-problem-detector", "nvsentinel", "autopilot", "gpud", "dcgm-health"});
  auto act = Workloads(w, {"nvsentinel", "autopilot", "gpud", "node-healthcheck", "self-node-remediation",
                           "machine-health", "fault-remediation", "draino", "node-remediation"});
  std::vector<std::string> lines;
  for (const json* d : detect) lines.push_back("detects: " + Describe(*d));
  for (const json* a : act) lines.push_back("remediates: " + Describe(*a));
  bool detects = AnyReady(detect), acts = AnyReady(act);
  Finding f = detects && acts ? core::Pass("failing nodes are detected and remediated automatically")
              : detects       ? core::Warn(Reason::kConfig,
                                           "failing nodes are detected (node conditions) but nothing cordons, drains or "
                                                 "replaces them")
              : acts          ? core::Warn(Reason::kConfig,
                                           "a remediation controller runs, but no node problem detector "
                                                    "feeds it")
                              : core::Warn(Reason::kConfig,
                                           "no automated remediation: no node problem detector, no remediation "
                                                    "controller");
  return f.Details(lines)
      .Observed(fmt::format("detection {}, remediation {}", detects ? "running" : "none", acts ? "running" : "none"))
      .Expected(
          "node-problem-detector (or a GPU health agent) and a remediation controller (NVSentinel, Autopilot, "
          "gpud, medik8s)");
}

// monitoring-readiness on Kubernetes: ten parts, one point each, from the workloads, the
// ServiceMonitors, the PrometheusRules and the pods of the cluster.
Finding MonitoringReadinessOnKubernetes(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.workloads", "workload list"}, {"k8s.operators", "operators"}})) return *p;
  const Evidence& w = ctx.Get("k8s.workloads");
  std::vector<ReadinessPart> parts;
  auto running = [&](const char* title, std::initializer_list<std::string_view> needles) {
    auto found = Workloads(w, needles);
    std::vector<std::string> seen;
    for (const json* x : found) seen.push_back(Describe(*x));
    parts.push_back({title, AnyReady(found), seen.empty() ? "none" : Names(seen, 2)});
  };
  running("GPU exporter (dcgm-exporter, AMD device-metrics-exporter)", {"dcgm-exporter", "device-metrics-exporter"});
  {
    std::vector<std::string> monitors;
    for (const auto& m : Arr(ctx.Get("k8s.operators"), "service_monitors")) {
      std::string n = S(m, "name");
      if (Contains(n, "dcgm") || Contains(n, "gpu")) monitors.push_back(n);
    }
    parts.push_back({"GPU ServiceMonitor", !monitors.empty(), monitors.empty() ? "none" : Names(monitors, 3)});
  }
  // The server, not its operator: by the names kube-prometheus and the Helm charts give it, or its image.
  running("Prometheus (or VictoriaMetrics)", {"prometheus-k8s", "prometheus-server", "prometheus/prometheus:",
                                              "vmagent", "vmsingle", "victoria-metrics-single"});
  running("Grafana", {"grafana"});
  running("Alertmanager", {"alertmanager"});
  {
    // Alerting rules: PrometheusRule objects holding at least one alert. Unread here (a bundle of
    // an older version, a denied list) leaves this one part not given, not the whole score.
    const Evidence& ar = ctx.Get("k8s.alert-rules");
    if (ar.ok()) {
      if (auto p = Unread(ctx, {{"k8s.alert-rules", "PrometheusRules"}})) return *p;  // read, but misshapen
    }
    if (!ar.ok()) {
      std::string why = ar.error.empty() ? std::string(core::ToString(ar.status)) : ar.error;
      parts.push_back({"alerting rules", false, "PrometheusRules unread: " + util::Ellipsize(why, 120), true});
    } else {
      long long alerts = 0;
      std::vector<std::string> named;
      for (const auto& r : Arr(ar, "rules")) {
        long long n = r.value("alerts", 0LL);
        alerts += n;
        if (n > 0) named.push_back(fmt::format("{}/{} ({})", S(r, "namespace"), S(r, "name"), n));
      }
      parts.push_back({"alerting rules", alerts > 0,
                       alerts > 0                       ? fmt::format("{} alert(s) in {}", alerts, Names(named, 3))
                       : ar.data.value("served", false) ? "PrometheusRules hold no alert"
                                                        : "PrometheusRule not served"});
    }
  }
  running("kube-state-metrics", {"kube-state-metrics"});
  running("node-exporter", {"node-exporter"});
  running("GPU Feature Discovery", {"gpu-feature-discovery"});
  running("log aggregation (Loki, Elasticsearch, Promtail, Fluent Bit, Vector)",
          {"loki", "elasticsearch", "opensearch", "promtail", "fluent-bit", "fluentbit", "fluentd", "vector"});
  return ReadinessScore(parts, ">= 8 of 10 parts running in the cluster");
}

// ---- topology-aware scheduling ----

namespace {

const json& Labels(const GpuNode& g) {
  static const json empty = json::object();
  auto it = g.node->find("labels");
  return it != g.node->end() && it->is_object() ? *it : empty;
}

std::string Label(const GpuNode& g, const std::string& key) { return S(Labels(g), key.c_str()); }

// The node carries every label of `wanted` with its value (a flavor's nodeLabels, a HyperNode's
// matchLabels).
bool CarriesLabels(const GpuNode& g, const json& wanted) {
  for (const auto& [k, v] : wanted.items())
    if (!v.is_string() || Label(g, k) != v.get<std::string>()) return false;
  return true;
}

// A node of a GB200/GB300 NVL72 rack: GFD labels its NVLink clique on multi-node NVLink systems,
// and names the product.
bool Nvl72(const GpuNode& g) {
  std::string product = Label(g, "nvidia.com/gpu.product");
  return !Label(g, "nvidia.com/gpu.clique").empty() || Contains(product, "GB200") || Contains(product, "GB300");
}

// Node labels that place a node in the network (not zone or region): the providers' (GKE
// gce-topology-*, AWS network-node-layer-N), NVIDIA topograph's, the NVLink clique, and any key
// naming a block, rack, switch, leaf or spine.
bool NetworkTopologyLabel(std::string_view key) {
  if (key.starts_with("cloud.google.com/gce-topology-") || key.starts_with("topology.k8s.aws/network-node-layer-") ||
      key.starts_with("network.topology.nvidia.com/") || key == "nvidia.com/gpu.clique")
    return true;
  auto slash = key.rfind('/');
  std::string_view name = slash == std::string_view::npos ? key : key.substr(slash + 1);
  for (std::string_view w : {"block", "rack", "switch", "leaf", "spine"})
    if (Contains(name, w)) return true;
  return false;
}

// A level that groups nodes by NVLink domain rather than by switch.
bool NvlinkLevel(std::string_view key) {
  return key == "nvidia.com/gpu.clique" || key == "network.topology.nvidia.com/accelerator";
}
// A level NVL72 placement can use: the NVLink domain, or a block (Slurm's topology/block, the
// providers' rack-scale blocks).
bool BlockLevel(std::string_view key) { return NvlinkLevel(key) || Contains(key, "block"); }

// A Volcano regexMatch pattern (Go RE2 syntax) as POSIX extended, compiled once and matched by
// glibc's regex, which has no exponential backtracking for patterns without back-references;
// not ok() when the pattern uses what ERE lacks (back-references, lookaround, classes other than
// \d \w \s).
class NodePattern {
 public:
  explicit NodePattern(const std::string& pattern) {
    if (auto ere = ToEre(pattern)) ok_ = regcomp(&re_, ere->c_str(), REG_EXTENDED | REG_NOSUB) == 0;
  }
  ~NodePattern() {
    if (ok_) regfree(&re_);
  }
  NodePattern(const NodePattern&) = delete;
  NodePattern& operator=(const NodePattern&) = delete;
  bool ok() const { return ok_; }
  bool Matches(const std::string& name) const { return regexec(&re_, name.c_str(), 0, nullptr, 0) == 0; }

 private:
  static std::optional<std::string> ToEre(const std::string& pattern) {
    std::string ere;
    for (size_t i = 0; i < pattern.size(); ++i) {
      if (pattern[i] != '\\') {
        ere += pattern[i];
        continue;
      }
      if (++i == pattern.size()) return std::nullopt;
      switch (char c = pattern[i]) {
        case 'd':
          ere += "[0-9]";
          break;
        case 'w':
          ere += "[0-9A-Za-z_]";
          break;
        case 's':
          ere += "[[:space:]]";
          break;
        case '.':
        case '-':
        case '[':
        case ']':
        case '(':
        case ')':
        case '{':
        case '}':
        case '*':
        case '+':
        case '?':
        case '^':
        case '$':
        case '|':
        case '\\':
        case '/':
          ere += '\\';
          ere += c;
          break;
        default:
          return std::nullopt;
      }
    }
    if (Contains(ere, "(?")) return std::nullopt;
    return ere;
  }
  regex_t re_{};
  bool ok_ = false;
};

// Which Node members of HyperNodes hold each GPU node: node -> the tier-lowest HyperNode's name.
struct HyperNodeCover {
  std::map<std::string, std::string> leaf;               // node -> HyperNode (lowest tier) holding it
  std::map<std::string, std::set<std::string>> members;  // HyperNode -> its GPU nodes
  std::vector<std::string> unread;                       // members whose selector could not be applied
  int max_tier = -1;
};

HyperNodeCover CoverByHyperNodes(const Evidence& topo, const std::vector<GpuNode>& gpus) {
  HyperNodeCover c;
  std::map<std::string, int> tier_of_leaf;
  for (const auto& h : Arr(topo, "hypernodes")) {
    int tier = h.value("tier", -1);
    c.max_tier = std::max(c.max_tier, tier);
    for (const auto& m : h.value("members", json::array())) {
      if (!m.is_object() || S(m, "type") != "Node") continue;
      std::string exact = S(m, "exact"), regex = S(m, "regex");
      const json& labels = m.contains("labels") && m["labels"].is_object() ? m["labels"] : json::object();
      bool unread = m.value("unread", false) || (exact.empty() && regex.empty() && labels.empty());
      if (unread) {
        c.unread.push_back(S(h, "name"));
        continue;
      }
      std::optional<NodePattern> pattern;
      if (exact.empty() && !regex.empty()) {
        pattern.emplace(regex);
        if (!pattern->ok()) {
          c.unread.push_back(fmt::format("{} (pattern {})", S(h, "name"), regex));
          continue;
        }
      }
      for (const auto& g : gpus) {
        bool in = false;
        if (!exact.empty()) {
          in = exact == g.name;
        } else if (pattern) {
          in = pattern->Matches(g.name);
        } else {
          in = CarriesLabels(g, labels);
        }
        if (!in) continue;
        c.members[S(h, "name")].insert(g.name);
        auto it = tier_of_leaf.find(g.name);
        if (it == tier_of_leaf.end() || tier < it->second) {
          tier_of_leaf[g.name] = tier;
          c.leaf[g.name] = S(h, "name");
        }
      }
    }
  }
  return c;
}

// Kueue: the GPU nodes each Topology reaches, through the ResourceFlavors naming it (a node belongs
// to a flavor when it carries the flavor's nodeLabels, and to a topology unit when it carries every
// level's label).
struct KueueCover {
  std::map<std::string, std::string> topology_of;  // node -> Topology
  std::vector<std::string> notes;
  std::map<std::string, std::vector<std::string>> levels;  // bound Topology -> levels
};

KueueCover CoverByKueue(const Evidence& topo, const std::vector<GpuNode>& gpus) {
  KueueCover c;
  std::map<std::string, std::vector<std::string>> topologies;
  for (const auto& t : Arr(topo, "kueue_topologies")) {
    std::vector<std::string> levels;
    for (const auto& l : t.value("levels", json::array()))
      if (l.is_string()) levels.push_back(l.get<std::string>());
    topologies[S(t, "name")] = levels;
  }
  std::set<std::string> bound;
  for (const auto& f : Arr(topo, "resource_flavors")) {
    std::string name = S(f, "topology");
    if (name.empty()) continue;
    auto t = topologies.find(name);
    if (t == topologies.end()) {
      c.notes.push_back(fmt::format("ResourceFlavor {} names Topology {}, which does not exist", S(f, "name"), name));
      continue;
    }
    bound.insert(name);
    c.levels[name] = t->second;
    const json node_labels = f.value("node_labels", json::object());
    for (const auto& g : gpus) {
      bool in = CarriesLabels(g, node_labels);
      for (const auto& level : t->second)
        if (level != "kubernetes.io/hostname" && Label(g, level).empty()) in = false;
      if (in) c.topology_of.emplace(g.name, name);
    }
  }
  for (const auto& [name, levels] : topologies)
    if (!bound.count(name))
      c.notes.push_back(fmt::format("Topology {} is named by no ResourceFlavor: Kueue does not place by it", name));
  return c;
}

// The network label keys the GPU nodes carry, with how many nodes carry each.
std::map<std::string, size_t> NetworkLabels(const std::vector<GpuNode>& gpus) {
  std::map<std::string, size_t> keys;
  for (const auto& g : gpus)
    for (const auto& [k, v] : Labels(g).items())
      if (NetworkTopologyLabel(k) && v.is_string() && !v.get<std::string>().empty()) ++keys[k];
  return keys;
}

std::string Join(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, ", ")); }

}  // namespace

// topology-conf on Kubernetes: a scheduler that places by network topology (Kueue TAS through a
// ResourceFlavor, Volcano HyperNodes, JobSet exclusive placement on a topology label), covering
// every GPU node; NVL72 nodes need a level that groups them by NVLink domain.
Finding TopologyConfOnKubernetes(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.nodes", "node list"}})) return *p;
  auto gpus = GpuNodes(ctx.Get("k8s.nodes"));
  if (gpus.empty()) return core::Skip(Reason::kNotApplicable, "no node advertises or is labelled with GPUs");
  if (auto p = Unread(ctx, {{"k8s.topology", "topology-aware scheduling objects"}})) return *p;
  const Evidence& topo = ctx.Get("k8s.topology");
  auto kueue = CoverByKueue(topo, gpus);
  auto volcano = CoverByHyperNodes(topo, gpus);
  auto labels = NetworkLabels(gpus);
  std::vector<std::string> lines = kueue.notes, mechanisms;
  for (const auto& [name, levels] : kueue.levels)
    mechanisms.push_back(fmt::format("Kueue Topology {} ({})", name, Join(levels)));
  if (!Arr(topo, "hypernodes").empty())
    mechanisms.push_back(fmt::format("Volcano HyperNodes ({}, {} tiers)", Arr(topo, "hypernodes").size(),
                                     std::max(volcano.max_tier, 0)));
  // JobSet places a job's pods exclusively per value of a node label: usable when every GPU node
  // carries one such label.
  std::string jobset_key;
  if (topo.data.value("jobset", false)) {
    for (const auto& [k, n] : labels)
      if (n == gpus.size() && (jobset_key.empty() || BlockLevel(k))) jobset_key = k;
    if (!jobset_key.empty()) mechanisms.push_back("JobSet exclusive placement on " + jobset_key);
  }
  for (const auto& [k, n] : labels) lines.push_back(fmt::format("label {} on {} of {} GPU nodes", k, n, gpus.size()));
  for (const auto& u : volcano.unread) lines.push_back("HyperNode member not understood: " + u);
  if (mechanisms.empty()) {
    std::vector<std::string> keys;
    for (const auto& [k, n] : labels) keys.push_back(k);
    return core::Warn(Reason::kConfig,
                      keys.empty() ? "no topology-aware scheduling: no Kueue Topology, no Volcano HyperNode, no "
                                     "network topology label on the GPU nodes"
                                   : fmt::format("the GPU nodes carry network topology labels ({}) but no scheduler "
                                                 "places by them (no Kueue Topology bound to a ResourceFlavor, no "
                                                 "Volcano HyperNode, no JobSet)",
                                                 Names(keys, 3)))
        .Details(lines)
        .Expected("Kueue TAS, Volcano HyperNodes or JobSet placement covering every GPU node");
  }
  std::vector<std::string> outside, nvl72, tree_only;
  for (const auto& g : gpus) {
    bool by_kueue = kueue.topology_of.count(g.name) > 0, by_volcano = volcano.leaf.count(g.name) > 0;
    if (!by_kueue && !by_volcano && jobset_key.empty()) outside.push_back(g.name);
    if (!Nvl72(g)) continue;
    nvl72.push_back(g.name);
    // A block level: Kueue's topology has one; Volcano's leaf HyperNode holds one clique only; or
    // JobSet places on a block label.
    bool block = false;
    if (by_kueue)
      for (const auto& l : kueue.levels[kueue.topology_of[g.name]]) block = block || BlockLevel(l);
    if (by_volcano) {
      std::set<std::string> cliques;
      for (const auto& peer : volcano.members[volcano.leaf[g.name]])
        for (const auto& h : gpus)
          if (h.name == peer) cliques.insert(Label(h, "nvidia.com/gpu.clique"));
      block = block || (cliques.size() == 1 && !cliques.begin()->empty());
    }
    if (!jobset_key.empty() && BlockLevel(jobset_key)) block = true;
    if (!block) tree_only.push_back(g.name);
  }
  lines.insert(lines.begin(), "placement: " + Join(mechanisms));
  std::string expected = "topology-aware scheduling covering every GPU node (block levels on NVL72)";
  if (!outside.empty() && !volcano.unread.empty())
    return core::Warn(Reason::kUnverified,
                      fmt::format("{} of {} GPU nodes not matched by a topology unit, and HyperNode selectors that "
                                  "could not be applied: {}",
                                  outside.size(), gpus.size(), Names(outside)))
        .Details(lines)
        .Expected(expected);
  if (!outside.empty())
    return core::Warn(Reason::kConfig, fmt::format("{} of {} GPU nodes outside every topology unit: {}", outside.size(),
                                                   gpus.size(), Names(outside)))
        .Details(lines)
        .Expected(expected);
  if (!tree_only.empty())
    return core::Warn(Reason::kConfig,
                      fmt::format("{} of {} NVL72 node(s) placed by switch tiers only: no level groups them by "
                                  "NVLink domain (nvidia.com/gpu.clique or a block label): {}",
                                  tree_only.size(), nvl72.size(), Names(tree_only)))
        .Details(lines)
        .Expected(expected);
  return core::Pass(fmt::format("{} covers all {} GPU nodes{}", Join(mechanisms), gpus.size(),
                                nvl72.empty() ? "" : fmt::format(" (block placement on {} NVL72 nodes)", nvl72.size())))
      .Details(lines)
      .Expected(expected);
}

// mnnvl-compute-domain on Kubernetes: NVL72 nodes share NVLink across nodes through the NVIDIA DRA
// driver's ComputeDomains (which start IMEX daemons per domain), and GFD labels each node's clique.
Finding MnnvlComputeDomainOnKubernetes(const JudgeContext& ctx) {
  if (auto p = Unread(ctx, {{"k8s.nodes", "node list"}})) return *p;
  std::vector<GpuNode> racks;
  for (const auto& g : GpuNodes(ctx.Get("k8s.nodes")))
    if (Nvl72(g)) racks.push_back(g);
  if (racks.empty()) return core::Skip(Reason::kNotApplicable, "no GB200/GB300 (NVL72) node in the node list");
  if (auto p = Unread(ctx, {{"k8s.topology", "topology-aware scheduling objects"}, {"k8s.operators", "operators"}}))
    return *p;
  const Evidence& topo = ctx.Get("k8s.topology");
  bool driver = false;
  for (const auto& d : Arr(ctx.Get("k8s.operators"), "dra_drivers"))
    if (d == "compute-domain.nvidia.com") driver = true;
  std::vector<std::string> unlabelled, problems, lines;
  std::set<std::string> cliques;
  for (const auto& g : racks) {
    std::string c = Label(g, "nvidia.com/gpu.clique");
    if (c.empty())
      unlabelled.push_back(g.name);
    else
      cliques.insert(c);
  }
  if (!topo.data.value("compute_domain_crd", false))
    problems.push_back(
        "ComputeDomain (computedomains.resource.nvidia.com) is not served: the NVIDIA DRA driver for "
        "GPUs is not installed");
  if (!driver)
    problems.push_back("no ResourceSlice of the compute-domain.nvidia.com DRA driver: no node offers IMEX channels");
  if (!unlabelled.empty())
    problems.push_back(fmt::format("{} of {} NVL72 node(s) without an nvidia.com/gpu.clique label: {}",
                                   unlabelled.size(), racks.size(), Names(unlabelled)));
  for (const auto& d : Arr(topo, "compute_domains")) {
    std::string status = S(d, "status");
    lines.push_back(fmt::format("ComputeDomain {}/{}: {} node(s), {}", S(d, "namespace"), S(d, "name"),
                                d.value("nodes", -1), status.empty() ? "no status" : status));
    if (status != "Ready")
      problems.push_back(fmt::format("ComputeDomain {}/{} is not Ready ({})", S(d, "namespace"), S(d, "name"),
                                     status.empty() ? "no status" : status));
  }
  lines.push_back(fmt::format("NVL72 nodes: {}, NVLink cliques: {}", racks.size(), cliques.size()));
  Finding f = problems.empty() ? core::Pass(fmt::format("ComputeDomains usable on all {} NVL72 node(s) ({} clique(s), "
                                                        "DRA driver compute-domain.nvidia.com)",
                                                        racks.size(), cliques.size()))
                               : core::Warn(Reason::kConfig, problems.front());
  return f.Details(problems).Details(lines).Expected(
      "the NVIDIA DRA driver's ComputeDomains, its compute-domain.nvidia.com slices, and a clique label on "
      "every NVL72 node");
}

// prolog-fast on Kubernetes (probe k8s-gpu-pod): a one-GPU pod's container runs within 30 s of the
// pod's creation, its image pull not counted (the Slurm half's "fast" line); over 120 s is FAIL.
// The pod without GPUs beside it tells the GPU path's share (device plugin, DRA, admission).
Finding PrologFastOnKubernetes(const JudgeContext& ctx) {
  const Evidence& probe = ctx.Get("probe.k8s-gpu-pod");
  if (!Probed(probe)) return core::Skip(Reason::kProbeDisabled, "GPU pod start time not measured (probe k8s-gpu-pod)");
  if (auto p = core::EvidenceProblem(probe, "k8s-gpu-pod probe")) return *p;
  if (!S(probe.data, "error").empty())
    return core::Warn(Reason::kUnverified, "the k8s-gpu-pod probe could not make its pods: " + S(probe.data, "error"));
  if (S(probe.data, "resource").empty())
    return core::Warn(Reason::kUnverified, "no node offers nvidia.com/gpu or amd.com/gpu: no GPU pod to time");
  double budget = NumberAt(probe.data, "budget_s");
  const json* gpu = nullptr;
  std::vector<std::string> lines;
  for (const auto& p : Arr(probe, "pods")) {
    if (S(p, "role") == "gpu") gpu = &p;
    std::string what = S(p, "role") == "gpu" ? "one-GPU pod" : "pod without GPUs";
    if (!TrueAt(p, "accepted")) {
      lines.push_back(fmt::format("{}: {}", what, S(p, "error")));
    } else if (S(p, "scheduled").empty()) {
      lines.push_back(fmt::format("{}: not scheduled ({}: {})", what, S(p, "unscheduled_reason"), S(p, "message")));
    } else {
      double pull = NumberAt(p, "pull_s");
      lines.push_back(fmt::format("{} on {}: scheduled in {:.0f} s, container {} {}, image pull {}", what, S(p, "node"),
                                  NumberAt(p, "schedule_s"), S(p, "started").empty() ? "not started:" : "started in",
                                  S(p, "started").empty() ? S(p, "state_reason") + " " + S(p, "state_message")
                                                          : fmt::format("{:.0f} s", NumberAt(p, "start_s")),
                                  pull < 0    ? "unknown"
                                  : pull == 0 ? "none (image present)"
                                              : fmt::format("{:.1f} s", pull)));
    }
  }
  const std::string expected = "< 30 s from the pod's creation to a running container, image pull apart";
  if (!gpu || !TrueAt(*gpu, "accepted"))
    return core::Warn(Reason::kUnverified,
                      "the one-GPU pod was not made: " + (gpu ? S(*gpu, "error") : std::string("no answer")))
        .Details(lines);
  const json& g = *gpu;
  if (S(g, "scheduled").empty())
    return core::Warn(
               Reason::kUnverified,
               fmt::format("the one-GPU pod was not scheduled within {:.0f} s ({}): no free GPU, or the queue", budget,
                           S(g, "unscheduled_reason").empty() ? "no reason given" : S(g, "unscheduled_reason")))
        .Details(lines)
        .Expected(expected);
  std::string reason = S(g, "state_reason");
  long long exit_code =
      g.contains("exit_code") && g["exit_code"].is_number_integer() ? g["exit_code"].get<long long>() : -1;
  if (S(g, "started").empty() || (S(g, "state") == "terminated" && exit_code != 0))
    return core::Warn(Reason::kUnverified,
                      fmt::format("the one-GPU pod's container did not run: {}{}",
                                  reason.empty() ? fmt::format("not started within {:.0f} s", budget) : reason,
                                  S(g, "state") == "terminated" ? fmt::format(" (exit {})", exit_code) : ""))
        .Details(lines)
        .Expected(expected);
  if (TrueAt(g, "clock_skew"))
    return core::Warn(Reason::kUnverified,
                      fmt::format("the one-GPU pod's container started before it was scheduled by {}'s clock: the "
                                  "node's clock and the API server's disagree",
                                  S(g, "node")))
        .Details(lines)
        .Expected(expected);
  // The start overhead: creation to a running container, less the image pull, and less the wait
  // for room when the scheduler had none at first (FailedScheduling: a queue, not start-up).
  bool queued = TrueAt(g, "queued");
  double start = NumberAt(g, "start_s"), pull = NumberAt(g, "pull_s"),
         wait = queued ? std::max(0.0, NumberAt(g, "schedule_s")) : 0;
  double t = std::max(0.0, start - std::max(0.0, pull) - wait);
  if (queued) lines.push_back(fmt::format("waited {:.0f} s for a free GPU (FailedScheduling): not counted", wait));
  std::string observed =
      pull >= 0 ? fmt::format("{:.0f} s ({:.0f} s with the image pull{})", t, start, queued ? " and the wait" : "")
                : fmt::format("{:.0f} s, image pull included (pull time unread)", t);
  if (pull < 0 && t >= 30)
    return core::Warn(Reason::kUnverified,
                      fmt::format("a one-GPU pod took {:.0f} s to run, with an image pull of unknown length", start))
        .Details(lines)
        .Observed(observed)
        .Expected(expected);
  Finding f =
      t < 30 ? core::Pass(fmt::format("a one-GPU pod runs {:.0f} s after its creation{}", t,
                                      pull > 0 ? ", image pull apart" : ""))
      : t <= 120
          ? core::Warn(Reason::kConfig, fmt::format("a one-GPU pod takes {:.0f} s to run, image pull apart", t))
          : core::Fail(Severity::kConfig, fmt::format("a one-GPU pod takes {:.0f} s to run, image pull apart", t));
  return f.Details(lines).Observed(observed).Expected(expected);
}

// How many network tiers the cluster's topology objects describe (nccl-ib-qps-entropy): Kueue
// Topology levels (hostname and NVLink levels aside), Volcano HyperNode tiers, or the providers'
// network layer labels. levels -1 when nothing tells.
FabricTiers FabricTiersOnKubernetes(const JudgeContext& ctx) {
  FabricTiers t;
  const Evidence& nodes = ctx.Get("k8s.nodes");
  if (!nodes.ok() || !Misshapen("k8s.nodes", nodes).empty()) return t;
  auto gpus = GpuNodes(nodes);
  t.gpu_nodes = gpus.size();
  const Evidence& topo = ctx.Get("k8s.topology");
  if (topo.ok() && Misshapen("k8s.topology", topo).empty()) {
    for (const auto& [name, levels] : CoverByKueue(topo, gpus).levels) {
      int n = 0;
      for (const auto& l : levels) n += l != "kubernetes.io/hostname" && !NvlinkLevel(l);
      if (n > t.levels) {
        t.levels = n;
        t.why = fmt::format("Kueue Topology {} has {} switch level(s)", name, n);
      }
    }
    int tiers = CoverByHyperNodes(topo, gpus).max_tier;
    if (tiers > t.levels) {
      t.levels = tiers;
      t.why = fmt::format("Volcano HyperNodes have {} tier(s)", tiers);
    }
  }
  if (t.levels < 0) {
    int n = 0;
    std::vector<std::string> keys;
    for (const auto& [k, c] : NetworkLabels(gpus)) {
      if (NvlinkLevel(k) || k.starts_with("cloud.google.com/gce-topology-host")) continue;
      ++n;
      keys.push_back(k);
    }
    if (n > 0) {
      t.levels = n;
      t.why = fmt::format("the GPU nodes carry {} network layer label(s) ({})", n, Names(keys, 3));
    }
  }
  return t;
}

void RegisterKubernetesChecks(core::Registry& r) {
  auto cluster = [](CheckInfo i) {
    i.targets = kK;
    i.cluster = true;
    return i;
  };
  r.Add(
      {cluster({.id = "security-kubernetes-nodes-proxy",
                .category = "isolation",
                .title = "No workload identity can reach the kubelet API through nodes/proxy",
                .rationale = "get or create on nodes/proxy reaches every kubelet's API: exec into any pod on the "
                             "node, read its secrets and logs.",
                .remediation = "Remove nodes/proxy from roles bound to workload service accounts and tenants; keep it "
                               "to the control plane and reviewed platform components.",
                .references = {{"Kubernetes: kubelet authorization",
                                "https://kubernetes.io/docs/reference/access-authn-authz/kubelet-authn-authz/"}},
                .needs = {"k8s.rbac", "k8s.access"},
                .reproduce = "kubectl get clusterroles,clusterrolebindings,roles,rolebindings -A -o json"}),
       NodesProxy});
  r.Add({CheckInfo{
             .id = "kubelet-cpu-manager-static",
             .category = "orchestration",
             .title = "The kubelet's CPU manager is static on GPU nodes",
             .rationale = "With the static policy, Guaranteed GPU pods get exclusive cores near their GPUs.",
             .remediation = "Set cpuManagerPolicy: static (with reserved CPUs) in the kubelet configuration.",
             .targets = kK,
             .needs = {"kubelet.cpu-manager", "pci.devices", "gpu.inventory"},
             .reproduce = "cat /var/lib/kubelet/cpu_manager_state; grep cpuManagerPolicy /var/lib/kubelet/config.yaml"},
         KubeletCpuManager});
  r.Add({cluster({.id = "gpu-operator",
                  .category = "orchestration",
                  .title = "A GPU operator manages the GPU nodes and every GPU node advertises its GPUs",
                  .rationale = "The operator keeps driver, toolkit, device plugin, DCGM exporter and GFD in step on "
                               "every node; a GPU node that advertises no GPU runs no GPU pod.",
                  .remediation = "Install the NVIDIA (or AMD) GPU Operator; fix the device plugin on nodes that "
                                 "advertise no GPUs.",
                  .criterion = "gpu-operator",
                  .needs = {"k8s.nodes", "k8s.operators", "k8s.workloads"},
                  .reproduce = "kubectl get clusterpolicies; kubectl get ds -A | grep nvidia; kubectl describe nodes | "
                               "grep nvidia.com/gpu"}),
         GpuOperator});
  r.Add({cluster({.id = "network-operator",
                  .category = "orchestration",
                  .title = "GPU nodes expose their RDMA NICs to pods",
                  .rationale = "Without RDMA resources, multi-node NCCL inside pods falls back to TCP.",
                  .remediation = "Install the NVIDIA Network Operator (RDMA shared device plugin or SR-IOV), the EFA "
                                 "device plugin, or a DRA network driver.",
                  .criterion = "network-operator",
                  .needs = {"k8s.nodes", "k8s.operators"},
                  .reproduce =
                      "kubectl get nicclusterpolicies; kubectl get nodes -o json | jq '.items[].status.allocatable'"}),
         NetworkOperator});
  r.Add({cluster({.id = "mpi-operator",
                  .category = "orchestration",
                  .title = "A multi-node job launcher runs (MPI Operator, Training Operator, Trainer, JobSet)",
                  .rationale = "Multi-node training needs a controller that starts and wires the workers together.",
                  .remediation = "Install the MPI Operator, Kubeflow Trainer or JobSet.",
                  .criterion = "mpi-operator",
                  .needs = {"k8s.api-groups", "k8s.workloads"},
                  .reproduce = "kubectl get crd | grep -E 'mpijobs|pytorchjobs|trainjobs|jobsets'"}),
         MpiOperator});
  r.Add({cluster({.id = "workload-schedulers",
                  .category = "orchestration",
                  .title = "A GPU-aware batch scheduler runs (Kueue, Volcano, KAI Scheduler)",
                  .rationale = "Queues, quotas and fair sharing of GPUs need a batch scheduler on top of "
                               "kube-scheduler.",
                  .remediation = "Install Kueue, Volcano or the KAI Scheduler.",
                  .criterion = "workload-schedulers",
                  .needs = {"k8s.api-groups", "k8s.workloads"},
                  .reproduce = "kubectl get clusterqueues,queues.scheduling.volcano.sh; kubectl get pods -A | grep -E "
                               "'kueue|volcano|kai'"}),
         WorkloadSchedulers});
  r.Add({cluster({.id = "gang-scheduling",
                  .category = "orchestration",
                  .title = "Gang scheduling: a multi-pod job starts all at once or not at all",
                  .rationale = "Without gang scheduling, partly started jobs hold GPUs while waiting for the rest.",
                  .remediation = "Kueue (all-or-nothing admission), Volcano's gang plugin, KAI Scheduler PodGroups or "
                                 "scheduler-plugins coscheduling.",
                  .criterion = "gang-scheduling",
                  .needs = {"k8s.api-groups", "k8s.workloads", "k8s.operators"},
                  .reproduce = "kubectl -n volcano-system get cm volcano-scheduler-configmap -o yaml"}),
         GangScheduling});
  r.Add({cluster({.id = "bin-packing",
                  .category = "orchestration",
                  .title = "GPU pods are bin-packed",
                  .rationale = "Spreading small GPU jobs fragments nodes so that whole-node jobs cannot start.",
                  .remediation = "Volcano's binpack plugin, the KAI Scheduler, or a kube-scheduler profile scoring "
                                 "MostAllocated.",
                  .criterion = "bin-packing",
                  .needs = {"k8s.api-groups", "k8s.workloads", "k8s.operators"},
                  .reproduce = "kubectl -n volcano-system get cm volcano-scheduler-configmap -o yaml"}),
         BinPacking});
  r.Add({cluster({.id = "ingress-controller",
                  .category = "networking",
                  .title = "An ingress controller or Gateway serves the cluster",
                  .rationale = "Inference endpoints and notebooks need a way in.",
                  .remediation = "Install an ingress controller (ingress-nginx, Traefik ...) or a Gateway API "
                                 "implementation.",
                  .criterion = "ingress-controller",
                  .needs = {"k8s.network", "k8s.workloads"},
                  .reproduce = "kubectl get ingressclass,gatewayclass"}),
         IngressController});
  r.Add({cluster({.id = "load-balancer",
                  .category = "networking",
                  .title = "Services of type LoadBalancer get an address",
                  .rationale = "Without a load-balancer implementation, LoadBalancer Services stay pending.",
                  .remediation = "A cloud load-balancer controller or MetalLB with an address pool.",
                  .criterion = "load-balancer",
                  .needs = {"k8s.network", "probe.k8s-lb"},
                  .probe = "k8s-lb",
                  .reproduce =
                      "kubectl get svc -A --field-selector spec.type=LoadBalancer; kubectl get ipaddresspools -A"}),
         LoadBalancer});
  r.Add({cluster({.id = "csi-rwx",
                  .category = "storage",
                  .title = "A ReadWriteMany-capable StorageClass exists",
                  .rationale = "Multi-node training reads datasets and writes checkpoints from every pod at once.",
                  .remediation = "Install a shared-filesystem CSI driver (NFS, CephFS, Lustre, Weka, VAST, a cloud "
                                 "file service) with a StorageClass.",
                  .criterion = "csi-rwx",
                  .needs = {"k8s.storage", "probe.k8s-pvc"},
                  .probe = "k8s-pvc",
                  .reproduce = "kubectl get storageclass; kubectl get pvc -A"}),
         CsiRwx});
  r.Add({cluster({.id = "default-storage-class",
                  .category = "storage",
                  .title = "Exactly one default StorageClass",
                  .rationale = "Charts and users create claims without a class; they bind only with one default.",
                  .remediation = "Annotate one class storageclass.kubernetes.io/is-default-class=true.",
                  .criterion = "default-storage-class",
                  .needs = {"k8s.storage", "probe.k8s-pvc"},
                  .probe = "k8s-pvc",
                  .reproduce = "kubectl get storageclass"}),
         DefaultStorageClass});
  r.Add({cluster({.id = "node-problem-detector",
                  .category = "health",
                  .title = "node-problem-detector runs on every GPU node",
                  .rationale = "It turns kernel and GPU faults into node conditions that remediation acts on.",
                  .remediation = "Deploy node-problem-detector as a DaemonSet covering the GPU nodes (tolerating their "
                                 "taints), with GPU rules.",
                  .criterion = "auto-remediation",
                  .needs = {"k8s.nodes", "k8s.workloads", "k8s.pods"},
                  .reproduce = "kubectl get pods -A -o wide | grep node-problem-detector"}),
         NodeProblemDetector});
  r.Add({cluster({.id = "metrics-server",
                  .category = "health",
                  .title = "The resource metrics API (metrics-server) is available",
                  .rationale = "kubectl top and autoscaling read it.",
                  .remediation = "Install metrics-server.",
                  .criterion = "monitoring-stack",
                  .needs = {"k8s.operators"},
                  .reproduce = "kubectl get apiservice v1beta1.metrics.k8s.io; kubectl top nodes"}),
         MetricsServer});
  r.Add({cluster({.id = "helm-access",
                  .category = "access",
                  .title = "The tenant can install Helm charts, cluster-scoped parts included",
                  .rationale = "Operators and most charts create CRDs, cluster roles and namespaces.",
                  .remediation = "Grant the tenant's admin identity cluster-scoped install rights (or install the "
                                 "charts it asks for).",
                  .criterion = "helm-access",
                  .needs = {"k8s.access"},
                  .reproduce =
                      "kubectl auth can-i create customresourcedefinitions; kubectl auth can-i create deployments"}),
         HelmAccess});
  r.Add({cluster({.id = "vcluster-tenancy",
                  .category = "access",
                  .title = "Host-level facts (nodes, DaemonSets, operators) are visible to the tenant",
                  .rationale = "A virtual cluster that hides its host leaves the node checks unverifiable.",
                  .remediation = "A dedicated cluster, or a vCluster with private nodes and read access to them.",
                  .criterion = "vcluster-tenancy",
                  .needs = {"k8s.version", "k8s.namespaces", "k8s.nodes", "k8s.workloads"},
                  .reproduce = "kubectl version; kubectl get nodes; kubectl get ds -A"}),
         VclusterTenancy});
  r.Add(
      {cluster({.id = "rbac-access",
                .category = "access",
                .title = "The tenant may run workloads and manage its own RBAC",
                .rationale = "Listing nodes and pods, creating pods, jobs, claims and services, and delegating "
                             "rights inside the tenant's namespaces are everyday needs.",
                .remediation = "Grant the tenant identity those verbs (cluster-admin of a dedicated cluster, or admin "
                               "of its namespaces plus read access to nodes).",
                .criterion = "rbac-access",
                .needs = {"k8s.access"},
                .reproduce = "kubectl auth can-i --list"}),
       RbacAccess});
}

}  // namespace clustermax::checks
