#include "host/bundle.h"

#include <charconv>
#include <cstring>
#include <cstdint>

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include "util/files.h"
#include "util/strings.h"

namespace clustermax::host {
namespace {

using nlohmann::json;

std::string CommandKey(const std::vector<std::string>& argv) {
  std::string k;
  for (const auto& a : argv) {
    k += a;
    k.push_back('\x1f');
  }
  return k;
}

// Text that is not valid UTF-8 (binary sysfs/config-space files) is stored as hex.
void PutText(json& j, const char* key, const std::string& text) {
  if (util::IsValidUtf8(text)) {
    j[key] = text;
  } else {
    j[key] = util::HexEncode(text);
    j[std::string(key) + "_encoding"] = "hex";
  }
}

std::string GetText(const json& j, const char* key) {
  if (!j.contains(key)) return "";
  std::string v = j[key].get<std::string>();
  if (j.value(std::string(key) + "_encoding", "") == "hex") {
    auto d = util::HexDecode(v);
    if (!d) throw BundleError(fmt::format("field {} is not valid hex", key));
    return *d;
  }
  return v;
}

json StatusJson(IoStatus s, const std::string& error) {
  json j{{"status", ToString(s)}};
  if (!error.empty()) j["error"] = error;
  return j;
}

}  // namespace

Bundle::Bundle(Bundle&& o) noexcept { *this = std::move(o); }

Bundle& Bundle::operator=(Bundle&& o) noexcept {
  if (this == &o) return *this;
  std::scoped_lock lock(mu_, o.mu_);
  manifest = std::move(o.manifest);
  files_ = std::move(o.files_);
  dirs_ = std::move(o.dirs_);
  stats_ = std::move(o.stats_);
  commands_ = std::move(o.commands_);
  which_ = std::move(o.which_);
  env_ = std::move(o.env_);
  nvml_ = std::move(o.nvml_);
  return *this;
}

void Bundle::PutFile(const std::string& path, const FileResult& r) {
  std::lock_guard lock(mu_);
  auto it = files_.find(path);
  // The same file read twice with different limits: keep the longer read; otherwise the latest.
  if (it == files_.end() || r.content.size() >= it->second.content.size()) files_[path] = r;
}
void Bundle::PutDir(const std::string& path, const DirResult& r) {
  std::lock_guard lock(mu_);
  dirs_[path] = r;
}
void Bundle::PutStat(const std::string& path, const StatResult& r) {
  std::lock_guard lock(mu_);
  stats_[path] = r;
}
void Bundle::PutCommand(const std::vector<std::string>& argv, const CommandResult& r) {
  std::lock_guard lock(mu_);
  commands_[CommandKey(argv)] = {argv, r};
}
void Bundle::PutWhich(const std::string& name, const WhichResult& r) {
  std::lock_guard lock(mu_);
  which_[name] = r;
}
void Bundle::PutEnv(const std::string& name, const std::optional<std::string>& value) {
  std::lock_guard lock(mu_);
  env_[name] = value;
}
void Bundle::PutNvml(const NvmlResult& r) {
  std::lock_guard lock(mu_);
  nvml_ = r;
}

template <typename M, typename K>
static auto LookupIn(std::mutex& mu, const M& m, const K& k) -> std::optional<typename M::mapped_type> {
  std::lock_guard lock(mu);
  auto it = m.find(k);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

std::optional<FileResult> Bundle::File(const std::string& path) const { return LookupIn(mu_, files_, path); }
std::optional<DirResult> Bundle::Dir(const std::string& path) const { return LookupIn(mu_, dirs_, path); }
std::optional<StatResult> Bundle::StatOf(const std::string& path) const { return LookupIn(mu_, stats_, path); }
std::optional<WhichResult> Bundle::WhichOf(const std::string& name) const { return LookupIn(mu_, which_, name); }
std::optional<std::optional<std::string>> Bundle::Env(const std::string& name) const {
  return LookupIn(mu_, env_, name);
}
std::optional<CommandResult> Bundle::Command(const std::vector<std::string>& argv) const {
  auto r = LookupIn(mu_, commands_, CommandKey(argv));
  if (!r) return std::nullopt;
  return r->second;
}
std::optional<NvmlResult> Bundle::Nvml() const {
  std::lock_guard lock(mu_);
  return nvml_;
}

bool Bundle::Empty() const {
  std::lock_guard lock(mu_);
  return files_.empty() && dirs_.empty() && stats_.empty() && commands_.empty() && which_.empty() && env_.empty() && !nvml_;
}

json Bundle::ToJson() const {
  std::lock_guard lock(mu_);
  json j;
  j["format"] = "clustermax-evidence-bundle";
  j["format_version"] = manifest.format_version;
  j["manifest"] = {{"tool_version", manifest.tool_version}, {"git_sha", manifest.git_sha},
                   {"argv", manifest.argv},                 {"hostname", manifest.hostname},
                   {"started_at", manifest.started_at},     {"finished_at", manifest.finished_at},
                   {"sysroot", manifest.sysroot},           {"target", manifest.target},
                   {"probes", manifest.probes},             {"uid", manifest.uid},
                   {"role", manifest.role},                 {"partial", manifest.partial}};
  if (!manifest.target_detection.is_null()) j["manifest"]["target_detection"] = manifest.target_detection;
  json files = json::object();
  for (const auto& [path, r] : files_) {
    json f = StatusJson(r.status, r.error);
    if (r.status == IoStatus::kOk) PutText(f, "content", r.content);
    if (r.truncated) f["truncated"] = true;
    files[path] = f;
  }
  j["files"] = files;
  json dirs = json::object();
  for (const auto& [path, r] : dirs_) {
    json d = StatusJson(r.status, r.error);
    if (r.status == IoStatus::kOk) {
      json entries = json::array();
      for (const auto& e : r.entries) entries.push_back(json::array({e.name, std::string(1, e.type)}));
      d["entries"] = entries;
    }
    dirs[path] = d;
  }
  j["dirs"] = dirs;
  json stats = json::object();
  for (const auto& [path, r] : stats_) {
    json s = StatusJson(r.status, r.error);
    if (r.status == IoStatus::kOk) {
      s["type"] = std::string(1, r.type);
      s["mode"] = r.mode;
      s["size"] = r.size;
      if (!r.link_target.empty()) s["link_target"] = r.link_target;
    }
    stats[path] = s;
  }
  j["stats"] = stats;
  json commands = json::array();
  for (const auto& [key, entry] : commands_) {
    const auto& [argv, r] = entry;
    json c = StatusJson(r.status, r.error);
    c["argv"] = argv;
    c["exit_code"] = r.exit_code;
    if (r.signal) c["signal"] = r.signal;
    PutText(c, "stdout", r.out);
    PutText(c, "stderr", r.err);
    c["duration_ms"] = static_cast<long long>(r.duration_ms * 1000) / 1000.0;
    if (r.timed_out) c["timed_out"] = true;
    if (r.truncated) c["truncated"] = true;
    if (!r.resolved.empty()) c["resolved"] = r.resolved;
    commands.push_back(c);
  }
  j["commands"] = commands;
  json which = json::object();
  for (const auto& [name, r] : which_) {
    which[name] = r.status == IoStatus::kOk ? json(r.path) : json(nullptr);
  }
  j["which"] = which;
  json env = json::object();
  for (const auto& [name, v] : env_) env[name] = v ? json(*v) : json(nullptr);
  j["env"] = env;
  if (nvml_) {
    json n = StatusJson(nvml_->status, nvml_->error);
    n["data"] = nvml_->data;
    j["nvml"] = n;
  } else {
    j["nvml"] = nullptr;
  }
  return j;
}

Bundle Bundle::FromJson(const json& j) {
  Bundle b;
  try {
    if (j.value("format", "") != "clustermax-evidence-bundle") {
      throw BundleError("not a clustermax evidence bundle (missing format marker)");
    }
    int version = j.at("format_version").get<int>();
    if (version != kBundleFormatVersion) {
      throw BundleError(fmt::format("unsupported bundle format_version {}", version));
    }
    const json& m = j.at("manifest");
    b.manifest.format_version = version;
    b.manifest.tool_version = m.value("tool_version", "");
    b.manifest.git_sha = m.value("git_sha", "");
    b.manifest.argv = m.value("argv", std::vector<std::string>{});
    b.manifest.hostname = m.value("hostname", "");
    b.manifest.started_at = m.value("started_at", "");
    b.manifest.finished_at = m.value("finished_at", "");
    b.manifest.sysroot = m.value("sysroot", "");
    b.manifest.target = m.value("target", "");
    b.manifest.probes = m.value("probes", std::vector<std::string>{});
    b.manifest.uid = m.value("uid", -1L);
    b.manifest.role = m.value("role", "");
    b.manifest.partial = m.value("partial", "");
    if (m.contains("target_detection") && m["target_detection"].is_object()) b.manifest.target_detection = m["target_detection"];
    for (const auto& [path, f] : j.at("files").items()) {
      FileResult r;
      r.status = IoStatusFromString(f.at("status").get<std::string>());
      r.error = f.value("error", "");
      r.content = GetText(f, "content");
      r.truncated = f.value("truncated", false);
      b.files_[path] = std::move(r);
    }
    for (const auto& [path, d] : j.at("dirs").items()) {
      DirResult r;
      r.status = IoStatusFromString(d.at("status").get<std::string>());
      r.error = d.value("error", "");
      if (d.contains("entries")) {
        for (const auto& e : d["entries"]) {
          std::string type = e.at(1).get<std::string>();
          r.entries.push_back({e.at(0).get<std::string>(), type.empty() ? '?' : type[0]});
        }
      }
      b.dirs_[path] = std::move(r);
    }
    for (const auto& [path, s] : j.at("stats").items()) {
      StatResult r;
      r.status = IoStatusFromString(s.at("status").get<std::string>());
      r.error = s.value("error", "");
      std::string type = s.value("type", "?");
      r.type = type.empty() ? '?' : type[0];
      r.mode = s.value("mode", 0u);
      r.size = s.value("size", uint64_t{0});
      r.link_target = s.value("link_target", "");
      b.stats_[path] = std::move(r);
    }
    for (const auto& c : j.at("commands")) {
      CommandResult r;
      auto argv = c.at("argv").get<std::vector<std::string>>();
      r.status = IoStatusFromString(c.at("status").get<std::string>());
      r.error = c.value("error", "");
      r.exit_code = c.value("exit_code", -1);
      r.signal = c.value("signal", 0);
      r.out = GetText(c, "stdout");
      r.err = GetText(c, "stderr");
      r.duration_ms = c.value("duration_ms", 0.0);
      r.timed_out = c.value("timed_out", false);
      r.truncated = c.value("truncated", false);
      r.resolved = c.value("resolved", "");
      std::string key = CommandKey(argv);
      b.commands_[key] = {std::move(argv), std::move(r)};
    }
    for (const auto& [name, p] : j.at("which").items()) {
      WhichResult r;
      if (p.is_string()) {
        r.status = IoStatus::kOk;
        r.path = p.get<std::string>();
      }
      b.which_[name] = r;
    }
    for (const auto& [name, v] : j.at("env").items()) {
      b.env_[name] = v.is_string() ? std::optional<std::string>(v.get<std::string>()) : std::nullopt;
    }
    if (j.contains("nvml") && j["nvml"].is_object()) {
      NvmlResult n;
      n.status = IoStatusFromString(j["nvml"].at("status").get<std::string>());
      n.error = j["nvml"].value("error", "");
      n.data = j["nvml"].value("data", json());
      b.nvml_ = n;
    }
  } catch (const json::exception& e) {
    throw BundleError(fmt::format("malformed evidence bundle: {}", e.what()));
  }
  return b;
}

namespace {
// Valid UTF-8 (NUL allowed: "\u0000" is a character of a JSON string). RapidJSON validates the
// input, but an escaped lone low surrogate ("\udc00") would come out encoded; simdjson refused it.
bool ValidUtf8(std::string_view s) {
  // RapidJSON validated the input: after unescaping only an encoded surrogate (0xED 0xA0-0xBF) can
  // be invalid, so text without 0xED needs no second look.
  if (s.empty() || std::memchr(s.data(), 0xED, s.size()) == nullptr) return true;
  size_t i = 0, n = s.size();
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  while (i < n) {
    unsigned char c = b(i);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len = 0;
    char32_t cp = 0, min = 0;
    if (c >= 0xC2 && c <= 0xDF) len = 1, cp = c & 0x1F, min = 0x80;
    else if ((c & 0xF0) == 0xE0) len = 2, cp = c & 0x0F, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) len = 3, cp = c & 0x07, min = 0x10000;
    else return false;
    if (i + len >= n) return false;
    for (size_t k = 1; k <= len; ++k) {
      if ((b(i + k) >> 6) != 0x2) return false;
      cp = (cp << 6) | (b(i + k) & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len + 1;
  }
  return true;
}
// RapidJSON's SAX events built straight into an nlohmann value (no intermediate DOM). A fleet
// replay reads hundreds of megabytes of bundles, and nlohmann's own lexer (a character at a time)
// was half of judging 1,000 nodes. Behaviour kept from the simdjson reader this replaced (pinned by
// Bundle.ParseJsonKeepsNumbersKeysEscapesAndRefusalsExactly): integers that fit int64 are signed,
// larger ones up to UINT64_MAX unsigned and wider ones refused (RapidJSON would round them to a
// double, so numbers arrive as text and are converted here with std::from_chars, correctly rounded;
// an underflow is a signed zero, an overflow an error); the last duplicate key wins; a string that
// is not valid UTF-8 after unescaping (a lone surrogate) is an error.
class NlohmannBuilder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, NlohmannBuilder> {
 public:
  json root;
  std::string error;

  bool Null() { return Put(json(nullptr)); }
  bool Bool(bool b) { return Put(json(b)); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    std::string_view t(s, n);
    if (t.find_first_of(".eE") == std::string_view::npos) {
      if (t.front() == '-') {
        int64_t v = 0;
        auto r = std::from_chars(t.data(), t.data() + t.size(), v);
        if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return Fail(t, "integer out of range");
        return Put(json(v));
      }
      uint64_t v = 0;
      auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return Fail(t, "integer out of range");
      return v <= static_cast<uint64_t>(INT64_MAX) ? Put(json(static_cast<int64_t>(v))) : Put(json(v));
    }
    double v = 0;
    auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ptr != t.data() + t.size()) return Fail(t, "malformed number");
    if (r.ec == std::errc::result_out_of_range) {
      if (!Underflows(t)) return Fail(t, "number out of range");
      v = t.front() == '-' ? -0.0 : 0.0;
    } else if (r.ec != std::errc()) {
      return Fail(t, "malformed number");
    }
    return Put(json(v));
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    if (!ValidUtf8(std::string_view(s, n))) return Fail(std::string_view(s, std::min<size_t>(n, 40)), "string is not valid UTF-8");
    return Put(json(std::string(s, n)));
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (!ValidUtf8(std::string_view(s, n))) return Fail(std::string_view(s, std::min<size_t>(n, 40)), "key is not valid UTF-8");
    key_.assign(s, n);
    return true;
  }
  bool StartObject() { return Open(json::object()); }
  bool EndObject(rapidjson::SizeType) { return Close(); }
  bool StartArray() { return Open(json::array()); }
  bool EndArray(rapidjson::SizeType) { return Close(); }

 private:
  // An overflowing decimal (from_chars says out of range) is an underflow when its magnitude is
  // below 1: the first significant digit's power of ten plus the exponent is negative.
  static bool Underflows(std::string_view t) {
    size_t e = t.find_first_of("eE");
    std::string_view mant = t.substr(0, e);
    long long exp = 0;
    if (e != std::string_view::npos) {
      std::string_view x = t.substr(e + 1);
      bool neg = !x.empty() && x.front() == '-';
      if (!x.empty() && (x.front() == '-' || x.front() == '+')) x.remove_prefix(1);
      for (char c : x) exp = std::min<long long>(exp * 10 + (c - '0'), 1'000'000'000LL);
      if (neg) exp = -exp;
    }
    size_t dot = mant.find('.');
    std::string_view intpart = mant.substr(0, dot);
    long long magnitude = 0;  // power of ten of the first significant digit
    size_t first = intpart.find_first_of("123456789");
    if (first != std::string_view::npos) {
      magnitude = static_cast<long long>(intpart.size() - first) - 1;
    } else if (dot != std::string_view::npos) {
      std::string_view frac = mant.substr(dot + 1);
      size_t f = frac.find_first_of("123456789");
      if (f == std::string_view::npos) return true;
      magnitude = -static_cast<long long>(f) - 1;
    }
    return magnitude + exp < 0;
  }
  bool Fail(std::string_view what, const char* why) {
    error = fmt::format("{}: {}", why, util::SanitizeUtf8(what));
    return false;
  }
  bool Open(json&& empty) {
    json* slot = Slot();
    *slot = std::move(empty);
    stack_.push_back(slot);
    return true;
  }
  bool Close() {
    stack_.pop_back();
    return true;
  }
  // Where the next value goes: the root, the end of the open array, or the open object's key (an
  // existing key is replaced: the last duplicate wins, as in nlohmann). Pointers to open containers
  // stay valid: only the innermost open container grows.
  json* Slot() {
    if (stack_.empty()) return &root;
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(nullptr);
      return &top.back();
    }
    return &top[key_];
  }
  bool Put(json&& v) {
    *Slot() = std::move(v);
    return true;
  }
  std::vector<json*> stack_;
  std::string key_;
};
}  // namespace

json ParseJson(std::string_view text) {
  if (util::JsonNestingDepth(text, util::kMaxJsonDepth) > util::kMaxJsonDepth) {
    throw BundleError(fmt::format("JSON nested deeper than {} levels; refused", util::kMaxJsonDepth));
  }
  // Iterative (no recursion on deep input), UTF-8 validated, numbers as text (converted exactly
  // above). A NUL byte reads as the end of RapidJSON's stream, so the whole text must be consumed.
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag |
                              rapidjson::kParseFullPrecisionFlag | rapidjson::kParseNumbersAsStringsFlag;
  rapidjson::MemoryStream ms(text.data(), text.size());
  rapidjson::Reader reader;
  NlohmannBuilder builder;
  rapidjson::ParseResult ok = reader.Parse<kFlags>(ms, builder);
  if (!ok) {
    std::string why = builder.error.empty() ? rapidjson::GetParseError_En(ok.Code()) : builder.error;
    throw BundleError(fmt::format("not valid JSON ({} at byte {})", why, ok.Offset()));
  }
  if (ms.Tell() != text.size()) throw BundleError(fmt::format("not valid JSON (content after the document at byte {})", ms.Tell()));
  return std::move(builder.root);
}

Bundle Bundle::Load(const std::filesystem::path& path) {
  auto text = util::ReadLocalFile(path);
  if (!text) throw BundleError(fmt::format("cannot read evidence bundle {}", path.string()));
  json j;
  try {
    j = ParseJson(*text);
  } catch (const BundleError& e) {
    throw BundleError(fmt::format("{}: {}", path.string(), e.what()));
  }
  try {
    return FromJson(j);
  } catch (const BundleError& e) {
    throw BundleError(fmt::format("{}: {}", path.string(), e.what()));
  }
}

void Bundle::Save(const std::filesystem::path& path) const {
  util::WriteFileAtomic(path, ToJson().dump(1, ' ', false, json::error_handler_t::replace) + "\n");
}

// ---- RecordingHost ----

FileResult RecordingHost::ReadFile(const std::string& path, size_t max_bytes) {
  FileResult r = target().ReadFile(path, max_bytes);
  bundle_.PutFile(path, r);
  return r;
}
FileResult RecordingHost::ReadFileSample(const std::string& path, int sample, size_t max_bytes) {
  FileResult r = target().ReadFileSample(path, sample, max_bytes);
  bundle_.PutFile(SampleKey(path, sample), r);
  return r;
}
DirResult RecordingHost::ListDir(const std::string& path) {
  DirResult r = target().ListDir(path);
  bundle_.PutDir(path, r);
  return r;
}
StatResult RecordingHost::Stat(const std::string& path) {
  StatResult r = target().Stat(path);
  bundle_.PutStat(path, r);
  return r;
}
CommandResult RecordingHost::Run(const CommandSpec& spec) {
  CommandResult r = target().Run(spec);
  bundle_.PutCommand(spec.argv, r);
  return r;
}
WhichResult RecordingHost::Which(const std::string& name) {
  WhichResult r = target().Which(name);
  bundle_.PutWhich(name, r);
  return r;
}
std::optional<std::string> RecordingHost::GetEnv(const std::string& name) {
  auto v = target().GetEnv(name);
  bundle_.PutEnv(name, v);
  return v;
}
NvmlResult RecordingHost::QueryNvml(std::chrono::milliseconds timeout) {
  NvmlResult r = target().QueryNvml(timeout);
  bundle_.PutNvml(r);
  return r;
}

// ---- ReplayHost ----

std::string ReplayHost::NotTakenReason() const {
  return bundle_.manifest.sysroot.empty() ? std::string() : std::string(kNotTakenFromImage);
}

void ReplayHost::Miss(std::string what) {
  std::lock_guard lock(mu_);
  misses_.push_back(std::move(what));
}

std::vector<std::string> ReplayHost::misses() const {
  std::lock_guard lock(mu_);
  return misses_;
}

FileResult ReplayHost::ReadFile(const std::string& path, size_t max_bytes) {
  if (auto r = bundle_.File(path)) {
    if (r->content.size() > max_bytes) {
      r->content.resize(max_bytes);
      r->truncated = true;
    }
    return std::move(*r);
  }
  Miss("file " + path);
  return {IoStatus::kNotRecorded, "", false, "not in the evidence bundle: file " + path};
}

FileResult ReplayHost::ReadFileSample(const std::string& path, int sample, size_t max_bytes) {
  return ReadFile(SampleKey(path, sample), max_bytes);
}

DirResult ReplayHost::ListDir(const std::string& path) {
  if (auto r = bundle_.Dir(path)) return std::move(*r);
  Miss("dir " + path);
  DirResult r;
  r.status = IoStatus::kNotRecorded;
  r.error = "not in the evidence bundle: directory " + path;
  return r;
}

StatResult ReplayHost::Stat(const std::string& path) {
  if (auto r = bundle_.StatOf(path)) return std::move(*r);
  Miss("stat " + path);
  StatResult r;
  r.status = IoStatus::kNotRecorded;
  r.error = "not in the evidence bundle: stat " + path;
  return r;
}

CommandResult ReplayHost::Run(const CommandSpec& spec) {
  if (auto r = bundle_.Command(spec.argv)) return std::move(*r);
  std::string cmd = util::JoinArgv(spec.argv);
  Miss("command " + cmd);
  CommandResult r;
  r.status = IoStatus::kNotRecorded;
  r.error = "not in the evidence bundle: command " + cmd;
  return r;
}

WhichResult ReplayHost::Which(const std::string& name) {
  if (auto r = bundle_.WhichOf(name)) return std::move(*r);
  Miss("which " + name);
  return {IoStatus::kNotRecorded, ""};
}

std::optional<std::string> ReplayHost::GetEnv(const std::string& name) {
  if (auto r = bundle_.Env(name)) return std::move(*r);
  Miss("env " + name);
  return std::nullopt;
}

NvmlResult ReplayHost::QueryNvml(std::chrono::milliseconds) {
  if (auto r = bundle_.Nvml()) return std::move(*r);
  Miss("nvml");
  NvmlResult r;
  r.status = IoStatus::kNotRecorded;
  r.error = "not in the evidence bundle: nvml";
  return r;
}

}  // namespace clustermax::host
