#include "report/junit.h"

#include <map>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "util/strings.h"

namespace clustermax::report {
namespace {

using nlohmann::json;

std::string Str(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_string()) return "";
  return j[key].get<std::string>();
}

// One check on one node.
struct Case {
  const json* result;   // the check (id, category, title)
  const json* finding;  // the node's finding (status, reason, message, observed, expected, details)
};

void Attr(pugi::xml_node n, const char* name, const std::string& v) {
  n.append_attribute(name).set_value(XmlSafeText(v).c_str());
}
void Attr(pugi::xml_node n, const char* name, size_t v) {
  n.append_attribute(name).set_value(std::to_string(v).c_str());
}

void Property(pugi::xml_node props, const std::string& name, const std::string& value) {
  auto p = props.append_child("property");
  Attr(p, "name", name);
  Attr(p, "value", value);
}

// observed / expected / details of a finding, one per line.
std::string Evidence(const json& f) {
  std::string out;
  if (!Str(f, "observed").empty()) out += "observed: " + Str(f, "observed") + "\n";
  if (!Str(f, "expected").empty()) out += "expected: " + Str(f, "expected") + "\n";
  if (f.contains("details") && f["details"].is_array()) {
    for (const auto& d : f["details"]) {
      if (d.is_string()) out += "- " + d.get<std::string>() + "\n";
    }
  }
  return out;
}

}  // namespace

std::string XmlSafeText(std::string_view s, bool keep_newlines) {
  std::string out;
  if (keep_newlines) {
    out = util::TerminalSafeText(s);
  } else {
    out = util::EscapeControls(s);
  }
  // U+FFFE and U+FFFF are not XML characters (EF BF BE, EF BF BF).
  for (size_t i = 0; (i = out.find("\xEF\xBF", i)) != std::string::npos; i += 3) {
    if (i + 2 < out.size() && (out[i + 2] == '\xBE' || out[i + 2] == '\xBF')) out[i + 2] = '\xBD';
  }
  return out;
}

std::string RenderJUnit(const json& r) {
  std::string first_node = "node";
  if (r.contains("nodes") && r["nodes"].is_array() && !r["nodes"].empty() && r["nodes"][0].is_string())
    first_node = r["nodes"][0].get<std::string>();
  // Nodes in order of first appearance, each with its checks in registry order.
  std::vector<std::string> order;
  std::map<std::string, std::vector<Case>> by_node;
  const json results = r.contains("results") && r["results"].is_array() ? r["results"] : json::array();
  for (const auto& res : results) {
    auto add = [&](const std::string& node, const json& f) {
      if (!by_node.count(node)) order.push_back(node);
      by_node[node].push_back({&res, &f});
    };
    if (!res.contains("nodes") || !res["nodes"].is_array() || res["nodes"].empty()) {
      add(first_node, res);
      continue;
    }
    for (const auto& n : res["nodes"]) add(Str(n, "node"), n);
  }

  pugi::xml_document doc;
  auto root = doc.append_child("testsuites");
  size_t all_tests = 0, all_failures = 0, all_skipped = 0;
  Attr(root, "name", std::string("clustermax audit"));
  auto root_tests = root.append_attribute("tests");
  auto root_failures = root.append_attribute("failures");
  Attr(root, "errors", size_t{0});
  auto root_skipped = root.append_attribute("skipped");
  Attr(root, "time", std::string("0"));
  Attr(root, "timestamp", Str(r, "collected_at"));
  size_t id = 0;
  for (const auto& node : order) {
    const auto& cases = by_node[node];
    auto suite = root.append_child("testsuite");
    size_t failures = 0, skipped = 0;
    for (const auto& c : cases) {
      std::string st = Str(*c.finding, "status");
      failures += st == "FAIL";
      skipped += st == "SKIP";
    }
    Attr(suite, "name", node);
    Attr(suite, "id", id++);
    Attr(suite, "package", std::string("clustermax"));
    Attr(suite, "hostname", node);
    Attr(suite, "tests", cases.size());
    Attr(suite, "failures", failures);
    Attr(suite, "errors", size_t{0});
    Attr(suite, "skipped", skipped);
    Attr(suite, "time", std::string("0"));
    Attr(suite, "timestamp", Str(r, "collected_at"));
    auto props = suite.append_child("properties");
    Property(props, "tool_version", Str(r.is_object() && r.contains("tool") ? r["tool"] : json(), "version"));
    Property(props, "target", Str(r, "target"));
    Property(props, "mode", Str(r, "mode"));
    Property(props, "collected_at", Str(r, "collected_at"));
    all_tests += cases.size();
    all_failures += failures;
    all_skipped += skipped;
    for (const auto& c : cases) {
      const json& res = *c.result;
      const json& f = *c.finding;
      std::string st = Str(f, "status"), reason = Str(f, "reason"), message = Str(f, "message");
      auto tc = suite.append_child("testcase");
      Attr(tc, "name", Str(res, "id"));
      Attr(tc, "classname", node + "." + Str(res, "category"));
      Attr(tc, "time", std::string("0"));
      if (st == "FAIL") {
        auto fl = tc.append_child("failure");
        Attr(fl, "message", message);
        std::string sev = Str(f, "severity");
        Attr(fl, "type", sev.empty() ? std::string("FAIL") : sev);
        fl.append_child(pugi::node_pcdata)
            .set_value(XmlSafeText(Str(res, "title") + "\n" + message + "\n" + Evidence(f), true).c_str());
      } else if (st == "SKIP") {
        auto sk = tc.append_child("skipped");
        Attr(sk, "message", reason.empty() ? message : reason + ": " + message);
      } else if (st == "WARN" || !reason.empty()) {
        // A WARN passes the build; what it says travels as properties and output.
        auto tp = tc.append_child("properties");
        Property(tp, "status", st);
        if (!reason.empty()) Property(tp, "reason", reason);
        Property(tp, "message", message);
        if (!Str(f, "observed").empty()) Property(tp, "observed", Str(f, "observed"));
        if (!Str(f, "expected").empty()) Property(tp, "expected", Str(f, "expected"));
        std::string out =
            fmt::format("{}{}: {}\n{}", st, reason.empty() ? "" : " (" + reason + ")", message, Evidence(f));
        tc.append_child("system-out").append_child(pugi::node_pcdata).set_value(XmlSafeText(out, true).c_str());
      }
    }
  }
  root_tests.set_value(std::to_string(all_tests).c_str());
  root_failures.set_value(std::to_string(all_failures).c_str());
  root_skipped.set_value(std::to_string(all_skipped).c_str());
  std::ostringstream os;
  doc.save(os, "  ", pugi::format_default | pugi::format_no_declaration, pugi::encoding_utf8);
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + os.str();
}

}  // namespace clustermax::report
