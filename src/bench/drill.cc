#include "bench/drill.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <regex>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "bench/json_read.h"
#include "bench/lifecycle.h"
#include "host/local_host.h"
#include "util/cancel.h"
#include "util/files.h"
#include "util/slurm_text.h"
#include "util/strings.h"
#include "util/time.h"

namespace clustermax::bench::drill {
using nlohmann::json;

namespace {

// "\040" in mountinfo and fstab fields is a space (and so on for tab, newline, backslash).
std::string DecodeOctal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isdigit(static_cast<unsigned char>(s[i + 2])) && std::isdigit(static_cast<unsigned char>(s[i + 3]))) {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// A small text file (mountinfo, fstab); "" when it cannot be read.
std::string ReadSmall(const std::string& path) {
  try {
    return util::ReadLocalFile(path, 4u << 20).value_or("");
  } catch (const std::exception&) {
    return "";
  }
}

std::string Errno(int e) { return std::strerror(e); }

// Appends the line to the kernel log: /dev/kmsg (a character device: one write is one record, at
// priority err), or a syslog-format file (a timestamp, the node and "kernel:", as rsyslog writes
// /var/log/kern.log) for sites, and tests, whose health check reads such a file.
std::string WriteKernelLine(const std::string& path, const std::string& node, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    if (e == EACCES || e == EPERM)
      return fmt::format("{}: {} (writing the kernel log needs root on the node)", path, Errno(e));
    return fmt::format("{}: {}", path, Errno(e));
  }
  struct stat st {};
  std::string rec;
  if (::fstat(fd, &st) == 0 && S_ISCHR(st.st_mode)) {
    rec = "<3>" + line + "\n";
  } else if (S_ISREG(st.st_mode)) {
    rec = fmt::format("{} {} kernel: {}\n", util::FormatRfc3339(std::chrono::system_clock::now()), node, line);
  } else {
    ::close(fd);
    return path + ": neither the kernel log device nor a regular file";
  }
  ssize_t n = ::write(fd, rec.data(), rec.size());
  int e = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(rec.size()))
    return fmt::format("{}: write: {}", path, n < 0 ? Errno(e) : "short write");
  return "";
}

host::CommandResult RunArgv(std::vector<std::string> argv, double timeout_s) {
  host::LocalHost h;
  return h.Run({std::move(argv), std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000)), 1u << 20});
}

std::string Failure(const host::CommandResult& r) {
  std::string err(util::Trim(r.err.empty() ? r.error : r.err));
  if (err.empty()) err = std::string(util::Trim(r.out));
  return util::Ellipsize(err.empty() ? fmt::format("exit code {}", r.exit_code) : err, 400);
}

bool Ok(const host::CommandResult& r) { return r.status == host::IoStatus::kOk && r.exit_code == 0; }

bool IsMounted(const std::string& path) {
  auto points = MountPoints(ReadSmall("/proc/self/mountinfo"));
  return std::find(points.begin(), points.end(), path) != points.end();
}

// This node's state as slurmctld sees it, polled until it is out of service (the Unix time it was
// seen so) or `limit_s` passed. `each_second`, when given, runs about once a second meanwhile (a
// fault that must be kept up).
std::optional<double> WaitOutOfService(const std::string& node, double limit_s,
                                       const std::function<void()>& each_second = {}) {
  auto t0 = std::chrono::steady_clock::now();
  auto last_tick = t0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < limit_s && !util::Cancelled()) {
    if (each_second && std::chrono::steady_clock::now() - last_tick >= std::chrono::seconds(1)) {
      each_second();
      last_tick = std::chrono::steady_clock::now();
    }
    auto r = RunArgv({"scontrol", "show", "node", "-o", node}, 10);
    if (Ok(r)) {
      auto rec = util::ParseScontrolRecord(util::Trim(r.out));
      if (rec.count("State") && !life::InService(rec)) return util::UnixSeconds();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return std::nullopt;
}

// `dcgmi test --inject` of one field value on one GPU; dcgmi says "Successfully injected" when
// nv-hostengine took it (its exit code alone is 0 on some refusals).
std::vector<std::string> DcgmInjectArgv(int gpu, int field, long long value) {
  return {"dcgmi",
          "test",
          "--inject",
          "--gpuid",
          std::to_string(gpu),
          "-f",
          std::to_string(field),
          "-v",
          std::to_string(value)};
}
bool DcgmInjected(const host::CommandResult& r) { return Ok(r) && util::Contains(r.out, "Successfully"); }

}  // namespace

bool IsGpuAddress(const std::string& pci) {
  static const std::regex kBdf("[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\\.[0-7]");
  return pci.size() <= 32 && std::regex_match(pci, kBdf);
}

std::string FaultLine(const std::string& kind, int code, const std::string& pci) {
  if (kind == "sxid")
    return fmt::format("nvidia-nvswitch0: SXid (PCI:{}): {}, synthetic fault injected by a clustermax fault drill", pci,
                       code);
  return fmt::format(
      "NVRM: Xid (PCI:{}): {}, pid=0, name=clustermax-drill, synthetic fault injected by a clustermax "
      "fault drill",
      pci, code);
}

std::vector<std::string> MountPoints(const std::string& mountinfo) {
  std::vector<std::string> out;
  for (const auto& line : util::SplitLines(mountinfo)) {
    // ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ... - FSTYPE SOURCE SUPER
    std::istringstream in{std::string(line)};
    std::string f[5];
    if (in >> f[0] >> f[1] >> f[2] >> f[3] >> f[4]) out.push_back(DecodeOctal(f[4]));
  }
  return out;
}

std::vector<std::string> FstabTargets(const std::string& fstab) {
  std::vector<std::string> out;
  for (const auto& raw : util::SplitLines(fstab)) {
    std::string line(util::Trim(raw));
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string src, target;
    if (in >> src >> target) out.push_back(DecodeOctal(target));
  }
  return out;
}

json RunDrillRankJob(const json& job, const std::string& node) {
  std::string kind = StrOf(job, "kind");
  json doc = {{"node", node}, {"kind", kind}};
  std::string restore_cmd;  // mount: the mount command; command: the site's restore
  std::vector<std::string> restore_argv;
  if (kind == "xid" || kind == "sxid") {
    std::string path = util::ForNode(StrOf(job, "kmsg"), node);
    std::string line = FaultLine(kind, static_cast<int>(NumOf(job, "code")), StrOf(job, "pci"));
    doc["t_inject"] = util::UnixSeconds();
    if (auto err = WriteKernelLine(path, node, line); !err.empty()) {
      doc.erase("t_inject");
      doc["error"] = err;
      return doc;
    }
    doc["did"] = fmt::format("wrote to {}: {}", path, line);
    doc["undo"] = "nothing on the node: the line stays in the kernel log, marked as a drill";
    return doc;
  }
  if (kind == "mount") {
    std::string mnt = StrOf(job, "mount"), fstab = StrOf(job, "fstab");
    // A job in its own mount namespace (job_container/tmpfs) would unmount only its own view.
    std::error_code e1, e2;
    auto ns_self = std::filesystem::read_symlink("/proc/self/ns/mnt", e1);
    auto ns_init = std::filesystem::read_symlink("/proc/1/ns/mnt", e2);
    if (!e1 && !e2 && ns_self != ns_init) {
      doc["error"] =
          "this job step runs in its own mount namespace (job_container/tmpfs?): unmounting here would not take "
          "the mount away from the node";
      return doc;
    }
    if (e1 || e2) doc["note"] = "the mount namespace could not be compared with init's (no access to /proc/1)";
    if (!IsMounted(mnt)) {
      doc["error"] = mnt + " is not a mount point on this node";
      return doc;
    }
    auto targets = FstabTargets(ReadSmall(fstab));
    if (std::find(targets.begin(), targets.end(), mnt) == targets.end()) {
      doc["error"] =
          fmt::format("{} is not in {}: the drill could not mount it again, so it does not unmount it", mnt, fstab);
      return doc;
    }
    restore_argv = {"mount", "--fstab", fstab, mnt};
    restore_cmd = fmt::format("mount --fstab {} {}", fstab, mnt);
    doc["t_inject"] = util::UnixSeconds();
    auto r = RunArgv({"umount", mnt}, 60);
    if (!Ok(r)) {
      doc.erase("t_inject");
      doc["error"] = "umount " + mnt + ": " + Failure(r);
      // A umount that timed out (a hung server) may still complete: put it back if it did.
      if (!IsMounted(mnt)) {
        auto back = RunArgv(restore_argv, 120);
        if (!Ok(back)) doc["restore_error"] = Failure(back);
      }
      return doc;
    }
    doc["did"] = "unmounted " + mnt;
  } else if (kind == "dcgm") {
    // DCGM's error injection: the field (230, DCGM_FI_DEV_XID_ERRORS, by default) set on one GPU
    // in nv-hostengine's cache, where DCGM's health watches and policies (and whatever reads them)
    // see it. Injected samples age out of the cache, so the value is injected again every second
    // until the node is marked bad; 0 is injected at the end ("no error").
    int gpu = static_cast<int>(NumOf(job, "gpu")), field = static_cast<int>(NumOf(job, "field"));
    auto code = static_cast<long long>(NumOf(job, "code"));
    restore_argv = DcgmInjectArgv(gpu, field, 0);
    restore_cmd = fmt::format("{}", fmt::join(restore_argv, " "));
    doc["t_inject"] = util::UnixSeconds();
    auto r = RunArgv(DcgmInjectArgv(gpu, field, code), 30);
    if (!DcgmInjected(r)) {
      doc.erase("t_inject");
      doc["error"] = r.status == host::IoStatus::kNotFound
                         ? std::string(
                               "dcgmi is not installed on this node (DCGM error injection needs dcgmi and a "
                               "running nv-hostengine)")
                         : "dcgmi test --inject: " + Failure(r);
      auto back = RunArgv(restore_argv, 30);  // half an injection is still put back
      if (r.status != host::IoStatus::kNotFound && !DcgmInjected(back))
        doc["restore_error"] = "dcgmi test --inject (0): " + Failure(back);
      return doc;
    }
    doc["did"] = fmt::format("injected field {} = {} on GPU {} through DCGM, again every second", field, code, gpu);
    int again = 0, refused = 0;
    doc["undo"] = restore_cmd;
    auto seen = WaitOutOfService(node, NumOf(job, "restore_after_s"), [&] {
      if (util::Cancelled()) return;  // stopping: straight to the restore
      ++again;
      if (!DcgmInjected(RunArgv(DcgmInjectArgv(gpu, field, code), 5))) ++refused;
    });
    doc["detected_on_node"] = seen.has_value();
    if (seen) doc["t_detected"] = *seen;
    doc["injections"] = 1 + again;
    if (refused) doc["injections_refused"] = refused;
    // Put back whatever stopped the wait; tried three times (a stop signal reaching the step's
    // processes may take the first dcgmi with it), well inside the time srun is given to end.
    host::CommandResult back;
    for (int attempt = 0; attempt < 3; ++attempt) {
      back = RunArgv(restore_argv, 8);
      if (DcgmInjected(back)) break;
    }
    doc["t_restore"] = util::UnixSeconds();
    if (!DcgmInjected(back)) doc["restore_error"] = "dcgmi test --inject (0): " + Failure(back);
    return doc;
  } else if (kind == "command" || kind == "gpu") {
    std::string inject = StrOf(job, "inject");
    restore_cmd = StrOf(job, "restore");
    std::string did = "ran the inject command";
    if (kind == "gpu") {
      // One GPU taken from the node as NVIDIA documents it (nvidia-smi drain: NVML processes
      // started afterwards no longer see it), then slurmd restarted so that it registers what it
      // sees now; put back the same way.
      std::string pci = StrOf(job, "pci"), restart = util::ForNode(StrOf(job, "slurmd_restart"), node);
      if (!IsGpuAddress(pci)) {
        doc["error"] = "not a GPU's PCI address (domain:bus:device.function): " + pci;
        return doc;
      }
      inject = fmt::format("nvidia-smi drain -p {} -m 1", pci);
      restore_cmd = fmt::format("nvidia-smi drain -p {} -m 0", pci);
      did = fmt::format("drained GPU {} with nvidia-smi", pci);
      if (!restart.empty()) {
        inject += " && " + restart;
        restore_cmd += " && " + restart;
        did += ", then restarted slurmd: " + restart;
      }
    }
    if (!restore_cmd.empty()) restore_argv = {"sh", "-c", restore_cmd};
    doc["t_inject"] = util::UnixSeconds();
    auto r = RunArgv({"sh", "-c", inject}, 120);
    if (!Ok(r)) {
      // Half an injection is still restored.
      doc.erase("t_inject");
      doc["error"] = (kind == "gpu" ? "nvidia-smi drain or the slurmd restart: " : "inject command: ") + Failure(r);
      if (!restore_argv.empty()) {
        auto back = RunArgv(restore_argv, 120);
        if (!Ok(back)) doc["error"] = doc["error"].get<std::string>() + "; restore command: " + Failure(back);
      }
      return doc;
    }
    doc["did"] = did;
  } else {
    doc["error"] = "unknown fault kind " + kind;
    return doc;
  }
  if (restore_argv.empty()) {
    doc["undo"] = "no restore command was given";
    return doc;
  }
  doc["undo"] = restore_cmd;
  // Restored once slurmctld has the node out of service (the fault was seen), or after
  // restore_after_s whatever happened: a fault nobody notices must not stay.
  auto seen = WaitOutOfService(node, NumOf(job, "restore_after_s"));
  doc["detected_on_node"] = seen.has_value();
  if (seen) doc["t_detected"] = *seen;
  auto r = RunArgv(restore_argv, 120);
  doc["t_restore"] = util::UnixSeconds();
  if (!Ok(r))
    doc["restore_error"] = Failure(r);
  else if (kind == "mount" && !IsMounted(StrOf(job, "mount")))
    doc["restore_error"] = "mounted again, but " + StrOf(job, "mount") + " is still not a mount point";
  return doc;
}

void NodeWatch::Observe(double t, const std::map<std::string, std::string>& record) {
  auto it = record.find("State");
  std::string state = record.empty() ? "(gone from Slurm)" : it == record.end() ? "(no state)" : it->second;
  bool in_service = life::InService(record);
  auto r = record.find("Reason");
  seen_.push_back({t, in_service, state, r == record.end() ? "" : r->second});
}

void NodeWatch::Replaced(double t, const std::string& by) {
  if (replaced_) return;
  replaced_ = t;
  replaced_by_ = by;
}

NodeWatch::Times NodeWatch::Analyze(double t_inject) const {
  Times out;
  for (const auto& s : seen_) {
    if (s.t < t_inject) continue;
    if (!out.detected) {
      if (!s.in_service) {
        out.detected = s.t;
        out.reason = s.reason;
      }
    } else if (!out.back && s.in_service) {
      out.back = s.t;
    }
  }
  return out;
}

bool NodeWatch::Detected(double t_inject) const { return Analyze(t_inject).detected.has_value(); }

bool NodeWatch::Back(double t_inject) const {
  auto a = Analyze(t_inject);
  return a.back.has_value() || (a.detected && replaced_ && *replaced_ >= *a.detected);
}

std::string DetectedBy(const std::string& reason) {
  std::string r = util::ToLower(reason);
  if (r.rfind("clustermax", 0) == 0) return "clustermax";
  if (util::Contains(r, "nhc")) return "NHC";
  if (util::Contains(r, "dcgm")) return "DCGM";
  // slurmctld's and slurmd's own reasons: a node gone silent, a step it could not kill, a failed
  // prolog/epilog, hardware below its configuration at registration.
  for (const char* own : {"not responding", "kill task failed", "epilog error", "prolog error",
                          "node unexpectedly rebooted", "low realmemory", "low socket", "gres/", "reboot timed out"})
    if (util::Contains(r, own)) return "Slurm";
  return reason.empty() ? "" : "other";
}

json NodeWatch::Result(double t_inject) const {
  auto rel = [&](double t) { return RoundTo(t - t_inject, 2); };
  json states = json::array();
  for (const auto& s : seen_)
    if (states.empty() || states.back()[1] != s.state) states.push_back({rel(s.t), s.state});
  json out = {{"node", node_}, {"states", states}};
  Times a = Analyze(t_inject);
  if (a.detected) {
    out["detect_s"] = rel(*a.detected);
    out["reason"] = a.reason;
    out["detected_by"] = DetectedBy(a.reason);
  }
  std::optional<double> ret;
  if (a.back) {
    out["back_s"] = rel(*a.back);
    ret = *a.back;
  }
  if (a.detected && replaced_ && *replaced_ >= *a.detected) {
    out["replaced_by"] = replaced_by_;
    out["replaced_s"] = rel(*replaced_);
    if (!ret || *replaced_ < *ret) ret = *replaced_;
  }
  if (ret) {
    out["return_s"] = rel(*ret);
    if (a.detected) out["in_drain_s"] = RoundTo(*ret - *a.detected, 2);
  }
  return out;
}

std::vector<MetricValue> DrillMetrics(const json& r) {
  MetricValue detect{"rel.drill-detect", std::nullopt, "no node was drilled", "", ""};
  MetricValue ret{"rel.drill-return", std::nullopt, "no node was drilled", "", ""};
  std::string kind = StrOf(ObjOf(r, "drill"), "kind");
  std::string not_drilled;
  for (const auto& n : ArrOf(r, "nodes")) {
    std::string node = StrOf(n, "node");
    if (!StrOf(n, "error").empty()) {
      // No fault went in (refused, no root for the kernel log, the step failed): nothing about
      // the cluster was measured there.
      if (not_drilled.empty()) not_drilled = fmt::format("{}: {}", node, StrOf(n, "error"));
      continue;
    }
    if (auto v = OptNumOf(n, "detect_s")) {
      if (!detect.value || *v > *detect.value) {
        detect.value = *v;
        detect.detail = fmt::format("{} fault to {} out of service ({}), slowest node", kind, node,
                                    StrOf(n, "detected_by").empty() ? "no reason seen" : StrOf(n, "detected_by"));
      }
    } else if (detect.fail_reason.empty()) {
      detect.fail_reason = fmt::format("{}: not marked bad within {:g} s of the {} fault", node,
                                       NumOf(ObjOf(r, "drill"), "detect_timeout_s"), kind);
    }
    if (auto v = OptNumOf(n, "return_s")) {
      if (!ret.value || *v > *ret.value) {
        ret.value = *v;
        ret.detail = fmt::format(
            "fault to {} {}, slowest node", node,
            StrOf(n, "replaced_by").empty() ? "schedulable again" : "replaced by " + StrOf(n, "replaced_by"));
      }
    } else if (OptNumOf(n, "detect_s") && ret.fail_reason.empty()) {
      ret.fail_reason = fmt::format("{}: not back in service within {:g} s of the fault{}", node,
                                    NumOf(ObjOf(r, "drill"), "return_timeout_s"),
                                    n.contains("resumed_by_drill") ? " (the drill resumed it)" : "");
    }
    // The drill left its fault behind: whatever the times, the node is not back as it was.
    if (!StrOf(n, "restore_error").empty() && ret.fail_reason.empty())
      ret.fail_reason = fmt::format("{}: the drill could not restore the fault: {}", node, StrOf(n, "restore_error"));
  }
  if (!not_drilled.empty()) {
    if (detect.why_missing == "no node was drilled") detect.why_missing = "not drilled: " + not_drilled;
    if (ret.why_missing == "no node was drilled") ret.why_missing = "not drilled: " + not_drilled;
  }
  if (!detect.value && detect.fail_reason.empty() && not_drilled.empty() && !ArrOf(r, "nodes").empty())
    detect.why_missing = "not measured";
  if (!ret.value && ret.fail_reason.empty() && (detect.value || !detect.fail_reason.empty()))
    ret.why_missing = "not measured: the fault was never detected";
  return {detect, ret};
}

std::string RenderDrill(const json& r) {
  auto safe = [](const std::string& s) { return util::TerminalSafeText(s); };
  auto sec = [](const json& o, const char* k) {
    auto v = OptNumOf(o, k);
    return v ? fmt::format("{:.1f} s", *v) : std::string("-");
  };
  const json& d = ObjOf(r, "drill");
  std::string out = fmt::format("Fault drill: {}\n", safe(StrOf(d, "what")));
  for (const auto& n : ArrOf(r, "nodes")) {
    out += fmt::format("  {}\n", safe(StrOf(n, "node")));
    if (!StrOf(n, "error").empty()) {
      out += fmt::format("    error: {}\n", safe(StrOf(n, "error")));
      continue;
    }
    out += fmt::format("    {:<22} {}{}\n", "time to detect", sec(n, "detect_s"),
                       StrOf(n, "reason").empty() ? "" : " (" + safe(StrOf(n, "reason")) + ")");
    out += fmt::format("    {:<22} {}\n", "time in drain", sec(n, "in_drain_s"));
    out += fmt::format("    {:<22} {}{}\n", "time to return", sec(n, "return_s"),
                       StrOf(n, "replaced_by").empty() ? "" : " (replaced by " + safe(StrOf(n, "replaced_by")) + ")");
    if (auto v = OptNumOf(n, "restore_s")) out += fmt::format("    {:<22} {:.1f} s\n", "fault restored at", *v);
    if (!StrOf(n, "restore_error").empty())
      out += fmt::format("    restore FAILED: {}\n", safe(StrOf(n, "restore_error")));
    if (n.contains("resumed_by_drill")) out += "    not back in time: the drill resumed it\n";
    if (!StrOf(n, "undo").empty()) out += fmt::format("    undo: {}\n", safe(StrOf(n, "undo")));
  }
  return out;
}

}  // namespace clustermax::bench::drill
