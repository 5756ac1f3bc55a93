// Kubernetes names the collectors and the checks both judge by: which node labels say "GPUs here",
// which StorageClass provisioners offer ReadWriteMany volumes. Pure, no I/O.
#pragma once
#include <string_view>

#include <nlohmann/json.hpp>

namespace clustermax::util::k8s {

// Labels that say a node has GPUs whatever its device plugin advertises: GPU Feature Discovery's,
// node feature discovery's PCI vendor labels (NVIDIA 10de, AMD 1002), the AMD GPU operator's and
// the providers' accelerator labels.
bool GpuLabelled(const nlohmann::json& labels);

// A StorageClass provisioner known to offer ReadWriteMany volumes (NFS, CephFS, EFS, Azure Files,
// Filestore, Lustre, GPFS, WEKA, VAST ...).
bool RwxProvisioner(std::string_view provisioner);

}  // namespace clustermax::util::k8s
