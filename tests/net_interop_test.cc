// The readers of perftest and nccl-tests output (src/bench/net_interop.h) on captures from real
// clusters (tests/fixtures/net/, each file's source in SOURCES.md there), and mutations that flip
// one fact.
#include "bench/net_interop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "testutil.h"

using namespace clustermax;
using namespace clustermax::bench::net;

namespace {

std::string Capture(const std::string& name) { return clustermax::testing::ReadFixture("net/" + name); }

PerftestRun Perftest(const std::string& name) {
  std::string error;
  auto run = ParsePerftest(Capture("perftest/" + name), &error);
  EXPECT_TRUE(run.has_value()) << name << ": " << error;
  return run.value_or(PerftestRun{});
}

}  // namespace

TEST(NetInterop, PerftestBandwidthAcrossGenerationsAndUnits) {
  // ConnectX-7 NDR, --report_gbits, a CPU-frequency warning among the rows.
  auto ndr = Perftest("ib_write_bw-ndr400-cx7-report_gbits-client.txt");
  EXPECT_EQ(ndr.title, "RDMA_Write BW Test");
  EXPECT_FALSE(ndr.latency);
  EXPECT_EQ(ndr.device, "mlx5_0");
  EXPECT_EQ(ndr.link_type, "IB");
  EXPECT_EQ(ndr.qps, 1);
  EXPECT_EQ(ndr.mtu, 4096);
  EXPECT_EQ(ndr.unit, "Gb/sec");
  ASSERT_EQ(ndr.bw.size(), 1u);
  EXPECT_EQ(ndr.bw[0].bytes, 65536);
  EXPECT_EQ(ndr.bw[0].iterations, 5000);
  EXPECT_DOUBLE_EQ(ndr.bw[0].peak, 392.38);
  EXPECT_DOUBLE_EQ(ndr.bw[0].average, 392.34);
  EXPECT_DOUBLE_EQ(ndr.bw[0].msg_rate_mpps, 0.748336);
  ASSERT_EQ(ndr.warnings.size(), 1u);
  EXPECT_TRUE(ndr.warnings[0].starts_with("Conflicting CPU frequency")) << ndr.warnings[0];
  // MiB/sec (the newest builds), converted to Gb/s.
  auto send = Perftest("ib_send_bw-ndr400-cx7-mib_sec-client.txt");
  EXPECT_EQ(send.unit, "MiB/sec");
  ASSERT_EQ(send.bw.size(), 1u);
  EXPECT_NEAR(*ToGbps(send.bw[0].average, send.unit), 46557.03 * 8 * 1.048576e-3, 1e-9);
  // HDR, -a: every size from 2 B to 8 MiB.
  auto hdr = Perftest("ib_write_bw-hdr200-cx6-a-report_gbits-client.txt");
  ASSERT_EQ(hdr.bw.size(), 23u);
  EXPECT_EQ(hdr.bw.front().bytes, 2);
  EXPECT_EQ(hdr.bw.back().bytes, 8388608);
  EXPECT_DOUBLE_EQ(hdr.bw.back().average, 196.80);
  // RoCE with a GID index, and a GPU buffer.
  auto roce = Perftest("ib_write_bw-roce-h200-cuda-dmabuf-a-report_gbits-client.txt");
  EXPECT_EQ(roce.link_type, "Ethernet");
  EXPECT_EQ(roce.gid_index, 3);
  EXPECT_TRUE(roce.cuda);
  EXPECT_EQ(roce.device, "mlx5_3");
  EXPECT_DOUBLE_EQ(roce.bw.back().average, 140.40);
  // 16 QPs over 60 s: no peak, a huge iteration count.
  auto duration = Perftest("ib_write_bw-roce-a40-cuda-dmabuf-16qp-duration-client.txt");
  EXPECT_EQ(duration.qps, 16);
  ASSERT_EQ(duration.bw.size(), 1u);
  EXPECT_EQ(duration.bw[0].iterations, 10384867);
  EXPECT_DOUBLE_EQ(duration.bw[0].peak, 0.0);
  EXPECT_DOUBLE_EQ(duration.bw[0].average, 181.46);
  // ConnectX-3 (the oldest format, tabs turned to spaces in the copy).
  auto old = Perftest("ib_write_bw-mlx4-cx3-ib-a-mb_sec-client.txt");
  EXPECT_EQ(old.device, "mlx4_0");
  EXPECT_EQ(old.unit, "MB/sec");
  EXPECT_DOUBLE_EQ(old.bw.back().average, 3662.02);
  EXPECT_NEAR(*ToGbps(3662.02, "MB/sec"), 29.29616, 1e-9);
  // Both sides of one run agree.
  auto server = Perftest("ib_write_bw-roce-t4-cuda-perftest4.5-server.txt");
  auto client = Perftest("ib_write_bw-roce-t4-cuda-perftest4.5-client.txt");
  ASSERT_EQ(server.bw.size(), 1u);
  ASSERT_EQ(client.bw.size(), 1u);
  EXPECT_DOUBLE_EQ(server.bw[0].average, client.bw[0].average);
  EXPECT_FALSE(ToGbps(1, "furlongs/fortnight").has_value());
}

TEST(NetInterop, PerftestLatency) {
  auto old = Perftest("ib_write_lat-mlx4-cx3-ib-a.txt");
  EXPECT_TRUE(old.latency);
  EXPECT_EQ(old.unit, "usec");
  ASSERT_EQ(old.lat.size(), 23u);
  const auto& last = old.lat.back();
  EXPECT_EQ(last.bytes, 8388608);
  EXPECT_EQ(last.iterations, 20000);
  EXPECT_DOUBLE_EQ(last.t_min, 2296.01);
  EXPECT_DOUBLE_EQ(last.t_typical, 2302.01);
  EXPECT_DOUBLE_EQ(last.p99, 2327.01);
  EXPECT_DOUBLE_EQ(last.p999, 2335.48);
  auto ndr = Perftest("ib_send_lat-ndr400-cx7-client.txt");
  ASSERT_EQ(ndr.lat.size(), 1u);
  EXPECT_DOUBLE_EQ(ndr.lat[0].t_typical, 1.27);
  EXPECT_DOUBLE_EQ(ndr.lat[0].p99, 1.37);
  EXPECT_EQ(ndr.warnings.size(), 2u);
  auto roce = Perftest("ib_read_lat-roce200-client.txt");
  ASSERT_EQ(roce.lat.size(), 1u);
  EXPECT_DOUBLE_EQ(roce.lat[0].t_avg, 4.82);
}

TEST(NetInterop, PerftestRefusesWhatIsNotATable) {
  std::string error;
  EXPECT_FALSE(ParsePerftest("", &error));
  EXPECT_FALSE(error.empty());
  // The header without a row (a run that died after the handshake).
  std::string text = Capture("perftest/ib_write_bw-ndr400-cx7-report_gbits-client.txt");
  std::string cut = text.substr(0, text.find(" 65536"));
  EXPECT_FALSE(ParsePerftest(cut, &error));
  EXPECT_NE(error.find("without a result row"), std::string::npos) << error;
  // A mangled number: that row is kept aside, not read as a figure.
  std::string bad = text;
  bad.replace(bad.find("392.34"), 6, "39x.34");
  auto run = ParsePerftest(bad, &error);
  EXPECT_FALSE(run.has_value() && !run->bw.empty() && run->bw[0].average == 392.34);
}

TEST(NetInterop, BusBandwidthFactors) {
  EXPECT_DOUBLE_EQ(*BusBwFactor("all_reduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(*BusBwFactor("all_reduce", 8), 1.75);
  EXPECT_DOUBLE_EQ(*BusBwFactor("all_gather", 8), 0.875);
  EXPECT_DOUBLE_EQ(*BusBwFactor("reduce_scatter", 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(*BusBwFactor("broadcast", 8), 1.0);
  EXPECT_DOUBLE_EQ(*BusBwFactor("sendrecv", 16), 1.0);
  EXPECT_FALSE(BusBwFactor("all_reduce", 0).has_value());
  EXPECT_FALSE(BusBwFactor("hypercube_shuffle", 8).has_value());
}

TEST(NetInterop, NcclTestsAcrossGenerations) {
  std::string error;
  // A100, 2 nodes over RDMA, NCCL 2.14.3: two sizes, the factor 2(n-1)/n = 1.875 on 16 ranks.
  auto a100 = ParseNcclTests(Capture("nccl-tests/a100-2node-oci-rdma-all_reduce-2.14.3.txt"), "", &error);
  ASSERT_EQ(a100.size(), 1u) << error;
  EXPECT_EQ(a100[0].collective, "all_reduce");  // inferred: sum, no root, busbw/algbw = 1.875
  EXPECT_EQ(a100[0].ranks, 16);
  EXPECT_EQ(a100[0].devices[0], "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(a100[0].nccl_version, "2.14.3+cuda11.7");
  ASSERT_EQ(a100[0].rows.size(), 2u);
  const auto& big = a100[0].rows.back();
  EXPECT_EQ(big.bytes, 10737418240LL);
  EXPECT_DOUBLE_EQ(big.out_of_place.algbw, 96.03);
  EXPECT_DOUBLE_EQ(big.out_of_place.busbw, 180.06);
  EXPECT_DOUBLE_EQ(big.in_place.busbw, 180.08);
  EXPECT_EQ(big.out_of_place.wrong, 0);
  EXPECT_NEAR(big.out_of_place.busbw / big.out_of_place.algbw, *BusBwFactor("all_reduce", 16), 0.01);
  EXPECT_DOUBLE_EQ(*a100[0].avg_busbw, 175.531);
  EXPECT_EQ(*a100[0].out_of_bounds, 0);
  EXPECT_FALSE(a100[0].failed);
  // B200 all_gather named by the caller (its factor is shared with alltoall).
  auto b200 = ParseNcclTests(Capture("nccl-tests/b200-2node-gke-rdma-all_gather-2.26.6.txt"), "all_gather", &error);
  ASSERT_EQ(b200.size(), 1u) << error;
  EXPECT_EQ(b200[0].collective, "all_gather");
  EXPECT_EQ(b200[0].nccl_version, "2.26.6+cuda12.8");
  EXPECT_DOUBLE_EQ(b200[0].rows.back().out_of_place.busbw, 260.03);
  EXPECT_EQ(ParseNcclTests(Capture("nccl-tests/b200-2node-gke-rdma-all_gather-2.26.6.txt"), "", &error)[0].collective,
            "");  // not guessed between all_gather and alltoall
  // Two tests in one file: alltoall, then sendrecv.
  auto two = ParseNcclTests(Capture("nccl-tests/h100-2node-alltoall-sendrecv.txt"), "", &error);
  ASSERT_EQ(two.size(), 2u) << error;
  EXPECT_DOUBLE_EQ(two[0].rows.back().out_of_place.busbw, 75.14);
  EXPECT_EQ(two[0].rows.back().in_place.wrong, -1);  // N/A
  EXPECT_DOUBLE_EQ(*two[0].avg_busbw, 45.9401);
  EXPECT_EQ(two[1].collective, "sendrecv");
  EXPECT_DOUBLE_EQ(two[1].rows.back().out_of_place.busbw, 29.13);
  // AMD MI300X through rccl-tests, RCCL's own version line.
  auto mi300 = ParseNcclTests(Capture("nccl-tests/mi300x-2node-rccl-all_reduce-2.22.3.txt"), "", &error);
  ASSERT_EQ(mi300.size(), 1u) << error;
  EXPECT_EQ(mi300[0].collective, "all_reduce");
  EXPECT_EQ(mi300[0].devices[0], "AMD Instinct MI300X");
  EXPECT_EQ(mi300[0].nccl_version, "2.22.3-HEAD:7d8d67c");
  EXPECT_DOUBLE_EQ(mi300[0].rows.back().out_of_place.busbw, 357.46);
  EXPECT_DOUBLE_EQ(*mi300[0].avg_busbw, 92.3318);
  // H800 NVLS with NCCL_DEBUG=INFO: the network, NVLS, the version.
  auto h800 = ParseNcclTests(Capture("nccl-tests/h800-8gpu-broadcast-debug-nvls-2.18.3.txt"), "", &error);
  ASSERT_EQ(h800.size(), 1u) << error;
  EXPECT_EQ(h800[0].collective, "broadcast");
  EXPECT_EQ(h800[0].nccl_version, "2.18.3+cuda12.2");
  EXPECT_EQ(h800[0].network, "Socket");
  EXPECT_TRUE(h800[0].nvls);
  EXPECT_EQ(h800[0].ranks, 8);
  // The rest: each table's largest size and its footer, as captured.
  struct Want {
    const char* file;
    int ranks;
    long long bytes;
    double busbw, avg;
  };
  for (const Want& w : {Want{"h100-2node-gcp-a3mega-all_reduce.txt", 16, 8589934592LL, 338.82, 70.742},
                        Want{"h200-2node-socket-all_reduce-2.27.3.txt", 16, 17179869184LL, 92.33, 36.2205},
                        Want{"mi300x-8gpu-rccl-all_reduce.txt", 8, 8589934592LL, 315.69, 110.464}}) {
    auto t = ParseNcclTests(Capture(std::string("nccl-tests/") + w.file), "", &error);
    ASSERT_EQ(t.size(), 1u) << w.file << ": " << error;
    EXPECT_EQ(t[0].collective, "all_reduce") << w.file;
    EXPECT_EQ(t[0].ranks, w.ranks) << w.file;
    EXPECT_EQ(t[0].rows.back().bytes, w.bytes) << w.file;
    EXPECT_DOUBLE_EQ(t[0].rows.back().out_of_place.busbw, w.busbw) << w.file;
    ASSERT_TRUE(t[0].avg_busbw.has_value()) << w.file;
    EXPECT_DOUBLE_EQ(*t[0].avg_busbw, w.avg) << w.file;
  }
  // Open MPI's tagged lines ([1,0]<stdout>:), AWS EFA.
  auto t4 = ParseNcclTests(Capture("nccl-tests/t4-2node-efa-all_reduce-debug-tagged-2.12.7.txt"), "", &error);
  ASSERT_EQ(t4.size(), 1u) << error;
  EXPECT_EQ(t4[0].network, "AWS Libfabric");
  EXPECT_DOUBLE_EQ(*t4[0].avg_busbw, 1.15327);
  EXPECT_DOUBLE_EQ(t4[0].rows.back().out_of_place.busbw, 3.11);
}

TEST(NetInterop, NcclTestsOldFormatWithWrongValues) {
  std::string error;
  auto v100 = ParseNcclTests(Capture("nccl-tests/v100-dgx2-12gpu-oldformat-5collectives-errors.txt"), "", &error);
  ASSERT_EQ(v100.size(), 5u) << error;
  EXPECT_EQ(v100[0].ranks, 12);
  EXPECT_EQ(v100[0].devices[0], "Tesla V100-SXM3-32GB");
  // all_gather: 4 values out of bounds (FAILED); all_reduce's "error" of 2e-07 is rounding, not a
  // wrong element.
  EXPECT_TRUE(v100[0].failed);
  EXPECT_EQ(v100[1].rows.back().out_of_place.wrong, -1);
  EXPECT_EQ(*v100[0].out_of_bounds, 4);
  EXPECT_DOUBLE_EQ(*v100[0].avg_busbw, 30.2993);
  EXPECT_DOUBLE_EQ(v100[1].rows.back().out_of_place.busbw, 123.56);
  EXPECT_FALSE(v100[1].failed);
  // Mutation: one wrong element in a clean table fails it.
  std::string text = Capture("nccl-tests/a100-2node-oci-rdma-all_reduce-2.14.3.txt");
  std::string row = "111812   96.03  180.06      0";
  ASSERT_NE(text.find(row), std::string::npos);
  text.replace(text.find(row), row.size(), "111812   96.03  180.06      3");
  auto bad = ParseNcclTests(text, "all_reduce", &error);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_TRUE(bad[0].failed);
  EXPECT_EQ(bad[0].rows.back().out_of_place.wrong, 3);
  EXPECT_TRUE(ParseNcclTests("all_reduce_perf: command not found", "", &error).empty());
  EXPECT_FALSE(error.empty());
}

TEST(NetInterop, NcclDebugOutputAcrossVersions) {
  // NCCL 2.29.7, TUNING only: named algorithm and protocol per size.
  auto a = ParseNcclDebug(Capture("nccl-debug/rtx5090-2rank-socket-broadcast-tuning-new-format-2.29.7.txt"));
  EXPECT_EQ(a.version, "2.29.7+cuda12.9");
  ASSERT_EQ(a.tuning.size(), 72u);
  EXPECT_EQ(a.tuning[0].collective, "Broadcast");
  EXPECT_EQ(a.tuning[0].bytes, 1024);
  EXPECT_EQ(a.tuning[0].algorithm, "RING");
  EXPECT_EQ(a.tuning[0].protocol, "LL");
  std::set<std::string> protos;
  for (const auto& t : a.tuning) protos.insert(t.protocol);
  EXPECT_EQ(protos, (std::set<std::string>{"LL", "SIMPLE"}));
  // Older NCCL: numbers, no collective named, an nccl-tests row run into an NCCL line; channels and
  // the IB transport from the INIT lines.
  auto b = ParseNcclDebug(Capture("nccl-debug/h100-3node-24rank-ibext-tuning-old-format-noname.txt"));
  ASSERT_EQ(b.tuning.size(), 20u);
  EXPECT_EQ(b.tuning[0].bytes, 8589934592LL);
  EXPECT_EQ(b.tuning[0].algorithm, "RING");
  EXPECT_EQ(b.tuning[0].protocol, "SIMPLE");
  EXPECT_EQ(b.tuning[0].collective, "");
  EXPECT_EQ(b.tuning[1].algorithm, "TREE");
  EXPECT_EQ(b.tuning[1].protocol, "LL");
  EXPECT_EQ(b.coll_channels, 16);
  EXPECT_EQ(b.nvls_channels, 16);
  ASSERT_FALSE(b.transports.empty());
  EXPECT_EQ(b.transports[0], "NET/IBext_v8/7/GDRDMA");
  // Named and numeric: AllGather Ring Simple; the per-call "AllGather: opCount ..." lines are not tuning.
  auto c = ParseNcclDebug(Capture("nccl-debug/efa-4node-1gpu-fsdp-tuning-old-format-named-2.23.4.txt"));
  ASSERT_EQ(c.tuning.size(), 1u);
  EXPECT_EQ(c.tuning[0].collective, "AllGather");
  EXPECT_EQ(c.tuning[0].bytes, 37756928);
  EXPECT_EQ(c.tuning[0].algorithm, "RING");
  EXPECT_EQ(c.tuning[0].protocol, "SIMPLE");
  // INIT facts from nccl-tests captures with NCCL_DEBUG=INFO: NVLS on an H800 node, EFA on T4s.
  auto d = ParseNcclDebug(Capture("nccl-tests/h800-8gpu-broadcast-debug-nvls-2.18.3.txt"));
  EXPECT_TRUE(d.nvls);
  EXPECT_EQ(d.coll_channels, 16);
  EXPECT_EQ(d.nvls_channels, 16);
  EXPECT_EQ(d.network, "Socket");
  EXPECT_NE(std::find(d.transports.begin(), d.transports.end(), "P2P/direct pointer"), d.transports.end());
  EXPECT_TRUE(d.tuning.empty());
  auto e = ParseNcclDebug(Capture("nccl-tests/t4-2node-efa-all_reduce-debug-tagged-2.12.7.txt"));
  EXPECT_FALSE(e.nvls);
  EXPECT_EQ(e.coll_channels, 2);
  EXPECT_EQ(e.nvls_channels, 0);
  EXPECT_NE(std::find(e.transports.begin(), e.transports.end(), "NET/AWS Libfabric/0"), e.transports.end());
  // Mutations: one changed fact changes the reading.
  std::string m = Capture("nccl-debug/efa-4node-1gpu-fsdp-tuning-old-format-named-2.23.4.txt");
  m.replace(m.find("Algo 1 proto 2"), 14, "Algo 4 proto 0");
  auto f = ParseNcclDebug(m);
  ASSERT_EQ(f.tuning.size(), 1u);
  EXPECT_EQ(f.tuning[0].algorithm, "NVLS");
  EXPECT_EQ(f.tuning[0].protocol, "LL");
  EXPECT_TRUE(ParseNcclDebug("garbage\n\xff\xfe NCCL INFO  Bytes -> Algo\n").tuning.empty());
}
