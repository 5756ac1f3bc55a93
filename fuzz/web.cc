// What `serve` (and `report --html`) does with request-reachable data: every view of web/html.h
// rendered from a fuzzed JSON document, with the links `serve` uses. The route matching and id
// parsing of cli/web.cc are cpp-httplib's regexes plus std::stoll inside a handler that turns every
// std::exception into a 500 page, so the documents the store hands back (see report.cc for the
// store itself) are the input of our own code on the request path.
//
// The document is given to each view as it is, and in the shapes the views are called with
// (a list of runs/leaderboard rows; Show()'s {documents: {report.json, bench/..., rating.json}}).
#include <string>

#include "fuzz_common.h"
#include "util/files.h"
#include "web/html.h"

using namespace clustermax;
using nlohmann::json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text = fuzz::AsText(data, size);
  json doc;
  try {
    doc =
        util::ParseJsonDocument(text, "fuzz input");  // the reader every document from a file or the store goes through
  } catch (const std::exception&) {
    doc = json::value_t::discarded;
  }
  if (doc.is_discarded()) {
    (void)web::Escape(text);
    (void)web::Document(std::string(text.substr(0, 64)), std::string(text), std::string(text.substr(0, 32)));
    return 0;
  }
  auto link = [](const std::string& kind, const std::string& arg) { return "/" + kind + "/" + arg; };
  auto each = [&](auto&& render) {
    try {
      (void)render();
    } catch (const std::exception&) {
    }
  };
  json list = doc.is_array() ? doc : json::array({doc});
  each([&] { return web::Leaderboard(list, link); });
  each([&] { return web::Leaderboard(list, nullptr); });
  each([&] { return web::History(list, link); });
  each([&] { return web::History(list, nullptr); });
  each([&] { return web::Scorecard(doc); });
  each([&] { return web::Findings(doc, "run"); });
  each([&] { return web::FleetMatrix(doc); });
  each([&] { return web::Benchmark(doc); });
  each([&] { return web::DiffView(doc); });
  // Show()'s shape, as cli/web.cc's RunBody walks it.
  if (doc.is_object() && doc.contains("documents") && doc["documents"].is_object()) {
    for (const auto& item : doc["documents"].items()) {
      const std::string name = item.key();  // named copies: clang 14 cannot capture structured bindings
      const json& d = item.value();
      each([&] { return web::Findings(d, name) + web::FleetMatrix(d); });
      each([&] { return web::Benchmark(d); });
      each([&] { return web::Scorecard(d); });
    }
  }
  each([&] { return web::Document("clustermax: fuzz", web::Escape(doc.dump()), ""); });
  return 0;
}
