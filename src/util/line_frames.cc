#include "util/line_frames.h"

#include <fmt/format.h>

#include "util/strings.h"

namespace clustermax::util {

namespace {
constexpr size_t kMaxLine = 64 << 10;

// A line as read: cut at kMaxLine, or without its trailing CR when whole.
std::string_view AsRead(std::string_view line, bool cut) {
  if (!cut && !line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}
}  // namespace

std::vector<std::string> FrameLines(std::string_view marker, const std::string& key, std::string_view text,
                                    size_t chunk) {
  size_t count = std::max<size_t>(1, (text.size() + chunk - 1) / chunk);
  std::vector<std::string> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i)
    out.push_back(
        fmt::format("{} {} {} {} {}", marker, key, i, count, text.substr(std::min(text.size(), i * chunk), chunk)));
  return out;
}

FrameReader::FrameReader(std::string marker, Sink on_document, size_t chunk, size_t max_pending)
    : marker_(std::move(marker)), sink_(std::move(on_document)), chunk_(chunk), max_pending_(max_pending) {}

void FrameReader::Feed(std::string_view piece) {
  while (!piece.empty()) {
    size_t nl = piece.find('\n');
    std::string_view head = piece.substr(0, nl);
    if (nl != std::string_view::npos && line_.empty() && !line_cut_) {
      // A whole line inside this piece: read in place (cut as the buffered path cuts it).
      Line(AsRead(head.substr(0, kMaxLine), head.size() > kMaxLine));
      piece.remove_prefix(nl + 1);
      continue;
    }
    if (!line_cut_) {
      size_t room = kMaxLine - line_.size();
      line_.append(head.substr(0, room));
      line_cut_ = head.size() > room;
    }
    if (nl == std::string_view::npos) return;
    Line(AsRead(line_, line_cut_));
    line_.clear();
    line_cut_ = false;
    piece.remove_prefix(nl + 1);
  }
}

void FrameReader::Refuse(const std::string& key, std::string why) {
  errors_.try_emplace(key, std::move(why));
  auto it = parts_.find(key);
  if (it == parts_.end()) return;
  pending_ -= it->second.bytes;
  parts_.erase(it);
}

void FrameReader::Grew(const std::string& key, Parts& p, size_t before, size_t after, size_t index) {
  bool was_short = index + 1 < p.count && before < chunk_, is_short = index + 1 < p.count && after < chunk_;
  p.short_parts += is_short;
  p.short_parts -= was_short;
  Hold(key, p, after - before);
}

void FrameReader::Hold(const std::string& key, Parts& p, size_t delta) {
  p.bytes += delta;  // unsigned: a part that shrank wraps back exactly
  pending_ += delta;
  if (pending_ > max_pending_)
    Refuse(key, fmt::format("refused: more than {} bytes of unfinished documents held", max_pending_));
}

void FrameReader::Scatter(Parts& p) {
  // Every part in `joined` is whole (the final part, the only one that may be short, delivers the document).
  for (size_t i = 0; i < p.in_order; ++i) p.chunks.emplace(i, p.joined.substr(i * chunk_, chunk_));
  p.joined.clear();
  p.joined.shrink_to_fit();
  p.in_order = 0;
}

void FrameReader::DeliverIfWhole(const std::string& key) {
  auto it = parts_.find(key);
  if (it == parts_.end()) return;
  Parts& p = it->second;
  std::string doc;
  if (p.in_order > 0) {
    if (p.in_order != p.count) return;
    doc = std::move(p.joined);
  } else {
    if (p.chunks.size() != p.count || p.short_parts != 0) return;
    doc.reserve(p.bytes);
    for (auto& [i, ch] : p.chunks) doc += ch;
  }
  pending_ -= p.bytes;
  parts_.erase(it);
  done_.insert(key);
  sink_(key, std::move(doc));
}

void FrameReader::Line(std::string_view raw) {
  size_t at = raw.find(marker_);
  if (at == std::string_view::npos || at + marker_.size() >= raw.size() || raw[at + marker_.size()] != ' ') {
    // A continuation of a part the launcher split: the same label, no marker.
    if (short_part_.empty()) return;
    size_t colon = raw.find(": ");
    std::string_view label = colon == std::string_view::npos ? std::string_view() : raw.substr(0, colon + 2);
    auto sp = short_part_.find(std::string(label));
    if (sp == short_part_.end()) return;
    auto [key, index] = sp->second;
    auto pit = parts_.find(key);
    std::string* found = nullptr;
    if (pit != parts_.end()) {
      auto cit = pit->second.chunks.find(index);
      if (cit != pit->second.chunks.end() && cit->second.size() < chunk_) found = &cit->second;
    }
    if (!found) {
      short_part_.erase(sp);
      return;
    }
    std::string& part = *found;
    size_t before = part.size();
    part.append(raw.substr(label.size()).substr(0, chunk_ - part.size()));
    if (part.size() >= chunk_) short_part_.erase(sp);
    Grew(key, pit->second, before, part.size(), index);
    DeliverIfWhole(key);
    return;
  }
  std::string label(raw.substr(0, at));
  short_part_.erase(label);
  std::string_view line = raw.substr(at + marker_.size() + 1);
  // key index count chunk (the chunk may contain spaces: split the first three fields only)
  size_t a = line.find(' '), b = a == std::string_view::npos ? a : line.find(' ', a + 1),
         c = b == std::string_view::npos ? b : line.find(' ', b + 1);
  if (c == std::string_view::npos) return;
  std::string key(line.substr(0, a));
  if (done_.count(key) || errors_.count(key)) return;
  auto idx = ParseInt(line.substr(a + 1, b - a - 1)), cnt = ParseInt(line.substr(b + 1, c - b - 1));
  if (!idx || !cnt || *cnt <= 0 || *idx < 0 || *idx >= *cnt) return Refuse(key, "malformed line");
  Parts& p = parts_[key];
  if (p.count != 0 && p.count != static_cast<size_t>(*cnt)) return Refuse(key, "parts disagree on their count");
  p.count = static_cast<size_t>(*cnt);
  size_t index = static_cast<size_t>(*idx);
  std::string_view part = line.substr(c + 1);
  // The common case: the next part, whole (or the last one), after whole parts in order.
  if (p.chunks.empty() && index == p.in_order && (part.size() == chunk_ || index + 1 == p.count)) {
    if (p.in_order == 0) p.joined.reserve(std::min<size_t>(p.count, 4096) * chunk_);  // a claimed count reserves little
    p.joined.append(part);
    ++p.in_order;
    Hold(key, p, part.size());
    return DeliverIfWhole(key);
  }
  if (p.in_order > 0) Scatter(p);
  auto [cit, fresh] = p.chunks.try_emplace(index);
  if (fresh && index + 1 < p.count) ++p.short_parts;  // an empty part before the last is short until filled
  size_t before = cit->second.size();
  cit->second.assign(part);
  if (index + 1 < p.count && part.size() > chunk_) {
    return Refuse(key, fmt::format("part {} of {} is longer than a part ({} of {} bytes)", index + 1, p.count,
                                   part.size(), chunk_));
  }
  if (index + 1 < p.count && cit->second.size() < chunk_) short_part_[label] = {key, index};
  Grew(key, p, before, cit->second.size(), index);
  DeliverIfWhole(key);
}

void FrameReader::Finish() {
  if (!line_.empty()) {
    std::string last = std::move(line_);
    bool cut = line_cut_;
    line_.clear();
    line_cut_ = false;
    Line(AsRead(last, cut));
  }
  for (auto& [key, p] : parts_) {
    if (p.in_order > 0) Scatter(p);
    if (p.chunks.size() != p.count) {
      errors_.try_emplace(key, fmt::format("incomplete ({} of {} parts arrived)", p.chunks.size(), p.count));
      continue;
    }
    for (auto& [i, ch] : p.chunks) {
      if (i + 1 < p.count && ch.size() != chunk_) {
        errors_.try_emplace(
            key, fmt::format("part {} of {} arrived cut short ({} of {} bytes)", i + 1, p.count, ch.size(), chunk_));
        break;
      }
    }
  }
  parts_.clear();
  short_part_.clear();
  pending_ = 0;
}

std::map<std::string, std::string> UnframeLines(std::string_view marker, std::string_view text,
                                                std::map<std::string, std::string>& errors, size_t chunk) {
  std::map<std::string, std::string> out;
  FrameReader reader(
      std::string(marker), [&](const std::string& key, std::string doc) { out[key] = std::move(doc); }, chunk);
  reader.Feed(text);
  reader.Finish();
  for (const auto& [key, why] : reader.errors()) errors[key] = why;
  return out;
}

}  // namespace clustermax::util
