// Pure parsers of Slurm 22.05+ command output (no `scontrol --json` there): `scontrol show config`,
// `scontrol show node -o` / `show partition -o` lines, `scontrol ping`, `srun --mpi=list`,
// `scontrol show topology`, and Slurm hostlists ("n[1-3,7],gpu01").
#pragma once
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustermax::util {

// A per-node template (a log path, a command: "/var/log/hosts/{node}/kern.log") with every
// "{node}" replaced by the node's name.
std::string ForNode(std::string text, const std::string& node);

// "Key = Value" lines of `scontrol show config` (the header line and blank lines are skipped).
std::map<std::string, std::string> ParseScontrolConfig(std::string_view text);
// One `-o` line: "NodeName=n1 Arch=x86_64 ... OS=Linux 6.1 #1 SMP ... Reason=Not responding [root@..]".
// Values may contain spaces: a value runs to the next " Key=" token.
std::map<std::string, std::string> ParseScontrolRecord(std::string_view line);
std::vector<std::map<std::string, std::string>> ParseScontrolRecords(std::string_view text);
// "Slurmctld(primary) at vm is UP" -> {role, host, up}.
struct ControllerState {
  std::string role, host;
  bool up = false;
};
std::vector<ControllerState> ParseScontrolPing(std::string_view text);
// Plugin names from `srun --mpi=list` (22.05: "MPI plugin types are...\n\tnone\n\tpmix\n...
// specific pmix plugin versions available: pmix_v4"; 23.x+: "MPI plugin types are...\n\tcray_shasta...").
std::vector<std::string> ParseMpiList(std::string_view text);
// Expands a Slurm hostlist; nullopt when malformed.
std::optional<std::vector<std::string>> ExpandHostlist(std::string_view list);
// Gres strings: "gpu:h100:8(S:0-1),gpu:a100:2" -> per entry {name, type, count}.
struct GresEntry {
  std::string name, type;
  long long count = 0;
};
std::vector<GresEntry> ParseGres(std::string_view gres);

}  // namespace clustermax::util
