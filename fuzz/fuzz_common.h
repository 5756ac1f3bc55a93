// Shared helpers of the libFuzzer targets (fuzz/README.md). Each target calls the project's real
// parsers; an exception that derives from std::exception is the parsers' documented way to refuse
// an input, so the targets catch exactly that. Anything else (a crash, a sanitizer report, a
// non-standard exception, a hang) is a finding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace clustermax::fuzz {

inline std::string_view AsText(const uint8_t* data, size_t size) { return {reinterpret_cast<const char*>(data), size}; }

// Splits an input into parts at NUL bytes (text fixtures have none, so a fixture is one part).
inline std::vector<std::string_view> SplitNul(std::string_view text) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t nul = text.find('\0', start);
    out.push_back(text.substr(start, nul == std::string_view::npos ? std::string_view::npos : nul - start));
    if (nul == std::string_view::npos) break;
    start = nul + 1;
  }
  return out;
}

}  // namespace clustermax::fuzz
