// The HTTP server under `clustermax serve`: GET and HEAD on a few routes, one request per
// connection, every connection's time bounded. Boost.Beast (header-only) parses each request head;
// sockets, threads and deadlines are ours, so the binary links no HTTP library.
//
// Why not a thread per connection: a few dozen clients that connect and say nothing, or one that
// sends its head a byte at a time, must not freeze the dashboard. The accept thread hands each
// connection to a gate: one poller thread holds it until its whole request head has arrived
// (looked at with MSG_PEEK, not read), closes it with a 408 when that takes longer than
// kHeadTime, and passes complete ones to kWorkers threads that answer within kAnswerTime. More
// than kMaxConnections open at once: the new one gets a 503.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace clustermax::cli {

struct HttpRequest {
  std::string method;                // GET or HEAD (nothing else reaches a handler)
  std::string target;                // as sent: path and query
  std::string path;                  // the target without its query
  std::vector<std::string> matches;  // the route pattern's whole match, then its groups
};

struct HttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "text/plain; charset=utf-8";
  void set_content(std::string b, std::string type) {
    body = std::move(b);
    content_type = std::move(type);
  }
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponse&)>;

class HttpServer {
 public:
  HttpServer();
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // A route: PATTERN (ECMAScript regex) must match the whole path. Routes are tried in order.
  void Get(const std::string& pattern, HttpHandler handler);

  // Binds HOST:PORT (port 0: any free port) and listens. False when neither works.
  bool Bind(const std::string& host, int port);
  // HOST:PORT as bound (the port chosen for port 0, the address a host name resolved to).
  std::string BoundAddress() const;

  // Accepts and answers until Stop(); joins every thread before returning.
  void Run();
  // Async-signal-safe: a byte down a pipe wakes Run(), which then stops.
  void Stop();

  static const char* StatusText(int status);

  // One request head as the server sees it: parsed, routed and answered, as the bytes to send.
  // Exposed for tests; `head` holds the whole head (request line and headers, ended by an empty line).
  std::string Respond(const std::string& head) const;

 private:
  class Gate;
  struct Route {
    std::regex pattern;
    HttpHandler handler;
  };
  void Answer(int fd, std::chrono::steady_clock::time_point deadline) const;

  std::vector<Route> routes_;
  int listen_fd_ = -1;
  int stop_pipe_[2] = {-1, -1};
};

}  // namespace clustermax::cli
