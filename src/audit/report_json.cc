// The JSON report (schema in docs/report-schema.md): ToJson builds it in memory, WriteJson streams
// the same bytes piece by piece for fleet reports too large to hold twice.
#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "audit/render.h"
#include "util/strings.h"

namespace clustermax::audit {

namespace {
// Fleet audits: coverage, drift, per-node facts and the node-by-check matrix; null otherwise.
nlohmann::json FleetJson(const audit::Report& r) {
  using nlohmann::json;
  if (r.fleet.is_null()) return nullptr;
  json f = r.fleet;
  json matrix = json::array();
  for (const auto& res : r.results) {
    json cells = json::object();
    for (const auto& n : res.nodes) cells[n.node] = core::ToString(n.finding.verdict);
    json row = {{"check", res.info->id}, {"scope", res.info->cluster ? "cluster" : "node"}};
    row["verdicts"] = std::move(cells);
    matrix.push_back(std::move(row));
  }
  f["matrix"] = std::move(matrix);
  return f;
}

// Every member of the report but "fleet" and "results" (the two large ones): one list for
// ToJson and the streaming WriteJson, so the two cannot drift apart.
nlohmann::json ReportHead(const audit::Report& r) {
  return {{"schema_version", audit::kReportSchemaVersion},
          {"tool", {{"name", "clustermax"}, {"version", r.tool_version}, {"git_sha", r.git_sha}}},
          {"mode", r.mode},
          {"collected_at", r.collected_at},
          {"target", core::ToString(r.plan.selection.target)},
          {"profiles", r.plan.selection.profiles.empty() ? std::vector<std::string>{"all"} : r.plan.selection.profiles},
          {"probes", std::vector<std::string>(r.plan.selection.probes.begin(), r.plan.selection.probes.end())},
          {"minimum_table", {{"origin", r.minimums_origin}, {"generated", r.minimums_generated}}},
          {"nodes", r.nodes},
          {"summary",
           {{"checks", r.results.size()},
            {"pass", r.Count(core::Verdict::kPass)},
            {"warn", r.Count(core::Verdict::kWarn)},
            {"fail", r.Count(core::Verdict::kFail)},
            {"skip", r.Count(core::Verdict::kSkip)}}},
          {"replay_misses", r.replay_misses},
          {"not_taken", r.not_taken},
          {"target_detection", r.target_detection}};
}
}  // namespace

nlohmann::json ToJson(const audit::Report& r) {
  using nlohmann::json;
  json results = json::array();
  for (const auto& res : r.results) {
    json j = res.finding;
    j["id"] = res.info->id;
    j["category"] = res.info->category;
    j["title"] = res.info->title;
    j["criterion"] = res.info->criterion.empty() ? json(nullptr) : json(res.info->criterion);
    j["critical"] = res.info->critical;
    j["mode"] = res.info->Mode();
    j["nodes_total"] = res.nodes.size();
    json nodes = json::array();
    for (const auto& n : res.nodes) {
      json nj = n.finding;
      nj["node"] = n.node;
      nodes.push_back(std::move(nj));
    }
    j["nodes"] = std::move(nodes);
    results.push_back(std::move(j));
  }
  // Built without the two large members, which are moved in: a braced list would copy them.
  json out = ReportHead(r);
  out["fleet"] = FleetJson(r);
  out["results"] = std::move(results);
  return out;
}

namespace {
using nlohmann::json;

// Pieces of nlohmann's dump(2) (error_handler replace, as util::JsonText), written as they come:
// the bytes are those of the whole document's dump (FleetJudge.StreamingReportIsByteIdenticalToTheReferenceJudge).
class JsonOut {
 public:
  explicit JsonOut(const Sink& sink) : out_(sink) {}
  void Raw(std::string_view s) { out_ += s; }
  void Flush() { out_.Flush(); }
  // v as dump(2) writes it at `depth`: containers and strings here (a report is mostly arrays of
  // strings: the roll-up details and fleet facts of thousands of nodes), numbers by nlohmann.
  void Value(const json& v, int depth) {
    switch (v.type()) {
      case json::value_t::string:
        Quote(v.get_ref<const std::string&>());
        return;
      case json::value_t::array: {
        if (v.empty()) {
          out_ += "[]";
          return;
        }
        out_ += "[";
        bool first = true;
        for (const auto& e : v) {
          Item(depth + 1, first);
          first = false;
          Value(e, depth + 1);
        }
        Close("]", depth);
        return;
      }
      case json::value_t::object: {
        if (v.empty()) {
          out_ += "{}";
          return;
        }
        out_ += "{";
        bool first = true;
        for (const auto& [k, e] : v.items()) {
          Key(k, depth + 1, first);
          first = false;
          Value(e, depth + 1);
        }
        Close("}", depth);
        return;
      }
      default:
        out_ += v.dump(-1, ' ', false, json::error_handler_t::replace);
    }
  }
  // A JSON string as nlohmann writes it (ensure_ascii off, invalid UTF-8 replaced): copied as is
  // when nothing in it needs an escape, which is nearly always.
  void Quote(const std::string& s) {
    bool plain = std::none_of(s.begin(), s.end(),
                              [](char c) { return c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20; });
    if (plain && util::IsUtf8(s)) {
      out_ += "\"";
      out_ += s;
      out_ += "\"";
    } else {
      out_ += String(s);
    }
  }
  void Spaces(int depth) {
    static const std::string kSpaces(512, ' ');
    for (int n = 2 * depth; n > 0; n -= 512) out_ += std::string_view(kSpaces).substr(0, std::min(n, 512));
  }
  // Before a container's element at `depth`: ",\n" (or "\n" for the first) and the indent.
  void Item(int depth, bool first) {
    out_ += first ? "\n" : ",\n";
    Spaces(depth);
  }
  // Before an object's member: the element's start and "\"key\": ".
  void Key(const std::string& key, int depth, bool first) {
    Item(depth, first);
    Quote(key);
    out_ += ": ";
  }
  // After a non-empty container's elements: its closing bracket on a line of its own at `depth`.
  void Close(std::string_view bracket, int depth) {
    out_ += "\n";
    Spaces(depth);
    out_ += bracket;
  }
  static std::string String(const std::string& s) {
    return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
  }

 private:
  BufferedSink out_;
};

// The members of `head` (an object) in nlohmann's order, with `extra` streamed values put in their
// sorted places: the members of the object at `depth`.
void Members(JsonOut& o, const json& head, const std::map<std::string, std::function<void(int)>>& extra, int depth) {
  std::map<std::string, const json*> keys;
  for (const auto& [k, v] : head.items()) keys[k] = &v;
  std::vector<std::string> order;
  for (const auto& [k, v] : keys) order.push_back(k);
  for (const auto& [k, f] : extra) {
    if (!keys.count(k)) order.push_back(k);
  }
  std::sort(order.begin(), order.end());
  if (order.empty()) {
    o.Raw("{}");
    return;
  }
  o.Raw("{");
  bool first = true;
  for (const auto& k : order) {
    o.Key(k, depth + 1, first);
    first = false;
    if (auto it = extra.find(k); it != extra.end())
      it->second(depth + 1);
    else
      o.Value(*keys[k], depth + 1);
  }
  o.Close("}", depth);
}

// A node's finding object as dumped at `depth`, split around its "node" value: prefix + name + suffix.
struct NodeObject {
  std::string prefix, suffix;
};
NodeObject SplitNodeObject(const core::Finding& f, int depth) {
  json nj = f;
  nj["node"] = "\x01";
  std::string text = nj.dump(2, ' ', false, json::error_handler_t::replace);
  std::string marker = "\"node\": \"\\u0001\"";
  size_t at = text.find(marker);
  NodeObject n;
  auto indent = [&](const std::string& t) {
    std::string s;
    for (char c : t) {
      s.push_back(c);
      if (c == '\n') s.append(2 * depth, ' ');
    }
    return s;
  };
  n.prefix = indent(text.substr(0, at + 8));
  n.suffix = indent(text.substr(at + marker.size()));
  return n;
}

// The quoted names of a check's nodes, computed once per name table.
class NameCache {
 public:
  const std::string& Quoted(const audit::NodeFindings& nodes, size_t i) {
    if (nodes.names() != table_) {
      table_ = nodes.names();
      quoted_.assign(table_ ? table_->size() : 0, std::string());
      done_.assign(quoted_.size(), false);
    }
    uint32_t k = nodes.rows()[i].name;
    if (!done_[k]) {
      quoted_[k] = JsonOut::String((*table_)[k]);
      done_[k] = true;
    }
    return quoted_[k];
  }

 private:
  const std::vector<std::string>* table_ = nullptr;
  std::vector<std::string> quoted_;
  std::vector<bool> done_;
};

void WriteNodes(JsonOut& o, const audit::NodeFindings& nodes, NameCache& names, int depth) {
  if (nodes.empty()) {
    o.Raw("[]");
    return;
  }
  std::vector<std::optional<NodeObject>> objects(nodes.table().size());
  o.Raw("[");
  for (size_t i = 0; i < nodes.size(); ++i) {
    o.Item(depth + 1, i == 0);
    uint32_t f = nodes.rows()[i].finding;
    if (!objects[f]) objects[f] = SplitNodeObject(nodes.table()[f], depth + 1);
    o.Raw(objects[f]->prefix);
    o.Raw(names.Quoted(nodes, i));
    o.Raw(objects[f]->suffix);
  }
  o.Close("]", depth);
}

// The matrix row's verdicts: an object keyed by node name (sorted; a repeated name keeps its last).
// The order is computed once for the checks judged on the same nodes.
std::vector<uint32_t> VerdictKeys(const audit::NodeFindings& nodes);
struct VerdictOrder {
  const std::vector<std::string>* table = nullptr;
  std::vector<uint32_t> names, last;
};
void WriteVerdicts(JsonOut& o, const audit::NodeFindings& nodes, NameCache& names, VerdictOrder& cache, int depth) {
  bool same = cache.table == nodes.names() && cache.names.size() == nodes.size();
  for (size_t i = 0; same && i < nodes.size(); ++i) same = cache.names[i] == nodes.rows()[i].name;
  if (!same) {
    cache.table = nodes.names();
    cache.names.clear();
    for (const auto& row : nodes.rows()) cache.names.push_back(row.name);
    cache.last = VerdictKeys(nodes);
  }
  const std::vector<uint32_t>& last = cache.last;
  if (last.empty()) {
    o.Raw("{}");
    return;
  }
  o.Raw("{");
  for (size_t j = 0; j < last.size(); ++j) {
    o.Item(depth + 1, j == 0);
    o.Raw(names.Quoted(nodes, last[j]));
    o.Raw(": \"");
    o.Raw(core::ToString(nodes[last[j]].finding.verdict));
    o.Raw("\"");
  }
  o.Close("}", depth);
}

std::vector<uint32_t> VerdictKeys(const audit::NodeFindings& nodes) {
  std::vector<uint32_t> order(nodes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return nodes[a].node < nodes[b].node; });
  std::vector<uint32_t> last;
  for (size_t j = 0; j < order.size(); ++j) {
    if (j + 1 < order.size() && nodes[order[j + 1]].node == nodes[order[j]].node) continue;
    last.push_back(order[j]);
  }
  return last;
}
}  // namespace

void WriteJson(const audit::Report& r, const Sink& sink) {
  JsonOut o(sink);
  NameCache names;
  VerdictOrder order;
  json head = ReportHead(r);
  std::map<std::string, std::function<void(int)>> extra;
  extra["fleet"] = [&](int depth) {
    if (r.fleet.is_null()) {
      o.Raw("null");
      return;
    }
    std::map<std::string, std::function<void(int)>> matrix;
    matrix["matrix"] = [&](int d) {
      if (r.results.empty()) {
        o.Raw("[]");
        return;
      }
      o.Raw("[");
      for (size_t i = 0; i < r.results.size(); ++i) {
        const auto& res = r.results[i];
        o.Item(d + 1, i == 0);
        json row = {{"check", res.info->id}, {"scope", res.info->cluster ? "cluster" : "node"}};
        std::map<std::string, std::function<void(int)>> verdicts;
        verdicts["verdicts"] = [&](int dd) { WriteVerdicts(o, res.nodes, names, order, dd); };
        Members(o, row, verdicts, d + 1);
      }
      o.Close("]", d);
    };
    Members(o, r.fleet, matrix, depth);
  };
  extra["results"] = [&](int depth) {
    if (r.results.empty()) {
      o.Raw("[]");
      return;
    }
    o.Raw("[");
    for (size_t i = 0; i < r.results.size(); ++i) {
      const auto& res = r.results[i];
      o.Item(depth + 1, i == 0);
      json j = res.finding;
      j["id"] = res.info->id;
      j["category"] = res.info->category;
      j["title"] = res.info->title;
      j["criterion"] = res.info->criterion.empty() ? json(nullptr) : json(res.info->criterion);
      j["critical"] = res.info->critical;
      j["mode"] = res.info->Mode();
      j["nodes_total"] = res.nodes.size();
      std::map<std::string, std::function<void(int)>> nodes;
      nodes["nodes"] = [&](int d) { WriteNodes(o, res.nodes, names, d); };
      Members(o, j, nodes, depth + 1);
    }
    o.Close("]", depth);
  };
  Members(o, head, extra, 0);
  o.Flush();
}

}  // namespace clustermax::audit
