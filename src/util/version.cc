#include "util/version.h"

#include <cctype>
#include <charconv>

#include "util/strings.h"

namespace clustermax::util {
namespace {

std::string_view StripEpoch(std::string_view t) {
  size_t colon = t.find(':');
  if (colon != std::string_view::npos && colon > 0) {
    bool digits = true;
    for (size_t i = 0; i < colon; ++i) digits &= std::isdigit(static_cast<unsigned char>(t[i])) != 0;
    if (digits) return t.substr(colon + 1);
  }
  return t;
}

// Parses dotted digits starting at `pos`; returns the end position.
size_t ParseDotted(std::string_view t, size_t pos, NumericVersion& v) {
  v = NumericVersion{};
  while (pos < t.size() && std::isdigit(static_cast<unsigned char>(t[pos]))) {
    long long n = 0;
    size_t start = pos;
    while (pos < t.size() && std::isdigit(static_cast<unsigned char>(t[pos]))) ++pos;
    std::from_chars(t.data() + start, t.data() + pos, n);
    if (v.count < 4) v.parts[v.count] = n;
    ++v.count;
    if (pos + 1 < t.size() && t[pos] == '.' && std::isdigit(static_cast<unsigned char>(t[pos + 1]))) {
      ++pos;
    } else {
      break;
    }
  }
  return pos;
}

}  // namespace

std::optional<NumericVersion> ParseNumericVersion(std::string_view text) {
  std::string_view t = StripEpoch(Trim(text));
  for (size_t i = 0; i < t.size(); ++i) {
    if (std::isdigit(static_cast<unsigned char>(t[i]))) {
      NumericVersion v;
      ParseDotted(t, i, v);
      return v;
    }
  }
  return std::nullopt;
}

std::optional<PrereleaseVersion> ParsePrereleaseVersion(std::string_view text) {
  std::string_view t = StripEpoch(Trim(text));
  size_t i = 0;
  while (i < t.size() && !std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  if (i == t.size()) return std::nullopt;
  PrereleaseVersion v;
  size_t end = ParseDotted(t, i, v.numeric);
  std::string_view rest = t.substr(end);
  if (rest.empty() || rest[0] != '-') return v;  // "+build", " (commit)" etc. are releases
  rest.remove_prefix(1);
  std::string lower = ToLower(rest);
  if (lower.rfind("rc", 0) == 0) {
    v.is_release = false;
    size_t p = 2;
    if (p < lower.size() && lower[p] == '.') ++p;
    size_t s = p;
    while (p < lower.size() && std::isdigit(static_cast<unsigned char>(lower[p]))) ++p;
    if (p > s) std::from_chars(lower.data() + s, lower.data() + p, v.pre_number);
    v.pre_tail = lower.substr(p);
    return v;
  }
  if (!lower.empty() && std::isdigit(static_cast<unsigned char>(lower[0]))) {
    // Go pseudo-version "X.Y.Z-0.<timestamp>-<hash>": before X.Y.Z. A plain Debian-style
    // revision ("1.1.12-1") is not a pre-release.
    if (lower.rfind("0.", 0) == 0 && lower.size() > 16) {
      v.is_release = false;
      v.pre_number = -1;
      v.pre_tail = lower.substr(2);
    }
    return v;
  }
  if (lower.rfind("alpha", 0) == 0 || lower.rfind("beta", 0) == 0 || lower.rfind("pre", 0) == 0) {
    v.is_release = false;
    v.pre_number = -2;
    v.pre_tail = lower;
  }
  return v;
}

int ComparePrerelease(const PrereleaseVersion& a, const PrereleaseVersion& b) {
  if (auto c = a.numeric <=> b.numeric; c != 0) return c < 0 ? -1 : 1;
  if (a.is_release != b.is_release) return a.is_release ? 1 : -1;
  if (a.is_release) return 0;
  if (a.pre_number != b.pre_number) return a.pre_number < b.pre_number ? -1 : 1;
  int c = a.pre_tail.compare(b.pre_tail);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

namespace {

// dpkg's character order: '~' first, then end of string, then letters, then everything else.
int DebOrder(int c) {
  if (c == '~') return -1;
  if (std::isdigit(c)) return 0;
  if (c == 0) return 0;
  if (std::isalpha(c)) return c;
  return c + 256;
}

int DebCompareFragment(std::string_view a, std::string_view b) {
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    int first_diff = 0;
    while ((i < a.size() && !std::isdigit(static_cast<unsigned char>(a[i]))) ||
           (j < b.size() && !std::isdigit(static_cast<unsigned char>(b[j])))) {
      int ac = i < a.size() ? DebOrder(static_cast<unsigned char>(a[i])) : 0;
      int bc = j < b.size() ? DebOrder(static_cast<unsigned char>(b[j])) : 0;
      if (ac != bc) return ac - bc;
      ++i;
      ++j;
    }
    while (i < a.size() && a[i] == '0') ++i;
    while (j < b.size() && b[j] == '0') ++j;
    while (i < a.size() && std::isdigit(static_cast<unsigned char>(a[i])) && j < b.size() &&
           std::isdigit(static_cast<unsigned char>(b[j]))) {
      if (!first_diff) first_diff = a[i] - b[j];
      ++i;
      ++j;
    }
    if (i < a.size() && std::isdigit(static_cast<unsigned char>(a[i]))) return 1;
    if (j < b.size() && std::isdigit(static_cast<unsigned char>(b[j]))) return -1;
    if (first_diff) return first_diff;
  }
  return 0;
}

struct DebVersion {
  long long epoch = 0;
  std::string_view upstream, revision;
};

DebVersion SplitDeb(std::string_view v) {
  DebVersion d;
  v = Trim(v);
  size_t colon = v.find(':');
  if (colon != std::string_view::npos) {
    std::from_chars(v.data(), v.data() + colon, d.epoch);
    v = v.substr(colon + 1);
  }
  size_t dash = v.rfind('-');
  if (dash != std::string_view::npos) {
    d.upstream = v.substr(0, dash);
    d.revision = v.substr(dash + 1);
  } else {
    d.upstream = v;
  }
  return d;
}

}  // namespace

int CompareDebianVersions(std::string_view a, std::string_view b) {
  DebVersion x = SplitDeb(a), y = SplitDeb(b);
  if (x.epoch != y.epoch) return x.epoch < y.epoch ? -1 : 1;
  int c = DebCompareFragment(x.upstream, y.upstream);
  if (c) return c < 0 ? -1 : 1;
  c = DebCompareFragment(x.revision, y.revision);
  return c < 0 ? -1 : (c > 0 ? 1 : 0);
}

std::optional<KernelAbi> ParseKernelAbi(std::string_view uname_r) {
  uname_r = Trim(uname_r);
  size_t dash = uname_r.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  std::string_view line = uname_r.substr(0, dash);
  std::string_view rest = uname_r.substr(dash + 1);
  size_t p = 0;
  while (p < rest.size() && std::isdigit(static_cast<unsigned char>(rest[p]))) ++p;
  if (p == 0) return std::nullopt;
  KernelAbi k;
  k.line = std::string(line);
  std::from_chars(rest.data(), rest.data() + p, k.abi);
  return k;
}

std::string FormatNumeric(const NumericVersion& v) {
  std::string out;
  for (int i = 0; i < std::min(v.count, 4); ++i) {
    if (i) out.push_back('.');
    out += std::to_string(v.parts[i]);
  }
  return out;
}

}  // namespace clustermax::util
