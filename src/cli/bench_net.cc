// `clustermax bench net`: the networking phase through Slurm. Each mode is one or more job steps
// (audit/slurm_fanout's RunFramedStep) whose tasks run this binary's `bench net --rank-job JSON`
// (bench/net_bench.h); rank 0, or each pair's first node, frames its result on stdout. The ranks
// find each other through a rendezvous directory on a filesystem the nodes share, which this side
// makes (with its token) before each step and removes after it.

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <set>

#include <fmt/format.h>

#include "audit/slurm_fanout.h"
#include "bench/gpu_bench.h"
#include "bench/net_bench.h"
#include "bench/s3_bench.h"
#include "bench/storage_scaling.h"
#include "bench/workspace.h"
#include "cli/cli.h"
#include "cli/bench_common.h"
#include "host/local_host.h"
#include "util/files.h"
#include "util/slurm_text.h"
#include "util/strings.h"
#include "util/time.h"
#include "util/usage_error.h"

namespace clustermax::cli {
namespace fs = std::filesystem;
using nlohmann::json;
namespace net = bench::net;

namespace {

constexpr const char* kNetMarker = "CLUSTERMAX-NET";

struct NetCli {
  BenchCommon common;
  std::vector<std::string> modes = {"single", "scaling", "fabric-only", "per-rail", "pairwise", "rdma"};
  std::vector<std::string> collectives;
  std::string backend = "auto", min_bytes = "8", max_bytes;  // max: 64M on tcp, 16G on nccl
  double factor = 4;
  int iters = 0, warmup = -1, tasks_per_node = 0, streams = 8, latency_iters = 1000;  // 0/-1: the backend's default
  std::string helper, algo;
  std::vector<std::string> imports;
  double seconds = 3, slow_ratio = 0.7, rank_timeout = 120;
  std::vector<std::string> rails;
  std::string pairing = "auto", rendezvous, rank_job;
  std::string launch = "file";  // how the ranks meet: file (the rendezvous directory) or pmix (srun --mpi=pmix)
  // rdma: the verbs tests per HCA port (bench/rdma.h)
  std::string rdma_bytes = "8M";
  double rdma_seconds = 2;
  int rdma_latency_iters = 1000;
  bool rdma_bidir = false, rdma_gpu = false;
  std::vector<std::string> rdma_devices;
  audit::SlurmFanOutOptions slurm;
  double step_timeout = 0;
  bool no_check = false;
};

// One job step of `tasks` ranks per node: the rendezvous made, the step run, the documents read.
struct Step {
  std::map<std::string, json> docs;  // node -> its framed result
  std::map<std::string, std::string> missing;
  std::string error;
  double seconds = 0;
};

fs::path RendezvousBase(const NetCli& o) {
  if (!o.rendezvous.empty()) return o.rendezvous;
  const char* home = std::getenv("HOME");
  return fs::path(home && *home ? home : "/tmp") / ".clustermax" / "rendezvous";
}

fs::path NewStepDir(const NetCli& o) {
  static int serial = 0;
  fs::path base = RendezvousBase(o);
  try {
    util::CreatePrivateDirectories(base);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format(
        "cannot make the rendezvous directory {} ({}): the ranks meet there, on a filesystem every node shares; "
        "where there is none, --launch pmix",
        base.string(), e.what()));
  }
  return base / fmt::format("{}-{}-{}", util::FormatCompact(std::chrono::system_clock::now()), ::getpid(), ++serial);
}

Step RunStep(host::Host& login, const audit::NodeScope& scope, const std::vector<std::string>& nodes, NetCli& o,
             int tasks_per_node, json job, size_t groups, int gpus_per_node = -1) {
  Step s;
  // TCP ranks launched through PMIx need no directory; NCCL's unique id always goes through one.
  bool pmix_only = o.launch == "pmix" && o.backend != "nccl";
  fs::path dir = pmix_only ? fs::path() : NewStepDir(o);
  // The step's rendezvous (with its token) goes when the step does, also when srun fails.
  struct Remove {
    fs::path dir;
    ~Remove() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } remove{dir};
  if (pmix_only) {
    // nothing to prepare: the ranks exchange their addresses and rank 0's token through PMIx
  } else if (groups == 0) {
    net::PrepareRendezvous(dir);
  } else {
    util::CreatePrivateDirectories(dir);
    for (size_t i = 0; i < groups; ++i) net::PrepareRendezvous(dir / fmt::format("pair-{}", i));
  }
  if (!pmix_only) job["rendezvous"] = dir.string();
  job["timeout_s"] = o.rank_timeout;
  job["backend"] = o.backend;
  job["nodes"] = nodes;
  job["tasks_per_node"] = tasks_per_node;
  job["launch"] = o.launch;
  if (!o.helper.empty()) job["helper"] = o.helper;
  if (!o.algo.empty()) job["algo"] = o.algo;
  audit::SlurmFanOutOptions so = o.slurm;
  so.tasks_per_node = tasks_per_node;
  // PMIx carries the TCP ranks' addresses; NCCL's unique id still goes through the directory.
  if (o.launch == "pmix") so.mpi = "pmix";
  std::vector<std::string> program = {"bench", "net", "--rank-job", job.dump()};
  // NCCL: one GPU per rank, so the step sees them (GRES).
  int gpus = gpus_per_node >= 0 ? gpus_per_node : o.backend == "nccl" ? tasks_per_node : 0;
  audit::FramedStep step =
      audit::RunFramedStep(login, scope, nodes, so, "clustermax-bench-net", program, kNetMarker, gpus);
  s.seconds = step.seconds;
  s.error = step.srun_error;
  s.missing = step.missing;
  for (const auto& [node, doc] : step.documents) {
    try {
      s.docs[node] = util::ParseJsonDocument(doc, "result of " + node);
      s.missing.erase(node);
    } catch (const std::exception& e) {
      s.missing[node] = std::string("result unreadable: ") + e.what();
    }
  }
  return s;
}

json JobBase(const NetCli& o, const std::vector<std::string>& collectives) {
  auto sizes = net::SizeSweep(bench::ParseSize(o.min_bytes), bench::ParseSize(o.max_bytes), o.factor);
  json job = {{"kind", "collectives"}, {"collectives", collectives}, {"iters", o.iters}, {"warmup", o.warmup}};
  job["sizes"] = sizes;
  job["check"] = !o.no_check;
  return job;
}

// The one result of a collectives step (rank 0's), or {"error"} naming what went wrong.
json CollectiveResult(const Step& s, const std::vector<std::string>& nodes) {
  for (const auto& [node, doc] : s.docs) {
    json r = doc;
    r["reported_by"] = node;
    r["step_seconds"] = s.seconds;
    return r;
  }
  std::string why = s.error.empty() ? "no rank reported" : "srun: " + util::Ellipsize(s.error, 400);
  json missing = json::object();
  for (const auto& [node, reason] : s.missing) missing[node] = reason;
  return {{"error", why}, {"nodes", nodes}, {"missing", missing}};
}

double BusbwAtMax(const json& r, const std::string& coll) {
  const json* t = net::FindCollective(r, coll);
  return t ? (*t)["busbw_at_max"].get<double>() : 0.0;
}

void Say(const NetCli& o, const std::string& line) {
  if (!o.common.quiet) std::cerr << "  " << line << "\n";
}

json RunSingle(host::Host& login, const audit::NodeScope& scope, NetCli& o) {
  std::string node = scope.targets.front();
  int tpn = o.backend == "tcp" ? std::max(2, o.tasks_per_node) : o.tasks_per_node;
  Say(o, fmt::format("single: {} ranks on {}", tpn, node));
  auto colls = o.collectives.empty() ? net::Collectives() : o.collectives;
  json r = CollectiveResult(RunStep(login, scope, {node}, o, tpn, JobBase(o, colls), 0), {node});
  r["node"] = node;
  return r;
}

json RunScaling(host::Host& login, const audit::NodeScope& scope, NetCli& o) {
  std::string coll = o.collectives.empty() ? "all_reduce" : o.collectives.front();
  json out = {{"collective", coll}, {"tasks_per_node", o.tasks_per_node}, {"steps", json::array()}};
  double base = 0;
  int base_nodes = 0;
  for (int k : bench::ScalingCounts(static_cast<int>(scope.targets.size()))) {
    if (k * o.tasks_per_node < 2) continue;  // one rank measures nothing
    std::vector<std::string> nodes(scope.targets.begin(), scope.targets.begin() + k);
    Say(o, fmt::format("scaling: {} on {} node(s)", coll, k));
    json r = CollectiveResult(RunStep(login, scope, nodes, o, o.tasks_per_node, JobBase(o, {coll}), 0), nodes);
    json step = {{"nodes", k}, {"ranks", k * o.tasks_per_node}, {"asked", nodes}};
    if (r.contains("error")) {
      step["error"] = r["error"];
      step["missing"] = r.value("missing", json::object());
    } else {
      double bw = BusbwAtMax(r, coll);
      step["busbw_at_max"] = bw;
      step["result"] = r;
      // The base is the smallest multi-node step: one node's busbw is NVLink (or loopback), not
      // the fabric, and would make every fabric look like it scales badly.
      if (base_nodes == 0 && k >= 2 && bw > 0) base = bw, base_nodes = k;
    }
    out["steps"].push_back(step);
  }
  // Efficiency: the largest complete step's busbw over the smallest multi-node step's (busbw is
  // normalised for the rank count, so a fabric that scales keeps it flat).
  const json* last = nullptr;
  for (const auto& st : out["steps"])
    if (st.contains("busbw_at_max")) last = &st;
  if (last && base > 0 && (*last)["nodes"].get<int>() > base_nodes) {
    double eff = (*last)["busbw_at_max"].get<double>() / base;
    out["efficiency"] = std::round(eff * 1000) / 1000;
    out["efficiency_detail"] =
        fmt::format("{} busbw at the largest size: {:.3f} GB/s on {} nodes over {:.3f} on {}", coll,
                    (*last)["busbw_at_max"].get<double>(), (*last)["nodes"].get<int>(), base, base_nodes);
  } else {
    out["why"] = "fewer than two multi-node counts gave a figure";
  }
  return out;
}

json RunFabricOnly(host::Host& login, const audit::NodeScope& scope, NetCli& o) {
  auto colls = o.collectives.empty() ? std::vector<std::string>{"all_reduce"} : o.collectives;
  Say(o, fmt::format("fabric-only: {} on {} node(s), same-node peers through the NIC address", fmt::join(colls, ","),
                     scope.targets.size()));
  json job = JobBase(o, colls);
  job["fabric_only"] = true;
  json r = CollectiveResult(RunStep(login, scope, scope.targets, o, o.tasks_per_node, job, 0), scope.targets);
  r["fabric_only"] = true;
  return r;
}

json RunRails(host::Host& login, const audit::NodeScope& scope, NetCli& o) {
  json out = {{"rails", json::array()}};
  if (o.backend == "nccl" && o.rails.empty()) {
    // NCCL's rails are HCAs (mlx5_0 ...), named as the compute nodes name them; this host cannot tell.
    out["why"] = "per-rail with NCCL needs the HCAs named: --rails mlx5_0,mlx5_1,...";
    return out;
  }
  // TCP rails are interfaces, as this host names them (--rails when the compute nodes differ).
  std::vector<std::string> rails = o.rails.empty() ? net::UpInterfaces() : o.rails;
  if (rails.empty()) {
    out["why"] = "no network interface is up with an IPv4 address here (name them with --rails)";
    return out;
  }
  double lo = 1e300, hi = 0;
  std::string lo_rail, hi_rail;
  for (const auto& rail : rails) {
    Say(o, fmt::format("per-rail: all_reduce over {} on {} node(s)", rail, scope.targets.size()));
    json job = JobBase(o, {"all_reduce"});
    job["rail"] = rail;
    json r = CollectiveResult(RunStep(login, scope, scope.targets, o, o.tasks_per_node, job, 0), scope.targets);
    json entry = {{"rail", rail}};
    if (r.contains("error")) {
      entry["error"] = r["error"];
    } else {
      double bw = BusbwAtMax(r, "all_reduce");
      entry["busbw_at_max"] = bw;
      entry["result"] = r;
      if (bw < lo) lo = bw, lo_rail = rail;
      if (bw > hi) hi = bw, hi_rail = rail;
    }
    out["rails"].push_back(entry);
  }
  if (hi > 0 && out["rails"].size() >= 2) {
    out["spread"] = std::round(lo / hi * 1000) / 1000;
    out["spread_detail"] = fmt::format("slowest rail {} {:.3f} GB/s over fastest {} {:.3f}", lo_rail, lo, hi_rail, hi);
  } else {
    out["why"] = rails.size() < 2 ? "one rail: nothing to compare it with" : "fewer than two rails gave a figure";
  }
  return out;
}

// `scontrol show topology`: each node's leaf switch (level 0), when the scheduler knows them.
std::map<std::string, std::string> LeafSwitches(host::Host& login) {
  std::map<std::string, std::string> leaf;
  auto res = login.Run({{"scontrol", "show", "topology"}, std::chrono::seconds(10)});
  if (res.status != host::IoStatus::kOk || res.exit_code != 0) return leaf;
  for (const auto& rec : util::ParseScontrolRecords(res.out)) {
    auto lvl = rec.find("Level"), name = rec.find("SwitchName"), nodes = rec.find("Nodes");
    if (lvl == rec.end() || lvl->second != "0" || name == rec.end() || nodes == rec.end()) continue;
    if (auto list = util::ExpandHostlist(nodes->second))
      for (const auto& n : *list) leaf.emplace(n, name->second);
  }
  return leaf;
}

// One round of pairs as a step: every node of the round runs one task; each pair's first node
// reports. Figures by pair.
std::vector<json> RunPairRound(host::Host& login, const audit::NodeScope& scope, NetCli& o,
                               const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::vector<std::string> nodes;
  json jp = json::array();
  for (const auto& [a, b] : pairs) {
    nodes.push_back(a);
    nodes.push_back(b);
    jp.push_back({a, b});
  }
  json job = {{"kind", "pairs"},
              {"pairs", jp},
              {"streams", o.streams},
              {"seconds", o.seconds},
              {"latency_iters", o.latency_iters}};
  int tpn = 1;
  if (o.backend == "nccl") {
    // Each pair's GPUs run one all_reduce job at the largest size, NCCL_ALGO=RING unless --algo
    // says otherwise (on two nodes Tree and NVLSTree inflate busbw, performance.md 5.4).
    job["sizes"] = {bench::ParseSize(o.max_bytes)};
    job["iters"] = o.iters;
    job["warmup"] = o.warmup;
    job["check"] = !o.no_check;
    job["algo"] = "RING";
    tpn = o.tasks_per_node;
  }
  Step s = RunStep(login, scope, nodes, o, tpn, job, pairs.size());
  std::vector<json> out;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& [a, b] = pairs[i];
    json fig = {{"a", a}, {"b", b}};
    if (auto d = s.docs.find(a); d != s.docs.end()) {
      if (d->second.contains("error")) {
        fig["error"] = d->second["error"];
      } else {
        for (const char* k : {"a_to_b_gbps", "b_to_a_gbps", "latency_p50_us", "latency_p99_us", "streams", "transport",
                              "busbw", "wrong", "nccl", "met_through"})
          if (d->second.contains(k)) fig[k] = d->second[k];
        fig["gbps"] = std::min(fig.value("a_to_b_gbps", 0.0), fig.value("b_to_a_gbps", 0.0));
      }
    } else {
      std::string why = s.missing.count(a) ? s.missing[a] : s.missing.count(b) ? s.missing[b] : "no result";
      fig["error"] = why;
    }
    out.push_back(fig);
  }
  return out;
}

json RunPairwise(host::Host& login, const audit::NodeScope& scope, NetCli& o) {
  json out = {{"test", o.backend == "nccl" ? "nccl-all_reduce" : "tcp-streams"},
              {"streams", o.streams},
              {"seconds", o.seconds},
              {"slow_ratio", o.slow_ratio}};
  std::vector<std::string> nodes = scope.targets;
  if (nodes.size() < 2) {
    out["error"] = "pairwise needs two nodes or more";
    return out;
  }
  auto leaf = LeafSwitches(login);
  // Topology-aware: neighbours on the ring share a leaf where they can.
  if (!leaf.empty())
    std::stable_sort(nodes.begin(), nodes.end(), [&](const std::string& x, const std::string& y) {
      return leaf.count(x) && leaf.count(y) ? leaf[x] < leaf[y] : leaf.count(x) > leaf.count(y);
    });
  bool all = o.pairing == "all" || (o.pairing == "auto" && nodes.size() <= 16);
  out["pairing"] = all ? "all" : "quick";
  auto rounds = net::PairRounds(static_cast<int>(nodes.size()), all);
  std::vector<json> figures;
  int ri = 0;
  for (const auto& round : rounds) {
    std::vector<std::pair<std::string, std::string>> named;
    for (const auto& [i, j] : round) named.emplace_back(nodes[i], nodes[j]);
    Say(o, fmt::format("pairwise: round {} of {}, {} pair(s)", ++ri, rounds.size(), named.size()));
    for (auto& f : RunPairRound(login, scope, o, named)) {
      f["round"] = ri;
      figures.push_back(std::move(f));
    }
  }
  auto scope_of = [&](const std::string& a, const std::string& b) -> std::string {
    if (!leaf.count(a) || !leaf.count(b)) return "unknown";
    return leaf[a] == leaf[b] ? "same-leaf" : "across-leaves";
  };
  std::vector<net::PairFigure> pf;
  // A pair that failed (a rank never appeared, NCCL errored, the step timed out) counts as 0 Gb/s:
  // a dead link or node must be the slowest, not left out of the search.
  auto figure = [](const json& f) {
    return f.contains("gbps") && f["gbps"].is_number() ? f["gbps"].get<double>() : 0.0;
  };
  for (auto& f : figures) {
    f["scope"] = scope_of(f["a"], f["b"]);
    pf.push_back({f["a"], f["b"], figure(f)});
  }
  auto a = net::AnalyzePairs(pf, o.slow_ratio);
  for (auto& f : figures)
    for (const auto& [x, y] : a.slow_pairs)
      if (f["a"] == x && f["b"] == y) f["slow"] = true;
  out["pairs"] = figures;
  out["reference_gbps"] = a.reference_gbps;
  // Each node: the median of its pairs, and how many of them were slow.
  json per = json::array();
  for (const auto& np : net::SummarizeNodes(nodes, pf, a)) {
    if (np.pairs == 0) {
      per.push_back({{"node", np.node}, {"pairs", 0}});
      continue;
    }
    per.push_back(
        {{"node", np.node}, {"pairs", np.pairs}, {"slow_pairs", np.slow_pairs}, {"median_gbps", np.median_gbps}});
    if (leaf.count(np.node)) per.back()["leaf"] = leaf[np.node];
  }
  out["nodes"] = per;
  // Second pass: suspects against known-good nodes.
  std::vector<net::PairFigure> rf;
  json retests = json::array();
  for (const auto& round : net::RetestRounds(a)) {
    Say(o, fmt::format("pairwise: retest of {} pair(s) against known-good nodes", round.size()));
    for (auto& f : RunPairRound(login, scope, o, round)) {
      rf.push_back({f["a"], f["b"], figure(f)});
      retests.push_back(std::move(f));
    }
  }
  out["retests"] = retests;
  std::vector<std::string> transient;
  json culprits = json::array();
  for (const auto& c : net::Judge(a, rf, o.slow_ratio, &transient))
    culprits.push_back({{"kind", c.kind}, {"name", c.name}, {"why", c.why}});
  out["culprits"] = culprits;
  out["transient"] = transient;
  return out;
}

// Verbs per HCA port, node against node: a ring of pairs (each node with its two neighbours), so an
// HCA slow with both partners is told from a slow peer. One task per node; each pair's TCP comm
// carries the queue pairs' addresses.
json RunRdma(host::Host& login, const audit::NodeScope& scope, NetCli& o) {
  json opts = {
      {"bytes", bench::ParseSize(o.rdma_bytes)}, {"seconds", o.rdma_seconds}, {"latency_iters", o.rdma_latency_iters},
      {"bidirectional", o.rdma_bidir},           {"gpu_memory", o.rdma_gpu},  {"devices", o.rdma_devices}};
  std::vector<std::string> nodes = scope.targets;
  if (nodes.size() < 2)
    return {{"why", "rdma needs two nodes or more (each HCA port against its peer on another node)"},
            {"options", opts}};
  std::vector<json> results;
  auto rounds = net::PairRounds(static_cast<int>(nodes.size()), false);
  int ri = 0;
  for (const auto& round : rounds) {
    if (bench::Cancelled()) break;
    std::vector<std::string> step_nodes;
    json jp = json::array();
    for (const auto& [i, j] : round) {
      step_nodes.push_back(nodes[i]);
      step_nodes.push_back(nodes[j]);
      jp.push_back({nodes[i], nodes[j]});
    }
    Say(o, fmt::format("rdma: round {} of {}, {} pair(s), every HCA port", ++ri, rounds.size(), round.size()));
    json job = {{"kind", "rdma"}, {"pairs", jp}, {"rdma", opts}};
    // --rdma-gpu: every GPU of the node, so each HCA can use the one nearest to it. The step lasts
    // as long as its slowest pair: up to 16 ports, each three timed tests and a stuck one.
    NetCli ro = o;
    ro.slurm.timeout_s = std::max(o.slurm.timeout_s, 16 * (4 * o.rdma_seconds + 60) + o.rank_timeout);
    Step s = RunStep(login, scope, step_nodes, ro, 1, job, round.size(), o.rdma_gpu ? scope.gpus_per_node : 0);
    for (const auto& [i, j] : round) {
      const std::string &a = nodes[i], &b = nodes[j];
      json r;
      if (auto d = s.docs.find(a); d != s.docs.end()) {
        r = d->second;
      } else {
        std::string why = s.missing.count(a) ? s.missing[a] : s.missing.count(b) ? s.missing[b] : s.error;
        r = {{"error", why.empty() ? "no result" : why}};
      }
      r["a"] = a;
      r["b"] = b;
      r["round"] = ri;
      results.push_back(std::move(r));
    }
  }
  json out = net::SummarizeRdma(results);
  out["options"] = opts;
  return out;
}

int RunRank(const NetCli& o) {
  return RunRankTask(o.rank_job, "bench net", kNetMarker,
                     [](const json& job, const net::RankInfo& me) { return net::RunRankJob(job, me); });
}

// `--import`: output files users already have, read into the same schema and graded.
int RunImport(NetCli& o) {
  CheckBenchOut(o.common, "net");
  auto started = std::chrono::system_clock::now();
  json result = {{"kind", "clustermax.bench.net"}, {"schema_version", 1}, {"backend", "import"}};
  result["imported"] = json::array();
  for (const auto& f : o.imports) {
    auto text = util::ReadLocalFile(f, 256u << 20);
    if (!text) throw UsageError(fmt::format("--import: cannot read {}", f));
    result["imported"].push_back(net::ImportFile(fs::path(f).filename().string(), *text));
  }
  result["host"] = util::Hostname();
  result["started"] = util::FormatRfc3339(started);
  result["seconds"] = 0;
  const BenchCommon& c = o.common;
  return FinishBench(std::move(result), c, "net", net::RenderNet,
                     [&c](const json& x) { return bench::Grade(net::NetMetrics(x), BenchBars(c)); });
}

int RunNet(NetCli& o) {
  if (!o.rank_job.empty()) return RunRank(o);
  if (!o.imports.empty()) return RunImport(o);
  for (const auto& m : o.modes) {
    static const std::set<std::string> known = {"single", "scaling", "fabric-only", "per-rail", "pairwise", "rdma"};
    if (!known.count(m)) throw UsageError(fmt::format("--modes: unknown mode '{}'", m));
  }
  for (const auto& c : o.collectives) {
    const auto& all = net::Collectives();
    if (std::find(all.begin(), all.end(), c) == all.end())
      throw UsageError(fmt::format("--collectives: unknown collective '{}' (known: {})", c, fmt::join(all, " ")));
  }
  // One work request carries the message: verbs' length is 32 bits, and HCAs take at most 2 GiB.
  if (uint64_t b = bench::ParseSize(o.rdma_bytes); b < 1 || b > (1ull << 30))
    throw UsageError("--rdma-bytes: from 1 byte to 1G");
  CheckBenchOut(o.common, "net");
  host::LocalHost login;
  o.slurm.self_exe = util::SelfExe();
  if (o.step_timeout > 0) o.slurm.timeout_s = o.step_timeout;
  audit::NodeScope scope = audit::SelectNodes(login, o.slurm);
  // auto: NCCL where the nodes have GPUs (GRES) and the GPU helper is here, else TCP.
  if (o.backend == "auto")
    o.backend = scope.gpus_per_node > 0 && !bench::FindGpuHelper(o.helper).empty() ? "nccl" : "tcp";
  bool nccl = o.backend == "nccl";
  if (o.max_bytes.empty()) o.max_bytes = nccl ? "16G" : "64M";
  if (o.iters <= 0) o.iters = nccl ? 20 : 5;
  if (o.warmup < 0) o.warmup = nccl ? 5 : 1;
  if (o.tasks_per_node <= 0) o.tasks_per_node = nccl ? std::max(1, scope.gpus_per_node) : 1;
  // An NCCL sweep to 16 GiB with every collective takes minutes, not seconds.
  if (o.step_timeout <= 0 && nccl) o.slurm.timeout_s = 1800;
  net::SizeSweep(bench::ParseSize(o.min_bytes), bench::ParseSize(o.max_bytes), o.factor);  // throws early
  RequireTargets(scope, "bench net");
  bench::InstallCancelHandlers();
  auto started = std::chrono::system_clock::now();
  auto t0 = std::chrono::steady_clock::now();
  json result = {{"kind", "clustermax.bench.net"}, {"schema_version", 1}, {"backend", o.backend}};
  result["options"] = {{"modes", o.modes},
                       {"collectives", o.collectives},
                       {"min_bytes", bench::ParseSize(o.min_bytes)},
                       {"max_bytes", bench::ParseSize(o.max_bytes)},
                       {"factor", o.factor},
                       {"iters", o.iters},
                       {"warmup", o.warmup},
                       {"tasks_per_node", o.tasks_per_node},
                       {"launch", o.launch},
                       {"nodes_in_scope", scope.in_scope},
                       {"inside_allocation", scope.inside_allocation}};
  auto want = [&](const char* m) { return std::find(o.modes.begin(), o.modes.end(), m) != o.modes.end(); };
  if (want("single") && !bench::Cancelled()) result["single"] = RunSingle(login, scope, o);
  if (want("scaling") && !bench::Cancelled()) result["scaling"] = RunScaling(login, scope, o);
  if (want("fabric-only") && !bench::Cancelled()) result["fabric_only"] = RunFabricOnly(login, scope, o);
  if (want("per-rail") && !bench::Cancelled()) result["rails"] = RunRails(login, scope, o);
  if (want("pairwise") && !bench::Cancelled()) result["pairwise"] = RunPairwise(login, scope, o);
  if (want("rdma") && !bench::Cancelled()) result["rdma"] = RunRdma(login, scope, o);
  StampFleetResult(result, started, t0, scope.unreachable);
  const BenchCommon& c = o.common;
  return FinishBench(std::move(result), c, "net", net::RenderNet,
                     [&c](const json& x) { return bench::Grade(net::NetMetrics(x), BenchBars(c)); });
}

}  // namespace

void AddNetCommand(CLI::App* parent, Commands& table) {
  auto o = std::make_shared<NetCli>();
  auto* cmd = parent->add_subcommand(
      "net",
      "Networking through Slurm: collectives through NCCL or TCP (single node, scaling, fabric-only, per rail), a "
      "pairwise search that names the slow node or link, and RDMA write/read/latency per HCA port over verbs");
  cmd->add_option(
         "--backend", o->backend,
         "auto (nccl on GPU nodes with the GPU helper, else tcp), nccl (one rank per GPU through clustermax-gpu), "
         "tcp (host sockets)")
      ->check(CLI::IsMember({"auto", "nccl", "tcp"}));
  cmd->add_option("--algo", o->algo, "nccl: NCCL_ALGO for every run (default: NCCL's choice; RING for pairs)");
  cmd->add_option("--helper", o->helper, "nccl: path of clustermax-gpu (default: next to this binary)");
  cmd->add_option("--modes", o->modes, "single scaling fabric-only per-rail pairwise rdma (default: all)")
      ->delimiter(',');
  cmd->add_option(
         "--collectives", o->collectives,
         fmt::format("Collectives: {} (single: all; other modes: all_reduce)", fmt::join(net::Collectives(), " ")))
      ->delimiter(',');
  cmd->add_option("--min-bytes", o->min_bytes, "Smallest size (nccl-tests -b), e.g. 8");
  cmd->add_option("--max-bytes", o->max_bytes, "Largest size (nccl-tests -e; default 64M on tcp, 16G on nccl)");
  cmd->add_option("--factor", o->factor, "Size multiplier (nccl-tests -f)");
  cmd->add_option("--iters", o->iters, "Timed iterations per size (nccl-tests -n; default 5 on tcp, 20 on nccl)");
  cmd->add_option("--warmup", o->warmup, "Warm-up iterations per size (nccl-tests -w; default 1 on tcp, 5 on nccl)");
  cmd->add_flag("--no-check", o->no_check, "Do not verify the data after each size (nccl-tests -c 0)");
  cmd->add_option("--tasks-per-node", o->tasks_per_node,
                  "Ranks per node (default: tcp 1, at least 2 on one node; nccl one per GPU)");
  cmd->add_option(
         "--rails", o->rails,
         "per-rail, one run each: tcp interfaces (default: those up on this host) or nccl HCAs (mlx5_0,...; required)")
      ->delimiter(',');
  cmd->add_option("--streams", o->streams, "pairwise: parallel TCP streams per direction (iperf3 -P)");
  cmd->add_option("--seconds", o->seconds, "pairwise: seconds per direction (iperf3 -t)");
  cmd->add_option("--latency-iters", o->latency_iters, "pairwise: ping-pong round trips for the latency");
  cmd->add_option("--pairing", o->pairing,
                  "pairwise: all (every pair), quick (each node with two), auto (all up to 16 nodes)")
      ->check(CLI::IsMember({"auto", "all", "quick"}));
  cmd->add_option("--slow-ratio", o->slow_ratio, "pairwise: a pair below this share of the fleet reference is slow");
  cmd->add_option(
      "--rendezvous", o->rendezvous,
      "Directory on a filesystem every node shares, where ranks find each other (default ~/.clustermax/rendezvous)");
  cmd->add_option("--launch", o->launch,
                  "How the ranks find each other: file (the --rendezvous directory, default) or pmix (srun --mpi=pmix: "
                  "the step's PMIx, no shared filesystem needed for tcp; NCCL's unique id still uses the directory)")
      ->check(CLI::IsMember({"file", "pmix"}));
  cmd->add_option("--rank-timeout", o->rank_timeout, "Seconds a rank waits for its peers or for progress");
  cmd->add_option("--rdma-bytes", o->rdma_bytes, "rdma: message size of the bandwidth tests (ib_write_bw -s)");
  cmd->add_option("--rdma-seconds", o->rdma_seconds, "rdma: seconds per bandwidth test and HCA port");
  cmd->add_option("--rdma-latency-iters", o->rdma_latency_iters, "rdma: write ping-pongs per port (ib_write_lat -n)");
  cmd->add_flag("--rdma-bidir", o->rdma_bidir, "rdma: also both directions at once (ib_write_bw -b)");
  cmd->add_flag("--rdma-gpu", o->rdma_gpu,
                "rdma: bandwidth buffers in the GPU nearest each HCA (GPUDirect: needs nvidia_peermem and libcuda)");
  cmd->add_option("--rdma-devices", o->rdma_devices, "rdma: only these HCAs (default: every active port)")
      ->delimiter(',');
  cmd->add_option("--partition", o->slurm.partition, "The partition to take nodes from");
  cmd->add_option("--nodelist", o->slurm.nodelist, "These nodes (Slurm hostlist)");
  cmd->add_option("--nodes", o->slurm.nodes, "At most this many nodes");
  cmd->add_option("--time", o->slurm.time_limit, "srun --time per step (minutes) when asking for an allocation");
  cmd->add_option("--step-timeout", o->step_timeout,
                  "Seconds before a step is stopped (default 300 on tcp, 1800 on nccl)");
  cmd->add_option("--bcast", o->slurm.bcast, "Copy this binary to the nodes first (srun --bcast=PATH)");
  cmd->add_option("--import", o->imports,
                  "Read these nccl-tests/rccl-tests or perftest output files into the result and grade them (no run)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--rank-job", o->rank_job, "(internal) the job of one rank of a step")->group("");
  AddBenchCommon(cmd, o->common);
  table.Add(cmd, [o] { return RunNet(*o); });
}

}  // namespace clustermax::cli
