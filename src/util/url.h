// Percent-encoding of URL parts (RFC 3986 unreserved characters kept): S3 keys and query values,
// Kubernetes continue tokens.
#pragma once
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace clustermax::util {

inline std::string PercentEncode(std::string_view s, bool keep_slash = false) {
  std::string out;
  for (unsigned char ch : s) {
    bool unreserved = (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                      ch == '_' || ch == '.' || ch == '~';
    if (unreserved || (keep_slash && ch == '/'))
      out += static_cast<char>(ch);
    else
      out += fmt::format("%{:02X}", ch);
  }
  return out;
}

}  // namespace clustermax::util
