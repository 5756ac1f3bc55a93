#include "bench/net_bench.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "bench/gpu_bench.h"
#include "bench/net_interop.h"
#include "bench/rdma.h"
#include "host/local_host.h"
#include "host/process.h"
#include "util/files.h"
#include "bench/render.h"
#include "util/strings.h"

namespace clustermax::bench::net {
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

struct Buffers {
  std::vector<float> in, out;
};

// Runs `coll` (a CollectiveId) once from in to out (out-of-place) or in the one buffer `out` (in
// place, where NCCL puts input and output: all_gather's input at rank x count, reduce_scatter's
// output there).
void Op(Comm& c, int coll, Buffers& b, size_t count, bool in_place, int root) {
  size_t mine = static_cast<size_t>(c.rank()) * count;
  float* buf = b.out.data();
  const float* s = in_place ? (coll == kAllGather ? buf + mine : buf) : b.in.data();
  float* d = in_place && coll == kReduceScatter ? buf + mine : buf;
  switch (coll) {
    case kAllReduce:
      return c.AllReduce(s, d, count);
    case kAllGather:
      return c.AllGather(s, d, count);
    case kReduceScatter:
      return c.ReduceScatter(s, d, count);
    case kAllToAll:
      return c.AllToAll(s, d, count);
    case kBroadcast:
      return c.Broadcast(s, d, count, root);
    case kReduce:
      return c.Reduce(s, d, count, root);
    case kSendRecv:
      return c.SendRecvRing(s, d, count);
  }
}

// The inputs for one checked run (in place: where NCCL expects them in the one buffer).
void Fill(Comm& c, int coll, Buffers& b, size_t count, bool in_place) {
  int r = c.rank();
  size_t in_n = b.in.size();
  if (!in_place) {
    for (size_t i = 0; i < in_n; ++i) b.in[i] = InputValue(r, i);
    std::fill(b.out.begin(), b.out.end(), -99.0f);
    return;
  }
  std::fill(b.out.begin(), b.out.end(), -99.0f);
  size_t base = coll == kAllGather ? static_cast<size_t>(r) * count : 0;
  for (size_t i = 0; i < in_n; ++i) b.out[base + i] = InputValue(r, i);
}

long long Verify(Comm& c, const std::string& coll, const Buffers& b, size_t count, bool in_place, int root) {
  const float* out = b.out.data();
  if (in_place && coll == "reduce_scatter") out += static_cast<size_t>(c.rank()) * count;
  return WrongElements(coll, out, 0, OutputElements(coll, count, c.size()), count, c.rank(), c.size(), root);
}

json Placement(Comm& c, const std::string& coll, Buffers& b, size_t count, bool in_place, int root, int iters,
               int warmup, bool check) {
  int id = CollectiveId(coll);
  for (int i = 0; i < warmup; ++i) Op(c, id, b, count, in_place, root);
  c.Barrier();
  auto t0 = Clock::now();
  for (int i = 0; i < iters; ++i) Op(c, id, b, count, in_place, root);
  double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / std::max(1, iters);
  // nccl-tests' default (-a 1): the time averaged over the ranks.
  auto times = c.GatherToRoot(us);
  long long wrong = -1;
  if (check) {
    Fill(c, id, b, count, in_place);
    Op(c, id, b, count, in_place, root);
    auto w = c.GatherToRoot(static_cast<double>(Verify(c, coll, b, count, in_place, root)));
    wrong = 0;
    for (double x : w) wrong += static_cast<long long>(x);
  }
  if (c.rank() != 0) return nullptr;
  double avg = 0;
  for (double t : times) avg += t;
  avg /= static_cast<double>(times.size());
  json p = {{"time_us", avg}};
  p["wrong"] = wrong >= 0 ? json(wrong) : json(nullptr);
  return p;
}

}  // namespace

const json* FindCollective(const json& result, const std::string& collective) {
  // A pointer into `result` itself (never into a copy that value() would make).
  if (!result.is_object()) return nullptr;
  auto it = result.find("collectives");
  if (it == result.end() || !it->is_array()) return nullptr;
  for (const auto& t : *it) {
    auto c = t.is_object() ? t.find("collective") : t.end();
    if (c == t.end() || !c->is_string() || *c != collective) continue;
    if (t.contains("busbw_at_max") && t["busbw_at_max"].is_number() && t.contains("rows") && t["rows"].is_array() &&
        !t["rows"].empty())
      return &t;
  }
  return nullptr;
}

json SummarizeTable(json t, int ranks) {
  std::string coll = t.value("collective", "");
  double factor = BusBwFactor(coll, ranks).value_or(1.0);
  double peak = 0, sum = 0;
  long long wrong = 0;
  bool checked = false;
  int k = 0;
  json rows = json::array();
  for (const auto& in : t.value("rows", json::array())) {
    if (!in.is_object()) continue;
    json r = in;
    uint64_t bytes = r.value("bytes", uint64_t{0});
    r["type"] = r.value("type", "float");
    r["redop"] = r.value("redop", "sum");
    if (!r.contains("root")) r["root"] = -1;
    for (const char* p : {"out_of_place", "in_place"}) {
      // A placement the backend did not run (NCCL's in-place alltoall) stays as it came.
      if (!r.contains(p) || !r[p].is_object() || !r[p].contains("time_us") || !r[p]["time_us"].is_number()) continue;
      double us = r[p]["time_us"].get<double>();
      double algbw = us > 0 ? static_cast<double>(bytes) / (us * 1e3) : 0;  // GB/s
      double busbw = algbw * factor;
      r[p]["time_us"] = RoundTo(us, 2);
      r[p]["algbw"] = RoundTo(algbw, 3);
      r[p]["busbw"] = RoundTo(busbw, 3);
      if (!r[p].contains("wrong")) r[p]["wrong"] = nullptr;
      peak = std::max(peak, busbw);
      sum += busbw;
      ++k;
      if (r[p]["wrong"].is_number_integer()) wrong += r[p]["wrong"].get<long long>(), checked = true;
    }
    rows.push_back(std::move(r));
  }
  t["ranks"] = ranks;
  t["rows"] = rows;
  t["peak_busbw"] = RoundTo(peak, 3);
  t["avg_busbw"] = k ? RoundTo(sum / k, 3) : 0.0;
  // null when nothing was checked (--no-check): no check is not a clean check.
  t["wrong"] = checked ? json(wrong) : json(nullptr);
  if (!rows.empty() && rows.back().contains("out_of_place") && rows.back()["out_of_place"].contains("busbw"))
    t["busbw_at_max"] = rows.back()["out_of_place"]["busbw"];
  return t;
}

const std::vector<std::string>& Collectives() {
  static const std::vector<std::string> v = {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                             "broadcast",  "reduce",     "sendrecv"};
  return v;
}

std::vector<uint64_t> SizeSweep(uint64_t min_bytes, uint64_t max_bytes, double factor) {
  if (min_bytes == 0) min_bytes = 1;
  if (factor <= 1.0) throw std::invalid_argument("the size factor must be greater than 1");
  if (max_bytes < min_bytes) throw std::invalid_argument("the largest size is smaller than the smallest");
  std::vector<uint64_t> out;
  for (double s = static_cast<double>(min_bytes); s < static_cast<double>(max_bytes); s *= factor) {
    auto v = static_cast<uint64_t>(s);
    if (out.empty() || v > out.back()) out.push_back(v);
  }
  if (out.empty() || out.back() != max_bytes) out.push_back(max_bytes);
  return out;
}

json RunCollectiveJob(Comm& c, const json& job) {
  int n = c.size();
  int iters = job.value("iters", 5), warmup = job.value("warmup", 1), root = job.value("root", 0);
  bool check = job.value("check", true);
  if (root < 0 || root >= n) root = 0;
  json tables = json::array();
  for (const auto& jc : job.at("collectives")) {
    std::string coll = jc.get<std::string>();
    json rows = json::array();
    for (const auto& js : job.at("sizes")) {
      uint64_t size = js.get<uint64_t>();
      // As nccl-tests: the size is the user-visible bytes; a collective that splits it over the
      // ranks rounds the per-rank count down.
      size_t per = SizeSplit(coll, n);
      size_t count = size / (sizeof(float) * per);
      if (count == 0) continue;
      uint64_t bytes = count * sizeof(float) * per;
      // The output buffer also serves in place, so it holds the larger of input and output.
      Buffers b;
      b.in.assign(InputElements(coll, count, n), 0.0f);
      b.out.assign(std::max(InputElements(coll, count, n), OutputElements(coll, count, n)), 0.0f);
      Fill(c, CollectiveId(coll), b, count, false);
      json row = {{"bytes", bytes}, {"count", count}, {"type", "float"}, {"redop", "sum"}};
      row["root"] = coll == "broadcast" || coll == "reduce" ? json(root) : json(-1);
      row["out_of_place"] = Placement(c, coll, b, count, false, root, iters, warmup, check);
      row["in_place"] = Placement(c, coll, b, count, true, root, iters, warmup, check);
      if (c.rank() == 0) rows.push_back(std::move(row));
    }
    if (c.rank() != 0) continue;
    tables.push_back(SummarizeTable({{"collective", coll}, {"rows", rows}}, n));
  }
  if (c.rank() != 0) return nullptr;
  std::vector<std::string> nodes;
  for (const auto& node : c.nodes())
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  return {{"ranks", n}, {"nodes", nodes}, {"transport", c.transport()}, {"collectives", tables}};
}

// The NCCL backend: this rank runs the GPU helper's `nccl` command (one process per GPU), with
// NCCL's own debug output asked for (version, network, channels, the algorithm and protocol per
// size), and the environment of the mode: fabric-only disables NVLink/P2P, shared memory and NVLS;
// a rail names the one HCA. Rank 0's helper prints the raw tables; its debug file is read here.
std::optional<json> RunNcclRank(const json& job, const RankInfo& me, const std::filesystem::path& rendezvous) {
  std::string helper = FindGpuHelper(job.value("helper", ""));
  if (helper.empty())
    throw std::runtime_error(
        "the NCCL backend needs the GPU helper clustermax-gpu next to this binary (built with CUDA)");
  std::filesystem::path debug = rendezvous / fmt::format("nccl-debug-{}.log", me.rank);
  std::vector<std::string> env;
  if (!std::getenv("NCCL_DEBUG")) {
    env.push_back("NCCL_DEBUG=INFO");
    env.push_back("NCCL_DEBUG_SUBSYS=INIT,TUNING");
    env.push_back("NCCL_DEBUG_FILE=" + debug.string());
  }
  if (job.value("fabric_only", false)) {
    for (const char* e : {"NCCL_P2P_DISABLE=1", "NCCL_SHM_DISABLE=1", "NCCL_NVLS_ENABLE=0"}) env.push_back(e);
  }
  if (std::string rail = job.value("rail", ""); !rail.empty()) env.push_back("NCCL_IB_HCA==" + rail);
  if (std::string algo = job.value("algo", ""); !algo.empty()) env.push_back("NCCL_ALGO=" + algo);
  json hj = {{"rank", me.rank},
             {"world", me.world},
             {"local_rank", me.local_rank},
             {"rendezvous", rendezvous.string()},
             {"collectives", job.at("collectives")},
             {"sizes", job.at("sizes")},
             {"iters", job.value("iters", 20)},
             {"warmup", job.value("warmup", 5)},
             {"check", job.value("check", true)},
             {"root", job.value("root", 0)},
             {"timeout_s", job.value("timeout_s", 120.0)}};
  double budget = job.value("helper_timeout_s", 3600.0);
  auto run = host::RunProcess(helper, {"clustermax-gpu", "nccl", "--job-json", hj.dump()},
                              std::chrono::milliseconds(static_cast<long long>(budget * 1000)), 64u << 20, env);
  json line;
  for (const auto& l : util::SplitLines(run.out)) {
    try {
      json j = json::parse(l);
      if (j.is_object() && j.contains("type")) line = j;
    } catch (const json::exception&) {
    }
  }
  if (!line.is_object()) {
    std::string why = run.timed_out        ? fmt::format("the GPU helper ran past {} s", budget)
                      : !run.error.empty() ? run.error
                                           : "the GPU helper printed no result: " + util::Ellipsize(run.err, 400);
    throw std::runtime_error(why);
  }
  if (line.value("type", "") == "error") throw std::runtime_error(line.value("error", "the GPU helper failed"));
  if (me.rank != 0) return std::nullopt;
  json tables = json::array();
  for (const auto& t : line.value("collectives", json::array())) tables.push_back(SummarizeTable(t, me.world));
  json r = {{"ranks", me.world},
            {"nodes", job.value("nodes", json::array())},
            {"transport", "nccl"},
            {"device", line.value("device", "")},
            {"collectives", tables}};
  json facts = {{"version", line.value("nccl_version", "")}};
  if (auto text = util::ReadLocalFile(debug, 64u << 20)) {
    auto f = ParseNcclDebug(*text);
    if (!f.version.empty()) facts["version"] = f.version;
    facts["network"] = f.network;
    facts["nvls"] = f.nvls;
    facts["coll_channels"] = f.coll_channels;
    facts["nvls_channels"] = f.nvls_channels;
    facts["transports"] = f.transports;
    json tuning = json::array();
    for (const auto& t : f.tuning)
      tuning.push_back(
          {{"collective", t.collective}, {"bytes", t.bytes}, {"algorithm", t.algorithm}, {"protocol", t.protocol}});
    facts["tuning"] = tuning;
  } else {
    facts["debug"] = "NCCL's debug output was not read (NCCL_DEBUG set by the caller, or no file)";
  }
  r["nccl"] = facts;
  // The node's HCA ports and their link rates: what a per-NIC busbw is measured against.
  host::LocalHost local;
  json hcas = json::array();
  for (const auto& p : ListRdmaPorts(local))
    if (p.skip.empty()) hcas.push_back(PortJson(p));
  r["hcas"] = hcas;
  return r;
}

namespace {
// The verbs tests' settings from a rank job's "rdma" object (the launcher's --rdma-* options).
RdmaOptions RdmaOptionsFromJob(const json& job) {
  RdmaOptions o;
  const json r = job.value("rdma", json::object());
  o.bytes = r.value("bytes", o.bytes);
  o.seconds = r.value("seconds", o.seconds);
  o.latency_iters = r.value("latency_iters", o.latency_iters);
  o.bidirectional = r.value("bidirectional", o.bidirectional);
  o.gpu_memory = r.value("gpu_memory", o.gpu_memory);
  o.devices = r.value("devices", o.devices);
  // A port's test gives up after a minute without a completion (or the rank's timeout, if shorter).
  o.timeout_s = std::min(60.0, job.value("timeout_s", o.timeout_s));
  return o;
}
}  // namespace

std::optional<json> RunRankJob(const json& job, const RankInfo& me) {
  std::string kind = job.value("kind", "");
  CommOptions o;
  o.timeout_s = job.value("timeout_s", 120.0);
  o.throttle_bytes_per_s = ThrottleFromEnv(me.node);
  auto started = Clock::now();
  bool nccl = job.value("backend", "tcp") == "nccl";
  if (kind == "collectives" && nccl) {
    try {
      auto r = RunNcclRank(job, me, job.at("rendezvous").get<std::string>());
      if (r) (*r)["seconds"] = RoundTo(std::chrono::duration<double>(Clock::now() - started).count(), 3);
      return r;
    } catch (const std::exception& e) {
      if (me.rank != 0) throw;
      return json{{"error", e.what()}};
    }
  }
  // Under srun --mpi=pmix the ranks meet through the step's PMIx, not the rendezvous directory.
  bool pmix = job.value("launch", "file") == "pmix";
  if (kind == "collectives") {
    if (pmix)
      o.pmix_group = "step";
    else
      o.rendezvous = job.at("rendezvous").get<std::string>();
    o.fabric_only = job.value("fabric_only", false);
    o.iface = job.value("rail", "");
    try {
      auto comm = Comm::Connect(me, o);
      json r = RunCollectiveJob(*comm, job);
      if (me.rank != 0) return std::nullopt;
      r["met_through"] = comm->met_through();
      r["seconds"] = RoundTo(std::chrono::duration<double>(Clock::now() - started).count(), 3);
      return r;
    } catch (const std::exception& e) {
      if (me.rank != 0) throw;
      return json{{"error", e.what()}};
    }
  }
  if (kind == "pairs" || kind == "rdma") {
    const json& pairs = job.at("pairs");
    for (size_t i = 0; i < pairs.size(); ++i) {
      // Pairs by node name: a task's rank depends on Slurm's node order, its node does not.
      std::string a = pairs[i].at(0).get<std::string>(), b = pairs[i].at(1).get<std::string>();
      if (me.node != a && me.node != b) continue;
      RankInfo pr{me.node == a ? 0 : 1, 2, 0, me.node};
      // NCCL's unique id always goes through the directory; PMIx carries only the TCP comm's addresses.
      if (pmix && !nccl)
        o.pmix_group = fmt::format("pair-{}", i);
      else
        o.rendezvous = std::filesystem::path(job.at("rendezvous").get<std::string>()) / fmt::format("pair-{}", i);
      if (kind == "rdma") {
        // Verbs per HCA port between the two nodes; the TCP comm carries the queue pairs' addresses.
        try {
          // The partner waits in a comm receive while the leader runs a port's tests: the comm's
          // patience must outlast the longest of them (three timed tests, then a stuck completion).
          RdmaOptions ro = RdmaOptionsFromJob(job);
          o.timeout_s += 4 * ro.seconds + ro.timeout_s;
          auto comm = Comm::Connect(pr, o);
          host::LocalHost local;
          json r = RunRdmaPair(*comm, local, ro);
          if (pr.rank != 0) return std::nullopt;
          r["pair"] = i;
          r["a"] = a;
          r["b"] = b;
          return r;
        } catch (const std::exception& e) {
          if (pr.rank != 0) throw;
          return json{{"pair", i}, {"a", a}, {"b", b}, {"error", e.what()}};
        }
      }
      if (nccl) {
        // The pair's GPUs as one NCCL job: tasks_per_node ranks on each of the two nodes.
        int tpn = std::max(1, job.value("tasks_per_node", 1));
        RankInfo nr{pr.rank * tpn + me.local_rank, 2 * tpn, me.local_rank, me.node};
        json cj = job;
        cj["collectives"] = {job.value("pair_collective", "all_reduce")};
        cj["nodes"] = {a, b};
        try {
          auto r = RunNcclRank(cj, nr, o.rendezvous);
          if (!r) return std::nullopt;
          json t = (*r)["collectives"].empty() ? json::object() : (*r)["collectives"][0];
          double busbw = t.value("busbw_at_max", 0.0);
          return json{{"pair", i},
                      {"a", a},
                      {"b", b},
                      {"busbw", busbw},
                      {"a_to_b_gbps", RoundTo(busbw * 8, 3)},
                      {"b_to_a_gbps", RoundTo(busbw * 8, 3)},
                      {"transport", "nccl"},
                      {"collective", t.value("collective", "")},
                      {"wrong", t.value("wrong", 0)},
                      {"nccl", r->value("nccl", json::object())}};
        } catch (const std::exception& e) {
          if (nr.rank != 0) throw;
          return json{{"pair", i}, {"error", e.what()}};
        }
      }
      try {
        auto comm = Comm::Connect(pr, o);
        int streams = job.value("streams", 8);
        double secs = job.value("seconds", 5.0);
        comm->Barrier();
        auto ab = comm->StreamThroughput(0, 1, streams, secs);
        comm->Barrier();
        auto ba = comm->StreamThroughput(1, 0, streams, secs);
        comm->Barrier();
        auto lat = comm->PingPong(0, 1, job.value("latency_iters", 1000));
        if (pr.rank != 0) return std::nullopt;
        auto pct = [&](double q) {
          return lat.empty() ? 0.0 : lat[std::min(lat.size() - 1, static_cast<size_t>(q * (lat.size() - 1) + 0.5))];
        };
        return json{{"pair", i},
                    {"a", comm->node_of(0)},
                    {"b", comm->node_of(1)},
                    {"streams", streams},
                    {"a_to_b_gbps", RoundTo(ab.bytes_per_s * 8 / 1e9, 3)},
                    {"b_to_a_gbps", RoundTo(ba.bytes_per_s * 8 / 1e9, 3)},
                    {"latency_p50_us", RoundTo(pct(0.5), 2)},
                    {"latency_p99_us", RoundTo(pct(0.99), 2)},
                    {"transport", comm->transport()},
                    {"met_through", comm->met_through()}};
      } catch (const std::exception& e) {
        if (pr.rank != 0) throw;
        return json{{"pair", i}, {"error", e.what()}};
      }
    }
    if (pmix && !nccl) PmixAbstain(o.timeout_s);  // in no pair: the others' fence still counts this task
    return std::nullopt;
  }
  throw std::invalid_argument("unknown rank job kind '" + kind + "'");
}

// ---- the launcher's pure parts ----

std::vector<std::vector<std::pair<int, int>>> PairRounds(int n, bool all) {
  std::vector<std::vector<std::pair<int, int>>> rounds;
  if (n < 2) return rounds;
  if (!all) {
    // A ring: (0,1)(2,3)..., then (1,2)(3,4)...(n-1,0); an odd ring needs a third round for the
    // pair the first two could not hold.
    std::set<std::pair<int, int>> want;
    for (int i = 0; i < n; ++i) want.insert(std::minmax(i, (i + 1) % n));
    if (n == 2) want = {{0, 1}};
    while (!want.empty()) {
      std::vector<std::pair<int, int>> round;
      std::set<int> busy;
      for (auto it = want.begin(); it != want.end();) {
        if (busy.count(it->first) || busy.count(it->second)) {
          ++it;
          continue;
        }
        busy.insert(it->first);
        busy.insert(it->second);
        round.push_back(*it);
        it = want.erase(it);
      }
      rounds.push_back(std::move(round));
    }
    return rounds;
  }
  // The circle method: fix the last seat, rotate the others; a bye seat for odd n.
  int m = n % 2 ? n + 1 : n;
  std::vector<int> seat(m);
  for (int i = 0; i < m; ++i) seat[i] = i;
  for (int r = 0; r < m - 1; ++r) {
    std::vector<std::pair<int, int>> round;
    for (int i = 0; i < m / 2; ++i) {
      int a = seat[i], b = seat[m - 1 - i];
      if (a < n && b < n) round.push_back(std::minmax(a, b));
    }
    std::sort(round.begin(), round.end());
    rounds.push_back(std::move(round));
    std::rotate(seat.begin(), seat.begin() + (m - 2), seat.begin() + (m - 1));
  }
  return rounds;
}

StragglerAnalysis AnalyzePairs(const std::vector<PairFigure>& pairs, double slow_ratio) {
  StragglerAnalysis a;
  std::map<std::string, double> best;
  std::set<std::string> nodes;
  for (const auto& p : pairs) {
    nodes.insert(p.a);
    nodes.insert(p.b);
    best[p.a] = std::max(best[p.a], p.gbps);
    best[p.b] = std::max(best[p.b], p.gbps);
  }
  std::vector<double> bests;
  for (const auto& [node, v] : best) bests.push_back(v);
  a.reference_gbps = Median(bests);
  std::vector<std::pair<std::string, std::string>> slow;
  for (const auto& p : pairs) {
    if (p.gbps < slow_ratio * a.reference_gbps) slow.emplace_back(p.a, p.b);
  }
  a.slow_pairs = slow;
  // Greedy: the node slow with the most partners (two at least) explains its pairs.
  std::set<std::string> suspects;
  for (;;) {
    std::map<std::string, int> count;
    for (const auto& [x, y] : slow) {
      if (suspects.count(x) || suspects.count(y)) continue;
      ++count[x];
      ++count[y];
    }
    std::string top;
    int most = 1;
    for (const auto& [node, k] : count) {
      if (k > most) most = k, top = node;
    }
    if (top.empty()) break;
    suspects.insert(top);
  }
  a.suspect_nodes.assign(suspects.begin(), suspects.end());
  std::set<std::string> in_links;
  for (const auto& [x, y] : slow) {
    if (suspects.count(x) || suspects.count(y)) continue;
    a.suspect_links.emplace_back(x, y);
    in_links.insert(x);
    in_links.insert(y);
  }
  for (const auto& node : nodes) {
    if (!suspects.count(node) && !in_links.count(node)) a.good_nodes.push_back(node);
  }
  return a;
}

std::vector<NodePairs> SummarizeNodes(const std::vector<std::string>& nodes, const std::vector<PairFigure>& pairs,
                                      const StragglerAnalysis& a) {
  std::vector<NodePairs> out;
  for (const auto& n : nodes) {
    NodePairs np{n};
    std::vector<double> v;
    for (const auto& p : pairs) {
      if (p.a != n && p.b != n) continue;
      v.push_back(p.gbps);
      for (const auto& [x, y] : a.slow_pairs) np.slow_pairs += (x == p.a && y == p.b);
    }
    np.pairs = static_cast<int>(v.size());
    np.median_gbps = Median(v);
    out.push_back(np);
  }
  return out;
}

std::vector<std::vector<std::pair<std::string, std::string>>> RetestRounds(const StragglerAnalysis& a) {
  std::vector<std::pair<std::string, std::string>> want;
  size_t g = 0;
  auto good = [&]() -> std::string {
    if (a.good_nodes.empty()) return "";
    return a.good_nodes[g++ % a.good_nodes.size()];
  };
  for (const auto& s : a.suspect_nodes) {
    std::string partner = good();
    if (!partner.empty()) want.emplace_back(s, partner);
  }
  for (const auto& [x, y] : a.suspect_links) {
    want.emplace_back(x, y);
    std::string px = good(), py = good();
    if (!px.empty()) want.emplace_back(x, px);
    if (!py.empty()) want.emplace_back(y, py);
  }
  // Disjoint rounds: a node is in one pair at a time.
  std::vector<std::vector<std::pair<std::string, std::string>>> rounds;
  while (!want.empty()) {
    std::vector<std::pair<std::string, std::string>> round, later;
    std::set<std::string> busy;
    for (auto& p : want) {
      if (busy.count(p.first) || busy.count(p.second)) {
        later.push_back(p);
        continue;
      }
      busy.insert(p.first);
      busy.insert(p.second);
      round.push_back(p);
    }
    rounds.push_back(std::move(round));
    want = std::move(later);
  }
  return rounds;
}

std::vector<Culprit> Judge(const StragglerAnalysis& a, const std::vector<PairFigure>& retest, double slow_ratio,
                           std::vector<std::string>* transient) {
  auto figure = [&](const std::string& x, const std::string& y) -> std::optional<double> {
    for (const auto& p : retest) {
      if ((p.a == x && p.b == y) || (p.a == y && p.b == x)) return p.gbps;
    }
    return std::nullopt;
  };
  auto slow = [&](double v) { return v < slow_ratio * a.reference_gbps; };
  auto with_good = [&](const std::string& node) -> std::optional<std::pair<std::string, double>> {
    for (const auto& p : retest) {
      std::string other = p.a == node ? p.b : p.b == node ? p.a : "";
      if (!other.empty() && std::find(a.good_nodes.begin(), a.good_nodes.end(), other) != a.good_nodes.end())
        return std::make_pair(other, p.gbps);
    }
    return std::nullopt;
  };
  std::vector<Culprit> out;
  std::set<std::string> named;
  auto partners = [&](const std::string& node) {
    std::vector<std::string> v;
    for (const auto& [x, y] : a.slow_pairs) {
      if (x == node) v.push_back(y);
      if (y == node) v.push_back(x);
    }
    return fmt::format("{}", fmt::join(v, ", "));
  };
  for (const auto& s : a.suspect_nodes) {
    auto g = with_good(s);
    if (!g) {
      out.push_back({"node", s, fmt::format("slow with {} (no known-good node to retest against)", partners(s))});
    } else if (slow(g->second)) {
      out.push_back({"node", s,
                     fmt::format("slow with {}; again {:.2f} Gb/s with the good node {} (reference {:.2f})",
                                 partners(s), g->second, g->first, a.reference_gbps)});
    } else if (transient) {
      transient->push_back(fmt::format("{}: slow with {} in the first pass, {:.2f} Gb/s with {} on retest", s,
                                       partners(s), g->second, g->first));
    }
    named.insert(s);
  }
  for (const auto& [x, y] : a.suspect_links) {
    auto gx = with_good(x), gy = with_good(y);
    auto again = figure(x, y);
    bool x_bad = gx && slow(gx->second), y_bad = gy && slow(gy->second);
    if (x_bad || y_bad) {
      for (const auto& [node, gg] : {std::make_pair(x, gx), std::make_pair(y, gy)}) {
        if (gg && slow(gg->second) && !named.count(node)) {
          out.push_back({"node", node,
                         fmt::format("slow with {}; again {:.2f} Gb/s with the good node {}", node == x ? y : x,
                                     gg->second, gg->first)});
          named.insert(node);
        }
      }
    } else if (again && !slow(*again)) {
      if (transient)
        transient->push_back(fmt::format("{}<->{}: slow in the first pass, {:.2f} Gb/s on retest", x, y, *again));
    } else {
      std::string why = fmt::format("slow between {} and {}", x, y);
      if (again) why += fmt::format(" (again {:.2f} Gb/s on retest)", *again);
      if (gx && gy)
        why += fmt::format("; both ends are fast with good nodes ({:.2f} and {:.2f} Gb/s): the path between them",
                           gx->second, gy->second);
      else
        why += "; no known-good node to tell the ends from the path";
      out.push_back({"link", x + "<->" + y, why});
    }
  }
  return out;
}

json SummarizeRdma(const std::vector<json>& pairs) {
  struct Hca {
    double rate = 0, best_write = -1, best_read = -1, worst_p99 = -1;
    std::vector<std::string> partners, errors;
  };
  std::map<std::tuple<std::string, std::string, int>, Hca> hcas;  // (node, device, port)
  // What kept a port or a pair from being measured where RDMA applies (a node with no RDMA device
  // at all, or without libibverbs, is "not applicable", not a problem of the fabric).
  std::vector<std::string> problems, not_applicable;
  auto num = [](const json& j, const char* k) { return j.contains(k) && j[k].is_number() ? j[k].get<double>() : -1.0; };
  auto str = [](const json& j, const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string("?");
  };
  json out = {{"pairs", pairs}};
  for (const auto& pr : pairs) {
    if (!pr.is_object()) continue;
    std::string a = pr.value("a", ""), b = pr.value("b", "");
    if (pr.contains("error")) {
      std::string e = fmt::format("{}<->{}: {}", a, b, str(pr, "error"));
      bool na =
          e.find("no RDMA device") != std::string::npos || e.find("libibverbs is not installed") != std::string::npos;
      (na ? not_applicable : problems).push_back(e);
    }
    for (const auto& u : pr.contains("unmatched") && pr["unmatched"].is_array() ? pr["unmatched"] : json::array()) {
      if (!u.is_object() || str(u, "why").rfind("not among the devices asked for", 0) == 0) continue;
      problems.push_back(fmt::format("{}<->{}: {} port {}: {}", a, b, str(u, "device"),
                                     u.contains("port") && u["port"].is_number_integer() ? u["port"].get<int>() : 0,
                                     str(u, "why")));
    }
    if (!pr.contains("ports") || !pr["ports"].is_array()) continue;
    for (const auto& p : pr["ports"]) {
      if (!p.is_object() || !p.contains("device") || !p["device"].is_string()) continue;
      std::string dev = p["device"].get<std::string>();
      int port = p.contains("port") && p["port"].is_number_integer() ? p["port"].get<int>() : 1;
      // The figure belongs to both ends: the HCA of each node that took part, at its own link rate.
      for (const auto& [node, partner] : {std::pair{a, b}, std::pair{b, a}}) {
        Hca& h = hcas[{node, dev, port}];
        h.partners.push_back(partner);
        double rate = node == b && num(p, "peer_rate_gbps") > 0 ? num(p, "peer_rate_gbps") : num(p, "rate_gbps");
        if (rate > 0) h.rate = rate;
        // A later test's failure (read, latency) does not erase the write figure measured before it.
        h.best_write = std::max(h.best_write, num(p, "write_gbps"));
        h.best_read = std::max(h.best_read, num(p, "read_gbps"));
        h.worst_p99 = std::max(h.worst_p99, num(p, "lat_p99_us"));
        if (p.contains("error")) h.errors.push_back(fmt::format("with {}: {}", partner, str(p, "error")));
      }
    }
  }
  json list = json::array();
  double worst = 1e300;
  std::string worst_detail;
  for (const auto& [key, h] : hcas) {
    const auto& [node, dev, port] = key;
    json e = {{"node", node}, {"device", dev}, {"port", port}, {"partners", h.partners}};
    if (h.rate > 0) e["rate_gbps"] = h.rate;
    if (h.best_write >= 0) e["best_write_gbps"] = RoundTo(h.best_write, 3);
    if (h.best_read >= 0) e["best_read_gbps"] = RoundTo(h.best_read, 3);
    if (h.worst_p99 >= 0) e["worst_lat_p99_us"] = RoundTo(h.worst_p99, 3);
    if (!h.errors.empty()) e["errors"] = h.errors;
    // A port whose write never worked with any partner reached 0 of its line.
    double best = h.best_write >= 0 ? h.best_write : 0.0;
    if (h.rate > 0 && (h.best_write >= 0 || !h.errors.empty())) {
      double ratio = best / h.rate;
      e["line_ratio"] = RoundTo(ratio, 3);
      if (ratio < worst) {
        worst = ratio;
        worst_detail =
            fmt::format("{} {} port {}: best RDMA write {:.1f} Gb/s with any of {} partner(s) over its {:g} Gb/s link",
                        node, dev, port, best, h.partners.size(), h.rate);
      }
    }
    list.push_back(std::move(e));
  }
  out["hcas"] = list;
  if (!problems.empty()) out["problems"] = problems;
  if (!not_applicable.empty()) out["not_applicable"] = not_applicable;
  if (worst < 1e300) {
    out["worst_line_ratio"] = RoundTo(worst, 3);
    out["worst_line_ratio_detail"] = worst_detail;
  } else if (!problems.empty()) {
    // RDMA applies (a node has HCAs) but nothing was measured: the fabric failed, not the tool.
    out["worst_line_ratio"] = 0.0;
    out["worst_line_ratio_detail"] = "nothing measured: " + problems.front();
  } else {
    out["why"] = !not_applicable.empty() ? not_applicable.front()
                 : hcas.empty()          ? "no HCA port was measured"
                                         : "no measured port has a known link rate";
  }
  return out;
}

json ImportFile(const std::string& name, std::string_view text) {
  json out = {{"file", name}};
  // nccl-tests names its binaries after the collective (all_reduce_perf): a file named so says which.
  std::string hint;
  for (const auto& c : Collectives())
    if (name.find(c) != std::string::npos && c.size() > hint.size()) hint = c;
  std::string nerr, perr;
  auto tables = ParseNcclTests(text, hint, &nerr);
  if (!tables.empty()) {
    out["tool"] = "nccl-tests";
    json colls = json::array();
    for (const auto& t : tables) {
      json rows = json::array();
      long long wrong = 0;
      double peak = 0, sum = 0;
      int k = 0;
      bool checked = false;
      auto place = [&](const CollectivePlacement& p) {
        json j = {{"time_us", p.time_us}, {"algbw", p.algbw}, {"busbw", p.busbw}};
        j["wrong"] = p.wrong >= 0 ? json(p.wrong) : json(nullptr);
        checked |= p.wrong >= 0;
        if (p.wrong > 0) wrong += p.wrong;
        peak = std::max(peak, p.busbw);
        sum += p.busbw;
        ++k;
        return j;
      };
      for (const auto& r : t.rows) {
        json row = {{"bytes", r.bytes}, {"count", r.count}, {"type", r.type}, {"redop", r.redop}, {"root", r.root}};
        row["out_of_place"] = place(r.out_of_place);
        row["in_place"] = place(r.in_place);
        rows.push_back(std::move(row));
      }
      json c = {{"collective", t.collective},     {"ranks", t.ranks},  {"devices", t.devices}, {"rows", rows},
                {"peak_busbw", RoundTo(peak, 3)}, {"failed", t.failed}};
      c["wrong"] = checked ? json(wrong) : json(nullptr);
      c["avg_busbw"] = t.avg_busbw ? *t.avg_busbw : (k ? RoundTo(sum / k, 3) : 0.0);
      if (!t.rows.empty()) c["busbw_at_max"] = t.rows.back().out_of_place.busbw;
      if (t.out_of_bounds) c["out_of_bounds"] = *t.out_of_bounds;
      c["nccl"] = {{"version", t.nccl_version}, {"network", t.network}, {"nvls", t.nvls}};
      colls.push_back(std::move(c));
    }
    out["result"] = {{"collectives", colls}, {"transport", "nccl-tests file"}};
    return out;
  }
  if (auto run = ParsePerftest(text, &perr)) {
    out["tool"] = "perftest";
    json r = {{"title", run->title},
              {"device", run->device},
              {"link_type", run->link_type},
              {"transport", run->transport},
              {"connection", run->connection},
              {"qps", run->qps},
              {"mtu", run->mtu},
              {"gpu_memory", run->cuda},
              {"unit", run->unit}};
    if (run->gid_index >= 0) r["gid_index"] = run->gid_index;
    json rows = json::array();
    for (const auto& b : run->bw) {
      json row = {{"bytes", b.bytes}, {"iterations", b.iterations}, {"msg_rate_mpps", b.msg_rate_mpps}};
      if (auto g = ToGbps(b.peak, run->unit)) row["peak_gbps"] = RoundTo(*g, 3);
      if (auto g = ToGbps(b.average, run->unit)) row["average_gbps"] = RoundTo(*g, 3);
      rows.push_back(std::move(row));
    }
    for (const auto& l : run->lat)
      rows.push_back({{"bytes", l.bytes},
                      {"iterations", l.iterations},
                      {"t_min_us", l.t_min},
                      {"t_typical_us", l.t_typical},
                      {"t_avg_us", l.t_avg},
                      {"p99_us", l.p99},
                      {"p999_us", l.p999}});
    r["rows"] = rows;
    r["warnings"] = run->warnings;
    out["result"] = r;
    return out;
  }
  out["error"] = fmt::format("neither nccl-tests ({}) nor perftest ({}) output", nerr, perr);
  return out;
}

std::vector<MetricValue> NetMetrics(const json& r) {
  std::vector<MetricValue> out;
  // Any wrong element anywhere: the data did not arrive intact.
  {
    MetricValue m{"net.wrong-elements", std::nullopt, "", "", ""};
    long long wrong = 0;
    bool checked = false;
    std::vector<std::string> failed_tables;  // nccl-tests runs that said FAILED (imported files)
    std::function<void(const json&)> walk = [&](const json& j) {
      if (j.is_object()) {
        if (j.contains("collectives") && j["collectives"].is_array()) {
          for (const auto& t : j["collectives"]) {
            if (!t.is_object()) continue;
            if (t.contains("wrong") && t["wrong"].is_number_integer()) {
              wrong += t["wrong"].get<long long>();
              checked = true;
            }
            if (t.contains("failed") && t["failed"].is_boolean() && t["failed"].get<bool>()) {
              std::string c =
                  t.contains("collective") && t["collective"].is_string() ? t["collective"].get<std::string>() : "";
              failed_tables.push_back(c.empty() ? "a table of an unnamed collective" : c);
            }
          }
        }
        // A pair of an NCCL pairwise run carries its own count.
        if (j.contains("a") && j.contains("b") && j.contains("wrong") && j["wrong"].is_number_integer()) {
          wrong += j["wrong"].get<long long>();
          checked = true;
        }
        for (const auto& [k, v] : j.items()) {
          if (k != "collectives") walk(v);
        }
      } else if (j.is_array()) {
        for (const auto& v : j) walk(v);
      }
    };
    walk(r);
    // An nccl-tests run that said FAILED is a failed check even where its format gave no counts.
    if (checked || !failed_tables.empty()) {
      m.value = static_cast<double>(wrong);
      m.detail = "elements that differed from the expected result, over every collective, size and placement";
      if (wrong > 0)
        m.fail_reason = fmt::format("{} wrong element(s): data corrupted in transit", wrong);
      else if (!failed_tables.empty())
        m.fail_reason = fmt::format("nccl-tests reported a failed check ({})", fmt::join(failed_tables, ", "));
    } else {
      m.why_missing = "no collective was run with the data check";
    }
    out.push_back(m);
  }
  {
    // One node's all_reduce against its GPU model's reference (data/gpu-peaks.json): from this
    // run's single-node NCCL result, else from an imported nccl-tests file of one node.
    MetricValue m{"net.node-allreduce", std::nullopt, "", "", ""};
    struct Candidate {
      const json* table;
      std::string device, algorithm, where;
    };
    std::vector<Candidate> cands;
    auto all_reduce = [](const json& res) { return FindCollective(res, "all_reduce"); };
    if (r.contains("single") && r["single"].is_object() && r["single"].value("transport", "") == "nccl") {
      const json& s = r["single"];
      if (const json* t = all_reduce(s)) {
        std::string algo;
        const json nccl = s.value("nccl", json::object());
        long long biggest = -1;
        for (const auto& tu : nccl.value("tuning", json::array())) {
          if (tu.value("collective", "") != "AllReduce" && !tu.value("collective", "").empty()) continue;
          if (tu.value("bytes", -1LL) >= biggest) biggest = tu.value("bytes", -1LL), algo = tu.value("algorithm", "");
        }
        if (algo.empty()) algo = nccl.value("nvls", false) ? "NVLS?" : "RING?";
        cands.push_back({t, s.value("device", ""), algo, "this run's single node"});
      }
    }
    const json imported = r.contains("imported") && r["imported"].is_array() ? r["imported"] : json::array();
    for (const auto& imp : imported) {
      if (!imp.is_object() || !imp.contains("result") || !imp["result"].is_object()) continue;
      if (const json* t = all_reduce(imp["result"])) {
        const json devs = t->value("devices", json::array());
        std::string dev = devs.is_array() && !devs.empty() && devs[0].is_string() ? devs[0].get<std::string>() : "";
        const json nccl = t->value("nccl", json::object());
        bool nvls = nccl.is_object() && nccl.value("nvls", false);
        cands.push_back({t, dev, nvls ? "NVLS?" : "RING?", "imported " + imp.value("file", "")});
      }
    }
    std::string why = cands.empty() ? "no all_reduce of one node was measured (NCCL backend) or imported" : "";
    for (const auto& c : cands) {
      json model = MatchGpuModel(c.device, EmbeddedGpuPeaks());
      int ranks = c.table->value("ranks", 0);
      if (!model.is_object() || !model.contains("node_allreduce_busbw")) {
        why = fmt::format("{}: no all_reduce reference for '{}' in data/gpu-peaks.json", c.where, c.device);
        continue;
      }
      const json& ref = model["node_allreduce_busbw"];
      if (ranks != ref.value("gpus", 8)) {
        why =
            fmt::format("{}: {} ranks; the reference is for {} GPUs of one node", c.where, ranks, ref.value("gpus", 8));
        continue;
      }
      // NCCL's own choice when its tuning lines say it; otherwise NVLS where NCCL reported NVLS.
      bool nvls = c.algorithm.rfind("NVLS", 0) == 0;
      double bar = ref.value(nvls ? "nvls" : "ring", 0.0);
      double got = c.table->value("busbw_at_max", 0.0);
      if (bar <= 0) continue;
      m.value = RoundTo(got / bar, 3);
      m.detail = fmt::format(
          "{}: {} all_reduce {:.1f} GB/s busbw at {} B over the {} reference {:.1f} ({}{})", c.where,
          model.value("id", ""), got, (*c.table)["rows"].back().value("bytes", 0LL), nvls ? "NVLS" : "Ring", bar,
          c.algorithm, c.algorithm.back() == '?' ? ": the algorithm as inferred, NCCL's tuning lines absent" : "");
      break;
    }
    if (!m.value) m.why_missing = why;
    out.push_back(m);
  }
  {
    MetricValue m{"net.pairwise-worst-node", std::nullopt, "", "", ""};
    const json* p = r.contains("pairwise") && r["pairwise"].is_object() ? &r["pairwise"] : nullptr;
    if (p && p->contains("nodes") && !(*p)["nodes"].empty() && p->value("reference_gbps", 0.0) > 0) {
      double ref = (*p)["reference_gbps"].get<double>();
      double worst = 1e300;
      std::string who;
      for (const auto& n : (*p)["nodes"]) {
        double v = n.value("median_gbps", 0.0) / ref;
        if (v < worst) worst = v, who = n.value("node", "");
      }
      m.value = RoundTo(worst, 3);
      m.detail = fmt::format("{}: its median pair throughput over the fleet reference {:.2f} Gb/s", who, ref);
      std::vector<std::string> names;
      for (const auto& c : p->value("culprits", json::array())) names.push_back(c.value("name", ""));
      if (!names.empty()) m.fail_reason = fmt::format("at fault: {}", fmt::join(names, ", "));
    } else {
      m.why_missing = !p                     ? "the pairwise mode did not run"
                      : p->contains("error") ? p->value("error", "")
                                             : "no pair gave a figure";
      for (const auto& x : p ? p->value("pairs", json::array()) : json::array()) {
        if (x.contains("error") && m.why_missing == "no pair gave a figure")
          m.why_missing += ": " + x.value("error", "");
      }
    }
    out.push_back(m);
  }
  // A ratio the launcher already worked out for a mode (scaling efficiency, rail spread), with its
  // detail, or the launcher's reason there is none.
  auto section_ratio = [&r](const char* id, const char* section, const char* key, const std::string& mode) {
    MetricValue m{id, std::nullopt, "", "", ""};
    const json* sec = r.contains(section) && r[section].is_object() ? &r[section] : nullptr;
    if (sec && sec->contains(key) && (*sec)[key].is_number()) {
      m.value = (*sec)[key].get<double>();
      m.detail = sec->value(std::string(key) + "_detail", "");
    } else {
      m.why_missing = sec && sec->contains("why") ? sec->value("why", "") : "the " + mode + " mode did not run";
    }
    return m;
  };
  out.push_back(section_ratio("net.scaling-efficiency", "scaling", "efficiency", "scaling"));
  out.push_back(section_ratio("net.rail-spread", "rails", "spread", "per-rail"));
  {
    // Per-NIC busbw across nodes over the NIC's line rate, from NCCL runs whose rank 0 reported its
    // node's HCAs: each rail's all_reduce (one HCA carries it all), and the fabric-only all_reduce
    // shared over every HCA of the node (8 NDR NICs: about 46-48 of 50 GB/s each, performance.md 12.4).
    MetricValue m{"net.nic-busbw-ratio", std::nullopt, "", "", ""};
    double worst = 1e300;
    std::string why = "no NCCL run over RDMA NICs with known link rates (per-rail or fabric-only, NCCL backend)";
    // The link rate of `rail` (a device, or device:port as NCCL_IB_HCA names it) among a node's
    // HCAs; 0 when it is not among them.
    auto rate_of = [](const json& hcas, const std::string& rail) {
      for (const auto& h : hcas) {
        if (!h.is_object() || !h.contains("rate_gbps") || !h["rate_gbps"].is_number()) continue;
        std::string dev = h.contains("device") && h["device"].is_string() ? h["device"].get<std::string>() : "";
        int port = h.contains("port") && h["port"].is_number_integer() ? h["port"].get<int>() : 1;
        if (rail == dev || rail == fmt::format("{}:{}", dev, port)) return h["rate_gbps"].get<double>();
      }
      return 0.0;
    };
    auto consider = [&](double busbw, double rate, const std::string& what) {
      if (busbw <= 0 || rate <= 0) return;
      double ratio = busbw * 8 / rate;
      if (ratio < worst) {
        worst = ratio;
        m.detail =
            fmt::format("{}: {:.2f} GB/s per NIC over its {:g} Gb/s line ({:.2f} GB/s)", what, busbw, rate, rate / 8);
      }
    };
    const json rails =
        r.contains("rails") && r["rails"].is_object() ? r["rails"].value("rails", json::array()) : json::array();
    for (const auto& x : rails) {
      if (!x.is_object() || !x.contains("result") || !x["result"].is_object()) continue;
      const json& res = x["result"];
      if (!res.contains("hcas") || !res["hcas"].is_array()) continue;
      std::string rail = x.value("rail", "");
      consider(x.value("busbw_at_max", 0.0), rate_of(res["hcas"], rail), "rail " + rail);
    }
    if (r.contains("fabric_only") && r["fabric_only"].is_object()) {
      const json& f = r["fabric_only"];
      const json* t = FindCollective(f, "all_reduce");
      if (t && f.contains("hcas") && f["hcas"].is_array() && !f["hcas"].empty() &&
          f.value("nodes", json::array()).size() >= 2) {
        // The compute rails are the node's fastest HCAs; slower ports (storage, frontend) carry no
        // NCCL traffic and are not counted.
        double top = 0;
        size_t n = 0;
        for (const auto& h : f["hcas"])
          if (h.is_object() && h.contains("rate_gbps") && h["rate_gbps"].is_number())
            top = std::max(top, h["rate_gbps"].get<double>());
        for (const auto& h : f["hcas"])
          if (h.is_object() && h.contains("rate_gbps") && h["rate_gbps"].is_number() &&
              h["rate_gbps"].get<double>() == top)
            ++n;
        if (n > 0)
          consider((*t)["busbw_at_max"].get<double>() / static_cast<double>(n), top,
                   fmt::format("fabric-only all_reduce over the node's {} fastest NIC(s)", n));
      }
    }
    if (worst < 1e300)
      m.value = RoundTo(worst, 3);
    else
      m.why_missing = why;
    out.push_back(m);
  }
  {
    MetricValue m{"net.host-latency-p99", std::nullopt, "", "", ""};
    const json* p = r.contains("pairwise") && r["pairwise"].is_object() ? &r["pairwise"] : nullptr;
    double worst = -1;
    std::string who;
    if (p && p->contains("pairs")) {
      for (const auto& x : (*p)["pairs"]) {
        if (!x.contains("latency_p99_us")) continue;
        double v = x["latency_p99_us"].get<double>();
        if (v > worst) worst = v, who = x.value("a", "") + "<->" + x.value("b", "");
      }
    }
    if (worst >= 0) {
      m.value = worst;
      m.detail = fmt::format("{}: TCP ping-pong, half the round trip", who);
    } else {
      m.why_missing = "no pair latency was measured";
    }
    out.push_back(m);
  }
  {
    // Every port measured near its line, and none left unmeasured where RDMA applies.
    MetricValue m = section_ratio("net.rdma-write-line-ratio", "rdma", "worst_line_ratio", "rdma");
    const json& sec = r.contains("rdma") && r["rdma"].is_object() ? r["rdma"] : json::object();
    if (m.value && sec.contains("problems") && sec["problems"].is_array() && !sec["problems"].empty()) {
      const json& first = sec["problems"][0];
      m.fail_reason = fmt::format("{} port(s) or pair(s) not measured, e.g. {}", sec["problems"].size(),
                                  first.is_string() ? first.get<std::string>() : "?");
    }
    out.push_back(m);
  }
  {
    MetricValue m{"net.rdma-latency-p99", std::nullopt, "", "", ""};
    const json* sec = r.contains("rdma") && r["rdma"].is_object() ? &r["rdma"] : nullptr;
    double worst = -1;
    for (const auto& h : sec ? sec->value("hcas", json::array()) : json::array()) {
      if (!h.is_object() || !h.contains("worst_lat_p99_us") || !h["worst_lat_p99_us"].is_number()) continue;
      if (double v = h["worst_lat_p99_us"].get<double>(); v > worst) {
        worst = v;
        m.detail = fmt::format("{} {} port {}: RDMA write ping-pong, half the round trip", h.value("node", ""),
                               h.value("device", ""), h.value("port", 1));
      }
    }
    if (worst >= 0)
      m.value = worst;
    else
      m.why_missing = sec && sec->contains("why") ? sec->value("why", "") : "the rdma mode did not run";
    out.push_back(m);
  }
  return out;
}

}  // namespace clustermax::bench::net

namespace clustermax::bench::net {

namespace {
std::string Gb(const json& j, const char* k) {
  return j.contains(k) && j[k].is_number() ? fmt::format("{:.2f}", j[k].get<double>()) : "-";
}

void RenderTables(std::string& out, const json& r) {
  if (r.contains("error")) {
    out += fmt::format("    error: {}\n", util::TerminalSafeText(r.value("error", "")));
    const json missing = r.value("missing", json::object());
    for (const auto& [node, why] : missing.items())
      out +=
          fmt::format("      {}: {}\n", util::TerminalSafeText(node), util::TerminalSafeText(why.get<std::string>()));
    return;
  }
  if (r.contains("ranks"))
    out += fmt::format("    {} ranks on {} node(s), {}\n", r.value("ranks", 0), r.value("nodes", json::array()).size(),
                       util::TerminalSafeText(r.value("transport", "")));
  out += fmt::format("    {:<15} {:>12} {:>12} {:>12} {:>7}\n", "collective", "peak busbw", "at max", "avg busbw",
                     "wrong");
  for (const auto& t : r.value("collectives", json::array())) {
    std::string name = t.value("collective", "");
    out += fmt::format("    {:<15} {:>12} {:>12} {:>12} {:>7}\n", name.empty() ? "?" : name, Gb(t, "peak_busbw"),
                       Gb(t, "busbw_at_max"), Gb(t, "avg_busbw"), t.value("wrong", 0));
  }
}
}  // namespace

std::string RenderNet(const json& r) {
  std::string out =
      fmt::format("Networking ({} backend), GB/s busbw as nccl-tests; pairs in Gb/s\n", r.value("backend", "tcp"));
  if (r.contains("single")) {
    out += fmt::format("  single node {}:\n", util::TerminalSafeText(r["single"].value("node", "")));
    RenderTables(out, r["single"]);
  }
  if (r.contains("scaling")) {
    const json& s = r["scaling"];
    out += fmt::format("  scaling ({}):\n", s.value("collective", ""));
    for (const auto& st : s.value("steps", json::array())) {
      if (st.contains("error"))
        out += fmt::format("    {:>3} node(s): error: {}\n", st.value("nodes", 0),
                           util::TerminalSafeText(st.value("error", "")));
      else
        out += fmt::format("    {:>3} node(s) {:>4} ranks: busbw at max {}\n", st.value("nodes", 0),
                           st.value("ranks", 0), Gb(st, "busbw_at_max"));
    }
    if (s.contains("efficiency")) out += fmt::format("    efficiency {:.3f}\n", s["efficiency"].get<double>());
  }
  if (r.contains("fabric_only")) {
    out += "  fabric-only:\n";
    RenderTables(out, r["fabric_only"]);
  }
  if (r.contains("rails")) {
    out += "  per rail (all_reduce):\n";
    for (const auto& x : r["rails"].value("rails", json::array())) {
      if (x.contains("error"))
        out += fmt::format("    {:<12} error: {}\n", util::TerminalSafeText(x.value("rail", "")),
                           util::TerminalSafeText(x.value("error", "")));
      else
        out += fmt::format("    {:<12} busbw at max {}\n", util::TerminalSafeText(x.value("rail", "")),
                           Gb(x, "busbw_at_max"));
    }
    if (r["rails"].contains("why")) out += fmt::format("    ({})\n", r["rails"].value("why", ""));
  }
  if (r.contains("pairwise")) {
    const json& p = r["pairwise"];
    out += fmt::format("  pairwise ({} streams, {} s each way):\n", p.value("streams", 0), p.value("seconds", 0.0));
    if (p.contains("error")) out += fmt::format("    error: {}\n", util::TerminalSafeText(p.value("error", "")));
    out +=
        fmt::format("    {:<28} {:>10} {:>10} {:>10} {:>10}\n", "pair", "a->b Gb/s", "b->a Gb/s", "p50 us", "p99 us");
    for (const auto& x : p.value("pairs", json::array())) {
      std::string name = util::TerminalSafeText(x.value("a", "") + " <-> " + x.value("b", ""));
      if (x.contains("error")) {
        out += fmt::format("    {:<28} error: {}\n", name, util::TerminalSafeText(x.value("error", "")));
        continue;
      }
      out += fmt::format("    {:<28} {:>10} {:>10} {:>10} {:>10}{}\n", name, Gb(x, "a_to_b_gbps"), Gb(x, "b_to_a_gbps"),
                         Gb(x, "latency_p50_us"), Gb(x, "latency_p99_us"), x.value("slow", false) ? "  slow" : "");
    }
    if (p.contains("reference_gbps"))
      out += fmt::format("    reference {:.2f} Gb/s (median of each node's best pair)\n",
                         p["reference_gbps"].get<double>());
    for (const auto& c : p.value("culprits", json::array()))
      out += fmt::format("    AT FAULT: {} {}: {}\n", c.value("kind", ""), util::TerminalSafeText(c.value("name", "")),
                         util::TerminalSafeText(c.value("why", "")));
    for (const auto& t : p.value("transient", json::array()))
      out += fmt::format("    transient: {}\n", util::TerminalSafeText(t.get<std::string>()));
  }
  if (r.contains("rdma") && r["rdma"].is_object()) {
    const json& d = r["rdma"];
    out += "  rdma per HCA port (verbs RC; best with any partner):\n";
    for (const auto& e : d.value("errors", json::array()))
      out += fmt::format("    error: {}\n", util::TerminalSafeText(e.get<std::string>()));
    const json hcas = d.value("hcas", json::array());
    if (!hcas.empty())
      out += fmt::format("    {:<24} {:>9} {:>11} {:>11} {:>8} {:>9}\n", "node hca:port", "link Gb/s", "write Gb/s",
                         "read Gb/s", "of line", "p99 us");
    for (const auto& h : hcas) {
      std::string name = util::TerminalSafeText(
          fmt::format("{} {}:{}", h.value("node", ""), h.value("device", ""), h.value("port", 1)));
      out += fmt::format("    {:<24} {:>9} {:>11} {:>11} {:>8} {:>9}\n", name, Gb(h, "rate_gbps"),
                         Gb(h, "best_write_gbps"), Gb(h, "best_read_gbps"), Gb(h, "line_ratio"),
                         Gb(h, "worst_lat_p99_us"));
      for (const auto& e : h.value("errors", json::array()))
        out += fmt::format("      {}\n", util::TerminalSafeText(e.get<std::string>()));
    }
    if (d.contains("why")) out += fmt::format("    ({})\n", util::TerminalSafeText(d.value("why", "")));
  }
  for (const auto& imp : r.value("imported", json::array())) {
    out += fmt::format("  imported {} ({}):\n", util::TerminalSafeText(imp.value("file", "")), imp.value("tool", "?"));
    if (imp.contains("error")) {
      out += fmt::format("    {}\n", util::TerminalSafeText(imp.value("error", "")));
      continue;
    }
    auto found = imp.find("result");
    if (found == imp.end() || !found->is_object()) continue;
    const json& res = *found;
    if (imp.value("tool", "") == "perftest") {
      out += fmt::format("    {} on {} ({}), {} rows\n", util::TerminalSafeText(res.value("title", "")),
                         util::TerminalSafeText(res.value("device", "")),
                         util::TerminalSafeText(res.value("link_type", "")), res.value("rows", json::array()).size());
      for (const auto& row : res.value("rows", json::array())) {
        if (row.contains("average_gbps"))
          out += fmt::format("    {:>12} B  {:>9} Gb/s average\n", row.value("bytes", 0LL), Gb(row, "average_gbps"));
        else if (row.contains("t_typical_us"))
          out += fmt::format("    {:>12} B  {:>9} us typical\n", row.value("bytes", 0LL), Gb(row, "t_typical_us"));
      }
      continue;
    }
    RenderTables(out, res);
  }
  for (const auto& u : r.value("unreachable", json::array()))
    out += fmt::format("  unreachable {}: {}\n", util::TerminalSafeText(u.value("node", "")),
                       util::TerminalSafeText(u.value("reason", "")));
  out += RenderGrades(r.value("grades", json::array()));
  return out;
}

}  // namespace clustermax::bench::net
