// The assessment file: what a person attests for the criteria no machine can answer (attestations,
// SLA, support, pricing terms, partnerships, availability), in YAML, each answer with its source
// and date. `clustermax rate --template` writes a commented blank one from the catalog.
//
//   edition: "3.0"
//   provider: Example Cloud
//   cluster: h200-east-1            # optional
//   unavailable: null               # or a class of the catalog (declined, not-launched, ...)
//   answers:
//     security.soc2_or_iso27001:
//       answer: yes                 # yes | partial | no | unknown
//       source: https://trust.example.com/soc2.pdf
//       date: 2026-06-30
//       note: Type II, period ending 2026-05-31
#pragma once
#include <map>
#include <optional>
#include <string>

#include "rating/catalog.h"

namespace clustermax::rating {

struct Answer {
  std::string value;  // yes, partial, no, unknown
  std::string source, date, note;
};

struct Assessment {
  std::string edition, provider, cluster, origin;
  std::optional<std::string> unavailable;  // a catalog unavailable class
  std::map<std::string, Answer> answers;   // by assessment key
};

// Parses and validates against the catalog: unknown keys, answers outside yes/partial/no/unknown,
// unknown unavailable classes and a wrong edition are errors (std::runtime_error naming the file
// and the line).
Assessment ParseAssessment(const std::string& yaml_text, const std::string& origin, const Catalog& catalog);

// A commented blank assessment with every key of the catalog (all answers "unknown").
std::string AssessmentTemplate(const Catalog& catalog);

}  // namespace clustermax::rating
