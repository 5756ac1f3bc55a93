#include <gtest/gtest.h>

#include "gpu/smi_xml.h"
#include "testutil.h"

using clustermax::gpu::ParseNvidiaSmiXml;

TEST(SmiXml, ParsesEveryFieldTheChecksRead) {
  std::string err;
  auto d = ParseNvidiaSmiXml(clustermax::testing::ReadFixture("parsers/nvidia-smi-q-x-h100-2gpu.xml"), &err);
  ASSERT_TRUE(d) << err;
  EXPECT_EQ((*d)["source"], "nvidia-smi");
  EXPECT_EQ((*d)["driver_version"], "580.95.05");
  EXPECT_EQ((*d)["cuda_driver_version"], "13.0");
  ASSERT_EQ((*d)["device_count"], 2);
  const auto& g0 = (*d)["devices"][0];
  const auto& g1 = (*d)["devices"][1];
  EXPECT_EQ(g0["name"], "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g0["pci_bus_id"], "00000000:19:00.0");
  EXPECT_EQ(g0["pci_device_id"], "0x233010DE");
  EXPECT_EQ(g0["memory_total_mib"], 81559);
  EXPECT_EQ(g0["pcie"]["width_current"], 16);
  EXPECT_EQ(g1["pcie"]["width_current"], 8);
  EXPECT_EQ(g1["pcie"]["width_max"], 16);
  EXPECT_EQ(g0["persistence_mode"], true);
  EXPECT_EQ(g0["ecc"]["current"], true);
  EXPECT_EQ(g0["ecc"]["volatile_uncorrected"], 0);
  EXPECT_EQ(g1["ecc"]["volatile_uncorrected"], 2);
  EXPECT_EQ(g1["ecc"]["volatile_corrected"], 3);
  EXPECT_EQ(g1["remapped_rows"]["pending"], true);
  EXPECT_EQ(g1["remapped_rows"]["uncorrectable"], 1);
  EXPECT_TRUE(g0["retired_pages"].is_null());  // N/A on Hopper (row remapping instead)
  EXPECT_DOUBLE_EQ(g0["power_draw_w"].get<double>(), 69.42);
  EXPECT_EQ(g0["temperature_c"], 32);
  EXPECT_EQ(g0["clocks_mhz"]["sm_max"], 1980);
  EXPECT_EQ(g0["clocks_event_reasons"], 1);  // gpu_idle only
  EXPECT_TRUE(g0["serial"].is_string());
}

TEST(SmiXml, RejectsNonXmlAndForeignDocuments) {
  std::string err;
  EXPECT_FALSE(
      ParseNvidiaSmiXml("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", &err));
  EXPECT_FALSE(err.empty());
  EXPECT_FALSE(ParseNvidiaSmiXml("<other/>", &err));
  auto truncated =
      ParseNvidiaSmiXml("<nvidia_smi_log><driver_version>580.1</driver_version><gpu id=\"x\"><uuid>", &err);
  EXPECT_FALSE(truncated);
}
