#include "audit/slurm_fanout.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "util/compress.h"
#include "util/files.h"
#include "util/line_frames.h"
#include "util/progress.h"
#include "util/slurm_text.h"
#include "util/strings.h"
#include "util/work_queue.h"

namespace clustermax::audit {
using nlohmann::json;

namespace {
constexpr const char* kMarker = "CLUSTERMAX-BUNDLE";
// Slurm forwards task output in messages of at most 1024 bytes (SLURM_IO_MAX_MSG_LEN); lines
// shorter than that arrive whole, and --label keeps lines of different tasks from interleaving.
constexpr size_t kChunk = 800;
// A bundle on the wire: "z1:" and the base64 of its JSON deflated (about a quarter of the JSON).
constexpr const char* kDeflated = "z1:";

// States from `sinfo -o %t` a step can run on now.
bool Schedulable(const std::string& state) {
  static const std::set<std::string> ok = {"idle", "mix", "comp", "resv", "plnd", "alloc"};
  return ok.count(state) > 0;
}
}  // namespace

std::vector<std::string> BundleLines(const std::string& node, const host::Bundle& bundle) {
  return util::FrameLines(
      kMarker, node,
      std::string(kDeflated) + util::Base64Encode(util::Deflate(bundle.ToJson().dump(-1, ' ', /*ensure_ascii=*/true))),
      kChunk);
}

std::string BundleText(std::string document) {
  if (document.rfind(kDeflated, 0) != 0) return document;  // sent as JSON (a node running an older binary)
  auto raw = util::Base64Decode(std::string_view(document).substr(std::strlen(kDeflated)));
  if (!raw) throw std::runtime_error("deflated document is not base64");
  return util::Inflate(*raw, util::kMaxDocumentBytes);
}

std::map<std::string, std::string> BundleDocuments(std::string_view text, std::map<std::string, std::string>& errors) {
  return util::UnframeLines(kMarker, text, errors);
}

std::vector<host::Bundle> ParseBundleLines(const std::string& text, std::map<std::string, std::string>& errors) {
  std::map<std::string, std::string> frame_errors;
  std::vector<host::Bundle> out;
  for (auto& [node, doc] : util::UnframeLines(kMarker, text, frame_errors)) {
    try {
      out.push_back(host::Bundle::Parse(BundleText(std::move(doc))));
      if (out.back().manifest.hostname.empty()) out.back().manifest.hostname = node;
    } catch (const std::exception& e) {
      errors[node] = std::string("bundle unreadable: ") + e.what();
    }
  }
  for (const auto& [node, why] : frame_errors) errors[node] = "bundle " + why;
  return out;
}

bool ReadNodeDocument(const std::string& node, std::string document, host::Bundle& bundle, std::string& text,
                      std::string& error) {
  try {
    text = BundleText(std::move(document));
    bundle = host::Bundle::Parse(std::string(text));  // the reader parses in place: a copy
  } catch (const std::exception& e) {
    error = std::string("bundle unreadable: ") + e.what();
    return false;
  }
  // The node is the one the scheduler ran the collector on: a bundle cannot name itself another.
  if (bundle.manifest.hostname != node || bundle.manifest.role != "compute") {
    bundle.manifest.hostname = node;
    bundle.manifest.role = "compute";
    text = bundle.ToJson().dump(-1, ' ', /*ensure_ascii=*/true);
  }
  return true;
}

NodeScope SelectNodes(host::Host& login, const SlurmFanOutOptions& o) {
  NodeScope res;
  auto job = login.GetEnv("SLURM_JOB_ID");
  auto job_nodes = login.GetEnv("SLURM_JOB_NODELIST");
  bool explicit_scope = !o.partition.empty() || !o.nodelist.empty();
  res.inside_allocation = job && !job->empty() && job_nodes && !explicit_scope;

  // Scope and state of every node: sinfo once (a node is listed once per partition: dedupe).
  std::vector<std::string> sinfo = {"sinfo", "-h", "-N", "-o", "%N|%t|%G|%E"};
  if (!o.partition.empty()) sinfo.push_back("--partition=" + o.partition);
  if (res.inside_allocation)
    sinfo.push_back("--nodes=" + *job_nodes);
  else if (!o.nodelist.empty())
    sinfo.push_back("--nodes=" + o.nodelist);
  auto r = login.Run({sinfo, std::chrono::seconds(20)});
  if (r.status != host::IoStatus::kOk || r.exit_code != 0) {
    throw std::runtime_error(fmt::format(
        "sinfo failed ({}): {}", r.status == host::IoStatus::kOk ? "exit " + std::to_string(r.exit_code) : r.error,
        util::Ellipsize(util::Trim(r.err + r.out), 300)));
  }
  std::set<std::string> seen;
  long long min_gpus = -1;
  for (const auto& line : util::SplitLines(r.out)) {
    auto f = util::Split(line, '|', true);
    if (f.size() < 4 || f[0].empty() || !seen.insert(f[0]).second) continue;
    std::string node = f[0], state = f[1], reason = f[3];
    res.in_scope.push_back(node);
    bool responding = state.find('*') == std::string::npos && state.find('~') == std::string::npos;
    std::string base = state;
    base.erase(std::remove_if(base.begin(), base.end(),
                              [](char c) {
                                return c == '*' || c == '~' || c == '#' || c == '!' || c == '%' || c == '$' ||
                                       c == '@' || c == '^' || c == '-';
                              }),
               base.end());
    if (!responding) {
      res.unreachable.push_back({node, fmt::format("not responding (state {}{})", state,
                                                   reason == "none" || reason.empty() ? "" : ": " + reason)});
      continue;
    }
    if (!Schedulable(base) || (base == "alloc" && !res.inside_allocation)) {
      res.unreachable.push_back(
          {node, base == "alloc"
                     ? "allocated to other jobs (audit it from inside an allocation)"
                     : fmt::format("state {}{}", state, reason == "none" || reason.empty() ? "" : ": " + reason)});
      continue;
    }
    if (o.nodes > 0 && static_cast<int>(res.targets.size()) >= o.nodes) continue;
    res.targets.push_back(node);
    long long g = 0;
    for (const auto& e : util::ParseGres(f[2])) {
      if (e.name == "gpu") g += e.count;
    }
    min_gpus = min_gpus < 0 ? g : std::min(min_gpus, g);
  }
  if (o.nodes > 0) {
    // Scope is what was asked for: the first N nodes (the reachable ones first).
    std::vector<std::string> scope = res.targets;
    for (const auto& u : res.unreachable) {
      if (static_cast<int>(scope.size()) < o.nodes) scope.push_back(u.node);
    }
    res.in_scope = scope;
    res.unreachable.erase(std::remove_if(res.unreachable.begin(), res.unreachable.end(),
                                         [&](const UnreachableNode& u) {
                                           return std::find(scope.begin(), scope.end(), u.node) == scope.end();
                                         }),
                          res.unreachable.end());
  }
  res.gpus_per_node = static_cast<int>(std::max<long long>(min_gpus, 0));
  return res;
}

FramedStep RunFramedStep(host::Host& login, const NodeScope& scope, const std::vector<std::string>& nodes,
                         const SlurmFanOutOptions& o, const std::string& job_name,
                         const std::vector<std::string>& program, const std::string& marker, int gpus_per_node,
                         const DocumentSink& on_document) {
  auto t0 = std::chrono::steady_clock::now();
  FramedStep res;
  std::vector<std::string> argv = {"srun",
                                   "--nodes=" + std::to_string(nodes.size()),
                                   "--ntasks=" + std::to_string(nodes.size() * std::max(1, o.tasks_per_node)),
                                   "--ntasks-per-node=" + std::to_string(std::max(1, o.tasks_per_node)),
                                   "--nodelist=" + fmt::format("{}", fmt::join(nodes, ",")),
                                   "--job-name=" + job_name,
                                   "--kill-on-bad-exit=0",
                                   "--no-kill",
                                   "--label"};
  if (!o.jobid.empty()) {
    argv.push_back("--jobid=" + o.jobid);
    argv.push_back("--overlap");
  } else if (scope.inside_allocation) {
    argv.push_back("--overlap");
  } else {
    if (!o.partition.empty()) argv.push_back("--partition=" + o.partition);
    argv.push_back("--time=" + o.time_limit);
    argv.push_back(fmt::format("--immediate={}", static_cast<int>(o.immediate_s)));
  }
  if (gpus_per_node > 0) argv.push_back(fmt::format("--gres=gpu:{}", gpus_per_node));
  if (!o.bcast.empty()) argv.push_back("--bcast=" + o.bcast);
  if (!o.mpi.empty()) argv.push_back("--mpi=" + o.mpi);
  argv.push_back(o.self_exe);
  argv.insert(argv.end(), program.begin(), program.end());
  res.argv = argv;

  // The nodes' documents arrive byte-exact: each node redacted its own evidence before sending it.
  // srun's output is read as it arrives and not kept: each document leaves as soon as it is whole.
  host::CommandSpec spec{argv, std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000)), 1ull << 31,
                         /*redact=*/false};
  spec.keep_stdout = false;
  spec.stop_when = o.stop_when;
  // Not SIGTERM: srun answers it by SIGKILLing the tasks. SIGUSR1 it forwards to them, and a task
  // with the cancel handlers (util/cancel.h) stops and sends what it has (a drill puts its fault
  // back first).
  spec.stop_signal = SIGUSR1;
  std::set<std::string> wanted(nodes.begin(), nodes.end()), got;
  std::exception_ptr sink_error;
  util::FrameReader reader(marker, [&](const std::string& key, std::string doc) {
    if (!wanted.count(key)) {
      ++res.strangers;
      return;
    }
    got.insert(key);
    if (!on_document) {
      res.documents[key] = std::move(doc);
      return;
    }
    if (sink_error) return;
    try {
      on_document(key, std::move(doc));
    } catch (...) {
      sink_error = std::current_exception();  // rethrown once srun is done: never out of the read loop
    }
  });
  // On a terminal, the nodes that answered so far (a node has answered when the last part of its
  // document arrived) and the time left; nothing otherwise.
  util::Progress progress;
  bool streamed = false;
  spec.on_stdout = [&](std::string_view piece) {
    streamed = true;
    reader.Feed(piece);
    if (progress.tty())
      progress.Count(got.size(), nodes.size(),
                     fmt::format("nodes answered (the step ends within {})", util::FormatDuration(o.timeout_s)));
  };
  auto run = login.Run(spec);
  if (!streamed) reader.Feed(run.out);  // a host that answers at the end (a replayed one)
  reader.Finish();
  progress.Finish();
  if (sink_error) std::rethrow_exception(sink_error);
  const auto& errors = reader.errors();
  std::string err = std::string(util::Trim(run.err));
  if (run.status != host::IoStatus::kOk || run.exit_code != 0)
    res.srun_error = util::Ellipsize(err.empty() ? run.error : err, 2000);
  for (const auto& node : nodes) {
    if (got.count(node)) continue;
    std::string why;
    if (auto e = errors.find(node); e != errors.end()) why = e->second;
    for (const auto& line : util::SplitLines(err)) {
      if (why.empty() && util::Contains(line, node)) why = std::string(util::Trim(line));
    }
    if (why.empty() && run.status == host::IoStatus::kTimeout)
      why = fmt::format("returned nothing before the step timeout ({} s)", o.timeout_s);
    if (why.empty() && !res.srun_error.empty())
      why = "srun: " + util::Ellipsize(util::SplitLines(res.srun_error).empty()
                                           ? res.srun_error
                                           : util::SplitLines(res.srun_error).front(),
                                       300);
    if (why.empty()) why = "returned nothing";
    res.missing[node] = why;
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

FanOutResult FanOutThroughSlurm(host::Host& login, const SlurmFanOutOptions& o, const BundleStream& stream) {
  auto t0 = std::chrono::steady_clock::now();
  FanOutResult res;
  NodeScope scope = SelectNodes(login, o);
  res.inside_allocation = scope.inside_allocation;
  res.in_scope = scope.in_scope;
  res.unreachable = scope.unreachable;
  res.gpus_per_node = scope.gpus_per_node;
  std::vector<std::string> targets = scope.targets;
  std::sort(targets.begin(), targets.end());
  if (stream.on_targets) stream.on_targets(targets);
  if (!targets.empty()) {
    std::map<std::string, size_t> index;
    for (size_t i = 0; i < targets.size(); ++i) index.emplace(targets[i], i);
    // The node collector runs with the node's GPUs allocated: the step sees them (ConstrainDevices)
    // and the scheduler's CUDA_VISIBLE_DEVICES can be checked.
    std::vector<std::string> program = {"collect", "--role=compute", fmt::format("--step-gpus={}", res.gpus_per_node)};
    program.insert(program.end(), o.collect_args.begin(), o.collect_args.end());
    std::mutex mu;
    util::WorkQueue workers(stream.workers, 2 * static_cast<size_t>(std::max(1u, stream.workers)));
    auto read = [&](const std::string& node, std::string doc) {
      std::string text, error;
      host::Bundle b;
      if (!ReadNodeDocument(node, std::move(doc), b, text, error)) {
        std::lock_guard lock(mu);
        res.unreachable.push_back({node, error});
        return;
      }
      stream.on_bundle(index.at(node), std::move(b), text);
    };
    FramedStep step =
        RunFramedStep(login, scope, scope.targets, o, "clustermax-audit", program, kMarker, res.gpus_per_node,
                      [&](const std::string& node, std::string doc) {
                        workers.Push([&read, node, doc = std::move(doc)]() mutable { read(node, std::move(doc)); });
                      });
    workers.Finish();
    res.srun_argv = step.argv;
    res.srun_error = step.srun_error;
    res.strangers = step.strangers;
    for (const auto& [node, why] : step.missing) res.unreachable.push_back({node, why});
  }
  res.SortUnreachableByScope();
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

void FanOutResult::SortUnreachableByScope() {
  std::map<std::string, size_t> place;
  for (size_t i = 0; i < in_scope.size(); ++i) place.emplace(in_scope[i], i);
  auto at = [&](const std::string& node) {
    auto it = place.find(node);
    return it == place.end() ? place.size() : it->second;
  };
  std::stable_sort(unreachable.begin(), unreachable.end(),
                   [&](const UnreachableNode& a, const UnreachableNode& b) { return at(a.node) < at(b.node); });
}

FanOutResult FanOutThroughSlurm(host::Host& login, const SlurmFanOutOptions& o) {
  std::vector<std::optional<host::Bundle>> got;
  BundleStream stream;
  stream.on_targets = [&](const std::vector<std::string>& targets) { got.resize(targets.size()); };
  stream.on_bundle = [&](size_t i, host::Bundle b, const std::string&) { got[i] = std::move(b); };
  stream.workers = std::max(1u, std::thread::hardware_concurrency());
  FanOutResult res = FanOutThroughSlurm(login, o, stream);
  for (auto& b : got) {
    if (b) res.bundles.push_back(std::move(*b));
  }
  return res;
}

}  // namespace clustermax::audit
