// Fuzz target: a training run's log as bench train reads it (src/bench/train.h: our script's
// CMAX-TRAIN lines, torchtitan's and Megatron-LM's step lines, srun/torchrun prefixes, ANSI escapes)
// and train and lifecycle result files read back. Whatever the bytes, a step is never below 1, the
// summary and grades neither throw nor produce NaN, and rendering never throws.
#include <nlohmann/json.hpp>

#include "bench/lifecycle.h"
#include "bench/train.h"
#include "fuzz_common.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view t = fuzz::AsText(data, size);
  namespace train = bench::train;
  const char* formats[] = {"clustermax", "torchtitan", "megatron"};
  train::LogReader reader(formats[size % 3]);
  size_t start = 0;
  for (size_t nl; (nl = t.find('\n', start)) != std::string_view::npos; start = nl + 1) {
    auto line = t.substr(start, nl - start);
    for (const char* f : formats) {
      auto e = train::ParseLogLine(line, f);
      if (e && e->kind == "step" && e->step < 1) __builtin_trap();
    }
    reader.Feed(line);
  }
  train::SummaryInputs in;
  in.deterministic = size % 2;
  in.flops_per_token = 1e9;
  nlohmann::json s = train::Summarize(reader.Collected(), in);
  for (const char* k : {"mfu", "tflops_per_gpu", "tokens_per_s_per_gpu"})
    if (s.contains(k) && !(s[k].get<double>() == s[k].get<double>())) __builtin_trap();
  auto doc = nlohmann::json::parse(t, nullptr, false);
  if (!doc.is_discarded()) {
    train::RenderTrain(doc);
    bench::life::RenderLifecycle(doc);
    for (const auto& m : train::TrainMetrics(doc))
      if (m.value && !(*m.value == *m.value)) __builtin_trap();
    for (const auto& m : bench::life::LifecycleMetrics(doc))
      if (m.value && !(*m.value == *m.value)) __builtin_trap();
  }
  return 0;
}
