// Fuzz target: the readers of perftest, nccl-tests and NCCL_DEBUG output files (src/bench/net_interop.h), which
// users hand us from their own runs. Whatever the text, a reader answers or refuses with a reason,
// and every figure it keeps is a finite number.
#include <cmath>

#include "bench/net_interop.h"
#include "fuzz_common.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view t = fuzz::AsText(data, size);
  namespace net = bench::net;
  std::string error;
  auto run = net::ParsePerftest(t, &error);
  if (!run && error.empty()) __builtin_trap();  // a refusal says why
  if (run) {
    for (const auto& r : run->bw)
      if (!std::isfinite(r.peak) || !std::isfinite(r.average) || !std::isfinite(r.msg_rate_mpps)) __builtin_trap();
    for (const auto& r : run->lat)
      if (!std::isfinite(r.t_avg) || !std::isfinite(r.p999)) __builtin_trap();
    if (auto g = net::ToGbps(1.0, run->unit); g && !(*g > 0)) __builtin_trap();
  }
  error.clear();
  auto tables = net::ParseNcclTests(t, "", &error);
  if (tables.empty() && error.empty()) __builtin_trap();
  for (const auto& table : tables) {
    if (table.rows.empty()) __builtin_trap();  // a table is kept only with rows
    for (const auto& r : table.rows)
      if (!std::isfinite(r.out_of_place.busbw) || !std::isfinite(r.in_place.algbw)) __builtin_trap();
    if (table.avg_busbw && !std::isfinite(*table.avg_busbw)) __builtin_trap();
    net::BusBwFactor(table.collective, table.ranks);
  }
  // NCCL_DEBUG output: every tuning entry names an algorithm and a protocol, channels are counts.
  auto facts = net::ParseNcclDebug(t);
  for (const auto& tu : facts.tuning)
    if (tu.algorithm.empty() || tu.protocol.empty() || tu.bytes < 0) __builtin_trap();
  if (facts.coll_channels < 0 || facts.nvls_channels < 0) __builtin_trap();
  return 0;
}
