// Shared test helpers: fixture paths and reading.
#pragma once
#include <filesystem>
#include <string>

#include "util/files.h"

namespace clustermax::testing {

inline std::filesystem::path SourceDir() { return CLUSTERMAX_SOURCE_DIR; }
inline std::filesystem::path Fixture(const std::string& rel) { return SourceDir() / "tests" / "fixtures" / rel; }
inline std::string ReadFixture(const std::string& rel) {
  auto t = util::ReadLocalFile(Fixture(rel));
  if (!t) throw std::runtime_error("missing fixture " + rel);
  return *t;
}

}  // namespace clustermax::testing
