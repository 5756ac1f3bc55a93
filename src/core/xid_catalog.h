// NVIDIA's Xid and SXid catalog and the driver's non-Xid GPU-loss messages, as data
// (data/xid-catalog.json, embedded; sources and method in data/xid-catalog.md). The kernel-log
// parser recognises the messages; the judge grades every event by its severity class:
//   hardware       a fault of the GPU, its memory, NVLink/C2C/PCIe or board power
//   reset          the GPU needs a reset or the node a reboot to recover
//   application    caused by the workload (a bad kernel, an illegal address)
//   informational  no action by itself
#pragma once
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::core {

struct XidEntry {
  int code = 0;
  std::string name, severity, action;
  bool unused = false;
};

struct GpuLogMessage {
  std::string match;  // a substring, or a regular expression when `regex`
  bool regex = false;
  std::string severity;  // as XidEntry::severity
  std::string kind;      // gpu-loss, init-failure, gsp, nvlink, nvswitch, context ...
  std::string meaning;
  std::optional<std::regex> re;
  bool Matches(std::string_view line) const;
};

class XidCatalog {
 public:
  explicit XidCatalog(const nlohmann::json& j);  // throws std::runtime_error on a malformed catalog
  const XidEntry* Xid(int code) const;
  const XidEntry* Sxid(int code) const;
  const std::vector<GpuLogMessage>& messages() const { return messages_; }
  const GpuLogMessage* Message(std::string_view match) const;
  const std::string& source() const { return source_; }

 private:
  std::map<int, XidEntry> xid_, sxid_;
  std::vector<GpuLogMessage> messages_;
  std::string source_;
};

const XidCatalog& EmbeddedXidCatalog();

}  // namespace clustermax::core
