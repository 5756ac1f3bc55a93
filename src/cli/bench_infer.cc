// `clustermax bench infer`: load on an OpenAI-compatible inference server (bench/infer.h), swept
// over input/output shapes and concurrency (doubling) or request rates; optionally starts the
// server command itself and times it to ready. Results in RUN_DIR/bench/infer.json.

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <thread>

#include <fmt/format.h>

#include "bench/grade.h"
#include "bench/infer.h"
#include "cli/bench_common.h"
#include "cli/cli.h"
#include "host/redact.h"
#include "util/cancel.h"
#include "util/files.h"
#include "util/strings.h"
#include "util/time.h"
#include "util/usage_error.h"

namespace clustermax::cli {
using nlohmann::json;
namespace infer = bench::infer;

namespace {

struct InferCli {
  BenchCommon common;
  infer::Target target;
  std::vector<std::string> shapes = {"1k/1k"};
  std::vector<int> concurrency;  // empty: doubling from 1 to max_concurrency
  int max_concurrency = 64;
  std::vector<double> rates;  // non-empty: a Poisson rate sweep, each capped at max_concurrency
  int requests = 0;           // per point; 0: max(8, 4 x concurrency)
  int gpus = 0;
  double slo_ttft = 0, slo_tpot = 0, slo_e2el = 0;
  std::string api_key_env = "OPENAI_API_KEY";
  bool no_ignore_eos = false;
  std::string server_cmd;
  double ready_timeout = 1800;
  uint64_t seed = 0;
};

// "1k/1k", "8192/1024", "128/2k": input and output lengths in tokens.
infer::Shape ParseShape(const std::string& s) {
  auto slash = s.find('/');
  auto len = [&](std::string_view t) {
    std::string v(util::Trim(t));
    int mul = 1;
    if (!v.empty() && (v.back() == 'k' || v.back() == 'K')) mul = 1024, v.pop_back();
    auto n = util::ParseInt(v);
    if (!n || *n < 1 || *n * mul > (1 << 20))
      throw UsageError(fmt::format("--shapes: '{}' is not INPUT/OUTPUT (e.g. 1k/1k)", s));
    return static_cast<int>(*n * mul);
  };
  if (slash == std::string::npos) throw UsageError(fmt::format("--shapes: '{}' is not INPUT/OUTPUT (e.g. 1k/1k)", s));
  return {len(std::string_view(s).substr(0, slash)), len(std::string_view(s).substr(slash + 1))};
}

// The server the user asked us to start: its own process group, stdin from /dev/null, its output
// in a private temporary file (its tail explains a server that never became ready), stopped with
// the whole group (TERM, then KILL for what is left) when the run ends, also when `sh` is gone.
class Server {
 public:
  explicit Server(const std::string& cmd) {
    char path[] = "/tmp/clustermax-infer-server-XXXXXX";
    int log = ::mkstemp(path);  // 0600
    if (log >= 0) log_ = path;
    pid_ = ::fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      ::setpgid(0, 0);
      int in = ::open("/dev/null", O_RDONLY);
      if (in >= 0) ::dup2(in, 0);
      int out = log >= 0 ? log : ::open("/dev/null", O_WRONLY);
      if (out >= 0) {
        ::dup2(out, 1);
        ::dup2(out, 2);
      }
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    if (log >= 0) ::close(log);
    ::setpgid(pid_, pid_);
  }
  ~Server() {
    Stop();
    if (!log_.empty()) ::unlink(log_.c_str());
  }
  // The command's shell has exited (its exit status in *status); the group may live on.
  bool Exited(int* status) {
    if (!reaped_ && ::waitpid(pid_, status, WNOHANG) == pid_) reaped_ = true;
    return reaped_;
  }
  // The last bytes the server printed, made safe to show.
  std::string Tail() const {
    auto text = util::ReadLocalFile(log_, 64u << 20);
    if (!text) return "";
    std::string t = text->size() > 600 ? text->substr(text->size() - 600) : *text;
    return util::TerminalSafeText(util::SanitizeUtf8(t));
  }
  void Stop() {
    if (pid_ <= 0 || stopped_) return;
    stopped_ = true;
    ::kill(-pid_, SIGTERM);
    // The group is gone when no process of it is left to signal.
    for (int i = 0; i < 100 && ::kill(-pid_, 0) == 0; ++i) {
      int st = 0;
      if (!reaped_ && ::waitpid(pid_, &st, WNOHANG) == pid_) reaped_ = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (::kill(-pid_, 0) == 0) ::kill(-pid_, SIGKILL);
    if (!reaped_) ::waitpid(pid_, nullptr, 0);
    reaped_ = true;
  }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false, stopped_ = false;
  std::string log_;
};

// The server command as the result keeps it: secrets out (host::RedactCommandLine's rules, and the
// API key itself wherever it stands).
std::string RedactCommand(const std::string& cmd, const std::string& api_key) {
  std::string out = host::RedactCommandLine(cmd);
  for (size_t at; !api_key.empty() && (at = out.find(api_key)) != std::string::npos;)
    out.replace(at, api_key.size(), host::kRedacted);
  return out;
}

int RunInfer(InferCli& o) {
  CheckBenchOut(o.common, "infer");
  if (o.target.url.rfind("http://", 0) != 0 && o.target.url.rfind("https://", 0) != 0)
    throw UsageError("--url: an http:// or https:// API base, e.g. http://host:8000/v1");
  std::vector<infer::Shape> shapes;
  for (const auto& s : o.shapes) shapes.push_back(ParseShape(s));
  // One thread per request in flight: bounded, as are the requests (a record each).
  constexpr int kMaxConcurrency = 4096;
  if (o.max_concurrency < 1 || o.max_concurrency > kMaxConcurrency)
    throw UsageError(fmt::format("--max-concurrency: from 1 to {}", kMaxConcurrency));
  if (o.concurrency.empty())
    for (int c = 1; c <= o.max_concurrency; c *= 2) o.concurrency.push_back(c);
  for (int c : o.concurrency)
    if (c < 1 || c > kMaxConcurrency) throw UsageError(fmt::format("--concurrency: from 1 to {}", kMaxConcurrency));
  for (double r : o.rates)
    if (!(r >= 1e-6 && r <= 1e6)) throw UsageError("--rates: request rates from 1e-6 to 1e6 per second");
  if (o.requests < 0 || o.requests > 1000000) throw UsageError("--requests: from 1 to 1000000");
  if (!(o.target.timeout_s > 0 && o.target.timeout_s <= 1e6)) throw UsageError("--request-timeout: seconds above 0");
  if (!(o.ready_timeout > 0 && o.ready_timeout <= 1e6)) throw UsageError("--ready-timeout: seconds above 0");
  if (o.gpus < 0) throw UsageError("--gpus: 0 or more");
  // The key comes from the environment only: a command line is visible to every user of the node.
  if (const char* k = std::getenv(o.api_key_env.c_str()); k && *k) o.target.api_key = k;
  o.target.ignore_eos = !o.no_ignore_eos;
  infer::Slo slo;
  if (o.slo_ttft > 0) slo.ttft_ms = o.slo_ttft;
  if (o.slo_tpot > 0) slo.tpot_ms = o.slo_tpot;
  if (o.slo_e2el > 0) slo.e2el_ms = o.slo_e2el;

  auto started = std::chrono::system_clock::now();
  auto t0 = std::chrono::steady_clock::now();
  json result = {{"kind", "clustermax.bench.infer"}, {"schema_version", 1}};
  result["target"] = {{"url", o.target.url}, {"endpoint", o.target.endpoint}, {"ignore_eos", o.target.ignore_eos}};
  // Ctrl-C from here on stops the sweep and the server we started, and keeps what was measured.
  util::InstallCancelHandlers();
  std::unique_ptr<Server> server;
  if (!o.server_cmd.empty()) {
    // Time to ready: from starting the command to its first 200 on /models.
    auto s0 = std::chrono::steady_clock::now();
    server = std::make_unique<Server>(o.server_cmd);
    json sj = {{"command", RedactCommand(o.server_cmd, o.target.api_key)}};
    while (true) {
      int st = 0;
      if (util::Cancelled()) {
        sj["error"] = "interrupted before the server was ready";
        break;
      }
      if (server->Exited(&st)) {
        sj["error"] =
            fmt::format("the server command exited ({}) before it answered", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
        if (std::string tail = server->Tail(); !tail.empty()) sj["output_tail"] = tail;
        break;
      }
      if (infer::ListModels(o.target).first == 200) {
        sj["ready_s"] = bench::RoundTo(std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count(), 3);
        break;
      }
      if (std::chrono::steady_clock::now() - s0 > std::chrono::duration<double>(o.ready_timeout)) {
        sj["error"] = fmt::format("not ready within {} s", o.ready_timeout);
        if (std::string tail = server->Tail(); !tail.empty()) sj["output_tail"] = tail;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
    if (sj.contains("error"))
      sj["waited_s"] = bench::RoundTo(std::chrono::duration<double>(std::chrono::steady_clock::now() - s0).count(), 3);
    result["server"] = sj;
    if (!o.common.quiet)
      std::cerr << (sj.contains("ready_s") ? fmt::format("  server ready after {} s\n", sj["ready_s"].get<double>())
                                           : fmt::format("  server: {}\n", sj.value("error", "")));
  }
  if (o.target.model.empty()) {
    auto [code, id] = infer::ListModels(o.target);
    if (id.empty()) {
      result["error"] = fmt::format("no --model given and {}/models named none (HTTP {})", o.target.url, code);
    }
    o.target.model = id;
  }
  result["target"]["model"] = o.target.model;
  result["options"] = {{"shapes", o.shapes}, {"concurrency", o.concurrency},
                       {"rates", o.rates},   {"requests", o.requests},
                       {"gpus", o.gpus},     {"seed", o.seed}};
  json points = json::array();
  if (!result.contains("error") && !(result.contains("server") && result["server"].contains("error"))) {
    for (const auto& shape : shapes) {
      // A concurrency sweep, or a rate sweep capped at the largest concurrency.
      std::vector<std::pair<int, double>> plan;
      if (o.rates.empty())
        for (int c : o.concurrency) plan.emplace_back(c, 0.0);
      else
        for (double r : o.rates) plan.emplace_back(o.max_concurrency, r);
      for (const auto& [conc, rate] : plan) {
        if (util::Cancelled()) break;
        infer::PointPlan p;
        p.shape = shape;
        p.concurrency = conc;
        p.rate = rate;
        p.requests = o.requests > 0 ? o.requests : std::max(8, 4 * conc);
        p.seed = o.seed + points.size();
        if (!o.common.quiet)
          std::cerr << fmt::format("  {} at concurrency {}{}: {} requests\n", shape.name(), conc,
                                   rate > 0 ? fmt::format(", {:g} req/s", rate) : "", p.requests);
        double dur = 0;
        auto recs = infer::RunPoint(o.target, p, &dur);
        json point = {{"shape", shape.name()}, {"input", shape.input}, {"output", shape.output},
                      {"concurrency", conc},   {"rate", rate},         {"requests", p.requests}};
        point["metrics"] = infer::SummarizePoint(recs, dur, slo, o.gpus);
        point["records"] = infer::RecordsJson(recs);
        points.push_back(std::move(point));
      }
    }
  }
  if (server) server->Stop();
  result["points"] = points;
  result["host"] = util::Hostname();
  result["started"] = util::FormatRfc3339(started);
  result["seconds"] = bench::RoundTo(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 3);
  if (util::Cancelled()) result["interrupted"] = true;  // graded INCOMPLETE, as every bench
  const BenchCommon& c = o.common;
  return FinishBench(std::move(result), c, "infer", infer::RenderInfer,
                     [&c](const json& x) { return bench::Grade(infer::InferMetrics(x), BenchBars(c)); });
}

}  // namespace

void AddInferCommand(CLI::App* parent, Commands& table) {
  auto o = std::make_shared<InferCli>();
  auto* cmd = parent->add_subcommand(
      "infer",
      "Load on an OpenAI-compatible inference server (vLLM, SGLang, TensorRT-LLM, llama.cpp): TTFT, TPOT, ITL, "
      "E2EL and throughput as vLLM's benchmark_serving computes them, swept over shapes and concurrency or rates");
  cmd->add_option("--url", o->target.url, "The API base, e.g. http://host:8000/v1")->required();
  cmd->add_option("--model", o->target.model, "Model name (default: the first of URL/models)");
  cmd->add_option("--endpoint", o->target.endpoint, "chat (/chat/completions) or completions (/completions)")
      ->check(CLI::IsMember({"chat", "completions"}));
  cmd->add_option("--shapes", o->shapes, "INPUT/OUTPUT tokens per request (e.g. 1k/1k,1k/8k,8k/1k)")->delimiter(',');
  cmd->add_option("--concurrency", o->concurrency,
                  "Requests in flight, one point each (default: 1, 2, 4 ... --max-concurrency)")
      ->delimiter(',');
  cmd->add_option("--max-concurrency", o->max_concurrency,
                  "The top of the doubling sweep, and the cap of a rate sweep");
  cmd->add_option("--rates", o->rates,
                  "Request rates per second (Poisson arrivals), one point each, instead of a concurrency sweep")
      ->delimiter(',');
  cmd->add_option("--requests", o->requests, "Requests per point (default: max(8, 4 x concurrency))");
  cmd->add_option("--gpus", o->gpus, "GPUs behind the server: throughput per GPU too");
  cmd->add_option("--slo-ttft-ms", o->slo_ttft, "Goodput SLO: time to first token (ms)");
  cmd->add_option("--slo-tpot-ms", o->slo_tpot, "Goodput SLO: time per output token (ms)");
  cmd->add_option("--slo-e2el-ms", o->slo_e2el, "Goodput SLO: end-to-end latency (ms)");
  cmd->add_option("--api-key-env", o->api_key_env,
                  "Environment variable holding the API key (never on the command line)");
  cmd->add_flag("--no-ignore-eos", o->no_ignore_eos,
                "Do not send ignore_eos/min_tokens (servers that reject them; outputs may then be shorter)");
  cmd->add_option("--request-timeout", o->target.timeout_s, "Seconds per request");
  cmd->add_option(
      "--server-cmd", o->server_cmd,
      "Start the server with this shell command first, time it to ready (URL/models answers 200), stop it after");
  cmd->add_option("--ready-timeout", o->ready_timeout, "Seconds the server may take to become ready");
  cmd->add_option("--seed", o->seed, "Seed of the prompts and arrivals");
  AddBenchCommon(cmd, o->common);
  table.Add(cmd, [o] { return RunInfer(*o); });
}

}  // namespace clustermax::cli
