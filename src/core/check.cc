#include "core/check.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace clustermax::core {

const std::vector<std::string>& Categories() {
  static const std::vector<std::string> k{"versions",      "isolation",  "hardware", "software", "containers",
                                          "orchestration", "networking", "storage",  "health",   "access"};
  return k;
}

const std::vector<ProbeInfo>& Probes() {
  static const std::vector<ProbeInfo> k{
      {"perf-sample", "perf stat -e cycles,instructions -- sleep 0.1: can this user sample CPU counters?",
       "short CPU sampling on this node", 5},
      {"container-launch",
       "start a GPU container (docker run --rm --gpus all IMAGE nvidia-smi -L) and list GPUs; on Slurm nodes with a topology "
       "file, also a pyxis container on the node (srun --overlap --container-image=IMAGE sha256sum FILE)",
       "may pull an image from a registry; starts and removes containers (docker; a pyxis job step on Slurm)", 600},
      {"dcgm-diag", "dcgmi diag -r 1 -j: DCGM's quick diagnostic on every GPU",
       "loads the GPUs for seconds; blocked under MIG", 90},
      {"vboost-set",
       "nvidia-smi boost-slider --vboost 2 (or the maximum), read back, then every GPU's original value restored",
       "changes a GPU power-management setting for a few seconds, then puts it back", 30},
      {"slurm-job",
       "srun -N1 --time=1 true, once with --gres=gpu:1 and once without: how long a job step takes to start, prolog included",
       "submits two one-node jobs to the scheduler", 150},
      {"enroot-import",
       "enroot import docker://IMAGE into a temporary file, then delete it (--enroot-image, default docker://busybox:1.36)",
       "pulls an image from a registry (the internet unless a local registry is given) and writes a file under $TMPDIR",
       30},
      {"k8s-pvc",
       "create a 1 GiB ReadWriteOnce claim on the default StorageClass and a ReadWriteMany claim on each RWX-capable "
       "class in namespace clustermax-probe-pvc, each with a pod from --probe-image that mounts it; wait for Bound "
       "and for the pod to run (120 s; --timeout probe.k8s-pvc=S), delete them",
       "creates a namespace, claims and pods; a provisioner may create (and delete) real volumes", 150},
      {"k8s-lb",
       "create a LoadBalancer Service in namespace clustermax-probe-lb, wait for its address (120 s; --timeout "
       "probe.k8s-lb=S), delete it",
       "may allocate a public or pool IP address for a minute", 150},
      {"k8s-gpu-pod",
       "start a one-GPU pod and a pod without GPUs from --probe-image (running `true` as nobody) in namespace "
       "clustermax-probe-gpu; time creation to scheduled and to a started container from the API's timestamps, the "
       "image pull apart (180 s; --timeout probe.k8s-gpu-pod=S), delete them",
       "holds one GPU for seconds; may pull the image onto a node; on an autoscaled cluster with no free GPU it may "
       "make the autoscaler add a GPU node",
       240},
      {"s3-probe", "HEAD the bucket, then PUT, GET and DELETE one small object (--s3-endpoint, --s3-bucket)",
       "sends traffic to the endpoint; writes and deletes one object", 30},
  };
  return k;
}

const ProbeInfo* FindProbe(std::string_view name) {
  for (const auto& p : Probes())
    if (p.name == name) return &p;
  return nullptr;
}

std::string CheckInfo::Mode() const {
  if (probe.empty()) return "P";
  std::string probes = k8s_probe.empty() ? probe : probe + "/" + k8s_probe;
  if (probe_required) return "A:" + probes;
  return "P + A:" + probes;
}

const std::string& CheckInfo::ProbeFor(Target target) const {
  return target == Target::kK8s && !k8s_probe.empty() ? k8s_probe : probe;
}

const Evidence& JudgeContext::Get(std::string_view id) const {
  if (std::find(info_.needs.begin(), info_.needs.end(), id) == info_.needs.end()) {
    throw std::logic_error(fmt::format("check {} reads evidence '{}' it does not declare", info_.id, id));
  }
  auto it = evidence_.find(id);
  if (it != evidence_.end()) return it->second;
  static const Evidence kMissing{};
  return kMissing;
}

std::optional<Finding> EvidenceProblem(const Evidence& e, std::string_view what) {
  switch (e.status) {
    case EvidenceStatus::kOk:
      return std::nullopt;
    case EvidenceStatus::kProbeDisabled:
      return Skip(Reason::kProbeDisabled, fmt::format("{}: active probe, not requested", what));
    case EvidenceStatus::kNotCollected:
      return Warn(Reason::kEvidenceError,
                  fmt::format("{}: evidence was not collected{}", what, e.error.empty() ? "" : " (" + e.error + ")"));
    default:
      return Warn(Reason::kEvidenceError, fmt::format("{} could not be read ({}){}", what, ToString(e.status),
                                                      e.error.empty() ? "" : ": " + e.error));
  }
}

bool IsKebabCase(std::string_view id) {
  if (id.empty() || id.front() == '-' || id.back() == '-') return false;
  char prev = 0;
  for (char c : id) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-';
    if (!ok || (c == '-' && prev == '-')) return false;
    prev = c;
  }
  return true;
}

void Registry::Add(Check check) {
  const auto& id = check.info.id;
  if (!IsKebabCase(id)) throw std::invalid_argument(fmt::format("check id '{}' is not kebab-case", id));
  if (Find(id)) throw std::invalid_argument(fmt::format("duplicate check id '{}'", id));
  const auto& cats = Categories();
  if (std::find(cats.begin(), cats.end(), check.info.category) == cats.end()) {
    throw std::invalid_argument(fmt::format("check {} has unknown category '{}'", id, check.info.category));
  }
  for (const auto* p : {&check.info.probe, &check.info.k8s_probe}) {
    if (!p->empty() && !FindProbe(*p))
      throw std::invalid_argument(fmt::format("check {} names unknown probe '{}'", id, *p));
  }
  if (!check.judge) throw std::invalid_argument(fmt::format("check {} has no judge", id));
  checks_.push_back(std::move(check));
}

const Check* Registry::Find(std::string_view id) const {
  for (const auto& c : checks_)
    if (c.info.id == id) return &c;
  return nullptr;
}

}  // namespace clustermax::core
