// The TCP backend of `bench net`: a communicator among the ranks of one job step over host
// sockets, and the collectives nccl-tests measures (all_reduce, all_gather, reduce_scatter,
// alltoall, broadcast, reduce, sendrecv) on float32 buffers in host memory, plus the host-network
// pair tests (many-stream throughput and ping-pong latency, iperf3's and qperf's subjects).
//
// Ranks find each other through a rendezvous directory on a filesystem every node shares (the
// launcher makes it, mode 0700, with a random token in it): each rank writes its address there
// atomically and reads the others'. Under srun --mpi=pmix they use the step's PMIx instead (no
// shared filesystem needed): one exchange of every task's address and a token from rank 0. Every connection starts with
// a handshake carrying the token, so a stranger that connects to a rank's port is dropped. No daemon of ours runs
// anywhere: the job step's ranks are the whole system. Peers on the same node talk over loopback (the analogue of
// NCCL's shared memory) unless fabric-only is asked for; a rail binds every rank to the address of
// one interface.
#pragma once
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace clustermax::bench::net {

struct RankInfo {
  int rank = 0, world = 1, local_rank = 0;
  std::string node;  // the scheduler's name for the node
};
// The rank of this process in a Slurm job step (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID,
// SLURMD_NODENAME); nullopt outside one.
std::optional<RankInfo> RankFromSlurm();

struct CommOptions {
  std::filesystem::path rendezvous;  // the group's directory (holds "token"); shared by every node
  std::string iface;                 // a rail: bind to and publish this interface's IPv4 address
  std::string address;               // publish this address (default: the interface, else the node's)
  bool fabric_only = false;          // same-node peers through the published address, not loopback
  double timeout_s = 120;            // to find and connect every peer
  double throttle_bytes_per_s = 0;   // test hook: pace this rank's sends (0: none)
  // Non-empty: find the group's ranks through the step's PMIx (srun --mpi=pmix) under this name,
  // with the token of the group's rank 0, instead of the rendezvous directory (bench/pmix.h). Every
  // task of the step then takes part in one exchange: Connect once, or PmixAbstain.
  std::string pmix_group;
};

// A task of a PMIx step that is in no group (a pair round's idle node) still takes its part in the
// step's one exchange, so the others' fence completes.
void PmixAbstain(double timeout_s);

// The environment's test hook: CLUSTERMAX_NET_TEST_THROTTLE="NODE=MB/s[,NODE=MB/s]" paces the
// sends of ranks on NODE (how the tests plant a slow node); 0 when this node is not named.
double ThrottleFromEnv(const std::string& node);

// The IPv4 address of interface `iface` (nullopt when it has none); the interfaces that are up,
// not loopback and have an IPv4 address, in name order.
std::optional<std::string> InterfaceAddress(const std::string& iface);
std::vector<std::string> UpInterfaces();

// Makes the rendezvous directory `dir` (0700) with a fresh random token (0600). Throws on failure.
void PrepareRendezvous(const std::filesystem::path& dir);

class Comm {
 public:
  // Publishes this rank, waits for every other rank's address (a rank that never appears is named
  // in the exception), and connects the full mesh. Throws std::runtime_error.
  static std::unique_ptr<Comm> Connect(const RankInfo& me, const CommOptions& o);
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return me_.rank; }
  int size() const { return me_.world; }
  const std::string& node_of(int r) const { return nodes_[r]; }
  const std::vector<std::string>& nodes() const { return nodes_; }
  std::string transport() const;  // "tcp/loopback+<addr>", "tcp/<iface>" ...
  const char* met_through() const { return opt_.pmix_group.empty() ? "file" : "pmix"; }  // how the ranks met

  // Point to point, full duplex: sends `sn` bytes to `to` while receiving `rn` from `from`
  // (either may be -1 for none). Throws on a lost peer or a deadline (timeout_s without progress).
  void SendRecv(int to, const void* send, size_t sn, int from, void* recv, size_t rn);
  void Send(int to, const void* p, size_t n) { SendRecv(to, p, n, -1, nullptr, 0); }
  void Recv(int from, void* p, size_t n) { SendRecv(-1, nullptr, 0, from, p, n); }
  void Barrier();
  // Each rank's `value` at rank 0 (others get an empty vector).
  std::vector<double> GatherToRoot(double value);
  // rank 0's bytes to every rank.
  std::string BroadcastText(const std::string& text);

  // The collectives on float32, sum. Counts are per nccl-tests: all_reduce, broadcast, reduce,
  // sendrecv move `count` elements; all_gather `count` in and count x n out; reduce_scatter
  // count x n in and `count` out; alltoall count x n each way. In place: recv == send (all_gather's
  // input at recv + rank x count; reduce_scatter's output at send + rank x count, as NCCL).
  void AllReduce(const float* send, float* recv, size_t count);
  void AllGather(const float* send, float* recv, size_t count);
  void ReduceScatter(const float* send, float* recv, size_t count);
  void AllToAll(const float* send, float* recv, size_t count);
  void Broadcast(const float* send, float* recv, size_t count, int root);
  void Reduce(const float* send, float* recv, size_t count, int root);
  void SendRecvRing(const float* send, float* recv, size_t count);

  // Host-network pair tests between ranks `a` and `b` of this communicator (other ranks return at
  // once). Throughput: `streams` extra TCP connections from `sender` to `receiver`, sending for
  // `seconds`; the receiver counts from its first byte to its last. Both ranks return the figure.
  struct StreamResult {
    double bytes_per_s = 0, seconds = 0;
    uint64_t bytes = 0;
    int streams = 0;
  };
  StreamResult StreamThroughput(int sender, int receiver, int streams, double seconds);
  // Ping-pong of `bytes`-byte messages between a and b: one-way latency (half the round trip) in
  // microseconds, sorted, at both ranks.
  std::vector<double> PingPong(int a, int b, int iterations, size_t bytes = 8);

 private:
  Comm() = default;
  void Pace(size_t bytes);
  int Accept(uint32_t want_kind, uint32_t* peer_rank);
  int ConnectTo(int peer, uint32_t kind, uint32_t index);

  RankInfo me_;
  CommOptions opt_;
  std::string token_;
  std::string published_;
  int listen_fd_ = -1;
  std::vector<int> fds_;                // by rank; -1 for self
  std::vector<std::string> nodes_;      // by rank
  std::vector<std::string> addresses_;  // by rank
  std::vector<int> ports_;              // by rank
  std::vector<float> scratch_;
  std::vector<float> work_;  // reduce_scatter's copy of its input
  std::chrono::steady_clock::time_point pace_start_{};
  double paced_bytes_ = 0;
};

}  // namespace clustermax::bench::net
