// Fuzz target: what the reliability phase reads (src/bench/history.h, drill.h, burnin.h):
// `sacctmgr -P show event` and `sacct -P` text and slurmctld log lines as bench history parses them, and drill, history
// and burn-in results read back, and nodes' Xid documents (--xid) read back and put against the outages. Whatever the
// bytes, availability stays within [0, 1], no figure is NaN, and grading and rendering never throw.
#include <map>

#include <nlohmann/json.hpp>

#include "bench/burnin.h"
#include "bench/drill.h"
#include "bench/history.h"
#include "fuzz_common.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view t = fuzz::AsText(data, size);
  namespace hist = bench::history;
  const double to = 1.8e9, from = to - 30 * 86400.0;
  std::vector<std::string> problems;
  auto events = hist::ParseEvents(t, to, &problems);
  auto jobs = hist::ParseJobs(t, &problems);
  // The same bytes as a slurmctld log, line by line: events never end before they start.
  hist::CtldLogReader log(to);
  size_t start = 0;
  for (size_t i = 0; i <= t.size(); ++i)
    if (i == t.size() || t[i] == '\n') {
      log.Feed(t.substr(start, i - start));
      start = i + 1;
    }
  for (const auto& e : log.Events()) {
    if (!(e.end >= e.start)) __builtin_trap();
    events.push_back(e);
  }
  nlohmann::json s = hist::Summarize(events, jobs, {"n1", "n2"}, from, to);
  if (s.contains("availability")) {
    double a = s["availability"].get<double>();
    if (!(a >= 0 && a <= 1)) __builtin_trap();
  }
  for (const char* k : {"mtbf_node_hours", "failures_per_node_month"})
    if (s.contains(k) && !(s[k].get<double>() == s[k].get<double>())) __builtin_trap();
  hist::RenderHistory(s);
  const nlohmann::json bars = {{"metrics", nlohmann::json::array()}};
  for (const auto& m : hist::HistoryMetrics(s, bars))
    if (m.value && !(*m.value == *m.value)) __builtin_trap();
  auto doc = nlohmann::json::parse(t, nullptr, false);
  if (!doc.is_discarded()) {
    // As a node's Xid document (--xid): bounded, and outages put down to it keep their times.
    std::vector<hist::NodeXids> xids = {hist::NodeXidsOf("n1", doc), hist::NodeXidsOf("n2", doc)};
    for (const auto& x : xids)
      if (x.days.size() > 4000) __builtin_trap();
    hist::AttributeXids(events, xids);
    nlohmann::json xh = hist::XidHistory(xids, from, to);
    if (xh["hardware_events"].get<long>() > xh["events"].get<long>()) __builtin_trap();
    nlohmann::json sx = hist::Summarize(events, jobs, {"n1", "n2"}, from, to);
    sx["xid_history"] = xh;
    hist::RenderHistory(sx);
    hist::RenderHistory(doc);
    hist::HistoryMetrics(doc, doc);
    bench::drill::RenderDrill(doc);
    for (const auto& m : bench::drill::DrillMetrics(doc))
      if (m.value && !(*m.value == *m.value)) __builtin_trap();
    std::map<std::string, nlohmann::json> docs = {{"a", doc}, {"b", doc}};
    nlohmann::json result = {{"summary", bench::burnin::Summarize(docs, {{"c", "lost"}})}, {"options", doc}};
    bench::burnin::RenderBurnIn(result);
    bench::burnin::BurnInMetrics(result);
    bench::burnin::RenderBurnIn(doc);
    bench::burnin::BurnInMetrics(doc);
  }
  return 0;
}
