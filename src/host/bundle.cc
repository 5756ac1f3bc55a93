#include "host/bundle.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <cstdint>

#include <fmt/format.h>
// RapidJSON scans whitespace and unescaped string runs in 16-byte blocks with SSE2 (part of every
// x86-64): aligned loads that may read past the document's end within its last block, harmless
// but reported by AddressSanitizer, so sanitizer builds scan a byte at a time.
#if defined(__SANITIZE_ADDRESS__)
#define CLUSTERMAX_NO_JSON_SIMD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define CLUSTERMAX_NO_JSON_SIMD 1
#endif
#endif
#if defined(__SSE2__) && !defined(CLUSTERMAX_NO_JSON_SIMD)
#define RAPIDJSON_SSE2
#endif
#include <rapidjson/error/en.h>
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
  parts_ = std::move(o.parts_);
  return *this;
}

void Bundle::PutFile(const std::string& path, const FileResult& r) {
  std::lock_guard lock(mu_);
  auto it = parts_.files.find(path);
  // The same file read twice with different limits: keep the longer read; otherwise the latest.
  if (it == parts_.files.end() || r.content.size() >= it->second.content.size()) parts_.files[path] = r;
}
void Bundle::PutDir(const std::string& path, const DirResult& r) {
  std::lock_guard lock(mu_);
  parts_.dirs[path] = r;
}
void Bundle::PutStat(const std::string& path, const StatResult& r) {
  std::lock_guard lock(mu_);
  parts_.stats[path] = r;
}
void Bundle::PutCommand(const std::vector<std::string>& argv, const CommandResult& r) {
  std::lock_guard lock(mu_);
  parts_.commands[CommandKey(argv)] = {argv, r};
}
void Bundle::PutWhich(const std::string& name, const WhichResult& r) {
  std::lock_guard lock(mu_);
  parts_.which[name] = r;
}
void Bundle::PutEnv(const std::string& name, const std::optional<std::string>& value) {
  std::lock_guard lock(mu_);
  parts_.env[name] = value;
}
void Bundle::PutNvml(const NvmlResult& r) {
  std::lock_guard lock(mu_);
  parts_.nvml = r;
}

template <typename M, typename K>
static auto LookupIn(std::mutex& mu, const M& m, const K& k) -> std::optional<typename M::mapped_type> {
  std::lock_guard lock(mu);
  auto it = m.find(k);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

std::optional<FileResult> Bundle::File(const std::string& path) const { return LookupIn(mu_, parts_.files, path); }
std::optional<DirResult> Bundle::Dir(const std::string& path) const { return LookupIn(mu_, parts_.dirs, path); }
std::optional<StatResult> Bundle::StatOf(const std::string& path) const { return LookupIn(mu_, parts_.stats, path); }
std::optional<WhichResult> Bundle::WhichOf(const std::string& name) const { return LookupIn(mu_, parts_.which, name); }
std::optional<std::optional<std::string>> Bundle::Env(const std::string& name) const {
  return LookupIn(mu_, parts_.env, name);
}
std::optional<CommandResult> Bundle::Command(const std::vector<std::string>& argv) const {
  auto r = LookupIn(mu_, parts_.commands, CommandKey(argv));
  if (!r) return std::nullopt;
  return r->second;
}
std::optional<NvmlResult> Bundle::Nvml() const {
  std::lock_guard lock(mu_);
  return parts_.nvml;
}

const FileResult* Bundle::PeekFile(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = parts_.files.find(path);
  return it == parts_.files.end() ? nullptr : &it->second;
}
const DirResult* Bundle::PeekDir(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = parts_.dirs.find(path);
  return it == parts_.dirs.end() ? nullptr : &it->second;
}
const CommandResult* Bundle::PeekCommand(const std::vector<std::string>& argv) const {
  std::lock_guard lock(mu_);
  auto it = parts_.commands.find(CommandKey(argv));
  return it == parts_.commands.end() ? nullptr : &it->second.second;
}

bool Bundle::Empty() const {
  std::lock_guard lock(mu_);
  return parts_.files.empty() && parts_.dirs.empty() && parts_.stats.empty() && parts_.commands.empty() &&
         parts_.which.empty() && parts_.env.empty() && !parts_.nvml;
}

json Bundle::ToJson() const {
  std::lock_guard lock(mu_);
  json j;
  j["format"] = "clustermax-evidence-bundle";
  j["format_version"] = manifest.format_version;
  j["manifest"] = {{"tool_version", manifest.tool_version},
                   {"git_sha", manifest.git_sha},
                   {"argv", manifest.argv},
                   {"hostname", manifest.hostname},
                   {"started_at", manifest.started_at},
                   {"finished_at", manifest.finished_at},
                   {"sysroot", manifest.sysroot},
                   {"target", manifest.target},
                   {"probes", manifest.probes},
                   {"uid", manifest.uid},
                   {"role", manifest.role},
                   {"partial", manifest.partial}};
  if (!manifest.target_detection.is_null()) j["manifest"]["target_detection"] = manifest.target_detection;
  json files = json::object();
  for (const auto& [path, r] : parts_.files) {
    json f = StatusJson(r.status, r.error);
    if (r.status == IoStatus::kOk) PutText(f, "content", r.content);
    if (r.truncated) f["truncated"] = true;
    files[path] = f;
  }
  j["files"] = files;
  json dirs = json::object();
  for (const auto& [path, r] : parts_.dirs) {
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
  for (const auto& [path, r] : parts_.stats) {
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
  for (const auto& [key, entry] : parts_.commands) {
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
  for (const auto& [name, r] : parts_.which) {
    which[name] = r.status == IoStatus::kOk ? json(r.path) : json(nullptr);
  }
  j["which"] = which;
  json env = json::object();
  for (const auto& [name, v] : parts_.env) env[name] = v ? json(*v) : json(nullptr);
  j["env"] = env;
  if (parts_.nvml) {
    json n = StatusJson(parts_.nvml->status, parts_.nvml->error);
    n["data"] = parts_.nvml->data;
    j["nvml"] = n;
  } else {
    j["nvml"] = nullptr;
  }
  return j;
}

namespace {

// A number as the evidence reader keeps it (RapidJSON hands numbers over as text): integers that
// fit int64 are signed, larger ones up to UINT64_MAX unsigned, wider ones refused (never rounded to
// a double); decimals correctly rounded with std::from_chars, an underflow a signed zero, an
// overflow an error. Returns false with `error` set.
bool NumberFromText(std::string_view t, json& out, std::string& error) {
  auto fail = [&](const char* why) {
    error = fmt::format("{}: {}", why, util::SanitizeUtf8(t));
    return false;
  };
  if (t.find_first_of(".eE") == std::string_view::npos) {
    if (t.front() == '-') {
      int64_t v = 0;
      auto r = std::from_chars(t.data(), t.data() + t.size(), v);
      if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return fail("integer out of range");
      out = v;
      return true;
    }
    uint64_t v = 0;
    auto r = std::from_chars(t.data(), t.data() + t.size(), v);
    if (r.ec != std::errc() || r.ptr != t.data() + t.size()) return fail("integer out of range");
    if (v <= static_cast<uint64_t>(INT64_MAX))
      out = static_cast<int64_t>(v);
    else
      out = v;
    return true;
  }
  double v = 0;
  auto r = std::from_chars(t.data(), t.data() + t.size(), v);
  if (r.ptr != t.data() + t.size()) return fail("malformed number");
  if (r.ec == std::errc::result_out_of_range) {
    // An overflowing decimal is an underflow when its magnitude is below 1: the first significant
    // digit's power of ten plus the exponent is negative.
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
    long long magnitude = 0;
    bool zero = false;
    size_t first = intpart.find_first_of("123456789");
    if (first != std::string_view::npos) {
      magnitude = static_cast<long long>(intpart.size() - first) - 1;
    } else if (dot != std::string_view::npos) {
      std::string_view frac = mant.substr(dot + 1);
      size_t f = frac.find_first_of("123456789");
      if (f == std::string_view::npos) zero = true;
      magnitude = -static_cast<long long>(f) - 1;
    }
    if (!zero && magnitude + exp >= 0) return fail("number out of range");
    v = t.front() == '-' ? -0.0 : 0.0;
  } else if (r.ec != std::errc()) {
    return fail("malformed number");
  }
  out = v;
  return true;
}

// Strings and keys must be valid UTF-8 after unescaping (RapidJSON copies raw bytes through and
// decodes an escaped lone surrogate, "\udc00", to an invalid sequence).
bool Utf8Checked(std::string_view s, const char* what, std::string& error) {
  if (util::IsUtf8(s)) return true;
  error = fmt::format("{} is not valid UTF-8: {}", what, util::SanitizeUtf8(s.substr(0, 40)));
  return false;
}

enum class ParseFailure { kNone, kJson, kDepth, kBundle };

// RapidJSON's SAX events built straight into an nlohmann value (no intermediate DOM): the generic
// ParseJson, and the small parts of a bundle kept as JSON (manifest, NVML data). The last duplicate
// key wins; nesting deeper than util::kMaxJsonDepth is refused while parsing (the reader is
// iterative, so deep input cannot exhaust the stack).
class NlohmannBuilder : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, NlohmannBuilder> {
 public:
  json root;
  std::string error;
  ParseFailure failure = ParseFailure::kNone;
  size_t base_depth = 0;  // containers already open around this value (a bundle's part)

  bool Null() { return Put(json(nullptr)); }
  bool Bool(bool b) { return Put(json(b)); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    json v;
    if (!NumberFromText(std::string_view(s, n), v, error)) return Fail(ParseFailure::kJson);
    return Put(std::move(v));
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    if (!Utf8Checked(std::string_view(s, n), "string", error)) return Fail(ParseFailure::kJson);
    return Put(json(std::string(s, n)));
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    if (!Utf8Checked(std::string_view(s, n), "key", error)) return Fail(ParseFailure::kJson);
    key_.assign(s, n);
    return true;
  }
  bool StartObject() { return Open(json::object()); }
  bool EndObject(rapidjson::SizeType) { return Close(); }
  bool StartArray() { return Open(json::array()); }
  bool EndArray(rapidjson::SizeType) { return Close(); }
  // The value is complete (every container opened has closed).
  bool Done() const { return stack_.empty(); }

 private:
  bool Fail(ParseFailure f) {
    failure = f;
    return false;
  }
  bool Open(json&& empty) {
    if (base_depth + stack_.size() + 1 > static_cast<size_t>(util::kMaxJsonDepth)) return Fail(ParseFailure::kDepth);
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
  // existing key is replaced: the last duplicate wins). Pointers to open containers stay valid:
  // only the innermost open container grows.
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

// In-situ parsing: strings are unescaped inside the document's own buffer (one copy, into the
// value). RapidJSON's UTF-8 validation goes a byte at a time and turns the block scan off, so
// every string and key is validated by us instead (util::IsUtf8, eight ASCII bytes at a time).
constexpr unsigned kParseFlags = rapidjson::kParseInsituFlag | rapidjson::kParseIterativeFlag |
                                 rapidjson::kParseFullPrecisionFlag | rapidjson::kParseNumbersAsStringsFlag;

// Parses `text` (in place: it is overwritten) into `handler`; throws BundleError naming why.
template <typename Handler>
void ParseInPlace(std::string& text, Handler& handler) {
  rapidjson::InsituStringStream ss(text.data());
  rapidjson::Reader reader;
  rapidjson::ParseResult ok = reader.Parse<kParseFlags>(ss, handler);
  if (!ok) {
    if (handler.failure == ParseFailure::kDepth) {
      throw BundleError(fmt::format("JSON nested deeper than {} levels; refused", util::kMaxJsonDepth));
    }
    if (handler.failure == ParseFailure::kBundle) throw BundleError(handler.error);
    std::string why = handler.error.empty() ? rapidjson::GetParseError_En(ok.Code()) : handler.error;
    throw BundleError(fmt::format("not valid JSON ({} at byte {})", why, ok.Offset()));
  }
  // A NUL byte reads as the end of the stream: the whole text must have been consumed.
  if (ss.Tell() != text.size())
    throw BundleError(fmt::format("not valid JSON (content after the document at byte {})", ss.Tell()));
}

// An evidence bundle read straight into a Bundle (format: docs/evidence-bundle.md): files, command
// output and directory listings (nearly all of a bundle) go from the document's buffer into their
// FileResult/CommandResult/DirEntry without an intermediate JSON value; the manifest, the NVML
// answer and keys we do not know are built as nlohmann values (the last two are small). A value of
// the wrong type is an error naming where it was; unknown keys are skipped; the last duplicate wins.
class BundleReader : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, BundleReader> {
 public:
  explicit BundleReader(Bundle::Parts& out) : out_(out) {}
  std::string error;
  ParseFailure failure = ParseFailure::kNone;

  // What the document held besides the parts (checked by Finish).
  std::string format;
  json format_version, manifest, nvml;
  unsigned seen = 0;  // bit per Section

  bool Null() {
    if (sub_) return Forward([&] { return sub_->Null(); });
    return Scalar(json(nullptr));
  }
  bool Bool(bool b) {
    if (sub_) return Forward([&] { return sub_->Bool(b); });
    return Scalar(json(b));
  }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool copy) {
    if (sub_) return Forward([&] { return sub_->RawNumber(s, n, copy); });
    json v;
    if (!NumberFromText(std::string_view(s, n), v, error)) return Fail(ParseFailure::kJson);
    return Scalar(std::move(v));
  }
  bool String(const char* s, rapidjson::SizeType n, bool copy) {
    if (sub_) return Forward([&] { return sub_->String(s, n, copy); });
    std::string_view v(s, n);
    if (!Utf8Checked(v, "string", error)) return Fail(ParseFailure::kJson);
    if (skip_) return true;
    if (depth_ == 4 && field_ == Field::kArgv) {
      argv_.emplace_back(v);
      return true;
    }
    if (depth_ == 5) {  // [name, type] of a directory entry
      if (pair_ == 0)
        entries_.push_back({std::string(v), '?'});
      else if (pair_ == 1)
        entries_.back().type = v.empty() ? '?' : v[0];
      ++pair_;
      return true;
    }
    if (depth_ == 2 && (section_ == kWhich || section_ == kEnv)) {
      if (section_ == kWhich)
        out_.which[std::move(key_)] = {IoStatus::kOk, std::string(v)};
      else
        out_.env[std::move(key_)] = std::string(v);
      return true;
    }
    if (depth_ == 3 && field_ != Field::kUnknown && field_ != Field::kArgv && field_ != Field::kEntries) {
      // An entry's text (a file's content, a command's output) goes straight into its string.
      int k = static_cast<int>(field_);
      texts_[k].assign(v);
      has_ |= 1u << k;
      strings_ |= 1u << k;
      return true;
    }
    return Scalar(json(std::string(v)));
  }
  bool Key(const char* s, rapidjson::SizeType n, bool copy) {
    if (sub_) return Forward([&] { return sub_->Key(s, n, copy); });
    std::string_view k(s, n);
    if (!Utf8Checked(k, "key", error)) return Fail(ParseFailure::kJson);
    if (skip_) return true;
    if (depth_ == 1 || depth_ == 2)
      key_.assign(k);
    else if (depth_ == 3)
      field_ = FieldOf(k);
    return true;
  }
  bool StartObject() { return Open(false); }
  bool StartArray() { return Open(true); }
  bool EndObject(rapidjson::SizeType n) {
    return Close([&] { return sub_->EndObject(n); });
  }
  bool EndArray(rapidjson::SizeType n) {
    return Close([&] { return sub_->EndArray(n); });
  }

 private:
  enum SectionBit : unsigned { kFiles = 1, kDirs = 2, kStats = 4, kCommands = 8, kWhich = 16, kEnv = 32, kOther = 64 };
  enum class Field {
    kUnknown,
    kStatus,
    kError,
    kContent,
    kContentEncoding,
    kTruncated,
    kEntries,
    kType,
    kMode,
    kSize,
    kLinkTarget,
    kArgv,
    kExitCode,
    kSignal,
    kStdout,
    kStdoutEncoding,
    kStderr,
    kStderrEncoding,
    kDurationMs,
    kTimedOut,
    kResolved,
    kCount
  };
  static constexpr std::pair<std::string_view, Field> kFields[] = {{"status", Field::kStatus},
                                                                   {"error", Field::kError},
                                                                   {"content", Field::kContent},
                                                                   {"content_encoding", Field::kContentEncoding},
                                                                   {"truncated", Field::kTruncated},
                                                                   {"entries", Field::kEntries},
                                                                   {"type", Field::kType},
                                                                   {"mode", Field::kMode},
                                                                   {"size", Field::kSize},
                                                                   {"link_target", Field::kLinkTarget},
                                                                   {"argv", Field::kArgv},
                                                                   {"exit_code", Field::kExitCode},
                                                                   {"signal", Field::kSignal},
                                                                   {"stdout", Field::kStdout},
                                                                   {"stdout_encoding", Field::kStdoutEncoding},
                                                                   {"stderr", Field::kStderr},
                                                                   {"stderr_encoding", Field::kStderrEncoding},
                                                                   {"duration_ms", Field::kDurationMs},
                                                                   {"timed_out", Field::kTimedOut},
                                                                   {"resolved", Field::kResolved}};

  static Field FieldOf(std::string_view k) {
    for (const auto& [name, f] : kFields) {
      if (name == k) return f;
    }
    return Field::kUnknown;
  }
  static std::string_view NameOf(Field f) {
    for (const auto& [name, g] : kFields) {
      if (g == f) return name;
    }
    return "?";
  }
  static const char* SectionName(unsigned s) {
    switch (s) {
      case kFiles:
        return "files";
      case kDirs:
        return "dirs";
      case kStats:
        return "stats";
      case kCommands:
        return "commands";
      case kWhich:
        return "which";
      case kEnv:
        return "env";
      default:
        return "?";
    }
  }

  bool Fail(ParseFailure f) {
    failure = f;
    return false;
  }
  bool Malformed(std::string what) {
    error = "malformed evidence bundle: " + std::move(what);
    return Fail(ParseFailure::kBundle);
  }
  // Where the value now opening or arriving belongs.
  std::string Where() const {
    if (depth_ <= 1) return key_;
    return fmt::format("{} entry {}", SectionName(section_),
                       util::SanitizeUtf8(section_ == kCommands ? std::to_string(index_) : key_));
  }

  // Events inside a part kept as JSON go to its builder; the part is taken when it is complete.
  template <typename F>
  bool Forward(F&& event) {
    if (!event()) {
      error = sub_->error;
      return Fail(sub_->failure);
    }
    if (sub_->Done()) {
      *sub_target_ = std::move(sub_->root);
      sub_.reset();
    }
    return true;
  }
  void Delegate(json* target) {
    sub_.emplace();
    sub_->base_depth = depth_;
    sub_target_ = target;
  }

  bool Open(bool array) {
    if (sub_) {
      ++depth_;
      return Forward([&] { return array ? sub_->StartArray() : sub_->StartObject(); });
    }
    if (depth_ + 1 > static_cast<size_t>(util::kMaxJsonDepth)) return Fail(ParseFailure::kDepth);
    if (skip_) {
      ++depth_;
      return true;
    }
    switch (depth_) {
      case 0:
        if (array) return Malformed("the document is an array, not a bundle object");
        break;
      case 1:
        if (key_ == "manifest" || key_ == "nvml") {
          Delegate(key_ == "manifest" ? &manifest : &nvml);
          ++depth_;
          return Forward([&] { return array ? sub_->StartArray() : sub_->StartObject(); });
        }
        section_ = key_ == "files"      ? kFiles
                   : key_ == "dirs"     ? kDirs
                   : key_ == "stats"    ? kStats
                   : key_ == "commands" ? kCommands
                   : key_ == "which"    ? kWhich
                   : key_ == "env"      ? kEnv
                                        : kOther;
        if (section_ == kOther) return SkipValue();
        if (array != (section_ == kCommands))
          return Malformed(fmt::format("{} is not an {}", key_, section_ == kCommands ? "array" : "object"));
        seen |= section_;
        ClearSection();
        index_ = 0;
        break;
      case 2:
        if (section_ == kWhich || section_ == kEnv) {  // not a string: not found / unset
          NullEntry();
          return SkipValue();
        }
        if (array) return Malformed(fmt::format("{} is not an object", Where()));
        has_ = strings_ = 0;
        field_ = Field::kUnknown;
        break;
      case 3:
        if ((field_ == Field::kArgv && section_ == kCommands) || (field_ == Field::kEntries && section_ == kDirs)) {
          if (!array) return Malformed(fmt::format("{} of {} is not an array", NameOf(field_), Where()));
          has_ |= 1u << static_cast<int>(field_);
          if (field_ == Field::kArgv)
            argv_.clear();
          else
            entries_.clear();
          break;
        }
        if (field_ != Field::kUnknown)
          return Malformed(fmt::format("{} of {} is not a scalar", NameOf(field_), Where()));
        return SkipValue();
      case 4:
        if (field_ == Field::kArgv) return Malformed(fmt::format("argv of {} holds a non-string", Where()));
        if (!array) return Malformed(fmt::format("a directory entry of {} is not a [name, type] pair", Where()));
        pair_ = 0;
        break;
      default:  // the third or later element of a [name, type] pair
        if (pair_ < 2) return Malformed(fmt::format("a directory entry of {} is not a [name, type] pair", Where()));
        return SkipValue();
    }
    ++depth_;
    return true;
  }
  bool SkipValue() {
    skip_ = true;
    skip_base_ = depth_;
    ++depth_;
    return true;
  }
  template <typename F>
  bool Close(F&& sub_event) {
    if (sub_) {
      --depth_;
      return Forward(sub_event);
    }
    --depth_;
    if (skip_) {
      if (depth_ == skip_base_) skip_ = false;
      if (depth_ == 4 && field_ == Field::kEntries) ++pair_;  // skipped third element of a pair
      return true;
    }
    switch (depth_) {
      case 1:
        section_ = 0;
        break;
      case 2:
        return EndEntry();
      case 4:
        if (pair_ < 2) return Malformed(fmt::format("a directory entry of {} is not a [name, type] pair", Where()));
        break;
      default:
        break;
    }
    return true;
  }

  // A scalar value where it arrived (a part kept as JSON has taken its own already).
  bool Scalar(json&& v) {
    if (skip_) return true;
    switch (depth_) {
      case 0:
        return Malformed("the document is not a bundle object");
      case 1:
        if (key_ == "format") {
          if (!v.is_string()) return Malformed("format is not a string");
          format = v.get<std::string>();
        } else if (key_ == "format_version") {
          format_version = std::move(v);
        } else if (key_ == "manifest") {
          manifest = std::move(v);
        } else if (key_ == "nvml") {
          nvml = std::move(v);
        } else if (key_ == "files" || key_ == "dirs" || key_ == "stats" || key_ == "commands" || key_ == "which" ||
                   key_ == "env") {
          return Malformed(fmt::format("{} is not an {}", key_, key_ == "commands" ? "array" : "object"));
        }
        return true;
      case 2:
        if (section_ == kWhich || section_ == kEnv) {
          NullEntry();
          return true;
        }
        return Malformed(fmt::format("{} is not an object", Where()));
      case 3:
        if (field_ == Field::kUnknown) return true;
        if (field_ == Field::kArgv || field_ == Field::kEntries) {
          return Malformed(fmt::format("{} of {} is not an array", NameOf(field_), Where()));
        }
        fields_[static_cast<int>(field_)] = std::move(v);
        has_ |= 1u << static_cast<int>(field_);
        strings_ &= ~(1u << static_cast<int>(field_));
        return true;
      case 4:
        if (field_ == Field::kArgv) return Malformed(fmt::format("argv of {} holds a non-string", Where()));
        return Malformed(fmt::format("a directory entry of {} is not a [name, type] pair", Where()));
      default:
        if (pair_ < 2) return Malformed(fmt::format("a directory entry of {} is not a [name, type] pair", Where()));
        ++pair_;
        return true;
    }
  }
  void NullEntry() {
    if (section_ == kWhich)
      out_.which[std::move(key_)] = WhichResult{};
    else
      out_.env[std::move(key_)] = std::nullopt;
  }
  void ClearSection() {
    switch (section_) {
      case kFiles:
        out_.files.clear();
        break;
      case kDirs:
        out_.dirs.clear();
        break;
      case kStats:
        out_.stats.clear();
        break;
      case kCommands:
        out_.commands.clear();
        break;
      case kWhich:
        out_.which.clear();
        break;
      case kEnv:
        out_.env.clear();
        break;
      default:
        break;
    }
  }

  bool Has(Field f) const { return (has_ >> static_cast<int>(f)) & 1u; }
  bool IsText(Field f) const { return (strings_ >> static_cast<int>(f)) & 1u; }
  json& Value(Field f) { return fields_[static_cast<int>(f)]; }
  std::string Text(Field f, bool required = false) {
    if (!Has(f)) {
      if (required) throw BundleError(fmt::format("{} has no {}", Where(), NameOf(f)));
      return {};
    }
    if (!IsText(f)) throw BundleError(fmt::format("{} of {} is not a string", NameOf(f), Where()));
    return std::move(texts_[static_cast<int>(f)]);
  }
  // Text stored as hex when it was not UTF-8 (binary sysfs files, config space).
  std::string MaybeHex(Field f, Field encoding) {
    std::string v = Text(f);
    if (Text(encoding) == "hex") {
      auto d = util::HexDecode(v);
      if (!d) throw BundleError(fmt::format("{} of {} is not valid hex", NameOf(f), Where()));
      return *d;
    }
    return v;
  }
  template <typename T>
  T Number(Field f, T fallback) {
    if (!Has(f)) return fallback;
    const json& v = Value(f);
    if (IsText(f) || !v.is_number()) throw BundleError(fmt::format("{} of {} is not a number", NameOf(f), Where()));
    return v.get<T>();
  }
  bool Flag(Field f) {
    if (!Has(f)) return false;
    const json& v = Value(f);
    if (IsText(f) || !v.is_boolean())
      throw BundleError(fmt::format("{} of {} is not true or false", NameOf(f), Where()));
    return v.get<bool>();
  }

  bool EndEntry() {
    try {
      IoStatus status = IoStatusFromString(Text(Field::kStatus, true));
      switch (section_) {
        case kFiles: {
          FileResult r;
          r.status = status;
          r.error = Text(Field::kError);
          r.content = MaybeHex(Field::kContent, Field::kContentEncoding);
          r.truncated = Flag(Field::kTruncated);
          out_.files.insert_or_assign(std::move(key_), std::move(r));
          break;
        }
        case kDirs: {
          DirResult r;
          r.status = status;
          r.error = Text(Field::kError);
          if (Has(Field::kEntries)) r.entries = std::move(entries_);
          entries_.clear();
          out_.dirs.insert_or_assign(std::move(key_), std::move(r));
          break;
        }
        case kStats: {
          StatResult r;
          r.status = status;
          r.error = Text(Field::kError);
          std::string type = Has(Field::kType) ? Text(Field::kType) : "?";
          r.type = type.empty() ? '?' : type[0];
          r.mode = Number(Field::kMode, 0u);
          r.size = Number(Field::kSize, uint64_t{0});
          r.link_target = Text(Field::kLinkTarget);
          out_.stats.insert_or_assign(std::move(key_), std::move(r));
          break;
        }
        case kCommands: {
          if (!Has(Field::kArgv)) throw BundleError(fmt::format("{} has no argv", Where()));
          CommandResult r;
          r.status = status;
          r.error = Text(Field::kError);
          r.exit_code = Number(Field::kExitCode, -1);
          r.signal = Number(Field::kSignal, 0);
          r.out = MaybeHex(Field::kStdout, Field::kStdoutEncoding);
          r.err = MaybeHex(Field::kStderr, Field::kStderrEncoding);
          r.duration_ms = Number(Field::kDurationMs, 0.0);
          r.timed_out = Flag(Field::kTimedOut);
          r.truncated = Flag(Field::kTruncated);
          r.resolved = Text(Field::kResolved);
          std::string key = CommandKey(argv_);
          out_.commands.insert_or_assign(std::move(key), std::make_pair(std::move(argv_), std::move(r)));
          argv_.clear();
          ++index_;
          break;
        }
        default:
          break;
      }
    } catch (const BundleError& e) {
      return Malformed(e.what());
    } catch (const json::exception& e) {
      return Malformed(fmt::format("{}: {}", Where(), e.what()));
    }
    return true;
  }

  Bundle::Parts& out_;
  size_t depth_ = 0;                                    // containers open
  unsigned section_ = 0;                                // the top-level part being read (depth >= 2)
  std::string key_;                                     // the last key at depth 1 (part) or 2 (path, name)
  size_t index_ = 0;                                    // commands read so far (names an entry in errors)
  Field field_ = Field::kUnknown;                       // the last key at depth 3 (an entry's field)
  json fields_[static_cast<int>(Field::kCount)];        // an entry's numbers and flags
  std::string texts_[static_cast<int>(Field::kCount)];  // and its strings
  uint32_t has_ = 0, strings_ = 0;                      // bits by Field: present; a string
  std::vector<std::string> argv_;
  std::vector<DirEntry> entries_;
  int pair_ = 0;       // elements of the [name, type] pair read
  bool skip_ = false;  // inside a value nobody reads (still checked as JSON)
  size_t skip_base_ = 0;
  std::optional<NlohmannBuilder> sub_;  // a part kept as JSON, being built
  json* sub_target_ = nullptr;
};

}  // namespace

Bundle Bundle::Parse(std::string text) {
  Bundle b;
  BundleReader reader(b.parts_);
  ParseInPlace(text, reader);
  try {
    if (reader.format != "clustermax-evidence-bundle") {
      throw BundleError("not a clustermax evidence bundle (missing format marker)");
    }
    if (!reader.format_version.is_number_integer())
      throw BundleError("malformed evidence bundle: format_version is not an integer");
    int version = reader.format_version.get<int>();
    if (version != kBundleFormatVersion) {
      throw BundleError(fmt::format("unsupported bundle format_version {}", version));
    }
    for (unsigned s : {1u, 2u, 4u, 8u, 16u, 32u}) {
      if (!(reader.seen & s)) {
        static const char* names[] = {"files", "dirs", "stats", "commands", "which", "env"};
        throw BundleError(fmt::format("malformed evidence bundle: no {} part", names[std::countr_zero(s)]));
      }
    }
    const json& m = reader.manifest;
    if (!m.is_object()) throw BundleError("malformed evidence bundle: the manifest is not an object");
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
    if (m.contains("target_detection") && m["target_detection"].is_object())
      b.manifest.target_detection = m["target_detection"];
    if (reader.nvml.is_object()) {
      NvmlResult n;
      n.status = IoStatusFromString(reader.nvml.at("status").get<std::string>());
      n.error = reader.nvml.value("error", "");
      n.data = reader.nvml.value("data", json());
      b.parts_.nvml = std::move(n);
    }
  } catch (const json::exception& e) {
    throw BundleError(fmt::format("malformed evidence bundle: {}", e.what()));
  }
  return b;
}

Bundle Bundle::FromJson(const json& j) { return Parse(j.dump(-1, ' ', false, json::error_handler_t::replace)); }

json ParseJson(std::string_view text) {
  std::string buffer(text);
  NlohmannBuilder builder;
  ParseInPlace(buffer, builder);
  return std::move(builder.root);
}

Bundle Bundle::Load(const std::filesystem::path& path) {
  auto text = util::ReadLocalFile(path);
  if (!text) throw BundleError(fmt::format("cannot read evidence bundle {}", path.string()));
  try {
    return Parse(std::move(*text));
  } catch (const BundleError& e) {
    throw BundleError(fmt::format("{}: {}", path.string(), e.what()));
  }
}

std::string Bundle::ToText() const { return ToJson().dump(1, ' ', false, json::error_handler_t::replace) + "\n"; }

void Bundle::Save(const std::filesystem::path& path) const { util::WriteFileAtomic(path, ToText()); }

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

size_t ReplayHost::MissCount() const {
  std::lock_guard lock(mu_);
  return misses_.size();
}

void ReplayHost::DropMissesFrom(size_t mark) {
  std::lock_guard lock(mu_);
  if (mark < misses_.size()) misses_.resize(mark);
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
