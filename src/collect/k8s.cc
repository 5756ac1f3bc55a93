// Collectors of a Kubernetes cluster's API view (the cluster checks of `audit --k8s`, run where the
// operator's kubeconfig is, or in a pod with its service account): every request is
// `kubectl get --raw PATH` or `kubectl auth can-i` through the host, so a bundle records the API's
// answers and a replay judges them again. Lists are read page by page (limit/continue); each
// object is reduced to the facts the checks read (collect/k8s_objects.*).
#include <algorithm>
#include <map>
#include <memory>
#include <set>

#include <fmt/format.h>

#include "collect/collector.h"
#include "collect/k8s_objects.h"
#include "collect/kubectl.h"
#include "util/k8s_names.h"
#include "util/strings.h"
#include "util/time.h"
#include "util/url.h"

namespace clustermax::collect {
namespace {

using core::Evidence;
using core::EvidenceStatus;
using nlohmann::json;

constexpr int kPageLimit = 250;  // objects per request (a node object with its image list is ~20-40 KB)
constexpr int kMaxPages = 400;   // 100,000 objects of one kind; beyond it the list is reported incomplete

// The API as one collector asks it: kubectl with the audit's context, every request bounded.
class Api {
 public:
  // Each request is bounded by the collector's timeout; a probe's --timeout is its poll budget, so
  // its requests take the default.
  Api(host::Host& h, const CollectOptions& o, std::string id, Evidence& e)
      : h_(h),
        o_(o),
        id_(std::move(id)),
        e_(e),
        timeout_(id_.starts_with("probe.") ? o.command_timeout : TimeoutFor(o, id_)) {
    // The context is read through the host, so a replay asks with the context it was recorded with.
    if (auto c = h_.GetEnv("CLUSTERMAX_KUBE_CONTEXT"); c && !c->empty()) context_ = *c;
  }

  std::vector<std::string> Argv(const std::vector<std::string>& args) const {
    return k8s::KubectlArgv(context_, std::chrono::duration_cast<std::chrono::seconds>(timeout_).count(), args);
  }

  // GET path: the body, or nullopt with the evidence marked (forbidden, not found, timeout ...).
  // With `absent_ok`, a NotFound answer sets *absent and marks nothing (a resource its group does
  // not serve in that version).
  std::optional<std::string> GetText(const std::string& path, bool absent_ok = false, bool* absent = nullptr) {
    auto spec = Command(Argv({"get", "--raw", path}), o_, id_);
    spec.timeout = timeout_;
    spec.max_output = 64u << 20;
    e_.sources.push_back(Source(spec));
    auto r = h_.Run(spec);
    if (r.status != host::IoStatus::kOk) {
      FailFromCommand(e_, r);
      return std::nullopt;
    }
    if (r.exit_code != 0) {
      if (absent_ok && k8s::ErrorReason(r.err) == "NotFound") {
        *absent = true;
        return std::nullopt;
      }
      Fail(path, r);
      return std::nullopt;
    }
    if (r.truncated) {
      Mark(EvidenceStatus::kError, fmt::format("GET {}: the answer is larger than 64 MiB", path));
      return std::nullopt;
    }
    return std::move(r.out);
  }

  std::optional<json> Get(const std::string& path, bool* absent = nullptr) {
    auto text = GetText(path, absent != nullptr, absent);
    if (!text) return std::nullopt;
    json doc = json::parse(*text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
      Mark(EvidenceStatus::kParseError,
           fmt::format("GET {}: not a JSON object: {}", path, util::Ellipsize(std::string(util::Trim(*text)), 200)));
      return std::nullopt;
    }
    return doc;
  }

  // Every item of a list, page by page; `each` sees each item. False when a page failed (the
  // evidence is marked) or the list did not end within kMaxPages.
  // With `absent` (a custom resource), a NotFound first page is an absent resource: true, *absent set.
  bool List(const std::string& path, const std::function<void(const json&)>& each, bool* absent = nullptr) {
    bool first = true, missing = false;
    auto r = k8s::ListAll(
        path, "", kPageLimit, kMaxPages,
        [&](const std::string& url) {
          auto text = GetText(url, absent != nullptr && first, &missing);
          first = false;
          return text;
        },
        each);
    malformed_ += r.malformed;
    if (missing) {
      *absent = true;
      return true;
    }
    if (r.outcome == k8s::ListResult::kNotAList) Mark(EvidenceStatus::kParseError, r.error);
    if (r.outcome == k8s::ListResult::kEndless) Mark(EvidenceStatus::kError, r.error);
    return r.outcome == k8s::ListResult::kOk;
  }

  // The served API groups: group -> preferred version ("nvidia.com" -> "v1").
  std::optional<std::map<std::string, std::string>> Groups() {
    auto doc = Get("/apis");
    if (!doc) return std::nullopt;
    std::map<std::string, std::string> out;
    const json& groups = doc->value("groups", json::array());
    if (!groups.is_array()) {
      Mark(EvidenceStatus::kParseError, "GET /apis: no groups array");
      return std::nullopt;
    }
    for (const auto& g : groups) {
      if (!g.is_object() || !g.contains("name") || !g["name"].is_string()) continue;
      std::string v;
      if (g.contains("preferredVersion") && g["preferredVersion"].is_object())
        v = g["preferredVersion"].value("version", "");
      out[g["name"].get<std::string>()] = v;
    }
    return out;
  }

  // One write of an active probe: POST `object` to `path` (kubectl create --raw PATH -f -, the body
  // on stdin) or DELETE `path`. The field manager is the object's name (ours all start with
  // "clustermax-"), so that a bundle tells two
  // POSTs to one collection apart. Never marks the evidence: the probe decides what a refusal means.
  struct Write {
    bool ok = false;
    std::string reason;  // "AlreadyExists", "Forbidden" ... when refused
    std::string error;
    json body;
  };
  Write Post(const std::string& path, const json& object) {
    std::string name = object.contains("metadata") ? object["metadata"].value("name", "") : "";
    auto spec = Command(Argv({"create", "--raw", path + "?fieldManager=" + name, "-f", "-"}), o_, id_);
    spec.stdin_data = object.dump();
    return Send(spec, "POST " + path);
  }
  Write Delete(const std::string& path) {
    return Send(Command(Argv({"delete", "--raw", path}), o_, id_), "DELETE " + path);
  }

  // A read the probe can do without: the parsed object, or nullopt when refused or unreadable (the
  // evidence is not marked).
  std::optional<json> Peek(const std::string& path) {
    auto w = Send(Command(Argv({"get", "--raw", path}), o_, id_), "GET " + path);
    if (!w.ok || !w.body.is_object()) return std::nullopt;
    return w.body;
  }

  size_t malformed() const { return malformed_; }

 private:
  Write Send(host::CommandSpec spec, const std::string& what) {
    spec.timeout = timeout_;
    e_.sources.push_back(Source(spec));
    auto r = h_.Run(spec);
    Write w;
    if (r.status != host::IoStatus::kOk) {
      w.error = fmt::format("{}: {}", what, r.error.empty() ? "kubectl did not answer" : r.error);
    } else if (r.exit_code != 0) {
      w.reason = k8s::ErrorReason(r.err);
      w.error = fmt::format("{}: {}", what, util::Ellipsize(util::Trim(r.err), 300));
    } else {
      w.ok = true;
      w.body = json::parse(r.out, nullptr, false);
      if (w.body.is_discarded()) w.body = json::object();
    }
    return w;
  }

  void Mark(EvidenceStatus s, std::string error) {
    if (e_.status == EvidenceStatus::kOk || e_.status == EvidenceStatus::kNotCollected) {
      e_.status = s;
      e_.error = std::move(error);
    }
  }
  void Fail(const std::string& path, const host::CommandResult& r) {
    std::string reason = k8s::ErrorReason(r.err);
    EvidenceStatus s = reason == "Forbidden" || reason == "Unauthorized" ? EvidenceStatus::kPermissionDenied
                       : reason == "NotFound"                            ? EvidenceStatus::kNotFound
                                                                         : EvidenceStatus::kError;
    Mark(s, fmt::format("GET {}: kubectl exit {}: {}", path, r.exit_code, util::Ellipsize(util::Trim(r.err), 300)));
  }

  host::Host& h_;
  const CollectOptions& o_;
  std::string id_;
  Evidence& e_;
  std::chrono::milliseconds timeout_;
  std::string context_;
  size_t malformed_ = 0;
};

// Runs `body` with a fresh evidence item marked ok; a failed request inside leaves its status.
Evidence Collect(host::Host& h, const CollectOptions& o, const std::string& id,
                 const std::function<void(Api&, Evidence&)>& body) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  Api api(h, o, id, e);
  body(api, e);
  if (e.status == EvidenceStatus::kOk) e.data["malformed"] = api.malformed();
  return e;
}

json Reduce(Api& api, const std::string& path, json (*fn)(const json&)) {
  json out = json::array();
  if (!api.List(path, [&](const json& item) { out.push_back(fn(item)); })) return nullptr;
  return out;
}

Evidence Version(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.version", [](Api& api, Evidence& e) {
    auto v = api.Get("/version");
    if (!v) return;
    e.data = {{"git_version", v->value("gitVersion", "")},
              {"major", v->value("major", "")},
              {"minor", v->value("minor", "")},
              {"platform", v->value("platform", "")}};
  });
}

// Groups whose resources the checks look for (operators, schedulers, networking, monitoring).
const std::vector<std::string>& GroupsOfInterest() {
  static const std::vector<std::string> g = {"nvidia.com",
                                             "amd.com",
                                             "mellanox.com",
                                             "kueue.x-k8s.io",
                                             "scheduling.volcano.sh",
                                             "batch.volcano.sh",
                                             "kubeflow.org",
                                             "trainer.kubeflow.org",
                                             "jobset.x-k8s.io",
                                             "scheduling.x-k8s.io",
                                             "scheduling.run.ai",
                                             "monitoring.coreos.com",
                                             "metallb.io",
                                             "gateway.networking.k8s.io",
                                             "k8s.cni.cncf.io",
                                             "metrics.k8s.io",
                                             "resource.k8s.io",
                                             "nfd.k8s-sigs.io",
                                             "route.openshift.io"};
  return g;
}

Evidence ApiGroups(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.api-groups", [](Api& api, Evidence& e) {
    auto groups = api.Groups();
    if (!groups) return;
    json gs = json::object(), resources = json::array();
    for (const auto& [g, v] : *groups) gs[g] = v;
    for (const auto& g : GroupsOfInterest()) {
      auto it = groups->find(g);
      if (it == groups->end() || it->second.empty()) continue;
      bool absent = false;  // listed in /apis, but its version not served (an aggregated API that is down)
      auto list = api.Get(fmt::format("/apis/{}/{}", g, it->second), &absent);
      if (absent) continue;
      if (!list) return;
      for (const auto& r : list->value("resources", json::array())) {
        if (!r.is_object() || !r.contains("name") || !r["name"].is_string()) continue;
        std::string name = r["name"].get<std::string>();
        if (name.find('/') == std::string::npos) resources.push_back(name + "." + g);  // not a subresource
      }
    }
    e.data = {{"groups", gs}, {"resources", resources}};
  });
}

Evidence Nodes(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.nodes", [](Api& api, Evidence& e) {
    json nodes = Reduce(api, "/api/v1/nodes", k8s::Node);
    if (!nodes.is_null()) e.data["nodes"] = std::move(nodes);
  });
}

Evidence Workloads(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.workloads", [](Api& api, Evidence& e) {
    json all = json::array();
    for (const char* kind : {"DaemonSet", "Deployment", "StatefulSet"}) {
      std::string path = fmt::format("/apis/apps/v1/{}s", util::ToLower(kind));
      if (!api.List(path, [&](const json& item) { all.push_back(k8s::Workload(item, kind)); })) return;
    }
    e.data["workloads"] = std::move(all);
  });
}

Evidence Pods(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.pods", [](Api& api, Evidence& e) {
    json pods = Reduce(api, "/api/v1/pods", k8s::Pod);
    if (!pods.is_null()) e.data["pods"] = std::move(pods);
  });
}

Evidence Namespaces(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.namespaces", [](Api& api, Evidence& e) {
    json ns = Reduce(api, "/api/v1/namespaces", k8s::Namespace);
    if (!ns.is_null()) e.data["namespaces"] = std::move(ns);
  });
}

Evidence Storage(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.storage", [](Api& api, Evidence& e) {
    json classes = Reduce(api, "/apis/storage.k8s.io/v1/storageclasses", k8s::StorageClass);
    if (classes.is_null()) return;
    json claims = Reduce(api, "/api/v1/persistentvolumeclaims", k8s::Claim);
    if (claims.is_null()) return;
    e.data["classes"] = std::move(classes);
    e.data["claims"] = std::move(claims);
  });
}

// Lists `resource` of `group` only when served (a missing CRD is a fact, not an error): in the
// group's preferred version, else in the first of `fallbacks` that serves it (a kind that is
// younger or older than the group's preferred version: Kueue's Topology was v1alpha1 while its
// queues were v1beta1). *served (when given) says whether any version served it.
bool ListIfServed(Api& api, const std::map<std::string, std::string>& groups, const std::string& group,
                  const std::string& resource, json& out, json (*fn)(const json&),
                  const std::vector<std::string>& fallbacks = {}, bool* served = nullptr) {
  out = json::array();
  if (served) *served = false;
  auto it = groups.find(group);
  if (it == groups.end() || it->second.empty()) return true;
  std::vector<std::string> versions = {it->second};
  for (const auto& v : fallbacks)
    if (std::find(versions.begin(), versions.end(), v) == versions.end()) versions.push_back(v);
  for (const auto& version : versions) {
    json items = json::array();
    bool absent = false;  // not served in this version
    if (!api.List(
            fmt::format("/apis/{}/{}/{}", group, version, resource), [&](const json& x) { items.push_back(fn(x)); },
            &absent))
      return false;
    if (absent) continue;
    out = std::move(items);
    if (served) *served = true;
    return true;
  }
  return true;
}

json Pool(const json& p) {
  json addresses = json::array();
  if (p.contains("spec") && p["spec"].is_object() && p["spec"].contains("addresses") &&
      p["spec"]["addresses"].is_array()) {
    for (const auto& a : p["spec"]["addresses"])
      if (a.is_string()) addresses.push_back(a);
  }
  return {{"name", p.contains("metadata") ? p["metadata"].value("name", "") : ""}, {"addresses", addresses}};
}

json NameOnly(const json& obj) {
  const json& m = obj.contains("metadata") && obj["metadata"].is_object() ? obj["metadata"] : json::object();
  return {{"namespace", m.value("namespace", "")}, {"name", m.value("name", "")}};
}

Evidence Network(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.network", [](Api& api, Evidence& e) {
    auto groups = api.Groups();
    if (!groups) return;
    json services = json::array();
    bool ok = api.List("/api/v1/services", [&](const json& s) {
      json v = k8s::Service(s);
      if (v["type"] == "LoadBalancer") services.push_back(std::move(v));
    });
    if (!ok) return;
    json ingress = Reduce(api, "/apis/networking.k8s.io/v1/ingressclasses", k8s::IngressClass);
    if (ingress.is_null()) return;
    json gateways, pools, nads;
    if (!ListIfServed(api, *groups, "gateway.networking.k8s.io", "gatewayclasses", gateways, k8s::GatewayClass) ||
        !ListIfServed(api, *groups, "metallb.io", "ipaddresspools", pools, Pool) ||
        !ListIfServed(api, *groups, "k8s.cni.cncf.io", "network-attachment-definitions", nads, NameOnly))
      return;
    e.data = {{"load_balancers", services},
              {"ingress_classes", ingress},
              {"gateway_classes", gateways},
              {"address_pools", pools},
              {"network_attachments", nads.size()}};
  });
}

Evidence Operators(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.operators", [](Api& api, Evidence& e) {
    auto groups = api.Groups();
    if (!groups) return;
    json cp, ncp, amd, queues, monitors;
    if (!ListIfServed(api, *groups, "nvidia.com", "clusterpolicies", cp, k8s::StatefulResource) ||
        !ListIfServed(api, *groups, "mellanox.com", "nicclusterpolicies", ncp, k8s::StatefulResource) ||
        !ListIfServed(api, *groups, "amd.com", "deviceconfigs", amd, k8s::StatefulResource) ||
        !ListIfServed(api, *groups, "kueue.x-k8s.io", "clusterqueues", queues, NameOnly) ||
        !ListIfServed(api, *groups, "monitoring.coreos.com", "servicemonitors", monitors, NameOnly))
      return;
    // DRA: the drivers publishing ResourceSlices (gpu.nvidia.com, an RDMA driver ...).
    std::set<std::string> drivers;
    if (auto it = groups->find("resource.k8s.io"); it != groups->end() && !it->second.empty()) {
      bool ok = api.List(fmt::format("/apis/resource.k8s.io/{}/resourceslices", it->second), [&](const json& s) {
        if (s.contains("spec") && s["spec"].is_object() && s["spec"].contains("driver") &&
            s["spec"]["driver"].is_string())
          drivers.insert(s["spec"]["driver"].get<std::string>());
      });
      if (!ok) return;
    }
    json apis = Reduce(api, "/apis/apiregistration.k8s.io/v1/apiservices", k8s::ApiService);
    if (apis.is_null()) return;
    // Volcano's scheduler configuration (its actions and plugins: gang, binpack).
    std::string volcano;
    if (groups->count("scheduling.volcano.sh")) {
      for (const char* ns : {"volcano-system", "kube-system"}) {
        bool absent = false;
        auto cm = api.Get(fmt::format("/api/v1/namespaces/{}/configmaps/volcano-scheduler-configmap", ns), &absent);
        if (absent) continue;  // not in this namespace: try the next
        if (!cm) return;
        if (cm->contains("data") && (*cm)["data"].is_object())
          for (const auto& [k, v] : (*cm)["data"].items())
            if (v.is_string()) volcano += v.get<std::string>() + "\n";
        break;
      }
    }
    e.data = {
        {"cluster_policies", cp},       {"nic_cluster_policies", ncp},
        {"amd_device_configs", amd},    {"cluster_queues", queues},
        {"service_monitors", monitors}, {"dra_drivers", json(std::vector<std::string>(drivers.begin(), drivers.end()))},
        {"api_services", apis},         {"volcano_scheduler_config", util::Ellipsize(volcano, 20000)}};
  });
}

// What topology-aware scheduling the cluster offers: Kueue Topologies and the ResourceFlavors that
// bind them, Volcano HyperNodes, NVIDIA ComputeDomains (multi-node NVLink), JobSet served.
Evidence Topology(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.topology", [](Api& api, Evidence& e) {
    auto groups = api.Groups();
    if (!groups) return;
    json topologies, flavors, hypernodes, domains;
    bool domains_served = false;
    if (!ListIfServed(api, *groups, "kueue.x-k8s.io", "topologies", topologies, k8s::KueueTopology,
                      {"v1beta2", "v1beta1", "v1alpha1"}) ||
        !ListIfServed(api, *groups, "kueue.x-k8s.io", "resourceflavors", flavors, k8s::ResourceFlavor) ||
        !ListIfServed(api, *groups, "topology.volcano.sh", "hypernodes", hypernodes, k8s::HyperNode, {"v1alpha1"}) ||
        !ListIfServed(api, *groups, "resource.nvidia.com", "computedomains", domains, k8s::ComputeDomain, {"v1beta1"},
                      &domains_served))
      return;
    e.data = {{"kueue_topologies", topologies}, {"resource_flavors", flavors},
              {"hypernodes", hypernodes},       {"compute_domain_crd", domains_served},
              {"compute_domains", domains},     {"jobset", groups->count("jobset.x-k8s.io") > 0}};
  });
}

// ---- active probes: objects created in a namespace of the probe's own, then deleted ----

constexpr const char* kManagedBy = "app.kubernetes.io/managed-by";

// A probe's polls: its budget (--timeout probe.ID=SECONDS, else the catalog's), split into polls at
// most `every` apart (at least ten of them). Counted, not clocked: a replayed bundle answers at once
// and must end as quickly.
struct PollSchedule {
  std::chrono::milliseconds budget, interval;
  int polls;
};
PollSchedule ProbePolls(const CollectOptions& o, const std::string& id, std::chrono::seconds def,
                        std::chrono::seconds every) {
  auto it = o.timeouts.find(id);
  std::chrono::milliseconds budget = it != o.timeouts.end() ? it->second : std::chrono::milliseconds(def);
  auto interval = std::min<std::chrono::milliseconds>(every, budget / 10 + std::chrono::milliseconds(1));
  return {budget, interval, static_cast<int>(budget / interval)};
}

// The namespace a probe works in: created (labelled as ours) and deleted afterwards. One left by an
// earlier run that was killed is reused and deleted; one still terminating is an error.
class ProbeNamespace {
 public:
  ProbeNamespace(Api& api, std::string name) : api_(api), name_(std::move(name)) {
    auto w =
        api_.Post("/api/v1/namespaces", {{"apiVersion", "v1"},
                                         {"kind", "Namespace"},
                                         {"metadata", {{"name", name_}, {"labels", {{kManagedBy, "clustermax"}}}}}});
    if (w.ok) {
      owned_ = true;
      return;
    }
    if (w.reason != "AlreadyExists") {
      error_ = w.error;
      return;
    }
    auto ns = api_.Get("/api/v1/namespaces/" + name_);
    if (!ns) {
      error_ = "namespace " + name_ + " exists and could not be read";
      return;
    }
    const json& phase = (*ns)["status"].is_object() ? (*ns)["status"].value("phase", json()) : json();
    if (phase == "Terminating") {
      error_ = "namespace " + name_ + " is still terminating from an earlier run: retry in a minute";
      return;
    }
    const json& labels = (*ns)["metadata"].is_object() ? (*ns)["metadata"].value("labels", json()) : json();
    owned_ = labels.is_object() && labels.value(kManagedBy, json()) == "clustermax";
    if (!owned_) error_ = "namespace " + name_ + " exists and is not ours (no " + kManagedBy + "=clustermax label)";
  }
  ~ProbeNamespace() {
    if (owned_) api_.Delete("/api/v1/namespaces/" + name_);
  }
  const std::string& error() const { return error_; }
  const std::string& name() const { return name_; }

 private:
  Api& api_;
  std::string name_;
  bool owned_ = false;
  std::string error_;
};

// A pod of a probe's own: `true` from the probe image as nobody, no capabilities, read-only root
// (the restricted Pod Security profile), never restarted. `limits` joins the small requests;
// `spec` and `container` hold what the probe adds (tolerations, a volume and its mount).
json ProbePodObject(const std::string& name, const std::string& image, const json& limits, const json& spec,
                    const json& container) {
  json l = {{"memory", "64Mi"}};
  l.update(limits);
  json c = {
      {"name", "probe"},
      {"image", image},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", {"true"}},
      {"resources", {{"requests", {{"cpu", "10m"}, {"memory", "16Mi"}}}, {"limits", l}}},
      {"securityContext",
       {{"allowPrivilegeEscalation", false}, {"readOnlyRootFilesystem", true}, {"capabilities", {{"drop", {"ALL"}}}}}}};
  c.update(container);
  json s = {{"restartPolicy", "Never"},
            {"terminationGracePeriodSeconds", 0},
            {"automountServiceAccountToken", false},
            {"enableServiceLinks", false},
            {"securityContext",
             {{"runAsNonRoot", true},
              {"runAsUser", 65534},
              {"runAsGroup", 65534},
              {"fsGroup", 65534},
              {"seccompProfile", {{"type", "RuntimeDefault"}}}}},
            {"containers", {c}}};
  s.update(spec);
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", {{kManagedBy, "clustermax"}}}}},
          {"spec", s}};
}

// A probe's pod from creation to deletion: its progress (k8s::ProbePod's facts) polled into `row`,
// the kubelet's events read once, the phases from the API's own timestamps.
class ProbePodRun {
 public:
  ProbePodRun(Api& api, const std::string& ns, const json& pod)
      : api_(api), name_(k8s::Str(pod, {"metadata", "name"})) {
    std::string base = "/api/v1/namespaces/" + ns + "/pods";
    auto w = api_.Post(base, pod);
    row_ = {{"accepted", w.ok}, {"error", w.error}};
    if (w.ok) path_ = base + "/" + name_;
    done_ = !w.ok;
  }
  // One read unless it has ended (started, failed to, gone). True while it is still on its way.
  bool Poll(double seconds) {
    if (done_) return false;
    auto obj = api_.Get(path_);
    if (!obj) {
      done_ = true;
      return false;
    }
    json seen = k8s::ProbePod(*obj);
    for (const auto& [k, v] : seen.items()) row_[k] = v;
    row_["polled_s"] = seconds;
    // Waiting reasons that do not end by waiting longer within a probe's budget.
    static const std::set<std::string> kStuck = {
        "ImagePullBackOff",     "InvalidImageName",  "ErrImageNeverPull", "CreateContainerConfigError",
        "CreateContainerError", "RunContainerError", "CrashLoopBackOff"};
    std::string state = seen["state"], phase = seen["phase"];
    done_ = state == "running" || state == "terminated" || phase == "Succeeded" || phase == "Failed" ||
            kStuck.count(seen["state_reason"].get<std::string>());
    return !done_;
  }
  // The kubelet's and scheduler's events about this pod (Pulled, FailedMount, FailedScheduling ...).
  // Matched by the pod's uid when read (a reused namespace may hold an earlier pod's of the name).
  void Events(const json& events) {
    const json& items = k8s::At(events, {"items"});
    if (!items.is_array()) return;
    std::string uid = k8s::Str(row_, {"uid"});
    for (const auto& ev : items) {
      if (k8s::Str(ev, {"involvedObject", "name"}) != name_) continue;
      std::string their = k8s::Str(ev, {"involvedObject", "uid"});
      if (!uid.empty() && !their.empty() && their != uid) continue;
      std::string reason = k8s::Str(ev, {"reason"}), message = util::Ellipsize(k8s::Str(ev, {"message"}), 400);
      if (reason == "Pulled")
        if (auto pulled = k8s::PullSeconds(message)) row_["pull_s"] = *pulled;
      // The kubelet mounts a pod's volumes before it pulls its image: a pull means the mount is done.
      if (reason == "Pulling" || reason == "Pulled") row_["image_started"] = true;
      if (reason == "FailedScheduling") row_["queued"] = true;  // waited for room (a free GPU ...)
      if (reason == "FailedMount" || reason == "FailedAttachVolume" || reason == "FailedMapVolume")
        row_["failure"] = reason + ": " + message;
      else if (reason.starts_with("Failed") || reason == "BackOff")
        row_["event"] = reason + ": " + message;  // Failed (image), FailedCreatePodSandBox ...
    }
  }
  // Deleted, and the phases computed: creation to scheduled, to a started container.
  // The node's clock stamps startedAt, the API server's the rest: a start before the scheduling
  // (beyond the second's rounding) is a skewed node clock, and its figures are not kept.
  json Finish() {
    row_["delete_error"] = "";
    if (!path_.empty()) {
      auto w = api_.Delete(path_);
      if (!w.ok && w.reason != "NotFound") row_["delete_error"] = w.error;
    }
    auto at = [&](const char* key) { return util::ParseRfc3339(k8s::Str(row_, {key})); };
    auto created = at("created"), scheduled = at("scheduled"), started = at("started");
    auto secs = [](auto from, auto to) {
      return from && to ? std::chrono::duration<double>(*to - *from).count() : -1.0;
    };
    bool skew = started && (created && *started + std::chrono::seconds(1) < *created ||
                            scheduled && *started + std::chrono::seconds(1) < *scheduled);
    row_["clock_skew"] = skew;
    row_["schedule_s"] = scheduled ? std::max(0.0, secs(created, scheduled)) : -1.0;
    row_["start_s"] = started && !skew ? std::max(0.0, secs(created, started)) : -1.0;
    for (const char* flag : {"image_started", "queued"})
      if (!row_.contains(flag)) row_[flag] = false;
    if (!row_.contains("pull_s")) row_["pull_s"] = -1.0;
    for (const char* text : {"failure", "event"})
      if (!row_.contains(text)) row_[text] = "";
    return row_;
  }
  const std::string& name() const { return name_; }

 private:
  Api& api_;
  std::string name_, path_;
  json row_;
  bool done_ = false;
};

// probe.k8s-pvc: a 1 GiB ReadWriteOnce claim without a class (the default class provisions it) and
// a ReadWriteMany claim on each RWX-capable class (at most four), each with a pod that mounts it:
// polled until the claim is Bound and the pod's container has started (a WaitForFirstConsumer class
// provisions for that pod), or until the budget ends. Time to Bound by poll count; time to a running
// pod with the volume mounted from the API's timestamps; the kubelet's FailedMount and
// FailedAttachVolume events kept. Pods, claims and namespace deleted on the way out.
Evidence PvcProbe(host::Host& h, const CollectOptions& o) {
  const std::string id = "probe.k8s-pvc";
  return Collect(h, o, id, [&](Api& api, Evidence& e) {
    json classes = json::array();
    if (!api.List("/apis/storage.k8s.io/v1/storageclasses",
                  [&](const json& c) { classes.push_back(k8s::StorageClass(c)); }))
      return;
    struct Claim {
      json row;
      std::string path;
      std::unique_ptr<ProbePodRun> pod;
    };
    std::vector<Claim> claims;
    std::string default_mode;
    bool has_default = false;
    for (const auto& c : classes) {
      if (!c.value("default", false)) continue;
      has_default = true;
      default_mode = c.value("binding_mode", "");
    }
    auto add = [&](const std::string& name, const std::string& cls, const std::string& mode,
                   const std::string& binding) {
      claims.push_back({{{"name", name},
                         {"class", cls},
                         {"access_mode", mode},
                         {"binding_mode", binding},
                         {"created", false},
                         {"bound", false},
                         {"waits_for_consumer", binding == "WaitForFirstConsumer"},
                         {"phase", ""},
                         {"selected_node", ""},
                         {"seconds", 0.0},
                         {"error", ""}},
                        "",
                        nullptr});
    };
    if (has_default) add("clustermax-probe-rwo", "", "ReadWriteOnce", default_mode);
    int rwx = 0;
    for (const auto& c : classes) {
      std::string name = c.value("name", "");
      if (!util::k8s::RwxProvisioner(c.value("provisioner", "")) || name.empty() || ++rwx > 4) continue;
      add("clustermax-probe-rwx-" + std::to_string(rwx), name, "ReadWriteMany", c.value("binding_mode", ""));
    }
    e.data = {{"namespace", "clustermax-probe-pvc"},
              {"default_class", has_default},
              {"image", o.probe_image},
              {"claims", json::array()},
              {"error", ""}};
    if (claims.empty()) return;  // no default and no RWX-capable class: nothing to create
    ProbeNamespace ns(api, "clustermax-probe-pvc");
    e.data["error"] = ns.error();
    if (!ns.error().empty()) return;
    std::string base = "/api/v1/namespaces/" + ns.name() + "/persistentvolumeclaims";
    for (auto& c : claims) {
      std::string name = c.row["name"];
      json spec = {{"accessModes", {c.row["access_mode"]}}, {"resources", {{"requests", {{"storage", "1Gi"}}}}}};
      if (!c.row["class"].get<std::string>().empty()) spec["storageClassName"] = c.row["class"];
      auto w = api.Post(base, {{"apiVersion", "v1"},
                               {"kind", "PersistentVolumeClaim"},
                               {"metadata", {{"name", name}, {"labels", {{kManagedBy, "clustermax"}}}}},
                               {"spec", spec}});
      c.row["created"] = w.ok;
      c.row["error"] = w.error;
      if (!w.ok) continue;
      c.path = base + "/" + name;
      c.pod = std::make_unique<ProbePodRun>(
          api, ns.name(),
          ProbePodObject(name + "-pod", o.probe_image, json::object(),
                         {{"volumes", {{{"name", "data"}, {"persistentVolumeClaim", {{"claimName", name}}}}}}},
                         {{"volumeMounts", {{{"name", "data"}, {"mountPath", "/data"}}}}}));
    }
    auto [budget, interval, polls] = ProbePolls(o, id, std::chrono::seconds(120), std::chrono::seconds(2));
    for (int i = 0; i <= polls; ++i) {
      bool waiting = false;
      double at = std::chrono::duration<double>(interval * i).count();
      for (auto& c : claims) {
        if (c.path.empty()) continue;
        if (!c.row["bound"].get<bool>()) {
          if (auto pvc = api.Get(c.path)) {  // nullopt: marked by Get, the probe's answer is unreadable
            std::string phase = k8s::Claim(*pvc)["phase"];
            c.row["phase"] = phase;
            c.row["selected_node"] = k8s::Str(*pvc, {"metadata", "annotations", "volume.kubernetes.io/selected-node"});
            c.row["seconds"] = at;
            c.row["bound"] = phase == "Bound";
            waiting = waiting || phase != "Bound";
          }
        }
        if (c.pod && c.pod->Poll(at)) waiting = true;
      }
      if (!waiting || i == polls) break;
      h.Sleep(interval);
    }
    auto events = api.Peek("/api/v1/namespaces/" + ns.name() + "/events?limit=500");
    for (auto& c : claims) {
      if (c.pod) {
        if (events) c.pod->Events(*events);
        c.row["pod"] = c.pod->Finish();
      }
      if (!c.path.empty()) {
        auto w = api.Delete(c.path);
        if (!w.ok && w.reason != "NotFound") c.row["error"] = "not deleted: " + w.error;
      }
      e.data["claims"].push_back(c.row);
    }
    e.data["budget_s"] = std::chrono::duration<double>(budget).count();
  });
}

// probe.k8s-lb: a LoadBalancer Service (port 80, selecting nothing) polled until the cloud or
// MetalLB gives it an address, within the budget; then deleted with its namespace.
Evidence LbProbe(host::Host& h, const CollectOptions& o) {
  const std::string id = "probe.k8s-lb";
  return Collect(h, o, id, [&](Api& api, Evidence& e) {
    ProbeNamespace ns(api, "clustermax-probe-lb");
    e.data = {{"namespace", ns.name()}, {"created", false}, {"address", ""}, {"seconds", 0.0}, {"error", ns.error()}};
    if (!ns.error().empty()) return;
    std::string base = "/api/v1/namespaces/" + ns.name() + "/services";
    auto w = api.Post(base, {{"apiVersion", "v1"},
                             {"kind", "Service"},
                             {"metadata", {{"name", "clustermax-probe-lb"}, {"labels", {{kManagedBy, "clustermax"}}}}},
                             {"spec",
                              {{"type", "LoadBalancer"},
                               {"selector", {{"app.kubernetes.io/name", "clustermax-probe-none"}}},
                               {"ports", json::array({{{"port", 80}, {"targetPort", 80}, {"protocol", "TCP"}}})}}}});
    if (!w.ok) {
      e.data["error"] = w.error;
      return;
    }
    e.data["created"] = true;
    std::string path = base + "/clustermax-probe-lb";
    auto [budget, interval, polls] = ProbePolls(o, id, std::chrono::seconds(120), std::chrono::seconds(3));
    for (int i = 0; i <= polls; ++i) {
      if (auto svc = api.Get(path)) {
        json ingress = k8s::Service(*svc)["ingress"];
        if (!ingress.empty()) {
          e.data["address"] = ingress[0];
          e.data["seconds"] = std::chrono::duration<double>(interval * i).count();
          break;
        }
      }
      if (i < polls) h.Sleep(interval);
    }
    e.data["budget_s"] = std::chrono::duration<double>(budget).count();
    auto d = api.Delete(path);
    if (!d.ok && d.reason != "NotFound") e.data["error"] = "not deleted: " + d.error;
  });
}

// probe.k8s-gpu-pod: how long a one-GPU pod takes from creation to a running container, next to a
// pod that asks for no GPU (the baseline): both started at once from --probe-image, tolerating the
// GPU taints; polled until each container has started, failed to (ImagePullBackOff ...), or the
// budget ends. The scheduler's and kubelet's own timestamps (creationTimestamp, PodScheduled,
// startedAt) give the phases to the second, and the kubelet's Pulled event the image pull, so that
// a pull is not counted as scheduling.
Evidence GpuPodProbe(host::Host& h, const CollectOptions& o) {
  const std::string id = "probe.k8s-gpu-pod";
  return Collect(h, o, id, [&](Api& api, Evidence& e) {
    // The GPU resource most nodes offer (nvidia.com/gpu before amd.com/gpu on a tie).
    std::map<std::string, int> offering;
    if (!api.List("/api/v1/nodes", [&](const json& n) {
          const json& alloc = k8s::At(n, {"status", "allocatable"});
          for (const auto& r : util::k8s::GpuResources()) {
            const json& v = k8s::At(alloc, {r.c_str()});
            if (v.is_string() && !v.get<std::string>().empty() && v.get<std::string>() != "0") ++offering[r];
          }
        }))
      return;
    std::string resource;
    for (const auto& r : util::k8s::GpuResources())
      if (offering[r] > (resource.empty() ? 0 : offering[resource])) resource = r;
    e.data = {{"namespace", "clustermax-probe-gpu"},
              {"resource", resource},
              {"gpu_nodes", resource.empty() ? 0 : offering[resource]},
              {"image", o.probe_image},
              {"pods", json::array()},
              {"error", ""}};
    if (resource.empty()) return;  // no node offers a GPU: nothing to schedule
    ProbeNamespace ns(api, "clustermax-probe-gpu");
    e.data["error"] = ns.error();
    if (!ns.error().empty()) return;
    std::vector<std::unique_ptr<ProbePodRun>> pods;
    for (std::string role : {"gpu", "cpu"}) {
      json limits = role == "gpu" ? json{{resource, "1"}} : json::object();
      pods.push_back(std::make_unique<ProbePodRun>(
          api, ns.name(),
          ProbePodObject("clustermax-probe-" + role, o.probe_image, limits,
                         {{"tolerations", util::k8s::GpuTolerations(false)}}, json::object())));
    }
    auto [budget, interval, polls] = ProbePolls(o, id, std::chrono::seconds(180), std::chrono::seconds(1));
    for (int i = 0; i <= polls; ++i) {
      bool waiting = false;
      for (auto& p : pods) waiting = p->Poll(std::chrono::duration<double>(interval * i).count()) || waiting;
      if (!waiting || i == polls) break;
      h.Sleep(interval);
    }
    auto events = api.Peek("/api/v1/namespaces/" + ns.name() + "/events?limit=500");
    for (auto& p : pods) {
      if (events) p->Events(*events);
      json row = p->Finish();
      row["role"] = p->name() == "clustermax-probe-gpu" ? "gpu" : "cpu";
      e.data["pods"].push_back(row);
    }
    e.data["budget_s"] = std::chrono::duration<double>(budget).count();
  });
}

// The Prometheus Operator's alerting and recording rules (PrometheusRule objects).
Evidence AlertRules(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.alert-rules", [](Api& api, Evidence& e) {
    auto groups = api.Groups();
    if (!groups) return;
    json rules;
    bool served = false;
    if (!ListIfServed(api, *groups, "monitoring.coreos.com", "prometheusrules", rules, k8s::PrometheusRule, {"v1"},
                      &served))
      return;
    e.data = {{"served", served}, {"rules", rules}};
  });
}

Evidence Rbac(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.rbac", [](Api& api, Evidence& e) {
    // Roles granting nodes/proxy: "ClusterRole/name" or "Role/ns/name" -> verbs.
    std::map<std::string, std::vector<std::string>> granting;
    size_t roles = 0, bindings = 0;
    auto scan = [&](const std::string& path, const char* kind) {
      return api.List(path, [&](const json& r) {
        ++roles;
        auto verbs = k8s::NodesProxyVerbs(r);
        if (verbs.empty()) return;
        std::string ns = r["metadata"].value("namespace", "");
        granting[ns.empty() ? fmt::format("{}/{}", kind, r["metadata"].value("name", ""))
                            : fmt::format("{}/{}/{}", kind, ns, r["metadata"].value("name", ""))] = verbs;
      });
    };
    if (!scan("/apis/rbac.authorization.k8s.io/v1/clusterroles", "ClusterRole") ||
        !scan("/apis/rbac.authorization.k8s.io/v1/roles", "Role"))
      return;
    json grants = json::array();
    auto bind = [&](const std::string& path, const char* kind) {
      return api.List(path, [&](const json& b) {
        ++bindings;
        if (!b.contains("roleRef") || !b["roleRef"].is_object()) return;
        std::string rk = b["roleRef"].value("kind", ""), rn = b["roleRef"].value("name", "");
        std::string ns = b["metadata"].value("namespace", "");
        // A RoleBinding may grant a ClusterRole's rules within its namespace.
        std::string key = rk == "Role" ? fmt::format("Role/{}/{}", ns, rn) : fmt::format("ClusterRole/{}", rn);
        auto it = granting.find(key);
        if (it == granting.end()) return;
        for (auto& s : k8s::Subjects(b)) {
          grants.push_back(
              {{"role", key},
               {"binding", fmt::format("{}/{}{}", kind, ns.empty() ? "" : ns + "/", b["metadata"].value("name", ""))},
               {"binding_namespace", ns},
               {"subject_kind", s["kind"]},
               {"subject", s["name"]},
               {"subject_namespace", s["namespace"]},
               {"verbs", it->second}});
        }
      });
    };
    if (!bind("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "ClusterRoleBinding") ||
        !bind("/apis/rbac.authorization.k8s.io/v1/rolebindings", "RoleBinding"))
      return;
    e.data = {{"grants", grants}, {"roles", roles}, {"bindings", bindings}};
  });
}

// What the audit identity may do (SelfSubjectAccessReview through `kubectl auth can-i`).
struct Review {
  const char* verb;
  const char* resource;
  const char* scope;  // "all": --all-namespaces; "": the context's namespace; "cluster": cluster-scoped
  const char* subresource = "";
};
const std::vector<Review>& Reviews() {
  static const std::vector<Review> r = {
      {"get", "nodes", "cluster", "proxy"},
      {"list", "nodes", "cluster"},
      {"list", "pods", "all"},
      {"create", "pods", "all"},
      {"create", "jobs.batch", "all"},
      {"create", "persistentvolumeclaims", "all"},
      {"create", "services", "all"},
      {"create", "deployments.apps", "all"},
      {"create", "pods", ""},
      {"create", "jobs.batch", ""},
      {"create", "deployments.apps", ""},
      {"create", "secrets", ""},
      {"create", "serviceaccounts", ""},
      {"create", "roles.rbac.authorization.k8s.io", ""},
      {"create", "rolebindings.rbac.authorization.k8s.io", ""},
      {"create", "customresourcedefinitions.apiextensions.k8s.io", "cluster"},
      {"create", "clusterroles.rbac.authorization.k8s.io", "cluster"},
      {"create", "clusterrolebindings.rbac.authorization.k8s.io", "cluster"},
      {"create", "namespaces", "cluster"},
  };
  return r;
}

Evidence Access(host::Host& h, const CollectOptions& o) {
  return Collect(h, o, "k8s.access", [&](Api& api, Evidence& e) {
    json reviews = json::array();
    size_t answered = 0;
    for (const auto& rv : Reviews()) {
      std::vector<std::string> args = {"auth", "can-i", rv.verb, rv.resource};
      if (*rv.subresource) args.push_back(fmt::format("--subresource={}", rv.subresource));
      if (std::string_view(rv.scope) == "all") args.push_back("--all-namespaces");
      auto spec = Command(api.Argv(args), o, "k8s.access");
      e.sources.push_back(Source(spec));
      auto r = h.Run(spec);
      json item = {{"verb", rv.verb}, {"resource", rv.resource}, {"subresource", rv.subresource}, {"scope", rv.scope}};
      std::string out(util::Trim(r.out));
      if (r.status == host::IoStatus::kOk && out.starts_with("yes")) {
        item["allowed"] = true;
      } else if (r.status == host::IoStatus::kOk && out.starts_with("no")) {
        item["allowed"] = false;
      } else {
        item["allowed"] = nullptr;  // the review itself failed: unknown, not denied
        item["error"] = r.status != host::IoStatus::kOk
                            ? r.error
                            : fmt::format("exit {}: {}", r.exit_code, util::Ellipsize(util::Trim(r.err), 200));
      }
      if (!item["allowed"].is_null()) ++answered;
      reviews.push_back(std::move(item));
    }
    if (answered == 0) {
      e.status = EvidenceStatus::kError;
      e.error = "no access review was answered: " + reviews[0].value("error", "");
      return;
    }
    e.data = {{"reviews", reviews}};
  });
}

// The kubelet's CPU manager on this node (read by the node collector, `P (NC)`).
Evidence KubeletCpuManager(host::Host& h, const CollectOptions&) {
  Evidence e;
  auto state = h.ReadFile("/var/lib/kubelet/cpu_manager_state");
  auto config = h.ReadFile("/var/lib/kubelet/config.yaml");
  e.sources = {"file:/var/lib/kubelet/cpu_manager_state", "file:/var/lib/kubelet/config.yaml"};
  json d = {{"state_policy", nullptr}, {"config_policy", nullptr}, {"kubelet", false}};
  if (state.status == host::IoStatus::kOk) {
    json s = json::parse(state.content, nullptr, false);
    if (s.is_object() && s.contains("policyName") && s["policyName"].is_string()) d["state_policy"] = s["policyName"];
    d["kubelet"] = true;
  }
  if (config.status == host::IoStatus::kOk) {
    d["kubelet"] = true;
    d["config_policy"] = "none";  // the kubelet's default when the file does not set it
    for (auto line : util::SplitLines(config.content)) {
      auto t = util::Trim(line);
      if (!t.starts_with("cpuManagerPolicy:")) continue;
      std::string v(
          util::Trim(t.substr(17, t.find('#') == std::string_view::npos ? std::string_view::npos : t.find('#') - 17)));
      if (v.size() >= 2 && (v.front() == '"' || v.front() == '\'') && v.back() == v.front())
        v = v.substr(1, v.size() - 2);
      d["config_policy"] = v;
    }
  }
  // Neither file read, and one of them for another reason than its absence: that failure.
  if (!d["kubelet"].get<bool>()) {
    for (const auto* r : {&state, &config})
      if (r->status != host::IoStatus::kNotFound && MarkFailed(e, r->status, r->error)) return e;
  }
  e.status = EvidenceStatus::kOk;
  e.data = d;
  return e;
}

}  // namespace

void RegisterK8sCollectors(std::vector<Collector>& out) {
  const std::string raw = "cmd:kubectl [--context=CTX] --request-timeout=Ns get --raw ";
  out.push_back({{"k8s.version", "The API server's version", {raw + "/version"}, ""}, Version});
  out.push_back({{"k8s.api-groups",
                  "Served API groups, and the resources of the operator, scheduler and networking groups",
                  {raw + "/apis", raw + "/apis/GROUP/VERSION"},
                  ""},
                 ApiGroups});
  out.push_back(
      {{"k8s.nodes", "Every node: labels, taints, capacity, node info, readiness", {raw + "/api/v1/nodes"}, ""},
       Nodes});
  out.push_back({{"k8s.workloads",
                  "DaemonSets, Deployments and StatefulSets of every namespace: ready of desired, images",
                  {raw + "/apis/apps/v1/{daemonsets,deployments,statefulsets}"},
                  ""},
                 Workloads});
  out.push_back({{"k8s.pods", "Every pod: namespace, node, phase, owner", {raw + "/api/v1/pods"}, ""}, Pods});
  out.push_back({{"k8s.namespaces", "Namespaces with their labels", {raw + "/api/v1/namespaces"}, ""}, Namespaces});
  out.push_back({{"k8s.storage",
                  "StorageClasses (provisioner, default) and PersistentVolumeClaims (access modes, phase)",
                  {raw + "/apis/storage.k8s.io/v1/storageclasses", raw + "/api/v1/persistentvolumeclaims"},
                  ""},
                 Storage});
  out.push_back({{"k8s.network",
                  "LoadBalancer Services, IngressClasses, GatewayClasses, MetalLB pools, Multus attachments",
                  {raw + "/api/v1/services", raw + "/apis/networking.k8s.io/v1/ingressclasses",
                   raw + "/apis/{gateway.networking.k8s.io,metallb.io,k8s.cni.cncf.io}/..."},
                  ""},
                 Network});
  out.push_back(
      {{"k8s.operators",
        "GPU and network operator policies, Kueue queues, ServiceMonitors, DRA drivers, APIServices, "
        "Volcano's scheduler configuration",
        {raw + "/apis/{nvidia.com,mellanox.com,amd.com,kueue.x-k8s.io,monitoring.coreos.com,resource.k8s.io}/...",
         raw + "/apis/apiregistration.k8s.io/v1/apiservices",
         raw + "/api/v1/namespaces/volcano-system/configmaps/volcano-scheduler-configmap"},
        ""},
       Operators});
  out.push_back({{"k8s.topology",
                  "Topology-aware scheduling: Kueue Topologies and ResourceFlavors, Volcano HyperNodes, NVIDIA "
                  "ComputeDomains, JobSet",
                  {raw + "/apis/kueue.x-k8s.io/VERSION/{topologies,resourceflavors}",
                   raw + "/apis/topology.volcano.sh/v1alpha1/hypernodes",
                   raw + "/apis/resource.nvidia.com/v1beta1/computedomains"},
                  ""},
                 Topology});
  out.push_back({{"k8s.alert-rules",
                  "Prometheus Operator PrometheusRules: alerting and recording rules per object",
                  {raw + "/apis/monitoring.coreos.com/v1/prometheusrules"},
                  ""},
                 AlertRules});
  out.push_back(
      {{"probe.k8s-pvc",
        "Test claims: 1 GiB ReadWriteOnce on the default class, ReadWriteMany on each RWX-capable class, each "
        "mounted by a pod; time to Bound and to a running pod, then deleted",
        {"cmd:kubectl create --raw /api/v1/namespaces[/clustermax-probe-pvc/{persistentvolumeclaims,pods}] -f -",
         raw + "/api/v1/namespaces/clustermax-probe-pvc/{persistentvolumeclaims/NAME,pods/NAME,events}",
         "cmd:kubectl delete --raw PATH"},
        "k8s-pvc"},
       PvcProbe});
  out.push_back(
      {{"probe.k8s-lb",
        "A test LoadBalancer Service: time until it has an address, then deleted",
        {"cmd:kubectl create --raw /api/v1/namespaces[/clustermax-probe-lb/services] -f -",
         raw + "/api/v1/namespaces/clustermax-probe-lb/services/clustermax-probe-lb", "cmd:kubectl delete --raw PATH"},
        "k8s-lb"},
       LbProbe});
  out.push_back(
      {{"probe.k8s-gpu-pod",
        "A one-GPU pod and a pod without GPUs: time to scheduled and to a started container, image pull apart; "
        "then deleted",
        {"cmd:kubectl create --raw /api/v1/namespaces[/clustermax-probe-gpu/pods] -f -",
         raw + "/api/v1/namespaces/clustermax-probe-gpu/{pods/NAME,events}", "cmd:kubectl delete --raw PATH"},
        "k8s-gpu-pod"},
       GpuPodProbe});
  out.push_back({{"k8s.rbac",
                  "Cluster roles, roles and their bindings: every subject granted nodes/proxy",
                  {raw + "/apis/rbac.authorization.k8s.io/v1/{clusterroles,roles,clusterrolebindings,rolebindings}"},
                  ""},
                 Rbac});
  out.push_back({{"k8s.access",
                  "What the audit identity may do: kubectl auth can-i (SelfSubjectAccessReview) per verb",
                  {"cmd:kubectl auth can-i VERB RESOURCE [--all-namespaces] [--subresource=proxy]"},
                  ""},
                 Access});
  out.push_back({{"kubelet.cpu-manager",
                  "The kubelet's CPU manager policy on this node",
                  {"file:/var/lib/kubelet/cpu_manager_state", "file:/var/lib/kubelet/config.yaml"},
                  ""},
                 KubeletCpuManager});

  using namespace field;
  const core::FieldSpec malformed = {"malformed", Int, "objects", "list items without metadata.name, skipped"};
  auto with = [&](std::vector<core::FieldSpec> f) {
    f.push_back(malformed);
    return f;
  };
  DeclareFields(out, "k8s.version",
                with({{"git_version", Str, "", "gitVersion, \"v1.31.4\""},
                      {"major", Str, "", "major version"},
                      {"minor", Str, "", "minor version (\"31\", \"31+\")"},
                      {"platform", Str, "", "linux/amd64 ..."}}));
  DeclareFields(
      out, "k8s.api-groups",
      with({{"groups{}", Str, "", "served API group -> preferred version"},
            {"resources[]", Str, "", "resources of the groups of interest, \"clusterpolicies.nvidia.com\""}}));
  DeclareFields(out, "k8s.nodes",
                with({{"nodes[].name", Str, "", "node name"},
                      {"nodes[].labels{}", Str, "", "label -> value"},
                      {"nodes[].markers{}", Str, "", "vCluster labels and annotations -> value"},
                      {"nodes[].taints[]", Str, "", "\"key=value:Effect\""},
                      {"nodes[].capacity{}", Str, "", "resource -> quantity (\"nvidia.com/gpu\" -> \"8\")"},
                      {"nodes[].allocatable{}", Str, "", "resource -> allocatable quantity"},
                      {"nodes[].kernel", Str, "", "status.nodeInfo.kernelVersion"},
                      {"nodes[].os_image", Str, "", "status.nodeInfo.osImage"},
                      {"nodes[].kubelet", Str, "", "status.nodeInfo.kubeletVersion"},
                      {"nodes[].runtime", Str, "", "status.nodeInfo.containerRuntimeVersion"},
                      {"nodes[].ready", Bool, "", "the Ready condition; null when absent or Unknown", kNull},
                      {"nodes[].unschedulable", Bool, "", "spec.unschedulable (cordoned)"}}));
  DeclareFields(out, "k8s.workloads",
                with({{"workloads[].kind", Str, "", "DaemonSet, Deployment or StatefulSet"},
                      {"workloads[].namespace", Str, "", "namespace"},
                      {"workloads[].name", Str, "", "name"},
                      {"workloads[].desired", Int, "pods", "desiredNumberScheduled or spec.replicas"},
                      {"workloads[].ready", Int, "pods", "numberReady or readyReplicas"},
                      {"workloads[].images[]", Str, "", "container images of the pod template"}}));
  DeclareFields(out, "k8s.pods",
                with({{"pods[].namespace", Str, "", "namespace"},
                      {"pods[].name", Str, "", "name"},
                      {"pods[].node", Str, "", "spec.nodeName; empty while unscheduled"},
                      {"pods[].phase", Str, "", "Pending, Running, Succeeded, Failed, Unknown"},
                      {"pods[].owner_kind", Str, "", "first owner's kind (ReplicaSet, DaemonSet, Job ...)"},
                      {"pods[].owner_name", Str, "", "first owner's name"},
                      {"pods[].images[]", Str, "", "container images"}}));
  DeclareFields(out, "k8s.namespaces",
                with({{"namespaces[].name", Str, "", "namespace"},
                      {"namespaces[].labels{}", Str, "", "label -> value"},
                      {"namespaces[].markers{}", Str, "", "vCluster labels and annotations -> value"}}));
  DeclareFields(out, "k8s.storage",
                with({{"classes[].name", Str, "", "StorageClass"},
                      {"classes[].provisioner", Str, "", "its provisioner (CSI driver)"},
                      {"classes[].default", Bool, "", "annotated as the default class"},
                      {"classes[].binding_mode", Str, "", "Immediate or WaitForFirstConsumer"},
                      {"claims[].namespace", Str, "", "namespace"},
                      {"claims[].name", Str, "", "PVC"},
                      {"claims[].class", Str, "", "storageClassName"},
                      {"claims[].access_modes[]", Str, "", "ReadWriteOnce, ReadWriteMany ..."},
                      {"claims[].phase", Str, "", "Bound, Pending, Lost"}}));
  DeclareFields(out, "k8s.network",
                with({{"load_balancers[].namespace", Str, "", "namespace"},
                      {"load_balancers[].name", Str, "", "Service of type LoadBalancer"},
                      {"load_balancers[].type", Str, "", "LoadBalancer"},
                      {"load_balancers[].ingress[]", Str, "", "assigned addresses (IP or hostname)"},
                      {"ingress_classes[].name", Str, "", "IngressClass"},
                      {"ingress_classes[].controller", Str, "", "spec.controller"},
                      {"ingress_classes[].default", Bool, "", "annotated as the default class"},
                      {"gateway_classes[].name", Str, "", "GatewayClass"},
                      {"gateway_classes[].controller", Str, "", "spec.controllerName"},
                      {"gateway_classes[].accepted", Bool, "", "the Accepted condition; null when absent", kNull},
                      {"address_pools[].name", Str, "", "MetalLB IPAddressPool"},
                      {"address_pools[].addresses[]", Str, "", "its address ranges"},
                      {"network_attachments", Int, "objects", "Multus NetworkAttachmentDefinitions"}}));
  DeclareFields(
      out, "k8s.operators",
      with({{"cluster_policies[].name", Str, "", "NVIDIA GPU Operator ClusterPolicy"},
            {"cluster_policies[].namespace", Str, "", "empty (cluster-scoped)"},
            {"cluster_policies[].state", Str, "", "status.state (ready, notReady ...)"},
            {"nic_cluster_policies[].name", Str, "", "NVIDIA Network Operator NicClusterPolicy"},
            {"nic_cluster_policies[].namespace", Str, "", "empty (cluster-scoped)"},
            {"nic_cluster_policies[].state", Str, "", "status.state"},
            {"amd_device_configs[].name", Str, "", "AMD GPU Operator DeviceConfig"},
            {"amd_device_configs[].namespace", Str, "", "namespace"},
            {"amd_device_configs[].state", Str, "", "status.state when set"},
            {"cluster_queues[].name", Str, "", "Kueue ClusterQueue"},
            {"cluster_queues[].namespace", Str, "", "empty (cluster-scoped)"},
            {"service_monitors[].name", Str, "", "Prometheus Operator ServiceMonitor"},
            {"service_monitors[].namespace", Str, "", "namespace"},
            {"dra_drivers[]", Str, "", "drivers publishing DRA ResourceSlices"},
            {"api_services[].name", Str, "", "APIService (\"v1beta1.metrics.k8s.io\")"},
            {"api_services[].available", Bool, "", "the Available condition; null when absent", kNull},
            {"api_services[].message", Str, "", "the condition's message, cut"},
            {"volcano_scheduler_config", Str, "", "volcano-scheduler-configmap's data, cut; empty when none"}}));
  DeclareFields(out, "k8s.topology",
                with({{"kueue_topologies[].name", Str, "", "Kueue Topology"},
                      {"kueue_topologies[].levels[]", Str, "", "its levels' node label keys, widest first"},
                      {"resource_flavors[].name", Str, "", "Kueue ResourceFlavor"},
                      {"resource_flavors[].topology", Str, "", "spec.topologyName; empty when none"},
                      {"resource_flavors[].node_labels{}", Str, "", "spec.nodeLabels: the nodes of the flavor"},
                      {"hypernodes[].name", Str, "", "Volcano HyperNode"},
                      {"hypernodes[].tier", Int, "", "spec.tier (1 = the nodes' switch); -1 when unread"},
                      {"hypernodes[].members[].type", Str, "", "Node or HyperNode"},
                      {"hypernodes[].members[].exact", Str, "", "selector.exactMatch.name"},
                      {"hypernodes[].members[].regex", Str, "", "selector.regexMatch.pattern (Go syntax)"},
                      {"hypernodes[].members[].labels{}", Str, "", "selector.labelMatch.matchLabels"},
                      {"hypernodes[].members[].unread", Bool, "", "a selector not understood (matchExpressions ...)"},
                      {"compute_domain_crd", Bool, "", "computedomains.resource.nvidia.com is served"},
                      {"compute_domains[].namespace", Str, "", "namespace"},
                      {"compute_domains[].name", Str, "", "ComputeDomain"},
                      {"compute_domains[].nodes", Int, "", "spec.numNodes; -1 when unset"},
                      {"compute_domains[].status", Str, "", "status.status (Ready, NotReady); empty when none"},
                      {"jobset", Bool, "", "jobset.x-k8s.io is served (exclusive-topology placement)"}}));
  DeclareFields(out, "k8s.alert-rules",
                with({{"served", Bool, "", "prometheusrules.monitoring.coreos.com is served"},
                      {"rules[].namespace", Str, "", "namespace"},
                      {"rules[].name", Str, "", "PrometheusRule"},
                      {"rules[].alerts", Int, "rules", "alerting rules (spec.groups[].rules[].alert)"},
                      {"rules[].records", Int, "rules", "recording rules"}}));
  // A probe's pod (ProbePodRun), under `prefix` ("pods[]." or "claims[].pod.").
  auto pod_fields = [&](const std::string& prefix) {
    std::vector<core::FieldSpec> f = {
        {prefix + "accepted", Bool, "", "the API server accepted it"},
        {prefix + "error", Str, "", "the creation refused"},
        {prefix + "name", Str, "", "the pod"},
        {prefix + "node", Str, "", "the node it was bound to"},
        {prefix + "phase", Str, "", "its last phase"},
        {prefix + "created", Str, "", "creationTimestamp (RFC 3339)"},
        {prefix + "scheduled", Str, "", "PodScheduled's lastTransitionTime; empty until scheduled"},
        {prefix + "unscheduled_reason", Str, "", "PodScheduled False: the scheduler's reason (Unschedulable)"},
        {prefix + "message", Str, "", "the scheduler's message (\"0/4 nodes are available: ...\")"},
        {prefix + "state", Str, "", "the container's state: waiting, running, terminated; empty before one"},
        {prefix + "state_reason", Str, "", "its reason (ContainerCreating, ImagePullBackOff, Completed ...)"},
        {prefix + "state_message", Str, "", "its message"},
        {prefix + "started", Str, "", "the container's startedAt; empty until it started"},
        {prefix + "exit_code", Int, "", "exit code when terminated; -1 otherwise"},
        {prefix + "polled_s", Num, "s", "time of the last poll after creation (poll resolution)"},
        {prefix + "schedule_s", Num, "s", "creation to scheduled (server clock, 1 s resolution); -1 unknown"},
        {prefix + "start_s", Num, "s", "creation to container started, image pull included; -1 unknown"},
        {prefix + "pull_s", Num, "s", "image pull from the kubelet's Pulled event (0 already present); -1 unknown"},
        {prefix + "failure", Str, "", "the kubelet's last FailedMount/FailedAttachVolume/FailedMapVolume event"},
        {prefix + "event", Str, "", "its last other Failed* or BackOff event (image pull, sandbox ...)"},
        {prefix + "image_started", Bool, "", "a Pulling or Pulled event: the volumes were mounted"},
        {prefix + "queued", Bool, "", "a FailedScheduling event: it waited for room (a free GPU ...)"},
        {prefix + "clock_skew", Bool, "", "startedAt (node clock) before the API's times: start_s not kept"},
        {prefix + "uid", Str, "", "metadata.uid"},
        {prefix + "delete_error", Str, "", "the deletion refused; empty when deleted"}};
    return f;
  };
  auto joined = [](std::vector<core::FieldSpec> a, const std::vector<core::FieldSpec>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
  };
  DeclareFields(
      out, "probe.k8s-pvc",
      with(joined({{"namespace", Str, "", "the probe's namespace (created and deleted)"},
                   {"default_class", Bool, "", "a StorageClass is marked default"},
                   {"image", Str, "", "the mounting pods' image (--probe-image)"},
                   {"error", Str, "", "why no claim was made (namespace refused ...); empty when they were"},
                   {"budget_s", Num, "s", "how long each claim was waited for"},
                   {"claims[].name", Str, "", "the test claim"},
                   {"claims[].class", Str, "", "its StorageClass; empty for the default class"},
                   {"claims[].access_mode", Str, "", "ReadWriteOnce or ReadWriteMany"},
                   {"claims[].binding_mode", Str, "", "the class's volumeBindingMode"},
                   {"claims[].created", Bool, "", "the API server accepted it"},
                   {"claims[].bound", Bool, "", "it reached Bound within the budget"},
                   {"claims[].waits_for_consumer", Bool, "", "WaitForFirstConsumer: provisioned only for a pod"},
                   {"claims[].phase", Str, "", "its last phase (Pending, Bound)"},
                   {"claims[].selected_node", Str, "", "WaitForFirstConsumer: the node the scheduler chose for it"},
                   {"claims[].seconds", Num, "s", "time to Bound (poll resolution)"},
                   {"claims[].error", Str, "", "creation or deletion refused"}},
                  pod_fields("claims[].pod."))));
  DeclareFields(out, "probe.k8s-lb",
                with({{"namespace", Str, "", "the probe's namespace (created and deleted)"},
                      {"created", Bool, "", "the Service was accepted"},
                      {"address", Str, "", "the first ingress IP or hostname; empty when none came"},
                      {"seconds", Num, "s", "time until the address (poll resolution)"},
                      {"budget_s", Num, "s", "how long the address was waited for"},
                      {"error", Str, "", "creation or deletion refused"}}));
  DeclareFields(
      out, "probe.k8s-gpu-pod",
      with(joined({{"namespace", Str, "", "the probe's namespace (created and deleted)"},
                   {"resource", Str, "", "the GPU resource asked for (the one most nodes offer); empty when none does"},
                   {"gpu_nodes", Int, "nodes", "nodes offering that resource"},
                   {"image", Str, "", "the pods' image (--probe-image)"},
                   {"error", Str, "", "why no pod was made (namespace refused ...); empty when they were"},
                   {"budget_s", Num, "s", "how long the pods were waited for"},
                   {"pods[].role", Str, "", "gpu (one GPU) or cpu (the baseline, no GPU)"}},
                  pod_fields("pods[]."))));
  DeclareFields(out, "k8s.rbac",
                {{"grants[].role", Str, "", "\"ClusterRole/name\" or \"Role/namespace/name\" granting nodes/proxy"},
                 {"grants[].binding", Str, "", "\"ClusterRoleBinding/name\" or \"RoleBinding/namespace/name\""},
                 {"grants[].binding_namespace", Str, "", "the RoleBinding's namespace; empty for cluster bindings"},
                 {"grants[].subject_kind", Str, "", "User, Group or ServiceAccount"},
                 {"grants[].subject", Str, "", "subject name"},
                 {"grants[].subject_namespace", Str, "", "a ServiceAccount's namespace"},
                 {"grants[].verbs[]", Str, "", "get, create or * on nodes/proxy"},
                 {"roles", Int, "objects", "roles and cluster roles read"},
                 {"bindings", Int, "objects", "bindings read"},
                 malformed});
  DeclareFields(
      out, "k8s.access",
      with({{"reviews[].verb", Str, "", "verb asked"},
            {"reviews[].resource", Str, "", "resource asked (\"jobs.batch\")"},
            {"reviews[].subresource", Str, "", "\"proxy\" or empty"},
            {"reviews[].scope", Str, "", "all (every namespace), cluster, or empty (the context's namespace)"},
            {"reviews[].allowed", Bool, "", "the answer; null when the review failed", kNull},
            {"reviews[].error", Str, "", "why the review failed"}}));
  DeclareFields(out, "kubelet.cpu-manager",
                {{"state_policy", Str, "", "policyName of cpu_manager_state; null when unread", kNull},
                 {"config_policy", Str, "", "cpuManagerPolicy of config.yaml (default none); null when unread", kNull},
                 {"kubelet", Bool, "", "either kubelet file was read"}});
}

}  // namespace clustermax::collect
