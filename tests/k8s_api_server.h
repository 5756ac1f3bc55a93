// A Kubernetes API server stand-in for tests, on loopback: it serves recorded API responses from a
// fixture directory (tests/fixtures/k8s/<cluster>/, one file per path: GET /api/v1/nodes answers
// api/v1/nodes.json; paths the cluster lacks fall back to tests/fixtures/k8s/common/) so that the
// real kubectl can be driven against it. Lists are paginated as the API server does (limit,
// continue, remainingItemCount); paths can be made to answer 403 or garbage; SelfSubjectAccessReviews
// are answered from a deny list; every request is logged ("GET /api/v1/nodes?limit=250").
#pragma once
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
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
  static std::string Response(int code, const std::string& body) {
    const char* text = code == 200 ? "OK" : code == 201 ? "Created" : code == 403 ? "Forbidden" : "Not Found";
    std::ostringstream o;
    o << "HTTP/1.1 " << code << " " << text << "\r\nContent-Type: application/json\r\nContent-Length: " << body.size()
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
    if (file.empty()) return Status(404, "NotFound", "the server could not find the requested resource");
    std::ifstream in(file);
    std::string body((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto q = Query(query);
    if (!q.count("limit")) return Response(200, body);
    // Pagination: items [offset, offset + limit), the continue token names the next offset.
    auto doc = nlohmann::json::parse(body, nullptr, false);
    if (!doc.is_object() || !doc.contains("items")) return Response(200, body);
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
    std::string resp = method == "GET" ? Get(path, query)
                       : method == "POST" && path.ends_with("/selfsubjectaccessreviews")
                           ? Review(body)
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
};

}  // namespace testing_server
