// Shared test helpers: fixture paths and reading, running a shell command.
#pragma once
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "core/evidence.h"
#include "host/host.h"
#include "util/files.h"

namespace clustermax::testing {

// Whether something accepts TCP connections on the loopback `port` now.
inline bool Accepts(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  bool ok = fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  if (fd >= 0) ::close(fd);
  return ok;
}

// A loopback TCP port free at this moment (bound, read back and released; a server started by the
// test binds it moments later). 0 when none could be had.
inline int FreePort() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (s >= 0 && ::bind(s, reinterpret_cast<sockaddr*>(&a), len) == 0 &&
      ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  if (s >= 0) ::close(s);
  return port;
}

inline std::filesystem::path SourceDir() { return CLUSTERMAX_SOURCE_DIR; }
inline std::filesystem::path Fixture(const std::string& rel) { return SourceDir() / "tests" / "fixtures" / rel; }
inline std::string ReadFixture(const std::string& rel) {
  auto t = util::ReadLocalFile(Fixture(rel));
  if (!t) throw std::runtime_error("missing fixture " + rel);
  return *t;
}

// Evidence collected fine, with `data`.
inline core::Evidence Ok(const std::string& id, nlohmann::json data) {
  core::Evidence e;
  e.id = id;
  e.status = core::EvidenceStatus::kOk;
  e.data = std::move(data);
  return e;
}
// A command that ran, with its stdout, exit code and stderr.
inline host::CommandResult Out(const std::string& text, int code = 0, const std::string& err = "") {
  host::CommandResult r;
  r.status = host::IoStatus::kOk;
  r.exit_code = code;
  r.out = text;
  r.err = err;
  return r;
}

struct Shell {
  int code = -1;
  std::string out;
};
// Runs `cmd` with /bin/sh (test-only convenience) and returns its exit code and stdout; stderr
// joins stdout unless the command redirects it itself.
inline Shell RunShell(const std::string& cmd) {
  Shell p;
  FILE* f = ::popen((cmd.find(" 2>") == std::string::npos ? cmd + " 2>&1" : cmd).c_str(), "r");
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) p.out.append(buf, n);
  int st = ::pclose(f);
  p.code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return p;
}

#ifdef CLUSTERMAX_BUILD_DIR
// A fresh directory under the build tree's test-scratch/, unique to this test process.
inline std::filesystem::path ScratchDir(const std::string& name) {
  std::filesystem::path d =
      std::filesystem::path(CLUSTERMAX_BUILD_DIR) / "test-scratch" / (name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}
#endif

#ifdef CLUSTERMAX_BINARY
// The built binary with `args` (stderr folded into the output, no stdin), `env` assignments first.
inline Shell RunBinary(const std::string& args, const std::string& env = "") {
  return RunShell(env + " " + CLUSTERMAX_BINARY + " " + args + " 2>&1 </dev/null");
}
#endif

}  // namespace clustermax::testing
