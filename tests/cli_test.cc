// Everyday use of the command line: run names, replays of saved runs, --show, misspelt commands.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testutil.h"
#include "util/files.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace clustermax;
namespace cmt = clustermax::testing;

namespace {

fs::path Scratch(const std::string& name) { return cmt::ScratchDir("cli-" + name); }
cmt::Shell Cli(const std::string& args, const std::string& env = "") { return cmt::RunBinary(args, env); }

json JsonFrom(const std::string& out) {
  size_t b = out.find('{'), e = out.rfind('}');
  return json::parse(out.substr(b, e - b + 1));
}

}  // namespace

TEST(Cli, TwoAuditsInTheSameSecondBothKeepTheirRuns) {
  fs::path d = Scratch("same-second");
  std::string env = "HOME=" + d.string();
  cmt::Shell a, b;
  std::thread t1([&] { a = Cli("audit --standalone --yes --check security-runc --check guest-kernel-current", env); });
  std::thread t2([&] { b = Cli("audit --standalone --yes --check security-runc --check guest-kernel-current", env); });
  t1.join();
  t2.join();
  EXPECT_TRUE(a.code == 0 || a.code == 2) << a.out;
  EXPECT_TRUE(b.code == 0 || b.code == 2) << b.out;
  int runs = 0;
  for (const auto& e : fs::directory_iterator(d / ".clustermax" / "runs")) {
    EXPECT_TRUE(fs::exists(e.path() / "report.json")) << e.path();
    ++runs;
  }
  EXPECT_EQ(runs, 2);
}

TEST(Cli, ReplayTakesARunDirectoryWritesOutAndCountsACollectionOnce) {
  fs::path d = Scratch("replay-run");
  auto live = Cli("audit --standalone --yes --check security-runc --out " + (d / "run1").string());
  ASSERT_TRUE(live.code == 0 || live.code == 2) << live.out;
  fs::path bundle;
  for (const auto& e : fs::directory_iterator(d / "run1" / "evidence")) bundle = e.path();
  ASSERT_FALSE(bundle.empty());
  // A run directory, the same bundle by its path, and a copy: one node.
  fs::copy_file(bundle, d / "copy.json");
  auto r = Cli("audit --replay " + (d / "run1").string() + " " + bundle.string() + " " + (d / "copy.json").string() +
               " --json --out " + (d / "run2").string());
  ASSERT_TRUE(r.code == 0 || r.code == 2) << r.out;
  EXPECT_EQ(JsonFrom(r.out)["nodes"].size(), 1u) << r.out;
  EXPECT_NE(r.out.find("same collection"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::exists(d / "run2" / "report.json"));
  int bundles = 0;
  for (const auto& e : fs::directory_iterator(d / "run2" / "evidence")) bundles += e.path().extension() == ".json";
  EXPECT_EQ(bundles, 1);
  // The re-saved run replays in turn.
  auto again = Cli("audit --replay " + (d / "run2").string() + " --json");
  EXPECT_TRUE(again.code == 0 || again.code == 2) << again.out;
  auto not_a_run = Cli("audit --replay " + d.string());
  EXPECT_EQ(not_a_run.code, 1);
  EXPECT_NE(not_a_run.out.find("not a run directory"), std::string::npos) << not_a_run.out;
}

TEST(Cli, ShowSaysWhichTargetItAssumed) {
  auto r = Cli("audit --show --container");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("target: container (--container)", 0), 0u) << r.out.substr(0, 200);
  EXPECT_NE(r.out.find("skip: not-in-scope for container"), std::string::npos);
}

TEST(Cli, MisspeltSubcommandGetsTheNearestOne) {
  auto r = Cli("audti --standalone");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("did you mean 'clustermax audit'"), std::string::npos) << r.out;
  auto db = Cli("db lsit");
  EXPECT_EQ(db.code, 1);
  EXPECT_NE(db.out.find("did you mean 'clustermax db list'"), std::string::npos) << db.out;
  auto far = Cli("xyzzyplugh");
  EXPECT_EQ(far.code, 1);
  EXPECT_NE(far.out.find("unknown command 'clustermax xyzzyplugh'"), std::string::npos) << far.out;
}

TEST(Cli, GroupOptionsAreAcceptedAfterTheSubcommand) {
  fs::path d = Scratch("db-options");
  auto live = Cli("audit --standalone --yes --check security-runc --out " + (d / "run").string());
  ASSERT_TRUE(live.code == 0 || live.code == 2) << live.out;
  auto ingest = Cli("db ingest " + (d / "run").string() + " --db " + (d / "r.db").string());
  EXPECT_EQ(ingest.code, 0) << ingest.out;
  auto list = Cli("db list --json --db " + (d / "r.db").string());
  EXPECT_EQ(list.code, 0) << list.out;
  EXPECT_EQ(json::parse(list.out.substr(list.out.find('['))).size(), 1u);
  auto checks = Cli("checks list --json");
  EXPECT_EQ(checks.code, 0);
  EXPECT_EQ(checks.out.find('['), 0u) << checks.out.substr(0, 100);
}

// The completion scripts and the man page come from the command tree: bash completes commands,
// nested subcommands and options of the command typed so far; zsh loads the script; the man page
// renders without a warning and documents every command.
TEST(Cli, CompletionScriptsAndManPageFollowTheCommandTree) {
  auto bash = Cli("completion bash");
  ASSERT_EQ(bash.code, 0) << bash.out;
  fs::path dir = fs::temp_directory_path() / ("cm-completion-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "clustermax.bash") << bash.out;
  auto complete = [&](const std::string& words) {
    std::string script = "source " + (dir / "clustermax.bash").string() + "; COMP_WORDS=(" + words +
                         "); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _clustermax; echo \"${COMPREPLY[*]}\"";
    auto r = cmt::RunShell("bash -c '" + script + "'");
    EXPECT_EQ(r.code, 0) << r.out;
    std::string out = r.out;
    while (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
  };
  EXPECT_EQ(complete("clustermax au"), "audit");
  EXPECT_EQ(complete("clustermax audit --stand"), "--standalone");
  EXPECT_EQ(complete("clustermax audit rev"), "review");
  EXPECT_EQ(complete("clustermax audit review --comm"), "--command") << "options of the nested command, not of audit";
  EXPECT_EQ(complete("clustermax bench --standalone"), "") << "audit's options are not bench's";
  EXPECT_EQ(complete("clustermax minimums up"), "update");
  EXPECT_EQ(complete("clustermax --vers"), "--version");

  auto zsh = Cli("completion zsh");
  ASSERT_EQ(zsh.code, 0);
  EXPECT_EQ(zsh.out.rfind("#compdef clustermax\n", 0), 0u);
  std::ofstream(dir / "_clustermax") << zsh.out;
  if (cmt::RunShell("command -v zsh").code == 0) {
    auto z = cmt::RunShell("zsh -fc 'autoload -U compinit && compinit -u -D; source " + (dir / "_clustermax").string() +
                           "; print -r -- ${_clustermax_commands[audit]}; print -r -- ${(t)_clustermax_options}'");
    EXPECT_EQ(z.code, 0) << z.out;
    EXPECT_NE(z.out.find("review:Re-judge"), std::string::npos) << z.out;
    EXPECT_NE(z.out.find("association"), std::string::npos) << z.out;
  }

  auto man = Cli("manpage");
  ASSERT_EQ(man.code, 0);
  std::ofstream(dir / "clustermax.1") << man.out;
  for (const char* cmd : {"audit", "audit review", "bench gpu", "completion", "serve", "db diff", "minimums update"}) {
    EXPECT_NE(man.out.find(std::string(".SS \"clustermax ") + cmd + "\""), std::string::npos) << cmd;
  }
  EXPECT_EQ(man.out.find("manpage"), std::string::npos) << "the hidden command is not documented";
  if (cmt::RunShell("command -v man").code == 0) {
    auto r = cmt::RunShell("MANWIDTH=100 LC_ALL=C.UTF-8 man --warnings -E UTF-8 -l " + (dir / "clustermax.1").string() +
                           " 2>" + (dir / "warnings").string());
    EXPECT_EQ(r.code, 0);
    EXPECT_EQ(util::ReadLocalFile(dir / "warnings").value_or("?"), "") << "man page warnings";
    EXPECT_NE(r.out.find("--standalone"), std::string::npos);
    EXPECT_NE(r.out.find("EXIT STATUS"), std::string::npos);
  }
  fs::remove_all(dir);
}
