// Evidence: what a collector read from a node, with its own collection status, so that
// "could not look" (permission denied, timeout, missing tool) is never confused with
// "looked and found nothing". Checks judge only EvidenceSets; they never touch the machine.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::core {

enum class EvidenceStatus {
  kOk,                // read and parsed; `data` holds the facts (which may say "absent")
  kNotFound,          // the source itself does not exist (file missing, command not installed)
  kPermissionDenied,  // exists but this identity cannot read it
  kTimeout,           // a command or read exceeded its deadline
  kParseError,        // read, but the text did not have the expected shape (raw text kept)
  kError,             // any other failure to read
  kProbeDisabled,     // an active probe that was not requested
  kNotCollected,      // no collector ran for it (e.g. replay of an older bundle)
};

std::string_view ToString(EvidenceStatus s);
EvidenceStatus EvidenceStatusFromString(std::string_view s);

struct Evidence {
  std::string id;
  EvidenceStatus status = EvidenceStatus::kNotCollected;
  nlohmann::json data = nlohmann::json::object();  // facts, numbers as numbers
  std::string error;                               // the raw error or unparsable text
  std::vector<std::string> sources;                // "file:/proc/...", "cmd:perf --version", "nvml"
  // The machine gave bytes that are not UTF-8; they were replaced by U+FFFD (SanitizeEvidence).
  bool invalid_utf8 = false;

  bool ok() const { return status == EvidenceStatus::kOk; }
};

// Every string of the evidence (data values and keys, error, sources) made valid UTF-8, invalid
// bytes replaced by U+FFFD and flagged in `invalid_utf8`. The collection driver applies it to
// every collector's answer, so no judge, report or JSON writer ever sees raw machine bytes.
void SanitizeEvidence(Evidence& e);

void to_json(nlohmann::json& j, const Evidence& e);
void from_json(const nlohmann::json& j, Evidence& e);

using EvidenceSet = std::map<std::string, Evidence, std::less<>>;

// ---- Typed evidence: the fields a collector declares for its `data` (docs/evidence-fields.md) ----
enum class FieldType { kString, kNumber, kInteger, kBool, kObject, kArray, kAny };
std::string_view ToString(FieldType t);

// One declared field of an evidence item's data. `path` names it from the data's root: "running",
// "gpus[].uuid" (a key of every element of the array "gpus"), "devices[].ports[].rate",
// "tokens[]" (the elements of the array "tokens" themselves), "settings{}" (an object whose keys are
// free: the type is that of its values) and "days{}{}" / "days{}.x" below it. An object or array
// field without declared children is opaque (its content is not checked).
struct FieldSpec {
  std::string path;
  FieldType type = FieldType::kAny;
  std::string unit;       // "MiB", "s", "Gb/s", "" when none
  std::string meaning;    // one line
  bool nullable = false;  // JSON null is also a valid value
};

// Empty when `path` is well formed: segments [a-z0-9_] (a leading letter or digit), each followed by
// any number of "[]" / "{}", separated by '.'; else what is wrong.
std::string FieldPathProblem(std::string_view path);

// Problems of `data` against `fields`, one line each ("undeclared key 'x' at devices[]",
// "'running' is a number, declared string"): every key present must be declared and its value of
// the declared type. Keys the collection driver adds to any item ("not_taken") are always allowed.
std::vector<std::string> CheckDeclaredFields(const std::vector<FieldSpec>& fields, const nlohmann::json& data);

// `data` without the keys `fields` does not declare (what a judge reading only declared fields sees).
nlohmann::json ProjectDeclaredFields(const std::vector<FieldSpec>& fields, const nlohmann::json& data);

}  // namespace clustermax::core
