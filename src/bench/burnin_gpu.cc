// The GPU load of `clustermax burnin --gpu` on one node (bench/burnin.h, RunGpuBurnInRankJob): one
// GPU helper process per GPU, read line by line as it runs, NVML telemetry and health snapshots
// around it. The helper's side is src/gpubench/suites/burnin.cc.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "bench/burnin.h"
#include "bench/gpu_telemetry.h"
#include "bench/json_read.h"
#include "gpu/nvml.h"
#include "host/process.h"
#include "util/cancel.h"
#include "util/line_assembler.h"
#include "util/strings.h"
#include "util/time.h"

namespace clustermax::bench::burnin {
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// One GPU's helper and what it said.
struct Unit {
  int index = 0;
  std::string uuid, name;
  IterationLog log;
  json start;  // the "burnin-start" line
  std::string error;
  bool result = false;        // the result line came
  util::LineAssembler lines;  // the helper's stdout, cut anywhere
  double seconds = 0;
};

// One line of the helper's protocol (untrusted: a line that is not an object is skipped).
void OnLine(Unit& u, std::string_view line) {
  if (util::Trim(line).empty()) return;
  json j;
  try {
    j = json::parse(line);
  } catch (const json::exception&) {
    return;
  }
  if (!j.is_object()) return;
  std::string type = StrOf(j, "type");
  if (type == "iteration") {
    json rec = {{"t", OptNumOf(j, "t") ? json(RoundTo(NumOf(j, "t"), 3)) : json(nullptr)},
                {"gemm_gflops", OptNumOf(j, "gemm_gflops") ? json(RoundTo(NumOf(j, "gemm_gflops"), 1)) : json(nullptr)},
                {"gemm_sum", util::SanitizeUtf8(util::Ellipsize(StrOf(j, "gemm_sum"), 64))},
                {"mem_gbps", OptNumOf(j, "mem_gbps") ? json(RoundTo(NumOf(j, "mem_gbps"), 1)) : json(nullptr)},
                {"mem_sum", util::SanitizeUtf8(util::Ellipsize(StrOf(j, "mem_sum"), 64))}};
    u.log.Add(std::move(rec));
  } else if (type == "burnin-start") {
    u.start = j;
  } else if (type == "device") {
    const json& d = ObjOf(j, "device");
    if (u.uuid.empty()) u.uuid = StrOf(d, "uuid");
    if (u.name.empty()) u.name = StrOf(d, "name");
  } else if (type == "result") {
    u.result = true;
    if (!StrOf(j, "error").empty()) u.error = StrOf(j, "error");
  } else if (type == "error") {
    u.error = StrOf(j, "error");
  }
}

}  // namespace

std::vector<std::string> GpuHealthChanges(const json& before, const json& after, long long& corrected_new) {
  std::vector<std::string> out;
  auto rose = [&](const json& b, const json& a, const char* key, const char* what) {
    auto x = OptNumOf(b, key), y = OptNumOf(a, key);
    if (x && y && *y > *x) out.push_back(fmt::format("{} rose from {:g} to {:g} during the run", what, *x, *y));
  };
  const json &eb = ObjOf(before, "ecc"), &ea = ObjOf(after, "ecc");
  rose(eb, ea, "volatile_uncorrected", "uncorrectable ECC errors (volatile)");
  if (auto x = OptNumOf(eb, "volatile_corrected"), y = OptNumOf(ea, "volatile_corrected"); x && y && *y > *x)
    corrected_new = static_cast<long long>(*y - *x);
  const json &rb = ObjOf(before, "remapped_rows"), &ra = ObjOf(after, "remapped_rows");
  rose(rb, ra, "uncorrectable", "rows remapped for uncorrectable errors");
  if (TrueOf(ra, "pending") && !TrueOf(rb, "pending")) out.push_back("a row remapping became pending (reset needed)");
  if (TrueOf(ra, "failure") && !TrueOf(rb, "failure")) out.push_back("row remapping failed");
  const json &pb = ObjOf(before, "retired_pages"), &pa = ObjOf(after, "retired_pages");
  rose(pb, pa, "single_bit", "pages retired for single-bit errors");
  rose(pb, pa, "double_bit", "pages retired for double-bit errors");
  if (TrueOf(pa, "pending") && !TrueOf(pb, "pending")) out.push_back("a page retirement became pending (reset needed)");
  return out;
}

namespace {

const json* DeviceByUuid(const json& snapshot, const std::string& uuid) {
  for (const auto& d : ArrOf(snapshot, "devices"))
    if (!uuid.empty() && StrOf(d, "uuid") == uuid) return &d;
  return nullptr;
}

}  // namespace

json RunGpuBurnInRankJob(const json& job, const std::string& node, int rank, const std::string& helper) {
  const Options o = OptionsFromJob(job);
  json doc = {{"node", node}, {"rank", rank}, {"backend", "gpu"}, {"gpus", json::array()}, {"completed", false}};
  if (helper.empty()) {
    doc["error"] = "no GPU helper (clustermax-gpu) next to clustermax on this node: built without CUDA?";
    return doc;
  }
  // CUDA numbers the GPUs in PCI order, as NVML and nvidia-smi do (not fastest first).
  const std::vector<std::string> env = {"CUDA_DEVICE_ORDER=PCI_BUS_ID"};
  auto info = host::RunProcess(helper, {"clustermax-gpu", "info"}, std::chrono::seconds(60), 1u << 20, env);
  json devices;
  try {
    devices = json::parse(util::Trim(info.out));
  } catch (const json::exception&) {
  }
  if (ArrOf(devices, "devices").empty()) {
    std::string why = StrOf(devices, "error");
    doc["error"] =
        "no GPU: " + (why.empty() ? fmt::format("the helper's info said nothing readable (exit {})", info.exit_code)
                                  : util::Ellipsize(why, 500));
    return doc;
  }
  std::set<int> wanted;
  for (const auto& g : ArrOf(job, "gpus"))
    if (g.is_number_integer()) wanted.insert(g.get<int>());
  std::vector<std::unique_ptr<Unit>> units;
  for (const auto& d : ArrOf(devices, "devices")) {
    auto idx = OptNumOf(d, "index");
    if (!idx || *idx < 0 || *idx > 1024) continue;
    int i = static_cast<int>(*idx);
    if (!wanted.empty() && !wanted.count(i)) continue;
    auto u = std::make_unique<Unit>();
    u->index = i;
    u->uuid = StrOf(d, "uuid");
    u->name = StrOf(d, "name");
    units.push_back(std::move(u));
  }
  if (units.empty()) {
    doc["error"] = "none of the GPUs asked for is on this node";
    return doc;
  }

  GpuTelemetry telemetry;
  telemetry.Start();
  auto before = gpu::QueryNvml(std::chrono::seconds(10));
  doc["started"] = RoundTo(util::UnixSeconds(), 3);
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (auto& up : units) {
    Unit* u = up.get();
    threads.emplace_back([u, &o, &helper, &env] {
      json item = {{"kind", "burnin"},
                   {"id", "burnin"},
                   {"n", o.matrix_n},
                   {"mem_mb", o.mem_mb},
                   {"seed", o.seed},
                   {"seconds", o.duration_s},
                   {"max_iterations", o.max_iterations}};
      json hjob = {{"device", u->index}, {"warmup_s", 0}, {"items", json::array({item})}};
      auto t = Clock::now();
      auto r = host::RunProcess(
          helper, {"clustermax-gpu", "run", "--job-json", hjob.dump()},
          std::chrono::milliseconds(static_cast<long long>((o.duration_s + 600) * 1000)), 1u << 20, env,
          [u](std::string_view chunk) { u->lines.Feed(chunk, [u](std::string_view l) { OnLine(*u, l); }); }, false, "",
          [] { return util::Cancelled(); });
      u->seconds = Seconds(Clock::now() - t);
      if (!u->result && u->error.empty() && !util::Cancelled()) {
        std::string tail(util::Trim(r.err.size() > 400 ? std::string_view(r.err).substr(r.err.size() - 400) : r.err));
        u->error = r.timed_out                       ? "the helper ran past its time and was stopped"
                   : r.status != host::IoStatus::kOk ? "the helper could not run: " + r.error
                   : r.signal                        ? fmt::format("the helper died of signal {}", r.signal)
                                                     : fmt::format("the helper exited with status {}", r.exit_code);
        if (!tail.empty()) u->error += ": " + tail;
      }
    });
  }
  for (auto& t : threads) t.join();
  const double run_s = Seconds(Clock::now() - t0);
  auto after = gpu::QueryNvml(std::chrono::seconds(10));
  telemetry.Stop();
  json tel = telemetry.Summary(0, telemetry.Now());
  const bool cancelled = util::Cancelled();
  const bool health = before.status == gpu::NvmlStatus::kOk && after.status == gpu::NvmlStatus::kOk;

  bool all = true;
  for (const auto& u : units) {
    // Named by NVML's index (nvidia-smi's), found by UUID: CUDA's index is relative to the GPUs
    // this process may see (CUDA_VISIBLE_DEVICES, Slurm's gres) and would point at another board.
    int board = u->index;
    const json* seen = DeviceByUuid(before.status == gpu::NvmlStatus::kOk ? before.data : after.data, u->uuid);
    if (seen) {
      auto idx = OptNumOf(*seen, "index");
      if (idx && *idx >= 0 && *idx <= 1024) board = static_cast<int>(*idx);
    }
    json g = {
        {"node", fmt::format("{}/gpu{}", node, board)},
        {"host", node},
        {"rank", rank},
        {"gpu", board},
        {"cuda_index", u->index},
        {"uuid", u->uuid},
        {"name", u->name},
        {"inputs",
         {{"matrix_n", u->start.value("n", json(o.matrix_n))},
          {"mem_mb", u->start.value("mem_mb", json(o.mem_mb))},
          {"seed", o.seed},
          {"kernel", util::SanitizeUtf8(util::Ellipsize(StrOf(u->start, "kernel"), 400))}}},
        {"reps",
         {{"gemm", u->start.value("gemm_reps", json(nullptr))}, {"mem", u->start.value("mem_reps", json(nullptr))}}},
        {"seconds", RoundTo(u->seconds, 3)}};
    u->log.WriteTo(g);
    bool completed = u->result && u->error.empty() && !cancelled && u->log.count() > 0;
    g["completed"] = completed;
    if (cancelled) g["cancelled"] = true;
    if (!u->error.empty()) g["error"] = util::SanitizeUtf8(util::Ellipsize(u->error, 1000));
    all = all && completed;
    if (tel.contains(u->uuid)) g["telemetry"] = tel[u->uuid];
    if (health) {
      const json* b = DeviceByUuid(before.data, u->uuid);
      const json* a = DeviceByUuid(after.data, u->uuid);
      if (b && a) {
        long long corrected = 0;
        g["gpu_errors"] = GpuHealthChanges(*b, *a, corrected);
        g["ecc_corrected_new"] = corrected;
        g["health_read"] = true;
      }
    }
    doc["gpus"].push_back(std::move(g));
  }
  if (!health)
    doc["health_why"] = before.status != gpu::NvmlStatus::kOk ? "NVML before the run: " + before.error
                                                              : "NVML after the run: " + after.error;
  doc["seconds"] = RoundTo(run_s, 3);
  doc["completed"] = all;
  if (cancelled) doc["cancelled"] = true;
  return doc;
}

std::map<std::string, json> UnitsOf(const std::map<std::string, json>& node_docs) {
  std::map<std::string, json> out;
  for (const auto& [node, doc] : node_docs) {
    const json& gpus = ArrOf(doc, "gpus");
    if (StrOf(doc, "backend") != "gpu" || gpus.empty()) {
      out[node] = doc;
      continue;
    }
    size_t k = 0;
    for (const auto& g : gpus) {
      // The unit's name from this side: the node's (from Slurm) and the index, never the text.
      auto idx = OptNumOf(g, "gpu");
      std::string name = idx && *idx >= 0 && *idx <= 1024 && *idx == std::floor(*idx)
                             ? fmt::format("{}/gpu{}", node, static_cast<int>(*idx))
                             : fmt::format("{}/unit{}", node, k);
      json u = g.is_object() ? g : json::object();
      u["node"] = name;
      out[name] = std::move(u);
      ++k;
    }
  }
  return out;
}

}  // namespace clustermax::bench::burnin
