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

std::map<std::string, std::string> UnframeLines(std::string_view marker, std::string_view text, std::map<std::string, std::string>& errors,
                                                size_t chunk) {
  struct Parts {
    size_t count = 0;
    std::map<size_t, std::string> chunks;
  };
  std::map<std::string, Parts> by_key;
  // The label before the marker (srun --label's "N: ") -> the part of that task still short.
  std::map<std::string, std::pair<std::string, size_t>> short_part;
  for (std::string_view raw : SplitLineViews(text)) {
    size_t at = raw.find(marker);
    if (at == std::string_view::npos || at + marker.size() >= raw.size() || raw[at + marker.size()] != ' ') {
      // A continuation of a part the launcher split: the same label, no marker.
      size_t colon = raw.find(": ");
      std::string label(colon == std::string_view::npos ? std::string_view() : raw.substr(0, colon + 2));
      auto it = short_part.find(label);
      if (it != short_part.end()) {
        std::string& part = by_key[it->second.first].chunks[it->second.second];
        std::string_view rest = raw.substr(label.size());
        part.append(rest.substr(0, chunk - part.size()));
        if (part.size() >= chunk) short_part.erase(it);
      }
      continue;
    }
    std::string label(raw.substr(0, at));
    short_part.erase(label);
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
    std::string& part = p.chunks[static_cast<size_t>(*idx)] = std::string(line.substr(c + 1));
    if (static_cast<size_t>(*idx) + 1 < p.count && part.size() < chunk) short_part[label] = {key, static_cast<size_t>(*idx)};
  }
  std::map<std::string, std::string> out;
  for (auto& [key, p] : by_key) {
    if (errors.count(key)) continue;
    if (p.chunks.size() != p.count) {
      errors[key] = fmt::format("incomplete ({} of {} parts arrived)", p.chunks.size(), p.count);
      continue;
    }
    std::string all;
    for (auto& [i, ch] : p.chunks) {
      if (i + 1 < p.count && ch.size() != chunk) {
        errors[key] = fmt::format("part {} of {} arrived cut short ({} of {} bytes)", i + 1, p.count, ch.size(), chunk);
        break;
      }
      all += ch;
    }
    if (errors.count(key)) continue;
    out[key] = std::move(all);
  }
  return out;
}

}  // namespace clustermax::util
