#include "bench/history.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "bench/json_read.h"
#include "core/xid_catalog.h"
#include "util/slurm_text.h"
#include "util/strings.h"
#include "util/time.h"

namespace clustermax::bench::history {
using nlohmann::json;

namespace {

std::vector<std::string> SplitPipes(std::string_view line) {
  std::vector<std::string> out;
  for (auto& f : util::Split(line, '|', /*keep_empty=*/true)) out.emplace_back(util::Trim(f));
  return out;
}

// Column index by any of the names, or -1.
int Col(const std::vector<std::string>& header, std::initializer_list<const char*> names) {
  for (size_t i = 0; i < header.size(); ++i)
    for (const char* n : names)
      if (util::ToLower(header[i]) == util::ToLower(n)) return static_cast<int>(i);
  return -1;
}

std::string At(const std::vector<std::string>& row, int i) {
  return i >= 0 && static_cast<size_t>(i) < row.size() ? row[static_cast<size_t>(i)] : "";
}

// The header line (the first with all the `need` columns) and the rows after it.
bool FindHeader(const std::vector<std::string>& lines, size_t& at, std::vector<std::string>& header,
                std::initializer_list<std::initializer_list<const char*>> need) {
  for (at = 0; at < lines.size(); ++at) {
    if (lines[at].find('|') == std::string_view::npos) continue;
    header = SplitPipes(lines[at]);
    bool ok = true;
    for (const auto& names : need) ok = ok && Col(header, names) >= 0;
    if (ok) return true;
  }
  return false;
}

double Overlap(double a0, double a1, double b0, double b1) {
  return std::max(0.0, std::min(a1, b1) - std::max(a0, b0));
}

using Interval = std::pair<double, double>;

// Sorted, overlapping or touching intervals joined.
std::vector<Interval> Merge(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first <= out.back().second)
      out.back().second = std::max(out.back().second, iv.second);
    else
      out.push_back(iv);
  }
  return out;
}

double Hours(const std::vector<Interval>& v) {
  double s = 0;
  for (const auto& [a, b] : v) s += b - a;
  return s / 3600.0;
}

// Merged `a` less merged `b`.
std::vector<Interval> Subtract(const std::vector<Interval>& a, const std::vector<Interval>& b) {
  std::vector<Interval> out;
  for (auto [x, y] : a) {
    for (const auto& [p, q] : b) {
      if (q <= x || p >= y) continue;
      if (p > x) out.push_back({x, p});
      x = std::max(x, q);
      if (x >= y) break;
    }
    if (x < y) out.push_back({x, y});
  }
  return out;
}

double GpusOf(const std::string& tres) {
  static const std::regex gpu(R"((?:^|,)gres/gpu(?::[^=,]*)?=(\d+))");
  std::smatch m;
  std::string t = tres.substr(0, 4096);
  // The untyped count when present ("gres/gpu=8,gres/gpu:h100=8"), else the first typed one.
  double untyped = -1, typed = -1;
  for (auto it = std::sregex_iterator(t.begin(), t.end(), gpu); it != std::sregex_iterator(); ++it) {
    bool has_type = (*it)[0].str().find("gres/gpu:") != std::string::npos;
    double v = std::stod((*it)[1].str().substr(0, 9));
    if (!has_type && untyped < 0) untyped = v;
    if (has_type && typed < 0) typed = v;
  }
  return untyped >= 0 ? untyped : typed >= 0 ? typed : 0;
}

bool Down(const std::string& state) {
  std::string s = util::ToLower(state);
  for (const char* bad : {"down", "drain", "fail", "not_responding", "maint", "reboot", "*"})
    if (util::Contains(s, bad)) return true;
  return false;
}

// Any of the words in s, each starting and ending at a word boundary ("efa" is not in "default",
// "psu" not in "capsule"); a word ending in '*' matches any ending ("remapp*").
bool HasAny(const std::string& s, std::initializer_list<const char*> words) {
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (const char* raw : words) {
    std::string w(raw);
    bool prefix = !w.empty() && w.back() == '*';
    if (prefix) w.pop_back();
    for (size_t at = s.find(w); at != std::string::npos; at = s.find(w, at + 1)) {
      bool start_ok = at == 0 || !alnum(s[at - 1]) || !alnum(w.front());
      size_t end = at + w.size();
      bool end_ok = prefix || end >= s.size() || !alnum(s[end]) || !alnum(w.back());
      if (start_ok && end_ok) return true;
    }
  }
  return false;
}

}  // namespace

namespace {

// Slurm's times read from its records or its log: 1990 to 2200. Outside that they are junk, and
// past 2262 a system_clock time point (nanoseconds) could not even hold them.
bool Plausible(double t) { return t >= 631152000.0 && t <= 7258118400.0; }

}  // namespace

std::optional<double> ParseSlurmTime(std::string_view s) {
  s = util::Trim(s);
  if (s.empty() || s.size() > 40) return std::nullopt;
  if (std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    if (s.size() > 12) return std::nullopt;
    double v = std::stod(std::string(s));
    return Plausible(v) ? std::optional<double>(v) : std::nullopt;
  }
  std::tm tm{};
  std::string str(s);
  const char* end = strptime(str.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || *end) return std::nullopt;
  tm.tm_isdst = -1;
  std::time_t t = std::mktime(&tm);
  if (t == static_cast<std::time_t>(-1) || !Plausible(static_cast<double>(t))) return std::nullopt;
  return static_cast<double>(t);
}

namespace {

// The time at the start of a slurmctld log line and where the message starts; nullopt when the
// line has no time we read.
std::optional<double> CtldLineTime(std::string_view line, double now) {
  static const std::regex iso(R"(^\[?(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?\]?)");
  static const std::regex syslog(R"(^([A-Z][a-z]{2}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) )");
  std::string head(line.substr(0, 64));
  std::smatch m;
  if (std::regex_search(head, m, iso)) {
    if (!m[3].matched) return ParseSlurmTime(m[1].str());  // Slurm's own: the controller's local time
    std::tm tm{};
    if (!strptime(m[1].str().c_str(), "%Y-%m-%dT%H:%M:%S", &tm)) return std::nullopt;
    double t = static_cast<double>(timegm(&tm));
    std::string z = m[3].str();
    if (z != "Z") {
      z.erase(std::remove(z.begin(), z.end(), ':'), z.end());
      int hh = std::stoi(z.substr(1, 2)), mm = std::stoi(z.substr(3, 2));
      if (hh > 14 || mm > 59) return std::nullopt;  // no such offset
      int off = hh * 3600 + mm * 60;
      t -= z[0] == '+' ? off : -off;
    }
    return Plausible(t) ? std::optional<double>(t) : std::nullopt;
  }
  if (std::regex_search(head, m, syslog)) {
    static const char* months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    int mon = -1;
    for (int i = 0; i < 12; ++i)
      if (m[1].str() == months[i]) mon = i;
    if (mon < 0) return std::nullopt;
    std::time_t n = static_cast<std::time_t>(now);
    std::tm local{};
    localtime_r(&n, &local);
    for (int back = 0; back < 2; ++back) {  // no year in syslog: this year, else the last one
      std::tm tm{};
      tm.tm_year = local.tm_year - back;
      tm.tm_mon = mon;
      tm.tm_mday = std::stoi(m[2].str());
      tm.tm_hour = std::stoi(m[3].str());
      tm.tm_min = std::stoi(m[4].str());
      tm.tm_sec = std::stoi(m[5].str());
      tm.tm_isdst = -1;
      double t = static_cast<double>(std::mktime(&tm));
      if (t <= now + 86400) return t;
    }
  }
  return std::nullopt;
}

// The word after `key` in `line` (a node name, a state), or "".
std::string WordAfter(std::string_view line, size_t at) {
  size_t end = at;
  while (end < line.size() && line[end] != ' ' && line[end] != ',' && line[end] != ':') ++end;
  return std::string(line.substr(at, end - at));
}

// The node named by "node N" / "Node N" just before `at` ("node N returned to service"), or "".
std::string NodeBefore(std::string_view line, size_t at, std::string_view word) {
  size_t n = line.rfind(word, at);
  return n == std::string_view::npos ? "" : WordAfter(line, n + word.size());
}

bool OutOfServiceState(const std::string& s) {
  for (const char* k : {"DRAIN", "DRAINING", "DRAINED", "DOWN", "FAIL", "FAILING", "INVAL"})
    if (s == k) return true;
  return false;
}
bool InServiceState(const std::string& s) {
  for (const char* k : {"IDLE", "RESUME", "ALLOCATED", "MIXED", "UNDRAIN", "COMPLETING"})
    if (s == k) return true;
  return false;
}

}  // namespace

void CtldLogReader::Open(const std::string& node, const std::string& state, const std::string& reason, double t) {
  if (node.empty()) return;
  if (open_.size() + closed_.size() >= kMaxEvents) {  // hostile input: memory stays bounded
    ++dropped_;
    return;
  }
  auto it = open_.find(node);
  if (it != open_.end()) {
    // DRAINING then DRAINED, DRAIN then DOWN: one outage, from its first sign; a reason set later fills in.
    if (it->second.reason.empty()) it->second.reason = reason;
    if (state == "DOWN" || state == "FAIL" || state == "INVAL") it->second.state = state;
    return;
  }
  NodeEvent e;
  e.node = node;
  e.state = state;
  e.reason = reason;
  e.start = t;
  open_.emplace(node, std::move(e));
}

void CtldLogReader::Close(const std::string& node, double t) {
  auto it = open_.find(node);
  if (it == open_.end()) return;
  NodeEvent e = std::move(it->second);
  open_.erase(it);
  e.end = std::max(t, e.start);
  closed_.push_back(std::move(e));
  reason_.erase(node);
}

void CtldLogReader::Feed(std::string_view line) {
  ++lines_;
  if (line.size() > 64 * 1024) return;  // no slurmctld line is that long: not a log line
  // What the log covers: its first dated line, and its last line (dated when asked, LastTime()).
  if (first_dated_ == 0)
    if (auto t = CtldLineTime(line, now_)) first_dated_ = *t;
  if (!util::Trim(line).empty()) last_line_.assign(line);
  auto has = [&](std::string_view k) { return line.find(k) != std::string_view::npos; };
  // Only lines about node states or jobs on failed nodes are read further.
  if (!has("update_node: node ") && !has("drain_nodes: node ") && !has("not responding, setting DOWN") &&
      !has(" not resumed by ResumeTimeout") && !has(" returned to service") && !has("Setting node ") &&
      !has(" on failed node ") && !has(" due to failure of node ") && !has(" unexpectedly rebooted") &&
      !has("error running JobId="))
    return;
  auto t = CtldLineTime(line, now_);
  if (!t) {
    ++undated_;
    return;
  }
  if (first_ == 0 || *t < first_) first_ = *t;
  last_ = std::max(last_, *t);
  std::string reason_key = "reason set to: ";
  for (const char* verb : {"update_node: node ", "drain_nodes: node "}) {
    size_t at = line.find(verb);
    if (at == std::string_view::npos) continue;
    std::string node = WordAfter(line, at + std::strlen(verb));
    std::string_view rest = line.substr(at + std::strlen(verb) + node.size());
    if (size_t r = rest.find(reason_key); r != std::string_view::npos) {
      std::string reason(util::Trim(rest.substr(r + reason_key.size())));
      reason_[node] = reason;
      if (auto it = open_.find(node); it != open_.end() && it->second.reason.empty()) it->second.reason = reason;
    } else if (size_t s2 = rest.find("state set to "); s2 != std::string_view::npos) {
      std::string state = WordAfter(rest, s2 + 13);
      std::transform(state.begin(), state.end(), state.begin(), [](unsigned char c) { return std::toupper(c); });
      if (OutOfServiceState(state))
        Open(node, state, reason_.count(node) ? reason_[node] : "", *t);
      else if (InServiceState(state))
        Close(node, *t);
    }
    return;
  }
  if (size_t at = line.find("Nodes "); at != std::string_view::npos && has("not responding, setting DOWN")) {
    size_t end = line.find(" not responding", at);  // the list holds commas: "n[00-01,03]", "a,b"
    if (end == std::string_view::npos || end <= at + 6) return;
    std::string list(util::Trim(line.substr(at + 6, end - at - 6)));
    if (list.empty() || list.find(' ') != std::string::npos) return;  // not a hostlist
    if (auto nodes = util::ExpandHostlist(list); nodes && nodes->size() <= kMaxNodesPerLine)
      for (const auto& n : *nodes) Open(n, "DOWN", "Not responding", *t);
    return;
  }
  if (size_t at = line.find(" not resumed by ResumeTimeout"); at != std::string_view::npos) {
    Open(NodeBefore(line, at, "node "), "DOWN", "ResumeTimeout reached", *t);
    return;
  }
  if (size_t at = line.find("Setting node "); at != std::string_view::npos) {
    // "Setting node N state to INVAL with reason:R" (22.05 on), "Setting node N state to DRAIN" (older)
    std::string node = WordAfter(line, at + 13);
    size_t st = line.find(" state to ", at);
    std::string state = st == std::string_view::npos ? "" : WordAfter(line, st + 10);
    size_t r = line.find("with reason:");
    if (OutOfServiceState(state))
      Open(node, state, r == std::string_view::npos ? "" : std::string(util::Trim(line.substr(r + 12))), *t);
    return;
  }
  if (size_t at = line.find(" returned to service"); at != std::string_view::npos) {
    Close(NodeBefore(line, at, "node "), *t);
    return;
  }
  for (const char* k : {" on failed node ", " due to failure of node "}) {
    // "Killing JobId=J on failed node N", "requeue job JobId=J due to failure of node N"
    // (and the older "Killing job_id J on failed node N")
    size_t at = line.find(k), j = line.find("JobId="), old = line.find("job_id ");
    size_t id = j != std::string_view::npos ? j + 6 : old != std::string_view::npos ? old + 7 : std::string_view::npos;
    if (at != std::string_view::npos && id != std::string_view::npos && id < at) {
      killed_[WordAfter(line, id)] = WordAfter(line, at + std::strlen(k));
      return;
    }
  }
  if (size_t at = line.find(" unexpectedly rebooted"); at != std::string_view::npos) {
    // "validate_node_specs: Node N unexpectedly rebooted boot_time=..." (the node is set DOWN)
    Open(NodeBefore(line, at, "Node "), "DOWN", "Node unexpectedly rebooted", *t);
    return;
  }
  if (size_t at = line.find("error running JobId="); at != std::string_view::npos) {
    // "slurmd error running JobId=J on node(s)=N: MSG": the node is drained next, with this cause.
    size_t on = line.find("on node(s)=", at), colon = on == std::string_view::npos ? on : line.find(": ", on);
    if (on != std::string_view::npos && colon != std::string_view::npos) {
      std::string msg(util::Trim(line.substr(colon + 2)));
      std::string list(util::Trim(line.substr(on + 11, colon - on - 11)));  // "gpu[01,02]": commas inside
      if (auto nodes = util::ExpandHostlist(list); nodes && nodes->size() <= kMaxNodesPerLine)
        for (const auto& n : *nodes) reason_[n] = "slurmd error running a job: " + msg;
    }
  }
}

double CtldLogReader::LastTime() const {
  auto t = CtldLineTime(last_line_, now_);
  return t ? *t : last_;
}

std::vector<NodeEvent> CtldLogReader::Events() const {
  std::vector<NodeEvent> out = closed_;
  for (const auto& [n, e] : open_) {
    NodeEvent o = e;
    o.open = true;
    o.end = std::max(now_, o.start);
    out.push_back(std::move(o));
  }
  std::sort(out.begin(), out.end(), [](const NodeEvent& a, const NodeEvent& b) {
    return std::tie(a.start, a.node) < std::tie(b.start, b.node);
  });
  return out;
}

std::vector<NodeEvent> ParseEvents(std::string_view text, double now, std::vector<std::string>* problems) {
  std::vector<NodeEvent> out;
  auto lines = util::SplitLines(text);
  size_t at = 0;
  std::vector<std::string> h;
  if (!FindHeader(lines, at, h, {{"NodeName"}, {"TimeStart", "Start"}})) {
    if (problems && !util::Trim(text).empty()) problems->push_back("sacctmgr show event: no header line");
    return out;
  }
  int node = Col(h, {"NodeName"}), start = Col(h, {"TimeStart", "Start"}), end = Col(h, {"TimeEnd", "End"}),
      state = Col(h, {"State"}), reason = Col(h, {"Reason"}), user = Col(h, {"User"});
  for (size_t i = at + 1; i < lines.size(); ++i) {
    if (util::Trim(lines[i]).empty()) continue;
    auto row = SplitPipes(lines[i]);
    if (row.size() < h.size()) {
      if (problems && problems->size() < 20)
        problems->push_back("sacctmgr: short row: " + util::Ellipsize(lines[i], 120));
      continue;
    }
    NodeEvent e;
    e.node = At(row, node);
    if (e.node.empty()) continue;  // a cluster event
    auto s = ParseSlurmTime(At(row, start));
    if (!s) {
      if (problems && problems->size() < 20)
        problems->push_back("sacctmgr: no start time: " + util::Ellipsize(lines[i], 120));
      continue;
    }
    e.start = *s;
    auto en = ParseSlurmTime(At(row, end));
    e.open = !en;
    e.end = en ? *en : std::max(now, e.start);
    e.state = At(row, state);
    e.reason = At(row, reason);
    e.user = At(row, user);
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<JobRecord> ParseJobs(std::string_view text, std::vector<std::string>* problems) {
  std::vector<JobRecord> out;
  auto lines = util::SplitLines(text);
  size_t at = 0;
  std::vector<std::string> h;
  if (!FindHeader(lines, at, h, {{"JobIDRaw", "JobID"}, {"State"}})) {
    if (problems && !util::Trim(text).empty()) problems->push_back("sacct: no header line");
    return out;
  }
  int id = Col(h, {"JobIDRaw", "JobID"}), state = Col(h, {"State"}), exit = Col(h, {"ExitCode"}),
      start = Col(h, {"Start"}), end = Col(h, {"End"}), nn = Col(h, {"NNodes"}), nl = Col(h, {"NodeList"}),
      tres = Col(h, {"AllocTRES"});
  for (size_t i = at + 1; i < lines.size(); ++i) {
    if (util::Trim(lines[i]).empty()) continue;
    auto row = SplitPipes(lines[i]);
    if (row.size() < h.size()) {
      if (problems && problems->size() < 20) problems->push_back("sacct: short row: " + util::Ellipsize(lines[i], 120));
      continue;
    }
    JobRecord j;
    j.id = At(row, id);
    if (j.id.empty() || j.id.find('.') != std::string::npos) continue;  // a step
    std::string st = At(row, state);
    j.state = st.substr(0, st.find(' '));
    j.exit_code = At(row, exit);
    if (auto s = ParseSlurmTime(At(row, start))) j.start = *s;
    if (auto e = ParseSlurmTime(At(row, end))) j.end = *e;
    std::string n = At(row, nn);
    j.nodes = !n.empty() && n.size() < 8 && std::all_of(n.begin(), n.end(), ::isdigit) ? std::stoi(n) : 0;
    j.nodelist = At(row, nl);
    j.gpus = GpusOf(At(row, tres));
    out.push_back(std::move(j));
  }
  return out;
}

std::string Cause(const std::string& reason) {
  std::string r = util::ToLower(reason.substr(0, 4096));
  if (r.empty()) return "unknown";
  // Planned work first ("nvidia driver upgrade" is maintenance, not a GPU fault); then failures,
  // memory before the GPU in general; a bare "reboot" last, as failures are rebooted too.
  if (HasAny(r, {"maint*", "upgrade*", "update*", "reimag*", "provision*", "firmware", "planned", "scheduled",
                 "reservation"}))
    return "maintenance";
  static const std::regex memory_xid(R"(xid[ :]*(48|63|64|92|94|95)\b)");
  if (HasAny(r, {"hbm", "ecc", "dbe", "row remap*", "remapp*", "retired page*", "sram", "uncorrectable"}) ||
      std::regex_search(r, memory_xid))
    return "gpu-memory";
  if (HasAny(r, {"xid", "sxid", "gpu*", "nvml", "nvidia", "fallen off the bus", "nvlink", "nvswitch", "fabric manager",
                 "dcgm", "gres/gpu"}))
    return "gpu";
  if (HasAny(r, {"infiniband", "ib", "ibstat", "hca", "mlx*", "nic", "link down", "link flap*", "roce", "efa",
                 "ethernet", "network", "switch", "cable", "opa"}))
    return "network";
  if (HasAny(r, {"mount*", "filesystem", "file system", "nfs", "lustre", "gpfs", "weka", "vast", "beegfs", "scratch",
                 "storage", "disk full", "quota"}))
    return "storage";
  if (HasAny(r, {"not responding",
                 "unexpectedly rebooted",
                 "memory",
                 "dimm",
                 "mce",
                 "cpu",
                 "disk",
                 "nvme",
                 "ssd",
                 "raid",
                 "psu",
                 "power",
                 "fan",
                 "thermal",
                 "temperature",
                 "bmc",
                 "ipmi",
                 "panic",
                 "hardware",
                 "low realmemory",
                 "low socket"}))
    return "host";
  if (HasAny(r, {"kill task failed", "epilog", "prolog", "slurmd", "software", "driver", "cuda", "container",
                 "health check", "nhc", "oom", "bug"}))
    return "software";
  if (HasAny(r, {"reboot*"})) return "maintenance";
  return "unknown";
}

NodeXids NodeXidsOf(const std::string& node, const json& doc) {
  NodeXids x;
  x.node = node;
  x.error = util::Ellipsize(StrOf(doc, "error"), 400);
  x.source = util::Ellipsize(StrOf(doc, "source"), 200);
  if (x.error.empty() && !(doc.contains("counts_by_day") && doc["counts_by_day"].is_object()))
    x.error = "no Xid counts in the node's document";
  for (const auto& [day, counts] : ObjOf(doc, "counts_by_day").items()) {
    if (x.days.size() >= 4000) break;
    if (!counts.is_object()) continue;
    auto& d = x.days[util::Ellipsize(day, 16)];
    for (auto it = counts.begin(); it != counts.end() && d.size() < 1000; ++it) {
      if (!it.value().is_number_integer()) continue;
      auto n = it.value().get<long long>();
      if (n > 0 && n < (1LL << 40)) d[util::Ellipsize(it.key(), 120)] += static_cast<long>(n);
    }
  }
  return x;
}

std::string CauseOf(const NodeEvent& e) { return e.xid.empty() ? Cause(e.reason) : Cause(e.xid); }

bool HardwareXid(const std::string& key) {
  const auto& cat = core::EmbeddedXidCatalog();
  auto severe = [](const std::string& s) { return s == "hardware" || s == "reset"; };
  if (key.rfind("message: ", 0) == 0) {
    const core::GpuLogMessage* m = cat.Message(std::string_view(key).substr(9));
    return m && severe(m->severity);
  }
  auto space = key.find(' ');
  if (space == std::string::npos) return false;
  auto code = util::ParseInt(std::string_view(key).substr(space + 1));
  if (!code) return false;
  const core::XidEntry* x = key.rfind("Xid ", 0) == 0    ? cat.Xid(static_cast<int>(*code))
                            : key.rfind("SXid ", 0) == 0 ? cat.Sxid(static_cast<int>(*code))
                                                         : nullptr;
  return x && severe(x->severity);
}

namespace {

std::string UtcDay(double t) {
  return util::FormatRfc3339(util::SysTime(std::chrono::seconds(static_cast<long long>(t)))).substr(0, 10);
}

}  // namespace

size_t AttributeXids(std::vector<NodeEvent>& events, const std::vector<NodeXids>& xids) {
  std::map<std::string, const NodeXids*> of;
  for (const auto& x : xids)
    if (x.error.empty()) of[x.node] = &x;
  size_t n = 0;
  for (auto& e : events) {
    e.xid.clear();
    std::string c = Cause(e.reason);
    if (c != "unknown" && c != "host" && c != "software") continue;
    auto it = of.find(e.node);
    if (it == of.end()) continue;
    for (const std::string& day : {UtcDay(e.start), UtcDay(e.start - 86400)}) {
      auto d = it->second->days.find(day);
      if (d == it->second->days.end()) continue;
      const std::string* best = nullptr;
      long most = 0;
      for (const auto& [key, count] : d->second)
        if (count > most && HardwareXid(key)) best = &key, most = count;
      if (!best) continue;
      e.xid = fmt::format("{} on {} ({} in the kernel log that day)", *best, day, most);
      ++n;
      break;
    }
  }
  return n;
}

json XidHistory(const std::vector<NodeXids>& xids, double from, double to) {
  std::string first = UtcDay(from), last = UtcDay(to);
  json by_key = json::object(), unread = json::array(), worst = json::array();
  long events = 0, hardware = 0, undated = 0;
  size_t read = 0;
  for (const auto& x : xids) {
    if (!x.error.empty()) {
      if (unread.size() < 100) unread.push_back({{"node", x.node}, {"error", x.error}});
      continue;
    }
    ++read;
    long node_hw = 0;
    json keys = json::object();
    for (const auto& [day, counts] : x.days) {
      if (day == "undated") {
        for (const auto& [k, c] : counts) undated += c;
        continue;
      }
      if (day < first || day > last) continue;
      for (const auto& [k, c] : counts) {
        events += c;
        by_key[k] = by_key.value(k, 0L) + c;
        if (HardwareXid(k)) {
          hardware += c;
          node_hw += c;
          keys[k] = keys.value(k, 0L) + c;
        }
      }
    }
    if (node_hw > 0) worst.push_back({{"node", x.node}, {"hardware_events", node_hw}, {"by_key", keys}});
  }
  std::sort(worst.begin(), worst.end(), [](const json& a, const json& b) {
    return a["hardware_events"].get<long>() > b["hardware_events"].get<long>();
  });
  size_t with_hw = worst.size();
  if (worst.size() > 50) worst.erase(worst.begin() + 50, worst.end());
  json out = {{"nodes_read", read},          {"nodes_unread", xids.size() - read},    {"events", events},
              {"hardware_events", hardware}, {"nodes_with_hardware_events", with_hw}, {"by_key", by_key},
              {"worst_nodes", worst}};
  if (!unread.empty()) out["unread"] = unread;
  if (undated) out["undated_events"] = undated;
  return out;
}

json Summarize(const std::vector<NodeEvent>& events, const std::vector<JobRecord>& jobs,
               const std::vector<std::string>& node_names, double from, double to) {
  double window_h = std::max(0.0, to - from) / 3600.0;
  std::set<std::string> nodes(node_names.begin(), node_names.end());
  // Out-of-service intervals in the window, per node: unplanned, planned, and per cause.
  std::map<std::string, std::vector<Interval>> unplanned_iv, planned_iv;
  std::map<std::string, std::map<std::string, std::vector<Interval>>> cause_iv;  // node -> cause -> spans
  std::map<std::string, json> causes;
  auto cause_row = [&](const std::string& c) -> json& {
    if (!causes.count(c)) causes[c] = {{"cause", c}, {"events", 0}, {"node_hours_lost", 0.0}, {"interruptions", 0}};
    return causes[c];
  };
  json ev_out = json::array();
  std::map<std::string, json> per_node;
  for (const auto& e : events) {
    if (!Down(e.state) && e.reason.empty()) continue;
    double a = std::max(e.start, from), b = std::min(e.end, to);
    if (b < a && !(e.start >= from && e.start <= to)) continue;  // outside the window
    b = std::max(a, b);
    nodes.insert(e.node);
    std::string c = CauseOf(e);
    (c == "maintenance" ? planned_iv : unplanned_iv)[e.node].push_back({a, b});
    cause_iv[e.node][c].push_back({a, b});
    json& row = cause_row(c);
    row["events"] = row["events"].get<long>() + 1;
    json& pn = per_node[e.node];
    if (pn.is_null()) pn = {{"node", e.node}, {"events", 0}, {"hours_lost", 0.0}};
    pn["events"] = pn["events"].get<long>() + 1;
    if (ev_out.size() < 2000) {
      ev_out.push_back(
          {{"node", e.node},
           {"start", util::FormatRfc3339(util::SysTime(std::chrono::seconds(static_cast<long long>(e.start))))},
           {"hours", RoundTo((e.end - e.start) / 3600.0, 3)},
           {"open", e.open},
           {"state", e.state},
           {"reason", e.reason},
           {"cause", c}});
      if (!e.xid.empty()) ev_out.back()["xid"] = e.xid;
    }
  }
  // Hours lost per node: its unplanned spans merged (Slurm opens a new event when the state or the
  // reason changes: one outage, several rows), then planned time outside them. Each merged
  // unplanned span is one failure.
  double lost_unplanned = 0, lost_planned = 0;
  long unplanned = 0;
  for (auto& [node, pn] : per_node) {
    auto u = Merge(unplanned_iv[node]);
    auto p = Subtract(Merge(planned_iv[node]), u);
    unplanned += static_cast<long>(u.size());
    lost_unplanned += Hours(u);
    lost_planned += Hours(p);
    pn["hours_lost"] = RoundTo(Hours(u) + Hours(p), 3);
  }
  // Per cause: each node's spans of that cause merged.
  for (auto& [node, by_cause] : cause_iv)
    for (auto& [c, v] : by_cause) {
      json& row = cause_row(c);
      row["node_hours_lost"] = row["node_hours_lost"].get<double>() + Hours(Merge(v));
    }
  double total_h = static_cast<double>(nodes.size()) * window_h;
  json out;
  out["window"] = {{"from", util::FormatRfc3339(util::SysTime(std::chrono::seconds(static_cast<long long>(from))))},
                   {"to", util::FormatRfc3339(util::SysTime(std::chrono::seconds(static_cast<long long>(to))))},
                   {"days", RoundTo(window_h / 24.0, 3)},
                   {"nodes", nodes.size()}};
  out["node_hours"] = {{"total", RoundTo(total_h, 3)},
                       {"lost_unplanned", RoundTo(lost_unplanned, 3)},
                       {"lost_planned", RoundTo(lost_planned, 3)}};
  if (total_h > 0) {
    out["availability"] = RoundTo(1.0 - lost_unplanned / total_h, 6);
    out["availability_with_planned"] = RoundTo(1.0 - (lost_unplanned + lost_planned) / total_h, 6);
  }
  out["failures"] = unplanned;
  if (!nodes.empty() && window_h > 0)
    out["failures_per_node_month"] =
        RoundTo(static_cast<double>(unplanned) / static_cast<double>(nodes.size()) / (window_h / (24.0 * 30.0)), 4);
  double operating_h = total_h - lost_unplanned - lost_planned;
  if (unplanned > 0)
    out["mtbf_node_hours"] = RoundTo(operating_h / static_cast<double>(unplanned), 2);
  else
    out["failure_free_node_hours"] = RoundTo(operating_h, 2);

  // Jobs: by state; those ended by a node failure matched to the event on their nodes at their end.
  json js = {{"total", 0}, {"by_state", json::object()}};
  double job_h = 0, job_lost_h = 0, gpu_h_lost = 0;
  json interruptions = json::array();
  std::map<std::string, std::vector<const NodeEvent*>> events_of;
  for (const auto& e : events) events_of[e.node].push_back(&e);
  for (const auto& j : jobs) {
    if (j.start <= 0) continue;  // never ran
    double end = j.end > 0 ? j.end : to;
    double h = Overlap(j.start, end, from, to) / 3600.0 * std::max(1, j.nodes);
    if (h <= 0 && !(j.end >= from && j.end <= to)) continue;
    js["total"] = js["total"].get<long>() + 1;
    js["by_state"][j.state] = js["by_state"].value(j.state, 0L) + 1;
    job_h += h;
    if (j.state != "NODE_FAIL") continue;
    job_lost_h += h;
    gpu_h_lost += Overlap(j.start, end, from, to) / 3600.0 * j.gpus;
    // The event on one of its nodes open at the job's end (or within 10 minutes of it): an
    // unplanned one before a planned one, then the one that began nearest the job's end.
    auto jn = j.nodelist.size() <= 4096 ? util::ExpandHostlist(j.nodelist) : std::nullopt;
    const NodeEvent* best = nullptr;
    auto rank = [&](const NodeEvent* e) {
      return std::make_pair(CauseOf(*e) == "maintenance", std::abs(e->start - end));
    };
    if (jn && jn->size() <= 100000)
      for (const auto& n : *jn)
        for (const NodeEvent* e : events_of[n])
          if (e->start <= end + 600 && e->end >= end - 600 && (!best || rank(e) < rank(best))) best = e;
    std::string c = best ? CauseOf(*best) : "unknown";
    json& row = cause_row(c);
    row["interruptions"] = row["interruptions"].get<long>() + 1;
    if (interruptions.size() < 500) {
      interruptions.push_back(
          {{"job", j.id},
           {"nodes", j.nodelist},
           {"end", util::FormatRfc3339(util::SysTime(std::chrono::seconds(static_cast<long long>(end))))},
           {"cause", c},
           {"node", best ? best->node : ""},
           {"reason", best ? best->reason : ""}});
      if (best && !best->xid.empty()) interruptions.back()["xid"] = best->xid;
    }
  }
  long total_jobs = js["total"].get<long>();
  long node_fail = js["by_state"].value("NODE_FAIL", 0L);
  if (total_jobs > 0)
    js["node_fail_share"] = RoundTo(static_cast<double>(node_fail) / static_cast<double>(total_jobs), 6);
  js["node_fail"] = node_fail;
  js["node_hours"] = RoundTo(job_h, 3);
  js["node_hours_lost_to_node_failure"] = RoundTo(job_lost_h, 3);
  js["gpu_hours_lost_to_node_failure"] = RoundTo(gpu_h_lost, 3);
  if (job_h > 0) js["goodput"] = RoundTo(1.0 - job_lost_h / job_h, 6);
  out["jobs"] = js;
  out["interruptions"] = interruptions;
  // The interruption table: causes by interruptions, then events.
  long all_int = 0, all_ev = 0;
  for (auto& [c, row] : causes) {
    all_int += row["interruptions"].get<long>();
    all_ev += row["events"].get<long>();
  }
  json table = json::array();
  for (auto& [c, row] : causes) {
    row["node_hours_lost"] = RoundTo(row["node_hours_lost"].get<double>(), 3);
    if (all_int > 0) row["interruption_share"] = RoundTo(row["interruptions"].get<double>() / all_int, 4);
    if (all_ev > 0) row["event_share"] = RoundTo(row["events"].get<double>() / all_ev, 4);
    table.push_back(row);
  }
  std::sort(table.begin(), table.end(), [](const json& a, const json& b) {
    return std::make_pair(a["interruptions"].get<long>(), a["events"].get<long>()) >
           std::make_pair(b["interruptions"].get<long>(), b["events"].get<long>());
  });
  out["causes"] = table;
  json worst = json::array();
  for (auto& [n, pn] : per_node) worst.push_back(pn);
  std::sort(worst.begin(), worst.end(),
            [](const json& a, const json& b) { return a["hours_lost"].get<double>() > b["hours_lost"].get<double>(); });
  if (worst.size() > 50) worst.erase(worst.begin() + 50, worst.end());
  out["worst_nodes"] = worst;
  out["events"] = ev_out;
  return out;
}

std::vector<MetricValue> HistoryMetrics(const json& r, const json& bars) {
  std::vector<MetricValue> out;
  const json& w = ObjOf(r, "window");
  std::string span = fmt::format("{:g} node(s) over {:g} day(s)", NumOf(w, "nodes"), NumOf(w, "days"));
  // Figures from records that were not read are no evidence, whatever Summarize made of nothing.
  std::string ev_err = StrOf(r, "events_error"), job_err = StrOf(r, "jobs_error");
  {
    MetricValue m{"rel.availability", std::nullopt, ev_err.empty() ? "no node time in the window" : ev_err, "", ""};
    if (auto v = OptNumOf(r, "availability"); v && ev_err.empty()) {
      m.value = *v;
      m.detail =
          fmt::format("{}; {:g} node-hour(s) lost to unplanned outages, {:g} planned", span,
                      NumOf(ObjOf(r, "node_hours"), "lost_unplanned"), NumOf(ObjOf(r, "node_hours"), "lost_planned"));
    }
    out.push_back(m);
  }
  {
    MetricValue m{"rel.node-mtbf", std::nullopt, ev_err.empty() ? "no node time in the window" : ev_err, "", ""};
    if (!ev_err.empty()) {
    } else if (auto v = OptNumOf(r, "mtbf_node_hours")) {
      m.value = *v;
      m.detail = fmt::format("{}; {:g} unplanned outage(s)", span, NumOf(r, "failures"));
    } else if (auto f = OptNumOf(r, "failure_free_node_hours")) {
      // No failure: only a lower bound, which passes only once it reaches the bar in use.
      std::optional<double> pass;
      for (const auto& b : ArrOf(bars, "metrics"))
        if (StrOf(b, "id") == "rel.node-mtbf") pass = OptNumOf(b, "pass");
      if (pass && *f >= *pass) {
        m.value = *f;
        m.detail = fmt::format("{}; no unplanned outage: at least this", span);
      } else {
        m.why_missing = fmt::format("no unplanned outage in {:g} node-hour(s): too short a history to say", *f);
      }
    }
    out.push_back(m);
  }
  {
    const json& j = ObjOf(r, "jobs");
    MetricValue m{"rel.node-fail-jobs", std::nullopt, job_err.empty() ? "no job ran in the window" : job_err, "", ""};
    if (auto v = OptNumOf(j, "node_fail_share"); v && job_err.empty()) {
      m.value = *v;
      m.detail = fmt::format("{:g} of {:g} job run(s) ended by a node failure, {:g} GPU-hour(s) lost",
                             NumOf(j, "node_fail"), NumOf(j, "total"), NumOf(j, "gpu_hours_lost_to_node_failure"));
    }
    out.push_back(m);
  }
  return out;
}

std::string RenderHistory(const json& r) {
  auto safe = [](const std::string& s) { return util::TerminalSafeText(s); };
  const json& w = ObjOf(r, "window");
  std::string out = fmt::format("Reliability from history: {} to {}, {:g} node(s)\n", safe(StrOf(w, "from")),
                                safe(StrOf(w, "to")), NumOf(w, "nodes"));
  for (const char* k : {"events_error", "jobs_error"})
    if (!StrOf(r, k).empty()) out += "  error: " + safe(StrOf(r, k)) + "\n";
  const json& nh = ObjOf(r, "node_hours");
  if (auto a = OptNumOf(r, "availability"))
    out += fmt::format("  availability {:.4f}  ({:g} of {:g} node-hours lost unplanned, {:g} planned)\n", *a,
                       NumOf(nh, "lost_unplanned"), NumOf(nh, "total"), NumOf(nh, "lost_planned"));
  if (auto m = OptNumOf(r, "mtbf_node_hours"))
    out += fmt::format("  MTBF per node {:g} h over {:g} unplanned outage(s); {:.3f} per node per month\n", *m,
                       NumOf(r, "failures"), NumOf(r, "failures_per_node_month"));
  const json& j = ObjOf(r, "jobs");
  out += fmt::format("  jobs {:g}: {:g} ended by node failure ({:g} GPU-hours lost)", NumOf(j, "total"),
                     NumOf(j, "node_fail"), NumOf(j, "gpu_hours_lost_to_node_failure"));
  if (auto g = OptNumOf(j, "goodput")) out += fmt::format(", goodput {:.4f}", *g);
  out += "\n";
  if (const json& x = ObjOf(r, "xid_history"); !x.empty()) {
    out += fmt::format(
        "  Xid history: {:g} node(s) read, {:g} unread; {:g} GPU error(s) in the window, {:g} of the GPU "
        "itself on {:g} node(s)",
        NumOf(x, "nodes_read"), NumOf(x, "nodes_unread"), NumOf(x, "events"), NumOf(x, "hardware_events"),
        NumOf(x, "nodes_with_hardware_events"));
    if (auto a = OptNumOf(x, "outages_attributed"); a && *a > 0)
      out += fmt::format("; {:g} outage(s) put down to one", *a);
    out += "\n";
    for (const auto& n : ArrOf(x, "worst_nodes")) {
      std::string keys;
      for (const auto& [k, c] : ObjOf(n, "by_key").items())
        keys += fmt::format("{}{} x{}", keys.empty() ? "" : ", ", safe(k), c.is_number() ? c.get<double>() : 0.0);
      out += fmt::format("    {:<16} {}\n", safe(StrOf(n, "node")), keys);
    }
  }
  if (!ArrOf(r, "causes").empty()) {
    out += fmt::format("  {:<12} {:>13} {:>8} {:>16}\n", "cause", "interruptions", "events", "node-hours lost");
    for (const auto& c : ArrOf(r, "causes"))
      out += fmt::format("  {:<12} {:>13g} {:>8g} {:>16.2f}\n", safe(StrOf(c, "cause")), NumOf(c, "interruptions"),
                         NumOf(c, "events"), NumOf(c, "node_hours_lost"));
  }
  return out;
}

}  // namespace clustermax::bench::history
