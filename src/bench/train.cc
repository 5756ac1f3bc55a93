#include "bench/train.h"

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <string_view>

#include <fmt/format.h>

#include "bench/json_read.h"
#include "util/strings.h"

namespace clustermax::embedded {
extern const std::string_view kTrainRecipesJson;
extern const std::string_view kTrainScript;
}  // namespace clustermax::embedded

namespace clustermax::bench::train {
using nlohmann::json;

double NonEmbeddingParams(const Shape& s) {
  double d = s.dim, h = std::max(1, s.heads), kv = s.kv_heads > 0 ? s.kv_heads : h;
  double attention = 2 * d * d + 2 * d * (d * kv / h);  // q and o; k and v over the KV heads
  double mlp = static_cast<double>(s.mlp_matrices) * d * s.ffn;
  double per_layer = attention + mlp + 2 * d;     // two norms
  return s.layers * per_layer + d + d * s.vocab;  // the final norm and the output head
}

double FlopsPerToken(const Shape& s, int seq_len) {
  return 6 * NonEmbeddingParams(s) + 12.0 * s.layers * s.dim * seq_len;
}

const json& EmbeddedRecipes() {
  static const json recipes = json::parse(embedded::kTrainRecipesJson);
  return recipes;
}

const std::string& BuiltinScript() {
  static const std::string script(embedded::kTrainScript);
  return script;
}

std::vector<std::string> RecipeNames(const json& catalog) {
  std::vector<std::string> names;
  for (const auto& r : ArrOf(catalog, "recipes")) names.push_back(StrOf(r, "name"));
  return names;
}

Recipe RecipeFromJson(const json& j) {
  if (!j.is_object()) throw std::runtime_error("a recipe is a JSON object");
  Recipe r;
  r.name = StrOf(j, "name");
  r.description = StrOf(j, "description");
  for (const auto& a : ArrOf(j, "command")) {
    if (!a.is_string()) throw std::runtime_error("recipe " + r.name + ": command holds strings only");
    r.command.push_back(a.get<std::string>());
  }
  if (r.name.empty() || r.command.empty()) throw std::runtime_error("a recipe needs a name and a command (argv)");
  r.log_format = StrOf(j, "log_format").empty() ? "clustermax" : StrOf(j, "log_format");
  if (r.log_format != "clustermax" && r.log_format != "torchtitan" && r.log_format != "megatron")
    throw std::runtime_error("recipe " + r.name + ": log_format is clustermax, torchtitan or megatron");
  auto count = [&](const json& o, const char* k, double def = 0) {
    double v = NumOf(o, k, def);
    if (!(v >= 0 && v <= 1e8)) throw std::runtime_error(fmt::format("recipe {}: {} out of range", r.name, k));
    return static_cast<int>(v);
  };
  r.seq_len = count(j, "seq_len");
  r.micro_batch = count(j, "micro_batch");
  if (!StrOf(j, "precision").empty()) r.precision = StrOf(j, "precision");
  r.container_image = StrOf(j, "container_image");
  if (!StrOf(j, "device").empty()) r.device = StrOf(j, "device");
  if (r.device != "cpu" && r.device != "gpu") throw std::runtime_error("recipe " + r.name + ": device is cpu or gpu");
  for (const auto& a : ArrOf(j, "deterministic_args"))
    if (a.is_string()) r.deterministic_args.push_back(a.get<std::string>());
  for (const auto& a : ArrOf(j, "peak_args"))
    if (a.is_string()) r.peak_args.push_back(a.get<std::string>());
  if (const json& s = ObjOf(j, "shape"); !s.empty()) {
    Shape sh;
    sh.layers = count(s, "layers");
    sh.dim = count(s, "dim");
    sh.heads = count(s, "heads");
    sh.kv_heads = count(s, "kv_heads");
    sh.ffn = count(s, "ffn");
    sh.vocab = count(s, "vocab");
    sh.mlp_matrices = count(s, "mlp_matrices", 2);
    if (sh.layers < 1 || sh.dim < 1 || sh.heads < 1 || sh.ffn < 1 || sh.vocab < 1 || sh.dim % sh.heads != 0 ||
        sh.layers > 100000 || sh.dim > 1000000 || sh.ffn > 10000000 || sh.vocab > 100000000)
      throw std::runtime_error("recipe " + r.name +
                               ": shape needs layers, dim (a multiple of heads), heads, ffn, vocab");
    r.shape = sh;
  }
  r.flops_per_token = NumOf(j, "flops_per_token");
  if (r.flops_per_token <= 0 && r.shape && r.seq_len > 0) r.flops_per_token = FlopsPerToken(*r.shape, r.seq_len);
  return r;
}

std::vector<std::string> ExpandCommand(const Recipe& r, const std::map<std::string, std::string>& values) {
  std::vector<std::string> out;
  static const std::regex placeholder(R"(\{([a-z_]+)\})");
  for (const auto& arg : r.command) {
    std::string res;
    auto begin = std::sregex_iterator(arg.begin(), arg.end(), placeholder);
    size_t at = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      auto v = values.find((*it)[1].str());
      if (v == values.end())
        throw std::runtime_error(fmt::format("recipe {}: unknown placeholder {{{}}}", r.name, (*it)[1].str()));
      res += arg.substr(at, it->position() - at) + v->second;
      at = it->position() + it->length();
    }
    out.push_back(res + arg.substr(at));
  }
  return out;
}

namespace {

// The line without ANSI escapes (ESC [ ... letter) and other control bytes.
std::string StripAnsi(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = s[i];
    if (c == 0x1b) {
      if (i + 1 < s.size() && s[i + 1] == '[') {
        i += 2;
        while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
      }
      continue;
    }
    if (c < 0x20 && c != '\t') continue;
    out.push_back(static_cast<char>(c));
  }
  return out;
}

std::optional<double> Number(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  if (s.empty() || s.size() > 40) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || !std::isfinite(v)) {
    // "nan" / "inf" losses are kept (as NaN) so the summary can name them
    std::string l = util::ToLower(s);
    if (l == "nan" || l == "-nan" || l == "inf" || l == "-inf") return std::nan("");
    return std::nullopt;
  }
  return v;
}

}  // namespace

std::optional<Event> ParseLogLine(std::string_view raw, const std::string& format) {
  if (raw.size() > (1u << 20)) return std::nullopt;
  std::string line = StripAnsi(raw);
  Event e;
  std::smatch m;
  // libstdc++'s regex recurses per character matched: the prefixes are matched on a short head of
  // the line, and the step-line formats (well under 1 KiB) only on lines of at most kRegexMax.
  constexpr size_t kRegexMax = 4096;
  auto prefix = [&](const std::regex& re, auto&& take) {
    std::string head = line.substr(0, 48);
    if (std::regex_search(head, m, re)) {
      take(m[1].str());
      line.erase(0, static_cast<size_t>(m.position(0) + m.length(0)));
    }
  };
  // srun --label: "12: ..." (possibly padded " 3: ").
  static const std::regex label(R"(^ {0,8}(\d{1,7}): ?)");
  prefix(label, [&](const std::string& r) { e.rank = std::stoi(r); });
  static const std::regex torchrun(R"(^\[(?:rank|default)(\d{1,7})\]:)");
  prefix(torchrun, [&](const std::string& r) {
    if (e.rank < 0) e.rank = std::stoi(r);
  });
  if (format != "clustermax" && line.size() > kRegexMax) return std::nullopt;
  if (format == "clustermax") {
    auto at = line.find("CMAX-TRAIN ");
    if (at == std::string::npos) return std::nullopt;
    json j;
    try {
      j = json::parse(line.substr(at + 11));
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (!j.is_object() || StrOf(j, "event").empty()) return std::nullopt;
    e.kind = StrOf(j, "event");
    // Integers from the log are range-checked before any conversion.
    if (auto r = OptNumOf(j, "rank")) {
      if (!(*r >= 0 && *r < 1e7)) return std::nullopt;
      e.rank = static_cast<int>(*r);
    }
    double step = NumOf(j, "step");
    if (!(step >= 0 && step < 1e9)) return std::nullopt;
    e.step = static_cast<int>(step);
    e.compute_s = OptNumOf(j, "compute_s");
    e.loss = OptNumOf(j, "loss");
    if (!e.loss && j.contains("loss") && j["loss"].is_string()) e.loss = Number(j["loss"].get<std::string>());
    if (!e.loss && j.contains("loss") && j["loss"].is_null()) e.loss = std::nan("");  // JSON has no NaN
    e.step_s = OptNumOf(j, "step_s");
    e.tokens = OptNumOf(j, "tokens");
    e.loss_hex = StrOf(j, "loss_hex");
    e.raw = std::move(j);
    if (e.kind == "step" && e.step < 1) return std::nullopt;
    return e;
  }
  if (format == "torchtitan") {
    // "step:  1  loss: 12.2530  memory: 42.01GiB(44.23%)  tps: 1,234  tflops: 71.55  mfu: 7.23%"
    static const std::regex step(R"(\bstep:\s*(\d+)\s+loss:\s*([-+0-9.eEnaif]+))");
    if (!std::regex_search(line, m, step)) return std::nullopt;
    e.kind = "step";
    e.step = std::stoi(m[1].str().substr(0, 9));
    e.loss = Number(m[2].str());
    auto field = [&](const char* name) -> std::optional<double> {
      std::regex f(std::string(R"(\b)") + name + R"(:\s*([0-9][0-9,]*\.?[0-9]*(?:[eE][-+]?\d+)?))");
      std::smatch fm;
      if (!std::regex_search(line, fm, f)) return std::nullopt;
      return Number(fm[1].str());
    };
    e.tps = field("tps");
    if (!e.tps) e.tps = field("wps");  // older torchtitan: words (tokens) per second
    e.tflops = field("tflops");
    if (auto mfu = field("mfu")) e.mfu = *mfu / 100;
    if (e.step < 1) return std::nullopt;
    return e;
  }
  if (format == "megatron") {
    // " iteration       10/     100 | ... | elapsed time per iteration (ms): 1234.5 | throughput per GPU
    // (TFLOP/s/GPU): 400.1 | ... | lm loss: 7.1E+00 |"
    static const std::regex iter(R"(iteration\s+(\d+)\s*/\s*\d+)");
    if (!std::regex_search(line, m, iter)) return std::nullopt;
    e.kind = "step";
    e.step = std::stoi(m[1].str().substr(0, 9));
    static const std::regex ms(R"(elapsed time per iteration \(ms\):\s*([0-9.]+))");
    static const std::regex tf(R"(\(TFLOP/s/GPU\):\s*([0-9.]+))");
    static const std::regex loss(R"(lm loss:\s*([-+0-9.eEnaif]+))");
    if (std::regex_search(line, m, ms)) {
      if (auto v = Number(m[1].str())) e.step_s = *v / 1000;
    }
    if (std::regex_search(line, m, tf)) e.tflops = Number(m[1].str());
    if (std::regex_search(line, m, loss)) e.loss = Number(m[1].str());
    if (e.step < 1) return std::nullopt;
    return e;
  }
  return std::nullopt;
}

bool LogReader::Feed(std::string_view line) {
  ++lines_;
  // The launcher's and our script's lines come in our format whatever the recipe's log is.
  bool ours = line.find("CMAX-TRAIN ") != std::string_view::npos;
  auto e = ParseLogLine(line, ours ? "clustermax" : format_);
  if (!e) return false;
  if (e->kind == "task") {
    if (e->rank >= 0 && tasks_.size() < 100000) tasks_[e->rank] = util::SanitizeUtf8(StrOf(e->raw, "node"));
    if (job_.empty()) job_ = util::SanitizeUtf8(StrOf(e->raw, "job"));
    if (gpu_.empty()) gpu_ = util::SanitizeUtf8(StrOf(e->raw, "gpu"));
    return false;
  }
  int rank = e->rank < 0 ? 0 : e->rank;
  if (e->kind == "step") {
    last_step_ = std::max(last_step_, e->step);  // progress counts even past the cap below
    // Bounded: a run keeps at most a million (step, rank) pairs, without their raw objects.
    if (steps_.size() >= 1000000) return true;
    e->raw = nullptr;
    steps_[{e->step, rank}] = std::move(*e);
    return true;
  }
  if (e->kind == "start") starts_[rank] = e->raw;
  if (e->kind == "end") ends_[rank] = e->raw;
  if (e->kind == "peak") peaks_[rank] = e->raw;
  if (e->kind == "error" && errors_.size() < 100)
    errors_.push_back(fmt::format("rank {}: {}", rank, util::Ellipsize(StrOf(e->raw, "message"), 400)));
  return false;
}

json LogReader::Collected() const {
  json out = {{"format", format_}, {"lines", lines_}};
  json steps = json::array();
  for (const auto& [key, e] : steps_) {
    json s = {{"step", key.first}, {"rank", key.second}};
    auto put = [&](const char* k, const std::optional<double>& v) {
      if (!v) return;
      if (std::isfinite(*v))
        s[k] = *v;
      else
        s[k] = "nan";
    };
    put("loss", e.loss);
    put("step_s", e.step_s);
    put("compute_s", e.compute_s);
    put("tokens", e.tokens);
    put("tps", e.tps);
    put("tflops", e.tflops);
    put("mfu", e.mfu);
    if (!e.loss_hex.empty()) s["loss_hex"] = e.loss_hex;
    steps.push_back(std::move(s));
  }
  out["steps"] = std::move(steps);
  auto by_rank = [](const std::map<int, json>& m) {
    json o = json::object();
    for (const auto& [r, v] : m) o[std::to_string(r)] = v;
    return o;
  };
  out["starts"] = by_rank(starts_);
  out["ends"] = by_rank(ends_);
  out["peaks"] = by_rank(peaks_);
  out["errors"] = errors_;
  json tasks = json::object();
  for (const auto& [r, node] : tasks_) tasks[std::to_string(r)] = node;
  out["tasks"] = std::move(tasks);
  out["job"] = job_;
  out["gpu"] = gpu_;
  return out;
}

namespace {

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double pos = q * (v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos)), hi = std::min(v.size() - 1, lo + 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

}  // namespace

json Summarize(const json& collected, const SummaryInputs& in) {
  json out = json::object();
  const json& steps = ArrOf(collected, "steps");
  std::map<int, std::vector<const json*>> by_step;
  std::map<int, std::vector<double>> rank_times;
  std::set<int> ranks;
  for (const auto& s : steps) {
    int step = static_cast<int>(NumOf(s, "step")), rank = static_cast<int>(NumOf(s, "rank"));
    by_step[step].push_back(&s);
    ranks.insert(rank);
    // A rank's own speed: its forward time where the log gives it (a synchronous step lasts as long
    // as its slowest rank on every rank), else its step time.
    if (step > in.warmup_steps) {
      auto t = OptNumOf(s, "compute_s");
      if (!t) t = OptNumOf(s, "step_s");
      if (t && *t > 0) rank_times[rank].push_back(*t);
    }
  }
  out["steps_logged"] = by_step.size();
  out["last_step"] = by_step.empty() ? 0 : by_step.rbegin()->first;
  out["ranks_logged"] = ranks.size();
  // The loss curve: the mean of the ranks' losses at each step; a loss that is not finite is named.
  json curve = json::array();
  for (const auto& [step, list] : by_step) {
    double sum = 0;
    int n = 0;
    for (const json* s : list) {
      if (s->contains("loss") && (*s)["loss"].is_string() && !out.contains("loss_not_finite"))
        out["loss_not_finite"] = fmt::format("step {} on rank {}", step, NumOf(*s, "rank"));
      if (auto l = OptNumOf(*s, "loss")) sum += *l, ++n;
    }
    if (n) curve.push_back({step, RoundTo(sum / n, 6)});
  }
  out["loss_curve"] = curve;
  out["errors"] = ArrOf(collected, "errors");
  if (curve.size() >= 2) {
    double first = curve.front()[1].get<double>(), last = curve.back()[1].get<double>();
    out["loss_first"] = first;
    out["loss_last"] = last;
    out["loss_decreased"] = last < first;
  }
  // Rates over the timed steps (after warm-up).
  std::vector<double> tps_gpu, tflops_log, mfu_log, step_wall;
  for (const auto& [step, list] : by_step) {
    if (step <= in.warmup_steps) continue;
    double tokens = 0, wall = 0;
    size_t with_time = 0;
    for (const json* s : list) {
      if (auto t = OptNumOf(*s, "tps")) tps_gpu.push_back(*t);  // torchtitan: per device already
      if (auto t = OptNumOf(*s, "tflops")) tflops_log.push_back(*t);
      if (auto t = OptNumOf(*s, "mfu")) mfu_log.push_back(*t);
      auto st = OptNumOf(*s, "step_s");
      auto tk = OptNumOf(*s, "tokens");
      if (st && tk && *st > 0) {
        tokens += *tk;
        wall = std::max(wall, *st);
        ++with_time;
      } else if (st && *st > 0) {
        wall = std::max(wall, *st);
      }
    }
    if (wall > 0) step_wall.push_back(wall);
    // Our script: the step's tokens over every rank, in the slowest rank's time, per rank.
    if (with_time > 0 && with_time == list.size()) tps_gpu.push_back(tokens / wall / with_time);
  }
  out["timed_steps"] = step_wall.size() ? step_wall.size() : tps_gpu.size();
  if (!step_wall.empty()) {
    out["step_s"] = {{"median", RoundTo(Percentile(step_wall, 0.5), 5)},
                     {"p90", RoundTo(Percentile(step_wall, 0.9), 5)},
                     {"max", RoundTo(*std::max_element(step_wall.begin(), step_wall.end()), 5)},
                     {"min", RoundTo(*std::min_element(step_wall.begin(), step_wall.end()), 5)}};
  }
  std::optional<double> tflops;
  if (!tps_gpu.empty()) {
    double tps = Percentile(tps_gpu, 0.5);
    out["tokens_per_s_per_gpu"] = RoundTo(tps, 3);
    if (in.flops_per_token > 0) {
      tflops = tps * in.flops_per_token / 1e12;
      out["tflops_per_gpu"] = RoundTo(*tflops, 6);
      out["flops_per_token"] = in.flops_per_token;
    }
  }
  if (!tflops_log.empty()) out["log_tflops_per_gpu"] = RoundTo(Percentile(tflops_log, 0.5), 4);
  if (!mfu_log.empty()) out["log_mfu"] = RoundTo(Percentile(mfu_log, 0.5), 5);
  if (!tflops && !tflops_log.empty()) {
    tflops = Percentile(tflops_log, 0.5);  // Megatron reports TFLOP/s per GPU itself
    out["tflops_per_gpu"] = RoundTo(*tflops, 6);
  }
  // The denominators: given, else the ranks' own measured matmul peak (CPU ranks).
  double peak = in.peak_tflops, mamf = in.mamf_tflops;
  std::string peak_source = in.peak_source, mamf_source = in.mamf_source;
  std::vector<double> measured;
  for (const auto& [r, p] : ObjOf(collected, "peaks").items())
    if (auto t = OptNumOf(p, "tflops"); t && *t > 0) measured.push_back(*t);
  if (!measured.empty()) {
    double slowest = *std::min_element(measured.begin(), measured.end());
    out["measured_matmul_tflops"] = {{"min", RoundTo(slowest, 6)},
                                     {"max", RoundTo(*std::max_element(measured.begin(), measured.end()), 6)},
                                     {"ranks", measured.size()}};
    if (peak <= 0) {
      peak = Percentile(measured, 0.5);
      peak_source = "the ranks' measured matmul peak (median; no dense peak is known for these devices)";
    }
    if (mamf <= 0) {
      mamf = Percentile(measured, 0.5);
      mamf_source = "the ranks' measured matmul peak (median)";
    }
  }
  if (tflops && peak > 0) {
    out["mfu"] = RoundTo(*tflops / peak, 5);
    out["peak_tflops"] = peak;
    out["peak_source"] = peak_source;
  }
  if (tflops && mamf > 0) {
    out["mamfu"] = RoundTo(*tflops / mamf, 5);
    out["mamf_tflops"] = mamf;
    out["mamf_source"] = mamf_source;
  }
  // Each rank's median step time: the slowest rank, and how far it is from the fastest.
  if (rank_times.size() >= 1) {
    json per = json::object();
    int slow = -1, fast = -1;
    double slow_t = 0, fast_t = 1e300;
    for (const auto& [r, v] : rank_times) {
      double med = Percentile(v, 0.5);
      per[std::to_string(r)] = RoundTo(med, 5);
      if (med > slow_t) slow_t = med, slow = r;
      if (med < fast_t) fast_t = med, fast = r;
    }
    out["rank_step_s"] = per;
    auto node_of = [&](int r) {
      auto it = in.rank_nodes.find(r);
      return it == in.rank_nodes.end() ? std::string() : it->second;
    };
    out["slowest_rank"] = {{"rank", slow}, {"node", node_of(slow)}, {"step_s", RoundTo(slow_t, 5)}};
    out["fastest_rank"] = {{"rank", fast}, {"node", node_of(fast)}, {"step_s", RoundTo(fast_t, 5)}};
    if (rank_times.size() >= 2 && fast_t > 0) out["rank_spread"] = RoundTo(slow_t / fast_t - 1, 5);
  }
  // Determinism: every rank computed the same batch, so every step's exact loss must agree; a rank
  // that differs from the majority (at its first differing step) computes differently.
  if (in.deterministic) {
    std::map<int, int> first_diff;
    size_t compared = 0;
    for (const auto& [step, list] : by_step) {
      std::map<std::string, int> votes;
      for (const json* s : list)
        if (!StrOf(*s, "loss_hex").empty()) ++votes[StrOf(*s, "loss_hex")];
      if (votes.size() == 0 || list.size() < 2) continue;
      ++compared;
      auto majority = std::max_element(votes.begin(), votes.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
      bool tie =
          std::count_if(votes.begin(), votes.end(), [&](const auto& v) { return v.second == majority->second; }) > 1;
      for (const json* s : list) {
        int r = static_cast<int>(NumOf(*s, "rank"));
        if (StrOf(*s, "loss_hex") != majority->first && !first_diff.count(r)) first_diff[r] = step;
        if (tie && !first_diff.count(r)) first_diff[r] = step;  // no majority: nobody is vouched for
      }
    }
    json d = {{"steps_compared", compared}, {"differing", json::array()}};
    for (const auto& [r, step] : first_diff) {
      auto it = in.rank_nodes.find(r);
      d["differing"].push_back(
          {{"rank", r}, {"node", it == in.rank_nodes.end() ? "" : it->second}, {"first_step", step}});
    }
    out["determinism"] = d;
  }
  return out;
}

std::vector<MetricValue> TrainMetrics(const json& r) {
  std::vector<MetricValue> out;
  const json& s = ObjOf(r, "summary");
  {
    MetricValue m{"train.completed", std::nullopt, "", "", ""};
    // Progress is the last step logged (recipes may log every Nth step).
    double asked = NumOf(ObjOf(r, "options"), "steps");
    double done = NumOf(s, "last_step");
    if (asked > 0) {
      m.value = RoundTo(std::min(1.0, done / asked), 4);
      m.detail = fmt::format("reached step {:g} of {:g}", done, asked);
    } else {
      m.why_missing = "no step count asked";
    }
    if (!StrOf(r, "error").empty()) m.fail_reason = StrOf(r, "error");
    if (!StrOf(s, "loss_not_finite").empty()) m.fail_reason = "loss is not finite at " + StrOf(s, "loss_not_finite");
    out.push_back(m);
  }
  auto ratio = [&](const char* id, const char* key, const char* source_key, const std::string& missing) {
    MetricValue m{id, std::nullopt, "", "", ""};
    if (auto v = OptNumOf(s, key)) {
      m.value = *v;
      m.detail = fmt::format("{:.4g} TFLOP/s per GPU over {}", NumOf(s, "tflops_per_gpu"), StrOf(s, source_key));
    } else {
      m.why_missing = missing;
    }
    out.push_back(m);
  };
  std::string no_flops = OptNumOf(s, "tflops_per_gpu") ? "no peak known for this device (--peak-tflops)"
                                                       : "no model FLOPs per token (recipe shape or flops_per_token)";
  const json& opts = ObjOf(r, "options");
  if (opts.contains("deterministic") && opts["deterministic"].is_boolean() && opts["deterministic"].get<bool>()) {
    // Deterministic kernels (no fused attention) are a correctness run, not a throughput one.
    for (const char* id : {"train.mfu", "train.mamfu"})
      out.push_back({id, std::nullopt, "a --deterministic run is not graded on throughput", "", ""});
  } else {
    ratio("train.mfu", "mfu", "peak_source", no_flops);
    ratio("train.mamfu", "mamfu", "mamf_source",
          OptNumOf(s, "tflops_per_gpu") ? "no measured MAMF (--mamf-tflops)" : no_flops);
  }
  {
    MetricValue m{"train.rank-spread", std::nullopt, "", "", ""};
    if (auto v = OptNumOf(s, "rank_spread")) {
      m.value = *v;
      const json& slow = ObjOf(s, "slowest_rank");
      m.detail = fmt::format("slowest rank {:g} on {} at {:.4g} s per step", NumOf(slow, "rank"),
                             StrOf(slow, "node").empty() ? "?" : StrOf(slow, "node"), NumOf(slow, "step_s"));
    } else {
      m.why_missing = "fewer than two ranks logged step times";
    }
    out.push_back(m);
  }
  {
    MetricValue m{"train.determinism", std::nullopt, "", "", ""};
    const json& d = ObjOf(s, "determinism");
    if (d.empty()) {
      m.why_missing = "not asked (--deterministic)";
    } else if (NumOf(d, "steps_compared") == 0) {
      m.why_missing = "no step was logged by two or more ranks with an exact loss";
    } else {
      const json& diff = ArrOf(d, "differing");
      m.value = static_cast<double>(diff.size());
      m.detail = fmt::format("{:g} steps compared across ranks", NumOf(d, "steps_compared"));
      if (!diff.empty()) {
        std::vector<std::string> who;
        for (const auto& x : diff)
          who.push_back(
              fmt::format("rank {:g} ({}) from step {:g}", NumOf(x, "rank"), StrOf(x, "node"), NumOf(x, "first_step")));
        m.fail_reason = "computes differently from its peers: " + fmt::format("{}", fmt::join(who, ", "));
      }
    }
    out.push_back(m);
  }
  return out;
}

std::string RenderTrain(const json& r) {
  auto safe = [](const std::string& s) { return util::TerminalSafeText(s); };
  const json& s = ObjOf(r, "summary");
  const json& o = ObjOf(r, "options");
  std::string out = fmt::format("Training run: recipe {} on {:g} node(s) x {:g} task(s)\n", safe(StrOf(o, "recipe")),
                                NumOf(o, "nodes"), NumOf(o, "tasks_per_node"));
  if (!StrOf(r, "error").empty()) out += fmt::format("  error: {}\n", safe(StrOf(r, "error")));
  out += fmt::format("  steps logged {:g} of {:g}, ranks {:g}\n", NumOf(s, "steps_logged"), NumOf(o, "steps"),
                     NumOf(s, "ranks_logged"));
  if (auto v = OptNumOf(s, "tokens_per_s_per_gpu")) out += fmt::format("  tokens/s per GPU     {:.1f}\n", *v);
  if (auto v = OptNumOf(s, "tflops_per_gpu")) out += fmt::format("  TFLOP/s per GPU      {:.4g}\n", *v);
  if (auto v = OptNumOf(s, "mfu"))
    out += fmt::format("  MFU                  {:.1f} % of {:.4g} TFLOP/s ({})\n", 100 * *v, NumOf(s, "peak_tflops"),
                       safe(StrOf(s, "peak_source")));
  if (auto v = OptNumOf(s, "mamfu"))
    out += fmt::format("  MAMFU                {:.1f} % of {:.4g} TFLOP/s\n", 100 * *v, NumOf(s, "mamf_tflops"));
  if (auto v = OptNumOf(s, "log_mfu")) out += fmt::format("  MFU the log reports  {:.1f} %\n", 100 * *v);
  if (const json& st = ObjOf(s, "step_s"); !st.empty())
    out += fmt::format("  step time            median {:.4g} s, p90 {:.4g} s, max {:.4g} s\n", NumOf(st, "median"),
                       NumOf(st, "p90"), NumOf(st, "max"));
  if (const json& sl = ObjOf(s, "slowest_rank"); !sl.empty() && OptNumOf(s, "rank_spread"))
    out += fmt::format("  slowest rank         {:g} on {} ({:.1f} % slower than the fastest)\n", NumOf(sl, "rank"),
                       safe(StrOf(sl, "node")), 100 * NumOf(s, "rank_spread"));
  if (OptNumOf(s, "loss_first"))
    out += fmt::format("  loss                 {:.4f} -> {:.4f}\n", NumOf(s, "loss_first"), NumOf(s, "loss_last"));
  if (const json& d = ObjOf(s, "determinism"); !d.empty()) {
    if (NumOf(d, "steps_compared") == 0)
      out += "  determinism          nothing compared: no step was logged by two or more ranks\n";
    else if (ArrOf(d, "differing").empty())
      out += fmt::format("  determinism          every rank agrees over {:g} steps\n", NumOf(d, "steps_compared"));
    for (const auto& x : ArrOf(d, "differing"))
      out += fmt::format("  determinism          rank {:g} on {} differs from step {:g}\n", NumOf(x, "rank"),
                         safe(StrOf(x, "node")), NumOf(x, "first_step"));
  }
  for (const auto& e : ArrOf(s, "errors"))
    if (e.is_string()) out += fmt::format("  {}\n", safe(e.get<std::string>()));
  return out;
}

}  // namespace clustermax::bench::train
