#include "cli/minimums.h"

#include <chrono>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/version.h"
#include "host/redact.h"
#include "util/curl.h"
#include "util/files.h"
#include "util/strings.h"

namespace clustermax::cli {
namespace fs = std::filesystem;

namespace {

// A minimum-version table is a few tens of kilobytes; anything past this is not one.
constexpr size_t kMaxTableBytes = 4u << 20;

bool IsUrl(const std::string& s) { return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0; }

const util::CurlApi& Api() { return util::Curl("minimums update from a URL"); }

// GET over http(s) only (redirects too; from https only to https), at most kMaxTableBytes, 60 s.
std::string Fetch(const std::string& url) {
  std::unique_ptr<CURL, void (*)(CURL*)> c(Api().easy_init(), Api().easy_cleanup);
  if (!c) throw std::runtime_error("Api().easy_init failed");
  std::string body;
  char errbuf[CURL_ERROR_SIZE] = {0};
  auto write = +[](char* p, size_t size, size_t n, void* user) -> size_t {
    auto* b = static_cast<std::string*>(user);
    if (b->size() + size * n > kMaxTableBytes) return 0;  // aborts the transfer
    b->append(p, size * n);
    return size * n;
  };
  std::string agent = fmt::format("clustermax/{}", core::kToolVersion);
  Api().easy_setopt(c.get(), CURLOPT_URL, url.c_str());
  bool https_only = url.rfind("https://", 0) == 0;
  // The _STR forms arrived in 7.85; RHEL 9 (7.76) and Ubuntu 22.04 (7.81) know only the bit masks.
  if (Api().easy_setopt(c.get(), CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_UNKNOWN_OPTION) {
    Api().easy_setopt(c.get(), CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  }
  if (Api().easy_setopt(c.get(), CURLOPT_REDIR_PROTOCOLS_STR, https_only ? "https" : "http,https") ==
      CURLE_UNKNOWN_OPTION) {
    Api().easy_setopt(c.get(), CURLOPT_REDIR_PROTOCOLS,
                      static_cast<long>(https_only ? CURLPROTO_HTTPS : CURLPROTO_HTTP | CURLPROTO_HTTPS));
  }
  Api().easy_setopt(c.get(), CURLOPT_FOLLOWLOCATION, 1L);
  Api().easy_setopt(c.get(), CURLOPT_MAXREDIRS, 5L);
  Api().easy_setopt(c.get(), CURLOPT_CONNECTTIMEOUT, 15L);
  Api().easy_setopt(c.get(), CURLOPT_TIMEOUT, 60L);
  Api().easy_setopt(c.get(), CURLOPT_NOSIGNAL, 1L);
  Api().easy_setopt(c.get(), CURLOPT_USERAGENT, agent.c_str());
  Api().easy_setopt(c.get(), CURLOPT_ERRORBUFFER, errbuf);
  Api().easy_setopt(c.get(), CURLOPT_WRITEFUNCTION, write);
  Api().easy_setopt(c.get(), CURLOPT_WRITEDATA, &body);
  CURLcode rc = Api().easy_perform(c.get());
  std::string shown = host::RedactArg(url);
  if (rc == CURLE_WRITE_ERROR && body.size() + 1 > kMaxTableBytes - 65536) {
    throw std::runtime_error(
        fmt::format("{}: larger than {} MiB: not a minimum-version table", shown, kMaxTableBytes >> 20));
  }
  if (rc != CURLE_OK)
    throw std::runtime_error(fmt::format("{}: {}", shown, *errbuf ? errbuf : Api().easy_strerror(rc)));
  long status = 0;
  Api().easy_getinfo(c.get(), CURLINFO_RESPONSE_CODE, &status);
  if (status != 200) throw std::runtime_error(fmt::format("{}: HTTP {} (not the table)", shown, status));
  return body;
}

}  // namespace

fs::path InstalledMinimumsPath() { return util::StateDir() / "minimum-versions.json"; }

const core::MinimumTable& LoadMinimums(const std::string& file, core::MinimumTable& storage, std::string* text) {
  if (!file.empty()) {
    auto t = util::ReadLocalFile(file);
    if (!t) throw std::runtime_error("cannot read minimum table " + file);
    storage = core::ParseMinimumTable(*t, file);
    if (text) *text = std::move(*t);
    return storage;
  }
  const core::MinimumTable& embedded = core::EmbeddedMinimumTable();
  fs::path installed = InstalledMinimumsPath();
  std::error_code ec;
  if (fs::exists(fs::symlink_status(installed, ec))) {
    try {
      auto t = util::ReadLocalFile(installed);
      if (t) {
        core::MinimumTable parsed = core::ParseMinimumTable(*t, installed.string());
        // A newer binary may embed a newer table than the one installed earlier: the newer wins.
        if (parsed.generated > embedded.generated) {
          storage = std::move(parsed);
          if (text) *text = std::move(*t);
          return storage;
        }
      }
    } catch (const std::exception& e) {
      std::cerr << fmt::format(
          "clustermax: warning: the installed minimum table is unusable, the embedded one is used: {}\n",
          util::EscapeControls(e.what()));
    }
  }
  if (text) *text = std::string(core::EmbeddedMinimumTableText());
  return embedded;
}

std::string UpdateMinimums(const std::string& source, bool force) {
  std::string text;
  if (IsUrl(source)) {
    text = Fetch(source);
  } else {
    auto t = util::ReadLocalFile(source, kMaxTableBytes);
    if (!t) throw std::runtime_error(source + ": no such file");
    text = std::move(*t);
  }
  std::string shown = IsUrl(source) ? host::RedactArg(source) : source;
  // Verified as a whole table: schema, every component and floor, the dates (throws with the reason).
  core::MinimumTable fresh = core::ParseMinimumTable(text, shown);
  // A key lost between two rows would grade unknown on every node: not a table to install.
  auto gaps = core::MinimumTableGaps(fresh);
  if (!gaps.empty() && !force) {
    std::vector<std::string> named;
    for (const auto& g : gaps) named.push_back(fmt::format("{} {} ({})", g.family, g.key, g.component));
    throw std::runtime_error(fmt::format("{}: the table has {} gap(s): {}: refused (--force installs it anyway)", shown,
                                         gaps.size(), fmt::join(named, ", ")));
  }
  auto now = std::chrono::system_clock::now();
  if (fresh.generated > now + std::chrono::hours(24)) {
    throw std::runtime_error(fmt::format("{}: generated {}, in the future: refused (is this machine's clock right?)",
                                         shown, fresh.generated_text));
  }
  core::MinimumTable storage;
  const core::MinimumTable& current = LoadMinimums("", storage);
  if (fresh.generated < current.generated && !force) {
    throw std::runtime_error(fmt::format(
        "{}: generated {}, older than the table in use ({}, generated {}): refused (--force installs it anyway)", shown,
        fresh.generated_text, current.origin, current.generated_text));
  }
  if (fresh.generated == current.generated && !force) {
    return fmt::format("already in use: the {} table (generated {}); nothing changed\n", current.origin,
                       current.generated_text);
  }
  util::CreatePrivateDirectories(util::StateDir());
  util::WriteFileAtomic(InstalledMinimumsPath(), text);
  auto age = std::chrono::duration<double, std::ratio<86400>>(now - fresh.generated).count();
  return fmt::format(
      "installed {}: generated {} ({:.0f} days old), {} components, from {}\naudits use it from now on (--minimums FILE overrides it)\n",
      InstalledMinimumsPath().string(), fresh.generated_text, age, fresh.components.size(), shown);
}

}  // namespace clustermax::cli
