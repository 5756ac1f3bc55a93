#include "audit/slurm_fanout.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>

#include <fmt/format.h>

#include "util/slurm_text.h"
#include "util/strings.h"

namespace clustermax::audit {
using nlohmann::json;

namespace {
constexpr const char* kMarker = "CLUSTERMAX-BUNDLE";
// Slurm forwards task output in messages of at most 1024 bytes (SLURM_IO_MAX_MSG_LEN); lines
// shorter than that arrive whole, and --label keeps lines of different tasks from interleaving.
constexpr size_t kChunk = 800;

// States from `sinfo -o %t` a step can run on now.
bool Schedulable(const std::string& state) {
  static const std::set<std::string> ok = {"idle", "mix", "comp", "resv", "plnd", "alloc"};
  return ok.count(state) > 0;
}
}  // namespace

std::vector<std::string> BundleLines(const std::string& node, const host::Bundle& bundle) {
  std::string text = bundle.ToJson().dump(-1, ' ', /*ensure_ascii=*/true);
  size_t count = (text.size() + kChunk - 1) / kChunk;
  std::vector<std::string> out;
  for (size_t i = 0; i < count; ++i) out.push_back(fmt::format("{} {} {} {} {}", kMarker, node, i, count, text.substr(i * kChunk, kChunk)));
  return out;
}

std::vector<host::Bundle> ParseBundleLines(const std::string& text, std::map<std::string, std::string>& errors) {
  struct Parts {
    size_t count = 0;
    std::map<size_t, std::string> chunks;
  };
  std::map<std::string, Parts> by_node;
  for (const auto& raw : util::SplitLines(text)) {
    size_t at = raw.find(kMarker);
    if (at == std::string::npos) continue;
    std::string line = raw.substr(at + std::string(kMarker).size() + 1);
    // node index count chunk (the chunk may contain spaces: split the first three fields only)
    size_t a = line.find(' '), b = a == std::string::npos ? a : line.find(' ', a + 1), c = b == std::string::npos ? b : line.find(' ', b + 1);
    if (c == std::string::npos) continue;
    std::string node = line.substr(0, a);
    auto idx = util::ParseInt(line.substr(a + 1, b - a - 1)), cnt = util::ParseInt(line.substr(b + 1, c - b - 1));
    if (!idx || !cnt || *cnt <= 0 || *idx < 0 || *idx >= *cnt) {
      errors[node] = "malformed bundle line";
      continue;
    }
    Parts& p = by_node[node];
    p.count = static_cast<size_t>(*cnt);
    p.chunks[static_cast<size_t>(*idx)] = line.substr(c + 1);
  }
  std::vector<host::Bundle> out;
  for (auto& [node, p] : by_node) {
    if (p.chunks.size() != p.count) {
      errors[node] = fmt::format("bundle incomplete ({} of {} parts arrived)", p.chunks.size(), p.count);
      continue;
    }
    std::string text_all;
    for (auto& [i, ch] : p.chunks) text_all += ch;
    try {
      out.push_back(host::Bundle::FromJson(json::parse(text_all)));
      if (out.back().manifest.hostname.empty()) out.back().manifest.hostname = node;
    } catch (const std::exception& e) {
      errors[node] = std::string("bundle unreadable: ") + e.what();
    }
  }
  return out;
}

FanOutResult FanOutThroughSlurm(host::Host& login, const SlurmFanOutOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  FanOutResult res;
  auto job = login.GetEnv("SLURM_JOB_ID");
  auto job_nodes = login.GetEnv("SLURM_JOB_NODELIST");
  bool explicit_scope = !o.partition.empty() || !o.nodelist.empty();
  res.inside_allocation = job && !job->empty() && job_nodes && !explicit_scope;

  // Scope and state of every node: sinfo once (a node is listed once per partition: dedupe).
  std::vector<std::string> sinfo = {"sinfo", "-h", "-N", "-o", "%N|%t|%G|%E"};
  if (!o.partition.empty()) sinfo.push_back("--partition=" + o.partition);
  if (res.inside_allocation) sinfo.push_back("--nodes=" + *job_nodes);
  else if (!o.nodelist.empty()) sinfo.push_back("--nodes=" + o.nodelist);
  auto r = login.Run({sinfo, std::chrono::seconds(20)});
  if (r.status != host::IoStatus::kOk || r.exit_code != 0) {
    throw std::runtime_error(fmt::format("sinfo failed ({}): {}", r.status == host::IoStatus::kOk ? "exit " + std::to_string(r.exit_code) : r.error,
                                         util::Ellipsize(util::Trim(r.err + r.out), 300)));
  }
  std::vector<std::string> targets;
  std::set<std::string> seen;
  long long min_gpus = -1;
  for (const auto& line : util::SplitLines(r.out)) {
    auto f = util::Split(line, '|', true);
    if (f.size() < 4 || f[0].empty() || !seen.insert(f[0]).second) continue;
    std::string node = f[0], state = f[1], reason = f[3];
    res.in_scope.push_back(node);
    bool responding = state.find('*') == std::string::npos && state.find('~') == std::string::npos;
    std::string base = state;
    base.erase(std::remove_if(base.begin(), base.end(), [](char c) { return c == '*' || c == '~' || c == '#' || c == '!' || c == '%' || c == '$' || c == '@' || c == '^' || c == '-'; }), base.end());
    if (!responding) {
      res.unreachable.push_back({node, fmt::format("not responding (state {}{})", state, reason == "none" || reason.empty() ? "" : ": " + reason)});
      continue;
    }
    if (!Schedulable(base) || (base == "alloc" && !res.inside_allocation)) {
      res.unreachable.push_back({node, base == "alloc" ? "allocated to other jobs (audit it from inside an allocation)"
                                                      : fmt::format("state {}{}", state, reason == "none" || reason.empty() ? "" : ": " + reason)});
      continue;
    }
    if (o.nodes > 0 && static_cast<int>(targets.size()) >= o.nodes) continue;
    targets.push_back(node);
    long long g = 0;
    for (const auto& e : util::ParseGres(f[2])) {
      if (e.name == "gpu") g += e.count;
    }
    min_gpus = min_gpus < 0 ? g : std::min(min_gpus, g);
  }
  if (o.nodes > 0) {
    // Scope is what was asked for: the first N nodes (the reachable ones first).
    std::vector<std::string> scope = targets;
    for (const auto& u : res.unreachable) {
      if (static_cast<int>(scope.size()) < o.nodes) scope.push_back(u.node);
    }
    res.in_scope = scope;
    res.unreachable.erase(std::remove_if(res.unreachable.begin(), res.unreachable.end(),
                                         [&](const UnreachableNode& u) { return std::find(scope.begin(), scope.end(), u.node) == scope.end(); }),
                          res.unreachable.end());
  }
  if (targets.empty()) {
    res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return res;
  }
  res.gpus_per_node = static_cast<int>(std::max<long long>(min_gpus, 0));

  std::vector<std::string> argv = {"srun", "--nodes=" + std::to_string(targets.size()), "--ntasks=" + std::to_string(targets.size()),
                                   "--ntasks-per-node=1", "--nodelist=" + fmt::format("{}", fmt::join(targets, ",")),
                                   "--job-name=clustermax-audit", "--kill-on-bad-exit=0", "--no-kill", "--label"};
  if (res.inside_allocation) {
    argv.push_back("--overlap");
  } else {
    if (!o.partition.empty()) argv.push_back("--partition=" + o.partition);
    argv.push_back("--time=" + o.time_limit);
    argv.push_back(fmt::format("--immediate={}", static_cast<int>(o.immediate_s)));
  }
  // The node collector runs with the node's GPUs allocated: the step sees them (ConstrainDevices)
  // and the scheduler's CUDA_VISIBLE_DEVICES can be checked.
  if (res.gpus_per_node > 0) argv.push_back(fmt::format("--gres=gpu:{}", res.gpus_per_node));
  if (!o.bcast.empty()) argv.push_back("--bcast=" + o.bcast);
  argv.push_back(o.self_exe);
  argv.push_back("collect");
  argv.push_back("--role=compute");
  argv.push_back(fmt::format("--step-gpus={}", res.gpus_per_node));
  argv.insert(argv.end(), o.collect_args.begin(), o.collect_args.end());
  res.srun_argv = argv;

  auto run = login.Run({argv, std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000)), 1ull << 31});
  std::map<std::string, std::string> errors;
  res.bundles = ParseBundleLines(run.out, errors);
  std::set<std::string> got;
  for (auto& b : res.bundles) {
    b.manifest.role = "compute";
    got.insert(b.manifest.hostname);
  }
  std::string err = std::string(util::Trim(run.err));
  if (run.status != host::IoStatus::kOk || run.exit_code != 0) res.srun_error = util::Ellipsize(err.empty() ? run.error : err, 2000);
  for (const auto& node : targets) {
    if (got.count(node)) continue;
    std::string why;
    if (errors.count(node)) why = errors[node];
    for (const auto& line : util::SplitLines(err)) {
      if (why.empty() && util::Contains(line, node)) why = std::string(util::Trim(line));
    }
    if (why.empty() && run.status == host::IoStatus::kTimeout) why = fmt::format("no evidence before the step timeout ({} s)", o.timeout_s);
    if (why.empty() && !res.srun_error.empty()) why = "srun: " + util::Ellipsize(util::SplitLines(res.srun_error).empty() ? res.srun_error : util::SplitLines(res.srun_error).front(), 300);
    if (why.empty()) why = "no evidence returned";
    res.unreachable.push_back({node, why});
  }
  // Report in the order of the scope.
  std::sort(res.unreachable.begin(), res.unreachable.end(), [&](const UnreachableNode& a, const UnreachableNode& b) {
    return std::find(res.in_scope.begin(), res.in_scope.end(), a.node) < std::find(res.in_scope.begin(), res.in_scope.end(), b.node);
  });
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace clustermax::audit
