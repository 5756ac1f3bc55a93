#include "bench/s3_bench.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "bench/grade.h"
#include "bench/histogram.h"
#include "bench/workspace.h"
#include "core/version.h"
#include "util/strings.h"
#include "util/time.h"
#include "util/files.h"

namespace clustermax::bench {
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

std::string SizeLabel(uint64_t b) {
  if (b >= (uint64_t{1} << 30) && b % (uint64_t{1} << 30) == 0) return fmt::format("{}GiB", b >> 30);
  if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{}MiB", b >> 20);
  if (b >= 1024 && b % 1024 == 0) return fmt::format("{}KiB", b >> 10);
  return fmt::format("{}B", b);
}

// Request bookkeeping shared by every stream (thread-safe), per kind of operation ("PUT", "GET",
// "LIST", "DELETE", "multipart PUT"): each kind is graded on its own, so a store whose every GET
// fails cannot hide behind thousands of good PUTs.
struct Counters {
  struct Kind {
    uint64_t total = 0, failed = 0;
  };
  std::mutex mu;
  uint64_t retries = 0, throttled = 0;
  std::map<std::string, Kind> kinds;
  std::map<std::pair<std::string, std::string>, uint64_t> errors;  // (kind, description) -> count
  // `ok`: whether the operation did what it was for (a cleanup DELETE's 404 is fine).
  void Add(const std::string& kind, const S3Response& r, bool ok) {
    std::lock_guard lock(mu);
    Kind& k = kinds[kind];
    ++k.total;
    retries += static_cast<uint64_t>(r.retries);
    if (r.throttled) ++throttled;
    if (!ok) {
      ++k.failed;
      ++errors[{kind, r.Describe()}];
    }
  }
  void Add(const std::string& kind, const S3Response& r) { Add(kind, r, r.ok()); }
  json ToJson() {
    std::lock_guard lock(mu);
    json e = json::array();
    for (const auto& [k, v] : errors) e.push_back({{"op", k.first}, {"error", k.second}, {"count", v}});
    uint64_t total = 0, failed = 0;
    json by_op = json::object();
    for (const auto& [name, k] : kinds) {
      total += k.total;
      failed += k.failed;
      by_op[name] = {{"total", k.total}, {"failed", k.failed}, {"failed_pct", RoundTo(100.0 * k.failed / k.total, 3)}};
    }
    return {{"total", total},         {"failed", failed}, {"retries", retries},
            {"throttled", throttled}, {"by_op", by_op},   {"errors", e}};
  }
};

// Keys this run created (and the multipart uploads it started), so cleanup deletes only those.
struct Ledger {
  std::mutex mu;
  std::vector<std::string> keys;
  std::map<std::string, std::string> uploads;  // upload id -> key
  void Key(const std::string& k) {
    std::lock_guard lock(mu);
    keys.push_back(k);
  }
};

// The payload: one random buffer as large as the largest object; object i of a size starts at a
// different offset of a doubled buffer, so objects differ while every GET can be verified.
struct Payload {
  explicit Payload(uint64_t largest) : bytes(static_cast<size_t>(largest) * 2, '\0') {
    std::mt19937_64 rng(std::random_device{}());
    auto* w = reinterpret_cast<uint64_t*>(bytes.data());
    for (size_t i = 0; i < bytes.size() / 8; ++i) w[i] = rng();
    largest_ = largest;
  }
  const char* For(uint64_t object_index) const {
    return bytes.data() + (object_index * 4099) % static_cast<size_t>(largest_);
  }
  std::string bytes;
  uint64_t largest_;
};

struct Stream {
  std::unique_ptr<S3Client> client;
  LatencyHistogram hist;
  uint64_t ops = 0, bytes = 0, failed = 0;
  std::string first_error;
};

struct Context {
  const S3BenchOptions& o;
  std::string prefix;
  Counters counters;
  Ledger ledger;
  Payload payload;
  std::vector<std::unique_ptr<S3Client>> clients;  // one per stream, reused across rows
};

std::string ObjectKey(const Context& c, uint64_t size, int conc, int stream, uint64_t j) {
  return fmt::format("{}{}/c{}/s{:03d}/o{:06d}", c.prefix, SizeLabel(size), conc, stream, j);
}

json TransferRow(Context& c, const std::string& op, uint64_t size, int conc,
                 std::map<std::pair<int, int>, uint64_t>& written) {
  const auto& o = c.o;
  bool multipart = op == "PUT" && size >= o.multipart_threshold;
  std::vector<Stream> st(static_cast<size_t>(conc));
  std::barrier sync(conc + 1);
  std::vector<std::thread> th;
  Clock::time_point start, deadline;
  std::atomic<uint64_t> moved{0};
  std::vector<Clock::time_point> ends(static_cast<size_t>(conc));
  std::vector<uint64_t*> count(
      static_cast<size_t>(conc));  // objects each stream has PUT (map nodes made here, not in threads)
  for (int s = 0; s < conc; ++s) count[static_cast<size_t>(s)] = &written[{conc, s}];
  for (int s = 0; s < conc; ++s) {
    th.emplace_back([&, s] {
      Stream& me = st[static_cast<size_t>(s)];
      S3Client& cl = *c.clients[static_cast<size_t>(s)];
      sync.arrive_and_wait();
      uint64_t available = op == "GET" ? *count[static_cast<size_t>(s)] : 0;
      for (uint64_t j = 0;; ++j) {
        if (Cancelled()) break;
        if (j > 0 && (Clock::now() >= deadline || moved.load() >= o.max_bytes_per_row)) break;
        if (op == "GET" && available == 0) break;
        uint64_t obj = op == "GET" ? j % available : j;
        std::string key = ObjectKey(c, size, conc, s, obj);
        const char* data = c.payload.For(obj + static_cast<uint64_t>(s) * 7919);
        S3Response r;
        std::string kind = multipart ? "multipart PUT" : op;
        if (op == "PUT") {
          c.ledger.Key(key);
          if (multipart) {
            r = cl.PutMultipart(key, data, size, o.part_size, [&](const std::string& id) {
              std::lock_guard lock(c.ledger.mu);
              c.ledger.uploads[id] = key;
            });
          } else {
            r = cl.Put(key, data, size);
          }
        } else {
          r = cl.Get(key, data, size);
        }
        c.counters.Add(kind, r);
        if (!r.ok()) {
          ++me.failed;
          if (me.first_error.empty()) me.first_error = r.Describe();
          continue;
        }
        ++me.ops;
        me.bytes += r.bytes;
        moved += r.bytes;
        me.hist.Record(static_cast<uint64_t>(r.seconds * 1e9));
        if (op == "PUT") *count[static_cast<size_t>(s)] = std::max(*count[static_cast<size_t>(s)], obj + 1);
      }
      ends[static_cast<size_t>(s)] = Clock::now();
    });
  }
  start = Clock::now();
  deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s));
  sync.arrive_and_wait();
  for (auto& t : th) t.join();

  LatencyHistogram all;
  uint64_t ops = 0, bytes = 0, failed = 0;
  double longest = 0;
  std::string first_error;
  json per_stream = json::array();
  for (int s = 0; s < conc; ++s) {
    const Stream& me = st[static_cast<size_t>(s)];
    double secs = std::chrono::duration<double>(ends[static_cast<size_t>(s)] - start).count();
    longest = std::max(longest, secs);
    all.Merge(me.hist);
    ops += me.ops;
    bytes += me.bytes;
    failed += me.failed;
    if (first_error.empty()) first_error = me.first_error;
    per_stream.push_back({{"ops", me.ops},
                          {"bytes", me.bytes},
                          {"seconds", RoundTo(secs, 4)},
                          {"gbps", secs > 0 ? RoundTo(me.bytes / secs / 1e9, 4) : 0.0}});
  }
  json row = {{"op", op},
              {"object_bytes", size},
              {"object", SizeLabel(size)},
              {"small", size <= (1u << 20)},
              {"multipart", multipart},
              {"concurrency", conc},
              {"ops", ops},
              {"failed", failed},
              {"bytes", bytes},
              {"seconds", RoundTo(longest, 4)},
              {"ops_per_s", longest > 0 ? RoundTo(ops / longest, 2) : 0.0},
              {"aggregate_gbps", longest > 0 ? RoundTo(bytes / longest / 1e9, 4) : 0.0},
              {"latency", all.SummaryUs()},
              {"per_stream", per_stream}};
  if (op == "GET") row["verified"] = "every byte compared with what was PUT";
  if (failed > 0 || ops == 0) {
    row["status"] = "error";
    row["reason"] = first_error.empty() ? (Cancelled() ? "interrupted" : "no object was transferred") : first_error;
  } else {
    row["status"] = Cancelled() ? "interrupted" : "ok";
  }
  return row;
}

json ListRate(Context& c, uint64_t size, int conc, uint64_t expected) {
  S3Client& cl = *c.clients.front();
  std::string prefix = fmt::format("{}{}/c{}/", c.prefix, SizeLabel(size), conc);
  LatencyHistogram h;
  uint64_t pages = 0, keys_seen = 0;
  std::string token, error;
  auto t0 = Clock::now();
  do {
    std::vector<std::string> keys;
    std::string next;
    S3Response r = cl.List(prefix, c.o.list_page, token, keys, next);
    c.counters.Add("LIST", r);
    if (!r.ok()) {
      error = r.Describe();
      break;
    }
    h.Record(static_cast<uint64_t>(r.seconds * 1e9));
    ++pages;
    keys_seen += keys.size();
    token = next;
  } while (!token.empty() && !Cancelled());
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  json out = {{"op", "LIST"},
              {"prefix_objects", expected},
              {"page_size", c.o.list_page},
              {"pages", pages},
              {"keys", keys_seen},
              {"seconds", RoundTo(secs, 4)},
              {"requests_per_s", secs > 0 ? RoundTo(pages / secs, 2) : 0.0},
              {"keys_per_s", secs > 0 ? RoundTo(keys_seen / secs, 1) : 0.0},
              {"latency", h.SummaryUs()}};
  if (!error.empty()) {
    out["status"] = "error";
    out["reason"] = error;
  } else if (keys_seen != expected) {
    out["status"] = "error";
    out["reason"] = fmt::format("listing returned {} keys, the run wrote {}", keys_seen, expected);
  } else {
    out["status"] = "ok";
  }
  return out;
}

json MixedRun(Context& c) {
  const auto& o = c.o;
  int conc = *std::max_element(o.concurrency.begin(), o.concurrency.end());
  const uint64_t size = o.mixed_object;
  struct Sample {
    double t;     // seconds since start, at completion
    uint64_t ns;  // latency
    bool ok;
    char op;
  };
  std::vector<std::vector<Sample>> samples(static_cast<size_t>(conc));
  std::barrier sync(conc + 1);
  std::vector<std::thread> th;
  Clock::time_point start, deadline;
  for (int s = 0; s < conc; ++s) {
    th.emplace_back([&, s] {
      S3Client& cl = *c.clients[static_cast<size_t>(s)];
      std::mt19937 rng(1234 + s);
      std::vector<uint64_t> mine;  // objects this stream PUT and has not deleted
      uint64_t next = 0;
      sync.arrive_and_wait();
      while (Clock::now() < deadline && !Cancelled()) {
        int dice = std::uniform_int_distribution<int>(0, 99)(rng);
        char op = mine.empty() ? 'P' : dice < 50 ? 'G' : dice < 80 ? 'P' : dice < 90 ? 'L' : 'D';
        S3Response r;
        if (op == 'P') {
          uint64_t id = next++;
          std::string key = fmt::format("{}mixed/s{:03d}/o{:06d}", c.prefix, s, id);
          c.ledger.Key(key);
          r = cl.Put(key, c.payload.For(id), size);
          if (r.ok()) mine.push_back(id);
        } else if (op == 'G') {
          uint64_t id = mine[std::uniform_int_distribution<size_t>(0, mine.size() - 1)(rng)];
          r = cl.Get(fmt::format("{}mixed/s{:03d}/o{:06d}", c.prefix, s, id), c.payload.For(id), size);
        } else if (op == 'L') {
          std::vector<std::string> keys;
          std::string tok;
          r = cl.List(fmt::format("{}mixed/s{:03d}/", c.prefix, s), o.list_page, "", keys, tok);
        } else {
          size_t i = std::uniform_int_distribution<size_t>(0, mine.size() - 1)(rng);
          r = cl.Delete(fmt::format("{}mixed/s{:03d}/o{:06d}", c.prefix, s, mine[i]));
          if (r.ok()) mine.erase(mine.begin() + static_cast<long>(i));
        }
        c.counters.Add(op == 'P' ? "PUT" : op == 'G' ? "GET" : op == 'L' ? "LIST" : "DELETE", r);
        double t = std::chrono::duration<double>(Clock::now() - start).count();
        samples[static_cast<size_t>(s)].push_back({t, static_cast<uint64_t>(r.seconds * 1e9), r.ok(), op});
      }
    });
  }
  start = Clock::now();
  deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.mixed_s));
  sync.arrive_and_wait();
  for (auto& t : th) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - start).count();

  // Ops per second over time (1 s windows, at most 900 points), errors, p99 of each half.
  int windows = std::max(1, static_cast<int>(std::ceil(secs)));
  int step = std::max(1, windows / 900);
  std::vector<uint64_t> per_window(static_cast<size_t>((windows + step - 1) / step), 0);
  LatencyHistogram first, second, all;
  uint64_t ok = 0, failed = 0;
  std::map<char, uint64_t> by_op;
  for (const auto& v : samples) {
    for (const auto& x : v) {
      size_t w = std::min(per_window.size() - 1, static_cast<size_t>(x.t) / static_cast<size_t>(step));
      if (!x.ok) {
        ++failed;
        continue;
      }
      ++ok;
      ++by_op[x.op];
      ++per_window[w];
      all.Record(x.ns);
      (x.t < secs / 2 ? first : second).Record(x.ns);
    }
  }
  json series = json::array();
  for (auto n : per_window) series.push_back(RoundTo(static_cast<double>(n) / step, 1));
  double p99a = static_cast<double>(first.Percentile(99)), p99b = static_cast<double>(second.Percentile(99));
  json out = {{"object_bytes", size},
              {"concurrency", conc},
              {"mix", "GET 50 %, PUT 30 %, LIST 10 %, DELETE 10 %"},
              {"seconds", RoundTo(secs, 3)},
              {"ops", ok},
              {"failed", failed},
              {"ops_per_s", secs > 0 ? RoundTo(ok / secs, 2) : 0.0},
              {"error_rate_pct", ok + failed ? RoundTo(100.0 * failed / (ok + failed), 3) : 0.0},
              {"ops_by_type", {{"GET", by_op['G']}, {"PUT", by_op['P']}, {"LIST", by_op['L']}, {"DELETE", by_op['D']}}},
              {"latency", all.SummaryUs()},
              {"p99_first_half_us", RoundTo(p99a / 1000, 2)},
              {"p99_second_half_us", RoundTo(p99b / 1000, 2)},
              {"p99_drift_pct", p99a > 0 ? RoundTo(100.0 * (p99b - p99a) / p99a, 1) : 0.0},
              {"ops_per_s_series", series},
              {"series_step_s", step}};
  out["status"] = ok == 0 ? "error" : Cancelled() ? "interrupted" : "ok";
  if (ok == 0) out["reason"] = "no request succeeded";
  return out;
}

// Deletes every object the run created (the DELETE rate is measured on the way) and aborts any
// multipart upload left open. Returns the delete row and fills the cleanup block.
json Cleanup(Context& c, json& cleanup) {
  std::vector<std::string> keys;
  std::map<std::string, std::string> uploads;
  {
    std::lock_guard lock(c.ledger.mu);
    keys = c.ledger.keys;
    uploads = c.ledger.uploads;
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  int conc = static_cast<int>(c.clients.size());
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> deleted{0}, failed{0};
  std::mutex mu;
  std::vector<std::string> leftovers;
  LatencyHistogram all;
  auto t0 = Clock::now();
  std::vector<std::thread> th;
  for (auto& cl : c.clients) cl->SetCancellable(false);  // cleanup runs to the end, also after Ctrl-C
  for (int s = 0; s < conc; ++s) {
    th.emplace_back([&, s] {
      LatencyHistogram h;
      for (size_t i = next++; i < keys.size(); i = next++) {
        S3Response r = c.clients[static_cast<size_t>(s)]->Delete(keys[i]);
        bool gone = r.ok() || r.status == 404;
        c.counters.Add("DELETE", r, gone);
        if (gone) {
          ++deleted;
          h.Record(static_cast<uint64_t>(r.seconds * 1e9));
        } else {
          ++failed;
          std::lock_guard lock(mu);
          if (leftovers.size() < 20) leftovers.push_back(fmt::format("{} ({})", keys[i], r.Describe()));
        }
      }
      std::lock_guard lock(mu);
      all.Merge(h);
    });
  }
  for (auto& t : th) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  for (const auto& [id, key] : uploads) c.clients.front()->AbortMultipart(key, id);  // 404 once completed: fine
  cleanup = {{"objects_deleted", deleted.load()},
             {"delete_failed", failed.load()},
             {"leftovers", leftovers},
             {"multipart_uploads_aborted_or_done", uploads.size()}};
  return {{"op", "DELETE"},
          {"objects", keys.size()},
          {"deleted", deleted.load()},
          {"failed", failed.load()},
          {"concurrency", conc},
          {"seconds", RoundTo(secs, 4)},
          {"ops_per_s", secs > 0 ? RoundTo(deleted.load() / secs, 2) : 0.0},
          {"latency", all.SummaryUs()},
          {"status", failed.load() == 0 ? "ok" : "error"}};
}

}  // namespace

uint64_t ParseSize(const std::string& text) {
  std::string t = util::ToLower(util::Trim(text));
  size_t i = 0;
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
  if (i == 0) throw std::invalid_argument("not a size: '" + text + "'");
  double v = std::stod(t.substr(0, i));
  std::string unit = t.substr(i);
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();  // "mb", "mib" -> "m", "mi"
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  static const std::map<std::string, int> shift = {{"", 0}, {"k", 10}, {"m", 20}, {"g", 30}, {"t", 40}};
  auto it = shift.find(unit);
  if (it == shift.end()) throw std::invalid_argument("unknown size unit in '" + text + "' (use K, M, G, T)");
  double bytes = v * std::pow(2.0, it->second);
  if (bytes < 1 || bytes > 1e15) throw std::invalid_argument("size out of range: '" + text + "'");
  return static_cast<uint64_t>(bytes);
}

void ValidateS3Options(const S3BenchOptions& o) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  if (o.sizes.empty()) bad("--sizes: at least one object size");
  for (auto s : o.sizes) {
    if (s == 0 || s > (uint64_t{5} << 30)) bad("--sizes: object sizes from 1 byte to 5 GiB");
  }
  if (o.concurrency.empty()) bad("--concurrency: at least one stream count");
  for (int c : o.concurrency) {
    if (c < 1 || c > 256) bad("--concurrency: 1 to 256 streams");
  }
  if (o.duration_s <= 0) bad("--duration must be positive");
  if (o.part_size < (5u << 20)) bad("--part-size: S3 parts are at least 5 MiB");
  if (o.multipart_threshold < o.part_size) bad("--multipart-threshold must be at least --part-size");
  if (o.mixed_s < 0) bad("--mixed must not be negative");
  if (o.list_page < 1 || o.list_page > 1000) bad("--list-page: 1 to 1000");
}

namespace {

json RunS3BenchUnredacted(const S3BenchOptions& given) {
  ValidateS3Options(given);
  // Steps, for the progress estimate: PUT and GET per size and stream count, LIST, mixed, delete.
  S3BenchOptions o = given;
  o.progress = CountingSteps(
      given.progress, given.fraction,
      static_cast<int>(given.sizes.size() * given.concurrency.size() * 2) + 2 + (given.mixed_s > 0 ? 1 : 0));
  auto started = std::chrono::system_clock::now();
  uint64_t largest = std::max<uint64_t>(*std::max_element(o.sizes.begin(), o.sizes.end()), o.mixed_object);
  std::string host = util::Hostname();
  std::random_device rd;
  Context c{o, fmt::format("clustermax-bench/{}-{}-{:08x}/", host, ::getpid(), rd()), {}, {}, Payload(largest), {}};
  int streams = *std::max_element(o.concurrency.begin(), o.concurrency.end());
  for (int s = 0; s < streams; ++s) c.clients.push_back(std::make_unique<S3Client>(o.config));

  // Preflight: a clear error for a wrong endpoint, bucket or credential, before anything is written.
  // A one-key LIST rather than HEAD: its error answer carries the S3 error code in XML.
  {
    S3Config quick = o.config;
    quick.max_retries = 1;
    S3Client probe(quick);
    std::vector<std::string> keys;
    std::string next;
    S3Response r = probe.List(c.prefix, 1, "", keys, next);
    if (!r.ok()) {
      std::string endpoint = RedactSecrets(o.config.endpoint, o.config);
      std::string where = fmt::format("bucket '{}' at {}", o.config.bucket, endpoint);
      if (r.curl_code != 0) throw std::runtime_error(fmt::format("cannot reach {}: {}", endpoint, r.Describe()));
      if (r.status == 404) throw std::runtime_error(fmt::format("{} does not exist ({})", where, r.Describe()));
      if (r.status == 403 || r.status == 401) {
        throw std::runtime_error(fmt::format("access to {} denied ({}); credentials from {}", where, r.Describe(),
                                             o.config.credentials.source));
      }
      throw std::runtime_error(fmt::format("{}: listing failed ({})", where, r.Describe()));
    }
  }

  json out = {{"kind", "clustermax.bench.s3"},
              {"schema_version", 1},
              {"tool_version", std::string(core::kToolVersion)},
              {"started", util::FormatRfc3339(started)},
              {"host", host},
              {"endpoint", RedactSecrets(o.config.endpoint, o.config)},
              {"bucket", o.config.bucket},
              {"region", o.config.region},
              {"addressing", o.config.addressing},
              {"credentials", o.config.credentials.source},  // where from, never the values
              {"prefix", c.prefix},
              {"options",
               {{"sizes", o.sizes},
                {"concurrency", o.concurrency},
                {"duration_s", o.duration_s},
                {"max_bytes_per_row", o.max_bytes_per_row},
                {"multipart_threshold", o.multipart_threshold},
                {"part_size", o.part_size},
                {"mixed_s", o.mixed_s},
                {"max_retries", o.config.max_retries}}}};
  json transfers = json::array(), list = json::array();
  std::map<uint64_t, std::map<std::pair<int, int>, uint64_t>> written;  // size -> (conc, stream) -> objects
  for (uint64_t size : o.sizes) {
    for (int conc : o.concurrency) {
      for (const char* op : {"PUT", "GET"}) {
        if (Cancelled()) break;
        if (o.progress) o.progress(fmt::format("{} {} objects, {} stream(s)", op, SizeLabel(size), conc));
        transfers.push_back(TransferRow(c, op, size, conc, written[size]));
      }
    }
  }
  out["transfers"] = transfers;
  // LIST over the smallest size's objects at the highest stream count (the most keys).
  if (!Cancelled()) {
    uint64_t size = *std::min_element(o.sizes.begin(), o.sizes.end());
    int conc = streams;
    uint64_t objects = 0;
    for (const auto& [k, n] : written[size]) {
      if (k.first == conc) objects += n;
    }
    if (o.progress) o.progress(fmt::format("LIST {} objects, {} per page", objects, o.list_page));
    list.push_back(ListRate(c, size, conc, objects));
  }
  out["list"] = list;
  if (o.mixed_s > 0 && !Cancelled()) {
    if (o.progress) o.progress(fmt::format("mixed GET/PUT/LIST/DELETE for {} s", o.mixed_s));
    out["mixed"] = MixedRun(c);
  }
  if (o.progress) o.progress("deleting every object this run created");
  json cleanup;
  out["delete"] = Cleanup(c, cleanup);
  out["cleanup"] = cleanup;
  out["requests"] = c.counters.ToJson();
  out["interrupted"] = Cancelled();
  out["seconds"] = RoundTo(std::chrono::duration<double>(std::chrono::system_clock::now() - started).count(), 3);
  return out;
}

}  // namespace

json RunS3Bench(const S3BenchOptions& o) {
  // Every string of the result and every error message, whatever produced it (a server's error
  // text, a curl message), leaves without the credentials.
  try {
    json out = RunS3BenchUnredacted(o);
    RedactSecrets(out, o.config);
    return out;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(RedactSecrets(e.what(), o.config));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(RedactSecrets(e.what(), o.config));
  }
}

}  // namespace clustermax::bench
