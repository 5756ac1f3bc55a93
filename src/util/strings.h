// String helpers used across the project. Pure functions, no project dependencies.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustermax::util {

std::string_view Trim(std::string_view s);
std::vector<std::string> Split(std::string_view s, char sep, bool keep_empty = false);
std::vector<std::string> SplitLines(std::string_view s);
// The same lines as views into `s` (no copies: for large command output and /proc files).
std::vector<std::string_view> SplitLineViews(std::string_view s);
std::vector<std::string> SplitWhitespace(std::string_view s);
std::string ToLower(std::string_view s);
bool Contains(std::string_view haystack, std::string_view needle);
bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle);
// Parses a whole (trimmed) string as a base-10 integer; nullopt on any junk.
std::optional<long long> ParseInt(std::string_view s);
// Parses a number that may have a leading "0x" (hex), as sysfs vendor/class files do.
std::optional<unsigned long long> ParseHexOrDec(std::string_view s);
// KEY=VALUE files such as /etc/os-release; quotes removed, comments skipped.
std::vector<std::pair<std::string, std::string>> ParseKeyValueLines(std::string_view text);
// Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF); NUL is a character.
bool IsUtf8(std::string_view s);
// The same without NUL bytes (text, not binary content).
bool IsValidUtf8(std::string_view s);
// Every string from a machine is bytes until validated: invalid sequences become U+FFFD (and
// *replaced is set when given), everything else is kept.
std::string SanitizeUtf8(std::string_view s, bool* replaced = nullptr);
// One field for a text output (terminal, report.txt): control characters (C0 but tab, DEL, C1)
// and bidirectional overrides written as visible escapes (\x1b, \n, \u009b), invalid UTF-8 as
// U+FFFD. Nothing from evidence can move the cursor, erase a line or recolour the output.
std::string EscapeControls(std::string_view s);
// A whole rendered text: EscapeControls on every line, the line breaks kept.
std::string TerminalSafeText(std::string_view text);
std::string HexEncode(std::string_view bytes);
std::optional<std::string> HexDecode(std::string_view hex);
// Quotes an argv element for display in a reproduce command (POSIX shell rules).
std::string ShellQuote(std::string_view arg);
std::string JoinArgv(const std::vector<std::string>& argv);
// Shortens text to at most max characters, marking the cut.
std::string Ellipsize(std::string_view s, size_t max);

}  // namespace clustermax::util
