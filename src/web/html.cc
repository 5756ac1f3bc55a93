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
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
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
.PLATINUM{background:#dfe3e8;color:#1b1f24;box-shadow:inset 0 0 0 1px #9aa3ad}.GOLD{background:#d4a017;color:#1b1f24}.SILVER{background:#a9b0b8;color:#1b1f24}
.BRONZE{background:#a0582c}.PARTICIPATION_RIBBON{background:#1565c0}.UNDERPERFORMING{background:var(--fail)}.UNAVAILABLE{background:var(--skip)}
.INSUFFICIENT_EVIDENCE{background:#fff;color:#5f6b76;box-shadow:inset 0 0 0 1px #8a939c;border:1px dashed #8a939c}
.podium{display:flex;gap:16px;align-items:flex-end;margin:12px 0 18px}.podium>div{flex:0 0 210px;text-align:center;border:1px solid var(--line);border-radius:6px 6px 0 0;padding:10px;background:var(--bg)}
.podium .p1{order:2;min-height:250px;border-top:4px solid #d4a017}.podium .p2{order:1;min-height:220px;border-top:4px solid #a9b0b8}.podium .p3{order:3;min-height:195px;border-top:4px solid #a0582c}
.podium .place{font-size:26px;font-weight:700;color:#5f6b7a}.podium .score{font-size:13px;color:#5f6b7a;margin-top:6px}
.lead{border-left:4px solid var(--fail);padding:4px 12px;margin:10px 0;background:#fdf3f3}.lead.raise{border-color:#1565c0;background:#f2f6fc}
details>summary{cursor:pointer;color:#10243e}details.na{display:inline}
.filter{display:flex;gap:14px;align-items:center;margin:6px 0;flex-wrap:wrap}
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

// A tier as a person reads it ("Participation Ribbon", not PARTICIPATION_RIBBON); the enum stays the
// CSS class that gives each tier its colour.
std::string TierName(const std::string& t) {
  static const std::map<std::string, std::string> names = {
      {"PLATINUM", "Platinum"},
      {"GOLD", "Gold"},
      {"SILVER", "Silver"},
      {"BRONZE", "Bronze"},
      {"PARTICIPATION_RIBBON", "Participation Ribbon"},
      {"UNDERPERFORMING", "Underperforming"},
      {"UNAVAILABLE", "Unavailable"},
      {"INSUFFICIENT_EVIDENCE", "Not rated: insufficient evidence"}};
  auto it = names.find(t);
  return it == names.end() ? t : it->second;
}

std::string TierBadge(const json& tier, const std::string& css = "tier") {
  std::string t = S(tier);
  return fmt::format("<span class=\"{} {}\">{}</span>", css, Escape(t), Escape(TierName(t)));
}

// A member of a document from a file or the store, or null when it is absent (older or hand-made
// documents lack some; a view shows less rather than failing).
const json& At(const json& o, const char* key) {
  static const json null;
  if (!o.is_object()) return null;
  auto it = o.find(key);
  return it == o.end() ? null : *it;
}

std::string BenchTitle(const std::string& kind) {
  if (kind == "clustermax.bench.gpu") return "GPU compute";
  if (kind == "clustermax.bench.storage") return "Storage (POSIX filesystem)";
  if (kind == "clustermax.bench.storage-scaling") return "Storage scaling across nodes";
  if (kind == "clustermax.bench.s3") return "S3 object storage";
  if (kind == "clustermax.bench.net") return "Networking";
  if (kind == "clustermax.bench.infer") return "Inference serving";
  if (kind == "clustermax.bench.lifecycle") return "Lifecycle timings";
  if (kind == "clustermax.bench.train") return "Training run";
  if (kind == "clustermax.bench.drill") return "Fault drill";
  if (kind == "clustermax.bench.history") return "Reliability from history";
  if (kind == "clustermax.bench.burnin") return "Burn-in";
  return kind;
}

std::string Status(const std::string& s, const std::string& label = "") {
  return fmt::format("<span class=\"st {}\">{}</span>", Escape(s), Escape(label.empty() ? s : label));
}

struct Bar {
  std::string label;
  double value;
  std::optional<double> ref;  // a reference mark (peak, the pass bar)
  std::string css;            // status colour class
  std::string note;
  std::string absent;              // non-empty: no value (e.g. "not rated"), drawn as an empty outline with this text
  std::optional<double> warn_ref;  // a second mark: the warn bar of a graded metric
};

// A vertical line across every bar (a tier cut-off), with its label above the chart.
struct Line {
  double at;
  std::string label;
};

struct ChartOptions {
  bool log = false;  // log10 axis (values spanning decades: metadata rates)
  std::vector<Line> lines;
};

const char* Colour(const std::string& css) {
  if (css == "PASS") return "#2e7d32";
  if (css == "WARN") return "#b26a00";
  if (css == "FAIL") return "#c62828";
  if (css == "SKIP") return "#9e9e9e";
  return "#1565c0";
}

std::string BarChart(const std::string& title, const std::vector<Bar>& bars, const std::string& unit,
                     const ChartOptions& opt = {}) {
  if (bars.empty()) return "";
  double top = 0, bottom = 0;
  for (const auto& b : bars) {
    if (!b.absent.empty()) continue;
    top = std::max({top, b.value, b.ref.value_or(0), b.warn_ref.value_or(0)});
    for (double v : {b.value, b.ref.value_or(0), b.warn_ref.value_or(0)}) {
      if (v > 0 && (bottom == 0 || v < bottom)) bottom = v;
    }
  }
  for (const auto& l : opt.lines) top = std::max(top, l.at);
  if (top <= 0) top = 1;
  const int label_w = 250, chart_w = 520, row = 22, head = opt.lines.empty() ? 4 : 20;
  // Log axis: from a decade under the smallest value's to the decade above the largest, so the
  // smallest bar is still a bar.
  double lo = opt.log ? std::floor(std::log10(bottom > 0 ? bottom : 1)) - 1 : 0,
         hi = opt.log ? std::ceil(std::log10(top)) : 0;
  if (opt.log && hi <= lo) hi = lo + 1;
  auto x_of = [&](double v) {
    if (!opt.log) return v / top * chart_w;
    if (v <= 0) return 0.0;
    return std::clamp((std::log10(v) - lo) / (hi - lo), 0.0, 1.0) * chart_w;
  };
  int h = static_cast<int>(bars.size()) * row + 30 + head;
  std::string svg = fmt::format("<svg role=\"img\" aria-label=\"{}\" width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\">",
                                Escape(title), label_w + chart_w + 120, h, label_w + chart_w + 120, h);
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    int y = static_cast<int>(i) * row + head;
    double w = x_of(b.value);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", label_w - 6, y + 14, Escape(b.label));
    if (!b.absent.empty()) {
      // No value is not a zero: a dashed outline across the chart, the reason written inside.
      svg += fmt::format(
          "<g class=\"absent\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"16\" fill=\"none\" stroke=\"#8a939c\" stroke-dasharray=\"4 3\">"
          "<title>{}</title></rect><text x=\"{}\" y=\"{}\" font-style=\"italic\" fill=\"#5f6b76\">{}</text></g>",
          label_w, y, chart_w, Escape(b.label + ": " + b.absent + (b.note.empty() ? "" : " (" + b.note + ")")),
          label_w + 8, y + 13, Escape(b.absent));
      continue;
    }
    svg += fmt::format(
        "<rect class=\"bar\" x=\"{}\" y=\"{}\" width=\"{:.1f}\" height=\"16\" fill=\"{}\"><title>{}</title></rect>",
        label_w, y, w, Colour(b.css),
        Escape(fmt::format("{}: {:.1f} {}{}", b.label, b.value, unit, b.note.empty() ? "" : " (" + b.note + ")")));
    if (b.ref) {
      double x = label_w + x_of(*b.ref);
      svg += fmt::format(
          "<line class=\"mark pass\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#10243e\" stroke-width=\"2\"/>",
          x, x, y - 2, y + 18);
    }
    if (b.warn_ref) {
      double x = label_w + x_of(*b.warn_ref);
      svg += fmt::format(
          "<line class=\"mark warn\" x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#b26a00\" stroke-width=\"2\" stroke-dasharray=\"3 2\"/>",
          x, x, y - 2, y + 18);
    }
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\">{}</text>", label_w + w + 4, y + 14,
                       b.value >= 1000 ? fmt::format("{:.0f}", b.value) : fmt::format("{:.1f}", b.value));
  }
  for (const auto& l : opt.lines) {
    double x = label_w + x_of(l.at);
    svg += fmt::format(
        "<g class=\"cutoff\"><line x1=\"{:.1f}\" x2=\"{:.1f}\" y1=\"{}\" y2=\"{}\" stroke=\"#10243e\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\"/>"
        "<text x=\"{:.1f}\" y=\"12\" text-anchor=\"middle\">{}</text></g>",
        x, x, head - 4, h - 26, x, Escape(l.label));
  }
  if (opt.log) {
    for (double d = lo; d <= hi; d += 1) {
      double x = label_w + (d - lo) / (hi - lo) * chart_w;
      svg += fmt::format(
          "<text class=\"axis\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\" fill=\"#5f6b76\">{}</text>", x, h - 18,
          d >= 3 ? fmt::format("{:.0f}k", std::pow(10, d) / 1000) : fmt::format("{:.0f}", std::pow(10, d)));
    }
  }
  svg += fmt::format("<text x=\"{}\" y=\"{}\" class=\"muted\">{}</text></svg>", label_w, h - 4,
                     Escape(unit + (opt.log ? " (log scale)" : "")));
  return fmt::format("<h3>{}</h3>{}", Escape(title), svg);
}

// Lines over categorical x values (e.g. tokens per expert), one per series.
std::string LineChart(const std::string& title, const std::vector<std::string>& xs,
                      const std::map<std::string, std::vector<std::optional<double>>>& series,
                      const std::string& unit) {
  if (xs.empty() || series.empty()) return "";
  double top = 0;
  for (const auto& [_, v] : series) {
    for (const auto& y : v) top = std::max(top, y.value_or(0));
  }
  if (top <= 0) top = 1;
  const int left = 60, w = 560, h = 240, legend = 300;
  static const char* palette[] = {"#1565c0", "#c62828", "#2e7d32", "#b26a00",
                                  "#6a1b9a", "#00838f", "#ad1457", "#4e342e"};
  std::string svg = fmt::format("<svg role=\"img\" aria-label=\"{}\" width=\"{}\" height=\"{}\">", Escape(title),
                                left + w + legend, h + 40);
  svg += fmt::format(
      "<line x1=\"{}\" y1=\"10\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/><line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#999\"/>",
      left, left, h + 10, left, h + 10, left + w, h + 10);
  for (int t = 0; t <= 4; ++t) {
    double v = top * t / 4;
    int y = h + 10 - static_cast<int>(h * t / 4.0);
    svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{:.0f}</text>", left - 4, y + 4, v);
  }
  auto xpos = [&](size_t i) {
    return left + (xs.size() == 1 ? w / 2.0 : w * static_cast<double>(i) / (xs.size() - 1));
  };
  for (size_t i = 0; i < xs.size(); ++i)
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>", xpos(i), h + 28, Escape(xs[i]));
  int k = 0;
  for (const auto& [name, ys] : series) {
    const char* c = palette[k % 8];
    std::string pts;
    for (size_t i = 0; i < ys.size() && i < xs.size(); ++i) {
      if (!ys[i]) continue;
      double y = h + 10 - *ys[i] / top * h;
      pts += fmt::format("{:.1f},{:.1f} ", xpos(i), y);
      svg += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" fill=\"{}\"><title>{}</title></circle>", xpos(i),
                         y, c, Escape(fmt::format("{} at {}: {:.1f} {}", name, xs[i], *ys[i], unit)));
    }
    svg += fmt::format("<polyline points=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\"/>", pts, c);
    svg +=
        fmt::format("<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{}</text>",
                    left + w + 20, 12 + k * 16, c, left + w + 34, 21 + k * 16, Escape(name));
    ++k;
  }
  svg += "</svg>";
  return fmt::format("<h3>{}</h3><div class=\"small muted\">{}</div>{}", Escape(title), Escape(unit), svg);
}

std::string GradesTable(const json& grades) {
  if (!grades.is_array() || grades.empty()) return "";
  std::string t =
      "<table><thead><tr><th>verdict</th><th>metric</th><th class=\"num\">value</th><th>bar</th><th>detail</th></tr></thead><tbody>";
  for (const auto& g : grades) {
    std::string bar =
        g.contains("value")
            ? fmt::format("{} {} {}, warn {}", g.value("better", "") == "lower" ? "&lt;=" : "&gt;=", E(g["pass"]),
                          E(g["unit"]), E(g["warn"]))
            : "";
    t += fmt::format("<tr><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"small\">{}</td></tr>",
                     Status(g.value("verdict", "")), E(g["metric"]),
                     g.contains("value") ? E(g["value"]) + " " + E(g["unit"]) : "", bar,
                     E(g.contains("detail") ? g["detail"] : g.value("reason", json(""))));
  }
  return t + "</tbody></table>";
}

std::string GpuCharts(const json& b) {
  std::string out;
  const json& suites = b.value("suites", json::object());
  json model = b.contains("gpus") && !b["gpus"].empty()
                   ? bench::MatchGpuModel(b["gpus"][0].value("name", ""), bench::EmbeddedGpuPeaks())
                   : json(nullptr);
  if (suites.contains("gemm")) {
    std::vector<Bar> bars;
    for (const auto& row : suites["gemm"]["items"]) {
      if (!row.contains("summary")) continue;
      std::string p = row.value("dtype", "");
      std::optional<double> peak;
      if (!model.is_null() && model["tflops"].contains(p) && model["tflops"][p].is_number())
        peak = model["tflops"][p].get<double>();
      bool wrong = false;
      for (const auto& g : row["gpus"]) wrong |= g.value("status", "") == "wrong";
      bars.push_back(
          {fmt::format("{} {}x{}x{}", p, S(row["m"]), S(row["n"]), S(row["k"])),
           row["summary"]["slowest"].get<double>(), peak, wrong ? "FAIL" : "",
           peak ? fmt::format("{:.0f} % of peak", row["summary"]["slowest"].get<double>() / *peak * 100) : ""});
    }
    out +=
        BarChart("Dense GEMM per precision (slowest GPU, TFLOPS)", bars, "TFLOPS; tick: dense peak of the GPU model");
  }
  if (suites.contains("mamf")) {
    std::vector<Bar> bars;
    const json summary = suites["mamf"].value("summary", json::object());
    for (const auto& [p, per] : summary.items()) {
      std::optional<double> ref;
      if (!model.is_null() && model["mamf_tflops"].contains(p)) ref = model["mamf_tflops"][p].get<double>();
      for (const auto& g : per) {
        const json& sh = g["best_mean"]["shape"];
        bars.push_back({fmt::format("{} GPU {} ({}x{}x{})", p, S(g["gpu"]), S(sh["m"]), S(sh["n"]), S(sh["k"])),
                        g["best_mean"]["tflops"].get<double>(), ref, "", ""});
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
      out += LineChart("Grouped MoE GEMM " + dtype + ", uniform routing: useful TFLOPS by tokens per expert", xs,
                       series, "TFLOPS (slowest GPU)");
    }
  }
  std::vector<Bar> bw;
  for (const char* suite : {"gemv", "membw", "pcie", "p2p"}) {
    if (!suites.contains(suite)) continue;
    for (const auto& row : suites[suite]["items"]) {
      if (row.contains("summary"))
        bw.push_back({row.value("id", ""), row["summary"]["slowest"].get<double>(), std::nullopt, "", ""});
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
    out += fmt::format("<tr><td class=\"num\">{}</td><td class=\"num\">{}</td>", E(s.value("nodes", json())),
                       E(s.value("returned", json())));
    const json agg = s.value("aggregate", json::object());
    for (const auto& m : metrics) {
      if (!agg.contains(m)) {
        out += "<td>-</td>";
        continue;
      }
      const json& a = agg[m];
      std::string ratio = a.contains("efficiency") ? fmt::format("{:.2f}", a["efficiency"].get<double>())
                          : a.contains("slowdown") ? fmt::format("x{:.2f}", a["slowdown"].get<double>())
                                                   : "-";
      out += fmt::format("<td>{} / {} ({}) / {}</td>",
                         a.contains("sum") ? fmt::format("{:.3g}", a["sum"].get<double>()) : "-",
                         fmt::format("{:.3g}", a.value("worst_value", 0.0)), E(a.value("worst_node", json())), ratio);
    }
    out += "</tr>";
  }
  return out + "</tbody></table>";
}

// A number that may be absent or of the wrong type in a stored document: nullopt then.
std::optional<double> Num(const json& o, const char* key) {
  if (!o.is_object() || !o.contains(key) || !o[key].is_number()) return std::nullopt;
  return o[key].get<double>();
}

std::string SizeLabel(double bytes) {
  const char* units[] = {"B", "K", "M", "G", "T"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, ++u;
  return fmt::format("{:g}{}", std::round(bytes * 10) / 10, units[u]);
}

// busbw by message size, one line per collective (out of place) of a collectives result.
std::string BusbwBySize(const std::string& title, const json& r) {
  std::vector<double> sizes;
  for (const auto& t : r.value("collectives", json::array()))
    for (const auto& row : t.is_object() ? t.value("rows", json::array()) : json::array())
      if (auto b = Num(row, "bytes"); b && std::find(sizes.begin(), sizes.end(), *b) == sizes.end())
        sizes.push_back(*b);
  std::sort(sizes.begin(), sizes.end());
  if (sizes.size() > 64) return "";  // not a sweep a chart can show
  std::map<std::string, std::vector<std::optional<double>>> series;
  for (const auto& t : r.value("collectives", json::array())) {
    if (!t.is_object() || !t.contains("rows") || !t["rows"].is_array()) continue;
    std::vector<std::optional<double>> ys(sizes.size());
    for (const auto& row : t["rows"]) {
      auto b = Num(row, "bytes");
      if (!b || !row.contains("out_of_place")) continue;
      size_t i = std::lower_bound(sizes.begin(), sizes.end(), *b) - sizes.begin();
      ys[i] = Num(row["out_of_place"], "busbw");
    }
    series[S(t.value("collective", json()))] = ys;
  }
  std::vector<std::string> xs;
  for (double b : sizes) xs.push_back(SizeLabel(b));
  return LineChart(title, xs, series, "GB/s busbw");
}

// Each pair's figure as a node x node table, shaded from red (far under the reference) to green.
std::string PairHeatMap(const json& p) {
  std::vector<std::string> nodes;
  for (const auto& n : p.value("nodes", json::array()))
    if (n.is_object()) nodes.push_back(S(n.value("node", json())));
  if (nodes.size() < 2 || nodes.size() > 256) return "";
  double ref = Num(p, "reference_gbps").value_or(0);
  std::map<std::pair<std::string, std::string>, double> v;
  for (const auto& x : p.value("pairs", json::array())) {
    auto g = Num(x, "gbps");
    if (!x.is_object()) continue;
    if (!g) continue;
    std::string a = S(x.value("a", json())), b = S(x.value("b", json()));
    v[{a, b}] = *g;
    v[{b, a}] = *g;
  }
  std::string out = fmt::format(
      "<h3>Pairs (Gb/s, the slower direction; reference {:.2f})</h3><table class=\"heat\"><thead><tr><th></th>", ref);
  for (const auto& n : nodes) out += "<th>" + Escape(n) + "</th>";
  out += "</tr></thead><tbody>";
  for (const auto& a : nodes) {
    out += "<tr><th>" + Escape(a) + "</th>";
    for (const auto& b : nodes) {
      auto it = v.find({a, b});
      if (a == b || it == v.end()) {
        out += "<td></td>";
        continue;
      }
      double share = ref > 0 ? std::clamp(it->second / ref, 0.0, 1.0) : 1.0;
      int hue = static_cast<int>(120 * share);  // 0 red .. 120 green
      out += fmt::format("<td class=\"num\" style=\"background:hsl({},70%,80%)\" title=\"{} to {}\">{:.1f}</td>", hue,
                         Escape(a), Escape(b), it->second);
    }
    out += "</tr>";
  }
  out += "</tbody></table>";
  for (const auto& c : p.value("culprits", json::array()))
    if (c.is_object())
      out += fmt::format("<p>{} {} {}: {}</p>", Status("FAIL", "at fault"), E(c.value("kind", json())),
                         E(c.value("name", json())), E(c.value("why", json())));
  return out;
}

std::string NetCharts(const json& b) {
  std::string out;
  if (b.contains("single") && b["single"].is_object())
    out += BusbwBySize("One node: busbw by size (" + S(b["single"].value("transport", json())) + ")", b["single"]);
  if (b.contains("fabric_only") && b["fabric_only"].is_object())
    out += BusbwBySize("Fabric only: busbw by size", b["fabric_only"]);
  if (b.contains("scaling") && b["scaling"].is_object()) {
    std::vector<std::string> xs;
    std::vector<std::optional<double>> ys;
    for (const auto& s : b["scaling"].value("steps", json::array())) {
      if (!s.is_object()) continue;
      xs.push_back(S(s.value("nodes", json())));
      ys.push_back(Num(s, "busbw_at_max"));
    }
    out += LineChart(
        "Scaling: " + S(b["scaling"].value("collective", json())) + " busbw at the largest size by node count", xs,
        {{"busbw", ys}}, "GB/s busbw");
  }
  if (b.contains("rails") && b["rails"].is_object()) {
    std::vector<Bar> bars;
    for (const auto& r : b["rails"].value("rails", json::array()))
      if (auto v = Num(r, "busbw_at_max")) bars.push_back({S(r.value("rail", json())), *v, std::nullopt, "", ""});
    out += BarChart("Per rail: all_reduce busbw at the largest size", bars, "GB/s");
  }
  if (b.contains("pairwise") && b["pairwise"].is_object()) out += PairHeatMap(b["pairwise"]);
  if (b.contains("rdma") && b["rdma"].is_object()) {
    // Each HCA port's best RDMA write, its link rate as the mark; a port that never worked is an outline.
    std::vector<Bar> bars;
    for (const auto& h : b["rdma"].value("hcas", json::array())) {
      if (!h.is_object()) continue;
      std::string label =
          S(h.value("node", json())) + " " + S(h.value("device", json())) + ":" + S(h.value("port", json()));
      if (auto v = Num(h, "best_write_gbps"))
        bars.push_back({label, *v, Num(h, "rate_gbps"), "", "", "", std::nullopt});
      else
        bars.push_back({label, 0, Num(h, "rate_gbps"), "", "", "failed with every partner", std::nullopt});
    }
    out += BarChart("RDMA write per HCA port (Gb/s, best with any partner; mark: link rate)", bars, "Gb/s");
    if (b["rdma"].contains("why")) out += "<p>RDMA: " + E(b["rdma"].value("why", json())) + "</p>";
  }
  for (const auto& imp : b.value("imported", json::array()))
    if (imp.is_object() && imp.contains("result") && imp["result"].is_object())
      out += BusbwBySize("Imported " + S(imp.value("file", json())), imp["result"]);
  return out;
}

// bench infer: per shape, output tokens/s and TTFT/TPOT p99 by concurrency (or request rate).
std::string InferCharts(const json& b) {
  std::string out;
  std::map<std::string, std::vector<const json*>> by_shape;
  const json points = b.value("points", json::array());  // named: the pointers below point into it
  for (const auto& p : points)
    if (p.is_object() && p.contains("metrics") && p["metrics"].is_object())
      by_shape[S(p.value("shape", json()))].push_back(&p);
  for (const auto& [shape, shape_points] : by_shape) {
    std::vector<std::string> xs;
    std::vector<std::optional<double>> tput, ttft, tpot;
    bool rates = false;
    for (const json* p : shape_points) {
      double rate = Num(*p, "rate").value_or(0);
      rates |= rate > 0;
      xs.push_back(rate > 0 ? fmt::format("{:g}/s", rate) : S(p->value("concurrency", json())));
      const json& m = (*p)["metrics"];
      tput.push_back(Num(m, "output_throughput"));
      ttft.push_back(Num(m.value("ttft_ms", json::object()), "p99"));
      tpot.push_back(Num(m.value("tpot_ms", json::object()), "p99"));
    }
    std::string by = rates ? "request rate" : "concurrency";
    out += LineChart(fmt::format("{}: output tokens/s by {}", shape, by), xs, {{"output tokens/s", tput}}, "tokens/s");
    out +=
        LineChart(fmt::format("{}: latency p99 by {}", shape, by), xs, {{"TTFT p99", ttft}, {"TPOT p99", tpot}}, "ms");
  }
  if (b.contains("server") && b["server"].is_object()) {
    const json& sv = b["server"];
    out += sv.contains("ready_s") ? fmt::format("<p>server ready after {} s</p>", E(sv["ready_s"]))
                                  : fmt::format("<p>{} server: {}</p>", Status("FAIL"), E(sv.value("error", json())));
  }
  return out;
}

// bench lifecycle: what users wait for (Slurm, imports per tier, model loads, reboots), as bars.
std::string LifecycleCharts(const json& b) {
  auto obj = [](const json& o, const char* k) -> const json& {
    static const json empty = json::object();
    return o.is_object() && o.contains(k) && o[k].is_object() ? o[k] : empty;
  };
  auto arr = [](const json& o, const char* k) -> const json& {
    static const json empty = json::array();
    return o.is_object() && o.contains(k) && o[k].is_array() ? o[k] : empty;
  };
  std::vector<Bar> slurm;
  if (auto v = Num(obj(b, "job_start"), "median_s")) slurm.push_back({"job start (sbatch to RUNNING)", *v, {}, "", ""});
  if (auto v = Num(obj(b, "alloc"), "seconds"))
    slurm.push_back({fmt::format("allocation, {} node(s)", S(obj(b, "alloc").value("nodes", json()))), *v, {}, "", ""});
  for (const auto& l : arr(b, "launch"))
    if (auto v = Num(l, "median_s"))
      slurm.push_back({fmt::format("srun on {} node(s)", S(l.value("nodes", json()))), *v, {}, "", ""});
  if (auto v = Num(obj(b, "pyxis"), "import_s")) slurm.push_back({"pyxis first start", *v, {}, "", ""});
  for (const auto& r : arr(b, "reboot"))
    if (auto v = Num(r, "back_s"))
      slurm.push_back({"reboot " + S(r.value("node", json())), *v, {}, "", "until schedulable"});
  std::string out = BarChart("Slurm: seconds until ...", slurm, "s");
  std::vector<Bar> imports, loads;
  for (const auto& [node, d] : obj(b, "nodes").items()) {
    for (const auto& i : arr(d, "imports")) {
      if (!i.is_object()) continue;
      std::string label = fmt::format("{} {}", node, S(i.value("tier", json())));
      if (auto v = Num(i, "cold_s")) imports.push_back({label + " cold", *v, {}, "", S(i.value("fs_type", json()))});
      if (auto v = Num(i, "warm_s")) imports.push_back({label + " warm", *v, {}, "", ""});
    }
    if (auto v = Num(obj(d, "model"), "cold_gbps")) loads.push_back({node + " shared FS cold", *v, {}, "", ""});
    if (auto v = Num(obj(d, "model"), "warm_gbps")) loads.push_back({node + " shared FS warm", *v, {}, "", ""});
    if (auto v = Num(obj(d, "s3"), "gbps")) loads.push_back({node + " S3", *v, {}, "", ""});
  }
  out += BarChart("import (seconds), per node and storage tier", imports, "s");
  out += BarChart("Model load into host memory (GB/s)", loads, "GB/s");
  return out;
}

// bench train: the loss curve and each rank's median step time.
std::string TrainCharts(const json& b) {
  const json summary = b.value("summary", json::object());  // named: read below by reference
  if (!summary.is_object()) return "";
  std::vector<std::string> xs;
  std::vector<std::optional<double>> loss;
  for (const auto& p : summary.value("loss_curve", json::array())) {
    if (!p.is_array() || p.size() != 2 || !p[1].is_number()) continue;
    xs.push_back(S(p[0]));
    loss.push_back(p[1].get<double>());
  }
  std::string out = LineChart("Loss by step", xs, {{"loss", loss}}, "loss");
  std::vector<Bar> ranks;
  const json rank_nodes = b.value("rank_nodes", json::object());
  const json per = summary.value("rank_step_s", json::object());
  if (per.is_object())
    for (const auto& [r, v] : per.items()) {
      if (!v.is_number()) continue;
      std::string node = rank_nodes.is_object() && rank_nodes.contains(r) ? S(rank_nodes[r]) : "";
      ranks.push_back(
          {fmt::format("rank {}{}", r, node.empty() ? "" : " (" + node + ")"), v.get<double>(), {}, "", ""});
    }
  out += BarChart("Median step time per rank (s)", ranks, "s");
  const json det = summary.value("determinism", json::object());
  if (det.is_object() && det.contains("differing") && det["differing"].is_array()) {
    if (det["differing"].empty())
      out += fmt::format("<p>{} determinism: every rank agrees over {} steps</p>", Status("PASS"),
                         E(det.value("steps_compared", json())));
    for (const auto& d : det["differing"])
      if (d.is_object())
        out += fmt::format("<p>{} rank {} on {} computes differently from step {}</p>", Status("FAIL"),
                           E(d.value("rank", json())), E(d.value("node", json())), E(d.value("first_step", json())));
  }
  return out;
}

// bench drill: each drilled node's timeline (fault -> marked bad -> back), and who marked it.
std::string DrillCharts(const json& b) {
  std::vector<Bar> bars;
  std::string rows;
  for (const auto& n : b.value("nodes", json::array())) {
    if (!n.is_object()) continue;
    std::string node = S(n.value("node", json()));
    if (n.contains("error")) {
      rows += fmt::format("<tr><td>{}</td><td colspan=\"4\">{} {}</td></tr>", E(node), Status("FAIL"), E(n["error"]));
      continue;
    }
    if (auto v = Num(n, "detect_s"))
      bars.push_back({node + " detected", *v, {}, "", S(n.value("detected_by", json()))});
    if (auto v = Num(n, "return_s"))
      bars.push_back({node + " back in service",
                      *v,
                      {},
                      "",
                      n.contains("replaced_by") ? "replaced by " + S(n["replaced_by"]) : ""});
    std::string timeline;
    for (const auto& st : n.value("states", json::array()))
      if (st.is_array() && st.size() == 2) timeline += fmt::format("{} s {}; ", E(st[0]), E(st[1]));
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"small\">{}</td></tr>", E(node),
                        E(n.value("detect_s", json())), E(n.value("return_s", json())), E(n.value("reason", json())),
                        timeline);
  }
  const json drill = b.value("drill", json::object());
  std::string out = fmt::format("<p>fault: {}</p>", drill.is_object() ? E(drill.value("what", json())) : "");
  out += BarChart("Seconds from the fault until ...", bars, "s");
  if (!rows.empty())
    out +=
        "<table><tr><th>node</th><th>detect (s)</th><th>return (s)</th><th>reason</th><th>states (s after the "
        "fault)</th></tr>" +
        rows + "</table>";
  return out;
}

// burnin: each node's median GEMM and memory rates, and what the SDC vote found.
std::string BurnInCharts(const json& b) {
  const json s = b.value("summary", json::object());
  if (!s.is_object()) return "";
  std::vector<Bar> gemm, mem;
  for (const auto& n : s.value("nodes", json::array())) {
    if (!n.is_object()) continue;
    std::string node = S(n.value("node", json()));
    if (auto v = Num(n, "gemm_gflops")) gemm.push_back({node, *v, {}, "", ""});
    if (auto v = Num(n, "mem_gbps")) mem.push_back({node, *v, {}, "", ""});
  }
  std::string out = BarChart("GEMM fp64 per node, median (GFLOP/s)", gemm, "GFLOP/s");
  out += BarChart("Memory pass per node, median (GB/s)", mem, "GB/s");
  for (const auto& e : s.value("sdc", json::array()))
    if (e.is_object())
      out += fmt::format("<p>{} {} computed differently ({}) from iteration {}</p>", Status("FAIL"),
                         E(e.value("node", json())), E(e.value("kind", json())), E(e.value("first_iteration", json())));
  for (const auto& l : s.value("lost", json::array()))
    if (l.is_object())
      out += fmt::format("<p>{} {} lost: {}</p>", Status("FAIL"), E(l.value("node", json())),
                         E(l.value("reason", json())));
  return out;
}

// bench history: availability, and the interruption table by cause (the Llama 3 paper's form).
std::string HistoryCharts(const json& b) {
  std::string out;
  const json w = b.value("window", json::object());
  if (auto a = Num(b, "availability"))
    out += fmt::format("<p>availability {:.4f} over {} day(s), {} node(s); MTBF per node {} h</p>", *a,
                       w.is_object() ? E(w.value("days", json())) : "",
                       w.is_object() ? E(w.value("nodes", json())) : "", E(b.value("mtbf_node_hours", json("-"))));
  std::vector<Bar> lost;
  std::string rows;
  for (const auto& c : b.value("causes", json::array())) {
    if (!c.is_object()) continue;
    std::string cause = S(c.value("cause", json()));
    if (auto v = Num(c, "node_hours_lost")) lost.push_back({cause, *v, {}, "", ""});
    rows += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", E(cause),
                        E(c.value("interruptions", json())), E(c.value("interruption_share", json())),
                        E(c.value("events", json())));
  }
  if (!rows.empty())
    out +=
        "<table><tr><th>cause</th><th>jobs interrupted</th><th>share</th><th>node events</th></tr>" + rows + "</table>";
  out += BarChart("Node-hours lost by cause", lost, "h");
  return out;
}

std::string StorageCharts(const json& b) {
  // bench storage: workloads[] (bytes per second), the checkpoint means, metadata phases (ops/s);
  // bench s3: transfers[] (aggregate GB/s).
  std::vector<Bar> bars;
  for (const auto& w : b.value("workloads", json::array())) {
    if (w.contains("bw_bytes_per_s") && w["bw_bytes_per_s"].is_number()) {
      bars.push_back({w.value("id", ""), w["bw_bytes_per_s"].get<double>() / 1e9, std::nullopt, "",
                      fmt::format("{} threads", S(w["threads"]))});
    }
  }
  if (b.contains("checkpoint") && b["checkpoint"].is_object()) {
    const json& c = b["checkpoint"];
    if (c.contains("write_gbps_mean") && c["write_gbps_mean"].is_number())
      bars.push_back({"checkpoint save (fsync)", c["write_gbps_mean"].get<double>(), std::nullopt, "", ""});
    if (c.contains("read_gbps_mean") && c["read_gbps_mean"].is_number())
      bars.push_back({"checkpoint load", c["read_gbps_mean"].get<double>(), std::nullopt, "", ""});
  }
  for (const auto& t : b.value("transfers", json::array())) {
    if (t.contains("aggregate_gbps") && t["aggregate_gbps"].is_number()) {
      bars.push_back({fmt::format("{} {} x{}", S(t["op"]), S(t["object"]), S(t["concurrency"])),
                      t["aggregate_gbps"].get<double>(), std::nullopt, "", ""});
    }
  }
  std::string out = BarChart("Throughput (GB/s)", bars, "GB/s");
  std::vector<Bar> meta;
  if (b.contains("metadata") && b["metadata"].is_object()) {
    for (const auto& p : b["metadata"].value("phases", json::array())) {
      if (p.contains("ops_per_s") && p["ops_per_s"].is_number())
        meta.push_back({p.value("id", ""), p["ops_per_s"].get<double>(), std::nullopt, "", ""});
    }
  }
  // Rates from hundreds to hundreds of thousands per second: a log axis keeps the slow ones visible.
  out += BarChart("Small-file metadata (operations per second)", meta, "ops/s", {.log = true});
  // Every graded metric against its bars (one chart per unit): solid tick pass, dashed tick warn.
  std::map<std::string, std::vector<Bar>> by_unit;
  for (const auto& g : b.value("grades", json::array())) {
    if (!g.contains("value") || !g["value"].is_number() || !g.contains("pass") || !g["pass"].is_number()) continue;
    std::optional<double> warn;
    if (g.contains("warn") && g["warn"].is_number()) warn = g["warn"].get<double>();
    std::string cmp = g.value("better", "") == "lower" ? "<=" : ">=";
    by_unit[g.value("unit", "")].push_back(
        {g.value("metric", ""), g["value"].get<double>(), g["pass"].get<double>(), g.value("verdict", ""),
         fmt::format("pass {} {}{}", cmp, S(g["pass"]), warn ? fmt::format(", warn {} {}", cmp, *warn) : ""), "",
         warn});
  }
  for (const auto& [unit, bars] : by_unit) {
    double lo = 0, hi = 0;
    for (const auto& x : bars) {
      if (x.value > 0) lo = lo == 0 ? x.value : std::min(lo, x.value);
      hi = std::max(hi, x.value);
    }
    out += BarChart(fmt::format("Graded metrics ({})", unit), bars,
                    unit + "; solid tick: pass bar, dashed tick: warn bar", {.log = lo > 0 && hi / lo > 100});
  }
  return out;
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
  if (board.empty())
    return out +
           "<p class=\"muted\">No rating stored yet (clustermax rate ... --out r.json; clustermax db ingest r.json).</p></section>";
  auto mean = [](const json& r) -> std::string {
    if (!r["summary"].is_object() || !r["summary"].contains("score") || !r["summary"]["score"].is_number()) return "-";
    return fmt::format("{:.2f}", r["summary"]["score"].get<double>());
  };
  // The podium: first place in the middle and tallest, as on a results page.
  out += "<div class=\"podium\">";
  static const char* places[] = {"p1", "p2", "p3"};
  static const char* ordinals[] = {"1st", "2nd", "3rd"};
  for (size_t i = 0; i < board.size() && i < 3; ++i) {
    const json& r = board[i];
    out += fmt::format(
        "<div class=\"{}\"><div class=\"place\">{}</div><div><b>{}</b></div><div class=\"small\">{}</div>{}<div class=\"score\">mean category score {}</div></div>",
        places[i], ordinals[i], E(r["provider"]), E(r["cluster"]), TierBadge(r["tier"]), mean(r));
  }
  out +=
      "</div><table><thead><tr><th>#</th><th>provider</th><th>cluster</th><th>tier</th><th class=\"num\">mean category score</th><th>edition</th><th>rated</th></tr></thead><tbody>";
  for (size_t i = 0; i < board.size(); ++i) {
    const json& r = board[i];
    std::string name = E(r["provider"]);
    std::string href = link ? link("rating", std::to_string(r["id"].get<int64_t>())) : "";
    if (!href.empty()) name = fmt::format("<a href=\"{}\">{}</a>", Escape(href), name);
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td><td class=\"small\">{}</td></tr>",
        i + 1, name, E(r["cluster"]), TierBadge(r["tier"], "st"), mean(r), E(r["edition"]), E(r["ingested_at"]));
  }
  return out + "</tbody></table></section>";
}

std::string Scorecard(const json& r) {
  std::string who = E(At(r, "provider").is_string() ? At(r, "provider") : json("(unnamed provider)"));
  if (At(r, "cluster").is_string()) who += " / " + E(At(r, "cluster"));
  std::string out =
      fmt::format("<section class=\"scorecard\"><h2>Scorecard: {}</h2><p>{}</p>", who, TierBadge(At(r, "tier")));
  if (At(r, "decided_by").is_string()) out += fmt::format("<p>Decided by {}</p>", E(At(r, "decided_by")));
  if (At(r, "tier_by_scores").is_string() && At(r, "tier") != At(r, "tier_by_scores")) {
    out += fmt::format("<p class=\"muted\">The category scores alone would give {}.</p>",
                       Escape(TierName(S(At(r, "tier_by_scores")))));
  }
  if (r.contains("evidence") && At(r, "evidence").is_object()) {
    const json& e = At(r, "evidence");
    out += fmt::format(
        "<p class=\"small\">Evidence: {:.0f} % of the applicable criteria, {} of {} categories rated{}{}</p>",
        e.value("coverage", 0.0) * 100, E(e["rated_categories"]), At(r, "categories").size(),
        e.value("machine_evidence", false) ? "" : ", nothing read from the machine",
        e.value("meets_minimum", false) ? "" : " <b>(short of the minimum for any tier)</b>");
  }
  // Lead with what failed: criteria not met and the evidence that failed them (a FAIL, a WARN, a "no").
  std::string failed;
  int n_failed = 0;
  for (const auto& c : At(r, "categories")) {
    for (const auto& k : At(c, "criteria")) {
      std::string v = k.value("verdict", "");
      if (v != "unmet" && v != "partly-met") continue;
      std::string items;
      for (const auto& x : At(k, "items")) {
        std::string st = S(x["status"]);
        if (st.rfind("FAIL", 0) == 0 || st.rfind("WARN", 0) == 0 || st == "no" || st == "partial") {
          items += fmt::format("<li class=\"small\">{} {}: {}</li>", E(x["source"]), E(x["status"]), E(x["detail"]));
        }
      }
      ++n_failed;
      failed += fmt::format("<li>{} {}{} <span class=\"muted\">({})</span><ul>{}</ul></li>", Status(v), E(k["title"]),
                            k.value("critical", false) ? " <b>(critical)</b>" : "", E(c["title"]), items);
    }
  }
  if (n_failed)
    out += fmt::format("<div class=\"lead\"><h3>What failed ({} criteria)</h3><ul>{}</ul></div>", n_failed, failed);
  const json& n = At(r, "next_tier");
  if (n.is_object()) {
    std::string target = S(n["tier"]);
    out += fmt::format("<div class=\"lead raise\"><h3>To reach {}</h3>", Escape(TierName(target)));
    if (n.contains("about") && n["about"].is_string())
      out += fmt::format("<p class=\"small muted\">{}</p>", E(n["about"]));
    out += "<ol>";
    for (const auto& f : n["fixes"]) {
      out += fmt::format("<li>{} <span class=\"muted\">{}{}</span>", E(f["title"]), E(f["criterion"]),
                         f.contains("gain") ? fmt::format(" (+{:.2f})", f["gain"].get<double>()) : "");
      const json& items = f.contains("items") ? f["items"] : f.value("evidence", json::array());
      out += "<ul>";
      for (const auto& x : items)
        out += fmt::format("<li class=\"small\">{} {}: {}</li>", E(x["source"]), E(x["status"]), E(x["detail"]));
      out += "</ul></li>";
    }
    out += "</ol></div>";
  }
  // Category scores, with the cut-off of the tier given and of the next one as lines.
  std::vector<Bar> bars;
  for (const auto& c : At(r, "categories")) {
    if (!c.contains("score") || !c["score"].is_number()) {
      // Not rated: no evidence for any criterion. Shown as such, never as a score of 0.
      bars.push_back({c.value("title", S(At(c, "id"))), 0, std::nullopt, "SKIP",
                      c.value("not_rated", std::string("no evidence")), "not rated"});
      continue;
    }
    double sc = c["score"].get<double>();
    bars.push_back({c.value("title", S(At(c, "id"))), sc * 100, std::nullopt,
                    sc >= 0.8   ? "PASS"
                    : sc >= 0.5 ? "WARN"
                                : "FAIL",
                    fmt::format("coverage {:.0f} %", c.value("coverage", 0.0) * 100)});
  }
  ChartOptions lines;
  for (const auto& co : r.value("cut_offs", json::array())) {
    std::string t = S(co["tier"]);
    bool given = t == S(At(r, "tier")), next = n.is_object() && t == S(n["tier"]);
    if (given || next)
      lines.lines.push_back({co["min_score"].get<double>() * 100,
                             fmt::format("{} {:.0f} %", TierName(t), co["min_score"].get<double>() * 100)});
  }
  out += BarChart("Category scores (%)", bars, "% of the attainable credit; dashed: tier cut-offs", lines);
  // Every criterion and its evidence, collapsed: what is not applicable folds further still.
  size_t n_criteria = 0;
  for (const auto& c : At(r, "categories")) n_criteria += At(c, "criteria").size();
  out += fmt::format("<details class=\"criteria\"><summary>All {} criteria and their evidence</summary>", n_criteria);
  out +=
      "<table><thead><tr><th>category</th><th>criterion</th><th>verdict</th><th class=\"num\">credit</th><th>evidence</th></tr></thead><tbody>";
  for (const auto& c : At(r, "categories")) {
    for (const auto& k : At(c, "criteria")) {
      std::string ev, na;
      int n_na = 0;
      for (const auto& x : At(k, "items")) {
        std::string line = fmt::format("<div class=\"small\">{} {} <span class=\"muted\">{}</span></div>",
                                       E(x["source"]), E(x["status"]), E(x["detail"]));
        if (x.value("state", "") == "excluded") {
          na += line;
          ++n_na;
        } else {
          ev += line;
        }
      }
      if (n_na)
        ev += fmt::format("<details class=\"na small\"><summary>{} not applicable</summary>{}</details>", n_na, na);
      out += fmt::format("<tr><td>{}</td><td>{}{}</td><td>{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                         E(c["id"]) + (c.value("rated", true) ? "" : " <span class=\"muted\">(not rated)</span>"),
                         E(k["title"]), k.value("critical", false) ? " <b>(critical)</b>" : "",
                         Status(k.value("verdict", "")), E(k["credit"]), ev);
    }
  }
  out += "</tbody></table></details>";
  if (!At(r, "unknown_criteria").empty()) {
    out += "<p class=\"muted small\">Unknown, not credited: ";
    for (const auto& u : At(r, "unknown_criteria")) out += E(u) + " ";
    out += "</p>";
  }
  return out + "</section>";
}

std::string Findings(const json& report, const std::string& anchor) {
  const json& s = report.value("summary", json::object());
  std::string nodes;
  for (const auto& n : report.value("nodes", json::array())) nodes += (nodes.empty() ? "" : ", ") + S(n);
  std::string out = fmt::format(
      "<section id=\"{}\"><h2>Audit findings</h2><p>{} target, {} node(s){}, collected {}: {} checks, {} PASS, {} WARN, {} FAIL, {} SKIP</p>",
      Escape(anchor), E(report["target"]), report.value("nodes", json::array()).size(),
      nodes.size() < 200 ? " (" + Escape(nodes) + ")" : "", E(report["collected_at"]), s.value("checks", 0),
      s.value("pass", 0), s.value("warn", 0), s.value("fail", 0), s.value("skip", 0));
  std::set<std::string> cats;
  for (const auto& r : report["results"]) cats.insert(r.value("category", ""));
  std::string table_id = anchor + "-table";
  out += fmt::format("<div class=\"filter\" data-table=\"{}\">", Escape(table_id));
  for (const char* st : {"FAIL", "WARN", "PASS", "SKIP"}) {
    out += fmt::format("<label><input type=\"checkbox\" value=\"{}\"{}> {}</label>", st,
                       std::string(st) == "SKIP" || std::string(st) == "PASS" ? "" : " checked", Status(st));
  }
  out += "<select><option value=\"\">all categories</option>";
  for (const auto& c : cats) out += fmt::format("<option value=\"{}\">{}</option>", Escape(c), Escape(c));
  out += "</select><input type=\"search\" placeholder=\"search\"><span class=\"count muted\"></span></div>";
  out += fmt::format(
      "<table id=\"{}\"><thead><tr><th>status</th><th>check</th><th>category</th><th>finding</th><th>observed / expected</th></tr></thead><tbody>",
      Escape(table_id));
  for (const auto& r : report["results"]) {
    std::string details;
    for (const auto& d : r.value("details", json::array())) details += "<div class=\"small muted\">" + E(d) + "</div>";
    out += fmt::format(
        "<tr data-status=\"{}\" data-category=\"{}\"><td>{}</td><td>{}<div class=\"small muted\">{}</div></td><td>{}</td><td>{}{}{}</td><td class=\"small\">{}<br>{}</td></tr>",
        E(r["status"]), E(r["category"]), Status(r.value("status", "")), E(r["id"]), E(r["title"]), E(r["category"]),
        E(r["message"]), r["reason"].is_string() ? " <span class=\"muted\">(" + E(r["reason"]) + ")</span>" : "",
        details, E(r["observed"]), E(r["expected"]));
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
  std::string out = fmt::format(
      "<section id=\"matrix\"><h2>Fleet: node by check</h2><p class=\"muted\">{} nodes returned of {} expected. Hover a cell for the node and check.</p>",
      E(report["fleet"]["nodes_returned"]), E(report["fleet"]["nodes_expected"]));
  out += "<table class=\"matrix\"><thead><tr><th>check</th>";
  for (size_t i = 0; i < nodes.size(); ++i)
    out += fmt::format("<th title=\"{}\">{}</th>", Escape(nodes[i]), i % 8 == 0 ? std::to_string(i) : "");
  out += "</tr></thead><tbody>";
  for (const auto& row : m) {
    out += fmt::format("<tr><th>{}</th>", E(row["check"]));
    const json& v = row.value("verdicts", json::object());
    for (const auto& n : nodes) {
      std::string st = v.contains(n) ? S(v[n]) : "";
      out += fmt::format("<td class=\"{}\" title=\"{} {}: {}\"></td>", st.empty() ? "" : Escape(st), Escape(n),
                         E(row["check"]), st.empty() ? "not judged" : Escape(st));
    }
    out += "</tr>";
  }
  return out + "</tbody></table></section>";
}

std::string Benchmark(const json& b) {
  std::string kind = b.value("kind", "");
  std::string out = fmt::format("<section class=\"bench\"><h2>Benchmark: {}</h2>", Escape(BenchTitle(kind)));
  if (b.value("status", "ok") == "skip")
    return out + fmt::format("<p>{} {}</p></section>", Status("SKIP"), E(b["reason"]));
  out += fmt::format("<p>host {}, started {}, {} s; verdict {}</p>", E(b.value("host", json())),
                     E(b.value("started", json())), E(b.value("seconds", json())), Status(b.value("verdict", "SKIP")));
  if (kind == "clustermax.bench.gpu") {
    std::string gpus;
    for (const auto& g : b.value("gpus", json::array()))
      gpus += fmt::format("<li>GPU {}: {} ({}), sm_{}</li>", E(g["index"]), E(g["name"]), E(g["uuid"]),
                          E(g["compute_capability"]));
    out += "<ul class=\"small\">" + gpus + "</ul>" + GpuCharts(b);
  } else if (kind == "clustermax.bench.net") {
    out += NetCharts(b);
  } else if (kind == "clustermax.bench.infer") {
    out += InferCharts(b);
  } else if (kind == "clustermax.bench.lifecycle") {
    out += LifecycleCharts(b);
  } else if (kind == "clustermax.bench.train") {
    out += TrainCharts(b);
  } else if (kind == "clustermax.bench.drill") {
    out += DrillCharts(b);
  } else if (kind == "clustermax.bench.history") {
    out += HistoryCharts(b);
  } else if (kind == "clustermax.bench.burnin") {
    out += BurnInCharts(b);
  } else if (kind == "clustermax.bench.storage-scaling") {
    out += ScalingTable(b);
  } else {
    out += StorageCharts(b);
  }
  return out + GradesTable(b.value("grades", json::array())) + "</section>";
}

std::vector<std::pair<int64_t, int64_t>> DiffPairs(const json& runs) {
  // Runs come newest first: walk from the oldest, pairing each run with the one before it of the
  // same provider and cluster.
  std::vector<std::pair<int64_t, int64_t>> out;
  std::map<std::string, int64_t> last;
  for (size_t i = runs.size(); i-- > 0;) {
    const json& r = runs[i];
    if (r["kind"] != "run") continue;
    std::string key = S(r["provider"]) + "/" + S(r["cluster"]);
    auto it = last.find(key);
    if (it != last.end()) out.push_back({it->second, r["id"].get<int64_t>()});
    last[key] = r["id"].get<int64_t>();
  }
  return out;
}

std::string History(const json& runs, const LinkFn& link) {
  std::string out =
      "<section id=\"history\"><h2>Runs</h2><table><thead><tr><th>id</th><th>kind</th><th>provider</th><th>cluster</th><th>target</th><th>collected</th><th class=\"num\">nodes</th><th>summary</th><th>diff</th></tr></thead><tbody>";
  std::map<int64_t, int64_t> previous;
  for (const auto& [a, b] : DiffPairs(runs)) previous[b] = a;
  for (size_t i = 0; i < runs.size(); ++i) {
    const json& r = runs[i];
    int64_t id = r["id"];
    std::string diff;
    if (previous.count(id) && link) {
      std::string href = link("diff", fmt::format("{}/{}", previous[id], id));
      if (!href.empty()) diff = fmt::format("<a href=\"{}\">vs {}</a>", Escape(href), previous[id]);
    }
    std::string name = std::to_string(id);
    std::string href = link ? link(r["kind"] == "rating" ? "rating" : "run", std::to_string(id)) : "";
    if (!href.empty()) name = fmt::format("<a href=\"{}\">{}</a>", Escape(href), id);
    std::string summary = r["tier"].is_string() ? TierBadge(r["tier"], "st") : "";
    if (r["kind"] == "run" && r["summary"].is_object()) {
      const json& s = r["summary"];
      summary = fmt::format("{} fail, {} warn, {} pass", s.value("fail", 0), s.value("warn", 0), s.value("pass", 0));
    } else if (r["kind"] == "run") {
      summary = "benchmarks only";
    }
    out += fmt::format(
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"small\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
        name, E(r["kind"]), E(r["provider"]), E(r["cluster"]), E(r["target"]), E(r["collected_at"]), E(r["nodes"]),
        summary, diff);
  }
  return out + "</tbody></table></section>";
}

std::string DiffView(const json& d, const std::string& anchor) {
  std::string out =
      fmt::format("<section id=\"{}\"><h2>{} {} → {}</h2><p class=\"muted\">{} / {}: {} → {}; {} regression(s)</p>",
                  Escape(anchor), d["from"].value("kind", "") == "rating" ? "Rating" : "Run", E(d["from"]["id"]),
                  E(d["to"]["id"]), E(d["to"]["provider"]), E(d["to"]["cluster"]), E(d["from"]["collected_at"]),
                  E(d["to"]["collected_at"]), E(d.value("regressions", json(0))));
  bool tier = d.contains("tier") && d["tier"].is_object();
  const json cats = d.value("categories", json::array());
  if (d["checks"].empty() && d["metrics"].empty() && !tier && cats.empty()) return out + "<p>No change.</p></section>";
  out +=
      "<table><thead><tr><th>change</th><th>check, metric or category</th><th>before</th><th>after</th><th>now</th></tr></thead><tbody>";
  auto dir = [](const json& x) {
    return Status(x.value("direction", "") == "worse"    ? "FAIL"
                  : x.value("direction", "") == "better" ? "PASS"
                                                         : "SKIP",
                  x.value("direction", "changed"));
  };
  if (tier) {
    out += fmt::format("<tr><td>{}</td><td>tier</td><td>{}</td><td>{}</td><td></td></tr>", dir(d["tier"]),
                       TierBadge(d["tier"]["from"], "st"), TierBadge(d["tier"]["to"], "st"));
  }
  for (const auto& c : cats) {
    auto cell = [](const json& v) {
      return v.is_number() ? fmt::format("{:.2f}", v.get<double>()) : std::string("not rated");
    };
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td></td></tr>", dir(c), E(c["category"]),
                       cell(c["from"]), cell(c["to"]));
  }
  for (const auto& c : d["checks"]) {
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"small\">{}</td></tr>", dir(c),
                       E(c["check"]), c["from"].is_null() ? "-" : Status(S(c["from"])),
                       c["to"].is_null() ? "-" : Status(S(c["to"])), E(c["message"]));
  }
  for (const auto& m : d["metrics"]) {
    auto cell = [&](const json& x) {
      return x.is_null() ? std::string("-") : Status(S(x["verdict"])) + " " + E(x["value"]) + " " + E(m["unit"]);
    };
    out += fmt::format("<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td></td></tr>", dir(m), E(m["metric"]),
                       cell(m["from"]), cell(m["to"]));
  }
  return out + "</tbody></table></section>";
}

}  // namespace clustermax::web
