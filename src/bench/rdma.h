// The RDMA-per-rail engine of `bench net`: between two nodes, one RDMA port (rail) after the
// other, the measurements perftest's ib_write_bw, ib_read_bw and ib_write_lat make, over our own
// reliable-connected queue pairs.
//
// libibverbs is loaded at run time (dlopen "libibverbs.so.1"), never linked: the node binary must
// start where rdma-core is absent, and only this measurement needs it. <infiniband/verbs.h>
// supplies the types; every libibverbs function is called through a pointer bound with dlsym
// (the header's inlines that dispatch through the context's ops, ibv_post_send and ibv_poll_cq,
// need no symbol). The same holds for CUDA when buffers live in GPU memory (GPUDirect RDMA):
// libcuda.so.1 is opened only then.
//
// Ports are discovered from sysfs through the machine seam (host::Host), so a recorded node
// replays; the queue pairs are connected through an already-connected two-rank Comm (rank 0
// leads and reports).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/net_comm.h"
#include "host/host.h"

namespace clustermax::bench::net {

// One port of an RDMA device, as sysfs describes it.
struct RdmaPort {
  std::string device;      // mlx5_0
  int port = 1;            // 0: the device's ports could not be listed (see skip)
  std::string link_layer;  // "InfiniBand", "Ethernet", as sysfs says ("" unread)
  std::string state;       // "4: ACTIVE"
  std::string phys_state;  // "5: LinkUp"
  std::string rate;        // "400 Gb/sec (4X NDR)"
  double rate_gbps = 0;    // 0: unread or not understood
  // RoCE: the GID to use (the lowest "RoCE v2" GID with an IPv4-mapped address ::ffff:a.b.c.d,
  // else the lowest RoCE v2, else the lowest non-zero); InfiniBand: -1 (routed by LID).
  int gid_index = -1;
  std::string netdev;  // RoCE: the interface of that GID
  std::string skip;    // why this port is not measured ("" = measured)
};
nlohmann::json PortJson(const RdmaPort& p);

// Every port under /sys/class/infiniband/<dev>/ports/<n>, devices in name order, ports in number
// order. Nothing read is trusted: values are sanitized, a value that cannot be parsed leaves its
// field empty (or 0) and, where it decides whether the port can be measured, sets `skip`. An
// unreadable /sys/class/infiniband gives an empty list.
std::vector<RdmaPort> ListRdmaPorts(host::Host& h);

// --- The pure parts, exposed for the tests ---

// "400 Gb/sec (4X NDR)" -> 400; "2.5 Gb/sec (1X SDR)" -> 2.5; 0 when not understood.
double ParseRateGbps(std::string_view rate);

// One entry of a port's GID table as sysfs lists it (gids/<i>, gid_attrs/types/<i>,
// gid_attrs/ndevs/<i>).
struct GidEntry {
  int index = 0;
  std::string type;  // "RoCE v2", "IB/RoCE v1" ("" unread)
  std::string gid;   // "0000:0000:0000:0000:0000:ffff:0a98:000c"
  std::string ndev;  // "ens1f0"
};
// The 16 bytes of a GID written as sysfs writes it (eight groups of four hex digits separated by
// colons); false when the text is not one.
bool ParseGid(std::string_view text, uint8_t out[16]);
// The entry to use by the rule of RdmaPort::gid_index (all-zero and unparseable GIDs never
// qualify); -1 when none does. The result is the position in `gids`, not the GID index.
int ChooseGid(const std::vector<GidEntry>& gids);

// The ports both nodes measure: a port is measured when it exists on both nodes (same device and
// port number), neither side skips it and, when `devices` is not empty, its device is named
// there. Every other port is listed in `unmatched` ({"device", "port", "why"}), in name order.
struct PortPair {
  RdmaPort local, peer;
};
struct PortPlan {
  std::vector<PortPair> measure;
  nlohmann::json unmatched = nlohmann::json::array();
};
PortPlan MatchPorts(const std::vector<RdmaPort>& local, const std::string& local_node,
                    const std::vector<RdmaPort>& peer, const std::string& peer_node,
                    const std::vector<std::string>& devices);

// One-way latencies in microseconds, the first `warmup` samples dropped (ib_write_lat's warm-up).
struct LatencySummary {
  int samples = 0;
  double min_us = 0, p50_us = 0, p99_us = 0, max_us = 0;
};
LatencySummary SummarizeLatency(std::vector<double> one_way_us, size_t warmup);

// GPUDirect placement: the GPU nearest an HCA in the PCI tree is the one whose sysfs device path
// (resolved) shares the longest run of leading path components with the HCA's; ties go to the
// lowest index. -1 when `gpu_paths` is empty or the HCA path is.
int NearestGpu(const std::string& hca_path, const std::vector<std::string>& gpu_paths);
// realpath() through the machine seam (Host::Stat's link targets), so a replayed node resolves
// the same way; "" when a component cannot be stat'ed or links nest past 40.
std::string ResolvePath(host::Host& h, const std::string& path);

// Why `library` cannot serve as libibverbs ("" when it loads and has every entry point this
// engine calls), naming the package to install. The engine itself loads "libibverbs.so.1" once
// per process; this is the same loader, uncached, for the tests.
std::string VerbsLoadError(const char* library);

// --- The measurement ---

struct RdmaOptions {
  uint64_t bytes = 8ull << 20;       // bandwidth message size (ib_write_bw -s 8388608)
  int tx_depth = 128;                // outstanding work requests (ib_write_bw -t)
  double seconds = 2;                // per bandwidth test: iterations until this time has passed (at least 100)
  int latency_iters = 1000;          // ib_write_lat -n
  int latency_bytes = 2;             // ib_write_lat -s
  bool bidirectional = false;        // ib_write_bw -b: both sides write at once, the sum reported
  bool gpu_memory = false;           // GPUDirect: bandwidth buffers in GPU memory (latency stays on host memory)
  std::vector<std::string> devices;  // only these devices (default: every port not skipped)
  double timeout_s = 60;             // no completion for this long: the port's test fails (not the process)
};

// Both ranks of a two-rank comm call it; rank 0 returns the result, rank 1 returns null.
//   {"library", "memory": "host"|"gpu", "ports": [{"device", "port", "link_layer", "rate_gbps",
//    "gid_index", "peer_node", "bytes", "write_gbps", "write_iterations", "read_gbps",
//    "read_iterations", "bidir_gbps" (asked), "lat_min_us", "lat_p50_us", "lat_p99_us",
//    "lat_max_us", "line_ratio" (rate known), "error" (failed)}], "unmatched": [...]}
// or {"error": why} when nothing can be measured (libibverbs absent, no RDMA device, no active
// port, or the peer's reason). Ports are measured one after the other; a port that fails is
// reported with its error and the next one still runs. Throws only what the Comm throws (a lost
// peer) and std::invalid_argument for a comm that is not two ranks.
nlohmann::json RunRdmaPair(Comm& comm, host::Host& h, const RdmaOptions& o);

}  // namespace clustermax::bench::net
