// The `bench gpu` harness: finds the helper and the GPUs, runs each registered suite (its plan,
// then its run hook or run policy, one helper per GPU), turns the helper's lines into per-GPU
// records and across-GPU summaries, and samples telemetry meanwhile. Suites: gpu_suites/.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "bench/gpu_bench.h"
#include "bench/gpu_suite.h"
#include "bench/gpu_telemetry.h"
#include "bench/workspace.h"
#include "core/version.h"
#include "host/process.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/time.h"

namespace clustermax::bench {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

GpuJobOutcome RunHelperJob(const std::string& helper, const json& job, const fs::path& job_file, double timeout_s) {
  std::vector<std::string> argv = {"clustermax-gpu", "run", "--job-json", job.dump()};
  if (!job_file.empty()) {
    util::WriteFileAtomic(job_file, job.dump());
    argv = {"clustermax-gpu", "run", "--job", job_file.string()};
  }
  auto r = host::RunProcess(helper, argv, std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)),
                            size_t{256} << 20, {});
  GpuJobOutcome out;
  bool done = false;
  for (const auto& line : util::SplitLines(r.out)) {
    if (util::Trim(line).empty()) continue;
    try {
      json j = json::parse(line);
      if (j.value("type", "") == "done") done = true;
      out.lines.push_back(std::move(j));
    } catch (const json::exception&) {
      // A line cut by a crash or a timeout; the items it belonged to are reported as not run.
    }
  }
  if (!done) {
    std::string tail = r.err.size() > 600 ? r.err.substr(r.err.size() - 600) : r.err;
    if (r.timed_out) {
      out.failure = fmt::format("the helper ran past {:.0f} s and was stopped", timeout_s);
    } else if (r.status != host::IoStatus::kOk && !r.error.empty()) {
      out.failure = "the helper could not run: " + r.error;
    } else if (r.signal) {
      out.failure = fmt::format("the helper died of signal {}", r.signal);
    } else {
      out.failure = fmt::format("the helper exited with status {}", r.exit_code);
    }
    for (const auto& l : out.lines) {
      if (l.value("type", "") == "error") out.failure += ": " + l.value("error", "");
    }
    if (!util::Trim(tail).empty()) out.failure += "; stderr: " + std::string(util::Trim(tail));
  }
  return out;
}

namespace {

// The harness a suite runs on: one helper per GPU and job; the first run carries the warm-up.
class Runner : public GpuSuiteRunner {
 public:
  Runner(const GpuBenchOptions& o, std::string helper, fs::path work, std::vector<int> gpus, GpuPlanOptions plan,
         double warmup)
      : o_(o),
        helper_(std::move(helper)),
        work_(std::move(work)),
        gpus_(std::move(gpus)),
        plan_(std::move(plan)),
        warmup_(warmup) {}
  const std::vector<int>& gpus() const override { return gpus_; }
  const GpuPlanOptions& plan() const override { return plan_; }

  std::vector<GpuJobOutcome> RunOn(const std::vector<int>& on, const json& items, const std::string& tag,
                                   bool concurrent) override {
    std::vector<GpuJobOutcome> outcomes(on.size());
    json runnable = json::array();
    for (const auto& it : items) {
      if (!it.contains("na")) runnable.push_back(it);
    }
    if (runnable.empty()) return outcomes;
    auto one = [&](size_t i) {
      json job = {{"device", on[i]}, {"items", runnable}, {"warmup_s", warmed_ ? 0.0 : warmup_}};
      outcomes[i] = RunJob(job, fmt::format("job-{}-gpu{}.json", tag, on[i]));
    };
    if (concurrent) {
      std::vector<std::thread> threads;
      for (size_t i = 0; i < on.size(); ++i) threads.emplace_back(one, i);
      for (auto& t : threads) t.join();
    } else {
      for (size_t i = 0; i < on.size(); ++i) one(i);
    }
    warmed_ = warmed_ || warmup_ <= 0 || std::any_of(outcomes.begin(), outcomes.end(), [](const GpuJobOutcome& x) {
                return std::any_of(x.lines.begin(), x.lines.end(),
                                   [](const json& l) { return l.value("type", "") == "warmup"; });
              });
    return outcomes;
  }

  GpuJobOutcome RunJob(const json& job, const std::string& file_name) override {
    return RunHelperJob(helper_, job, work_ / file_name, o_.job_timeout_s);
  }

 private:
  const GpuBenchOptions& o_;
  std::string helper_;
  fs::path work_;
  std::vector<int> gpus_;
  GpuPlanOptions plan_;
  double warmup_;
  bool warmed_ = false;
};

// One suite: its plan, then its run hook or its policy; the suite's block of the result.
json RunSuite(const GpuSuite& s, Runner& runner, const std::function<void(const std::string&)>& say) {
  const std::vector<int>& gpus = runner.gpus();
  json rows = s.plan(runner.plan());
  size_t runnable = std::count_if(rows.begin(), rows.end(), [](const json& r) { return !r.contains("na"); });
  say(fmt::format("{}: {} item(s) on {} GPU(s){}", s.key, runnable,
                  s.policy == GpuRunPolicy::kFirstGpuSeesAll ? 1 : gpus.size(),
                  runnable < rows.size() ? fmt::format(", {} not applicable", rows.size() - runnable) : ""));
  for (auto& r : rows) r["gpus"] = json::array();
  json suite_out = json::object();
  if (s.run) {
    s.run(runner, s, rows, suite_out);
  } else if (s.policy == GpuRunPolicy::kFirstGpuSeesAll) {
    // One process sees every GPU: the items run one after another from the first GPU's helper.
    std::vector<int> first = {gpus[0]};
    json mapped = rows;
    for (auto& r : mapped) {
      if (r.contains("src")) {
        r["src"] = gpus[r["src"].get<int>()];
        r["dst"] = gpus[r["dst"].get<int>()];
      }
    }
    CollectGpuRows(rows, first, runner.RunOn(first, mapped, s.key, false), s);
  } else if (s.policy == GpuRunPolicy::kAloneThenEveryGpuAtOnce) {
    // Alone (one GPU at a time), then all GPUs at once (host link and root-port contention).
    CollectGpuRows(rows, gpus, runner.RunOn(gpus, rows, s.key, false), s);
    if (gpus.size() > 1) {
      json all = rows;
      for (auto& r : all) {
        r["id"] = r["id"].get<std::string>() + ".all-gpus";
        r["gpus"] = json::array();
        r["concurrent"] = true;
        r.erase("summary");
      }
      CollectGpuRows(all, gpus, runner.RunOn(gpus, all, s.key + "-all", true), s);
      for (auto& r : all) rows.push_back(std::move(r));
    }
  } else {
    CollectGpuRows(rows, gpus, runner.RunOn(gpus, rows, s.key, true), s);
  }
  suite_out["items"] = rows;
  return suite_out;
}

// The helper's `info`: the GPUs to run on, each with its peaks model, and the plan filled in for
// them (count, smallest compute capability and memory). A reason when there is no usable GPU.
std::optional<std::string> Discover(const GpuBenchOptions& o, const std::string& helper, json& result,
                                    std::vector<int>& gpus, GpuPlanOptions& plan) {
  auto info = host::RunProcess(helper, {"clustermax-gpu", "info"}, std::chrono::seconds(60), 1u << 20, {});
  json inf;
  try {
    inf = json::parse(util::Trim(info.out));
  } catch (const json::exception&) {
  }
  if (inf.contains("versions")) result["versions"] = inf["versions"];
  if (info.status != host::IoStatus::kOk || info.exit_code != 0 || !inf.contains("devices")) {
    std::string why = inf.contains("error") ? inf["error"].get<std::string>()
                      : !info.error.empty() ? info.error
                                            : std::string(util::Trim(info.err.empty() ? info.out : info.err));
    return "no usable CUDA GPU: " + why;
  }
  gpus = o.gpus;
  const json& devs = inf["devices"];
  if (gpus.empty()) {
    for (const auto& d : devs) gpus.push_back(d["index"]);
  }
  for (int g : gpus) {
    if (g < 0 || g >= static_cast<int>(devs.size())) {
      throw std::invalid_argument(fmt::format("--gpus: there is no GPU {} (this node has {})", g, devs.size()));
    }
  }
  json gpu_list = json::array();
  plan = o.plan;
  plan.gpu_count = static_cast<int>(gpus.size());
  std::string min_cc;
  plan.memory_bytes = UINT64_MAX;
  for (int g : gpus) {
    json d = devs[g];
    json model = MatchGpuModel(d["name"], EmbeddedGpuPeaks());
    d["model"] = model.is_null() ? json(nullptr) : model["id"];
    gpu_list.push_back(d);
    std::string cc = d["compute_capability"];
    if (min_cc.empty() || std::stod(cc) < std::stod(min_cc)) min_cc = cc;
    plan.memory_bytes = std::min<uint64_t>(plan.memory_bytes, d["memory_bytes"].get<uint64_t>());
  }
  plan.compute_capability = min_cc;
  result["gpus"] = gpu_list;
  if (o.progress) {
    o.progress(fmt::format("{} GPU(s): {}, compute capability {}, helper {}", gpus.size(),
                           devs[gpus[0]]["name"].get<std::string>(), min_cc, helper));
  }
  return std::nullopt;
}

// Our own work directory (a temporary one unless given) goes on every way out, an exception included.
struct WorkDir {
  fs::path dir;
  bool ours;
  explicit WorkDir(const fs::path& given)
      : dir(given.empty() ? fs::temp_directory_path() / fmt::format("clustermax-gpu-{}", getpid()) : given),
        ours(given.empty()) {
    fs::create_directories(dir);
  }
  ~WorkDir() {
    std::error_code ec;
    if (ours) fs::remove_all(dir, ec);
  }
};

}  // namespace

void CollectGpuRows(json& rows, const std::vector<int>& gpus, const std::vector<GpuJobOutcome>& outcomes,
                    const GpuSuite& suite) {
  for (auto& row : rows) {
    if (row.contains("na")) continue;
    for (size_t g = 0; g < gpus.size() && g < outcomes.size(); ++g) {
      const GpuJobOutcome& o = outcomes[g];
      json rec;
      for (const auto& l : o.lines) {
        if (l.value("type", "") == "result" && l.value("id", "") == row["id"]) rec = AnalyzeGpuItem(row, l);
      }
      if (rec.is_null())
        rec = {{"status", "error"},
               {"error", "not run: " + (o.failure.empty() ? std::string("no result line") : o.failure)}};
      rec["gpu"] = gpus[g];
      row["gpus"].push_back(std::move(rec));
    }
    // Across GPUs: the slowest and the best of the headline figure, and their spread.
    const char* key = suite.headline;
    const bool higher = suite.higher;
    double lo = 0, hi = 0;
    int slow = -1, n = 0;
    for (const auto& rec : row["gpus"]) {
      if (!rec.contains(key) || !rec[key].is_number()) continue;
      double v = rec[key];
      double worse = higher ? v : -v;
      if (n == 0 || worse < (higher ? lo : -lo)) {
        lo = v;
        slow = rec["gpu"];
      }
      if (n == 0 || (higher ? v > hi : v < hi)) hi = v;
      ++n;
    }
    if (n > 0) {
      row["summary"] = {
          {"metric", key},
          {"unit", suite.unit},
          {"slowest", RoundTo(lo, 3)},
          {"slowest_gpu", slow},
          {"best", RoundTo(hi, 3)},
          {"spread_pct", hi != 0 ? RoundTo(std::abs(hi - lo) / std::abs(higher ? hi : lo) * 100, 2) : 0.0}};
    }
  }
}

std::string FindGpuHelper(const std::string& explicit_path) {
  if (!explicit_path.empty()) return access(explicit_path.c_str(), X_OK) == 0 ? explicit_path : "";
  if (const char* env = std::getenv("CLUSTERMAX_GPU_HELPER"); env && *env)
    return access(env, X_OK) == 0 ? std::string(env) : "";
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& p :
         {self.parent_path() / "clustermax-gpu", self.parent_path() / "../lib/clustermax/clustermax-gpu"}) {
      if (access(p.c_str(), X_OK) == 0) return p.lexically_normal().string();
    }
  }
  return "";
}

json AnalyzeGpuItem(const json& item, const json& line) {
  json r = {{"status", "ok"}};
  if (line.contains("wall_s")) r["wall_s"] = RoundTo(line["wall_s"].get<double>(), 3);
  if (line.contains("error")) {
    std::string e = line["error"];
    // The library has no kernel for this precision on this GPU: not applicable, with its words.
    bool na = e.rfind("cuBLASLt has no algorithm", 0) == 0 || e.find("does not take") != std::string::npos;
    r["status"] = na ? "n/a" : "error";
    r[na ? "reason" : "error"] = e;
    return r;
  }
  std::string kind = item.value("kind", "");
  auto times = line.value("times_ms", std::vector<double>{});
  if (kind == "launch") {
    json ev = Stats(line.value("event_us", std::vector<double>{}));
    json wall = Stats(line.value("wall_us", std::vector<double>{}));
    r["event_us"] = RoundTo(ev.value("median", 0.0), 3);
    r["wall_us"] = RoundTo(wall.value("median", 0.0), 3);
    r["event_stats_us"] = ev;
    r["wall_stats_us"] = wall;
    return r;
  }
  json st = Stats(times);
  r["time_ms"] = st;
  if (times.empty() || st["median"].get<double>() <= 0) {
    r["status"] = "error";
    r["error"] = "the helper returned no timings";
    return r;
  }
  double med_s = st["median"].get<double>() / 1e3, mean_s = st["mean"].get<double>() / 1e3,
         min_s = st["min"].get<double>() / 1e3;
  if (kind == "gemm" || kind == "grouped") {
    double flops = item.value("flops", 0.0), bytes = item.value("bytes", 0.0);
    r["tflops"] = RoundTo(flops / med_s / 1e12, 2);
    r["tflops_mean"] = RoundTo(flops / mean_s / 1e12, 2);
    r["tflops_max"] = RoundTo(flops / min_s / 1e12, 2);
    r["gbps"] = RoundTo(bytes / med_s / 1e9, 1);
    json check = JudgeSamples(
        line.value("samples",
                   json::object({{"got", json::array()}, {"ref", json::array()}, {"absref", json::array()}})),
        item.value("dtype", ""));
    r["check"] = check;
    if (!check["ok"].get<bool>()) r["status"] = "wrong";
    if (line.contains("algo")) r["algo"] = line["algo"];
    if (line.contains("backend")) r["backend"] = line["backend"];
  } else {
    double moved = item.value("bytes_moved", 0.0);
    r["gbps"] = RoundTo(moved / med_s / 1e9, 2);
    r["gbps_max"] = RoundTo(moved / min_s / 1e9, 2);
    uint64_t wrong = line.value("wrong", uint64_t{0});
    bool verified = line.value("verified", true);
    r["check"] = {{"wrong", wrong}, {"verified", verified}, {"ok", wrong == 0}};
    if (wrong) r["status"] = "wrong";
    for (const char* k : {"blocks", "cpus", "peer_access"}) {
      if (line.contains(k)) r[k] = line[k];
    }
  }
  return r;
}

json RunGpuBench(const GpuBenchOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  json result = {{"kind", "clustermax.bench.gpu"},
                 {"schema_version", 1},
                 {"tool_version", std::string(core::kToolVersion)},
                 {"host", util::Hostname()},
                 {"started", util::FormatRfc3339(std::chrono::system_clock::now())},
                 {"mode", o.plan.full ? "full" : "quick"}};
  auto skip = [&](const std::string& why) {
    result["status"] = "skip";
    result["reason"] = why;
    result["seconds"] = RoundTo(Seconds(t0), 3);
    return result;
  };
  std::string helper = FindGpuHelper(o.helper);
  if (helper.empty()) {
    return skip(
        o.helper.empty()
            ? "the GPU benchmark helper clustermax-gpu is not installed next to this binary (built without CUDA?)"
            : "the GPU benchmark helper " + o.helper + " does not exist or is not executable");
  }
  result["helper"] = helper;
  std::vector<int> gpus;
  GpuPlanOptions plan;
  if (auto why = Discover(o, helper, result, gpus, plan)) return skip(*why);
  WorkDir work(o.work_dir);
  GpuTelemetry tele;
  if (o.telemetry) tele.Start();
  double warmup = o.warmup_s.value_or(o.plan.full ? 30.0 : 10.0);
  Runner runner(o, helper, work.dir, gpus, plan, warmup);
  std::vector<std::string> suites = o.plan.suites.empty() ? GpuSuites() : o.plan.suites;
  json out_suites = json::object(), out_order = json::array();
  size_t suites_done = 0;
  for (const auto& key : suites) {
    if (o.fraction) o.fraction(static_cast<double>(suites_done++) / static_cast<double>(suites.size()));
    if (Cancelled()) break;
    const GpuSuite* s = FindGpuSuite(key);
    if (!s)
      throw std::invalid_argument(fmt::format("unknown GPU suite '{}' (known: {})", key, fmt::join(GpuSuites(), ", ")));
    double from = tele.Now();
    auto ts = std::chrono::steady_clock::now();
    json suite_out = RunSuite(*s, runner, say);
    suite_out["wall_s"] = RoundTo(Seconds(ts), 2);
    if (o.telemetry) suite_out["telemetry"] = tele.Summary(from, tele.Now());
    out_suites[key] = suite_out;
    out_order.push_back(key);
    say(fmt::format("{}: done in {:.1f} s", key, Seconds(ts)));
  }
  if (o.telemetry) {
    tele.Stop();
    result["telemetry"] = tele.available() ? tele.Summary(0, 1e18) : json(nullptr);
    if (!tele.available()) result["telemetry_note"] = "no NVML samples: " + tele.error();
  }
  result["status"] = "ok";
  result["suites"] = out_suites;
  result["suite_order"] = out_order;
  result["plan"] = {{"precisions", o.plan.precisions},
                    {"models", o.plan.models},
                    {"warmup_s", warmup},
                    {"fp8_fast_accum", o.plan.fp8_fast_accum}};
  if (Cancelled()) result["interrupted"] = true;
  result["seconds"] = RoundTo(Seconds(t0), 2);
  return result;
}

}  // namespace clustermax::bench
