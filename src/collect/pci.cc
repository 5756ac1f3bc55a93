#include "collect/pci.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace clustermax::collect {

bool PciDevice::IsGpu() const {
  uint32_t cls = class_code >> 8;  // base class + subclass
  bool gpu_class = cls == 0x0300 || cls == 0x0302 || cls == 0x0380 || cls == 0x1200;
  return gpu_class && (vendor == 0x10de || vendor == 0x1002);
}

bool PciDevice::IsNetwork() const {
  uint32_t base = class_code >> 16;
  return base == 0x02 || (class_code >> 8) == 0x0c06;
}

bool PciDevice::IsRdmaNic() const { return IsNetwork() && (vendor == 0x15b3 || vendor == 0x1d0f); }

PciInventory ReadPciInventory(host::Host& h) {
  PciInventory inv;
  auto dir = h.ListDir("/sys/bus/pci/devices");
  inv.status = dir.status;
  inv.error = dir.error;
  if (dir.status != host::IoStatus::kOk) return inv;
  for (const auto& ent : dir.entries) {
    std::string base = "/sys/bus/pci/devices/" + ent.name;
    PciDevice d;
    d.bdf = ent.name;
    auto vendor = h.ReadFile(base + "/vendor", 64);
    auto device = h.ReadFile(base + "/device", 64);
    auto cls = h.ReadFile(base + "/class", 64);
    auto v = vendor.status == host::IoStatus::kOk ? util::ParseHexOrDec(vendor.content) : std::nullopt;
    auto c = cls.status == host::IoStatus::kOk ? util::ParseHexOrDec(cls.content) : std::nullopt;
    if (!v || !c) {
      ++inv.unreadable;
      continue;
    }
    d.vendor = static_cast<uint32_t>(*v);
    d.class_code = static_cast<uint32_t>(*c);
    if (device.status == host::IoStatus::kOk)
      d.device = static_cast<uint32_t>(util::ParseHexOrDec(device.content).value_or(0));
    auto drv = h.Stat(base + "/driver");
    if (drv.status == host::IoStatus::kOk && !drv.link_target.empty()) {
      d.driver = drv.link_target.substr(drv.link_target.rfind('/') + 1);
    }
    inv.devices.push_back(std::move(d));
  }
  return inv;
}

nlohmann::json ToJson(const PciInventory& inv) {
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : inv.devices) {
    devices.push_back({{"bdf", d.bdf},
                       {"vendor", fmt::format("0x{:04x}", d.vendor)},
                       {"device", fmt::format("0x{:04x}", d.device)},
                       {"class", fmt::format("0x{:06x}", d.class_code)},
                       {"driver", d.driver.empty() ? nlohmann::json(nullptr) : nlohmann::json(d.driver)},
                       {"gpu", d.IsGpu()},
                       {"rdma_nic", d.IsRdmaNic()}});
  }
  return {{"devices", devices}, {"unreadable", inv.unreadable}, {"complete", inv.unreadable == 0}};
}

}  // namespace clustermax::collect
