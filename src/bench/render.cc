#include "bench/render.h"

#include <fmt/format.h>

namespace clustermax::bench {
using nlohmann::json;

namespace {
std::string Bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return fmt::format("{:.1f} {}", b, units[u]);
}
std::string Us(const json& lat, const char* key) {
  if (!lat.is_object() || lat.value("count", 0) == 0) return "-";
  return fmt::format("{:.1f}", lat[key].get<double>());
}
std::string Status(const json& j) {
  std::string s = j.value("status", "?");
  if (s != "ok" && j.contains("reason")) s += ": " + j["reason"].get<std::string>();
  return s;
}
}  // namespace

std::string RenderGrades(const json& grades, const std::string& source) {
  std::string out = fmt::format("grades ({}):\n", source);
  for (const auto& g : grades) {
    std::string verdict = g["verdict"];
    if (verdict == "SKIP" || !g.contains("value")) {
      out += fmt::format("  {:<4}  {:<26} {}\n", verdict, g["metric"].get<std::string>(), g.value("reason", ""));
      continue;
    }
    std::string cmp = g["better"] == "higher" ? ">=" : "<=";
    out += fmt::format("  {:<4}  {:<26} {:>10.3f} {:<8} pass {} {}, warn {} {}{}\n", verdict,
                       g["metric"].get<std::string>(), g["value"].get<double>(), g["unit"].get<std::string>(), cmp,
                       g["pass"].dump(), cmp, g["warn"].dump(),
                       g.contains("detail") ? "  (" + g["detail"].get<std::string>() + ")" : "");
  }
  return out;
}

std::string RenderStorage(const json& r) {
  std::string out;
  const json& fsj = r["filesystem"];
  out += fmt::format("clustermax bench storage: {} ({}, {} free), engine {}\n", r["path"].get<std::string>(),
                     fsj["type"].get<std::string>(), Bytes(fsj["free_bytes"].get<double>()),
                     r["engine"].get<std::string>());
  if (r.contains("engine_note")) out += "  note: " + r["engine_note"].get<std::string>() + "\n";
  if (r.contains("cache_note")) out += "  note: " + r["cache_note"].get<std::string>() + "\n";
  if (r.contains("workloads")) {
    out += fmt::format("\n  {:<24} {:>7} {:>4} {:>9} {:>10} {:>10} {:>10} {:>10}  {}\n", "I/O workload", "threads",
                       "QD", "GB/s", "IOPS", "p50 us", "p99 us", "p99.9 us", "status");
    for (const auto& w : r["workloads"]) {
      if (!w.contains("bytes")) {
        out += fmt::format("  {:<24} {:>7} {:>4} {:>9} {:>10} {:>10} {:>10} {:>10}  {}\n", w["id"].get<std::string>(),
                           w["threads"].get<int>(), w["iodepth"].get<int>(), "-", "-", "-", "-", "-", Status(w));
        continue;
      }
      out += fmt::format("  {:<24} {:>7} {:>4} {:>9.3f} {:>10.0f} {:>10} {:>10} {:>10}  {}\n",
                         w["id"].get<std::string>(), w["threads"].get<int>(), w["iodepth"].get<int>(),
                         w["bw_bytes_per_s"].get<double>() / 1e9, w["iops"].get<double>(), Us(w["latency"], "p50_us"),
                         Us(w["latency"], "p99_us"), Us(w["latency"], "p99_9_us"), Status(w));
    }
  }
  if (r.contains("checkpoint")) {
    const json& c = r["checkpoint"];
    out += fmt::format("\n  checkpoint: {} ranks x {} shards of {}, fsync per shard, {} run(s): {}\n",
                       c["ranks"].get<int>(), c["shards_per_rank"].get<int>(), Bytes(c["shard_bytes"].get<double>()),
                       c["runs"].size(), Status(c));
    for (const auto& run : c["runs"]) {
      for (const char* ph : {"write", "read"}) {
        const json& p = run[ph];
        out += fmt::format("    run {} {:<5} {:>8.3f} GB/s aggregate; slowest rank {} took {:.3f} s ({:.3f} GB/s)\n",
                           run["run"].get<int>(), ph, p["aggregate_gbps"].get<double>(),
                           p["slowest_rank"]["rank"].get<int>(), p["slowest_rank"]["seconds"].get<double>(),
                           p["slowest_rank"]["gbps"].get<double>());
      }
    }
  }
  if (r.contains("metadata")) {
    const json& m = r["metadata"];
    out += fmt::format("\n  metadata: {} files of {} B in {} directories, {} threads ({}): {}\n",
                       m["files"].get<uint64_t>(), m["file_bytes"].get<uint64_t>(), m["directories"].get<int>(),
                       m["threads"].get<int>(), "warm cache", Status(m));
    out += fmt::format("    {:<14} {:>12} {:>10} {:>10} {:>10}\n", "phase", "files/s", "p50 us", "p99 us", "max us");
    for (const auto& p : m["phases"]) {
      out += fmt::format("    {:<14} {:>12.0f} {:>10} {:>10} {:>10}\n", p["id"].get<std::string>(),
                         p["ops_per_s"].get<double>(), Us(p["latency"], "p50_us"), Us(p["latency"], "p99_us"),
                         Us(p["latency"], "max_us"));
    }
  }
  if (r.contains("grades")) out += "\n" + RenderGrades(r["grades"]);
  const json& cl = r["cleanup"];
  out += fmt::format("\nresult: {}{}; removed {} files and {} directories{}\n", r.value("verdict", "?"),
                     r.value("interrupted", false) ? " (INTERRUPTED)" : "", cl["files_removed"].get<uint64_t>(),
                     cl["dirs_removed"].get<uint64_t>(),
                     cl["leftovers"].empty() ? "" : fmt::format("; NOT removed: {}", cl["leftovers"].dump()));
  return out;
}

std::string RenderS3(const json& r) {
  std::string out = fmt::format("clustermax bench s3: {} bucket {} ({} addressing), credentials: {}\n",
                                r["endpoint"].get<std::string>(), r["bucket"].get<std::string>(),
                                r["addressing"].get<std::string>(), r["credentials"].get<std::string>());
  out += fmt::format("\n  {:<4} {:>8} {:>7} {:>8} {:>10} {:>9} {:>10} {:>10} {:>10}  {}\n", "op", "object", "streams",
                     "ops", "ops/s", "GB/s", "p50 ms", "p90 ms", "p99 ms", "status");
  auto ms = [](const json& lat, const char* k) {
    return lat.value("count", 0) ? fmt::format("{:.2f}", lat[k].get<double>() / 1000) : std::string("-");
  };
  for (const auto& t : r["transfers"]) {
    out += fmt::format("  {:<4} {:>8} {:>7} {:>8} {:>10.1f} {:>9.4f} {:>10} {:>10} {:>10}  {}{}\n",
                       t["op"].get<std::string>(), t["object"].get<std::string>(), t["concurrency"].get<int>(),
                       t["ops"].get<uint64_t>(), t["ops_per_s"].get<double>(), t["aggregate_gbps"].get<double>(),
                       ms(t["latency"], "p50_us"), ms(t["latency"], "p90_us"), ms(t["latency"], "p99_us"), Status(t),
                       t["multipart"].get<bool>() ? " (multipart)" : "");
  }
  for (const auto& l : r["list"]) {
    out += fmt::format("  LIST {} keys in {} pages: {:.1f} requests/s, {:.0f} keys/s, p99 {} ms  {}\n",
                       l["keys"].get<uint64_t>(), l["pages"].get<uint64_t>(), l["requests_per_s"].get<double>(),
                       l["keys_per_s"].get<double>(), ms(l["latency"], "p99_us"), Status(l));
  }
  if (r.contains("delete")) {
    const json& d = r["delete"];
    out +=
        fmt::format("  DELETE {} objects, {} streams: {:.1f} ops/s, p99 {} ms  {}\n", d["objects"].get<uint64_t>(),
                    d["concurrency"].get<int>(), d["ops_per_s"].get<double>(), ms(d["latency"], "p99_us"), Status(d));
  }
  if (r.contains("mixed")) {
    const json& m = r["mixed"];
    out += fmt::format(
        "  mixed {:.0f} s, {} streams ({}): {:.1f} ops/s, errors {:.2f} %, p99 {} ms, p99 drift {:+.1f} %  {}\n",
        m["seconds"].get<double>(), m["concurrency"].get<int>(), m["mix"].get<std::string>(),
        m["ops_per_s"].get<double>(), m["error_rate_pct"].get<double>(), ms(m["latency"], "p99_us"),
        m["p99_drift_pct"].get<double>(), Status(m));
  }
  const json& q = r["requests"];
  out += fmt::format("  requests: {} total, {} failed after retries, {} retries, {} throttled\n",
                     q["total"].get<uint64_t>(), q["failed"].get<uint64_t>(), q["retries"].get<uint64_t>(),
                     q["throttled"].get<uint64_t>());
  for (const auto& [kind, k] : q["by_op"].items()) {
    out += fmt::format("    {:<14} {} requests, {} failed ({:.2f} %)\n", kind, k["total"].get<uint64_t>(),
                       k["failed"].get<uint64_t>(), k["failed_pct"].get<double>());
  }
  for (const auto& e : q["errors"]) {
    out += fmt::format("    {} x {}: {}\n", e["count"].get<uint64_t>(), e["op"].get<std::string>(),
                       e["error"].get<std::string>());
  }
  if (r.contains("grades")) out += "\n" + RenderGrades(r["grades"]);
  const json& cl = r["cleanup"];
  out += fmt::format("\nresult: {}{}; deleted {} objects{}\n", r.value("verdict", "?"),
                     r.value("interrupted", false) ? " (INTERRUPTED)" : "", cl["objects_deleted"].get<uint64_t>(),
                     cl["leftovers"].empty() ? "" : fmt::format("; NOT deleted: {}", cl["leftovers"].dump()));
  return out;
}

}  // namespace clustermax::bench
