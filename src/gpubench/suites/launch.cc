// Helper suite "launch": empty-kernel launch latency (the launch host suite).
// Hooks: run (reads the item, measures on c.device, returns the result fields). Registered in
// suites/register.cc; the host side that plans these items is src/bench/gpu_suites/.
#include "gpubench/harness.h"

#include <chrono>

namespace clustermax::gpubench {
namespace {

// Empty-kernel launches: by events (back to back, time per launch) and by wall clock (one launch
// and a stream synchronise each), SuperBench's two views.
json RunLaunch(Context& c, const json& item) {
  int count = item.value("count", 20000), wall = item.value("wall", 2000);
  for (int i = 0; i < 100; ++i) CK(LaunchEmpty(c.stream));
  CK(cudaStreamSynchronize(c.stream));
  std::vector<double> event_us;
  Events ev(2);
  for (int rep = 0; rep < 5; ++rep) {
    CK(cudaEventRecord(ev.ev[0], c.stream));
    for (int i = 0; i < count; ++i) CK(LaunchEmpty(c.stream));
    CK(cudaEventRecord(ev.ev[1], c.stream));
    CK(cudaEventSynchronize(ev.ev[1]));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, ev.ev[0], ev.ev[1]));
    event_us.push_back(ms * 1000.0 / count);
  }
  std::vector<double> wall_us;
  for (int i = 0; i < wall; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    CK(LaunchEmpty(c.stream));
    CK(cudaStreamSynchronize(c.stream));
    wall_us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return {{"event_us", event_us}, {"wall_us", wall_us}};
}

}  // namespace

extern const HelperSuite kLaunchSuite = {"launch", RunLaunch};

}  // namespace clustermax::gpubench
