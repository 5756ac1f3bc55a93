#include <cstring>

#include "cli/cli.h"
#include "host/local_host.h"

int main(int argc, char** argv) {
  // A host root's command (host/local_host.h): chroot and exec, before anything else starts.
  if (argc > 1 && std::strcmp(argv[1], clustermax::host::kInRootCommand) == 0)
    return clustermax::host::RunInRoot(argc, argv);
  return clustermax::cli::Main(argc, argv);
}
