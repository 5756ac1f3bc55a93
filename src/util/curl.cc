#include "util/curl.h"

#include <dlfcn.h>

#include <mutex>

#include <fmt/format.h>

#include "util/dynlib.h"

namespace clustermax::util {

namespace {
// 7.75.0: CURLOPT_AWS_SIGV4.
constexpr unsigned kMinimumCurl = 0x074b00;
constexpr const char* kLibraries[] = {"libcurl.so.4", "libcurl-gnutls.so.4"};

struct Loaded {
  CurlApi api{};
  std::string error;  // empty: loaded
};

Loaded Load() {
  Loaded l;
  void* handle = nullptr;
  std::string tried;
  for (const char* lib : kLibraries) {
    handle = ::dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      l.api.library = lib;
      break;
    }
    const char* e = ::dlerror();
    tried += fmt::format("{}{}", tried.empty() ? "" : "; ", e ? e : lib);
  }
  if (!handle) {
    l.error = fmt::format(
        "libcurl is not installed on this node ({}): install the libcurl4 package (Debian, Ubuntu) or libcurl (RHEL, Rocky)",
        tried);
    return l;
  }
  std::string missing;
  BindSymbol(handle, l.api.global_init, "curl_global_init", missing);
  BindSymbol(handle, l.api.easy_init, "curl_easy_init", missing);
  BindSymbol(handle, l.api.easy_cleanup, "curl_easy_cleanup", missing);
  BindSymbol(handle, l.api.easy_reset, "curl_easy_reset", missing);
  BindSymbol(handle, l.api.easy_setopt, "curl_easy_setopt", missing);
  BindSymbol(handle, l.api.easy_getinfo, "curl_easy_getinfo", missing);
  BindSymbol(handle, l.api.easy_perform, "curl_easy_perform", missing);
  BindSymbol(handle, l.api.easy_strerror, "curl_easy_strerror", missing);
  BindSymbol(handle, l.api.slist_append, "curl_slist_append", missing);
  BindSymbol(handle, l.api.slist_free_all, "curl_slist_free_all", missing);
  BindSymbol(handle, l.api.version_info, "curl_version_info", missing);
  if (!missing.empty()) {
    l.error = fmt::format("{} lacks {}: not a usable libcurl", l.api.library, missing);
    return l;
  }
  l.api.version = l.api.version_info(CURLVERSION_NOW)->version_num;
  if (l.api.version < kMinimumCurl) {
    l.error = fmt::format("{} is libcurl {}; AWS SigV4 signing needs 7.75 or newer", l.api.library,
                          CurlVersionText(l.api.version));
    return l;
  }
  if (CURLcode rc = l.api.global_init(CURL_GLOBAL_DEFAULT); rc != CURLE_OK) {
    l.error = fmt::format("curl_global_init failed: {}", l.api.easy_strerror(rc));
  }
  // The handle stays open for the life of the process, as a linked library would.
  return l;
}
}  // namespace

std::string CurlVersionText(unsigned v) { return fmt::format("{}.{}.{}", (v >> 16) & 0xff, (v >> 8) & 0xff, v & 0xff); }

const CurlApi& Curl(const std::string& what) {
  static std::once_flag once;
  static Loaded loaded;
  std::call_once(once, [] { loaded = Load(); });
  if (!loaded.error.empty()) throw CurlUnavailable(fmt::format("{} needs libcurl: {}", what, loaded.error));
  return loaded.api;
}

}  // namespace clustermax::util
