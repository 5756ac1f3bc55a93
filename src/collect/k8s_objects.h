// Pure readers of Kubernetes API responses (the bodies `kubectl get --raw PATH` prints): one page of
// a list, and each object kind reduced to the facts the Kubernetes checks judge. Tested on objects
// captured on real clusters (tests/fixtures/k8s/, sources in SOURCES.md).
#pragma once
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::collect::k8s {

// obj[a][b]... when every step is an object holding the key; else null (an lvalue either way:
// nothing dangles).
const nlohmann::json& At(const nlohmann::json& obj, std::initializer_list<const char*> path);
// The string at `path`, valid UTF-8 (invalid bytes replaced); empty when absent or not a string.
std::string Str(const nlohmann::json& obj, std::initializer_list<const char*> path);

// One page of a list response ("NodeList", "List" ...): its items and the continue token.
struct ListPage {
  std::string kind;
  std::vector<nlohmann::json> items;
  std::string next;                // metadata.continue; empty on the last page
  long long remaining_items = -1;  // metadata.remainingItemCount, -1 when absent
  size_t malformed = 0;            // items that are not objects with metadata.name
};
// nullopt (and *error) when the text is not JSON or not a list (no "items" array).
std::optional<ListPage> ParseListPage(std::string_view text, std::string* error);

// Reads a list page by page (limit/continue, `query` without either): `get` answers one URL, or
// nullopt when its request failed (having said why itself). Each item goes to `each`.
struct ListResult {
  enum Outcome { kOk, kRequestFailed, kNotAList, kEndless } outcome = kOk;
  std::string error;  // kNotAList, kEndless: which URL and why
  size_t malformed = 0;
};
ListResult ListAll(const std::string& path, const std::string& query, int page_limit, int max_pages,
                   const std::function<std::optional<std::string>(const std::string& url)>& get,
                   const std::function<void(const nlohmann::json&)>& each);

// A Kubernetes error ("kind": "Status", "status": "Failure") or kubectl's "Error from server
// (Forbidden): ..." line: the reason ("Forbidden", "NotFound", "Unauthorized" ...), empty if none.
std::string ErrorReason(std::string_view kubectl_stderr);

// Each object reduced to the facts the checks read (the keys are the collectors' declared fields,
// src/collect/k8s.cc). Fields the object lacks are absent or empty, never invented.
nlohmann::json Node(const nlohmann::json& node);
nlohmann::json Workload(const nlohmann::json& obj, std::string_view kind);  // DaemonSet, Deployment, StatefulSet
nlohmann::json Pod(const nlohmann::json& pod);
nlohmann::json Namespace(const nlohmann::json& ns);
nlohmann::json StorageClass(const nlohmann::json& sc);
nlohmann::json Claim(const nlohmann::json& pvc);
nlohmann::json Service(const nlohmann::json& svc);
nlohmann::json IngressClass(const nlohmann::json& ic);
nlohmann::json GatewayClass(const nlohmann::json& gc);
nlohmann::json ApiService(const nlohmann::json& as);
// A custom resource's name, namespace and status.state (ClusterPolicy, NicClusterPolicy ...).
nlohmann::json StatefulResource(const nlohmann::json& cr);

// Topology-aware scheduling objects (k8s.topology):
// Kueue Topology: {"name", "levels": [node label keys, widest first]}.
nlohmann::json KueueTopology(const nlohmann::json& topology);
// Kueue ResourceFlavor: {"name", "topology" (spec.topologyName, empty when none), "node_labels"{}}.
nlohmann::json ResourceFlavor(const nlohmann::json& flavor);
// Volcano HyperNode: {"name", "tier" (-1 when unread), "members": [{"type" (Node, HyperNode),
// "exact", "regex", "labels"{}, "unread" (a selector we do not understand: matchExpressions ...)}]}.
nlohmann::json HyperNode(const nlohmann::json& hypernode);
// NVIDIA ComputeDomain (the DRA driver's multi-node NVLink domain): {"namespace", "name",
// "nodes" (spec.numNodes, -1 when unset), "status" (status.status: Ready, NotReady; empty when none)}.
nlohmann::json ComputeDomain(const nlohmann::json& domain);

// A probe pod's progress (probe.k8s-gpu-pod, k8s-pvc): {"name", "uid", "node", "phase", "created" (creationTimestamp),
// "scheduled" (PodScheduled's lastTransitionTime when True, else empty), "unscheduled_reason" and
// "message" (PodScheduled False: the scheduler's reason and message), "state" (the first
// container's: waiting, running, terminated; empty before it has one), "state_reason",
// "state_message", "started" (running or terminated startedAt), "exit_code" (-1 unless terminated)}.
nlohmann::json ProbePod(const nlohmann::json& pod);
// How long the kubelet took to pull an image, from a "Pulled" event's message: "Successfully pulled
// image \"X\" in 1.302s (1.302s including waiting)" (Go durations: 812ms, 1m2.5s); 0 for
// "Container image \"X\" already present on machine"; nullopt for anything else.
std::optional<double> PullSeconds(std::string_view message);
// A Go time.Duration string ("1.5s", "812ms", "2m3.1s", "1h0m0s", "350µs") in seconds; nullopt when
// it is not one.
std::optional<double> GoDurationSeconds(std::string_view text);

// Prometheus Operator PrometheusRule: {"namespace", "name", "alerts" (rules with `alert`),
// "records" (rules with `record`)} over spec.groups[].rules[].
nlohmann::json PrometheusRule(const nlohmann::json& rule);

// RBAC: the verbs of a role's rules that reach the kubelet API through nodes/proxy (apiGroups ""
// or "*", resources nodes/proxy, nodes/* or *, verbs get, create or *). Empty when none.
std::vector<std::string> NodesProxyVerbs(const nlohmann::json& role);
// One line per subject of a binding: {"kind","name","namespace"}.
std::vector<nlohmann::json> Subjects(const nlohmann::json& binding);

// "a/b" label and annotation keys of vCluster and its tenants ("vcluster.loft.sh/...").
bool IsVclusterMarker(std::string_view key);

}  // namespace clustermax::collect::k8s
