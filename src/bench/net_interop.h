// Readers of the output files users already have from the networking tools peers use: perftest
// (ib_write_bw, ib_read_bw, ib_send_bw and their _lat twins) and nccl-tests / rccl-tests. Pure
// functions of the text; tested on captures from real clusters (tests/fixtures/net/, sources in
// SOURCES.md there). Nothing here runs a tool.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustermax::bench::net {

// ---- perftest ----

struct PerftestBwRow {
  long long bytes = 0, iterations = 0;
  double peak = 0, average = 0;  // in the run's unit (PerftestRun::unit)
  double msg_rate_mpps = 0;
};
struct PerftestLatRow {
  long long bytes = 0, iterations = 0;
  double t_min = 0, t_max = 0, t_typical = 0, t_avg = 0, t_stdev = 0, p99 = 0, p999 = 0;  // microseconds
};
struct PerftestRun {
  std::string title;  // "RDMA_Write BW Test", "Send Latency Test"
  bool latency = false;
  std::string device, link_type, transport, connection;  // mlx5_0, IB/Ethernet, IB, RC
  int qps = 0;
  int gid_index = -1;  // RoCE: the GID index; -1 when not printed
  int mtu = 0;         // bytes
  bool cuda = false;   // a GPU buffer (--use_cuda): "initializing CUDA" / "GPU buffer"
  std::string unit;    // "Gb/sec", "MB/sec", "MiB/sec" (bandwidth), "usec" (latency)
  std::vector<PerftestBwRow> bw;
  std::vector<PerftestLatRow> lat;
  std::vector<std::string> warnings;  // lines perftest printed among the rows, and lines we skipped
};
// nullopt (and *error) when the text holds no perftest result table.
std::optional<PerftestRun> ParsePerftest(std::string_view text, std::string* error);
// A bandwidth in `unit` as Gb/s (1 MB/sec = 8e-3 Gb/s, 1 MiB/sec = 8 x 1.048576e-3 Gb/s);
// nullopt for an unknown unit.
std::optional<double> ToGbps(double value, std::string_view unit);

// ---- nccl-tests / rccl-tests ----

struct CollectivePlacement {
  double time_us = 0, algbw = 0, busbw = 0;  // GB/s
  long long wrong = -1;  // wrong elements; -1: N/A (not checked), or the old format (an "error" column)
};
struct CollectiveRow {
  long long bytes = 0, count = 0;
  std::string type, redop;  // float, sum ("" in the old format)
  long long root = -1;
  CollectivePlacement out_of_place, in_place;
};
struct CollectiveTable {
  std::string collective;            // given, or inferred from the columns and the busbw/algbw ratio; "" unknown
  int ranks = 0;                     // device lines ("#  Rank  3 ... device  3 [0x..] NVIDIA H100 ...")
  std::vector<std::string> devices;  // the device names, in rank order
  std::string nccl_version;          // "2.18.3+cuda12.2" from NCCL_DEBUG or the header; "" unread
  std::string network;               // NCCL_DEBUG "Using network IB|Socket|AWS Libfabric"; ""
  bool nvls = false;                 // NCCL_DEBUG "NVLS multicast support is available"
  std::vector<CollectiveRow> rows;
  std::optional<double> avg_busbw;         // the "# Avg bus bandwidth" footer
  std::optional<long long> out_of_bounds;  // the "# Out of bounds values" footer
  bool failed = false;                     // a FAILED footer or a wrong element
};
// Every table of the text (one per test run it holds), `collective` naming them when the caller
// knows the binary (all_reduce, all_gather ...); otherwise each is inferred where the columns
// tell. Empty when there is none (*error says why).
std::vector<CollectiveTable> ParseNcclTests(std::string_view text, std::string_view collective, std::string* error);
// nccl-tests' bus bandwidth factor for `collective` on `ranks` ranks (doc/PERFORMANCE.md):
// all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall, gather, scatter (n-1)/n; broadcast,
// reduce, sendrecv 1. nullopt for an unknown collective or n < 1.
std::optional<double> BusBwFactor(std::string_view collective, int ranks);

// What NCCL_DEBUG=INFO (with NCCL_DEBUG_SUBSYS including INIT and TUNING) says about a run, from
// any rank's lines: the version, the network plugin, NVLS, channel counts, the transports of the
// channels, and the algorithm and protocol NCCL chose per collective and size (the "Bytes -> Algo"
// lines: names in NCCL 2.23+, numbers before, mapped to names).
struct NcclTuning {
  std::string collective;  // "AllReduce" ("" when the line does not name it)
  long long bytes = 0;
  std::string algorithm, protocol;  // "RING", "SIMPLE" ...
};
struct NcclDebugFacts {
  std::string version, network;
  bool nvls = false;
  int coll_channels = 0, nvls_channels = 0;  // "N coll channels, M nvls channels, ..."
  std::vector<std::string> transports;       // "P2P/direct pointer", "NET/IB/0", "SHM/direct" (each once)
  std::vector<NcclTuning> tuning;
};
NcclDebugFacts ParseNcclDebug(std::string_view text);

}  // namespace clustermax::bench::net
