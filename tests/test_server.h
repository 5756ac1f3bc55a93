// A loopback HTTP/1.1 listener for client tests: answers each request with the next scripted
// response (closing the connection after each) and records the raw request head and body.
#pragma once
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace testing_server {

// A listening TCP socket on 127.0.0.1 at a free port (written to *port).
inline int ListenLoopback(int backlog, int* port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd, backlog) != 0)
    throw std::runtime_error("listen");
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

// Reads one HTTP/1.1 request from `c`: the head and a body of Content-Length bytes (the header
// name in any case) or in chunks (Transfer-Encoding: chunked, as kubectl sends a file; returned
// decoded, with the head as it came), or what arrived before the peer closed.
inline std::string ReadRequest(int c) {
  std::string req;
  char buf[65536];
  size_t want = std::string::npos, body = std::string::npos;
  bool chunked = false;
  while (want == std::string::npos || req.size() < want) {
    ssize_t n = ::recv(c, buf, sizeof buf, 0);
    if (n <= 0) break;
    req.append(buf, static_cast<size_t>(n));
    if (chunked) {
      if (req.find("\r\n0\r\n\r\n", body - 2) != std::string::npos) break;  // the last chunk
      continue;
    }
    size_t end = req.find("\r\n\r\n");
    if (end == std::string::npos || want != std::string::npos) continue;
    want = body = end + 4;
    std::string head = req.substr(0, end);
    for (char& ch : head) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    size_t cl = head.find("\r\ncontent-length:");
    if (cl != std::string::npos) want += std::stoul(head.substr(cl + 17));
    if (head.find("\r\ntransfer-encoding: chunked") != std::string::npos) {
      chunked = true;
      want = std::string::npos;
      if (req.find("\r\n0\r\n\r\n", body - 2) != std::string::npos) break;
    }
  }
  if (!chunked || body == std::string::npos) return req;
  // Decode: "<hex size>\r\n<data>\r\n" ... "0\r\n\r\n".
  std::string decoded = req.substr(0, body);
  for (size_t at = body; at < req.size();) {
    size_t eol = req.find("\r\n", at);
    if (eol == std::string::npos) break;
    size_t size = std::stoul(req.substr(at, eol - at), nullptr, 16);
    if (size == 0) break;
    decoded += req.substr(eol + 2, size);
    at = eol + 2 + size + 2;
  }
  return decoded;
}

class RecordingServer {
 public:
  explicit RecordingServer(std::vector<std::string> responses, bool repeat_last = false)
      : responses_(std::move(responses)), repeat_last_(repeat_last) {
    fd_ = ListenLoopback(16, &port_);
    thread_ = std::thread([this] { Serve(); });
  }
  ~RecordingServer() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  int port() const { return port_; }
  std::vector<std::string> Requests() {
    std::lock_guard lock(mu_);
    return requests_;
  }

 private:
  void Serve() {
    size_t next = 0;
    while (!stop_) {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      std::string req = ReadRequest(c);
      {
        std::lock_guard lock(mu_);
        requests_.push_back(req);
      }
      std::string resp = next < responses_.size() ? responses_[next]
                         : repeat_last_           ? responses_.back()
                                                  : "HTTP/1.1 500 X\r\nContent-Length: 0\r\n\r\n";
      ++next;
      if (resp.find("Connection:") == std::string::npos) resp.insert(resp.find("\r\n") + 2, "Connection: close\r\n");
      ::send(c, resp.data(), resp.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }
  int fd_ = -1, port_ = 0;
  std::vector<std::string> responses_;
  bool repeat_last_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::string> requests_;
  std::thread thread_;
};

}  // namespace testing_server
