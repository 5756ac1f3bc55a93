#include "cli/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/parser.hpp>
#include <fmt/format.h>

namespace clustermax::cli {

namespace {
using Clock = std::chrono::steady_clock;
namespace http = boost::beast::http;

constexpr auto kHeadTime = std::chrono::seconds(5);     // from accept to a complete request head
constexpr auto kAnswerTime = std::chrono::seconds(30);  // from a complete head to the last byte sent
constexpr size_t kHeadMax = 16384;                      // bytes of request line and headers
constexpr int kWorkers = 8;
constexpr int kMaxConnections = 256;  // open at once; beyond it new ones get a 503

std::string Message(int status, const std::string& type, const std::string& body, bool head_only) {
  std::string m = fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nX-Content-Type-Options: nosniff\r\nCache-Control: no-store\r\n"
      "Connection: close\r\n\r\n",
      status, HttpServer::StatusText(status), type, body.size());
  if (!head_only) m += body;
  return m;
}

// The short plain-text answer of an error the server gives itself.
std::string ErrorMessage(int status, bool head_only = false) {
  return Message(status, "text/plain; charset=utf-8", fmt::format("{} {}\n", status, HttpServer::StatusText(status)),
                 head_only);
}

// A short response written without waiting (the socket's buffer is empty), then the close.
void Refuse(int fd, int status) {
  std::string msg = ErrorMessage(status);
  (void)::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

// Waits for EVENTS on fd until the deadline; false when it passed or the socket failed.
bool WaitFor(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int r = ::poll(&p, 1, static_cast<int>(left));
    if (r > 0) return true;
    if (r == 0 || errno != EINTR) return false;
  }
}

bool SendAll(int fd, std::string_view data, Clock::time_point deadline) {
  while (!data.empty()) {
    if (!WaitFor(fd, POLLOUT, deadline)) return false;
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

size_t HeadEnd(std::string_view s) {
  size_t crlf = s.find("\r\n\r\n");
  if (crlf != std::string_view::npos) return crlf + 4;
  size_t lf = s.find("\n\n");
  return lf == std::string_view::npos ? std::string_view::npos : lf + 2;
}

// The numeric address and port of a socket's own end; {"", 0} when it has none.
std::pair<std::string, int> LocalAddress(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return {"", 0};
  char buf[INET6_ADDRSTRLEN] = {0};
  if (a.ss_family == AF_INET6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
    inet_ntop(AF_INET6, &v6->sin6_addr, buf, sizeof buf);
    return {buf, ntohs(v6->sin6_port)};
  }
  auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
  inet_ntop(AF_INET, &v4->sin_addr, buf, sizeof buf);
  return {buf, ntohs(v4->sin_port)};
}
}  // namespace

// ---- the gate: connections wait here for their whole request head ----

class HttpServer::Gate {
 public:
  explicit Gate(const HttpServer& s) : server_(s) {
    if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0)
      throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
    poller_ = std::thread([this] { Poll(); });
    for (int i = 0; i < kWorkers; ++i) workers_.emplace_back([this] { Work(); });
  }
  ~Gate() {
    Stop();
    ::close(wake_[0]);
    ::close(wake_[1]);
  }

  void Admit(int fd) {
    {
      std::lock_guard lock(mu_);
      if (!stopping_ && open_ < kMaxConnections) {
        ++open_;
        arrived_.push_back({fd, Clock::now() + kHeadTime, {}});
        fd = -1;
      }
    }
    if (fd >= 0) return Refuse(fd, 503);
    char x = 1;
    (void)!::write(wake_[1], &x, 1);
  }

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

 private:
  struct Waiting {
    int fd;
    Clock::time_point deadline, next_look;
  };

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
          if (HeadEnd(head) != std::string_view::npos) {
            {
              std::lock_guard lock(mu_);
              ready_.push_back(w.fd);
            }
            ready_cv_.notify_one();
            continue;
          }
          if (head.size() >= kHeadMax) {
            Refuse(w.fd, 431);
            Release();
            continue;
          }
          w.next_look = now + std::chrono::milliseconds(100);
        }
        if (now >= w.deadline) {
          Refuse(w.fd, 408);
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

  const HttpServer& server_;
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

// ---- the server ----

HttpServer::HttpServer() {
  if (::pipe2(stop_pipe_, O_CLOEXEC | O_NONBLOCK) != 0)
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
}

HttpServer::~HttpServer() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
  ::close(stop_pipe_[0]);
  ::close(stop_pipe_[1]);
}

void HttpServer::Get(const std::string& pattern, HttpHandler handler) {
  routes_.push_back({std::regex(pattern, std::regex::ECMAScript), std::move(handler)});
}

bool HttpServer::Bind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  for (addrinfo* a = found; a; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    // A backlog of kMaxConnections: a burst of clients waits to be accepted, not for SYN retransmits.
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, kMaxConnections) == 0) {
      listen_fd_ = fd;
      break;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return listen_fd_ >= 0;
}

std::string HttpServer::BoundAddress() const {
  auto [ip, port] = LocalAddress(listen_fd_);
  return ip.find(':') == std::string::npos ? fmt::format("{}:{}", ip, port) : fmt::format("[{}]:{}", ip, port);
}

void HttpServer::Stop() {
  char x = 1;
  (void)!::write(stop_pipe_[1], &x, 1);
}

void HttpServer::Run() {
  if (listen_fd_ < 0) throw std::logic_error("HttpServer::Run before Bind");
  Gate gate(*this);
  for (;;) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    int r = ::poll(fds, 2, -1);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 || fds[1].revents != 0) break;
    if (fds[0].revents == 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      gate.Admit(fd);
    } else if (errno == EMFILE || errno == ENFILE) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // out of descriptors: let some close
    }
  }
  gate.Stop();
}

void HttpServer::Answer(int fd, Clock::time_point deadline) const {
  // The poller saw the whole head in the socket's buffer: read exactly that much.
  std::string head;
  char buf[4096];
  while (head.size() < kHeadMax) {
    size_t end = HeadEnd(head);
    if (end != std::string::npos) {
      head.resize(end);
      break;
    }
    if (!WaitFor(fd, POLLIN, deadline)) return;
    ssize_t n = ::recv(fd, buf, std::min(sizeof buf, kHeadMax - head.size()), MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) return;
    head.append(buf, static_cast<size_t>(n));
  }
  SendAll(fd, Respond(head), deadline);
}

std::string HttpServer::Respond(const std::string& head) const {
  http::request_parser<http::empty_body> parser;
  parser.header_limit(static_cast<std::uint32_t>(kHeadMax));
  parser.eager(false);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(head.data(), head.size()), ec);
  if (ec == http::error::header_limit) return ErrorMessage(431);
  if (ec || !parser.is_header_done()) return ErrorMessage(400);
  const auto& req = parser.get();
  bool head_only = req.method() == http::verb::head;
  if (req.method() != http::verb::get && !head_only) return ErrorMessage(405);
  // No view takes a body.
  if (parser.chunked() || parser.content_length().value_or(0) > 0) return ErrorMessage(413, head_only);
  HttpRequest r;
  r.method = head_only ? "HEAD" : "GET";
  r.target = std::string(req.target());
  if (r.target.empty() || r.target[0] != '/') return ErrorMessage(400, head_only);  // origin form only
  r.path = r.target.substr(0, r.target.find('?'));
  for (const auto& route : routes_) {
    std::smatch m;
    if (!std::regex_match(r.path, m, route.pattern)) continue;
    for (const auto& g : m) r.matches.push_back(g.str());
    HttpResponse res;
    try {
      route.handler(r, res);
    } catch (const std::exception&) {
      return ErrorMessage(500, head_only);
    }
    if (res.body.empty() && res.status >= 400) return ErrorMessage(res.status, head_only);
    return Message(res.status, res.content_type, res.body, head_only);
  }
  return ErrorMessage(404, head_only);
}

const char* HttpServer::StatusText(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Payload Too Large";
    case 414:
      return "URI Too Long";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return status < 400 ? "OK" : "Error";
  }
}

}  // namespace clustermax::cli
