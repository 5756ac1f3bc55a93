#include "store/store.h"

#include <SQLiteCpp/SQLiteCpp.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "rating/rate.h"
#include "util/files.h"
#include "util/time.h"

namespace clustermax::store {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Schema migrations: entry i takes the schema from version i to i + 1.
const std::vector<const char*>& Migrations() {
  static const std::vector<const char*> m = {
      R"sql(
        CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE runs(
          id INTEGER PRIMARY KEY,
          content_key TEXT NOT NULL UNIQUE,
          kind TEXT NOT NULL,
          dir TEXT NOT NULL,
          provider TEXT NOT NULL,
          cluster TEXT NOT NULL,
          target TEXT,
          collected_at TEXT,
          ingested_at TEXT NOT NULL,
          tool_version TEXT,
          nodes INTEGER,
          summary TEXT,
          tier TEXT,
          edition TEXT);
        CREATE INDEX runs_provider ON runs(provider, cluster, ingested_at);
        CREATE TABLE results(
          run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          check_id TEXT NOT NULL, category TEXT, status TEXT, reason TEXT, severity TEXT, message TEXT,
          PRIMARY KEY(run_id, check_id));
        CREATE TABLE node_results(
          run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          check_id TEXT NOT NULL, node TEXT NOT NULL, status TEXT, reason TEXT, message TEXT,
          PRIMARY KEY(run_id, check_id, node));
        CREATE TABLE metrics(
          run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          metric TEXT NOT NULL, verdict TEXT, value REAL, unit TEXT, pass REAL, warn REAL, detail TEXT,
          PRIMARY KEY(run_id, metric));
        CREATE TABLE documents(
          run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
          name TEXT NOT NULL, body TEXT NOT NULL,
          PRIMARY KEY(run_id, name));
      )sql",
  };
  return m;
}

// FNV-1a, 64 bits: a stable content key (the same run ingested twice is stored once).
std::string ContentKey(const std::vector<std::pair<std::string, std::string>>& docs) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const std::string& s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
    h ^= 0xff;
    h *= 1099511628211ull;
  };
  for (const auto& [name, body] : docs) {
    mix(name);
    mix(body);
  }
  return fmt::format("{:016x}", h);
}

std::string Text(const SQLite::Column& c) { return c.isNull() ? std::string() : c.getString(); }
json Nullable(const SQLite::Column& c) {
  if (c.isNull()) return nullptr;
  if (c.isInteger()) return c.getInt64();
  if (c.isFloat()) return c.getDouble();
  return c.getString();
}

int TierRank(const std::string& t) {
  static const std::vector<std::string> order = {"PLATINUM",
                                                 "GOLD",
                                                 "SILVER",
                                                 "BRONZE",
                                                 "PARTICIPATION_RIBBON",
                                                 "UNDERPERFORMING",
                                                 "UNAVAILABLE",
                                                 "INSUFFICIENT_EVIDENCE"};
  for (size_t i = 0; i < order.size(); ++i) {
    if (order[i] == t) return static_cast<int>(i);
  }
  return static_cast<int>(order.size());
}

// Fault injection for the crash test: stop inside the transaction for this long.
void MaybePause() {
  if (const char* p = std::getenv("CLUSTERMAX_TEST_INGEST_PAUSE_MS"); p && *p) {
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(p)));
  }
}

json RunRow(SQLite::Statement& q) {
  return {
      {"id", q.getColumn("id").getInt64()},
      {"kind", Text(q.getColumn("kind"))},
      {"dir", Text(q.getColumn("dir"))},
      {"provider", Text(q.getColumn("provider"))},
      {"cluster", Text(q.getColumn("cluster"))},
      {"target", Nullable(q.getColumn("target"))},
      {"collected_at", Nullable(q.getColumn("collected_at"))},
      {"ingested_at", Text(q.getColumn("ingested_at"))},
      {"tool_version", Nullable(q.getColumn("tool_version"))},
      {"nodes", Nullable(q.getColumn("nodes"))},
      {"summary", q.getColumn("summary").isNull() ? json(nullptr) : json::parse(q.getColumn("summary").getString())},
      {"tier", Nullable(q.getColumn("tier"))},
      {"edition", Nullable(q.getColumn("edition"))}};
}

// file:PATH?mode=ro&immutable=1, the path absolute and percent-encoded where a URI needs it.
std::string ImmutableUri(const fs::path& path) {
  std::string uri = "file:";
  for (unsigned char c : fs::absolute(path).lexically_normal().string()) {
    if (std::isalnum(c) || std::strchr("/-._~", c)) {
      uri += static_cast<char>(c);
    } else {
      uri += fmt::format("%{:02X}", c);
    }
  }
  return uri + "?mode=ro&immutable=1";
}

}  // namespace

fs::path DefaultDbPath() { return util::HomeDir() / ".clustermax" / "results.db"; }

Store::Store(std::unique_ptr<SQLite::Database> db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}
Store::~Store() = default;
Store::Store(Store&&) noexcept = default;
Store& Store::operator=(Store&&) noexcept = default;

Store Store::Open(const fs::path& path) {
  // Two processes opening a fresh file at once can get SQLITE_BUSY from the journal-mode switch,
  // which the busy timeout does not cover: retry the whole setup for up to 15 s.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  for (int attempt = 0;; ++attempt) {
    try {
      if (path.has_parent_path()) fs::create_directories(path.parent_path());
      // A new store is its owner's alone: created here 0600 whatever the umask (SQLite gives its
      // -wal and -shm the database file's mode). An existing file keeps the mode it has.
      if (int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600); fd >= 0) ::close(fd);
      auto db = std::make_unique<SQLite::Database>(path.string(), SQLite::OPEN_READWRITE | SQLite::OPEN_CREATE);
      db->setBusyTimeout(15000);
      db->exec("PRAGMA journal_mode=WAL");
      db->exec("PRAGMA foreign_keys=ON");
      db->exec("PRAGMA synchronous=NORMAL");
      SQLite::Transaction tx(*db, SQLite::TransactionBehavior::IMMEDIATE);
      int version = 0;
      if (db->tableExists("meta")) {
        SQLite::Statement q(*db, "SELECT value FROM meta WHERE key = 'schema_version'");
        if (q.executeStep()) version = std::atoi(q.getColumn(0).getText());
      }
      if (version > kSchemaVersion) {
        throw std::runtime_error(
            fmt::format("{}: schema version {} is newer than this clustermax understands ({}); upgrade clustermax",
                        path.string(), version, kSchemaVersion));
      }
      for (int v = version; v < kSchemaVersion; ++v) db->exec(Migrations()[v]);
      if (version != kSchemaVersion) {
        SQLite::Statement up(*db, "INSERT OR REPLACE INTO meta(key, value) VALUES('schema_version', ?)");
        up.bind(1, std::to_string(kSchemaVersion));
        up.exec();
      }
      tx.commit();
      return Store(std::move(db), path.string());
    } catch (const SQLite::Exception& e) {
      bool busy = (e.getErrorCode() & 0xff) == SQLITE_BUSY || (e.getErrorCode() & 0xff) == SQLITE_LOCKED;
      if (!busy || std::chrono::steady_clock::now() > deadline)
        throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
      std::this_thread::sleep_for(std::chrono::milliseconds(20 + 10 * std::min(attempt, 20)));
    }
  }
}

Store Store::OpenReadOnly(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw std::runtime_error(path.string() + ": no results store here yet (clustermax db ingest RUN_DIR creates it)");
  try {
    // A WAL store is read through the -shm (and -wal) beside it, which a reader creates when they
    // are missing. Where this process cannot write the file or its directory (a read-only mount, a
    // snapshot, someone else's store) and there is no -wal, the file holds every write: it is
    // opened immutable, needing and making no side files. (With a -wal, immutable would not read
    // it; then only a -shm beside it makes the store readable.)
    fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
    bool writable = ::access(path.c_str(), W_OK) == 0 && ::access(dir.c_str(), W_OK) == 0;
    fs::path wal = path.string() + "-wal";
    bool pending = fs::exists(wal, ec) && fs::file_size(wal, ec) > 0;
    if (!writable && pending && !fs::exists(path.string() + "-shm", ec)) {
      throw std::runtime_error(
          fmt::format("{}: cannot be read here: {} holds writes not yet in the database and needs a -shm beside it; "
                      "read it where it is writable, or copy it with its -wal and -shm",
                      path.string(), wal.string()));
    }
    auto db = writable || pending
                  ? std::make_unique<SQLite::Database>(path.string(), SQLite::OPEN_READONLY)
                  : std::make_unique<SQLite::Database>(ImmutableUri(path), SQLite::OPEN_READONLY | SQLite::OPEN_URI);
    db->setBusyTimeout(15000);
    Store s(std::move(db), path.string());
    int v = s.SchemaVersion();
    if (v != kSchemaVersion) {
      throw std::runtime_error(
          fmt::format("{}: schema version {}, this clustermax reads {}; {}", path.string(), v, kSchemaVersion,
                      v < kSchemaVersion ? "the next clustermax db ingest migrates it" : "upgrade clustermax"));
    }
    return s;
  } catch (const SQLite::Exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", path.string(), e.what()));
  }
}

int Store::SchemaVersion() const {
  if (!db_->tableExists("meta")) return 0;
  SQLite::Statement q(*db_, "SELECT value FROM meta WHERE key = 'schema_version'");
  return q.executeStep() ? std::atoi(q.getColumn(0).getText()) : 0;
}

IngestResult Store::Ingest(const fs::path& path, const std::string& provider_flag, const std::string& cluster_flag) {
  // Read and validate everything before the transaction: a bad input writes nothing.
  std::vector<std::pair<std::string, std::string>> docs;
  std::optional<json> report, rating;
  std::vector<json> benches;
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    auto text = util::ReadLocalFile(path);
    if (!text) throw std::runtime_error(path.string() + ": cannot be read");
    rating = util::ParseJsonDocument(*text, path.string());
    if (rating->value("kind", "") != "clustermax.rating") {
      throw std::runtime_error(path.string() + ": not a rating (clustermax rate --out FILE) and not a run directory");
    }
    docs.push_back({"rating.json", *text});
  } else {
    rating::RunInput in = rating::LoadRunDir(path);
    report = in.report;
    benches = in.benches;
    if (report) docs.push_back({"report.json", report->dump()});
    for (const auto& b : benches) docs.push_back({"bench/" + b.value("kind", "bench") + ".json", b.dump()});
  }
  std::string key = ContentKey(docs);
  std::string provider = provider_flag, cluster = cluster_flag;
  if (rating) {
    if (provider.empty() && (*rating)["provider"].is_string()) provider = (*rating)["provider"];
    if (cluster.empty() && (*rating)["cluster"].is_string()) cluster = (*rating)["cluster"];
  }
  if (provider.empty()) provider = "unknown";
  if (cluster.empty() && report && !(*report)["nodes"].empty()) cluster = (*report)["nodes"][0].get<std::string>();
  if (cluster.empty()) cluster = "unknown";

  try {
    SQLite::Transaction tx(*db_, SQLite::TransactionBehavior::IMMEDIATE);
    {
      SQLite::Statement q(*db_, "SELECT id FROM runs WHERE content_key = ?");
      q.bind(1, key);
      if (q.executeStep()) return {q.getColumn(0).getInt64(), true, rating ? "rating" : "run"};
    }
    SQLite::Statement ins(
        *db_,
        "INSERT INTO runs(content_key, kind, dir, provider, cluster, target, collected_at, ingested_at, tool_version, nodes, "
        "summary, tier, edition) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)");
    ins.bind(1, key);
    ins.bind(2, rating ? "rating" : "run");
    ins.bind(3, fs::absolute(path).lexically_normal().string());
    ins.bind(4, provider);
    ins.bind(5, cluster);
    if (report) {
      ins.bind(6, report->value("target", ""));
      ins.bind(7, report->value("collected_at", ""));
      ins.bind(9, (*report)["tool"].value("version", ""));
      ins.bind(10, static_cast<int64_t>((*report)["nodes"].size()));
      ins.bind(11, report->value("summary", json::object()).dump());
    } else if (!benches.empty()) {
      ins.bind(7, benches[0].value("started", ""));
      ins.bind(9, benches[0].value("tool_version", ""));
    } else {
      ins.bind(9, rating->value("tool_version", ""));
      ins.bind(12, rating->value("tier", ""));
      ins.bind(13, rating->value("edition", ""));
      // The mean of the category scores orders providers within a tier.
      json cats = json::object();
      double sum = 0;
      size_t n = 0;
      for (const auto& c : rating->value("categories", json::array())) {
        // A category that is not rated has no score (null), and does not enter the mean.
        json v = c.contains("score") && c["score"].is_number() ? c["score"] : json(nullptr);
        cats[c.value("id", "")] = v;
        if (v.is_number()) {
          sum += v.get<double>();
          ++n;
        }
      }
      ins.bind(11, json({{"score", n ? std::round(sum / n * 1000) / 1000 : 0.0}, {"categories", cats}}).dump());
    }
    ins.bind(8, util::FormatRfc3339(std::chrono::system_clock::now()));
    ins.exec();
    int64_t id = db_->getLastInsertRowid();
    MaybePause();
    if (report) {
      SQLite::Statement r(
          *db_,
          "INSERT INTO results(run_id, check_id, category, status, reason, severity, message) VALUES(?,?,?,?,?,?,?)");
      SQLite::Statement n(
          *db_, "INSERT INTO node_results(run_id, check_id, node, status, reason, message) VALUES(?,?,?,?,?,?)");
      for (const auto& res : (*report)["results"]) {
        r.reset();
        r.bind(1, id);
        r.bind(2, res.value("id", ""));
        r.bind(3, res.value("category", ""));
        r.bind(4, res.value("status", ""));
        r.bind(5, res["reason"].is_string() ? res["reason"].get<std::string>() : "");
        r.bind(6, res["severity"].is_string() ? res["severity"].get<std::string>() : "");
        r.bind(7, res.value("message", ""));
        r.exec();
        for (const auto& nd : res.value("nodes", json::array())) {
          n.reset();
          n.bind(1, id);
          n.bind(2, res.value("id", ""));
          n.bind(3, nd.value("node", ""));
          n.bind(4, nd.value("status", ""));
          n.bind(5, nd["reason"].is_string() ? nd["reason"].get<std::string>() : "");
          n.bind(6, nd.value("message", ""));
          n.exec();
        }
      }
    }
    SQLite::Statement m(
        *db_,
        "INSERT OR REPLACE INTO metrics(run_id, metric, verdict, value, unit, pass, warn, detail) VALUES(?,?,?,?,?,?,?,?)");
    for (const auto& b : benches) {
      for (const auto& g : b.value("grades", json::array())) {
        m.reset();
        m.bind(1, id);
        m.bind(2, g.value("metric", ""));
        m.bind(3, g.value("verdict", ""));
        if (g.contains("value") && g["value"].is_number()) m.bind(4, g["value"].get<double>());
        m.bind(5, g.value("unit", ""));
        if (g.contains("pass") && g["pass"].is_number()) m.bind(6, g["pass"].get<double>());
        if (g.contains("warn") && g["warn"].is_number()) m.bind(7, g["warn"].get<double>());
        m.bind(8, g.contains("detail") ? g["detail"].get<std::string>() : g.value("reason", ""));
        m.exec();
      }
    }
    SQLite::Statement d(*db_, "INSERT INTO documents(run_id, name, body) VALUES(?,?,?)");
    for (const auto& [name, body] : docs) {
      d.reset();
      d.bind(1, id);
      d.bind(2, name);
      d.bind(3, body);
      d.exec();
    }
    tx.commit();
    std::string what = rating ? "rating" : (report ? "audit" : "");
    if (!benches.empty()) what += fmt::format("{}{} benchmark result(s)", what.empty() ? "" : " + ", benches.size());
    return {id, false, what};
  } catch (const SQLite::Exception& e) {
    throw std::runtime_error(
        fmt::format("{}: storing {} failed, nothing was written: {}", path_, path.string(), e.what()));
  }
}

json Store::List(const std::string& provider) const {
  SQLite::Statement q(*db_, std::string("SELECT * FROM runs") + (provider.empty() ? "" : " WHERE provider = ?") +
                                " ORDER BY ingested_at DESC, id DESC");
  if (!provider.empty()) q.bind(1, provider);
  json out = json::array();
  while (q.executeStep()) out.push_back(RunRow(q));
  return out;
}

bool Store::Contains(int64_t id) const {
  SQLite::Statement q(*db_, "SELECT 1 FROM runs WHERE id = ?");
  q.bind(1, id);
  return q.executeStep();
}

json Store::Show(int64_t id) const {
  SQLite::Statement q(*db_, "SELECT * FROM runs WHERE id = ?");
  q.bind(1, id);
  if (!q.executeStep()) return nullptr;
  json run = RunRow(q);
  json results = json::array();
  SQLite::Statement r(
      *db_,
      "SELECT check_id, category, status, reason, severity, message FROM results WHERE run_id = ? ORDER BY rowid");
  r.bind(1, id);
  while (r.executeStep()) {
    results.push_back({{"id", Text(r.getColumn(0))},
                       {"category", Text(r.getColumn(1))},
                       {"status", Text(r.getColumn(2))},
                       {"reason", Text(r.getColumn(3))},
                       {"severity", Text(r.getColumn(4))},
                       {"message", Text(r.getColumn(5))}});
  }
  json metrics = json::array();
  SQLite::Statement m(
      *db_, "SELECT metric, verdict, value, unit, pass, warn, detail FROM metrics WHERE run_id = ? ORDER BY metric");
  m.bind(1, id);
  while (m.executeStep()) {
    metrics.push_back({{"metric", Text(m.getColumn(0))},
                       {"verdict", Text(m.getColumn(1))},
                       {"value", Nullable(m.getColumn(2))},
                       {"unit", Text(m.getColumn(3))},
                       {"pass", Nullable(m.getColumn(4))},
                       {"warn", Nullable(m.getColumn(5))},
                       {"detail", Text(m.getColumn(6))}});
  }
  json docs = json::object();
  SQLite::Statement d(*db_, "SELECT name, body FROM documents WHERE run_id = ? ORDER BY name");
  d.bind(1, id);
  while (d.executeStep()) docs[Text(d.getColumn(0))] = json::parse(d.getColumn(1).getString());
  run["results"] = results;
  run["metrics"] = metrics;
  run["documents"] = docs;
  return run;
}

namespace {

// How bad a verdict is, for the direction of a change: PASS and SKIP 0, WARN 1, FAIL 2.
int Badness(const json& v) {
  std::string s = v.is_string() ? v.get<std::string>() : "";
  return s == "FAIL" ? 2 : s == "WARN" ? 1 : 0;
}

std::string Direction(int from, int to) { return to > from ? "worse" : to < from ? "better" : "changed"; }

}  // namespace

json Store::Diff(int64_t a, int64_t b) const {
  json ra = Show(a), rb = Show(b);
  if (ra.is_null() || rb.is_null())
    throw std::runtime_error(fmt::format("no run {} in {}", ra.is_null() ? a : b, path_));
  if ((ra["kind"] == "rating") != (rb["kind"] == "rating")) {
    throw std::runtime_error(fmt::format("run {} is {} and run {} is {}: db diff compares two runs, or two ratings", a,
                                         ra["kind"] == "rating" ? "a rating" : "a run", b,
                                         rb["kind"] == "rating" ? "a rating" : "a run"));
  }
  // Older first, by collection time (ingest order says nothing about when a run was taken).
  bool swapped = false;
  if (ra["collected_at"].is_string() && rb["collected_at"].is_string() &&
      rb["collected_at"].get<std::string>() < ra["collected_at"].get<std::string>()) {
    std::swap(ra, rb);
    std::swap(a, b);
    swapped = true;
  }
  int regressions = 0;
  std::map<std::string, json> before, after;
  for (const auto& r : ra["results"]) before[r["id"]] = r;
  for (const auto& r : rb["results"]) after[r["id"]] = r;
  json checks = json::array();
  auto change = [&](json c, int from, int to) {
    c["direction"] = Direction(from, to);
    regressions += to > from;
    checks.push_back(std::move(c));
  };
  for (const auto& [id, r] : after) {
    auto it = before.find(id);
    if (it == before.end()) {
      change({{"check", id}, {"from", nullptr}, {"to", r["status"]}, {"message", r["message"]}}, 0,
             Badness(r["status"]));
    } else if (it->second["status"] != r["status"]) {
      change({{"check", id}, {"from", it->second["status"]}, {"to", r["status"]}, {"message", r["message"]}},
             Badness(it->second["status"]), Badness(r["status"]));
    }
  }
  for (const auto& [id, r] : before) {
    if (!after.count(id))
      checks.push_back({{"check", id},
                        {"from", r["status"]},
                        {"to", nullptr},
                        {"message", "not in the second run"},
                        {"direction", "gone"}});
  }
  std::map<std::string, json> mb, ma;
  for (const auto& m : ra["metrics"]) mb[m["metric"]] = m;
  for (const auto& m : rb["metrics"]) ma[m["metric"]] = m;
  json metrics = json::array();
  for (const auto& [id, m] : ma) {
    auto it = mb.find(id);
    json from = it == mb.end() ? json(nullptr) : it->second;
    bool moved = from.is_null() || from["verdict"] != m["verdict"];
    if (!moved && from["value"].is_number() && m["value"].is_number()) {
      double x = from["value"], y = m["value"];
      moved = std::abs(y - x) > 0.01 * std::max(std::abs(x), 1e-12);
    }
    if (moved) {
      int fb = from.is_null() ? 0 : Badness(from["verdict"]), tb = Badness(m["verdict"]);
      regressions += tb > fb;
      metrics.push_back(
          {{"metric", id},
           {"from", from.is_null() ? json(nullptr) : json({{"verdict", from["verdict"]}, {"value", from["value"]}})},
           {"to", {{"verdict", m["verdict"]}, {"value", m["value"]}}},
           {"unit", m["unit"]},
           {"direction", Direction(fb, tb)}});
    }
  }
  for (const auto& [id, m] : mb) {
    if (!ma.count(id)) {
      metrics.push_back({{"metric", id},
                         {"from", {{"verdict", m["verdict"]}, {"value", m["value"]}}},
                         {"to", nullptr},
                         {"unit", m["unit"]},
                         {"direction", "gone"}});
    }
  }
  json out = {{"from",
               {{"id", a},
                {"kind", ra["kind"]},
                {"provider", ra["provider"]},
                {"cluster", ra["cluster"]},
                {"collected_at", ra["collected_at"]}}},
              {"to",
               {{"id", b},
                {"kind", rb["kind"]},
                {"provider", rb["provider"]},
                {"cluster", rb["cluster"]},
                {"collected_at", rb["collected_at"]}}},
              {"ordered_by", "collected_at"},
              {"swapped", swapped},
              {"checks", checks},
              {"metrics", metrics}};
  if (ra["kind"] == "rating") {
    // Two ratings: the tier and every category score.
    auto tier = [](const json& r) { return r["tier"].is_string() ? r["tier"].get<std::string>() : std::string(); };
    json tiers = nullptr;
    if (tier(ra) != tier(rb)) {
      int fr = TierRank(tier(ra)), tr = TierRank(tier(rb));
      regressions += tr > fr;
      tiers = {{"from", ra["tier"]}, {"to", rb["tier"]}, {"direction", Direction(fr, tr)}};
    }
    out["tier"] = tiers;
    json cats = json::array();
    json ca = ra["summary"].is_object() ? ra["summary"].value("categories", json::object()) : json::object();
    json cb = rb["summary"].is_object() ? rb["summary"].value("categories", json::object()) : json::object();
    for (const auto& [id, to] : cb.items()) {
      json from = ca.contains(id) ? ca[id] : json(nullptr);
      if (from == to || (from.is_number() && to.is_number() && std::abs(from.get<double>() - to.get<double>()) < 0.01))
        continue;
      // A score that drops, or a rated category that is no longer rated, is worse.
      bool worse = from.is_number() && (!to.is_number() || to.get<double>() < from.get<double>());
      regressions += worse;
      cats.push_back({{"category", id}, {"from", from}, {"to", to}, {"direction", worse ? "worse" : "better"}});
    }
    out["categories"] = cats;
  }
  out["regressions"] = regressions;
  return out;
}

json Store::Export(const std::vector<int64_t>& ids) const {
  json out = json::array();
  std::vector<int64_t> want = ids;
  if (want.empty()) {
    SQLite::Statement q(*db_, "SELECT id FROM runs ORDER BY id");
    while (q.executeStep()) want.push_back(q.getColumn(0).getInt64());
  }
  for (int64_t id : want) {
    json r = Show(id);
    if (r.is_null()) throw std::runtime_error(fmt::format("no run {} in {}", id, path_));
    out.push_back(std::move(r));
  }
  return {{"kind", "clustermax.store.export"}, {"schema_version", kSchemaVersion}, {"runs", out}};
}

json Store::Leaderboard() const {
  // The newest rating of each provider and cluster.
  SQLite::Statement q(
      *db_,
      "SELECT r.* FROM runs r JOIN (SELECT provider, cluster, MAX(id) AS id FROM runs WHERE kind = 'rating' "
      "GROUP BY provider, cluster) latest ON r.id = latest.id");
  std::vector<json> rows;
  while (q.executeStep()) rows.push_back(RunRow(q));
  std::stable_sort(rows.begin(), rows.end(), [](const json& a, const json& b) {
    int ra = TierRank(a["tier"].is_string() ? a["tier"].get<std::string>() : ""),
        rb = TierRank(b["tier"].is_string() ? b["tier"].get<std::string>() : "");
    if (ra != rb) return ra < rb;
    double sa = a["summary"].is_object() ? a["summary"].value("score", 0.0) : 0.0,
           sb = b["summary"].is_object() ? b["summary"].value("score", 0.0) : 0.0;
    if (sa != sb) return sa > sb;
    return a["provider"].get<std::string>() < b["provider"].get<std::string>();
  });
  return rows;
}

}  // namespace clustermax::store
