#include "collect/parsers.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/xid_catalog.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/version.h"

namespace clustermax::collect {
namespace {

std::optional<std::string> Capture(std::string_view text, const std::regex& re, int group = 1) {
  std::string s(text);
  std::smatch m;
  if (!std::regex_search(s, m, re)) return std::nullopt;
  return m[group].str();
}

}  // namespace

std::optional<OsRelease> ParseOsRelease(std::string_view text) {
  OsRelease r;
  for (const auto& [k, v] : util::ParseKeyValueLines(text)) {
    if (k == "ID")
      r.id = v;
    else if (k == "VERSION_ID")
      r.version_id = v;
    else if (k == "VERSION_CODENAME")
      r.codename = v;
    else if (k == "PRETTY_NAME")
      r.pretty_name = v;
  }
  if (r.id.empty()) return std::nullopt;
  if (r.codename.empty() && r.id == "ubuntu" && r.version_id == "24.04") r.codename = "noble";
  return r;
}

std::optional<std::string> ParseNvccRelease(std::string_view text) {
  static const std::regex re(R"(release\s+(\d+\.\d+))");
  return Capture(text, re);
}

std::optional<std::string> ParseRuncVersion(std::string_view text) {
  static const std::regex re(R"(^runc version\s+v?(\S+))", std::regex::multiline);
  return Capture(text, re);
}

std::optional<std::string> ParseDockerClientVersion(std::string_view text) {
  std::string_view t = util::Trim(text);
  if (t.rfind("Docker version ", 0) != 0) return std::nullopt;
  static const std::regex re(R"(^Docker version\s+v?([0-9][^,\s]*))");
  return Capture(t, re);
}

std::optional<std::vector<BoostSlider>> ParseBoostSliderList(std::string_view text) {
  static const std::regex row(R"(^\|\s*(\d+)\s+([A-Za-z][\w-]*)\s+(\d+)\s+(\d+)\s*\|\s*$)");
  std::vector<BoostSlider> out;
  for (const auto& line : util::SplitLines(text)) {
    std::smatch m;
    if (std::regex_match(line, m, row)) out.push_back({std::stoi(m[1]), m[2], std::stoi(m[3]), std::stoi(m[4])});
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<std::string> ParseNvidiaCtkVersion(std::string_view text) {
  static const std::regex re(R"(NVIDIA Container (?:Toolkit|Runtime)[^\n]*?version\s+v?([0-9][0-9.]*[0-9a-z.~+-]*))",
                             std::regex::icase);
  return Capture(text, re);
}

std::optional<std::string> ParsePerfVersion(std::string_view text) {
  static const std::regex re(R"(^perf version\s+(\S+))", std::regex::multiline);
  return Capture(text, re);
}

std::optional<std::string> ParseToolVersionLine(std::string_view text) {
  static const std::regex re(R"(version\s*:?\s*v?(\d+\.\d+(?:\.\d+)*))", std::regex::icase);
  return Capture(text, re);
}

std::optional<std::string> ParseBareVersion(std::string_view text) {
  static const std::regex re(R"(^\s*v?(\d+\.\d+(?:\.\d+)*)\s*(?:\n|$))");
  if (auto v = Capture(text, re)) return v;
  return ParseToolVersionLine(text);
}

std::optional<ProcNvidiaVersion> ParseProcNvidiaVersion(std::string_view text) {
  auto lines = util::SplitLines(text);
  for (const auto& line : lines) {
    if (line.rfind("NVRM version:", 0) != 0) continue;
    static const std::regex re(R"(\s(\d{3}\.\d+(?:\.\d+)?)\s)");
    auto v = Capture(line + " ", re);
    if (!v) return std::nullopt;
    ProcNvidiaVersion r;
    r.driver_version = *v;
    r.open_module = util::Contains(line, "Open Kernel Module");
    return r;
  }
  return std::nullopt;
}

std::optional<CpuInfo> ParseCpuinfo(std::string_view text) {
  CpuInfo c;
  for (const auto& line : util::SplitLines(text)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key(util::Trim(std::string_view(line).substr(0, colon)));
    std::string_view val = util::Trim(std::string_view(line).substr(colon + 1));
    if (key == "processor")
      ++c.logical_cpus;
    else if (key == "model name" && c.model.empty())
      c.model = std::string(val);
    else if (key == "flags" || key == "Features") {
      for (const auto& f : util::SplitWhitespace(val)) {
        if (f == "vmx") c.vmx = true;
        if (f == "svm") c.svm = true;
        if (f == "hypervisor") c.hypervisor = true;
      }
    }
  }
  if (c.logical_cpus == 0) return std::nullopt;
  return c;
}

std::vector<LdconfigEntry> ParseLdconfig(std::string_view text) {
  // `ldconfig -p` lists thousands of lines on a full node: walk them as views, copying only entries.
  std::vector<LdconfigEntry> out;
  for (std::string_view line : util::SplitLineViews(text)) {
    size_t arrow = line.find(" => ");
    if (arrow == std::string_view::npos) continue;
    std::string_view left = util::Trim(line.substr(0, arrow));
    size_t paren = left.find(" (");
    out.push_back({std::string(paren == std::string_view::npos ? left : left.substr(0, paren)),
                   std::string(util::Trim(line.substr(arrow + 4)))});
  }
  return out;
}

QuotaReport ParseQuotaReport(std::string_view text) {
  QuotaReport out;
  // "5120M", "0", "1.5G", "4*" (over the soft quota): positive when its number is.
  auto positive = [](std::string s) {
    while (!s.empty() && (s.back() == '*' || std::isalpha(static_cast<unsigned char>(s.back())))) s.pop_back();
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    return end != s.c_str() && v > 0;
  };
  bool in_table = false;
  std::string wrapped;
  for (const auto& line : util::SplitLines(text)) {
    std::string lower = util::ToLower(line);
    if (lower.find("disk quotas for") != std::string::npos && util::Trim(lower).ends_with(": none")) {
      out.none = true;
      continue;
    }
    if (lower.find("quota") != std::string::npos && lower.find("limit") != std::string::npos &&
        lower.find("filesystem") != std::string::npos) {
      in_table =
          true;  // the column header ("Filesystem space quota limit", "kbytes bquota blimit", "type KB quota limit")
      continue;
    }
    if (!in_table) continue;
    auto t = util::SplitWhitespace(line);
    if (t.size() == 1) {
      wrapped = t[0];  // a long filesystem name on its own line, its numbers on the next
      continue;
    }
    std::string fs = wrapped.empty() ? t[0] : wrapped;
    size_t off = !wrapped.empty() ? 0
                 : (t.size() > 1 && (t[1] == "USR" || t[1] == "GRP" || t[1] == "FILESET"))
                     ? 2
                     : 1;  // mmlsquota's type column
    wrapped.clear();
    if (t.size() < off + 3) continue;
    QuotaRow r{fs, t[off], t[off + 1], t[off + 2]};
    r.limited = positive(r.soft) || positive(r.hard);
    out.rows.push_back(r);
  }
  return out;
}

std::optional<std::string> ParseNcclHeaderVersion(std::string_view text) {
  // nccl.h is tens of kilobytes: scan its "#define NCCL_MAJOR 2" lines instead of regex-searching it.
  std::optional<std::string> major, minor, patch;
  for (std::string_view raw : util::SplitLineViews(text)) {
    std::string_view line = util::Trim(raw);
    if (line.rfind("#define", 0) != 0) continue;
    auto words = util::SplitWhitespace(line.substr(7));
    if (words.size() < 2 || !util::ParseInt(words[1])) continue;
    if (words[0] == "NCCL_MAJOR")
      major = words[1];
    else if (words[0] == "NCCL_MINOR")
      minor = words[1];
    else if (words[0] == "NCCL_PATCH")
      patch = words[1];
  }
  if (!major || !minor || !patch) return std::nullopt;
  return *major + "." + *minor + "." + *patch;
}

std::optional<std::string> VersionFromSoname(std::string_view filename, std::string_view stem) {
  std::string prefix = std::string(stem) + ".so.";
  if (filename.rfind(prefix, 0) != 0) return std::nullopt;
  std::string_view rest = filename.substr(prefix.size());
  auto parts = util::Split(rest, '.');
  if (parts.size() < 3) return std::nullopt;
  for (const auto& p : parts) {
    if (!util::ParseInt(p)) return std::nullopt;
  }
  return std::string(rest);
}

std::vector<KernelPackage> ParseDpkgPackageList(std::string_view text) {
  std::vector<KernelPackage> out;
  for (const auto& line : util::SplitLines(text)) {
    auto parts = util::SplitWhitespace(line);
    if (parts.size() != 2) continue;
    out.push_back({parts[0], parts[1]});
  }
  return out;
}

std::optional<std::string> KernelReleaseFromPackage(std::string_view package) {
  constexpr std::string_view kPrefix = "linux-image-";
  if (package.rfind(kPrefix, 0) != 0) return std::nullopt;
  std::string_view rest = package.substr(kPrefix.size());
  if (rest.rfind("unsigned-", 0) == 0) rest.remove_prefix(9);
  if (rest.empty() || !std::isdigit(static_cast<unsigned char>(rest[0]))) return std::nullopt;
  return std::string(rest);
}

std::string KernelFlavour(std::string_view release) {
  // "6.8.0-124-generic": flavour after the ABI; "6.1.0-31-cloud-amd64" -> "cloud-amd64".
  size_t dash = release.find('-');
  if (dash == std::string_view::npos) return "";
  size_t next = release.find('-', dash + 1);
  if (next == std::string_view::npos) return "";
  return std::string(release.substr(next + 1));
}

std::vector<std::string> ParseNvidiaSmiList(std::string_view text) {
  std::vector<std::string> out;
  static const std::regex re(R"(^GPU\s+\d+:\s+(.*)$)");
  for (const auto& line : util::SplitLines(text)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) out.push_back(m[1].str());
  }
  return out;
}

std::optional<DcgmDiag> ParseDcgmDiagJson(std::string_view text, std::string* error) {
  size_t b = text.find('{'), e = text.rfind('}');
  if (b == std::string_view::npos || e == std::string_view::npos || e < b) {
    if (error) *error = "no JSON object in the output";
    return std::nullopt;
  }
  std::string_view doc = text.substr(b, e - b + 1);
  if (util::JsonNestingDepth(doc, util::kMaxJsonDepth) > util::kMaxJsonDepth) {
    if (error) *error = fmt::format("JSON nested deeper than {} levels", util::kMaxJsonDepth);
    return std::nullopt;
  }
  nlohmann::json j = nlohmann::json::parse(doc, nullptr, false);
  // DCGM 3.1 names the document "DCGM GPU Diagnostic" and pads its test lists with nulls.
  const char* root_key = !j.is_discarded() && j.contains("DCGM Diagnostic")       ? "DCGM Diagnostic"
                         : !j.is_discarded() && j.contains("DCGM GPU Diagnostic") ? "DCGM GPU Diagnostic"
                                                                                  : nullptr;
  if (!root_key || !j[root_key].is_object()) {
    if (error) *error = "not a DCGM Diagnostic document";
    return std::nullopt;
  }
  const auto& root = j[root_key];
  DcgmDiag d;
  if (j.contains("runtime_error")) d.runtime_error = j["runtime_error"].dump();
  if (root.contains("runtime_error"))
    d.runtime_error =
        root["runtime_error"].is_string() ? root["runtime_error"].get<std::string>() : root["runtime_error"].dump();
  auto list = [](const nlohmann::json& o, const char* key) {
    return o.is_object() && o.contains(key) && o[key].is_array() ? o[key] : nlohmann::json::array();
  };
  for (const auto& cat : list(root, "test_categories")) {
    for (const auto& test : list(cat, "tests")) {
      for (const auto& r : list(test, "results")) {
        if (!r.is_object()) continue;
        DcgmDiagResult x;
        x.category = cat.value("category", "");
        x.test = test.value("name", "");
        x.status = r.contains("status") && r["status"].is_string() ? util::ToLower(r["status"].get<std::string>()) : "";
        if (r.contains("gpu_id"))
          x.gpu = r["gpu_id"].is_string() ? r["gpu_id"].get<std::string>() : r["gpu_id"].dump();
        else if (r.contains("gpu_ids"))
          x.gpu = r["gpu_ids"].is_string() ? r["gpu_ids"].get<std::string>() : r["gpu_ids"].dump();
        else if (r.contains("entity_id"))
          x.gpu = r["entity_id"].dump();
        for (const auto& w : r.value("warnings", nlohmann::json::array())) {
          std::string text = w.is_object() ? w.value("warning", "") : (w.is_string() ? w.get<std::string>() : w.dump());
          if (w.is_object() && w.contains("error_id")) text += " (error_id " + w["error_id"].dump() + ")";
          x.warnings.push_back(text);
        }
        d.results.push_back(std::move(x));
      }
    }
  }
  return d;
}

std::optional<DcgmDiag> ParseDcgmDiagTable(std::string_view text, std::string* error) {
  static const std::regex section(R"(^[|+]-+\s+(\S[^-+|]*?)\s+-+[+|])");
  static const std::regex per_gpu(R"(^GPU\s*(\d+)\s*:\s*(\w+))");                       // DCGM 4: "GPU0: Pass"
  static const std::regex status_gpu(R"(^(\w+)(?:\s+-\s+(?:GPU:\s*(\d+)|All))?\s*$)");  // "Fail - GPU: 0", "Pass - All"
  DcgmDiag d;
  bool table = false;
  std::string category;
  std::string* text_row = nullptr;  // the Error/Warning text being continued, if any
  std::string info;                 // Info text (dropped)
  int test_row = -1;                // the result whose test a continuation row belongs to
  for (const auto& raw : util::SplitLines(text)) {
    std::string line(util::Trim(raw));
    if (line.empty() || (line[0] != '|' && line[0] != '+')) continue;
    std::smatch m;
    if (std::regex_search(line, m, section)) {
      category = m[1];
      text_row = nullptr;
      test_row = -1;
      continue;
    }
    if (line[0] == '+') {
      text_row = nullptr;
      continue;
    }
    auto cells = util::Split(line, '|', true);
    if (cells.size() < 3) continue;
    std::string name(util::Trim(cells[1]));
    // The cell is padded by one space on the left and two on the right; wrapped text is cut at the
    // cell's width, so a chunk keeps its own trailing space ("peristence " + "mode").
    std::string value = cells[2].size() >= 3 ? cells[2].substr(1, cells[2].size() - 3) : "";
    if (name == "Diagnostic") {
      table = true;
      continue;
    }
    if (name.empty()) {
      if (text_row) {
        *text_row += value;
      } else if (test_row >= 0) {  // another result of the test above: "Fail - GPU: 0", "GPU0: Pass"
        DcgmDiagResult x = d.results[test_row];
        x.warnings.clear();
        std::string v(util::Trim(value));
        if (std::regex_search(v, m, per_gpu)) {
          x.gpu = m[1];
          x.status = util::ToLower(m[2].str());
        } else if (std::regex_match(v, m, status_gpu)) {
          x.status = util::ToLower(m[1].str());
          x.gpu = m[2].matched ? m[2].str() : "";
        } else {
          continue;
        }
        d.results.push_back(std::move(x));
      }
      continue;
    }
    if (name == "Error" || name == "Warning") {
      if (d.results.empty()) continue;
      d.results.back().warnings.push_back(value);
      text_row = &d.results.back().warnings.back();
      continue;
    }
    if (name == "Info") {
      info = value;
      text_row = &info;
      continue;
    }
    text_row = nullptr;
    if (category == "Metadata") continue;
    DcgmDiagResult x;
    x.category = category;
    x.test = name;
    std::string v(util::Trim(value));
    if (std::regex_match(v, m, status_gpu)) {
      x.status = util::ToLower(m[1].str());
      x.gpu = m[2].matched ? m[2].str() : "";
    } else {
      x.status = util::ToLower(v);  // an unknown result word, kept as read
    }
    d.results.push_back(std::move(x));
    test_row = static_cast<int>(d.results.size()) - 1;
  }
  if (!table && d.results.empty()) {
    if (error) *error = "no dcgmi diag table in the output";
    return std::nullopt;
  }
  for (auto& r : d.results) {
    for (auto& w : r.warnings) w = std::string(util::Trim(w));
  }
  return d;
}

namespace {
// ibstat's words for port states, in sysfs form.
std::string SysfsState(std::string_view word) {
  std::string w = util::ToLower(util::Trim(word));
  if (w.rfind("port_", 0) == 0) w = w.substr(5);  // ibv_devinfo: "PORT_ACTIVE (4)"
  w = w.substr(0, w.find(' '));
  if (w == "down") return "1: DOWN";
  if (w == "initializing" || w == "init") return "2: INIT";
  if (w == "armed") return "3: ARMED";
  if (w == "active") return "4: ACTIVE";
  if (w == "active_defer") return "5: ACTIVE_DEFER";
  return std::string(util::Trim(word));
}
std::string SysfsPhysState(std::string_view word) {
  static const char* kStates[] = {
      "", "Sleep", "Polling", "Disabled", "PortConfigurationTraining", "LinkUp", "LinkErrorRecovery", "Phy Test"};
  std::string w(util::Trim(word));
  for (int i = 1; i < 8; ++i) {
    if (w == kStates[i]) return fmt::format("{}: {}", i, kStates[i]);
  }
  return w;
}
}  // namespace

std::vector<RdmaDeviceText> ParseRdmaListing(std::string_view text) {
  static const std::regex ibstat_ca(R"(^CA '([^']+)')");
  static const std::regex ibstatus_port(R"(^Infiniband device '([^']+)' port (\d+) status:)");
  static const std::regex ibv_hca(R"(^hca_id:\s*(\S+))");
  static const std::regex ibstat_port(R"(^Port (\d+):)");
  static const std::regex ibv_port(R"(^port:\s*(\d+))");
  std::vector<RdmaDeviceText> out;
  auto device = [&](const std::string& name) -> RdmaDeviceText& {
    if (out.empty() || out.back().name != name) out.push_back({name, "", "", {}});
    return out.back();
  };
  for (const auto& raw : util::SplitLines(text)) {
    std::string line(util::Trim(raw));
    std::smatch m;
    if (std::regex_search(line, m, ibstat_ca) || std::regex_search(line, m, ibv_hca)) {
      device(m[1]);
      continue;
    }
    if (std::regex_search(line, m, ibstatus_port)) {
      device(m[1]).ports.push_back({m[2], "", "", "", ""});
      continue;
    }
    if (out.empty()) continue;
    if (std::regex_search(line, m, ibstat_port) || std::regex_search(line, m, ibv_port)) {
      out.back().ports.push_back({m[1], "", "", "", ""});
      continue;
    }
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = util::ToLower(util::Trim(line.substr(0, colon)));
    std::string value(util::Trim(line.substr(colon + 1)));
    auto& dev = out.back();
    if (key == "firmware version" || key == "fw_ver")
      dev.fw_ver = value;
    else if (key == "ca type")
      dev.ca_type = value;
    if (dev.ports.empty()) continue;
    auto& port = dev.ports.back();
    if (key == "state")
      port.state = value.find(':') != std::string::npos ? value : SysfsState(value);  // ibstatus prints sysfs's words
    else if (key == "physical state" || key == "phys state")
      port.phys_state = value.find(':') != std::string::npos ? value : SysfsPhysState(value);
    else if (key == "rate")
      port.rate = value.find("Gb/sec") != std::string::npos ? value : value + " Gb/sec";
    else if (key == "link layer" || key == "link_layer")
      port.link_layer = value;
  }
  return out;
}

AcsControl ParseAcsControl(std::string_view config) {
  AcsControl a;
  if (config.size() < 0x104) {
    a.unreadable = true;
    return a;
  }
  auto u32 = [&](size_t off) {
    return static_cast<uint32_t>(static_cast<unsigned char>(config[off])) |
           static_cast<uint32_t>(static_cast<unsigned char>(config[off + 1])) << 8 |
           static_cast<uint32_t>(static_cast<unsigned char>(config[off + 2])) << 16 |
           static_cast<uint32_t>(static_cast<unsigned char>(config[off + 3])) << 24;
  };
  size_t off = 0x100;
  for (int hops = 0; hops < 64 && off >= 0x100 && off + 8 <= config.size(); ++hops) {
    uint32_t header = u32(off);
    if (header == 0 || header == 0xffffffff) break;
    if ((header & 0xffff) == 0x000d) {
      a.present = true;
      a.control = static_cast<uint16_t>(static_cast<unsigned char>(config[off + 6]) |
                                        static_cast<unsigned char>(config[off + 7]) << 8);
      return a;
    }
    size_t next = (header >> 20) & 0xffc;
    if (next <= off) break;
    off = next;
  }
  return a;
}

std::vector<std::string> PciChain(std::string_view sysfs_path) {
  static const std::regex bdf(R"(^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$)");
  std::vector<std::string> chain;
  for (const auto& part : util::Split(sysfs_path, '/')) {
    if (std::regex_match(part, bdf)) chain.push_back(part);
  }
  return chain;
}

std::string GpuLogEvent::Key() const {
  if (kind == "message") return "message: " + match;
  return kind + " " + std::to_string(code);
}

std::string KernelLogDay(std::string_view line) {
  auto digits = [&](size_t at, size_t n) {
    if (at + n > line.size()) return false;
    for (size_t i = at; i < at + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(line[i]))) return false;
    }
    return true;
  };
  // journalctl -o short-iso: 2026-11-29T10:00:01+0000 (the offset is the node's: taken as written)
  if (digits(0, 4) && line.size() > 10 && line[4] == '-' && digits(5, 2) && line[7] == '-' && digits(8, 2) &&
      line[10] == 'T') {
    return std::string(line.substr(0, 10));
  }
  // dmesg -T: [Sun Nov 29 10:00:01 2026] (local time of the node)
  if (line.size() > 26 && line[0] == '[' && std::isalpha(static_cast<unsigned char>(line[1]))) {
    size_t close = line.find(']');
    if (close == std::string_view::npos || close > 40) return "";
    auto words = util::SplitWhitespace(line.substr(1, close - 1));
    if (words.size() != 5) return "";
    static constexpr const char* kMonths[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                              "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    int month = 0;
    for (int i = 0; i < 12; ++i) {
      if (words[1] == kMonths[i]) month = i + 1;
    }
    auto day = util::ParseInt(words[2]);
    auto year = util::ParseInt(words[4]);
    if (!month || !day || !year || *day < 1 || *day > 31 || *year < 1970 || *year > 9999) return "";
    return fmt::format("{:04d}-{:02d}-{:02d}", *year, month, *day);
  }
  return "";
}

GpuLogScan ParseGpuKernelLog(std::string_view text, size_t max_events) {
  static const std::regex xid(
      R"(NVRM:? Xid \((?:PCI:)?([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-9a-fA-F])?)\)\s*:?\s*(\d+))");
  static const std::regex sxid(R"(nvidia-nvswitch\d+: SXid \(PCI:([0-9a-fA-F:.]+)\): (\d+))");
  const auto& catalog = core::EmbeddedXidCatalog();
  GpuLogScan scan;
  std::vector<GpuLogEvent> all;
  for (auto line : util::SplitLineViews(text)) {
    bool has_xid = line.find("Xid") != std::string_view::npos;
    // Cheap filter: every message we know is the NVIDIA driver's, an NVSwitch's or NVLink's.
    if (!has_xid && line.find("NVRM") == std::string_view::npos && line.find("nvidia") == std::string_view::npos &&
        line.find("NVLink") == std::string_view::npos) {
      continue;
    }
    GpuLogEvent ev;
    std::match_results<std::string_view::const_iterator> m;
    if (has_xid && std::regex_search(line.begin(), line.end(), m, sxid)) {
      ev.kind = "SXid";
      ev.pci = m[1].str();
      ev.code = static_cast<int>(util::ParseInt(m[2].str().substr(0, 9)).value_or(0));
    } else if (has_xid && std::regex_search(line.begin(), line.end(), m, xid)) {
      ev.kind = "Xid";
      ev.pci = m[1].str();
      ev.code = static_cast<int>(util::ParseInt(m[2].str().substr(0, 9)).value_or(0));
    } else {
      // A driver message that is no Xid line. Context lines (the "GPU at PCI:" header, crash-dump
      // notices) are not events by themselves.
      for (const auto& msg : catalog.messages()) {
        if (msg.kind == "context" || msg.kind == "xid-text" || msg.kind == "xid154" || msg.kind == "nvswitch") continue;
        if (msg.Matches(line)) {
          ev.kind = "message";
          ev.match = msg.match;
          static const std::regex pci(R"(([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-9a-fA-F])?))");
          std::match_results<std::string_view::const_iterator> p;
          if (std::regex_search(line.begin(), line.end(), p, pci)) ev.pci = p[1].str();
          break;
        }
      }
      if (ev.kind.empty()) continue;
    }
    ev.day = KernelLogDay(line);
    ev.line = util::Ellipsize(line, 240);
    ++scan.days[ev.day.empty() ? "undated" : ev.day][ev.Key()];
    ++scan.total;
    all.push_back(std::move(ev));
  }
  size_t keep = std::min(all.size(), max_events);
  scan.truncated = all.size() > keep;
  for (size_t i = 0; i < keep; ++i) scan.events.push_back(std::move(all[all.size() - 1 - i]));
  return scan;
}

std::vector<Mount> ParseMountinfo(std::string_view text) {
  std::vector<Mount> out;
  for (const auto& line : util::SplitLines(text)) {
    auto parts = util::SplitWhitespace(line);
    size_t sep = std::find(parts.begin(), parts.end(), "-") - parts.begin();
    if (parts.size() < 5 || sep + 2 >= parts.size()) continue;
    out.push_back({parts[4], parts[sep + 1], parts[sep + 2]});
  }
  return out;
}

// ---- moved out of the collectors ----

std::optional<long long> ParseMemTotalKb(std::string_view meminfo) {
  static const std::regex re(R"(MemTotal:\s+(\d+) kB)");
  auto v = Capture(meminfo, re);
  if (!v) return std::nullopt;
  return std::stoll(*v);
}

std::optional<DcgmExporterVersion> ParseDcgmExporterVersion(std::string_view text) {
  static const std::regex pair(R"((\d+\.\d+\.\d+)-(\d+\.\d+\.\d+))"), single(R"((\d+\.\d+\.\d+))");
  std::string s(text);
  std::smatch m;
  if (std::regex_search(s, m, pair)) return DcgmExporterVersion{m[1].str(), m[2].str()};
  if (std::regex_search(s, m, single)) return DcgmExporterVersion{std::nullopt, m[1].str()};
  return std::nullopt;
}

bool IsHpcSdkRelease(std::string_view dir_name) {
  static const std::regex release_re(R"(^\d{2}\.\d{1,2}$)");
  return std::regex_match(std::string(dir_name), release_re);
}

std::optional<std::string> ParseHpcSdkCompilerVersion(std::string_view text) {
  static const std::regex ver(R"((?:nvc|nvc\+\+|nvfortran)\s+(\d{2}\.\d{1,2}))");
  return Capture(text, ver);
}

std::optional<std::string> ParseNcuVersion(std::string_view text) {
  static const std::regex re(R"(Version\s+(\d{4}\.\d+(?:\.\d+)*))");
  return Capture(text, re);
}

std::vector<std::map<std::string, std::string>> ParseLsblkPairs(std::string_view text) {
  static const std::regex kv(R"re((\w+)="([^"]*)")re");
  std::vector<std::map<std::string, std::string>> out;
  for (const auto& line : util::SplitLines(text)) {
    std::map<std::string, std::string> d;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), kv); it != std::sregex_iterator(); ++it) {
      d[util::ToLower((*it)[1].str())] = (*it)[2].str();
    }
    if (!d.empty()) out.push_back(std::move(d));
  }
  return out;
}

std::vector<TcpListener> ParseProcNetTcpListeners(std::string_view text, bool ipv6) {
  std::vector<TcpListener> out;
  for (std::string_view line : util::SplitLineViews(text)) {
    // A busy node lists thousands of connections: only LISTEN rows (state " 0A ", the one field that
    // can hold that hex pair between spaces) are split.
    if (line.find(" 0A ") == std::string_view::npos) continue;
    auto f = util::SplitWhitespace(line);
    if (f.size() < 4 || f[3] != "0A") continue;  // 0A = TCP_LISTEN
    size_t colon = f[1].find(':');
    if (colon == std::string::npos) continue;
    std::string addr = f[1].substr(0, colon);
    auto port = util::ParseHexOrDec("0x" + f[1].substr(colon + 1));
    if (!port) continue;
    bool any = addr.find_first_not_of('0') == std::string::npos;
    bool loopback = (!ipv6 && addr.size() == 8 && addr.substr(6, 2) == "7F") ||
                    (ipv6 && addr == "00000000000000000000000001000000");
    out.push_back({*port, any ? "any" : loopback ? "loopback" : "address"});
  }
  return out;
}

AptPolicy ParseAptCachePolicy(std::string_view text) {
  AptPolicy p;
  bool in_installed = false;
  for (const auto& line : util::SplitLines(text)) {
    auto words = util::SplitWhitespace(line);
    if (words.empty()) continue;
    if (words[0] == "Installed:") p.installed = words.size() > 1 ? std::optional<std::string>(words[1]) : std::nullopt;
    if (words[0] == "***") {
      in_installed = true;
      continue;
    }
    if (in_installed) {
      if (words.size() >= 2 && util::ParseInt(words[0]) && words[1].rfind("http", 0) == 0)
        p.origins.push_back(words[1]);
      else if (words.size() >= 2 && util::ParseInt(words[0]) && words[1] == "/var/lib/dpkg/status")
        continue;
      else if (!words[0].empty() && !util::ParseInt(words[0]))
        in_installed = false;
    }
  }
  return p;
}

std::map<std::string, std::string> ParseNvidiaParams(std::string_view text) {
  std::map<std::string, std::string> out;
  for (const auto& line : util::SplitLines(text)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    out[std::string(util::Trim(line.substr(0, colon)))] = std::string(util::Trim(line.substr(colon + 1)));
  }
  return out;
}

}  // namespace clustermax::collect
