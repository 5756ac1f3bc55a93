// Version parsing and ordering, as the minimum-version table needs them
// (see docs/minimum-versions.md): generic numeric, pre-release aware, Debian (dpkg) ordering and
// the Ubuntu kernel ABI. Pure functions.
#pragma once
#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace clustermax::util {

// Up to four integer components, zero-padded ("13.1" == "13.1.0.0").
struct NumericVersion {
  std::array<long long, 4> parts{};
  int count = 0;  // how many components the text had (before padding)
  auto operator<=>(const NumericVersion& o) const { return parts <=> o.parts; }
  bool operator==(const NumericVersion& o) const { return parts == o.parts; }
};

// Strips a Debian epoch ("1:"), then takes the first run of dotted digits.
std::optional<NumericVersion> ParseNumericVersion(std::string_view text);

// Numeric part plus a pre-release rank: "1.5.0-rc.2" < "1.5.0-rc.3" < "1.5.0".
// Go pseudo-versions ("1.0.0-rc8.0.2019...-hash", "1.2.3-0.2020...-hash") sort before the release.
struct PrereleaseVersion {
  NumericVersion numeric;
  bool is_release = true;  // false for any pre-release
  long long pre_number = 0;
  std::string pre_tail;  // pseudo-version timestamp, compared as text
};
std::optional<PrereleaseVersion> ParsePrereleaseVersion(std::string_view text);
int ComparePrerelease(const PrereleaseVersion& a, const PrereleaseVersion& b);

// dpkg ordering (epoch, upstream, revision; '~' sorts before everything). Same result as
// `dpkg --compare-versions`: negative, zero or positive.
int CompareDebianVersions(std::string_view a, std::string_view b);

// The ABI of an Ubuntu kernel release string: "6.8.0-124-generic" -> (line "6.8.0", abi 124).
struct KernelAbi {
  std::string line;
  long long abi = 0;
};
std::optional<KernelAbi> ParseKernelAbi(std::string_view uname_r);

std::string FormatNumeric(const NumericVersion& v);

}  // namespace clustermax::util
