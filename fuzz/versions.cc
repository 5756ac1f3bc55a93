// Version strings (util/version.h): numeric, pre-release, dpkg ordering and the Ubuntu kernel
// ABI; RFC 3339 times (util/time.h, bundle manifests and reports). The input is split at the first newline into two
// versions, which are also compared; the orderings must be antisymmetric.
#include <string>

#include "fuzz_common.h"
#include "util/time.h"
#include "util/version.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view t = fuzz::AsText(data, size);
  size_t nl = t.find('\n');
  std::string_view a = t.substr(0, nl);
  std::string_view b = nl == std::string_view::npos ? t : t.substr(nl + 1);
  try {
    for (std::string_view v : {a, b}) {
      if (auto n = util::ParseNumericVersion(v)) (void)util::FormatNumeric(*n);
      util::ParseKernelAbi(v);
      if (auto tm = util::ParseRfc3339(v)) (void)util::FormatRfc3339(*tm);
    }
    auto pa = util::ParsePrereleaseVersion(a), pb = util::ParsePrereleaseVersion(b);
    if (pa && pb) {
      int ab = util::ComparePrerelease(*pa, *pb), ba = util::ComparePrerelease(*pb, *pa);
      if ((ab < 0) != (ba > 0) || (ab == 0) != (ba == 0)) __builtin_trap();
    }
    int ab = util::CompareDebianVersions(a, b), ba = util::CompareDebianVersions(b, a);
    if ((ab < 0) != (ba > 0) || (ab == 0) != (ba == 0)) __builtin_trap();
    if (util::CompareDebianVersions(a, a) != 0) __builtin_trap();
  } catch (const std::exception&) {
  }
  return 0;
}
