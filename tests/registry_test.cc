// Registry consistency: ids, categories, evidence wiring, generated docs.
#include <gtest/gtest.h>

#include <set>

#include "checks/register.h"
#include "collect/collector.h"
#include "report/checks_doc.h"
#include "testutil.h"

using namespace clustermax;

TEST(Registry, IdsAreUniqueKebabCaseAndDescribed) {
  std::set<std::string> ids;
  for (const auto& c : checks::DefaultRegistry().all()) {
    const auto& i = c.info;
    EXPECT_TRUE(core::IsKebabCase(i.id)) << i.id;
    EXPECT_TRUE(ids.insert(i.id).second) << "duplicate " << i.id;
    EXPECT_FALSE(i.title.empty()) << i.id;
    EXPECT_FALSE(i.rationale.empty()) << i.id;
    EXPECT_FALSE(i.remediation.empty()) << i.id;
    EXPECT_NE(i.targets, 0) << i.id;
    for (const auto& r : i.references) EXPECT_EQ(r.url.rfind("https://", 0), 0u) << i.id << " " << r.url;
  }
  EXPECT_GE(ids.size(), 15u);
}

TEST(Registry, EveryNeededEvidenceHasACollectorWithSources) {
  for (const auto& c : checks::DefaultRegistry().all()) {
    for (const auto& n : c.info.needs) EXPECT_NE(collect::FindCollector(n), nullptr) << c.info.id << " needs " << n;
    if (!c.info.probe.empty()) {
      bool has_probe_collector = false;
      for (const auto& n : c.info.needs) {
        const auto* col = collect::FindCollector(n);
        has_probe_collector |= col && col->info.probe == c.info.probe;
      }
      EXPECT_TRUE(has_probe_collector) << c.info.id << " names probe " << c.info.probe << " but no collector runs it";
    }
  }
  std::set<std::string> ids;
  for (const auto& col : collect::Collectors()) {
    EXPECT_TRUE(ids.insert(col.info.id).second) << "duplicate collector " << col.info.id;
    EXPECT_FALSE(col.info.sources.empty()) << col.info.id;
    EXPECT_FALSE(col.info.description.empty()) << col.info.id;
    if (!col.info.probe.empty()) {
      EXPECT_NE(core::FindProbe(col.info.probe), nullptr) << col.info.id;
    }
  }
}

TEST(Registry, AddRejectsDefects) {
  core::Registry r;
  auto judge = [](const core::JudgeContext&) { return core::Pass("x"); };
  EXPECT_THROW(r.Add({core::CheckInfo{.id = "Bad_Id", .category = "versions"}, judge}), std::invalid_argument);
  EXPECT_THROW(r.Add({core::CheckInfo{.id = "ok-id", .category = "nonsense"}, judge}), std::invalid_argument);
  EXPECT_THROW(r.Add({core::CheckInfo{.id = "ok-id", .category = "versions", .probe = "no-such-probe"}, judge}),
               std::invalid_argument);
  r.Add({core::CheckInfo{.id = "ok-id", .category = "versions"}, judge});
  EXPECT_THROW(r.Add({core::CheckInfo{.id = "ok-id", .category = "versions"}, judge}), std::invalid_argument);
}

TEST(Registry, ReadingUndeclaredEvidenceIsCaught) {
  core::CheckInfo info{.id = "sneaky", .category = "versions", .needs = {"os.release"}};
  core::EvidenceSet ev;
  core::JudgeContext ctx(info, ev, core::EmbeddedMinimumTable(), core::Target::kStandalone, {});
  EXPECT_NO_THROW(ctx.Get("os.release"));
  EXPECT_THROW(ctx.Get("os.kernel"), std::logic_error);
}

TEST(Registry, DocsChecksMdIsCurrent) {
  std::string expected = report::RenderChecksMarkdown(checks::DefaultRegistry());
  auto committed = util::ReadLocalFile(clustermax::testing::SourceDir() / "docs" / "checks.md");
  ASSERT_TRUE(committed) << "docs/checks.md missing";
  EXPECT_EQ(*committed, expected)
      << "docs/checks.md is stale: run build/clustermax checks list --format md > docs/checks.md";
}
