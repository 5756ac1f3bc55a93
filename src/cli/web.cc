#include "cli/web.h"

#include "util/strings.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <deque>
#include <iostream>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

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
    body += fmt::format("<details id=\"{}-{}\" class=\"run\"{}><summary><b>{} / {}: {} {}</b> <span class=\"muted small\">{}</span></summary>{}</details>",
                        rating ? "rating" : "run", id, open ? " open" : "", web::Escape(r["provider"].get<std::string>()),
                        web::Escape(r["cluster"].get<std::string>()), rating ? "rating" : "run", id,
                        web::Escape(r["collected_at"].is_string() ? r["collected_at"].get<std::string>() : r["ingested_at"].get<std::string>()),
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
    return std::invalid_argument(fmt::format("--listen '{}': {} (HOST:PORT, e.g. 127.0.0.1:8470 or [::1]:8470)", s, why));
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
  bool digits = !port.empty() && port.size() <= 5 && std::all_of(port.begin(), port.end(), [](unsigned char c) { return std::isdigit(c); });
  if (!digits || std::stoi(port) > 65535) throw bad("port '" + port + "' is not a number from 0 to 65535");
  a.port = std::stoi(port);
  return a;
}

using Clock = std::chrono::steady_clock;
constexpr auto kHeadTime = std::chrono::seconds(5);     // from accept to a complete request head
constexpr auto kAnswerTime = std::chrono::seconds(30);  // from a complete head to the last byte sent
constexpr size_t kHeadMax = 16384;                      // bytes of request line and headers
constexpr int kWorkers = 8;
constexpr int kMaxConnections = 256;  // open at once; beyond it new ones get a 503

// A short response written without waiting (the socket's buffer is empty), then the close.
void Refuse(int fd, int status, const char* reason) {
  std::string body = fmt::format("{} {}\n", status, reason);
  std::string msg = fmt::format("HTTP/1.1 {} {}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}", status, reason,
                                body.size(), body);
  (void)::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// The numeric address and port of a socket's own end or of its peer; {"", 0} when it has none.
std::pair<std::string, int> SocketAddress(int fd, bool peer) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if ((peer ? ::getpeername : ::getsockname)(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return {"", 0};
  char buf[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    return {buf, ntohs(v6->sin6_port)};
  }
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
  inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
  return {buf, ntohs(v4->sin_port)};
}

// One connection's socket for httplib's request parser and writer: every read and write waits
// with poll() no later than the connection's deadline, so no client holds a worker past it.
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(int fd, Clock::time_point deadline) : fd_(fd), deadline_(deadline) {}
  bool is_readable() const override { return Wait(POLLIN); }
  bool is_writable() const override { return Wait(POLLOUT); }
  ssize_t read(char* p, size_t n) override {
    for (;;) {
      if (!Wait(POLLIN)) return -1;
      ssize_t r = ::recv(fd_, p, n, MSG_DONTWAIT);
      if (r >= 0 || (errno != EAGAIN && errno != EINTR)) return r;
    }
  }
  ssize_t write(const char* p, size_t n) override {
    for (;;) {
      if (!Wait(POLLOUT)) return -1;
      ssize_t r = ::send(fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (r >= 0 || (errno != EAGAIN && errno != EINTR)) return r;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { std::tie(ip, port) = SocketAddress(fd_, /*peer=*/true); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { std::tie(ip, port) = SocketAddress(fd_, /*peer=*/false); }
  socket_t socket() const override { return fd_; }

 private:
  bool Wait(short events) const {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, events, 0};
      int r = ::poll(&p, 1, static_cast<int>(left));
      if (r > 0) return true;
      if (r == 0 || errno != EINTR) return false;
    }
  }
  int fd_;
  Clock::time_point deadline_;
};

// The dashboard's HTTP server. httplib's own pool gives every accepted connection a thread while
// it waits for the first request (5 s) and reads a request head with only a per-read timeout, so
// a few dozen idle clients froze the dashboard for minutes and one slow client held a thread for
// as long as it liked. Here the accept thread hands each connection to a gate: one poller thread
// holds it until its whole request head has arrived (looked at, not read), closes it with a 408
// when that takes longer than kHeadTime, and passes complete ones to kWorkers threads that answer
// one request per connection (the pages are self-contained, so keep-alive saves nothing) within
// kAnswerTime. More than kMaxConnections open at once: the new one gets a 503.
class DashboardServer : public httplib::Server {
 public:
  DashboardServer() {
    new_task_queue = [this] { return new Gate(*this); };
    set_payload_max_length(kHeadMax);  // no view takes a body
    // Errors httplib answers itself (400 for what it cannot parse, 404 for an unknown path)
    // get a short body; a handler's own body stays.
    set_error_handler([](const httplib::Request&, httplib::Response& res) {
      if (res.body.empty()) res.set_content(fmt::format("{} {}\n", res.status, StatusText(res.status)), "text/plain; charset=utf-8");
    });
  }

  // Binds HOST:PORT (port 0: any free port) and lets kMaxConnections wait to be accepted:
  // httplib listens with a backlog of 5, and a burst beyond that waits for the client's SYN
  // retransmits (1 s, 3 s, ...).
  bool Bind(const std::string& host, int port) {
    bool bound = port == 0 ? bind_to_any_port(host) > 0 : bind_to_port(host, port);
    return bound && ::listen(svr_sock_, kMaxConnections) == 0;
  }

  // HOST:PORT as bound (the port chosen for port 0, the address a host name resolved to).
  std::string BoundAddress() const {
    auto [ip, port] = SocketAddress(svr_sock_, /*peer=*/false);
    return ip.find(':') == std::string::npos ? fmt::format("{}:{}", ip, port) : fmt::format("[{}]:{}", ip, port);
  }

  static const char* StatusText(int status) {
    switch (status) {
      case 400: return "Bad Request";
      case 404: return "Not Found";
      case 405: return "Method Not Allowed";
      case 408: return "Request Timeout";
      case 413: return "Payload Too Large";
      case 414: return "URI Too Long";
      case 431: return "Request Header Fields Too Large";
      case 500: return "Internal Server Error";
      case 503: return "Service Unavailable";
      default: return "Error";
    }
  }

 private:
  // httplib's task queue, run on its accept thread: enqueue() runs the task at once (it only
  // admits the socket to the gate), shutdown() stops the gate's threads.
  class Gate : public httplib::TaskQueue {
   public:
    explicit Gate(DashboardServer& s) : server_(s) {
      if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
      server_.gate_ = this;
      poller_ = std::thread([this] { Poll(); });
      for (int i = 0; i < kWorkers; ++i) workers_.emplace_back([this] { Work(); });
    }
    ~Gate() override {
      Stop();
      server_.gate_ = nullptr;
      ::close(wake_[0]);
      ::close(wake_[1]);
    }
    void enqueue(std::function<void()> fn) override { fn(); }
    void shutdown() override { Stop(); }

    void Admit(int fd) {
      {
        std::lock_guard lock(mu_);
        if (!stopping_ && open_ < kMaxConnections) {
          ++open_;
          arrived_.push_back({fd, Clock::now() + kHeadTime, {}});
          fd = -1;
        }
      }
      if (fd >= 0) return Refuse(fd, 503, "Service Unavailable");
      char x = 1;
      (void)!::write(wake_[1], &x, 1);
    }

   private:
    struct Waiting {
      int fd;
      Clock::time_point deadline, next_look;
    };

    void Stop() {
      {
        std::lock_guard lock(mu_);
        if (stopping_) return;
        stopping_ = true;
      }
      ready_cv_.notify_all();
      char x = 1;
      (void)!::write(wake_[1], &x, 1);
      poller_.join();
      for (auto& t : workers_) t.join();
      for (int fd : ready_) ::close(fd);
      for (const auto& w : arrived_) ::close(w.fd);
      ready_.clear();
      arrived_.clear();
    }

    void Done(int fd) {
      ::close(fd);
      Release();
    }
    void Release() {
      std::lock_guard lock(mu_);
      --open_;
    }

    // Holds connections until their request head is complete, then queues them for a worker.
    void Poll() {
      std::vector<Waiting> waiting;
      std::vector<pollfd> fds;
      std::vector<char> buf(kHeadMax);
      for (;;) {
        {
          std::lock_guard lock(mu_);
          if (stopping_) break;
          waiting.insert(waiting.end(), arrived_.begin(), arrived_.end());
          arrived_.clear();
        }
        auto now = Clock::now();
        fds.assign(1, pollfd{wake_[0], POLLIN, 0});
        // A client that sent part of its head is looked at again 100 ms later, not at every byte.
        for (const auto& w : waiting) fds.push_back(pollfd{w.next_look <= now ? w.fd : -1, POLLIN, 0});
        ::poll(fds.data(), fds.size(), 100);
        char drain[64];
        while (::read(wake_[0], drain, sizeof drain) > 0) {
        }
        now = Clock::now();
        std::vector<Waiting> still;
        for (size_t i = 0; i < waiting.size(); ++i) {
          Waiting w = waiting[i];
          if (fds[i + 1].revents != 0) {
            ssize_t n = ::recv(w.fd, buf.data(), buf.size(), MSG_PEEK | MSG_DONTWAIT);
            std::string_view head(buf.data(), n > 0 ? static_cast<size_t>(n) : 0);
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
              Done(w.fd);  // the client went away
              continue;
            }
            if (head.find("\r\n\r\n") != std::string_view::npos || head.find("\n\n") != std::string_view::npos) {
              {
                std::lock_guard lock(mu_);
                ready_.push_back(w.fd);
              }
              ready_cv_.notify_one();
              continue;
            }
            if (head.size() >= kHeadMax) {
              Refuse(w.fd, 431, "Request Header Fields Too Large");
              Release();
              continue;
            }
            w.next_look = now + std::chrono::milliseconds(100);
          }
          if (now >= w.deadline) {
            Refuse(w.fd, 408, "Request Timeout");
            Release();
            continue;
          }
          still.push_back(w);
        }
        waiting.swap(still);
      }
      for (const auto& w : waiting) Done(w.fd);
    }

    void Work() {
      for (;;) {
        int fd;
        {
          std::unique_lock lock(mu_);
          ready_cv_.wait(lock, [&] { return stopping_ || !ready_.empty(); });
          if (stopping_) return;
          fd = ready_.front();
          ready_.pop_front();
        }
        server_.Answer(fd, Clock::now() + kAnswerTime);
        ::shutdown(fd, SHUT_RDWR);
        Done(fd);
      }
    }

    DashboardServer& server_;
    int wake_[2] = {-1, -1};
    std::mutex mu_;
    std::condition_variable ready_cv_;
    bool stopping_ = false;
    int open_ = 0;
    std::vector<Waiting> arrived_;
    std::deque<int> ready_;
    std::thread poller_;
    std::vector<std::thread> workers_;
  };

  bool process_and_close_socket(socket_t sock) override {
    if (gate_) {
      gate_->Admit(sock);
    } else {
      ::close(sock);
    }
    return true;
  }

  void Answer(int fd, Clock::time_point deadline) {
    DeadlineStream stream(fd, deadline);
    bool closed = false;
    process_request(stream, /*close_connection=*/true, closed, nullptr);
  }

  Gate* gate_ = nullptr;
};

DashboardServer* g_server = nullptr;
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
        auto text = util::ReadLocalFile(f);
        if (!text) throw std::invalid_argument(f + ": no such file");
        json r = util::ParseJsonDocument(*text, f);
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
    ListenAddress addr = ParseListen(listen);
    fs::path db = db_path.empty() ? store::DefaultDbPath() : fs::path(db_path);
    { store::Store::OpenReadOnly(db); }  // fails now, with the reason, rather than on the first request
    DashboardServer svr;
    auto html = [](httplib::Response& res, const std::string& page) { res.set_content(page, "text/html; charset=utf-8"); };
    auto link = [](const std::string& kind, const std::string& arg) { return "/" + kind + "/" + arg; };
    auto with_store = [db](httplib::Response& res, const std::function<void(const store::Store&)>& f) {
      try {
        store::Store s = store::Store::OpenReadOnly(db);
        f(s);
      } catch (const std::exception& e) {
        // The reason (a path, SQLite's message) goes to serve's log, not to whoever asked.
        std::cerr << "clustermax: serve: " << e.what() << "\n";
        res.status = 500;
        res.set_content(web::Document("error", "<p>The results store could not be read; the log of clustermax serve says why.</p>", Nav(true)),
                        "text/html; charset=utf-8");
      }
    };
    // A run id from the path; digits too many for one are no run, like any other absent id.
    auto run_id = [](const std::string& digits) {
      int64_t id = -1;
      if (std::from_chars(digits.data(), digits.data() + digits.size(), id).ec != std::errc()) id = -1;
      return id;
    };
    auto not_found = [&](httplib::Response& res) {
      res.status = 404;
      html(res, web::Document("not found", "<p>No such run.</p>", Nav(true)));
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
          json run = s.Show(run_id(req.matches[1]));
          if (run.is_null()) return not_found(res);
          html(res, web::Document(fmt::format("clustermax: {} {}", kind, run["id"].get<int64_t>()), RunBody(run, "run"), Nav(true)));
        });
      };
    };
    svr.Get(R"(/run/(\d+))", one("run"));
    svr.Get(R"(/rating/(\d+))", one("rating"));
    svr.Get(R"(/diff/(\d+)/(\d+))", [&](const httplib::Request& req, httplib::Response& res) {
      with_store(res, [&](const store::Store& s) {
        int64_t a = run_id(req.matches[1]), b = run_id(req.matches[2]);
        if (!s.Contains(a) || !s.Contains(b)) return not_found(res);
        if ((s.Show(a)["kind"] == "rating") != (s.Show(b)["kind"] == "rating")) {
          res.status = 400;
          return html(res, web::Document("not comparable", fmt::format("<p>{} and {} are a run and a rating: a diff compares two runs, or two ratings.</p>", a, b), Nav(true)));
        }
        html(res, web::Document("clustermax: diff", web::DiffView(s.Diff(a, b)), Nav(true)));
      });
    });
    svr.Get("/api/leaderboard", [&](const httplib::Request&, httplib::Response& res) {
      with_store(res, [&](const store::Store& s) {
        json rows = s.Leaderboard();
        for (auto& r : rows) r.erase("dir");  // where a run was ingested from is this machine's business
        res.set_content(util::JsonText(rows, -1), "application/json");
      });
    });
    g_server = &svr;
    std::signal(SIGINT, StopServer);
    std::signal(SIGTERM, StopServer);
    if (!svr.Bind(addr.host, addr.port)) {
      std::cerr << fmt::format("clustermax: cannot listen on {} (the port is in use, or the host is not an address of this machine)\n", listen);
      return kExitToolError;
    }
    std::cerr << fmt::format("serving {} on http://{}/ (Ctrl-C stops)\n", db.string(), svr.BoundAddress());
    svr.listen_after_bind();
    g_server = nullptr;
    return kExitOk;
  };
}

}  // namespace clustermax::cli
