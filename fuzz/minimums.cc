// The minimum-version table (core::ParseMinimumTable, data/minimum-versions.json or --minimums
// FILE) and every comparison it drives: each component is compared with its own floors' versions
// and a few odd ones, at the table's generation time and a year later.
#include <chrono>
#include <string>

#include "core/minimums.h"
#include "fuzz_common.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view t = fuzz::AsText(data, size);
  try {
    core::MinimumTable table = core::ParseMinimumTable(t, "fuzz");
    auto later = table.generated + std::chrono::hours(24 * 365);
    core::TableStaleness(table, later);
    for (const auto& c : table.components) {
      (void)table.Find(c.id);
      std::vector<core::VersionInput> inputs;
      for (const auto& f : c.floors) {
        inputs.push_back({.version = f.version,
                          .program = f.key,
                          .line = f.key,
                          .release = c.release,
                          .package_version = f.version});
        inputs.push_back({.version = f.previous_version, .line = f.key, .release = c.release, .release_proven = false});
      }
      for (const char* v : {"", "1", "6.8.0-124-generic", "1:2.3~rc1-4", "580.95.05", "1.0.0-rc8.0.20190101-abc"}) {
        inputs.push_back({.version = v, .release = c.release});
      }
      for (const auto& in : inputs) {
        core::Compare(c, in, table.generated, table.grace_period_days);
        core::Compare(c, in, later, table.grace_period_days);
      }
    }
  } catch (const std::exception&) {
  }
  return 0;
}
