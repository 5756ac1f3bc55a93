// `clustermax bench lifecycle`: how long the things a user waits for take on this cluster
// (bench/lifecycle.h). This side times Slurm: jobs submitted until RUNNING (one node, then every
// node in scope with its GPUs: the allocation the other steps run in), srun launching on 1, 2,
// 4 ... N nodes inside it, a container's first start through pyxis, and nodes rebooted until
// schedulable again. One step on every node times what happens there (imports per storage tier,
// package install, model load, container import). Results in RUN_DIR/bench/lifecycle.json.

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "audit/slurm_fanout.h"
#include "bench/grade.h"
#include "bench/json_read.h"
#include "bench/lifecycle.h"
#include "bench/net_comm.h"
#include "bench/storage_scaling.h"
#include "bench/workspace.h"
#include "cli/bench_common.h"
#include "cli/cli.h"
#include "host/local_host.h"
#include "util/files.h"
#include "util/slurm_text.h"
#include "util/strings.h"
#include "util/usage_error.h"

namespace clustermax::cli {
using nlohmann::json;
namespace life = bench::life;

namespace {

constexpr const char* kLifeMarker = "CLUSTERMAX-LIFE";

struct LifeCli {
  BenchCommon common;
  audit::SlurmFanOutOptions slurm;
  int repeat = 3;
  double start_timeout = 300, step_timeout = 3600;
  bool no_jobs = false, no_import = false;
  std::string python = "python3", package = "torch";
  std::vector<std::string> tiers;
  int warm_runs = 3;
  std::string pip_install, installer = "pip", pip_index_url, pip_dir = "/tmp", pip_module;
  std::vector<std::string> pip_args;
  std::string model_path, model_s3, s3_endpoint, s3_region = "us-east-1", s3_addressing = "path", s3_profile;
  int model_threads = 8;
  bool model_to_gpu = false;
  std::string gpu_helper;
  std::string image, image_dir = "/tmp";
  double image_timeout = 1800;
  std::string reboot;
  double reboot_timeout = 1800;
  std::string rank_job;
};

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void Say(const LifeCli& o, const std::string& line) {
  if (!o.common.quiet) std::cerr << "  " << line << "\n";
}

host::CommandResult Run(host::Host& h, std::vector<std::string> argv, double timeout_s = 30) {
  return h.Run({std::move(argv), std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000)), 1u << 20});
}

std::string Failure(const host::CommandResult& r) {
  std::string err(util::Trim(r.err.empty() ? r.error : r.err));
  return util::Ellipsize(err.empty() ? fmt::format("exit code {}", r.exit_code) : err, 400);
}

// A batch job we submitted: cancelled when it goes out of scope (also after Ctrl-C or an error).
struct Job {
  host::Host& h;
  std::string id;
  ~Job() {
    if (!id.empty()) Run(h, {"scancel", id});
  }
  // Cancelled now, and gone from squeue (at most 30 s): a node still COMPLETING our job would make
  // the next submission wait for it and count that wait.
  void CancelAndWait() {
    if (id.empty()) return;
    Run(h, {"scancel", id});
    for (int i = 0; i < 300; ++i) {
      auto q = Run(h, {"squeue", "-h", "-j", id, "-o", "%T"});
      if (q.exit_code != 0 || util::Trim(q.out).empty()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    id.clear();
  }
};

// Submits a job that sleeps, and times it from sbatch's answer until squeue says RUNNING (polled
// every 100 ms); {"seconds"} or {"error"}. The job stays (the caller's Job cancels it).
json SubmitAndWait(host::Host& h, const LifeCli& o, const std::vector<std::string>& nodes, int gpus, Job& job,
                   bool whole_nodes = false) {
  std::vector<std::string> argv = {"sbatch",
                                   "--parsable",
                                   "--job-name=clustermax-lifecycle",
                                   "--output=/dev/null",
                                   fmt::format("--nodes={}", nodes.size()),
                                   "--ntasks-per-node=1",
                                   "--nodelist=" + fmt::format("{}", fmt::join(nodes, ",")),
                                   "--time=" + o.slurm.time_limit};
  if (!o.slurm.partition.empty()) argv.push_back("--partition=" + o.slurm.partition);
  if (gpus > 0) argv.push_back(fmt::format("--gres=gpu:{}", gpus));
  // The allocation the node steps run in: whole nodes (every CPU and all memory for installs,
  // parallel reads, image unpacking), not the one CPU a bare job gets.
  if (whole_nodes) {
    argv.push_back("--exclusive");
    argv.push_back("--mem=0");
  }
  argv.push_back("--wrap=sleep 86400");
  auto t0 = std::chrono::steady_clock::now();
  auto sub = Run(h, argv);
  if (sub.status != host::IoStatus::kOk || sub.exit_code != 0) return {{"error", "sbatch: " + Failure(sub)}};
  std::string id(util::Trim(util::Split(util::Trim(sub.out), ';').front()));
  if (!util::ParseInt(id)) return {{"error", "sbatch answered no job id: " + util::Ellipsize(sub.out, 200)}};
  job.id = id;
  double submit_s = Since(t0);
  while (!bench::Cancelled()) {
    auto q = Run(h, {"squeue", "-h", "-j", id, "-o", "%T"});
    std::string state(util::Trim(q.out));
    if (state == "RUNNING")
      return {{"seconds", bench::RoundTo(Since(t0), 3)}, {"submit_s", bench::RoundTo(submit_s, 3)}, {"job", id}};
    if (q.exit_code == 0 && !state.empty() && state != "PENDING" && state != "CONFIGURING")
      return {{"error", fmt::format("job {} is {} instead of running", id, state)}};
    if (Since(t0) > o.start_timeout)
      return {{"error", fmt::format("job {} did not start within {} s (still {})", id, o.start_timeout,
                                    state.empty() ? "unknown" : state)}};
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return {{"error", "interrupted"}};
}

// The documents of one framed step, by node; a node without one in `missing`.
json LaunchTimings(host::Host& h, const audit::NodeScope& scope, const LifeCli& o, const audit::SlurmFanOutOptions& so,
                   int gpus, json& alloc) {
  json out = json::array();
  int fewest_gpus = -1;
  for (int k : bench::ScalingCounts(static_cast<int>(scope.targets.size()))) {
    std::vector<std::string> nodes(scope.targets.begin(), scope.targets.begin() + k);
    Say(o, fmt::format("srun launch on {} node(s), {} time(s)", k, o.repeat));
    json entry = {{"nodes", k}, {"samples", json::array()}, {"start_spread_s", json::array()}};
    if (so.jobid.empty() && !scope.inside_allocation) entry["includes_allocation"] = true;
    std::vector<double> samples;
    for (int i = 0; i < o.repeat && !bench::Cancelled(); ++i) {
      audit::FramedStep step =
          audit::RunFramedStep(h, scope, nodes, so, "clustermax-lifecycle",
                               {"bench", "lifecycle", "--rank-job", R"({"kind":"probe"})"}, kLifeMarker, gpus);
      std::map<std::string, std::string> missing;
      auto docs = StepDocs(step, missing);
      if (!missing.empty()) {
        entry["error"] = fmt::format("{}: {}", missing.begin()->first, missing.begin()->second);
        break;
      }
      double first = 1e300, last = 0;
      for (const auto& [node, d] : docs) {
        double t = bench::NumOf(d, "t_start");
        first = std::min(first, t);
        last = std::max(last, t);
        int g = static_cast<int>(bench::NumOf(d, "gpus_visible"));
        fewest_gpus = fewest_gpus < 0 ? g : std::min(fewest_gpus, g);
      }
      samples.push_back(bench::RoundTo(step.seconds, 4));
      entry["samples"].push_back(samples.back());
      entry["start_spread_s"].push_back(bench::RoundTo(last - first, 4));
    }
    if (!samples.empty()) entry["median_s"] = bench::RoundTo(life::Median(samples), 4);
    out.push_back(entry);
    if (entry.contains("error")) break;
  }
  if (fewest_gpus >= 0) alloc["gpus_seen"] = fewest_gpus;
  return out;
}

json NodeJob(const LifeCli& o) {
  json job = {{"kind", "node"}, {"python", o.python}, {"warm_runs", o.warm_runs}};
  if (!o.no_import) {
    json tiers = json::array();
    for (const auto& t : o.tiers) {
      auto tier = life::ParseTier(t);
      tiers.push_back({{"name", tier.name}, {"dir", tier.dir}});
    }
    job["imports"] = {{"package", o.package}, {"tiers", tiers}};
  }
  if (!o.pip_install.empty())
    job["pip"] = {{"spec", o.pip_install},      {"installer", o.installer}, {"index_url", o.pip_index_url},
                  {"args", o.pip_args},         {"dir", o.pip_dir},         {"module", o.pip_module},
                  {"timeout_s", o.step_timeout}};
  if (!o.model_path.empty()) {
    job["model"] = {{"path", o.model_path}, {"threads", o.model_threads}};
    if (o.model_to_gpu) {
      job["model"]["to_gpu"] = true;
      if (!o.gpu_helper.empty()) job["model"]["helper"] = o.gpu_helper;
    }
  }
  if (!o.model_s3.empty()) {
    std::string rest = o.model_s3.substr(5);
    auto slash = rest.find('/');
    job["s3"] = {{"endpoint", o.s3_endpoint},
                 {"bucket", rest.substr(0, slash)},
                 {"prefix", slash == std::string::npos ? "" : rest.substr(slash + 1)},
                 {"region", o.s3_region},
                 {"addressing", o.s3_addressing},
                 {"profile", o.s3_profile},
                 {"threads", o.model_threads}};
  }
  if (!o.image.empty()) job["containers"] = {{"image", o.image}, {"dir", o.image_dir}, {"timeout_s", o.image_timeout}};
  return job;
}

// pyxis: the first `srun --container-image` on a node imports the image and starts it.
json PyxisStart(host::Host& h, const audit::NodeScope& scope, const LifeCli& o, const std::string& jobid) {
  auto help = Run(h, {"srun", "--help"});
  if (!util::Contains(help.out + help.err, "--container-image"))
    return {{"runtime", "pyxis"}, {"skipped", "srun has no --container-image (pyxis is not installed)"}};
  std::vector<std::string> argv = {"srun", "--nodes=1", "--ntasks=1", "--nodelist=" + scope.targets.front(),
                                   "--container-image=" + o.image};
  if (!jobid.empty() || scope.inside_allocation) {
    if (!jobid.empty()) argv.push_back("--jobid=" + jobid);
    argv.push_back("--overlap");
  } else {
    argv.push_back("--time=" + o.slurm.time_limit);
  }
  argv.push_back("true");
  auto t0 = std::chrono::steady_clock::now();
  auto r = Run(h, argv, o.image_timeout);
  if (r.status != host::IoStatus::kOk || r.exit_code != 0) return {{"runtime", "pyxis"}, {"error", Failure(r)}};
  return {{"runtime", "pyxis"}, {"node", scope.targets.front()}, {"import_s", bench::RoundTo(Since(t0), 3)}};
}

std::string Field(const std::string& line, const std::string& key) {
  auto at = line.find(" " + key + "=");
  if (at == std::string::npos) return "";
  at += key.size() + 2;
  return line.substr(at, line.find(' ', at) - at);
}

json RebootNodes(host::Host& h, const LifeCli& o, const std::vector<std::string>& nodes,
                 std::map<std::string, std::string>& before, json out);

// Each node asked to reboot when idle (scontrol reboot ASAP nextstate=RESUME), then watched every
// half second: IDLE+DRAIN+REBOOT_REQUESTED, DOWN+DRAIN+REBOOT_ISSUED once slurmctld sent the reboot
// (issued_s), NOT_RESPONDING if the node stays away past SlurmdTimeout, IDLE once its slurmd
// registered with a boot time after the request (back_s). Back without a newer BootTime is an error.
// A reboot still pending after an interrupt or the timeout is cancelled.
json Reboot(host::Host& h, const LifeCli& o, const std::vector<std::string>& nodes) {
  json out = json::array();
  auto before = NodeLines(h, nodes).value_or(std::map<std::string, std::string>{});
  // Only nodes in service: nextstate=RESUME would put back in service a node an administrator had
  // drained, and a node already down has nothing to time.
  std::vector<std::string> ok;
  for (const auto& n : nodes) {
    auto flags = life::NodeStateFlags(before[n]);
    if (life::Schedulable(flags))
      ok.push_back(n);
    else
      out.push_back({{"node", n},
                     {"error", fmt::format("not rebooted: not in service before (State={})",
                                           before[n].empty() ? "unknown" : Field(" " + before[n], "State"))}});
  }
  if (ok.empty()) return out;
  return RebootNodes(h, o, ok, before, std::move(out));
}

json RebootNodes(host::Host& h, const LifeCli& o, const std::vector<std::string>& nodes,
                 std::map<std::string, std::string>& before, json out) {
  auto t0 = std::chrono::steady_clock::now();
  auto req = Run(h, {"scontrol", "reboot", "ASAP", "nextstate=RESUME", "reason=clustermax bench lifecycle",
                     fmt::format("{}", fmt::join(nodes, ","))});
  if (req.status != host::IoStatus::kOk || req.exit_code != 0) {
    for (const auto& n : nodes) out.push_back({{"node", n}, {"error", "scontrol reboot: " + Failure(req)}});
    return out;
  }
  struct Track {
    json states = json::array();
    std::string last;
    bool left = false;  // seen not schedulable (the reboot under way)
    std::optional<double> issued, not_responding, back;
  };
  std::map<std::string, Track> t;
  size_t done = 0;
  while (done < nodes.size() && !bench::Cancelled() && Since(t0) < o.reboot_timeout) {
    double now = Since(t0);
    auto lines = NodeLines(h, nodes).value_or(std::map<std::string, std::string>{});
    for (const auto& n : nodes) {
      Track& k = t[n];
      if (k.back) continue;
      std::string state = Field(" " + lines[n], "State");
      auto flags = life::NodeStateFlags(lines[n]);
      if (state != k.last) {
        k.states.push_back({bench::RoundTo(now, 2), state});
        k.last = state;
      }
      bool sched = life::Schedulable(flags);
      for (const auto& f : flags) {
        if (f == "REBOOT_ISSUED" && !k.issued) k.issued = now;
        if (f == "NOT_RESPONDING" && !k.not_responding) k.not_responding = now;
      }
      if (!sched) k.left = true;
      if (sched && k.left) {
        k.back = now;
        ++done;
      }
    }
    if (done < nodes.size()) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  auto after = NodeLines(h, nodes).value_or(std::map<std::string, std::string>{});
  std::vector<std::string> pending;
  for (const auto& n : nodes) {
    Track& k = t[n];
    json r = {{"node", n}, {"states", k.states}};
    if (k.issued) r["issued_s"] = bench::RoundTo(*k.issued, 2);
    if (k.not_responding) r["not_responding_s"] = bench::RoundTo(*k.not_responding, 2);
    std::string b0 = Field(" " + before[n], "BootTime"), b1 = Field(" " + after[n], "BootTime");
    if (!b0.empty()) r["boot_time_before"] = b0;
    if (!b1.empty()) r["boot_time_after"] = b1;
    if (k.back) {
      r["back_s"] = bench::RoundTo(*k.back, 2);
      // Slurm gives up on a reboot after ResumeTimeout (DOWN, "reboot timed out"), and
      // ReturnToService=2 may then put the node back: schedulable, but never rebooted.
      if (b0.empty() || b1.empty())
        r["error"] = "schedulable again, but scontrol showed no BootTime to prove the reboot";
      else if (b0 == b1)
        r["error"] = fmt::format(
            "schedulable again after {:.0f} s but its BootTime did not change: the reboot did "
            "not happen (Slurm's ResumeTimeout ran out?)",
            *k.back);
    } else {
      pending.push_back(n);
      r["error"] = bench::Cancelled() ? std::string("interrupted")
                                      : fmt::format("not schedulable within {} s (now {})", o.reboot_timeout, k.last);
      r["undo"] = fmt::format("scontrol cancel_reboot {0}; scontrol update nodename={0} state=resume", n);
    }
    out.push_back(r);
  }
  // A reboot not yet issued is withdrawn; one under way is left to finish (the undo says how).
  if (!pending.empty()) Run(h, {"scontrol", "cancel_reboot", fmt::format("{}", fmt::join(pending, ","))});
  return out;
}

int RunRank(const LifeCli& o) {
  return RunRankTask(o.rank_job, "bench lifecycle", kLifeMarker,
                     [](const json& job, const bench::net::RankInfo& me) -> std::optional<json> {
                       bench::InstallCancelHandlers();
                       return life::RunLifeRankJob(job, me.node, me.rank);
                     });
}

int RunLifecycle(LifeCli& o) {
  if (!o.rank_job.empty()) return RunRank(o);
  if (!life::ValidModuleName(o.package)) throw UsageError("--package: a Python module name, e.g. torch");
  if (!o.pip_module.empty() && !life::ValidModuleName(o.pip_module))
    throw UsageError("--pip-import: a Python module name");
  if (o.repeat < 1 || o.repeat > 100) throw UsageError("--repeat: from 1 to 100");
  // The node job travels on srun's command line (visible in ps and Slurm's records): no credentials.
  for (const auto& u : std::vector<std::string>{o.pip_index_url, o.s3_endpoint})
    if (auto at = u.find("://");
        at != std::string::npos && u.find('@', at) != std::string::npos && u.find('@', at) < u.find('/', at + 3))
      throw UsageError(
          "--pip-index-url/--s3-endpoint: no credentials in the URL (pip.conf or ~/.netrc, ~/.aws on "
          "the nodes hold them)");
  if (o.warm_runs < 0 || o.warm_runs > 20) throw UsageError("--warm-runs: from 0 to 20");
  if (o.model_threads < 1 || o.model_threads > 64) throw UsageError("--model-threads: from 1 to 64");
  if (o.model_to_gpu && o.model_path.empty()) throw UsageError("--model-to-gpu: with --model-path PATH");
  if (!o.gpu_helper.empty() && !o.model_to_gpu) throw UsageError("--gpu-helper: with --model-to-gpu");
  if (!o.model_s3.empty() && (o.model_s3.rfind("s3://", 0) != 0 || o.model_s3.size() <= 5 || o.s3_endpoint.empty()))
    throw UsageError("--model-s3: s3://BUCKET[/PREFIX], with --s3-endpoint");
  for (double v : {o.start_timeout, o.step_timeout, o.image_timeout, o.reboot_timeout})
    if (!(v > 0 && v <= 1e6)) throw UsageError("timeouts: seconds above 0");
  std::vector<std::string> reboot_nodes;
  if (!o.reboot.empty()) {
    auto list = util::ExpandHostlist(o.reboot);
    if (!list || list->empty()) throw UsageError("--reboot: a Slurm hostlist of the nodes to reboot, e.g. gpu[01-02]");
    reboot_nodes = *list;
  }
  json node_job = NodeJob(o);  // throws on a bad --tier before any work
  CheckBenchOut(o.common, "lifecycle");
  host::LocalHost login;
  o.slurm.self_exe = util::SelfExe();
  o.slurm.timeout_s = o.step_timeout;
  audit::NodeScope scope = audit::SelectNodes(login, o.slurm);
  RequireTargets(scope, "bench lifecycle");
  bench::InstallCancelHandlers();
  auto started = std::chrono::system_clock::now();
  auto t0 = std::chrono::steady_clock::now();
  json result = {{"kind", "clustermax.bench.lifecycle"}, {"schema_version", 1}};
  result["options"] = {{"repeat", o.repeat},
                       {"python", o.python},
                       {"package", o.package},
                       {"tiers", o.tiers},
                       {"import", !o.no_import},
                       {"pip", !o.pip_install.empty()},
                       {"model", !o.model_path.empty()},
                       {"model_gpu", !o.model_path.empty() && o.model_to_gpu},
                       {"s3", !o.model_s3.empty()},
                       {"containers", !o.image.empty()},
                       {"nodes_in_scope", scope.in_scope},
                       {"inside_allocation", scope.inside_allocation}};
  int gpus = scope.gpus_per_node;
  audit::SlurmFanOutOptions so = o.slurm;
  so.tasks_per_node = 1;
  so.stop_when = [] { return bench::Cancelled(); };  // Ctrl-C ends a long step (the node step's installs)
  Job holder{login, ""};                             // the allocation the steps run in, cancelled however this ends
  bool allocated = false;
  if (o.no_jobs) {
    result["job_start"] = {{"skipped", "not asked (--no-jobs)"}};
    result["alloc"] = {{"skipped", "not asked (--no-jobs)"}, {"gpus_per_node", gpus}};
  } else if (scope.inside_allocation) {
    std::string why = "inside an allocation: run from a login node to time job start";
    result["job_start"] = {{"skipped", why}};
    result["alloc"] = {{"skipped", why}, {"gpus_per_node", gpus}};
  } else {
    // One node, `repeat` times (each job cancelled once running), then the allocation the other
    // steps run in: every node in scope with its GPUs.
    json js = {{"samples", json::array()}};
    std::vector<double> samples;
    for (int i = 0; i < o.repeat && !bench::Cancelled(); ++i) {
      Say(o, fmt::format("job start {} of {}", i + 1, o.repeat));
      Job j{login, ""};
      json s = SubmitAndWait(login, o, {scope.targets[i % scope.targets.size()]}, 0, j);
      if (s.contains("error")) {
        js["error"] = s["error"];
        break;
      }
      samples.push_back(s["seconds"].get<double>());
      js["samples"].push_back(samples.back());
      j.CancelAndWait();
    }
    if (!samples.empty()) js["median_s"] = bench::RoundTo(life::Median(samples), 3);
    result["job_start"] = js;
    Say(o, fmt::format("allocation of {} node(s){}", scope.targets.size(),
                       gpus > 0 ? fmt::format(" with {} GPU(s) each", gpus) : ""));
    json a = SubmitAndWait(login, o, scope.targets, gpus, holder, /*whole_nodes=*/true);
    a["nodes"] = scope.targets.size();
    a["gpus_per_node"] = gpus;
    result["alloc"] = a;
    allocated = !a.contains("error");
    if (allocated) so.jobid = holder.id;
  }
  bool can_step = scope.inside_allocation || allocated || o.no_jobs;
  json alloc = result.value("alloc", json::object());
  if (!bench::Cancelled()) {
    if (can_step) {
      result["launch"] = LaunchTimings(login, scope, o, so, gpus, alloc);
    } else {
      result["launch"] = json::array({{{"nodes", 1}, {"error", "no allocation to launch in"}}});
    }
  }
  if (result.contains("alloc")) result["alloc"] = alloc;
  // pyxis first, before the node step's runtimes have the image's layers in their caches.
  if (!bench::Cancelled() && can_step && !o.image.empty()) result["pyxis"] = PyxisStart(login, scope, o, so.jobid);
  if (!bench::Cancelled() && can_step) {
    Say(o, fmt::format("on every node ({}): {}", scope.targets.size(),
                       fmt::join(std::vector<std::string>{o.no_import ? "" : "import " + o.package,
                                                          o.pip_install.empty() ? "" : "install",
                                                          o.model_path.empty() ? "" : "model load",
                                                          o.model_s3.empty() ? "" : "S3 load",
                                                          o.image.empty() ? "" : "containers"},
                                 " ")));
    audit::FramedStep step =
        audit::RunFramedStep(login, scope, scope.targets, so, "clustermax-lifecycle",
                             {"bench", "lifecycle", "--rank-job", node_job.dump()}, kLifeMarker, 0);
    std::map<std::string, std::string> missing;
    auto docs = StepDocs(step, missing);
    result["nodes"] = json::object();
    for (auto& [node, d] : docs) result["nodes"][node] = d;
    if (!missing.empty()) {
      result["node_errors"] = json::object();
      for (const auto& [node, why] : missing) result["node_errors"][node] = why;
    }
  }
  // The allocation goes before any reboot: ASAP waits for the node to be idle.
  holder.CancelAndWait();
  if (!reboot_nodes.empty() && !bench::Cancelled()) {
    Say(o, fmt::format("rebooting {} (scontrol reboot ASAP nextstate=RESUME)", fmt::join(reboot_nodes, ",")));
    result["reboot"] = Reboot(login, o, reboot_nodes);
  }
  StampFleetResult(result, started, t0, scope.unreachable);
  const BenchCommon& c = o.common;
  return FinishBench(std::move(result), c, "lifecycle", life::RenderLifecycle,
                     [&c](const json& x) { return bench::Grade(life::LifecycleMetrics(x), BenchBars(c)); });
}

}  // namespace

void AddLifecycleCommand(CLI::App* parent, Commands& table) {
  auto o = std::make_shared<LifeCli>();
  o->slurm.time_limit = "60";  // the allocation lives through every step (installs, model loads, imports)
  auto* cmd = parent->add_subcommand(
      "lifecycle",
      "What users wait for, through Slurm: job start, srun launch on 1..N nodes, an allocation with GPUs, `import "
      "torch` per storage tier cold and warm; opt-in: package install, model load from a shared filesystem or S3, "
      "container import and first start, node reboot to schedulable");
  cmd->add_option("--repeat", o->repeat, "Samples per job-start and launch timing (the median is graded)");
  cmd->add_option("--start-timeout", o->start_timeout, "Seconds a submitted job may pend before it counts as failed");
  cmd->add_flag("--no-jobs", o->no_jobs, "Submit no batch job (no job-start timing); steps then allocate themselves");
  cmd->add_option("--python", o->python, "Interpreter on the nodes (default python3 from PATH)");
  cmd->add_option("--package", o->package, "Module whose import is timed (default torch)");
  cmd->add_option("--tier", o->tiers,
                  "NAME=DIR, repeatable: a storage tier holding the package (a virtual environment's root, or a "
                  "directory put on PYTHONPATH); default: where --python finds it")
      ->delimiter(',');
  cmd->add_option("--warm-runs", o->warm_runs, "Warm imports after the cold one (the median is reported)");
  cmd->add_flag("--no-import", o->no_import, "Do not time the import");
  cmd->add_option("--pip-install", o->pip_install,
                  "Opt-in: install this requirement into a fresh virtual environment on each node, timed (pulls "
                  "from the site's index: pip's configuration or --pip-index-url)");
  cmd->add_option("--installer", o->installer, "pip or uv")->check(CLI::IsMember({"pip", "uv"}));
  cmd->add_option("--pip-index-url", o->pip_index_url, "The package index (the site's mirror)");
  cmd->add_option("--pip-arg", o->pip_args, "More arguments for the installer (repeatable)");
  cmd->add_option("--pip-dir", o->pip_dir, "Where the environment is made (default /tmp, node-local)");
  cmd->add_option("--pip-import", o->pip_module, "Module imported from the new environment afterwards, timed");
  cmd->add_option("--model-path", o->model_path,
                  "Opt-in: read this file or directory (a model on the shared filesystem) into host memory on each "
                  "node, cold then warm");
  cmd->add_flag("--model-to-gpu", o->model_to_gpu,
                "With --model-path: also read the files into the first GPU's memory through the GPU helper "
                "(clustermax-gpu), cold and warm, every piece checked where it landed");
  cmd->add_option("--gpu-helper", o->gpu_helper, "The GPU helper's path on the nodes (default: next to clustermax)");
  cmd->add_option("--model-s3", o->model_s3, "Opt-in: read every object under s3://BUCKET/PREFIX on each node");
  cmd->add_option("--s3-endpoint", o->s3_endpoint, "S3 endpoint for --model-s3, http(s)://host[:port]");
  cmd->add_option("--s3-region", o->s3_region, "S3 region");
  cmd->add_option("--s3-addressing", o->s3_addressing, "path or virtual")->check(CLI::IsMember({"path", "virtual"}));
  cmd->add_option("--s3-profile", o->s3_profile, "Profile in ~/.aws/credentials on the nodes");
  cmd->add_option("--model-threads", o->model_threads, "Parallel readers of the model's files or objects");
  cmd->add_option("--image", o->image,
                  "Opt-in: import and first-start this image with each runtime the nodes have (enroot, apptainer, "
                  "docker, podman) and through pyxis (srun --container-image)");
  cmd->add_option("--image-dir", o->image_dir, "Where imported images are kept while timed (default /tmp)");
  cmd->add_option("--image-timeout", o->image_timeout, "Seconds an image import may take");
  cmd->add_option("--reboot", o->reboot,
                  "Opt-in, disruptive: reboot these nodes (hostlist) through scontrol reboot ASAP nextstate=RESUME "
                  "and time them until schedulable (needs Slurm's RebootProgram and operator rights)");
  cmd->add_option("--reboot-timeout", o->reboot_timeout, "Seconds a node may take to be schedulable again");
  cmd->add_option("--partition", o->slurm.partition, "The partition to take nodes from");
  cmd->add_option("--nodelist", o->slurm.nodelist, "These nodes (Slurm hostlist)");
  cmd->add_option("--nodes", o->slurm.nodes, "At most this many nodes");
  cmd->add_option("--time", o->slurm.time_limit, "Time limit of the jobs and steps (minutes)");
  cmd->add_option("--step-timeout", o->step_timeout, "Seconds before a step is stopped");
  cmd->add_option("--bcast", o->slurm.bcast, "Copy this binary to the nodes first (srun --bcast=PATH)");
  cmd->add_option("--rank-job", o->rank_job, "(internal) the job of one task of a step")->group("");
  AddBenchCommon(cmd, o->common);
  table.Add(cmd, [o] { return RunLifecycle(*o); });
}

}  // namespace clustermax::cli
