// The minimum-version table (data/minimum-versions.json, embedded at build time) and its eight
// comparison kinds. This is the only reader of the table; checks receive typed comparisons.
// Semantics: docs/minimum-versions.md. Every comparison is pure (the "now" is passed in).
#pragma once
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "util/time.h"

namespace clustermax::core {

enum class ComparisonKind {
  kMinimum,
  kBranchMap,
  kTrainMap,
  kLadder,
  kReleaseWindow,
  kProgramMap,
  kDistroPackages,
  kReleaseLines
};
std::string_view ToString(ComparisonKind k);

struct Floor {
  std::string key;  // branch, train, minor, program, line, "*" for single floors
  std::string version;
  std::optional<long long> abi;  // kernel floors
  std::string previous_version;  // the floor this one replaced (grace rule), when known
  std::string legacy_affected_through;
  std::string advisory;
  std::string advisory_url;
  std::optional<util::SysTime> bulletin_released;
  std::optional<util::SysTime> available;
  std::string availability_status;  // "confirmed" or anything else (unconfirmed)
  std::vector<std::string> cves;
};

struct Component {
  std::string id;
  std::string check;
  ComparisonKind kind = ComparisonKind::kMinimum;
  std::string parser;   // numeric | prerelease | debian | kernel-abi
  std::string release;  // distroPackages: the release codename it applies to ("noble")
  std::string policy;   // releaseWindow
  std::string package;  // distroPackages: package name
  std::vector<std::string> eol_keys;
  // Keys of the family deliberately left out of the table, each with the reason (a number NVIDIA
  // never used, a train the bulletin does not fix): graded unknown like any unlisted key, and not
  // reported as a gap by MinimumTableGaps.
  std::map<std::string, std::string> unlisted_keys;
  std::vector<Floor> floors;
  std::string source;
};

struct MinimumTable {
  int schema_version = 0;
  std::string generated_text;
  util::SysTime generated{};
  int max_age_days = 10;
  int grace_period_days = 3;
  std::vector<Component> components;
  std::string origin;  // "embedded" or the override path

  const Component* Find(std::string_view id) const;
};

class MinimumTableError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws MinimumTableError on malformed JSON, unknown schema version or unknown kinds.
MinimumTable ParseMinimumTable(std::string_view json_text, std::string origin);
const MinimumTable& EmbeddedMinimumTable();
std::string_view EmbeddedMinimumTableText();

enum class Outcome { kPass, kFail, kUnknown, kNotApplicable, kNewerThanCurrent };
std::string_view ToString(Outcome o);

struct VersionInput {
  std::string version;          // what was read (raw)
  std::string program;          // programMap: GPU program ("MI300X")
  std::string line;             // releaseLines: known line, empty when unknown
  std::string release;          // distroPackages: os-release VERSION_CODENAME
  std::string package_version;  // distroPackages kernel: installed linux-image version, if read
  bool release_proven = true;   // programMap: the release is bound to the loaded module
};

struct Comparison {
  Outcome outcome = Outcome::kUnknown;
  std::string key;    // floor key that was chosen
  std::string floor;  // the floor version compared against
  std::string advisory;
  std::string advisory_url;
  std::vector<std::string> cves;
  std::string message;  // why, in one sentence
  bool grace_active = false;
  bool grace_unconfirmed = false;
  std::string grace_ends;  // RFC 3339
};

Comparison Compare(const Component& c, const VersionInput& in, util::SysTime now, int grace_period_days);

struct Staleness {
  double age_days = 0;
  bool stale = false;
};
Staleness TableStaleness(const MinimumTable& t, util::SysTime now);

// A key of a keyed family that lies between the family's oldest and newest row and that the table
// neither lists (a floor), nor marks end-of-life (`eol_keys`), nor declares deliberately unlisted
// (`unlisted_keys`): most likely a row lost or never added. A version on it grades unknown.
struct TableGap {
  std::string component;  // "nvidiaDriver"
  std::string key;        // "575"
  std::string family;     // "driver branch", "firmware train", "runc minor", "GPU program"
};
// Gaps of every keyed family, in table order then key order. The families and their steps:
// branchMap (NVIDIA driver branches, numbered in steps of 5), trainMap (firmware trains, step 1),
// ladder (MAJOR.MINOR rungs, consecutive minors within a major) and programMap (GPU programs: the
// programs of all programMap components of the table, in generation order). Pure.
std::vector<TableGap> MinimumTableGaps(const MinimumTable& t);

}  // namespace clustermax::core
