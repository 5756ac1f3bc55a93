#include "cli/rate.h"

#include <algorithm>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/cli.h"
#include "rating/rate.h"
#include "util/files.h"

namespace clustermax::cli {
using nlohmann::json;

void AddRateCommand(CLI::App& app, RateCommand& rc) {
  static std::vector<std::string> dirs;
  static std::string assessment_file, edition = "3.0", catalog_file, out_file, min_tier;
  static bool json_out = false, template_out = false;
  static std::vector<std::string> cohort;
  static int verbosity = 0;
  auto* cmd = app.add_subcommand("rate", "Rate a provider from audit and benchmark runs and an assessment: criteria, categories, gates, tier");
  cmd->add_option("runs", dirs, "Run directories (report.json and/or bench/*.json), e.g. ~/.clustermax/runs/<timestamp>");
  cmd->add_option("--assessment", assessment_file, "YAML with the attested items (clustermax rate --template writes a blank one)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--edition", edition, "ClusterMAX edition whose criteria and ladder apply");
  cmd->add_option("--catalog", catalog_file, "Criteria catalog instead of the embedded data/rating/<edition>.json")->check(CLI::ExistingFile);
  cmd->add_option("--cohort", cohort, "Rank several ratings (rate --out files) together: relative tiers beside the absolute ones")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--template", template_out, "Print a commented blank assessment for the edition and exit");
  cmd->add_flag("--json", json_out, "Print the rating as JSON");
  cmd->add_option("--out", out_file, "Also write the rating JSON to FILE (atomically)");
  cmd->add_flag("-v", verbosity, "Criteria (-v) and their evidence (-vv)");
  cmd->add_option("--min-tier", min_tier, "Exit 2 unless the tier is this one of the edition's ladder or a better one (for CI)");
  rc.cmd = cmd;
  rc.run = []() -> int {
    const rating::Catalog* cat = nullptr;
    rating::Catalog loaded;
    if (!catalog_file.empty()) {
      loaded = rating::ParseCatalog(*util::ReadLocalFile(catalog_file), catalog_file);
      cat = &loaded;
    } else {
      cat = &rating::EmbeddedCatalog(edition);
    }
    if (template_out) {
      std::string t = rating::AssessmentTemplate(*cat);
      if (!out_file.empty()) {
        util::WriteFileAtomic(out_file, t);
        std::cerr << fmt::format("assessment template written to {}\n", out_file);
      } else {
        std::cout << t;
      }
      return kExitOk;
    }
    if (!cohort.empty()) {
      std::vector<json> ratings;
      for (const auto& f : cohort) {
        auto text = util::ReadLocalFile(f);
        if (!text) throw std::invalid_argument(f + ": no such file");
        ratings.push_back(util::ParseJsonDocument(*text, f));
      }
      json c = rating::Cohort(*cat, ratings);
      if (!out_file.empty()) util::WriteFileAtomic(out_file, util::JsonText(c) + "\n");
      std::cout << (json_out ? util::JsonText(c) + "\n" : rating::RenderCohort(util::EscapeControlsInJson(c)));
      return kExitOk;
    }
    if (dirs.empty() && assessment_file.empty()) {
      std::cerr << "clustermax rate: give run directories and/or --assessment FILE (or --template)\n";
      return kExitToolError;
    }
    std::optional<rating::Assessment> as;
    if (!assessment_file.empty()) as = rating::ParseAssessment(*util::ReadLocalFile(assessment_file), assessment_file, *cat);
    std::vector<rating::RunInput> runs;
    for (const auto& d : dirs) runs.push_back(rating::LoadRunDir(d));
    auto rung = [&](const std::string& t) {
      auto it = std::find(cat->ladder.begin(), cat->ladder.end(), t);
      return it == cat->ladder.end() ? cat->ladder.size() : static_cast<size_t>(it - cat->ladder.begin());
    };
    if (!min_tier.empty() && rung(min_tier) == cat->ladder.size()) {
      throw std::invalid_argument(fmt::format("--min-tier {}: not a tier of edition {} (one of {})", min_tier, cat->edition, fmt::join(cat->ladder, ", ")));
    }
    json r = rating::Rate(*cat, runs, as);
    if (!out_file.empty()) util::WriteFileAtomic(out_file, util::JsonText(r) + "\n");
    std::cout << (json_out ? util::JsonText(r) + "\n" : rating::RenderRating(util::EscapeControlsInJson(r), verbosity));
    // No tier without the minimum evidence: the rating is written, and the exit status says so.
    std::string tier = r["tier"];
    if (tier == rating::kInsufficientEvidence) {
      std::cerr << "clustermax rate: no tier given: the input is short of the minimum evidence (see 'decided by')\n";
      return kExitFail;
    }
    if (!min_tier.empty() && rung(tier) > rung(min_tier)) {
      std::cerr << fmt::format("clustermax rate: tier {} is below --min-tier {}\n", tier, min_tier);
      return kExitFail;
    }
    return kExitOk;
  };
}

}  // namespace clustermax::cli
