// Pure parsers of real command output and system files. Each takes text and returns facts;
// nullopt means "the text did not have the expected shape" (the collector then records a
// parse-error with the raw text). Fixtures: tests/fixtures/parsers/.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clustermax::collect {

struct OsRelease {
  std::string id, version_id, codename, pretty_name;
};
std::optional<OsRelease> ParseOsRelease(std::string_view text);

// "Cuda compilation tools, release 13.0, V13.0.48" -> "13.0"
std::optional<std::string> ParseNvccRelease(std::string_view text);
// "runc version 1.1.12" -> "1.1.12"
std::optional<std::string> ParseRuncVersion(std::string_view text);
// "Docker version 28.2.2, build e6534b4" -> "28.2.2"; nullopt for podman/nerdctl shims.
std::optional<std::string> ParseDockerClientVersion(std::string_view text);

// `nvidia-smi boost-slider -l`: one row per GPU and slider ("|   0     vboost    4    0   |");
// nullopt when no row parses.
struct BoostSlider {
  int gpu = 0;
  std::string slider;
  int max_value = 0, current = 0;
};
std::optional<std::vector<BoostSlider>> ParseBoostSliderList(std::string_view text);
// "NVIDIA Container Toolkit CLI version 1.17.8" (also the runtime/hook banners) -> "1.17.8"
std::optional<std::string> ParseNvidiaCtkVersion(std::string_view text);
// "perf version 6.1.192" -> "6.1.192"
std::optional<std::string> ParsePerfVersion(std::string_view text);
// dcgmi / nv-hostengine banners: the first "version" line with a dotted number.
std::optional<std::string> ParseToolVersionLine(std::string_view text);
// A version alone on the first line ("3.4.1", `enroot version`), or after "version" as above.
std::optional<std::string> ParseBareVersion(std::string_view text);

struct ProcNvidiaVersion {
  std::string driver_version;
  bool open_module = false;
};
// /proc/driver/nvidia/version: "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05 ..."
std::optional<ProcNvidiaVersion> ParseProcNvidiaVersion(std::string_view text);

struct CpuInfo {
  std::string model;
  int logical_cpus = 0;
  bool vmx = false, svm = false, hypervisor = false;
};
std::optional<CpuInfo> ParseCpuinfo(std::string_view text);

struct Mount {
  std::string mount_point, fstype, source;
};
// /proc/self/mountinfo, in order (a later mount on the same point hides an earlier one).
std::vector<Mount> ParseMountinfo(std::string_view text);

struct LdconfigEntry {
  std::string soname, path;
};
// `ldconfig -p` lines "\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2"
std::vector<LdconfigEntry> ParseLdconfig(std::string_view text);

// Per-user quota reports: `quota -s -w` (ext4, XFS, NFS through rquotad), `lfs quota -u` (Lustre) and
// `mmlsquota -u` (GPFS). Each row is one filesystem's block usage, soft quota and hard limit as
// printed ("5120M", "10485760", "0"); `none` when the tool says the user has no quota.
struct QuotaRow {
  std::string filesystem, used, soft, hard;
  bool limited = false;  // soft or hard > 0
};
struct QuotaReport {
  bool none = false;
  std::vector<QuotaRow> rows;
};
QuotaReport ParseQuotaReport(std::string_view text);

// NCCL_MAJOR / NCCL_MINOR / NCCL_PATCH from nccl.h -> "2.27.3"
std::optional<std::string> ParseNcclHeaderVersion(std::string_view text);
// The version in a library file name: "libnccl.so.2.27.3" -> "2.27.3" (needs 3 components).
std::optional<std::string> VersionFromSoname(std::string_view filename, std::string_view stem);

struct KernelPackage {
  std::string package, version;
};
// dpkg-query -W -f='${Package} ${Version}\n' 'linux-image-[0-9]*'
std::vector<KernelPackage> ParseDpkgPackageList(std::string_view text);
// "linux-image-6.8.0-124-generic" -> ("6.8.0-124-generic")
std::optional<std::string> KernelReleaseFromPackage(std::string_view package);
// The flavour suffix of a kernel release: "6.8.0-124-generic" -> "generic", "6.1.0-31-cloud-amd64" -> "cloud-amd64"
std::string KernelFlavour(std::string_view release);

// `nvidia-smi -L`: "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-...)" -> one entry per GPU line.
std::vector<std::string> ParseNvidiaSmiList(std::string_view text);

// `dcgmi diag -j` (keys of NVIDIA/DCGM nvvs/include/NvvsJsonStrings.h): one entry per result.
struct DcgmDiagResult {
  std::string category, test, status;  // status lower-case: pass, fail, warn, skip, ...
  std::string gpu;                     // gpu_id or entity id, empty for system-wide results
  std::vector<std::string> warnings;   // "warning" texts, with their error_id when present
};
struct DcgmDiag {
  std::vector<DcgmDiagResult> results;
  std::string runtime_error;
};
std::optional<DcgmDiag> ParseDcgmDiagJson(std::string_view text, std::string* error);
// The table `dcgmi diag -r N` prints without -j: one result per test row ("Pass", "Pass - All",
// "Fail - GPU: 0", and DCGM 4's per-GPU "GPU0: Pass" rows under a test), Error/Warning rows (text
// wrapped over several rows) attached to the test above them. Metadata and Info rows are not
// results. nullopt (with `error`) when there is no diagnostic table.
std::optional<DcgmDiag> ParseDcgmDiagTable(std::string_view text, std::string* error);

// RDMA ports as `ibstat`, `ibstatus` or `ibv_devinfo` print them, in the words of sysfs (what the
// rdma.devices collector reads): state "4: ACTIVE", phys_state "5: LinkUp", rate "100 Gb/sec".
// A field the tool does not print (ibv_devinfo has no rate) stays empty.
struct RdmaPortText {
  std::string port, state, phys_state, rate, link_layer;
};
struct RdmaDeviceText {
  std::string name, fw_ver, ca_type;
  std::vector<RdmaPortText> ports;
};
std::vector<RdmaDeviceText> ParseRdmaListing(std::string_view text);

// PCI config space: the ACS Control register of the ACS extended capability (ID 0x000D).
// `unreadable` when the extended space (offset 0x100 and up) was not read (non-root readers get
// 64 or 256 bytes); `present` false when the device has no ACS capability.
struct AcsControl {
  bool unreadable = false;
  bool present = false;
  uint16_t control = 0;
  bool RedirectsP2p() const { return present && (control & 0x000C) != 0; }  // P2P Request/Completion Redirect
};
AcsControl ParseAcsControl(std::string_view config);

// GPU events in a kernel log (journalctl -k -o short-iso, dmesg -T, plain dmesg, syslog): NVIDIA Xid
// lines (also the legacy "NVRM: Xid (0000:03:00): 32" form without "PCI:"), NVSwitch SXid lines,
// and the driver's non-Xid messages of core::XidCatalog (GPU fallen off the bus, RmInitAdapter
// failed, GSP RPC timeouts, NVLink fatal errors ...). Counts are exact, per event key and per UTC day
// of the line's timestamp ("undated" when the line carries none, as plain dmesg and syslog do), so
// a judge can apply its window to every source alike; the event list keeps the newest
// `max_events` (the log's last lines), newest first, and says when it was cut.
struct GpuLogEvent {
  std::string kind;   // "Xid", "SXid" or "message"
  int code = 0;       // Xid/SXid code
  std::string match;  // the catalog message that matched (kind "message")
  std::string pci;
  std::string day;  // "2026-11-29", or "" when undated
  std::string line;
  std::string Key() const;  // "Xid 79", "SXid 12028", "message: has fallen off the bus"
};
struct GpuLogScan {
  std::vector<GpuLogEvent> events;                          // newest first
  std::map<std::string, std::map<std::string, long>> days;  // day (or "undated") -> key -> count
  long total = 0;
  bool truncated = false;
};
GpuLogScan ParseGpuKernelLog(std::string_view text, size_t max_events);
// The UTC day of a kernel-log line's timestamp: "2026-11-29T10:00:01+0000 ..." (journalctl
// short-iso) or "[Sun Nov 29 10:00:01 2026] ..." (dmesg -T); "" for none.
std::string KernelLogDay(std::string_view line);

// The PCI addresses on a sysfs device path, root first: ".../pci0000:00/0000:00:01.0/0000:19:00.0".
std::vector<std::string> PciChain(std::string_view sysfs_path);

// ---- moved out of the collectors (tests/parsers_test.cc holds them to captured text) ----

// MemTotal of /proc/meminfo ("MemTotal:       263857972 kB") or of a NUMA node's meminfo
// ("Node 0 MemTotal:       131927736 kB"), in kB; nullopt when there is no such line.
std::optional<long long> ParseMemTotalKb(std::string_view meminfo);

// `dcgm-exporter --version`: releases are named <dcgm>-<exporter> ("4.5.3-4.8.2"); an older or
// custom build may print one version, which is the exporter's (dcgm unknown). nullopt: no version.
struct DcgmExporterVersion {
  std::optional<std::string> dcgm;
  std::string exporter;
};
std::optional<DcgmExporterVersion> ParseDcgmExporterVersion(std::string_view text);

// An NVIDIA HPC SDK release directory name under /opt/nvidia/hpc_sdk/<arch>/: "25.7", "24.11".
bool IsHpcSdkRelease(std::string_view dir_name);
// `nvc --version` / `nvc++ --version` / `nvfortran --version`: "nvc++ 25.7-0 64-bit target on
// x86-64 Linux ..." -> "25.7"; nullopt when no compiler banner is there.
std::optional<std::string> ParseHpcSdkCompilerVersion(std::string_view text);

// `ncu --version`: "Version 2025.3.1.0 (build ...)" -> "2025.3.1.0".
std::optional<std::string> ParseNcuVersion(std::string_view text);

// `lsblk -d -b -P -o NAME,TYPE,...`: one map per line, keys lower-cased (name, type, size, ...);
// lines without a KEY="value" pair are skipped.
std::vector<std::map<std::string, std::string>> ParseLsblkPairs(std::string_view text);

// /proc/net/tcp or /proc/net/tcp6: the sockets in LISTEN state (st 0A), with their port and bind
// scope: "any" (0.0.0.0 / ::), "loopback" (127.x / ::1) or "address".
struct TcpListener {
  unsigned long long port = 0;
  std::string scope;
};
std::vector<TcpListener> ParseProcNetTcpListeners(std::string_view text, bool ipv6);

// `apt-cache policy PACKAGE`: the "Installed:" version (nullopt when the line is absent or empty)
// and the repository URLs listed under the installed version's "***" line.
struct AptPolicy {
  std::optional<std::string> installed;
  std::vector<std::string> origins;
};
AptPolicy ParseAptCachePolicy(std::string_view text);

// /proc/driver/nvidia/params: "Key: value" lines -> key -> value (trimmed).
std::map<std::string, std::string> ParseNvidiaParams(std::string_view text);

}  // namespace clustermax::collect
