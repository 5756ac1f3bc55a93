// libcurl, bound at run time with dlopen: the node binary starts where libcurl is absent, and only
// the commands that speak HTTP (bench s3, minimums update URL) need it. <curl/curl.h> supplies the
// types and constants at build time; no curl symbol is linked.
#pragma once

// Deprecated options (CURLOPT_PROTOCOLS) are kept for libcurl older than 7.85.
#define CURL_DISABLE_DEPRECATION
#include <curl/curl.h>

#include <stdexcept>
#include <string>

namespace clustermax::util {

// The libcurl entry points this project calls. Each is the library's own function, so calling one
// is calling libcurl (the variadic setopt/getinfo keep their C signatures).
struct CurlApi {
  CURLcode (*global_init)(long flags);
  CURL* (*easy_init)();
  void (*easy_cleanup)(CURL*);
  void (*easy_reset)(CURL*);
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...);
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...);
  CURLcode (*easy_perform)(CURL*);
  const char* (*easy_strerror)(CURLcode);
  curl_slist* (*slist_append)(curl_slist*, const char*);
  void (*slist_free_all)(curl_slist*);
  curl_version_info_data* (*version_info)(CURLversion);
  std::string library;   // the file that was loaded
  unsigned version = 0;  // LIBCURL_VERSION_NUM form, 0xXXYYZZ
};

// Why libcurl cannot be used here, in words a user can act on.
class CurlUnavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Loads libcurl once (libcurl.so.4, then Debian's libcurl-gnutls.so.4) and calls curl_global_init;
// throws CurlUnavailable naming the package to install when it is absent or older than 7.75 (the
// first with AWS SigV4 signing). `what` names the command that needs it, for the message.
const CurlApi& Curl(const std::string& what);

// The version as "7.88.1".
std::string CurlVersionText(unsigned version_num);

}  // namespace clustermax::util
