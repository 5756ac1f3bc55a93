// Verdicts on real, sick machines: captured kernel logs (tests/fixtures/corpus, sources in
// SOURCES.md) through the real collector and check, plus mutation tests that change one fact.
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "audit/fleet_summary.h"
#include "checks/common.h"
#include "checks/register.h"
#include "collect/collector.h"
#include "collect/parsers.h"
#include "core/minimums.h"
#include "gpu/smi_xml.h"
#include "host/bundle.h"
#include "rating/catalog.h"
#include "rating/rate.h"
#include "testutil.h"
#include "util/strings.h"
#include "util/time.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace clustermax;
using core::Verdict;

namespace cmt = clustermax::testing;

namespace {

core::Evidence Ok(json data) {
  core::Evidence e;
  e.status = core::EvidenceStatus::kOk;
  e.data = std::move(data);
  return e;
}

core::EvidenceSet GpuNode() {
  json pci = {{"devices", json::array({{{"bdf", "0000:19:00.0"},
                                        {"vendor", "0x10de"},
                                        {"device", "0x2330"},
                                        {"class", "0x030200"},
                                        {"driver", "nvidia"},
                                        {"gpu", true},
                                        {"rdma_nic", false}}})},
              {"complete", true},
              {"unreadable", 0}};
  return {{"pci.devices", Ok(pci)},
          {"gpu.inventory",
           Ok({{"device_count", 1}, {"devices", json::array({{{"index", 0}, {"name", "NVIDIA H100 80GB HBM3"}}})}})}};
}

// The kernel.xid evidence of a node whose log is `text`, read by the collector through a replayed
// host: `journalctl` (short-iso lines) or, when absent, `dmesg -T`.
core::Evidence KernelXid(const std::string& text, bool journalctl) {
  host::Bundle b;
  host::CommandResult r;
  r.status = host::IoStatus::kOk;
  r.exit_code = 0;
  r.out = text;
  if (journalctl) {
    b.PutWhich("journalctl", {host::IoStatus::kOk, "/usr/bin/journalctl"});
    b.PutCommand({"journalctl", "-k", "--since=-7d", "-o", "short-iso", "--no-pager", "-q"}, r);
  } else {
    b.PutWhich("journalctl", {host::IoStatus::kNotFound, ""});
    b.PutWhich("dmesg", {host::IoStatus::kOk, "/usr/bin/dmesg"});
    b.PutCommand({"dmesg", "-T"}, r);
  }
  b.PutFile("/proc/sys/kernel/dmesg_restrict", {host::IoStatus::kOk, "0\n", false, ""});
  host::ReplayHost h(b);
  return collect::CollectEvidence(h, {"kernel.xid"}, {})["kernel.xid"];
}

core::Finding XidVerdict(const core::Evidence& xid, const char* now = "2026-11-30T00:00:00Z") {
  const core::Check* c = checks::DefaultRegistry().Find("gpu-xid-history");
  core::EvidenceSet ev = GpuNode();
  ev["kernel.xid"] = xid;
  core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), core::Target::kStandalone,
                         *util::ParseRfc3339(now));
  return c->judge(ctx);
}

std::string Corpus(const std::string& name) { return cmt::ReadFixture("corpus/kernel-log/" + name); }

}  // namespace

// Class 1: sick GPUs that passed. Every captured log of a lost, uninitialisable or faulting GPU FAILs;
// logs of application faults only do not.
TEST(Verdicts, CapturedKernelLogsOfSickGpusFail) {
  struct Case {
    const char* file;
    Verdict expected;
  };
  const Case cases[] = {
      {"fallen-off-bus-multiline-no-xid-dmesg-plain-1.txt", Verdict::kFail},  // no Xid line at all
      {"rminitadapter-failed-syslog-1.txt", Verdict::kFail},
      {"rminitadapter-gsp-firmware-dmesg-plain-2.txt", Verdict::kFail},
      {"rminitadapter-journalctl-rtx5080-1.txt", Verdict::kFail},
      {"rminitadapter-osinitnvmapping-dmesg-plain-4.txt", Verdict::kFail},
      {"rminitadapter-vm-dmesg-plain-3.txt", Verdict::kFail},
      {"probe-failed-error-1-line-1.txt", Verdict::kFail},
      {"xid-119-gsp-rpc-timeout-dmesg-T-1.txt", Verdict::kFail},
      {"xid-119-gsp-timeout-banner-dmesg-T-2.txt", Verdict::kFail},
      {"xid-120-gsp-exception-dmesg-plain-1.txt", Verdict::kFail},
      {"xid-79-crashdump-dmesg-T-1.txt", Verdict::kFail},
      {"xid-79-sxid-20034-dmesg-plain-1.txt", Verdict::kFail},
      {"xid-144-149-nvlink-blackwell-bare-1.txt", Verdict::kFail},
      {"xid-145-149-94-kmsg-gb200-bare-1.txt", Verdict::kFail},
  };
  for (const auto& c : cases) {
    // dmesg -T lines carry dates of their own capture: judge them as of that time.
    auto e = KernelXid(Corpus(c.file), false);
    std::string last_day = "2026-11-29";
    for (const auto& [day, keys] : e.data["counts_by_day"].items()) {
      if (day != "undated") last_day = day;  // the map is ordered: the last is the newest
    }
    auto f = XidVerdict(e, (last_day + "T23:00:00Z").c_str());
    EXPECT_EQ(f.verdict, c.expected) << c.file << ": " << f.message;
  }
}

TEST(Verdicts, ApplicationXidsAloneDoNotFail) {
  for (const char* file :
       {"xid-32-31-legacy-format-dmesg-plain-1.txt", "xid-32-nvrm-no-colon-space-before-colon-1.txt"}) {
    auto e = KernelXid(Corpus(file), false);
    EXPECT_GT(e.data["total"].get<long>(), 0) << file << " (every Xid form is read)";
    auto f = XidVerdict(e);
    EXPECT_NE(f.verdict, Verdict::kFail) << file << ": " << f.message;
  }
}

// Class 2: truncation hid the newest errors. A fatal Xid after 10,000 benign ones is counted and FAILs.
TEST(Verdicts, FatalXidAfterAFloodOfBenignOnesFails) {
  std::string log;
  for (int i = 0; i < 10000; ++i)
    log += "2026-11-29T10:00:01+0000 gpu-01 kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=1, Graphics Exception\n";
  auto clean = KernelXid(log, true);
  EXPECT_EQ(XidVerdict(clean).verdict, Verdict::kPass);
  EXPECT_EQ(clean.data["counts_by_day"]["2026-11-29"]["Xid 13"], 10000);
  log += "2026-11-29T11:00:00+0000 gpu-01 kernel: NVRM: Xid (PCI:0000:3b:00): 48, pid=1, DBE (0x1,0x0)\n";
  auto sick = KernelXid(log, true);
  EXPECT_TRUE(sick.data["truncated"].get<bool>());
  EXPECT_EQ(sick.data["events"][0]["code"], 48);  // newest first
  auto f = XidVerdict(sick);
  EXPECT_EQ(f.verdict, Verdict::kFail) << f.message;
  EXPECT_NE(f.observed.find("newest 200 of 10001"), std::string::npos) << f.observed;
}

// Class 2: the dmesg path applies the same 7-day window as journalctl.
TEST(Verdicts, DmesgEventsOutsideTheWindowDoNotCount) {
  std::string old_fault =
      "[Sun Nov  1 10:00:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n";
  EXPECT_EQ(XidVerdict(KernelXid(old_fault, false)).verdict, Verdict::kPass);
  std::string recent =
      "[Sun Nov 29 10:00:01 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n";
  EXPECT_EQ(XidVerdict(KernelXid(recent, false)).verdict, Verdict::kFail);
  // No date (plain dmesg): counted, and said so.
  auto undated =
      XidVerdict(KernelXid("[ 1234.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n", false));
  EXPECT_EQ(undated.verdict, Verdict::kFail);
  EXPECT_NE(undated.observed.find("undated"), std::string::npos);
}

// A code NVIDIA's catalog does not know is never clean.
TEST(Verdicts, UnknownXidCodeWarns) {
  auto f = XidVerdict(
      KernelXid("2026-11-29T10:00:01+0000 n kernel: NVRM: Xid (PCI:0000:3b:00): 999, pid=1, something new\n", true));
  EXPECT_EQ(f.verdict, Verdict::kWarn) << f.message;
}

// Mutation: a clean captured log with one fatal line appended flips to FAIL.
TEST(Verdicts, MutationOneFatalLineFlipsACleanLog) {
  std::string log = Corpus("xid-32-31-legacy-format-dmesg-plain-1.txt");
  ASSERT_NE(XidVerdict(KernelXid(log, false)).verdict, Verdict::kFail);
  log += "[24999.000000] NVRM: GPU at PCI:0000:01:00: GPU has fallen off the bus.\n";
  EXPECT_EQ(XidVerdict(KernelXid(log, false)).verdict, Verdict::kFail);
}

TEST(KernelLogParser, DaysFromBothTimestampForms) {
  EXPECT_EQ(collect::KernelLogDay("2026-11-29T10:00:01+0000 host kernel: x"), "2026-11-29");
  EXPECT_EQ(collect::KernelLogDay("[Sun Nov  1 10:00:01 2026] NVRM: x"), "2026-11-01");
  EXPECT_EQ(collect::KernelLogDay("[ 1234.567890] NVRM: x"), "");
  EXPECT_EQ(collect::KernelLogDay("Mar  5 10:11:12 host kernel: x"), "");
}

// ---- Class 5: checks that do not apply are not graded. Real nvidia-smi -q -x of several
// generations (tests/fixtures/corpus/nvidia-smi-xml), judged as an audit started with --standalone.

namespace {
core::Finding JudgeSmiText(const std::string& check, const std::string& xml) {
  std::string error;
  auto snap = gpu::ParseNvidiaSmiXml(xml, &error);
  EXPECT_TRUE(snap) << error;
  core::EvidenceSet ev;
  json pci_devices = json::array();
  for (size_t i = 0; i < (*snap)["devices"].size(); ++i) {
    pci_devices.push_back({{"bdf", fmt::format("0000:{:02x}:00.0", i + 1)},
                           {"vendor", "0x10de"},
                           {"device", "0x2237"},
                           {"class", "0x030200"},
                           {"driver", "nvidia"},
                           {"gpu", true},
                           {"rdma_nic", false}});
  }
  ev["pci.devices"] = Ok({{"devices", pci_devices}, {"complete", true}, {"unreadable", 0}});
  ev["gpu.inventory"] = Ok(*snap);
  const core::Check* c = checks::DefaultRegistry().Find(check);
  for (const auto& n : c->info.needs) {
    if (!ev.count(n)) ev[n].status = core::EvidenceStatus::kNotCollected;
  }
  core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), core::Target::kStandalone,
                         *util::ParseRfc3339("2026-11-30T00:00:00Z"));
  return c->judge(ctx);
}
core::Finding JudgeSmi(const std::string& check, const std::string& xml_file) {
  return JudgeSmiText(check, cmt::ReadFixture("corpus/nvidia-smi-xml/" + xml_file));
}
}  // namespace

TEST(Verdicts, PassThroughGuestsAreNotGradedAgainstTheSkuNodeCount) {
  for (const char* f : {"ampere-a10g-pcie-passthrough-1.xml", "turing-tesla-t4-pcie-passthrough-1.xml",
                        "volta-v100s-pcie-32gb-passthrough-1.xml"}) {
    auto finding = JudgeSmi("gpu-count-consistent", f);
    EXPECT_NE(finding.verdict, Verdict::kFail) << f << ": " << finding.message;
  }
  auto guest = JudgeSmi("gpu-count-consistent", "volta-v100s-pcie-32gb-passthrough-1.xml");
  EXPECT_EQ(guest.verdict, Verdict::kPass) << guest.message;
  // Mutation: the same V100S card with its virtualization mode "None" is bare metal, where a PCIe
  // SKU has no fixed count per node: unverified (WARN), no longer PASS.
  std::string xml = cmt::ReadFixture("corpus/nvidia-smi-xml/volta-v100s-pcie-32gb-passthrough-1.xml");
  size_t at = xml.find("Pass-Through");
  ASSERT_NE(at, std::string::npos);
  xml.replace(at, 12, "None");
  auto bare = JudgeSmiText("gpu-count-consistent", xml);
  EXPECT_EQ(bare.verdict, Verdict::kWarn) << bare.message;
}

TEST(Verdicts, NvlinkIsNotGradedOnGpusWithoutIt) {
  auto t4 = JudgeSmi("nvlink-status", "turing-tesla-t4-pcie-passthrough-1.xml");
  EXPECT_EQ(t4.verdict, Verdict::kSkip) << t4.message;
  auto a10g = JudgeSmi("nvlink-status", "ampere-a10g-pcie-passthrough-1.xml");
  EXPECT_EQ(a10g.verdict, Verdict::kSkip) << a10g.message;
  // An SXM A100 read through nvidia-smi: NVLink exists but nvidia-smi -q -x does not show it: unverified.
  auto a100 = JudgeSmi("nvlink-status", "ampere-a100-sxm4-80gb-mig-1.xml");
  EXPECT_EQ(a100.verdict, Verdict::kWarn) << a100.message;
}

// ---- Class 9: ratings without evidence.

TEST(Verdicts, ACohortCountsProvidersNotRatings) {
  const auto& cat = rating::EmbeddedCatalog("3.0");
  auto rating = [&](const std::string& provider, const std::string& collected, double s) {
    json cats = json::array();
    for (const auto& c : cat.categories) cats.push_back({{"id", c.id}, {"score", s}});
    return json{{"kind", "clustermax.rating"},
                {"edition", "3.0"},
                {"provider", provider},
                {"cluster", collected},
                {"tier", "BRONZE"},
                {"categories", cats},
                {"inputs", json::array({{{"report", {{"collected_at", collected}}}}})}};
  };
  json c = rating::Cohort(cat, {rating("A", "2026-11-01T00:00:00Z", 0.9), rating("A", "2026-11-20T00:00:00Z", 0.4),
                                rating("A", "2026-10-01T00:00:00Z", 0.95), rating("B", "2026-11-01T00:00:00Z", 0.6)});
  EXPECT_EQ(c["ranked"], 2);  // two providers, not four ratings
  EXPECT_EQ(c["rows"][0]["provider"], "B");
  EXPECT_EQ(c["rows"][1]["provider"], "A");
  EXPECT_EQ(c["rows"][1]["cluster"], "2026-11-20T00:00:00Z");  // A's newest rating
  EXPECT_EQ(c["superseded"].size(), 2u);
}

// ---- Class 3: unread is not zero. Pre-Ampere ECC blocks are read; N/A counters WARN, never PASS.
TEST(Verdicts, EccCountersOfOlderGenerationsAreReadAndNaIsNotZero) {
  // Volta V100S (pass-through): single_bit/double_bit blocks with real counts.
  std::string error;
  auto v100 =
      gpu::ParseNvidiaSmiXml(cmt::ReadFixture("corpus/nvidia-smi-xml/volta-v100s-pcie-32gb-passthrough-1.xml"), &error);
  ASSERT_TRUE(v100) << error;
  const json& ecc = (*v100)["devices"][0]["ecc"];
  EXPECT_TRUE(ecc["volatile_uncorrected"].is_number()) << ecc.dump();
  EXPECT_NE(JudgeSmi("gpu-ecc-health", "volta-v100s-pcie-32gb-passthrough-1.xml").verdict, Verdict::kFail);
  // Mutation: one uncorrectable (double-bit) error in the same real output flips it to FAIL.
  std::string xml = cmt::ReadFixture("corpus/nvidia-smi-xml/volta-v100s-pcie-32gb-passthrough-1.xml");
  size_t vol = xml.find("<volatile>");
  size_t dbl = xml.find("<double_bit>", vol);
  size_t total = xml.find("<total>", dbl);
  ASSERT_NE(total, std::string::npos);
  size_t end = xml.find("</total>", total);
  xml.replace(total + 7, end - total - 7, "1");
  EXPECT_EQ(JudgeSmiText("gpu-ecc-health", xml).verdict, Verdict::kFail);
  // Pascal vGPU guest: every counter N/A: unverified, not "ECC clean".
  auto p4 = JudgeSmi("gpu-ecc-health", "pascal-grid-p4-1q-vgpu-guest-1.xml");
  EXPECT_NE(p4.verdict, Verdict::kPass) << p4.message;
}

// Issue "Verdicts that hold", class 5: fabric rails. ibstat / ibv_devinfo captured on real hosts
// (tests/fixtures/corpus/ibstat, SOURCES.md) are laid out as the sysfs tree they were printed from
// and read by the real rdma.devices collector. A rail is an InfiniBand port, a RoCE port at
// >= 100 Gb/s on a physical function, or EFA; bonds, VFs of a PF on the node, Ethernet VFs and
// slow Ethernet are listed as "not counted as a rail" and stay out of rail counts and NCCL checks.
namespace {

struct CorpusCa {
  std::string name, layer, state = "Active", phys = "LinkUp", fw;
  int part = 0;        // CA type MT<part> / vendor_part_id (decimal PCI device id)
  std::string rate;    // "" when the tool does not print it (ibv_devinfo)
  std::string physfn;  // a mutation: the VF's physical function on this node
};

// ibstat ("CA 'x'", "CA type: MT4115", "Rate: 100") and ibv_devinfo ("hca_id:", "vendor_part_id:",
// "state: PORT_ACTIVE (4)"); one port per CA, as every CA of the corpus has.
std::vector<CorpusCa> ParseCorpusIbstat(const std::string& text) {
  std::vector<CorpusCa> out;
  for (const auto& raw : util::SplitLines(text)) {
    std::string line(util::Trim(raw));
    auto value = [&](std::string_view key) -> std::optional<std::string> {
      if (line.rfind(key, 0) != 0) return std::nullopt;
      return std::string(util::Trim(line.substr(key.size())));
    };
    if (auto v = value("CA '"))
      out.push_back({.name = v->substr(0, v->find('\''))});
    else if (auto v = value("hca_id:"))
      out.push_back({.name = *v});
    else if (out.empty())
      continue;
    else if (auto v = value("CA type: MT"))
      out.back().part = std::stoi(*v);
    else if (auto v = value("vendor_part_id:"))
      out.back().part = std::stoi(*v);
    else if (auto v = value("Firmware version:"))
      out.back().fw = *v;
    else if (auto v = value("fw_ver:"))
      out.back().fw = *v;
    else if (auto v = value("State:"))
      out.back().state = *v;
    else if (auto v = value("state:"))
      out.back().state = util::Contains(*v, "ACTIVE") ? "Active" : "Down";
    else if (auto v = value("Physical state:"))
      out.back().phys = *v;
    else if (auto v = value("Rate:"))
      out.back().rate = *v;
    else if (auto v = value("Link layer:"))
      out.back().layer = *v;
    else if (auto v = value("link_layer:"))
      out.back().layer = *v;
  }
  return out;
}

// The sysfs answers of those CAs, read by the rdma.devices collector.
core::Evidence RdmaFromCorpus(const std::vector<CorpusCa>& cas) {
  host::Bundle b;
  auto file = [&](const std::string& path, const std::string& content) {
    b.PutFile(path, {host::IoStatus::kOk, content + "\n", false, ""});
  };
  host::DirResult top{host::IoStatus::kOk, {}, ""};
  for (const auto& ca : cas) top.entries.push_back({ca.name, 'l'});
  std::sort(top.entries.begin(), top.entries.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  b.PutDir("/sys/class/infiniband", top);
  for (const auto& ca : cas) {
    std::string base = "/sys/class/infiniband/" + ca.name;
    file(base + "/fw_ver", ca.fw);
    file(base + "/device/vendor", "0x15b3");
    file(base + "/device/device", fmt::format("0x{:04x}", ca.part));
    host::StatResult physfn;
    physfn.status = ca.physfn.empty() ? host::IoStatus::kNotFound : host::IoStatus::kOk;
    physfn.type = 'l';
    physfn.link_target = ca.physfn.empty() ? "" : "../" + ca.physfn;
    b.PutStat(base + "/device/physfn", physfn);
    b.PutDir(base + "/ports", {host::IoStatus::kOk, {{"1", 'd'}}, ""});
    std::string p = base + "/ports/1/";
    bool active = ca.state == "Active";
    file(p + "state", active ? "4: ACTIVE" : "1: DOWN");
    file(p + "phys_state", ca.phys == "LinkUp" ? "5: LinkUp" : "3: Disabled");
    if (!ca.rate.empty()) file(p + "rate", ca.rate + " Gb/sec");
    file(p + "link_layer", ca.layer);
  }
  host::ReplayHost h(b);
  return collect::CollectEvidence(h, {"rdma.devices"}, {})["rdma.devices"];
}

std::vector<CorpusCa> IbstatCorpus(const std::string& name) {
  return ParseCorpusIbstat(cmt::ReadFixture("corpus/ibstat/" + name));
}

core::Finding JudgeFabric(const std::string& check, const core::Evidence& rdma, int gpus, const std::string& model,
                          std::optional<std::string> gid_index = {}) {
  const core::Check* c = checks::DefaultRegistry().Find(check);
  json devices = json::array();
  for (int i = 0; i < gpus; ++i) devices.push_back({{"index", i}, {"name", model}});
  json vars = json::object();
  if (gid_index) vars["NCCL_IB_GID_INDEX"] = *gid_index;
  core::EvidenceSet ev = {
      {"rdma.devices", rdma},
      {"gpu.inventory", Ok({{"device_count", gpus}, {"devices", devices}})},
      {"pci.devices", Ok({{"devices", json::array()}, {"complete", true}, {"unreadable", 0}})},
      {"nccl.config", Ok({{"files", json::array({{{"path", "/etc/nccl.conf"}, {"found", true}, {"vars", vars}}})},
                          {"env", json::object()}})}};
  core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), core::Target::kSlurm,
                         *util::ParseRfc3339("2026-11-30T00:00:00Z"));
  return c->judge(ctx);
}

std::string AllText(const core::Finding& f) {
  std::string s = f.message;
  for (const auto& d : f.details) s += "\n" + d;
  return s;
}

}  // namespace

// A ConnectX-4 host: two InfiniBand ports and a RoCE LAG device mlx5_bond_0 (ConnectX-4 Lx, 10 Gb/s).
// Before: the bond was a RoCE port, so NCCL_IB_GID_INDEX unset was a WARN on an InfiniBand node.
TEST(Verdicts, RdmaOverABondIsNotARail) {
  auto cas = IbstatCorpus("ibstat-cx4-ib-edr-fdr-cx4lx-roce-bond-1.txt");
  ASSERT_EQ(cas.size(), 3u);
  core::Evidence rdma = RdmaFromCorpus(cas);
  ASSERT_TRUE(rdma.ok()) << rdma.error;
  auto ports = checks::ClassifyRdmaPorts(rdma.data);
  ASSERT_EQ(ports.size(), 3u);
  for (const auto& p : ports) EXPECT_EQ(p.rail, p.kind == "InfiniBand") << p.name << " " << p.because;
  auto gid = JudgeFabric("nccl-roce-gid-index", rdma, 2, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(gid.verdict, Verdict::kSkip) << AllText(gid);
  EXPECT_NE(AllText(gid).find("not counted as a rail: mlx5_bond_0/1 because RDMA device over a bond"),
            std::string::npos)
      << AllText(gid);
  auto fabric = JudgeFabric("fabric-class", rdma, 2, "NVIDIA A100-SXM4-80GB");
  EXPECT_NE(fabric.observed.find("2 fabric port(s) (InfiniBand)"), std::string::npos) << fabric.observed;
  EXPECT_NE(AllText(fabric).find("not counted as a rail: mlx5_bond_0/1"), std::string::npos) << AllText(fabric);
  // The bond at rail speed is still a bond (speed is not why it is left out) ...
  cas[2].rate = "100";
  EXPECT_EQ(JudgeFabric("nccl-roce-gid-index", RdmaFromCorpus(cas), 2, "NVIDIA A100-SXM4-80GB").verdict,
            Verdict::kSkip);
  // ... mutation: the same 100 Gb/s port on a plain function (no bond) is a RoCE rail, and the GID check applies.
  cas[2].name = "mlx5_4";
  auto roce = JudgeFabric("nccl-roce-gid-index", RdmaFromCorpus(cas), 2, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(roce.verdict, Verdict::kWarn) << AllText(roce);
  EXPECT_NE(roce.message.find("NCCL_IB_GID_INDEX is unset"), std::string::npos) << roce.message;
}

// ib-port-health and roce-tenant-isolation judge rails too: a frontend bond that is down is a WARN
// naming why it is not a rail (it was a fabric FAIL), and a RoCE bond is not a RoCE fabric.
TEST(Verdicts, ADownFrontendBondIsNotADownRail) {
  auto cas = IbstatCorpus("ibstat-cx4-ib-edr-fdr-cx4lx-roce-bond-1.txt");
  ASSERT_EQ(cas.size(), 3u);
  auto judge = [](const std::string& check, const std::vector<CorpusCa>& node) {
    return JudgeFabric(check, RdmaFromCorpus(node), 2, "NVIDIA A100-SXM4-80GB");
  };
  auto all_up = judge("ib-port-health", cas);
  cas[2].state = "Down";
  cas[2].phys = "Disabled";
  auto bond_down = judge("ib-port-health", cas);
  EXPECT_EQ(bond_down.verdict, Verdict::kWarn) << AllText(bond_down) << " (all up: " << AllText(all_up) << ")";
  EXPECT_NE(AllText(bond_down).find("mlx5_bond_0/1"), std::string::npos) << AllText(bond_down);
  EXPECT_NE(AllText(bond_down).find("not a rail"), std::string::npos) << AllText(bond_down);
  // Mutation: an InfiniBand rail down instead is a FAIL.
  cas[2].state = "Active";
  cas[2].phys = "LinkUp";
  cas[0].state = "Down";
  cas[0].phys = "Polling";
  EXPECT_EQ(judge("ib-port-health", cas).verdict, Verdict::kFail);
  cas[0].state = "Active";
  cas[0].phys = "LinkUp";
  auto roce = judge("roce-tenant-isolation", cas);
  EXPECT_EQ(roce.verdict, Verdict::kSkip) << AllText(roce);
  EXPECT_NE(AllText(roce).find("not counted as a rail: mlx5_bond_0/1"), std::string::npos) << AllText(roce);
  // Mutation: the same port as a 100 Gb/s RoCE rail on its own function is the RoCE fabric.
  cas[2].name = "mlx5_4";
  cas[2].rate = "100";
  EXPECT_EQ(judge("roce-tenant-isolation", cas).reason, core::Reason::kAttestationRequired);
}

// The fleet summary and nccl-ib-qps-entropy count rails only: a node whose only RDMA device is the
// corpus's RoCE bond has no fabric. Before: "Ethernet" in its ports made it an RDMA node.
TEST(Verdicts, AFrontendBondDoesNotMakeAnRdmaNode) {
  auto cas = IbstatCorpus("ibstat-cx4-ib-edr-fdr-cx4lx-roce-bond-1.txt");
  std::vector<CorpusCa> bond_only = {cas[2]};
  auto judge = [](const std::vector<CorpusCa>& node_cas) {
    audit::NodeEvidence n;
    n.node = "n1";
    n.evidence["rdma.devices"] = RdmaFromCorpus(node_cas);
    core::EvidenceSet ev;
    ev["fleet.summary"] = audit::FleetSummary({&n}, {});
    const core::Check* c = checks::DefaultRegistry().Find("nccl-ib-qps-entropy");
    core::JudgeContext ctx(c->info, ev, core::EmbeddedMinimumTable(), core::Target::kSlurm,
                           *util::ParseRfc3339("2026-11-30T00:00:00Z"));
    return std::make_pair(c->judge(ctx), ev["fleet.summary"].data);
  };
  auto [bond, summary] = judge(bond_only);
  EXPECT_EQ(bond.reason, core::Reason::kNotApplicable) << AllText(bond);
  EXPECT_EQ(summary["nodes"][0]["facts"]["fabric rails"], "0");
  EXPECT_EQ(summary["nodes"][0]["facts"]["rdma ports"], "1 x RoCE 10 Gb/s not a rail (bond)");
  // Mutation: one InfiniBand rail beside it makes it an RDMA node (judged, not skipped).
  auto [ib, summary2] = judge({cas[0], cas[2]});
  EXPECT_NE(ib.verdict, Verdict::kSkip) << AllText(ib);
  EXPECT_EQ(summary2["nodes"][0]["facts"]["fabric rails"], "1");
}

// An A100 cloud VM with 8 ConnectX-6 VFs (MT4124, HDR 200): in a guest the passed-through VF is the
// rail (no physfn link there), so 8 rails for 8 GPUs PASS.
TEST(Verdicts, PassedThroughInfinibandVfsAreAGuestsRails) {
  auto cas = IbstatCorpus("ibstat-cx6-vf-hdr200-8port-ibpanic-exit255-1.txt");
  ASSERT_EQ(cas.size(), 8u);
  auto ok = JudgeFabric("fabric-class", RdmaFromCorpus(cas), 8, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(ok.verdict, Verdict::kPass) << AllText(ok);
  // Mutation: one VF's physical function is on this node (sysfs physfn): that PF is the rail, the VF is not.
  cas[3].physfn = "0000:41:00.0";
  auto vf = JudgeFabric("fabric-class", RdmaFromCorpus(cas), 8, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(vf.verdict, Verdict::kWarn) << AllText(vf);
  EXPECT_NE(vf.message.find("7 fabric port(s) for 8 GPU(s)"), std::string::npos) << vf.message;
  EXPECT_NE(AllText(vf).find("not counted as a rail: mlx5_3/1 because SR-IOV virtual function of PF 0000:41:00.0"),
            std::string::npos)
      << AllText(vf);
}

// An empty GPU model is not looked up: "the GPU model could not be read", never "rate for ''".
TEST(Verdicts, AnUnreadGpuModelIsSaidSo) {
  auto cas = IbstatCorpus("ibstat-cx6-vf-hdr200-8port-ibpanic-exit255-1.txt");
  auto f = JudgeFabric("fabric-class", RdmaFromCorpus(cas), 8, "");
  EXPECT_EQ(f.verdict, Verdict::kWarn) << AllText(f);
  EXPECT_EQ(f.reason, core::Reason::kUnverified);
  EXPECT_NE(f.message.find("the GPU model could not be read"), std::string::npos) << f.message;
  EXPECT_EQ(f.message.find("''"), std::string::npos) << f.message;
  auto unknown = JudgeFabric("fabric-class", RdmaFromCorpus(cas), 8, "NVIDIA Tesla V100-SXM2-16GB");
  EXPECT_NE(unknown.message.find("no expected per-GPU rate for GPU model 'NVIDIA Tesla V100-SXM2-16GB'"),
            std::string::npos)
      << unknown.message;
}

// Azure ND H200 v5 (ibv_devinfo): InfiniBand VFs mlx5_ib* (ConnectX-7 VF, 4126) are the rails; the
// accelerated-networking Ethernet VF mlx5_an0 (ConnectX-5 VF, 4122) is the frontend. Before: mlx5_an0
// was a RoCE port, so an InfiniBand cluster was told to set NCCL_IB_GID_INDEX.
TEST(Verdicts, AnEthernetVfIsTheFrontendNotARail) {
  auto cas = IbstatCorpus("ibv_devinfo-azure-ndv5-h200-cx7vf-cx5vf-1.txt");
  ASSERT_EQ(cas.size(), 3u);
  core::Evidence rdma = RdmaFromCorpus(cas);
  auto ports = checks::ClassifyRdmaPorts(rdma.data);
  ASSERT_EQ(ports.size(), 3u);
  for (const auto& p : ports) {
    if (p.name == "mlx5_an0/1") {
      EXPECT_FALSE(p.rail);
      EXPECT_EQ(p.why_not, "SR-IOV VF");
    } else {
      EXPECT_TRUE(p.rail) << p.name << " " << p.because;
    }
  }
  auto gid = JudgeFabric("nccl-roce-gid-index", rdma, 8, "NVIDIA H200");
  EXPECT_EQ(gid.verdict, Verdict::kSkip) << AllText(gid);
  EXPECT_NE(AllText(gid).find("not counted as a rail: mlx5_an0/1 because Ethernet SR-IOV virtual function"),
            std::string::npos)
      << AllText(gid);
  // Mutation: the same port as an InfiniBand VF is a passed-through rail.
  cas[2].layer = "InfiniBand";
  for (const auto& p : checks::ClassifyRdmaPorts(RdmaFromCorpus(cas).data)) EXPECT_TRUE(p.rail) << p.name;
}

// A Dell XE9780 (8 x B300): seven ConnectX-8 ports Down (ibstat prints Rate 10 for a down port) and
// four ConnectX-7 at 100. Before: the down ConnectX-8 ports were "storage/frontend" by their
// placeholder rate and vanished; they are the GPU rails, and down.
TEST(Verdicts, DownInfinibandRailsAreRailsNotFrontend) {
  auto cas = IbstatCorpus("ibstat-cx8-down-cx7-active-b300-dell-1.txt");
  ASSERT_EQ(cas.size(), 11u);
  auto f = JudgeFabric("fabric-class", RdmaFromCorpus(cas), 8, "NVIDIA B300 SXM6 AC");
  EXPECT_EQ(f.verdict, Verdict::kWarn) << AllText(f);
  EXPECT_NE(f.message.find("7 fabric port(s) not ACTIVE"), std::string::npos) << f.message;
  EXPECT_NE(f.message.find("mlx5_0/1 1: DOWN"), std::string::npos) << f.message;
  EXPECT_NE(f.observed.find("11 fabric port(s)"), std::string::npos) << f.observed;
}

// hca-naming judges the rails' names: the kernel's mlx5_bond_0 (LAG) is not a custom rail name.
// Before: the corpus's ConnectX-4 host WARNed "custom HCA names (mlx5_bond_0) without NCCL_IB_HCA".
TEST(Verdicts, ABondsNameIsNotACustomRailName) {
  auto cas = IbstatCorpus("ibstat-cx4-ib-edr-fdr-cx4lx-roce-bond-1.txt");
  auto ok = JudgeFabric("hca-naming", RdmaFromCorpus(cas), 2, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(ok.verdict, Verdict::kPass) << AllText(ok);
  // Mutation: an InfiniBand rail renamed by a udev rule is a custom name NCCL must be told about.
  cas[0].name = "ib_rail0";
  auto custom = JudgeFabric("hca-naming", RdmaFromCorpus(cas), 2, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(custom.verdict, Verdict::kWarn) << AllText(custom);
  EXPECT_NE(custom.message.find("custom HCA names (ib_rail0) without NCCL_IB_HCA"), std::string::npos)
      << custom.message;
}
