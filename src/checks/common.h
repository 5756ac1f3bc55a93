// Helpers shared by the check files: applicability from the PCI inventory and the mapping from a
// minimum-table comparison to a finding. Pure functions of evidence.
#pragma once
#include <optional>
#include <set>
#include <string>

#include "core/check.h"

namespace clustermax::checks {

using core::Finding;
using core::JudgeContext;
using core::Reason;
using core::Severity;
using nlohmann::json;

// GPUs in a PCI inventory evidence item ("pci.devices"), by vendor ("0x10de", "0x1002", "" = any).
int CountPciGpus(const core::Evidence& pci, std::string_view vendor = "");

// BlueField functions (vendor 0x15b3, a BlueField device id from the thresholds data) in a PCI inventory.
int CountBlueField(const core::Evidence& pci);

// Applicability for NVIDIA checks: SKIP not-applicable only when a complete PCI inventory was
// read and holds no NVIDIA GPU. Returns nullopt when the check applies (or may apply).
std::optional<Finding> SkipUnlessNvidia(const core::Evidence& pci, const core::Evidence& gpu);

// Maps a comparison to PASS / WARN / FAIL with observed, expected, advisory and grace details.
Finding FromComparison(const core::Comparison& c, const std::string& what, const std::string& observed);

// The component of the minimum table, or a WARN tool-fault finding when the table lacks it.
const core::Component* Component(const JudgeContext& ctx, std::string_view id, std::optional<Finding>& problem);

// True when the evidence says the tool was looked up and is absent ({"installed": false}).
bool NotInstalled(const core::Evidence& e);
// Whether a process whose name (comm, cut at 15 characters) starts with `prefix` runs; false when
// the process list was not read.
bool Running(const core::Evidence& procs, std::string_view prefix);
// An NCCL variable as a job sees it ("nccl.config"): the step's environment first, then the
// configuration files in the order they were read; "" when unset or unreadable.
std::string NcclSetting(const core::Evidence& cfg, const char* key);
// How dcgm-exporter ("gpu-exporter.config") labels GPU series with the workload: the flag, variable
// or unit-file line that sets --hpc-job-mapping-dir (Slurm) or Kubernetes mode; empty when none.
std::vector<std::string> ExporterAttribution(const core::Evidence& cfg, bool slurm);
// Monitoring agents running on a node, by process name (comm) or well-known port: "gpu exporter",
// "node exporter", "log shipper", "slurm exporter", "prometheus", "grafana", "alertmanager",
// "log store".
std::set<std::string> MonitoringAgents(const core::Evidence& procs, const core::Evidence& listeners);

// monitoring-readiness, on either scheduler: ten parts, one point each; >= 8 PASS (production),
// 5-7 WARN (partial), < 5 FAIL (minimal), each part listed with where it was seen. A part whose
// evidence was not read counts as absent, and when counting it present would change the verdict
// the finding is WARN unverified instead.
struct ReadinessPart {
  std::string name;
  bool ok = false;
  std::string where;
  bool unread = false;
};
Finding ReadinessScore(const std::vector<ReadinessPart>& parts, const std::string& expected);
// The first number of a sysfs RDMA port rate ("400 Gb/sec (4X NDR)" -> 400); nullopt if none.
std::optional<double> PortRateGbps(const nlohmann::json& rate);

// One port of "rdma.devices", classified for the GPU fabric. A rail is an InfiniBand port, or a
// RoCE port (Ethernet link layer) at >= fabric_min_gbps (data/node-thresholds.json, 100 Gb/s) or of
// unread rate, on a physical function; or an EFA device. Not rails: RDMA devices over a bond (mlx5_bond_N, or a GID
// netdev that is a bond master), SR-IOV virtual functions whose physical function is on this node
// (sysfs physfn), Ethernet VFs (a guest's accelerated networking), and slower Ethernet (frontend,
// storage). An InfiniBand VF without a physfn link is a guest's passed-through rail (Azure ND).
struct RdmaPortClass {
  std::string name;  // "mlx5_0/1"
  std::string kind;  // "InfiniBand", "RoCE", "EFA", "?" or the link layer read
  std::optional<double> gbps;
  std::string state;  // "" when unread
  bool rail = false;
  std::string why_not;                   // for non-rails: "bond", "SR-IOV VF", "slow Ethernet", ...
  std::string because;                   // for non-rails: the sentence a report shows
  const nlohmann::json* port = nullptr;  // into the evidence
};
std::vector<RdmaPortClass> ClassifyRdmaPorts(const nlohmann::json& rdma_devices_data);
// "not counted as rails: mlx5_bond_0/1 (RDMA over bond0 ...)" lines, one per non-rail port.
std::vector<std::string> NotRailLines(const std::vector<RdmaPortClass>& ports);

// The Kubernetes half of rows judged on both schedulers (the Slurm half is in slurm.cc, which
// calls these on the Kubernetes target): from the API view only.
Finding AutoRemediationOnKubernetes(const core::JudgeContext& ctx);
Finding MonitoringReadinessOnKubernetes(const core::JudgeContext& ctx);
Finding TopologyConfOnKubernetes(const core::JudgeContext& ctx);
Finding MnnvlComputeDomainOnKubernetes(const core::JudgeContext& ctx);
Finding PrologFastOnKubernetes(const core::JudgeContext& ctx);
// The network tiers the scheduler's topology describes (nccl-ib-qps-entropy): levels -1 when it
// tells nothing; `why` says where the number came from.
struct FabricTiers {
  int levels = -1;
  std::string why;
  size_t gpu_nodes = 0;
};
FabricTiers FabricTiersOnKubernetes(const core::JudgeContext& ctx);

void RegisterVersionChecks(core::Registry& r);
void RegisterIsolationChecks(core::Registry& r);
void RegisterHardwareChecks(core::Registry& r);
void RegisterSoftwareChecks(core::Registry& r);
void RegisterContainerChecks(core::Registry& r);
void RegisterAccessChecks(core::Registry& r);
void RegisterHealthChecks(core::Registry& r);
void RegisterGpuChecks(core::Registry& r);
void RegisterNodeChecks(core::Registry& r);
void RegisterFabricChecks(core::Registry& r);
void RegisterServiceChecks(core::Registry& r);
void RegisterSlurmChecks(core::Registry& r);
void RegisterKubernetesChecks(core::Registry& r);

}  // namespace clustermax::checks
