#include "bench/s3_probe.h"
#include "util/files.h"

#include <unistd.h>

#include <cmath>
#include <random>

#include <fmt/format.h>

namespace clustermax::bench {
using nlohmann::json;

json RunS3Probe(const S3Config& config) {
  S3Client c(config);
  json steps = json::array();
  auto step = [&](const std::string& op, const S3Response& r) {
    json s = {{"op", op}, {"ok", r.ok()}, {"status", r.status}, {"ms", std::round(r.seconds * 1e5) / 100}};
    if (!r.ok()) s["error"] = r.Describe();
    steps.push_back(s);
    return r.ok();
  };
  json out = {{"endpoint", RedactSecrets(config.endpoint, config)},
              {"bucket", config.bucket},
              {"addressing", config.addressing},
              {"credentials", config.credentials.source}};
  S3Response head = c.HeadBucket();
  step("HEAD bucket", head);
  out["reachable"] = head.curl_code == 0;
  if (head.curl_code != 0) {
    out["steps"] = steps;
    RedactSecrets(out, config);
    return out;
  }
  std::string host = util::Hostname();
  std::string key = fmt::format("clustermax-probe/{}-{}-{:08x}", host, ::getpid(), std::random_device{}());
  std::string body = fmt::format("clustermax s3-probe {} {}\n", host, key);
  bool put = step("PUT " + std::to_string(body.size()) + " B", c.Put(key, body.data(), body.size()));
  if (put) {
    step("GET (compared)", c.Get(key, body.data(), body.size()));
    step("DELETE", c.Delete(key));
  }
  out["steps"] = steps;
  RedactSecrets(out, config);  // whatever a server or curl said: no credential leaves in the evidence
  return out;
}

}  // namespace clustermax::bench
