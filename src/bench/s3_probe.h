// The audit's s3-probe: HEAD the bucket, PUT one small object, GET it back (compared), DELETE it.
// It runs as its own command (`clustermax probe s3 ...`, started by the audit's collector through
// host::Host), so its answer is recorded in the evidence bundle and replays like any command.
// Credentials come from the environment or profile file, never from argv (argv is recorded).
#pragma once
#include <nlohmann/json.hpp>

#include "bench/s3.h"

namespace clustermax::bench {

// {"endpoint", "bucket", "credentials" (the source, never values), "reachable", "steps": [{"op",
// "ok", "status", "error", "ms"}]}. Stops after an unreachable HEAD; deletes what it PUT.
nlohmann::json RunS3Probe(const S3Config& config);

}  // namespace clustermax::bench
