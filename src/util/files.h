// Local-file helpers for the tool's own artifacts (never for evidence: evidence is read through
// host::Host). Writes are atomic: a temporary file in the same directory, fsync, then rename.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace clustermax::util {

// Throws std::runtime_error with the path and errno text on failure.
void WriteFileAtomic(const std::filesystem::path& path, std::string_view content);
std::optional<std::string> ReadLocalFile(const std::filesystem::path& path);
std::filesystem::path HomeDir();
// This machine's host name (gethostname), "" if it has none.
std::string Hostname();

}  // namespace clustermax::util
