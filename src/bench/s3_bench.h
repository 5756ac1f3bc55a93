// `bench s3`: what a training node gets from S3-compatible object storage.
//   transfers   PUT then GET per object size (4 KiB .. 1 GiB) and per stream count; objects at or
//               above the multipart threshold are uploaded in parts; GETs are compared byte by
//               byte with what was PUT; per-request latency percentiles, ops/s, GB/s.
//   list        ListObjectsV2 pages over the run's small objects: requests/s and keys/s.
//   delete      DELETE of every object the run made (timed: the DELETE rate).
//   mixed       a timed run of GET/PUT/LIST/DELETE (50/30/10/10) at the highest stream count,
//               with ops per second over time, the error rate, and p99 drift between halves.
// Every object lives under a fresh prefix and only objects this run made are deleted, also after
// Ctrl-C. Credentials are used for signing only: never printed, logged or written to the result.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/s3.h"

namespace clustermax::bench {

struct S3BenchOptions {
  S3Config config;
  std::vector<uint64_t> sizes = {4096, 1u << 20, 64u << 20};
  std::vector<int> concurrency = {1, 8};
  double duration_s = 5;                           // per transfer row (each stream finishes at least one object)
  uint64_t max_bytes_per_row = uint64_t{4} << 30;  // a row also stops once it moved this much
  uint64_t multipart_threshold = 64u << 20;
  uint64_t part_size = 16u << 20;
  int list_page = 100;
  double mixed_s = 10;  // 0: no mixed run (ClusterMAX 3.0 runs 15 minutes: 900)
  uint64_t mixed_object = 1u << 20;
  std::function<void(const std::string&)> progress;
  std::function<void(double)> fraction;  // how far the whole run is, 0..1, at each step
};

void ValidateS3Options(const S3BenchOptions& o);

// Preflight (HEAD bucket) first: a wrong endpoint, bucket or credential throws a clear
// std::runtime_error before anything is written. Result schema: docs/bench-schema.md.
nlohmann::json RunS3Bench(const S3BenchOptions& o);

// "4k" "1m" "64MiB" "1g" "4096" → bytes (binary units); throws std::invalid_argument.
uint64_t ParseSize(const std::string& text);

}  // namespace clustermax::bench
