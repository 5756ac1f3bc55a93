// Parsers against real captured output (tests/fixtures/parsers/, recorded on this project's
// Debian 12 machine) and documented formats.
#include <gtest/gtest.h>

#include "collect/parsers.h"
#include "testutil.h"

using namespace clustermax::collect;
using clustermax::testing::ReadFixture;

TEST(Parsers, OsRelease) {
  auto r = ParseOsRelease(ReadFixture("parsers/os-release-debian12.txt"));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->id, "debian");
  EXPECT_EQ(r->version_id, "12");
  EXPECT_EQ(r->codename, "bookworm");
  auto noble = ParseOsRelease("ID=ubuntu\nVERSION_ID=\"24.04\"\n");
  EXPECT_EQ(noble->codename, "noble");
  EXPECT_FALSE(ParseOsRelease("garbage"));
}

TEST(Parsers, Nvcc) {
  EXPECT_EQ(ParseNvccRelease(ReadFixture("parsers/nvcc-version-13.0.txt")), "13.0");
  EXPECT_FALSE(ParseNvccRelease("nvcc: command not found"));
}

TEST(Parsers, DockerClient) {
  EXPECT_EQ(ParseDockerClientVersion(ReadFixture("parsers/docker-version-client.txt")), "28.2.2");
  EXPECT_FALSE(ParseDockerClientVersion("podman version 4.3.1"));
  EXPECT_FALSE(ParseDockerClientVersion("nerdctl version 1.7.6"));
}

TEST(Parsers, Perf) {
  EXPECT_EQ(ParsePerfVersion(ReadFixture("parsers/perf-version.txt")), "6.1.187");
  EXPECT_FALSE(ParsePerfVersion("E: linux-perf-6.18 is not installed."));
}

TEST(Parsers, RuncAndToolkitAndDcgm) {
  EXPECT_EQ(ParseRuncVersion("runc version 1.1.12\ncommit: v1.1.12-0-g51d5e94\nspec: 1.0.2-dev\ngo: go1.20.13\n"),
            "1.1.12");
  EXPECT_EQ(ParseRuncVersion("runc version 1.3.0-rc.1\n"), "1.3.0-rc.1");
  EXPECT_EQ(ParseNvidiaCtkVersion("NVIDIA Container Toolkit CLI version 1.17.8\ncommit: f202b80\n"), "1.17.8");
  EXPECT_EQ(ParseNvidiaCtkVersion("NVIDIA Container Runtime version 1.19.1\ncommit: abc\n"), "1.19.1");
  EXPECT_EQ(ParseToolVersionLine("dcgmi  version: 4.2.3\n"), "4.2.3");
  EXPECT_EQ(ParseToolVersionLine("Version : 3.3.5\nBuild ID : 14\n"), "3.3.5");
}

TEST(Parsers, ProcDriverNvidia) {
  auto open = ParseProcNvidiaVersion(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U22-I3-AE18-23-3)  "
      "Tue Sep 23 09:50:11 UTC 2025\nGCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04.2)\n");
  ASSERT_TRUE(open);
  EXPECT_EQ(open->driver_version, "580.95.05");
  EXPECT_TRUE(open->open_module);
  auto prop = ParseProcNvidiaVersion(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n");
  ASSERT_TRUE(prop);
  EXPECT_EQ(prop->driver_version, "535.183.01");
  EXPECT_FALSE(prop->open_module);
  EXPECT_FALSE(ParseProcNvidiaVersion(""));
}

TEST(Parsers, Cpuinfo) {
  auto c = ParseCpuinfo(ReadFixture("parsers/cpuinfo-x86.txt"));
  ASSERT_TRUE(c);
  EXPECT_GE(c->logical_cpus, 1);
  EXPECT_FALSE(c->model.empty());
}

TEST(Parsers, LdconfigAndNccl) {
  auto entries = ParseLdconfig(ReadFixture("parsers/ldconfig-p-nccl.txt"));
  ASSERT_GE(entries.size(), 2u);
  EXPECT_EQ(entries[0].soname, "libnccl.so.2");
  EXPECT_EQ(entries[0].path, "/usr/local/cuda-13.0/lib/libnccl.so.2");
  EXPECT_EQ(VersionFromSoname("libnccl.so.2.28.9", "libnccl"), "2.28.9");
  EXPECT_FALSE(VersionFromSoname("libnccl.so.2", "libnccl"));
  EXPECT_EQ(ParseNcclHeaderVersion("#define NCCL_MAJOR 2\n#define NCCL_MINOR 28\n#define NCCL_PATCH 9\n"), "2.28.9");
}

TEST(Parsers, Kernels) {
  EXPECT_EQ(KernelReleaseFromPackage("linux-image-6.8.0-124-generic"), "6.8.0-124-generic");
  EXPECT_EQ(KernelReleaseFromPackage("linux-image-unsigned-6.8.0-124-generic"), "6.8.0-124-generic");
  EXPECT_FALSE(KernelReleaseFromPackage("linux-image-generic"));
  EXPECT_EQ(KernelFlavour("6.1.0-31-cloud-amd64"), "cloud-amd64");
  EXPECT_EQ(
      ParseNvidiaSmiList("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n")
          .size(),
      2u);
}

TEST(Parsers, AcsControlFromConfigSpace) {
  std::string cfg(4096, '\0');
  // 0x100: AER (ID 0x0001) pointing to 0x148; 0x148: ACS (ID 0x000D), control 0x000C.
  auto put32 = [&](size_t off, uint32_t v) {
    for (int i = 0; i < 4; ++i) cfg[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  };
  put32(0x100, 0x0001 | (1u << 16) | (0x148u << 20));
  put32(0x148, 0x000d | (1u << 16));
  put32(0x14c, 0x000c0000u | 0x005f);
  auto a = ParseAcsControl(cfg);
  EXPECT_FALSE(a.unreadable);
  EXPECT_TRUE(a.present);
  EXPECT_EQ(a.control, 0x000c);
  EXPECT_TRUE(a.RedirectsP2p());
  put32(0x148, 0x0002 | (1u << 16));  // VC instead: no ACS in the list
  EXPECT_FALSE(ParseAcsControl(cfg).present);
  EXPECT_TRUE(ParseAcsControl(cfg.substr(0, 256)).unreadable);
  auto chain = PciChain("../../../devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:19:00.0");
  ASSERT_EQ(chain.size(), 3u);
  EXPECT_EQ(chain[2], "0000:19:00.0");
}

// Layouts from the tools' own printf formats: quota-tools (`quota -s -w`), lfs quota (old "kbytes
// quota limit" and newer "bquota blimit" headers, long mount names wrapped) and GPFS mmlsquota.
TEST(Parsers, QuotaReports) {
  auto q = ParseQuotaReport(
      "Disk quotas for user alice (uid 1000): \n"
      "     Filesystem   space   quota   limit   grace   files   quota   limit   grace\n"
      "nfs1:/export/home   1024M   5120M   6144M            12345       0       0        \n"
      "      /dev/sdb1      4K      0K      0K               1       0       0        \n");
  ASSERT_EQ(q.rows.size(), 2u);
  EXPECT_FALSE(q.none);
  EXPECT_EQ(q.rows[0].filesystem, "nfs1:/export/home");
  EXPECT_EQ(q.rows[0].soft, "5120M");
  EXPECT_EQ(q.rows[0].hard, "6144M");
  EXPECT_TRUE(q.rows[0].limited);
  EXPECT_FALSE(q.rows[1].limited);
  auto over = ParseQuotaReport(
      "Disk quotas for user bob (uid 1001): \n     Filesystem   space   quota   limit   grace   files   quota   limit   grace\n"
      "nfs1:/export/home   5200M*  5120M   6144M   6days   100  0  0\n");
  ASSERT_EQ(over.rows.size(), 1u);
  EXPECT_EQ(over.rows[0].used, "5200M*");
  EXPECT_TRUE(over.rows[0].limited);
  EXPECT_TRUE(ParseQuotaReport("Disk quotas for user carol (uid 1002): none\n").none);
  EXPECT_TRUE(ParseQuotaReport("").rows.empty());
  auto lustre = ParseQuotaReport(
      "Disk quotas for usr alice (uid 1000):\n"
      "     Filesystem  kbytes   quota   limit   grace   files   quota   limit   grace\n"
      "/lustre/scratch/projects\n"
      "                  4096       0 104857600       -      12       0       0       -\n");
  ASSERT_EQ(lustre.rows.size(), 1u);
  EXPECT_EQ(lustre.rows[0].filesystem, "/lustre/scratch/projects");
  EXPECT_EQ(lustre.rows[0].hard, "104857600");
  EXPECT_TRUE(lustre.rows[0].limited);
  auto unlimited = ParseQuotaReport(
      "Disk quotas for usr alice (uid 1000):\n"
      "      Filesystem  kbytes  bquota  blimit  bgrace   files  iquota  ilimit  igrace\n"
      "         /lustre       4       0       0       -       1       0       0       -\n");
  ASSERT_EQ(unlimited.rows.size(), 1u);
  EXPECT_FALSE(unlimited.rows[0].limited);
  auto gpfs = ParseQuotaReport(
      "                         Block Limits                                    |     File Limits\n"
      "Filesystem type             KB      quota      limit   in_doubt    grace |    files   quota    limit in_doubt    grace  Remarks\n"
      "gpfs1      USR           1000   10485760   12582912          0     none |       10       0        0        0     none\n");
  ASSERT_EQ(gpfs.rows.size(), 1u);
  EXPECT_EQ(gpfs.rows[0].filesystem, "gpfs1");
  EXPECT_EQ(gpfs.rows[0].soft, "10485760");
  EXPECT_TRUE(gpfs.rows[0].limited);
}

// ---- parsers moved out of the collectors, on text captured from real machines ----
// Each sample is quoted as posted (excerpts cut at line boundaries), its public source named next
// to it; each test also flips one fact of the sample and checks the parser follows.

namespace {

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "mutation target '" << from << "' not found";
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

TEST(ParsersMoved, MemTotalOfProcMeminfoAndNodeMeminfo) {
  // /proc/meminfo, first lines, from "Understanding /proc/meminfo file" (thegeekdiary.com,
  // https://www.thegeekdiary.com/understanding-proc-meminfo-file-analyzing-memory-utilization-in-linux/).
  const std::string proc =
      "MemTotal:        1882064 kB\nMemFree:         1376380 kB\nMemAvailable:    1535676 kB\n"
      "Buffers:            2088 kB\nCached:           292324 kB\nSwapCached:            0 kB\n";
  EXPECT_EQ(ParseMemTotalKb(proc), 1882064);
  // /sys/devices/system/node/node0/meminfo as quoted in kernel bug 53501 "Duplicated MemTotal with
  // different values" (linux-mm, David Rientjes, 2013-02-12), beside the same machine's /proc/meminfo.
  const std::string node = "Node 0 MemTotal:       16776380 kB\n";
  EXPECT_EQ(ParseMemTotalKb(node), 16776380);
  EXPECT_EQ(ParseMemTotalKb("MemTotal:       16435048 kB\n"), 16435048);
  // Mutations: another value; the line gone; a unit the kernel does not print.
  EXPECT_EQ(ParseMemTotalKb(Replace(node, "16776380", "33552760")), 33552760);
  EXPECT_EQ(ParseMemTotalKb(Replace(proc, "MemTotal:", "MemTotaI:")), std::nullopt);
  EXPECT_EQ(ParseMemTotalKb(Replace(node, " kB", " MB")), std::nullopt);
}

TEST(ParsersMoved, DcgmExporterVersion) {
  // `dcgm-exporter -v --debug` on a DGX A100, NVIDIA/DCGM issue #155 "dcgm-exporter crashes
  // hostengine" (https://github.com/NVIDIA/DCGM/issues/155, Versions section).
  const std::string text = "DCGM Exporter version 3.3.5-3.4.0\n";
  auto v = ParseDcgmExporterVersion(text);
  ASSERT_TRUE(v);
  EXPECT_EQ(v->dcgm, "3.3.5");
  EXPECT_EQ(v->exporter, "3.4.0");
  // Mutations: a build that prints only its own version (dcgm unknown); no version at all.
  auto single = ParseDcgmExporterVersion(Replace(text, "3.3.5-3.4.0", "3.4.0"));
  ASSERT_TRUE(single);
  EXPECT_EQ(single->dcgm, std::nullopt);
  EXPECT_EQ(single->exporter, "3.4.0");
  EXPECT_FALSE(ParseDcgmExporterVersion(Replace(text, "3.3.5-3.4.0", "unknown")));
}

TEST(ParsersMoved, HpcSdkReleaseAndCompilerVersion) {
  // `nvfortran --version` of HPC SDK 24.3, from the bug report "nvfortran 24.3 false compiler error
  // for type-bound operator" (https://forums.developer.nvidia.com/t/290383, as kept in
  // github.com/btrettel/flt's bug0004 notes).
  const std::string text =
      "\nnvfortran 24.3-0 64-bit target on x86-64 Linux -tp haswell \nNVIDIA Compilers and Tools\n"
      "Copyright (c) 2024, NVIDIA CORPORATION & AFFILIATES.  All rights reserved.\n";
  EXPECT_EQ(ParseHpcSdkCompilerVersion(text), "24.3");
  // Mutations: another release; PGI's pre-HPC-SDK compiler (pgfortran, not an HPC SDK release).
  EXPECT_EQ(ParseHpcSdkCompilerVersion(Replace(text, "24.3-0", "25.11-0")), "25.11");
  EXPECT_EQ(ParseHpcSdkCompilerVersion(Replace(text, "nvfortran 24.3-0", "pgfortran 18.4-0")), std::nullopt);
  // Release directories under /opt/nvidia/hpc_sdk/Linux_x86_64/ (the install layout of the
  // HPC SDK docs): "24.3", "25.11"; not "2024", "24.3-0" or the "compilers" symlink names.
  EXPECT_TRUE(IsHpcSdkRelease("24.3"));
  EXPECT_TRUE(IsHpcSdkRelease("25.11"));
  EXPECT_FALSE(IsHpcSdkRelease("2024"));
  EXPECT_FALSE(IsHpcSdkRelease("24.3-0"));
  EXPECT_FALSE(IsHpcSdkRelease("compilers"));
}

TEST(ParsersMoved, NcuVersion) {
  // `ncu --version` on ALCF Polaris (A100), from the ALCF user guide page "NVIDIA Nsight tools"
  // (github.com/argonne-lcf/user-guides, docs/polaris/performance-tools/NVIDIA-Nsight.md).
  const std::string text =
      "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2021 NVIDIA Corporation\n"
      "Version 2021.2.1.0 (build 30182073) (public-release)\n";
  EXPECT_EQ(ParseNcuVersion(text), "2021.2.1.0");
  // Mutations: a newer release; a version line without the four-digit year.
  EXPECT_EQ(ParseNcuVersion(Replace(text, "2021.2.1.0", "2025.1.1.0")), "2025.1.1.0");
  EXPECT_EQ(ParseNcuVersion(Replace(text, "Version 2021.2.1.0", "Version 21.2")), std::nullopt);
}

TEST(ParsersMoved, ProcNetTcpListeners) {
  // `cat /proc/net/tcp` on a Zabbix server (Debian), goss-org/goss issue #804 "goss does not see the
  // listening port" (https://github.com/goss-org/goss/issues/804, comment of 2023-02-21; trailing
  // padding spaces of the post dropped).
  const std::string text =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 00000000:2743 00000000:0000 0A 00000000:00000000 00:00000000 00000000   115        0 26222 3 ffff8c8814c11180 100 0 0 10 0\n"
      "   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 26636 1 ffff8c8812099a40 100 0 0 10 0\n"
      "   2: 00000000:0050 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 19250 1 ffff8c8814c12bc0 100 0 0 10 0\n"
      "   3: 00000000:01BB 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 19251 1 ffff8c8814c10000 100 0 0 10 0\n"
      "   4: 0100007F:1538 00000000:0000 0A 00000000:00000000 00:00000000 00000000   113        0 24477 1 ffff8c881209d780 100 0 0 10 0\n"
      "   5: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 19252 1 ffff8c8814c171c0 100 0 0 10 0\n"
      "   6: 3500007F:0035 00000000:0000 0A 00000000:00000000 00:00000000 00000000   101        0 20112 1 ffff8c880eb64600 100 0 0 10 0\n"
      "   7: 0100007F:0019 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 27702 1 ffff8c880ea89a40 100 0 0 10 0\n";
  auto l = ParseProcNetTcpListeners(text, false);
  ASSERT_EQ(l.size(), 8u);
  EXPECT_EQ(l[0].port, 10051u);  // zabbix-server, all addresses
  EXPECT_EQ(l[0].scope, "any");
  EXPECT_EQ(l[1].port, 22u);
  EXPECT_EQ(l[4].port, 5432u);  // PostgreSQL on 127.0.0.1
  EXPECT_EQ(l[4].scope, "loopback");
  EXPECT_EQ(l[6].port, 53u);  // systemd-resolved on 127.0.0.53
  EXPECT_EQ(l[6].scope, "loopback");
  // Mutations: sshd's row ESTABLISHED (01) instead of LISTEN; PostgreSQL bound to 10.0.0.5.
  EXPECT_EQ(
      ParseProcNetTcpListeners(Replace(text, "00000000:0016 00000000:0000 0A", "00000000:0016 00000000:0000 01"), false)
          .size(),
      7u);
  EXPECT_EQ(ParseProcNetTcpListeners(Replace(text, "0100007F:1538", "0500000A:1538"), false)[4].scope, "address");
}

TEST(ParsersMoved, AptCachePolicyInstalledOrigins) {
  // `apt-cache policy datacenter-gpu-manager` on a DGX A100 (DGX OS 5), NVIDIA/DCGM issue #155
  // (https://github.com/NVIDIA/DCGM/issues/155), excerpt: the first three versions of the table.
  const std::string text =
      "datacenter-gpu-manager:\n"
      "  Installed: 1:3.3.5\n"
      "  Candidate: 1:3.3.5\n"
      "  Version table:\n"
      " *** 1:3.3.5 580\n"
      "        580 https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2004/x86_64  Packages\n"
      "        100 /var/lib/dpkg/status\n"
      "     1:3.3.3 580\n"
      "        580 https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2004/x86_64  Packages\n"
      "     1:2.4.8 600\n"
      "        600 https://repo.download.nvidia.com/baseos/ubuntu/focal/x86_64 focal-updates/common amd64 Packages\n";
  AptPolicy p = ParseAptCachePolicy(text);
  EXPECT_EQ(p.installed, "1:3.3.5");
  ASSERT_EQ(p.origins.size(), 1u);  // the installed version's repositories only
  EXPECT_EQ(p.origins[0], "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu2004/x86_64");
  // Mutations: 2.4.8 installed from the DGX repository; nothing installed.
  std::string older = Replace(
      Replace(Replace(text, "Installed: 1:3.3.5", "Installed: 1:2.4.8"), " *** 1:3.3.5 580", "     1:3.3.5 580"),
      "     1:2.4.8 600", " *** 1:2.4.8 600");
  AptPolicy q = ParseAptCachePolicy(older);
  EXPECT_EQ(q.installed, "1:2.4.8");
  ASSERT_EQ(q.origins.size(), 1u);
  EXPECT_EQ(q.origins[0], "https://repo.download.nvidia.com/baseos/ubuntu/focal/x86_64");
  AptPolicy none =
      ParseAptCachePolicy(Replace(Replace(text, "Installed: 1:3.3.5", "Installed: (none)"), " *** ", "     "));
  EXPECT_EQ(none.installed, "(none)");
  EXPECT_TRUE(none.origins.empty());
}

TEST(ParsersMoved, NvidiaParams) {
  // /proc/driver/nvidia/params of driver 535-class, as read(2) in the strace of
  // NVIDIA/nvidia-container-toolkit issue #115 "Failed to initialize NVML: Unknown Error different
  // from the Notice" (https://github.com/NVIDIA/nvidia-container-toolkit/issues/115); excerpt.
  const std::string text =
      "ResmanDebugLevel: 4294967295\nRmLogonRC: 1\nModifyDeviceFiles: 0\nDeviceFileUID: 0\nDeviceFileGID: 0\nDeviceFileMode: 438\n"
      "InitializeSystemMemoryAllocations: 1\nUsePageAttributeTable: 4294967295\nEnableMSI: 1\nEnablePCIeGen3: 0\nMemoryPoolSize: 0\n"
      "KMallocHeapMaxSize: 0\nVMallocHeapMaxSize: 0\nIgnoreMMIOCheck: 0\nTCEBypassMode: 0\nEnableStreamMemOPs: 0\n"
      "EnableUserNUMAManagement: 1\nNvLinkDisable: 0\nRmProfilingAdminOnly: 1\nPreserveVideoMemoryAllocations: 0\n"
      "EnableS0ixPowerManagement: 0\nS0ixPowerManagementVideoMemoryThreshold: 256\nDynamicPowerManagement: 3\n"
      "DynamicPowerManagementVideoMemoryThreshold: 200\nRegisterPCIDriver: 1\nEnablePCIERelaxedOrderingMode: 0\n"
      "EnableResizableBar: 0\nEnableGpuFirmware: 18\nEnableGpuFirmwareLogs: 2\nEnableDbgBreakpoint: 0\n"
      "OpenRmEnableUnsupportedGpus: 0\nDmaRemapPeerMmio: 1\n";
  auto m = ParseNvidiaParams(text);
  EXPECT_EQ(m.size(), 32u);
  EXPECT_EQ(m["RmProfilingAdminOnly"], "1");
  EXPECT_EQ(m["EnableGpuFirmware"], "18");
  EXPECT_EQ(m["DeviceFileMode"], "438");
  // Mutation: profiling opened to every user.
  EXPECT_EQ(
      ParseNvidiaParams(Replace(text, "RmProfilingAdminOnly: 1", "RmProfilingAdminOnly: 0"))["RmProfilingAdminOnly"],
      "0");
}

TEST(ParsersMoved, LsblkPairs) {
  // `lsblk -d -b -P -o NAME,TYPE,SIZE,ROTA,TRAN,MODEL` in util-linux's KEY="value" pairs format. No
  // public capture of exactly these columns was found: these two lines are written in that format
  // (an NVMe disk and a SATA disk), not captured.
  const std::string text =
      "NAME=\"nvme0n1\" TYPE=\"disk\" SIZE=\"3840755982336\" ROTA=\"0\" TRAN=\"nvme\" MODEL=\"SAMSUNG MZQL23T8HCLS-00A07\"\n"
      "NAME=\"sda\" TYPE=\"disk\" SIZE=\"480103981056\" ROTA=\"0\" TRAN=\"sata\" MODEL=\"\"\n\n";
  auto d = ParseLsblkPairs(text);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0]["name"], "nvme0n1");
  EXPECT_EQ(d[0]["model"], "SAMSUNG MZQL23T8HCLS-00A07");
  EXPECT_EQ(d[1]["tran"], "sata");
  EXPECT_EQ(d[1]["model"], "");
  // Mutation: a spinning disk.
  EXPECT_EQ(ParseLsblkPairs(Replace(text, "ROTA=\"0\" TRAN=\"sata\"", "ROTA=\"1\" TRAN=\"sata\""))[1]["rota"], "1");
}
