#include "bench/net_interop.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "util/strings.h"

namespace clustermax::bench::net {
namespace {

std::optional<double> Number(std::string_view s) {
  s = util::Trim(s);
  if (s.empty() || s.size() > 40) return std::nullopt;
  std::string t(s);
  char* end = nullptr;
  double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A launcher's line tag ("[1,0]<stdout>:" from Open MPI's --tag-output) removed.
std::string_view Untagged(std::string_view line) {
  if (line.starts_with("[")) {
    size_t at = line.find("]<stdout>:");
    if (at != std::string_view::npos && at < 16) return line.substr(at + 10);
    at = line.find("]<stderr>:");
    if (at != std::string_view::npos && at < 16) return line.substr(at + 10);
  }
  return line;
}

// perftest header fields: " Dual-port       : OFF\t\tDevice         : mlx5_0" holds two. Segments
// are split at tabs, or at a run of 3+ spaces followed by a word and a colon (the copies whose
// tabs became spaces).
std::vector<std::pair<std::string, std::string>> HeaderFields(std::string_view line) {
  std::vector<std::string> segments;
  std::string cur;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '\t') {
      segments.push_back(cur);
      cur.clear();
      continue;
    }
    if (c == ' ' && i + 3 < line.size() && line[i + 1] == ' ' && line[i + 2] == ' ') {
      size_t j = i;
      while (j < line.size() && line[j] == ' ') ++j;
      // A following "Word ... :" starts a new field; spaces before the colon do not.
      size_t colon = line.find(':', j);
      bool word = j < line.size() && std::isalpha(static_cast<unsigned char>(line[j]));
      bool value_before = util::Trim(cur).find(':') != std::string_view::npos;
      if (word && colon != std::string_view::npos && value_before) {
        segments.push_back(cur);
        cur.clear();
        i = j - 1;
        continue;
      }
    }
    cur += c;
  }
  segments.push_back(cur);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& s : segments) {
    size_t colon = s.find(':');
    if (colon == std::string::npos) continue;
    std::string key(util::Trim(std::string_view(s).substr(0, colon)));
    std::string value(util::Trim(std::string_view(s).substr(colon + 1)));
    if (!key.empty()) out.emplace_back(key, value);
  }
  return out;
}

}  // namespace

std::optional<double> ToGbps(double value, std::string_view unit) {
  if (unit == "Gb/sec") return value;
  if (unit == "MB/sec") return value * 8e-3;
  if (unit == "MiB/sec") return value * 8 * 1.048576e-3;
  return std::nullopt;
}

std::optional<PerftestRun> ParsePerftest(std::string_view text, std::string* error) {
  PerftestRun run;
  bool in_table = false, header_seen = false;
  for (std::string_view raw : util::SplitLineViews(text)) {
    std::string_view line = Untagged(raw);
    std::string_view t = util::Trim(line);
    if (t.empty()) continue;
    if (t.find("initializing CUDA") != std::string_view::npos || t.find("GPU buffer") != std::string_view::npos)
      run.cuda = true;
    if (t.starts_with("---")) {
      if (in_table) in_table = false;
      continue;
    }
    if (t.ends_with(" Test") &&
        (t.find("BW Test") != std::string_view::npos || t.find("Latency Test") != std::string_view::npos)) {
      run.title = std::string(t);
      run.latency = t.find("Latency") != std::string_view::npos;
      continue;
    }
    if (t.starts_with("#bytes")) {
      header_seen = in_table = true;
      if (run.latency) {
        run.unit = "usec";
      } else {
        size_t open = t.find("BW peak[");
        size_t close = open == std::string_view::npos ? open : t.find(']', open);
        if (open != std::string_view::npos && close != std::string_view::npos)
          run.unit = std::string(t.substr(open + 8, close - open - 8));
      }
      continue;
    }
    if (in_table) {
      auto f = util::SplitWhitespace(t);
      auto bytes = f.empty() ? std::nullopt : util::ParseInt(f[0]);
      if (!bytes) {
        run.warnings.push_back(std::string(t));  // "Conflicting CPU frequency values detected ..."
        continue;
      }
      std::vector<double> v;
      for (size_t i = 1; i < f.size(); ++i) {
        auto n = Number(f[i]);
        if (!n) break;
        v.push_back(*n);
      }
      if (run.latency && v.size() >= 8) {
        run.lat.push_back({*bytes, static_cast<long long>(v[0]), v[1], v[2], v[3], v[4], v[5], v[6], v[7]});
      } else if (!run.latency && v.size() >= 4) {
        run.bw.push_back({*bytes, static_cast<long long>(v[0]), v[1], v[2], v[3]});
      } else {
        run.warnings.push_back(std::string(t));
      }
      continue;
    }
    for (const auto& [key, value] : HeaderFields(line)) {
      if (key == "Device") run.device = value;
      if (key == "Link type") run.link_type = value;
      if (key == "Transport type") run.transport = value;
      if (key == "Connection type") run.connection = value;
      if (key == "Number of qps") run.qps = static_cast<int>(util::ParseInt(value).value_or(0));
      if (key == "GID index") run.gid_index = static_cast<int>(util::ParseInt(value).value_or(-1));
      if (key == "Mtu") run.mtu = static_cast<int>(util::ParseInt(value.substr(0, value.find('['))).value_or(0));
    }
  }
  if (!header_seen || (run.bw.empty() && run.lat.empty())) {
    if (error) *error = header_seen ? "a perftest table without a result row" : "no perftest result table (#bytes ...)";
    return std::nullopt;
  }
  return run;
}

std::optional<double> BusBwFactor(std::string_view c, int n) {
  if (n < 1) return std::nullopt;
  double r = static_cast<double>(n - 1) / n;
  if (c == "all_reduce") return 2 * r;
  if (c == "all_gather" || c == "reduce_scatter" || c == "alltoall" || c == "gather" || c == "scatter") return r;
  if (c == "broadcast" || c == "reduce" || c == "sendrecv") return 1.0;
  return std::nullopt;
}

namespace {

// Which collective a table measured, from its columns and its busbw/algbw ratio on `n` ranks:
// 2(n-1)/n is all_reduce; (n-1)/n with a reduction is reduce_scatter (all_gather and alltoall,
// without one, share that factor and are told apart only by name); 1 with a root is broadcast
// (no reduction) or reduce; 1 without one is sendrecv. "" when nothing tells.
std::string InferCollective(const CollectiveTable& t) {
  if (t.ranks < 2) return "";
  const CollectiveRow* big = nullptr;
  for (const auto& r : t.rows)
    if (r.out_of_place.algbw > 0 && (!big || r.bytes > big->bytes)) big = &r;
  if (!big || big->redop.empty()) return "";
  double ratio = big->out_of_place.busbw / big->out_of_place.algbw;
  auto near = [&](double f) { return std::abs(ratio - f) < 0.02 * f + 0.011; };
  double n = t.ranks;
  bool reduction = big->redop != "none";
  if (near(2 * (n - 1) / n) && reduction && big->root < 0) return "all_reduce";
  if (near((n - 1) / n) && reduction && big->root < 0) return "reduce_scatter";
  if (near(1) && big->root >= 0) return reduction ? "reduce" : "broadcast";
  if (near(1) && big->root < 0 && reduction) return "sendrecv";
  return "";
}

}  // namespace

namespace {
std::string ToUpper(std::string_view v) {
  std::string s(v);
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}
// NCCL's algorithm and protocol ids (before 2.23 the tuning line printed numbers; names since)
// (src/include/nccl_common.h).
std::string AlgoName(std::string_view v) {
  static const char* names[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  auto n = util::ParseInt(v);
  if (!n) return ToUpper(v);
  return *n >= 0 && *n < 7 ? names[*n] : fmt::format("algo {}", *n);
}
// A channel count: a non-negative number NCCL could print (0 otherwise).
int Count(std::string_view v) {
  auto n = util::ParseInt(v);
  return n && *n >= 0 && *n <= 65536 ? static_cast<int>(*n) : 0;
}
std::string ProtoName(std::string_view v) {
  static const char* names[] = {"LL", "LL128", "SIMPLE"};
  auto n = util::ParseInt(v);
  if (!n) return ToUpper(v);
  return *n >= 0 && *n < 3 ? names[*n] : fmt::format("proto {}", *n);
}

// One line of NCCL_DEBUG=INFO output (srun/mpirun tags removed, trimmed) into the facts: the
// reading nccl-tests files and NCCL's own debug files share.
void ReadNcclDebugLine(std::string_view t, NcclDebugFacts& f) {
  size_t info = t.find("NCCL INFO ");
  if (size_t at = t.find("NCCL version "); at != std::string_view::npos) {
    auto w = util::SplitWhitespace(t.substr(at + 13));
    if (!w.empty()) f.version = w[0];
  }
  if (t.starts_with("RCCL version")) {
    size_t colon = t.find(':');
    if (colon != std::string_view::npos) f.version = std::string(util::Trim(t.substr(colon + 1)));
  }
  if (info == std::string_view::npos) return;
  std::string_view m = t.substr(info + 10);
  if (m.starts_with("Using network ")) f.network = std::string(util::Trim(m.substr(14)));
  if (m.find("NVLS multicast support is available") != std::string_view::npos) f.nvls = true;
  if (size_t c = m.find(" coll channels"); c != std::string_view::npos) {
    auto w = util::SplitWhitespace(m);
    if (!w.empty()) f.coll_channels = Count(w[0]);
    if (size_t nv = m.find(" nvls channels"); nv != std::string_view::npos) {
      size_t comma = m.rfind(',', nv);
      auto ww = util::SplitWhitespace(m.substr(comma == std::string_view::npos ? 0 : comma + 1));
      if (!ww.empty()) f.nvls_channels = Count(ww[0]);
    }
  }
  if (m.starts_with("Channel ")) {
    if (size_t via = m.find(" via "); via != std::string_view::npos) {
      std::string tr(util::Trim(m.substr(via + 5)));
      if (std::find(f.transports.begin(), f.transports.end(), tr) == f.transports.end()) f.transports.push_back(tr);
    }
  }
  if (size_t arrow = m.find(" Bytes -> Algo "); arrow != std::string_view::npos) {
    NcclTuning tu;
    std::string_view head = util::Trim(m.substr(0, arrow));
    size_t colon = head.find(':');
    if (colon != std::string_view::npos) {
      tu.collective = std::string(util::Trim(head.substr(0, colon)));
      head = util::Trim(head.substr(colon + 1));
    }
    tu.bytes = util::ParseInt(head).value_or(-1);
    auto w = util::SplitWhitespace(m.substr(arrow + 15));
    if (w.size() >= 3 && w[1] == "proto") {
      tu.algorithm = AlgoName(w[0]);
      tu.protocol = ProtoName(w[2]);
      if (tu.bytes >= 0) f.tuning.push_back(std::move(tu));
    }
  }
}
}  // namespace

std::vector<CollectiveTable> ParseNcclTests(std::string_view text, std::string_view collective, std::string* error) {
  std::vector<CollectiveTable> out;
  CollectiveTable cur;
  std::vector<std::string> columns;  // of the current table's column header
  NcclDebugFacts facts;              // NCCL_DEBUG and version lines of any rank: they hold for the whole run
  bool started = false;
  auto flush = [&] {
    if (started && !cur.rows.empty()) out.push_back(std::move(cur));
    cur = CollectiveTable{};
    columns.clear();
    started = false;
  };
  for (std::string_view raw : util::SplitLineViews(text)) {
    std::string_view t = util::Trim(Untagged(raw));
    if (t.empty()) continue;
    ReadNcclDebugLine(t, facts);
    if (t.starts_with("# nThread")) {
      flush();
      started = true;
      continue;
    }
    if (!started) continue;
    if (t.starts_with("#") && t.find("Rank") != std::string_view::npos &&
        t.find(" device ") != std::string_view::npos) {
      size_t at = t.find(" device ");
      size_t close = t.find("] ", at);
      cur.devices.push_back(close == std::string_view::npos ? "" : std::string(util::Trim(t.substr(close + 2))));
      cur.ranks = static_cast<int>(cur.devices.size());
      continue;
    }
    if (t.starts_with("#") && t.find(" size ") != std::string_view::npos && t.find("time") != std::string_view::npos) {
      columns = util::SplitWhitespace(t.substr(1));
      continue;
    }
    if (t.starts_with("# Out of bounds values")) {
      size_t colon = t.find(':');
      auto f = util::SplitWhitespace(colon == std::string_view::npos ? "" : t.substr(colon + 1));
      if (!f.empty()) cur.out_of_bounds = util::ParseInt(f[0]);
      if (t.find("FAILED") != std::string_view::npos) cur.failed = true;
      continue;
    }
    if (t.starts_with("# Avg bus bandwidth")) {
      size_t colon = t.find(':');
      if (colon != std::string_view::npos) cur.avg_busbw = Number(t.substr(colon + 1));
      continue;
    }
    if (t.starts_with("#") || columns.empty()) continue;
    auto f = util::SplitWhitespace(t);
    if (f.size() != columns.size()) continue;  // "Launch mode Parallel", warnings
    CollectiveRow row;
    bool ok = true;
    int placement = 0;  // the first time/algbw/busbw/wrong set is out-of-place, the second in-place
    for (size_t i = 0; i < columns.size() && ok; ++i) {
      const std::string& c = columns[i];
      const std::string& v = f[i];
      CollectivePlacement& p = placement == 0 ? row.out_of_place : row.in_place;
      if (c == "size") {
        auto n = util::ParseInt(v);
        ok = n.has_value();
        row.bytes = n.value_or(0);
      } else if (c == "count") {
        row.count = util::ParseInt(v).value_or(0);
      } else if (c == "type") {
        row.type = v;
      } else if (c == "redop") {
        row.redop = v;
      } else if (c == "root") {
        row.root = util::ParseInt(v).value_or(-1);
      } else if (c == "time" || c == "algbw" || c == "busbw") {
        auto n = Number(v);
        ok = n.has_value();
        (c == "time" ? p.time_us : c == "algbw" ? p.algbw : p.busbw) = n.value_or(0);
      } else if (c == "#wrong" || c == "error") {
        std::string w = v;
        if (!w.empty() && w.back() == '*') w.pop_back();  // rccl-tests marks an error over its threshold
        // "N/A": not checked. The old format's "error" column is the largest deviation (2e-07 is a
        // float reduction's rounding), not a count: its verdict is the footer's FAILED.
        p.wrong = c == "#wrong" && w != "N/A" ? util::ParseInt(w).value_or(-1) : -1;
        if (p.wrong > 0) cur.failed = true;
        ++placement;
      }
    }
    if (ok) cur.rows.push_back(std::move(row));
  }
  flush();
  for (auto& t : out) {
    t.nccl_version = facts.version;
    t.network = facts.network;
    t.nvls = facts.nvls;
    t.collective = collective.empty() ? InferCollective(t) : std::string(collective);
  }
  if (out.empty() && error) *error = "no nccl-tests result table (# nThread ... and a size/time header)";
  return out;
}

NcclDebugFacts ParseNcclDebug(std::string_view text) {
  NcclDebugFacts f;
  for (std::string_view raw : util::SplitLineViews(text)) ReadNcclDebugLine(util::Trim(Untagged(raw)), f);
  return f;
}

}  // namespace clustermax::bench::net
