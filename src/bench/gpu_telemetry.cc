#include "bench/gpu_telemetry.h"

#include <algorithm>
#include <map>

#include "gpu/nvml.h"
#include "host/process.h"

namespace clustermax::bench {
using nlohmann::json;

void GpuTelemetry::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void GpuTelemetry::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

json GpuTelemetry::Summary(double from_s, double to_s) const {
  std::lock_guard<std::mutex> l(mu_);
  std::map<std::string, std::vector<const json*>> by_uuid;
  for (const auto& s : samples_) {
    double t = s["t"];
    if (t >= from_s && t <= to_s) by_uuid[s["uuid"]].push_back(&s);
  }
  json out = json::object();
  for (const auto& entry : by_uuid) {
    const std::string& uuid = entry.first;  // named references: clang 14 cannot capture structured bindings
    const std::vector<const json*>& v = entry.second;
    auto stat = [&](const char* key) -> json {
      std::vector<double> xs;
      for (const json* s : v) {
        if ((*s)[key].is_number()) xs.push_back((*s)[key].get<double>());
      }
      if (xs.empty()) return nullptr;
      std::sort(xs.begin(), xs.end());
      return {{"min", xs.front()}, {"median", xs[xs.size() / 2]}, {"max", xs.back()}};
    };
    uint64_t reasons = 0;
    for (const json* s : v) {
      if ((*s)["reasons"].is_number()) reasons |= (*s)["reasons"].get<uint64_t>();
    }
    json r = {{"samples", v.size()},
              {"sm_clock_mhz", stat("sm")},
              {"memory_clock_mhz", stat("mem")},
              {"power_w", stat("power")},
              {"temperature_c", stat("temp")}};
    // Bits other than GPU idle (0x1), application-clock setting (0x2) and SW power cap (0x4)
    // mean the clocks were held back by heat, power brake or hardware slowdown.
    r["clocks_event_reasons"] = reasons;
    r["throttled"] = (reasons & ~uint64_t{0x7}) != 0;
    out[uuid] = r;
  }
  return out;
}

bool GpuTelemetry::available() const {
  std::lock_guard<std::mutex> l(mu_);
  return !samples_.empty();
}

std::string GpuTelemetry::error() const {
  std::lock_guard<std::mutex> l(mu_);
  return error_;
}

double GpuTelemetry::Now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

void GpuTelemetry::Loop() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    l.unlock();
    auto r = gpu::QueryNvml(std::chrono::milliseconds(2000));
    double t = Now();
    l.lock();
    if (r.status != gpu::NvmlStatus::kOk) {
      error_ = r.error.empty() ? "NVML unavailable" : r.error;
      if (samples_.empty()) break;  // no NVML on this node: stop trying
    } else {
      for (const auto& d : r.data.value("devices", json::array())) {
        const json& c = d.value("clocks_mhz", json::object());
        samples_.push_back({{"t", t},
                            {"uuid", d.value("uuid", json(nullptr)).is_string() ? d["uuid"].get<std::string>() : ""},
                            {"sm", c.value("sm", json(nullptr))},
                            {"mem", c.value("memory", json(nullptr))},
                            {"power", d.value("power_draw_w", json(nullptr))},
                            {"temp", d.value("temperature_c", json(nullptr))},
                            {"reasons", d.value("clocks_event_reasons", json(nullptr))}});
      }
    }
    cv_.wait_for(l, std::chrono::seconds(1), [this] { return stop_; });
  }
}

}  // namespace clustermax::bench
