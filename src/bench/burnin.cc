#include "bench/burnin.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <queue>
#include <set>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "bench/json_read.h"
#include "util/cancel.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/time.h"

namespace clustermax::bench::burnin {
using nlohmann::json;

namespace {

// A rate to 4 significant digits: a tiny GEMM descheduled for a moment still reads above zero.
double Significant(double v) {
  if (!(v > 0) || !std::isfinite(v)) return 0;
  int digits = 3 - static_cast<int>(std::floor(std::log10(v)));
  return RoundTo(v, std::min(digits, 12));
}

constexpr size_t kMaxKept = 10000;   // iteration records kept in a document
constexpr size_t kMaxDistinct = 16;  // distinct sums listed per kind
constexpr size_t kDriftMin = 8;      // iterations a drift needs (two in each quarter)
constexpr double kMaxDuration = 30.0 * 86400;
constexpr double kTriadScalar = 3.0;
constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
constexpr uint64_t kFnvPrime = 0x100000001b3ULL;
constexpr uint64_t kMemStream = 0x6d656d6f72792d31ULL;  // "memory-1": the memory arrays' own stream
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const json& EmptyObject() {
  static const json empty = json::object();
  return empty;
}

using Clock = std::chrono::steady_clock;
double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// A number field clamped to [lo, hi]; absent, of another type or NaN: def.
double Clamped(const json& j, const char* k, double def, double lo, double hi) {
  auto v = OptNumOf(j, k);
  if (!v || std::isnan(*v)) return def;
  return std::clamp(*v, lo, hi);
}

// f(begin, end) over [0, count) in `threads` contiguous parts; a thread that cannot be started
// leaves the rest of the range to this one.
template <class F>
void Split(size_t count, int threads, const F& f) {
  size_t parts = std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), std::max<size_t>(count, 1));
  if (parts <= 1) {
    f(size_t{0}, count);
    return;
  }
  std::vector<std::thread> pool;
  size_t per = count / parts, extra = count % parts, at = 0;
  for (size_t w = 0; w + 1 < parts; ++w) {
    size_t len = per + (w < extra ? 1 : 0);
    try {
      pool.emplace_back([&f, at, len] { f(at, at + len); });
    } catch (...) {  // no thread (system_error, bad_alloc): this one does the rest
      break;
    }
    at += len;
  }
  f(at, count);
  for (auto& t : pool) t.join();
}

std::optional<double> MemAvailableMb() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  double kb = 0;
  while (in >> key >> kb) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return kb / 1024;
  }
  return std::nullopt;
}

std::optional<unsigned long long> ReadCount(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string word;
  if (!(in >> word) || word.empty() || word.size() > 20 || word.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;  // "max", absent, junk: no limit read here
  try {
    return std::stoull(word);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Every iteration's sum, counted: a sound node computes one GEMM sum and one memory sum throughout.
struct Distinct {
  struct Entry {
    std::string sum;
    long long count, first;
  };
  std::vector<Entry> list;
  long long other = 0, other_first = -1;
  void Add(const std::string& s, long long i) {
    for (auto& e : list)
      if (e.sum == s) {
        ++e.count;
        return;
      }
    if (list.size() < kMaxDistinct) {
      list.push_back({s, 1, i});
    } else {
      if (other == 0) other_first = i;
      ++other;
    }
  }
  json Json() const {
    json a = json::array();
    for (const auto& e : list) a.push_back({{"sum", e.sum}, {"count", e.count}, {"first", e.first}});
    return a;
  }
};

// ---- Reading documents back (untrusted) ----

double Finite(const json& o, const char* k) {
  auto v = OptNumOf(o, k);
  return v && std::isfinite(*v) ? *v : kNaN;
}
// A count or an iteration index: a whole number in [0, 1e15], else nullopt.
std::optional<long long> Index(const json& o, const char* k) {
  auto v = OptNumOf(o, k);
  if (!v || !std::isfinite(*v) || *v < 0 || *v > 1e15 || *v != std::floor(*v)) return std::nullopt;
  return static_cast<long long>(*v);
}
std::string_view ViewOf(const json& o, const char* k) {
  if (!o.is_object()) return {};
  auto it = o.find(k);
  if (it == o.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}
// A scalar as text, for comparing inputs: 256 and 256.0 read alike.
std::string ScalarText(const json& o, const char* k) {
  if (!o.is_object()) return "";
  auto it = o.find(k);
  if (it == o.end()) return "";
  if (it->is_number_unsigned()) return std::to_string(it->get<uint64_t>());
  if (it->is_number_integer()) return std::to_string(it->get<int64_t>());
  if (it->is_number_float()) return fmt::format("{}", it->get<double>());
  if (it->is_string()) return it->get<std::string>();
  return "";
}

// Text from a document or the caller, for the summary: valid UTF-8 (dump() throws on anything else)
// and bounded.
std::string Text(std::string_view s, size_t max = 2000) { return util::SanitizeUtf8(util::Ellipsize(s, max)); }

// Rounded for the output; huge values (junk read back) as they are, never overflowing to inf.
double Round(double v, int digits) { return std::fabs(v) < 1e12 ? RoundTo(v, digits) : v; }
json NumOrNull(double v, int digits) { return std::isfinite(v) ? json(Round(v, digits)) : json(nullptr); }

double Median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  if (v.size() % 2) return v[mid];
  double hi = v[mid];
  double lo = *std::max_element(v.begin(), v.begin() + mid);
  return lo / 2 + hi / 2;  // not (lo + hi) / 2: two values near DBL_MAX would overflow
}

struct Rec {
  long long i;
  double t, gflops, gbps;
  std::string_view gsum, msum;
};

struct NodeData {
  std::string name;
  const json* doc = nullptr;  // none: lost before any document
  std::vector<Rec> recs;      // by iteration, one per index
  std::string group;          // its inputs, as text
  bool completed = false, cancelled = false;
  std::optional<std::string> lost;
};

std::vector<Rec> ReadRecords(const json& doc) {
  std::vector<Rec> out;
  for (const auto& r : ArrOf(doc, "iterations")) {
    auto i = Index(r, "i");
    if (!i) continue;
    Rec x{*i,
          Finite(r, "t"),
          Finite(r, "gemm_gflops"),
          Finite(r, "mem_gbps"),
          ViewOf(r, "gemm_sum"),
          ViewOf(r, "mem_sum")};
    if (!(x.gflops >= 0)) x.gflops = kNaN;
    if (!(x.gbps >= 0)) x.gbps = kNaN;
    out.push_back(x);
  }
  std::stable_sort(out.begin(), out.end(), [](const Rec& a, const Rec& b) { return a.i < b.i; });
  out.erase(std::unique(out.begin(), out.end(), [](const Rec& a, const Rec& b) { return a.i == b.i; }), out.end());
  return out;
}

// Iterations off the most common sum, and the first of them.
struct OffMode {
  long long count = 0, first = -1;
};
struct Group {
  long long count, first;
  bool lump = false;  // several sums counted together (past the listed ones): never the mode
};
OffMode OffModeOf(const std::vector<Group>& groups) {
  OffMode o;
  size_t mode = groups.size();
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].lump || groups[g].count <= 0) continue;
    if (mode == groups.size() || groups[g].count > groups[mode].count ||
        (groups[g].count == groups[mode].count && groups[g].first < groups[mode].first))
      mode = g;
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    if (g == mode || groups[g].count <= 0) continue;
    o.count += groups[g].count;
    if (groups[g].first >= 0 && (o.first < 0 || groups[g].first < o.first)) o.first = groups[g].first;
  }
  return o;
}
// From the node's own tally (every iteration) and from its records (the kept ones): the larger.
OffMode SelfCheck(const NodeData& n, int kind) {
  const char* name = kind == 0 ? "gemm" : "mem";
  std::vector<Group> tally;
  const json& distinct = ObjOf(n.doc ? *n.doc : EmptyObject(), "distinct_sums");
  for (const auto& e : ArrOf(distinct, name)) {
    auto c = Index(e, "count");
    if (c && *c > 0) tally.push_back({*c, Index(e, "first").value_or(-1), false});
  }
  const json& other = ObjOf(distinct, kind == 0 ? "gemm_other" : "mem_other");
  if (auto c = Index(other, "count"); c && *c > 0) {
    tally.push_back({*c, Index(other, "first").value_or(-1), true});
  }
  OffMode from_doc = OffModeOf(tally);
  std::map<std::string_view, Group> seen;
  for (const auto& r : n.recs) {
    std::string_view s = kind == 0 ? r.gsum : r.msum;
    if (s.empty()) continue;
    auto [it, fresh] = seen.try_emplace(s, Group{0, r.i, false});
    ++it->second.count;
  }
  std::vector<Group> groups;
  for (const auto& [s, g] : seen) groups.push_back(g);
  OffMode from_recs = OffModeOf(groups);
  OffMode out = from_doc.count >= from_recs.count ? from_doc : from_recs;
  for (const auto& o : {from_doc, from_recs})
    if (o.count > 0 && o.first >= 0 && (out.first < 0 || o.first < out.first)) out.first = o.first;
  return out;
}

json Drift(const std::vector<double>& series, std::string& why) {
  if (series.size() < kDriftMin) {
    why = fmt::format("{} iteration(s): drift needs {}", series.size(), kDriftMin);
    return nullptr;
  }
  size_t q = series.size() / 4;
  double first = Median(std::vector<double>(series.begin(), series.begin() + q));
  double last = Median(std::vector<double>(series.end() - q, series.end()));
  double d = last / first - 1;
  if (!(first > 0) || !std::isfinite(d)) {
    why = "the first quarter's median is not a positive figure";
    return nullptr;
  }
  return Round(d, 4);
}

json FleetOf(const std::vector<std::pair<std::string, double>>& medians) {
  json f = {{"nodes", medians.size()}};
  if (medians.empty()) return f;
  std::vector<double> v;
  for (const auto& [n, m] : medians) v.push_back(m);
  double fleet = Median(v);
  const auto* slow = &medians.front();
  for (const auto& m : medians)
    if (m.second < slow->second) slow = &m;
  f["median"] = Round(fleet, 3);
  f["slowest"] = {{"node", slow->first}, {"value", Round(slow->second, 3)}};
  if (fleet > 0 && std::isfinite(slow->second / fleet)) f["slowest"]["ratio"] = Round(slow->second / fleet, 4);
  return f;
}

// A GPU's telemetry over the run, numbers only: the hottest, the most power, the SM clock, and the
// reasons NVML gave for holding the clocks back that mean trouble under load (SW power cap, idle
// and application clocks are normal and left out).
json TelemetryOf(const json& t) {
  auto stat = [&t](const char* k, const char* which) {
    double v = Finite(ObjOf(t, k), which);
    return std::isfinite(v) ? json(Round(v, 1)) : json(nullptr);
  };
  json o = {{"samples", Index(t, "samples").value_or(0)},
            {"temperature_c_max", stat("temperature_c", "max")},
            {"power_w_max", stat("power_w", "max")},
            {"power_w_median", stat("power_w", "median")},
            {"sm_clock_mhz_median", stat("sm_clock_mhz", "median")},
            {"sm_clock_mhz_min", stat("sm_clock_mhz", "min")}};
  json held = json::array();
  if (auto r = Index(t, "clocks_event_reasons")) {
    static const std::pair<uint64_t, const char*> kBad[] = {
        {0x8, "HW slowdown"}, {0x20, "SW thermal slowdown"}, {0x40, "HW thermal slowdown"}, {0x80, "HW power brake"}};
    for (const auto& [bit, name] : kBad)
      if (static_cast<uint64_t>(*r) & bit) held.push_back(name);
    o["clocks_event_reasons"] = *r;
  }
  o["held_back"] = held;
  return o;
}

// The load's inputs in words, from the options.
std::string InputsText(const json& opts) {
  if (StrOf(opts, "backend") == "gpu")
    return fmt::format("GEMM bf16 n={:g}, device memory {:g} MiB", NumOf(opts, "matrix_n"), NumOf(opts, "mem_mb"));
  return fmt::format("GEMM fp64 n={:g}, memory {:g} MiB", NumOf(opts, "matrix_n"), NumOf(opts, "mem_mb"));
}

// At most `max` items, then how many more.
std::string JoinSome(const std::vector<std::string>& items, size_t max = 5) {
  std::string out;
  for (size_t k = 0; k < items.size() && k < max; ++k) out += (k ? "; " : "") + items[k];
  if (items.size() > max) out += fmt::format("; and {} more", items.size() - max);
  return out;
}

}  // namespace

std::optional<double> CgroupMemoryLeftMb(const std::string& proc_self_cgroup, const std::filesystem::path& root) {
  namespace fs = std::filesystem;
  std::optional<double> left;
  auto take = [&left](std::optional<unsigned long long> limit, std::optional<unsigned long long> used) {
    // Unlimited reads as a number near 2^63 on cgroup v1: not a limit.
    if (!limit || *limit >= (1ULL << 60)) return;
    double l = (static_cast<double>(*limit) - static_cast<double>(used.value_or(0))) / 1048576;
    l = std::max(l, 0.0);
    if (!left || l < *left) left = l;
  };
  for (const auto& line : util::SplitLines(proc_self_cgroup)) {
    // "hierarchy-ID:controller-list:path"; the path may itself hold ':'.
    size_t c1 = line.find(':'), c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    std::string id = std::string(line.substr(0, c1)), ctl = std::string(line.substr(c1 + 1, c2 - c1 - 1));
    fs::path rel = fs::path(std::string(line.substr(c2 + 1))).relative_path().lexically_normal();
    if (rel.string().rfind("..", 0) == 0) continue;
    if (id == "0" && ctl.empty()) {
      // cgroup v2: every level up to the root may hold a limit.
      for (fs::path dir = rel;; dir = dir.parent_path()) {
        fs::path at = root / dir;
        take(ReadCount(at / "memory.max"), ReadCount(at / "memory.current"));
        if (dir.empty() || dir == dir.parent_path()) break;
      }
    } else {
      bool memory = false;
      for (const auto& c : util::Split(ctl, ','))
        if (c == "memory") memory = true;
      if (!memory) continue;
      fs::path at = root / "memory" / rel;
      take(ReadCount(at / "memory.limit_in_bytes"), ReadCount(at / "memory.usage_in_bytes"));
    }
  }
  return left;
}

int CpusAllowed() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return std::min(n, 1024);
  }
  return static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 1024u));
}

struct IterationLog::Impl {
  json kept = json::array();
  long long every = 1, count = 0;
  Distinct gemm, mem;
};
IterationLog::IterationLog() : impl_(std::make_unique<Impl>()) {}
IterationLog::~IterationLog() = default;
long long IterationLog::count() const { return impl_->count; }
void IterationLog::Add(json rec) {
  Impl& m = *impl_;
  const long long i = m.count++;
  rec["i"] = i;
  m.gemm.Add(StrOf(rec, "gemm_sum"), i);
  m.mem.Add(StrOf(rec, "mem_sum"), i);
  if (i % m.every != 0) return;
  m.kept.push_back(std::move(rec));
  if (m.kept.size() > kMaxKept) {
    // Twice as sparse: the kept indices stay multiples of `every`, as on every other node.
    m.every *= 2;
    json thinner = json::array();
    for (auto& r : m.kept)
      if (r["i"].get<long long>() % m.every == 0) thinner.push_back(std::move(r));
    m.kept = std::move(thinner);
  }
}
void IterationLog::WriteTo(json& doc) const {
  const Impl& m = *impl_;
  doc["iterations"] = m.kept;
  doc["iteration_count"] = m.count;
  if (m.every > 1) doc["decimated"] = m.every;
  json distinct = {{"gemm", m.gemm.Json()}, {"mem", m.mem.Json()}};
  if (m.gemm.other) distinct["gemm_other"] = {{"count", m.gemm.other}, {"first", m.gemm.other_first}};
  if (m.mem.other) distinct["mem_other"] = {{"count", m.mem.other}, {"first", m.mem.other_first}};
  doc["distinct_sums"] = std::move(distinct);
}

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void FillUniform(uint64_t& state, double* out, size_t count) {
  for (size_t i = 0; i < count; ++i)
    out[i] = static_cast<double>(SplitMix64(state) >> 11) * 0x1.0p-52 - 1.0;  // [0, 2) - 1, exact
}

bool Gemm(const double* a, const double* b, double* c, int n, int threads) {
  if (n <= 0) return true;
  const size_t N = static_cast<size_t>(n);
  std::fill(c, c + N * N, 0.0);
  std::atomic<bool> stopped{false};
  // Blocked for the caches; k runs in ascending order for every C[i][j] (the kk blocks in order,
  // k within them), so each element is the naive loop's sum, bit for bit. Threads split the rows.
  Split(N, threads, [&](size_t i0, size_t i1) {
    constexpr size_t kBi = 16, kBk = 128, kBj = 512;
    for (size_t ii = i0; ii < i1; ii += kBi) {
      if (util::Cancelled()) {
        stopped = true;
        return;
      }
      size_t ie = std::min(ii + kBi, i1);
      for (size_t kk = 0; kk < N; kk += kBk) {
        size_t ke = std::min(kk + kBk, N);
        for (size_t jj = 0; jj < N; jj += kBj) {
          size_t je = std::min(jj + kBj, N);
          for (size_t i = ii; i < ie; ++i) {
            double* ci = c + i * N;
            const double* ai = a + i * N;
            for (size_t k = kk; k < ke; ++k) {
              const double aik = ai[k];
              const double* bk = b + k * N;
              for (size_t j = jj; j < je; ++j) ci[j] += aik * bk[j];
            }
          }
        }
      }
    }
  });
  return !stopped;
}

void Triad(double* a, const double* b, const double* c, double s, size_t count, int threads) {
  Split(count, threads, [&](size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; ++i) a[i] = b[i] + s * c[i];
  });
}

std::string Fnv1a64Hex(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = kFnvOffset;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= kFnvPrime;
  }
  return fmt::format("{:016x}", h);
}

std::string WordChecksumHex(const double* data, size_t count) {
  uint64_t h = kFnvOffset;
  for (size_t i = 0; i < count; ++i) {
    uint64_t w;
    std::memcpy(&w, data + i, sizeof w);
    h ^= w;
    h *= kFnvPrime;
  }
  return fmt::format("{:016x}", h);
}

std::string KernelId() {
#if defined(__x86_64__)
  std::string id = "cpu-fp64-v1 x86_64";
#elif defined(__aarch64__)
  std::string id = "cpu-fp64-v1 aarch64";
#else
  std::string id = "cpu-fp64-v1 other";
#endif
  // Built with -ffp-contract=off (CMakeLists.txt): no a*b+c is fused, whatever the target has,
  // so every build of this version computes the same bits on its architecture.
  return id;
}

Options OptionsFromJob(const json& job) {
  Options o;
  o.gpu = StrOf(job, "backend") == "gpu";
  o.duration_s = Clamped(job, "duration_s", o.duration_s, 0, kMaxDuration);
  if (o.gpu) {
    o.matrix_n = static_cast<int>(std::lround(Clamped(job, "matrix_n", 8192, 256, 32768)));
    o.mem_mb = static_cast<int>(std::lround(Clamped(job, "mem_mb", 3072, 3, 1048576)));
  } else {
    o.matrix_n = static_cast<int>(std::lround(Clamped(job, "matrix_n", o.matrix_n, 16, 4096)));
    o.mem_mb = static_cast<int>(std::lround(Clamped(job, "mem_mb", o.mem_mb, 1, 65536)));
  }
  o.max_iterations = std::llround(Clamped(job, "max_iterations", 0, 0, 1e15));
  int threads = static_cast<int>(std::lround(Clamped(job, "threads", o.threads, 0, 1024)));
  if (threads == 0) threads = CpusAllowed();
  o.threads = threads;
  if (job.is_object()) {
    if (auto it = job.find("seed"); it != job.end()) {
      if (it->is_number_unsigned()) {
        o.seed = it->get<uint64_t>();
      } else if (it->is_number_integer()) {
        if (it->get<int64_t>() >= 0) o.seed = static_cast<uint64_t>(it->get<int64_t>());
      } else if (it->is_number_float()) {
        double d = it->get<double>();
        if (std::isfinite(d) && d >= 0 && d < 9007199254740992.0 && d == std::floor(d))
          o.seed = static_cast<uint64_t>(d);
      }
    }
  }
  return o;
}

json RunBurnInRankJob(const json& job, const std::string& node, int rank,
                      const std::function<void(const json&)>& on_iteration) {
  const Options o = OptionsFromJob(job);
  json doc = {{"node", node},
              {"rank", rank},
              {"inputs", {{"matrix_n", o.matrix_n}, {"mem_mb", o.mem_mb}, {"seed", o.seed}, {"kernel", KernelId()}}},
              {"threads", o.threads},
              {"iterations", json::array()},
              {"iteration_count", 0},
              {"completed", false},
              {"seconds", 0.0}};
  const size_t n = static_cast<size_t>(o.matrix_n), nn = n * n;
  const size_t words = (static_cast<size_t>(o.mem_mb) << 20) / sizeof(double) / 3;
  const double need_mb = (3.0 * static_cast<double>(nn) + 3.0 * static_cast<double>(words)) * 8 / 1048576;
  // Asking for memory the node does not have ends in the OOM killer, not in a failed allocation
  // (Linux overcommits): refused up front.
  // Inside a Slurm job the cgroup's limit is what counts, not the node's.
  std::optional<double> avail = MemAvailableMb();
  std::string where = "the node has";
  try {
    if (auto cg = CgroupMemoryLeftMb(util::ReadLocalFile("/proc/self/cgroup", 1u << 16).value_or(""));
        cg && (!avail || *cg < *avail))
      avail = cg, where = "the job's cgroup leaves";
  } catch (const std::exception&) {
    // unreadable: the node's figure stands
  }
  if (avail && need_mb > 0.9 * *avail) {
    doc["error"] = fmt::format("needs {:.0f} MiB of memory and {} {:.0f} MiB available: a smaller mem_mb or matrix_n",
                               need_mb, where, *avail);
    return doc;
  }
  std::vector<double> A, B, C, ma, mb, mc;
  try {
    A.resize(nn);
    B.resize(nn);
    C.resize(nn);
    ma.resize(words);
    mb.resize(words);
    mc.resize(words);
  } catch (const std::exception& e) {
    doc["error"] = fmt::format("allocating {:.0f} MiB: {}", need_mb, e.what());
    return doc;
  }
  uint64_t gs = o.seed, ms = o.seed ^ kMemStream;
  // Filled in slices (gigabytes take seconds): a cancel in the meantime is heard.
  auto fill = [](uint64_t& state, double* out, size_t count) {
    constexpr size_t kSlice = 1u << 20;
    for (size_t at = 0; at < count; at += kSlice) {
      if (util::Cancelled()) return false;
      FillUniform(state, out + at, std::min(kSlice, count - at));
    }
    return true;
  };
  if (!fill(gs, A.data(), nn) || !fill(gs, B.data(), nn) || !fill(ms, mb.data(), words) ||
      !fill(ms, mc.data(), words)) {
    doc["cancelled"] = true;
    return doc;
  }

  const double flops = 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
  const double bytes = 3.0 * static_cast<double>(words) * sizeof(double);
  IterationLog log;
  bool cancelled = false;
  doc["started"] = RoundTo(util::UnixSeconds(), 3);
  const auto t0 = Clock::now();
  for (long long i = 0;; ++i) {
    if (util::Cancelled()) {
      cancelled = true;
      break;
    }
    auto g0 = Clock::now();
    bool whole = Gemm(A.data(), B.data(), C.data(), o.matrix_n, o.threads);
    double g_s = Seconds(Clock::now() - g0);
    if (!whole) {
      cancelled = true;
      break;
    }
    std::string gsum = Fnv1a64Hex(C.data(), nn * sizeof(double));
    auto m0 = Clock::now();
    Triad(ma.data(), mb.data(), mc.data(), kTriadScalar, words, o.threads);
    double m_s = Seconds(Clock::now() - m0);
    std::string msum = WordChecksumHex(ma.data(), words);
    json rec = {{"i", i},
                {"t", RoundTo(Seconds(Clock::now() - t0), 3)},
                {"gemm_gflops", g_s > 0 ? json(Significant(flops / g_s / 1e9)) : json(nullptr)},
                {"gemm_sum", gsum},
                {"mem_gbps", m_s > 0 ? json(Significant(bytes / m_s / 1e9)) : json(nullptr)},
                {"mem_sum", msum}};
    if (on_iteration) on_iteration(rec);
    log.Add(std::move(rec));
    if (o.max_iterations > 0 && log.count() >= o.max_iterations) break;
    if (Seconds(Clock::now() - t0) >= o.duration_s) break;
  }
  doc["seconds"] = RoundTo(Seconds(Clock::now() - t0), 3);
  log.WriteTo(doc);
  doc["completed"] = !cancelled;
  if (cancelled) doc["cancelled"] = true;
  return doc;
}

json Summarize(const std::map<std::string, json>& per_node_docs, const std::map<std::string, std::string>& lost_nodes) {
  std::vector<NodeData> nodes;
  {
    std::set<std::string> names;
    for (const auto& [n, d] : per_node_docs) names.insert(n);
    for (const auto& [n, r] : lost_nodes) names.insert(n);
    for (const auto& name : names) {
      NodeData nd;
      nd.name = Text(name, 400);
      if (auto it = per_node_docs.find(name); it != per_node_docs.end()) {
        nd.doc = &it->second;
        nd.recs = ReadRecords(it->second);
        nd.completed = TrueOf(it->second, "completed");
        nd.cancelled = TrueOf(it->second, "cancelled");
        const json& in = ObjOf(it->second, "inputs");
        nd.group = Text(fmt::format("matrix_n {}, mem_mb {}, seed {}, kernel {}", ScalarText(in, "matrix_n"),
                                    ScalarText(in, "mem_mb"), ScalarText(in, "seed"), ScalarText(in, "kernel")),
                        600);
      }
      if (auto it = lost_nodes.find(name); it != lost_nodes.end()) {
        nd.lost = it->second.empty() ? "lost (no reason given)" : Text(it->second);
      } else if (!nd.completed && !nd.cancelled) {
        std::string err = nd.doc ? StrOf(*nd.doc, "error") : "";
        nd.lost = !err.empty()                    ? Text(err)
                  : nd.doc && nd.doc->is_object() ? "stopped before the end: neither completed nor cancelled"
                                                  : "no readable document";
      }
      nodes.push_back(std::move(nd));
    }
  }

  // Nodes vote within each group of nodes that ran the same inputs and kernel (only alike nodes
  // can be asked to compute the same bits); the largest group is the fleet for throughput.
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (!nodes[k].recs.empty()) groups[nodes[k].group].push_back(k);
  std::string main_group;
  size_t best = 0;
  for (const auto& [g, members] : groups)
    if (members.size() > best) best = members.size(), main_group = g;
  json not_compared = json::array();
  size_t voters = 0, voting_groups = 0;
  for (const auto& [g, members] : groups) {
    if (members.size() >= 2) {
      voters += members.size();
      ++voting_groups;
      continue;
    }
    for (size_t k : members)
      not_compared.push_back(
          {{"node", nodes[k].name},
           {"why", groups.size() == 1 ? std::string("the only node that returned iterations")
                                      : fmt::format("no other node ran {} (the most nodes ran {})", g, main_group)}});
  }

  struct Miss {
    long long first = -1, count = 0;
  };
  std::map<std::pair<size_t, int>, Miss> missed;  // (node, kind)
  long long compared = 0, undecided = 0, undecided_first = -1;
  json undecided_nodes = json::array();
  for (const auto& [g, members] : groups) {
    if (members.size() < 2) continue;
    // Merged by iteration index over the members' records (sorted): memory O(nodes).
    using Item = std::pair<long long, size_t>;  // (iteration, member)
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
    std::vector<size_t> cursor(members.size(), 0);
    for (size_t v = 0; v < members.size(); ++v) heap.push({nodes[members[v]].recs[0].i, v});
    std::vector<std::pair<size_t, const Rec*>> at;
    std::map<std::string_view, long long> winners[2];  // the sums that won a vote, per kind
    long long group_compared = 0;
    while (!heap.empty()) {
      long long i = heap.top().first;
      at.clear();
      while (!heap.empty() && heap.top().first == i) {
        size_t v = heap.top().second;
        heap.pop();
        const auto& recs = nodes[members[v]].recs;
        at.push_back({members[v], &recs[cursor[v]]});
        if (++cursor[v] < recs.size()) heap.push({recs[cursor[v]].i, v});
      }
      if (at.size() < 2) continue;
      bool voted = false;
      for (int kind = 0; kind < 2; ++kind) {
        std::vector<std::pair<size_t, std::string_view>> votes;
        for (const auto& [node, rec] : at) {
          std::string_view s = kind == 0 ? rec->gsum : rec->msum;
          if (!s.empty()) votes.push_back({node, s});
        }
        if (votes.size() < 2) continue;
        voted = true;
        std::map<std::string_view, size_t> tally;
        for (const auto& [node, s] : votes) ++tally[s];
        auto top = std::max_element(tally.begin(), tally.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
        if (top->second * 2 > votes.size()) {
          ++winners[kind][top->first];
          for (const auto& [node, s] : votes) {
            if (s == top->first) continue;
            Miss& m = missed[{node, kind}];
            if (m.first < 0) m.first = i;
            ++m.count;
          }
        } else {
          ++undecided;
          if (undecided_first < 0 || i < undecided_first) {
            undecided_first = i;
            undecided_nodes = json::array();
            for (const auto& [node, s] : votes) undecided_nodes.push_back(nodes[node].name);
          }
        }
      }
      if (voted) ++group_compared;
    }
    compared = std::max(compared, group_compared);
    // The votes saw only the iterations every document kept (a long run keeps every k-th): a
    // named node's own tally of every iteration, against the sum its group agreed on, counts
    // them all.
    for (int kind = 0; kind < 2; ++kind) {
      if (winners[kind].empty()) continue;
      auto agreed = std::max_element(winners[kind].begin(), winners[kind].end(), [](const auto& a, const auto& b) {
                      return a.second < b.second;
                    })->first;
      for (size_t k : members) {
        auto it = missed.find({k, kind});
        if (it == missed.end() || !nodes[k].doc) continue;
        const json& distinct = ObjOf(*nodes[k].doc, "distinct_sums");
        Miss all;
        auto add = [&all](const json& e) {
          auto c = Index(e, "count");
          if (!c || *c <= 0) return;
          all.count += *c;
          if (auto f = Index(e, "first"); f && (all.first < 0 || *f < all.first)) all.first = *f;
        };
        for (const auto& e : ArrOf(distinct, kind == 0 ? "gemm" : "mem"))
          if (ViewOf(e, "sum") != agreed) add(e);
        add(ObjOf(distinct, kind == 0 ? "gemm_other" : "mem_other"));
        if (all.count > it->second.count) it->second.count = all.count;
        if (all.first >= 0 && all.first < it->second.first) it->second.first = all.first;
      }
    }
  }

  json sdc = json::array();
  for (size_t k = 0; k < nodes.size(); ++k) {
    for (int kind = 0; kind < 2; ++kind) {
      const char* name = kind == 0 ? "gemm" : "mem";
      if (auto it = missed.find({k, kind}); it != missed.end()) {
        sdc.push_back({{"node", nodes[k].name},
                       {"kind", name},
                       {"first_iteration", it->second.first},
                       {"count", it->second.count},
                       {"by", "peers"}});
        continue;
      }
      OffMode self = SelfCheck(nodes[k], kind);
      if (self.count > 0)
        sdc.push_back({{"node", nodes[k].name},
                       {"kind", name},
                       {"first_iteration", self.first >= 0 ? json(self.first) : json(nullptr)},
                       {"count", self.count},
                       {"by", "self"}});
    }
  }

  json out_nodes = json::array(), lost = json::array();
  std::vector<std::pair<std::string, double>> gemm_medians, mem_medians;
  json worst;
  for (const auto& n : nodes) {
    const json& doc = n.doc ? *n.doc : EmptyObject();
    json o = {{"node", n.name}, {"iterations", n.recs.size()}, {"completed", n.completed}};
    if (auto r = Index(doc, "rank")) o["rank"] = *r;
    if (auto c = Index(doc, "iteration_count")) o["iteration_count"] = *c;
    if (auto d = Index(doc, "decimated"); d && *d > 1) o["decimated"] = *d;
    if (double sec = Finite(doc, "seconds"); sec >= 0) o["seconds"] = Round(sec, 3);
    if (n.cancelled) o["cancelled"] = true;
    if (n.lost) o["lost"] = *n.lost;
    if (!StrOf(doc, "error").empty()) o["error"] = Text(StrOf(doc, "error"));
    if (!StrOf(doc, "name").empty()) o["gpu_name"] = Text(StrOf(doc, "name"), 120);
    if (const json& t = ObjOf(doc, "telemetry"); !t.empty()) o["telemetry"] = TelemetryOf(t);
    if (TrueOf(doc, "health_read")) {
      json e = json::array();
      for (const auto& x : ArrOf(doc, "gpu_errors"))
        if (x.is_string() && e.size() < 16) e.push_back(Text(x.get<std::string>(), 300));
      o["gpu_errors"] = std::move(e);
    }
    std::vector<double> g, m;
    for (const auto& r : n.recs) {
      if (std::isfinite(r.gflops)) g.push_back(r.gflops);
      if (std::isfinite(r.gbps)) m.push_back(r.gbps);
    }
    double gmed = Median(g), mmed = Median(m);
    o["gemm_gflops"] = NumOrNull(gmed, 3);
    o["mem_gbps"] = NumOrNull(mmed, 3);
    bool in_main = !n.recs.empty() && n.group == main_group;
    if (in_main && std::isfinite(gmed)) gemm_medians.push_back({n.name, gmed});
    if (in_main && std::isfinite(mmed)) mem_medians.push_back({n.name, mmed});
    std::string gwhy, mwhy;
    o["gemm_drift"] = Drift(g, gwhy);
    o["mem_drift"] = Drift(m, mwhy);
    if (!gwhy.empty() && gwhy == mwhy)
      o["drift_why"] = gwhy;
    else if (!gwhy.empty() || !mwhy.empty())
      o["drift_why"] = gwhy.empty()   ? "memory: " + mwhy
                       : mwhy.empty() ? "GEMM: " + gwhy
                                      : "GEMM: " + gwhy + "; memory: " + mwhy;
    for (int kind = 0; kind < 2; ++kind) {
      const json& d = o[kind == 0 ? "gemm_drift" : "mem_drift"];
      if (d.is_number() && (worst.is_null() || d.get<double>() < worst["drift"].get<double>()))
        worst = {{"node", n.name},
                 {"kind", kind == 0 ? "gemm" : "mem"},
                 {"drift", d},
                 {"iterations", kind == 0 ? g.size() : m.size()}};
    }
    if (n.lost) {
      json l = {{"node", n.name}, {"reason", *n.lost}, {"last_iteration", nullptr}, {"last_t", nullptr}};
      if (!n.recs.empty()) {
        l["last_iteration"] = n.recs.back().i;
        double t = -1;
        for (const auto& r : n.recs)
          if (std::isfinite(r.t) && r.t > t) t = r.t;
        if (t >= 0) l["last_t"] = Round(t, 3);
      }
      lost.push_back(std::move(l));
    }
    out_nodes.push_back(std::move(o));
  }

  json s = {{"nodes", out_nodes},
            {"sdc_vote", groups.empty()       ? "no iterations"
                         : voting_groups > 0  ? "majority"
                         : groups.size() == 1 ? "single node"
                                              : "no alike nodes"},
            {"sdc_compared", {{"nodes", voters}, {"groups", voting_groups}, {"iterations", compared}}},
            {"sdc", sdc},
            {"sdc_undecided", undecided},
            {"not_compared", not_compared},
            {"fleet", {{"gemm_gflops", FleetOf(gemm_medians)}, {"mem_gbps", FleetOf(mem_medians)}}},
            {"lost", lost}};
  if (undecided > 0) {
    s["sdc_undecided_first"] = undecided_first;
    s["sdc_undecided_nodes"] = undecided_nodes;
  }
  if (!worst.is_null())
    s["worst_drift"] = worst;
  else
    s["drift_why"] = nodes.empty() ? "no node ran" : fmt::format("no node ran {} iterations", kDriftMin);
  return s;
}

std::vector<MetricValue> BurnInMetrics(const json& r) {
  const json& s = ObjOf(r, "summary");
  const json& opts = ObjOf(r, "options");
  const std::string inputs = InputsText(opts);
  const bool gpu = StrOf(opts, "backend") == "gpu";
  const char* unit = gpu ? "GPU" : "node";
  std::vector<MetricValue> out;

  {
    MetricValue m{"burnin.sdc", std::nullopt, "no node returned iterations", "", ""};
    std::vector<std::string> why;
    std::set<std::string> named;
    for (const auto& e : ArrOf(s, "sdc")) {
      std::string node = StrOf(e, "node"), kind = StrOf(e, "kind") == "mem" ? "memory" : "GEMM";
      named.insert(node);
      if (StrOf(e, "by") == "self")
        why.push_back(
            fmt::format("{}: its own {} results disagreed with each other ({:g} iteration(s) off its usual "
                        "result, the first at iteration {:g})",
                        node, kind, NumOf(e, "count"), NumOf(e, "first_iteration", -1)));
      else
        why.push_back(
            fmt::format("{}: {} result differed from the majority's at {:g} iteration(s), from iteration {:g}", node,
                        kind, NumOf(e, "count"), NumOf(e, "first_iteration", -1)));
    }
    double undecided = NumOf(s, "sdc_undecided");
    if (undecided > 0) {
      std::vector<std::string> who;
      for (const auto& n : ArrOf(s, "sdc_undecided_nodes"))
        if (n.is_string()) who.push_back(n.get<std::string>());
      why.push_back(fmt::format(
          "{:g} iteration vote(s) with no majority, the first at iteration {:g} ({}): the nodes disagree and none can "
          "be vouched for",
          undecided, NumOf(s, "sdc_undecided_first", -1), fmt::join(who, ", ")));
    }
    const json& cmp = ObjOf(s, "sdc_compared");
    std::string vote = StrOf(s, "sdc_vote");
    std::string left_out;
    if (!ArrOf(s, "not_compared").empty())
      left_out = fmt::format("; {} node(s) not compared (other inputs)", ArrOf(s, "not_compared").size());
    if (!why.empty()) {
      m.value = static_cast<double>(named.size());
      m.fail_reason = JoinSome(why);
      m.detail = fmt::format("{:g} node(s) compared over {:g} iteration(s), {}{}", NumOf(cmp, "nodes"),
                             NumOf(cmp, "iterations"), inputs, left_out);
    } else if (vote == "majority" && NumOf(cmp, "iterations") > 0) {
      m.value = 0;
      m.detail =
          fmt::format("{:g} nodes computed the same bits as their alike peers at each of {:g} iteration(s), {}{}",
                      NumOf(cmp, "nodes"), NumOf(cmp, "iterations"), inputs, left_out);
    } else if (vote == "majority") {
      m.why_missing = "no iteration ran on two nodes: nothing to compare";
    } else if (vote == "single node") {
      m.why_missing = "one node: no peer to compare its results with (its own iterations agreed)";
    } else if (vote == "no alike nodes") {
      m.why_missing = "no two nodes ran the same inputs and kernel: nothing to compare (their own iterations agreed)";
    }
    out.push_back(m);
  }

  {
    MetricValue m{"burnin.slowest-ratio", std::nullopt, "no node measured", "", ""};
    const json& f = ObjOf(ObjOf(s, "fleet"), "gemm_gflops");
    const json& slow = ObjOf(f, "slowest");
    auto ratio = OptNumOf(slow, "ratio");
    if (NumOf(f, "nodes") >= 2 && ratio) {
      m.value = *ratio;
      m.detail =
          fmt::format("slowest {} {}: {:g} GFLOP/s against the fleet median {:g} ({:g} {}s, {})", unit,
                      StrOf(slow, "node"), NumOf(slow, "value"), NumOf(f, "median"), NumOf(f, "nodes"), unit, inputs);
    } else if (NumOf(f, "nodes") == 1) {
      m.why_missing = "one node: no fleet to compare it with";
    } else if (NumOf(f, "nodes") >= 2) {
      m.why_missing = "the fleet median is not a positive figure";
    }
    out.push_back(m);
  }

  {
    MetricValue m{"burnin.drift", std::nullopt, StrOf(s, "drift_why"), "", ""};
    if (m.why_missing.empty()) m.why_missing = "not measured";
    const json& w = ObjOf(s, "worst_drift");
    if (auto d = OptNumOf(w, "drift")) {
      m.value = *d;
      m.why_missing.clear();
      m.detail = fmt::format("{}: {} throughput, median of the last quarter against the first ({:g} iterations)",
                             StrOf(w, "node"), StrOf(w, "kind") == "mem" ? "memory" : "GEMM", NumOf(w, "iterations"));
    }
    out.push_back(m);
  }

  {
    // A run stopped early (Ctrl-C, the time limit) proves only what it ran: the shortest share of
    // the asked duration that a node not lost ran.
    MetricValue m{"burnin.completed", std::nullopt, "no node ran", "", ""};
    double asked = NumOf(opts, "duration_s", -1);
    double share = 2;
    std::string shortest;
    double shortest_s = 0;
    for (const auto& n : ArrOf(s, "nodes")) {
      if (!StrOf(n, "lost").empty()) continue;
      double sh = 1;
      if (!TrueOf(n, "completed")) {
        double sec = NumOf(n, "seconds", 0);
        sh = asked > 0 && std::isfinite(sec) ? std::clamp(sec / asked, 0.0, 1.0) : 0;
      }
      if (sh < share) share = sh, shortest = StrOf(n, "node"), shortest_s = NumOf(n, "seconds", 0);
    }
    if (share <= 1) {
      m.value = RoundTo(share, 4);
      m.why_missing.clear();
      m.detail = share >= 1 ? fmt::format("every node ran the {:g} s asked", asked)
                            : fmt::format("{} stopped after {:.1f} s of the {:g} s asked", shortest, shortest_s, asked);
      if (share < 1 && TrueOf(r, "interrupted")) m.detail += " (the run was interrupted)";
    }
    out.push_back(m);
  }

  {
    MetricValue m{"burnin.lost-nodes", std::nullopt, "no node ran", "", ""};
    const json& lost = ArrOf(s, "lost");
    size_t nodes = ArrOf(s, "nodes").size();
    if (nodes > 0 || !lost.empty()) {
      m.value = static_cast<double>(lost.size());
      m.why_missing.clear();
      m.detail = fmt::format("{} node(s) in the run", nodes);
      std::vector<std::string> why;
      for (const auto& l : lost) {
        auto t = OptNumOf(l, "last_t");
        why.push_back(fmt::format("{} ({}{})", StrOf(l, "node"), StrOf(l, "reason"),
                                  t ? fmt::format(", last iteration at {:.1f} s", *t) : ", no iteration came back"));
      }
      if (!why.empty()) m.fail_reason = "lost mid-run: " + JoinSome(why);
    }
    out.push_back(m);
  }

  {
    // Errors the GPUs' own counters took during the run (NVML before and after): an uncorrectable
    // ECC error, a row remapped or pending, a page retired under load.
    MetricValue m{
        "burnin.gpu-errors", std::nullopt,
        gpu ? "no GPU's health was read before and after the run (NVML unreadable)" : "not a GPU burn-in (--gpu)", "",
        ""};
    std::vector<std::string> why;
    size_t read = 0;
    for (const auto& n : ArrOf(s, "nodes")) {
      if (!n.is_object() || !n.contains("gpu_errors")) continue;
      ++read;
      const json& e = ArrOf(n, "gpu_errors");
      if (!e.empty())
        why.push_back(fmt::format("{}: {}", StrOf(n, "node"), e[0].is_string() ? e[0].get<std::string>() : ""));
    }
    if (read > 0) {
      m.value = static_cast<double>(why.size());
      m.why_missing.clear();
      m.detail = fmt::format("{} GPU(s)' ECC, remapped-row and retired-page counters read before and after", read);
      if (!why.empty()) m.fail_reason = JoinSome(why);
    }
    out.push_back(m);
  }

  {
    // Clocks held back by heat, a power brake or a hardware slowdown under the load: the cooling or
    // the power delivery, not the load, set the pace.
    MetricValue m{"burnin.throttled", std::nullopt,
                  gpu ? "no GPU telemetry (NVML unreadable)" : "not a GPU burn-in (--gpu)", "", ""};
    std::vector<std::string> why;
    size_t read = 0;
    for (const auto& n : ArrOf(s, "nodes")) {
      const json& t = ObjOf(n, "telemetry");
      if (t.empty()) continue;
      ++read;
      std::vector<std::string> held;
      for (const auto& h : ArrOf(t, "held_back"))
        if (h.is_string()) held.push_back(h.get<std::string>());
      if (!held.empty())
        why.push_back(fmt::format("{}: {} (up to {:g} C)", StrOf(n, "node"), fmt::join(held, ", "),
                                  NumOf(t, "temperature_c_max", -1)));
    }
    if (read > 0) {
      m.value = static_cast<double>(why.size());
      m.why_missing.clear();
      m.detail = why.empty() ? fmt::format(
                                   "{} GPU(s) sampled once a second; none held back by heat, power brake or "
                                   "hardware slowdown",
                                   read)
                             : JoinSome(why);
    }
    out.push_back(m);
  }
  return out;
}

std::string RenderBurnIn(const json& r) {
  // One line per field: EscapeControls also writes line breaks visibly, so a node's text can
  // neither move the cursor nor forge a line of the table.
  auto safe = [](const std::string& s, size_t max = 120) { return util::EscapeControls(util::Ellipsize(s, max)); };
  auto fig = [](const json& o, const char* k) {
    auto v = OptNumOf(o, k);
    if (!v || !std::isfinite(*v)) return std::string("-");
    return std::fabs(*v) < 1e9 ? fmt::format("{:.2f}", *v) : fmt::format("{:.3g}", *v);
  };
  auto pct = [](const json& o, const char* k) {
    auto v = OptNumOf(o, k);
    if (!v || !std::isfinite(*v)) return std::string("-");
    return std::fabs(*v) < 1e6 ? fmt::format("{:+.1f}%", *v * 100) : fmt::format("{:+.3g}", *v);
  };
  auto whole = [](const json& o, const char* k) {
    auto v = OptNumOf(o, k);
    return v && std::isfinite(*v) ? fmt::format("{:.15g}", *v) : std::string("-");
  };
  const json& s = ObjOf(r, "summary");
  const json& o = ObjOf(r, "options");
  const bool gpu = StrOf(o, "backend") == "gpu";
  // GPU figures in TFLOP/s (a GEMM on a GPU runs at hundreds of thousands of GFLOP/s).
  auto gemm = [&](const json& x, const char* k) {
    if (!gpu) return fig(x, k);
    auto v = OptNumOf(x, k);
    return v && std::isfinite(*v) ? fmt::format("{:.1f}", *v / 1000) : std::string("-");
  };
  std::string out = gpu ? fmt::format("Burn-in: {} GPU(s), {:g} s, {}\n", ArrOf(s, "nodes").size(),
                                      NumOf(o, "duration_s"), InputsText(o))
                        : fmt::format("Burn-in: {} node(s), {:g} s, {}, {}\n", ArrOf(s, "nodes").size(),
                                      NumOf(o, "duration_s"), InputsText(o),
                                      NumOf(o, "threads", 1) > 0 ? fmt::format("{:g} thread(s)", NumOf(o, "threads", 1))
                                                                 : std::string("a thread per CPU of the task"));
  out += fmt::format("  {:<24} {:>8} {:>13} {:>8} {:>10} {:>8}  {}\n", gpu ? "GPU" : "node", "iters",
                     gpu ? "GEMM TFLOP/s" : "GEMM GFLOP/s", "drift", "mem GB/s", "drift", "");
  for (const auto& n : ArrOf(s, "nodes")) {
    std::string note;
    if (!StrOf(n, "lost").empty())
      note = "LOST: " + safe(StrOf(n, "lost"));
    else if (n.is_object() && n.contains("cancelled"))
      note = "cancelled";
    out += fmt::format("  {:<24} {:>8} {:>13} {:>8} {:>10} {:>8}  {}\n", safe(StrOf(n, "node"), 24),
                       fmt::format("{:g}", NumOf(n, "iteration_count", NumOf(n, "iterations"))), gemm(n, "gemm_gflops"),
                       pct(n, "gemm_drift"), fig(n, "mem_gbps"), pct(n, "mem_drift"), note);
  }
  const json& fleet = ObjOf(s, "fleet");
  const json& fg = ObjOf(fleet, "gemm_gflops");
  const json& fm = ObjOf(fleet, "mem_gbps");
  if (OptNumOf(fg, "median") || OptNumOf(fm, "median"))
    out += fmt::format("Fleet median: GEMM {} {}, memory {} GB/s\n", gemm(fg, "median"), gpu ? "TFLOP/s" : "GFLOP/s",
                       fig(fm, "median"));
  if (NumOf(fg, "nodes") >= 2 || NumOf(fm, "nodes") >= 2)
    out += fmt::format("Slowest: GEMM {} ({} of the median), memory {} ({} of the median)\n",
                       safe(StrOf(ObjOf(fg, "slowest"), "node"), 40), fig(ObjOf(fg, "slowest"), "ratio"),
                       safe(StrOf(ObjOf(fm, "slowest"), "node"), 40), fig(ObjOf(fm, "slowest"), "ratio"));
  bool tel_head = false;
  for (const auto& n : ArrOf(s, "nodes")) {
    const json& t = ObjOf(n, "telemetry");
    if (t.empty() && !n.contains("gpu_errors")) continue;
    if (!tel_head) {
      out += fmt::format("  {:<24} {:>7} {:>8} {:>9}  {}\n", "GPU telemetry", "max C", "max W", "SM MHz",
                         "held back / errors");
      tel_head = true;
    }
    std::vector<std::string> notes;
    for (const auto& h : ArrOf(t, "held_back"))
      if (h.is_string()) notes.push_back(h.get<std::string>());
    for (const auto& e : ArrOf(n, "gpu_errors"))
      if (e.is_string()) notes.push_back("ERROR " + e.get<std::string>());
    out += fmt::format("  {:<24} {:>7} {:>8} {:>9}  {}\n", safe(StrOf(n, "node"), 24), fig(t, "temperature_c_max"),
                       fig(t, "power_w_max"), fig(t, "sm_clock_mhz_median"),
                       notes.empty() ? std::string("-") : safe(fmt::format("{}", fmt::join(notes, "; ")), 200));
  }
  std::string vote = StrOf(s, "sdc_vote");
  const json& sdc = ArrOf(s, "sdc");
  for (const auto& e : sdc)
    out += fmt::format("SDC: {}'s {} result {} from iteration {} ({} iteration(s))\n", safe(StrOf(e, "node"), 40),
                       StrOf(e, "kind") == "mem" ? "memory" : "GEMM",
                       StrOf(e, "by") == "self" ? "disagreed with its own" : "differed from the majority's",
                       whole(e, "first_iteration"), whole(e, "count"));
  if (NumOf(s, "sdc_undecided") > 0)
    out += fmt::format("SDC: {:g} iteration vote(s) with no majority (first at iteration {:g}): nobody vouched for\n",
                       NumOf(s, "sdc_undecided"), NumOf(s, "sdc_undecided_first", -1));
  if (sdc.empty() && NumOf(s, "sdc_undecided") <= 0) {
    if (vote == "majority")
      out += fmt::format("SDC: none, every node computed the same bits ({:g} iteration(s) compared)\n",
                         NumOf(ObjOf(s, "sdc_compared"), "iterations"));
    else if (vote == "single node")
      out += "SDC: one node, no vote possible\n";
  }
  for (const auto& n : ArrOf(s, "not_compared"))
    out += fmt::format("Not compared: {}: {}\n", safe(StrOf(n, "node"), 40), safe(StrOf(n, "why"), 300));
  for (const auto& l : ArrOf(s, "lost")) {
    auto t = OptNumOf(l, "last_t");
    out += fmt::format(
        "Lost: {} ({}), {}\n", safe(StrOf(l, "node"), 40), safe(StrOf(l, "reason"), 200),
        t && std::isfinite(*t) ? fmt::format("last iteration at {:.1f} s", *t) : std::string("no iteration came back"));
  }
  return out;
}

}  // namespace clustermax::bench::burnin
