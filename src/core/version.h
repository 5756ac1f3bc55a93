// The tool's version and the commit it was built from (generated at configure time).
#pragma once

namespace clustermax::core {
extern const char* const kToolVersion;
extern const char* const kGitSha;
// How it was built: the CMake build type, plus "portable" for the shipped static node binary.
extern const char* const kBuildType;
}  // namespace clustermax::core
