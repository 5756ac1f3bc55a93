// `bench infer`: a native load generator for OpenAI-compatible inference servers (vLLM, SGLang,
// TensorRT-LLM, llama.cpp): streaming chat or completions requests at a fixed concurrency or a
// Poisson request rate, and the metrics of vLLM's benchmark_serving computed the same way:
//
//   TTFT  time to first token: from sending the request to the first streamed chunk that carries
//         choices (vLLM's rule, so a chat stream's role-only first chunk counts).
//   ITL   inter-token latency: the gap before each later chunk that carries choices, every gap of
//         every request in one list (a chunk carrying several tokens is one gap, as vLLM counts).
//   E2EL  end-to-end latency: from sending the request to its last data chunk (the usage chunk
//         included, "[DONE]" not).
//   TPOT  time per output token, per request: (E2EL - TTFT) / (output tokens - 1), for requests with
//         more than one output token.
//   Throughput over the run's duration (the first send to the last completion): completed
//         requests/s, output tokens/s, total (input + output) tokens/s, and per GPU when the GPU
//         count is given. A failed request counts no tokens.
//   Goodput: requests/s of the requests that met every SLO given (TTFT, TPOT, E2EL, in ms; a
//         request with one output token has a TPOT of 0, as vLLM scores it).
//   Percentiles are numpy's default (linear interpolation between the closest ranks); std is the
//         population standard deviation (numpy's default, ddof=0).
// Token counts come from the server's usage (stream_options.include_usage) when it sends one; else
// the output is counted as one token per content chunk, and the result says so.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/grade.h"

namespace clustermax::bench::infer {

// ---- the pure parts ----

// Server-sent events as OpenAI-compatible servers stream them: fed the body in any pieces, calls
// `on_data` with the payload of each complete event's data lines ("[DONE]" included). Comments,
// other fields and CRLF line ends are handled; a partial line waits for the next piece. A line
// longer than `max_line` bytes is an error (a stream that never ends a line).
class SseParser {
 public:
  explicit SseParser(size_t max_line = 16u << 20) : max_line_(max_line) {}
  // False once the stream broke the limit; nothing more is delivered then.
  bool Feed(std::string_view piece, const std::function<void(const std::string&)>& on_data);

 private:
  size_t max_line_;
  std::string line_, data_;
  bool has_data_ = false, broken_ = false;
};

// What one streamed chunk says: the output text it carries (chat: choices[0].delta.content or
// reasoning_content; completions: choices[0].text), and the usage when present.
struct StreamChunk {
  std::string text;
  bool has_choices = false;  // a non-empty choices array: a token event in vLLM's counting
  std::optional<long long> prompt_tokens, completion_tokens;
  std::string error;  // an {"error": ...} object in the stream
};
StreamChunk ParseStreamChunk(const nlohmann::json& chunk);

// One request as measured. Times in seconds from the run's start.
struct RequestRecord {
  double start = 0;             // sent
  double ttft = -1;             // the first chunk with choices, after `start`; -1 none
  double e2el = -1;             // the last data chunk, after `start`; -1 failed
  std::vector<double> itl;      // gaps before each later chunk with choices
  long long input_tokens = -1;  // usage; -1 unknown
  long long output_tokens = 0;  // usage, else the chunks that carried text
  bool usage = false;           // the token counts are the server's
  bool ok = false;
  std::string error;
};

struct Slo {
  std::optional<double> ttft_ms, tpot_ms, e2el_ms;
  bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

// numpy.percentile's default (linear): the value at rank q/100 x (n - 1) of the sorted values.
double Percentile(std::vector<double> v, double q);

// One sweep point's metrics from its records (vLLM's definitions above): completed, failed,
// duration_s, request_throughput, output_throughput, total_token_throughput (and *_per_gpu with
// gpus > 0), ttft/tpot/itl/e2el as {mean, median, std, p90, p99, min, max} in ms, goodput and
// slo_attainment when SLOs are given, tokens_from ("usage", "chunks" or "mixed"). Pure.
nlohmann::json SummarizePoint(const std::vector<RequestRecord>& records, double duration_s, const Slo& slo, int gpus);

// Prompts of about `words` words (one word is about one token for the usual tokenizers; the server's
// usage gives the exact count), different per index so no prefix cache serves them. Pure.
std::string SyntheticPrompt(int words, uint64_t index);

// ---- the client ----

struct Target {
  std::string url;  // the API base, e.g. http://host:8000/v1
  std::string model;
  std::string endpoint = "chat";  // chat (/chat/completions) or completions (/completions)
  std::string api_key;            // sent as a bearer token; never printed or saved
  bool ignore_eos = true;         // vLLM/SGLang: generate exactly max_tokens
  double timeout_s = 6 * 3600;    // one request (vLLM's client allows six hours)
};

struct Shape {
  int input = 1024, output = 1024;
  std::string name() const;  // "1k/1k"
};

struct PointPlan {
  Shape shape;
  int concurrency = 1;  // requests in flight at most
  double rate = 0;      // requests/s (Poisson arrivals); 0: as fast as the concurrency allows
  int requests = 32;
  uint64_t seed = 0;
};

// The records as the result keeps them (times in seconds, rounded to the microsecond), for the
// reference check and later analysis; no prompt or output text.
nlohmann::json RecordsJson(const std::vector<RequestRecord>& records);

// GET the API base's /models: the HTTP status (0: no answer) and the first model's id ("" none).
std::pair<long, std::string> ListModels(const Target& t);

// Sends the point's requests and measures each. Throws only when libcurl cannot be loaded.
std::vector<RequestRecord> RunPoint(const Target& t, const PointPlan& p, double* duration_s);

// The metrics and bars (data/bench-thresholds.json "infer.*") of a `bench infer` result.
std::vector<MetricValue> InferMetrics(const nlohmann::json& result);
std::string RenderInfer(const nlohmann::json& result);

}  // namespace clustermax::bench::infer
