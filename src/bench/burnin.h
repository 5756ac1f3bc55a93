// `clustermax burnin`: the reliability phase's burn-in (performance.md 10, rel.burn-8h). Every node
// runs the same sustained load for a set time and the results are compared across nodes: on
// identical inputs every node must compute identical bits, so a node whose results differ from
// its peers' is silent data corruption (SDC); its throughput is followed over time (drift: a node
// that slows down as it heats up) and the slowest node is named.
//
// This is the CPU backend (the GPU load comes later through the GPU helper): a double-precision
// GEMM written as a plain blocked loop and a STREAM-triad-like memory pass, each checksummed. The
// node side is RunBurnInRankJob; the analysis (Summarize, BurnInMetrics, RenderBurnIn) is pure and
// reads every document defensively (bench/json_read.h): junk never throws.
//
// Reproducibility: each C[i][j] is summed over k in ascending order whatever the blocking or the
// thread count, with no BLAS and no -ffast-math, so one binary gives the same bits on every node.
// The document names the kernel (KernelId: its version and the architecture); the vote compares
// only nodes that ran the same inputs and kernel.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/grade.h"

namespace clustermax::bench::burnin {

// ---- The kernel (exposed for the tests) ----

// SplitMix64 (Vigna): advances `state` and returns its next output.
uint64_t SplitMix64(uint64_t& state);
// `count` doubles in [-1, 1) from the stream (one 53-bit draw each): the same on every node.
void FillUniform(uint64_t& state, double* out, size_t count);
// C = A * B for n x n row-major matrices, C overwritten. Rows are split over `threads` threads;
// every element is the same sequence of operations as the naive triple loop, so the result is
// bitwise the same for any blocking and thread count. False when util::Cancelled() stopped it
// (C is then partial).
bool Gemm(const double* a, const double* b, double* c, int n, int threads = 1);
// a[i] = b[i] + s * c[i] over `count` elements, split over `threads` threads.
void Triad(double* a, const double* b, const double* c, double s, size_t count, int threads = 1);
// FNV-1a 64 over bytes, as 16 lowercase hex digits (the GEMM's checksum over the bytes of C).
std::string Fnv1a64Hex(const void* data, size_t bytes);
// The memory pass's checksum: FNV-1a 64's xor-multiply over 64-bit words instead of bytes (eight
// times faster over arrays of gigabytes; any one changed word still changes it), 16 hex digits.
std::string WordChecksumHex(const double* data, size_t count);
// The kernel's identity: "cpu-fp64-v1 x86_64" (burnin.cc is built with -ffp-contract=off: no
// a*b+c fused on any target).
std::string KernelId();

// ---- The node side ----

// Memory left under the cgroup limits of this process, MiB: the least (limit - usage) over every
// cgroup v2 level of /proc/self/cgroup's "0::PATH" up to `root`, and cgroup v1's memory
// controller; nullopt when no limit is set or read ("max", absent files). Slurm's task cgroup
// caps the job below the node's MemAvailable.
std::optional<double> CgroupMemoryLeftMb(const std::string& proc_self_cgroup,
                                         const std::filesystem::path& root = "/sys/fs/cgroup");
// The CPUs this process may run on (sched_getaffinity: Slurm's cpuset), at least 1, at most 1024.
int CpusAllowed();

// The job's fields, clamped; a missing field or one of the wrong type (a string, an array, NaN)
// takes its default. "backend": "gpu" selects the GPU load (RunGpuBurnInRankJob) and its ranges.
struct Options {
  bool gpu = false;
  double duration_s = 60;        // 0 .. 30 days; at least one iteration runs whatever it is
  int matrix_n = 256;            // 16 .. 4096 (GPU: 256 .. 32768, default 8192)
  int mem_mb = 256;              // 1 .. 65536: the memory pass's three arrays together (GPU: 3 ..
                                 // 1048576, default 3072)
  uint64_t seed = 1;             // an unsigned integer (a float only when whole and below 2^53)
  long long max_iterations = 0;  // 0: until the duration is over; at most 1e15
  int threads = 1;               // 0: every CPU the task may use (CpusAllowed); at most 1024
};
Options OptionsFromJob(const nlohmann::json& job);

// One node's burn-in. job: {"duration_s", "matrix_n", "mem_mb", "seed", "max_iterations",
// "threads"} (Options). A, B (the GEMM's inputs) and the memory pass's b and c are filled once from
// SplitMix64 of the seed, identical on every node. Each iteration: C = A * B timed (gemm_gflops =
// 2 n^3 / s / 1e9) and checksummed (gemm_sum, Fnv1a64Hex over C); then a[i] = b[i] + 3 c[i] over
// the three arrays of mem_mb / 3 MiB each timed (mem_gbps = 3 * array bytes / s / 1e9) and
// checksummed (mem_sum, WordChecksumHex over a). The loop ends when the duration is over (checked
// after each iteration: the last one may run past it), after max_iterations, or on
// util::Cancelled() (also checked inside the GEMM; the interrupted iteration is dropped).
// on_iteration(record) is called after every iteration, kept or not (throttle what you print).
//
// The document:
//   "node", "rank"
//   "inputs": {"matrix_n", "mem_mb", "seed", "kernel"}  what must match for results to compare
//   "threads"
//   "started": Unix seconds
//   "iterations": [{"i", "t" (seconds since the loop started), "gemm_gflops", "gemm_sum",
//                   "mem_gbps", "mem_sum"}]  at most 10000 kept: past that, only every k-th
//   "decimated": k                   (only when k > 1; the kept ones are those with i % k == 0)
//   "iteration_count": iterations run (kept or not)
//   "distinct_sums": {"gemm": [{"sum", "count", "first"}], "mem": [...]}  every iteration's sum
//                    counted (the inputs never change, so a sound node has one of each; at most 16
//                    listed, the rest lumped in its "gemm_other"/"mem_other": {"count", "first"})
//   "completed": true when the duration or max_iterations was reached (not cancelled, no error)
//   "cancelled": true when util::Cancelled() stopped it
//   "seconds": the loop's wall time
//   "error": why it could not run (memory the node does not have, an allocation that failed)
nlohmann::json RunBurnInRankJob(const nlohmann::json& job, const std::string& node, int rank,
                                const std::function<void(const nlohmann::json&)>& on_iteration = {});

// The iterations of one load (a node's CPU, or one GPU): the records kept (at most 10000; past
// that only every k-th, k doubling) and every iteration's sums tallied. Add numbers the record
// ("i": iterations added before it); WriteTo sets a document's "iterations", "iteration_count",
// "decimated" and "distinct_sums" as RunBurnInRankJob documents them.
class IterationLog {
 public:
  IterationLog();
  ~IterationLog();
  IterationLog(const IterationLog&) = delete;
  IterationLog& operator=(const IterationLog&) = delete;
  void Add(nlohmann::json rec);  // {"t", "gemm_gflops", "gemm_sum", "mem_gbps", "mem_sum"}
  long long count() const;
  void WriteTo(nlohmann::json& doc) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The GPU load on one node (burnin_gpu.cc): the GPU helper (clustermax-gpu, its "burnin" item: a
// BF16 GEMM and a triad in device memory, every repetition checksummed on the GPU) on every GPU
// at once, one helper process each, for the job's duration. `helper`: the helper's path (empty:
// none found, the document says so). The job's "gpus" (indices) limits it to those GPUs.
// NVML telemetry through the run (clocks, power, temperature, throttle reasons) and a snapshot
// before and after: uncorrectable ECC errors, remapped rows or retired pages that appeared during
// the run are that GPU's "gpu_errors". On util::Cancelled() the helpers are stopped and the
// iterations they reported are kept. The document:
//   "node", "rank", "backend": "gpu", "completed" (every GPU completed), "cancelled", "seconds",
//   "error" (no helper, no GPU, no helper output),
//   "gpus": [one document per GPU as RunBurnInRankJob's, "node" being "NODE/gpuI", plus "host",
//            "gpu" (NVML's index, nvidia-smi's, found by UUID; else CUDA's), "cuda_index", "uuid", "name", "reps" {"gemm", "mem"}, "telemetry" {"samples",
//            "sm_clock_mhz", "memory_clock_mhz", "power_w", "temperature_c" ({min, median, max}),
//            "clocks_event_reasons", "throttled"}, "gpu_errors": [text], "health_read" (both
//            snapshots read)}]
// What got worse on one GPU between two snapshots of docs/evidence-bundle.md's device shape:
// uncorrectable ECC errors (volatile), rows remapped for uncorrectable errors, retired pages, a
// remapping that became pending or failed; each in words. corrected_new: the corrected ECC errors
// counted in between (not an error by itself).
std::vector<std::string> GpuHealthChanges(const nlohmann::json& before, const nlohmann::json& after,
                                          long long& corrected_new);

nlohmann::json RunGpuBurnInRankJob(const nlohmann::json& job, const std::string& node, int rank,
                                   const std::string& helper);

// The units a run compares: a GPU document's every GPU ("NODE/gpuI"), any other document as its
// node. A GPU document without GPUs stays as the node (its error says why).
std::map<std::string, nlohmann::json> UnitsOf(const std::map<std::string, nlohmann::json>& node_docs);

// ---- The analysis ----

// The run across nodes. per_node_docs: node -> its RunBurnInRankJob document (or one assembled
// from its streamed iteration records). lost_nodes: node -> why no whole document came back (the
// task died, the node went down). A doc without "completed": true and without "cancelled": true is
// lost too (its "error", or "stopped before the end"). Fields:
//   "nodes": [{"node", "rank", "iterations" (records read), "iteration_count", "decimated",
//              "seconds", "completed", "cancelled", "lost" (the reason, when lost), "error",
//              "gemm_gflops", "mem_gbps" (medians over the node's iterations, null when none),
//              "gemm_drift", "mem_drift" (median of the last quarter of the iterations / median of
//              the first quarter - 1: negative = slowed down; null under 8 iterations),
//              "drift_why" (why a drift is null)}]  by node name
//   Nodes vote within each group of nodes that ran the same inputs and kernel.
//   "sdc_vote": "majority" (some group of 2 or more nodes compared) | "single node" (one node
//               returned iterations) | "no alike nodes" (several, no two alike) | "no iterations"
//   "sdc_compared": {"nodes" (in voting groups), "groups" (voting groups), "iterations" (the most
//                   iteration indices present on 2 or more nodes of a group)}
//   "sdc": [{"node", "kind": "gemm" | "mem", "first_iteration", "count", "by"}]
//          by "peers": at `count` iterations the node's sum differed from a strict majority of the
//          nodes that ran that iteration, the first at first_iteration (when documents kept only
//          every k-th iteration, the node's own tally of every iteration against the sum its
//          group agreed on counts the rest, when larger); by "self": the node's own
//          iterations disagreed with each other (`count` iterations off its most common sum; a
//          node's inputs never change), named only where the peers did not already name it
//   "sdc_undecided": iteration votes (gemm and mem counted apart) with no strict majority, where
//                    nodes disagree and nobody is vouched for; "sdc_undecided_first": the first
//                    such iteration, "sdc_undecided_nodes": the nodes at it
//   "not_compared": [{"node", "why"}]  nodes left out of the vote: no other node ran their inputs
//   "fleet" (the largest group of alike nodes): {"gemm_gflops": {"median" (of the node medians), "nodes", "slowest":
//   {"node",
//             "value", "ratio" (its median / the fleet median)}}, "mem_gbps": {the same}}
//   "worst_drift": {"node", "kind", "drift", "iterations"}  the most negative drift over nodes
//                  and both kinds; absent with "drift_why" when no node had 8 iterations
//   "lost": [{"node", "reason", "last_iteration", "last_t"}]  (null last_* when none came back)
nlohmann::json Summarize(const std::map<std::string, nlohmann::json>& per_node_docs,
                         const std::map<std::string, std::string>& lost_nodes);

// The grades of a result {"summary": Summarize's output, "options": {"duration_s", "matrix_n",
// "mem_mb", "seed", "threads"}}:
//   burnin.sdc            nodes named for SDC; FAIL naming them, or naming the iteration where
//                         nodes disagreed with no majority; not measured on one node alone
//   burnin.slowest-ratio  the slowest node's GEMM median / the fleet median (2 nodes or more)
//   burnin.drift          the most negative drift over nodes and kinds, as a ratio (-0.2: 20 %
//                         slower at the end)
//   burnin.completed      the shortest share of options.duration_s a node (not lost) ran: 1 when
//                         every node completed; a cancelled run proves only what it ran
//   burnin.lost-nodes     nodes lost mid-run; FAIL naming them
std::vector<MetricValue> BurnInMetrics(const nlohmann::json& result);
// A short table: a line per node, the fleet, SDC and lost nodes. Text from nodes is escaped.
std::string RenderBurnIn(const nlohmann::json& result);

}  // namespace clustermax::bench::burnin
