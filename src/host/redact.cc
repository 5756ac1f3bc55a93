#include "host/redact.h"

#include <array>
#include <cctype>
#include <vector>

#include <fmt/format.h>

#include "util/strings.h"

namespace clustermax::host {
namespace {

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Lower-case letters and digits only: "AWS_SECRET_ACCESS_KEY" -> "awssecretaccesskey".
std::string Normalize(std::string_view name) {
  std::string n;
  for (char c : name) {
    if (std::isalnum(static_cast<unsigned char>(c)))
      n.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return n;
}

// Files that are secret material through and through.
bool IsSecretFile(std::string_view path) {
  static constexpr std::array<std::string_view, 6> kExact = {
      "/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/munge/munge.key", "/etc/krb5.keytab"};
  for (auto p : kExact)
    if (path == p) return true;
  std::string_view base = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  if (EndsWith(base, ".keytab")) return true;
  if (StartsWith(path, "/etc/ssh/") && StartsWith(base, "ssh_host_") && EndsWith(base, "_key")) return true;
  for (std::string_view k : {"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk"}) {
    if (base == k) return true;
  }
  if (StartsWith(path, "/etc/slurm") && (base == "jwt_hs256.key" || base == "jwt.key" || base == "slurm.key"))
    return true;
  return false;
}

// Files written as `KEY VALUE` (whitespace between key and value) that can hold secrets.
bool IsSpaceSeparatedSecretFile(std::string_view path) {
  std::string_view base = path.substr(path.rfind('/') == std::string_view::npos ? 0 : path.rfind('/') + 1);
  return StartsWith(path, "/etc/opensm/") || StartsWith(path, "/etc/rdma/") || base == "opensm.conf" ||
         base == "nslcd.conf" || base == "ldap.conf" || base == "pam_ldap.conf" || base == "libnss-ldap.conf" ||
         base == ".netrc" || base == ".credentials" || base == "netrc";
}

bool IsProcNulFile(std::string_view path) {
  return StartsWith(path, "/proc/") && (EndsWith(path, "/environ") || EndsWith(path, "/cmdline"));
}

// Replaces the value in `line` that starts at `pos`: quoted values keep their quotes and whatever
// follows the closing quote (a JSON comma), bare values lose everything to the end of the line.
bool RedactValueAt(std::string& line, size_t pos) {
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t')) ++pos;
  if (pos >= line.size()) return false;
  char q = line[pos];
  if (q == '"' || q == '\'') {
    size_t end = pos + 1;
    while (end < line.size() && line[end] != q) end += line[end] == '\\' ? 2 : 1;
    std::string_view value(line.data() + pos + 1, std::min(end, line.size()) - pos - 1);
    if (!CouldBeSecret(value)) return false;
    line.replace(pos + 1, std::min(end, line.size()) - pos - 1, kRedacted);
    return true;
  }
  std::string_view value = util::Trim(std::string_view(line).substr(pos));
  if (!CouldBeSecret(value)) return false;
  line.replace(pos, std::string::npos, kRedacted);
  return true;
}

// Command-line flags inside a line (unit files' ExecStart, ps output): `--secret=VALUE`, `--secret VALUE`.
void RedactFlags(std::string& line) {
  size_t pos = 0;
  while ((pos = line.find("--", pos)) != std::string::npos) {
    if (pos > 0 && !std::isspace(static_cast<unsigned char>(line[pos - 1])) && line[pos - 1] != '"' &&
        line[pos - 1] != '\'') {
      pos += 2;
      continue;
    }
    size_t end = pos + 2;
    while (end < line.size() &&
           (std::isalnum(static_cast<unsigned char>(line[end])) || line[end] == '-' || line[end] == '_'))
      ++end;
    std::string_view flag(line.data() + pos, end - pos);
    if (!IsSecretName(flag)) {
      pos = end;
      continue;
    }
    size_t v = end;
    if (v < line.size() && line[v] == '=') {
      ++v;
    } else {
      while (v < line.size() && line[v] == ' ') ++v;
      if (v == end || v >= line.size() || line[v] == '-') {
        pos = end;
        continue;
      }
    }
    size_t v_end = v;
    if (v < line.size() && (line[v] == '"' || line[v] == '\'')) {
      size_t close = line.find(line[v], v + 1);
      v_end = close == std::string::npos ? line.size() : close + 1;
    } else {
      while (v_end < line.size() && !std::isspace(static_cast<unsigned char>(line[v_end]))) ++v_end;
    }
    std::string_view value(line.data() + v, v_end - v);
    if (CouldBeSecret(value)) {
      line.replace(v, v_end - v, kRedacted);
      v_end = v + kRedacted.size();
    }
    pos = v_end;
  }
}

// Credentials written into URLs: scheme://user:password@host. With `drop` the user information goes
// (a value the tool itself uses, such as an S3 endpoint); otherwise it becomes "***@".
std::string RedactUrlUserinfo(std::string text, bool drop) {
  size_t pos = 0;
  while ((pos = text.find("://", pos)) != std::string::npos) {
    size_t start = pos + 3, end = start;
    while (end < text.size() && text[end] != '/' && text[end] != '@' &&
           !std::isspace(static_cast<unsigned char>(text[end])) && text[end] != '"' && text[end] != '\'') {
      ++end;
    }
    if (end < text.size() && text[end] == '@' && end > start) {
      if (drop) {
        text.erase(start, end - start + 1);
      } else {
        text.replace(start, end - start, "***");
        end = start + 3;
      }
    }
    pos = drop ? start : end;
  }
  return text;
}

// One line of `KEY = VALUE`, `KEY: VALUE`, `export KEY=VALUE` or `"KEY": "VALUE"`; with `spaced`,
// also `KEY VALUE`, and netrc's `... password VALUE`.
void RedactLine(std::string& line, bool spaced) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '-')) ++i;  // YAML list items
  if (line.compare(i, 7, "export ") == 0) i += 7;
  size_t key_start = i, key_end;
  if (i < line.size() && (line[i] == '"' || line[i] == '\'')) {
    char q = line[i];
    size_t close = line.find(q, i + 1);
    if (close == std::string::npos) return;
    key_start = i + 1;
    key_end = close;
    i = close + 1;
  } else {
    while (i < line.size() &&
           (std::isalnum(static_cast<unsigned char>(line[i])) || line[i] == '_' || line[i] == '-' || line[i] == '.'))
      ++i;
    key_end = i;
  }
  if (key_end == key_start) return;
  std::string_view key(line.data() + key_start, key_end - key_start);
  size_t j = i;
  while (j < line.size() && (line[j] == ' ' || line[j] == '\t')) ++j;
  if (j < line.size() && (line[j] == '=' || line[j] == ':')) {
    if (IsSecretName(key)) RedactValueAt(line, j + 1);
    return;
  }
  if (!spaced) return;
  if (j > i && IsSecretName(key)) {
    // `KEY VALUE`: only the first word is the value (opensm keeps comments after it rarely).
    RedactValueAt(line, j);
    return;
  }
  // netrc and enroot credentials: "machine HOST login USER password SECRET" on one line.
  auto words = util::SplitWhitespace(line);
  for (size_t w = 0; w + 1 < words.size(); ++w) {
    if (words[w] == "password" || words[w] == "passwd" || words[w] == "account") {
      size_t at = line.find(" " + words[w + 1], line.find(words[w]));
      if (at != std::string::npos && CouldBeSecret(words[w + 1])) line.replace(at + 1, words[w + 1].size(), kRedacted);
    }
  }
}

// A PEM block whose armour lines sit in one line of text (JSON with escaped newlines, a log line):
// the body between them goes.
void RedactInlinePem(std::string& line) {
  size_t pos = 0;
  while ((pos = line.find("-----BEGIN", pos)) != std::string::npos) {
    size_t head_end = line.find("-----", pos + 10);
    if (head_end == std::string::npos) return;
    head_end += 5;
    size_t end = line.find("-----END", head_end);
    if (end == std::string::npos) return;
    if (line.substr(pos, head_end - pos).find("PRIVATE KEY") != std::string::npos) {
      line.replace(head_end, end - head_end, kRedacted);
      end = head_end + kRedacted.size();
    }
    pos = end + 8;
  }
}

// PEM private-key blocks keep their armour lines and lose the body.
std::string RedactPemBlocks(const std::string& text) {
  if (text.find("PRIVATE KEY") == std::string::npos) return text;
  std::string out;
  bool inside = false;
  for (auto view : util::SplitLineViews(text)) {
    std::string owned;
    std::string_view line = view;
    if (!inside && line.find("-----END") != std::string_view::npos) {  // BEGIN and END on one line
      owned = std::string(line);
      RedactInlinePem(owned);
      out += owned;
      out += "\n";
      continue;
    }
    // A block: only when its END line follows (an armour line alone, in a log, drops nothing).
    size_t offset = static_cast<size_t>(line.data() - text.data()) + line.size();
    if (!inside && line.find("-----BEGIN") != std::string_view::npos &&
        line.find("PRIVATE KEY") != std::string_view::npos && text.find("-----END", offset) != std::string::npos) {
      inside = true;
      out.append(line);
      out += "\n";
      out.append(kRedacted);
      out += "\n";
      continue;
    }
    if (inside) {
      if (line.find("-----END") != std::string_view::npos) {
        inside = false;
        out.append(line);
        out += "\n";
      }
      continue;
    }
    out.append(line);
    out += "\n";
  }
  if (!text.empty() && text.back() != '\n' && !out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::string RedactLines(std::string text, bool spaced) {
  text = RedactPemBlocks(text);
  if (text.find("://") != std::string::npos) text = RedactUrlUserinfo(std::move(text), /*drop=*/false);
  // Cheap test first: most files and outputs hold none of the words a secret's key contains.
  std::string lower = util::ToLower(text);
  bool maybe = false;
  for (std::string_view w : {"pass", "secret", "token", "key", "cred", "auth", "pw", "private"}) {
    if (lower.find(w) != std::string::npos) maybe = true;
  }
  if (!maybe) return text;
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    RedactLine(line, spaced);
    RedactFlags(line);
    out += line;
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
  }
  return out;
}

// Arguments one by one: `KEY=VALUE` and `--secret=VALUE` keep the key, `--secret VALUE` loses the
// next argument, each only when the value could be a secret.
void RedactItems(std::vector<std::string>& items) {
  bool next_is_secret = false;
  for (auto& item : items) {
    if (next_is_secret) {
      next_is_secret = false;
      if (!StartsWith(item, "-") && CouldBeSecret(item)) {
        item = std::string(kRedacted);
        continue;
      }
    }
    size_t eq = item.find('=');
    if (eq != std::string::npos) {
      if (IsSecretName(item.substr(0, eq)) && CouldBeSecret(std::string_view(item).substr(eq + 1))) {
        item = item.substr(0, eq + 1) + std::string(kRedacted);
      }
    } else if (StartsWith(item, "-") && IsSecretName(item)) {
      next_is_secret = true;
    }
  }
}

std::string Join(const std::vector<std::string>& items, char sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out.push_back(sep);
    out += items[i];
  }
  return out;
}

// NUL-separated: environ (KEY=VALUE) and cmdline (--secret=VALUE, --secret VALUE).
std::string RedactNulList(const std::string& text) {
  std::vector<std::string> items = util::Split(text, '\0', /*keep_empty=*/true);
  RedactItems(items);
  return Join(items, '\0');
}

}  // namespace

bool IsSecretName(std::string_view name) {
  std::string n = Normalize(name);
  if (n.empty()) return false;
  for (std::string_view s : {"file", "path", "dir", "type", "level", "length", "len", "age", "lifetime", "timeout",
                             "program", "command", "cmd", "method", "policy", "authentication", "enabled", "expiry"}) {
    if (EndsWith(n, s)) return false;
  }
  for (std::string_view exact : {"mkey", "smkey", "sakey", "auth", "pass", "pw", "pwd", "psk"}) {
    if (n == exact) return true;
  }
  for (std::string_view part :
       {"password", "passwd", "passphrase", "secret", "token", "credential", "apikey", "privatekey", "privkey",
        "accesskey", "authtok", "bindpw", "clientkeydata", "sessionkey", "signingkey", "encryptionkey", "masterkey",
        "storagepass", "jobcomppass"}) {
    if (n.find(part) != std::string::npos) return true;
  }
  return EndsWith(n, "pass") || EndsWith(n, "pwd") || EndsWith(n, "bindpw");
}

bool CouldBeSecret(std::string_view value) {
  std::string v = util::ToLower(util::Trim(value));
  if (v.empty()) return false;
  for (std::string_view harmless :
       {"(null)", "null", "none", "yes", "no", "true", "false", "on", "off", "*", "!", "x", "<redacted>"}) {
    if (v == harmless) return false;
  }
  std::string_view digits = v;
  if (StartsWith(digits, "0x")) digits.remove_prefix(2);
  return digits.find_first_not_of('0') != std::string_view::npos && v != "1";
}

std::string RedactFile(std::string_view path, std::string content) {
  if (IsSecretFile(path)) return fmt::format("{} ({} bytes of secret material not read)", kRedacted, content.size());
  if (IsProcNulFile(path)) return RedactNulList(content);
  if (!util::IsValidUtf8(content) && content.find('\0') != std::string::npos &&
      content.find("PRIVATE KEY") == std::string::npos) {
    return content;  // binary (sysfs, PCI config space): no text keys to find
  }
  return RedactLines(std::move(content), IsSpaceSeparatedSecretFile(path));
}

std::string RedactText(std::string content) { return RedactLines(std::move(content), false); }

std::string RedactEnv(std::string_view name, std::string value) {
  if (IsSecretName(name) && CouldBeSecret(value)) return std::string(kRedacted);
  if (value.find("://") != std::string::npos) return RedactUrlUserinfo(std::move(value), /*drop=*/true);
  return value;
}

std::string RedactCommandLine(std::string_view command) {
  std::vector<std::string> words = util::SplitWhitespace(command);
  RedactItems(words);
  return Join(words, ' ');
}

std::string RedactArg(std::string arg) {
  if (arg.find("://") != std::string::npos) arg = RedactUrlUserinfo(std::move(arg), /*drop=*/false);
  return arg;
}

std::vector<std::string> RedactArgv(std::vector<std::string> argv) {
  RedactItems(argv);
  for (auto& a : argv) a = RedactArg(std::move(a));
  return argv;
}

}  // namespace clustermax::host
