#include "core/xid_catalog.h"

#include <stdexcept>

namespace clustermax::embedded {
extern const std::string_view kXidCatalogJson;
}

namespace clustermax::core {

bool GpuLogMessage::Matches(std::string_view line) const {
  if (!regex) return line.find(match) != std::string_view::npos;
  return re && std::regex_search(line.begin(), line.end(), *re);
}

XidCatalog::XidCatalog(const nlohmann::json& j) {
  auto entries = [](const nlohmann::json& list, std::map<int, XidEntry>& out) {
    for (const auto& e : list) {
      XidEntry x;
      x.code = e.at("code").get<int>();
      x.name = e.at("name").get<std::string>();
      x.severity = e.at("severity").get<std::string>();
      x.action = e.value("action", "");
      x.unused = e.value("unused", false);
      out[x.code] = x;
    }
  };
  entries(j.at("xid"), xid_);
  entries(j.at("sxid"), sxid_);
  for (const auto& m : j.at("messages")) {
    GpuLogMessage g;
    g.match = m.at("match").get<std::string>();
    g.regex = m.value("regex", false);
    g.severity = m.at("severity").get<std::string>();
    g.kind = m.value("kind", "");
    g.meaning = m.value("meaning", "");
    if (g.regex) g.re.emplace(g.match, std::regex::ECMAScript | std::regex::optimize);
    messages_.push_back(std::move(g));
  }
  const auto& src = j.at("source");
  if (src.is_array() && !src.empty()) source_ = src[0].value("title", "") + " " + src[0].value("url", "");
}

const XidEntry* XidCatalog::Xid(int code) const {
  auto it = xid_.find(code);
  return it == xid_.end() ? nullptr : &it->second;
}

const XidEntry* XidCatalog::Sxid(int code) const {
  auto it = sxid_.find(code);
  return it == sxid_.end() ? nullptr : &it->second;
}

const GpuLogMessage* XidCatalog::Message(std::string_view match) const {
  for (const auto& m : messages_) {
    if (m.match == match) return &m;
  }
  return nullptr;
}

const XidCatalog& EmbeddedXidCatalog() {
  static const XidCatalog c(nlohmann::json::parse(embedded::kXidCatalogJson));
  return c;
}

}  // namespace clustermax::core
