// Runs one command with separate stdout/stderr pipes, a deadline and an output cap.
// The child gets its own process group; on timeout the whole group is killed (SIGKILL), so a
// hung tool and anything it spawned cannot hang the audit. stdin is /dev/null, or `stdin_data`
// (held in an anonymous memory file, so a child that never reads it cannot block us).
// A child that exits while something it started still holds stdout or stderr (`daemon & exit 0`)
// is not a timeout: after a short grace period (300 ms, or what is left of the timeout) the rest
// of its process group is killed and the command is reported with its own exit status, the output
// that arrived, and `error` saying that the output was cut there.
#pragma once
#include <chrono>
#include <functional>
#include <string_view>
#include <string>
#include <vector>

#include "host/host.h"

namespace clustermax::host {

// `path` is the resolved executable; argv[0] is passed unchanged. `env` entries "K=V" are added
// to (or replace in) the inherited environment.
// `on_stdout`, when set, sees each piece of stdout as it is read; with `keep_stdout` false it is
// the only reader (the result's `out` stays empty). `stop_when`, polled while the child runs, asks
// it to stop: `stop_signal` to its group (SIGUSR1 for srun, which forwards it to its tasks),
// SIGKILL 35 s later.
CommandResult RunProcess(const std::string& path, const std::vector<std::string>& argv,
                         std::chrono::milliseconds timeout, size_t max_output, const std::vector<std::string>& env,
                         const std::function<void(std::string_view)>& on_stdout = {}, bool keep_stdout = true,
                         const std::string& stdin_data = "", const std::function<bool()>& stop_when = {},
                         int stop_signal = SIGTERM);

}  // namespace clustermax::host
