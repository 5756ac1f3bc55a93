// Fuzz target: what an inference server streams to bench infer (server-sent events, each event's
// JSON chunk) and the result files `rate` and the dashboard read back (src/bench/infer.h). Whatever
// the bytes, the reader delivers bounded events or stops, a chunk never reports a negative token
// count, and grading and rendering a document of any shape neither throw nor pass what is not there.
#include <nlohmann/json.hpp>

#include "bench/infer.h"
#include "fuzz_common.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view t = fuzz::AsText(data, size);
  namespace infer = bench::infer;
  infer::SseParser sse(4096);
  size_t piece = size % 7 + 1;
  for (size_t at = 0; at < t.size(); at += piece) {
    bool ok = sse.Feed(t.substr(at, piece), [](const std::string& payload) {
      if (payload.size() > 4096) __builtin_trap();  // the limit holds for an event's data too
      auto j = nlohmann::json::parse(payload, nullptr, false);
      if (j.is_discarded()) return;
      auto c = infer::ParseStreamChunk(j);
      if ((c.completion_tokens && *c.completion_tokens < 0) || (c.prompt_tokens && *c.prompt_tokens < 0))
        __builtin_trap();
    });
    if (!ok) break;
  }
  auto doc = nlohmann::json::parse(t, nullptr, false);
  if (!doc.is_discarded()) {
    infer::RenderInfer(doc);
    for (const auto& m : infer::InferMetrics(doc))
      if (m.value && !(*m.value == *m.value)) __builtin_trap();  // never NaN
  }
  return 0;
}
