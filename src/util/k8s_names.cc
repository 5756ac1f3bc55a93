#include "util/k8s_names.h"

#include <string>

namespace clustermax::util::k8s {

using nlohmann::json;

bool GpuLabelled(const json& labels) {
  if (!labels.is_object()) return false;
  for (const auto& [k, v] : labels.items()) {
    std::string val = v.is_string() ? v.get<std::string>() : "";
    if (k == "nvidia.com/gpu.present" && val == "true") return true;
    if ((k == "nvidia.com/gpu.product" || k == "nvidia.com/gpu.count") && !val.empty()) return true;
    if ((k == "feature.node.kubernetes.io/pci-10de.present" ||
         k == "feature.node.kubernetes.io/pci-0302_10de.present" ||
         k == "feature.node.kubernetes.io/pci-1002.present") &&
        val == "true")
      return true;
    if (k.starts_with("amd.com/gpu.") && !val.empty()) return true;
    if ((k == "cloud.google.com/gke-accelerator" || k == "k8s.amazonaws.com/accelerator" ||
         k == "node.kubernetes.io/instance-type-gpu" || k == "accelerator") &&
        !val.empty())
      return true;
  }
  return false;
}

const std::vector<std::string>& GpuResources() {
  static const std::vector<std::string> k = {"nvidia.com/gpu", "amd.com/gpu"};
  return k;
}

json GpuTolerations(bool every_no_schedule) {
  json t = json::array();
  if (every_no_schedule) t.push_back({{"operator", "Exists"}, {"effect", "NoSchedule"}});
  for (const auto& r : GpuResources()) t.push_back({{"key", r}, {"operator", "Exists"}});
  return t;
}

bool RwxProvisioner(std::string_view p) {
  for (std::string_view k : {"nfs", "cephfs", "gluster", "efs", "azurefile", "file.csi.azure.com", "filestore", "weka",
                             "lustre", "gpfs", "spectrumscale", "vast", "beegfs", "juicefs", "ddn", "portworx"})
    if (p.find(k) != std::string_view::npos) return true;
  return false;
}

}  // namespace clustermax::util::k8s
