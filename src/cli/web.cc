// `clustermax report --html` (one self-contained page) and `clustermax serve` (the same views live).
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <csignal>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "cli/cli.h"
#include "cli/command.h"
#include "cli/http_server.h"
#include "rating/rate.h"
#include "store/store.h"
#include "util/files.h"
#include "util/strings.h"
#include "web/html.h"
#include "web/metrics.h"

namespace clustermax::cli {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string Nav(bool live) {
  return live ? "<a href=\"/\">Leaderboard</a><a href=\"/runs\">Runs</a><a href=\"/api/leaderboard\">JSON</a>"
              : "<a href=\"#leaderboard\">Leaderboard</a><a href=\"#history\">Runs</a>";
}

// The views of one stored run: its audit findings, fleet matrix and benchmark results.
std::string RunBody(const json& run, const std::string& anchor) {
  std::string body;
  const json& docs = run["documents"];
  if (docs.contains("report.json"))
    body += web::Findings(docs["report.json"], anchor) + web::FleetMatrix(docs["report.json"]);
  for (const auto& [name, doc] : docs.items()) {
    if (name.rfind("bench/", 0) == 0) body += web::Benchmark(doc);
  }
  if (docs.contains("rating.json")) body += web::Scorecard(docs["rating.json"]);
  return body;
}

// The whole store on one page: the leaderboard and each latest scorecard, the run history with
// working links, every run in detail (the newest of each provider and cluster open, the others
// folded), and the difference of each run from the one before it. The newest kStaticRuns runs.
constexpr size_t kStaticRuns = 200;

std::string StorePage(const store::Store& s) {
  json runs = s.List();
  if (runs.size() > kStaticRuns) runs.erase(runs.begin() + kStaticRuns, runs.end());
  std::set<int64_t> shown;
  for (const auto& r : runs) shown.insert(r["id"].get<int64_t>());
  std::set<std::pair<int64_t, int64_t>> pairs;
  for (const auto& p : web::DiffPairs(runs)) pairs.insert(p);
  // Links are anchors on this page; a run not on it gets none.
  web::LinkFn link = [&](const std::string& kind, const std::string& arg) -> std::string {
    if (kind == "diff") {
      std::string a = arg;
      std::replace(a.begin(), a.end(), '/', '-');
      return "#diff-" + a;
    }
    auto id = util::ParseInt(arg);
    if (!id || !shown.count(*id)) return "";
    return fmt::format("#{}-{}", kind, *id);
  };
  json board = s.Leaderboard();
  std::string body = web::Leaderboard(board, link);
  std::set<int64_t> rendered;
  for (const auto& r : board) {
    int64_t id = r["id"].get<int64_t>();
    body += fmt::format("<div id=\"rating-{}\">{}</div>", id, RunBody(s.Show(id), fmt::format("findings-{}", id)));
    rendered.insert(id);
  }
  body += web::History(runs, link);
  std::set<std::string> seen;
  for (const auto& r : runs) {
    int64_t id = r["id"].get<int64_t>();
    if (rendered.count(id)) continue;
    std::string key = r["provider"].get<std::string>() + "/" + r["cluster"].get<std::string>();
    bool open = seen.insert(key).second;
    bool rating = r["kind"] == "rating";
    body += fmt::format(
        "<details id=\"{}-{}\" class=\"run\"{}><summary><b>{} / {}: {} {}</b> <span class=\"muted small\">{}</span></summary>{}</details>",
        rating ? "rating" : "run", id, open ? " open" : "", web::Escape(r["provider"].get<std::string>()),
        web::Escape(r["cluster"].get<std::string>()), rating ? "rating" : "run", id,
        web::Escape(r["collected_at"].is_string() ? r["collected_at"].get<std::string>()
                                                  : r["ingested_at"].get<std::string>()),
        RunBody(s.Show(id), fmt::format("findings-{}", id)));
  }
  for (const auto& [a, b] : pairs) body += web::DiffView(s.Diff(a, b), fmt::format("diff-{}-{}", a, b));
  return web::Document("clustermax: leaderboard and runs", body, Nav(false));
}

// --listen HOST:PORT: an IPv4 address or a host name, or an IPv6 address in brackets; the port
// 0-65535 in digits (0: any free port). Throws std::invalid_argument naming the bad part.
struct ListenAddress {
  std::string host;
  int port = 0;
};
ListenAddress ParseListen(const std::string& s) {
  auto bad = [&](const std::string& why) {
    return std::invalid_argument(
        fmt::format("--listen '{}': {} (HOST:PORT, e.g. 127.0.0.1:8470 or [::1]:8470)", s, why));
  };
  ListenAddress a;
  std::string port;
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos) throw bad("no ']' after the IPv6 address");
    if (close + 1 >= s.size() || s[close + 1] != ':') throw bad("no :PORT after ']'");
    a.host = s.substr(1, close - 1);
    port = s.substr(close + 2);
    in6_addr v6{};
    if (inet_pton(AF_INET6, a.host.c_str(), &v6) != 1) throw bad("'" + a.host + "' is not an IPv6 address");
  } else {
    size_t colon = s.rfind(':');
    if (colon == std::string::npos) throw bad("no :PORT");
    a.host = s.substr(0, colon);
    port = s.substr(colon + 1);
    if (a.host.find(':') != std::string::npos) throw bad("an IPv6 address goes in brackets, e.g. [::1]:8470");
    if (a.host.empty()) throw bad("no HOST before the ':'");
    for (unsigned char c : a.host) {
      if (!std::isalnum(c) && c != '.' && c != '-') throw bad("'" + a.host + "' is not an IPv4 address or a host name");
    }
  }
  bool digits = !port.empty() && port.size() <= 5 &&
                std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
  if (!digits || std::stoi(port) > 65535) throw bad("port '" + port + "' is not a number from 0 to 65535");
  a.port = std::stoi(port);
  return a;
}

// Read by the signal handler: a lock-free atomic, and Stop() is one write() to a pipe.
std::atomic<HttpServer*> g_server{nullptr};
static_assert(std::atomic<HttpServer*>::is_always_lock_free);
void StopServer(int) {
  if (HttpServer* s = g_server.load()) s->Stop();
}

struct WebOptions {
  std::string html_out, db_path, listen = "127.0.0.1:8470";
  std::vector<std::string> runs, ratings;
  fs::path Db() const { return db_path.empty() ? store::DefaultDbPath() : fs::path(db_path); }
};

// The named ratings as scorecards, then the named runs' findings, fleet matrix and benchmarks.
std::string RatingsAndRunsPage(const WebOptions& o) {
  std::string body;
  for (const auto& f : o.ratings) {
    auto text = util::ReadLocalFile(f);
    if (!text) throw std::invalid_argument(f + ": no such file");
    json r = util::ParseJsonDocument(*text, f);
    if (r.value("kind", "") != "clustermax.rating")
      throw std::invalid_argument(f + ": not a rating (clustermax rate --out FILE)");
    body += web::Scorecard(r);
  }
  int n = 0;
  for (const auto& d : o.runs) {
    rating::RunInput in = rating::LoadRunDir(d);
    body += fmt::format("<h2>{}</h2>", web::Escape(d));
    if (in.report) body += web::Findings(*in.report, "run-" + std::to_string(n)) + web::FleetMatrix(*in.report);
    for (const auto& b : in.benches) body += web::Benchmark(b);
    ++n;
  }
  return web::Document("clustermax report", body, "");
}

int WriteReport(const WebOptions& o) {
  std::string page =
      o.runs.empty() && o.ratings.empty() ? StorePage(store::Store::OpenReadOnly(o.Db())) : RatingsAndRunsPage(o);
  util::WriteFileAtomic(o.html_out, page);
  std::cerr << fmt::format("wrote {} ({} bytes)\n", o.html_out, page.size());
  return kExitOk;
}

// The dashboard's routes: every page opens the store read-only for its request.
class Dashboard {
 public:
  explicit Dashboard(fs::path db) : db_(std::move(db)) {}
  void Route(HttpServer& svr) const {
    Pages(svr);
    Api(svr);
  }

 private:
  static void Html(HttpResponse& res, const std::string& page) { res.set_content(page, "text/html; charset=utf-8"); }
  static std::string Link(const std::string& kind, const std::string& arg) { return "/" + kind + "/" + arg; }
  static void NotFound(HttpResponse& res) {
    res.status = 404;
    Html(res, web::Document("not found", "<p>No such run.</p>", Nav(true)));
  }
  // A run id from the path; digits too many for one are no run, like any other absent id.
  static int64_t RunId(const std::string& digits) {
    int64_t id = -1;
    if (std::from_chars(digits.data(), digits.data() + digits.size(), id).ec != std::errc()) id = -1;
    return id;
  }
  void WithStore(HttpResponse& res, const std::function<void(const store::Store&)>& f) const {
    try {
      store::Store s = store::Store::OpenReadOnly(db_);
      f(s);
    } catch (const std::exception& e) {
      // The reason (a path, SQLite's message) goes to serve's log, not to whoever asked.
      std::cerr << "clustermax: serve: " << e.what() << "\n";
      res.status = 500;
      res.set_content(
          web::Document("error", "<p>The results store could not be read; the log of clustermax serve says why.</p>",
                        Nav(true)),
          "text/html; charset=utf-8");
    }
  }
  void Pages(HttpServer& svr) const;
  void Api(HttpServer& svr) const;

  fs::path db_;
};

void Dashboard::Pages(HttpServer& svr) const {
  svr.Get("/", [&](const HttpRequest&, HttpResponse& res) {
    WithStore(res, [&](const store::Store& s) {
      Html(res, web::Document("clustermax: leaderboard",
                              web::Leaderboard(s.Leaderboard(), Link) + web::History(s.List(), Link), Nav(true)));
    });
  });
  svr.Get("/runs", [&](const HttpRequest&, HttpResponse& res) {
    WithStore(res, [&](const store::Store& s) {
      Html(res, web::Document("clustermax: runs", web::History(s.List(), Link), Nav(true)));
    });
  });
  auto one = [&](const char* kind) {
    return [&, kind](const HttpRequest& req, HttpResponse& res) {
      WithStore(res, [&](const store::Store& s) {
        json run = s.Show(RunId(req.matches[1]));
        if (run.is_null()) return NotFound(res);
        Html(res, web::Document(fmt::format("clustermax: {} {}", kind, run["id"].get<int64_t>()), RunBody(run, "run"),
                                Nav(true)));
      });
    };
  };
  svr.Get(R"(/run/(\d+))", one("run"));
  svr.Get(R"(/rating/(\d+))", one("rating"));
  svr.Get(R"(/diff/(\d+)/(\d+))", [&](const HttpRequest& req, HttpResponse& res) {
    WithStore(res, [&](const store::Store& s) {
      int64_t a = RunId(req.matches[1]), b = RunId(req.matches[2]);
      if (!s.Contains(a) || !s.Contains(b)) return NotFound(res);
      if ((s.Show(a)["kind"] == "rating") != (s.Show(b)["kind"] == "rating")) {
        res.status = 400;
        return Html(
            res,
            web::Document(
                "not comparable",
                fmt::format("<p>{} and {} are a run and a rating: a diff compares two runs, or two ratings.</p>", a, b),
                Nav(true)));
      }
      Html(res, web::Document("clustermax: diff", web::DiffView(s.Diff(a, b)), Nav(true)));
    });
  });
}

void Dashboard::Api(HttpServer& svr) const {
  svr.Get("/api/leaderboard", [&](const HttpRequest&, HttpResponse& res) {
    WithStore(res, [&](const store::Store& s) {
      json rows = s.Leaderboard();
      for (auto& r : rows) r.erase("dir");  // where a run was ingested from is this machine's business
      res.set_content(util::JsonText(rows, -1), "application/json");
    });
  });
  svr.Get("/metrics", [&](const HttpRequest&, HttpResponse& res) {
    WithStore(res, [&](const store::Store& s) { res.set_content(web::StoreMetrics(s), web::kPrometheusContentType); });
  });
  svr.Get("/healthz", [&](const HttpRequest&, HttpResponse& res) {
    std::string why;
    web::Health h = web::CheckHealth(db_, &why);
    if (!why.empty()) std::cerr << "clustermax: serve: /healthz: " << why << "\n";
    res.status = h.status;
    res.set_content(h.body, "text/plain; charset=utf-8");
  });
}

int Serve(const WebOptions& o) {
  ListenAddress addr = ParseListen(o.listen);
  fs::path db = o.Db();
  { store::Store::OpenReadOnly(db); }  // fails now, with the reason, rather than on the first request
  HttpServer svr;
  Dashboard dashboard(db);  // lives until Run returns: the routes refer to it
  dashboard.Route(svr);
  g_server.store(&svr);
  struct sigaction sa {};
  sa.sa_handler = StopServer;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  if (!svr.Bind(addr.host, addr.port)) {
    g_server.store(nullptr);
    std::cerr << fmt::format(
        "clustermax: cannot listen on {} (the port is in use, or the host is not an address of this machine)\n",
        o.listen);
    return kExitToolError;
  }
  std::cerr << fmt::format("serving {} on http://{}/ (Ctrl-C stops)\n", db.string(), svr.BoundAddress());
  svr.Run();
  g_server.store(nullptr);
  return kExitOk;
}

}  // namespace

void AddWebCommands(CLI::App& app, Commands& table) {
  auto o = std::make_shared<WebOptions>();
  auto* report = app.add_subcommand("report", "Write the dashboard as one self-contained HTML page");
  report->add_option("--html", o->html_out, "Output file")->required();
  report->add_option("runs", o->runs, "Run directories to show (default: everything in the store)");
  report->add_option("--rating", o->ratings, "Rating files (clustermax rate --out) to show as scorecards")
      ->check(CLI::ExistingFile);
  report->add_option("--db", o->db_path, "SQLite store (default ~/.clustermax/results.db)");
  table.Add(report, [o] { return WriteReport(*o); });

  auto* serve =
      app.add_subcommand("serve", "Serve the dashboard from the store (leaderboard, scorecards, runs, diffs)");
  serve->add_option("--db", o->db_path, "SQLite store (default ~/.clustermax/results.db)");
  serve->add_option("--listen", o->listen,
                    "HOST:PORT (default 127.0.0.1:8470; other hosts can reach it only if you say so)");
  table.Add(serve, [o] { return Serve(*o); });
}

}  // namespace clustermax::cli
