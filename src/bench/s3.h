// A small S3 client for benchmarking: libcurl does the HTTP (one easy handle per client, so
// connections are reused) and the AWS Signature V4 signing (CURLOPT_AWS_SIGV4); we add the
// x-amz-content-sha256 header libcurl 7.88 does not, build canonical (sorted, escaped) query
// strings, parse error and LIST bodies with pugixml, and retry throttling and server errors with
// exponential backoff (counted). Credentials are never logged, printed or stored: every text and
// document the S3 commands emit passes through RedactSecrets.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::bench {

struct S3Credentials {
  std::string access_key, secret_key, session_token;
  std::string source;  // "environment", "profile default (~/.aws/credentials)", "anonymous"
  bool anonymous() const { return access_key.empty(); }
};

// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, else the profile (--profile,
// AWS_PROFILE, "default") in AWS_SHARED_CREDENTIALS_FILE or ~/.aws/credentials. With neither,
// anonymous requests. Throws when a named profile does not exist or lacks a key.
using GetEnvFn = std::function<const char*(const char*)>;
S3Credentials LoadS3Credentials(const std::string& profile, const GetEnvFn& getenv);

struct S3Config {
  std::string endpoint;  // http(s)://host[:port]
  std::string bucket;
  std::string region = "us-east-1";
  std::string addressing = "path";  // "path": endpoint/bucket/key; "virtual": bucket.host/key
  S3Credentials credentials;
  std::string connect_to;  // curl --connect-to form HOST:PORT:CONNECT-HOST:CONNECT-PORT
  double connect_timeout_s = 5;
  double request_timeout_s = 600;
  int max_retries = 4;
  double backoff_s = 0.1;  // first retry delay; doubles, with jitter, up to 5 s
  bool insecure_tls = false;
  std::string fixed_amz_date;  // tests only: sign as of this X-Amz-Date (AWS test vectors)
};

struct S3Response {
  long status = 0;    // HTTP status; 0 when no response arrived
  int curl_code = 0;  // CURLcode
  std::string curl_error;
  std::string error_code;  // S3 error code from the XML body ("NoSuchBucket"), or the status text
  std::string error_message;
  std::string body;  // kept for LIST, errors and multipart
  std::string etag;
  uint64_t bytes = 0;  // payload bytes sent (PUT) or received (GET)
  int retries = 0;
  bool throttled = false;  // a 503 SlowDown or 429 was seen (and retried)
  bool mismatch = false;   // GET with expected data: the bytes differ
  double seconds = 0;      // wall time including retries
  bool ok() const { return curl_code == 0 && status >= 200 && status < 300 && !mismatch; }
  std::string Describe() const;  // "404 NoSuchBucket: ...", "no response: Couldn't connect to server"
};

class S3Client {
 public:
  explicit S3Client(S3Config config);
  ~S3Client();
  S3Client(const S3Client&) = delete;
  S3Client& operator=(const S3Client&) = delete;

  const S3Config& config() const { return cfg_; }
  // false: Ctrl-C neither aborts a transfer nor stops retries (cleanup after an interrupt).
  void SetCancellable(bool on) { cancellable_ = on; }
  std::string Url(const std::string& key, const std::string& query = "") const;

  S3Response HeadBucket();
  S3Response Put(const std::string& key, const char* data, size_t n);
  // Body discarded and counted; with `expected`, compared byte by byte (mismatch is set).
  S3Response Get(const std::string& key, const char* expected = nullptr, size_t expected_size = 0);
  S3Response GetRange(const std::string& key, uint64_t first, uint64_t last, std::string* body);
  S3Response Head(const std::string& key);
  S3Response Delete(const std::string& key);
  // One ListObjectsV2 page: keys appended; next_token empty when the listing is complete.
  S3Response List(const std::string& prefix, int max_keys, const std::string& token, std::vector<std::string>& keys,
                  std::string& next_token);

  S3Response CreateMultipart(const std::string& key, std::string& upload_id);
  S3Response UploadPart(const std::string& key, const std::string& upload_id, int part, const char* data, size_t n);
  S3Response CompleteMultipart(const std::string& key, const std::string& upload_id,
                               const std::vector<std::string>& etags);
  S3Response AbortMultipart(const std::string& key, const std::string& upload_id);
  // Create, parts of part_size, complete; aborts the upload on any failure. `upload_started` is
  // called with the upload id so a caller can abort it after a Ctrl-C.
  S3Response PutMultipart(const std::string& key, const char* data, size_t n, size_t part_size,
                          const std::function<void(const std::string&)>& upload_started = {});

 public:
  struct Request;  // one HTTP request (defined in s3.cc)

 private:
  S3Response Perform(Request& r);
  S3Response PerformOnce(Request& r);
  S3Config cfg_;
  void* curl_ = nullptr;
  bool cancellable_ = true;
};

// The S3 error code and message from an XML error body ("" when it is not one).
void ParseS3Error(const std::string& body, std::string& code, std::string& message);
// Keys and NextContinuationToken from a ListObjectsV2 body; throws on malformed XML.
void ParseListObjects(const std::string& body, std::vector<std::string>& keys, std::string& next_token,
                      bool& truncated);
// `text` as it may be printed or stored: the userinfo of every URL in it ("http://user:pw@host")
// becomes "***" ("http://***@host"), and every credential value of `config` (access key, secret
// key, session token, the endpoint's userinfo) that is 6 characters or longer becomes "***".
std::string RedactSecrets(std::string text, const S3Config& config);
// The same for every string of a document.
void RedactSecrets(nlohmann::json& doc, const S3Config& config);

// Percent-encoding of AWS SigV4 (unreserved characters kept; '/' kept when keep_slash).
std::string AwsEscape(const std::string& s, bool keep_slash);

}  // namespace clustermax::bench
