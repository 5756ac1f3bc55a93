#include "web/html.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "bench/gpu_bench.h"

namespace clustermax::web {
using nlohmann::json;

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

std::string S(const json& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? std::string() : v.dump(); }
std::string E(const json& v) { return Escape(S(v)); }

const char* kStyle = R"css(
:root{--pass:#2e7d32;--warn:#b26a00;--fail:#c62828;--skip:#757575;--ink:#1b1f24;--line:#d8dde3;--bg:#f6f8fa}
*{box-sizing:border-box}body{font:14px/1.45 "DejaVu Sans",system-ui,sans-serif;color:var(--ink);margin:0;background:#fff}
header{background:#10243e;color:#fff;padding:10px 24px;display:flex;gap:24px;align-items:baseline}
header h1{font-size:18px;margin:0}header a{color:#cfe3ff;text-decoration:none;margin-right:14px}
main{padding:16px 24px;max-width:1400px}section{margin:0 0 28px}h2{font-size:17px;border-bottom:1px solid var(--line);padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}table{border-collapse:collapse;width:100%;margin:6px 0}
th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}th{background:var(--bg);font-weight:600}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.st{display:inline-block;min-width:44px;text-align:center;border-radius:3px;color:#fff;font-size:12px;padding:1px 4px}
.PASS,.met{background:var(--pass)}.WARN,.partly-met{background:var(--warn)}.FAIL,.unmet,.wrong{background:var(--fail)}
.SKIP,.unknown,.not-applicable{background:var(--skip)}.muted{color:#5f6b7a}.small{font-size:12px}
.tier{font-size:22px;font-weight:700;padding:6px 14px;border-radius:4px;color:#fff;display:inline-block}
.PLATINUM{background:#5b6b7f}.GOLD{background:#b8860b}.SILVER{background:#8a939c}.BRONZE{background:#a0522d}
.PARTICIPATION_RIBBON{background:#1565c0}.UNDERPERFORMING{background:var(--fail)}.UNAVAILABLE{background:var(--skip)}.INSUFFICIENT_EVIDENCE{background:#fff;color:#5f6b76;border:1px dashed #8a939c}
.podium{display:flex;gap:16px;align-items:flex-end;margin:12px 0}.podium>div{flex:0 0 200px;text-align:center;border:1px solid var(--line);border-radius:6px;padding:10px;background:var(--bg)}
.podium .p1{padding-top:34px}.podium .p2{padding-top:22px}.filter{display:flex;gap:14px;align-items:center;margin:6px 0;flex-wrap:wrap}
.matrix td{padding:0;width:12px;height:12px;border:1px solid #fff}.matrix th{font-weight:400;font-size:11px;white-space:nowrap}
svg text{font:12px "DejaVu Sans",sans-serif}
)css";

const char* kScript = R"js(
document.addEventListener('DOMContentLoaded', function () {
  document.querySelectorAll('.filter').forEach(function (f) {
    var table = document.getElementById(f.getAttribute('data-table'));
    if (!table) return;
    function apply() {
      var statuses = Array.prototype.map.call(f.querySelectorAll('input[type=checkbox]:checked'), function (c) { return c.value; });
      var category = f.querySelector('select').value;
      var text = f.querySelector('input[type=search]').value.toLowerCase();
      var shown = 0;
      table.querySelectorAll('tbody tr').forEach(function (r) {
        var ok = statuses.indexOf(r.getAttribute('data-status')) >= 0 &&
                 (category === '' || r.getAttribute('data-category') === category) &&
                 (text === '' || r.textContent.toLowerCase().indexOf(text) >= 0);
        r.style.display = ok ? '' : 'none';
        if (ok) shown++;
      });
      var c = f.querySelector('.count');
      if (c) c.textContent = shown + ' shown';
    }
    f.addEventListener('input', apply);
    f.addEventListener('change', apply);
    apply();
  });
});
)js";

std::string Status(const std::string& s, const std::string& label = "") {
  return fmt::format("<span class=\"st {}\">{}</span>", Escape(s), Escape(label.empty() ? s : label));
}

struct Bar {
  std::string label;
  double value;
  std::optional<double> ref;  // a reference mark (peak, bar)
  std::string css;            // status colour class
  std::string note;
  std::string absent;         // non-empty: no value (e.g. "not rated"), drawn as an empty outline with this text
};

const char* Colour(const std::string& css) {
  if (css == "PASS") return "#2e7d32";
  if (css == "WARN") return "#b26a00";
  if (css == "FAIL") return "#c62828";
  if (css == "SKIP") return "#9e9e9e";
  return "#1565c0";
}

// Horizontal bars with the value printed and an optional reference tick.
std::string BarChart(const std::string& title, const std::vector<Bar>& bars, const std::string& unit) {
  if (bars.empty()) return "";
  double top = 0;
  for (const auto& b : bars) top = std::max({top, b.value, b.ref.value_or(0)});
  if (top <= 0) top = 1;
  const int label_w = 250, chart_w = 520, row = 22;
  int h = static_cast<int>(bars.size()) * row + 30;
  std::string svg = fmt::format("<svg role=\"img\" aria-label=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">", Escape(title),
                                label_w + chart_w + 120, h, label_w + chart_w + 120, h);
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    int y = static_cast<int>(i) * row + 4;
    double w = b.value / top * chart_w;
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", label_w - 6, y + 14, Escape(b.label));
    if (!b.absent.empty()) {
      // No value is not a zero: a dashed outline across the chart, the reason written inside.
      svg += fmt::format("<g class=\"absent\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"16\" fill=\"none\" stroke=\"#8a939c\" stroke-dasharray=\"4 3\">"
                         "<title>{}</title></rect><text x=\"{}\" y=\"{}\" font-style=\"italic\" fill=\"#5f6b76\">{}</text></g>",
                         label_w, y, chart_w, Escape(b.label + ": " + b.absent + (b.note.empty() ? "" : " (" + b.note + ")")), label_w + 8, y + 13,
                         Escape(b.absent));
      continue;
    }
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\"><title>{}</title></rect>", label_w, y, w, Colour(b.css),
                       Escape(fmt::format("{}: {:.1f} {}{}", b.label, b.value, unit, b.note.empty() ? "" : " (" + b.note + ")")));
    if (b.ref) {
      double x = label_w + *b.ref / top * chart_w;
      svg += fmt::format("<line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#10243e\" stroke-width=\"2\"/>", x, x, y - 2, y + 18);
    }
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{:.1f}</text>", label_w + w + 4, y + 14, b.value);
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"muted\">{}</text></svg>", label_w, h - 6, Escape(unit));
  return fmt::format("<h3>{}</h3>{}", Escape(title), svg);
}

// Lines over categorical x values (e.g. tokens per expert), one per series.
std::string LineChart(const std::string& title, const std::vector<std::string>& xs, const std::map<std::string, std::vector<std::optional<double>>>& series,
                      const std::string& unit) {
  if (xs.empty() || series.empty()) return "";
  double top = 0;
  for (const auto& [_, v] : series) {
    for (const auto& y : v) top = std::max(top, y.value_or(0));
  }
  if (top <= 0) top = 1;
  const int left = 60, w = 560, h = 240, legend = 300;
  static const char* palette[] = {"#1565c0", "#c62828", "#2e7d32", "#b26a00", "#6a1b9a", "#00838f", "#ad1457", "#4e342e"};
  std::string svg = fmt::format("<svg role=\"img\" aria-label=\"{}\" width=\"{}\" height=\"{}\">", Escape(title), left + w + legend, h + 40);
  svg += fmt::format("<line x1=\"{}\" y1=\"10\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/><line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/>", left, left,
                     h + 10, left, h + 10, left + w, h + 10);
  for (int t = 0; t <= 4; ++t) {
    double v = top * t / 4;
    int y = h + 10 - static_cast<int>(h * t / 4.0);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.0f}</text>", left - 4, y + 4, v);
  }
  auto xpos = [&](size_t i) { return left + (xs.size() == 1 ? w / 2.0 : w * static_cast<double>(i) / (xs.size() - 1)); };
  for (size_t i = 0; i < xs.size(); ++i) svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>", xpos(i), h + 28, Escape(xs[i]));
  int k = 0;
  for (const auto& [name, ys] : series) {
    const char* c = palette[k % 8];
    std::string pts;
    for (size_t i = 0; i < ys.size() && i < xs.size(); ++i) {
      if (!ys[i]) continue;
      double y = h + 10 - *ys[i] / top * h;
      pts += fmt::format("{:.1f},{:.1f} ", xpos(i), y);
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}</title></circle>", xpos(i), y, c,
                         Escape(fmt::format("{} at {}: {:.1f} {}", name, xs[i], *ys[i], unit)));
    }
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>", pts, c);
    svg += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>", left + w + 20, 12 + k * 16, c,
                       left + w + 34, 21 + k * 16, Escape(name));
    ++k;
  }
  svg += "</svg>";
  return fmt::format("<h3>{}</h3><div class=\"small muted\">{}</div>{}", Escape(title), Escape(unit), svg);
}

std::string GradesTable(const json& grades) {
  if (!grades.is_array() || grades.empty()) return "";
  std::string t = "<table><thead><tr><th>verdict</th><th>metric</th><th class=\"num\">value</th><th>bar</th><th>detail</th></tr></thead><tbody>";
  for (const auto& g : grades) {
    std::string bar = g.contains("value") ? fmt::format("{} {} {}, warn {}", g.value("better", "") == "lower" ? "&lt;=" : "&gt;=", E(g["pass"]),
                                                        E(g["unit"]), E(g["warn"]))
                                          : "";
    t += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"small\">{}</td></tr>", Status(g.value("verdict", "")),
                     E(g["metric"]), g.contains("value") ? E(g["value"]) + " " + E(g["unit"]) : "", bar,
                     E(g.contains("detail") ? g["detail"] : g.value("reason", json(""))));
  }
  return t + "</tbody></table>";
}

std::string GpuCharts(const json& b) {
  std::string out;
  const json& suites = b.value("suites", json::object());
  json model = b.contains("gpus") && !b["gpus"].empty() ? bench::MatchGpuModel(b["gpus"][0].value("name", ""), bench::EmbeddedGpuPeaks()) : json(nullptr);
  if (suites.contains("gemm")) {
    std::vector<Bar> bars;
    for (const auto& row : suites["gemm"]["items"]) {
      if (!row.contains("summary")) continue;
      std::string p = row.value("dtype", "");
      std::optional<double> peak;
      if (!model.is_null() && model["tflops"].contains(p) && model["tflops"][p].is_number()) peak = model["tflops"][p].get<double>();
      bool wrong = false;
      for (const auto& g : row["gpus"]) wrong |= g.value("status", "") == "wrong";
      bars.push_back({fmt::format("{} {}x{}x{}", p, S(row["m"]), S(row["n"]), S(row["k"])), row["summary"]["slowest"].get<double>(), peak,
                      wrong ? "FAIL" : "", peak ? fmt::format("{:.0f} % of peak", row["summary"]["slowest"].get<double>() / *peak * 100) : ""});
    }
    out += BarChart("Dense GEMM per precision (slowest GPU, TFLOPS)", bars, "TFLOPS; tick: dense peak of the GPU model");
  }
  if (suites.contains("mamf")) {
    std::vector<Bar> bars;
    const json summary = suites["mamf"].value("summary", json::object());
    for (const auto& [p, per] : summary.items()) {
      std::optional<double> ref;
      if (!model.is_null() && model["mamf_tflops"].contains(p)) ref = model["mamf_tflops"][p].get<double>();
      for (const auto& g : per) {
        const json& sh = g["best_mean"]["shape"];
        bars.push_back({fmt::format("{} GPU {} ({}x{}x{})", p, S(g["gpu"]), S(sh["m"]), S(sh["n"]), S(sh["k"])), g["best_mean"]["tflops"].get<double>(), ref, "", ""});
      }
    }
    out += BarChart("MAMF, best mean (TFLOPS)", bars, "TFLOPS; tick: published MAMF");
  }
  if (suites.contains("grouped-gemm")) {
    std::map<std::string, std::map<std::string, std::vector<std::optional<double>>>> charts;
    std::vector<std::string> xs;
    std::vector<int64_t> ts;
    for (const auto& row : suites["grouped-gemm"]["items"]) {
      int64_t t = row.value("tokens_per_expert", int64_t{0});
      if (std::find(ts.begin(), ts.end(), t) == ts.end()) ts.push_back(t);
    }
    for (int64_t t : ts) xs.push_back(fmt::format("T={}", t));
    for (const auto& row : suites["grouped-gemm"]["items"]) {
      if (row.value("routing", "") != "uniform") continue;
      std::string chart = row.value("dtype", "");
      std::string name = row.value("model", "") + " " + row.value("proj", "");
      auto& ys = charts[chart][name];
      ys.resize(ts.size());
      size_t i = std::find(ts.begin(), ts.end(), row.value("tokens_per_expert", int64_t{0})) - ts.begin();
      if (row.contains("summary")) ys[i] = row["summary"]["slowest"].get<double>();
    }
    for (const auto& [dtype, series] : charts) {
      out += LineChart("Grouped MoE GEMM " + dtype + ", uniform routing: useful TFLOPS by tokens per expert", xs, series, "TFLOPS (slowest GPU)");
    }
  }
  std::vector<Bar> bw;
  for (const char* suite : {"gemv", "membw", "pcie", "p2p"}) {
    if (!suites.contains(suite)) continue;
    for (const auto& row : suites[suite]["items"]) {
      if (row.contains("summary")) bw.push_back({row.value("id", ""), row["summary"]["slowest"].get<double>(), std::nullopt, "", ""});
    }
  }
  out += BarChart("Memory and link bandwidth (GB/s, bytes read plus written)", bw, "GB/s");
  return out;
}

// bench storage --scale: one row per node count, per metric the nodes' sum, the worst node and the
// efficiency against one node alone.
std::string ScalingTable(const json& b) {
  std::vector<std::string> metrics;
  for (const auto& s : b.value("steps", json::array())) {
    const json agg = s.value("aggregate", json::object());  // a named copy: items() of a temporary dangles
    for (const auto& [id, a] : agg.items()) {
      if (std::find(metrics.begin(), metrics.end(), id) == metrics.end()) metrics.push_back(id);
    }
  }
  std::string out = "<table class=\"scaling\"><thead><tr><th class=\"num\">nodes</th><th class=\"num\">answered</th>";
  for (const auto& m : metrics) out += fmt::format("<th>{} (sum / worst node / eff.)</th>", Escape(m));
  out += "</tr></thead><tbody>";
  for (const auto& s : b.value("steps", json::array())) {
    out += fmt::format("<tr><td class=\"num\">{}</td><td class=\"num\">{}</td>", E(s.value("nodes", json())), E(s.value("returned", json())));
    const json agg = s.value("aggregate", json::object());
    for (const auto& m : metrics) {
      if (!agg.contains(m)) {
        out += "<td>-</td>";
        continue;
      }
      const json& a = agg[m];
      std::string ratio = a.contains("efficiency") ? fmt::format("{:.2f}", a["efficiency"].get<double>())
                          : a.contains("slowdown") ? fmt::format("x{:.2f}", a["slowdown"].get<double>()) : "-";
      out += fmt::format("<td>{} / {} ({}) / {}</td>", a.contains("sum") ? fmt::format("{:.3g}", a["sum"].get<double>()) : "-",
                         fmt::format("{:.3g}", a.value("worst_value", 0.0)), E(a.value("worst_node", json())), ratio);
    }
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

std::string StorageCharts(const json& b) {
  // bench storage: workloads[] (bytes per second), the checkpoint means, metadata phases (ops/s);
  // bench s3: transfers[] (aggregate GB/s).
  std::vector<Bar> bars;
  for (const auto& w : b.value("workloads", json::array())) {
    if (w.contains("bw_bytes_per_s") && w["bw_bytes_per_s"].is_number()) {
      bars.push_back({w.value("id", ""), w["bw_bytes_per_s"].get<double>() / 1e9, std::nullopt, "", fmt::format("{} threads", S(w["threads"]))});
    }
  }
  if (b.contains("checkpoint") && b["checkpoint"].is_object()) {
    const json& c = b["checkpoint"];
    if (c.contains("write_gbps_mean") && c["write_gbps_mean"].is_number()) bars.push_back({"checkpoint save (fsync)", c["write_gbps_mean"].get<double>(), std::nullopt, "", ""});
    if (c.contains("read_gbps_mean") && c["read_gbps_mean"].is_number()) bars.push_back({"checkpoint load", c["read_gbps_mean"].get<double>(), std::nullopt, "", ""});
  }
  for (const auto& t : b.value("transfers", json::array())) {
    if (t.contains("aggregate_gbps") && t["aggregate_gbps"].is_number()) {
      bars.push_back({fmt::format("{} {} x{}", S(t["op"]), S(t["object"]), S(t["concurrency"])), t["aggregate_gbps"].get<double>(), std::nullopt, "", ""});
    }
  }
  std::string out = BarChart("Throughput (GB/s)", bars, "GB/s");
  std::vector<Bar> meta;
  if (b.contains("metadata") && b["metadata"].is_object()) {
    for (const auto& p : b["metadata"].value("phases", json::array())) {
      if (p.contains("ops_per_s") && p["ops_per_s"].is_number()) meta.push_back({p.value("id", ""), p["ops_per_s"].get<double>(), std::nullopt, "", ""});
    }
  }
  return out + BarChart("Small-file metadata (operations per second)", meta, "ops/s");
}

}  // namespace

std::string Document(const std::string& title, const std::string& body, const std::string& nav) {
  return fmt::format(
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
      "<title>{}</title><style>{}</style></head><body><header><h1>clustermax</h1><nav>{}</nav></header><main>{}</main><script>{}</script></body></html>\n",
      Escape(title), kStyle, nav, body, kScript);
}

std::string Leaderboard(const json& board, const LinkFn& link) {
  std::string out = "<section id=\"leaderboard\"><h2>Leaderboard</h2>";
  if (board.empty()) return out + "<p class=\"muted\">No rating stored yet (clustermax rate ... --out r.json; clustermax db ingest r.json).</p></section>";
  out += "<div class=\"podium\">";
  static const char* places[] = {"p1", "p2", "p3"};
  for (size_t i = 0; i < board.size() && i < 3; ++i) {
    const json& r = board[i];
    out += fmt::format("<div class=\"{}\"><div class=\"muted\">#{}</div><div><b>{}</b></div><div class=\"small\">{}</div><span class=\"tier {}\">{}</span></div>",
                       places[i], i + 1, E(r["provider"]), E(r["cluster"]), E(r["tier"]), E(r["tier"]));
  }
  out += "</div><table><thead><tr><th>#</th><th>provider</th><th>cluster</th><th>tier</th><th class=\"num\">mean category score</th><th>edition</th><th>rated</th></tr></thead><tbody>";
  for (size_t i = 0; i < board.size(); ++i) {
    const json& r = board[i];
    std::string name = E(r["provider"]);
    std::string href = link ? link("rating", std::to_string(r["id"].get<int64_t>())) : "";
    if (!href.empty()) name = fmt::format("<a href=\"{}\">{}</a>", Escape(href), name);
    double score = r["summary"].is_object() ? r["summary"].value("score", 0.0) : 0.0;
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td><span class=\"st {}\">{}</span></td><td class=\"num\">{:.2f}</td><td>{}</td><td class=\"small\">{}</td></tr>",
                       i + 1, name, E(r["cluster"]), E(r["tier"]), E(r["tier"]), score, E(r["edition"]), E(r["ingested_at"]));
  }
  return out + "</tbody></table></section>";
}

std::string Scorecard(const json& r) {
  std::string who = E(r["provider"].is_string() ? r["provider"] : json("(unnamed provider)"));
  if (r["cluster"].is_string()) who += " / " + E(r["cluster"]);
  std::string out = fmt::format("<section class=\"scorecard\"><h2>Scorecard: {}</h2><p><span class=\"tier {}\">{}</span></p><p>Decided by {}</p>", who, E(r["tier"]),
                                E(r["tier"]), E(r["decided_by"]));
  if (r.value("tier", "") != r.value("tier_by_scores", "")) out += fmt::format("<p class=\"muted\">The category scores alone would give {}.</p>", E(r["tier_by_scores"]));
  if (r.contains("evidence") && r["evidence"].is_object()) {
    const json& e = r["evidence"];
    out += fmt::format("<p class=\"small\">Evidence: {:.0f} % of the applicable criteria, {} of {} categories rated{}{}</p>", e.value("coverage", 0.0) * 100,
                       E(e["rated_categories"]), r["categories"].size(), e.value("machine_evidence", false) ? "" : ", nothing read from the machine",
                       e.value("meets_minimum", false) ? "" : " <b>(short of the minimum for any tier)</b>");
  }
  std::vector<Bar> bars;
  for (const auto& c : r["categories"]) {
    if (!c.contains("score") || !c["score"].is_number()) {
      // Not rated: no evidence for any criterion. Shown as such, never as a score of 0.
      bars.push_back({c.value("title", ""), 0, std::nullopt, "SKIP", c.value("not_rated", std::string("no evidence")), "not rated"});
      continue;
    }
    double s = c["score"].get<double>();
    bars.push_back({c.value("title", ""), s * 100, std::nullopt, s >= 0.8 ? "PASS" : s >= 0.5 ? "WARN" : "FAIL",
                    fmt::format("coverage {:.0f} %", c.value("coverage", 0.0) * 100)});
  }
  out += BarChart("Category scores (%)", bars, "% of the attainable credit");
  out += "<table><thead><tr><th>category</th><th>criterion</th><th>verdict</th><th class=\"num\">credit</th><th>evidence</th></tr></thead><tbody>";
  for (const auto& c : r["categories"]) {
    for (const auto& k : c["criteria"]) {
      std::string ev;
      for (const auto& x : k["items"]) {
        ev += fmt::format("<div class=\"small\">{} {} <span class=\"muted\">{}</span></div>", E(x["source"]), E(x["status"]), E(x["detail"]));
      }
      out += fmt::format("<tr><td>{}</td><td>{}{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>", E(c["id"]) + (c.value("rated", true) ? "" : " <span class=\"muted\">(not rated)</span>"), E(k["title"]),
                         k.value("critical", false) ? " <b>(critical)</b>" : "", Status(k.value("verdict", "")), E(k["credit"]), ev);
    }
  }
  out += "</tbody></table>";
  const json& n = r["next_tier"];
  if (n.is_object()) {
    out += fmt::format("<h3>To reach {}</h3><ol>", E(n["tier"]));
    for (const auto& f : n["fixes"]) {
      out += fmt::format("<li>{} <span class=\"muted\">{}</span>", E(f["title"]), E(f["criterion"]));
      const json& items = f.contains("items") ? f["items"] : f.value("evidence", json::array());
      out += "<ul>";
      for (const auto& x : items) out += fmt::format("<li class=\"small\">{} {}: {}</li>", E(x["source"]), E(x["status"]), E(x["detail"]));
      out += "</ul></li>";
    }
    out += "</ol>";
  }
  if (!r["unknown_criteria"].empty()) {
    out += "<p class=\"muted\">Unknown, not credited: ";
    for (const auto& u : r["unknown_criteria"]) out += E(u) + " ";
    out += "</p>";
  }
  return out + "</section>";
}

std::string Findings(const json& report, const std::string& anchor) {
  const json& s = report.value("summary", json::object());
  std::string nodes;
  for (const auto& n : report.value("nodes", json::array())) nodes += (nodes.empty() ? "" : ", ") + S(n);
  std::string out = fmt::format(
      "<section id=\"{}\"><h2>Audit findings</h2><p>{} target, {} node(s){}, collected {}: {} checks, {} PASS, {} WARN, {} FAIL, {} SKIP</p>", Escape(anchor),
      E(report["target"]), report.value("nodes", json::array()).size(), nodes.size() < 200 ? " (" + Escape(nodes) + ")" : "", E(report["collected_at"]),
      s.value("checks", 0), s.value("pass", 0), s.value("warn", 0), s.value("fail", 0), s.value("skip", 0));
  std::set<std::string> cats;
  for (const auto& r : report["results"]) cats.insert(r.value("category", ""));
  std::string table_id = anchor + "-table";
  out += fmt::format("<div class=\"filter\" data-table=\"{}\">", Escape(table_id));
  for (const char* st : {"FAIL", "WARN", "PASS", "SKIP"}) {
    out += fmt::format("<label><input type=\"checkbox\" value=\"{}\"{}> {}</label>", st, std::string(st) == "SKIP" || std::string(st) == "PASS" ? "" : " checked", Status(st));
  }
  out += "<select><option value=\"\">all categories</option>";
  for (const auto& c : cats) out += fmt::format("<option value=\"{}\">{}</option>", Escape(c), Escape(c));
  out += "</select><input type=\"search\" placeholder=\"search\"><span class=\"count muted\"></span></div>";
  out += fmt::format("<table id=\"{}\"><thead><tr><th>status</th><th>check</th><th>category</th><th>finding</th><th>observed / expected</th></tr></thead><tbody>",
                     Escape(table_id));
  for (const auto& r : report["results"]) {
    std::string details;
    for (const auto& d : r.value("details", json::array())) details += "<div class=\"small muted\">" + E(d) + "</div>";
    out += fmt::format(
        "<tr data-status=\"{}\" data-category=\"{}\"><td>{}</td><td>{}<div class=\"small muted\">{}</div></td><td>{}</td><td>{}{}{}</td><td class=\"small\">{}<br>{}</td></tr>",
        E(r["status"]), E(r["category"]), Status(r.value("status", "")), E(r["id"]), E(r["title"]), E(r["category"]), E(r["message"]),
        r["reason"].is_string() ? " <span class=\"muted\">(" + E(r["reason"]) + ")</span>" : "", details, E(r["observed"]), E(r["expected"]));
  }
  return out + "</tbody></table></section>";
}

std::string FleetMatrix(const json& report) {
  if (!report.contains("fleet") || !report["fleet"].is_object() || !report["fleet"].contains("matrix")) return "";
  const json& m = report["fleet"]["matrix"];
  std::vector<std::string> nodes;
  for (const auto& row : m) {
    const json verdicts = row.value("verdicts", json::object());
    for (const auto& [node, _] : verdicts.items()) {
      if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
    }
  }
  std::sort(nodes.begin(), nodes.end());
  std::string out = fmt::format("<section id=\"matrix\"><h2>Fleet: node by check</h2><p class=\"muted\">{} nodes returned of {} expected. Hover a cell for the node and check.</p>",
                                E(report["fleet"]["nodes_returned"]), E(report["fleet"]["nodes_expected"]));
  out += "<table class=\"matrix\"><thead><tr><th>check</th>";
  for (size_t i = 0; i < nodes.size(); ++i) out += fmt::format("<th title=\"{}\">{}</th>", Escape(nodes[i]), i % 8 == 0 ? std::to_string(i) : "");
  out += "</tr></thead><tbody>";
  for (const auto& row : m) {
    out += fmt::format("<tr><th>{}</th>", E(row["check"]));
    const json& v = row.value("verdicts", json::object());
    for (const auto& n : nodes) {
      std::string st = v.contains(n) ? S(v[n]) : "";
      out += fmt::format("<td class=\"{}\" title=\"{} {}: {}\"></td>", st.empty() ? "" : Escape(st), Escape(n), E(row["check"]), st.empty() ? "not judged" : Escape(st));
    }
    out += "</tr>";
  }
  return out + "</tbody></table></section>";
}

std::string Benchmark(const json& b) {
  std::string kind = b.value("kind", "");
  std::string out = fmt::format("<section class=\"bench\"><h2>Benchmark: {}</h2>", Escape(kind));
  if (b.value("status", "ok") == "skip") return out + fmt::format("<p>{} {}</p></section>", Status("SKIP"), E(b["reason"]));
  out += fmt::format("<p>host {}, started {}, {} s; verdict {}</p>", E(b.value("host", json())), E(b.value("started", json())), E(b.value("seconds", json())),
                     Status(b.value("verdict", "SKIP")));
  if (kind == "clustermax.bench.gpu") {
    std::string gpus;
    for (const auto& g : b.value("gpus", json::array())) gpus += fmt::format("<li>GPU {}: {} ({}), sm_{}</li>", E(g["index"]), E(g["name"]), E(g["uuid"]), E(g["compute_capability"]));
    out += "<ul class=\"small\">" + gpus + "</ul>" + GpuCharts(b);
  } else if (kind == "clustermax.bench.storage-scaling") {
    out += ScalingTable(b);
  } else {
    out += StorageCharts(b);
  }
  return out + GradesTable(b.value("grades", json::array())) + "</section>";
}

std::string History(const json& runs, const LinkFn& link) {
  std::string out = "<section id=\"history\"><h2>Runs</h2><table><thead><tr><th>id</th><th>kind</th><th>provider</th><th>cluster</th><th>target</th><th>collected</th><th class=\"num\">nodes</th><th>summary</th><th>diff</th></tr></thead><tbody>";
  // Runs come newest first: walk from the oldest to find each run's predecessor of the same
  // provider and cluster (the diff link), in one pass.
  std::vector<int64_t> previous(runs.size(), -1);
  std::map<std::string, int64_t> last;
  for (size_t i = runs.size(); i-- > 0;) {
    const json& r = runs[i];
    if (r["kind"] != "run") continue;
    std::string key = S(r["provider"]) + "/" + S(r["cluster"]);
    auto it = last.find(key);
    if (it != last.end()) previous[i] = it->second;
    last[key] = r["id"].get<int64_t>();
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    const json& r = runs[i];
    int64_t id = r["id"];
    std::string diff;
    if (previous[i] >= 0 && link) {
      diff = fmt::format("<a href=\"{}\">vs {}</a>", Escape(link("diff", fmt::format("{}/{}", previous[i], id))), previous[i]);
    }
    std::string name = std::to_string(id);
    std::string href = link ? link(r["kind"] == "rating" ? "rating" : "run", std::to_string(id)) : "";
    if (!href.empty()) name = fmt::format("<a href=\"{}\">{}</a>", Escape(href), id);
    std::string summary = E(r["tier"]);
    if (r["kind"] == "run" && r["summary"].is_object()) {
      const json& s = r["summary"];
      summary = fmt::format("{} fail, {} warn, {} pass", s.value("fail", 0), s.value("warn", 0), s.value("pass", 0));
    }
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"small\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>", name,
                       E(r["kind"]), E(r["provider"]), E(r["cluster"]), E(r["target"]), E(r["collected_at"]), E(r["nodes"]), summary, diff);
  }
  return out + "</tbody></table></section>";
}

std::string DiffView(const json& d) {
  std::string out = fmt::format("<section id=\"diff\"><h2>Run {} → run {}</h2><p class=\"muted\">{} / {}: {} → {}</p>", E(d["from"]["id"]), E(d["to"]["id"]),
                                E(d["to"]["provider"]), E(d["to"]["cluster"]), E(d["from"]["collected_at"]), E(d["to"]["collected_at"]));
  if (d["checks"].empty() && d["metrics"].empty()) return out + "<p>No change.</p></section>";
  out += "<table><thead><tr><th>check or metric</th><th>before</th><th>after</th><th>now</th></tr></thead><tbody>";
  for (const auto& c : d["checks"]) {
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"small\">{}</td></tr>", E(c["check"]),
                       c["from"].is_null() ? "-" : Status(S(c["from"])), c["to"].is_null() ? "-" : Status(S(c["to"])), E(c["message"]));
  }
  for (const auto& m : d["metrics"]) {
    auto cell = [&](const json& x) { return x.is_null() ? std::string("-") : Status(S(x["verdict"])) + " " + E(x["value"]) + " " + E(m["unit"]); };
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td></td></tr>", E(m["metric"]), cell(m["from"]), cell(m["to"]));
  }
  return out + "</tbody></table></section>";
}

}  // namespace clustermax::web
