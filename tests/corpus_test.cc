// The real captured outputs of tests/fixtures/corpus/{dcgmi,ibstat,slurm} (sources in SOURCES.md)
// through the project's parsers and collectors: concrete facts per file, and one mutation per
// family that changes one fact and flips a verdict.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "checks/register.h"
#include "collect/collector.h"
#include "collect/parsers.h"
#include "host/bundle.h"
#include "testutil.h"
#include "util/slurm_text.h"
#include "util/strings.h"
#include "util/time.h"

using namespace clustermax;
using clustermax::testing::Ok;
using clustermax::testing::Out;
using core::Verdict;
using nlohmann::json;
namespace fs = std::filesystem;
namespace cmt = clustermax::testing;

namespace {

std::string Corpus(const std::string& rel) { return cmt::ReadFixture("corpus/" + rel); }

// Every file of a corpus folder must be named by the test of that folder (new captures get facts).
void ExpectAllCovered(const std::string& dir, const std::set<std::string>& covered) {
  for (const auto& e : fs::directory_iterator(cmt::Fixture("corpus/" + dir))) {
    EXPECT_TRUE(covered.count(e.path().filename().string()))
        << "corpus/" << dir << "/" << e.path().filename().string() << " has no test of its facts";
  }
}

core::Finding JudgeOn(const std::string& check, const core::EvidenceSet& ev, core::Target target) {
  const core::Check* c = checks::DefaultRegistry().Find(check);
  EXPECT_NE(c, nullptr) << check;
  core::EvidenceSet full = ev;
  for (const auto& n : c->info.needs) {
    if (!full.count(n)) full[n].status = core::EvidenceStatus::kNotCollected;
  }
  core::JudgeContext ctx(c->info, full, core::EmbeddedMinimumTable(), target,
                         *util::ParseRfc3339("2026-11-30T00:00:00Z"));
  return c->judge(ctx);
}

std::string Replace(std::string s, const std::string& from, const std::string& to) {
  auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << "mutation target '" << from << "' not found";
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

// ---------------------------------------------------------------------------------------------
// dcgmi

// The probe.dcgm-diag evidence of a parsed diagnostic, in the probe collector's shape.
core::Evidence DiagEvidence(const collect::DcgmDiag& d) {
  json results = json::array();
  for (const auto& x : d.results) {
    results.push_back(
        {{"category", x.category}, {"test", x.test}, {"status", x.status}, {"gpu", x.gpu}, {"warnings", x.warnings}});
  }
  return Ok("probe.dcgm-diag", {{"exit_code", 0}, {"results", results}, {"runtime_error", d.runtime_error}});
}

core::Finding DiagVerdict(const collect::DcgmDiag& d) {
  json pci = {{"devices", json::array({{{"bdf", "0000:19:00.0"},
                                        {"vendor", "0x10de"},
                                        {"device", "0x2330"},
                                        {"class", "0x030200"},
                                        {"driver", "nvidia"},
                                        {"gpu", true},
                                        {"rdma_nic", false}}})},
              {"complete", true},
              {"unreadable", 0}};
  core::EvidenceSet ev = {
      {"pci.devices", Ok("pci.devices", pci)},
      {"gpu.inventory",
       Ok("gpu.inventory",
          {{"device_count", 1}, {"devices", json::array({{{"index", 0}, {"name", "NVIDIA H100 80GB HBM3"}}})}})},
      {"dcgm.version", Ok("dcgm.version", {{"installed", true}, {"version", "4.5.3"}})},
      {"probe.dcgm-diag", DiagEvidence(d)}};
  return JudgeOn("dcgm-diag-quick", ev, core::Target::kSlurm);
}

const collect::DcgmDiagResult* Find(const collect::DcgmDiag& d, const std::string& test, const std::string& gpu = "") {
  for (const auto& r : d.results) {
    if (r.test == test && r.gpu == gpu) return &r;
  }
  return nullptr;
}

collect::DcgmDiag Table(const std::string& text) {
  std::string err;
  auto d = collect::ParseDcgmDiagTable(text, &err);
  EXPECT_TRUE(d) << err;
  return d.value_or(collect::DcgmDiag{});
}

}  // namespace

TEST(CorpusDcgmi, DiagJsonOfDcgm31WithAWarningPrefixAndNullEntries) {
  std::string err;
  auto d = collect::ParseDcgmDiagJson(Corpus("dcgmi/diag-j-dcgm3.1.0-8gpu-warning-prefix-nulls-1.txt"), &err);
  ASSERT_TRUE(d) << err;
  ASSERT_GE(d->results.size(), 9u + 8u);
  EXPECT_EQ(d->results[0].category, "Deployment");
  EXPECT_EQ(d->results[0].test, "Denylist");
  EXPECT_EQ(d->results[0].gpu, "0,1,2,3,4,5,6,7");
  EXPECT_EQ(d->results[0].status, "pass");
  const auto* gpu7 = Find(*d, "software", "7");
  ASSERT_NE(gpu7, nullptr);
  EXPECT_EQ(gpu7->category, "Custom");
  for (const auto& r : d->results) EXPECT_EQ(r.status, "pass") << r.test << " " << r.gpu;
  EXPECT_EQ(DiagVerdict(*d).verdict, Verdict::kPass);
  // Mutation: one PASS becomes FAIL.
  auto sick = collect::ParseDcgmDiagJson(Replace(Corpus("dcgmi/diag-j-dcgm3.1.0-8gpu-warning-prefix-nulls-1.txt"),
                                                 "\"status\" : \"PASS\"", "\"status\" : \"FAIL\""),
                                         &err);
  ASSERT_TRUE(sick) << err;
  EXPECT_EQ(DiagVerdict(*sick).verdict, Verdict::kFail);
}

TEST(CorpusDcgmi, DiagTableH200PersistenceFail) {
  auto d = Table(Corpus("dcgmi/diag-r1-dcgm3.1.8-h200-8gpu-persistence-fail-1.txt"));
  const auto* pm = Find(d, "Persistence Mode");
  ASSERT_NE(pm, nullptr);
  EXPECT_EQ(pm->category, "Deployment");
  EXPECT_EQ(pm->status, "fail");
  ASSERT_EQ(pm->warnings.size(), 1u);  // the Error row, unwrapped over 20 rows
  EXPECT_EQ(
      pm->warnings[0].rfind(
          "Persistence mode for GPU 0 is currently disabled. The DCGM diagnostic requires peristence mode to be enabled.",
          0),
      0u)
      << pm->warnings[0];
  EXPECT_NE(pm->warnings[0].find("Persistence mode for GPU 5 is currently disabled"), std::string::npos);
  EXPECT_EQ(Find(d, "Inforom")->status, "pass");
  EXPECT_EQ(Find(d, "DCGM Version"), nullptr);  // metadata is not a result
  EXPECT_EQ(d.results.size(), 9u);
  auto f = DiagVerdict(d);
  EXPECT_EQ(f.verdict, Verdict::kFail);
  // Mutation: persistence mode passes, the rest already did.
  auto healed = Table(Replace(Corpus("dcgmi/diag-r1-dcgm3.1.8-h200-8gpu-persistence-fail-1.txt"),
                              "| Persistence Mode          | Fail ", "| Persistence Mode          | Pass "));
  EXPECT_EQ(Find(healed, "Persistence Mode")->status, "pass");
  EXPECT_EQ(DiagVerdict(healed).verdict, Verdict::kPass);
}

TEST(CorpusDcgmi, DiagTableA100AllPass) {
  auto d = Table(Corpus("dcgmi/diag-r2-dcgm3.3.3-a100-8gpu-p4de-1.txt"));
  EXPECT_EQ(d.results.size(), 11u);  // 9 deployment tests, PCIe, GPU Memory
  const auto* pcie = Find(d, "PCIe");
  ASSERT_NE(pcie, nullptr);
  EXPECT_EQ(pcie->category, "Integration");
  EXPECT_EQ(pcie->status, "pass");
  EXPECT_EQ(Find(d, "GPU Memory")->category, "Hardware");
  EXPECT_EQ(DiagVerdict(d).verdict, Verdict::kPass);
  // Mutation: the memory test fails on one GPU.
  auto sick = Table(Replace(Corpus("dcgmi/diag-r2-dcgm3.3.3-a100-8gpu-p4de-1.txt"),
                            "| GPU Memory                | Pass - All", "| GPU Memory                | Fail - GPU: 3"));
  ASSERT_NE(Find(sick, "GPU Memory", "3"), nullptr);
  EXPECT_EQ(DiagVerdict(sick).verdict, Verdict::kFail);
}

TEST(CorpusDcgmi, DiagTableT4SplitResultPerGpu) {
  auto d = Table(Corpus("dcgmi/diag-r2-dcgm3.3.1-t4-fail-fragment-1.txt"));
  const auto* gpu1 = Find(d, "GPU Memory", "1");
  const auto* gpu0 = Find(d, "GPU Memory", "0");
  ASSERT_NE(gpu1, nullptr);
  ASSERT_NE(gpu0, nullptr);
  EXPECT_EQ(gpu1->status, "pass");
  EXPECT_EQ(gpu0->status, "fail");
  // The Warning row follows the GPU 0 line of the same test, and names GPU 0.
  EXPECT_TRUE(gpu1->warnings.empty());
  ASSERT_EQ(gpu0->warnings.size(), 1u);
  EXPECT_EQ(
      gpu0->warnings[0].rfind(
          "GPU 0 Error using CUDA API cuCtxCreate Check DCGM and system logs for errors. Reset GPU. Restart DCGM.", 0),
      0u)
      << gpu0->warnings[0];
  EXPECT_NE(
      gpu0->warnings[0].find("Unable to create CUDA context: 'CUDA-capable device(s) is/are busy or unavailable'."),
      std::string::npos)
      << gpu0->warnings[0];
  EXPECT_EQ(DiagVerdict(d).verdict, Verdict::kFail);
}

TEST(CorpusDcgmi, DiagTableDcgm4PerGpuRows) {
  auto d = Table(Corpus("dcgmi/diag-r2-dcgm4.4.2-a10g-single-gpu-1.txt"));
  ASSERT_NE(Find(d, "software"), nullptr);
  const auto* mem0 = Find(d, "memory", "0");
  ASSERT_NE(mem0, nullptr);
  EXPECT_EQ(mem0->category, "Hardware");
  EXPECT_EQ(mem0->status, "pass");
  EXPECT_EQ(d.results.size(), 6u);  // three tests, each overall and GPU0
  EXPECT_EQ(DiagVerdict(d).verdict, Verdict::kPass);
  auto sick = Table(Replace(Corpus("dcgmi/diag-r2-dcgm4.4.2-a10g-single-gpu-1.txt"),
                            "GPU0: Pass                                     |\n+-----  Integration",
                            "GPU0: Fail                                     |\n+-----  Integration"));
  EXPECT_EQ(Find(sick, "memory", "0")->status, "fail");
  EXPECT_EQ(DiagVerdict(sick).verdict, Verdict::kFail);
}

TEST(CorpusDcgmi, EveryFileIsCovered) {
  ExpectAllCovered("dcgmi", {
                                "diag-j-dcgm3.1.0-8gpu-warning-prefix-nulls-1.txt",
                                "diag-r1-dcgm3.1.8-h200-8gpu-persistence-fail-1.txt",
                                "diag-r2-dcgm3.3.3-a100-8gpu-p4de-1.txt",
                                "diag-r2-dcgm3.3.1-t4-fail-fragment-1.txt",
                                "diag-r2-dcgm4.4.2-a10g-single-gpu-1.txt",
                                // No parser of the project reads these outputs (no collector runs dcgmi discovery, dmon
                                // or health): they are kept for the day one does.
                                "discovery-l-dcgm3.3.9-b300-7gpu-1.txt",
                                "discovery-l-h100-name-null-excerpt-1.txt",
                                "dmon-e230-xid-gpu1-120-1.txt",
                                "health-c-j-healthy-despite-xid120-1.json",
                            });
}

// ---------------------------------------------------------------------------------------------
// ibstat, ibstatus, ibv_devinfo, sysfs

namespace {

// The rdma.devices evidence of a parsed listing, in the collector's shape.
core::Evidence RdmaEvidence(const std::vector<collect::RdmaDeviceText>& devs) {
  json devices = json::array();
  for (const auto& d : devs) {
    json ports = json::array();
    auto text = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
    for (const auto& p : d.ports) {
      ports.push_back({{"port", p.port},
                       {"state", text(p.state)},
                       {"phys_state", text(p.phys_state)},
                       {"rate", text(p.rate)},
                       {"link_layer", text(p.link_layer)},
                       {"pkeys", json::array()},
                       {"gid_ndevs", json::array()}});
    }
    devices.push_back({{"name", d.name},
                       {"ports", ports},
                       {"fw_ver", text(d.fw_ver)},
                       {"fw_read_status", "ok"},
                       {"vendor", "0x15b3"}});
  }
  return Ok("rdma.devices", {{"devices", devices}});
}

core::Finding PortHealth(const std::vector<collect::RdmaDeviceText>& devs) {
  return JudgeOn("ib-port-health", {{"rdma.devices", RdmaEvidence(devs)}}, core::Target::kSlurm);
}

std::vector<collect::RdmaDeviceText> Rdma(const std::string& file) {
  return collect::ParseRdmaListing(Corpus("ibstat/" + file));
}

}  // namespace

TEST(CorpusIbstat, Cx4InfinibandAndRoceBond) {
  auto d = Rdma("ibstat-cx4-ib-edr-fdr-cx4lx-roce-bond-1.txt");
  ASSERT_EQ(d.size(), 3u);
  EXPECT_EQ(d[0].name, "mlx5_2");
  EXPECT_EQ(d[0].ca_type, "MT4115");
  EXPECT_EQ(d[0].fw_ver, "12.23.1020");
  ASSERT_EQ(d[0].ports.size(), 1u);
  EXPECT_EQ(d[0].ports[0].state, "4: ACTIVE");
  EXPECT_EQ(d[0].ports[0].phys_state, "5: LinkUp");
  EXPECT_EQ(d[0].ports[0].rate, "100 Gb/sec");
  EXPECT_EQ(d[1].ports[0].rate, "40 Gb/sec");
  EXPECT_EQ(d[2].name, "mlx5_bond_0");
  EXPECT_EQ(d[2].fw_ver, "14.23.1020");
  EXPECT_EQ(d[2].ports[0].link_layer, "Ethernet");
  EXPECT_EQ(PortHealth(d).verdict, Verdict::kPass);
  // Mutation: the RoCE bond's port goes down: not a rail, so a WARN that says so, not a fabric FAIL.
  auto text = Corpus("ibstat/ibstat-cx4-ib-edr-fdr-cx4lx-roce-bond-1.txt");
  auto at = text.find("CA 'mlx5_bond_0'");
  std::string bond_down = text.substr(0, at) + Replace(text.substr(at), "State: Active", "State: Down");
  auto down = collect::ParseRdmaListing(bond_down);
  EXPECT_EQ(down[2].ports[0].state, "1: DOWN");
  auto side = PortHealth(down);
  EXPECT_EQ(side.verdict, Verdict::kWarn) << side.message;
  EXPECT_NE(side.message.find("not fabric rails"), std::string::npos) << side.message;
  // Mutation: an InfiniBand rail goes down instead: FAIL.
  std::string rail_down = Replace(text, "State: Active", "State: Down");  // the first CA, mlx5_2
  auto f = PortHealth(collect::ParseRdmaListing(rail_down));
  EXPECT_EQ(f.verdict, Verdict::kFail);
  EXPECT_NE(f.message.find("1 of 3"), std::string::npos) << f.message;
}

TEST(CorpusIbstat, Cx6VirtualFunctionsUntilIbpanic) {
  auto d = Rdma("ibstat-cx6-vf-hdr200-8port-ibpanic-exit255-1.txt");
  ASSERT_EQ(d.size(), 8u);  // the ninth stat failed (ibpanic) and lists nothing
  for (const auto& dev : d) {
    EXPECT_EQ(dev.ca_type, "MT4124") << dev.name;
    EXPECT_EQ(dev.fw_ver, "20.41.1000") << dev.name;
    ASSERT_EQ(dev.ports.size(), 1u);
    EXPECT_EQ(dev.ports[0].rate, "200 Gb/sec");
    EXPECT_EQ(dev.ports[0].link_layer, "InfiniBand");
  }
  EXPECT_EQ(d.back().name, "mlx5_7");
  EXPECT_EQ(PortHealth(d).verdict, Verdict::kPass);
  auto down = collect::ParseRdmaListing(Replace(Corpus("ibstat/ibstat-cx6-vf-hdr200-8port-ibpanic-exit255-1.txt"),
                                                "Physical state: LinkUp", "Physical state: Polling"));
  EXPECT_EQ(down[0].ports[0].phys_state, "2: Polling");
  EXPECT_EQ(PortHealth(down).verdict, Verdict::kFail);
}

TEST(CorpusIbstat, Cx8DownCx7Active) {
  auto d = Rdma("ibstat-cx8-down-cx7-active-b300-dell-1.txt");
  ASSERT_EQ(d.size(), 11u);
  int down = 0, active = 0;
  for (const auto& dev : d) {
    bool cx8 = dev.ca_type == "MT4131";
    EXPECT_EQ(dev.fw_ver, cx8 ? "40.46.5500" : "28.47.2526") << dev.name;
    (dev.ports[0].state == "1: DOWN" ? down : active) += 1;
    if (cx8) {
      EXPECT_EQ(dev.ports[0].phys_state, "3: Disabled") << dev.name;
    }
  }
  EXPECT_EQ(down, 7);
  EXPECT_EQ(active, 4);
  auto f = PortHealth(d);
  EXPECT_EQ(f.verdict, Verdict::kFail);
  EXPECT_NE(f.message.find("7 of 11"), std::string::npos) << f.message;
  // Mutation: only the four active ConnectX-7 ports remain: healthy.
  std::vector<collect::RdmaDeviceText> cx7;
  for (const auto& dev : d) {
    if (dev.ca_type == "MT4129") cx7.push_back(dev);
  }
  EXPECT_EQ(PortHealth(cx7).verdict, Verdict::kPass);
}

TEST(CorpusIbstat, IbstatusVpiCardWithAnEthernetPort) {
  auto d = Rdma("ibstatus-cx3-vpi-ib-qdr-plus-eth-port-1.txt");
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "mlx4_0");
  ASSERT_EQ(d[0].ports.size(), 2u);
  EXPECT_EQ(d[0].ports[0].port, "1");
  EXPECT_EQ(d[0].ports[0].state, "4: ACTIVE");
  EXPECT_EQ(d[0].ports[0].phys_state, "5: LinkUp");
  EXPECT_EQ(d[0].ports[0].rate, "40 Gb/sec (4X QDR)");
  EXPECT_EQ(d[0].ports[0].link_layer, "InfiniBand");
  EXPECT_EQ(d[0].ports[1].rate, "10 Gb/sec (1X QDR)");
  EXPECT_EQ(d[0].ports[1].link_layer, "Ethernet");
  EXPECT_EQ(PortHealth(d).verdict, Verdict::kPass);
  auto down = collect::ParseRdmaListing(
      Replace(Corpus("ibstat/ibstatus-cx3-vpi-ib-qdr-plus-eth-port-1.txt"), "4: ACTIVE", "2: INIT  "));
  EXPECT_EQ(down[0].ports[0].state, "2: INIT");
  EXPECT_EQ(PortHealth(down).verdict, Verdict::kFail);
}

TEST(CorpusIbstat, IbvDevinfoEfaAndAzureVfs) {
  auto efa = Rdma("ibv_devinfo-aws-efa-1.txt");
  ASSERT_EQ(efa.size(), 1u);
  EXPECT_EQ(efa[0].name, "efa_0");
  EXPECT_EQ(efa[0].fw_ver, "0.0.0.0");
  ASSERT_EQ(efa[0].ports.size(), 1u);
  EXPECT_EQ(efa[0].ports[0].state, "4: ACTIVE");
  EXPECT_EQ(efa[0].ports[0].link_layer, "InfiniBand");  // as the older rdma-core misreported it
  EXPECT_EQ(efa[0].ports[0].rate, "");                  // ibv_devinfo prints no rate
  EXPECT_EQ(efa[0].ports[0].phys_state, "");            // ... nor a physical state: unread, never "linked up"
  EXPECT_EQ(PortHealth(efa).verdict, Verdict::kWarn);

  auto az = Rdma("ibv_devinfo-azure-ndv5-h200-cx7vf-cx5vf-1.txt");
  ASSERT_EQ(az.size(), 3u);
  EXPECT_EQ(az[0].name, "mlx5_ib0");
  EXPECT_EQ(az[0].fw_ver, "28.40.1702");
  EXPECT_EQ(az[2].name, "mlx5_an0");
  EXPECT_EQ(az[2].fw_ver, "16.30.5000");
  EXPECT_EQ(az[2].ports[0].link_layer, "Ethernet");
  for (const auto& dev : az) EXPECT_EQ(dev.ports[0].state, "4: ACTIVE") << dev.name;
  auto down = collect::ParseRdmaListing(
      Replace(Corpus("ibstat/ibv_devinfo-azure-ndv5-h200-cx7vf-cx5vf-1.txt"), "PORT_ACTIVE (4)", "PORT_DOWN (1)"));
  EXPECT_EQ(down[0].ports[0].state, "1: DOWN");
}

// The sysfs capture goes through the rdma.devices collector itself.
TEST(CorpusIbstat, SysfsEfaLinkLayerThroughTheCollector) {
  std::string link_layer = Corpus("ibstat/sysfs-efa_0-ports-1-link_layer-1.txt");
  host::Bundle b;
  b.PutDir("/sys/class/infiniband", {host::IoStatus::kOk, {{"efa_0", 'l'}}, ""});
  b.PutDir("/sys/class/infiniband/efa_0/ports", {host::IoStatus::kOk, {{"1", 'd'}}, ""});
  b.PutFile("/sys/class/infiniband/efa_0/ports/1/link_layer", {host::IoStatus::kOk, link_layer, false, ""});
  b.PutFile("/sys/class/infiniband/efa_0/ports/1/state", {host::IoStatus::kOk, "4: ACTIVE\n", false, ""});
  b.PutFile("/sys/class/infiniband/efa_0/ports/1/phys_state", {host::IoStatus::kOk, "5: LinkUp\n", false, ""});
  host::ReplayHost h(b);
  auto e = collect::CollectEvidence(h, {"rdma.devices"}, {})["rdma.devices"];
  ASSERT_TRUE(e.ok()) << e.error;
  ASSERT_EQ(e.data["devices"].size(), 1u);
  EXPECT_EQ(e.data["devices"][0]["name"], "efa_0");
  EXPECT_EQ(e.data["devices"][0]["ports"][0]["link_layer"], "Unknown");
  EXPECT_EQ(e.data["devices"][0]["ports"][0]["rate"], nullptr);  // not recorded: unread, not invented
}

TEST(CorpusIbstat, EveryFileIsCovered) {
  ExpectAllCovered("ibstat",
                   {"ibstat-cx4-ib-edr-fdr-cx4lx-roce-bond-1.txt", "ibstat-cx6-vf-hdr200-8port-ibpanic-exit255-1.txt",
                    "ibstat-cx8-down-cx7-active-b300-dell-1.txt", "ibstatus-cx3-vpi-ib-qdr-plus-eth-port-1.txt",
                    "ibv_devinfo-aws-efa-1.txt", "ibv_devinfo-azure-ndv5-h200-cx7vf-cx5vf-1.txt",
                    "sysfs-efa_0-ports-1-link_layer-1.txt"});
}

// ---------------------------------------------------------------------------------------------
// Slurm configuration files

namespace {

// `scontrol show config` prints the controller's slurm.conf settings as "Key = Value" lines; the
// corpus holds slurm.conf files, so they are printed that way (comments dropped, node, partition
// and include lines left out as scontrol does) and read by the slurm.config collector.
std::string AsShowConfig(const std::string& slurm_conf) {
  std::string out = "Configuration data as of 2026-11-30T00:00:00\n";
  for (const auto& raw : util::SplitLines(slurm_conf)) {
    std::string line(util::Trim(raw.substr(0, raw.find('#'))));
    size_t eq = line.find('=');
    if (line.empty() || eq == std::string::npos) continue;
    std::string key(util::Trim(line.substr(0, eq)));
    if (key == "NodeName" || key == "PartitionName" || key == "NodeSet" || key == "DownNodes" ||
        key.find(' ') != std::string::npos)
      continue;
    out += key + " = " + std::string(util::Trim(line.substr(eq + 1))) + "\n";
  }
  out += "SLURM_CONF = /etc/slurm/slurm.conf\n";
  return out;
}

core::EvidenceSet SlurmEvidence(const std::string& slurm_conf, const std::string& cgroup_conf) {
  host::Bundle b;
  b.PutCommand({"scontrol", "show", "config"}, Out(AsShowConfig(slurm_conf)));
  if (cgroup_conf.empty()) {
    b.PutFile("/etc/slurm/cgroup.conf", {host::IoStatus::kNotFound, "", false, "No such file or directory"});
  } else {
    b.PutFile("/etc/slurm/cgroup.conf", {host::IoStatus::kOk, cgroup_conf, false, ""});
  }
  host::ReplayHost h(b);
  return collect::CollectEvidence(h, {"slurm.config", "slurm.cgroup-conf"}, {});
}

std::string Cfg(const core::EvidenceSet& ev, const std::string& key) {
  const auto& c = ev.at("slurm.config").data["config"];
  return c.contains(key) ? c[key].get<std::string>() : "";
}

core::Finding Cgroups(const core::EvidenceSet& ev) {
  return JudgeOn("slurm-cgroup-enforcement", ev, core::Target::kSlurm);
}

std::vector<std::map<std::string, std::string>> Records(const std::string& file) {
  std::string text;
  for (const auto& raw : util::SplitLines(Corpus("slurm/" + file))) text += raw.substr(0, raw.find('#')) + "\n";
  return util::ParseScontrolRecords(text);
}

}  // namespace

TEST(CorpusSlurm, SlurmConfKeysThroughTheConfigCollector) {
  struct Case {
    const char* file;
    const char* cluster;
    const char* task_plugin;
    const char* proctrack;
    const char* select;
  };
  const Case cases[] = {
      {"fiuba-fluidodinamica-slurm.conf", "cluster", "task/affinity", "proctrack/cgroup", "select/cons_tres"},
      {"nvidia-circe-superpod-slurm.conf", "ngc", "affinity,cgroup", "proctrack/cgroup", "select/linear"},
      {"slac-ocio-gpu-slurm.conf", "slac", "task/cgroup", "proctrack/cgroup", "select/cons_res"},
      {"tuebingen-cfc-slurm.conf", "cfc", "affinity,cgroup", "proctrack/cgroup", "select/cons_res"},
      {"vinuni-slurm.conf", "cluster", "task/affinity", "proctrack/linuxproc", "select/cons_tres"},
      {"xjhpc-slurm.conf", "xjhpc", "task/affinity,task/cgroup", "proctrack/cgroup", "select/cons_tres"},
  };
  for (const auto& c : cases) {
    auto ev = SlurmEvidence(Corpus("slurm/" + std::string(c.file)), Corpus("slurm/xjhpc-cgroup.conf"));
    ASSERT_TRUE(ev["slurm.config"].ok()) << c.file << ": " << ev["slurm.config"].error;
    EXPECT_EQ(Cfg(ev, "ClusterName"), c.cluster) << c.file;  // the inline comment of xjhpc is not part of it
    EXPECT_EQ(Cfg(ev, "TaskPlugin"), c.task_plugin) << c.file;
    EXPECT_EQ(Cfg(ev, "ProctrackType"), c.proctrack) << c.file;
    EXPECT_EQ(Cfg(ev, "SelectType"), c.select) << c.file;
    // With a cgroup.conf that constrains everything, the verdict is the slurm.conf's alone.
    bool cgroup = std::string(c.task_plugin).find("cgroup") != std::string::npos &&
                  std::string(c.proctrack) == "proctrack/cgroup";
    EXPECT_EQ(Cgroups(ev).verdict, cgroup ? Verdict::kPass : Verdict::kWarn) << c.file << ": " << Cgroups(ev).message;
  }
  EXPECT_EQ(Cfg(SlurmEvidence(Corpus("slurm/xjhpc-slurm.conf"), ""), "GresTypes"), "gpu,mps,bandwidth,dcu,npu");
  EXPECT_EQ(Cfg(SlurmEvidence(Corpus("slurm/nvidia-circe-superpod-slurm.conf"), ""), "TaskPluginParam"), "Sched,None");
}

TEST(CorpusSlurm, MutationTaskPluginWithoutCgroupWarns) {
  std::string conf = Corpus("slurm/xjhpc-slurm.conf");
  auto ok = Cgroups(SlurmEvidence(conf, Corpus("slurm/xjhpc-cgroup.conf")));
  EXPECT_EQ(ok.verdict, Verdict::kPass) << ok.message;
  auto f = Cgroups(SlurmEvidence(Replace(conf, "TaskPlugin=task/affinity,task/cgroup", "TaskPlugin=task/affinity"),
                                 Corpus("slurm/xjhpc-cgroup.conf")));
  EXPECT_EQ(f.verdict, Verdict::kWarn);
  ASSERT_FALSE(f.details.empty());
  EXPECT_NE(f.details[0].find("TaskPlugin = task/affinity (no task/cgroup)"), std::string::npos) << f.details[0];
}

TEST(CorpusSlurm, CgroupConfsThroughTheCollector) {
  auto xj = SlurmEvidence(Corpus("slurm/xjhpc-slurm.conf"), Corpus("slurm/xjhpc-cgroup.conf"))["slurm.cgroup-conf"];
  ASSERT_TRUE(xj.ok()) << xj.error;
  EXPECT_EQ(xj.data["path"], "/etc/slurm/cgroup.conf");
  EXPECT_EQ(xj.data["keys"]["CgroupPlugin"], "cgroup/v2");
  EXPECT_EQ(xj.data["keys"]["ConstrainDevices"], "yes");  // trailing space and CJK comment dropped
  EXPECT_EQ(xj.data["keys"]["ConstrainCores"], "yes");
  EXPECT_EQ(xj.data["keys"]["AllowedSwapSpace"], "0");
  auto tue_ev = SlurmEvidence(Corpus("slurm/tuebingen-cfc-slurm.conf"), Corpus("slurm/tuebingen-cfc-cgroup.conf"));
  const auto& tue = tue_ev["slurm.cgroup-conf"];
  EXPECT_EQ(tue.data["keys"]["CgroupAutomount"], "yes");
  EXPECT_FALSE(tue.data["keys"].contains("ConstrainDevices"));
  auto f = Cgroups(tue_ev);
  EXPECT_EQ(f.verdict, Verdict::kWarn);  // every job sees every GPU of a shared node
  bool named = false;
  for (const auto& d : f.details) named |= d.find("ConstrainDevices = no") != std::string::npos;
  EXPECT_TRUE(named);
  // Mutation: the same site with devices constrained passes.
  auto fixed = Cgroups(SlurmEvidence(Corpus("slurm/tuebingen-cfc-slurm.conf"),
                                     Corpus("slurm/tuebingen-cfc-cgroup.conf") + "ConstrainDevices=yes\n"));
  EXPECT_EQ(fixed.verdict, Verdict::kPass) << fixed.message;
  // No cgroup.conf at all: never a pass.
  EXPECT_EQ(Cgroups(SlurmEvidence(Corpus("slurm/tuebingen-cfc-slurm.conf"), "")).verdict, Verdict::kWarn);
}

TEST(CorpusSlurm, GresConfs) {
  auto xj = Records("xjhpc-gres.conf");
  ASSERT_EQ(xj.size(), 4u);
  EXPECT_EQ(xj[0].at("NodeName"), "xjhpc-164-1-ai");
  EXPECT_EQ(xj[0].at("Type"), "5090");
  EXPECT_EQ(xj[0].at("Name"), "gpu");
  EXPECT_EQ(xj[2].at("Type"), "h100");
  auto files = util::ExpandHostlist(xj[0].at("File"));
  ASSERT_TRUE(files);
  EXPECT_EQ(files->size(), 8u);
  EXPECT_EQ(files->front(), "/dev/nvidia0");
  auto vin = Records("vinuni-gres.conf");
  ASSERT_GE(vin.size(), 10u);
  EXPECT_EQ(vin[7].at("NodeName"), "slurmnode8");
  EXPECT_EQ(util::ExpandHostlist(vin[7].at("File"))->size(), 2u);
  auto slac = Records("slac-ocio-gpu-gres.conf");
  ASSERT_EQ(slac.size(), 1u);
  EXPECT_EQ(slac[0].at("AutoDetect"), "nvml");
}

TEST(CorpusSlurm, NodesAndPartitionsOfXjhpc) {
  auto recs = Records("xjhpc-nodes.conf");
  int nodes = 0, h100_gpus = 0;
  std::vector<std::string> partition_nodes;
  for (const auto& r : recs) {
    if (r.count("NodeName")) {
      ++nodes;
      if (r.count("Gres")) {
        for (const auto& g : util::ParseGres(r.at("Gres")))
          h100_gpus += g.type == "h100" ? static_cast<int>(g.count) : 0;
      }
    }
    if (r.count("PartitionName") && r.at("PartitionName") == "xj-h100-ib-1")
      partition_nodes = *util::ExpandHostlist(r.at("Nodes"));
  }
  EXPECT_EQ(nodes, 5);
  EXPECT_EQ(h100_gpus, 16);
  EXPECT_EQ(partition_nodes, (std::vector<std::string>{"xjhpc-164-100-ai", "xjhpc-164-101-ai"}));
  EXPECT_EQ(Records("nvidia-circe-superpod-slurm.conf").size() >= 98u, true);
}

// topology.conf lines are what `scontrol show topology` prints: through the topology collector.
TEST(CorpusSlurm, TopologyConfsThroughTheCollector) {
  auto topo = [](const std::string& file) {
    host::Bundle b;
    b.PutCommand({"scontrol", "show", "topology"}, Out(Corpus("slurm/" + file)));
    host::ReplayHost h(b);
    return collect::CollectEvidence(h, {"slurm.topology"}, {})["slurm.topology"];
  };
  auto circe = topo("circe-superpod-topology.conf");
  ASSERT_TRUE(circe.ok()) << circe.error;
  ASSERT_EQ(circe.data["units"].size(), 5u);
  std::map<std::string, int> seen;
  for (const auto& u : circe.data["units"]) {
    auto nodes = util::ExpandHostlist(u["Nodes"].get<std::string>());
    ASSERT_TRUE(nodes) << u.dump();
    for (const auto& n : *nodes) ++seen[n];
  }
  EXPECT_EQ(seen["circe-n051"], 2);  // listed under s2 and s4
  EXPECT_EQ(seen["n019"], 1);        // the prefix-less list of s0
  EXPECT_EQ(seen.count("circe-n059"), 0u);
  auto tue = topo("tuebingen-cfc-topology.conf");
  ASSERT_EQ(tue.data["units"].size(), 3u);
  EXPECT_EQ(tue.data["units"][2]["SwitchName"], "ibcore");
  EXPECT_EQ(tue.data["units"][2]["Switches"], "ibswitch0[1-2]");  // does not name the leaves cf-ibswitch01/02
  EXPECT_EQ(util::ExpandHostlist(tue.data["units"][1]["Nodes"].get<std::string>())->size(), 15u);
}

TEST(CorpusSlurm, EveryFileIsCovered) {
  ExpectAllCovered(
      "slurm", {"tuebingen-cfc-cgroup.conf", "vinuni-gres.conf", "slac-ocio-gpu-gres.conf", "xjhpc-cgroup.conf",
                "slac-ocio-gpu-slurm.conf", "tuebingen-cfc-slurm.conf", "xjhpc-gres.conf",
                "nvidia-circe-superpod-slurm.conf", "fiuba-fluidodinamica-slurm.conf", "circe-superpod-topology.conf",
                "xjhpc-nodes.conf", "tuebingen-cfc-topology.conf", "xjhpc-slurm.conf", "vinuni-slurm.conf"});
}
