// One kubectl call as clustermax makes it (the cluster collectors and the node fan-out alike): the
// audit's context when one was named, and a request timeout, so no call waits on a dead API server.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace clustermax::collect::k8s {

// `kubectl [--context=C] --request-timeout=Ns ARGS...` for a call that must end within timeout_s
// (the request is given a second less, at least one).
inline std::vector<std::string> KubectlArgv(const std::string& context, long long timeout_s,
                                            const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"kubectl"};
  if (!context.empty()) argv.push_back("--context=" + context);
  argv.push_back(fmt::format("--request-timeout={}s", std::max<long long>(1, timeout_s - 1)));
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace clustermax::collect::k8s
