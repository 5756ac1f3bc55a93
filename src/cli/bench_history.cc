// `clustermax bench history`: reliability from the scheduler's records over the last --days
// (bench/history.h). Read-only: sacctmgr show event, sacct and sinfo on the login node, with
// SLURM_TIME_FORMAT=%s so times are Unix seconds whatever the site's locale and time zone. An
// analyst without cluster access gives the same commands' saved output (--events-file,
// --jobs-file). The nodes' Xid history, opt-in: --xid reads each node's kernel log through one job
// step on the nodes in service (the kernel.xid collector: journalctl -k over the window, else
// dmesg, or --kernel-log), --kernel-log alone reads per-node logs here (a central syslog tree);
// outages whose reason does not name their cause are then put down to a hardware Xid of that node
// that day (history::AttributeXids). Results in RUN_DIR/bench/history.json.

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "audit/slurm_fanout.h"
#include "bench/grade.h"
#include "bench/history.h"
#include "bench/json_read.h"
#include "bench/net_comm.h"
#include "bench/workspace.h"
#include "cli/bench_common.h"
#include "cli/cli.h"
#include "collect/collector.h"
#include "host/local_host.h"
#include "util/cancel.h"
#include "util/files.h"
#include "util/line_assembler.h"
#include "util/slurm_text.h"
#include "util/strings.h"
#include "util/time.h"
#include "util/usage_error.h"

namespace clustermax::cli {
using nlohmann::json;
namespace hist = bench::history;

namespace {

constexpr const char* kHistoryMarker = "CLUSTERMAX-HISTORY";

struct HistoryCli {
  BenchCommon common;
  audit::SlurmFanOutOptions slurm;
  double days = 30;
  std::string partition, nodelist, events_file, jobs_file, ctld_log, kernel_log;
  bool xid = false;
  std::string rank_job;
};

// One node's GPU errors from its kernel log through the kernel.xid collector (journalctl -k over
// the window, else dmesg; or the file `kernel_log`, "{node}" replaced), as the document a node's
// task sends: {"node", "source", "counts_by_day"} or {"node", "error"}.
json NodeXidDoc(const std::string& node, const std::string& kernel_log, double days) {
  json doc = {{"node", node}};
  const collect::Collector* c = collect::FindCollector("kernel.xid");
  if (!c) {
    doc["error"] = "no kernel.xid collector";
    return doc;
  }
  collect::CollectOptions opts;
  opts.kernel_log_file = util::ForNode(kernel_log, node);
  opts.kernel_log_since = fmt::format("-{}d", static_cast<long>(std::ceil(std::clamp(days, 0.0, 3660.0))) + 1);
  host::LocalHost h;
  core::Evidence e = c->collect(h, opts);
  if (!e.ok()) {
    std::string why = e.error.empty() ? std::string("kernel log unread") : e.error;
    if (!opts.kernel_log_file.empty() && why.find(opts.kernel_log_file) == std::string::npos)
      why = opts.kernel_log_file + ": " + why;
    doc["error"] = util::Ellipsize(why, 400);
    return doc;
  }
  doc["source"] = bench::StrOf(e.data, "source");
  doc["counts_by_day"] = bench::ObjOf(e.data, "counts_by_day");
  return doc;
}

// Node events from a slurmctld log, read in pieces (a line longer than 64 KiB is dropped, so a
// log of junk without newlines stays bounded); "" on success, else why not. `about` gets what the
// log covers and `problems` what that leaves out of [from, to].
std::string ReadCtldLog(const std::string& path, double from, double to, std::vector<hist::NodeEvent>& events,
                        json& about, std::vector<std::string>& problems) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fmt::format("{}: {}", path, std::strerror(errno));
  hist::CtldLogReader reader(to);
  util::LineAssembler lines(64 * 1024);
  std::string buf(1 << 20, '\0');
  auto feed = [&](std::string_view line) { reader.Feed(line); };
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0)
    lines.Feed(std::string_view(buf.data(), static_cast<size_t>(in.gcount())), feed);
  if (in.bad()) return path + ": read error";
  lines.Flush(feed);
  if (reader.FirstTime() == 0) return path + ": no line with a time slurmctld writes (is this slurmctld's log?)";
  events = reader.Events();
  double first = reader.FirstTime(), last = reader.LastTime();
  auto when = [](double t) {
    return util::FormatRfc3339(std::chrono::system_clock::time_point(std::chrono::seconds(static_cast<long long>(t))));
  };
  about = {{"path", path},
           {"lines", reader.lines()},
           {"from", when(first)},
           {"to", when(last)},
           {"jobs_killed_on_failed_nodes", reader.killed_jobs().size()}};
  if (reader.undated()) about["undated_lines"] = reader.undated();
  if (reader.dropped()) about["events_dropped"] = reader.dropped();
  if (first > from)
    problems.push_back("slurmctld's log starts " + when(first) + ": outages before it (a rotated log) are not counted");
  if (last < to - 86400)
    problems.push_back("slurmctld's log ends " + when(last) + ": outages after it are not counted");
  if (reader.last() == 0)
    problems.push_back(
        "slurmctld's log holds no node state change at all: with SlurmctldDebug below info they are not logged");
  return "";
}

constexpr const char* kEventFormat = "Format=NodeName,Start,End,State,Reason,User";
constexpr const char* kJobFormat = "JobIDRaw,State,ExitCode,Start,End,NNodes,NodeList,AllocTRES";

// stdout of a Slurm command run with Unix-second times, or the error.
std::string SlurmText(host::Host& h, std::vector<std::string> argv, std::string& error) {
  argv.insert(argv.begin(), {"env", "SLURM_TIME_FORMAT=%s"});
  auto r = h.Run({argv, std::chrono::seconds(300), 256u << 20});
  if (r.status != host::IoStatus::kOk || r.exit_code != 0) {
    std::string err(util::Trim(r.err.empty() ? r.error : r.err));
    error =
        util::Ellipsize(fmt::format("{}: {}", argv[2], err.empty() ? fmt::format("exit {}", r.exit_code) : err), 400);
    return "";
  }
  if (r.truncated) error = argv[2] + ": output cut at 256 MiB; use a shorter --days";
  return r.out;
}

// Every node's Xid history: one job step on those in service (--xid), or their logs read here.
std::vector<hist::NodeXids> ReadXids(HistoryCli& o, host::Host& login, const std::vector<std::string>& nodes,
                                     json& about) {
  std::vector<hist::NodeXids> out;
  if (nodes.empty()) {
    about["error"] = "no node to read: no node list, and no node with an event";
    return out;
  }
  if (!o.xid) {
    about["source"] = "kernel logs read on this machine: " + o.kernel_log;
    for (const auto& n : nodes) out.push_back(hist::NodeXidsOf(n, NodeXidDoc(n, o.kernel_log, o.days)));
    return out;
  }
  audit::SlurmFanOutOptions so = o.slurm;
  so.partition = o.partition;
  so.nodelist = fmt::format("{}", fmt::join(nodes, ","));
  so.nodes = 0;
  so.self_exe = util::SelfExe();
  so.tasks_per_node = 1;
  so.timeout_s = 600;
  so.stop_when = [] { return bench::Cancelled(); };
  audit::NodeScope scope = audit::SelectNodes(login, so);
  about["source"] = o.kernel_log.empty() ? "each node's kernel log (journalctl -k, else dmesg), through a job step"
                                         : "each node's " + o.kernel_log + ", through a job step";
  for (const auto& u : scope.unreachable) out.push_back({u.node, "", "not reached: " + u.reason, {}});
  if (scope.targets.empty()) return out;
  bench::InstallCancelHandlers();
  json job = {{"kernel_log", o.kernel_log}, {"days", o.days}};
  audit::FramedStep step = audit::RunFramedStep(login, scope, scope.targets, so, "clustermax-history",
                                                {"bench", "history", "--rank-job", job.dump()}, kHistoryMarker, 0);
  std::map<std::string, std::string> missing;
  auto docs = StepDocs(step, missing);
  for (const auto& n : scope.targets) {
    auto it = docs.find(n);
    if (it != docs.end())
      out.push_back(hist::NodeXidsOf(n, it->second));
    else
      out.push_back({n, "", missing.count(n) ? missing[n] : "no answer from the node", {}});
  }
  return out;
}

int RunHistory(HistoryCli& o) {
  if (!o.rank_job.empty())
    return RunRankTask(o.rank_job, "bench history", kHistoryMarker,
                       [](const json& job, const bench::net::RankInfo& me) -> std::optional<json> {
                         return NodeXidDoc(me.node, bench::StrOf(job, "kernel_log"), bench::NumOf(job, "days"));
                       });
  if (!(o.days > 0 && o.days <= 3660)) throw UsageError("--days: above 0, at most 10 years");
  if (!o.xid && !o.kernel_log.empty() && o.kernel_log.find("{node}") == std::string::npos)
    throw UsageError(
        "--kernel-log without --xid: one log per node, named with {node} (e.g. /var/log/hosts/{node}/kern.log)");
  if (o.xid && (!o.events_file.empty() || !o.jobs_file.empty()) && o.nodelist.empty())
    throw UsageError("--xid with saved records: name the nodes (--nodelist)");
  CheckBenchOut(o.common, "history");
  auto started = std::chrono::system_clock::now();
  double to = std::chrono::duration<double>(started.time_since_epoch()).count();
  double from = to - o.days * 86400;
  std::string since = fmt::format("now-{}minutes", std::max(1L, std::lround(o.days * 24 * 60)));
  host::LocalHost login;
  json result = {{"kind", "clustermax.bench.history"}, {"schema_version", 1}};
  std::vector<std::string> problems;
  std::string events_text, jobs_text, events_error, jobs_error, nodes_error;
  if (!o.ctld_log.empty()) {
    // The log is the node events' source; jobs still come from sacct.
  } else if (!o.events_file.empty()) {
    events_text = *util::ReadLocalFile(o.events_file);
  } else {
    std::string err;
    events_text = SlurmText(
        login, {"sacctmgr", "-P", "show", "event", "Start=" + since, "End=now", "Event=Node", kEventFormat}, err);
    if (!err.empty()) events_error = "node events unread: " + err;
  }
  if (!o.jobs_file.empty()) {
    jobs_text = *util::ReadLocalFile(o.jobs_file);
  } else if (o.events_file.empty() || !o.ctld_log.empty()) {
    // -D: every run of a requeued job (Slurm requeues batch jobs on a node failure by default,
    // and without it only the last, successful run would show).
    std::vector<std::string> argv = {"sacct", "-a", "-X", "-D", "-P", "-S", since, "-E", "now", "-o", kJobFormat};
    if (!o.partition.empty()) argv.push_back("--partition=" + o.partition);
    std::string err;
    jobs_text = SlurmText(login, argv, err);
    if (!err.empty()) jobs_error = "jobs unread: " + err;
  } else {
    jobs_error = "no --jobs-file given";
  }
  std::vector<std::string> nodes;
  if (!o.nodelist.empty()) {
    auto list = util::ExpandHostlist(o.nodelist);
    if (!list || list->empty()) throw UsageError("--nodelist: a Slurm hostlist, e.g. gpu[001-128]");
    nodes = *list;
  } else if (o.events_file.empty()) {
    std::string serr;
    if (auto listed = SinfoNodes(login, o.partition, serr))
      nodes = std::move(*listed);
    else
      nodes_error = "nodes unread: " + serr;
  }
  if (nodes.empty() && (!o.events_file.empty() || !o.ctld_log.empty()) && nodes_error.empty())
    problems.push_back(
        "the nodes are those with events only (no --nodelist): availability and MTBF leave out nodes that never "
        "failed");
  // Without accounting (sacctmgr failed) slurmctld's own log, when this node can read it, holds
  // the same transitions.
  std::string ctld_log = o.ctld_log;
  if (ctld_log.empty() && o.events_file.empty() && !events_error.empty()) {
    auto cfg = login.Run({{"scontrol", "show", "config"}, std::chrono::seconds(30), 1u << 20});
    auto conf = util::ParseScontrolConfig(cfg.out);
    std::string path = conf.count("SlurmctldLogFile") ? conf["SlurmctldLogFile"] : "";
    if (!path.empty() && path.front() == '/' && access(path.c_str(), R_OK) == 0) {
      ctld_log = path;
      problems.push_back("node events from slurmctld's log (" + events_error + ")");
      events_error.clear();
    }
  }
  std::vector<std::string> ev_problems, job_problems;
  std::vector<hist::NodeEvent> events;
  // Availability over the nodes that failed alone would be a figure of nothing: without the node
  // list nothing is graded.
  if (!nodes_error.empty() && events_error.empty()) events_error = nodes_error;
  if (!ctld_log.empty()) {
    json about;
    if (std::string err = ReadCtldLog(ctld_log, from, to, events, about, problems); !err.empty())
      events_error = "node events unread: " + err;
    else
      result["slurmctld_log"] = about;
  } else {
    events = hist::ParseEvents(events_text, to, &ev_problems);
  }
  auto jobs = hist::ParseJobs(jobs_text, &job_problems);
  // Output without its header line was not understood: no figures from it.
  if (events_error.empty() && !ev_problems.empty() && ev_problems.front() == "sacctmgr show event: no header line")
    events_error = "node events unread: sacctmgr printed no header line";
  if (jobs_error.empty() && !job_problems.empty() && job_problems.front() == "sacct: no header line")
    jobs_error = "jobs unread: sacct printed no header line";
  problems.insert(problems.end(), ev_problems.begin(), ev_problems.end());
  problems.insert(problems.end(), job_problems.begin(), job_problems.end());
  // Only the nodes asked about (--nodelist, --partition) count.
  if (!nodes.empty())
    std::erase_if(
        events, [&](const hist::NodeEvent& e) { return std::find(nodes.begin(), nodes.end(), e.node) == nodes.end(); });
  // The nodes' Xid history: each node asked about, or (no node list) each node with an event.
  if (o.xid || !o.kernel_log.empty()) {
    std::vector<std::string> xnodes = nodes;
    if (xnodes.empty())
      for (const auto& e : events)
        if (std::find(xnodes.begin(), xnodes.end(), e.node) == xnodes.end()) xnodes.push_back(e.node);
    json about;
    auto xids = ReadXids(o, login, xnodes, about);
    size_t attributed = hist::AttributeXids(events, xids);
    json x = hist::XidHistory(xids, from, to);
    for (auto& [k, v] : about.items()) x[k] = v;
    x["outages_attributed"] = attributed;
    result["xid_history"] = x;
  }
  json s = hist::Summarize(events, jobs, nodes, from, to);
  for (auto& [k, v] : s.items()) result[k] = v;
  if (!events_error.empty()) result["events_error"] = events_error;
  if (!jobs_error.empty()) result["jobs_error"] = jobs_error;
  result["sources"] = {
      {"events", !ctld_log.empty()       ? "slurmctld log " + ctld_log
                 : o.events_file.empty() ? std::string("sacctmgr -P show event Event=Node ") + kEventFormat
                                         : o.events_file},
      {"jobs", o.jobs_file.empty() ? std::string("sacct -a -X -D -P -o ") + kJobFormat : o.jobs_file},
      {"event_rows", events.size()},
      {"job_rows", jobs.size()}};
  if (!problems.empty()) result["problems"] = problems;
  result["started"] = util::FormatRfc3339(started);
  const BenchCommon& c = o.common;
  return FinishBench(std::move(result), c, "history", hist::RenderHistory, [&c](const json& x) {
    json bars = BenchBars(c);
    return bench::Grade(hist::HistoryMetrics(x, bars), bars);
  });
}

}  // namespace

void AddHistoryCommand(CLI::App* parent, Commands& table) {
  auto o = std::make_shared<HistoryCli>();
  auto* cmd = parent->add_subcommand(
      "history",
      "Reliability from Slurm's records (read-only): node-hours lost, availability, MTBF per node, drains per node "
      "per month, jobs ended by node failure and the GPU-hours they held, interruptions by cause");
  cmd->add_option("--days", o->days, "The window: the last this many days (default 30)");
  cmd->add_option("--partition", o->partition, "Only this partition's nodes");
  cmd->add_option("--nodelist", o->nodelist, "The nodes (Slurm hostlist) instead of those sinfo lists");
  cmd->add_option("--events-file", o->events_file,
                  "Saved output of `sacctmgr -P show event Event=Node Format=NodeName,Start,End,State,Reason,User` "
                  "instead of asking Slurm")
      ->check(CLI::ExistingFile);
  cmd->add_option("--slurmctld-log", o->ctld_log,
                  "Node events from this slurmctld log instead of sacctmgr (read by default when sacctmgr fails "
                  "and SlurmctldLogFile is readable here); its times are read in this machine's time zone (TZ=...), "
                  "syslog's yearless ones as within the last year");
  cmd->add_option("--jobs-file", o->jobs_file,
                  "Saved output of `sacct -a -X -P -o JobIDRaw,State,ExitCode,Start,End,NNodes,NodeList,AllocTRES`")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--xid", o->xid,
                "Also read every node's Xid history: one job step on the nodes in service runs journalctl -k over "
                "the window (else dmesg, or --kernel-log); outages whose reason names no cause are put down to a "
                "hardware Xid of that node that day");
  cmd->add_option("--kernel-log", o->kernel_log,
                  "The nodes' kernel logs ({node}: the node's name): read by the --xid step on each node, or without "
                  "--xid on this machine (a central syslog tree, e.g. /var/log/hosts/{node}/kern.log)");
  cmd->add_option("--time", o->slurm.time_limit, "--xid: time limit of the step (minutes)");
  cmd->add_option("--bcast", o->slurm.bcast, "--xid: copy this binary to the nodes first (srun --bcast=PATH)");
  cmd->add_option("--rank-job", o->rank_job, "(internal) the job of one task of a step")->group("");
  AddBenchCommon(cmd, o->common);
  table.Add(cmd, [o] { return RunHistory(*o); });
}

}  // namespace clustermax::cli
