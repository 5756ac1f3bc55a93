#include "bench/net_comm.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "bench/pmix.h"
#include "util/files.h"
#include "util/strings.h"

namespace clustermax::bench::net {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr char kMagic[8] = {'C', 'M', 'X', 'N', 'E', 'T', '0', '1'};
constexpr uint32_t kMesh = 0, kStream = 1;
constexpr size_t kTokenHex = 32;

// What a connecting rank sends first.
struct Hello {
  char magic[8];
  char token[kTokenHex];
  uint32_t rank, kind, index;
};

std::runtime_error Errno(const std::string& what) {
  return std::runtime_error(fmt::format("{}: {}", what, std::strerror(errno)));
}

void SetNonBlocking(int fd, bool on) {
  int fl = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

void NoDelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// Blocking read of exactly n bytes before `deadline`; false on EOF, error or deadline.
bool ReadFull(int fd, void* p, size_t n, Clock::time_point deadline) {
  char* c = static_cast<char*>(p);
  while (n > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd pf{fd, POLLIN, 0};
    int pr = ::poll(&pf, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (pr < 0 && errno != EINTR) return false;
    if (pr <= 0) continue;
    ssize_t r = ::recv(fd, c, n, MSG_DONTWAIT);
    if (r == 0) return false;
    if (r < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return false;
    }
    c += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

bool WriteFull(int fd, const void* p, size_t n) {
  const char* c = static_cast<const char*>(p);
  while (n > 0) {
    ssize_t w = ::send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd pf{fd, POLLOUT, 0};
        ::poll(&pf, 1, 1000);
        continue;
      }
      return false;
    }
    c += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

std::string RandomHex(size_t chars) {
  std::string raw((chars + 1) / 2, '\0');
  size_t got = 0;
  while (got < raw.size()) {
    ssize_t r = ::getrandom(raw.data() + got, raw.size() - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      throw Errno("getrandom");
    }
    got += static_cast<size_t>(r);
  }
  std::string hex;
  for (unsigned char ch : raw) hex += fmt::format("{:02x}", ch);
  return hex.substr(0, chars);
}

// The token compared in constant time: a stranger learns nothing from how fast it is refused.
bool SameToken(const char* a, const char* b) {
  unsigned char diff = 0;
  for (size_t i = 0; i < kTokenHex; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Sockets of one test, closed on every way out.
struct Fds {
  std::vector<int> v;
  ~Fds() {
    for (int fd : v)
      if (fd >= 0) ::close(fd);
  }
};

// Threads of one test, joined on every way out (a thread left joinable would end the process).
struct Joined {
  std::vector<std::thread> v;
  ~Joined() {
    for (auto& t : v)
      if (t.joinable()) t.join();
  }
};

void Deadlines(int fd, double seconds) {
  timeval tv{static_cast<time_t>(seconds), static_cast<suseconds_t>((seconds - static_cast<long>(seconds)) * 1e6)};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

bool ValidIpv4(const std::string& a) {
  in_addr x{};
  return ::inet_pton(AF_INET, a.c_str(), &x) == 1;
}

// The node's own address when no interface is named: what its host name resolves to, unless that
// is loopback; else the first interface that is up; else loopback.
std::string DefaultAddress() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) == 0) {
    addrinfo hints{}, *res = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (::getaddrinfo(name, nullptr, &hints, &res) == 0) {
      std::string found;
      for (addrinfo* a = res; a && found.empty(); a = a->ai_next) {
        char buf[INET_ADDRSTRLEN] = {};
        auto* sin = reinterpret_cast<sockaddr_in*>(a->ai_addr);
        if (::inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof buf) && std::string(buf).rfind("127.", 0) != 0)
          found = buf;
      }
      ::freeaddrinfo(res);
      if (!found.empty()) return found;
    }
  }
  for (const auto& i : UpInterfaces()) {
    if (auto a = InterfaceAddress(i)) return *a;
  }
  return "127.0.0.1";
}

sockaddr_in SockAddr(const std::string& address, int port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1)
    throw std::runtime_error("not an IPv4 address: " + address);
  return sa;
}

}  // namespace

std::optional<RankInfo> RankFromSlurm() {
  auto num = [](const char* k) -> std::optional<long long> {
    const char* v = std::getenv(k);
    if (!v) return std::nullopt;
    return util::ParseInt(v);
  };
  auto rank = num("SLURM_PROCID"), world = num("SLURM_NTASKS"), local = num("SLURM_LOCALID");
  if (!rank || !world || *world < 1 || *rank < 0 || *rank >= *world) return std::nullopt;
  RankInfo r;
  r.rank = static_cast<int>(*rank);
  r.world = static_cast<int>(*world);
  r.local_rank = local ? static_cast<int>(*local) : 0;
  const char* n = std::getenv("SLURMD_NODENAME");
  r.node = n && *n ? n : util::Hostname();
  return r;
}

double ThrottleFromEnv(const std::string& node) {
  const char* v = std::getenv("CLUSTERMAX_NET_TEST_THROTTLE");
  if (!v) return 0;
  for (const auto& part : util::Split(v, ',')) {
    auto eq = part.find('=');
    if (eq == std::string::npos || util::Trim(part.substr(0, eq)) != node) continue;
    std::string v = std::string(util::Trim(part.substr(eq + 1)));
    char* end = nullptr;
    double mb = std::strtod(v.c_str(), &end);
    if (end && *end == '\0' && mb > 0) return mb * 1e6;
  }
  return 0;
}

std::optional<std::string> InterfaceAddress(const std::string& iface) {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return std::nullopt;
  std::optional<std::string> out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || iface != i->ifa_name) continue;
    char buf[INET_ADDRSTRLEN] = {};
    if (::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf)) {
      out = buf;
      break;
    }
  }
  ::freeifaddrs(list);
  return out;
}

std::vector<std::string> UpInterfaces() {
  ifaddrs* list = nullptr;
  std::set<std::string> names;
  if (::getifaddrs(&list) != 0) return {};
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET) continue;
    if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
    names.insert(i->ifa_name);
  }
  ::freeifaddrs(list);
  return {names.begin(), names.end()};
}

void PrepareRendezvous(const fs::path& dir) {
  util::CreatePrivateDirectories(dir.parent_path());
  if (::mkdir(dir.c_str(), 0700) != 0) throw Errno("cannot create the rendezvous directory " + dir.string());
  util::WriteFileAtomic(dir / "token", RandomHex(kTokenHex) + "\n", 0600);
}

std::unique_ptr<Comm> Comm::Connect(const RankInfo& me, const CommOptions& o) {
  std::unique_ptr<Comm> c(new Comm());
  c->me_ = me;
  c->opt_ = o;
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(o.timeout_s * 1000));
  bool pmix = !o.pmix_group.empty();
  if (!pmix) {
    // The token: made by the launcher before the step started.
    std::optional<std::string> token;
    while (!(token = util::ReadLocalFile(o.rendezvous / "token", 4096)) && Clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!token || util::Trim(*token).size() != kTokenHex)
      throw std::runtime_error("no rendezvous token in " + o.rendezvous.string() +
                               " (is the directory on a filesystem every node shares? If none is, --launch pmix)");
    c->token_ = std::string(util::Trim(*token));
  }

  // The listening socket this rank publishes.
  auto open_listener = [&]() -> int {
    std::string bind_address = "0.0.0.0";
    if (!o.iface.empty()) {
      auto a = InterfaceAddress(o.iface);
      if (!a) throw std::runtime_error(fmt::format("interface {} has no IPv4 address on {}", o.iface, me.node));
      c->published_ = bind_address = *a;
    }
    if (!o.address.empty()) c->published_ = o.address;
    if (c->published_.empty()) c->published_ = DefaultAddress();

    // A full mesh holds a socket per peer: raise the soft descriptor limit to the hard one.
    rlimit nofile{};
    if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
      nofile.rlim_cur = nofile.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &nofile);
    }
    c->listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->listen_fd_ < 0) throw Errno("socket");
    int one = 1;
    ::setsockopt(c->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in sa = SockAddr(bind_address, 0);
    if (::bind(c->listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0) throw Errno("bind " + bind_address);
    if (::listen(c->listen_fd_, SOMAXCONN) != 0) throw Errno("listen");
    socklen_t len = sizeof sa;
    ::getsockname(c->listen_fd_, reinterpret_cast<sockaddr*>(&sa), &len);
    return static_cast<int>(ntohs(sa.sin_port));
  };
  int port = 0;
  if (!pmix) {
    port = open_listener();
  } else {
    try {
      port = open_listener();
    } catch (const std::exception& e) {
      // Still take part in the step's one exchange, saying why, so that the peers fail at once
      // with this reason instead of waiting out the fence.
      PmixAllGather(fmt::format("{} {} ERROR {}", o.pmix_group, me.rank, e.what()), o.timeout_s);
      throw;
    }
  }

  int n = me.world;
  c->nodes_.assign(n, "");
  c->addresses_.assign(n, "");
  c->ports_.assign(n, 0);
  c->fds_.assign(n, -1);
  std::vector<bool> have(n, false);
  int missing = n;
  if (pmix) {
    // "group rank node address port token" from every task of the step; ours are those of our group.
    std::string mine =
        fmt::format("{} {} {} {} {} {}", o.pmix_group, me.rank, me.node, c->published_, port, RandomHex(kTokenHex));
    for (const auto& entry : PmixAllGather(mine, o.timeout_s)) {
      auto f = util::SplitWhitespace(entry);
      if (f.size() >= 3 && f[0] == o.pmix_group && f[2] == "ERROR")
        throw std::runtime_error(fmt::format("rank {} of group {} failed before the exchange: {}",
                                             util::SanitizeUtf8(f[1]), o.pmix_group,
                                             util::SanitizeUtf8(entry.substr(entry.find(" ERROR ") + 7))));
      if (f.size() != 6 || f[0] != o.pmix_group) continue;
      auto r = util::ParseInt(f[1]);
      auto p = util::ParseInt(f[4]);
      if (!r || *r < 0 || *r >= n || !p || *p < 1 || *p > 65535 || !ValidIpv4(f[3]) || f[5].size() != kTokenHex)
        throw std::runtime_error(fmt::format("a PMIx entry of group {} is not understood", o.pmix_group));
      if (have[*r]) throw std::runtime_error(fmt::format("rank {} of group {} appears twice", *r, o.pmix_group));
      c->nodes_[*r] = util::SanitizeUtf8(f[2]);
      c->addresses_[*r] = f[3];
      c->ports_[*r] = static_cast<int>(*p);
      if (*r == 0) c->token_ = f[5];
      have[*r] = true;
      --missing;
    }
    if (missing > 0) {
      std::vector<std::string> absent;
      for (int r = 0; r < n; ++r)
        if (!have[r]) absent.push_back(std::to_string(r));
      throw std::runtime_error(fmt::format("rank(s) {} of group {} are not in the step's PMIx exchange",
                                           fmt::join(absent, ","), o.pmix_group));
    }
  } else {
    util::WriteFileAtomic(o.rendezvous / fmt::format("rank-{}", me.rank),
                          fmt::format("{} {} {}\n", me.node, c->published_, port), 0600);
  }
  while (missing > 0) {
    for (int r = 0; r < n; ++r) {
      if (have[r]) continue;
      auto text = util::ReadLocalFile(o.rendezvous / fmt::format("rank-{}", r), 4096);
      if (!text) continue;
      auto f = util::SplitWhitespace(*text);
      auto p = f.size() == 3 ? util::ParseInt(f[2]) : std::nullopt;
      if (!p || *p < 1 || *p > 65535 || !ValidIpv4(f[1]))
        throw std::runtime_error(fmt::format("rank {}'s rendezvous entry is not understood", r));
      c->nodes_[r] = util::SanitizeUtf8(f[0]);
      c->addresses_[r] = f[1];
      c->ports_[r] = static_cast<int>(*p);
      have[r] = true;
      --missing;
    }
    if (missing == 0) break;
    if (Clock::now() >= deadline) {
      std::vector<std::string> absent;
      for (int r = 0; r < n; ++r)
        if (!have[r]) absent.push_back(std::to_string(r));
      throw std::runtime_error(fmt::format("rank(s) {} never appeared in {} within {} s", fmt::join(absent, ","),
                                           o.rendezvous.string(), o.timeout_s));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // The mesh: connect to every higher rank (the peer's backlog takes it), then accept every lower.
  for (int r = me.rank + 1; r < n; ++r) c->fds_[r] = c->ConnectTo(r, kMesh, 0);
  for (int k = 0; k < me.rank; ++k) {
    uint32_t from = 0;
    int fd = c->Accept(kMesh, &from);
    if (c->fds_[from] >= 0) {
      ::close(fd);
      throw std::runtime_error(fmt::format("rank {} connected twice", from));
    }
    c->fds_[from] = fd;
  }
  for (int fd : c->fds_) {
    if (fd >= 0) SetNonBlocking(fd, true);
  }
  c->pace_start_ = Clock::now();
  return c;
}

void PmixAbstain(double timeout_s) { PmixAllGather("", timeout_s); }

Comm::~Comm() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

std::string Comm::transport() const {
  if (!opt_.iface.empty()) return fmt::format("tcp/{} ({})", opt_.iface, published_);
  return fmt::format("tcp/{}{}", published_, opt_.fabric_only ? "" : " (same node: loopback)");
}

int Comm::ConnectTo(int peer, uint32_t kind, uint32_t index) {
  bool local = nodes_[peer] == me_.node && !opt_.fabric_only && opt_.iface.empty();
  std::string address = local ? "127.0.0.1" : addresses_[peer];
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(opt_.timeout_s * 1000));
  for (;;) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) throw Errno("socket");
    if (!opt_.iface.empty()) {
      // The rail's own address as the source too.
      sockaddr_in src = SockAddr(published_, 0);
      ::bind(fd, reinterpret_cast<sockaddr*>(&src), sizeof src);
    }
    sockaddr_in sa = SockAddr(address, ports_[peer]);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
      NoDelay(fd);
      Hello h{};
      std::memcpy(h.magic, kMagic, sizeof kMagic);
      std::memcpy(h.token, token_.data(), kTokenHex);
      h.rank = static_cast<uint32_t>(me_.rank);
      h.kind = kind;
      h.index = index;
      if (!WriteFull(fd, &h, sizeof h)) {
        ::close(fd);
        throw Errno(fmt::format("handshake with rank {} ({})", peer, nodes_[peer]));
      }
      return fd;
    }
    int err = errno;
    ::close(fd);
    if (Clock::now() >= deadline || (err != ECONNREFUSED && err != EAGAIN && err != EINTR && err != ETIMEDOUT)) {
      errno = err;
      throw Errno(fmt::format("cannot connect to rank {} on {} at {}:{}", peer, nodes_[peer], address, ports_[peer]));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

int Comm::Accept(uint32_t want_kind, uint32_t* peer_rank) {
  auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(opt_.timeout_s * 1000));
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) throw std::runtime_error(fmt::format("no peer connected within {} s", opt_.timeout_s));
    pollfd pf{listen_fd_, POLLIN, 0};
    int pr = ::poll(&pf, 1, static_cast<int>(std::min<long long>(left, 1000)));
    if (pr <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors or a connection reset before we took it: wait rather than spin.
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    Hello h{};
    // A stranger gets five seconds to say the right thing, and is dropped otherwise.
    bool ok = ReadFull(fd, &h, sizeof h, std::min(deadline, Clock::now() + std::chrono::seconds(5))) &&
              std::memcmp(h.magic, kMagic, sizeof kMagic) == 0 && SameToken(h.token, token_.data()) &&
              h.kind == want_kind && h.rank < static_cast<uint32_t>(me_.world) && static_cast<int>(h.rank) != me_.rank;
    if (!ok) {
      ::close(fd);
      continue;
    }
    NoDelay(fd);
    *peer_rank = h.rank;
    return fd;
  }
}

void Comm::Pace(size_t bytes) {
  if (opt_.throttle_bytes_per_s <= 0) return;
  paced_bytes_ += static_cast<double>(bytes);
  double due = paced_bytes_ / opt_.throttle_bytes_per_s;
  double spent = std::chrono::duration<double>(Clock::now() - pace_start_).count();
  if (due > spent) std::this_thread::sleep_for(std::chrono::duration<double>(due - spent));
}

void Comm::SendRecv(int to, const void* send, size_t sn, int from, void* recv, size_t rn) {
  const char* s = static_cast<const char*>(send);
  char* r = static_cast<char*>(recv);
  if (to == me_.rank || from == me_.rank) {
    if (to == me_.rank && from == me_.rank) std::memcpy(r, s, std::min(sn, rn));
    if (to == me_.rank) sn = 0, to = -1;
    if (from == me_.rank) rn = 0, from = -1;
  }
  if (to < 0) sn = 0;
  if (from < 0) rn = 0;
  auto limit = std::chrono::milliseconds(static_cast<long long>(opt_.timeout_s * 1000));
  auto last_progress = Clock::now();
  constexpr size_t kChunk = 1 << 20;
  while (sn > 0 || rn > 0) {
    pollfd pf[2];
    int np = 0, si = -1, ri = -1;
    if (sn > 0) si = np, pf[np++] = {fds_[to], POLLOUT, 0};
    if (rn > 0) ri = np, pf[np++] = {fds_[from], POLLIN, 0};
    int pr = ::poll(pf, np, 1000);
    if (pr < 0 && errno != EINTR) throw Errno("poll");
    bool moved = false;
    if (si >= 0 && (pf[si].revents & (POLLOUT | POLLERR | POLLHUP))) {
      size_t k = std::min(sn, opt_.throttle_bytes_per_s > 0 ? size_t{64 << 10} : kChunk);
      ssize_t w = ::send(fds_[to], s, k, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0 && errno != EAGAIN && errno != EINTR) throw Errno(fmt::format("send to rank {} ({})", to, nodes_[to]));
      if (w > 0) {
        s += w;
        sn -= static_cast<size_t>(w);
        moved = true;
        Pace(static_cast<size_t>(w));
      }
    }
    if (ri >= 0 && (pf[ri].revents & (POLLIN | POLLERR | POLLHUP))) {
      ssize_t g = ::recv(fds_[from], r, rn, MSG_DONTWAIT);
      if (g == 0) throw std::runtime_error(fmt::format("rank {} ({}) closed the connection", from, nodes_[from]));
      if (g < 0 && errno != EAGAIN && errno != EINTR)
        throw Errno(fmt::format("receive from rank {} ({})", from, nodes_[from]));
      if (g > 0) {
        r += g;
        rn -= static_cast<size_t>(g);
        moved = true;
      }
    }
    if (moved) {
      last_progress = Clock::now();
    } else if (Clock::now() - last_progress > limit) {
      throw std::runtime_error(
          fmt::format("no progress for {} s (waiting on rank {})", opt_.timeout_s, rn > 0 ? from : to));
    }
  }
}

void Comm::Barrier() {
  char b = 0;
  if (me_.rank == 0) {
    for (int r = 1; r < me_.world; ++r) Recv(r, &b, 1);
    for (int r = 1; r < me_.world; ++r) Send(r, &b, 1);
  } else {
    Send(0, &b, 1);
    Recv(0, &b, 1);
  }
}

std::vector<double> Comm::GatherToRoot(double value) {
  if (me_.rank != 0) {
    Send(0, &value, sizeof value);
    return {};
  }
  std::vector<double> out(me_.world);
  out[0] = value;
  for (int r = 1; r < me_.world; ++r) Recv(r, &out[r], sizeof(double));
  return out;
}

std::string Comm::BroadcastText(const std::string& text) {
  if (me_.rank == 0) {
    uint64_t n = text.size();
    for (int r = 1; r < me_.world; ++r) {
      Send(r, &n, sizeof n);
      Send(r, text.data(), text.size());
    }
    return text;
  }
  uint64_t n = 0;
  Recv(0, &n, sizeof n);
  if (n > (64u << 20)) throw std::runtime_error("broadcast message too large");
  std::string out(n, '\0');
  Recv(0, out.data(), n);
  return out;
}

namespace {
size_t Off(size_t count, int i, int n) { return count * static_cast<size_t>(i) / static_cast<size_t>(n); }
int Mod(int a, int n) { return ((a % n) + n) % n; }
}  // namespace

void Comm::AllReduce(const float* send, float* recv, size_t count) {
  int n = me_.world, r = me_.rank;
  if (send != recv) std::memcpy(recv, send, count * sizeof(float));
  if (n == 1) return;
  int next = Mod(r + 1, n), prev = Mod(r - 1, n);
  size_t biggest = 0;
  for (int i = 0; i < n; ++i) biggest = std::max(biggest, Off(count, i + 1, n) - Off(count, i, n));
  scratch_.resize(biggest);
  // Reduce-scatter around the ring: after n-1 steps rank r holds the sum of chunk r+1.
  for (int s = 0; s < n - 1; ++s) {
    int sc = Mod(r - s, n), rc = Mod(r - s - 1, n);
    size_t rlen = Off(count, rc + 1, n) - Off(count, rc, n);
    SendRecv(next, recv + Off(count, sc, n), (Off(count, sc + 1, n) - Off(count, sc, n)) * sizeof(float), prev,
             scratch_.data(), rlen * sizeof(float));
    float* dst = recv + Off(count, rc, n);
    for (size_t i = 0; i < rlen; ++i) dst[i] += scratch_[i];
  }
  // All-gather the reduced chunks.
  for (int s = 0; s < n - 1; ++s) {
    int sc = Mod(r + 1 - s, n), rc = Mod(r - s, n);
    SendRecv(next, recv + Off(count, sc, n), (Off(count, sc + 1, n) - Off(count, sc, n)) * sizeof(float), prev,
             recv + Off(count, rc, n), (Off(count, rc + 1, n) - Off(count, rc, n)) * sizeof(float));
  }
}

void Comm::AllGather(const float* send, float* recv, size_t count) {
  int n = me_.world, r = me_.rank;
  float* mine = recv + static_cast<size_t>(r) * count;
  if (send != mine) std::memcpy(mine, send, count * sizeof(float));
  int next = Mod(r + 1, n), prev = Mod(r - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    int sc = Mod(r - s, n), rc = Mod(r - s - 1, n);
    SendRecv(next, recv + static_cast<size_t>(sc) * count, count * sizeof(float), prev,
             recv + static_cast<size_t>(rc) * count, count * sizeof(float));
  }
}

void Comm::ReduceScatter(const float* send, float* recv, size_t count) {
  int n = me_.world, r = me_.rank;
  // Works on a copy of the input (the input stays as given out of place; in place it is the buffer).
  std::vector<float>& work = work_;  // reused: no allocation inside a timed loop
  work.assign(send, send + count * static_cast<size_t>(n));
  scratch_.resize(count);
  int next = Mod(r + 1, n), prev = Mod(r - 1, n);
  for (int s = 0; s < n - 1; ++s) {
    int sc = Mod(r - s - 1, n), rc = Mod(r - s - 2, n);
    SendRecv(next, work.data() + static_cast<size_t>(sc) * count, count * sizeof(float), prev, scratch_.data(),
             count * sizeof(float));
    float* dst = work.data() + static_cast<size_t>(rc) * count;
    for (size_t i = 0; i < count; ++i) dst[i] += scratch_[i];
  }
  std::memcpy(recv, work.data() + static_cast<size_t>(r) * count, count * sizeof(float));
}

void Comm::AllToAll(const float* send, float* recv, size_t count) {
  int n = me_.world, r = me_.rank;
  std::vector<float> copy;
  if (send == recv) {
    copy.assign(send, send + count * static_cast<size_t>(n));
    send = copy.data();
  }
  std::memcpy(recv + static_cast<size_t>(r) * count, send + static_cast<size_t>(r) * count, count * sizeof(float));
  for (int k = 1; k < n; ++k) {
    int to = Mod(r + k, n), from = Mod(r - k, n);
    SendRecv(to, send + static_cast<size_t>(to) * count, count * sizeof(float), from,
             recv + static_cast<size_t>(from) * count, count * sizeof(float));
  }
}

void Comm::Broadcast(const float* send, float* recv, size_t count, int root) {
  int n = me_.world, r = me_.rank;
  if (r == root && send != recv) std::memcpy(recv, send, count * sizeof(float));
  if (n == 1) return;
  int pos = Mod(r - root, n), next = Mod(r + 1, n), prev = Mod(r - 1, n);
  constexpr size_t kPiece = (1 << 20) / sizeof(float);  // pipelined down the chain in 1 MiB pieces
  for (size_t off = 0; off < count; off += kPiece) {
    size_t len = std::min(kPiece, count - off);
    if (pos > 0) Recv(prev, recv + off, len * sizeof(float));
    if (pos < n - 1) Send(next, recv + off, len * sizeof(float));
  }
}

void Comm::Reduce(const float* send, float* recv, size_t count, int root) {
  int n = me_.world, r = me_.rank;
  // A chain that ends at the root: root+1 starts, each adds its part and passes it on.
  int pos = Mod(r - root - 1, n), next = Mod(r + 1, n), prev = Mod(r - 1, n);
  constexpr size_t kPiece = (1 << 20) / sizeof(float);
  std::vector<float> part(std::min(kPiece, count));
  scratch_.resize(std::min(kPiece, count));
  for (size_t off = 0; off < count; off += kPiece) {
    size_t len = std::min(kPiece, count - off);
    std::memcpy(part.data(), send + off, len * sizeof(float));
    if (pos > 0) {
      Recv(prev, scratch_.data(), len * sizeof(float));
      for (size_t i = 0; i < len; ++i) part[i] += scratch_[i];
    }
    if (pos < n - 1)
      Send(next, part.data(), len * sizeof(float));
    else
      std::memcpy(recv + off, part.data(), len * sizeof(float));
  }
}

void Comm::SendRecvRing(const float* send, float* recv, size_t count) {
  int n = me_.world, r = me_.rank;
  std::vector<float> copy;
  if (send == recv) {
    copy.assign(send, send + count);
    send = copy.data();
  }
  SendRecv(Mod(r + 1, n), send, count * sizeof(float), Mod(r - 1, n), recv, count * sizeof(float));
}

Comm::StreamResult Comm::StreamThroughput(int sender, int receiver, int streams, double seconds) {
  StreamResult out;
  out.streams = streams;
  if (me_.rank != sender && me_.rank != receiver) return out;
  constexpr size_t kBuf = 128 << 10;  // iperf3's default block for TCP
  std::atomic<uint64_t> total{0};
  if (me_.rank == sender) {
    Fds fds;
    for (int i = 0; i < streams; ++i) {
      fds.v.push_back(ConnectTo(receiver, kStream, static_cast<uint32_t>(i)));
      Deadlines(fds.v.back(), opt_.timeout_s);
    }
    auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
    Joined threads;
    double share = opt_.throttle_bytes_per_s / std::max(1, streams);
    for (int fd : fds.v) {
      threads.v.emplace_back([fd, end, share] {
        std::vector<char> buf(kBuf, 'x');
        auto t0 = Clock::now();
        double sent = 0;
        while (Clock::now() < end) {
          ssize_t w = ::send(fd, buf.data(), share > 0 ? (16 << 10) : buf.size(), MSG_NOSIGNAL);
          if (w <= 0) break;
          sent += static_cast<double>(w);
          if (share > 0) {
            double due = sent / share, spent = std::chrono::duration<double>(Clock::now() - t0).count();
            if (due > spent) std::this_thread::sleep_for(std::chrono::duration<double>(due - spent));
          }
        }
        ::shutdown(fd, SHUT_WR);
        char c;
        while (::recv(fd, &c, 1, 0) > 0) {
        }
      });
    }
    for (auto& t : threads.v) t.join();
    double got[2] = {0, 0};
    Recv(receiver, got, sizeof got);
    out.bytes = static_cast<uint64_t>(got[0]);
    out.seconds = got[1];
    out.bytes_per_s = got[1] > 0 ? got[0] / got[1] : 0;
    return out;
  }
  Fds fds;
  for (int i = 0; i < streams; ++i) {
    uint32_t from = 0;
    int fd = Accept(kStream, &from);
    if (static_cast<int>(from) != sender) {
      ::close(fd);
      --i;
      continue;
    }
    Deadlines(fd, opt_.timeout_s);
    fds.v.push_back(fd);
  }
  std::atomic<int64_t> first{INT64_MAX}, last{0};
  auto base = Clock::now();
  Joined threads;
  for (int fd : fds.v) {
    threads.v.emplace_back([fd, &total, &first, &last, base] {
      std::vector<char> buf(kBuf);
      for (;;) {
        ssize_t g = ::recv(fd, buf.data(), buf.size(), 0);
        if (g <= 0) break;
        int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - base).count();
        int64_t f = first.load();
        while (now < f && !first.compare_exchange_weak(f, now)) {
        }
        int64_t l = last.load();
        while (now > l && !last.compare_exchange_weak(l, now)) {
        }
        total += static_cast<uint64_t>(g);
      }
    });
  }
  for (auto& t : threads.v) t.join();
  double secs = last.load() > first.load() ? (last.load() - first.load()) / 1e9 : 0;
  double got[2] = {static_cast<double>(total.load()), secs};
  Send(sender, got, sizeof got);
  out.bytes = total.load();
  out.seconds = secs;
  out.bytes_per_s = secs > 0 ? got[0] / secs : 0;
  return out;
}

std::vector<double> Comm::PingPong(int a, int b, int iterations, size_t bytes) {
  if (me_.rank != a && me_.rank != b) return {};
  int peer = me_.rank == a ? b : a;
  std::vector<char> buf(std::max<size_t>(bytes, 1));
  std::vector<double> us;
  constexpr int kWarm = 50;
  for (int i = 0; i < kWarm + iterations; ++i) {
    auto t0 = Clock::now();
    if (me_.rank == a) {
      Send(peer, buf.data(), buf.size());
      Recv(peer, buf.data(), buf.size());
    } else {
      Recv(peer, buf.data(), buf.size());
      Send(peer, buf.data(), buf.size());
    }
    if (i >= kWarm) us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / 2);
  }
  // The initiator's round trips are the measurement; the other side's mirror them.
  std::vector<double> theirs(us.size());
  SendRecv(peer, us.data(), us.size() * sizeof(double), peer, theirs.data(), theirs.size() * sizeof(double));
  if (me_.rank == b) us = theirs;
  std::sort(us.begin(), us.end());
  return us;
}

}  // namespace clustermax::bench::net
