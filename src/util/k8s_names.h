// Kubernetes names the collectors and the checks both judge by: which node labels say "GPUs here",
// which StorageClass provisioners offer ReadWriteMany volumes. Pure, no I/O.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::util::k8s {

// Labels that say a node has GPUs whatever its device plugin advertises: GPU Feature Discovery's,
// node feature discovery's PCI vendor labels (NVIDIA 10de, AMD 1002), the AMD GPU operator's and
// the providers' accelerator labels.
bool GpuLabelled(const nlohmann::json& labels);

// The extended resources a pod asks GPUs by, in the order they are preferred (nvidia.com/gpu,
// amd.com/gpu).
const std::vector<std::string>& GpuResources();

// Tolerations for a pod of ours on GPU nodes: the GPU resources' taints of any effect, and with
// `every_no_schedule` every NoSchedule taint too (cordoned, dedicated nodes: for pods pinned to
// nodes by name, never for a pod the scheduler places). A NoExecute taint other than the GPU ones
// means the node is being emptied, and it is left alone.
nlohmann::json GpuTolerations(bool every_no_schedule);

// A StorageClass provisioner known to offer ReadWriteMany volumes (NFS, CephFS, EFS, Azure Files,
// Filestore, Lustre, GPFS, WEKA, VAST ...).
bool RwxProvisioner(std::string_view provisioner);

}  // namespace clustermax::util::k8s
