// `bench net`: the rank side (what each task of a job step runs) and the pure parts the launcher
// uses: the size sweep, the pair schedule, the straggler analysis that names the nodes or links at
// fault, the scaling and rail summaries, the metrics graded against data/bench-thresholds.json and
// the table. The launcher (cli/bench_net.cc) starts the steps through Slurm.
//
// A step's ranks get one JSON job on their command line:
//   {"kind": "collectives", "rendezvous": DIR, "collectives": [...], "sizes": [...], "iters": N,
//    "warmup": N, "check": true, "fabric_only": false, "rail": "", "timeout_s": S}
//   {"kind": "pairs", "rendezvous": DIR, "pairs": [[A, B], ...], "streams": N, "seconds": S,
//    "latency_iters": N, "timeout_s": S}      (A, B: node names, one task per node; pair i meets
//                                              in DIR/pair-i)
//   {"kind": "rdma", "pairs": [...], "rdma": {"bytes", "seconds", "latency_iters", "bidirectional",
//    "gpu_memory", "devices"}, ...}          (as pairs; each pair runs the verbs tests of bench/rdma.h
//                                              per HCA port, its TCP comm carrying the QP addresses)
// Every job also carries "launch": "file" (the ranks meet in DIR) or "pmix" (through the step's
// PMIx, bench/pmix.h; DIR unused except for NCCL's unique id).
// Rank 0 of a collectives job, and the first rank of each pair, print the result as framed lines
// keyed by their node; a rank that fails prints {"error": ...} (rank 0 and pair leads) or the
// reason on stderr (srun labels it).
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/grade.h"
#include "bench/net_check.h"
#include "bench/net_comm.h"

namespace clustermax::bench::net {

// The collectives `bench net` runs, in nccl-tests' names.
const std::vector<std::string>& Collectives();
// Sizes from min to max bytes, multiplied by `factor` (> 1), max always included.
std::vector<uint64_t> SizeSweep(uint64_t min_bytes, uint64_t max_bytes, double factor);

// The table of `collective` in a collectives result ({"collectives": [...]}) that carries a figure
// (busbw_at_max and rows), as a pointer into `result`; nullptr when there is none.
const nlohmann::json* FindCollective(const nlohmann::json& result, const std::string& collective);

// One collective's table from raw rows ({bytes, count, out_of_place/in_place: {time_us, wrong}}):
// algbw = bytes / time and busbw = algbw x nccl-tests' factor for `ranks`, in GB/s; the peak,
// the busbw at the largest size (out of place), the average over every size and placement (as
// nccl-tests' footer) and the wrong elements. Both backends report through it.
nlohmann::json SummarizeTable(nlohmann::json table, int ranks);

// Runs one collective job on an established communicator. At rank 0 the result (one table per
// collective: rows of bytes, count, time, algbw, busbw, wrong for out-of-place and in-place, the
// peak and the average busbw); null elsewhere.
nlohmann::json RunCollectiveJob(Comm& comm, const nlohmann::json& job);

// What this task prints for `job` (the framed document, or nothing): connects, runs, and turns a
// failure into {"error"}. `me` is the task's place in the step.
std::optional<nlohmann::json> RunRankJob(const nlohmann::json& job, const RankInfo& me);

// ---- the launcher's pure parts ----

// Rounds of disjoint pairs over `n` nodes. all: every pair once (the circle method, n-1 rounds, or
// n with an odd n); quick: each node with its two neighbours on a ring (two or three rounds).
std::vector<std::vector<std::pair<int, int>>> PairRounds(int n, bool all);

struct PairFigure {
  std::string a, b;
  double gbps = 0;  // the slower direction, Gb/s
};
struct Culprit {
  std::string kind;  // "node" or "link"
  std::string name;  // the node, or "a<->b"
  std::string why;
};
struct StragglerAnalysis {
  double reference_gbps = 0;  // the median over nodes of each node's best pair
  std::vector<std::pair<std::string, std::string>> slow_pairs;
  std::vector<std::string> suspect_nodes;                          // slow with two partners or more (greedy)
  std::vector<std::pair<std::string, std::string>> suspect_links;  // slow pairs left unexplained
  std::vector<std::string> good_nodes;                             // in no slow pair once the suspects are set aside
};
// A pair is slow below slow_ratio x reference. A node slow with at least two partners (the one with
// the most first) is a suspect node and its pairs are explained; what remains slow is a suspect
// link. Pure.
StragglerAnalysis AnalyzePairs(const std::vector<PairFigure>& pairs, double slow_ratio);
// Each node's pairs: how many, how many slow, and the median of their figures (0 pairs: 0).
struct NodePairs {
  std::string node;
  int pairs = 0, slow_pairs = 0;
  double median_gbps = 0;
};
std::vector<NodePairs> SummarizeNodes(const std::vector<std::string>& nodes, const std::vector<PairFigure>& pairs,
                                      const StragglerAnalysis& a);
// Retest pairs: each suspect node and each end of a suspect link against a different good node
// where there are enough, and each suspect link once more; as rounds of disjoint pairs.
std::vector<std::vector<std::pair<std::string, std::string>>> RetestRounds(const StragglerAnalysis& a);
// The verdict after the retests (`retest`: the retest figures): a suspect node slow again against a
// good node is a culprit node; a suspect link whose two ends are fast with good nodes and which is
// slow again is a culprit link; an end slow with a good node makes that node the culprit; anything
// fast on retest is transient and named as such in `why` of no culprit.
std::vector<Culprit> Judge(const StragglerAnalysis& a, const std::vector<PairFigure>& retest, double slow_ratio,
                           std::vector<std::string>* transient);

// The rdma mode's section from its pairs' results (each as RunRdmaPair's, plus "a", "b" or
// "error"): every HCA port (node, device, port) with the best write and read bandwidth it reached
// with any partner (an HCA slow with every partner is the one at fault, not its peers), its line
// ratio (best write over its own link rate; 0 when its write never worked) and its worst write
// latency p99; the worst HCA in "worst_line_ratio" and "worst_line_ratio_detail". "problems" lists
// what was not measured where RDMA applies (a port down on one side, a pair that failed): with
// nothing measured at all that is a worst_line_ratio of 0. "why" says why nothing applies (no RDMA
// device, no libibverbs). Pure.
nlohmann::json SummarizeRdma(const std::vector<nlohmann::json>& pairs);

// An nccl-tests or perftest output file read into bench net's schema (`bench net --import`):
// {"file", "tool": "nccl-tests"|"perftest", "result": {...}} or {"file", "error"}. Pure.
nlohmann::json ImportFile(const std::string& name, std::string_view text);

// The metrics of a `bench net` result (docs/bench-schema.md "net"), graded with the storage bars'
// rules: net.wrong-elements, net.node-allreduce, net.pairwise-worst-node, net.scaling-efficiency,
// net.rail-spread, net.nic-busbw-ratio, net.host-latency-p99, net.rdma-write-line-ratio,
// net.rdma-latency-p99.
std::vector<MetricValue> NetMetrics(const nlohmann::json& result);

std::string RenderNet(const nlohmann::json& result);

}  // namespace clustermax::bench::net
