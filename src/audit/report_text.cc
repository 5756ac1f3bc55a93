#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "audit/render.h"
#include "util/strings.h"

namespace clustermax::audit {
namespace {

using core::Verdict;

const char* Color(Verdict v) {
  switch (v) {
    case Verdict::kPass:
      return "\x1b[32m";
    case Verdict::kWarn:
      return "\x1b[33m";
    case Verdict::kFail:
      return "\x1b[31m";
    case Verdict::kSkip:
      return "\x1b[2m";
  }
  return "";
}

std::string Tag(Verdict v, bool color) {
  std::string t = fmt::format("{:<4}", core::ToString(v));
  return color ? fmt::format("{}{}\x1b[0m", Color(v), t) : t;
}

}  // namespace

std::string RenderText(const audit::Report& r, const TextOptions& o) {
  std::string s;
  WriteText(r, o, [&](std::string_view p) { s.append(p); });
  return s;
}

void WriteText(const audit::Report& r, const TextOptions& o, const Sink& sink) {
  BufferedSink out(sink);
  // Every line holds text from evidence (host names, tool output, messages): control characters are
  // escaped, so nothing can move the cursor or erase a line. The verdict tag, with its colour, is
  // ours and is added after the escaping (tag_line).
  auto line = [&](const std::string& s) {
    out += util::EscapeControls(s);
    out += '\n';
  };
  auto tag_line = [&](const std::string& indent, Verdict v, const std::string& rest) {
    out += indent;
    out += Tag(v, o.color);
    out += util::EscapeControls(rest);
    out += '\n';
  };
  line(fmt::format(
      "clustermax {} audit: target {}, profile {}, {} node(s): {}", r.tool_version,
      core::ToString(r.plan.selection.target),
      r.plan.selection.profiles.empty() ? "all" : fmt::format("{}", fmt::join(r.plan.selection.profiles, ",")),
      r.nodes.size(), fmt::join(r.nodes, ", ")));
  line(fmt::format("evidence collected {} ({}); minimum table {} generated {}", r.collected_at, r.mode,
                   r.minimums_origin, r.minimums_generated));
  if (r.target_detection.is_object()) {
    const auto& td = r.target_detection;
    std::string chosen = td.value("chosen", td.value("target", std::string()));
    line(fmt::format("target detection: {}{}", td.value("decision", std::string()),
                     td.contains("by") ? fmt::format("; audited as {} ({})", chosen, td.value("by", std::string()))
                                       : std::string()));
    if (o.verbosity >= 1 || chosen != td.value("target", std::string())) {
      for (const auto& m : td.value("weighed", nlohmann::json::array())) line("  weighed: " + m.get<std::string>());
    }
  }
  if (!r.not_taken.empty()) {
    line(fmt::format(
        "NOT TAKEN FROM THE IMAGE: {} evidence source(s) need commands, PATH lookups, environment or NVML, which "
        "would be the auditing host's (--sysroot); their checks judge them as not collected:",
        r.not_taken.size()));
    for (const auto& m : r.not_taken) line("  - " + m);
  }
  if (!r.replay_misses.empty()) {
    line(
        fmt::format("WARNING: the evidence bundle could not answer {} request(s); those checks judge missing evidence:",
                    r.replay_misses.size()));
    for (const auto& m : r.replay_misses) line("  - " + m);
  }
  if (!r.fleet.is_null()) {
    const auto& fl = r.fleet;
    line(fmt::format("fleet: {} of {} nodes returned evidence", fl["nodes_returned"].get<size_t>(),
                     fl["nodes_expected"].get<size_t>()));
    for (const auto& u : r.unreachable) line(fmt::format("  no evidence from {}: {}", u.node, u.reason));
    for (const auto& p : fl.value("partial", nlohmann::json::array())) {
      line(fmt::format("  partial evidence from {}: {}", p["node"].get<std::string>(), p["reason"].get<std::string>()));
    }
    if (fl["drift"].empty()) {
      line(fmt::format("  drift: none ({} facts compared)", fl["facts_compared"].size()));
    } else {
      for (const auto& d : fl["drift"]) {
        std::vector<std::string> odd;
        for (const auto& x : d["odd"])
          odd.push_back(fmt::format("{} {}", x["node"].get<std::string>(), x["value"].get<std::string>()));
        line(fmt::format("  drift: {}: {} on {} node(s); odd: {}", d["fact"].get<std::string>(),
                         d["majority"].get<std::string>(), d["majority_count"].get<size_t>(), fmt::join(odd, "; ")));
      }
    }
    if (o.verbosity >= 2) {
      // The node-by-check matrix of the node checks: P W F S per node.
      std::vector<std::string> names;
      for (const auto& res : r.results) {
        if (res.nodes.size() > names.size() && !res.info->cluster) {
          names.clear();
          for (const auto& n : res.nodes) names.push_back(n.node);
        }
      }
      if (!names.empty()) {
        line("");
        line(fmt::format("  {:<36} {}", "node check \\ node", fmt::join(names, " ")));
        for (const auto& res : r.results) {
          if (res.info->cluster || res.nodes.size() < 2) continue;
          std::string cells;
          for (size_t i = 0; i < names.size(); ++i) {
            std::string v =
                i < res.nodes.size() ? std::string(core::ToString(res.nodes[i].finding.verdict)).substr(0, 1) : "-";
            cells += fmt::format("{:<{}} ", v, names[i].size());
          }
          line(fmt::format("  {:<36} {}", res.info->id, cells));
        }
      }
    }
  }
  std::string current_category;
  for (const auto& res : r.results) {
    const auto& f = res.finding;
    bool show = o.verbosity >= 1 || f.verdict == Verdict::kFail || f.verdict == Verdict::kWarn;
    if (!show) continue;
    if (res.info->category != current_category) {
      current_category = res.info->category;
      line("");
      line(fmt::format("[{}]", current_category));
    }
    std::string reason = f.reason == core::Reason::kNone ? "" : fmt::format(" ({})", core::ToString(f.reason));
    std::string sev = f.severity == core::Severity::kNone ? "" : fmt::format(" [{}]", core::ToString(f.severity));
    tag_line("  ", f.verdict, fmt::format(" {}{}{}: {}", res.info->id, sev, reason, f.message));
    if (o.verbosity >= 1) {
      if (!f.observed.empty()) line(fmt::format("       observed: {}", f.observed));
      if (!f.expected.empty()) line(fmt::format("       expected: {}", f.expected));
      if (!res.info->references.empty()) line(fmt::format("       link: {}", res.info->references.front().url));
    }
    if (o.verbosity >= 2) {
      for (size_t i = 1; i < res.info->references.size(); ++i) {
        line(fmt::format("       ref: {} {}", res.info->references[i].label, res.info->references[i].url));
      }
      for (const auto& d : f.details) line("       - " + d);
      if (res.nodes.size() > 1) {
        for (const auto& n : res.nodes)
          line(fmt::format("       {} {}: {}", core::ToString(n.finding.verdict), n.node, n.finding.message));
      }
    }
    if (o.verbosity >= 3) {
      line("       why: " + res.info->rationale);
      if (!res.info->reproduce.empty()) line("       reproduce: " + res.info->reproduce);
      if (!res.info->remediation.empty()) line("       fix: " + res.info->remediation);
      line(fmt::format("       mode: {}; targets: {}", res.info->Mode(), core::MaskToString(res.info->targets)));
    }
  }
  line("");
  line(fmt::format("{} checks: {} PASS, {} WARN, {} FAIL, {} SKIP", r.results.size(), r.Count(Verdict::kPass),
                   r.Count(Verdict::kWarn), r.Count(Verdict::kFail), r.Count(Verdict::kSkip)));
  if (o.verbosity == 0 && r.Count(Verdict::kPass) + r.Count(Verdict::kSkip) > 0) {
    line("(PASS and SKIP rows hidden; -v shows every check with observed and expected values)");
  }
  out.Flush();
}

}  // namespace clustermax::audit
