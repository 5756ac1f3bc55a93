// The exports (docs/exports.md) from a fuzzed JSON document, as a report, a benchmark result and a
// stored run: Prometheus text, JUnit XML and SARIF must never crash, and what they write must stay
// in its format whatever the strings hold: valid UTF-8, no control characters in the Prometheus
// text or the XML (but newline and tab), and XML that pugixml parses.
#include <cstdlib>
#include <string>

#include <pugixml.hpp>

#include "fuzz_common.h"
#include "report/junit.h"
#include "report/prometheus.h"
#include "report/sarif.h"
#include "util/files.h"
#include "util/strings.h"
#include "web/metrics.h"

using namespace clustermax;
using nlohmann::json;

namespace {
void CheckText(const std::string& s) {
  if (!util::IsValidUtf8(s)) std::abort();
  for (unsigned char c : s) {
    if (c < 0x20 && c != '\n' && c != '\t') std::abort();
  }
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  json doc;
  try {
    doc = util::ParseJsonDocument(fuzz::AsText(data, size), "fuzz input");
  } catch (const std::exception&) {
    return 0;
  }
  report::PromOptions o;
  o.base = {{"provider", "p"}};
  o.max_node_series = 3;
  CheckText(report::RenderPrometheus(doc, {doc}, o));
  CheckText(web::MetricsFromRuns(json::array({{{"documents", {{"report.json", doc}, {"bench/x.json", doc}}}}}),
                                 json::array({doc}), 1));
  std::string xml = report::RenderJUnit(doc);
  CheckText(xml);
  pugi::xml_document parsed;
  if (!parsed.load_string(xml.c_str())) std::abort();
  (void)util::JsonText(report::ToSarif(doc));
  return 0;
}
