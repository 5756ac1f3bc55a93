#include "rating/assessment.h"

#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

namespace clustermax::rating {

namespace {

std::string Scalar(const YAML::Node& n) {
  if (!n || n.IsNull()) return "";
  if (!n.IsScalar()) throw YAML::RepresentationException(n.Mark(), "expected a single value");
  return n.as<std::string>();
}

// YAML 1.1 readers (and people) write yes/no as booleans; accept them as the words.
std::string AnswerWord(const YAML::Node& n) {
  std::string s = Scalar(n);
  if (s == "true" || s == "True" || s == "yes" || s == "Yes") return "yes";
  if (s == "false" || s == "False" || s == "no" || s == "No") return "no";
  return s;
}

}  // namespace

Assessment ParseAssessment(const std::string& text, const std::string& origin, const Catalog& catalog) {
  auto fail = [&](const YAML::Mark& m, const std::string& what) {
    throw std::runtime_error(m.line >= 0 ? fmt::format("{}:{}: {}", origin, m.line + 1, what)
                                         : fmt::format("{}: {}", origin, what));
  };
  std::set<std::string> keys;
  for (const auto& c : catalog.criteria) {
    if (c.assessment) keys.insert(c.assessment->key);
  }
  Assessment a;
  a.origin = origin;
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) fail(root.Mark(), "expected a mapping with edition, provider and answers");
    for (const auto& kv : root) {
      std::string k = kv.first.as<std::string>();
      if (k != "edition" && k != "provider" && k != "cluster" && k != "unavailable" && k != "answers") {
        fail(kv.first.Mark(), "unknown field '" + k + "' (edition, provider, cluster, unavailable, answers)");
      }
    }
    a.edition = Scalar(root["edition"]);
    if (a.edition.empty()) fail(root.Mark(), "'edition' is missing");
    if (a.edition != catalog.edition)
      fail(root["edition"].Mark(),
           fmt::format("edition {} does not match the catalog's {}", a.edition, catalog.edition));
    a.provider = Scalar(root["provider"]);
    if (a.provider.empty()) fail(root.Mark(), "'provider' is missing");
    a.cluster = Scalar(root["cluster"]);
    std::string un = Scalar(root["unavailable"]);
    if (!un.empty() && un != "null") {
      if (!catalog.unavailable_classes.count(un)) {
        std::string known;
        for (const auto& [id, _] : catalog.unavailable_classes) known += (known.empty() ? "" : ", ") + id;
        fail(root["unavailable"].Mark(), fmt::format("unknown unavailable class '{}' (known: {})", un, known));
      }
      a.unavailable = un;
    }
    YAML::Node answers = root["answers"];
    if (answers && !answers.IsNull()) {
      if (!answers.IsMap()) fail(answers.Mark(), "'answers' must map assessment keys to answers");
      for (const auto& kv : answers) {
        std::string key = kv.first.as<std::string>();
        if (!keys.count(key))
          fail(kv.first.Mark(), fmt::format("unknown assessment key '{}' (see clustermax rate --template)", key));
        Answer ans;
        const YAML::Node& v = kv.second;
        if (v.IsMap()) {
          for (const auto& f : v) {
            std::string fk = f.first.as<std::string>();
            if (fk != "answer" && fk != "source" && fk != "date" && fk != "note") {
              fail(f.first.Mark(), "unknown field '" + fk + "' (answer, source, date, note)");
            }
          }
          ans.value = AnswerWord(v["answer"]);
          ans.source = Scalar(v["source"]);
          ans.date = Scalar(v["date"]);
          ans.note = Scalar(v["note"]);
        } else {
          ans.value = AnswerWord(v);
        }
        if (ans.value.empty()) ans.value = "unknown";
        if (ans.value != "yes" && ans.value != "partial" && ans.value != "no" && ans.value != "unknown") {
          fail(v.Mark(), fmt::format("answer for {} is '{}': yes, partial, no or unknown", key, ans.value));
        }
        a.answers[key] = ans;
      }
    }
  } catch (const YAML::Exception& e) {
    fail(e.mark, e.msg);
  }
  return a;
}

std::string AssessmentTemplate(const Catalog& catalog) {
  std::string out = fmt::format(
      "# ClusterMAX {} assessment: what a person attests about the provider (clustermax rate --assessment FILE).\n"
      "# Each answer: yes | partial | no | unknown, with the document that shows it (source) and its date.\n"
      "# Unknown is never credited: an unanswered item counts as 0 and is listed in the rating.\n"
      "edition: \"{}\"\n"
      "provider: \"\"          # the provider's name\n"
      "cluster: \"\"           # optional: the cluster or region the runs come from\n"
      "unavailable: null     # or the reason it is not rated:",
      catalog.edition, catalog.edition);
  for (const auto& [id, about] : catalog.unavailable_classes) out += fmt::format(" {} ({});", id, about);
  out += "\nanswers:\n";
  for (const auto& cat : catalog.categories) {
    bool header = false;
    for (const auto& c : catalog.criteria) {
      if (c.category != cat.id || !c.assessment) continue;
      if (!header) {
        out += fmt::format("\n  # --- {} ---\n", cat.title);
        header = true;
      }
      out +=
          fmt::format("  # {}{}\n", c.title, c.critical ? " (CRITICAL: 'no' rates the provider Underperforming)" : "");
      if (!c.assessment->help.empty()) out += fmt::format("  # {}\n", c.assessment->help);
      out += fmt::format("  {}:\n    answer: unknown\n    source: \"\"\n    date: \"\"\n", c.assessment->key);
    }
  }
  return out;
}

}  // namespace clustermax::rating
