// bench net's RDMA-per-rail engine (bench/rdma.*): port discovery on recorded sysfs of real
// nodes (tests/fixtures/net/rdma-sysfs, sources in its SOURCES.md) replayed through a bundle, one
// fact flipped at a time; the pure parts (rate, GIDs, port matching, latency summary, PCI
// nearness); the run-time loader of libibverbs; and the entry point on nodes without a device.
//
// The measurement itself (queue pairs, RDMA write/read, ping-pong) needs RDMA hardware, and none
// can be emulated here: this machine's kernel has no rdma_rxe (Soft-RoCE) or siw module and no
// /sys/class/infiniband, so libibverbs lists no device. Those paths run only on nodes with HCAs.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/net_comm.h"
#include "bench/rdma.h"
#include "host/bundle.h"
#include "host/local_host.h"
#include "testutil.h"
#include "util/strings.h"

using nlohmann::json;
using namespace clustermax;
using namespace clustermax::bench::net;

namespace {

const std::string kIb = "/sys/class/infiniband";

// A sysfs tree for a bundle: files by path, and every directory above them listed.
class SysfsTree {
 public:
  // A file's whole content (sysfs values end with a newline; raw bytes go in as they are).
  void Put(const std::string& path, const std::string& content) { files_[path] = content; }
  void PutValue(const std::string& path, const std::string& value) { Put(path, value + "\n"); }
  void Remove(const std::string& path) { files_.erase(path); }
  void EmptyDir(const std::string& path) { empty_dirs_.insert(path); }
  std::string Port(const std::string& dev, int port = 1) const {
    return kIb + "/" + dev + "/ports/" + std::to_string(port);
  }

  // Reads a fixture: ibstatus blocks, show_gids rows and "path: value" lines (SOURCES.md).
  void Load(const std::string& text) {
    std::string dev;
    int port = 0;
    for (const auto& raw : util::SplitLines(text)) {
      std::string_view line = util::Trim(raw);
      if (line.empty() || line[0] == '#') continue;
      if (line.rfind("Infiniband device '", 0) == 0) {
        auto q = line.find('\'', 19);
        dev = std::string(line.substr(19, q - 19));
        auto fields = util::SplitWhitespace(line.substr(q + 1));  // port N status:
        port = static_cast<int>(util::ParseInt(fields.at(1)).value());
        continue;
      }
      static const std::map<std::string, std::string> kIbstatus = {
          {"state", "state"}, {"phys state", "phys_state"}, {"rate", "rate"}, {"link_layer", "link_layer"}};
      if (auto colon = line.find(':'); colon != std::string_view::npos && !dev.empty()) {
        auto it = kIbstatus.find(std::string(line.substr(0, colon)));
        if (it != kIbstatus.end()) {
          PutValue(Port(dev, port) + "/" + it->second, std::string(util::Trim(line.substr(colon + 1))));
          continue;
        }
      }
      if (line.rfind("/sys/", 0) == 0) {
        auto sep = line.find(": ");
        PutValue(std::string(line.substr(0, sep)), std::string(line.substr(sep + 2)));
        continue;
      }
      auto f = util::SplitWhitespace(line);
      if ((f.size() == 6 || f.size() == 7) && util::ParseInt(f[1]) && util::ParseInt(f[2]) &&
          std::count(f[3].begin(), f[3].end(), ':') == 7) {
        std::string base = Port(f[0], static_cast<int>(*util::ParseInt(f[1])));
        const std::string& i = f[2];
        PutValue(base + "/gids/" + i, f[3]);
        PutValue(base + "/gid_attrs/types/" + i, f[f.size() - 2] == "v2" ? "RoCE v2" : "IB/RoCE v1");
        PutValue(base + "/gid_attrs/ndevs/" + i, f.back());
      }
    }
  }

  // A bundle holding the files and, for every directory above them, its listing (devices under
  // /sys/class/infiniband are links, as in sysfs).
  host::Bundle ToBundle() const {
    host::Bundle b;
    std::map<std::string, std::map<std::string, char>> dirs;
    for (const auto& [path, content] : files_) {
      b.PutFile(path, {host::IoStatus::kOk, content, false, ""});
      std::string child = path;
      char type = 'f';
      while (child.size() > 1) {
        auto slash = child.rfind('/');
        std::string parent = slash == 0 ? "/" : child.substr(0, slash);
        dirs[parent][child.substr(slash + 1)] = parent == kIb ? 'l' : type;
        type = 'd';
        child = parent;
      }
    }
    for (const auto& d : empty_dirs_) dirs.try_emplace(d);
    for (const auto& [dir, entries] : dirs) {
      host::DirResult r;
      r.status = host::IoStatus::kOk;
      for (const auto& [name, type] : entries) r.entries.push_back({name, type});
      b.PutDir(dir, r);
    }
    return b;
  }

 private:
  std::map<std::string, std::string> files_;
  std::set<std::string> empty_dirs_;
};

SysfsTree FromFixture(const std::string& name) {
  SysfsTree t;
  t.Load(clustermax::testing::ReadFixture("net/rdma-sysfs/" + name));
  return t;
}

std::vector<RdmaPort> Ports(const SysfsTree& t) {
  host::Bundle b = t.ToBundle();
  host::ReplayHost h(b);
  return ListRdmaPorts(h);
}

// A copy, so that Find(Ports(t), ...) outlives the temporary list.
RdmaPort Find(const std::vector<RdmaPort>& ports, const std::string& dev, int port = 1) {
  for (const auto& p : ports)
    if (p.device == dev && p.port == port) return p;
  throw std::runtime_error("no port " + dev);
}

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// show_gids lists GIDs, not the port: a RoCE port it lists is an active Ethernet port.
void ActiveRoce(SysfsTree& t, const std::string& dev) {
  t.PutValue(t.Port(dev) + "/state", "4: ACTIVE");
  t.PutValue(t.Port(dev) + "/link_layer", "Ethernet");
}

}  // namespace

// --- Port discovery on real captures ---

TEST(RdmaSysfs, HdrInfinibandOnA800NodesWithARocePortAndADisabledOne) {
  auto ports = Ports(FromFixture("a800-hdr-ibstatus.txt"));
  ASSERT_EQ(ports.size(), 4u);
  std::vector<std::string> order;
  for (const auto& p : ports) order.push_back(p.device);
  EXPECT_EQ(order, (std::vector<std::string>{"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"}));
  for (const char* dev : {"mlx5_1", "mlx5_3"}) {
    const auto& p = Find(ports, dev);
    EXPECT_EQ(p.link_layer, "InfiniBand");
    EXPECT_EQ(p.state, "4: ACTIVE");
    EXPECT_EQ(p.phys_state, "5: LinkUp");
    EXPECT_EQ(p.rate, "200 Gb/sec (4X HDR)");
    EXPECT_EQ(p.rate_gbps, 200);
    EXPECT_EQ(p.gid_index, -1);  // LID routed
    EXPECT_EQ(p.skip, "") << dev;
  }
  const auto& down = Find(ports, "mlx5_2");
  EXPECT_TRUE(Contains(down.skip, "not ACTIVE")) << down.skip;
  EXPECT_TRUE(Contains(down.skip, "1: DOWN")) << down.skip;
  EXPECT_TRUE(Contains(down.skip, "3: Disabled")) << down.skip;
  EXPECT_EQ(down.rate_gbps, 100);
  // ibstatus shows no GID table: the RoCE port has no GID to use, so it is not measured.
  const auto& roce = Find(ports, "mlx5_0");
  EXPECT_EQ(roce.link_layer, "Ethernet");
  EXPECT_EQ(roce.gid_index, -1);
  EXPECT_TRUE(Contains(roce.skip, "RoCE port without a usable GID")) << roce.skip;

  json j = PortJson(Find(ports, "mlx5_1"));
  EXPECT_EQ(j["device"], "mlx5_1");
  EXPECT_EQ(j["port"], 1);
  EXPECT_EQ(j["rate_gbps"], 200.0);
  EXPECT_EQ(j["skip"], "");
}

TEST(RdmaSysfs, ConnectX7LinkedAtHdr) {
  auto ports = Ports(FromFixture("cx7-hdr-ibstatus.txt"));
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0].device, "mlx5_0");
  EXPECT_EQ(ports[0].rate_gbps, 200);
  EXPECT_EQ(ports[0].link_layer, "InfiniBand");
  EXPECT_EQ(ports[0].skip, "");
}

TEST(RdmaSysfs, NdrTreeOfAnH100NodeAsRecordedAndAsOneWholePort) {
  // As the index holds it: each port has only some of its files, and every gap is named.
  SysfsTree t = FromFixture("h100-cx7-ndr-gpud-sysfs.txt");
  auto ports = Ports(t);
  ASSERT_EQ(ports.size(), 4u);
  const auto& m0 = Find(ports, "mlx5_0");
  EXPECT_EQ(m0.rate, "400 Gb/sec (4X NDR)");
  EXPECT_EQ(m0.rate_gbps, 400);
  EXPECT_EQ(m0.state, "4: ACTIVE");
  EXPECT_EQ(m0.link_layer, "");
  EXPECT_TRUE(Contains(m0.skip, "link layer unreadable")) << m0.skip;
  const auto& m5 = Find(ports, "mlx5_5");
  EXPECT_EQ(m5.link_layer, "InfiniBand");
  EXPECT_TRUE(Contains(m5.skip, "state unreadable")) << m5.skip;
  EXPECT_EQ(m5.rate_gbps, 0);
  EXPECT_EQ(Find(ports, "mlx5_6").phys_state, "5: LinkUp");
  EXPECT_EQ(Find(ports, "mlx5_bond_0").link_layer, "Ethernet");

  // The tree's four port values on one port: a ConnectX-7 NDR InfiniBand port to measure.
  t.PutValue(t.Port("mlx5_0") + "/link_layer", "InfiniBand");
  t.PutValue(t.Port("mlx5_0") + "/phys_state", "5: LinkUp");
  const auto& whole = Find(Ports(t), "mlx5_0");
  EXPECT_EQ(whole.skip, "");
  EXPECT_EQ(whole.rate_gbps, 400);
  EXPECT_EQ(whole.gid_index, -1);
}

TEST(RdmaSysfs, RoceGidTablesPickTheLowestIpv4MappedRoceV2) {
  // ConnectX-6: v1/v2 pairs; the IPv4 address's v2 entry is 5.
  SysfsTree cx6 = FromFixture("cx6-roce-show_gids.txt");
  ActiveRoce(cx6, "mlx5_0");
  const auto& p = Find(Ports(cx6), "mlx5_0");
  EXPECT_EQ(p.skip, "");
  EXPECT_EQ(p.gid_index, 5);
  EXPECT_EQ(p.netdev, "ens1f0");

  // A pod's macvlan GIDs start at 4 (empty slots below, their types unreadable): 7 on each.
  SysfsTree k8s = FromFixture("k8s-macvlan-roce-show_gids.txt");
  ActiveRoce(k8s, "mlx5_0");
  ActiveRoce(k8s, "mlx5_1");
  for (int i = 0; i < 4; ++i) k8s.PutValue(k8s.Port("mlx5_0") + "/gids/" + std::to_string(i), std::string(39, '0'));
  auto kp = Ports(k8s);
  EXPECT_EQ(Find(kp, "mlx5_0").gid_index, 7);
  EXPECT_EQ(Find(kp, "mlx5_0").netdev, "net1");
  EXPECT_EQ(Find(kp, "mlx5_1").gid_index, 7);
  EXPECT_EQ(Find(kp, "mlx5_1").netdev, "net2");

  // MI355X: IPv6 GIDs only. No IPv4-mapped GID: the lowest RoCE v2 one.
  SysfsTree mi = FromFixture("mi355-roce-show_gids.txt");
  for (const char* dev : {"rocep105s0", "rocep121s0", "rocep137s0", "rocep153s0", "rocep193s0f0"}) ActiveRoce(mi, dev);
  auto mp = Ports(mi);
  ASSERT_EQ(mp.size(), 5u);
  EXPECT_EQ(Find(mp, "rocep105s0").gid_index, 0);
  EXPECT_EQ(Find(mp, "rocep105s0").netdev, "enp105s0");
  EXPECT_EQ(Find(mp, "rocep193s0f0").gid_index, 1);  // the v2 of the v1/v2 pair
  EXPECT_EQ(Find(mp, "rocep193s0f0").netdev, "enp193s0f0np0");
}

// --- One fact flipped ---

TEST(RdmaSysfs, APortDownIsListedAndSkippedWithItsState) {
  SysfsTree t = FromFixture("a800-hdr-ibstatus.txt");
  t.PutValue(t.Port("mlx5_1") + "/state", "1: DOWN");
  t.PutValue(t.Port("mlx5_1") + "/phys_state", "2: Polling");
  const auto& p = Find(Ports(t), "mlx5_1");
  EXPECT_EQ(p.skip, "port not ACTIVE (state \"1: DOWN\", phys_state \"2: Polling\")");
  EXPECT_EQ(p.rate_gbps, 200);  // still reported
  // INIT (no subnet manager yet) is not active either.
  t.PutValue(t.Port("mlx5_1") + "/state", "2: INIT");
  EXPECT_TRUE(Contains(Find(Ports(t), "mlx5_1").skip, "2: INIT"));
}

TEST(RdmaSysfs, AGarbledRateLeavesTheRateUnknownAndThePortMeasured) {
  SysfsTree t = FromFixture("cx7-hdr-ibstatus.txt");
  for (const char* junk : {"fast", "Gb/sec", "-200 Gb/sec", "1e999 Gb/sec", "200 Mb/sec", "2.0.0 Gb/sec", ""}) {
    t.PutValue(t.Port("mlx5_0") + "/rate", junk);
    auto ports = Ports(t);
    ASSERT_EQ(ports.size(), 1u) << junk;
    EXPECT_EQ(ports[0].rate_gbps, 0) << junk;
    EXPECT_EQ(ports[0].skip, "") << junk;
  }
  t.Remove(t.Port("mlx5_0") + "/rate");
  EXPECT_EQ(Find(Ports(t), "mlx5_0").rate, "");
  EXPECT_EQ(Find(Ports(t), "mlx5_0").skip, "");
}

TEST(RdmaSysfs, GidChoiceFollowsTheRuleWhenTheTableChanges) {
  SysfsTree t = FromFixture("cx6-roce-show_gids.txt");
  ActiveRoce(t, "mlx5_0");
  const std::string base = t.Port("mlx5_0");
  // Only RoCE v1 GIDs: the lowest non-zero one.
  for (int i = 0; i < 6; ++i) t.PutValue(base + "/gid_attrs/types/" + std::to_string(i), "IB/RoCE v1");
  EXPECT_EQ(Find(Ports(t), "mlx5_0").gid_index, 0);
  // v2 back, but no IPv4-mapped GID: the lowest RoCE v2.
  t = FromFixture("cx6-roce-show_gids.txt");
  ActiveRoce(t, "mlx5_0");
  for (const char* i : {"4", "5"}) {
    t.Remove(base + "/gids/" + i);
    t.Remove(base + "/gid_attrs/types/" + i);
    t.Remove(base + "/gid_attrs/ndevs/" + i);
  }
  EXPECT_EQ(Find(Ports(t), "mlx5_0").gid_index, 1);
  // The IPv4 entry's v2 slot emptied (all zeros): its v1 twin is not v2, so index 1 again.
  t = FromFixture("cx6-roce-show_gids.txt");
  ActiveRoce(t, "mlx5_0");
  t.PutValue(base + "/gids/5", "0000:0000:0000:0000:0000:0000:0000:0000");
  EXPECT_EQ(Find(Ports(t), "mlx5_0").gid_index, 1);
  // No GID at all.
  t = SysfsTree();
  ActiveRoce(t, "mlx5_0");
  const auto& none = Find(Ports(t), "mlx5_0");
  EXPECT_EQ(none.gid_index, -1);
  EXPECT_TRUE(Contains(none.skip, "without a usable GID")) << none.skip;
}

TEST(RdmaSysfs, ControlBytesAndInvalidUtf8AreSanitizedNeverTrusted) {
  SysfsTree t = FromFixture("cx7-hdr-ibstatus.txt");
  const std::string base = t.Port("mlx5_0");
  t.Put(base + "/state", std::string("4: ACTIVE\x1b[2J\xff\xfe\x00\n", 16));
  t.Put(base + "/rate", "200 Gb/sec (4X \x9b HDR)\r\n");
  t.Put(base + "/link_layer",
        "Infini\xc0\xaf"
        "Band\n");
  auto ports = Ports(t);
  ASSERT_EQ(ports.size(), 1u);
  const auto& p = ports[0];
  for (const std::string& s : {p.state, p.rate, p.link_layer, p.skip}) {
    EXPECT_TRUE(util::IsValidUtf8(s)) << s;
    for (unsigned char c : s) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << util::HexEncode(s);
  }
  EXPECT_TRUE(Contains(p.state, "\\x1b")) << p.state;  // visible, not executed
  EXPECT_EQ(p.rate_gbps, 200);
  EXPECT_TRUE(Contains(p.skip, "neither InfiniBand nor Ethernet")) << p.skip;
  // A device entry that cannot be a kernel device name is ignored.
  host::Bundle b = t.ToBundle();
  host::DirResult d;
  d.status = host::IoStatus::kOk;
  d.entries = {{"..", 'd'}, {"mlx5_0", 'l'}, {"bad\x1b[31mname", 'l'}, {"a/b", 'l'}, {std::string(200, 'x'), 'l'}};
  b.PutDir(kIb, d);
  host::ReplayHost h(b);
  auto only = ListRdmaPorts(h);
  ASSERT_EQ(only.size(), 1u);
  EXPECT_EQ(only[0].device, "mlx5_0");
  // Port directory entries that are not port numbers are ignored too.
  t = FromFixture("cx7-hdr-ibstatus.txt");
  host::Bundle b2 = t.ToBundle();
  host::DirResult pd;
  pd.status = host::IoStatus::kOk;
  pd.entries = {{"01", 'd'}, {"1", 'd'}, {"999", 'd'}, {"x", 'd'}, {"-1", 'd'}};
  b2.PutDir(kIb + "/mlx5_0/ports", pd);
  host::ReplayHost h2(b2);
  auto p2 = ListRdmaPorts(h2);
  ASSERT_EQ(p2.size(), 1u);
  EXPECT_EQ(p2[0].port, 1);
}

TEST(RdmaSysfs, UnreadableSysfsGivesAnEmptyListOrAReasonNeverACrash) {
  host::Bundle empty;
  host::ReplayHost h(empty);
  EXPECT_TRUE(ListRdmaPorts(h).empty());  // not recorded at all
  host::Bundle denied;
  denied.PutDir(kIb, {host::IoStatus::kPermissionDenied, {}, "Permission denied"});
  host::ReplayHost hd(denied);
  EXPECT_TRUE(ListRdmaPorts(hd).empty());
  // A device whose ports cannot be listed is reported with the reason.
  host::Bundle b;
  b.PutDir(kIb, {host::IoStatus::kOk, {{"mlx5_0", 'l'}}, ""});
  b.PutDir(kIb + "/mlx5_0/ports", {host::IoStatus::kPermissionDenied, {}, "Permission denied"});
  host::ReplayHost hp(b);
  auto ports = ListRdmaPorts(hp);
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_EQ(ports[0].port, 0);
  EXPECT_TRUE(Contains(ports[0].skip, "cannot be listed")) << ports[0].skip;
  // Every file of a port unreadable: listed, skipped for the first reason.
  b.PutDir(kIb + "/mlx5_0/ports", {host::IoStatus::kOk, {{"1", 'd'}}, ""});
  host::ReplayHost hf(b);
  ports = ListRdmaPorts(hf);
  ASSERT_EQ(ports.size(), 1u);
  EXPECT_TRUE(Contains(ports[0].skip, "state unreadable")) << ports[0].skip;
}

// --- The pure parts ---

TEST(RdmaPure, RateParsing) {
  EXPECT_EQ(ParseRateGbps("400 Gb/sec (4X NDR)"), 400);
  EXPECT_EQ(ParseRateGbps("200 Gb/sec (2X NDR)\n"), 200);
  EXPECT_EQ(ParseRateGbps("2.5 Gb/sec (1X SDR)"), 2.5);
  EXPECT_EQ(ParseRateGbps("56 Gb/sec (4X FDR)"), 56);
  EXPECT_EQ(ParseRateGbps("800 Gb/sec (4X XDR)"), 800);
  EXPECT_EQ(ParseRateGbps("25.78125 Gb/sec"), 25.78125);
  for (const char* bad : {"", "400", "Gb/sec", "abc Gb/sec", "400Mb/sec", ".5 Gb/sec", "5. Gb/sec", "1.2.3 Gb/sec",
                          "0 Gb/sec", "9999999 Gb/sec", "-1 Gb/sec", "400 Gbit/s"})
    EXPECT_EQ(ParseRateGbps(bad), 0) << bad;
}

TEST(RdmaPure, GidParsingAndTheChoiceRule) {
  uint8_t g[16];
  ASSERT_TRUE(ParseGid("0000:0000:0000:0000:0000:ffff:0a98:000c", g));
  EXPECT_EQ(g[10], 0xff);
  EXPECT_EQ(g[12], 0x0a);
  EXPECT_EQ(g[15], 0x0c);
  for (const char* bad :
       {"", "fe80::1", "0000:0000:0000:0000:0000:ffff:0a98", "0000:0000:0000:0000:0000:ffff:0a98:000c:0000",
        "000g:0000:0000:0000:0000:ffff:0a98:000c", "00000:000:0000:0000:0000:ffff:0a98:000c"})
    EXPECT_FALSE(ParseGid(bad, g)) << bad;

  const std::string v4 = "0000:0000:0000:0000:0000:ffff:ac13:003c";
  const std::string ll = "fe80:0000:0000:0000:0e42:a1ff:fe5d:4db8";
  const std::string zero = "0000:0000:0000:0000:0000:0000:0000:0000";
  // Positions are returned, whatever order the entries arrive in: the lowest index wins.
  std::vector<GidEntry> gids = {
      {5, "RoCE v2", v4, "a"}, {4, "IB/RoCE v1", v4, "a"}, {1, "RoCE v2", ll, "a"}, {3, "RoCE v2", v4, "b"}};
  EXPECT_EQ(ChooseGid(gids), 3);  // index 3
  gids = {{0, "IB/RoCE v1", ll, ""}, {1, "RoCE v2", ll, ""}, {2, "IB/RoCE v1", v4, ""}};
  EXPECT_EQ(ChooseGid(gids), 1);  // no IPv4-mapped v2: lowest v2
  gids = {{2, "IB/RoCE v1", v4, ""}, {0, "", ll, ""}};
  EXPECT_EQ(ChooseGid(gids), 1);  // no v2 at all: lowest non-zero, whatever its type
  gids = {{0, "RoCE v2", zero, ""}, {1, "RoCE v2", "junk", ""}};
  EXPECT_EQ(ChooseGid(gids), -1);
  EXPECT_EQ(ChooseGid({}), -1);
}

TEST(RdmaPure, PortsAreMatchedByDeviceAndPortAndEveryOtherOneSaysWhy) {
  auto port = [](const std::string& dev, const std::string& skip = "") {
    RdmaPort p;
    p.device = dev;
    p.link_layer = "InfiniBand";
    p.rate_gbps = 400;
    p.skip = skip;
    return p;
  };
  std::vector<RdmaPort> a = {port("mlx5_0"), port("mlx5_1", "port not ACTIVE (state \"1: DOWN\")"), port("mlx5_2")};
  std::vector<RdmaPort> b = {port("mlx5_3"), port("mlx5_1"), port("mlx5_0")};
  PortPlan plan = MatchPorts(a, "node-a", b, "node-b", {});
  ASSERT_EQ(plan.measure.size(), 1u);
  EXPECT_EQ(plan.measure[0].local.device, "mlx5_0");
  EXPECT_EQ(plan.measure[0].peer.device, "mlx5_0");
  ASSERT_EQ(plan.unmatched.size(), 3u);
  EXPECT_EQ(plan.unmatched[0]["device"], "mlx5_1");
  EXPECT_EQ(plan.unmatched[0]["why"], "node-a: port not ACTIVE (state \"1: DOWN\")");
  EXPECT_EQ(plan.unmatched[1]["device"], "mlx5_2");
  EXPECT_EQ(plan.unmatched[1]["why"], "node-b has no mlx5_2 port 1");
  EXPECT_EQ(plan.unmatched[2]["device"], "mlx5_3");
  EXPECT_EQ(plan.unmatched[2]["why"], "node-a has no mlx5_3 port 1");
  // Skipped on both sides: both reasons.
  b[1].skip = "link layer unreadable (not-recorded)";
  plan = MatchPorts(a, "node-a", b, "node-b", {});
  EXPECT_EQ(plan.unmatched[0]["why"],
            "node-a: port not ACTIVE (state \"1: DOWN\"); node-b: link layer unreadable (not-recorded)");
  // Only the devices asked for; a device named that neither node has is said so.
  plan = MatchPorts(a, "node-a", b, "node-b", {"mlx5_0", "mlx5_9"});
  ASSERT_EQ(plan.measure.size(), 1u);
  std::set<std::string> not_asked;
  for (const auto& u : plan.unmatched)
    if (u["why"] == "not among the devices asked for") not_asked.insert(u["device"].get<std::string>());
  EXPECT_EQ(not_asked, (std::set<std::string>{"mlx5_1", "mlx5_2", "mlx5_3"}));
  EXPECT_EQ(plan.unmatched.back()["device"], "mlx5_9");
  EXPECT_EQ(plan.unmatched.back()["why"], "asked for, but neither node has this device");
  plan = MatchPorts(a, "node-a", b, "node-b", {"mlx5_1"});
  EXPECT_TRUE(plan.measure.empty());
}

TEST(RdmaPure, LatencySummaryDropsTheWarmUp) {
  std::vector<double> v;
  for (int i = 110; i >= 1; --i) v.push_back(i);  // order does not matter after the warm-up...
  std::vector<double> ordered;
  for (int i = 1; i <= 110; ++i) ordered.push_back(i);  // ...which is the first samples taken
  auto s = SummarizeLatency(ordered, 10);
  EXPECT_EQ(s.samples, 100);
  EXPECT_EQ(s.min_us, 11);
  EXPECT_EQ(s.p50_us, 60);
  EXPECT_EQ(s.p99_us, 109);
  EXPECT_EQ(s.max_us, 110);
  auto r = SummarizeLatency(v, 10);  // the 10 dropped are 110..101
  EXPECT_EQ(r.max_us, 100);
  EXPECT_EQ(r.min_us, 1);
  EXPECT_EQ(SummarizeLatency({1.0, 2.0}, 2).samples, 0);
  EXPECT_EQ(SummarizeLatency({}, 0).samples, 0);
  auto one = SummarizeLatency({3.5}, 0);
  EXPECT_EQ(one.p50_us, 3.5);
  EXPECT_EQ(one.p99_us, 3.5);
}

TEST(RdmaPure, TheNearestGpuSharesTheLongestPciPath) {
  const std::string root = "/sys/devices/pci0000:15/0000:15:01.0";
  const std::string hca = root + "/0000:16:00.0/0000:17:00.0/0000:18:02.0/0000:1a:00.0";
  std::vector<std::string> gpus = {
      "/sys/devices/pci0000:9a/0000:9a:01.0/0000:9b:00.0/0000:9c:00.0/0000:9d:00.0",
      root + "/0000:16:00.0/0000:17:00.0/0000:18:00.0/0000:19:00.0",  // same PCIe switch
      root + "/0000:16:00.0/0000:17:00.0/0000:18:01.0/0000:1b:00.0",  // same switch too: a tie
      root + "/0000:30:00.0",
  };
  EXPECT_EQ(NearestGpu(hca, gpus), 1);
  EXPECT_EQ(NearestGpu(hca, {gpus[0], gpus[3]}), 1);
  EXPECT_EQ(NearestGpu(hca, {gpus[0]}), 0);  // the only one, however far
  EXPECT_EQ(NearestGpu(hca, {}), -1);
  EXPECT_EQ(NearestGpu("", gpus), -1);
  // Component-wise: pci0000:1 is not a prefix of pci0000:15.
  EXPECT_EQ(NearestGpu("/sys/devices/pci0000:15/x", {"/sys/devices/pci0000:1/x", "/sys/devices/pci0000:15/y"}), 1);
}

TEST(RdmaPure, PathsResolveThroughTheSeamsLinks) {
  host::Bundle b;
  auto dir = [&](const std::string& p) { b.PutStat(p, {host::IoStatus::kOk, 'd', 0755, 0, "", ""}); };
  auto link = [&](const std::string& p, const std::string& to) {
    b.PutStat(p, {host::IoStatus::kOk, 'l', 0777, 0, to, ""});
  };
  const std::string dev = "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0";
  for (std::string p : {"/sys", "/sys/class", "/sys/class/infiniband", "/sys/devices", "/sys/devices/pci0000:15",
                        "/sys/devices/pci0000:15/0000:15:01.0"})
    dir(p);
  dir(dev);
  dir(dev + "/infiniband");
  dir(dev + "/infiniband/mlx5_0");
  link("/sys/class/infiniband/mlx5_0", "../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/infiniband/mlx5_0");
  link(dev + "/infiniband/mlx5_0/device", "../../../0000:16:00.0");
  host::ReplayHost h(b);
  EXPECT_EQ(ResolvePath(h, "/sys/class/infiniband/mlx5_0/device"), dev);
  EXPECT_EQ(ResolvePath(h, "/sys/class/infiniband/mlx5_0"), dev + "/infiniband/mlx5_0");
  EXPECT_EQ(ResolvePath(h, "/sys/./class/../devices"), "/sys/devices");
  EXPECT_EQ(ResolvePath(h, "/sys/class/infiniband/mlx5_9/device"), "");  // not there
  EXPECT_EQ(ResolvePath(h, "relative/path"), "");
  link("/sys/class/infiniband/loop", "/sys/class/infiniband/loop");
  host::ReplayHost h2(b);
  EXPECT_EQ(ResolvePath(h2, "/sys/class/infiniband/loop"), "");  // links nest past 40
}

TEST(RdmaPure, PathsResolveOnThisMachineAsRealpathDoes) {
  // The real seam on real sysfs links (network interfaces and PCI devices of this machine).
  namespace fs = std::filesystem;
  host::LocalHost h;
  int checked = 0;
  for (const char* dir : {"/sys/class/net", "/sys/bus/pci/devices"}) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      for (const std::string& p :
           {e.path().string(), e.path().string() + "/device", e.path().string() + "/subsystem"}) {
        auto want = fs::canonical(p, ec);
        if (ec) continue;
        EXPECT_EQ(ResolvePath(h, p), want.string()) << p;
        ++checked;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "no sysfs links to resolve here";
}

// --- The loader ---

TEST(RdmaVerbs, AMissingLibraryNamesThePackageToInstall) {
  std::string e = VerbsLoadError("libibverbs-clustermax-test-absent.so.9");
  EXPECT_TRUE(Contains(e, "libibverbs is not installed on this node")) << e;
  EXPECT_TRUE(Contains(e, "libibverbs-clustermax-test-absent.so.9")) << e;  // dlerror's text
  EXPECT_TRUE(Contains(e, "install rdma-core/libibverbs1 (Debian, Ubuntu) or libibverbs (RHEL, Rocky)")) << e;
  // A library that loads but is not libibverbs is named with what it lacks.
  std::string z = VerbsLoadError("libz.so.1");
  EXPECT_TRUE(Contains(z, "libz.so.1 lacks ibv_get_device_list")) << z;
  EXPECT_TRUE(Contains(z, "not a usable libibverbs")) << z;
}

TEST(RdmaVerbs, TheInstalledLibibverbsHasEveryEntryPoint) {
  void* h = ::dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) GTEST_SKIP() << "libibverbs.so.1 is not installed here";
  EXPECT_EQ(VerbsLoadError("libibverbs.so.1"), "");
}

namespace {

// Runs RunRdmaPair on two ranks (threads of this process over loopback), rank 0 replaying `a` and
// rank 1 `b`; returns rank 0's result and checks rank 1's is null.
json RunPair(const SysfsTree& a, const SysfsTree& b, const RdmaOptions& o = {}) {
  static int pair = 0;
  CommOptions co;
  co.rendezvous = clustermax::testing::ScratchDir("rdma-pair-" + std::to_string(++pair)) / "rendezvous";
  co.timeout_s = 30;
  PrepareRendezvous(co.rendezvous);
  host::Bundle bundles[2] = {a.ToBundle(), b.ToBundle()};
  json results[2];
  std::string errors[2];
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto c = Comm::Connect(RankInfo{r, 2, 0, r == 0 ? "node-a" : "node-b"}, co);
        host::ReplayHost h(bundles[r]);
        results[r] = RunRdmaPair(*c, h, o);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
  EXPECT_TRUE(results[1].is_null()) << results[1];
  return results[0];
}

// How many devices the installed libibverbs lists (-1: not installed).
int VerbsDevices() {
  void* h = ::dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) return -1;
  using List = void** (*)(int*);
  using Free = void (*)(void**);
  auto list = reinterpret_cast<List>(::dlsym(h, "ibv_get_device_list"));
  auto free_list = reinterpret_cast<Free>(::dlsym(h, "ibv_free_device_list"));
  int n = 0;
  if (void** l = list(&n)) free_list(l);
  return n;
}

}  // namespace

TEST(RdmaPair, NoDeviceOnEitherNodeIsTheResultNotACrash) {
  SysfsTree none;
  none.EmptyDir(kIb);  // /sys/class/infiniband exists and lists nothing
  json r = RunPair(none, none);
  EXPECT_EQ(r, json({{"error", "node-a: no RDMA device (/sys/class/infiniband is empty)"}}));
}

TEST(RdmaPair, SysfsWithPortsButNoDeviceInLibibverbs) {
  int n = VerbsDevices();
  if (n < 0) GTEST_SKIP() << "libibverbs.so.1 is not installed here";
  if (n > 0) GTEST_SKIP() << "this machine has RDMA devices";
  // sysfs (replayed) names HDR ports, but the real libibverbs of this machine lists none.
  json r = RunPair(FromFixture("a800-hdr-ibstatus.txt"), FromFixture("cx7-hdr-ibstatus.txt"));
  ASSERT_TRUE(r.contains("error")) << r;
  std::string e = r["error"];
  EXPECT_TRUE(Contains(e, "node-a: no RDMA device: libibverbs lists none")) << e;
  EXPECT_TRUE(Contains(e, "mlx5_0")) << e;
}

TEST(RdmaPair, AnUnreadableInfinibandClassIsNamed) {
  SysfsTree unread;  // nothing recorded: /sys/class/infiniband answers not-recorded
  json r = RunPair(unread, FromFixture("cx7-hdr-ibstatus.txt"));
  EXPECT_EQ(r, json({{"error", "node-a: no RDMA device (/sys/class/infiniband: not-recorded)"}}));
}
