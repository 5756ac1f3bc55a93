// `bench storage`: what a training node gets from a POSIX filesystem (shared or local).
//   I/O workloads   sequential 1 MiB read/write (direct and buffered), random 4 KiB buffered and
//                   64 KiB direct reads; io_uring where the kernel allows it, pread/pwrite otherwise;
//                   bandwidth, IOPS and latency percentiles (the fio profiles of performance.md 7.2).
//   checkpoint      every rank writes its shards with fsync, then reads them back (page cache of the
//                   shards dropped first) and checks the block headers; the slowest rank decides.
//   metadata        create, stat, open-read-close, failing open (ENOENT) and unlink of many small
//                   files in many directories: files per second and per-operation latency.
// Everything happens inside a fresh Workspace under the path and is removed afterwards.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::bench {

struct IoWorkload {
  std::string id;  // "seq-write-1m-direct", ...
  bool write = false, random = false, direct = false;
  uint32_t block_size = 1u << 20;
  int threads = 8;  // sequential workloads: one thread per data file
  int iodepth = 64;
};
// The six I/O workloads, in run order (writes first: they lay out the files the reads use).
std::vector<IoWorkload> DefaultIoWorkloads();

struct StorageOptions {
  std::filesystem::path path;
  uint64_t size = uint64_t{2} << 30;  // data files shared by the I/O workloads, all files together
  int files = 8;                      // data files (= threads of the sequential workloads)
  double duration_s = 10;             // per I/O workload; 0 = one pass over the data (size-based)
  double ramp_s = 2;                  // not counted (time-based runs only)
  std::optional<int> threads;         // overrides the random workloads' thread count
  std::optional<int> iodepth;         // overrides every workload's queue depth (io_uring)
  std::string engine = "auto";        // auto, io_uring, psync
  std::vector<std::string> tests;     // workload ids, "io", "checkpoint", "metadata"; empty = all

  int ckpt_ranks = 8, ckpt_shards = 4, ckpt_runs = 1;
  uint64_t ckpt_size = uint64_t{1} << 30;  // all ranks and shards together, per run
  uint32_t ckpt_block = 4u << 20;          // write/read request size

  int meta_threads = 8, meta_dirs = 32, meta_files = 8000;
  uint32_t meta_file_size = 4096;

  std::function<void(const std::string&)> progress;  // one line per step (stderr in the CLI)
  std::function<void(double)> fraction;              // how far the whole run is, 0..1, at each step
};

// Bytes the run writes at most (checked against free space before anything is created).
uint64_t StorageFootprint(const StorageOptions& o);
// Validates the options (throws std::invalid_argument with the flag at fault).
void ValidateStorageOptions(const StorageOptions& o);

// Runs the selected tests; throws for bad options or too little free space (before writing).
// A Ctrl-C (CancelFlag) stops the current step; the result is marked "interrupted" and the
// workspace is removed all the same. The result is documented in docs/bench-schema.md.
nlohmann::json RunStorageBench(const StorageOptions& o);

// Writes `tag` and the sector's offset into the last 16 bytes of every 512-byte sector of
// p[0, n): what every write of the benchmark does to its buffer, so that no two sectors it writes
// are alike and a deduplicating array cannot store one copy of many blocks.
void StampSectors(char* p, size_t n, uint64_t tag);

}  // namespace clustermax::bench
