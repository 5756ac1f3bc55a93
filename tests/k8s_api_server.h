// A Kubernetes API server stand-in for tests, on loopback: it serves recorded API responses from a
// fixture directory (tests/fixtures/k8s/<cluster>/, one file per path: GET /api/v1/nodes answers
// api/v1/nodes.json; paths the cluster lacks fall back to tests/fixtures/k8s/common/) so that the
// real kubectl can be driven against it. Lists are paginated as the API server does (limit,
// continue, remainingItemCount); paths can be made to answer 403 or garbage; SelfSubjectAccessReviews
// are answered from a deny list; every request is logged ("GET /api/v1/nodes?limit=250").
// Objects can be created (POST) and deleted (DELETE) and are then served like the recorded ones. A
// DaemonSet stands for its pods: one per node its affinity pins, each answering as the test set
// that node's kubelet to (SetNodePod: finished with a log, unschedulable, image pull failure,
// evicted, still collecting, or no pod at all with the controller's FailedCreate event).
#pragma once
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_server.h"

namespace testing_server {

class KubeApiServer {
 public:
  KubeApiServer(std::filesystem::path cluster, std::filesystem::path common)
      : cluster_(std::move(cluster)), common_(std::move(common)) {
    fd_ = ListenLoopback(64, &port_);
    thread_ = std::thread([this] { Accept(); });
  }
  ~KubeApiServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    std::vector<std::thread> workers;
    {
      std::lock_guard lock(mu_);  // a worker may still want the lock: join them without it
      workers.swap(workers_);
    }
    for (auto& t : workers) t.join();
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // GETs of paths starting with `prefix` answer 403 Forbidden.
  void Forbid(std::string prefix) {
    std::lock_guard lock(mu_);
    forbidden_.push_back(std::move(prefix));
  }
  // GET `path` answers 200 with `body` (malformed JSON, a wrong kind ...).
  void Override(std::string path, std::string body) {
    std::lock_guard lock(mu_);
    overrides_[std::move(path)] = std::move(body);
  }
  // Access reviews of "verb resource[/subresource]" (resource with its group: "jobs.batch") are denied.
  void Deny(std::string review) {
    std::lock_guard lock(mu_);
    denied_.insert(std::move(review));
  }
  // Pages hold at most `n` items whatever the client's limit (as a server under load may answer).
  void MaxPage(size_t n) { max_page_ = n; }

  // How the pod of a DaemonSet on `node` stands (nodes not set: still collecting).
  enum class PodFate { kCollected, kUnschedulable, kImagePull, kEvicted, kCollecting, kNoPod, kCrashing };
  void SetNodePod(std::string node, PodFate fate, std::string log = "") {
    std::lock_guard lock(mu_);
    fates_[node] = {fate, std::move(log)};
  }
  // An object that exists before the test (served and refused for creation like a created one).
  void Put(const std::string& path, nlohmann::json obj) {
    std::lock_guard lock(mu_);
    created_[path] = std::move(obj);
  }
  // Called on each object as it is created (a controller's work: a claim bound, a Service given an
  // address), under the server's lock.
  void OnCreate(std::function<void(nlohmann::json&)> f) {
    std::lock_guard lock(mu_);
    on_create_ = std::move(f);
  }
  // The objects created (or put) and not deleted, by path.
  std::map<std::string, nlohmann::json> Created() {
    std::lock_guard lock(mu_);
    return created_;
  }
  std::vector<std::string> Requests() {
    std::lock_guard lock(mu_);
    return log_;
  }

  // A kubeconfig for this server (no credentials: plain HTTP on loopback).
  std::string Kubeconfig() const {
    return "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: " + url() +
           "\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n    namespace: default\n"
           "current-context: fake\nusers:\n- name: fake\n  user: {}\n";
  }

 private:
  static std::string Response(int code, const std::string& body, const char* type = "application/json") {
    const char* text = code == 200   ? "OK"
                       : code == 201 ? "Created"
                       : code == 403 ? "Forbidden"
                       : code == 409 ? "Conflict"
                                     : "Not Found";
    std::ostringstream o;
    o << "HTTP/1.1 " << code << " " << text << "\r\nContent-Type: " << type << "\r\nContent-Length: " << body.size()
      << "\r\nConnection: close\r\n\r\n"
      << body;
    return o.str();
  }
  static std::string Status(int code, const std::string& reason, const std::string& message) {
    nlohmann::json s = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()},
                        {"status", "Failure"}, {"message", message}, {"reason", reason},
                        {"code", code}};
    return Response(code, s.dump());
  }

  static std::map<std::string, std::string> Query(const std::string& q) {
    std::map<std::string, std::string> out;
    std::stringstream ss(q);
    std::string kv;
    while (std::getline(ss, kv, '&')) {
      size_t eq = kv.find('=');
      if (eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return out;
  }

  std::string Get(const std::string& path, const std::string& query) {
    {
      std::lock_guard lock(mu_);
      for (const auto& p : forbidden_)
        if (path.rfind(p, 0) == 0)
          return Status(403, "Forbidden", "forbidden: User \"test\" cannot list resource at " + path);
      if (auto it = overrides_.find(path); it != overrides_.end()) return Response(200, it->second);
      if (auto it = created_.find(path); it != created_.end()) return Response(200, it->second.dump());
      if (auto pods = PodsOf(path); pods) return Page(std::move(*pods), query);
      if (auto log = LogOf(path); log) return Response(200, *log, "text/plain");
    }
    std::string rel = path == "/" ? "index" : path.substr(1);
    std::filesystem::path file;
    for (const auto& root : {cluster_, common_}) {
      auto f = root / (rel + ".json");
      if (rel.find("..") == std::string::npos && std::filesystem::is_regular_file(f)) {
        file = f;
        break;
      }
    }
    if (file.empty()) {
      if (auto list = CreatedIn(path, query)) return Page(std::move(*list), query);
      return Status(404, "NotFound", "the server could not find the requested resource");
    }
    std::ifstream in(file);
    std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto doc = nlohmann::json::parse(body, nullptr, false);
    if (!doc.is_object() || !doc.contains("items")) return Response(200, body);
    return Page(std::move(doc), query);
  }

  // A list answered as the API server pages it: items [offset, offset + limit), the continue token
  // names the next offset; without a limit, whole.
  std::string Page(nlohmann::json doc, const std::string& query) {
    auto q = Query(query);
    if (!q.count("limit")) return Response(200, doc.dump());
    size_t limit = std::min<size_t>(std::stoul(q["limit"]), max_page_), offset = 0;
    if (q.count("continue")) offset = std::stoul(q["continue"].substr(q["continue"].rfind('-') + 1));
    nlohmann::json items = std::move(doc["items"]);
    nlohmann::json page = nlohmann::json::array();
    for (size_t i = offset; i < items.size() && i < offset + limit; ++i) page.push_back(items[i]);
    size_t next = offset + page.size();
    doc["items"] = page;
    if (!doc.contains("metadata") || !doc["metadata"].is_object()) doc["metadata"] = nlohmann::json::object();
    if (next < items.size()) {
      doc["metadata"]["continue"] = "page-" + std::to_string(next);
      doc["metadata"]["remainingItemCount"] = items.size() - next;
    }
    return Response(200, doc.dump());
  }

  // A collection no fixture answers, listed from the objects created in it (a labelSelector
  // "key=value" filters them); nullopt when none was.
  std::optional<nlohmann::json> CreatedIn(const std::string& path, const std::string& query) {
    std::string selector = Query(query)["labelSelector"];
    for (auto [from, to] : {std::pair<std::string, std::string>{"%2F", "/"}, {"%3D", "="}})
      for (size_t at; (at = selector.find(from)) != std::string::npos;) selector.replace(at, from.size(), to);
    std::string key = selector.substr(0, selector.find('=')),
                value = selector.find('=') == std::string::npos ? "" : selector.substr(selector.find('=') + 1);
    std::lock_guard lock(mu_);
    nlohmann::json items = nlohmann::json::array();
    bool any = false;
    for (const auto& [at, obj] : created_) {
      if (!at.starts_with(path + "/") || at.find('/', path.size() + 1) != std::string::npos) continue;
      any = true;
      if (selector.empty() || Label(obj, key) == value) items.push_back(obj);
    }
    if (!any) return std::nullopt;
    return nlohmann::json{
        {"kind", "List"}, {"apiVersion", "v1"}, {"metadata", nlohmann::json::object()}, {"items", items}};
  }

  static std::string Label(const nlohmann::json& obj, const std::string& key) {
    if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object()) return "";
    const auto& l = obj["metadata"].value("labels", nlohmann::json::object());
    return l.is_object() && l.contains(key) && l[key].is_string() ? l[key].get<std::string>() : "";
  }
  // "/api/v1/namespaces/NS/..." or "/apis/G/V/namespaces/NS/..." -> NS.
  static std::string NamespaceOf(const std::string& path) {
    size_t at = path.find("/namespaces/");
    if (at == std::string::npos) return "";
    std::string rest = path.substr(at + 12);
    return rest.substr(0, rest.find('/'));
  }

  std::string Create(const std::string& path, const std::string& body) {
    auto obj = nlohmann::json::parse(body, nullptr, false);
    if (!obj.is_object() || !obj.contains("metadata") || !obj["metadata"].is_object() ||
        !obj["metadata"].contains("name"))
      return Status(400, "BadRequest", "the object has no metadata.name");
    std::string name = obj["metadata"]["name"].get<std::string>();
    std::string at = path + "/" + name;
    std::lock_guard lock(mu_);
    for (const auto& p : forbidden_)
      if (path.rfind(p, 0) == 0)
        return Status(403, "Forbidden", "forbidden: User \"test\" cannot create resource at " + path);
    bool recorded = false;
    for (const auto& root : {cluster_, common_})
      recorded = recorded || std::filesystem::is_regular_file(root / (at.substr(1) + ".json"));
    if (created_.count(at) || recorded) return Status(409, "AlreadyExists", "\"" + name + "\" already exists");
    obj["metadata"]["uid"] = "uid-" + name;
    if (on_create_) on_create_(obj);
    created_[at] = obj;
    return Response(201, obj.dump());
  }

  std::string Delete(const std::string& path) {
    std::lock_guard lock(mu_);
    if (!created_.erase(path)) return Status(404, "NotFound", "not found: " + path);
    // A namespace takes everything in it along.
    if (path.rfind("/api/v1/namespaces/", 0) == 0 && path.find('/', 19) == std::string::npos) {
      std::string ns = path.substr(19);
      for (auto it = created_.begin(); it != created_.end();)
        it = NamespaceOf(it->first) == ns ? created_.erase(it) : std::next(it);
    }
    return Response(200, nlohmann::json{{"kind", "Status"}, {"status", "Success"}}.dump());
  }

  // The nodes a DaemonSet's pods are pinned to (matchFields metadata.name In [...]).
  static std::vector<std::string> PinnedNodes(const nlohmann::json& ds) {
    std::vector<std::string> out;
    try {
      const auto& terms = ds["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]
                            ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"];
      for (const auto& t : terms)
        for (const auto& f : t.value("matchFields", nlohmann::json::array()))
          if (f.value("key", "") == "metadata.name")
            for (const auto& v : f["values"]) out.push_back(v.get<std::string>());
    } catch (const std::exception&) {
    }
    return out;
  }

  // A pod as the API shows it for each fate (the shapes of real pod objects: status.phase,
  // conditions, initContainerStatuses with state.waiting/running/terminated).
  nlohmann::json PodFor(const nlohmann::json& ds, const std::string& node, PodFate fate) {
    nlohmann::json pod = {{"apiVersion", "v1"},
                          {"kind", "Pod"},
                          {"metadata",
                           {{"name", ds["metadata"]["name"].get<std::string>() + "-" + node},
                            {"namespace", ds["metadata"].value("namespace", "")},
                            {"labels", ds["spec"]["template"]["metadata"]["labels"]}}}};
    // The DaemonSet controller pins each pod to its node by name.
    nlohmann::json field = {{"key", "metadata.name"}, {"operator", "In"}, {"values", nlohmann::json::array({node})}};
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] =
        nlohmann::json::array({{{"matchFields", nlohmann::json::array({field})}}});
    auto init = [&](nlohmann::json state) {
      return nlohmann::json::array({{{"name", "collect"}, {"ready", false}, {"restartCount", 0}, {"state", state}}});
    };
    switch (fate) {
      case PodFate::kUnschedulable:
        pod["status"] = {{"phase", "Pending"},
                         {"conditions",
                          {{{"type", "PodScheduled"},
                            {"status", "False"},
                            {"reason", "Unschedulable"},
                            {"message",
                             "0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) didn't "
                             "match Pod's node affinity/selector. preemption: 0/4 nodes are available: 1 "
                             "No preemption victims found for incoming pod, 3 Preemption is not helpful "
                             "for scheduling."}}}}};
        break;
      case PodFate::kImagePull:
        pod["spec"]["nodeName"] = node;
        pod["status"] = {{"phase", "Pending"},
                         {"initContainerStatuses",
                          init({{"waiting",
                                 {{"reason", "ImagePullBackOff"},
                                  {"message", "Back-off pulling image \"registry.example/clustermax:1\""}}}})}};
        break;
      case PodFate::kEvicted:
        pod["spec"]["nodeName"] = node;
        pod["status"] = {{"phase", "Failed"},
                         {"reason", "Evicted"},
                         {"message",
                          "The node was low on resource: ephemeral-storage. Threshold quantity: "
                          "10181869868, available: 9012236Ki. "}};
        break;
      case PodFate::kCollecting:
        pod["spec"]["nodeName"] = node;
        pod["status"] = {{"phase", "Pending"},
                         {"initContainerStatuses", init({{"running", {{"startedAt", "2026-12-02T10:00:00Z"}}}})}};
        break;
      case PodFate::kCrashing:
        pod["spec"]["nodeName"] = node;
        pod["status"] = {
            {"phase", "Pending"},
            {"initContainerStatuses",
             {{{"name", "collect"},
               {"restartCount", 3},
               {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}, {"message", "back-off 40s restarting"}}}}},
               {"lastState", {{"terminated", {{"exitCode", 70}, {"reason", "Error"}}}}}}}}};
        break;
      case PodFate::kCollected:
      case PodFate::kNoPod:
        pod["spec"]["nodeName"] = node;
        pod["status"] = {{"phase", "Running"},
                         {"initContainerStatuses", init({{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}})},
                         {"containerStatuses",
                          {{{"name", "hold"}, {"ready", true}, {"state", {{"running", nlohmann::json::object()}}}}}}};
        break;
    }
    return pod;
  }

  // GET .../namespaces/NS/pods (the pods of the DaemonSets there) or .../events (their FailedCreate).
  std::optional<nlohmann::json> PodsOf(const std::string& path) {
    std::string ns = NamespaceOf(path);
    bool pods = path == "/api/v1/namespaces/" + ns + "/pods", events = path == "/api/v1/namespaces/" + ns + "/events";
    if (ns.empty() || (!pods && !events)) return std::nullopt;
    bool ours = created_.count("/api/v1/namespaces/" + ns) > 0;
    for (const auto& [at, obj] : created_) ours = ours || NamespaceOf(at) == ns;
    if (!ours) return std::nullopt;  // a recorded namespace: its fixture answers
    nlohmann::json items = nlohmann::json::array();
    for (const auto& [at, obj] : created_) {
      if (obj.value("kind", "") != "DaemonSet" || NamespaceOf(at) != ns) continue;
      for (const auto& node : PinnedNodes(obj)) {
        auto f = fates_.find(node);
        PodFate fate = f == fates_.end() ? PodFate::kCollecting : f->second.first;
        if (pods && fate != PodFate::kNoPod) items.push_back(PodFor(obj, node, fate));
        if (events && fate == PodFate::kNoPod)
          items.push_back({{"metadata", {{"name", "ev-" + node}}},
                           {"involvedObject", {{"kind", "DaemonSet"}, {"name", obj["metadata"]["name"]}}},
                           {"reason", "FailedCreate"},
                           {"message",
                            "Error creating: pods \"x\" is forbidden: violates PodSecurity "
                            "\"baseline:latest\": hostPath volumes (volume \"host\")"}});
      }
    }
    return nlohmann::json{{"kind", pods ? "PodList" : "EventList"}, {"apiVersion", "v1"}, {"items", items}};
  }

  // GET .../pods/NAME/log: the log of a finished pod's collect container.
  std::optional<std::string> LogOf(const std::string& path) {
    if (!path.ends_with("/log")) return std::nullopt;
    std::string ns = NamespaceOf(path);
    for (const auto& [at, obj] : created_) {
      if (obj.value("kind", "") != "DaemonSet" || NamespaceOf(at) != ns) continue;
      for (const auto& node : PinnedNodes(obj)) {
        std::string name = obj["metadata"]["name"].get<std::string>() + "-" + node;
        if (path != "/api/v1/namespaces/" + ns + "/pods/" + name + "/log") continue;
        auto f = fates_.find(node);
        return f == fates_.end() ? "" : f->second.second;
      }
    }
    return std::nullopt;
  }

  std::string Review(const std::string& body) {
    auto doc = nlohmann::json::parse(body, nullptr, false);
    nlohmann::json attrs = doc.is_object() && doc.contains("spec")
                               ? doc["spec"].value("resourceAttributes", nlohmann::json::object())
                               : nlohmann::json::object();
    std::string group = attrs.value("group", "");
    std::string key = attrs.value("verb", "") + " " + attrs.value("resource", "") + (group.empty() ? "" : "." + group);
    if (!attrs.value("subresource", "").empty()) key += "/" + attrs.value("subresource", "");
    bool denied;
    {
      std::lock_guard lock(mu_);
      denied = denied_.count(key) > 0;
    }
    doc["status"] = {{"allowed", !denied}};
    if (denied) doc["status"]["reason"] = "denied by the test server";
    return Response(201, doc.dump());
  }

  void Serve(int c) {
    std::string req = ReadRequest(c);
    std::string line = req.substr(0, req.find("\r\n"));
    std::istringstream ls(line);
    std::string method, target;
    ls >> method >> target;
    {
      std::lock_guard lock(mu_);
      log_.push_back(method + " " + target);
    }
    size_t qm = target.find('?');
    std::string path = target.substr(0, qm), query = qm == std::string::npos ? "" : target.substr(qm + 1);
    std::string body = req.find("\r\n\r\n") == std::string::npos ? "" : req.substr(req.find("\r\n\r\n") + 4);
    std::string resp = method == "GET"                                                   ? Get(path, query)
                       : method == "POST" && path.ends_with("/selfsubjectaccessreviews") ? Review(body)
                       : method == "POST"                                                ? Create(path, body)
                       : method == "DELETE"                                              ? Delete(path)
                                            : Status(404, "NotFound", "not served");
    ::send(c, resp.data(), resp.size(), MSG_NOSIGNAL);
    ::close(c);
  }

  void Accept() {
    while (!stop_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::lock_guard lock(mu_);
      workers_.emplace_back([this, c] { Serve(c); });
    }
  }

  std::filesystem::path cluster_, common_;
  int fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> max_page_{SIZE_MAX};
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::thread> workers_;
  std::vector<std::string> forbidden_, log_;
  std::map<std::string, std::string> overrides_;
  std::set<std::string> denied_;
  std::map<std::string, nlohmann::json> created_;
  std::map<std::string, std::pair<PodFate, std::string>> fates_;
  std::function<void(nlohmann::json&)> on_create_;
};

}  // namespace testing_server
