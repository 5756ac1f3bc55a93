#include "audit/k8s_fanout.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "collect/k8s_objects.h"
#include "collect/kubectl.h"
#include "util/cancel.h"
#include "util/files.h"
#include "util/progress.h"
#include "util/k8s_names.h"
#include "util/strings.h"
#include "util/time.h"
#include "util/url.h"
#include "util/work_queue.h"

namespace clustermax::audit {
using nlohmann::json;
namespace fs = std::filesystem;

namespace {
using Clock = std::chrono::steady_clock;

constexpr const char* kManagedBy = "app.kubernetes.io/managed-by";
constexpr const char* kRunLabel = "clustermax.io/run";
constexpr const char* kCollectContainer = "collect";
constexpr const char* kHostRoot = "/host";

// `j` when it is an array, else an empty one (an lvalue either way: no copy, nothing dangles).
const json& Items(const json& j) {
  static const json kEmpty = json::array();
  return j.is_array() ? j : kEmpty;
}
using collect::k8s::At;
using collect::k8s::Str;

// kubectl through the host, every call bounded.
struct Answer {
  bool ok = false;
  std::string body;    // stdout
  std::string reason;  // the API's reason on failure ("Forbidden", "AlreadyExists" ...)
  std::string error;   // one line for the operator
};

class Kube {
 public:
  Kube(host::Host& h, std::string context) : h_(h), context_(std::move(context)) {}

  Answer Call(const std::vector<std::string>& args, const std::string& what) {
    host::CommandSpec spec{collect::k8s::KubectlArgv(context_, kCallSeconds, args), std::chrono::seconds(kCallSeconds),
                           64u << 20, /*redact=*/false};
    auto r = h_.Run(spec);
    Answer a;
    if (r.status != host::IoStatus::kOk) {
      a.error = fmt::format("{}: {}", what, r.error.empty() ? "kubectl did not answer" : r.error);
      return a;
    }
    if (r.exit_code != 0) {
      a.reason = collect::k8s::ErrorReason(r.err);
      a.error = fmt::format("{}: {}", what, util::Ellipsize(util::Trim(r.err), 300));
      return a;
    }
    if (r.truncated) {
      a.error = what + ": the answer is larger than 64 MiB";
      return a;
    }
    a.ok = true;
    a.body = std::move(r.out);
    return a;
  }
  Answer Get(const std::string& path) { return Call({"get", "--raw", path}, "GET " + path); }
  Answer Delete(const std::string& path) { return Call({"delete", "--raw", path}, "DELETE " + path); }
  // POST of `object` (written to a private file: kubectl reads the body from a file).
  Answer Create(const std::string& path, const json& object) {
    fs::path dir = util::MakePrivateTempDir(fs::temp_directory_path(), "clustermax-k8s-");
    fs::path file = dir / "object.json";
    util::WriteFileAtomic(file, object.dump());
    Answer a = Call({"create", "--raw", path, "-f", file.string()}, "POST " + path);
    std::error_code ec;
    fs::remove_all(dir, ec);
    return a;
  }
  // Every item of a list (`query` without limit/continue), page by page.
  bool List(const std::string& path, const std::string& query, const std::function<void(const json&)>& each,
            std::string* error) {
    auto r = collect::k8s::ListAll(
        path, query, 250, 400,
        [&](const std::string& url) -> std::optional<std::string> {
          Answer a = Get(url);
          if (!a.ok) {
            *error = a.error;
            return std::nullopt;
          }
          return std::move(a.body);
        },
        each);
    if (r.outcome != collect::k8s::ListResult::kRequestFailed && !r.error.empty()) *error = r.error;
    return r.outcome == collect::k8s::ListResult::kOk;
  }

 private:
  static constexpr long long kCallSeconds = 30;
  host::Host& h_;
  std::string context_;
};

std::string NewRunId() {
  std::random_device rd;
  auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  return fmt::format("clustermax-{:04}{:02}{:02}-{:02}{:02}{:02}-{:04x}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, rd() & 0xffff);
}

K8sNode ReadNode(const json& n) {
  K8sNode k;
  k.name = Str(n, {"metadata", "name"});
  const json& conds = At(n, {"status", "conditions"});
  k.not_ready = "no Ready condition";
  if (conds.is_array()) {
    for (const auto& c : conds) {
      if (Str(c, {"type"}) != "Ready") continue;
      std::string status = Str(c, {"status"}), message = Str(c, {"message"});
      k.ready = status == "True";
      k.not_ready = k.ready ? ""
                            : fmt::format("Ready={}{}", status.empty() ? "?" : status,
                                          message.empty() ? "" : ": " + util::Ellipsize(message, 200));
    }
  }
  const json& alloc = At(n, {"status", "allocatable"});
  for (const auto& r : util::k8s::GpuResources()) {
    if (alloc.is_object() && alloc.contains(r) && alloc[r].is_string()) {
      try {
        k.gpus[r] = std::stoll(alloc[r].get<std::string>());
      } catch (...) {
      }
    }
  }
  return k;
}

// A GPU node by its allocatable GPUs, or by its GPU labels (a node whose device plugin is broken
// offers none, and is the one to look at): the same labels the cluster checks count.
bool IsGpuNode(const json& n, const K8sNode& k) {
  for (const auto& [r, count] : k.gpus)
    if (count > 0) return true;
  return util::k8s::GpuLabelled(At(n, {"metadata", "labels"}));
}

// The collect container runs as root (the node's files are root's) with one capability, to enter
// the node's root; the idle container runs as nobody with none. (No DAC_READ_SEARCH: with the
// default seccomp profile it would allow open_by_handle_at, a way out of the container.)
json SecurityContext(bool collect) {
  json caps = {{"drop", {"ALL"}}};
  if (collect) caps["add"] = {"SYS_CHROOT"};
  return {{"privileged", false},
          {"allowPrivilegeEscalation", false},
          {"readOnlyRootFilesystem", true},
          {"runAsUser", collect ? 0 : 65534},
          {"runAsGroup", collect ? 0 : 65534},
          {"runAsNonRoot", !collect},
          {"capabilities", caps},
          {"seccompProfile", {{"type", "RuntimeDefault"}}}};
}

}  // namespace

json FanOutDaemonSet(const K8sFanOutOptions& o, const std::string& run_id, const std::vector<std::string>& targets,
                     const std::string& gpu_resource, int gpus) {
  json labels = {{kManagedBy, "clustermax"}, {kRunLabel, run_id}};
  std::vector<std::string> args = {"collect", "--role=compute", std::string("--host-root=") + kHostRoot,
                                   fmt::format("--step-gpus={}", gpus)};
  args.insert(args.end(), o.collect_args.begin(), o.collect_args.end());
  json collect = {
      {"name", kCollectContainer},
      {"image", o.image},
      {"imagePullPolicy", "IfNotPresent"},
      {"command", {o.binary}},
      {"args", args},
      {"env", {{{"name", "CLUSTERMAX_NODE_NAME"}, {"valueFrom", {{"fieldRef", {{"fieldPath", "spec.nodeName"}}}}}}}},
      {"resources", {{"requests", {{"cpu", "100m"}, {"memory", "128Mi"}}}, {"limits", {{"memory", "4Gi"}}}}},
      {"securityContext", SecurityContext(true)},
      // Read-only all the way down where the node supports it (Kubernetes 1.30+): /host/proc/sys,
      // /host/run and the other mounts below /host too.
      {"volumeMounts",
       {{{"name", "host"}, {"mountPath", kHostRoot}, {"readOnly", true}, {"recursiveReadOnly", "IfPossible"}},
        {{"name", "tmp"}, {"mountPath", "/tmp"}}}}};
  if (gpus > 0 && !gpu_resource.empty()) collect["resources"]["limits"][gpu_resource] = std::to_string(gpus);
  json hold = {{"name", "hold"},
               {"image", o.image},
               {"imagePullPolicy", "IfNotPresent"},
               {"command", {o.binary}},
               {"args", {"hold"}},
               {"resources", {{"requests", {{"cpu", "1m"}, {"memory", "8Mi"}}}, {"limits", {{"memory", "64Mi"}}}}},
               {"securityContext", SecurityContext(false)}};
  json pin = {{"requiredDuringSchedulingIgnoredDuringExecution",
               {{"nodeSelectorTerms",
                 {{{"matchFields", {{{"key", "metadata.name"}, {"operator", "In"}, {"values", targets}}}}}}}}}};
  json spec = {{"affinity", {{"nodeAffinity", pin}}},
               {"tolerations", util::k8s::GpuTolerations(true)},
               {"hostPID", true},
               {"hostNetwork", true},
               {"dnsPolicy", "ClusterFirstWithHostNet"},
               {"automountServiceAccountToken", false},
               {"enableServiceLinks", false},
               {"terminationGracePeriodSeconds", 1},
               {"initContainers", {collect}},
               {"containers", {hold}},
               {"volumes",
                {{{"name", "host"}, {"hostPath", {{"path", "/"}, {"type", "Directory"}}}},
                 {{"name", "tmp"}, {"emptyDir", {{"medium", "Memory"}, {"sizeLimit", "64Mi"}}}}}}};
  return {{"apiVersion", "apps/v1"},
          {"kind", "DaemonSet"},
          {"metadata", {{"name", run_id}, {"namespace", o.ns}, {"labels", labels}}},
          {"spec",
           {{"selector", {{"matchLabels", {{kRunLabel, run_id}}}}},
            {"template", {{"metadata", {{"labels", labels}}}, {"spec", spec}}}}}};
}

FanOutPod ReadFanOutPod(const json& pod) {
  FanOutPod p;
  using S = FanOutPod::State;
  p.name = Str(pod, {"metadata", "name"});
  p.node = Str(pod, {"spec", "nodeName"});
  if (p.node.empty()) {
    // Not scheduled yet: the DaemonSet controller pins each pod to its node by a matchFields term.
    const json& terms = At(pod, {"spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                                 "nodeSelectorTerms"});
    for (const auto& t : Items(terms)) {
      for (const auto& f : Items(At(t, {"matchFields"}))) {
        if (Str(f, {"key"}) == "metadata.name" && At(f, {"values"}).is_array() && f["values"].size() == 1 &&
            f["values"][0].is_string())
          p.node = util::SanitizeUtf8(f["values"][0].get<std::string>());
      }
    }
  }
  std::string phase = Str(pod, {"status", "phase"});
  if (phase == "Failed") {
    std::string reason = Str(pod, {"status", "reason"}), message = Str(pod, {"status", "message"});
    p.state = S::kStuck;
    p.reason = fmt::format("{}{}",
                           reason == "Evicted" ? "evicted" : "pod failed" + (reason.empty() ? "" : " (" + reason + ")"),
                           message.empty() ? "" : ": " + util::Ellipsize(message, 300));
    return p;
  }
  const json* status = nullptr;
  const json& inits = At(pod, {"status", "initContainerStatuses"});
  for (const auto& c : Items(inits))
    if (Str(c, {"name"}) == kCollectContainer) status = &c;
  if (!status) {
    const json& conds = At(pod, {"status", "conditions"});
    for (const auto& c : Items(conds)) {
      if (Str(c, {"type"}) == "PodScheduled" && Str(c, {"status"}) == "False") {
        p.state = S::kStuck;
        std::string reason = Str(c, {"reason"}), message = Str(c, {"message"});
        p.reason = fmt::format("Pending{}{}", reason.empty() ? "" : " (" + reason + ")",
                               message.empty() ? "" : ": " + util::Ellipsize(message, 300));
        return p;
      }
    }
    p.reason = phase.empty() ? "no status yet" : phase;
    return p;
  }
  const json& state = At(*status, {"state"});
  if (At(state, {"terminated"}).is_object()) {
    const json& t = state["terminated"];
    long long code = At(t, {"exitCode"}).is_number_integer() ? t["exitCode"].get<long long>() : -1;
    if (code == 0) {
      p.state = S::kCollected;
      return p;
    }
    p.state = S::kStuck;
    p.reason =
        fmt::format("collect exited {}{}", code, Str(t, {"reason"}).empty() ? "" : " (" + Str(t, {"reason"}) + ")");
    return p;
  }
  if (At(state, {"running"}).is_object()) {
    p.state = S::kCollecting;
    p.reason = "collecting";
    return p;
  }
  std::string reason = Str(state, {"waiting", "reason"}), message = Str(state, {"waiting", "message"});
  std::string detail = message.empty() ? "" : ": " + util::Ellipsize(message, 300);
  if (reason.empty() || reason == "PodInitializing" || reason == "ContainerCreating") {
    p.reason = reason.empty() ? "waiting" : reason;  // pulling the image, mounting: progress
    return p;
  }
  p.state = S::kStuck;
  if (reason == "ErrImagePull" || reason == "ImagePullBackOff" || reason == "InvalidImageName" ||
      reason == "ErrImageNeverPull") {
    p.reason = fmt::format("image pull failed ({}){}", reason, detail);
  } else if (reason == "CrashLoopBackOff") {
    const json& last = At(*status, {"lastState", "terminated"});
    long long code = At(last, {"exitCode"}).is_number_integer() ? last["exitCode"].get<long long>() : -1;
    p.reason = fmt::format("collect failed: exit {}, restarted (CrashLoopBackOff)", code);
  } else {
    p.reason = reason + detail;
  }
  return p;
}

FanOutResult FanOutThroughKubernetes(host::Host& h, const K8sFanOutOptions& o, const BundleStream& stream) {
  auto t0 = Clock::now();
  FanOutResult res;
  Kube kube(h, o.context);
  const std::string run = o.run_id.empty() ? NewRunId() : o.run_id;

  // 1. The nodes: the selected ones, or the GPU nodes, or every node.
  std::vector<std::pair<K8sNode, bool>> all;  // node, GPU node
  std::string error;
  std::string selector = o.node_selector.empty() ? "" : "labelSelector=" + util::PercentEncode(o.node_selector);
  if (!kube.List(
          "/api/v1/nodes", selector,
          [&](const json& n) {
            K8sNode k = ReadNode(n);
            if (!k.name.empty()) all.emplace_back(k, IsGpuNode(n, k));
          },
          &error))
    throw std::runtime_error("cannot list the nodes: " + error);
  bool any_gpu = std::any_of(all.begin(), all.end(), [](const auto& n) { return n.second; });
  std::vector<K8sNode> scope;
  for (auto& [k, gpu] : all) {
    if (!o.node_selector.empty() || !any_gpu || gpu) scope.push_back(k);
  }
  std::sort(scope.begin(), scope.end(), [](const K8sNode& a, const K8sNode& b) { return a.name < b.name; });
  if (o.nodes > 0 && scope.size() > static_cast<size_t>(o.nodes)) scope.resize(o.nodes);
  std::vector<std::string> targets;
  std::map<std::string, long long> fewest;  // GPU resource -> the fewest any target offers
  for (const auto& k : scope) {
    res.in_scope.push_back(k.name);
    if (!k.ready) {
      res.unreachable.push_back({k.name, "node not ready (" + k.not_ready + ")"});
      continue;
    }
    targets.push_back(k.name);
    for (const auto& r : util::k8s::GpuResources()) {
      long long c = k.gpus.count(r) ? k.gpus.at(r) : 0;
      if (c > 0) fewest[r] = fewest.count(r) ? std::min(fewest[r], c) : c;
    }
  }
  // One request for every pod: the fewest GPUs a node offers, among the nodes that offer any (a
  // node offering none, its device plugin down, stays Pending for them and is reported so).
  std::string gpu_resource;
  for (const auto& r : util::k8s::GpuResources()) {
    if (fewest.count(r) && gpu_resource.empty()) gpu_resource = r;
  }
  res.gpus_per_node = gpu_resource.empty() ? 0 : o.gpus >= 0 ? o.gpus : static_cast<int>(fewest[gpu_resource]);
  if (res.gpus_per_node > 0) {
    std::vector<std::string> none, more;
    for (const auto& k : scope) {
      long long c = k.gpus.count(gpu_resource) ? k.gpus.at(gpu_resource) : 0;
      if (!k.ready) continue;
      if (c == 0) none.push_back(k.name);
      if (c > res.gpus_per_node) more.push_back(k.name);
    }
    if (!none.empty())
      res.notes.push_back(
          fmt::format("{} node(s) offer no {} (a device plugin down?), so their pods stay Pending: {}; "
                      "--k8s-gpus 0 collects them without GPU access",
                      none.size(), gpu_resource, util::Ellipsize(fmt::format("{}", fmt::join(none, ", ")), 200)));
    if (!more.empty())
      res.notes.push_back(
          fmt::format("{} node(s) offer more than the {} {} each pod asks for (one request for every "
                      "pod): their other GPUs are not seen",
                      more.size(), res.gpus_per_node, gpu_resource));
  } else if (o.gpus > 0) {
    res.notes.push_back(
        fmt::format("--k8s-gpus {}: no node offers nvidia.com/gpu or amd.com/gpu; the pods ask for none", o.gpus));
  }
  if (stream.on_targets) stream.on_targets(targets);
  // Every target not collected, for one reason (no image, the DaemonSet refused).
  auto finish = [&] {  // the nodes not collected in the order of the scope
    res.SortUnreachableByScope();
    res.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  };
  auto none = [&](const std::string& why) {
    for (const auto& t : targets) res.unreachable.push_back({t, "not collected: " + why});
    res.srun_error = why;
    finish();
  };
  if (targets.empty()) {
    finish();
    return res;
  }
  if (o.image.empty()) {
    none("no --k8s-image named (the node pods run clustermax from an image you name; docs/kubernetes.md)");
    return res;
  }

  // 2. Our namespace (created unless it exists) and the DaemonSet; removed whatever happens next.
  util::CancelScope cancel;
  bool made_namespace = false, made_daemonset = false;
  const std::string ds_path = fmt::format("/apis/apps/v1/namespaces/{}/daemonsets", o.ns);
  auto cleanup = [&] {
    if (o.keep) {
      if (made_daemonset || made_namespace)
        res.notes.push_back(fmt::format(
            "kept (--keep): {}; remove with: kubectl delete {}",
            made_daemonset ? fmt::format("daemonset {} in namespace {}{}", run, o.ns,
                                         made_namespace ? " (created by this run)" : "")
                           : "namespace " + o.ns + " (created by this run)",
            made_namespace ? "namespace " + o.ns : fmt::format("daemonset -n {} -l {}={}", o.ns, kRunLabel, run)));
      return;
    }
    if (made_daemonset) {
      Answer a = kube.Delete(fmt::format("{}/{}?propagationPolicy=Background", ds_path, run));
      res.notes.push_back(a.ok || a.reason == "NotFound"
                              ? fmt::format("deleted daemonset {} (its pods go with it)", run)
                              : "could not delete the daemonset: " + a.error);
    }
    if (made_namespace) {
      Answer a = kube.Delete("/api/v1/namespaces/" + o.ns);
      res.notes.push_back(a.ok || a.reason == "NotFound" ? "deleted namespace " + o.ns
                                                         : "could not delete the namespace: " + a.error);
    }
  };
  struct Guard {
    std::function<void()> fn;
    ~Guard() {
      try {
        fn();
      } catch (...) {
      }
    }
  } guard{cleanup};

  json ns = {{"apiVersion", "v1"},
             {"kind", "Namespace"},
             {"metadata",
              {{"name", o.ns},
               {"labels",
                {{kManagedBy, "clustermax"},
                 {kRunLabel, run},
                 // The node pods mount the host's root (hostPath), which only the privileged level admits.
                 {"pod-security.kubernetes.io/enforce", "privileged"}}}}}};
  Answer made = kube.Create("/api/v1/namespaces", ns);
  Answer existing;
  if (made.ok) {
    made_namespace = true;
  } else if ((existing = kube.Get("/api/v1/namespaces/" + o.ns)).ok &&
             Str(json::parse(existing.body, nullptr, false), {"status", "phase"}) == "Terminating") {
    none(
        fmt::format("namespace {} is being deleted (an earlier run's?): wait until it is gone, or name another "
                    "with --k8s-namespace",
                    o.ns));
    return res;
  } else if (!existing.ok) {
    none(
        fmt::format("cannot create the namespace {} (a right to create namespaces is needed, or name an existing "
                    "one with --k8s-namespace): {}",
                    o.ns, made.error));
    return res;
  }
  if (!made_namespace) {
    // A namespace that was already there may hold an earlier run's DaemonSet (a run killed without
    // its cleanup, or another operator's run now): named with its age and how to remove it, left
    // alone (it may be a run in progress).
    Answer others = kube.Get(ds_path + "?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dclustermax");
    json list = others.ok ? json::parse(others.body, nullptr, false) : json();
    for (const auto& d : Items(At(list, {"items"}))) {
      std::string name = Str(d, {"metadata", "name"});
      if (name.empty() || name == run) continue;
      auto created = util::ParseRfc3339(Str(d, {"metadata", "creationTimestamp"}));
      res.notes.push_back(fmt::format(
          "namespace {} holds daemonset {} of another run{}: remove it with kubectl delete daemonset -n {} {} "
          "unless that run is still going",
          o.ns, name, created ? fmt::format(" (created {})", util::FormatRfc3339(*created)) : std::string(), o.ns,
          name));
    }
  }
  Answer ds = kube.Create(ds_path, FanOutDaemonSet(o, run, targets, gpu_resource, res.gpus_per_node));
  if (!ds.ok) {
    // A refusal created nothing; any other failure (a timeout, a dropped connection) may have
    // come after the DaemonSet was stored: delete it by its name, which is this run's alone.
    if (ds.reason != "Forbidden" && ds.reason != "Invalid" && ds.reason != "AlreadyExists" &&
        ds.reason != "BadRequest" && !o.keep)
      kube.Delete(fmt::format("{}/{}?propagationPolicy=Background", ds_path, run));
    guard.fn();  // the namespace, if this run made it (its note kept in the result)
    guard.fn = [] {};
    none(fmt::format("cannot create the DaemonSet in namespace {} (a right to create daemonsets there is needed): {}",
                     o.ns, ds.error));
    return res;
  }
  made_daemonset = true;
  res.srun_argv = {"daemonset", o.ns + "/" + run};
  res.notes.push_back(
      fmt::format("created {}daemonset {} in {} on {} node(s), image {}{}",
                  made_namespace ? "namespace " + o.ns + ", " : "", run, o.ns, targets.size(), o.image,
                  res.gpus_per_node > 0 ? fmt::format(", {} {} per pod", res.gpus_per_node, gpu_resource) : ""));

  // 3. The pods, until every node has answered or is given up, the time is up, or Ctrl-C.
  struct Track {
    FanOutPod pod;
    bool seen = false, fetched = false, done = false;
    Clock::time_point since;  // stuck since
  };
  std::map<std::string, Track> track;
  auto started = Clock::now();
  for (const auto& t : targets) track[t].since = started;
  std::map<std::string, size_t> index;
  for (size_t i = 0; i < targets.size(); ++i) index.emplace(targets[i], i);
  std::mutex mu;
  std::map<std::string, std::string> failed;  // node -> why its log gave no bundle
  auto fetch = [&](const std::string& node, const std::string& pod) {
    if (util::Cancelled()) return;  // the node is reported with the interruption
    Answer log = kube.Get(fmt::format("/api/v1/namespaces/{}/pods/{}/log?container={}&limitBytes={}", o.ns, pod,
                                      kCollectContainer,
                                      64u << 20));  // what one kubectl answer may hold
    std::string why;
    if (log.ok) {
      std::map<std::string, std::string> errors;
      auto docs = BundleDocuments(log.body, errors);
      for (auto& [key, doc] : docs) {
        if (key != node) {
          std::lock_guard lock(mu);
          ++res.strangers;
          continue;
        }
        std::string text;
        host::Bundle b;
        if (ReadNodeDocument(node, std::move(doc), b, text, why)) {
          stream.on_bundle(index.at(node), std::move(b), text);
          std::lock_guard lock(mu);
          track.at(node).done = true;  // at(): never inserts, so the loop may read the map meanwhile
          return;
        }
      }
      if (why.empty())
        why = errors.count(node) ? "bundle " + errors[node] : "the pod's log holds no bundle of the node";
    } else {
      why = "pod log unreadable: " + log.error;
    }
    std::lock_guard lock(mu);
    failed[node] = why;
  };
  // Room for every node's job: the loop never waits on the queue, so Ctrl-C and the timeout are
  // seen at once even when a thousand pods finish together.
  util::WorkQueue workers(std::max(1u, std::min(8u, stream.workers * 2)), targets.size() + 1);
  util::Progress progress;
  std::string list_error;
  bool interrupted = false, timed_out = false;
  const std::string selector_run = "labelSelector=" + util::PercentEncode(std::string(kRunLabel) + "=" + run);
  for (;;) {
    std::string err;
    std::vector<FanOutPod> pods;
    if (kube.List(
            fmt::format("/api/v1/namespaces/{}/pods", o.ns), selector_run,
            [&](const json& p) { pods.push_back(ReadFanOutPod(p)); }, &err)) {
      list_error.clear();
    } else {
      list_error = err;
    }
    auto now = Clock::now();
    for (const auto& p : pods) {
      auto it = track.find(p.node);
      if (it == track.end()) continue;  // not a node of ours (cannot happen unless edited)
      Track& t = it->second;
      // Stuck since the first look that found it so; any other state is progress.
      bool was_stuck = t.seen && t.pod.state == FanOutPod::State::kStuck;
      if (p.state != FanOutPod::State::kStuck || !was_stuck) t.since = now;
      t.seen = true;
      t.pod = p;
      if (p.state == FanOutPod::State::kCollected && !t.fetched) {
        t.fetched = true;
        workers.Push([&fetch, node = p.node, name = p.name] { fetch(node, name); });
      }
    }
    size_t settled = 0, answered = 0;
    {
      std::lock_guard lock(mu);
      for (auto& [node, t] : track) {
        bool given_up = !t.fetched && (t.seen ? t.pod.state == FanOutPod::State::kStuck : true) &&
                        std::chrono::duration<double>(now - t.since).count() >= o.stuck_s;
        if (t.done) ++answered;
        if (t.fetched || given_up) ++settled;
      }
    }
    if (progress.tty())
      progress.Count(answered, targets.size(),
                     fmt::format("nodes answered (the fan-out ends within {})", util::FormatDuration(o.timeout_s)));
    if (settled == targets.size()) break;
    if (std::chrono::duration<double>(now - started).count() >= o.timeout_s) {
      timed_out = true;
      break;
    }
    // Wait, looking for Ctrl-C every 100 ms.
    auto wake = now + std::chrono::milliseconds(static_cast<long long>(o.poll_s * 1000));
    while (Clock::now() < wake && !util::Cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (util::Cancelled()) {
      interrupted = true;
      break;
    }
  }
  workers.Finish();
  progress.Finish();

  // 4. The nodes that gave nothing, with the reason; then the cleanup (the guard).
  std::string no_pod = "no pod was created on the node";
  if (std::any_of(track.begin(), track.end(), [](const auto& t) { return !t.second.seen; })) {
    // The DaemonSet controller says why in an event (a policy refusing the pod, a quota ...).
    std::string events_error;
    std::string last;
    kube.List(
        fmt::format("/api/v1/namespaces/{}/events", o.ns),
        "fieldSelector=" + util::PercentEncode("involvedObject.name=" + run),
        [&](const json& e) {
          if (Str(e, {"reason"}) == "FailedCreate") last = Str(e, {"message"});
        },
        &events_error);
    if (!last.empty()) no_pod += " (FailedCreate: " + util::Ellipsize(last, 300) + ")";
  }
  double waited = std::chrono::duration<double>(Clock::now() - started).count();
  for (const auto& node : targets) {
    const Track& t = track[node];
    if (t.done) continue;
    std::string why;
    if (failed.count(node)) {
      why = failed[node];
    } else if (!t.seen) {
      why = no_pod;
    } else if (t.pod.state == FanOutPod::State::kStuck) {
      why = t.pod.reason;
    } else if (t.pod.state == FanOutPod::State::kCollecting) {
      why = fmt::format("still collecting after {:.0f} s", waited);
    } else {
      why = fmt::format("pod not started after {:.0f} s ({})", waited, t.pod.reason);
    }
    if (interrupted) why = "interrupted (Ctrl-C): " + why;
    if (timed_out && t.pod.state != FanOutPod::State::kStuck && !failed.count(node))
      why = fmt::format("timed out ({} s): {}", o.timeout_s, why);
    res.unreachable.push_back({node, why});
  }
  if (!list_error.empty()) res.srun_error = "listing the pods: " + list_error;
  if (interrupted) res.notes.push_back("interrupted by the operator; cleaning up");
  guard.fn();
  guard.fn = [] {};
  finish();
  return res;
}

}  // namespace clustermax::audit
