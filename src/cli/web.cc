#include "cli/web.h"

#include <csignal>
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <httplib.h>

#include "cli/cli.h"
#include "rating/rate.h"
#include "store/store.h"
#include "util/files.h"
#include "web/html.h"

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
  if (docs.contains("report.json")) body += web::Findings(docs["report.json"], anchor) + web::FleetMatrix(docs["report.json"]);
  for (const auto& [name, doc] : docs.items()) {
    if (name.rfind("bench/", 0) == 0) body += web::Benchmark(doc);
  }
  if (docs.contains("rating.json")) body += web::Scorecard(docs["rating.json"]);
  return body;
}

// The whole store on one page: leaderboard, every latest scorecard, the run history, and the
// newest run of each provider and cluster.
std::string StorePage(const store::Store& s) {
  json board = s.Leaderboard();
  std::string body = web::Leaderboard(board, nullptr);
  for (const auto& r : board) body += RunBody(s.Show(r["id"].get<int64_t>()), "rating-" + std::to_string(r["id"].get<int64_t>()));
  json runs = s.List();
  body += web::History(runs, nullptr);
  std::map<std::string, bool> seen;
  for (const auto& r : runs) {
    std::string key = r["provider"].get<std::string>() + "/" + r["cluster"].get<std::string>();
    if (r["kind"] != "run" || seen[key]) continue;
    seen[key] = true;
    body += fmt::format("<h2>{} / {}: run {}</h2>", web::Escape(r["provider"].get<std::string>()), web::Escape(r["cluster"].get<std::string>()),
                        r["id"].get<int64_t>());
    body += RunBody(s.Show(r["id"].get<int64_t>()), "run-" + std::to_string(r["id"].get<int64_t>()));
  }
  return web::Document("clustermax: leaderboard and runs", body, Nav(false));
}

httplib::Server* g_server = nullptr;
void StopServer(int) {
  if (g_server) g_server->stop();
}

}  // namespace

void AddWebCommands(CLI::App& app, WebCommands& w) {
  static std::string html_out, db_path, listen = "127.0.0.1:8470";
  static std::vector<std::string> runs, ratings;
  auto* report = app.add_subcommand("report", "Write the dashboard as one self-contained HTML page");
  report->add_option("--html", html_out, "Output file")->required();
  report->add_option("runs", runs, "Run directories to show (default: everything in the store)");
  report->add_option("--rating", ratings, "Rating files (clustermax rate --out) to show as scorecards")->check(CLI::ExistingFile);
  report->add_option("--db", db_path, "SQLite store (default ~/.clustermax/results.db)");
  w.report = report;
  w.run_report = []() -> int {
    std::string page;
    if (runs.empty() && ratings.empty()) {
      store::Store s = store::Store::OpenReadOnly(db_path.empty() ? store::DefaultDbPath() : fs::path(db_path));
      page = StorePage(s);
    } else {
      std::string body;
      for (const auto& f : ratings) {
        json r = json::parse(*util::ReadLocalFile(f));
        if (r.value("kind", "") != "clustermax.rating") throw std::invalid_argument(f + ": not a rating (clustermax rate --out FILE)");
        body += web::Scorecard(r);
      }
      int n = 0;
      for (const auto& d : runs) {
        rating::RunInput in = rating::LoadRunDir(d);
        body += fmt::format("<h2>{}</h2>", web::Escape(d));
        if (in.report) body += web::Findings(*in.report, "run-" + std::to_string(n)) + web::FleetMatrix(*in.report);
        for (const auto& b : in.benches) body += web::Benchmark(b);
        ++n;
      }
      page = web::Document("clustermax report", body, "");
    }
    util::WriteFileAtomic(html_out, page);
    std::cerr << fmt::format("wrote {} ({} bytes)\n", html_out, page.size());
    return kExitOk;
  };

  auto* serve = app.add_subcommand("serve", "Serve the dashboard from the store (leaderboard, scorecards, runs, diffs)");
  serve->add_option("--db", db_path, "SQLite store (default ~/.clustermax/results.db)");
  serve->add_option("--listen", listen, "HOST:PORT (default 127.0.0.1:8470; other hosts can reach it only if you say so)");
  w.serve = serve;
  w.run_serve = []() -> int {
    fs::path db = db_path.empty() ? store::DefaultDbPath() : fs::path(db_path);
    { store::Store::OpenReadOnly(db); }  // fails now, with the reason, rather than on the first request
    size_t colon = listen.rfind(':');
    if (colon == std::string::npos) throw std::invalid_argument("--listen takes HOST:PORT, e.g. 127.0.0.1:8470");
    std::string host = listen.substr(0, colon);
    int port = std::stoi(listen.substr(colon + 1));
    httplib::Server svr;
    auto html = [](httplib::Response& res, const std::string& page) { res.set_content(page, "text/html; charset=utf-8"); };
    auto link = [](const std::string& kind, const std::string& arg) { return "/" + kind + "/" + arg; };
    auto with_store = [db](httplib::Response& res, const std::function<void(const store::Store&)>& f) {
      try {
        store::Store s = store::Store::OpenReadOnly(db);
        f(s);
      } catch (const std::exception& e) {
        res.status = 500;
        res.set_content(web::Document("error", "<p>" + web::Escape(e.what()) + "</p>", Nav(true)), "text/html; charset=utf-8");
      }
    };
    svr.Get("/", [&](const httplib::Request&, httplib::Response& res) {
      with_store(res, [&](const store::Store& s) {
        html(res, web::Document("clustermax: leaderboard", web::Leaderboard(s.Leaderboard(), link) + web::History(s.List(), link), Nav(true)));
      });
    });
    svr.Get("/runs", [&](const httplib::Request&, httplib::Response& res) {
      with_store(res, [&](const store::Store& s) { html(res, web::Document("clustermax: runs", web::History(s.List(), link), Nav(true))); });
    });
    auto one = [&](const char* kind) {
      return [&, kind](const httplib::Request& req, httplib::Response& res) {
        with_store(res, [&](const store::Store& s) {
          json run = s.Show(std::stoll(req.matches[1]));
          if (run.is_null()) {
            res.status = 404;
            html(res, web::Document("not found", "<p>No such run.</p>", Nav(true)));
            return;
          }
          html(res, web::Document(fmt::format("clustermax: {} {}", kind, run["id"].get<int64_t>()), RunBody(run, "run"), Nav(true)));
        });
      };
    };
    svr.Get(R"(/run/(\d+))", one("run"));
    svr.Get(R"(/rating/(\d+))", one("rating"));
    svr.Get(R"(/diff/(\d+)/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
      with_store(res, [&](const store::Store& s) {
        html(res, web::Document("clustermax: diff", web::DiffView(s.Diff(std::stoll(req.matches[1]), std::stoll(req.matches[2]))), Nav(true)));
      });
    });
    svr.Get("/api/leaderboard", [&](const httplib::Request&, httplib::Response& res) {
      with_store(res, [&](const store::Store& s) { res.set_content(s.Leaderboard().dump(), "application/json"); });
    });
    g_server = &svr;
    std::signal(SIGINT, StopServer);
    std::signal(SIGTERM, StopServer);
    if (!svr.bind_to_port(host, port)) {
      std::cerr << fmt::format("clustermax: cannot listen on {}\n", listen);
      return kExitToolError;
    }
    std::cerr << fmt::format("serving {} on http://{}/ (Ctrl-C stops)\n", db.string(), listen);
    svr.listen_after_bind();
    g_server = nullptr;
    return kExitOk;
  };
}

}  // namespace clustermax::cli
