#include "bench/gpu_bench.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "bench/render.h"
#include "core/version.h"
#include "bench/workspace.h"
#include "gpu/nvml.h"
#include "host/process.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/time.h"

namespace clustermax::embedded {
extern const std::string_view kGpuPeaksJson;
}

namespace clustermax::bench {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double Round(double v, int digits) {
  double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

// The headline figure of an item kind: key, unit, and whether higher is better.
struct Headline {
  const char* key;
  const char* unit;
  bool higher;
};
Headline HeadlineOf(const json& item) {
  std::string kind = item.value("kind", "");
  std::string id = item.value("id", "");
  if (id.rfind("mem.gemv", 0) == 0) return {"gbps", "GB/s", true};
  if (kind == "gemm" || kind == "grouped") return {"tflops", "TFLOPS", true};
  if (kind == "launch") return {"event_us", "us", false};
  return {"gbps", "GB/s", true};
}

// ---------------------------------------------------------------------------------------------
// The helper and its jobs.

struct JobOutcome {
  std::vector<json> lines;  // parsed JSON lines, in order
  std::string failure;      // why the helper stopped early ("" when it printed "done")
};

JobOutcome RunJob(const std::string& helper, const json& job, const fs::path& job_file, double timeout_s) {
  util::WriteFileAtomic(job_file, job.dump());
  auto r = host::RunProcess(helper, {"clustermax-gpu", "run", "--job", job_file.string()},
                            std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000)), size_t{256} << 20, {});
  JobOutcome out;
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
    if (r.status != host::IoStatus::kOk && !r.error.empty()) {
      out.failure = "the helper could not run: " + r.error;
    } else if (r.timed_out) {
      out.failure = fmt::format("the helper ran past {:.0f} s and was stopped", timeout_s);
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

// ---------------------------------------------------------------------------------------------
// NVML telemetry: one snapshot a second on its own thread while the suites run.

class Telemetry {
 public:
  Telemetry() = default;
  Telemetry(const Telemetry&) = delete;
  Telemetry& operator=(const Telemetry&) = delete;
  ~Telemetry() { Stop(); }  // an exception between Start and Stop must not leave a joinable thread
  void Start() {
    thread_ = std::thread([this] { Loop(); });
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  // Summary per NVML device (keyed by UUID) of the samples between two points in time.
  json Summary(double from_s, double to_s) const {
    std::lock_guard<std::mutex> l(mu_);
    std::map<std::string, std::vector<const json*>> by_uuid;
    for (const auto& s : samples_) {
      double t = s["t"];
      if (t >= from_s && t <= to_s) by_uuid[s["uuid"]].push_back(&s);
    }
    json out = json::object();
    for (const auto& entry : by_uuid) {
      const std::string& uuid = entry.first;  // named references: clang 14 cannot capture structured bindings
      const std::vector<const json*>& v = entry.second;
      auto stat = [&](const char* key) -> json {
        std::vector<double> xs;
        for (const json* s : v) {
          if ((*s)[key].is_number()) xs.push_back((*s)[key].get<double>());
        }
        if (xs.empty()) return nullptr;
        std::sort(xs.begin(), xs.end());
        return {{"min", xs.front()}, {"median", xs[xs.size() / 2]}, {"max", xs.back()}};
      };
      uint64_t reasons = 0;
      for (const json* s : v) {
        if ((*s)["reasons"].is_number()) reasons |= (*s)["reasons"].get<uint64_t>();
      }
      json r = {{"samples", v.size()}, {"sm_clock_mhz", stat("sm")}, {"memory_clock_mhz", stat("mem")},
                {"power_w", stat("power")}, {"temperature_c", stat("temp")}};
      // Bits other than GPU idle (0x1), application-clock setting (0x2) and SW power cap (0x4)
      // mean the clocks were held back by heat, power brake or hardware slowdown.
      r["clocks_event_reasons"] = reasons;
      r["throttled"] = (reasons & ~uint64_t{0x7}) != 0;
      out[uuid] = r;
    }
    return out;
  }
  bool available() const {
    std::lock_guard<std::mutex> l(mu_);
    return !samples_.empty();
  }
  std::string error() const {
    std::lock_guard<std::mutex> l(mu_);
    return error_;
  }
  double Now() const { return Seconds(t0_); }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    while (!stop_) {
      l.unlock();
      auto r = gpu::QueryNvml(std::chrono::milliseconds(2000));
      double t = Now();
      l.lock();
      if (r.status != gpu::NvmlStatus::kOk) {
        error_ = r.error.empty() ? "NVML unavailable" : r.error;
        if (samples_.empty()) break;  // no NVML on this node: stop trying
      } else {
        for (const auto& d : r.data.value("devices", json::array())) {
          const json& c = d.value("clocks_mhz", json::object());
          samples_.push_back({{"t", t}, {"uuid", d.value("uuid", json(nullptr)).is_string() ? d["uuid"].get<std::string>() : ""},
                              {"sm", c.value("sm", json(nullptr))}, {"mem", c.value("memory", json(nullptr))},
                              {"power", d.value("power_draw_w", json(nullptr))}, {"temp", d.value("temperature_c", json(nullptr))},
                              {"reasons", d.value("clocks_event_reasons", json(nullptr))}});
        }
      }
      cv_.wait_for(l, std::chrono::seconds(1), [this] { return stop_; });
    }
  }
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<json> samples_;
  std::string error_;
  std::thread thread_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

// ---------------------------------------------------------------------------------------------

// Fills each row's per-GPU records from the helpers' lines; `label` tells apart the same items
// run alone and on all GPUs at once.
void Collect(json& rows, const std::vector<int>& gpus, const std::vector<JobOutcome>& outcomes) {
  for (auto& row : rows) {
    if (row.contains("na")) continue;
    for (size_t g = 0; g < gpus.size() && g < outcomes.size(); ++g) {
      const JobOutcome& o = outcomes[g];
      json rec;
      for (const auto& l : o.lines) {
        if (l.value("type", "") == "result" && l.value("id", "") == row["id"]) rec = AnalyzeGpuItem(row, l);
      }
      if (rec.is_null()) rec = {{"status", "error"}, {"error", "not run: " + (o.failure.empty() ? std::string("no result line") : o.failure)}};
      rec["gpu"] = gpus[g];
      row["gpus"].push_back(std::move(rec));
    }
    // Across GPUs: the slowest and the best of the headline figure, and their spread.
    Headline h = HeadlineOf(row);
    double lo = 0, hi = 0;
    int slow = -1, n = 0;
    for (const auto& rec : row["gpus"]) {
      if (!rec.contains(h.key) || !rec[h.key].is_number()) continue;
      double v = rec[h.key];
      double worse = h.higher ? v : -v;
      if (n == 0 || worse < (h.higher ? lo : -lo)) {
        lo = v;
        slow = rec["gpu"];
      }
      if (n == 0 || (h.higher ? v > hi : v < hi)) hi = v;
      ++n;
    }
    if (n > 0) {
      row["summary"] = {{"metric", h.key}, {"unit", h.unit}, {"slowest", Round(lo, 3)}, {"slowest_gpu", slow}, {"best", Round(hi, 3)},
                        {"spread_pct", hi != 0 ? Round(std::abs(hi - lo) / std::abs(h.higher ? hi : lo) * 100, 2) : 0.0}};
    }
  }
}

// The MAMF figures of one GPU from its rows: best mean (the published statistic), best median and
// best max, each with its shape, and the arithmetic and geometric mean of the per-shape means.
json MamfSummary(const json& rows, const std::string& precision, int gpu) {
  json best_mean, best_median, best_max;
  double s = 0, logs = 0;
  int n = 0;
  // The best-of figures come from the full protocol (stage 2) where it ran.
  bool staged = false;
  for (const auto& row : rows) {
    if (row.value("precision", "") != precision || row.value("stage", 1) != 2) continue;
    for (const auto& rec : row["gpus"]) staged |= rec["gpu"] == gpu && rec.value("status", "") == "ok";
  }
  for (const auto& row : rows) {
    if (row.value("precision", "") != precision || !row.contains("gpus")) continue;
    for (const auto& rec : row["gpus"]) {
      if (rec["gpu"] != gpu || rec.value("status", "") != "ok") continue;
      json shape = {{"m", row["m"]}, {"n", row["n"]}, {"k", row["k"]}};
      if (staged && row.value("stage", 1) != 2) {
        double v = rec["tflops_mean"];
        s += v;
        logs += std::log(v);
        ++n;
        continue;
      }
      auto better = [&](json& slot, const char* key) {
        if (slot.is_null() || rec[key].get<double>() > slot["tflops"].get<double>()) slot = {{"tflops", rec[key]}, {"shape", shape}, {"id", row["id"]}};
      };
      better(best_mean, "tflops_mean");
      better(best_median, "tflops");
      better(best_max, "tflops_max");
      if (row.value("stage", 1) == 1) {
        double v = rec["tflops_mean"];
        s += v;
        logs += std::log(v);
        ++n;
      }
    }
  }
  if (best_mean.is_null()) return nullptr;
  return {{"gpu", gpu}, {"best_mean", best_mean}, {"best_median", best_median}, {"best_max", best_max},
          {"stage1_shapes", n}, {"arithmetic_mean_tflops", n ? Round(s / n, 2) : 0.0},
          {"geometric_mean_tflops", n ? Round(std::exp(logs / n), 2) : 0.0}};
}

}  // namespace

std::string FindGpuHelper(const std::string& explicit_path) {
  if (!explicit_path.empty()) return access(explicit_path.c_str(), X_OK) == 0 ? explicit_path : "";
  if (const char* env = std::getenv("CLUSTERMAX_GPU_HELPER"); env && *env) return access(env, X_OK) == 0 ? std::string(env) : "";
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (const fs::path& p : {self.parent_path() / "clustermax-gpu", self.parent_path() / "../lib/clustermax/clustermax-gpu"}) {
      if (access(p.c_str(), X_OK) == 0) return p.lexically_normal().string();
    }
  }
  return "";
}

json AnalyzeGpuItem(const json& item, const json& line) {
  json r = {{"status", "ok"}};
  if (line.contains("wall_s")) r["wall_s"] = Round(line["wall_s"].get<double>(), 3);
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
    r["event_us"] = Round(ev.value("median", 0.0), 3);
    r["wall_us"] = Round(wall.value("median", 0.0), 3);
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
  double med_s = st["median"].get<double>() / 1e3, mean_s = st["mean"].get<double>() / 1e3, min_s = st["min"].get<double>() / 1e3;
  if (kind == "gemm" || kind == "grouped") {
    double flops = item.value("flops", 0.0), bytes = item.value("bytes", 0.0);
    r["tflops"] = Round(flops / med_s / 1e12, 2);
    r["tflops_mean"] = Round(flops / mean_s / 1e12, 2);
    r["tflops_max"] = Round(flops / min_s / 1e12, 2);
    r["gbps"] = Round(bytes / med_s / 1e9, 1);
    json check = JudgeSamples(line.value("samples", json::object({{"got", json::array()}, {"ref", json::array()}, {"absref", json::array()}})),
                              item.value("dtype", ""));
    r["check"] = check;
    if (!check["ok"].get<bool>()) r["status"] = "wrong";
    if (line.contains("algo")) r["algo"] = line["algo"];
    if (line.contains("backend")) r["backend"] = line["backend"];
  } else {
    double moved = item.value("bytes_moved", 0.0);
    r["gbps"] = Round(moved / med_s / 1e9, 2);
    r["gbps_max"] = Round(moved / min_s / 1e9, 2);
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

const json& EmbeddedGpuPeaks() {
  static const json j = json::parse(embedded::kGpuPeaksJson);
  return j;
}

json MatchGpuModel(const std::string& name, const json& peaks) {
  for (const auto& m : peaks["models"]) {
    bool excluded = false;
    for (const auto& x : m["exclude"]) excluded |= name.find(x.get<std::string>()) != std::string::npos;
    if (excluded) continue;
    for (const auto& pat : m["match"]) {
      if (name.find(pat.get<std::string>()) != std::string::npos) return m;
    }
  }
  return nullptr;
}

json RunGpuBench(const GpuBenchOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  auto say = [&](const std::string& s) {
    if (o.progress) o.progress(s);
  };
  json result = {{"kind", "clustermax.bench.gpu"}, {"schema_version", 1}, {"tool_version", std::string(core::kToolVersion)},
                 {"host", util::Hostname()},
                 {"started", util::FormatRfc3339(std::chrono::system_clock::now())}, {"mode", o.plan.full ? "full" : "quick"}};
  std::string helper = FindGpuHelper(o.helper);
  auto skip = [&](const std::string& why) {
    result["status"] = "skip";
    result["reason"] = why;
    result["seconds"] = Round(Seconds(t0), 3);
    return result;
  };
  if (helper.empty()) {
    return skip(o.helper.empty() ? "the GPU benchmark helper clustermax-gpu is not installed next to this binary (built without CUDA?)"
                                 : "the GPU benchmark helper " + o.helper + " does not exist or is not executable");
  }
  result["helper"] = helper;
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
    return skip("no usable CUDA GPU: " + why);
  }
  // Devices to run on.
  std::vector<int> gpus = o.gpus;
  const json& devs = inf["devices"];
  if (gpus.empty()) {
    for (const auto& d : devs) gpus.push_back(d["index"]);
  }
  for (int g : gpus) {
    if (g < 0 || g >= static_cast<int>(devs.size())) {
      throw std::invalid_argument(fmt::format("--gpus: there is no GPU {} (this node has {})", g, devs.size()));
    }
  }
  const json& peaks = EmbeddedGpuPeaks();
  json gpu_list = json::array();
  GpuPlanOptions plan = o.plan;
  plan.gpu_count = static_cast<int>(gpus.size());
  std::string min_cc;
  plan.memory_bytes = UINT64_MAX;
  for (int g : gpus) {
    json d = devs[g];
    json model = MatchGpuModel(d["name"], peaks);
    d["model"] = model.is_null() ? json(nullptr) : model["id"];
    gpu_list.push_back(d);
    std::string cc = d["compute_capability"];
    if (min_cc.empty() || std::stod(cc) < std::stod(min_cc)) min_cc = cc;
    plan.memory_bytes = std::min<uint64_t>(plan.memory_bytes, d["memory_bytes"].get<uint64_t>());
  }
  plan.compute_capability = min_cc;
  result["gpus"] = gpu_list;
  say(fmt::format("{} GPU(s): {}, compute capability {}, helper {}", gpus.size(), devs[gpus[0]]["name"].get<std::string>(), min_cc, helper));

  fs::path work = o.work_dir;
  if (work.empty()) {
    work = fs::temp_directory_path() / fmt::format("clustermax-gpu-{}", getpid());
  }
  fs::create_directories(work);
  // Our own work directory goes on every way out, an exception included.
  struct RemoveWork {
    fs::path dir;
    ~RemoveWork() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } remove_work{o.work_dir.empty() ? work : fs::path()};

  Telemetry tele;
  if (o.telemetry) tele.Start();
  double warmup = o.warmup_s.value_or(o.plan.full ? 30.0 : 10.0);
  bool warmed = false;
  std::vector<std::string> suites = o.plan.suites.empty() ? GpuSuites() : o.plan.suites;
  json out_suites = json::object();
  json out_order = json::array();
  // Runs `items` on each GPU of `on` at once (one helper per GPU), or one after another.
  auto run_on = [&](const std::vector<int>& on, const json& items, const std::string& tag, bool concurrent) {
    std::vector<JobOutcome> outcomes(on.size());
    json runnable = json::array();
    for (const auto& it : items) {
      if (!it.contains("na")) runnable.push_back(it);
    }
    if (runnable.empty()) return outcomes;
    auto one = [&](size_t i) {
      json job = {{"device", on[i]}, {"items", runnable}, {"warmup_s", warmed ? 0.0 : warmup}};
      outcomes[i] = RunJob(helper, job, work / fmt::format("job-{}-gpu{}.json", tag, on[i]), o.job_timeout_s);
    };
    if (concurrent) {
      std::vector<std::thread> threads;
      for (size_t i = 0; i < on.size(); ++i) threads.emplace_back(one, i);
      for (auto& t : threads) t.join();
    } else {
      for (size_t i = 0; i < on.size(); ++i) one(i);
    }
    warmed = warmed || warmup <= 0 || std::any_of(outcomes.begin(), outcomes.end(), [](const JobOutcome& x) {
                return std::any_of(x.lines.begin(), x.lines.end(), [](const json& l) { return l.value("type", "") == "warmup"; });
              });
    return outcomes;
  };

  size_t suites_done = 0;
  for (const auto& suite : suites) {
    if (o.fraction) o.fraction(static_cast<double>(suites_done++) / static_cast<double>(suites.size()));
    if (Cancelled()) break;
    double from = tele.Now();
    auto ts = std::chrono::steady_clock::now();
    json rows = PlanSuite(suite, plan);
    size_t runnable = std::count_if(rows.begin(), rows.end(), [](const json& r) { return !r.contains("na"); });
    say(fmt::format("{}: {} item(s) on {} GPU(s){}", suite, runnable, suite == "p2p" ? 1 : gpus.size(),
                    runnable < rows.size() ? fmt::format(", {} not applicable", rows.size() - runnable) : ""));
    for (auto& r : rows) r["gpus"] = json::array();
    json suite_out = json::object();
    if (suite == "p2p") {
      // One process sees every GPU: the pairs run one after another from the first GPU's helper.
      std::vector<int> first = {gpus[0]};
      json mapped = rows;
      for (auto& r : mapped) {
        if (r.contains("src")) {
          r["src"] = gpus[r["src"].get<int>()];
          r["dst"] = gpus[r["dst"].get<int>()];
        }
      }
      auto outcomes = run_on(first, mapped, suite, false);
      Collect(rows, first, outcomes);
    } else if (suite == "pcie") {
      // Alone (one GPU at a time), then all GPUs at once (host link and root-port contention).
      auto alone = run_on(gpus, rows, suite, false);
      Collect(rows, gpus, alone);
      if (gpus.size() > 1) {
        json all = rows;
        for (auto& r : all) {
          r["id"] = r["id"].get<std::string>() + ".all-gpus";
          r["gpus"] = json::array();
          r["concurrent"] = true;
          r.erase("summary");
        }
        auto outcomes = run_on(gpus, all, suite + "-all", true);
        Collect(all, gpus, outcomes);
        for (auto& r : all) rows.push_back(std::move(r));
      }
    } else if (suite == "mamf") {
      auto stage1 = run_on(gpus, rows, suite + "-stage1", true);
      Collect(rows, gpus, stage1);
      // Stage 2 per GPU: each refines around its own best shapes.
      std::set<std::string> precisions;
      for (const auto& r : rows) precisions.insert(r.value("precision", ""));
      std::vector<JobOutcome> outcomes(gpus.size());
      std::vector<json> refine(gpus.size(), json::array());
      for (size_t g = 0; g < gpus.size(); ++g) {
        json mine = json::array();
        for (const auto& r : rows) {
          for (const auto& rec : r["gpus"]) {
            if (rec["gpu"] == gpus[g] && rec.value("status", "") == "ok") {
              json x = {{"precision", r["precision"]}, {"m", r["m"]}, {"n", r["n"]}, {"k", r["k"]}, {"tflops_mean", rec["tflops_mean"]}};
              mine.push_back(x);
            }
          }
        }
        for (const auto& p : precisions) {
          for (auto& it : PlanMamfRefine(mine, p, plan)) refine[g].push_back(it);
        }
      }
      std::vector<std::thread> threads;
      for (size_t g = 0; g < gpus.size(); ++g) {
        threads.emplace_back([&, g] {
          json job = {{"device", gpus[g]}, {"items", refine[g]}, {"warmup_s", 0.0}};
          outcomes[g] = RunJob(helper, job, work / fmt::format("job-mamf-stage2-gpu{}.json", gpus[g]), o.job_timeout_s);
        });
      }
      for (auto& t : threads) t.join();
      // Stage-2 rows are per GPU (their shapes differ): one row per (GPU, shape).
      for (size_t g = 0; g < gpus.size(); ++g) {
        for (auto& r : refine[g]) r["gpus"] = json::array();
        Collect(refine[g], {gpus[g]}, {outcomes[g]});
        for (auto& r : refine[g]) rows.push_back(std::move(r));
      }
      json summary = json::object();
      for (const auto& p : precisions) {
        json per = json::array();
        for (int g : gpus) {
          json s = MamfSummary(rows, p, g);
          if (!s.is_null()) per.push_back(s);
        }
        summary[p] = per;
      }
      suite_out["summary"] = summary;
    } else {
      auto outcomes = run_on(gpus, rows, suite, true);
      Collect(rows, gpus, outcomes);
    }
    suite_out["items"] = rows;
    suite_out["wall_s"] = Round(Seconds(ts), 2);
    if (o.telemetry) suite_out["telemetry"] = tele.Summary(from, tele.Now());
    out_suites[suite] = suite_out;
    out_order.push_back(suite);
    say(fmt::format("{}: done in {:.1f} s", suite, Seconds(ts)));
  }
  if (o.telemetry) {
    tele.Stop();
    result["telemetry"] = tele.available() ? tele.Summary(0, 1e18) : json(nullptr);
    if (!tele.available()) result["telemetry_note"] = "no NVML samples: " + tele.error();
  }
  result["status"] = "ok";
  result["suites"] = out_suites;
  result["suite_order"] = out_order;
  result["plan"] = {{"precisions", o.plan.precisions}, {"models", o.plan.models}, {"warmup_s", warmup},
                    {"fp8_fast_accum", o.plan.fp8_fast_accum}};
  if (Cancelled()) result["interrupted"] = true;
  result["seconds"] = Round(Seconds(t0), 2);
  return result;
}

// ---------------------------------------------------------------------------------------------
// Grades.

namespace {

struct PerGpuBest {
  std::map<int, double> value;  // gpu -> best (or worst for lower-is-better) over the rows
  std::map<int, std::string> where;
  std::string na_reason;
};

// Over the rows `pick` selects: per GPU the best value of `key` (higher better).
template <typename Pred>
PerGpuBest BestPerGpu(const json& result, const std::string& suite, const char* key, Pred pick, bool higher = true) {
  PerGpuBest b;
  if (!result.contains("suites") || !result["suites"].contains(suite)) return b;
  for (const auto& row : result["suites"][suite]["items"]) {
    if (!pick(row)) continue;
    if (row.contains("na")) {
      if (b.na_reason.empty()) b.na_reason = row["na"];
      continue;
    }
    for (const auto& rec : row["gpus"]) {
      if (rec.value("status", "") != "ok") {
        if (rec.contains("reason") && b.na_reason.empty()) b.na_reason = rec["reason"];
        continue;
      }
      if (!rec.contains(key) || !rec[key].is_number()) continue;
      int g = rec["gpu"];
      double v = rec[key];
      if (!b.value.count(g) || (higher ? v > b.value[g] : v < b.value[g])) {
        b.value[g] = v;
        b.where[g] = row["id"];
      }
    }
  }
  return b;
}

MetricValue NodeValue(const std::string& id, const PerGpuBest& b, bool higher, const std::string& what) {
  MetricValue m{id, std::nullopt, "", ""};
  if (b.value.empty()) {
    m.why_missing = b.na_reason.empty() ? what + " was not measured" : b.na_reason;
    return m;
  }
  auto slow = b.value.begin();
  for (auto it = b.value.begin(); it != b.value.end(); ++it) {
    if (higher ? it->second < slow->second : it->second > slow->second) slow = it;
  }
  m.value = slow->second;
  m.detail = b.value.size() > 1 ? fmt::format("slowest of {} GPUs: GPU {} ({})", b.value.size(), slow->first, b.where.at(slow->first))
                                : b.where.at(slow->first);
  return m;
}

std::vector<std::string> PrecisionsIn(const json& result, const std::string& suite) {
  std::vector<std::string> out;
  if (!result.contains("suites") || !result["suites"].contains(suite)) return out;
  for (const auto& row : result["suites"][suite]["items"]) {
    std::string p = row.value("dtype", "");
    if (!p.empty() && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
  }
  return out;
}

bool IsGemv(const json& row) { return row.value("id", "").rfind("mem.gemv", 0) == 0; }

}  // namespace

std::vector<MetricValue> GpuMetrics(const json& r) {
  std::vector<MetricValue> out;
  if (r.value("status", "") != "ok") return out;
  for (const auto& p : PrecisionsIn(r, "gemm")) {
    out.push_back(NodeValue("gpu.gemm." + p, BestPerGpu(r, "gemm", "tflops", [&](const json& row) { return row["dtype"] == p; }), true,
                            "dense GEMM " + p));
  }
  for (const auto& p : PrecisionsIn(r, "mamf")) {
    // The summary's best mean (stage 2, the full protocol, where it ran).
    PerGpuBest b = BestPerGpu(r, "mamf", "tflops_mean", [&](const json& row) { return row["dtype"] == p; });
    b.value.clear();
    b.where.clear();
    for (const auto& g : r["suites"]["mamf"].value("summary", json::object()).value(p, json::array())) {
      b.value[g["gpu"].get<int>()] = g["best_mean"]["tflops"].get<double>();
      b.where[g["gpu"].get<int>()] = g["best_mean"]["id"].get<std::string>();
    }
    out.push_back(NodeValue("gpu.mamf." + p, b, true, "MAMF " + p));
  }
  for (const auto& p : PrecisionsIn(r, "grouped-gemm")) {
    out.push_back(NodeValue("gpu.grouped." + p,
                            BestPerGpu(r, "grouped-gemm", "tflops",
                                       [&](const json& row) { return row["dtype"] == p && row.value("tokens_per_expert", 0) >= 512; }),
                            true, "grouped GEMM " + p));
  }
  for (const auto& p : PrecisionsIn(r, "gemv")) {
    out.push_back(NodeValue("gpu.gemv." + p, BestPerGpu(r, "gemv", "gbps", [&](const json& row) { return row["dtype"] == p && IsGemv(row); }),
                            true, "GEMV " + p));
  }
  if (r["suites"].contains("membw")) {
    out.push_back(NodeValue("gpu.hbm", BestPerGpu(r, "membw", "gbps", [](const json&) { return true; }), true, "HBM bandwidth"));
  }
  if (r["suites"].contains("pcie")) {
    for (const char* dir : {"h2d", "d2h"}) {
      std::string id = std::string("bw.host-device.") + dir;
      out.push_back(NodeValue(std::string("gpu.host-link.") + dir, BestPerGpu(r, "pcie", "gbps", [&](const json& row) { return row["id"] == id; }),
                              true, std::string("host link ") + dir));
    }
  }
  if (r["suites"].contains("p2p")) {
    // The weakest pair decides: per source GPU the slowest of its outgoing unidirectional copies.
    PerGpuBest worst = BestPerGpu(r, "p2p", "gbps", [](const json& row) { return !row.value("bidir", false); }, false);
    PerGpuBest pairs;
    pairs.na_reason = worst.na_reason;
    if (!worst.value.empty()) {
      for (const auto& row : r["suites"]["p2p"]["items"]) {
        if (row.value("bidir", false) || !row.contains("summary")) continue;
        int src = row["src"];
        double v = row["summary"]["slowest"];
        if (!pairs.value.count(src) || v < pairs.value[src]) {
          pairs.value[src] = v;
          pairs.where[src] = row["id"];
        }
      }
    }
    out.push_back(NodeValue("gpu.peer", pairs, true, "peer copies"));
  }
  if (r["suites"].contains("launch")) {
    out.push_back(NodeValue("gpu.launch", BestPerGpu(r, "launch", "event_us", [](const json&) { return true; }, false), false,
                            "kernel launch latency"));
  }
  // Wrong results anywhere: a fast wrong answer is a FAIL.
  uint64_t wrong = 0, checked = 0;
  std::string first;
  for (const auto& [name, s] : r["suites"].items()) {
    for (const auto& row : s["items"]) {
      for (const auto& rec : row.value("gpus", json::array())) {
        if (rec.contains("check")) ++checked;
        if (rec.value("status", "") == "wrong") {
          if (first.empty()) first = fmt::format("{} on GPU {}", row["id"].get<std::string>(), rec["gpu"].get<int>());
          ++wrong;
        }
      }
    }
  }
  MetricValue w{"gpu.wrong-results", static_cast<double>(wrong), "", fmt::format("{} checked results{}", checked, first.empty() ? "" : "; first: " + first)};
  if (checked == 0) {
    w.value.reset();
    w.why_missing = "no result was checked";
  }
  out.push_back(w);
  // Intra-node consistency: the largest shortfall of one GPU below the node's best.
  if (r["gpus"].size() < 2) {
    out.push_back({"gpu.consistency", std::nullopt, "one GPU: nothing to compare it with", ""});
  } else {
    double worst = -1;
    std::string where;
    for (const auto& [suite, key] : std::vector<std::pair<std::string, std::string>>{{"gemm", "tflops"}, {"mamf", "tflops_mean"},
                                                                                     {"membw", "gbps"}, {"pcie", "gbps"}, {"gemv", "gbps"}}) {
      if (!r["suites"].contains(suite)) continue;
      for (const auto& row : r["suites"][suite]["items"]) {
        if (!row.contains("summary") || row.value("stage", 1) == 2) continue;
        double s = row["summary"]["spread_pct"];
        if (s > worst) {
          worst = s;
          where = fmt::format("{}: GPU {} at {} vs best {} {}", row["id"].get<std::string>(), row["summary"]["slowest_gpu"].get<int>(),
                              row["summary"]["slowest"].get<double>(), row["summary"]["best"].get<double>(), row["summary"]["unit"].get<std::string>());
        }
      }
    }
    MetricValue c{"gpu.consistency", std::nullopt, "no figure measured on two GPUs", ""};
    if (worst >= 0) {
      c.value = worst;
      c.detail = where;
    }
    out.push_back(c);
  }
  return out;
}

json GpuThresholds(const json& result, const json& peaks) {
  const json& floors = peaks["floors"];
  json model = nullptr;
  if (result.contains("gpus") && !result["gpus"].empty()) model = MatchGpuModel(result["gpus"][0].value("name", ""), peaks);
  std::string model_id = model.is_null() ? "" : model["id"].get<std::string>();
  json metrics = json::array();
  auto bar = [&](const std::string& id, const std::string& title, const char* unit, const char* floor, std::optional<double> peak,
                 const std::string& peak_what, bool higher = true) {
    const json& f = floors[floor];
    json m = {{"id", id}, {"title", title}, {"unit", unit}, {"better", higher ? "higher" : "lower"}};
    if (!peak) {
      m["pass"] = 0;
      m["warn"] = 0;
      m["source"] = model_id.empty() ? "no peak figures for this GPU in data/gpu-peaks.json" : fmt::format("no {} figure for {}", peak_what, model_id);
      m["no_bar"] = true;
    } else {
      m["pass"] = Round(f["pass"].get<double>() * *peak, 2);
      m["warn"] = Round(f["warn"].get<double>() * *peak, 2);
      m["source"] = fmt::format("{} x {} ({} {}) / {}", f["pass"].get<double>(), peak_what, model_id, *peak, f["source"].get<std::string>());
    }
    metrics.push_back(m);
  };
  auto num = [&](const json& obj, const std::string& key) -> std::optional<double> {
    if (model.is_null() || !obj.contains(key) || !obj[key].is_number()) return std::nullopt;
    return obj[key].get<double>();
  };
  json empty = json::object();
  const json& tf = model.is_null() ? empty : model["tflops"];
  const json& mamf = model.is_null() ? empty : model["mamf_tflops"];
  for (const auto& p : GpuPrecisions()) {
    bar("gpu.gemm." + p, "Dense GEMM " + p + ", best shape, slowest GPU", "TFLOPS", "gemm", num(tf, p), "dense " + p + " peak");
    std::optional<double> mp = num(mamf, p);
    if (mp) {
      bar("gpu.mamf." + p, "MAMF " + p + " (best mean), slowest GPU", "TFLOPS", "mamf", mp, "published MAMF " + p);
    } else {
      std::optional<double> pk = num(tf, p);
      if (pk) *pk *= 0.65;
      bar("gpu.mamf." + p, "MAMF " + p + " (best mean), slowest GPU", "TFLOPS", "mamf", pk, "0.65 x dense " + p + " peak");
    }
    bar("gpu.grouped." + p, "Grouped MoE GEMM " + p + " (>= 512 tokens/expert), slowest GPU", "TFLOPS", "grouped", num(tf, p), "dense " + p + " peak");
    std::optional<double> hbm = num(model.is_null() ? empty : model, "hbm_tbps");
    if (hbm) *hbm *= 1000;
    bar("gpu.gemv." + p, "GEMV " + p + " (decode-shaped), slowest GPU", "GB/s", "gemv", hbm, "HBM bandwidth");
  }
  std::optional<double> hbm = num(model.is_null() ? empty : model, "hbm_tbps");
  if (hbm) *hbm *= 1000;
  bar("gpu.hbm", "HBM bandwidth (best of copy/read/triad/memcpy), slowest GPU", "GB/s", "hbm", hbm, "HBM bandwidth");
  std::optional<double> link = num(model.is_null() ? empty : model, "host_link_gbps");
  bar("gpu.host-link.h2d", "Host to device, pinned, one GPU at a time, slowest GPU", "GB/s", "host_link", link, "host link");
  bar("gpu.host-link.d2h", "Device to host, pinned, one GPU at a time, slowest GPU", "GB/s", "host_link", link, "host link");
  bar("gpu.peer", "Peer copy, slowest pair, one direction", "GB/s", "peer", num(model.is_null() ? empty : model, "peer_gbps"), "peer link");
  const json& lf = floors["launch_us"];
  metrics.push_back({{"id", "gpu.launch"}, {"title", "Empty-kernel launch (event time per launch), slowest GPU"}, {"unit", "us"}, {"better", "lower"},
                     {"pass", lf["pass"]}, {"warn", lf["warn"]}, {"source", lf["source"]}});
  metrics.push_back({{"id", "gpu.wrong-results"}, {"title", "Results that failed the check against the reference"}, {"unit", "results"},
                     {"better", "lower"}, {"pass", 0}, {"warn", 0},
                     {"source", "performance.md 2: a fast wrong answer is a FAIL (nccl-tests #wrong, DeepGEMM calc_diff)"}});
  const json& cf = floors["consistency"];
  metrics.push_back({{"id", "gpu.consistency"}, {"title", "Largest shortfall of one GPU below the node's best"}, {"unit", "%"}, {"better", "lower"},
                     {"pass", cf["pass"]}, {"warn", cf["warn"]}, {"source", cf["source"]}});
  return {{"metrics", metrics}};
}

json GradeGpu(const json& result) {
  json thresholds = GpuThresholds(result, EmbeddedGpuPeaks());
  std::vector<MetricValue> values = GpuMetrics(result);
  for (auto& v : values) {
    for (const auto& m : thresholds["metrics"]) {
      if (m["id"] == v.id && m.value("no_bar", false) && v.value) {
        v.value.reset();  // no figure for this GPU to hold it against: SKIP, never a PASS
        v.why_missing = m["source"];
      }
    }
  }
  return Grade(values, thresholds);
}

// ---------------------------------------------------------------------------------------------
// Rendering.

namespace {

std::string Cell(const json& row) {
  if (row.contains("na")) return "n/a";
  if (!row.contains("summary")) {
    for (const auto& rec : row.value("gpus", json::array())) {
      if (rec.value("status", "") == "n/a") return "n/a";
    }
    return "error";
  }
  return fmt::format("{:.1f}", row["summary"]["slowest"].get<double>());
}

std::string RowStatus(const json& row) {
  if (row.contains("na")) return row["na"];
  std::string worst = "ok";
  for (const auto& rec : row.value("gpus", json::array())) {
    std::string s = rec.value("status", "");
    if (s == "wrong") return fmt::format("WRONG on GPU {} ({} of {} samples)", rec["gpu"].get<int>(), rec["check"].value("wrong", 0),
                                         rec["check"].value("checked", 0));
    if (s == "error") return fmt::format("error on GPU {}: {}", rec["gpu"].get<int>(), rec.value("error", ""));
    if (s == "n/a") worst = "n/a: " + rec.value("reason", "");
  }
  return worst;
}

std::string NoDot(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '.'), s.end());
  return s;
}

std::string Spread(const json& row) {
  if (!row.contains("summary") || row["gpus"].size() < 2) return "";
  return fmt::format("{:.1f}%", row["summary"]["spread_pct"].get<double>());
}

std::string PeakPct(const json& row, const json& model, const char* key) {
  if (model.is_null() || !row.contains("summary")) return "";
  std::string p = row.value("dtype", "");
  double peak = 0;
  if (std::string(key) == "tflops") {
    if (!model["tflops"].contains(p) || !model["tflops"][p].is_number()) return "";
    peak = model["tflops"][p];
  } else {
    peak = model["hbm_tbps"].get<double>() * 1000;
  }
  return fmt::format("{:.0f}%", row["summary"]["slowest"].get<double>() / peak * 100);
}

}  // namespace

std::string RenderGpu(const json& r) {
  std::string out = "clustermax bench gpu";
  if (r.value("status", "") != "ok") {
    return out + fmt::format(": SKIP ({})\n", r.value("reason", ""));
  }
  const json& v = r.value("versions", json::object());
  out += fmt::format(" ({} mode): {} GPU(s), CUDA driver {}, runtime {}, cuBLASLt {}\n", r["mode"].get<std::string>(), r["gpus"].size(),
                     v.value("cuda_driver", "?"), v.value("cuda_runtime", "?"), v.value("cublaslt", "?"));
  json model = MatchGpuModel(r["gpus"][0].value("name", ""), EmbeddedGpuPeaks());
  for (const auto& g : r["gpus"]) {
    std::string tel;
    if (r.contains("telemetry") && r["telemetry"].is_object() && r["telemetry"].contains(g.value("uuid", ""))) {
      const json& t = r["telemetry"][g["uuid"].get<std::string>()];
      auto mm = [&](const char* k, const char* unit) {
        return t[k].is_null() ? std::string("") : fmt::format(" {} {:.0f}-{:.0f}{}", k, t[k]["min"].get<double>(), t[k]["max"].get<double>(), unit);
      };
      tel = fmt::format(";{}{}{}{}", mm("sm_clock_mhz", ""), mm("power_w", ""), mm("temperature_c", ""),
                        t.value("throttled", false) ? " THROTTLED" : "");
    }
    out += fmt::format("  GPU {}: {} ({}, sm_{}, {} SMs, {:.0f} GiB){}\n", g["index"].get<int>(), g["name"].get<std::string>(),
                       g["uuid"].get<std::string>(), NoDot(g["compute_capability"].get<std::string>()), g["sm_count"].get<int>(),
                       g["memory_bytes"].get<double>() / (1u << 30), tel);
  }
  const json& s = r["suites"];
  bool multi = r["gpus"].size() > 1;
  std::string who = multi ? "slowest GPU" : "";
  if (s.contains("gemm")) {
    out += fmt::format("\n  gemm: dense cuBLASLt, TN, median time, L2 flushed before each call{}\n", multi ? "; figures of the slowest GPU" : "");
    out += fmt::format("    {:<34} {:>9} {:>7} {:>7}  {}\n", "id", "TFLOPS", "% peak", "spread", "check");
    for (const auto& row : s["gemm"]["items"]) {
      out += fmt::format("    {:<34} {:>9} {:>7} {:>7}  {}\n", row["id"].get<std::string>(), Cell(row), PeakPct(row, model, "tflops"), Spread(row), RowStatus(row));
    }
  }
  if (s.contains("mamf")) {
    out += "\n  mamf: best mean TFLOPS over the sweep (the published statistic), stage 2 = re-measured best shapes, 50 warm-ups + 100 timed\n";
    out += fmt::format("    {:<6} {:>4} {:>10} {:<20} {:>10} {:>10} {:>9} {:>9} {:>7}\n", "dtype", "GPU", "best mean", "shape", "best med", "best max", "amean", "gmean", "% peak");
    const json summary = s["mamf"].value("summary", json::object());
    for (const auto& [p, per] : summary.items()) {
      for (const auto& g : per) {
        const json& sh = g["best_mean"]["shape"];
        std::string pct;
        if (!model.is_null() && model["tflops"].contains(p) && model["tflops"][p].is_number()) {
          pct = fmt::format("{:.1f}%", g["best_mean"]["tflops"].get<double>() / model["tflops"][p].get<double>() * 100);
        }
        out += fmt::format("    {:<6} {:>4} {:>10.1f} {:<20} {:>10.1f} {:>10.1f} {:>9.1f} {:>9.1f} {:>7}\n", p, g["gpu"].get<int>(),
                           g["best_mean"]["tflops"].get<double>(),
                           fmt::format("{}x{}x{}", sh["m"].get<int64_t>(), sh["n"].get<int64_t>(), sh["k"].get<int64_t>()),
                           g["best_median"]["tflops"].get<double>(), g["best_max"]["tflops"].get<double>(), g["arithmetic_mean_tflops"].get<double>(),
                           g["geometric_mean_tflops"].get<double>(), pct);
      }
    }
    uint64_t bad = 0;
    for (const auto& row : s["mamf"]["items"]) bad += RowStatus(row) != "ok" && !row.contains("na");
    if (bad) out += fmt::format("    {} shape(s) failed or gave wrong results (see the JSON)\n", bad);
  }
  if (s.contains("grouped-gemm")) {
    // One line per model, projection, precision and routing; one column per tokens-per-expert.
    std::vector<int64_t> ts;
    for (const auto& row : s["grouped-gemm"]["items"]) {
      int64_t t = row.value("tokens_per_expert", int64_t{0});
      if (std::find(ts.begin(), ts.end(), t) == ts.end()) ts.push_back(t);
    }
    out += fmt::format("\n  grouped-gemm: MoE experts, useful TFLOPS by tokens per expert{} (GB/s in the JSON)\n", multi ? ", slowest GPU" : "");
    std::string head = fmt::format("    {:<38}", "model proj dtype EP routing");
    for (int64_t t : ts) head += fmt::format(" {:>8}", fmt::format("T={}", t));
    out += head + "  check\n";
    std::map<std::string, std::vector<const json*>> lines;
    std::vector<std::string> order;
    for (const auto& row : s["grouped-gemm"]["items"]) {
      std::string key = fmt::format("{} {} {} ep{} {}", row["model"].get<std::string>(), row["proj"].get<std::string>(), row["dtype"].get<std::string>(),
                                    row["ep"].get<int>(), row["routing"].get<std::string>());
      if (!lines.count(key)) order.push_back(key);
      lines[key].push_back(&row);
    }
    for (const auto& key : order) {
      std::string line = fmt::format("    {:<38}", key), status = "ok";
      for (int64_t t : ts) {
        std::string c = "-";
        for (const json* row : lines[key]) {
          if ((*row)["tokens_per_expert"] == t) {
            c = Cell(*row);
            if (RowStatus(*row) != "ok") status = RowStatus(*row);
          }
        }
        line += fmt::format(" {:>8}", c);
      }
      out += line + "  " + status + "\n";
    }
  }
  auto simple = [&](const std::string& suite, const std::string& title, const char* unit, bool peak) {
    if (!s.contains(suite)) return;
    out += fmt::format("\n  {}: {}\n", suite, title);
    out += fmt::format("    {:<34} {:>9} {:>7} {:>7}  {}\n", "id", unit, peak ? "% peak" : "", "spread", "check");
    for (const auto& row : s[suite]["items"]) {
      out += fmt::format("    {:<34} {:>9} {:>7} {:>7}  {}\n", row["id"].get<std::string>(), Cell(row), peak ? PeakPct(row, model, "gbps") : "",
                         Spread(row), RowStatus(row));
    }
  };
  simple("gemv", "decode-shaped GEMV, GB/s counted as weight + vectors, L2 flushed", "GB/s", true);
  simple("membw", "device memory, GB/s counted as bytes read plus written", "GB/s", true);
  simple("pcie", "pinned host memory near the GPU; .all-gpus = every GPU at once", "GB/s", false);
  simple("p2p", "peer copies (cudaMemcpyPeerAsync), src-dst", "GB/s", false);
  if (s.contains("launch")) {
    for (const auto& row : s["launch"]["items"]) {
      for (const auto& rec : row.value("gpus", json::array())) {
        if (rec.value("status", "") == "ok") {
          out += fmt::format("\n  launch: GPU {}: {:.2f} us per launch by events, {:.2f} us launch + synchronise by wall clock (medians)",
                             rec["gpu"].get<int>(), rec["event_us"].get<double>(), rec["wall_us"].get<double>());
        } else {
          out += fmt::format("\n  launch: GPU {}: {}", rec["gpu"].get<int>(), rec.value("error", rec.value("reason", "")));
        }
      }
    }
    out += "\n";
  }
  if (r.contains("grades")) out += "\n" + RenderGrades(r["grades"], "bars from data/gpu-peaks.json for this GPU model");
  out += fmt::format("\nresult: {}{} in {:.1f} s\n", r.value("verdict", "?"), r.value("interrupted", false) ? " (INTERRUPTED)" : "",
                     r["seconds"].get<double>());
  return out;
}

std::string RenderGpuList() {
  std::string out = "clustermax bench gpu: suites (default: all, in this order), each on every GPU of the node at once\n\n";
  GpuPlanOptions quick, full;
  full.full = true;
  full.gpu_count = quick.gpu_count = 8;
  full.compute_capability = quick.compute_capability = "10.0";
  full.memory_bytes = quick.memory_bytes = uint64_t{180} << 30;
  const std::map<std::string, std::string> what = {
      {"gemm", "dense GEMM through cuBLASLt per precision, square shapes, fastest of the heuristic's top 4 algorithms"},
      {"mamf", "maximum achievable matmul FLOPS: sweep, then the best shapes and their neighbours re-measured (50 + 100)"},
      {"grouped-gemm", "MoE expert GEMMs (gate_up, down) of real models, tokens per expert from decode to prefill, uniform and skewed"},
      {"gemv", "decode-shaped GEMV (32768 x 16384 weight, batch 1 and 16): memory bandwidth through cuBLASLt"},
      {"membw", "copy, read and triad kernels and the copy engine over 1 GiB arrays"},
      {"pcie", "host to device, device to host and both at once, pinned memory near the GPU, alone and all GPUs at once"},
      {"p2p", "every ordered GPU pair, one direction and both, through NVLink or PCIe"},
      {"launch", "empty-kernel launch latency by events and by wall clock"}};
  for (const auto& s : GpuSuites()) {
    out += fmt::format("  {:<13} {}\n", s, what.at(s));
    json q = PlanSuite(s, quick), f = PlanSuite(s, full);
    out += fmt::format("  {:<13} quick: {} items, full: {} items (on 8 GPUs)\n", "", q.size(), f.size());
  }
  out += "\nprecisions (gemm, mamf, grouped-gemm, gemv):\n";
  for (const auto& p : GpuPrecisions()) {
    auto h = PrecisionUnavailable(p, "9.0");
    out += fmt::format("  {:<12} {}\n", p, h ? "Blackwell and newer" : "Hopper and newer, or older where the GPU has it");
  }
  out += "  defaults: gemm all; mamf bf16, fp8; grouped-gemm bf16, fp8, fp8-1x128; gemv bf16, fp8\n";
  out += "\nshape sets:\n";
  out += "  gemm         quick 8192^3; full 4096^3, 8192^3, 16384^3\n";
  out += "  mamf         quick m, n in {1024..16384 (x2)}, k in {2048, 4096, 8192, 12288, 16384}; full 1024..16384 step 1024 (FP8 to 20480)\n";
  out += "  grouped-gemm quick T in {1, 8, 64, 512, 4096} at EP 8; full T = 1, 2, 4, ..., 4096 at EP 8 and EP 32\n";
  out += "\nMoE models (--models):\n";
  for (const auto& m : MoeModels()) {
    out += fmt::format("  {:<10} {:<30} gate_up {}x{}, down {}x{} (K x N), {} experts, top-{}\n", m.id, m.name, m.hidden, 2 * m.moe_intermediate,
                       m.moe_intermediate, m.hidden, m.experts, m.top_k);
  }
  return out;
}

}  // namespace clustermax::bench
