// The tool's version and the commit it was built from (generated at configure time).
#pragma once

namespace clustermax::core {
extern const char* const kToolVersion;
extern const char* const kGitSha;
}  // namespace clustermax::core
