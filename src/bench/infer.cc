#include "bench/infer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "bench/json_read.h"
#include "util/cancel.h"
#include "util/curl.h"
#include "util/strings.h"

namespace clustermax::bench::infer {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// ---- server-sent events ----

bool SseParser::Feed(std::string_view piece, const std::function<void(const std::string&)>& on_data) {
  if (broken_) return false;
  for (char ch : piece) {
    if (ch != '\n') {
      if (line_.size() >= max_line_) {
        broken_ = true;
        return false;
      }
      line_ += ch;
      continue;
    }
    if (!line_.empty() && line_.back() == '\r') line_.pop_back();
    if (line_.empty()) {
      // A blank line ends the event.
      if (has_data_) on_data(data_);
      data_.clear();
      has_data_ = false;
    } else if (line_[0] != ':') {  // ':' starts a comment (servers send them as keep-alives)
      size_t colon = line_.find(':');
      std::string_view field = std::string_view(line_).substr(0, colon);
      std::string_view value =
          colon == std::string::npos ? std::string_view() : std::string_view(line_).substr(colon + 1);
      if (!value.empty() && value[0] == ' ') value.remove_prefix(1);
      if (field == "data") {
        // An event's data lines are joined: they too stop at the limit (a stream of data lines with
        // no blank line between them would otherwise grow without end).
        if (data_.size() + value.size() + 1 > max_line_) {
          broken_ = true;
          return false;
        }
        if (has_data_) data_ += '\n';
        data_ += value;
        has_data_ = true;
      }
    }
    line_.clear();
  }
  return true;
}

StreamChunk ParseStreamChunk(const json& j) {
  StreamChunk c;
  if (!j.is_object()) return c;
  if (auto e = j.find("error"); e != j.end()) {
    std::string msg = e->is_object() && e->contains("message") && (*e)["message"].is_string()
                          ? (*e)["message"].get<std::string>()
                          : e->dump(-1, ' ', false, json::error_handler_t::replace);
    c.error = util::Ellipsize(util::SanitizeUtf8(msg), 300);
  }
  if (auto ch = j.find("choices"); ch != j.end() && ch->is_array() && !ch->empty()) {
    c.has_choices = true;
    const json& first = (*ch)[0];
    if (first.is_object()) {
      auto text_of = [](const json& o, const char* k) {
        auto it = o.find(k);
        return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
      };
      if (auto d = first.find("delta"); d != first.end() && d->is_object()) {
        c.text = text_of(*d, "content");
        if (c.text.empty()) c.text = text_of(*d, "reasoning_content");
      } else {
        c.text = text_of(first, "text");
      }
    }
  }
  if (auto u = j.find("usage"); u != j.end() && u->is_object()) {
    auto num = [&](const char* k) -> std::optional<long long> {
      auto it = u->find(k);
      if (it == u->end() || !it->is_number_integer()) return std::nullopt;
      long long v = it->get<long long>();
      return v >= 0 ? std::optional<long long>(v) : std::nullopt;
    };
    c.prompt_tokens = num("prompt_tokens");
    c.completion_tokens = num("completion_tokens");
  }
  return c;
}

// ---- metrics ----

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(rank)), hi = static_cast<size_t>(std::ceil(rank));
  return v[lo] + (v[hi] - v[lo]) * (rank - static_cast<double>(lo));
}

namespace {

// {mean, median, std, p90, p99, min, max} in milliseconds of values in seconds; numpy on an empty
// list is 0 in vLLM's report (it passes `or 0`), so is ours.
json Distribution(const std::vector<double>& s) {
  if (s.empty()) return {{"count", 0}, {"mean", 0}, {"median", 0}, {"std", 0}, {"p90", 0}, {"p99", 0}};
  double mean = std::accumulate(s.begin(), s.end(), 0.0) / static_cast<double>(s.size());
  double var = 0;
  for (double x : s) var += (x - mean) * (x - mean);
  var /= static_cast<double>(s.size());
  auto ms = [](double x) { return RoundTo(x * 1000, 4); };
  return {{"count", s.size()},
          {"mean", ms(mean)},
          {"median", ms(Percentile(s, 50))},
          {"std", ms(std::sqrt(var))},
          {"p90", ms(Percentile(s, 90))},
          {"p99", ms(Percentile(s, 99))},
          {"min", ms(*std::min_element(s.begin(), s.end()))},
          {"max", ms(*std::max_element(s.begin(), s.end()))}};
}

}  // namespace

json SummarizePoint(const std::vector<RequestRecord>& records, double duration_s, const Slo& slo, int gpus) {
  std::vector<double> ttfts, tpots, itls, e2els;
  long long input = 0, output = 0, completed = 0, failed = 0, good = 0, with_usage = 0, input_known = 0;
  json errors = json::object();
  for (const auto& r : records) {
    if (!r.ok) {
      ++failed;
      std::string why = r.error.empty() ? "failed" : r.error;
      errors[why] = errors.value(why, 0) + 1;
      continue;
    }
    ++completed;
    with_usage += r.usage ? 1 : 0;
    if (r.input_tokens >= 0) input += r.input_tokens, ++input_known;
    output += r.output_tokens;
    double tpot = 0;
    if (r.output_tokens > 1) {
      tpot = (r.e2el - r.ttft) / static_cast<double>(r.output_tokens - 1);
      tpots.push_back(tpot);
    }
    itls.insert(itls.end(), r.itl.begin(), r.itl.end());
    ttfts.push_back(r.ttft);
    e2els.push_back(r.e2el);
    bool ok = (!slo.ttft_ms || r.ttft * 1000 <= *slo.ttft_ms) && (!slo.tpot_ms || tpot * 1000 <= *slo.tpot_ms) &&
              (!slo.e2el_ms || r.e2el * 1000 <= *slo.e2el_ms);
    good += ok ? 1 : 0;
  }
  json out = {{"requests", records.size()},           {"completed", completed}, {"failed", failed},
              {"duration_s", RoundTo(duration_s, 4)}, {"input_tokens", input},  {"output_tokens", output}};
  if (!errors.empty()) out["errors"] = errors;
  double d = duration_s > 0 ? duration_s : 0;
  auto per_s = [&](double x) { return d > 0 ? RoundTo(x / d, 4) : 0.0; };
  out["request_throughput"] = per_s(static_cast<double>(completed));
  out["output_throughput"] = per_s(static_cast<double>(output));
  out["total_token_throughput"] = per_s(static_cast<double>(input + output));
  if (gpus > 0) {
    out["gpus"] = gpus;
    out["output_throughput_per_gpu"] = per_s(static_cast<double>(output) / gpus);
    out["total_token_throughput_per_gpu"] = per_s(static_cast<double>(input + output) / gpus);
  }
  out["ttft_ms"] = Distribution(ttfts);
  out["tpot_ms"] = Distribution(tpots);
  out["itl_ms"] = Distribution(itls);
  out["e2el_ms"] = Distribution(e2els);
  out["tokens_from"] = completed == 0 || with_usage == completed ? "usage" : with_usage == 0 ? "chunks" : "mixed";
  if (input_known < completed) out["input_tokens_note"] = "some prompts' token counts are unknown (no usage)";
  if (slo.any()) {
    json s = json::object();
    if (slo.ttft_ms) s["ttft_ms"] = *slo.ttft_ms;
    if (slo.tpot_ms) s["tpot_ms"] = *slo.tpot_ms;
    if (slo.e2el_ms) s["e2el_ms"] = *slo.e2el_ms;
    out["slo"] = s;
    out["good_requests"] = good;
    out["goodput"] = per_s(static_cast<double>(good));
    // Of every request sent: a failed request missed its SLOs too.
    out["slo_attainment"] = records.empty() ? 0.0 : RoundTo(static_cast<double>(good) / records.size(), 4);
  }
  return out;
}

std::string SyntheticPrompt(int words, uint64_t index) {
  // Common short words: one token each for the usual BPE vocabularies; the order is random per
  // index, so two prompts share no prefix beyond chance.
  static const char* kWords[] = {
      "time",  "year",   "people",  "way",    "day",     "man",      "thing",    "woman",  "life",  "child",
      "world", "school", "state",   "family", "group",   "country",  "problem",  "hand",   "part",  "place",
      "case",  "week",   "company", "system", "program", "question", "work",     "number", "night", "point",
      "home",  "water",  "room",    "mother", "area",    "money",    "story",    "fact",   "month", "lot",
      "right", "study",  "book",    "eye",    "job",     "word",     "business", "issue",  "side",  "kind",
      "head",  "house",  "service", "friend", "father",  "power",    "hour",     "game",   "line",  "end"};
  constexpr size_t kN = sizeof kWords / sizeof kWords[0];
  std::mt19937_64 rng(index * 0x9E3779B97F4A7C15ull + 1);
  std::string out;
  out.reserve(static_cast<size_t>(std::max(0, words)) * 7);
  for (int i = 0; i < words; ++i) {
    if (i) out += ' ';
    out += kWords[rng() % kN];
  }
  return out;
}

std::string Shape::name() const {
  auto k = [](int n) { return n % 1024 == 0 ? fmt::format("{}k", n / 1024) : std::to_string(n); };
  return k(input) + "/" + k(output);
}

json RecordsJson(const std::vector<RequestRecord>& records) {
  json out = json::array();
  for (const auto& r : records) {
    json j = {{"start", RoundTo(r.start, 6)}, {"ok", r.ok}};
    if (r.ok) {
      json itl = json::array();
      for (double g : r.itl) itl.push_back(RoundTo(g, 6));
      j["ttft"] = RoundTo(r.ttft, 6);
      j["e2el"] = RoundTo(r.e2el, 6);
      j["itl"] = itl;
      j["output_tokens"] = r.output_tokens;
      j["input_tokens"] = r.input_tokens >= 0 ? json(r.input_tokens) : json(nullptr);
      j["usage"] = r.usage;
    } else {
      j["error"] = r.error;
    }
    out.push_back(std::move(j));
  }
  return out;
}

// ---- the client ----

namespace {

// One request's stream: the SSE parser and the clock readings vLLM takes.
struct Stream {
  Clock::time_point run_start, sent;
  SseParser sse;
  RequestRecord* rec = nullptr;
  bool first = true;
  Clock::time_point last{};
  long long text_chunks = 0;
  std::string head;  // the body's first bytes: the reason of a non-200 answer
  std::string stream_error;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Stream*>(user);
  size_t bytes = size * n;
  if (s->head.size() < 4096) s->head.append(data, std::min(bytes, 4096 - s->head.size()));
  bool ok = s->sse.Feed(std::string_view(data, bytes), [s](const std::string& payload) {
    if (payload == "[DONE]") return;
    auto now = Clock::now();
    json j = json::parse(payload, nullptr, false);
    if (j.is_discarded()) return;  // not JSON: not a chunk vLLM would count either (it would raise)
    StreamChunk c = ParseStreamChunk(j);
    if (!c.error.empty() && s->stream_error.empty()) s->stream_error = c.error;
    if (c.has_choices) {
      if (s->first) {
        s->rec->ttft = std::chrono::duration<double>(now - s->sent).count();
        s->first = false;
      } else {
        s->rec->itl.push_back(std::chrono::duration<double>(now - s->last).count());
      }
      if (!c.text.empty()) ++s->text_chunks;
    }
    if (c.completion_tokens) {
      s->rec->output_tokens = *c.completion_tokens;
      s->rec->usage = true;
    }
    if (c.prompt_tokens) s->rec->input_tokens = *c.prompt_tokens;
    s->last = now;
  });
  return ok ? bytes : 0;  // 0 aborts the transfer: a line past the limit is not a stream
}

std::string RequestBody(const Target& t, const Shape& shape, uint64_t index) {
  std::string prompt = SyntheticPrompt(shape.input, index);
  json b = {{"model", t.model},
            {"stream", true},
            {"stream_options", {{"include_usage", true}}},
            {"max_tokens", shape.output},
            {"temperature", 0}};
  if (t.endpoint == "chat")
    b["messages"] = json::array({{{"role", "user"}, {"content", prompt}}});
  else
    b["prompt"] = prompt;
  if (t.ignore_eos) {
    b["ignore_eos"] = true;  // vLLM, SGLang: exactly max_tokens, whatever the model would stop at
    b["min_tokens"] = shape.output;
  }
  return b.dump(-1, ' ', false, json::error_handler_t::replace);
}

// What every request to the server shares: the handle reset, the URL (the API base and `path`),
// `headers` plus the bearer key, no signals (worker threads), no proxy (as vLLM's client goes:
// aiohttp ignores proxy variables by default, so the key and the timings do not pass through one),
// and Ctrl-C ending the transfer. The header list is the caller's to free after the request.
curl_slist* Prepare(const util::CurlApi& api, CURL* h, const Target& t, const char* path, curl_slist* headers,
                    std::string* url) {
  *url = t.url;
  while (!url->empty() && url->back() == '/') url->pop_back();
  *url += path;
  if (!t.api_key.empty()) headers = api.slist_append(headers, ("Authorization: Bearer " + t.api_key).c_str());
  api.easy_reset(h);
  api.easy_setopt(h, CURLOPT_URL, url->c_str());
  api.easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  api.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(h, CURLOPT_NOPROXY, "*");
  api.easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  api.easy_setopt(
      h, CURLOPT_XFERINFOFUNCTION,
      +[](void*, curl_off_t, curl_off_t, curl_off_t, curl_off_t) -> int { return util::Cancelled() ? 1 : 0; });
  return headers;
}

void SendOne(const util::CurlApi& api, CURL* h, const Target& t, const Shape& shape, uint64_t index,
             Clock::time_point run_start, RequestRecord* rec) {
  std::string body = RequestBody(t, shape, index);
  curl_slist* headers = nullptr;
  headers = api.slist_append(headers, "Content-Type: application/json");
  headers = api.slist_append(headers, "Accept: text/event-stream");
  // No "Expect: 100-continue" on a large prompt: it costs a round trip (or a second against a server
  // that never answers 100) before the body, inside every TTFT. vLLM's aiohttp client sends none.
  headers = api.slist_append(headers, "Expect:");
  std::string url;
  headers = Prepare(api, h, t, t.endpoint == "chat" ? "/chat/completions" : "/completions", headers, &url);
  Stream s;
  s.run_start = run_start;
  s.rec = rec;
  api.easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
  api.easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
  api.easy_setopt(h, CURLOPT_WRITEFUNCTION, &OnBody);
  api.easy_setopt(h, CURLOPT_WRITEDATA, &s);
  api.easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(t.timeout_s * 1000));
  api.easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 30000L);
  api.easy_setopt(h, CURLOPT_TCP_NODELAY, 1L);
  s.sent = Clock::now();
  rec->start = std::chrono::duration<double>(s.sent - run_start).count();
  CURLcode rc = api.easy_perform(h);
  long code = 0;
  api.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
  api.slist_free_all(headers);
  if (rc != CURLE_OK) {
    rec->error = fmt::format("{}", api.easy_strerror(rc));
  } else if (code != 200) {
    rec->error = fmt::format("HTTP {}: {}", code, util::Ellipsize(util::SanitizeUtf8(s.head), 200));
  } else if (!s.stream_error.empty()) {
    rec->error = "the server streamed an error: " + s.stream_error;
  } else if (s.first) {
    rec->error = "the stream ended without a token";
  } else {
    rec->ok = true;
    rec->e2el = std::chrono::duration<double>(s.last - s.sent).count();
    if (!rec->usage) rec->output_tokens = s.text_chunks;
  }
}

}  // namespace

std::pair<long, std::string> ListModels(const Target& t) {
  const util::CurlApi& api = util::Curl("bench infer");
  std::unique_ptr<CURL, void (*)(CURL*)> h(api.easy_init(), api.easy_cleanup);
  if (!h) return {0, ""};
  std::string url, body;
  curl_slist* headers = Prepare(api, h.get(), t, "/models", nullptr, &url);
  auto sink = +[](char* d, size_t s, size_t n, void* u) {
    auto* b = static_cast<std::string*>(u);
    if (b->size() < (1u << 20)) b->append(d, s * n);
    return s * n;
  };
  api.easy_setopt(h.get(), CURLOPT_WRITEFUNCTION, sink);
  api.easy_setopt(h.get(), CURLOPT_WRITEDATA, &body);
  api.easy_setopt(h.get(), CURLOPT_TIMEOUT_MS, 5000L);
  long code = 0;
  if (api.easy_perform(h.get()) == CURLE_OK) api.easy_getinfo(h.get(), CURLINFO_RESPONSE_CODE, &code);
  api.slist_free_all(headers);
  std::string id;
  json j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() && j["data"][0].is_object() &&
      j["data"][0].contains("id") && j["data"][0]["id"].is_string())
    id = util::SanitizeUtf8(j["data"][0]["id"].get<std::string>());
  return {code, id};
}

std::vector<RequestRecord> RunPoint(const Target& t, const PointPlan& p, double* duration_s) {
  const util::CurlApi& api = util::Curl("bench infer");
  std::vector<RequestRecord> records(static_cast<size_t>(std::max(0, p.requests)));
  // Arrival times: all at once (rate 0), or a Poisson process at `rate` (vLLM's request_rate), each
  // request then waiting for a free slot of the concurrency (its max_concurrency).
  std::vector<double> arrival(records.size(), 0.0);
  if (p.rate > 0) {
    std::mt19937_64 rng(p.seed + 7);
    std::exponential_distribution<double> gap(p.rate);
    double at = 0;
    for (auto& a : arrival) {
      a = at;
      at += gap(rng);
    }
  }
  std::atomic<size_t> next{0};
  auto start = Clock::now();
  int workers = std::max(1, std::min<int>(p.concurrency, static_cast<int>(records.size())));
  std::vector<std::thread> pool;
  auto work = [&] {
    CURL* h = api.easy_init();
    for (size_t i; (i = next.fetch_add(1)) < records.size();) {
      if (!h) {
        records[i].error = "curl_easy_init failed";
        continue;
      }
      // Wait for the request's arrival in short slices, so Ctrl-C is seen.
      auto due = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(arrival[i]));
      while (!util::Cancelled() && Clock::now() < due)
        std::this_thread::sleep_until(std::min(due, Clock::now() + std::chrono::milliseconds(100)));
      if (util::Cancelled()) {
        records[i].error = "not sent: interrupted";
        continue;
      }
      SendOne(api, h, t, p.shape, p.seed * 1000003 + i, start, &records[i]);
    }
    if (h) api.easy_cleanup(h);
  };
  try {
    for (int w = 0; w < workers; ++w) pool.emplace_back(work);
  } catch (const std::system_error&) {
    // The system gave fewer threads than asked (a pids limit): the ones running take every request.
    if (pool.empty()) throw;
  }
  for (auto& th : pool) th.join();
  if (duration_s) *duration_s = std::chrono::duration<double>(Clock::now() - start).count();
  return records;
}

}  // namespace clustermax::bench::infer

namespace clustermax::bench::infer {

std::vector<MetricValue> InferMetrics(const json& r) {
  std::vector<MetricValue> out;
  const json points = r.contains("points") && r["points"].is_array() ? r["points"] : json::array();
  {
    // Requests that failed, over every point: the server refused, broke the stream or timed out.
    MetricValue m{"infer.failed-requests", std::nullopt, "", "", ""};
    double sent = 0, failed = 0;
    std::string first_error;
    for (const auto& p : points) {
      const json& mt = ObjOf(p, "metrics");
      sent += OptNumOf(mt, "requests").value_or(0);
      failed += OptNumOf(mt, "failed").value_or(0);
      if (first_error.empty() && mt.is_object() && mt.contains("errors") && mt["errors"].is_object() &&
          !mt["errors"].empty())
        first_error = mt["errors"].begin().key();
    }
    if (sent > 0) {
      m.value = RoundTo(failed / sent, 4);
      m.detail = fmt::format("{:g} of {:g} requests failed", failed, sent);
      if (!first_error.empty()) m.detail += ": " + first_error;
    } else {
      m.why_missing =
          r.contains("error") && r["error"].is_string() ? r["error"].get<std::string>() : "no request was sent";
    }
    out.push_back(m);
  }
  {
    // The worst point's share of requests that met every SLO given.
    MetricValue m{"infer.slo-attainment", std::nullopt, "", "", ""};
    double worst = 2;
    for (const auto& p : points) {
      const json& mt = ObjOf(p, "metrics");
      auto a = OptNumOf(mt, "slo_attainment");
      if (!a || *a >= worst) continue;
      worst = *a;
      m.detail = fmt::format(
          "{} at concurrency {}{}: {:g} of {:g} requests within {}", StrOf(p, "shape"), NumOf(p, "concurrency"),
          OptNumOf(p, "rate") && *OptNumOf(p, "rate") > 0 ? fmt::format(", {:g} req/s", *OptNumOf(p, "rate")) : "",
          OptNumOf(mt, "good_requests").value_or(0), OptNumOf(mt, "requests").value_or(0),
          ObjOf(mt, "slo").dump(-1, ' ', false, json::error_handler_t::replace));
    }
    if (worst <= 1)
      m.value = worst;
    else
      m.why_missing = "no SLO was given (--slo-ttft-ms, --slo-tpot-ms, --slo-e2el-ms)";
    out.push_back(m);
  }
  {
    MetricValue m{"infer.server-ready", std::nullopt, "", "", ""};
    const json& server = ObjOf(r, "server");
    if (auto s = OptNumOf(server, "ready_s")) {
      m.value = *s;
      m.detail = "from starting the server command to its first answer on /models";
    } else if (auto w = OptNumOf(server, "waited_s"); w && server.contains("error")) {
      // Never ready (it exited, or the wait ran out): a failure, not a missing figure.
      m.value = *w;
      m.fail_reason = "the server never became ready: " + StrOf(server, "error");
    } else {
      m.why_missing = server.contains("error") ? StrOf(server, "error") : "the server was not started by bench infer";
    }
    out.push_back(m);
  }
  return out;
}

std::string RenderInfer(const json& r) {
  const json& target = ObjOf(r, "target");
  std::string out =
      fmt::format("Inference load ({} {} at {}), latencies in ms, throughput in tokens/s\n",
                  util::TerminalSafeText(StrOf(target, "endpoint")), util::TerminalSafeText(StrOf(target, "model")),
                  util::TerminalSafeText(StrOf(target, "url")));
  const json& server = ObjOf(r, "server");
  if (server.contains("ready_s"))
    out += fmt::format("  server ready after {:.1f} s\n", NumOf(server, "ready_s"));
  else if (server.contains("error"))
    out += fmt::format("  server: {}\n", util::TerminalSafeText(StrOf(server, "error")));
  if (r.contains("error")) out += fmt::format("  error: {}\n", util::TerminalSafeText(StrOf(r, "error")));
  out += fmt::format("  {:<9} {:>5} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>6}\n", "shape", "conc", "rate",
                     "done", "TTFT p50", "TTFT p99", "TPOT p50", "ITL p99", "E2EL p99", "out tok/s", "failed");
  const json points = r.is_object() && r.contains("points") && r["points"].is_array() ? r["points"] : json::array();
  for (const auto& p : points) {
    const json& m = ObjOf(p, "metrics");
    auto ms = [&](const char* dist, const char* k) {
      const json& d = ObjOf(m, dist);
      return d.contains(k) && d[k].is_number() ? fmt::format("{:.1f}", d[k].get<double>()) : "-";
    };
    double rate = NumOf(p, "rate");
    out += fmt::format("  {:<9} {:>5} {:>6} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10.1f} {:>6}\n",
                       util::TerminalSafeText(StrOf(p, "shape")), NumOf(p, "concurrency"),
                       rate > 0 ? fmt::format("{:g}", rate) : "max", NumOf(m, "completed"), ms("ttft_ms", "median"),
                       ms("ttft_ms", "p99"), ms("tpot_ms", "median"), ms("itl_ms", "p99"), ms("e2el_ms", "p99"),
                       NumOf(m, "output_throughput"), NumOf(m, "failed"));
    if (m.contains("goodput"))
      out += fmt::format("            goodput {:.3f} req/s, {:.1f} % of requests within the SLOs\n",
                         NumOf(m, "goodput"), 100 * NumOf(m, "slo_attainment"));
    for (const auto& [why, n] : ObjOf(m, "errors").items())
      out += fmt::format("            {} x {}\n", n.dump(), util::TerminalSafeText(why));
  }
  return out;
}

}  // namespace clustermax::bench::infer
