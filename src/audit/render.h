// The audit report's own formats: terminal text (verbosity 0-3, optional colour) and JSON (schema in
// docs/report-schema.md), built whole or streamed. They live with the report they render, so the
// pipeline (audit/run.*) writes a run directory without reaching up a layer. The exports
// (Prometheus, JUnit, SARIF) read the JSON document and live in report/.
#pragma once
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "audit/engine.h"

namespace clustermax::audit {

struct TextOptions {
  int verbosity = 0;  // 0 summary of non-passing checks; 1 every check with observed/expected/link;
                      // 2 adds references (CVE, advisory) and per-node evidence detail;
                      // 3 adds rationale, reproduce command and remediation
  bool color = false;
};

std::string RenderText(const Report& r, const TextOptions& o);
nlohmann::json ToJson(const Report& r);

// The same bytes as RenderText(r, o) and util::JsonText(ToJson(r)), handed to `out` piece by piece
// without building the document: a 10,000-node fleet report holds a million per-node findings.
using Sink = std::function<void(std::string_view)>;
void WriteText(const Report& r, const TextOptions& o, const Sink& out);
void WriteJson(const Report& r, const Sink& out);

// The writers' buffer: pieces gathered and handed to the sink in writes of about 1 MiB.
class BufferedSink {
 public:
  explicit BufferedSink(const Sink& sink) : sink_(sink) {}
  BufferedSink& operator+=(std::string_view s) {
    buf_.append(s);
    if (buf_.size() >= (1u << 20)) Flush();
    return *this;
  }
  BufferedSink& operator+=(char c) {
    buf_.push_back(c);
    return *this;
  }
  void Flush() {
    if (!buf_.empty()) sink_(buf_);
    buf_.clear();
  }

 private:
  const Sink& sink_;
  std::string buf_;
};

}  // namespace clustermax::audit
