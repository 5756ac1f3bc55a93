// Secrets never leave the node: what LocalHost reads (files, command output, environment) passes
// through these rules before any collector, bundle, report or log sees it. The rules are a list of
// known secret-bearing files and key names (docs/SECURITY.md lists them):
//   - whole files that are nothing but secret material (shadow, munge key, keytabs, SSH host keys,
//     Slurm JWT keys) keep only their size;
//   - PEM private-key blocks anywhere keep only their BEGIN/END lines;
//   - `KEY = VALUE`, `KEY: VALUE`, `KEY=VALUE` and `"KEY": "VALUE"` lines whose key names a secret
//     (password, passwd, secret, token, authtok, bindpw, StoragePass, m_key, sm_key, sa_key,
//     client-key-data, aws_secret_access_key, ...) keep the key and lose the value;
//   - `KEY VALUE` lines of the files written that way (opensm, nslcd, ldap, netrc, enroot
//     credentials), and NUL-separated `KEY=VALUE` / `--secret-flag VALUE` in /proc/<pid>/environ
//     and /proc/<pid>/cmdline, the same way.
// A value that cannot be a secret (empty, (null), yes/no, true/false, 0/1, all zeros) is kept, so a
// check can still tell "unset" from "set": OpenSM's default key 0x0000000000000000 stays visible.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace clustermax::host {

inline constexpr std::string_view kRedacted = "<redacted>";

// Does a key or variable name name a secret? ("ldap_default_authtok", "AccountingStoragePass",
// "sm_key", "AWS_SECRET_ACCESS_KEY", "--db-password"; not "m_key_protection_level").
bool IsSecretName(std::string_view name);
// Could this value be a secret at all? (false for "", "(null)", "no", "0", "0x0000000000000000" ...)
bool CouldBeSecret(std::string_view value);
// The content of the file at `path` (the path as the audit names it, before any sysroot), redacted.
std::string RedactFile(std::string_view path, std::string content);
// A command's output (stdout or stderr), redacted by the generic rules.
std::string RedactText(std::string content);
// A shell command line as one string (words split on white space and joined by one space), each
// word judged as /proc/<pid>/cmdline's arguments are: `KEY=VALUE`, `--secret=VALUE`, `--secret VALUE`.
std::string RedactCommandLine(std::string_view command);
// One argument of a command line we record (our own argv in a bundle's manifest): URL credentials out.
std::string RedactArg(std::string arg);
// A command's arguments as a result keeps them: each judged as RedactCommandLine judges words
// (`KEY=VALUE`, `--secret=VALUE`, `--secret VALUE`), and URL credentials out.
std::vector<std::string> RedactArgv(std::vector<std::string> argv);
// An environment variable's value: kRedacted when the name names a secret; a URL loses its user
// information (user:password@), which S3 and HTTP endpoints we use never need.
std::string RedactEnv(std::string_view name, std::string value);

}  // namespace clustermax::host
