#include "util/strings.h"

#include <cstdint>
#include <cstring>

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace clustermax::util {

std::string_view Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> Split(std::string_view s, char sep, bool keep_empty) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) pos = s.size();
    std::string_view part = s.substr(start, pos - start);
    if (keep_empty || !part.empty()) out.emplace_back(part);
    start = pos + 1;
  }
  return out;
}

std::vector<std::string_view> SplitLineViews(std::string_view s) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t pos = s.find('\n', start);
    if (pos == std::string_view::npos) pos = s.size();
    std::string_view line = s.substr(start, pos - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back(line);
    start = pos + 1;
  }
  return out;
}

std::vector<std::string> SplitLines(std::string_view s) {
  std::vector<std::string> out;
  for (std::string_view line : SplitLineViews(s)) out.emplace_back(line);
  return out;
}

std::vector<std::string> SplitWhitespace(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  return Contains(ToLower(haystack), ToLower(needle));
}

std::optional<long long> ParseInt(std::string_view s) {
  s = Trim(s);
  if (s.empty()) return std::nullopt;
  long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<unsigned long long> ParseHexOrDec(std::string_view s) {
  s = Trim(s);
  int base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    s.remove_prefix(2);
    base = 16;
  }
  if (s.empty()) return std::nullopt;
  unsigned long long v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::vector<std::pair<std::string, std::string>> ParseKeyValueLines(std::string_view text) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& raw : SplitLines(text)) {
    std::string_view line = Trim(raw);
    if (line.empty() || line.front() == '#') continue;
    size_t eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    std::string_view key = Trim(line.substr(0, eq));
    std::string_view val = Trim(line.substr(eq + 1));
    if (val.size() >= 2 && (val.front() == '"' || val.front() == '\'') && val.back() == val.front()) {
      val = val.substr(1, val.size() - 2);
    }
    out.emplace_back(std::string(key), std::string(val));
  }
  return out;
}

namespace {
// One strict UTF-8 step (RFC 3629, as JSON writers check it): the code point at s[i] and its length,
// or length 0 for an invalid sequence (stray continuation, overlong form, surrogate, > U+10FFFF,
// cut short).
struct Utf8Step {
  char32_t cp = 0;
  size_t len = 0;
};
Utf8Step DecodeUtf8(std::string_view s, size_t i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = b(i);
  if (c < 0x80) return {c, 1};
  size_t n = 0;
  char32_t cp = 0, min = 0;
  if (c >= 0xC2 && c <= 0xDF)
    n = 1, cp = c & 0x1F, min = 0x80;
  else if ((c & 0xF0) == 0xE0)
    n = 2, cp = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4)
    n = 3, cp = c & 0x07, min = 0x10000;
  else
    return {};
  if (i + n >= s.size()) return {};
  for (size_t k = 1; k <= n; ++k) {
    if ((b(i + k) >> 6) != 0x2) return {};
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {};
  return {cp, n + 1};
}

void AppendUtf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

constexpr char32_t kReplacement = 0xFFFD;

// Characters that move the cursor, erase, recolour or reorder text on a terminal or in an editor:
// C0 controls and DEL, C1 controls (U+0080-U+009F, CSI among them), and the bidirectional
// overrides and isolates ("Trojan Source").
bool IsDangerousCodePoint(char32_t cp) {
  return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || cp == 0x200E || cp == 0x200F ||
         (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}
}  // namespace

bool IsUtf8(std::string_view s) {
  size_t i = 0, n = s.size();
  while (i < n) {
    // Runs of ASCII (most of what machines print) eight bytes at a time.
    while (n - i >= 8) {
      uint64_t w;
      std::memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    while (i < n && static_cast<unsigned char>(s[i]) < 0x80) ++i;
    if (i == n) break;
    Utf8Step st = DecodeUtf8(s, i);
    if (st.len == 0) return false;
    i += st.len;
  }
  return true;
}

bool IsValidUtf8(std::string_view s) {
  // NUL bytes mark binary content.
  return std::memchr(s.data(), 0, s.size()) == nullptr && IsUtf8(s);
}

std::string SanitizeUtf8(std::string_view s, bool* replaced) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    Utf8Step st = DecodeUtf8(s, i);
    if (st.len == 0) {
      AppendUtf8(out, kReplacement);
      if (replaced) *replaced = true;
      ++i;
      continue;
    }
    out.append(s.substr(i, st.len));
    i += st.len;
  }
  return out;
}

std::string EscapeControls(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    Utf8Step st = DecodeUtf8(s, i);
    if (st.len == 0) {
      AppendUtf8(out, kReplacement);
      ++i;
      continue;
    }
    if (st.cp == '\t' || !IsDangerousCodePoint(st.cp)) {
      out.append(s.substr(i, st.len));
    } else if (st.cp < 0x80) {
      switch (st.cp) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        default:
          out += fmt::format("\\x{:02x}", static_cast<unsigned>(st.cp));
      }
    } else {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(st.cp));
    }
    i += st.len;
  }
  return out;
}

std::string TerminalSafeText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string_view line = text.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start);
    out += EscapeControls(line);
    if (nl == std::string_view::npos) break;
    out.push_back('\n');
    start = nl + 1;
  }
  return out;
}

std::string HexEncode(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(kDigits[c >> 4]);
    out.push_back(kDigits[c & 0xF]);
  }
  return out;
}

std::optional<std::string> HexDecode(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out;
  out.reserve(hex.size() / 2);
  for (size_t i = 0; i < hex.size(); i += 2) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(hex.data() + i, hex.data() + i + 2, v, 16);
    if (ec != std::errc() || p != hex.data() + i + 2) return std::nullopt;
    out.push_back(static_cast<char>(v));
  }
  return out;
}

std::string ShellQuote(std::string_view arg) {
  if (!arg.empty() &&
      arg.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") ==
          std::string_view::npos) {
    return std::string(arg);
  }
  std::string out = "'";
  for (char c : arg) {
    if (c == '\'')
      out += "'\\''";
    else
      out.push_back(c);
  }
  out += "'";
  return out;
}

std::string JoinArgv(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out.push_back(' ');
    out += ShellQuote(a);
  }
  return out;
}

std::string Ellipsize(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  // Cut before a UTF-8 continuation byte, never inside a character.
  auto cut = [&](size_t n) {
    while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
    return std::string(s.substr(0, n));
  };
  if (max < 4) return cut(max);
  return cut(max - 3) + "...";
}

}  // namespace clustermax::util
