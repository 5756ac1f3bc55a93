// Local-file helpers for the tool's own artifacts (never for evidence: evidence is read through
// host::Host). Writes are atomic and private: a fresh temporary file in the same directory, created
// with O_EXCL|O_NOFOLLOW and mode 0600 (so a planted file or link is never written through), fsync,
// then rename over the target (which replaces a link at the target, never follows it).
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace clustermax::util {

// The largest document (report, rating, bundle, assessment) the tool reads: 1 GiB.
inline constexpr uint64_t kMaxDocumentBytes = 1ull << 30;
// The deepest JSON nesting accepted from a file (our own documents nest fewer than 16 levels).
inline constexpr int kMaxJsonDepth = 256;

// Throws std::runtime_error with the path and errno text on failure. `mode` applies to a new file.
void WriteFileAtomic(const std::filesystem::path& path, std::string_view content, unsigned mode = 0600);
// The same for content written piece by piece (a report too large to hold in memory): `produce`
// calls its argument with each piece, in order.
void WriteFileAtomic(const std::filesystem::path& path,
                     const std::function<void(const std::function<void(std::string_view)>&)>& produce,
                     unsigned mode = 0600);
// A file that must not exist yet (no link followed), written and closed without a flush: for the
// files of a directory that is flushed (SyncFilesystemOf) and renamed into place as a whole.
void WriteNewFile(const std::filesystem::path& path, std::string_view content, unsigned mode = 0600);
// Flushes the filesystem holding `path` to disk (syncfs): one call for many files written with WriteNewFile.
void SyncFilesystemOf(const std::filesystem::path& path);
// A private directory for the tool's output (mode 0700), with its missing parents (0700 too).
// Throws when `path` exists and is not a directory we can use (a link is refused).
void CreatePrivateDirectories(const std::filesystem::path& path);
// A new, empty, private (0700) directory with a unique name "<parent>/<prefix>XXXXXX".
std::filesystem::path MakePrivateTempDir(const std::filesystem::path& parent, std::string_view prefix);
// nullopt: the file does not exist. Throws std::runtime_error (naming the path and the limit) when it
// exists but is not a regular file (a FIFO, /dev/zero, a directory), is larger than `max_bytes`, or
// cannot be read.
std::optional<std::string> ReadLocalFile(const std::filesystem::path& path, uint64_t max_bytes = kMaxDocumentBytes);
// Parses a JSON document read from a file or a peer: nesting is limited to kMaxJsonDepth (checked
// before parsing, so a hostile document cannot exhaust the stack in the parser, a copy or a
// destructor) and invalid UTF-8 is refused. Throws std::runtime_error naming `what` and the limit.
nlohmann::json ParseJsonDocument(std::string_view text, std::string_view what);
// JSON text for a file or stdout: never throws on a string that is not UTF-8 (replaced by U+FFFD).
std::string JsonText(const nlohmann::json& j, int indent = 2);
// A copy of a document for a text renderer: every string value (and key) through EscapeControls.
nlohmann::json EscapeControlsInJson(nlohmann::json j);
// The deepest nesting of arrays and objects in JSON text (strings skipped); stops counting past `limit`.
int JsonNestingDepth(std::string_view text, int limit);
std::filesystem::path HomeDir();
// ~/.clustermax, the tool's state (runs, results store): created 0700, and tightened to 0700 when
// it is ours and was looser (earlier versions made it 0755).
std::filesystem::path StateDir();
// This machine's host name (gethostname), "" if it has none.
std::string Hostname();
// This binary's path (/proc/self/exe), to run it on other nodes. Throws when it cannot be read.
std::string SelfExe();

}  // namespace clustermax::util
