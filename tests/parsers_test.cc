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
  EXPECT_EQ(ParseRuncVersion("runc version 1.1.12\ncommit: v1.1.12-0-g51d5e94\nspec: 1.0.2-dev\ngo: go1.20.13\n"), "1.1.12");
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
  auto prop = ParseProcNvidiaVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.183.01  Sun May 12 19:39:15 UTC 2024\n");
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
  EXPECT_EQ(ParseNvidiaSmiList("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-1)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-2)\n").size(), 2u);
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
  auto over = ParseQuotaReport("Disk quotas for user bob (uid 1001): \n     Filesystem   space   quota   limit   grace   files   quota   limit   grace\n"
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
