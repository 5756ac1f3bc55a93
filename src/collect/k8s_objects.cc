#include "collect/k8s_objects.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <fmt/format.h>

#include "util/strings.h"
#include "util/url.h"

namespace clustermax::collect::k8s {
namespace {

using nlohmann::json;

long long Int(const json& obj, std::initializer_list<const char*> path, long long def) {
  const json& v = At(obj, path);
  return v.is_number_integer() ? v.get<long long>() : def;
}

// A map of strings (labels, capacity): the string-valued entries only, values cut at 256 bytes.
json StringMap(const json& m) {
  json out = json::object();
  if (!m.is_object()) return out;
  for (const auto& [k, v] : m.items()) {
    if (v.is_string()) out[k] = util::Ellipsize(v.get<std::string>(), 256);
  }
  return out;
}

// The vCluster labels and annotations of an object's metadata: key -> value.
json VclusterMarkers(const json& metadata) {
  json out = json::object();
  for (const char* part : {"labels", "annotations"}) {
    if (!metadata.is_object() || !metadata.contains(part) || !metadata[part].is_object()) continue;
    for (const auto& [k, v] : metadata[part].items()) {
      if (IsVclusterMarker(k) && v.is_string()) out[k] = util::Ellipsize(v.get<std::string>(), 256);
    }
  }
  return out;
}

std::string Name(const json& obj) { return Str(obj, {"metadata", "name"}); }
std::string Ns(const json& obj) { return Str(obj, {"metadata", "namespace"}); }

// The condition of `type` in status.conditions: true/false, null when absent or unknown.
json Condition(const json& obj, const char* type, std::string* message = nullptr) {
  const json& conds = At(obj, {"status", "conditions"});
  if (!conds.is_array()) return nullptr;
  for (const auto& c : conds) {
    if (!c.is_object() || Str(c, {"type"}) != type) continue;
    if (message) *message = util::Ellipsize(Str(c, {"message"}), 200);
    std::string s = Str(c, {"status"});
    if (s == "True") return true;
    if (s == "False") return false;
    return nullptr;
  }
  return nullptr;
}

json Images(const json& pod_spec) {
  json out = json::array();
  for (const char* list : {"initContainers", "containers"}) {
    const json& cs = At(pod_spec, {list});
    if (!cs.is_array()) continue;
    for (const auto& c : cs) {
      if (c.is_object() && c.contains("image") && c["image"].is_string()) out.push_back(c["image"]);
    }
  }
  return out;
}

bool Has(const json& list, std::initializer_list<const char*> values) {
  if (!list.is_array()) return false;
  for (const auto& v : list) {
    if (!v.is_string()) continue;
    for (const char* want : values)
      if (v.get<std::string>() == want) return true;
  }
  return false;
}

}  // namespace

const json& At(const json& obj, std::initializer_list<const char*> path) {
  static const json kNull;
  const json* cur = &obj;
  for (const char* k : path) {
    if (!cur->is_object()) return kNull;
    auto it = cur->find(k);
    if (it == cur->end()) return kNull;
    cur = &*it;
  }
  return *cur;
}

std::string Str(const json& obj, std::initializer_list<const char*> path) {
  const json& v = At(obj, path);
  return v.is_string() ? util::SanitizeUtf8(v.get<std::string>()) : "";
}

std::optional<ListPage> ParseListPage(std::string_view text, std::string* error) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    if (error) *error = "not JSON: " + util::Ellipsize(std::string(util::Trim(text)), 200);
    return std::nullopt;
  }
  if (!doc.is_object() || !doc.contains("items") || !doc["items"].is_array()) {
    if (error) *error = fmt::format("not a list (kind '{}')", doc.is_object() ? Str(doc, {"kind"}) : "");
    return std::nullopt;
  }
  ListPage p;
  p.kind = Str(doc, {"kind"});
  p.next = Str(doc, {"metadata", "continue"});
  p.remaining_items = Int(doc, {"metadata", "remainingItemCount"}, -1);
  for (auto& it : doc["items"]) {
    if (!it.is_object() || Name(it).empty()) {
      ++p.malformed;
      continue;
    }
    p.items.push_back(std::move(it));
  }
  return p;
}

ListResult ListAll(const std::string& path, const std::string& query, int page_limit, int max_pages,
                   const std::function<std::optional<std::string>(const std::string& url)>& get,
                   const std::function<void(const json&)>& each) {
  ListResult r;
  std::string next;
  for (int page = 0; page < max_pages; ++page) {
    std::string url = fmt::format("{}?{}{}limit={}", path, query, query.empty() ? "" : "&", page_limit);
    if (!next.empty()) url += "&continue=" + util::PercentEncode(next);
    auto text = get(url);
    if (!text) {
      r.outcome = ListResult::kRequestFailed;
      return r;
    }
    std::string why;
    auto p = ParseListPage(*text, &why);
    if (!p) {
      r.outcome = ListResult::kNotAList;
      r.error = fmt::format("GET {}: {}", url, why);
      return r;
    }
    r.malformed += p->malformed;
    for (const auto& item : p->items) each(item);
    if (p->next.empty()) return r;
    next = p->next;
  }
  r.outcome = ListResult::kEndless;
  r.error = fmt::format("GET {}: the list did not end within {} pages", path, max_pages);
  return r;
}

std::string ErrorReason(std::string_view err) {
  // kubectl: "Error from server (Forbidden): nodes is forbidden: User ..."
  size_t at = err.find("Error from server (");
  if (at != std::string_view::npos) {
    size_t start = at + 19, end = err.find(')', start);
    if (end != std::string_view::npos) return std::string(err.substr(start, end - start));
  }
  // A Status object printed as the body.
  json doc = json::parse(err, nullptr, false);
  if (doc.is_object() && Str(doc, {"kind"}) == "Status") return Str(doc, {"reason"});
  return "";
}

json Node(const json& n) {
  json taints = json::array();
  const json& ts = At(n, {"spec", "taints"});
  if (ts.is_array()) {
    for (const auto& t : ts) {
      if (!t.is_object()) continue;
      std::string v = Str(t, {"value"});
      taints.push_back(fmt::format("{}{}{}:{}", Str(t, {"key"}), v.empty() ? "" : "=", v, Str(t, {"effect"})));
    }
  }
  const json& info = At(n, {"status", "nodeInfo"});
  return {{"name", Name(n)},
          {"labels", StringMap(At(n, {"metadata", "labels"}))},
          {"markers", VclusterMarkers(At(n, {"metadata"}))},
          {"taints", taints},
          {"capacity", StringMap(At(n, {"status", "capacity"}))},
          {"allocatable", StringMap(At(n, {"status", "allocatable"}))},
          {"kernel", Str(info, {"kernelVersion"})},
          {"os_image", Str(info, {"osImage"})},
          {"kubelet", Str(info, {"kubeletVersion"})},
          {"runtime", Str(info, {"containerRuntimeVersion"})},
          {"ready", Condition(n, "Ready")},
          {"unschedulable", At(n, {"spec", "unschedulable"}).is_boolean() && n["spec"]["unschedulable"].get<bool>()}};
}

json Workload(const json& o, std::string_view kind) {
  long long desired = 0, ready = 0;
  if (kind == "DaemonSet") {
    desired = Int(o, {"status", "desiredNumberScheduled"}, 0);
    ready = Int(o, {"status", "numberReady"}, 0);
  } else {
    desired = Int(o, {"spec", "replicas"}, 1);
    ready = Int(o, {"status", "readyReplicas"}, 0);
  }
  return {{"kind", kind},       {"namespace", Ns(o)}, {"name", Name(o)},
          {"desired", desired}, {"ready", ready},     {"images", Images(At(o, {"spec", "template", "spec"}))}};
}

json Pod(const json& p) {
  std::string owner_kind, owner_name;
  const json& owners = At(p, {"metadata", "ownerReferences"});
  if (owners.is_array() && !owners.empty() && owners[0].is_object()) {
    owner_kind = Str(owners[0], {"kind"});
    owner_name = Str(owners[0], {"name"});
  }
  return {{"namespace", Ns(p)},
          {"name", Name(p)},
          {"node", Str(p, {"spec", "nodeName"})},
          {"phase", Str(p, {"status", "phase"})},
          {"owner_kind", owner_kind},
          {"owner_name", owner_name},
          {"images", Images(At(p, {"spec"}))}};
}

json Namespace(const json& ns) {
  return {{"name", Name(ns)},
          {"labels", StringMap(At(ns, {"metadata", "labels"}))},
          {"markers", VclusterMarkers(At(ns, {"metadata"}))}};
}

json StorageClass(const json& sc) {
  const json& ann = At(sc, {"metadata", "annotations"});
  auto flag = [&](const char* key) {
    return ann.is_object() && ann.contains(key) && ann[key].is_string() && ann[key].get<std::string>() == "true";
  };
  return {{"name", Name(sc)},
          {"provisioner", Str(sc, {"provisioner"})},
          {"default", flag("storageclass.kubernetes.io/is-default-class") ||
                          flag("storageclass.beta.kubernetes.io/is-default-class")},
          {"binding_mode", Str(sc, {"volumeBindingMode"})}};
}

json Claim(const json& pvc) {
  const json& modes = At(pvc, {"spec", "accessModes"});
  json m = json::array();
  if (modes.is_array())
    for (const auto& x : modes)
      if (x.is_string()) m.push_back(x);
  return {{"namespace", Ns(pvc)},
          {"name", Name(pvc)},
          {"class", Str(pvc, {"spec", "storageClassName"})},
          {"access_modes", m},
          {"phase", Str(pvc, {"status", "phase"})}};
}

json Service(const json& svc) {
  json ingress = json::array();
  const json& ing = At(svc, {"status", "loadBalancer", "ingress"});
  if (ing.is_array()) {
    for (const auto& i : ing) {
      if (!i.is_object()) continue;
      std::string a = Str(i, {"ip"});
      if (a.empty()) a = Str(i, {"hostname"});
      if (!a.empty()) ingress.push_back(a);
    }
  }
  return {{"namespace", Ns(svc)}, {"name", Name(svc)}, {"type", Str(svc, {"spec", "type"})}, {"ingress", ingress}};
}

json IngressClass(const json& ic) {
  const json& ann = At(ic, {"metadata", "annotations"});
  bool def = ann.is_object() && Str(ann, {"ingressclass.kubernetes.io/is-default-class"}) == "true";
  return {{"name", Name(ic)}, {"controller", Str(ic, {"spec", "controller"})}, {"default", def}};
}

json GatewayClass(const json& gc) {
  return {
      {"name", Name(gc)}, {"controller", Str(gc, {"spec", "controllerName"})}, {"accepted", Condition(gc, "Accepted")}};
}

json ApiService(const json& as) {
  std::string message;
  json available = Condition(as, "Available", &message);
  return {{"name", Name(as)}, {"available", available}, {"message", message}};
}

json StatefulResource(const json& cr) {
  return {{"name", Name(cr)}, {"namespace", Ns(cr)}, {"state", Str(cr, {"status", "state"})}};
}

json KueueTopology(const json& t) {
  json levels = json::array();
  const json& ls = At(t, {"spec", "levels"});
  if (ls.is_array()) {
    for (const auto& l : ls) {
      std::string key = Str(l, {"nodeLabel"});
      if (!key.empty()) levels.push_back(util::Ellipsize(key, 256));
    }
  }
  return {{"name", Name(t)}, {"levels", levels}};
}

json ResourceFlavor(const json& rf) {
  return {{"name", Name(rf)},
          {"topology", Str(rf, {"spec", "topologyName"})},
          {"node_labels", StringMap(At(rf, {"spec", "nodeLabels"}))}};
}

json HyperNode(const json& hn) {
  json members = json::array();
  const json& ms = At(hn, {"spec", "members"});
  if (ms.is_array()) {
    for (const auto& m : ms) {
      json out = {
          {"type", Str(m, {"type"})}, {"exact", ""}, {"regex", ""}, {"labels", json::object()}, {"unread", false}};
      const json& sel = At(m, {"selector"});
      if (std::string name = Str(sel, {"exactMatch", "name"}); !name.empty()) {
        out["exact"] = util::Ellipsize(name, 256);
      } else if (std::string re = Str(sel, {"regexMatch", "pattern"}); !re.empty()) {
        out["regex"] = util::Ellipsize(re, 256);
      } else if (const json& labels = At(sel, {"labelMatch", "matchLabels"});
                 labels.is_object() && !labels.empty() && StringMap(labels).size() == labels.size()) {
        out["labels"] = StringMap(labels);
      } else {
        out["unread"] = true;  // matchExpressions, or a selector of a later API version
      }
      if (!At(sel, {"labelMatch", "matchExpressions"}).empty()) out["unread"] = true;
      members.push_back(std::move(out));
    }
  }
  return {{"name", Name(hn)}, {"tier", Int(hn, {"spec", "tier"}, -1)}, {"members", members}};
}

json ComputeDomain(const json& cd) {
  return {{"namespace", Ns(cd)},
          {"name", Name(cd)},
          {"nodes", Int(cd, {"spec", "numNodes"}, -1)},
          {"status", Str(cd, {"status", "status"})}};
}

json ProbePod(const json& p) {
  std::string scheduled, unscheduled_reason, message;
  const json& conds = At(p, {"status", "conditions"});
  if (conds.is_array()) {
    for (const auto& c : conds) {
      if (!c.is_object() || Str(c, {"type"}) != "PodScheduled") continue;
      if (Str(c, {"status"}) == "True") {
        scheduled = Str(c, {"lastTransitionTime"});
      } else {
        unscheduled_reason = Str(c, {"reason"});
        message = util::Ellipsize(Str(c, {"message"}), 400);
      }
    }
  }
  std::string state, state_reason, state_message, started;
  long long exit_code = -1;
  const json& statuses = At(p, {"status", "containerStatuses"});
  if (statuses.is_array() && !statuses.empty() && statuses[0].is_object()) {
    const json& st = At(statuses[0], {"state"});
    for (const char* s : {"terminated", "running", "waiting"}) {
      const json& one = At(st, {s});
      if (!one.is_object()) continue;
      state = s;
      state_reason = Str(one, {"reason"});
      state_message = util::Ellipsize(Str(one, {"message"}), 400);
      started = Str(one, {"startedAt"});
      if (state == "terminated") exit_code = Int(one, {"exitCode"}, -1);
      break;
    }
  }
  // A pod the kubelet rejected (Failed before any container: OutOfnvidia.com/gpu, UnexpectedAdmissionError).
  if (state.empty() && Str(p, {"status", "phase"}) == "Failed") {
    state_reason = Str(p, {"status", "reason"});
    state_message = util::Ellipsize(Str(p, {"status", "message"}), 400);
  }
  return {{"name", Name(p)},
          {"uid", Str(p, {"metadata", "uid"})},
          {"node", Str(p, {"spec", "nodeName"})},
          {"phase", Str(p, {"status", "phase"})},
          {"created", Str(p, {"metadata", "creationTimestamp"})},
          {"scheduled", scheduled},
          {"unscheduled_reason", unscheduled_reason},
          {"message", message},
          {"state", state},
          {"state_reason", state_reason},
          {"state_message", state_message},
          {"started", started},
          {"exit_code", exit_code}};
}

std::optional<double> GoDurationSeconds(std::string_view t) {
  if (t.empty() || t.size() > 64) return std::nullopt;
  if (t == "0") return 0.0;
  double total = 0;
  while (!t.empty()) {
    size_t n = 0;
    while (n < t.size() && (std::isdigit(static_cast<unsigned char>(t[n])) || t[n] == '.')) ++n;
    if (n == 0) return std::nullopt;
    double v = 0;
    try {
      size_t used = 0;
      v = std::stod(std::string(t.substr(0, n)), &used);
      if (used != n) return std::nullopt;
    } catch (...) {
      return std::nullopt;
    }
    t.remove_prefix(n);
    double unit = 0;
    for (auto [name, scale] : {std::pair<std::string_view, double>{"ns", 1e-9},
                               {"us", 1e-6},
                               {"\xc2\xb5s", 1e-6},
                               {"\xce\xbcs", 1e-6},
                               {"ms", 1e-3},
                               {"s", 1},
                               {"m", 60},
                               {"h", 3600}}) {
      if (t.starts_with(name)) {
        unit = scale;
        t.remove_prefix(name.size());
        break;
      }
    }
    if (unit == 0) return std::nullopt;
    total += v * unit;
  }
  return total;
}

std::optional<double> PullSeconds(std::string_view m) {
  // kubectl describe puts the container's field path first ("spec.containers{app}: Container image ...").
  if (m.find("Container image ") != std::string_view::npos &&
      m.find("already present on machine") != std::string_view::npos)
    return 0.0;
  if (m.find("Successfully pulled image ") == std::string_view::npos) return std::nullopt;
  // ... image "X" in 1.302s (1.302s including waiting). Image size: N bytes.
  size_t q = m.rfind("\" in ");
  if (q == std::string_view::npos) return std::nullopt;
  std::string_view rest = m.substr(q + 5);
  size_t end = 0;
  while (end < rest.size() && rest[end] != ' ' && rest[end] != '.') ++end;
  // The duration ends at a space, or at the sentence's full stop (older kubelets: "in 1.302s.").
  while (end < rest.size() && rest[end] == '.' && end + 1 < rest.size() &&
         std::isdigit(static_cast<unsigned char>(rest[end + 1]))) {
    ++end;
    while (end < rest.size() && rest[end] != ' ' && rest[end] != '.') ++end;
  }
  return GoDurationSeconds(rest.substr(0, end));
}

json PrometheusRule(const json& pr) {
  long long alerts = 0, records = 0;
  const json& groups = At(pr, {"spec", "groups"});
  if (groups.is_array()) {
    for (const auto& g : groups) {
      const json& rules = At(g, {"rules"});
      if (!rules.is_array()) continue;
      for (const auto& r : rules) {
        if (!Str(r, {"alert"}).empty()) ++alerts;
        if (!Str(r, {"record"}).empty()) ++records;
      }
    }
  }
  return {{"namespace", Ns(pr)}, {"name", Name(pr)}, {"alerts", alerts}, {"records", records}};
}

std::vector<std::string> NodesProxyVerbs(const json& role) {
  std::set<std::string> verbs;
  const json& rules = At(role, {"rules"});
  if (!rules.is_array()) return {};
  for (const auto& r : rules) {
    if (!r.is_object()) continue;
    if (!Has(At(r, {"apiGroups"}), {"", "*"})) continue;
    if (!Has(At(r, {"resources"}), {"nodes/proxy", "nodes/*", "*"})) continue;
    const json& vs = At(r, {"verbs"});
    if (!vs.is_array()) continue;
    for (const auto& v : vs) {
      if (!v.is_string()) continue;
      std::string s = v.get<std::string>();
      if (s == "get" || s == "create" || s == "*") verbs.insert(s);
    }
  }
  return {verbs.begin(), verbs.end()};
}

std::vector<json> Subjects(const json& binding) {
  std::vector<json> out;
  const json& subs = At(binding, {"subjects"});
  if (!subs.is_array()) return out;
  for (const auto& s : subs) {
    if (!s.is_object()) continue;
    out.push_back({{"kind", Str(s, {"kind"})}, {"name", Str(s, {"name"})}, {"namespace", Str(s, {"namespace"})}});
  }
  return out;
}

bool IsVclusterMarker(std::string_view key) {
  return key.starts_with("vcluster.loft.sh/") || key.starts_with("loft.sh/") || key.find("vcluster") != key.npos;
}

}  // namespace clustermax::collect::k8s
