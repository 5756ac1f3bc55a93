// The Kubernetes cluster checks, end to end through the real kubectl: no API server can run on
// these machines, so tests/k8s_api_server.h serves recorded API responses (tests/fixtures/k8s/,
// sources in SOURCES.md; what is real and what was assembled is said there) on loopback, paginated
// as the API server does, with 403s, garbage and denied access reviews on demand. The collectors
// run on the local host (kubectl with a kubeconfig for that server), the checks judge what came
// back; mutation tests then flip one fact of the collected evidence and expect the verdict to move.
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "audit/engine.h"
#include "audit/fleet_summary.h"
#include "audit/k8s_fanout.h"
#include "audit/render.h"
#include "checks/register.h"
#include "collect/collector.h"
#include "collect/k8s_objects.h"
#include "host/bundle.h"
#include "host/local_host.h"
#include "k8s_api_server.h"
#include "testutil.h"
#include "util/cancel.h"
#include "util/files.h"
#include "util/time.h"

using namespace clustermax;
using clustermax::testing::Fixture;
using clustermax::testing::ReadFixture;
using nlohmann::json;

namespace {

const std::vector<std::string> kClusterChecks = {"security-kubernetes-nodes-proxy",
                                                 "gpu-operator",
                                                 "network-operator",
                                                 "mpi-operator",
                                                 "workload-schedulers",
                                                 "gang-scheduling",
                                                 "bin-packing",
                                                 "ingress-controller",
                                                 "load-balancer",
                                                 "csi-rwx",
                                                 "default-storage-class",
                                                 "node-problem-detector",
                                                 "metrics-server",
                                                 "helm-access",
                                                 "vcluster-tenancy",
                                                 "rbac-access"};

// The golden report's rows: the Kubernetes-only cluster rows and the Kubernetes half of the
// Slurm+Kubernetes rows judged on the API view.
const std::vector<std::string> kGoldenChecks = [] {
  std::vector<std::string> ids = kClusterChecks;
  for (const char* id : {"topology-conf", "mnnvl-compute-domain", "monitoring-readiness", "auto-remediation"})
    ids.push_back(id);
  return ids;
}();

// Every collector of the cluster's API view.
std::vector<std::string> K8sCollectors() {
  std::vector<std::string> ids;
  for (const auto& c : collect::Collectors())
    if (c.info.id.starts_with("k8s.")) ids.push_back(c.info.id);
  return ids;
}

bool HaveKubectl() { return clustermax::testing::RunShell("command -v kubectl >/dev/null").code == 0; }

// A fake API server for one fixture cluster, with KUBECONFIG and kubectl's cache pointed at it.
class Cluster {
 public:
  explicit Cluster(const std::string& name)
      : server_(Fixture("k8s/" + name), Fixture("k8s/common")), dir_(clustermax::testing::ScratchDir("k8s-" + name)) {
    std::ofstream(dir_ / "kubeconfig") << server_.Kubeconfig();
    ::setenv("KUBECONFIG", (dir_ / "kubeconfig").c_str(), 1);
    ::setenv("KUBECACHEDIR", (dir_ / "cache").c_str(), 1);
    ::unsetenv("CLUSTERMAX_KUBE_CONTEXT");
  }
  ~Cluster() {
    ::unsetenv("KUBECONFIG");
    ::unsetenv("KUBECACHEDIR");
  }
  testing_server::KubeApiServer& server() { return server_; }
  const std::filesystem::path& dir() const { return dir_; }

  core::EvidenceSet Collect() {
    host::LocalHost local;
    collect::CollectOptions o;
    o.command_timeout = std::chrono::seconds(20);
    return collect::CollectEvidence(local, K8sCollectors(), o);
  }

 private:
  testing_server::KubeApiServer server_;
  std::filesystem::path dir_;
};

core::Finding Judge(const std::string& id, const core::EvidenceSet& ev) {
  const core::Check* c = checks::DefaultRegistry().Find(id);
  EXPECT_NE(c, nullptr) << id;
  core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), core::Target::kK8s,
                         *util::ParseRfc3339("2026-12-01T00:00:00Z"));
  return c->judge(ctx);
}

std::string V(const core::Finding& f) { return std::string(core::ToString(f.verdict)); }

std::string All(const core::Finding& f) {
  std::string s = f.message;
  for (const auto& d : f.details) s += "\n" + d;
  return s;
}

std::map<std::string, std::string> Verdicts(const core::EvidenceSet& ev) {
  std::map<std::string, std::string> out;
  for (const auto& id : kClusterChecks) out[id] = V(Judge(id, ev));
  return out;
}

json& Item(core::EvidenceSet& ev, const char* id, const char* list, const std::string& name) {
  for (auto& x : ev.at(id).data[list])
    if (x.value("name", "") == name) return x;
  throw std::runtime_error(fmt::format("{} {} has no {}", id, list, name));
}

}  // namespace

TEST(K8sObjects, ReadsRecordedObjects) {
  std::string error;
  auto page = collect::k8s::ParseListPage(ReadFixture("k8s/gpu-operator/api/v1/nodes.json"), &error);
  ASSERT_TRUE(page) << error;
  EXPECT_EQ(page->kind, "NodeList");
  ASSERT_EQ(page->items.size(), 4u);
  EXPECT_TRUE(page->next.empty());
  json n = collect::k8s::Node(page->items[1]);
  EXPECT_EQ(n["allocatable"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(n["labels"]["nvidia.com/gpu.product"], "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(n["ready"], true);
  EXPECT_FALSE(n["kernel"].get<std::string>().empty());
  json cp = collect::k8s::Node(page->items[0]);
  EXPECT_EQ(cp["taints"][0], "node-role.kubernetes.io/control-plane:NoSchedule");

  // Not a list, not JSON, items without names.
  EXPECT_FALSE(collect::k8s::ParseListPage(ReadFixture("k8s/gpu-operator/version.json"), &error));
  EXPECT_NE(error.find("not a list"), std::string::npos);
  EXPECT_FALSE(collect::k8s::ParseListPage("<html>502</html>", &error));
  auto bad = collect::k8s::ParseListPage(R"({"kind":"PodList","items":[{"metadata":{}},7,{"metadata":{"name":"a"}}],
      "metadata":{"continue":"abc","remainingItemCount":12}})",
                                         &error);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->malformed, 2u);
  EXPECT_EQ(bad->next, "abc");
  EXPECT_EQ(bad->remaining_items, 12);

  EXPECT_EQ(collect::k8s::ErrorReason("Error from server (Forbidden): nodes is forbidden: User \"x\" cannot list"),
            "Forbidden");
  EXPECT_EQ(collect::k8s::ErrorReason(R"({"kind":"Status","reason":"NotFound"})"), "NotFound");
  EXPECT_EQ(collect::k8s::ErrorReason("dial tcp 127.0.0.1:1: connect: connection refused"), "");

  // RBAC: kubeadm's system:kubelet-api-admin reaches nodes/proxy; a read-only role does not.
  auto roles = collect::k8s::ParseListPage(
      ReadFixture("k8s/gpu-operator/apis/rbac.authorization.k8s.io/v1/clusterroles.json"), &error);
  ASSERT_TRUE(roles) << error;
  bool kubelet_admin = false;
  for (const auto& r : *&roles->items) {
    if (r["metadata"]["name"] == "system:kubelet-api-admin") {
      kubelet_admin = true;
      EXPECT_FALSE(collect::k8s::NodesProxyVerbs(r).empty());
    }
    if (r["metadata"]["name"] == "view") EXPECT_TRUE(collect::k8s::NodesProxyVerbs(r).empty());
  }
  EXPECT_TRUE(kubelet_admin);
  EXPECT_EQ(
      collect::k8s::NodesProxyVerbs(json::parse(
          R"({"rules":[{"apiGroups":["*"],"resources":["*"],"verbs":["*"]},{"apiGroups":["apps"],"resources":["nodes/proxy"],"verbs":["get"]}]})")),
      std::vector<std::string>{"*"});
  EXPECT_TRUE(collect::k8s::NodesProxyVerbs(
                  json::parse(R"({"rules":[{"apiGroups":[""],"resources":["nodes/proxy"],"verbs":["list","watch"]}]})"))
                  .empty());
}

TEST(K8sApi, WellEquippedClusterThroughKubectl) {
  ASSERT_TRUE(HaveKubectl()) << "kubectl is part of the test dependencies (scripts/install-deps.sh)";
  Cluster c("gpu-operator");
  c.server().MaxPage(2);  // every list of more than two objects takes several requests
  auto ev = c.Collect();
  for (const auto& [id, e] : ev) EXPECT_TRUE(e.ok()) << id << ": " << e.error;
  EXPECT_EQ(ev.at("k8s.nodes").data["nodes"].size(), 4u);
  EXPECT_EQ(ev.at("k8s.version").data["git_version"], "v1.31.12+k3s1");
  // Pagination was followed to the end: the continue tokens of the server were sent back.
  auto log = c.server().Requests();
  EXPECT_NE(std::find(log.begin(), log.end(), "GET /api/v1/nodes?continue=page-2&limit=250&timeout=19s"), log.end());
  EXPECT_NE(std::find(log.begin(), log.end(), "GET /api/v1/nodes?limit=250&timeout=19s"), log.end());
  // Nothing was written to the cluster: reads and access reviews only.
  for (const auto& r : log)
    EXPECT_TRUE(r.starts_with("GET ") || r.starts_with("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews"))
        << r;

  auto v = Verdicts(ev);
  std::map<std::string, std::string> want = {{"security-kubernetes-nodes-proxy", "PASS"},
                                             {"gpu-operator", "PASS"},
                                             {"network-operator", "PASS"},
                                             {"mpi-operator", "PASS"},
                                             {"workload-schedulers", "PASS"},
                                             {"gang-scheduling", "PASS"},
                                             {"bin-packing", "WARN"},
                                             {"ingress-controller", "PASS"},
                                             {"load-balancer", "PASS"},
                                             {"csi-rwx", "PASS"},
                                             {"default-storage-class", "PASS"},
                                             {"node-problem-detector", "PASS"},
                                             {"metrics-server", "PASS"},
                                             {"helm-access", "PASS"},
                                             {"vcluster-tenancy", "PASS"},
                                             {"rbac-access", "PASS"}};
  for (const auto& [id, verdict] : want) EXPECT_EQ(v[id], verdict) << id << ": " << All(Judge(id, ev));
  EXPECT_NE(All(Judge("gpu-operator", ev)).find("3 GPU node(s) advertise 24 GPUs"), std::string::npos);
  EXPECT_NE(Judge("default-storage-class", ev).message.find("ceph-rbd"), std::string::npos);

  // One fact flipped at a time.
  {
    auto m = ev;
    Item(m, "k8s.operators", "cluster_policies", "cluster-policy")["state"] = "notReady";
    EXPECT_EQ(V(Judge("gpu-operator", m)), "WARN");
  }
  {
    auto m = ev;
    Item(m, "k8s.nodes", "nodes", "gpu-h100-02")["allocatable"].erase("nvidia.com/gpu");
    auto f = Judge("gpu-operator", m);
    EXPECT_EQ(V(f), "FAIL");
    EXPECT_NE(f.message.find("gpu-h100-02"), std::string::npos);
    EXPECT_EQ(V(Judge("network-operator", m)), "PASS");  // still labelled a GPU node, RDMA still there
  }
  {
    auto m = ev;
    Item(m, "k8s.nodes", "nodes", "gpu-h100-03")["allocatable"].erase("rdma/rdma_shared_device_a");
    EXPECT_EQ(V(Judge("network-operator", m)), "WARN");
  }
  {
    auto m = ev;
    for (auto& s : m.at("k8s.network").data["load_balancers"]) s["ingress"] = json::array();
    EXPECT_EQ(V(Judge("load-balancer", m)), "WARN");
  }
  {
    auto m = ev;
    for (auto& s : m.at("k8s.storage").data["classes"]) s["default"] = true;
    EXPECT_EQ(V(Judge("default-storage-class", m)), "WARN");
    for (auto& s : m.at("k8s.storage").data["classes"]) s["provisioner"] = "ebs.csi.aws.com";
    EXPECT_EQ(V(Judge("csi-rwx", m)), "PASS");  // the bound RWX claims still show it
    m.at("k8s.storage").data["claims"] = json::array();
    EXPECT_EQ(V(Judge("csi-rwx", m)), "WARN");
  }
  {
    auto m = ev;
    Item(m, "k8s.operators", "api_services", "v1beta1.metrics.k8s.io")["available"] = false;
    EXPECT_EQ(V(Judge("metrics-server", m)), "WARN");
  }
  {
    auto m = ev;
    m.at("k8s.rbac")
        .data["grants"]
        .push_back({{"role", "ClusterRole/debug"},
                    {"binding", "RoleBinding/team-a/debug"},
                    {"binding_namespace", "team-a"},
                    {"subject_kind", "ServiceAccount"},
                    {"subject", "default"},
                    {"subject_namespace", "team-a"},
                    {"verbs", {"get"}}});
    EXPECT_EQ(V(Judge("security-kubernetes-nodes-proxy", m)), "FAIL");
  }
  {
    auto m = ev;
    for (auto& w : m.at("k8s.workloads").data["workloads"])
      if (w["name"] == "kueue-controller-manager") w["ready"] = 0;
    EXPECT_EQ(V(Judge("workload-schedulers", m)), "WARN");
  }
  {
    auto m = ev;  // the DaemonSet short of its nodes, then a pod list that shows one GPU node without it
    for (auto& w : m.at("k8s.workloads").data["workloads"])
      if (w["name"] == "node-problem-detector") w["ready"] = 3;
    EXPECT_EQ(V(Judge("node-problem-detector", m)), "WARN");
    for (const char* node : {"gpu-h100-01", "gpu-h100-02"})
      m.at("k8s.pods")
          .data["pods"]
          .push_back({{"namespace", "kube-system"},
                      {"name", std::string("node-problem-detector-") + node},
                      {"node", node},
                      {"phase", "Running"},
                      {"owner_kind", "DaemonSet"},
                      {"owner_name", "node-problem-detector"},
                      {"images", json::array()}});
    auto f = Judge("node-problem-detector", m);
    EXPECT_EQ(V(f), "WARN");
    EXPECT_NE(f.message.find("gpu-h100-03"), std::string::npos);
  }
  {
    auto m = ev;
    m.at("k8s.nodes").data["nodes"] = json::array();
    EXPECT_EQ(V(Judge("vcluster-tenancy", m)), "WARN");
    EXPECT_EQ(V(Judge("gpu-operator", m)), "SKIP");
  }
}

namespace {
// A compute node's fabric facts as the fan-out brings them back: one NDR rail and its NCCL
// configuration (NCCL_IB_QPS_PER_CONNECTION, empty for unset).
audit::NodeEvidence RailNode(const std::string& name, const std::string& qps) {
  audit::NodeEvidence n;
  n.node = name;
  n.role = "compute";
  n.evidence["rdma.devices"] = clustermax::testing::Ok(
      "rdma.devices", {{"devices", json::array({{{"name", "mlx5_0"},
                                                 {"ports", json::array({{{"port", "1"},
                                                                         {"link_layer", "InfiniBand"},
                                                                         {"rate", "400 Gb/sec (4X NDR)"},
                                                                         {"state", "4: ACTIVE"}}})}}})}});
  json vars = json::object();
  if (!qps.empty()) vars["NCCL_IB_QPS_PER_CONNECTION"] = qps;
  n.evidence["nccl.config"] = clustermax::testing::Ok(
      "nccl.config", {{"env", json::object()},
                      {"files", json::array({{{"path", "/etc/nccl.conf"}, {"found", true}, {"vars", vars}}})}});
  return n;
}

json& Labels(core::EvidenceSet& ev, const std::string& node) { return Item(ev, "k8s.nodes", "nodes", node)["labels"]; }
}  // namespace

// The Kubernetes half of topology-conf, mnnvl-compute-domain and nccl-ib-qps-entropy: Kueue
// Topology Aware Scheduling read through kubectl (the Topology served in an older version than the
// group's preferred one), Volcano HyperNodes, NVL72 cliques and ComputeDomains; one fact flipped
// at a time.
TEST(K8sApi, TopologyAwareSchedulingAndMultiNodeNvlink) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  core::EvidenceSet ev;
  {
    host::LocalHost local;
    collect::CollectOptions o;
    o.command_timeout = std::chrono::seconds(20);
    ev = collect::CollectEvidence(local, {"k8s.nodes", "k8s.topology", "k8s.operators"}, o);
  }
  for (const auto& [id, e] : ev) ASSERT_TRUE(e.ok()) << id << ": " << e.error;
  const json& topo = ev.at("k8s.topology").data;
  ASSERT_EQ(topo["kueue_topologies"].size(), 1u);  // from v1alpha1, the group preferring v1beta1
  EXPECT_EQ(topo["kueue_topologies"][0]["levels"][1], "cloud.provider.com/topology-rack");
  EXPECT_EQ(topo["resource_flavors"].size(), 2u);
  EXPECT_FALSE(topo["compute_domain_crd"].get<bool>());
  EXPECT_TRUE(topo["jobset"].get<bool>());

  auto pass = Judge("topology-conf", ev);
  EXPECT_EQ(V(pass), "PASS") << All(pass);
  EXPECT_NE(pass.message.find("Kueue Topology default"), std::string::npos) << pass.message;
  EXPECT_EQ(V(Judge("mnnvl-compute-domain", ev)), "SKIP");  // H100 nodes: no NVL72
  {
    auto m = ev;  // a GPU node outside the flavor's rack labels (and no JobSet to place by the block label)
    m.at("k8s.topology").data["jobset"] = false;
    Labels(m, "gpu-h100-03").erase("cloud.provider.com/topology-rack");
    auto f = Judge("topology-conf", m);
    EXPECT_EQ(V(f), "WARN");
    EXPECT_NE(f.message.find("1 of 3 GPU nodes outside every topology unit: gpu-h100-03"), std::string::npos)
        << f.message;
  }
  {
    auto m = ev;  // the flavor names a Topology that does not exist; labels alone place nothing
    m.at("k8s.topology").data["resource_flavors"][1]["topology"] = "gone";
    m.at("k8s.topology").data["jobset"] = false;
    auto f = Judge("topology-conf", m);
    EXPECT_EQ(V(f), "WARN");
    EXPECT_NE(f.message.find("no scheduler places by them"), std::string::npos) << f.message;
    EXPECT_NE(All(f).find("names Topology gone, which does not exist"), std::string::npos) << All(f);
    m.at("k8s.topology").data["jobset"] = true;  // JobSet places on a label every GPU node carries
    EXPECT_EQ(V(Judge("topology-conf", m)), "PASS") << All(Judge("topology-conf", m));
  }
  {
    auto m = ev;  // Volcano instead of Kueue: exact, regex and label members
    m.at("k8s.topology").data["resource_flavors"] = json::array();
    m.at("k8s.topology").data["jobset"] = false;
    auto member = [](json sel) {
      json x = {{"type", "Node"}, {"exact", ""}, {"regex", ""}, {"labels", json::object()}, {"unread", false}};
      x.update(sel);
      return x;
    };
    m.at("k8s.topology").data["hypernodes"] = json::array(
        {{{"name", "s0"}, {"tier", 1}, {"members", json::array({member({{"exact", "gpu-h100-01"}})})}},
         {{"name", "s1"}, {"tier", 1}, {"members", json::array({member({{"regex", "^gpu-h100-0[2]$"}})})}},
         {{"name", "s2"},
          {"tier", 1},
          {"members", json::array({member({{"labels", {{"cloud.provider.com/topology-rack", "rack-2"}}}})})}},
         {{"name", "spine"},
          {"tier", 2},
          {"members", json::array({{{"type", "HyperNode"},
                                    {"exact", "s0"},
                                    {"regex", ""},
                                    {"labels", json::object()},
                                    {"unread", false}}})}}});
    auto f = Judge("topology-conf", m);
    EXPECT_EQ(V(f), "PASS") << All(f);
    EXPECT_NE(f.message.find("Volcano HyperNodes (4, 2 tiers)"), std::string::npos) << f.message;
    // A pattern glibc cannot take as written (a back-reference): unverified, never a pass.
    m.at("k8s.topology").data["hypernodes"][1]["members"][0]["regex"] = "^(gpu)-\\1$";
    auto unread = Judge("topology-conf", m);
    EXPECT_EQ(V(unread), "WARN");
    EXPECT_EQ(unread.reason, core::Reason::kUnverified) << All(unread);
    // A catastrophic pattern for a backtracking matcher answers at once.
    m.at("k8s.topology").data["hypernodes"][1]["members"][0]["regex"] = "^(a+)+$";
    Item(m, "k8s.nodes", "nodes", "gpu-h100-02")["name"] = std::string(40, 'a') + "b";
    EXPECT_EQ(V(Judge("topology-conf", m)), "WARN");
  }
  {
    auto m = ev;  // nothing at all
    m.at("k8s.topology").data["resource_flavors"] = json::array();
    m.at("k8s.topology").data["jobset"] = false;
    for (const char* n : {"gpu-h100-01", "gpu-h100-02", "gpu-h100-03"})
      for (const char* k : {"cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"})
        Labels(m, n).erase(k);
    auto f = Judge("topology-conf", m);
    EXPECT_EQ(V(f), "WARN");
    EXPECT_NE(f.message.find("no topology-aware scheduling"), std::string::npos) << f.message;
  }

  // NVL72: GB200 nodes in two NVLink cliques.
  auto nvl = ev;
  for (const char* n : {"gpu-h100-01", "gpu-h100-02", "gpu-h100-03"}) {
    Labels(nvl, n)["nvidia.com/gpu.product"] = "NVIDIA-GB200";
    Labels(nvl, n)["nvidia.com/gpu.clique"] =
        std::string("5f8a3c1e-2b7d-4e90-a1c4-7d2e9b0f6a35.") + (std::string(n) == "gpu-h100-03" ? "2" : "1");
  }
  {
    auto m = nvl;  // the Topology's levels name switches only
    m.at("k8s.topology").data["kueue_topologies"][0]["levels"] = {"cloud.provider.com/topology-rack",
                                                                  "kubernetes.io/hostname"};
    m.at("k8s.topology").data["jobset"] = false;
    auto f = Judge("topology-conf", m);
    EXPECT_EQ(V(f), "WARN");
    EXPECT_NE(f.message.find("3 of 3 NVL72 node(s) placed by switch tiers only"), std::string::npos) << f.message;
    m.at("k8s.topology").data["kueue_topologies"][0]["levels"] = {"nvidia.com/gpu.clique", "kubernetes.io/hostname"};
    EXPECT_EQ(V(Judge("topology-conf", m)), "PASS") << All(Judge("topology-conf", m));
  }
  {
    auto m = nvl;
    auto f = Judge("mnnvl-compute-domain", m);
    EXPECT_EQ(V(f), "WARN");
    EXPECT_NE(f.message.find("ComputeDomain (computedomains.resource.nvidia.com) is not served"), std::string::npos)
        << f.message;
    m.at("k8s.topology").data["compute_domain_crd"] = true;
    m.at("k8s.operators").data["dra_drivers"] = {"compute-domain.nvidia.com", "gpu.nvidia.com"};
    m.at("k8s.topology").data["compute_domains"] =
        json::array({{{"namespace", "default"}, {"name", "nccl-test"}, {"nodes", 2}, {"status", "Ready"}}});
    auto ok = Judge("mnnvl-compute-domain", m);
    EXPECT_EQ(V(ok), "PASS") << All(ok);
    EXPECT_NE(ok.message.find("2 clique(s)"), std::string::npos) << ok.message;
    m.at("k8s.topology").data["compute_domains"][0]["status"] = "NotReady";
    EXPECT_EQ(V(Judge("mnnvl-compute-domain", m)), "WARN");
    m.at("k8s.topology").data["compute_domains"][0]["status"] = "Ready";
    Labels(m, "gpu-h100-02").erase("nvidia.com/gpu.clique");
    auto unlabelled = Judge("mnnvl-compute-domain", m);
    EXPECT_EQ(V(unlabelled), "WARN");
    EXPECT_NE(unlabelled.message.find("gpu-h100-02"), std::string::npos) << unlabelled.message;
  }

  // nccl-ib-qps-entropy: the Topology has two switch levels (block, rack): a multi-tier fabric.
  auto qps = [&](const core::EvidenceSet& base, std::vector<std::string> values) {
    std::vector<audit::NodeEvidence> nodes;
    for (size_t i = 0; i < values.size(); ++i) nodes.push_back(RailNode(fmt::format("gpu-h100-0{}", i + 1), values[i]));
    std::vector<const audit::NodeEvidence*> ptrs;
    for (const auto& n : nodes) ptrs.push_back(&n);
    auto m = base;
    m["fleet.summary"] = audit::FleetSummary(ptrs, {});
    return Judge("nccl-ib-qps-entropy", m);
  };
  auto low = qps(ev, {"4", "", "1"});
  EXPECT_EQ(V(low), "WARN") << All(low);
  EXPECT_NE(low.message.find("Kueue Topology default has 2 switch level(s)"), std::string::npos) << low.message;
  EXPECT_EQ(V(qps(ev, {"2", "2", "4"})), "PASS");
  {
    auto m = ev;  // one switch level: one QP per connection is enough
    m.at("k8s.topology").data["kueue_topologies"][0]["levels"] = {"cloud.provider.com/topology-rack",
                                                                  "kubernetes.io/hostname"};
    auto f = qps(m, {"", "", ""});
    EXPECT_EQ(V(f), "PASS") << All(f);
    EXPECT_NE(f.message.find("single-tier"), std::string::npos) << f.message;
    // No scheduler topology: the providers' layer labels tell (AWS: three layers).
    m.at("k8s.topology").data["resource_flavors"] = json::array();
    for (const char* n : {"gpu-h100-01", "gpu-h100-02", "gpu-h100-03"}) {
      for (const char* k : {"cloud.provider.com/topology-block", "cloud.provider.com/topology-rack"})
        Labels(m, n).erase(k);
      for (int l = 1; l <= 3; ++l)
        Labels(m, n)[fmt::format("topology.k8s.aws/network-node-layer-{}", l)] = fmt::format("nn-{}", l);
    }
    auto aws = qps(m, {"", "", ""});
    EXPECT_EQ(V(aws), "WARN") << All(aws);
    EXPECT_NE(aws.message.find("3 network layer label(s)"), std::string::npos) << aws.message;
  }
}

namespace {

// The storage and load-balancer probes (and the API views they stand beside), each probe's budget
// 1.5 s.
core::EvidenceSet CollectStorageAndLbProbes() {
  host::LocalHost local;
  collect::CollectOptions o;
  o.command_timeout = std::chrono::seconds(20);
  o.probes = {"k8s-pvc", "k8s-lb"};
  o.timeouts["probe.k8s-pvc"] = std::chrono::milliseconds(1500);
  o.timeouts["probe.k8s-lb"] = std::chrono::milliseconds(1500);
  return collect::CollectEvidence(local, {"k8s.storage", "k8s.network", "probe.k8s-pvc", "probe.k8s-lb"}, o);
}

// A probe pod as the scheduler and kubelet leave it: scheduled 1 s after its creation on
// gpu-h100-01, and its container run 3 s after it (`started`) or still being created.
void ProbePodAsKubelet(json& obj, bool started) {
  json scheduled = {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", "2026-12-03T06:00:01Z"}};
  obj["metadata"]["creationTimestamp"] = "2026-12-03T06:00:00Z";
  obj["spec"]["nodeName"] = "gpu-h100-01";
  json state = started ? json{{"terminated", {{"exitCode", 0}, {"startedAt", "2026-12-03T06:00:03Z"}}}}
                       : json{{"waiting", {{"reason", "ContainerCreating"}}}};
  obj["status"] = {{"phase", started ? "Succeeded" : "Pending"},
                   {"conditions", json::array({scheduled})},
                   {"containerStatuses", json::array({{{"name", "probe"}, {"state", state}}})}};
}

}  // namespace

// The opt-in probes k8s-pvc and k8s-lb against the API stand-in: what they create (in namespaces
// of their own, with a field manager naming each object), that they delete it, and how the
// storage and load-balancer rows read their answers: bound or given an address (PASS), nothing
// within the budget (FAIL), refused (WARN, never PASS).
TEST(K8sApi, StorageAndLoadBalancerProbes) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  auto collect = CollectStorageAndLbProbes;
  // Controllers that work: claims bind, the Service gets an address, the pods mounting the claims
  // run (3 s after their creation).
  auto pod_status = ProbePodAsKubelet;
  c.server().OnCreate([&](json& obj) {
    if (obj["kind"] == "PersistentVolumeClaim") obj["status"] = {{"phase", "Bound"}};
    if (obj["kind"] == "Service") obj["status"] = {{"loadBalancer", {{"ingress", {{{"ip", "192.0.2.40"}}}}}}};
    if (obj["kind"] == "Pod") {
      EXPECT_EQ(obj["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"].get<std::string>() + "-pod",
                obj["metadata"]["name"]);
      pod_status(obj, true);
    }
  });
  auto ev = collect();
  for (const auto& [id, e] : ev) ASSERT_TRUE(e.ok()) << id << ": " << e.error;
  const json& claims = ev.at("probe.k8s-pvc").data["claims"];
  ASSERT_EQ(claims.size(), 2u);  // RWO on the default class (ceph-rbd), RWX on cephfs
  EXPECT_EQ(claims[0]["access_mode"], "ReadWriteOnce");
  EXPECT_EQ(claims[1]["class"], "cephfs");
  EXPECT_TRUE(claims[1]["bound"].get<bool>());
  EXPECT_EQ(ev.at("probe.k8s-lb").data["address"], "192.0.2.40");
  auto log = c.server().Requests();
  auto has = [&](const std::string& r) {
    return std::any_of(log.begin(), log.end(), [&](const std::string& x) { return x == r || x.starts_with(r + "?"); });
  };
  EXPECT_TRUE(
      has("POST /api/v1/namespaces/clustermax-probe-pvc/persistentvolumeclaims?fieldManager=clustermax-probe-"
          "rwx-1&timeout=19s"))
      << fmt::format("{}", fmt::join(log, "\n"));
  for (const char* d : {"DELETE /api/v1/namespaces/clustermax-probe-pvc/persistentvolumeclaims/clustermax-probe-rwo",
                        "DELETE /api/v1/namespaces/clustermax-probe-pvc/persistentvolumeclaims/clustermax-probe-rwx-1",
                        "DELETE /api/v1/namespaces/clustermax-probe-pvc",
                        "DELETE /api/v1/namespaces/clustermax-probe-lb/services/clustermax-probe-lb",
                        "DELETE /api/v1/namespaces/clustermax-probe-lb"})
    EXPECT_TRUE(has(d)) << d;
  EXPECT_TRUE(c.server().Created().empty()) << c.server().Created().begin()->first;
  for (const char* id : {"default-storage-class", "csi-rwx", "load-balancer"}) {
    auto f = Judge(id, ev);
    EXPECT_EQ(V(f), "PASS") << id << ": " << All(f);
    EXPECT_NE(All(f).find("probe: "), std::string::npos) << All(f);
  }
  EXPECT_NE(
      All(Judge("csi-rwx", ev))
          .find("ReadWriteMany claim on class cephfs bound in 0 s; a pod mounted it and ran 3 s after its creation"),
      std::string::npos)
      << All(Judge("csi-rwx", ev));
  EXPECT_TRUE(has("DELETE /api/v1/namespaces/clustermax-probe-pvc/pods/clustermax-probe-rwx-1-pod"));

  // Controllers that never answer: the claims stay Pending, the Service without an address.
  c.server().OnCreate([](json&) {});
  ev = collect();
  EXPECT_EQ(V(Judge("default-storage-class", ev)), "FAIL") << All(Judge("default-storage-class", ev));
  auto rwx = Judge("csi-rwx", ev);
  EXPECT_EQ(V(rwx), "FAIL") << All(rwx);
  EXPECT_NE(rwx.message.find("cephfs did not bind"), std::string::npos) << rwx.message;
  EXPECT_EQ(V(Judge("load-balancer", ev)), "FAIL");
  EXPECT_TRUE(c.server().Created().empty());

  // Not allowed to create the namespaces: unverified, whatever the passive view says.
  c.server().Forbid("/api/v1/namespaces");
  ev = collect();
  for (const char* id : {"default-storage-class", "csi-rwx", "load-balancer"}) {
    auto f = Judge(id, ev);
    EXPECT_EQ(V(f), "WARN") << id << ": " << All(f);
  }
  // Not asked for: the passive verdicts, no write.
  {
    Cluster quiet("gpu-operator");
    auto passive = quiet.Collect();
    for (const char* id : {"default-storage-class", "csi-rwx", "load-balancer"})
      EXPECT_EQ(V(Judge(id, passive)), "PASS");
    for (const auto& r : quiet.server().Requests()) EXPECT_FALSE(r.starts_with("DELETE")) << r;
  }
}

// The opt-in probe k8s-gpu-pod against the API stand-in, whose OnCreate hook plays scheduler and
// kubelet (timestamps as they set them) and whose events answer the kubelet's Pulled messages
// (real message shapes: tests/fixtures/k8s/pods/SOURCES.md). prolog-fast's Kubernetes half
// subtracts the pull, names the scheduler's reason when nothing is scheduled, and never passes a
// container that did not run; the plan runs only the probe of the audited target's half.
TEST(K8sApi, GpuPodSchedulingProbe) {
  {
    audit::Selection sel;
    sel.checks = {"prolog-fast"};
    sel.probes = {"slurm-job", "k8s-gpu-pod"};
    for (auto [target, want, not_want] : {std::tuple{core::Target::kSlurm, "probe.slurm-job", "probe.k8s-gpu-pod"},
                                          std::tuple{core::Target::kK8s, "probe.k8s-gpu-pod", "probe.slurm-job"}}) {
      sel.target = target;
      auto plan = audit::BuildPlan(checks::DefaultRegistry(), sel);
      auto has = [&](const char* id) {
        return std::find(plan.collectors.begin(), plan.collectors.end(), id) != plan.collectors.end();
      };
      EXPECT_TRUE(has(want)) << want;
      EXPECT_FALSE(has(not_want)) << not_want;
    }
    EXPECT_EQ(checks::DefaultRegistry().Find("prolog-fast")->info.Mode(), "P + A:slurm-job/k8s-gpu-pod");
  }
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  const std::string ns = "/api/v1/namespaces/clustermax-probe-gpu";
  auto collect = [&] {
    host::LocalHost local;
    collect::CollectOptions o;
    o.command_timeout = std::chrono::seconds(20);
    o.probes = {"k8s-gpu-pod"};
    o.timeouts["probe.k8s-gpu-pod"] = std::chrono::milliseconds(1500);
    return collect::CollectEvidence(local, {"probe.k8s-gpu-pod"}, o);
  };
  // The kubelet's events: the GPU pod pulled its image for 35 s, the other found it present.
  auto events = [&](const std::string& gpu_message) {
    json list = {{"kind", "EventList"}, {"apiVersion", "v1"}, {"items", json::array()}};
    for (auto [pod, message] : {std::pair<std::string, std::string>{"clustermax-probe-gpu", gpu_message},
                                {"clustermax-probe-cpu",
                                 "Container image \"nvcr.io/nvidia/cuda:13.0.1-base-ubuntu24.04\" "
                                 "already present on machine"}})
      list["items"].push_back({{"metadata", {{"name", pod + ".18c1"}, {"namespace", "clustermax-probe-gpu"}}},
                               {"involvedObject", {{"kind", "Pod"}, {"name", pod}}},
                               {"reason", "Pulled"},
                               {"message", message},
                               {"type", "Normal"}});
    c.server().Override(ns + "/events", list.dump());
  };
  // Scheduler and kubelet: scheduled 2 s after creation, the container started `start` s after.
  auto kubelet = [&](int gpu_start, json gpu_state = nullptr) {
    c.server().OnCreate([=](json& obj) {
      if (obj["kind"] != "Pod") return;
      bool gpu = obj["metadata"]["name"] == "clustermax-probe-gpu";
      EXPECT_EQ(obj["spec"]["containers"][0]["resources"]["limits"].contains("nvidia.com/gpu"), gpu);
      for (const auto& t : obj["spec"]["tolerations"])  // the GPU taints only: not a cordoned node's
        EXPECT_TRUE(t.contains("key")) << t.dump();
      int start = gpu ? gpu_start : 4;
      obj["metadata"]["creationTimestamp"] = "2026-12-03T06:00:00Z";
      obj["spec"]["nodeName"] = gpu ? "gpu-h100-02" : "cpu-01";
      std::string at = fmt::format("2026-12-03T06:{:02}:{:02}Z", start / 60, start % 60);
      json state =
          gpu && !gpu_state.is_null()
              ? gpu_state
              : json{{"terminated", {{"exitCode", 0}, {"reason", "Completed"}, {"startedAt", at}, {"finishedAt", at}}}};
      json scheduled = {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", "2026-12-03T06:00:02Z"}};
      obj["status"] = {{"phase", "Succeeded"},
                       {"conditions", json::array({scheduled})},
                       {"containerStatuses", json::array({{{"name", "probe"}, {"state", state}}})}};
    });
  };
  kubelet(41);
  events(
      "Successfully pulled image \"nvcr.io/nvidia/cuda:13.0.1-base-ubuntu24.04\" in 35.2s (35.2s including "
      "waiting). Image size: 87012345 bytes.");
  auto ev = collect();
  ASSERT_TRUE(ev.at("probe.k8s-gpu-pod").ok()) << ev.at("probe.k8s-gpu-pod").error;
  const json& d = ev.at("probe.k8s-gpu-pod").data;
  EXPECT_EQ(d["resource"], "nvidia.com/gpu");
  ASSERT_EQ(d["pods"].size(), 2u);
  EXPECT_EQ(d["pods"][0]["start_s"], 41.0);
  EXPECT_EQ(d["pods"][0]["schedule_s"], 2.0);
  EXPECT_EQ(d["pods"][0]["pull_s"], 35.2);
  EXPECT_EQ(d["pods"][1]["pull_s"], 0.0);
  auto f = Judge("prolog-fast", ev);
  EXPECT_EQ(V(f), "PASS") << All(f);
  EXPECT_EQ(f.observed, "6 s (41 s with the image pull)");
  EXPECT_NE(All(f).find("one-GPU pod on gpu-h100-02: scheduled in 2 s, container started in 41 s, image pull 35.2 s"),
            std::string::npos)
      << All(f);
  auto log = c.server().Requests();
  auto has = [&](const std::string& r) {
    return std::any_of(log.begin(), log.end(), [&](const std::string& x) { return x == r || x.starts_with(r + "?"); });
  };
  EXPECT_TRUE(has("POST " + ns + "/pods?fieldManager=clustermax-probe-gpu&timeout=19s"))
      << fmt::format("{}", fmt::join(log, "\n"));
  for (const std::string& path : {ns + "/pods/clustermax-probe-gpu", ns + "/pods/clustermax-probe-cpu", ns})
    EXPECT_TRUE(has("DELETE " + path)) << path;
  EXPECT_TRUE(c.server().Created().empty());
  {
    // Mutations of that answer: the pod first waited 120 s for a free GPU (FailedScheduling) and ran
    // 161 s after its creation: the wait is a queue, not start-up (PASS); the same 161 s without
    // the wait is start-up (FAIL); a node clock behind the API server's is unverified.
    auto m = ev;
    json& g = m.at("probe.k8s-gpu-pod").data["pods"][0];
    g["start_s"] = 161.0;
    g["schedule_s"] = 120.0;
    EXPECT_EQ(V(Judge("prolog-fast", m)), "FAIL");
    g["queued"] = true;
    auto q = Judge("prolog-fast", m);
    EXPECT_EQ(V(q), "PASS") << All(q);
    EXPECT_NE(All(q).find("waited 120 s for a free GPU (FailedScheduling): not counted"), std::string::npos) << All(q);
  }

  // Slow: 150 s to start with the image already there.
  kubelet(150);
  events("Container image \"nvcr.io/nvidia/cuda:13.0.1-base-ubuntu24.04\" already present on machine");
  f = Judge("prolog-fast", ev = collect());
  EXPECT_EQ(V(f), "FAIL") << All(f);
  // The node's clock a minute behind the API server's: started before created, not a figure.
  kubelet(0, {{"running", {{"startedAt", "2026-12-03T05:59:00Z"}}}});
  f = Judge("prolog-fast", ev = collect());
  EXPECT_EQ(V(f), "WARN") << All(f);
  EXPECT_TRUE(ev.at("probe.k8s-gpu-pod").data["pods"][0]["clock_skew"].get<bool>());
  EXPECT_EQ(ev.at("probe.k8s-gpu-pod").data["pods"][0]["start_s"], -1.0);
  // 40 s, the pull unread (no event): unverified, not FAIL, since a pull may be all of it.
  kubelet(40);
  c.server().Override(ns + "/events", R"({"kind":"EventList","apiVersion":"v1","items":[]})");
  f = Judge("prolog-fast", ev = collect());
  EXPECT_EQ(V(f), "WARN") << All(f);
  EXPECT_NE(f.message.find("unknown length"), std::string::npos) << f.message;
  // The container did not run: the NVIDIA runtime hook failed (exit 128, startedAt at the epoch).
  kubelet(0, {{"terminated",
               {{"exitCode", 128},
                {"reason", "StartError"},
                {"message", "failed to create containerd task: nvidia-container-cli: device error"},
                {"startedAt", "1970-01-01T00:00:00Z"}}}});
  f = Judge("prolog-fast", ev = collect());
  EXPECT_EQ(V(f), "WARN") << All(f);
  EXPECT_NE(f.message.find("StartError (exit 128)"), std::string::npos) << f.message;
  // No free GPU: the scheduler's reason, unverified (as a queued Slurm step).
  c.server().OnCreate([](json& obj) {
    if (obj["kind"] != "Pod") return;
    obj["status"] = {{"phase", "Pending"},
                     {"conditions",
                      {{{"type", "PodScheduled"},
                        {"status", "False"},
                        {"reason", "Unschedulable"},
                        {"message", "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}}}}};
  });
  f = Judge("prolog-fast", ev = collect());
  EXPECT_EQ(V(f), "WARN") << All(f);
  EXPECT_NE(f.message.find("not scheduled within 2 s (Unschedulable)"), std::string::npos) << f.message;
  EXPECT_NE(All(f).find("4 Insufficient nvidia.com/gpu"), std::string::npos) << All(f);
  EXPECT_TRUE(c.server().Created().empty());
  // Refused: pods may not be created in the probe's namespace.
  c.server().Forbid(ns + "/pods");
  f = Judge("prolog-fast", ev = collect());
  EXPECT_EQ(V(f), "WARN") << All(f);
  EXPECT_NE(f.message.find("the one-GPU pod was not made"), std::string::npos) << f.message;
  EXPECT_TRUE(c.server().Created().empty());
  // Not asked for.
  ev.at("probe.k8s-gpu-pod").status = core::EvidenceStatus::kProbeDisabled;
  EXPECT_EQ(V(Judge("prolog-fast", ev)), "SKIP");
}

// The k8s-pvc probe when the claims bind and their pods do not run: a volume that does not mount
// (FAIL), an image that does not come after the mount (WARN, the storage not blamed), and a
// WaitForFirstConsumer claim with or without a node chosen for it.
TEST(K8sApi, StorageProbeMountFailures) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  auto collect = CollectStorageAndLbProbes;
  auto pod_status = ProbePodAsKubelet;
  // The claims bind, the volume does not mount: the scheduled pods wait in ContainerCreating with the
  // kubelet's FailedMount event (a real message shape: an NFS server that does not answer).
  c.server().OnCreate([&](json& obj) {
    if (obj["kind"] == "PersistentVolumeClaim") obj["status"] = {{"phase", "Bound"}};
    if (obj["kind"] == "Pod") pod_status(obj, false);
  });
  c.server().Override(
      "/api/v1/namespaces/clustermax-probe-pvc/events",
      json{{"kind", "EventList"},
           {"items",
            {{{"involvedObject", {{"kind", "Pod"}, {"name", "clustermax-probe-rwx-1-pod"}}},
              {"reason", "FailedMount"},
              {"message", "MountVolume.SetUp failed for volume \"pvc-1\" : mount failed: exit status 32"}}}}}
          .dump());
  auto ev = collect();
  auto mount = Judge("csi-rwx", ev);
  EXPECT_EQ(V(mount), "FAIL") << All(mount);
  EXPECT_NE(All(mount).find("the pod on gpu-h100-01 could not mount it: FailedMount: MountVolume.SetUp failed"),
            std::string::npos)
      << All(mount);
  EXPECT_TRUE(c.server().Created().empty());
  // The volume mounted and the image does not come (the kubelet pulls only after the mounts): the
  // storage is not at fault, unverified.
  c.server().Override("/api/v1/namespaces/clustermax-probe-pvc/events",
                      json{{"kind", "EventList"},
                           {"items",
                            {{{"involvedObject", {{"kind", "Pod"}, {"name", "clustermax-probe-rwx-1-pod"}}},
                              {"reason", "Pulling"},
                              {"message", "Pulling image \"nvcr.io/nvidia/cuda:13.0.1-base-ubuntu24.04\""}},
                             {{"involvedObject", {{"kind", "Pod"}, {"name", "clustermax-probe-rwx-1-pod"}}},
                              {"reason", "Failed"},
                              {"message", "Error: ErrImagePull"}}}}}
                          .dump());
  ev = collect();
  auto pull = Judge("csi-rwx", ev);
  EXPECT_EQ(V(pull), "WARN") << All(pull);
  EXPECT_NE(All(pull).find("the pod to mount it did not run (Failed: Error: ErrImagePull)"), std::string::npos)
      << All(pull);
  {
    // WaitForFirstConsumer: the scheduler chose a node for the pod and nothing was provisioned there.
    auto m = ev;
    json& claim = m.at("probe.k8s-pvc").data["claims"][1];
    claim["bound"] = false;
    claim["phase"] = "Pending";
    claim["waits_for_consumer"] = true;
    claim["selected_node"] = "gpu-h100-02";
    auto w = Judge("csi-rwx", m);
    EXPECT_EQ(V(w), "FAIL") << All(w);
    EXPECT_NE(All(w).find("was not provisioned on gpu-h100-02"), std::string::npos) << All(w);
    claim["selected_node"] = "";  // no node chosen yet: the scheduler's, unverified
    claim["pod"]["scheduled"] = "";
    EXPECT_EQ(V(Judge("csi-rwx", m)), "WARN");
  }
}

TEST(K8sApi, ClusterWithoutOperators) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("bare");
  auto ev = c.Collect();
  for (const auto& [id, e] : ev) EXPECT_TRUE(e.ok()) << id << ": " << e.error;
  auto v = Verdicts(ev);
  std::map<std::string, std::string> want = {{"security-kubernetes-nodes-proxy", "FAIL"},
                                             {"gpu-operator", "WARN"},
                                             {"network-operator", "SKIP"},
                                             {"mpi-operator", "WARN"},
                                             {"workload-schedulers", "WARN"},
                                             {"gang-scheduling", "WARN"},
                                             {"bin-packing", "WARN"},
                                             {"ingress-controller", "WARN"},
                                             {"load-balancer", "WARN"},
                                             {"csi-rwx", "WARN"},
                                             {"default-storage-class", "WARN"},
                                             {"node-problem-detector", "WARN"},
                                             {"metrics-server", "WARN"},
                                             {"helm-access", "PASS"},
                                             {"vcluster-tenancy", "PASS"},
                                             {"rbac-access", "PASS"}};
  for (const auto& [id, verdict] : want) EXPECT_EQ(v[id], verdict) << id << ": " << All(Judge(id, ev));
  EXPECT_NE(All(Judge("security-kubernetes-nodes-proxy", ev)).find("ServiceAccount ml-team/trainer"),
            std::string::npos);
  EXPECT_NE(Judge("default-storage-class", ev).message.find("2 StorageClasses are marked default"), std::string::npos);
  EXPECT_NE(Judge("gpu-operator", ev).message.find("no GPU operator"), std::string::npos);
}

TEST(K8sApi, ForbiddenMalformedAndDeniedAreNeverPassed) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  c.server().Forbid("/apis/rbac.authorization.k8s.io/");
  c.server().Override("/apis/storage.k8s.io/v1/storageclasses", "<html>502 Bad Gateway</html>");
  c.server().Override("/api/v1/nodes", R"({"kind":"Status","status":"Success"})");
  c.server().Deny("create pods");
  c.server().Deny("create jobs.batch");
  c.server().Deny("create customresourcedefinitions.apiextensions.k8s.io");
  auto ev = c.Collect();
  EXPECT_EQ(ev.at("k8s.rbac").status, core::EvidenceStatus::kPermissionDenied) << ev.at("k8s.rbac").error;
  EXPECT_EQ(ev.at("k8s.storage").status, core::EvidenceStatus::kParseError);
  EXPECT_EQ(ev.at("k8s.nodes").status, core::EvidenceStatus::kParseError);
  auto rbac = Judge("security-kubernetes-nodes-proxy", ev);
  EXPECT_EQ(V(rbac), "WARN");
  EXPECT_EQ(rbac.reason, core::Reason::kEvidenceError);
  for (const char* id :
       {"default-storage-class", "csi-rwx", "gpu-operator", "network-operator", "node-problem-detector"})
    EXPECT_EQ(V(Judge(id, ev)), "WARN") << id << ": " << All(Judge(id, ev));
  EXPECT_EQ(V(Judge("rbac-access", ev)), "FAIL") << All(Judge("rbac-access", ev));
  EXPECT_EQ(V(Judge("helm-access", ev)), "WARN") << All(Judge("helm-access", ev));
  EXPECT_NE(Judge("helm-access", ev).message.find("only namespaced"), std::string::npos);
  c.server().Deny("create deployments.apps");
  EXPECT_EQ(V(Judge("helm-access", c.Collect())), "FAIL");
}

TEST(K8sApi, UnreachableServerIsAnEvidenceErrorForEveryCheck) {
  ASSERT_TRUE(HaveKubectl());
  auto dir = clustermax::testing::ScratchDir("k8s-down");
  std::ofstream(dir / "kubeconfig")
      << "apiVersion: v1\nkind: Config\nclusters:\n- name: x\n  cluster:\n    server: "
         "http://127.0.0.1:1\ncontexts:\n- name: x\n  context:\n    cluster: x\n    user: "
         "x\ncurrent-context: x\nusers:\n- name: x\n  user: {}\n";
  ::setenv("KUBECONFIG", (dir / "kubeconfig").c_str(), 1);
  host::LocalHost local;
  auto ev = collect::CollectEvidence(local, K8sCollectors(), {});
  ::unsetenv("KUBECONFIG");
  for (const auto& id : kClusterChecks) {
    auto f = Judge(id, ev);
    EXPECT_EQ(V(f), "WARN") << id << ": " << All(f);
    EXPECT_EQ(f.reason, core::Reason::kEvidenceError) << id;
  }
}

TEST(K8sNode, KubeletCpuManagerPolicy) {
  auto judge = [](const std::optional<std::string>& state, const std::optional<std::string>& config,
                  bool gpu_node = true) {
    host::Bundle b;
    auto put = [&](const char* path, const std::optional<std::string>& text) {
      host::FileResult r;
      // "<denied>" stands for a file the audit may not read.
      r.status = !text                 ? host::IoStatus::kNotFound
                 : *text == "<denied>" ? host::IoStatus::kPermissionDenied
                                       : host::IoStatus::kOk;
      if (r.status == host::IoStatus::kOk) r.content = *text;
      b.PutFile(path, r);
    };
    put("/var/lib/kubelet/cpu_manager_state", state);
    put("/var/lib/kubelet/config.yaml", config);
    host::ReplayHost replay(b);
    auto ev = collect::CollectEvidence(replay, {"kubelet.cpu-manager"}, {});
    // A GPU node (NVML sees 8 GPUs), or a CPU node (a complete PCI inventory without a GPU).
    ev["gpu.inventory"] = clustermax::testing::Ok("gpu.inventory", {{"device_count", gpu_node ? 8 : 0}});
    ev["pci.devices"] = clustermax::testing::Ok("pci.devices", {{"complete", true}, {"devices", json::array()}});
    return Judge("kubelet-cpu-manager-static", ev);
  };
  EXPECT_EQ(V(judge(R"({"policyName":"static","defaultCpuSet":"0-3","checksum":1})", "cpuManagerPolicy: static\n")),
            "PASS");
  EXPECT_EQ(V(judge(std::nullopt, "kind: KubeletConfiguration\ncpuManagerPolicy: \"static\" # pinned\n")), "PASS");
  auto none = judge(R"({"policyName":"none","defaultCpuSet":"","checksum":1})", std::nullopt);
  EXPECT_EQ(V(none), "WARN");
  EXPECT_EQ(none.observed, "none");
  EXPECT_EQ(V(judge(std::nullopt, "kind: KubeletConfiguration\n")), "WARN");  // the default policy is none
  auto unread = judge(std::nullopt, std::nullopt);
  EXPECT_EQ(V(unread), "WARN");
  EXPECT_EQ(unread.reason, core::Reason::kUnverified);
  EXPECT_EQ(V(judge(std::nullopt, std::nullopt, /*gpu_node=*/false)), "SKIP");
  // Unreadable (not absent) and nothing else read: an evidence error, from either file.
  for (auto [state, config] : std::vector<std::pair<std::optional<std::string>, std::optional<std::string>>>{
           {"<denied>", std::nullopt}, {std::nullopt, "<denied>"}, {"<denied>", "<denied>"}}) {
    auto f = judge(state, config);
    EXPECT_EQ(V(f), "WARN") << f.message;
    EXPECT_EQ(f.reason, core::Reason::kEvidenceError) << f.message;
  }
  // One readable file is enough.
  EXPECT_EQ(V(judge("<denied>", "cpuManagerPolicy: static\n")), "PASS");
}

// The binary, as an operator runs it: `audit --k8s --yes --kubeconfig FILE` grades every
// Kubernetes row from the API, replays to the same verdicts, and leaves nothing in the cluster.
TEST(K8sAudit, CliGradesEveryKubernetesRowAndReplays) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("bare");
  ::unsetenv("KUBECONFIG");  // the option, not the environment, points at the server
  auto out = c.dir() / "run";
  auto r = clustermax::testing::RunBinary(fmt::format("audit --k8s --yes --kubeconfig {} --out {} --exit-zero",
                                                      (c.dir() / "kubeconfig").string(), out.string()),
                                          "KUBECACHEDIR=" + (c.dir() / "cache").string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("the cluster through its API"), std::string::npos) << r.out;
  json report = json::parse(util::ReadLocalFile(out / "report.json").value_or("{}"));
  std::map<std::string, json> rows;
  for (const auto& x : report["results"]) rows[x["id"]] = x;
  for (const auto& id : kClusterChecks) {
    ASSERT_TRUE(rows.count(id)) << id;
    EXPECT_NE(rows[id]["reason"], "not-in-scope") << id;
    EXPECT_NE(rows[id]["reason"], "evidence-error") << id << ": " << rows[id]["message"];
  }
  EXPECT_EQ(rows["security-kubernetes-nodes-proxy"]["status"], "FAIL");
  EXPECT_EQ(rows["default-storage-class"]["status"], "WARN");
  for (const auto& req : c.server().Requests())
    EXPECT_TRUE(req.starts_with("GET ") ||
                req.starts_with("POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews"))
        << req;

  // The bundle holds the API's answers: a replay with no server judges the same.
  auto again = clustermax::testing::RunBinary(fmt::format("audit --replay {} --json --exit-zero", out.string()));
  json replayed = json::parse(again.out.substr(again.out.find('{')));
  for (const auto& x : replayed["results"])
    if (rows.count(x["id"]) && std::find(kClusterChecks.begin(), kClusterChecks.end(), x["id"]) != kClusterChecks.end())
      EXPECT_EQ(x["status"], rows[x["id"]]["status"]) << x["id"];
}

// Re-records tests/fixtures/bundles/k8s-gpu-operator.json when CLUSTERMAX_RECORD_K8S_BUNDLE is set
// (after a collector of the API view changes what it asks): the binary's `audit --k8s --local
// --record` against the gpu-operator fixture cluster, as SOURCES.md describes.
TEST(K8sAudit, RecordTheGoldenBundle) {
  if (!std::getenv("CLUSTERMAX_RECORD_K8S_BUNDLE")) GTEST_SKIP() << "set CLUSTERMAX_RECORD_K8S_BUNDLE=1 to re-record";
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  std::string checks;
  for (const auto& id : kGoldenChecks) checks += " --check " + id;
  auto bundle = clustermax::testing::SourceDir() / "tests" / "fixtures" / "bundles" / "k8s-gpu-operator.json";
  auto r = clustermax::testing::RunBinary(fmt::format("audit --k8s --local --yes{} --record {} --out {} --exit-zero",
                                                      checks, bundle.string(), (c.dir() / "run").string()),
                                          "KUBECACHEDIR=" + (c.dir() / "cache").string());
  ASSERT_EQ(r.code, 0) << r.out;
}

// The Kubernetes report as a golden: the bundle `audit --k8s --record` wrote against the
// gpu-operator fixture cluster (tests/fixtures/bundles/k8s-gpu-operator.json), replayed with the
// cluster checks selected. Regenerate with CLUSTERMAX_UPDATE_GOLDEN=1.
TEST(K8sAudit, GoldenReportOfTheRecordedCluster) {
  host::Bundle b = host::Bundle::Load(Fixture("bundles/k8s-gpu-operator.json"));
  audit::Selection sel;
  sel.target = core::Target::kK8s;
  sel.checks = kGoldenChecks;
  audit::Plan plan = audit::BuildPlan(checks::DefaultRegistry(), sel);
  auto node = audit::ReplayNode(b, plan, {});
  EXPECT_TRUE(node.replay_misses.empty()) << node.replay_misses.front();
  auto r = audit::Judge(plan, {node}, core::EmbeddedMinimumTable());
  r.mode = "replay";
  r.git_sha = "golden";
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"k8s-gpu-operator.json", audit::ToJson(r).dump(2) + "\n"},
           {"k8s-gpu-operator.v1.txt", audit::RenderText(r, {.verbosity = 1, .color = false})}}) {
    auto path = clustermax::testing::SourceDir() / "tests" / "golden" / name;
    if (std::getenv("CLUSTERMAX_UPDATE_GOLDEN")) {
      util::WriteFileAtomic(path, text);
      continue;
    }
    EXPECT_EQ(util::ReadLocalFile(path).value_or("(missing)"), text) << name << " differs from the golden";
  }
}

// The Kubernetes half of rows judged on both schedulers, from the API view; the Slurm half never
// asks the API (k8s.* evidence is planned on the Kubernetes target only).
TEST(K8sApi, SlurmAndKubernetesRowsJudgeTheirOwnEvidence) {
  for (const char* id : {"monitoring-readiness", "auto-remediation"}) {
    audit::Selection sel;
    sel.checks = {id};
    sel.target = core::Target::kSlurm;
    auto slurm = audit::BuildPlan(checks::DefaultRegistry(), sel);
    for (const auto& c : slurm.collectors) EXPECT_FALSE(c.starts_with("k8s.")) << id << ": " << c;
    sel.target = core::Target::kK8s;
    auto k8s = audit::BuildPlan(checks::DefaultRegistry(), sel);
    EXPECT_EQ(k8s.checks[0].state, audit::PlanState::kRun) << id;
    EXPECT_NE(std::find(k8s.collectors.begin(), k8s.collectors.end(), "k8s.workloads"), k8s.collectors.end()) << id;
  }
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  auto ev = c.Collect();
  // dcgm-exporter with its ServiceMonitor, Prometheus, Grafana, Alertmanager, kube-state-metrics,
  // node-exporter, GFD and PrometheusRules with alerts; no log aggregation: 9 of 10.
  auto f = Judge("monitoring-readiness", ev);
  EXPECT_EQ(V(f), "PASS") << All(f);
  EXPECT_NE(f.message.find("9/10"), std::string::npos) << f.message;
  EXPECT_NE(All(f).find("[x] alerting rules: 2 alert(s) in monitoring/node-exporter-rules (2)"), std::string::npos)
      << All(f);
  {
    auto m = ev;  // rules with recording rules only: that part is absent
    for (auto& r : m.at("k8s.alert-rules").data["rules"]) r["alerts"] = 0;
    auto g = Judge("monitoring-readiness", m);
    EXPECT_NE(g.message.find("8/10"), std::string::npos) << g.message;
    EXPECT_NE(All(g).find("[ ] alerting rules: PrometheusRules hold no alert"), std::string::npos) << All(g);
  }
  auto fewer = ev;
  auto& w = fewer.at("k8s.workloads").data["workloads"];
  w.erase(std::remove_if(w.begin(), w.end(),
                         [](const json& x) {
                           std::string n = x.value("name", "");
                           return n == "grafana" || n == "alertmanager-main";
                         }),
          w.end());
  f = Judge("monitoring-readiness", fewer);
  EXPECT_EQ(V(f), "WARN") << All(f);
  EXPECT_NE(f.message.find("7/10 (partial): missing"), std::string::npos) << f.message;
  // The rules unread (denied, or a bundle of an older version): that part is "?", and when it alone
  // decides between two bands the finding is unverified, never a PASS or a FAIL.
  for (auto* m : {&ev, &fewer}) {
    m->at("k8s.alert-rules").status = core::EvidenceStatus::kPermissionDenied;
    m->at("k8s.alert-rules").error = "GET /apis/monitoring.coreos.com/v1/prometheusrules: Forbidden";
  }
  f = Judge("monitoring-readiness", ev);  // 8 or 9 of 10: production either way
  EXPECT_EQ(V(f), "PASS") << All(f);
  EXPECT_NE(All(f).find("[?] alerting rules: PrometheusRules unread"), std::string::npos) << All(f);
  f = Judge("monitoring-readiness", fewer);  // 6 or 7 of 10: partial either way
  EXPECT_EQ(f.reason, core::Reason::kConfig) << All(f);
  auto edge = ev;  // without Grafana: 7 or 8 of 10, partial or production
  auto& ew = edge.at("k8s.workloads").data["workloads"];
  ew.erase(std::remove_if(ew.begin(), ew.end(), [](const json& x) { return x.value("name", "") == "grafana"; }),
           ew.end());
  f = Judge("monitoring-readiness", edge);
  EXPECT_EQ(V(f), "WARN") << All(f);
  EXPECT_EQ(f.reason, core::Reason::kUnverified) << All(f);
  EXPECT_NE(f.message.find("between 7 and 8"), std::string::npos) << f.message;
  ev = c.Collect();
  // node-problem-detector detects; nothing acts on it. A remediation controller makes it PASS.
  f = Judge("auto-remediation", ev);
  EXPECT_EQ(V(f), "WARN") << All(f);
  EXPECT_NE(f.message.find("detected (node conditions) but nothing cordons"), std::string::npos) << f.message;
  auto healed = ev;
  healed.at("k8s.workloads")
      .data["workloads"]
      .push_back({{"kind", "Deployment"},
                  {"namespace", "nvsentinel"},
                  {"name", "fault-remediation-module"},
                  {"desired", 1},
                  {"ready", 1},
                  {"images", json::array()}});
  EXPECT_EQ(V(Judge("auto-remediation", healed)), "PASS");
  // The workload list unread: never a PASS.
  auto unread = ev;
  unread.at("k8s.workloads").status = core::EvidenceStatus::kPermissionDenied;
  unread.at("k8s.workloads").error = "GET /apis/apps/v1/daemonsets: Forbidden";
  for (const char* id : {"monitoring-readiness", "auto-remediation"}) EXPECT_EQ(V(Judge(id, unread)), "WARN") << id;
}

// ---- The node fan-out: one DaemonSet, pods reporting through their logs ----

namespace {

// What `clustermax collect` prints in a fan-out pod on `node` (the pod's init container log):
// the real binary, collecting this machine as that node.
std::string CollectLog(const std::string& node) {
  auto r = clustermax::testing::RunBinary("collect --role=compute --target=k8s --node-timeout=60",
                                          "CLUSTERMAX_NODE_NAME=" + node);
  EXPECT_EQ(r.code, 0) << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("CLUSTERMAX-BUNDLE " + node + " "), std::string::npos);
  return r.out;
}

audit::K8sFanOutOptions FanOutOptions() {
  audit::K8sFanOutOptions o;
  o.image = "registry.example/clustermax:1";
  o.run_id = "clustermax-test-run";
  o.timeout_s = 30;
  o.stuck_s = 0.5;
  o.poll_s = 0.2;
  o.collect_args = {"--target=k8s"};
  return o;
}

struct Collected {
  audit::FanOutResult result;
  std::map<std::string, host::Bundle> bundles;  // node -> bundle
  std::map<std::string, std::string> unreachable;
};

Collected FanOut(const audit::K8sFanOutOptions& o) {
  host::LocalHost local;
  Collected c;
  std::vector<std::string> targets;
  std::mutex mu;
  audit::BundleStream s;
  s.workers = 2;
  s.on_targets = [&](const std::vector<std::string>& t) { targets = t; };
  s.on_bundle = [&](size_t i, host::Bundle b, const std::string& text) {
    EXPECT_FALSE(text.empty());
    std::lock_guard lock(mu);
    c.bundles[targets.at(i)] = std::move(b);
  };
  c.result = audit::FanOutThroughKubernetes(local, o, s);
  for (const auto& u : c.result.unreachable) c.unreachable[u.node] = u.reason;
  return c;
}

bool Logged(const std::vector<std::string>& log, const std::string& prefix) {
  return std::any_of(log.begin(), log.end(), [&](const std::string& l) { return l.starts_with(prefix); });
}

}  // namespace

// The DaemonSet: pinned to exactly the targets, tolerating NoSchedule and GPU taints, the host's
// root read-only, nothing privileged, the GPUs asked for, labelled for the cleanup.
TEST(K8sFanOut, DaemonSetIsPinnedTolerantReadOnlyAndNotPrivileged) {
  auto o = FanOutOptions();
  o.collect_args = {"--target=k8s", "--check=gpu-driver-version"};
  json ds = audit::FanOutDaemonSet(o, "clustermax-x", {"gpu-1", "gpu-2"}, "nvidia.com/gpu", 8);
  const json& pod = ds["spec"]["template"]["spec"];
  EXPECT_EQ(ds["metadata"]["labels"]["app.kubernetes.io/managed-by"], "clustermax");
  EXPECT_EQ(ds["spec"]["template"]["metadata"]["labels"]["clustermax.io/run"], "clustermax-x");
  const json& term = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                        ["nodeSelectorTerms"][0]["matchFields"][0];
  EXPECT_EQ(term["key"], "metadata.name");
  EXPECT_EQ(term["values"], json({"gpu-1", "gpu-2"}));
  EXPECT_TRUE(std::any_of(pod["tolerations"].begin(), pod["tolerations"].end(), [](const json& t) {
    return t.value("operator", "") == "Exists" && t.value("effect", "") == "NoSchedule" && !t.contains("key");
  }));
  EXPECT_TRUE(std::any_of(pod["tolerations"].begin(), pod["tolerations"].end(),
                          [](const json& t) { return t.value("key", "") == "nvidia.com/gpu"; }));
  EXPECT_EQ(pod["volumes"][0]["hostPath"]["path"], "/");
  const json& collect = pod["initContainers"][0];
  EXPECT_EQ(collect["volumeMounts"][0]["mountPath"], "/host");
  EXPECT_EQ(collect["volumeMounts"][0]["readOnly"], true);
  EXPECT_EQ(collect["resources"]["limits"]["nvidia.com/gpu"], "8");
  EXPECT_EQ(collect["command"], json({"/usr/local/bin/clustermax"}));
  std::vector<std::string> args = collect["args"];
  EXPECT_EQ(args[0], "collect");
  EXPECT_NE(std::find(args.begin(), args.end(), "--host-root=/host"), args.end());
  EXPECT_NE(std::find(args.begin(), args.end(), "--check=gpu-driver-version"), args.end());
  for (const json& c : {collect, pod["containers"][0]}) {
    EXPECT_EQ(c["securityContext"]["privileged"], false);
    EXPECT_EQ(c["securityContext"]["allowPrivilegeEscalation"], false);
    EXPECT_EQ(c["securityContext"]["capabilities"]["drop"], json({"ALL"}));
  }
  // One capability, to enter the node's root; none for the idle container, which runs as nobody.
  EXPECT_EQ(collect["securityContext"]["capabilities"]["add"], json::array({"SYS_CHROOT"}));
  EXPECT_EQ(collect["securityContext"]["runAsUser"], 0);
  EXPECT_EQ(collect["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
  EXPECT_EQ(collect["volumeMounts"][0].value("recursiveReadOnly", ""), "IfPossible");
  const json& hold = pod["containers"][0];
  EXPECT_FALSE(hold["securityContext"]["capabilities"].contains("add"));
  EXPECT_EQ(hold["securityContext"]["runAsUser"], 65534);
  EXPECT_EQ(hold["securityContext"]["runAsNonRoot"], true);
  EXPECT_EQ(hold["args"], json::array({"hold"}));
  // The node's processes, interfaces and ports; no API token; scratch space in memory.
  EXPECT_EQ(pod["hostPID"], true);
  EXPECT_EQ(pod["hostNetwork"], true);
  EXPECT_EQ(pod["automountServiceAccountToken"], false);
  EXPECT_EQ(pod["volumes"][1]["emptyDir"]["medium"], "Memory");
  // No GPUs asked for: no GPU limit.
  json none = audit::FanOutDaemonSet(o, "clustermax-x", {"gpu-1"}, "nvidia.com/gpu", 0);
  EXPECT_FALSE(none["spec"]["template"]["spec"]["initContainers"][0]["resources"]["limits"].contains("nvidia.com/gpu"));
}

// Three GPU nodes: one returns its bundle, one stays Pending (the scheduler's reason), one cannot
// pull the image. "1 of 3", each reason named, and the namespace and DaemonSet deleted.
TEST(K8sFanOut, CollectsThroughPodLogsAndNamesWhyTheOthersDidNot) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  auto& s = c.server();
  using F = testing_server::KubeApiServer::PodFate;
  s.SetNodePod("gpu-h100-01", F::kCollected, CollectLog("gpu-h100-01"));
  s.SetNodePod("gpu-h100-02", F::kUnschedulable);
  s.SetNodePod("gpu-h100-03", F::kImagePull);
  Collected got = FanOut(FanOutOptions());
  // The GPU nodes only (cp-0 has none), the fewest GPUs any offers asked for.
  EXPECT_EQ(got.result.in_scope, (std::vector<std::string>{"gpu-h100-01", "gpu-h100-02", "gpu-h100-03"}));
  EXPECT_EQ(got.result.gpus_per_node, 8);
  ASSERT_EQ(got.bundles.size(), 1u);
  const host::Bundle& b = got.bundles.at("gpu-h100-01");
  EXPECT_EQ(b.manifest.hostname, "gpu-h100-01");  // the Kubernetes node name, not this machine's
  EXPECT_EQ(b.manifest.role, "compute");
  EXPECT_TRUE(b.File("/proc/cpuinfo").has_value());  // what the node read, recorded
  EXPECT_NE(got.unreachable["gpu-h100-02"].find("Pending (Unschedulable): 0/4 nodes are available: 1 Insufficient "
                                                "nvidia.com/gpu"),
            std::string::npos)
      << got.unreachable["gpu-h100-02"];
  EXPECT_NE(got.unreachable["gpu-h100-03"].find("image pull failed (ImagePullBackOff): Back-off pulling image"),
            std::string::npos)
      << got.unreachable["gpu-h100-03"];

  auto log = s.Requests();
  EXPECT_TRUE(Logged(log, "POST /api/v1/namespaces"));
  EXPECT_TRUE(Logged(log, "POST /apis/apps/v1/namespaces/clustermax/daemonsets"));
  EXPECT_TRUE(Logged(log, "GET /api/v1/namespaces/clustermax/pods/clustermax-test-run-gpu-h100-01/log"));
  EXPECT_FALSE(Logged(log, "GET /api/v1/namespaces/clustermax/pods/clustermax-test-run-gpu-h100-02/log"));
  EXPECT_TRUE(Logged(log, "DELETE /apis/apps/v1/namespaces/clustermax/daemonsets/clustermax-test-run"));
  EXPECT_TRUE(Logged(log, "DELETE /api/v1/namespaces/clustermax"));
  EXPECT_TRUE(s.Created().empty()) << s.Created().begin()->first;  // nothing left behind
  // The pods were listed by our label, page by page.
  EXPECT_TRUE(
      Logged(log, "GET /api/v1/namespaces/clustermax/pods?labelSelector=clustermax.io%2Frun%3Dclustermax-test-run"));
}

// Evicted, crash-looping, never created (the controller's FailedCreate event), still collecting at
// the timeout: each node with its reason; a namespace that existed is kept, our DaemonSet is not.
TEST(K8sFanOut, EvictedCrashingRefusedAndTimedOut) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  auto& s = c.server();
  using F = testing_server::KubeApiServer::PodFate;
  s.SetNodePod("gpu-h100-01", F::kEvicted);
  s.SetNodePod("gpu-h100-02", F::kCrashing);
  s.SetNodePod("gpu-h100-03", F::kNoPod);
  s.Put("/api/v1/namespaces/clustermax",
        {{"apiVersion", "v1"}, {"kind", "Namespace"}, {"metadata", {{"name", "clustermax"}}}});
  // ... holding the DaemonSet of a run killed before its cleanup (pinned to no node).
  s.Put("/apis/apps/v1/namespaces/clustermax/daemonsets/clustermax-20261201-0300-ab12",
        {{"apiVersion", "apps/v1"},
         {"kind", "DaemonSet"},
         {"metadata",
          {{"name", "clustermax-20261201-0300-ab12"},
           {"namespace", "clustermax"},
           {"creationTimestamp", "2026-12-01T03:00:00Z"},
           {"labels",
            {{"app.kubernetes.io/managed-by", "clustermax"}, {"clustermax.io/run", "clustermax-20261201-0300-ab12"}}}}},
         {"spec", {{"template", {{"metadata", {{"labels", json::object()}}}}}}}});
  Collected got = FanOut(FanOutOptions());
  EXPECT_TRUE(got.bundles.empty());
  EXPECT_TRUE(std::any_of(got.result.notes.begin(), got.result.notes.end(), [](const std::string& n) {
    return n ==
           "namespace clustermax holds daemonset clustermax-20261201-0300-ab12 of another run (created "
           "2026-12-01T03:00:00Z): remove it with kubectl delete daemonset -n clustermax "
           "clustermax-20261201-0300-ab12 unless that run is still going";
  })) << fmt::format("{}", fmt::join(got.result.notes, "\n"));
  EXPECT_NE(got.unreachable["gpu-h100-01"].find("evicted: The node was low on resource: ephemeral-storage"),
            std::string::npos)
      << got.unreachable["gpu-h100-01"];
  EXPECT_NE(got.unreachable["gpu-h100-02"].find("collect failed: exit 70, restarted (CrashLoopBackOff)"),
            std::string::npos)
      << got.unreachable["gpu-h100-02"];
  EXPECT_NE(got.unreachable["gpu-h100-03"].find("no pod was created on the node (FailedCreate: Error creating"),
            std::string::npos)
      << got.unreachable["gpu-h100-03"];
  auto created = s.Created();
  EXPECT_EQ(created.size(), 2u);
  EXPECT_TRUE(created.count("/api/v1/namespaces/clustermax"));  // not ours: kept
  EXPECT_TRUE(created.count("/apis/apps/v1/namespaces/clustermax/daemonsets/clustermax-20261201-0300-ab12"));
  EXPECT_FALSE(Logged(s.Requests(), "DELETE /api/v1/namespaces/clustermax"));

  // Still collecting when the fan-out's time is up.
  s.SetNodePod("gpu-h100-01", F::kCollecting);
  auto o = FanOutOptions();
  o.timeout_s = 1;
  o.nodes = 1;
  Collected late = FanOut(o);
  EXPECT_EQ(late.result.in_scope, std::vector<std::string>{"gpu-h100-01"});
  EXPECT_NE(late.unreachable["gpu-h100-01"].find("timed out (1 s): still collecting"), std::string::npos)
      << late.unreachable["gpu-h100-01"];
  EXPECT_EQ(s.Created().size(), 2u);
}

// Ctrl-C while the pods collect: the loop stops, the objects are deleted, every node says why.
// --keep leaves them, and says how to remove them.
TEST(K8sFanOut, CtrlCCleansUpAndKeepLeavesThem) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  auto& s = c.server();
  std::thread ctrl_c([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
    util::CancelFlag().store(true);
  });
  Collected got = FanOut(FanOutOptions());
  ctrl_c.join();
  EXPECT_FALSE(util::Cancelled());  // the scope restored the handlers and the flag
  ASSERT_EQ(got.unreachable.size(), 3u);
  for (const auto& [node, why] : got.unreachable) EXPECT_TRUE(why.starts_with("interrupted (Ctrl-C)")) << why;
  EXPECT_TRUE(s.Created().empty());

  auto o = FanOutOptions();
  o.keep = true;
  o.timeout_s = 1;
  size_t before = s.Requests().size();
  Collected kept = FanOut(o);
  EXPECT_EQ(s.Created().size(), 2u);  // the namespace and the DaemonSet
  auto log = s.Requests();
  for (size_t i = before; i < log.size(); ++i) EXPECT_FALSE(log[i].starts_with("DELETE")) << log[i];
  ASSERT_FALSE(kept.result.notes.empty());
  EXPECT_NE(kept.result.notes.back().find("kept (--keep)"), std::string::npos) << kept.result.notes.back();
}

// A DaemonSet the API refuses: nothing collected, the reason on every node, the namespace made for
// it deleted; without an image, the nodes are listed and nothing is created.
TEST(K8sFanOut, RefusedOrWithoutImageCreatesNothingThatStays) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  auto& s = c.server();
  s.Forbid("/apis/apps/v1/namespaces/clustermax/daemonsets");
  Collected got = FanOut(FanOutOptions());
  ASSERT_EQ(got.unreachable.size(), 3u);
  EXPECT_NE(got.unreachable["gpu-h100-01"].find("not collected: cannot create the DaemonSet in namespace clustermax"),
            std::string::npos)
      << got.unreachable["gpu-h100-01"];
  EXPECT_NE(got.unreachable["gpu-h100-01"].find("Forbidden"), std::string::npos) << got.unreachable["gpu-h100-01"];
  EXPECT_TRUE(s.Created().empty());

  // A namespace still being deleted (an earlier run's): said so, nothing created in it.
  s.Put("/api/v1/namespaces/clustermax", {{"apiVersion", "v1"},
                                          {"kind", "Namespace"},
                                          {"metadata", {{"name", "clustermax"}}},
                                          {"status", {{"phase", "Terminating"}}}});
  Collected terminating = FanOut(FanOutOptions());
  EXPECT_NE(terminating.unreachable["gpu-h100-02"].find("namespace clustermax is being deleted"), std::string::npos)
      << terminating.unreachable["gpu-h100-02"];
  EXPECT_EQ(s.Created().size(), 1u);

  auto before = s.Requests().size();
  auto o = FanOutOptions();
  o.image.clear();
  Collected listed = FanOut(o);
  EXPECT_EQ(listed.unreachable.size(), 3u);
  EXPECT_NE(listed.unreachable["gpu-h100-02"].find("no --k8s-image"), std::string::npos);
  auto log = s.Requests();
  for (size_t i = before; i < log.size(); ++i)
    EXPECT_FALSE(log[i].starts_with("POST") || log[i].starts_with("DELETE")) << log[i];  // nothing created
  EXPECT_TRUE(Logged(log, "GET /api/v1/nodes?"));
}

// Pod objects captured on real clusters (tests/fixtures/k8s/pods/, sources in SOURCES.md there),
// each read to the state the fan-out acts on. The fan-out reads the status of its own init
// container ("collect"): a captured container status is put there under that name, as it is.
// The GPU pod probe's readers on objects and kubelet messages captured on real clusters
// (tests/fixtures/k8s/pods/, sources in SOURCES.md there), with one fact flipped at a time.
TEST(K8sObjects, ProbePodAndPullTimes) {
  auto pod = [](const char* name) { return json::parse(ReadFixture(std::string("k8s/pods/") + name + ".json")); };
  json started = collect::k8s::ProbePod(pod("pod-started"));
  EXPECT_EQ(started["created"], "2022-02-17T21:51:01Z");
  EXPECT_EQ(started["scheduled"], "2022-02-17T21:51:01Z");
  EXPECT_EQ(started["state"], "running");
  EXPECT_EQ(started["started"], "2022-02-17T21:51:05Z");
  EXPECT_EQ(started["exit_code"], -1);
  json unscheduled = collect::k8s::ProbePod(pod("pending-unschedulable"));
  EXPECT_EQ(unscheduled["scheduled"], "");
  EXPECT_EQ(unscheduled["unscheduled_reason"], "Unschedulable");
  EXPECT_TRUE(unscheduled["message"].get<std::string>().starts_with("0/5 nodes are available: 1 Insufficient cpu"));
  json backoff = collect::k8s::ProbePod(pod("image-pull-backoff"));
  EXPECT_EQ(backoff["state"], "waiting");
  EXPECT_EQ(backoff["state_reason"], "ImagePullBackOff");
  EXPECT_EQ(backoff["started"], "");
  // Mutations: PodScheduled False, the container terminated with an exit code, a kubelet rejection.
  json p = pod("pod-started");
  for (auto& c : p["status"]["conditions"])
    if (c["type"] == "PodScheduled") c["status"] = "False";
  EXPECT_EQ(collect::k8s::ProbePod(p)["scheduled"], "");
  p = pod("pod-started");
  p["status"]["containerStatuses"][0]["state"] = {
      {"terminated", {{"exitCode", 128}, {"reason", "StartError"}, {"startedAt", "1970-01-01T00:00:00Z"}}}};
  EXPECT_EQ(collect::k8s::ProbePod(p)["exit_code"], 128);
  EXPECT_EQ(collect::k8s::ProbePod(p)["state_reason"], "StartError");
  p = pod("pod-started");
  p["status"] = {{"phase", "Failed"}, {"reason", "UnexpectedAdmissionError"}, {"message", "Allocate failed"}};
  EXPECT_EQ(collect::k8s::ProbePod(p)["state_reason"], "UnexpectedAdmissionError");
  EXPECT_TRUE(collect::k8s::ProbePod(json("not a pod")).is_object());

  // Every captured Pulled message reads: the pull's own time (not the "including waiting" one),
  // 0 for an image already present.
  std::vector<double> want = {0.370157088, 0.090980331, 1.146417389, 0.31552429, 0, 0, 0, 0};
  std::istringstream lines(ReadFixture("k8s/pods/pulled-messages.txt"));
  std::string line;
  size_t i = 0;
  for (; std::getline(lines, line); ++i) {
    std::string message = line.substr(0, line.find('\t'));
    auto seconds = collect::k8s::PullSeconds(message);
    ASSERT_TRUE(seconds.has_value()) << message;
    ASSERT_LT(i, want.size());
    EXPECT_NEAR(*seconds, want[i], 1e-9) << message;
  }
  EXPECT_EQ(i, want.size());
  // The newest kubelet's form (pkg/kubelet/images/image_manager.go), describe's field-path prefix.
  EXPECT_NEAR(*collect::k8s::PullSeconds("Successfully pulled image \"g1g1/py-kube\" in 15.981s (15.981s including "
                                         "waiting). Image size: 129338587 bytes."),
              15.981, 1e-9);
  EXPECT_EQ(collect::k8s::PullSeconds("spec.containers{app}: Container image \"busybox:1.36\" already present on "
                                      "machine"),
            0.0);
  for (const char* bad : {"Pulling image \"nginx\"", "Successfully pulled image \"nginx\" in soon",
                          "Successfully pulled image \"nginx\" in 1.2.3s", ""})
    EXPECT_FALSE(collect::k8s::PullSeconds(bad).has_value()) << bad;
  EXPECT_NEAR(*collect::k8s::GoDurationSeconds("1m2.5s"), 62.5, 1e-9);
  EXPECT_NEAR(*collect::k8s::GoDurationSeconds("1h0m0s"), 3600, 1e-9);
  EXPECT_NEAR(*collect::k8s::GoDurationSeconds("350\xc2\xb5s"), 350e-6, 1e-12);
  EXPECT_FALSE(collect::k8s::GoDurationSeconds("12").has_value());
  EXPECT_FALSE(collect::k8s::GoDurationSeconds("-1s").has_value());
}

TEST(K8sFanOut, ReadsPodStates) {
  using S = audit::FanOutPod::State;
  auto pod = [](const char* name) { return json::parse(ReadFixture(std::string("k8s/pods/") + name + ".json")); };
  auto ours = [](json p, const char* list) {  // the first status of `list` as our collect container's
    json c = p["status"][list][0];
    c["name"] = "collect";
    p["status"]["initContainerStatuses"] = json::array({c});
    p["spec"]["nodeName"] = "gpu-7";
    return p;
  };
  auto p = audit::ReadFanOutPod(pod("pending-unschedulable"));
  EXPECT_EQ(p.state, S::kStuck);
  EXPECT_TRUE(p.reason.starts_with("Pending (Unschedulable): 0/5 nodes are available: 1 Insufficient cpu")) << p.reason;
  p = audit::ReadFanOutPod(pod("evicted"));
  EXPECT_EQ(p.state, S::kStuck);
  EXPECT_TRUE(p.reason.starts_with("evicted: The node was low on resource: memory")) << p.reason;
  p = audit::ReadFanOutPod(ours(pod("image-pull-backoff"), "containerStatuses"));
  EXPECT_EQ(p.state, S::kStuck);
  EXPECT_TRUE(p.reason.starts_with("image pull failed (ImagePullBackOff): Back-off pulling image")) << p.reason;
  p = audit::ReadFanOutPod(ours(pod("crashloop-init"), "initContainerStatuses"));
  EXPECT_EQ(p.state, S::kStuck);
  EXPECT_EQ(p.reason, "collect failed: exit 2, restarted (CrashLoopBackOff)");
  json done = ours(pod("init-completed"), "initContainerStatuses");
  p = audit::ReadFanOutPod(done);
  EXPECT_EQ(p.state, S::kCollected) << p.reason;
  EXPECT_EQ(p.node, "gpu-7");
  // As captured, the statuses are another container's: not ours, so not collected.
  EXPECT_NE(audit::ReadFanOutPod(pod("init-completed")).state, S::kCollected);
  // Mutations: the init container's exit code, a waiting reason, the unscheduled pod's pin.
  json failed = done;
  failed["status"]["initContainerStatuses"][0]["state"] = {{"terminated", {{"exitCode", 2}, {"reason", "Error"}}}};
  p = audit::ReadFanOutPod(failed);
  EXPECT_EQ(p.state, S::kStuck);
  EXPECT_EQ(p.reason, "collect exited 2 (Error)");
  json pulling = done;
  pulling["status"]["initContainerStatuses"][0]["state"] = {{"waiting", {{"reason", "PodInitializing"}}}};
  EXPECT_EQ(audit::ReadFanOutPod(pulling).state, S::kStarting);
  json pinned = pod("pending-unschedulable");
  pinned["spec"]["affinity"] = {
      {"nodeAffinity",
       {{"requiredDuringSchedulingIgnoredDuringExecution",
         {{"nodeSelectorTerms",
           {{{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", {"gpu-9"}}}}}}}}}}}}};
  EXPECT_EQ(audit::ReadFanOutPod(pinned).node, "gpu-9");  // not scheduled: the DaemonSet's pin names it
  // Hostile: not an object, wrong types everywhere.
  for (const char* text : {"null", "[]", "{\"status\":7}", "{\"status\":{\"initContainerStatuses\":\"x\"}}",
                           "{\"spec\":{\"affinity\":[]},\"status\":{\"phase\":5}}"}) {
    p = audit::ReadFanOutPod(json::parse(text));
    EXPECT_EQ(p.state, S::kStarting) << text;
  }
}

// A node's bundle is named by the node the scheduler ran it on, whatever its manifest says: one
// node cannot report as another.
TEST(K8sFanOut, ABundleCannotNameItselfAnotherNode) {
  std::map<std::string, std::string> errors;
  auto docs = audit::BundleDocuments(CollectLog("gpu-h100-01"), errors);
  ASSERT_EQ(docs.count("gpu-h100-01"), 1u);
  host::Bundle b;
  std::string text, error;
  ASSERT_TRUE(audit::ReadNodeDocument("gpu-h100-03", docs["gpu-h100-01"], b, text, error)) << error;
  EXPECT_EQ(b.manifest.hostname, "gpu-h100-03");
  EXPECT_EQ(host::Bundle::Parse(text).manifest.hostname, "gpu-h100-03");  // the text a run directory keeps
  EXPECT_FALSE(audit::ReadNodeDocument("gpu-h100-03", "z1:not base64!", b, text, error));
  EXPECT_TRUE(error.starts_with("bundle unreadable")) << error;
}

// The operator's command: `audit --k8s --yes --k8s-image IMAGE` grades the cluster rows from the
// API and the node rows on every GPU node through the DaemonSet ("3 of 3"), saves each node's bundle
// in the run directory, and leaves nothing in the cluster.
TEST(K8sAudit, CliFansOutOverEveryGpuNode) {
  ASSERT_TRUE(HaveKubectl());
  Cluster c("gpu-operator");
  auto& s = c.server();
  using F = testing_server::KubeApiServer::PodFate;
  for (const char* n : {"gpu-h100-01", "gpu-h100-02", "gpu-h100-03"}) s.SetNodePod(n, F::kCollected, CollectLog(n));
  auto out = c.dir() / "run";
  auto r = clustermax::testing::RunBinary(
      fmt::format("audit --k8s --yes --k8s-image registry.example/clustermax:1 --out {} --exit-zero --fleet-timeout 60",
                  out.string()),
      fmt::format("KUBECONFIG={} KUBECACHEDIR={}", (c.dir() / "kubeconfig").string(), (c.dir() / "cache").string()));
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("3 of 3 nodes returned evidence"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deleted daemonset clustermax-"), std::string::npos) << r.out;
  EXPECT_TRUE(s.Created().empty());
  json report = json::parse(util::ReadLocalFile(out / "report.json").value_or("{}"));
  EXPECT_EQ(report["fleet"]["nodes_returned"], 3);
  EXPECT_EQ(report["fleet"]["nodes_expected"], 3);
  std::map<std::string, json> rows;
  for (const auto& x : report["results"]) rows[x["id"]] = x;
  // A node check judged on the three nodes, a cluster check once.
  EXPECT_EQ(rows["kubelet-cpu-manager-static"]["nodes_total"], 3) << rows["kubelet-cpu-manager-static"].dump();
  EXPECT_EQ(rows["gpu-operator"]["nodes_total"], 1);
  for (const char* n : {"gpu-h100-01", "gpu-h100-02", "gpu-h100-03"})
    EXPECT_TRUE(std::filesystem::exists(out / "evidence" / (std::string(n) + ".json"))) << n;
}
