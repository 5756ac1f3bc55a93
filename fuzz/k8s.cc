// Kubernetes API answers (collect/k8s_objects.h, audit/k8s_fanout.h): one page of a list, kubectl's
// error text, every object reducer and the fan-out's reading of a pod, on any text. A page that
// parses holds only objects; every reducer gives an object whatever the item; a pod is read to one
// of the states without throwing.
#include <string>

#include <nlohmann/json.hpp>

#include "audit/k8s_fanout.h"
#include "collect/k8s_objects.h"
#include "fuzz_common.h"

using namespace clustermax;
using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view t = fuzz::AsText(data, size);
  namespace k8s = collect::k8s;
  k8s::ErrorReason(t);
  // Event messages and Go durations: a number when read, never negative.
  for (auto v : {k8s::PullSeconds(t), k8s::GoDurationSeconds(t)})
    if (v && !(*v >= 0)) __builtin_trap();
  std::string error;
  auto page = k8s::ParseListPage(t, &error);
  if (!page && error.empty()) __builtin_trap();  // a refusal says why
  json doc = json::parse(t, nullptr, false);
  std::vector<json> items;
  if (page) items = page->items;
  if (!doc.is_discarded()) items.push_back(doc);
  for (const auto& item : items) {
    for (json out : {k8s::Node(item), k8s::Workload(item, "DaemonSet"), k8s::Workload(item, "Deployment"),
                     k8s::Pod(item), k8s::Namespace(item), k8s::StorageClass(item), k8s::Claim(item),
                     k8s::Service(item), k8s::IngressClass(item), k8s::GatewayClass(item), k8s::ApiService(item),
                     k8s::StatefulResource(item), k8s::KueueTopology(item), k8s::ResourceFlavor(item),
                     k8s::HyperNode(item), k8s::ComputeDomain(item), k8s::PrometheusRule(item), k8s::ProbePod(item)}) {
      if (!out.is_object()) __builtin_trap();
      out.dump(-1, ' ', true, json::error_handler_t::strict);  // valid UTF-8 out, whatever came in
    }
    k8s::NodesProxyVerbs(item);
    k8s::Subjects(item);
    auto pod = audit::ReadFanOutPod(item);
    json({{"name", pod.name}, {"node", pod.node}, {"reason", pod.reason}})
        .dump(-1, ' ', true, json::error_handler_t::strict);
  }
  return 0;
}
