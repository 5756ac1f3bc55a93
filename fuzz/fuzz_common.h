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

inline std::string_view AsText(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

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

// Deepest bracket nesting of a JSON-like text (strings skipped). A document nested tens of
// thousands deep overflows the stack in recursive JSON code (nlohmann's dump and copy, the
// renderers): a known issue being fixed separately (fuzz/regressions/README.md). Targets whose
// reader is not the one being fixed skip such inputs so that their runs look for other bugs.
inline size_t JsonDepth(std::string_view text) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') deepest = std::max(deepest, ++depth);
    else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return deepest;
}
inline constexpr size_t kMaxJsonDepth = 1000;
// True for an input to skip for its depth; CLUSTERMAX_FUZZ_DEEP=1 (the known-crash replays) keeps them.
inline bool TooDeep(std::string_view text) {
  static const bool keep = std::getenv("CLUSTERMAX_FUZZ_DEEP") != nullptr;
  return !keep && JsonDepth(text) > kMaxJsonDepth;
}

}  // namespace clustermax::fuzz
