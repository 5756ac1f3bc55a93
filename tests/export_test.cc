// Exports: Prometheus text, JUnit XML and SARIF 2.1.0 of reports and benchmark results. The pure
// renderers on the recorded report, hostile input and one-finding mutations; then real consumers
// read what the binary writes: promtool (check metrics), a real Prometheus scraping `serve`,
// junit2json (a JUnit XML parser) and ajv-cli with the official SARIF 2.1.0 schema.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <pugixml.hpp>

#include "checks/register.h"
#include "report/junit.h"
#include "report/prometheus.h"
#include "report/sarif.h"
#include "testutil.h"
#include "util/files.h"
#include "util/strings.h"
#include "web/metrics.h"

namespace clustermax::report {
namespace {
namespace fs = std::filesystem;
using clustermax::testing::FreePort;
using clustermax::testing::RunShell;
using nlohmann::json;

// Node names and texts that break naive writers: quotes, backslashes, newlines, control
// characters, invalid UTF-8, XML and label syntax.
const std::string kWeirdNode = "gpu\"01\\x\n}{le=\"1\"} 7 <&>\x01\x1b[2J\xff\xfe end";
using namespace std::string_literals;
const std::string kWeirdText =
    "reason \"quoted\" \\ back\nnew line \x07 bell \x00 nul \xc3\x28 bad <tag>&amp; ]]> \xef\xbf\xbf"s;

json GoldenReport() { return json::parse(clustermax::testing::ReadFixture("../golden/debian12-container-cpu.json")); }
json GpuBench() { return json::parse(clustermax::testing::ReadFixture("gpu/h200-bench-gpu-2026-11-30.json")); }

// The recorded report as a two-node fleet report; the second node has a hostile name, fails every
// check the first passes and carries hostile messages.
json HostileReport() {
  json r = GoldenReport();
  r["nodes"] = {"gpu-node-01", kWeirdNode};
  for (auto& res : r["results"]) {
    json second = res["nodes"][0];
    second["node"] = kWeirdNode;
    if (second["status"] == "PASS") {
      second["status"] = "FAIL";
      second["severity"] = "config";
    }
    second["message"] = kWeirdText;
    second["observed"] = kWeirdText;
    second["details"] = {kWeirdText};
    res["nodes"][0]["node"] = "gpu-node-01";
    res["nodes"].push_back(second);
  }
  return r;
}

size_t CountStatus(const json& r, const std::string& st) {
  size_t n = 0;
  for (const auto& res : r["results"]) {
    for (const auto& nd : res["nodes"]) n += nd["status"] == st;
  }
  return n;
}

// The value of one series (name and labels exactly as written); NaN when it is not there.
double Sample(const std::string& text, const std::string& series) {
  size_t at = text.rfind("\n" + series + " ");
  if (at == std::string::npos) return std::nan("");
  return std::stod(text.substr(at + series.size() + 2));
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t i = 0; (i = text.find(needle, i)) != std::string::npos; i += needle.size()) ++n;
  return n;
}

// The exposition format line by line: HELP and TYPE once per family before its samples, every
// sample `name{label="escaped",...} value`, no series twice, valid UTF-8 only.
void ExpectValidExposition(const std::string& text) {
  ASSERT_TRUE(util::IsValidUtf8(text));
  static const std::regex kSample(
      R"re(([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*")(,[a-zA-Z_][a-zA-Z0-9_]*="([^"\\\n]|\\[\\"n])*")*\})? (-?[0-9.e+-]+|NaN|[+-]Inf))re");
  std::set<std::string> helped, typed, series;
  std::string current;
  for (const auto& line : util::Split(text, '\n')) {
    if (line.rfind("# HELP ", 0) == 0) {
      std::string name = util::Split(line, ' ')[2];
      EXPECT_TRUE(helped.insert(name).second) << "second HELP for " << name;
      current = name;
      continue;
    }
    if (line.rfind("# TYPE ", 0) == 0) {
      auto parts = util::Split(line, ' ');
      EXPECT_TRUE(typed.insert(parts[2]).second) << "second TYPE for " << parts[2];
      EXPECT_EQ(parts[2], current) << "TYPE without its HELP";
      continue;
    }
    std::smatch m;
    ASSERT_TRUE(std::regex_match(line, m, kSample)) << "not a sample line: " << line;
    EXPECT_EQ(m[1].str(), current) << "sample outside its family: " << line;
    std::string key = line.substr(0, line.rfind(' '));
    EXPECT_TRUE(series.insert(key).second) << "duplicate series " << key;
  }
  EXPECT_FALSE(series.empty());
}

TEST(ExportPrometheus, LabelValuesAreEscaped) {
  EXPECT_EQ(PromEscapeLabelValue("plain-node_01.example"), "plain-node_01.example");
  EXPECT_EQ(PromEscapeLabelValue("a\"b"), "a\\\"b");
  EXPECT_EQ(PromEscapeLabelValue("a\\b"), "a\\\\b");
  // A newline or escape character never reaches the output raw: its visible escape, escaped again.
  EXPECT_EQ(PromEscapeLabelValue("a\nb"), "a\\\\nb");
  EXPECT_EQ(PromEscapeLabelValue(std::string("a\x1b"
                                             "b",
                                             3)),
            "a\\\\x1bb");
  EXPECT_EQ(PromEscapeLabelValue("\xff"), "\xef\xbf\xbd");  // invalid UTF-8: U+FFFD
}

TEST(ExportPrometheus, UnitsAreBaseUnits) {
  EXPECT_EQ(PromBaseUnit("GB/s"), std::make_pair(std::string("bytes_per_second"), 1e9));
  EXPECT_EQ(PromBaseUnit("TFLOPS"), std::make_pair(std::string("flops"), 1e12));
  EXPECT_EQ(PromBaseUnit("ms"), std::make_pair(std::string("seconds"), 1e-3));
  EXPECT_EQ(PromBaseUnit("us"), std::make_pair(std::string("seconds"), 1e-6));
  EXPECT_EQ(PromBaseUnit("%"), std::make_pair(std::string("ratio"), 0.01));
  EXPECT_EQ(PromBaseUnit("parsecs").first, "");
}

TEST(ExportPrometheus, EveryCheckStatusOfTheReport) {
  json r = GoldenReport();
  std::string text = RenderPrometheus(r, {});
  ExpectValidExposition(text);
  EXPECT_EQ(Count(text, "\nclustermax_check_status{"), r["results"].size());
  EXPECT_EQ(Count(text, "\nclustermax_check_rollup_status{"), r["results"].size());
  EXPECT_EQ(Sample(text, "clustermax_audit_checks{status=\"FAIL\"}"), r["summary"]["fail"].get<double>());
  EXPECT_NE(text.find("# TYPE clustermax_audit_timestamp_seconds gauge\nclustermax_audit_timestamp_seconds "),
            std::string::npos);
  // A known finding, with its labels in order.
  const json& first = r["results"][0];
  std::string series = "clustermax_check_status{node=\"vm\",check=\"" + first["id"].get<std::string>() +
                       "\",category=\"" + first["category"].get<std::string>() + "\",status=\"" +
                       first["nodes"][0]["status"].get<std::string>() + "\"}";
  EXPECT_EQ(Sample(text, series), 1) << series;
  // Mutation: one finding FAIL -> PASS moves exactly one series from FAIL to PASS.
  size_t fails = Count(text, "status=\"FAIL\"} 1");
  for (auto& res : r["results"]) {
    if (res["nodes"][0]["status"] == "FAIL") {
      res["nodes"][0]["status"] = "PASS";
      break;
    }
  }
  ASSERT_GT(fails, 0u) << "the recorded report has no FAIL";
  EXPECT_EQ(Count(RenderPrometheus(r, {}), "\nclustermax_check_status{node=\"vm\""), r["results"].size());
  std::string mutated = RenderPrometheus(r, {});
  EXPECT_EQ(Count(mutated, "status=\"FAIL\"} 1"), fails - 1);
}

TEST(ExportPrometheus, HostileNodeNamesKeepTheFormat) {
  json r = HostileReport();
  json bench = GpuBench();
  bench["host"] = kWeirdNode;
  std::string text = RenderPrometheus(r, {bench});
  ExpectValidExposition(text);
  EXPECT_EQ(text.find('\x1b'), std::string::npos);
  EXPECT_EQ(text.find('\x01'), std::string::npos);
  EXPECT_EQ(Count(text, "\nclustermax_check_status{"), 2 * r["results"].size());
  EXPECT_EQ(
      Count(
          text,
          "\nclustermax_check_status{node=\"gpu\\\"01\\\\x\\\\n}{le=\\\"1\\\"} 7 <&>\\\\x01\\\\x1b[2J\xef\xbf\xbd\xef\xbf\xbd end\""),
      r["results"].size())
      << text.substr(0, 2000);
}

TEST(ExportPrometheus, DuplicateSeriesAreWrittenOnce) {
  json r = GoldenReport();
  r["results"].push_back(r["results"][0]);  // the same check twice on the same node
  PromWriter w;
  AddAuditMetrics(w, r, {});
  EXPECT_EQ(w.Duplicates(), 2u);  // its node series and its roll-up
  ExpectValidExposition(w.Render());
}

TEST(ExportPrometheus, EveryBenchmarkFigureInBaseUnits) {
  json bench = GpuBench();
  std::string text = RenderPrometheus(nullptr, {bench});
  ExpectValidExposition(text);
  // gpu.gemm.fp64 is 59.54 TFLOPS on the slowest GPU.
  EXPECT_DOUBLE_EQ(Sample(text, "clustermax_bench_grade_flops{node=\"" + bench["host"].get<std::string>() +
                                    "\",suite=\"gpu\",metric=\"gpu.gemm.fp64\"}"),
                   59.54e12);
  EXPECT_EQ(Sample(text, "clustermax_bench_grade_status{node=\"" + bench["host"].get<std::string>() +
                             "\",suite=\"gpu\",metric=\"gpu.gemm.fp64\",status=\"PASS\"}"),
            1);
  EXPECT_NE(text.find("clustermax_bench_grade_pass_threshold_flops{"), std::string::npos);
  EXPECT_NE(text.find("clustermax_gpu_bench_flops{"), std::string::npos);
  EXPECT_EQ(text.find("TFLOPS\""), std::string::npos) << "a unit label where the name has the unit";
  size_t graded = 0;
  for (const auto& g : bench["grades"]) graded += g.contains("value") && g["value"].is_number();
  EXPECT_EQ(Count(text, "\nclustermax_bench_grade_status{"), bench["grades"].size());
  size_t values = 0;
  for (const auto& line : util::Split(text, '\n')) {
    if (line.rfind("clustermax_bench_grade_", 0) == 0 && line.find("_threshold") == std::string::npos &&
        line.find("_status{") == std::string::npos)
      ++values;
  }
  EXPECT_EQ(values, graded);

  json storage = {
      {"kind", "clustermax.bench.storage"},
      {"host", "n1"},
      {"started", "2026-11-30T05:00:00Z"},
      {"seconds", 60},
      {"verdict", "PASS"},
      {"workloads", json::array({{{"id", "seq-read-1m-direct"},
                                  {"bw_bytes_per_s", 6.5e9},
                                  {"iops", 6200},
                                  {"latency", {{"p50_us", 1200}, {"p99_us", 2500}}}}})},
      {"checkpoint", {{"write_gbps_mean", 2.5}, {"read_gbps_mean", 5.0}}},
      {"metadata",
       {{"phases", json::array({{{"id", "create"}, {"ops_per_s", 12000.0}, {"latency", {{"p50_us", 80}}}}})}}},
      {"grades", json::array({{{"metric", "storage.small-file-open"},
                               {"unit", "ms"},
                               {"value", 1.5},
                               {"pass", 2},
                               {"warn", 5},
                               {"verdict", "PASS"}}})}};
  std::string st = RenderPrometheus(nullptr, {storage});
  ExpectValidExposition(st);
  EXPECT_DOUBLE_EQ(
      Sample(
          st,
          "clustermax_storage_workload_throughput_bytes_per_second{node=\"n1\",suite=\"storage\",workload=\"seq-read-1m-direct\"}"),
      6.5e9)
      << st;
  EXPECT_DOUBLE_EQ(
      Sample(
          st,
          "clustermax_storage_workload_operations_per_second{node=\"n1\",suite=\"storage\",workload=\"seq-read-1m-direct\"}"),
      6200);
  EXPECT_DOUBLE_EQ(
      Sample(
          st,
          "clustermax_storage_workload_latency_seconds{node=\"n1\",suite=\"storage\",workload=\"seq-read-1m-direct\",quantile=\"0.99\"}"),
      2500e-6);
  EXPECT_DOUBLE_EQ(
      Sample(
          st,
          "clustermax_storage_checkpoint_throughput_bytes_per_second{node=\"n1\",suite=\"storage\",direction=\"read\"}"),
      5e9);
  EXPECT_DOUBLE_EQ(
      Sample(st, "clustermax_storage_metadata_operations_per_second{node=\"n1\",suite=\"storage\",phase=\"create\"}"),
      12000);
  EXPECT_DOUBLE_EQ(
      Sample(st, "clustermax_bench_grade_seconds{node=\"n1\",suite=\"storage\",metric=\"storage.small-file-open\"}"),
      1.5e-3);
  EXPECT_DOUBLE_EQ(
      Sample(
          st,
          "clustermax_bench_grade_warn_threshold_seconds{node=\"n1\",suite=\"storage\",metric=\"storage.small-file-open\"}"),
      5e-3);
  // Without the detail (serve), only graded figures.
  PromOptions o;
  o.bench_detail = false;
  std::string bounded = RenderPrometheus(nullptr, {storage, bench}, o);
  EXPECT_EQ(bounded.find("clustermax_storage_workload_"), std::string::npos);
  EXPECT_EQ(bounded.find("clustermax_gpu_bench_flops"), std::string::npos);
  EXPECT_NE(bounded.find("clustermax_bench_grade_seconds{"), std::string::npos);
}

TEST(ExportPrometheus, NodeSeriesAreBoundedNonPassFirst) {
  json r = HostileReport();
  PromOptions o;
  o.max_node_series = 10;
  std::string text = RenderPrometheus(r, {}, o);
  ExpectValidExposition(text);
  EXPECT_EQ(Count(text, "\nclustermax_check_status{"), 10u);
  for (const auto& line : util::Split(text, '\n')) {
    if (line.rfind("clustermax_check_status{", 0) == 0)
      EXPECT_EQ(line.find("status=\"PASS\""), std::string::npos) << "a PASS row kept before the others: " << line;
  }
  EXPECT_EQ(Sample(text, "clustermax_export_node_series_omitted"), 2.0 * r["results"].size() - 10);
}

TEST(ExportPrometheus, StoreMetricsCarryProviderAndCluster) {
  json run = {{"id", 3},
              {"provider", "Example \"Cloud\""},
              {"cluster", "h200-lab"},
              {"kind", "run"},
              {"documents", {{"report.json", GoldenReport()}, {"bench/gpu.json", GpuBench()}}}};
  json rating = {{"id", 4},        {"provider", "Example \"Cloud\""}, {"cluster", "h200-lab"}, {"kind", "rating"},
                 {"tier", "GOLD"}, {"summary", {{"score", 0.81}}}};
  std::string text = web::MetricsFromRuns(json::array({run}), json::array({rating}), 2);
  ExpectValidExposition(text);
  EXPECT_NE(text.find("clustermax_check_status{provider=\"Example \\\"Cloud\\\"\",cluster=\"h200-lab\",node=\"vm\","),
            std::string::npos);
  EXPECT_NE(
      text.find("clustermax_rating_tier{provider=\"Example \\\"Cloud\\\"\",cluster=\"h200-lab\",tier=\"GOLD\"} 1\n"),
      std::string::npos);
  EXPECT_EQ(Sample(text, "clustermax_store_runs"), 2);
  EXPECT_EQ(text.find("clustermax_gpu_bench_flops"), std::string::npos) << "serve exports graded figures only";
  EXPECT_NE(text.find("clustermax_bench_grade_flops{provider="), std::string::npos);
}

// ---- JUnit XML ----

struct JUnitCounts {
  size_t tests = 0, failures = 0, skipped = 0, warn_props = 0, suites = 0;
};

JUnitCounts ParseJUnit(const std::string& xml) {
  pugi::xml_document doc;
  auto ok = doc.load_string(xml.c_str());
  EXPECT_TRUE(ok) << ok.description();
  JUnitCounts c;
  auto root = doc.child("testsuites");
  for (auto s : root.children("testsuite")) {
    ++c.suites;
    size_t tests = 0, failures = 0, skipped = 0;
    for (auto tc : s.children("testcase")) {
      ++tests;
      failures += !tc.child("failure").empty();
      skipped += !tc.child("skipped").empty();
      for (auto p : tc.child("properties").children("property"))
        c.warn_props += std::string(p.attribute("value").value()) == "WARN";
    }
    EXPECT_EQ(s.attribute("tests").as_ullong(), tests);
    EXPECT_EQ(s.attribute("failures").as_ullong(), failures);
    EXPECT_EQ(s.attribute("skipped").as_ullong(), skipped);
    c.tests += tests;
    c.failures += failures;
    c.skipped += skipped;
  }
  EXPECT_EQ(root.attribute("tests").as_ullong(), c.tests);
  EXPECT_EQ(root.attribute("failures").as_ullong(), c.failures);
  return c;
}

TEST(ExportJUnit, OneTestcasePerCheckPerNode) {
  json r = GoldenReport();
  std::string xml = RenderJUnit(r);
  JUnitCounts c = ParseJUnit(xml);
  EXPECT_EQ(c.suites, 1u);
  EXPECT_EQ(c.tests, r["results"].size());
  EXPECT_EQ(c.failures, CountStatus(r, "FAIL"));
  EXPECT_EQ(c.skipped, CountStatus(r, "SKIP"));
  EXPECT_EQ(c.warn_props, CountStatus(r, "WARN"));
  EXPECT_NE(xml.find("classname=\"vm.versions\""), std::string::npos);
  // Mutation: one FAIL -> PASS, one failure fewer.
  for (auto& res : r["results"]) {
    if (res["nodes"][0]["status"] == "FAIL") {
      res["nodes"][0]["status"] = "PASS";
      break;
    }
  }
  EXPECT_EQ(ParseJUnit(RenderJUnit(r)).failures, c.failures - 1);
}

TEST(ExportJUnit, HostileTextIsWellFormedXml) {
  json r = HostileReport();
  std::string xml = RenderJUnit(r);
  ASSERT_TRUE(util::IsValidUtf8(xml));
  for (char ch : xml) {
    unsigned char u = static_cast<unsigned char>(ch);
    EXPECT_TRUE(u >= 0x20 || ch == '\n' || ch == '\t') << "control character " << int(u) << " in the XML";
  }
  EXPECT_EQ(xml.find("\xef\xbf\xbf"), std::string::npos);
  JUnitCounts c = ParseJUnit(xml);
  EXPECT_EQ(c.suites, 2u);
  EXPECT_EQ(c.tests, 2 * r["results"].size());
  EXPECT_EQ(c.failures, CountStatus(r, "FAIL"));
  pugi::xml_document doc;
  doc.load_string(xml.c_str());
  std::string second =
      doc.child("testsuites").find_child_by_attribute("testsuite", "id", "1").attribute("name").value();
  EXPECT_EQ(second, util::EscapeControls(kWeirdNode));
}

// ---- SARIF ----

TEST(ExportSarif, ResultsRulesAndLevels) {
  json r = GoldenReport();
  json s = ToSarif(r, &checks::DefaultRegistry());
  EXPECT_EQ(s["version"].get<std::string>(), "2.1.0");
  ASSERT_EQ(s["runs"].size(), 1u);
  const json& run = s["runs"][0];
  EXPECT_EQ(run["tool"]["driver"]["rules"].size(), r["results"].size());
  EXPECT_EQ(run["results"].size(), r["results"].size());
  std::map<std::string, size_t> levels, kinds;
  for (const auto& res : run["results"]) {
    levels[res["level"].get<std::string>()]++;
    kinds[res["kind"].get<std::string>()]++;
    EXPECT_EQ(run["tool"]["driver"]["rules"][res["ruleIndex"].get<size_t>()]["id"], res["ruleId"]);
    EXPECT_EQ(res["locations"][0]["logicalLocations"][0]["name"].get<std::string>(), "vm");
  }
  EXPECT_EQ(levels["error"], CountStatus(r, "FAIL"));
  EXPECT_EQ(levels["warning"], CountStatus(r, "WARN"));
  EXPECT_EQ(kinds["pass"], CountStatus(r, "PASS"));
  EXPECT_EQ(kinds["notApplicable"], CountStatus(r, "SKIP"));
  for (const auto& rule : run["tool"]["driver"]["rules"]) {
    if (rule.contains("helpUri")) EXPECT_EQ(rule["helpUri"].get<std::string>().rfind("http", 0), 0u) << rule;
    EXPECT_NE(rule["help"]["text"].get<std::string>().find("docs/checks.md"), std::string::npos);
  }
  // Mutation: one FAIL -> PASS, one error fewer.
  for (auto& res : r["results"]) {
    if (res["nodes"][0]["status"] == "FAIL") {
      res["nodes"][0]["status"] = "PASS";
      break;
    }
  }
  size_t errors = 0;
  json mutated = ToSarif(r);  // named: a range-for over a temporary's member would outlive it
  for (const auto& res : mutated["runs"][0]["results"]) errors += res["level"] == "error";
  EXPECT_EQ(errors, levels["error"] - 1);
}

TEST(ExportSarif, HostileTextIsValidJson) {
  json s = ToSarif(HostileReport());
  std::string text = util::JsonText(s);
  ASSERT_TRUE(util::IsValidUtf8(text));
  json back = json::parse(text);
  EXPECT_EQ(back["runs"][0]["results"].size(), 2 * GoldenReport()["results"].size());
}

// Documents of the wrong shape (as the store or a hand-edited run directory may hold) are rendered
// as far as they go, never thrown on (serve's /metrics renders whatever the store holds).
TEST(ExportShapes, WrongTypesNeverThrow) {
  std::vector<json> docs = {
      nullptr,
      1,
      "text",
      json::array({1, "x"}),
      json::object(),
      {{"results", "x"}, {"nodes", 3}, {"tool", "t"}, {"summary", json::array()}},
      {{"results", json::array({1, "x", nullptr, {{"id", 5}, {"nodes", "n"}, {"critical", "yes"}}})}},
      {{"results",
        json::array({{{"id", "a"}, {"nodes", json::array({1, {{"node", 7}, {"status", 3}, {"details", "d"}}})}}})}},
      {{"kind", "clustermax.bench.storage"},
       {"grades", json::array({1, {{"metric", 2}, {"value", "v"}}})},
       {"workloads", json::array({1, {{"latency", 5}}})},
       {"checkpoint", 1},
       {"metadata", {{"phases", 1}}}},
      {{"kind", "clustermax.bench.gpu"},
       {"suites",
        {{"gemm", {{"items", json::array({1, {{"gpus", json::array({1, {{"status", "ok"}, {"time_ms", 1}}})}}})}}}}}},
      {{"kind", "clustermax.bench.s3"}, {"transfers", 1}, {"requests", json::array()}}};
  for (const auto& d : docs) {
    EXPECT_NO_THROW({
      std::string prom = RenderPrometheus(d, {d});
      if (!prom.empty()) ExpectValidExposition(prom);
    }) << d.dump();
    EXPECT_NO_THROW(RenderJUnit(d)) << d.dump();
    EXPECT_NO_THROW(ToSarif(d, &checks::DefaultRegistry())) << d.dump();
    EXPECT_NO_THROW(web::MetricsFromRuns(json::array({{{"documents", {{"report.json", d}, {"bench/x.json", d}}}}}),
                                         json::array({d}), 1))
        << d.dump();
  }
}

// ---- The binary and real consumers ----

fs::path Scratch(const std::string& name) {
  fs::path d = fs::path(CLUSTERMAX_BUILD_DIR) / "test-scratch" / ("export-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A run directory: the hostile report and the H200 benchmark.
fs::path MakeRun(const fs::path& d, const json& report) {
  fs::create_directories(d / "run" / "bench");
  std::ofstream(d / "run" / "report.json") << util::JsonText(report);
  std::ofstream(d / "run" / "bench" / "gpu.json")
      << clustermax::testing::ReadFixture("gpu/h200-bench-gpu-2026-11-30.json");
  return d / "run";
}

fs::path Consumers() { return clustermax::testing::SourceDir() / ".cache" / "export-consumers"; }

bool Have(const std::string& tool) { return RunShell("command -v " + tool + " >/dev/null 2>&1").code == 0; }

TEST(ExportTools, TextfileIsAtomicAndReadable) {
  fs::path d = Scratch("textfile");
  fs::path run = MakeRun(d, GoldenReport());
  std::string cli = CLUSTERMAX_BINARY;
  auto bad = RunShell(cli + " export " + run.string() + " --textfile " + (d / "clustermax.txt").string());
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.out.find(".prom"), std::string::npos) << bad.out;
  auto ok =
      RunShell(cli + " export " + run.string() + " --textfile " + (d / "clustermax.prom").string() + " >/dev/null");
  ASSERT_EQ(ok.code, 0) << ok.out;
  struct stat st {};
  ASSERT_EQ(::stat((d / "clustermax.prom").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(d)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u) << "a temporary file was left beside the textfile";
  ExpectValidExposition(*util::ReadLocalFile(d / "clustermax.prom"));
  fs::remove_all(d);
}

TEST(ExportTools, PromtoolAcceptsTheOutput) {
  if (!Have("promtool"))
    GTEST_SKIP() << "promtool is not installed (Debian package prometheus; scripts/install-deps.sh installs it)";
  fs::path d = Scratch("promtool");
  fs::path run = MakeRun(d, HostileReport());
  std::string cli = CLUSTERMAX_BINARY;
  auto out = RunShell(cli + " export " + run.string() + " --format prometheus > " + (d / "m.prom").string() + " 2>&1");
  ASSERT_EQ(out.code, 0) << util::ReadLocalFile(d / "m.prom").value_or("");
  auto check = RunShell("promtool check metrics < " + (d / "m.prom").string());
  EXPECT_EQ(check.code, 0) << check.out;
  // The audit itself with --format prometheus, replaying the recorded bundle renamed to a hostile
  // host name (quotes, backslash, newline, escape sequence, bidi override; JSON cannot carry
  // invalid UTF-8), and the same audit as JUnit XML.
  json bundle = json::parse(clustermax::testing::ReadFixture("bundles/debian12-container-cpu.json"));
  bundle["manifest"]["hostname"] = "gpu\"01\\x\n}{le=\"1\"} 7 <&>\x01\x1b[2J \u202e end";
  std::ofstream(d / "hostile-bundle.json") << bundle.dump();
  std::string replay = cli + " audit --replay " + (d / "hostile-bundle.json").string() + " --exit-zero ";
  auto audit = RunShell(replay + "--format prometheus > " + (d / "audit.prom").string() + " 2>/dev/null");
  ASSERT_EQ(audit.code, 0) << audit.out;
  std::string prom = util::ReadLocalFile(d / "audit.prom").value_or("");
  EXPECT_NE(
      prom.find(
          "clustermax_check_status{node=\"gpu\\\"01\\\\x\\\\n}{le=\\\"1\\\"} 7 <&>\\\\x01\\\\x1b[2J \\\\u202e end\",check="),
      std::string::npos)
      << prom.substr(0, 3000);
  auto check_audit = RunShell("promtool check metrics < " + (d / "audit.prom").string());
  EXPECT_EQ(check_audit.code, 0) << check_audit.out;
  auto junit = RunShell(replay + "--format junit 2>/dev/null");
  pugi::xml_document doc;
  EXPECT_TRUE(doc.load_string(junit.out.c_str())) << junit.out.substr(0, 2000);
  EXPECT_EQ(std::string(doc.child("testsuites").child("testsuite").attribute("name").value()),
            "gpu\"01\\x\\n}{le=\"1\"} 7 <&>\\x01\\x1b[2J \\u202e end");
  fs::remove_all(d);
}

TEST(ExportTools, JUnitParserReadsTheReport) {
  fs::path bin = Consumers() / "node_modules" / ".bin" / "junit2json";
  if (!fs::exists(bin)) GTEST_SKIP() << "junit2json is not installed: run scripts/export-consumers.sh install";
  fs::path d = Scratch("junit");
  json r = HostileReport();
  fs::path run = MakeRun(d, r);
  std::string cli = CLUSTERMAX_BINARY;
  ASSERT_EQ(RunShell(cli + " export " + run.string() + " --format junit -o " + (d / "junit.xml").string()).code, 0);
  auto parsed = RunShell(bin.string() + " " + (d / "junit.xml").string() + " 2>/dev/null");
  ASSERT_EQ(parsed.code, 0) << parsed.out;
  json j = json::parse(parsed.out);
  // junit2json: attributes as members (numbers converted), children as arrays.
  ASSERT_TRUE(j.contains("testsuite")) << parsed.out.substr(0, 500);
  EXPECT_EQ(j["tests"].get<size_t>(), 2 * r["results"].size());
  EXPECT_EQ(j["failures"].get<size_t>(), CountStatus(r, "FAIL"));
  EXPECT_EQ(j["skipped"].get<size_t>(), CountStatus(r, "SKIP"));
  ASSERT_EQ(j["testsuite"].size(), 2u);
  size_t failures = 0, skipped = 0, warns = 0;
  for (const auto& s : j["testsuite"]) {
    for (const auto& tc : s["testcase"]) {
      failures += tc.contains("failure");
      skipped += tc.contains("skipped");
      if (tc.contains("properties")) {
        for (const auto& p : tc["properties"]) warns += p["name"] == "status" && p["value"] == "WARN";
        EXPECT_TRUE(tc.contains("system-out")) << tc.dump();
      }
    }
  }
  EXPECT_EQ(warns, CountStatus(r, "WARN"));
  EXPECT_EQ(failures, CountStatus(r, "FAIL"));
  EXPECT_EQ(skipped, CountStatus(r, "SKIP"));
  // A known check: the first check on the first node, with its classname.
  const json& tc0 = j["testsuite"][0]["testcase"][0];
  EXPECT_EQ(tc0["name"], r["results"][0]["id"]);
  EXPECT_EQ(tc0["classname"].get<std::string>(), "gpu-node-01." + r["results"][0]["category"].get<std::string>());
  EXPECT_EQ(j["testsuite"][1]["name"].get<std::string>(), util::EscapeControls(kWeirdNode));
  fs::remove_all(d);
}

TEST(ExportTools, SarifValidatesAgainstTheOfficialSchema) {
  fs::path ajv = Consumers() / "node_modules" / ".bin" / "ajv";
  fs::path schema = Consumers() / "sarif-schema-2.1.0.json";
  if (!fs::exists(ajv) || !fs::exists(schema))
    GTEST_SKIP() << "ajv-cli or the SARIF schema is missing: run scripts/export-consumers.sh install";
  fs::path d = Scratch("sarif");
  json r = HostileReport();
  fs::path run = MakeRun(d, r);
  std::string cli = CLUSTERMAX_BINARY;
  ASSERT_EQ(RunShell(cli + " export " + run.string() + " --format sarif -o " + (d / "audit.sarif.json").string()).code,
            0);
  std::string validate =
      ajv.string() + " validate --spec=draft7 --strict=false -c ajv-formats -s " + schema.string() + " -d ";
  auto ok = RunShell("cd " + Consumers().string() + " && " + validate + (d / "audit.sarif.json").string());
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("valid"), std::string::npos) << ok.out;
  // The validator is not a rubber stamp: a result with an unknown level is refused.
  json s = json::parse(*util::ReadLocalFile(d / "audit.sarif.json"));
  EXPECT_EQ(s["runs"][0]["results"].size(), 2 * r["results"].size());
  s["runs"][0]["results"][0]["level"] = "fatal";
  std::ofstream(d / "bad.sarif.json") << s.dump();
  auto bad = RunShell("cd " + Consumers().string() + " && " + validate + (d / "bad.sarif.json").string());
  EXPECT_NE(bad.code, 0) << bad.out;
  fs::remove_all(d);
}

namespace scrape {

// A child process (argv), stdout and stderr to `log`; SIGTERM and wait in the destructor.
struct Child {
  Child(std::vector<std::string> args, const fs::path& log) {
    pid = fork();
    if (pid == 0) {
      int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      int st;
      waitpid(pid, &st, 0);
    }
  }
  pid_t pid = -1;
};

// Polls `cmd` (a shell command printing something) until `pred` holds on its output or `seconds` pass.
std::string PollUntil(const std::string& cmd, const std::function<bool(const std::string&)>& pred, double seconds) {
  auto start = std::chrono::steady_clock::now();
  std::string last;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < seconds) {
    last = RunShell(cmd).out;
    if (pred(last)) return last;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return last;
}

}  // namespace scrape

// node_exporter's textfile collector (the consumer --textfile is for) reads the file without error
// and serves the finding.
TEST(ExportTools, NodeExporterReadsTheTextfile) {
  if (!Have("prometheus-node-exporter"))
    GTEST_SKIP() << "prometheus-node-exporter is not installed (scripts/install-deps.sh installs it)";
  fs::path d = Scratch("textfile-collector");
  json r = HostileReport();
  fs::path run = MakeRun(d, r);
  fs::create_directories(d / "textfile");
  std::string cli = CLUSTERMAX_BINARY;
  auto out = RunShell(cli + " export " + run.string() + " --textfile " + (d / "textfile" / "clustermax.prom").string() +
                      " >/dev/null");
  ASSERT_EQ(out.code, 0) << out.out;
  int port = FreePort();
  scrape::Child ne({"prometheus-node-exporter", "--collector.disable-defaults", "--collector.textfile",
                    "--collector.textfile.directory=" + (d / "textfile").string(),
                    "--web.listen-address=127.0.0.1:" + std::to_string(port)},
                   d / "node-exporter.log");
  std::string metrics = scrape::PollUntil(
      "curl -s --max-time 2 http://127.0.0.1:" + std::to_string(port) + "/metrics",
      [](const std::string& o) { return o.find("node_textfile_scrape_error") != std::string::npos; }, 15);
  EXPECT_NE(metrics.find("\nnode_textfile_scrape_error 0\n"), std::string::npos)
      << metrics.substr(0, 3000) << util::ReadLocalFile(d / "node-exporter.log").value_or("");
  // node_exporter sorts the labels by name.
  std::string failing;
  for (const auto& res : r["results"]) {
    if (res["nodes"][0]["status"] == "FAIL") failing = res["id"].get<std::string>();
  }
  ASSERT_FALSE(failing.empty());
  EXPECT_NE(metrics.find("clustermax_check_status{category=\"" + r["results"][0]["category"].get<std::string>()),
            std::string::npos);
  EXPECT_NE(metrics.find("check=\"" + failing + "\",node=\"gpu-node-01\",status=\"FAIL\"} 1\n"), std::string::npos)
      << metrics.substr(0, 3000);
  EXPECT_NE(metrics.find("clustermax_bench_grade_flops{metric=\"gpu.gemm.fp64\""), std::string::npos);
  fs::remove_all(d);
}

// A real Prometheus scrapes `clustermax serve` and answers a query for one finding.
TEST(ExportTools, PrometheusScrapesServeAndAnswersAQuery) {
  if (!Have("prometheus"))
    GTEST_SKIP() << "prometheus is not installed (Debian package prometheus; scripts/install-deps.sh installs it)";
  fs::path d = Scratch("scrape");
  json r = GoldenReport();
  fs::path run = MakeRun(d, r);
  std::string cli = CLUSTERMAX_BINARY;
  fs::path db = d / "r.db";
  auto ingest = RunShell(cli + " db --db " + db.string() +
                         " ingest --provider 'Example \"Cloud\"' --cluster h200-lab " + run.string());
  ASSERT_EQ(ingest.code, 0) << ingest.out;
  std::string failing;
  for (const auto& res : r["results"]) {
    if (res["status"] == "FAIL") {
      failing = res["id"].get<std::string>();
      break;
    }
  }
  ASSERT_FALSE(failing.empty());

  int serve_port = FreePort();
  std::string serve_url = "http://127.0.0.1:" + std::to_string(serve_port);
  scrape::Child serve({cli, "serve", "--db", db.string(), "--listen", "127.0.0.1:" + std::to_string(serve_port)},
                      d / "serve.log");
  std::string health = scrape::PollUntil(
      "curl -s --max-time 2 -w ' %{http_code}' " + serve_url + "/healthz",
      [](const std::string& o) { return o == "ok\n 200"; }, 10);
  ASSERT_EQ(health, "ok\n 200") << util::ReadLocalFile(d / "serve.log").value_or("");
  auto metrics = RunShell("curl -s --max-time 5 -D " + (d / "headers").string() + " " + serve_url + "/metrics > " +
                          (d / "served.prom").string());
  ASSERT_EQ(metrics.code, 0);
  EXPECT_NE(util::ReadLocalFile(d / "headers").value_or("").find("text/plain; version=0.0.4"), std::string::npos);
  ExpectValidExposition(*util::ReadLocalFile(d / "served.prom"));
  if (Have("promtool")) {
    auto check = RunShell("promtool check metrics < " + (d / "served.prom").string());
    EXPECT_EQ(check.code, 0) << check.out;
  }

  int prom_port = FreePort();
  std::string prom_url = "http://127.0.0.1:" + std::to_string(prom_port);
  std::ofstream(d / "prometheus.yml") << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n"
                                         "  - job_name: clustermax\n    static_configs:\n      - targets: ['127.0.0.1:"
                                      << serve_port << "']\n";
  scrape::Child prom(
      {"prometheus", "--config.file=" + (d / "prometheus.yml").string(), "--storage.tsdb.path=" + (d / "tsdb").string(),
       "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
      d / "prometheus.log");
  std::string query = "clustermax_check_status{check=\"" + failing + "\",status=\"FAIL\"}";
  std::string cmd =
      "curl -s --max-time 2 -G " + prom_url + "/api/v1/query --data-urlencode " + util::ShellQuote("query=" + query);
  std::string answer = scrape::PollUntil(
      cmd, [](const std::string& o) { return o.find("\"result\":[{") != std::string::npos; }, 30);
  ASSERT_NE(answer.find("\"result\":[{"), std::string::npos)
      << answer << "\n"
      << util::ReadLocalFile(d / "prometheus.log").value_or("").substr(0, 3000);
  json a = json::parse(answer);
  ASSERT_EQ(a["data"]["result"].size(), 1u) << answer;
  const json& series = a["data"]["result"][0];
  EXPECT_EQ(series["metric"]["node"].get<std::string>(), "vm");
  EXPECT_EQ(series["metric"]["provider"].get<std::string>(), "Example \"Cloud\"");
  EXPECT_EQ(series["metric"]["cluster"].get<std::string>(), "h200-lab");
  EXPECT_EQ(series["metric"]["job"].get<std::string>(), "clustermax");
  EXPECT_EQ(series["value"][1].get<std::string>(), "1");
  // The roll-up count of FAILs from the same scrape.
  std::string count = RunShell("curl -s --max-time 2 -G " + prom_url + "/api/v1/query --data-urlencode " +
                               util::ShellQuote("query=clustermax_audit_checks{status=\"FAIL\"}"))
                          .out;
  EXPECT_NE(count.find("\"" + std::to_string(r["summary"]["fail"].get<int>()) + "\"]"), std::string::npos) << count;

  // /healthz is 503 once the store cannot be opened.
  fs::remove(db);
  std::ofstream(db) << "not a database";
  auto down = RunShell("curl -s --max-time 5 -w ' %{http_code}' " + serve_url + "/healthz");
  EXPECT_EQ(down.out.substr(down.out.size() - 3), "503") << down.out;
  fs::remove_all(d);
}

}  // namespace
}  // namespace clustermax::report
