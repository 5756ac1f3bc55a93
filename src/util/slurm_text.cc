#include "util/slurm_text.h"

#include <cctype>
#include <regex>

#include "util/strings.h"

namespace clustermax::util {

std::map<std::string, std::string> ParseScontrolConfig(std::string_view text) {
  std::map<std::string, std::string> out;
  for (const auto& line : SplitLines(text)) {
    size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    std::string key(Trim(line.substr(0, eq)));
    if (key.empty() || key.find(' ') != std::string::npos) continue;
    out[key] = std::string(Trim(line.substr(eq + 3)));
  }
  return out;
}

std::map<std::string, std::string> ParseScontrolRecord(std::string_view line) {
  std::map<std::string, std::string> out;
  // Token starts: a key of letters/digits/underscores/colons/slashes followed by '=' at the line start
  // or after a space.
  std::vector<std::pair<size_t, size_t>> keys;  // (key start, '=' position)
  for (size_t i = 0; i < line.size(); ++i) {
    if (i > 0 && line[i - 1] != ' ') continue;
    size_t j = i;
    while (j < line.size() && (std::isalnum(static_cast<unsigned char>(line[j])) || line[j] == '_' || line[j] == ':' ||
                               line[j] == '/' || line[j] == '.'))
      ++j;
    if (j > i && j < line.size() && line[j] == '=' && std::isalpha(static_cast<unsigned char>(line[i])))
      keys.push_back({i, j});
  }
  for (size_t k = 0; k < keys.size(); ++k) {
    size_t vstart = keys[k].second + 1;
    size_t vend = k + 1 < keys.size() ? keys[k + 1].first : line.size();
    out[std::string(line.substr(keys[k].first, keys[k].second - keys[k].first))] =
        std::string(Trim(line.substr(vstart, vend - vstart)));
  }
  return out;
}

std::vector<std::map<std::string, std::string>> ParseScontrolRecords(std::string_view text) {
  std::vector<std::map<std::string, std::string>> out;
  for (const auto& line : SplitLines(text)) {
    if (Trim(line).empty()) continue;
    auto r = ParseScontrolRecord(Trim(line));
    if (!r.empty()) out.push_back(std::move(r));
  }
  return out;
}

std::vector<ControllerState> ParseScontrolPing(std::string_view text) {
  static const std::regex re(R"(Slurmctld\(([^)]*)\) at (\S+) is (UP|DOWN))");
  std::vector<ControllerState> out;
  std::string s(text);
  for (std::sregex_iterator it(s.begin(), s.end(), re), end; it != end; ++it) {
    out.push_back({(*it)[1], (*it)[2], (*it)[3] == "UP"});
  }
  return out;
}

std::vector<std::string> ParseMpiList(std::string_view text) {
  std::vector<std::string> out;
  for (const auto& line : SplitLines(text)) {
    std::string t(Trim(line));
    if (t.empty()) continue;
    size_t colon = t.find("available:");
    if (colon != std::string::npos) {
      for (const auto& w : Split(t.substr(colon + 10), ',')) {
        std::string v(Trim(w));
        if (!v.empty()) out.push_back(v);
      }
      continue;
    }
    if (t.find(' ') != std::string::npos) continue;  // header lines
    if (t.rfind("srun:", 0) == 0) continue;
    out.push_back(t);
  }
  return out;
}

std::string ForNode(std::string text, const std::string& node) {
  constexpr std::string_view kMark = "{node}";
  for (size_t at = 0; (at = text.find(kMark, at)) != std::string::npos; at += node.size())
    text.replace(at, kMark.size(), node);
  return text;
}

std::optional<std::vector<std::string>> ExpandHostlist(std::string_view list) {
  std::vector<std::string> out;
  // Split at commas outside brackets.
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : list) {
    if (c == '[') ++depth;
    if (c == ']') --depth;
    if (depth < 0) return std::nullopt;
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (depth != 0) return std::nullopt;
  if (!cur.empty()) items.push_back(cur);
  for (auto& item : items) {
    std::string it(Trim(item));
    if (it.empty()) continue;
    size_t lb = it.find('[');
    if (lb == std::string::npos) {
      out.push_back(it);
      continue;
    }
    size_t rb = it.find(']', lb);
    if (rb == std::string::npos) return std::nullopt;
    std::string prefix = it.substr(0, lb), suffix = it.substr(rb + 1);
    if (suffix.find('[') != std::string::npos) return std::nullopt;  // one bracket group only
    for (const auto& range : Split(it.substr(lb + 1, rb - lb - 1), ',')) {
      size_t dash = range.find('-');
      std::string a = range.substr(0, dash), b = dash == std::string::npos ? a : range.substr(dash + 1);
      auto lo = ParseInt(a), hi = ParseInt(b);
      if (!lo || !hi || *hi < *lo || *hi - *lo > 100000) return std::nullopt;
      for (long long v = *lo;; ++v) {  // stops at *hi without stepping past it (*hi may be LLONG_MAX)
        std::string num = std::to_string(v);
        if (num.size() < a.size()) num = std::string(a.size() - num.size(), '0') + num;  // zero padding
        out.push_back(prefix + num + suffix);
        // The whole list has the same bound as one range: many ranges must not exhaust memory.
        if (out.size() > 100000) return std::nullopt;
        if (v == *hi) break;
      }
    }
  }
  return out;
}

std::vector<GresEntry> ParseGres(std::string_view gres) {
  std::vector<GresEntry> out;
  std::string s(gres);
  if (s.empty() || s == "(null)") return out;
  // Split at commas outside parentheses.
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  for (char c : s) {
    if (c == '(') ++depth;
    if (c == ')') --depth;
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  items.push_back(cur);
  for (auto item : items) {
    size_t paren = item.find('(');
    if (paren != std::string::npos) item = item.substr(0, paren);
    auto parts = Split(item, ':', true);
    if (parts.empty() || parts[0].empty()) continue;
    GresEntry g;
    g.name = parts[0];
    if (parts.size() == 2) {
      if (auto n = ParseInt(parts[1]))
        g.count = *n;
      else
        g.type = parts[1], g.count = 1;
    } else if (parts.size() >= 3) {
      g.type = parts[1];
      g.count = ParseInt(parts[2]).value_or(0);
    } else {
      g.count = 1;
    }
    out.push_back(g);
  }
  return out;
}

}  // namespace clustermax::util
