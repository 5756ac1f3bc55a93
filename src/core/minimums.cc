#include "core/minimums.h"

#include <algorithm>
#include <climits>
#include <array>
#include <tuple>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/files.h"
#include "util/strings.h"
#include "util/version.h"

namespace clustermax::embedded {
extern const std::string_view kMinimumVersionsJson;
}

namespace clustermax::core {
namespace {

constexpr std::array<std::pair<ComparisonKind, std::string_view>, 8> kKinds{{
    {ComparisonKind::kMinimum, "minimum"},
    {ComparisonKind::kBranchMap, "branchMap"},
    {ComparisonKind::kTrainMap, "trainMap"},
    {ComparisonKind::kLadder, "ladder"},
    {ComparisonKind::kReleaseWindow, "releaseWindow"},
    {ComparisonKind::kProgramMap, "programMap"},
    {ComparisonKind::kDistroPackages, "distroPackages"},
    {ComparisonKind::kReleaseLines, "releaseLines"},
}};

std::optional<util::SysTime> OptTime(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_string()) return std::nullopt;
  auto t = util::ParseRfc3339(j[key].get<std::string>());
  if (!t) throw MinimumTableError(fmt::format("field {} is not an RFC 3339 time", key));
  return t;
}

Comparison Base(const Component& c, const Floor* f) {
  Comparison r;
  if (f) {
    r.key = f->key;
    r.floor = f->version;
    r.advisory = f->advisory;
    r.advisory_url = f->advisory_url;
    r.cves = f->cves;
  }
  (void)c;
  return r;
}

const Floor* FindFloor(const Component& c, std::string_view key) {
  for (const auto& f : c.floors)
    if (f.key == key) return &f;
  return nullptr;
}

int CompareNumericText(std::string_view a, std::string_view b) {
  auto x = util::ParseNumericVersion(a), y = util::ParseNumericVersion(b);
  if (!x || !y) return 0;
  auto c = *x <=> *y;
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

// Compares `version` with `floor` using the component's parser; nullopt when unparsable.
std::optional<int> CompareWith(const Component& c, std::string_view version, std::string_view floor) {
  if (c.parser == "prerelease") {
    auto a = util::ParsePrereleaseVersion(version), b = util::ParsePrereleaseVersion(floor);
    if (!a || !b) return std::nullopt;
    return util::ComparePrerelease(*a, *b);
  }
  if (c.parser == "debian") {
    if (util::Trim(version).empty()) return std::nullopt;
    return util::CompareDebianVersions(version, floor);
  }
  auto a = util::ParseNumericVersion(version), b = util::ParseNumericVersion(floor);
  if (!a || !b) return std::nullopt;
  auto r = *a <=> *b;
  return r < 0 ? -1 : (r > 0 ? 1 : 0);
}

Comparison Unparsable(const Component& c, std::string_view v) {
  Comparison r = Base(c, nullptr);
  r.outcome = Outcome::kUnknown;
  r.message = fmt::format("version string '{}' could not be parsed", util::Ellipsize(v, 80));
  return r;
}

Comparison AgainstFloor(const Component& c, const Floor& f, std::string_view version) {
  Comparison r = Base(c, &f);
  auto cmp = CompareWith(c, version, f.version);
  if (!cmp) return Unparsable(c, version);
  r.outcome = *cmp < 0 ? Outcome::kFail : Outcome::kPass;
  r.message = *cmp < 0 ? fmt::format("{} is below the floor {}", version, f.version)
                       : fmt::format("{} meets the floor {}", version, f.version);
  return r;
}

Comparison CompareMinimum(const Component& c, const VersionInput& in) {
  if (c.floors.empty()) throw MinimumTableError(c.id + ": no floor");
  return AgainstFloor(c, c.floors.front(), in.version);
}

// A key (branch, train) the table does not list: newer than every listed key passes (it is
// assumed to carry the fixes); older than every key the table knows (floors and end-of-life keys)
// fails, since nothing that old is maintained; a gap between listed keys is unknown.
Comparison UnlistedKey(const Component& c, long long key, std::string_view what) {
  long long newest = 0, oldest = LLONG_MAX;
  for (const auto& f : c.floors) {
    if (auto k = util::ParseInt(f.key)) newest = std::max(newest, *k), oldest = std::min(oldest, *k);
  }
  for (const auto& k : c.eol_keys) {
    if (auto v = util::ParseInt(k)) oldest = std::min(oldest, *v);
  }
  Comparison r = Base(c, nullptr);
  r.key = std::to_string(key);
  if (key > newest) {
    r.outcome = Outcome::kPass;
    r.message = fmt::format("{} {} is newer than the newest listed {} {}", what, key, what, newest);
  } else if (key < oldest) {
    r.outcome = Outcome::kFail;
    r.message =
        fmt::format("{} {} is older than every {} the table knows (oldest {}): unmaintained", what, key, what, oldest);
  } else {
    r.outcome = Outcome::kUnknown;
    r.message = fmt::format("{} {} is not listed in the minimum table", what, key);
  }
  return r;
}

Comparison CompareBranchMap(const Component& c, const VersionInput& in) {
  auto v = util::ParseNumericVersion(in.version);
  if (!v) return Unparsable(c, in.version);
  std::string branch = std::to_string(v->parts[0]);
  if (std::find(c.eol_keys.begin(), c.eol_keys.end(), branch) != c.eol_keys.end()) {
    Comparison r = Base(c, nullptr);
    r.key = branch;
    r.outcome = Outcome::kFail;
    r.message = fmt::format("branch {} is end-of-life and receives no security fixes", branch);
    return r;
  }
  if (const Floor* f = FindFloor(c, branch)) return AgainstFloor(c, *f, in.version);
  return UnlistedKey(c, v->parts[0], "branch");
}

Comparison CompareTrainMap(const Component& c, const VersionInput& in) {
  auto v = util::ParseNumericVersion(in.version);
  if (!v || v->count < 3) return Unparsable(c, in.version);
  std::string train = std::to_string(v->parts[1]);
  long long patch = v->parts[2];
  if (const Floor* f = FindFloor(c, train)) {
    Comparison r = Base(c, f);
    long long min_patch = util::ParseInt(f->version).value_or(0);
    r.outcome = patch < min_patch ? Outcome::kFail : Outcome::kPass;
    r.message = fmt::format("train {} patch {} {} the minimum patch {}", train, patch,
                            patch < min_patch ? "is below" : "meets", min_patch);
    return r;
  }
  return UnlistedKey(c, v->parts[1], "train");
}

Comparison CompareLadder(const Component& c, const VersionInput& in) {
  auto v = util::ParsePrereleaseVersion(in.version);
  if (!v) return Unparsable(c, in.version);
  std::pair<long long, long long> minor{v->numeric.parts[0], v->numeric.parts[1]};
  const Floor* next_up = nullptr;
  std::pair<long long, long long> next_key{0, 0};
  std::pair<long long, long long> newest{-1, -1};
  for (const auto& f : c.floors) {
    auto k = util::ParseNumericVersion(f.key);
    if (!k) throw MinimumTableError(c.id + ": ladder key " + f.key + " is not MAJOR.MINOR");
    std::pair<long long, long long> key{k->parts[0], k->parts[1]};
    if (key == minor) return AgainstFloor(c, f, in.version);
    newest = std::max(newest, key);
    if (key > minor && (!next_up || key < next_key)) {
      next_up = &f;
      next_key = key;
    }
  }
  if (minor > newest) {
    Comparison r = Base(c, nullptr);
    r.key = fmt::format("{}.{}", minor.first, minor.second);
    r.outcome = Outcome::kPass;
    r.message = fmt::format("minor line {}.{} is newer than the newest rung", minor.first, minor.second);
    return r;
  }
  // An unlisted older minor line is compared with the next rung up, so it fails.
  Comparison r = AgainstFloor(c, *next_up, in.version);
  r.message = fmt::format("minor line {}.{} has no rung; compared with the next rung up {}: {}", minor.first,
                          minor.second, next_up->version, r.message);
  return r;
}

Comparison CompareReleaseWindow(const Component& c, const VersionInput& in) {
  const Floor* min = FindFloor(c, "minimum");
  const Floor* cur = FindFloor(c, "current");
  if (!min || !cur) throw MinimumTableError(c.id + ": releaseWindow needs floors 'minimum' and 'current'");
  auto v = util::ParseNumericVersion(in.version);
  if (!v) return Unparsable(c, in.version);
  if (CompareNumericText(in.version, min->version) < 0) {
    Comparison r = Base(c, min);
    r.outcome = Outcome::kFail;
    r.message = fmt::format("release {} is below the minimum {}", in.version, min->version);
    return r;
  }
  if (CompareNumericText(in.version, cur->version) > 0) {
    Comparison r = Base(c, cur);
    r.outcome = Outcome::kNewerThanCurrent;
    r.message = fmt::format("release {} is newer than the table's current release {} (table may be stale)", in.version,
                            cur->version);
    return r;
  }
  Comparison r = Base(c, min);
  r.outcome = Outcome::kPass;
  r.message = fmt::format("release {} is inside the window [{}, {}]", in.version, min->version, cur->version);
  return r;
}

Comparison CompareProgramMap(const Component& c, const VersionInput& in) {
  Comparison r = Base(c, nullptr);
  r.key = in.program;
  if (in.program.empty()) {
    r.outcome = Outcome::kUnknown;
    r.message = "GPU program unknown";
    return r;
  }
  const Floor* f = FindFloor(c, in.program);
  if (!f) {
    r.outcome = Outcome::kUnknown;
    r.message = fmt::format("{} is not assessed by the minimum table", in.program);
    return r;
  }
  if (!in.release_proven) {
    r = Base(c, f);
    r.outcome = Outcome::kUnknown;
    r.message = "the release is not proven to be the loaded one";
    return r;
  }
  return AgainstFloor(c, *f, in.version);
}

Comparison CompareDistroPackages(const Component& c, const VersionInput& in) {
  if (c.floors.empty()) throw MinimumTableError(c.id + ": no floor");
  const Floor& f = c.floors.front();
  Comparison r = Base(c, &f);
  if (in.release != c.release) {
    r.outcome = Outcome::kNotApplicable;
    r.message = fmt::format("applies only to release '{}'", c.release);
    return r;
  }
  if (c.parser == "kernel-abi") {
    auto k = util::ParseKernelAbi(in.version);
    auto fk = util::ParseKernelAbi(f.version);
    if (!k || !fk) return Unparsable(c, in.version);
    if (k->line != fk->line) {
      r.outcome = Outcome::kUnknown;
      r.message = fmt::format("kernel line {} differs from the fixed line {} (HWE); the table has no floor for it",
                              k->line, fk->line);
      return r;
    }
    long long floor_abi = f.abi.value_or(fk->abi);
    if (k->abi != floor_abi || in.package_version.empty()) {
      r.outcome = k->abi < floor_abi ? Outcome::kFail : Outcome::kPass;
      r.message = fmt::format("kernel ABI {} {} the fixed ABI {}", k->abi, k->abi < floor_abi ? "is below" : "meets",
                              floor_abi);
      return r;
    }
    return AgainstFloor(c, f, in.package_version);
  }
  return AgainstFloor(c, f, in.version);
}

Comparison CompareReleaseLines(const Component& c, const VersionInput& in) {
  auto v = util::ParseNumericVersion(in.version);
  if (!v) return Unparsable(c, in.version);
  if (!in.line.empty()) {
    const Floor* f = FindFloor(c, in.line);
    if (!f) {
      Comparison r = Base(c, nullptr);
      r.outcome = Outcome::kUnknown;
      r.message = fmt::format("release line {} is not in the table", in.line);
      return r;
    }
    if (!f->legacy_affected_through.empty() && v->parts[0] == 1) {
      Comparison r = Base(c, f);
      bool affected = CompareNumericText(in.version, f->legacy_affected_through) <= 0;
      r.outcome = affected ? Outcome::kFail : Outcome::kPass;
      r.message = fmt::format("legacy version {} {} affected (through {})", in.version, affected ? "is" : "is not",
                              f->legacy_affected_through);
      return r;
    }
    return AgainstFloor(c, *f, in.version);
  }
  // Line unknown: legacy 1.7.x first, then every line sharing the MAJOR.MINOR prefix.
  for (const auto& f : c.floors) {
    if (f.legacy_affected_through.empty() || v->parts[0] != 1) continue;
    Comparison r = Base(c, &f);
    bool affected = CompareNumericText(in.version, f.legacy_affected_through) <= 0;
    r.outcome = affected ? Outcome::kFail : Outcome::kPass;
    r.message = fmt::format("legacy version {} {} affected (through {})", in.version, affected ? "is" : "is not",
                            f.legacy_affected_through);
    return r;
  }
  std::vector<const Floor*> candidates;
  for (const auto& f : c.floors) {
    auto fv = util::ParseNumericVersion(f.version);
    if (fv && fv->parts[0] == v->parts[0] && fv->parts[1] == v->parts[1]) candidates.push_back(&f);
  }
  Comparison r = Base(c, nullptr);
  if (candidates.empty()) {
    r.outcome = Outcome::kUnknown;
    r.message = fmt::format("no release line matches {}", in.version);
    return r;
  }
  int below = 0;
  for (const Floor* f : candidates) below += CompareNumericText(in.version, f->version) < 0 ? 1 : 0;
  if (below == 0) {
    r = Base(c, candidates.front());
    r.outcome = Outcome::kPass;
    r.message = fmt::format("{} meets the floor of every line it could belong to", in.version);
  } else if (below == static_cast<int>(candidates.size())) {
    r = Base(c, candidates.front());
    r.outcome = Outcome::kFail;
    r.message = fmt::format("{} is below the floor of every line it could belong to", in.version);
  } else {
    r.outcome = Outcome::kUnknown;
    std::vector<std::string> lines;
    for (const Floor* f : candidates) lines.push_back(f->key + " " + f->version);
    r.message =
        fmt::format("{} cannot be graded without knowing its release line ({})", in.version, fmt::join(lines, ", "));
  }
  return r;
}

void ApplyGrace(const Component& c, const VersionInput& in, util::SysTime now, int days, Comparison& r) {
  if (r.outcome != Outcome::kFail) return;
  const Floor* f = FindFloor(c, r.key);
  if (!f || f->version.empty() || (!f->bulletin_released && !f->available)) return;
  if (!f->previous_version.empty()) {
    auto below_previous = CompareWith(c, in.version, f->previous_version);
    if (below_previous && *below_previous < 0) return;  // below the old floor too: no grace
  }
  if (f->availability_status != "confirmed") {
    r.outcome = Outcome::kPass;
    r.grace_active = true;
    r.grace_unconfirmed = true;
    r.message += "; inside the grace period (fix availability unconfirmed)";
    return;
  }
  util::SysTime start =
      std::max(f->bulletin_released.value_or(util::SysTime{}), f->available.value_or(util::SysTime{}));
  util::SysTime end = start + std::chrono::hours(24 * days);
  if (now < end) {
    r.outcome = Outcome::kPass;
    r.grace_active = true;
    r.grace_ends = util::FormatRfc3339(end);
    r.message += fmt::format("; inside the grace period until {}", r.grace_ends);
  }
}

}  // namespace

std::string_view ToString(ComparisonKind k) {
  for (const auto& [kind, name] : kKinds)
    if (kind == k) return name;
  return "minimum";
}

std::string_view ToString(Outcome o) {
  switch (o) {
    case Outcome::kPass:
      return "pass";
    case Outcome::kFail:
      return "fail";
    case Outcome::kUnknown:
      return "unknown";
    case Outcome::kNotApplicable:
      return "not-applicable";
    case Outcome::kNewerThanCurrent:
      return "newer-than-current";
  }
  return "unknown";
}

const Component* MinimumTable::Find(std::string_view id) const {
  for (const auto& c : components)
    if (c.id == id) return &c;
  return nullptr;
}

MinimumTable ParseMinimumTable(std::string_view json_text, std::string origin) {
  nlohmann::json j;
  try {
    j = util::ParseJsonDocument(json_text, origin);
  } catch (const std::runtime_error& e) {
    throw MinimumTableError(e.what());
  }
  MinimumTable t;
  t.origin = std::move(origin);
  try {
    t.schema_version = j.at("schema_version").get<int>();
    if (t.schema_version != 1) {
      throw MinimumTableError(fmt::format("{}: unsupported schema_version {}", t.origin, t.schema_version));
    }
    t.generated_text = j.at("generated").get<std::string>();
    auto gen = util::ParseRfc3339(t.generated_text);
    if (!gen) throw MinimumTableError(t.origin + ": 'generated' is not an RFC 3339 time");
    t.generated = *gen;
    t.max_age_days = j.value("max_age_days", 10);
    t.grace_period_days = j.value("grace_period_days", 3);
    for (const auto& jc : j.at("components")) {
      Component c;
      c.id = jc.at("id").get<std::string>();
      c.check = jc.value("check", "");
      std::string kind = jc.at("kind").get<std::string>();
      bool known = false;
      for (const auto& [k, name] : kKinds) {
        if (name == kind) {
          c.kind = k;
          known = true;
        }
      }
      if (!known) throw MinimumTableError(fmt::format("{}: component {} has unknown kind '{}'", t.origin, c.id, kind));
      c.parser = jc.value("parser", "numeric");
      c.release = jc.value("release", "");
      c.policy = jc.value("policy", "");
      c.package = jc.value("package", "");
      c.source = jc.value("source", "");
      c.eol_keys = jc.value("eol_keys", std::vector<std::string>{});
      c.unlisted_keys = jc.value("unlisted_keys", std::map<std::string, std::string>{});
      for (const auto& jf : jc.at("floors")) {
        Floor f;
        f.key = jf.at("key").get<std::string>();
        f.version = jf.at("version").get<std::string>();
        if (jf.contains("abi")) f.abi = jf["abi"].get<long long>();
        f.previous_version = jf.value("previous_version", "");
        f.legacy_affected_through = jf.value("legacy_affected_through", "");
        f.advisory = jf.value("advisory", "");
        f.advisory_url = jf.value("advisory_url", "");
        f.bulletin_released = OptTime(jf, "bulletin_released");
        f.available = OptTime(jf, "available");
        f.availability_status = jf.value("availability_status", "");
        f.cves = jf.value("cves", std::vector<std::string>{});
        c.floors.push_back(std::move(f));
      }
      if (c.floors.empty()) throw MinimumTableError(fmt::format("{}: component {} has no floors", t.origin, c.id));
      t.components.push_back(std::move(c));
    }
  } catch (const nlohmann::json::exception& e) {
    throw MinimumTableError(fmt::format("{}: malformed table: {}", t.origin, e.what()));
  }
  return t;
}

namespace {

bool Covers(const Component& c, const std::string& key) {
  return FindFloor(c, key) || std::find(c.eol_keys.begin(), c.eol_keys.end(), key) != c.eol_keys.end() ||
         c.unlisted_keys.count(key);
}

// Integer keys of a family in [oldest floor, newest floor], `step` apart, that the table does not cover.
void IntegerGaps(const Component& c, long long step, const std::string& family, std::vector<TableGap>& out) {
  std::optional<long long> lo, hi;
  for (const auto& f : c.floors) {
    auto k = util::ParseInt(f.key);
    if (!k) continue;
    lo = lo ? std::min(*lo, *k) : *k;
    hi = hi ? std::max(*hi, *k) : *k;
  }
  if (!lo) return;
  for (long long k = *lo - (*lo % step) + step; k < *hi; k += step) {
    if (!Covers(c, std::to_string(k))) out.push_back({c.id, std::to_string(k), family});
  }
}

// Ladder rungs MAJOR.MINOR: within each major, the minors between its lowest and highest rung.
void LadderGaps(const Component& c, std::vector<TableGap>& out) {
  std::map<long long, std::pair<long long, long long>> majors;  // major -> [lowest, highest] minor
  for (const auto& f : c.floors) {
    auto dot = f.key.find('.');
    if (dot == std::string::npos) continue;
    auto major = util::ParseInt(f.key.substr(0, dot)), minor = util::ParseInt(f.key.substr(dot + 1));
    if (!major || !minor) continue;
    auto [it, fresh] = majors.try_emplace(*major, *minor, *minor);
    if (!fresh) it->second = {std::min(it->second.first, *minor), std::max(it->second.second, *minor)};
  }
  for (const auto& [major, range] : majors) {
    for (long long m = range.first + 1; m < range.second; ++m) {
      std::string key = fmt::format("{}.{}", major, m);
      if (!Covers(c, key)) out.push_back({c.id, key, "runc minor"});
    }
  }
}

// GPU programs in generation order: "MI250" < "MI250X" < "MI300A" < "MI300X" (number, then suffix).
bool ProgramBefore(const std::string& a, const std::string& b) {
  auto split = [](const std::string& s) {
    size_t i = s.find_first_of("0123456789");
    size_t j = s.find_first_not_of("0123456789", i == std::string::npos ? s.size() : i);
    if (j == std::string::npos) j = s.size();
    long long n = i == std::string::npos ? 0 : util::ParseInt(s.substr(i, j - i)).value_or(0);
    return std::tuple(s.substr(0, i == std::string::npos ? s.size() : i), n, s.substr(j));
  };
  return split(a) < split(b);
}

void ProgramGaps(const MinimumTable& t, const Component& c, std::vector<TableGap>& out) {
  std::vector<std::string> known;  // every program any programMap component of the table names
  for (const auto& other : t.components) {
    if (other.kind != ComparisonKind::kProgramMap) continue;
    for (const auto& f : other.floors) {
      if (std::find(known.begin(), known.end(), f.key) == known.end()) known.push_back(f.key);
    }
  }
  std::sort(known.begin(), known.end(), ProgramBefore);
  std::string lo, hi;
  for (const auto& f : c.floors) {
    if (lo.empty() || ProgramBefore(f.key, lo)) lo = f.key;
    if (hi.empty() || ProgramBefore(hi, f.key)) hi = f.key;
  }
  for (const auto& p : known) {
    if (ProgramBefore(lo, p) && ProgramBefore(p, hi) && !Covers(c, p)) out.push_back({c.id, p, "GPU program"});
  }
}

}  // namespace

std::vector<TableGap> MinimumTableGaps(const MinimumTable& t) {
  std::vector<TableGap> out;
  for (const auto& c : t.components) {
    switch (c.kind) {
      case ComparisonKind::kBranchMap:
        IntegerGaps(c, 5, "driver branch", out);
        break;
      case ComparisonKind::kTrainMap:
        IntegerGaps(c, 1, "firmware train", out);
        break;
      case ComparisonKind::kLadder:
        LadderGaps(c, out);
        break;
      case ComparisonKind::kProgramMap:
        ProgramGaps(t, c, out);
        break;
      default:
        break;  // single floors, windows, packages and named lines have no key sequence
    }
  }
  return out;
}

std::string_view EmbeddedMinimumTableText() { return embedded::kMinimumVersionsJson; }

const MinimumTable& EmbeddedMinimumTable() {
  static const MinimumTable table = ParseMinimumTable(embedded::kMinimumVersionsJson, "embedded");
  return table;
}

Comparison Compare(const Component& c, const VersionInput& in, util::SysTime now, int grace_period_days) {
  Comparison r;
  switch (c.kind) {
    case ComparisonKind::kMinimum:
      r = CompareMinimum(c, in);
      break;
    case ComparisonKind::kBranchMap:
      r = CompareBranchMap(c, in);
      break;
    case ComparisonKind::kTrainMap:
      r = CompareTrainMap(c, in);
      break;
    case ComparisonKind::kLadder:
      r = CompareLadder(c, in);
      break;
    case ComparisonKind::kReleaseWindow:
      r = CompareReleaseWindow(c, in);
      break;
    case ComparisonKind::kProgramMap:
      r = CompareProgramMap(c, in);
      break;
    case ComparisonKind::kDistroPackages:
      r = CompareDistroPackages(c, in);
      break;
    case ComparisonKind::kReleaseLines:
      r = CompareReleaseLines(c, in);
      break;
  }
  bool eol = c.kind == ComparisonKind::kBranchMap && r.floor.empty() && r.outcome == Outcome::kFail;
  if (!eol) ApplyGrace(c, in, now, grace_period_days, r);
  return r;
}

Staleness TableStaleness(const MinimumTable& t, util::SysTime now) {
  Staleness s;
  s.age_days = util::DaysBetween(t.generated, now);
  s.stale = s.age_days > t.max_age_days;
  return s;
}

}  // namespace clustermax::core
