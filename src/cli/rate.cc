// `clustermax rate`: run directories and an assessment in, a tier with its explanation out.

#include <algorithm>
#include <iostream>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/cli.h"
#include "cli/command.h"
#include "rating/rate.h"
#include "util/files.h"

namespace clustermax::cli {
using nlohmann::json;

namespace {

struct RateOptions {
  std::vector<std::string> dirs, cohort;
  std::string assessment_file, edition = "3.0", catalog_file, out_file, min_tier;
  bool json_out = false, template_out = false;
  int verbosity = 0;
};

// The ladder position of a tier (0 is best); the ladder's size for a name not on it.
size_t Rung(const rating::Catalog& cat, const std::string& tier) {
  auto it = std::find(cat.ladder.begin(), cat.ladder.end(), tier);
  return static_cast<size_t>(it - cat.ladder.begin());
}

int PrintTemplate(const rating::Catalog& cat, const RateOptions& o) {
  std::string t = rating::AssessmentTemplate(cat);
  if (o.out_file.empty()) {
    std::cout << t;
    return kExitOk;
  }
  util::WriteFileAtomic(o.out_file, t);
  std::cerr << fmt::format("assessment template written to {}\n", o.out_file);
  return kExitOk;
}

int RateCohort(const rating::Catalog& cat, const RateOptions& o) {
  std::vector<json> ratings;
  for (const auto& f : o.cohort) {
    auto text = util::ReadLocalFile(f);
    if (!text) throw std::invalid_argument(f + ": no such file");
    ratings.push_back(util::ParseJsonDocument(*text, f));
  }
  json c = rating::Cohort(cat, ratings);
  if (!o.out_file.empty()) util::WriteFileAtomic(o.out_file, util::JsonText(c) + "\n");
  std::cout << (o.json_out ? util::JsonText(c) + "\n" : rating::RenderCohort(util::EscapeControlsInJson(c)));
  return kExitOk;
}

int RateRuns(const rating::Catalog& cat, const RateOptions& o) {
  if (o.dirs.empty() && o.assessment_file.empty()) {
    std::cerr << "clustermax rate: give run directories and/or --assessment FILE (or --template)\n";
    return kExitToolError;
  }
  std::optional<rating::Assessment> as;
  if (!o.assessment_file.empty())
    as = rating::ParseAssessment(*util::ReadLocalFile(o.assessment_file), o.assessment_file, cat);
  std::vector<rating::RunInput> runs;
  for (const auto& d : o.dirs) runs.push_back(rating::LoadRunDir(d));
  if (!o.min_tier.empty() && Rung(cat, o.min_tier) == cat.ladder.size()) {
    throw std::invalid_argument(fmt::format("--min-tier {}: not a tier of edition {} (one of {})", o.min_tier,
                                            cat.edition, fmt::join(cat.ladder, ", ")));
  }
  json r = rating::Rate(cat, runs, as);
  if (!o.out_file.empty()) util::WriteFileAtomic(o.out_file, util::JsonText(r) + "\n");
  std::cout << (o.json_out ? util::JsonText(r) + "\n"
                           : rating::RenderRating(util::EscapeControlsInJson(r), o.verbosity));
  // No tier without the minimum evidence: the rating is written, and the exit status says so.
  std::string tier = r["tier"];
  if (tier == rating::kInsufficientEvidence) {
    std::cerr << "clustermax rate: no tier given: the input is short of the minimum evidence (see 'decided by')\n";
    return kExitFail;
  }
  if (!o.min_tier.empty() && Rung(cat, tier) > Rung(cat, o.min_tier)) {
    std::cerr << fmt::format("clustermax rate: tier {} is below --min-tier {}\n", tier, o.min_tier);
    return kExitFail;
  }
  return kExitOk;
}

int RunRate(const RateOptions& o) {
  rating::Catalog loaded;
  const rating::Catalog* cat = &loaded;
  if (!o.catalog_file.empty()) {
    loaded = rating::ParseCatalog(*util::ReadLocalFile(o.catalog_file), o.catalog_file);
  } else {
    cat = &rating::EmbeddedCatalog(o.edition);
  }
  if (o.template_out) return PrintTemplate(*cat, o);
  if (!o.cohort.empty()) return RateCohort(*cat, o);
  return RateRuns(*cat, o);
}

}  // namespace

void AddRateCommands(CLI::App& app, Commands& table) {
  auto o = std::make_shared<RateOptions>();
  auto* cmd = app.add_subcommand(
      "rate", "Rate a provider from audit and benchmark runs and an assessment: criteria, categories, gates, tier");
  cmd->add_option("runs", o->dirs,
                  "Run directories (report.json and/or bench/*.json), e.g. ~/.clustermax/runs/<timestamp>");
  cmd->add_option("--assessment", o->assessment_file,
                  "YAML with the attested items (clustermax rate --template writes a blank one)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--edition", o->edition, "ClusterMAX edition whose criteria and ladder apply");
  cmd->add_option("--catalog", o->catalog_file, "Criteria catalog instead of the embedded data/rating/<edition>.json")
      ->check(CLI::ExistingFile);
  cmd->add_option("--cohort", o->cohort,
                  "Rank several ratings (rate --out files) together: relative tiers beside the absolute ones")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--template", o->template_out, "Print a commented blank assessment for the edition and exit");
  cmd->add_flag("--json", o->json_out, "Print the rating as JSON");
  cmd->add_option("--out", o->out_file, "Also write the rating JSON to FILE (atomically)");
  cmd->add_flag("-v", o->verbosity, "Criteria (-v) and their evidence (-vv)");
  cmd->add_option("--min-tier", o->min_tier,
                  "Exit 2 unless the tier is this one of the edition's ladder or a better one (for CI)");
  table.Add(cmd, [o] { return RunRate(*o); });
}

}  // namespace clustermax::cli
