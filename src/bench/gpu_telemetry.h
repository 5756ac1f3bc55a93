// NVML telemetry of `bench gpu`: one snapshot a second on its own thread while the suites run;
// per device (keyed by UUID) the clocks, power, temperature and throttle reasons of a time span.
#pragma once
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace clustermax::bench {

class GpuTelemetry {
 public:
  GpuTelemetry() = default;
  GpuTelemetry(const GpuTelemetry&) = delete;
  GpuTelemetry& operator=(const GpuTelemetry&) = delete;
  ~GpuTelemetry() { Stop(); }  // an exception between Start and Stop must not leave a joinable thread
  void Start();
  void Stop();
  // Summary per NVML device (keyed by UUID) of the samples between two points in time.
  nlohmann::json Summary(double from_s, double to_s) const;
  bool available() const;
  std::string error() const;
  double Now() const;  // seconds since this object was made

 private:
  void Loop();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::vector<nlohmann::json> samples_;
  std::string error_;
  std::thread thread_;
  std::chrono::steady_clock::time_point t0_ = std::chrono::steady_clock::now();
};

}  // namespace clustermax::bench
