#include "bench/s3.h"

#include <ini.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <strings.h>
#include <chrono>
#include <cstring>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "bench/workspace.h"
#include "util/curl.h"
#include "util/files.h"
#include "util/url.h"

namespace clustermax::bench {

namespace {
using Clock = std::chrono::steady_clock;

// libcurl, loaded on first use (throws util::CurlUnavailable with the package to install).
const util::CurlApi& Api() { return util::Curl("bench s3"); }

struct IniState {
  std::string profile;
  std::string key, secret, token;
  bool section_seen = false;
};

int IniHandler(void* user, const char* section, const char* name, const char* value) {
  auto* st = static_cast<IniState*>(user);
  std::string sec = section;
  // ~/.aws/credentials uses [name]; ~/.aws/config uses [profile name]: accept both.
  if (sec != st->profile && sec != "profile " + st->profile) return 1;
  st->section_seen = true;
  std::string n = name;
  if (n == "aws_access_key_id") st->key = value;
  if (n == "aws_secret_access_key") st->secret = value;
  if (n == "aws_session_token") st->token = value;
  return 1;
}
}  // namespace

S3Credentials LoadS3Credentials(const std::string& profile_flag, const GetEnvFn& getenv) {
  auto env = [&](const char* k) -> std::string {
    const char* v = getenv(k);
    return v ? v : "";
  };
  S3Credentials c;
  if (profile_flag.empty() && !env("AWS_ACCESS_KEY_ID").empty()) {
    c.access_key = env("AWS_ACCESS_KEY_ID");
    c.secret_key = env("AWS_SECRET_ACCESS_KEY");
    c.session_token = env("AWS_SESSION_TOKEN");
    if (c.secret_key.empty()) throw std::runtime_error("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not");
    c.source = "environment (AWS_ACCESS_KEY_ID)";
    return c;
  }
  std::string profile = !profile_flag.empty()         ? profile_flag
                        : !env("AWS_PROFILE").empty() ? env("AWS_PROFILE")
                                                      : "default";
  std::string file = env("AWS_SHARED_CREDENTIALS_FILE");
  if (file.empty()) file = (util::HomeDir() / ".aws" / "credentials").string();
  IniState st;
  st.profile = profile;
  int rc = ini_parse(file.c_str(), IniHandler, &st);
  bool named = !profile_flag.empty() || !env("AWS_PROFILE").empty();
  if (rc == -1) {
    if (named) throw std::runtime_error(fmt::format("profile '{}' requested but {} cannot be read", profile, file));
    c.source = "anonymous (no AWS_ACCESS_KEY_ID and no credentials file)";
    return c;
  }
  if (rc > 0) throw std::runtime_error(fmt::format("{}: syntax error on line {}", file, rc));
  if (!st.section_seen) {
    if (named) throw std::runtime_error(fmt::format("profile '{}' is not in {}", profile, file));
    c.source = fmt::format("anonymous (no [default] profile in {})", file);
    return c;
  }
  if (st.key.empty() || st.secret.empty()) {
    throw std::runtime_error(
        fmt::format("profile '{}' in {} lacks aws_access_key_id or aws_secret_access_key", profile, file));
  }
  c.access_key = st.key;
  c.secret_key = st.secret;
  c.session_token = st.token;
  c.source = fmt::format("profile {} ({})", profile, file);
  return c;
}

namespace {
// Where the userinfo of the URL whose "://" is at `sep` lies: [first, second), or npos when the
// URL has none. The authority ends at the first '/', '?', '#' (or a character that ends a URL in
// running text); its userinfo is what comes before its last '@'.
std::pair<size_t, size_t> Userinfo(const std::string& s, size_t sep) {
  size_t begin = sep + 3;
  size_t end = s.find_first_of("/?#\"' \t\r\n<>", begin);
  if (end == std::string::npos) end = s.size();
  size_t at = end > begin ? s.rfind('@', end - 1) : std::string::npos;
  if (at == std::string::npos || at < begin) return {std::string::npos, std::string::npos};
  return {begin, at};
}
}  // namespace

std::string RedactSecrets(std::string text, const S3Config& config) {
  std::vector<std::string> secrets = {config.credentials.access_key, config.credentials.secret_key,
                                      config.credentials.session_token};
  if (size_t sep = config.endpoint.find("://"); sep != std::string::npos) {
    auto [b, e] = Userinfo(config.endpoint, sep);
    if (b != std::string::npos) {
      std::string userinfo = config.endpoint.substr(b, e - b);
      secrets.push_back(userinfo);
      if (size_t colon = userinfo.find(':'); colon != std::string::npos) secrets.push_back(userinfo.substr(colon + 1));
    }
  }
  for (size_t sep = text.find("://"); sep != std::string::npos; sep = text.find("://", sep + 3)) {
    auto [b, e] = Userinfo(text, sep);
    if (b != std::string::npos) text.replace(b, e - b, "***");
  }
  // Longest first, so a secret that contains another is replaced whole.
  std::sort(secrets.begin(), secrets.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& v : secrets) {
    if (v.size() < 6) continue;  // shorter values would blank out ordinary words
    for (size_t at = text.find(v); at != std::string::npos; at = text.find(v, at + 3))
      text.replace(at, v.size(), "***");
  }
  return text;
}

void RedactSecrets(nlohmann::json& doc, const S3Config& config) {
  if (doc.is_string()) {
    doc = RedactSecrets(doc.get<std::string>(), config);
  } else if (doc.is_structured()) {
    for (auto& v : doc) RedactSecrets(v, config);
  }
}

std::string AwsEscape(const std::string& s, bool keep_slash) { return util::PercentEncode(s, keep_slash); }

void ParseS3Error(const std::string& body, std::string& code, std::string& message) {
  pugi::xml_document doc;
  if (!doc.load_buffer(body.data(), body.size())) return;
  pugi::xml_node e = doc.child("Error");
  if (!e) return;
  code = e.child_value("Code");
  message = e.child_value("Message");
}

void ParseListObjects(const std::string& body, std::vector<std::string>& keys, std::string& next_token,
                      bool& truncated) {
  pugi::xml_document doc;
  auto res = doc.load_buffer(body.data(), body.size());
  if (!res) throw std::runtime_error(std::string("ListObjectsV2 response is not XML: ") + res.description());
  pugi::xml_node root = doc.child("ListBucketResult");
  if (!root) throw std::runtime_error("ListObjectsV2 response has no ListBucketResult element");
  for (pugi::xml_node c : root.children("Contents")) keys.emplace_back(c.child_value("Key"));
  truncated = std::string(root.child_value("IsTruncated")) == "true";
  next_token = truncated ? root.child_value("NextContinuationToken") : "";
  if (truncated && next_token.empty())
    throw std::runtime_error("ListObjectsV2: truncated listing without NextContinuationToken");
}

std::string S3Response::Describe() const {
  if (curl_code != 0)
    return fmt::format("no response: {} (curl error {})",
                       curl_error.empty() ? Api().easy_strerror(static_cast<CURLcode>(curl_code)) : curl_error,
                       curl_code);
  if (mismatch) return "GET returned different bytes than were PUT";
  std::string s = std::to_string(status);
  if (!error_code.empty()) s += " " + error_code;
  if (!error_message.empty()) s += ": " + error_message;
  return s;
}

struct S3Client::Request {
  std::string method;  // GET PUT POST DELETE HEAD
  std::string key;     // empty: the bucket
  std::string query;   // canonical: sorted, escaped, "k=v&k=v"
  const char* body = nullptr;
  size_t body_size = 0;
  bool keep_body = false;          // keep the response body (LIST, multipart); errors are always kept
  const char* expected = nullptr;  // GET: compare the body with these bytes
  size_t expected_size = 0;
  std::string range;  // "bytes=a-b"
  std::string* sink = nullptr;
  // Filled while the request runs.
  size_t sent = 0;
};

namespace {
struct Transfer {
  S3Client::Request* req;
  S3Response* resp;
  CURL* handle = nullptr;
  bool cancellable = true;
  bool status_known = false;
  bool error_body = false;
  size_t received = 0;
};
}  // namespace

S3Client::S3Client(S3Config config) : cfg_(std::move(config)) {
  Api();  // no libcurl: say so before any option is looked at
  if (cfg_.endpoint.rfind("http://", 0) != 0 && cfg_.endpoint.rfind("https://", 0) != 0) {
    throw std::invalid_argument("--endpoint must start with http:// or https:// (got '" +
                                RedactSecrets(cfg_.endpoint, cfg_) + "')");
  }
  while (!cfg_.endpoint.empty() && cfg_.endpoint.back() == '/') cfg_.endpoint.pop_back();
  if (cfg_.bucket.empty() || cfg_.bucket.find('/') != std::string::npos)
    throw std::invalid_argument("--bucket must be a bucket name");
  if (cfg_.addressing != "path" && cfg_.addressing != "virtual")
    throw std::invalid_argument("--addressing must be path or virtual");
  curl_ = Api().easy_init();
  if (!curl_) throw std::runtime_error("curl_easy_init failed");
}

S3Client::~S3Client() {
  if (curl_) Api().easy_cleanup(static_cast<CURL*>(curl_));
}

std::string S3Client::Url(const std::string& key, const std::string& query) const {
  std::string url;
  std::string path = key.empty() ? "" : AwsEscape(key, true);
  if (cfg_.addressing == "virtual") {
    // The bucket goes in front of the host name, after any userinfo.
    size_t sep = cfg_.endpoint.find("://");
    auto [b, e] = Userinfo(cfg_.endpoint, sep);
    size_t host = b == std::string::npos ? sep + 3 : e + 1;
    url = cfg_.endpoint.substr(0, host) + cfg_.bucket + "." + cfg_.endpoint.substr(host) + "/" + path;
  } else {
    url = cfg_.endpoint + "/" + cfg_.bucket + (path.empty() ? "" : "/" + path);
  }
  if (!query.empty()) url += "?" + query;
  return url;
}

S3Response S3Client::Perform(Request& r) {
  auto t0 = Clock::now();
  S3Response resp;
  std::mt19937 rng(std::random_device{}());
  int retries = 0;
  bool throttled = false;
  for (int attempt = 0;; ++attempt) {
    resp = PerformOnce(r);
    bool slow = resp.status == 503 || resp.status == 429 || resp.error_code == "SlowDown";
    bool transient = slow || resp.status == 500 || resp.status == 502 || resp.status == 504 ||
                     resp.error_code == "RequestTimeout" || resp.curl_code == CURLE_COULDNT_CONNECT ||
                     resp.curl_code == CURLE_OPERATION_TIMEDOUT || resp.curl_code == CURLE_RECV_ERROR ||
                     resp.curl_code == CURLE_SEND_ERROR || resp.curl_code == CURLE_GOT_NOTHING ||
                     resp.curl_code == CURLE_PARTIAL_FILE;
    throttled = throttled || slow;
    if (resp.ok() || !transient || attempt >= cfg_.max_retries || (cancellable_ && Cancelled())) break;
    ++retries;
    double delay = std::min(5.0, cfg_.backoff_s * std::pow(2.0, attempt));
    delay *= std::uniform_real_distribution<double>(0.5, 1.0)(rng);  // jitter: no thundering herd
    std::this_thread::sleep_for(std::chrono::duration<double>(delay));
  }
  resp.retries = retries;
  resp.throttled = throttled;
  resp.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return resp;
}

S3Response S3Client::PerformOnce(Request& r) {
  auto* c = static_cast<CURL*>(curl_);
  Api().easy_reset(c);  // options only: the connection cache survives
  S3Response resp;
  Transfer tr{&r, &resp, c, cancellable_};
  r.sent = 0;
  char errbuf[CURL_ERROR_SIZE] = {0};
  std::string url = Url(r.key, r.query);
  Api().easy_setopt(c, CURLOPT_URL, url.c_str());
  Api().easy_setopt(c, CURLOPT_ERRORBUFFER, errbuf);
  Api().easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  Api().easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(cfg_.connect_timeout_s * 1000));
  Api().easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(cfg_.request_timeout_s * 1000));
  Api().easy_setopt(c, CURLOPT_TCP_NODELAY, 1L);
  if (cfg_.insecure_tls) {
    Api().easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    Api().easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  curl_slist* connect_to = nullptr;
  if (!cfg_.connect_to.empty()) {
    connect_to = Api().slist_append(nullptr, cfg_.connect_to.c_str());
    Api().easy_setopt(c, CURLOPT_CONNECT_TO, connect_to);
  }
  curl_slist* headers = nullptr;
  // The payload hash: the hash of the empty body where there is none, UNSIGNED-PAYLOAD otherwise
  // (libcurl signs the header's value; it does not add the header itself).
  bool has_body = r.body_size > 0 || r.method == "PUT" || r.method == "POST";
  headers = Api().slist_append(
      headers, has_body ? "x-amz-content-sha256: UNSIGNED-PAYLOAD"
                        : "x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  if (!cfg_.fixed_amz_date.empty())
    headers = Api().slist_append(headers, ("X-Amz-Date: " + cfg_.fixed_amz_date).c_str());
  if (!r.range.empty()) headers = Api().slist_append(headers, ("Range: " + r.range).c_str());
  if (!cfg_.credentials.session_token.empty()) {
    headers = Api().slist_append(headers, ("x-amz-security-token: " + cfg_.credentials.session_token).c_str());
  }
  // No 100-continue round trip before a body. (An empty "Expect:" header would remove the header
  // but libcurl would still sign it, and AWS would reject the signature.)
  Api().easy_setopt(c, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
  Api().easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  std::string userpwd;
  std::string sigv4 = "aws:amz:" + cfg_.region + ":s3";
  if (!cfg_.credentials.anonymous()) {
    userpwd = cfg_.credentials.access_key + ":" + cfg_.credentials.secret_key;
    Api().easy_setopt(c, CURLOPT_AWS_SIGV4, sigv4.c_str());
    Api().easy_setopt(c, CURLOPT_USERPWD, userpwd.c_str());
  }

  if (r.method == "PUT") {
    Api().easy_setopt(c, CURLOPT_UPLOAD, 1L);
    Api().easy_setopt(c, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(r.body_size));
    Api().easy_setopt(c, CURLOPT_READDATA, &r);
    Api().easy_setopt(
        c, CURLOPT_READFUNCTION, +[](char* buf, size_t size, size_t n, void* ud) -> size_t {
          auto* rq = static_cast<Request*>(ud);
          size_t want = std::min(size * n, rq->body_size - rq->sent);
          std::memcpy(buf, rq->body + rq->sent, want);
          rq->sent += want;
          return want;
        });
  } else if (r.method == "POST") {
    Api().easy_setopt(c, CURLOPT_POST, 1L);
    Api().easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body_size));
    Api().easy_setopt(c, CURLOPT_POSTFIELDS, r.body ? r.body : "");
  } else if (r.method == "HEAD") {
    Api().easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (r.method == "DELETE") {
    Api().easy_setopt(c, CURLOPT_CUSTOMREQUEST, "DELETE");
  }
  Api().easy_setopt(c, CURLOPT_HEADERDATA, &tr);
  Api().easy_setopt(
      c, CURLOPT_HEADERFUNCTION, +[](char* buf, size_t size, size_t n, void* ud) -> size_t {
        auto* t = static_cast<Transfer*>(ud);
        std::string_view line(buf, size * n);
        if (line.size() > 5 && strncasecmp(line.data(), "etag:", 5) == 0) {
          std::string v(line.substr(5));
          v.erase(0, v.find_first_not_of(" \t"));
          while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.pop_back();
          t->resp->etag = v;
        }
        return size * n;
      });
  Api().easy_setopt(c, CURLOPT_WRITEDATA, &tr);
  Api().easy_setopt(
      c, CURLOPT_WRITEFUNCTION, +[](char* buf, size_t size, size_t n, void* ud) -> size_t {
        auto* t = static_cast<Transfer*>(ud);
        size_t len = size * n;
        if (!t->status_known) {  // the status line is in: error bodies are small XML, kept whatever the request
          long status = 0;
          Api().easy_getinfo(t->handle, CURLINFO_RESPONSE_CODE, &status);
          t->error_body = status >= 300;
          t->status_known = true;
        }
        if (t->error_body || t->req->keep_body) {
          if (t->resp->body.size() < (64u << 20)) t->resp->body.append(buf, len);
        } else if (t->req->sink) {
          t->req->sink->append(buf, len);
        } else if (t->req->expected) {
          if (t->received + len > t->req->expected_size || std::memcmp(t->req->expected + t->received, buf, len) != 0)
            t->resp->mismatch = true;
        }
        t->received += len;
        return len;
      });
  Api().easy_setopt(c, CURLOPT_XFERINFODATA, &tr);
  Api().easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  Api().easy_setopt(
      c, CURLOPT_XFERINFOFUNCTION, +[](void* ud, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> int {
        return static_cast<Transfer*>(ud)->cancellable && Cancelled() ? 1 : 0;  // Ctrl-C aborts a long transfer
      });

  CURLcode rc = Api().easy_perform(c);
  resp.curl_code = rc;
  if (rc != CURLE_OK) resp.curl_error = errbuf[0] ? errbuf : Api().easy_strerror(rc);
  Api().easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
  if (rc == CURLE_OK) {
    if (r.method == "PUT" || r.method == "POST") {
      resp.bytes = r.sent;
    } else {
      resp.bytes = tr.received;
    }
    if (r.expected && tr.received != r.expected_size && resp.status >= 200 && resp.status < 300) resp.mismatch = true;
    if (resp.status >= 300) {
      ParseS3Error(resp.body, resp.error_code, resp.error_message);
      if (resp.error_code.empty()) {
        resp.error_code = resp.status == 404   ? "NotFound"
                          : resp.status == 403 ? "Forbidden"
                          : resp.status == 400 ? "BadRequest"
                                               : "";
      }
    }
  }
  Api().slist_free_all(headers);
  Api().slist_free_all(connect_to);
  return resp;
}

S3Response S3Client::HeadBucket() {
  Request r{"HEAD", ""};
  return Perform(r);
}

S3Response S3Client::Put(const std::string& key, const char* data, size_t n) {
  Request r{"PUT", key};
  r.body = data;
  r.body_size = n;
  return Perform(r);
}

S3Response S3Client::Get(const std::string& key, const char* expected, size_t expected_size) {
  Request r{"GET", key};
  r.expected = expected;
  r.expected_size = expected_size;
  return Perform(r);
}

S3Response S3Client::GetRange(const std::string& key, uint64_t first, uint64_t last, std::string* body) {
  Request r{"GET", key};
  r.range = fmt::format("bytes={}-{}", first, last);
  r.sink = body;
  return Perform(r);
}

S3Response S3Client::Head(const std::string& key) {
  Request r{"HEAD", key};
  return Perform(r);
}

S3Response S3Client::Delete(const std::string& key) {
  Request r{"DELETE", key};
  return Perform(r);
}

S3Response S3Client::List(const std::string& prefix, int max_keys, const std::string& token,
                          std::vector<std::string>& keys, std::string& next_token) {
  // Canonical query: parameters sorted by name, values escaped (SigV4 signs the query as sent).
  std::string q;
  if (!token.empty()) q += "continuation-token=" + AwsEscape(token, false) + "&";
  q += "list-type=2&max-keys=" + std::to_string(max_keys) + "&prefix=" + AwsEscape(prefix, false);
  Request r{"GET", "", q};
  r.keep_body = true;
  S3Response resp = Perform(r);
  next_token.clear();
  if (resp.ok()) {
    bool truncated = false;
    try {
      ParseListObjects(resp.body, keys, next_token, truncated);
    } catch (const std::exception& e) {
      resp.status = 0;
      resp.curl_code = -1;
      resp.curl_error = e.what();
    }
  }
  return resp;
}

S3Response S3Client::CreateMultipart(const std::string& key, std::string& upload_id) {
  Request r{"POST", key, "uploads="};
  r.keep_body = true;
  S3Response resp = Perform(r);
  if (resp.ok()) {
    pugi::xml_document doc;
    if (doc.load_buffer(resp.body.data(), resp.body.size()))
      upload_id = doc.child("InitiateMultipartUploadResult").child_value("UploadId");
    if (upload_id.empty()) {
      resp.curl_code = -1;
      resp.curl_error = "CreateMultipartUpload: no UploadId in the response";
    }
  }
  return resp;
}

S3Response S3Client::UploadPart(const std::string& key, const std::string& upload_id, int part, const char* data,
                                size_t n) {
  Request r{"PUT", key, fmt::format("partNumber={}&uploadId={}", part, AwsEscape(upload_id, false))};
  r.body = data;
  r.body_size = n;
  return Perform(r);
}

S3Response S3Client::CompleteMultipart(const std::string& key, const std::string& upload_id,
                                       const std::vector<std::string>& etags) {
  std::string xml = "<CompleteMultipartUpload>";
  for (size_t i = 0; i < etags.size(); ++i) {
    xml += fmt::format("<Part><PartNumber>{}</PartNumber><ETag>{}</ETag></Part>", i + 1, etags[i]);
  }
  xml += "</CompleteMultipartUpload>";
  Request r{"POST", key, "uploadId=" + AwsEscape(upload_id, false)};
  r.body = xml.data();
  r.body_size = xml.size();
  r.keep_body = true;
  S3Response resp = Perform(r);
  // S3 may answer 200 with an <Error> body for a failed completion.
  if (resp.ok()) {
    ParseS3Error(resp.body, resp.error_code, resp.error_message);
    if (!resp.error_code.empty()) resp.status = 500;
  }
  return resp;
}

S3Response S3Client::AbortMultipart(const std::string& key, const std::string& upload_id) {
  Request r{"DELETE", key, "uploadId=" + AwsEscape(upload_id, false)};
  return Perform(r);
}

S3Response S3Client::PutMultipart(const std::string& key, const char* data, size_t n, size_t part_size,
                                  const std::function<void(const std::string&)>& upload_started) {
  auto t0 = Clock::now();
  std::string upload_id;
  S3Response total = CreateMultipart(key, upload_id);
  if (!total.ok()) return total;
  if (upload_started) upload_started(upload_id);
  std::vector<std::string> etags;
  int retries = total.retries;
  bool throttled = total.throttled;
  for (size_t off = 0, part = 1; off < n; off += part_size, ++part) {
    size_t len = std::min(part_size, n - off);
    S3Response p = UploadPart(key, upload_id, static_cast<int>(part), data + off, len);
    retries += p.retries;
    throttled = throttled || p.throttled;
    if (!p.ok() || Cancelled()) {
      AbortMultipart(key, upload_id);
      p.retries = retries;
      p.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
      if (p.ok()) p.curl_code = CURLE_ABORTED_BY_CALLBACK, p.curl_error = "interrupted";
      return p;
    }
    etags.push_back(p.etag);
  }
  S3Response done = CompleteMultipart(key, upload_id, etags);
  if (!done.ok()) AbortMultipart(key, upload_id);
  done.retries += retries;
  done.throttled = done.throttled || throttled;
  done.bytes = done.ok() ? n : 0;
  done.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return done;
}

}  // namespace clustermax::bench
