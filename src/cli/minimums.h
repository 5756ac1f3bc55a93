// The minimum-version table in use, and `clustermax minimums update FILE|URL`.
//
// Which table an audit uses: --minimums FILE when given; else the table installed by
// `minimums update` (~/.clustermax/minimum-versions.json) when it parses and is newer than the
// embedded one; else the embedded table. A run directory keeps a copy of the table it was judged
// with (minimum-versions.json), so a review or replay can use the same one.
#pragma once
#include <filesystem>
#include <string>

#include "core/minimums.h"

namespace clustermax::cli {

// ~/.clustermax/minimum-versions.json (the state directory of util::StateDir()).
std::filesystem::path InstalledMinimumsPath();

// The table to judge with (see above). `storage` holds a table read from a file; the text the
// table was parsed from goes to *text when given (for the copy in the run directory).
const core::MinimumTable& LoadMinimums(const std::string& file, core::MinimumTable& storage,
                                       std::string* text = nullptr);

// Reads a table from a local file or an http(s) URL, verifies it (a complete table by the schema,
// generated no later than tomorrow, not older than the table in use unless `force`), and installs
// it atomically (0600) as InstalledMinimumsPath(). Returns what was done, for the user; throws
// std::runtime_error with the reason when the table is refused (nothing is written then).
std::string UpdateMinimums(const std::string& source, bool force);

}  // namespace clustermax::cli
