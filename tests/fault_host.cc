#include "fault_host.h"

namespace clustermax::host {
namespace {

constexpr char kGarbage[] = "\x01\x02garbled <<<";

}  // namespace

std::optional<FaultHost::Fault> FaultHost::PathFault(const std::string& path) const {
  for (const auto& [prefix, f] : path_faults_) {
    if (path.rfind(prefix, 0) == 0) return f;
  }
  return std::nullopt;
}

std::optional<FaultHost::Fault> FaultHost::CommandFault(const std::string& argv0) const {
  for (const auto& [name, f] : command_faults_) {
    if (argv0 == name) return f;
  }
  return std::nullopt;
}

FileResult FaultHost::ReadFile(const std::string& path, size_t max_bytes) {
  auto f = PathFault(path);
  if (!f) return target().ReadFile(path, max_bytes);
  switch (*f) {
    case Fault::kTimeout:
      return {IoStatus::kTimeout, "", false, "injected: read timed out"};
    case Fault::kPermissionDenied:
      return {IoStatus::kPermissionDenied, "", false, "injected: Permission denied"};
    case Fault::kNotFound:
      return {IoStatus::kNotFound, "", false, "injected: No such file or directory"};
    case Fault::kTruncate: {
      FileResult r = target().ReadFile(path, max_bytes);
      r.content.resize(r.content.size() / 2);
      r.truncated = true;
      return r;
    }
    case Fault::kGarbage:
      return {IoStatus::kOk, kGarbage, false, ""};
  }
  return target().ReadFile(path, max_bytes);
}

DirResult FaultHost::ListDir(const std::string& path) {
  auto f = PathFault(path);
  if (!f || *f == Fault::kTruncate || *f == Fault::kGarbage) return target().ListDir(path);
  DirResult r;
  r.status = *f == Fault::kTimeout
                 ? IoStatus::kTimeout
                 : (*f == Fault::kPermissionDenied ? IoStatus::kPermissionDenied : IoStatus::kNotFound);
  r.error = "injected fault";
  return r;
}

CommandResult FaultHost::Run(const CommandSpec& spec) {
  auto f = spec.argv.empty() ? std::nullopt : CommandFault(spec.argv[0]);
  if (!f) return target().Run(spec);
  CommandResult r;
  switch (*f) {
    case Fault::kTimeout:
      r.status = IoStatus::kTimeout;
      r.timed_out = true;
      r.duration_ms = static_cast<double>(spec.timeout.count());
      r.error = "injected: timed out after " + std::to_string(spec.timeout.count()) + " ms";
      return r;
    case Fault::kPermissionDenied:
      r.status = IoStatus::kPermissionDenied;
      r.error = "injected: Permission denied";
      return r;
    case Fault::kNotFound:
      r.status = IoStatus::kNotFound;
      r.error = "injected: " + spec.argv[0] + ": command not found";
      return r;
    case Fault::kTruncate:
      r = target().Run(spec);
      r.out.resize(r.out.size() / 2);
      r.truncated = true;
      return r;
    case Fault::kGarbage:
      r.status = IoStatus::kOk;
      r.exit_code = 0;
      r.out = kGarbage;
      return r;
  }
  return target().Run(spec);
}

WhichResult FaultHost::Which(const std::string& name) {
  auto f = CommandFault(name);
  if (f && *f == Fault::kNotFound) return {IoStatus::kNotFound, ""};
  WhichResult r = target().Which(name);
  // A command whose run is faulted must look installed, or the fault is never exercised.
  if (f && r.status != IoStatus::kOk) r = {IoStatus::kOk, "/usr/bin/" + name};
  return r;
}

NvmlResult FaultHost::QueryNvml(std::chrono::milliseconds timeout) {
  if (!nvml_fault_) return target().QueryNvml(timeout);
  NvmlResult r;
  r.status = *nvml_fault_ == Fault::kTimeout ? IoStatus::kTimeout : IoStatus::kNotFound;
  r.error = "injected NVML fault";
  return r;
}

}  // namespace clustermax::host
