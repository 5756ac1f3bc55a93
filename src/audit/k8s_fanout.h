// Fleet collection through Kubernetes: one short-lived DaemonSet in a namespace of ours, pinned to
// the selected nodes (node affinity on their names) and tolerating NoSchedule and GPU taints. Each
// pod's init container runs `clustermax collect --role=compute --host-root=/host` with the node's
// `/` mounted read-only at /host (files read there, commands run chrooted into it, so the node's
// own nvidia-smi, dpkg and kernel tools answer) and prints its bundle as the framed lines of the
// Slurm fan-out (slurm_fanout.h); a pod whose init container finished is read once through its log.
// A small main container (`clustermax hold`) keeps the pod from being restarted until we delete it.
//
// The binary comes from an image the operator names (--image): the cluster's own registry or a
// mirror, pulled once per node by the kubelet like every workload image (docs/kubernetes.md says
// why, and how to build one). Everything created is labelled app.kubernetes.io/managed-by=clustermax
// and clustermax.io/run=<run>, and deleted at the end: also on timeout, Ctrl-C, SIGTERM and SIGHUP;
// --keep leaves it. No pod is privileged: the collect container runs as root with every capability
// dropped but SYS_CHROOT (to enter the host root), the idle one as nobody with none, both in the
// host's PID and network namespaces so that processes, interfaces and ports are the node's.
#pragma once
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/slurm_fanout.h"
#include "host/host.h"

namespace clustermax::audit {

struct K8sFanOutOptions {
  std::string image;                                 // holds clustermax at `binary`
  std::string binary = "/usr/local/bin/clustermax";  // its path in the image
  std::string ns = "clustermax";                     // created (and deleted) unless it exists
  std::string node_selector;  // label selector of the nodes; "" = the GPU nodes (every node when none has GPUs)
  int nodes = 0;              // at most this many nodes (0: every node selected)
  int gpus = -1;              // GPUs each pod asks for; -1: the fewest any target node offers, 0: none
  double timeout_s = 300;     // the whole fan-out, from the DaemonSet's creation
  double stuck_s = 60;        // a node whose pod makes no progress for this long is given up
  double poll_s = 2;          // between looks at the pods
  bool keep = false;          // --keep: leave the objects for debugging
  std::string context;        // kubectl --context
  std::string run_id;         // names the objects; "" = generated (clustermax-<time>-<random>)
  std::vector<std::string> collect_args;  // selection passed to `collect`
};

// A node of the cluster as the fan-out selects it.
struct K8sNode {
  std::string name;
  bool ready = false;
  std::string not_ready;                  // why not, when not ready
  std::map<std::string, long long> gpus;  // allocatable GPU resources ("nvidia.com/gpu" -> 8)
};

// The DaemonSet of one fan-out (pure: tested for its pinning, tolerations and security settings).
nlohmann::json FanOutDaemonSet(const K8sFanOutOptions& o, const std::string& run_id,
                               const std::vector<std::string>& targets, const std::string& gpu_resource, int gpus);

// Where one pod of the fan-out stands, read from the pod object.
struct FanOutPod {
  enum class State { kStarting, kCollecting, kCollected, kStuck, kFailed };
  std::string name, node;  // node: spec.nodeName, or the DaemonSet's pin while unscheduled
  State state = State::kStarting;
  std::string reason;  // for kStuck / kFailed (and a note for the others)
};
FanOutPod ReadFanOutPod(const nlohmann::json& pod);

// The nodes, the DaemonSet, the pods' logs and the cleanup, through `kubectl` on `h`. Bundles are
// streamed as in the Slurm fan-out (BundleStream): each is read and handed over as its pod's log
// arrives. Throws std::runtime_error when the fan-out cannot start (no node list, the DaemonSet
// refused); whatever was created is deleted before that.
FanOutResult FanOutThroughKubernetes(host::Host& h, const K8sFanOutOptions& o, const BundleStream& stream);

}  // namespace clustermax::audit
