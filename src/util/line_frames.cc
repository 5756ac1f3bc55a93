#include "util/line_frames.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace clustermax::util {

std::vector<std::string> FrameLines(std::string_view marker, const std::string& key, std::string_view text, size_t chunk) {
  size_t count = std::max<size_t>(1, (text.size() + chunk - 1) / chunk);
  std::vector<std::string> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) out.push_back(fmt::format("{} {} {} {} {}", marker, key, i, count, text.substr(std::min(text.size(), i * chunk), chunk)));
  return out;
}

std::map<std::string, std::string> UnframeLines(std::string_view marker, std::string_view text, std::map<std::string, std::string>& errors) {
  struct Parts {
    size_t count = 0;
    std::map<size_t, std::string> chunks;
  };
  std::map<std::string, Parts> by_key;
  for (std::string_view raw : SplitLineViews(text)) {
    size_t at = raw.find(marker);
    if (at == std::string_view::npos || at + marker.size() >= raw.size() || raw[at + marker.size()] != ' ') continue;
    std::string_view line = raw.substr(at + marker.size() + 1);
    // key index count chunk (the chunk may contain spaces: split the first three fields only)
    size_t a = line.find(' '), b = a == std::string_view::npos ? a : line.find(' ', a + 1), c = b == std::string_view::npos ? b : line.find(' ', b + 1);
    if (c == std::string_view::npos) continue;
    std::string key(line.substr(0, a));
    auto idx = ParseInt(line.substr(a + 1, b - a - 1)), cnt = ParseInt(line.substr(b + 1, c - b - 1));
    if (!idx || !cnt || *cnt <= 0 || *idx < 0 || *idx >= *cnt) {
      errors[key] = "malformed line";
      continue;
    }
    Parts& p = by_key[key];
    if (p.count != 0 && p.count != static_cast<size_t>(*cnt)) {
      errors[key] = "parts disagree on their count";
      continue;
    }
    p.count = static_cast<size_t>(*cnt);
    p.chunks[static_cast<size_t>(*idx)] = std::string(line.substr(c + 1));
  }
  std::map<std::string, std::string> out;
  for (auto& [key, p] : by_key) {
    if (errors.count(key)) continue;
    if (p.chunks.size() != p.count) {
      errors[key] = fmt::format("incomplete ({} of {} parts arrived)", p.chunks.size(), p.count);
      continue;
    }
    std::string all;
    for (auto& [i, ch] : p.chunks) all += ch;
    out[key] = std::move(all);
  }
  return out;
}

}  // namespace clustermax::util
