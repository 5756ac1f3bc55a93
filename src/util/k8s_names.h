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

// Tolerations for a pod of ours that must land on GPU nodes: every NoSchedule taint (cordoned,
// GPU-only, dedicated nodes) and the GPU resources' taints of any effect. A NoExecute taint other
// than those means the node is being emptied, and it is left alone.
nlohmann::json GpuTolerations();

// A StorageClass provisioner known to offer ReadWriteMany volumes (NFS, CephFS, EFS, Azure Files,
// Filestore, Lustre, GPFS, WEKA, VAST ...).
bool RwxProvisioner(std::string_view provisioner);

}  // namespace clustermax::util::k8s
