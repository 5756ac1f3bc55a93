// Wall-clock helpers: RFC 3339 UTC timestamps ("2026-09-25T04:03:23Z"), parsing and formatting.
#pragma once
#include <chrono>
#include <optional>
#include <string>
#include <string_view>

namespace clustermax::util {

using SysTime = std::chrono::system_clock::time_point;

std::string FormatRfc3339(SysTime t);                     // "2026-09-25T04:03:23Z"
std::string FormatCompact(SysTime t);                     // "20260925T040323Z" (directory names)
std::optional<SysTime> ParseRfc3339(std::string_view s);  // accepts "Z", fractions, date-only
double DaysBetween(SysTime from, SysTime to);
// Now, as Unix seconds with the clock's fraction (times that travel between nodes in documents).
double UnixSeconds();

}  // namespace clustermax::util
