#include "audit/health.h"

#include <cctype>

#include <fmt/format.h>

#include "checks/register.h"
#include "core/minimums.h"
#include "util/strings.h"
#include "util/time.h"

namespace clustermax::audit::health {

using nlohmann::json;

const std::vector<std::string>& Checks() {
  // Hardware first (a lost GPU explains its ECC and NVLink findings), then the fabric and mounts.
  static const std::vector<std::string> kChecks = {
      "gpu-drivers",           // a GPU on the bus without its driver, or lost from NVML
      "gpu-count-consistent",  // fewer GPUs than the bus or the SKU has
      "gpu-xid-history",       // new Xid/SXid/GPU-loss messages (kernel.xid, since the last run)
      "gpu-ecc-health",        // uncorrectable ECC, row-remap failure
      "gpu-pcie-link",         // PCIe width down
      "nvlink-status",         // NVLink links down
      "gpu-throttle-reasons",  // HW slowdown, HW thermal, power brake
      "idle-thermals",         // temperature of idle GPUs
      "ib-port-health",        // InfiniBand/RoCE rails down
      "ib-link-errors",        // error counters rising since the last run
      "storage-mount-stable",  // fstab network mounts and --require-mount present and answering
  };
  return kChecks;
}

json State::ToJson() const {
  return {{"version", version},   {"updated_epoch", updated_epoch}, {"updated_at", updated_at},
          {"xid_seen", xid_seen}, {"counters", counters},           {"last_status", last_status}};
}

std::optional<State> ParseState(std::string_view text, std::string* error) {
  auto fail = [&](const std::string& why) -> std::optional<State> {
    if (error) *error = why;
    return std::nullopt;
  };
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail("not a JSON object");
  if (j.value("version", json()) != json(1)) return fail("unknown state version");
  State s;
  const json& ep = j.value("updated_epoch", json());
  if (!ep.is_number_integer() || ep.get<long long>() < 0) return fail("updated_epoch is not a time");
  s.updated_epoch = ep.get<long long>();
  if (j.value("updated_at", json()).is_string()) s.updated_at = j["updated_at"].get<std::string>();
  const json& seen = j.value("xid_seen", json::array());
  if (!seen.is_array()) return fail("xid_seen is not a list");
  for (const auto& l : seen) {
    if (!l.is_string()) return fail("xid_seen holds a non-string");
    s.xid_seen.push_back(l.get<std::string>());
  }
  const json& c = j.value("counters", json::object());
  if (!c.is_object()) return fail("counters is not an object");
  for (const auto& [port, vals] : c.items()) {
    if (!vals.is_object()) return fail("counters of " + port + " are not an object");
    for (const auto& [k, v] : vals.items()) {
      if (!v.is_number_integer()) return fail("counter " + port + " " + k + " is not an integer");
    }
  }
  s.counters = c;
  if (j.value("last_status", json()).is_string()) s.last_status = j["last_status"].get<std::string>();
  return s;
}

namespace {

std::string EventKey(const json& ev) {
  std::string kind = ev.value("kind", std::string());
  if (kind == "message") return "message: " + ev.value("match", std::string());
  return fmt::format("{} {}", kind, ev.value("code", json(0)).dump());
}

// What identifies an event between runs: its kernel-log line. dmesg -T recomputes its wall-clock
// stamps on every call (they drift with suspend and clock changes), so for dmesg the stamp is cut;
// the same line twice still counts twice (a multiset).
std::string Fingerprint(const json& ev, const std::string& source) {
  std::string line = ev.value("line", std::string());
  if (source == "dmesg" && !line.empty() && line[0] == '[') {
    size_t close = line.find(']');
    if (close != std::string::npos) line = std::string(util::Trim(line.substr(close + 1)));
  }
  return line;
}

}  // namespace

void ApplyState(core::EvidenceSet& evidence, const State& prev, long long now_epoch) {
  bool first_run = prev.updated_epoch == 0;
  if (auto it = evidence.find("kernel.xid"); it != evidence.end() && it->second.ok() && !first_run) {
    json& d = it->second.data;
    std::multiset<std::string> seen(prev.xid_seen.begin(), prev.xid_seen.end());
    json kept = json::array();
    json days = json::object();
    std::string source = d.value("source", std::string());
    for (const auto& ev : d.value("events", json::array())) {
      std::string line = Fingerprint(ev, source);
      if (auto s = seen.find(line); s != seen.end()) {
        seen.erase(s);  // the same line twice in the log is two events, each seen once
        continue;
      }
      std::string day = ev.value("day", std::string());
      if (day.empty()) day = "undated";
      std::string key = EventKey(ev);
      json& bucket = days[day];
      if (!bucket.is_object()) bucket = json::object();
      bucket[key] = bucket.value(key, 0L) + 1;
      kept.push_back(ev);
    }
    d["seen_before"] = d.value("events", json::array()).size() - kept.size();
    d["events"] = kept;
    d["counts_by_day"] = days;
    d["total"] = kept.size();
    d["truncated"] = false;
    d["since_last_run"] = true;
  }
  if (auto it = evidence.find("rdma.counters"); it != evidence.end() && it->second.ok()) {
    json& d = it->second.data;
    for (auto& p : d["ports"]) {
      std::string name = p.value("port", std::string());
      json now = p.value("first", json::object());
      if (!first_run && prev.counters.contains(name)) {
        // The last run's read is the first sample, this run's the second: a rise is live.
        json before = json::object();
        for (const auto& [k, v] : now.items()) before[k] = prev.counters[name].value(k, json());
        p["first"] = before;
        p["second"] = now;
      }
    }
    d["interval_s"] = first_run ? 0.0 : static_cast<double>(now_epoch - prev.updated_epoch);
  }
}

State NextState(const core::EvidenceSet& collected, long long now_epoch, const std::string& now_text,
                const std::string& status_line) {
  State s;
  s.updated_epoch = now_epoch;
  s.updated_at = now_text;
  s.last_status = status_line;
  if (auto it = collected.find("kernel.xid"); it != collected.end() && it->second.ok()) {
    std::string source = it->second.data.value("source", std::string());
    for (const auto& ev : it->second.data.value("events", json::array())) s.xid_seen.push_back(Fingerprint(ev, source));
  }
  if (auto it = collected.find("rdma.counters"); it != collected.end() && it->second.ok()) {
    for (const auto& p : it->second.data.value("ports", json::array())) {
      json vals = json::object();
      json first = p.value("first", json::object());
      for (const auto& [k, v] : first.items()) {
        if (v.is_number_integer()) vals[k] = v;
      }
      s.counters[p.value("port", std::string())] = vals;
    }
  }
  return s;
}

Verdict Summarize(const Report& report) {
  Verdict v;
  // Report order follows the plan's categories; the fault named is the first in Checks() order.
  for (const auto& id : Checks()) {
    for (const auto& r : report.results) {
      if (!r.info || r.info->id != id) continue;
      const core::Finding& f = r.finding;
      std::string text = f.message;
      if (!f.details.empty() && text.find(f.details.front()) == std::string::npos) text += ": " + f.details.front();
      if (f.verdict == core::Verdict::kFail) {
        v.failures.push_back(id + ": " + SanitizeReason(text, 400));
        if (v.healthy) {
          v.healthy = false;
          v.check = id;
          v.reason = SanitizeReason(text);
        }
      } else if (f.verdict == core::Verdict::kWarn) {
        v.warnings.push_back(id + ": " + SanitizeReason(text, 400));
      }
    }
  }
  return v;
}

std::string StatusLine(const Verdict& v) {
  return v.healthy ? "HEALTHY" : SanitizeReason(fmt::format("UNHEALTHY: {}: {}", v.check, v.reason), 300);
}

std::string SanitizeReason(std::string_view text, size_t max_bytes) {
  std::string s = util::SanitizeUtf8(text);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    char put = static_cast<char>(c);
    if (c < 0x20 || c == 0x7f)
      put = ' ';
    else if (c == '"')
      put = '\'';
    // C1 controls (U+0080..U+009F, UTF-8 C2 80..C2 9F) are control characters too.
    if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(s[i + 1]) <= 0x9F) {
      put = ' ';
      ++i;
    }
    if (put == ' ' && (out.empty() || out.back() == ' ')) continue;
    out.push_back(put);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.size() > max_bytes) {
    size_t cut = max_bytes > 3 ? max_bytes - 3 : 0;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80) --cut;  // never split a UTF-8 sequence
    out = out.substr(0, cut) + "...";
  }
  return out;
}

RunResult Run(host::Host& h, const collect::CollectOptions& base, const State& prev, const std::string& node,
              std::chrono::system_clock::time_point now) {
  Selection sel;
  sel.target = core::Target::kSlurm;
  sel.checks = Checks();
  Plan plan = BuildPlan(checks::DefaultRegistry(), sel);
  long long now_epoch = std::chrono::duration_cast<std::chrono::seconds>(now.time_since_epoch()).count();
  collect::CollectOptions opts = base;
  opts.counter_interval = std::chrono::milliseconds(0);  // one read: the last run's read is the first sample
  // Only the kernel log since shortly before the last run (the state's lines decide what is new).
  if (prev.updated_epoch > 0) opts.kernel_log_since = fmt::format("@{}", prev.updated_epoch - 600);
  NodeEvidence n;
  n.node = node;
  n.manifest.hostname = node;
  n.manifest.started_at = util::FormatRfc3339(now);
  n.evidence = collect::CollectEvidence(h, plan.collectors, opts);
  RunResult r;
  State next = NextState(n.evidence, now_epoch, n.manifest.started_at, "");
  ApplyState(n.evidence, prev, now_epoch);
  r.report = Judge(plan, {n}, core::EmbeddedMinimumTable());
  r.verdict = Summarize(r.report);
  // A management library that hangs is a fault here (the audit calls it unread evidence): NHC's
  // GPU checks fail the node when nvidia-smi does not answer.
  if (auto g = n.evidence.find("gpu.inventory");
      g != n.evidence.end() && g->second.status == core::EvidenceStatus::kTimeout) {
    std::string why =
        SanitizeReason(fmt::format("the GPU management library did not answer within {:.0f} s: {}",
                                   collect::TimeoutFor(opts, "gpu.inventory").count() / 1000.0, g->second.error));
    r.verdict.failures.insert(r.verdict.failures.begin(), "gpu-drivers: " + why);
    if (r.verdict.healthy) r.verdict.check = "gpu-drivers", r.verdict.reason = why;
    r.verdict.healthy = false;
  }
  r.line = StatusLine(r.verdict);
  next.last_status = r.line;
  r.next = std::move(next);
  return r;
}

std::vector<std::string> DrainCommand(const std::string& node, const std::string& reason) {
  std::string r = SanitizeReason(reason);
  if (r.rfind(kReasonPrefix, 0) != 0) r = SanitizeReason(std::string(kReasonPrefix) + r);
  return {"scontrol", "update", "NodeName=" + node, "State=DRAIN", "Reason=" + r};
}

std::vector<std::string> ResumeCommand(const std::string& node) {
  return {"scontrol", "update", "NodeName=" + node, "State=RESUME"};
}

std::vector<std::string> ShowNodeCommand(const std::string& node) { return {"scontrol", "show", "node", "-o", node}; }

Decision Decide(bool healthy, bool drain, bool resume, const std::map<std::string, std::string>& node,
                const std::string& reason) {
  auto get = [&](const char* k) {
    auto it = node.find(k);
    return it == node.end() ? std::string() : it->second;
  };
  std::string state = get("State");
  for (auto& c : state) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  std::string current = get("Reason");
  // scontrol appends " [user@time]" to a reason; ours starts with the prefix either way.
  bool ours = current.rfind(kReasonPrefix, 0) == 0;
  bool drained = state.find("DRAIN") != std::string::npos;
  bool down = state.rfind("DOWN", 0) == 0;
  Decision d;
  if (!healthy && drain) {
    std::string want = DrainCommand("", reason).back().substr(7);  // "Reason=" cut
    if ((drained || down) && !ours && !current.empty()) {
      d.why = fmt::format("node already {} by someone else (Reason={}): left alone", drained ? "drained" : "down",
                          SanitizeReason(current));
    } else if (drained && ours && current.rfind(want, 0) == 0) {
      d.why = "already drained with this reason";
    } else {
      d.action = NodeAction::kDrain;
    }
  } else if (healthy && resume) {
    if (drained && ours)
      d.action = NodeAction::kResume;
    else if (drained)
      d.why = fmt::format("drained by someone else (Reason={}): not resumed", SanitizeReason(current));
  }
  return d;
}

}  // namespace clustermax::audit::health
