#include "collect/parsers.h"

#include <cctype>
#include <regex>

#include <nlohmann/json.hpp>

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
    if (k == "ID") r.id = v;
    else if (k == "VERSION_ID") r.version_id = v;
    else if (k == "VERSION_CODENAME") r.codename = v;
    else if (k == "PRETTY_NAME") r.pretty_name = v;
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
    if (key == "processor") ++c.logical_cpus;
    else if (key == "model name" && c.model.empty()) c.model = std::string(val);
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
    if (lower.find("quota") != std::string::npos && lower.find("limit") != std::string::npos && lower.find("filesystem") != std::string::npos) {
      in_table = true;  // the column header ("Filesystem space quota limit", "kbytes bquota blimit", "type KB quota limit")
      continue;
    }
    if (!in_table) continue;
    auto t = util::SplitWhitespace(line);
    if (t.size() == 1) {
      wrapped = t[0];  // a long filesystem name on its own line, its numbers on the next
      continue;
    }
    std::string fs = wrapped.empty() ? t[0] : wrapped;
    size_t off = !wrapped.empty() ? 0 : (t.size() > 1 && (t[1] == "USR" || t[1] == "GRP" || t[1] == "FILESET")) ? 2 : 1;  // mmlsquota's type column
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
    if (words[0] == "NCCL_MAJOR") major = words[1];
    else if (words[0] == "NCCL_MINOR") minor = words[1];
    else if (words[0] == "NCCL_PATCH") patch = words[1];
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
  nlohmann::json j = nlohmann::json::parse(text.substr(b, e - b + 1), nullptr, false);
  if (j.is_discarded() || !j.contains("DCGM Diagnostic")) {
    if (error) *error = "not a DCGM Diagnostic document";
    return std::nullopt;
  }
  const auto& root = j["DCGM Diagnostic"];
  DcgmDiag d;
  if (j.contains("runtime_error")) d.runtime_error = j["runtime_error"].dump();
  if (root.contains("runtime_error")) d.runtime_error = root["runtime_error"].is_string() ? root["runtime_error"].get<std::string>() : root["runtime_error"].dump();
  for (const auto& cat : root.value("test_categories", nlohmann::json::array())) {
    for (const auto& test : cat.value("tests", nlohmann::json::array())) {
      for (const auto& r : test.value("results", nlohmann::json::array())) {
        DcgmDiagResult x;
        x.category = cat.value("category", "");
        x.test = test.value("name", "");
        x.status = util::ToLower(r.value("status", ""));
        if (r.contains("gpu_id")) x.gpu = r["gpu_id"].is_string() ? r["gpu_id"].get<std::string>() : r["gpu_id"].dump();
        else if (r.contains("entity_id")) x.gpu = r["entity_id"].dump();
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

}  // namespace clustermax::collect
