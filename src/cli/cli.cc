// The command line: Main builds the tree from every file's registration (cli/command.h), parses,
// and runs the subcommand named. Errors of any layer are printed once, here.
#include "cli/cli.h"

#include <algorithm>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/command.h"
#include "core/version.h"
#include "util/strings.h"
#include "util/usage_error.h"

namespace clustermax::cli {
namespace {

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// For a command line CLI11 refused: the first word that is not a subcommand where one is expected,
// with the nearest subcommand ("unknown command 'audti'; did you mean 'audit'?"). "" when the
// words are all known (the error is about an option: CLI11's message says it).
std::string SuggestSubcommand(CLI::App& app, const std::vector<std::string>& args) {
  CLI::App* cur = &app;
  std::string path = "clustermax";
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& w = args[i];
    if (w.empty() || w[0] == '-') return "";
    auto subs = cur->get_subcommands([](CLI::App*) { return true; });
    if (subs.empty()) return "";
    CLI::App* match = nullptr;
    for (auto* s : subs) {
      if (s->get_name() == w) match = s;
    }
    if (match) {
      cur = match;
      path += " " + w;
      continue;
    }
    std::string best;
    size_t best_d = SIZE_MAX;
    std::vector<std::string> names;
    for (auto* s : subs) {
      names.push_back(s->get_name());
      size_t d = EditDistance(w, s->get_name());
      if (d < best_d) best_d = d, best = s->get_name();
    }
    std::string known = fmt::format("{}", fmt::join(names, ", "));
    if (best_d <= std::max<size_t>(2, best.size() / 3)) {
      return fmt::format("unknown command '{} {}'; did you mean '{} {}'? ({} commands: {})", path,
                         util::EscapeControls(w), path, best, path, known);
    }
    return fmt::format("unknown command '{} {}' ({} commands: {})", path, util::EscapeControls(w), path, known);
  }
  return "";
}

// CLI11's own exits (help, version) and parse errors, with the nearest subcommand for a misspelt
// one. nullopt when the command line parsed.
std::optional<int> Parse(CLI::App& app, int argc, char** argv, const std::vector<std::string>& args) {
  try {
    app.parse(argc, argv);
    return std::nullopt;
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (std::string s = SuggestSubcommand(app, args); !s.empty()) {
      std::cerr << "clustermax: error: " << s << "\n";
      return kExitToolError;
    }
    app.exit(e);
    return kExitToolError;
  }
}

}  // namespace

int Main(int argc, char** argv) {
  CLI::App app{"clustermax: audit, benchmark and rate GPU clusters"};
  app.require_subcommand(1);
  app.set_version_flag(
      "--version", fmt::format("clustermax {} (commit {}, {})", core::kToolVersion, core::kGitSha, core::kBuildType));
  Commands table;
  table.SetArgv({argv, argv + argc});
  // In this order in --help, the man page and the completions.
  AddAuditCommands(app, table);
  AddCatalogCommands(app, table);
  AddBenchCommands(app, table);
  AddRateCommands(app, table);
  AddDbCommands(app, table);
  AddWebCommands(app, table);
  AddExportCommands(app, table);
  AddHealthCommands(app, table);
  AddCollectCommands(app, table);
  AddDocsCommands(app, table);
  if (auto code = Parse(app, argc, argv, table.argv())) return *code;
  try {
    if (const auto* run = table.Parsed()) return (*run)();
  } catch (const std::exception& e) {  // UsageError and every other failure: the message, exit 1
    std::cerr << "clustermax: error: " << util::EscapeControls(e.what()) << "\n";
    return kExitToolError;
  }
  return kExitToolError;
}

}  // namespace clustermax::cli
