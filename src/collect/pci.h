// PCI inventory read from sysfs (/sys/bus/pci/devices/*): vendor, device, class and the bound
// driver. Shared by the collectors that need to know which devices are GPUs or RDMA NICs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/host.h"

namespace clustermax::collect {

struct PciDevice {
  std::string bdf;                                  // "0000:19:00.0"
  uint32_t vendor = 0, device = 0, class_code = 0;  // class_code is the 24-bit value (0x030200)
  std::string driver;                               // bound driver name, empty when none
  bool IsGpu() const;                               // display/3D controller or accelerator from NVIDIA or AMD
  bool IsNetwork() const;                           // network or InfiniBand controller
  bool IsRdmaNic() const;                           // Mellanox/NVIDIA (0x15b3) or EFA (0x1d0f) network function
};

struct PciInventory {
  host::IoStatus status = host::IoStatus::kError;  // ok only when the listing itself was read
  std::string error;
  std::vector<PciDevice> devices;
  int unreadable = 0;  // devices whose vendor/class could not be read
};

PciInventory ReadPciInventory(host::Host& h);
nlohmann::json ToJson(const PciInventory& inv);

}  // namespace clustermax::collect
