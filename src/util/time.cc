#include "util/time.h"

#include <ctime>

#include <fmt/format.h>

namespace clustermax::util {
namespace {
std::tm ToTm(SysTime t) {
  std::time_t tt = std::chrono::system_clock::to_time_t(t);
  std::tm tm{};
  ::gmtime_r(&tt, &tm);
  return tm;
}
}  // namespace

std::string FormatRfc3339(SysTime t) {
  std::tm tm = ToTm(t);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec);
}

std::string FormatCompact(SysTime t) {
  std::tm tm = ToTm(t);
  return fmt::format("{:04}{:02}{:02}T{:02}{:02}{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                     tm.tm_min, tm.tm_sec);
}

std::optional<SysTime> ParseRfc3339(std::string_view s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
  std::string str(s);
  int n = std::sscanf(str.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &sec);
  if (n != 6 && n != 3) return std::nullopt;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return std::nullopt;
  // SysTime counts nanoseconds in 64 bits (1677-09-21 to 2262-04-11): a year outside would overflow.
  if (y < 1678 || y > 2261) return std::nullopt;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  std::time_t tt = ::timegm(&tm);
  return std::chrono::system_clock::from_time_t(tt);
}

double DaysBetween(SysTime from, SysTime to) { return std::chrono::duration<double>(to - from).count() / 86400.0; }

double UnixSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace clustermax::util
