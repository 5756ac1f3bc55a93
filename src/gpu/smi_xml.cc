#include "gpu/smi_xml.h"

#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "util/strings.h"

namespace clustermax::gpu {
namespace {

using nlohmann::json;

std::optional<std::string> Text(const pugi::xml_node& n, const char* path) {
  pugi::xml_node cur = n;
  for (const auto& part : util::Split(path, '/')) {
    cur = cur.child(part.c_str());
    if (!cur) return std::nullopt;
  }
  std::string v(util::Trim(cur.text().get()));
  if (v.empty() || v == "N/A" || v.find("deprecated") != std::string::npos || v == "Unknown Error") return std::nullopt;
  return v;
}

// "8188 MiB", "41 C", "30 %", "16x", "11.26 W" -> the leading number.
json Number(const pugi::xml_node& n, const char* path) {
  auto t = Text(n, path);
  if (!t) return nullptr;
  char* end = nullptr;
  double v = std::strtod(t->c_str(), &end);
  if (end == t->c_str()) return nullptr;
  // The range test first: casting a double beyond long long (or NaN) is undefined behaviour.
  if (std::fabs(v) < 9.2e18 && v == static_cast<double>(static_cast<long long>(v)) &&
      t->find('.') == std::string::npos) {
    return static_cast<long long>(v);
  }
  return v;
}

json FirstNumber(const pugi::xml_node& n, std::initializer_list<const char*> paths) {
  for (const char* p : paths) {
    json v = Number(n, p);
    if (!v.is_null()) return v;
  }
  return nullptr;
}

json YesNo(const pugi::xml_node& n, const char* path) {
  auto t = Text(n, path);
  if (!t) return nullptr;
  if (*t == "Yes" || *t == "Enabled" || *t == "Active") return true;
  if (*t == "No" || *t == "Disabled" || *t == "Not Active") return false;
  return nullptr;
}

// Sums the counters present; null when none of them was readable.
json Sum(const pugi::xml_node& n, std::initializer_list<const char*> paths) {
  long long total = 0;
  bool any = false;
  for (const char* p : paths) {
    json v = Number(n, p);
    if (v.is_number()) {
      // No counter is beyond long long: such a value (or a sum past it) is not a count.
      if (v.is_number_float() && !(std::fabs(v.get<double>()) < 9.2e18)) return nullptr;
      if (__builtin_add_overflow(total, v.get<long long>(), &total)) return nullptr;
      any = true;
    }
  }
  return any ? json(total) : json(nullptr);
}

// NVML clocks-event reason bits, in the order nvidia-smi prints them.
constexpr std::pair<const char*, unsigned long long> kReasonBits[] = {
    {"gpu_idle", 0x1},
    {"applications_clocks_setting", 0x2},
    {"sw_power_cap", 0x4},
    {"hw_slowdown", 0x8},
    {"sync_boost", 0x10},
    {"sw_thermal_slowdown", 0x20},
    {"hw_thermal_slowdown", 0x40},
    {"hw_power_brake_slowdown", 0x80},
    {"display_clocks_setting", 0x100},
};

json Reasons(const pugi::xml_node& gpu) {
  for (const char* block : {"clocks_event_reasons", "clocks_throttle_reasons"}) {
    pugi::xml_node b = gpu.child(block);
    if (!b) continue;
    std::string prefix =
        std::string(block) == "clocks_event_reasons" ? "clocks_event_reason_" : "clocks_throttle_reason_";
    unsigned long long mask = 0;
    bool any = false;
    for (const auto& [name, bit] : kReasonBits) {
      json v = YesNo(b, (prefix + name).c_str());
      if (v.is_boolean()) {
        any = true;
        if (v.get<bool>()) mask |= bit;
      }
    }
    if (any) return mask;
  }
  return nullptr;
}

}  // namespace

std::optional<json> ParseNvidiaSmiXml(std::string_view xml, std::string* error) {
  pugi::xml_document doc;
  pugi::xml_parse_result res = doc.load_buffer(xml.data(), xml.size());
  if (!res) {
    if (error) *error = fmt::format("XML parse error at offset {}: {}", res.offset, res.description());
    return std::nullopt;
  }
  pugi::xml_node root = doc.child("nvidia_smi_log");
  if (!root) {
    if (error) *error = "no <nvidia_smi_log> root element";
    return std::nullopt;
  }
  json data;
  data["source"] = "nvidia-smi";
  data["driver_version"] = Text(root, "driver_version") ? json(*Text(root, "driver_version")) : json(nullptr);
  data["nvml_version"] = nullptr;
  data["cuda_driver_version"] = Text(root, "cuda_version") ? json(*Text(root, "cuda_version")) : json(nullptr);
  json devices = json::array();
  unsigned index = 0;
  for (pugi::xml_node g : root.children("gpu")) {
    json d;
    d["index"] = index++;
    auto str = [&](const char* path) {
      auto t = Text(g, path);
      return t ? json(*t) : json(nullptr);
    };
    d["name"] = str("product_name");
    d["uuid"] = str("uuid");
    d["serial"] = str("serial");
    d["vbios"] = str("vbios_version");
    std::string bus = g.attribute("id").as_string();
    d["pci_bus_id"] = !bus.empty() ? json(bus) : str("pci/pci_bus_id");
    auto devid = Text(g, "pci/pci_device_id");
    d["pci_device_id"] =
        devid ? json("0x" + util::ToLower(*devid).substr(devid->rfind("0x", 0) == 0 ? 2 : 0)) : json(nullptr);
    if (devid) {
      std::string v = *devid;
      if (v.rfind("0x", 0) == 0 || v.rfind("0X", 0) == 0) v = v.substr(2);
      for (auto& c : v) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      d["pci_device_id"] = "0x" + v;
    }
    d["memory_total_mib"] = Number(g, "fb_memory_usage/total");
    d["compute_capability"] = str("compute_cap");
    d["pcie"] = {{"gen_current", Number(g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")},
                 {"gen_max", Number(g, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")},
                 {"width_current", Number(g, "pci/pci_gpu_link_info/link_widths/current_link_width")},
                 {"width_max", Number(g, "pci/pci_gpu_link_info/link_widths/max_link_width")}};
    d["persistence_mode"] = YesNo(g, "persistence_mode");
    d["virtualization_mode"] = str("gpu_virtualization_mode/virtualization_mode");
    json ecc;
    ecc["current"] = YesNo(g, "ecc_mode/current_ecc");
    ecc["pending"] = YesNo(g, "ecc_mode/pending_ecc");
    for (const char* scope : {"volatile", "aggregate"}) {
      std::string s = std::string("ecc_errors/") + scope + "/";
      std::string sc = s + "sram_correctable", dc = s + "dram_correctable";
      std::string su = s + "sram_uncorrectable", sup = s + "sram_uncorrectable_parity",
                  sus = s + "sram_uncorrectable_secded", du = s + "dram_uncorrectable";
      ecc[std::string(scope) + "_corrected"] = Sum(g, {sc.c_str(), dc.c_str()});
      ecc[std::string(scope) + "_uncorrected"] = Sum(g, {su.c_str(), sup.c_str(), sus.c_str(), du.c_str()});
      // Before Ampere (Pascal, Volta, Turing) the counters are single_bit/double_bit blocks with a total.
      std::string single = s + "single_bit/total", dbl = s + "double_bit/total";
      if (ecc[std::string(scope) + "_corrected"].is_null())
        ecc[std::string(scope) + "_corrected"] = Sum(g, {single.c_str()});
      if (ecc[std::string(scope) + "_uncorrected"].is_null())
        ecc[std::string(scope) + "_uncorrected"] = Sum(g, {dbl.c_str()});
    }
    d["ecc"] = ecc;
    if (g.child("remapped_rows")) {
      json rr = {{"correctable", Number(g, "remapped_rows/remapped_row_corr")},
                 {"uncorrectable", Number(g, "remapped_rows/remapped_row_unc")},
                 {"pending", YesNo(g, "remapped_rows/remapped_row_pending")},
                 {"failure", YesNo(g, "remapped_rows/remapped_row_failure")}};
      bool all_null = true;
      for (auto& [k, v] : rr.items()) all_null &= v.is_null();
      d["remapped_rows"] = all_null ? json(nullptr) : rr;
    } else {
      d["remapped_rows"] = nullptr;
    }
    json sbe = Number(g, "retired_pages/multiple_single_bit_retirement/retired_count");
    json dbe = Number(g, "retired_pages/double_bit_retirement/retired_count");
    d["retired_pages"] =
        sbe.is_null() && dbe.is_null()
            ? json(nullptr)
            : json{{"single_bit", sbe}, {"double_bit", dbe}, {"pending", YesNo(g, "retired_pages/pending_retirement")}};
    d["power_draw_w"] = FirstNumber(
        g, {"gpu_power_readings/instant_power_draw", "gpu_power_readings/power_draw", "power_readings/power_draw"});
    d["power_limit_w"] =
        FirstNumber(g, {"gpu_power_readings/current_power_limit", "gpu_power_readings/enforced_power_limit",
                        "power_readings/enforced_power_limit", "power_readings/power_limit"});
    d["temperature_c"] = Number(g, "temperature/gpu_temp");
    d["clocks_mhz"] = {{"sm", Number(g, "clocks/sm_clock")},
                       {"memory", Number(g, "clocks/mem_clock")},
                       {"sm_max", Number(g, "max_clocks/sm_clock")},
                       {"memory_max", Number(g, "max_clocks/mem_clock")}};
    d["utilization_gpu_pct"] = Number(g, "utilization/gpu_util");
    d["clocks_event_reasons"] = Reasons(g);
    d["nvlink_active"] = nullptr;  // `nvidia-smi -q -x` does not report NVLink state
    devices.push_back(d);
  }
  data["device_count"] = devices.size();
  data["devices"] = devices;
  data["errors"] = json::array();
  return data;
}

}  // namespace clustermax::gpu
