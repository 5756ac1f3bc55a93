// Collectors for installed software: container runtimes, CUDA toolkits, NCCL, perf, DCGM,
// and the probes that exercise them (perf-sample, container-launch).
#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <pugixml.hpp>

#include "collect/collector.h"
#include "collect/parsers.h"
#include "util/strings.h"
#include "util/version.h"

namespace clustermax::collect {
namespace {

using core::Evidence;
using core::EvidenceStatus;
using nlohmann::json;
using Parser = std::function<std::optional<std::string>(std::string_view)>;

// The shape every "is X installed, which version" item has: {installed, path, version, raw}.
// Absent from PATH is a successful read ("installed": false); a tool that is there but hangs,
// fails or prints something unexpected is an evidence error, never "not installed".
Evidence ToolVersion(host::Host& h, const CollectOptions& o, const std::string& id, std::vector<std::string> argv,
                     const Parser& parse, bool use_stderr = false) {
  Evidence e;
  e.sources.push_back("which:" + argv[0]);
  auto w = h.Which(argv[0]);
  if (w.status == host::IoStatus::kNotFound) {
    e.status = EvidenceStatus::kOk;
    e.data = {{"installed", false}, {"path", nullptr}, {"version", nullptr}};
    return e;
  }
  if (w.status != host::IoStatus::kOk) {
    e.status = FromIo(w.status);
    e.error = "PATH lookup of " + argv[0] + " failed";
    return e;
  }
  auto r = RunFor(e, h, std::move(argv), o, id);
  if (!r) return e;
  std::string text = r->out + (use_stderr || r->out.empty() ? r->err : "");
  auto v = parse(text);
  if (!v) {
    e.status = EvidenceStatus::kParseError;
    e.error = fmt::format("exit {}; output: {}", r->exit_code, util::Ellipsize(util::Trim(text), 300));
    e.data = {{"installed", true}, {"path", w.path}, {"version", nullptr}};
    return e;
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"installed", true}, {"path", w.path}, {"version", *v}, {"raw", util::Ellipsize(util::Trim(text), 300)}};
  return e;
}

Evidence ContainerToolkit(host::Host& h, const CollectOptions& o) {
  // The CLI first; the runtime binary names the same release.
  for (const char* tool : {"nvidia-ctk", "nvidia-container-runtime", "nvidia-container-toolkit"}) {
    Evidence e = ToolVersion(h, o, "container-toolkit.version", {tool, "--version"}, ParseNvidiaCtkVersion);
    if (e.status != EvidenceStatus::kOk || e.data.value("installed", false)) {
      e.data["tool"] = tool;
      return e;
    }
  }
  Evidence e;
  e.status = EvidenceStatus::kOk;
  e.sources = {"which:nvidia-ctk", "which:nvidia-container-runtime", "which:nvidia-container-toolkit"};
  e.data = {{"installed", false}, {"path", nullptr}, {"version", nullptr}};  // CDI wiring: container.runtimes
  return e;
}

Evidence CudaToolkits(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  std::vector<std::string> nvccs;
  std::string default_path;
  e.sources.push_back("which:nvcc");
  auto w = h.Which("nvcc");
  if (w.status == host::IoStatus::kOk) {
    nvccs.push_back(w.path);
    default_path = w.path;
  }
  e.sources.push_back("dir:/usr/local");
  auto local = h.ListDir("/usr/local");
  if (local.status == host::IoStatus::kOk) {
    for (const auto& ent : local.entries) {
      if (ent.name != "cuda" && ent.name.rfind("cuda-", 0) != 0) continue;
      std::string nvcc = "/usr/local/" + ent.name + "/bin/nvcc";
      auto s = h.Stat(nvcc);
      if (s.status == host::IoStatus::kOk && std::find(nvccs.begin(), nvccs.end(), nvcc) == nvccs.end())
        nvccs.push_back(nvcc);
      if (ent.name == "cuda" && default_path.empty() && s.status == host::IoStatus::kOk) default_path = nvcc;
    }
  }
  json toolkits = json::array();
  for (const auto& nvcc : nvccs) {
    auto spec = Command({nvcc, "--version"}, o, "cuda.toolkits");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    json t = {{"nvcc", nvcc}, {"default", nvcc == default_path}};
    if (r.status != host::IoStatus::kOk) {
      t["version"] = nullptr;
      t["error"] = fmt::format("{}: {}", ToString(r.status), r.error);
    } else if (auto v = ParseNvccRelease(r.out)) {
      t["version"] = *v;
    } else {
      t["version"] = nullptr;
      t["error"] = "unparsable: " + util::Ellipsize(util::Trim(r.out + r.err), 200);
    }
    toolkits.push_back(t);
  }
  e.data["toolkits"] = toolkits;
  e.data["default"] = default_path.empty() ? json(nullptr) : json(default_path);
  return e;
}

Evidence Runc(host::Host& h, const CollectOptions& o) {
  return ToolVersion(h, o, "runc.version", {"runc", "--version"}, ParseRuncVersion);
}

Evidence Docker(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.sources.push_back("which:docker");
  auto w = h.Which("docker");
  if (w.status != host::IoStatus::kOk) {
    e.status = w.status == host::IoStatus::kNotFound ? EvidenceStatus::kOk : FromIo(w.status);
    e.data = {{"installed", false}, {"is_docker", nullptr}, {"client_version", nullptr}, {"server_version", nullptr}};
    return e;
  }
  auto rc = RunFor(e, h, {"docker", "--version"}, o, "docker.version");
  if (!rc) return e;
  e.status = EvidenceStatus::kOk;
  auto cv = ParseDockerClientVersion(rc->out);
  e.data["installed"] = true;
  e.data["is_docker"] = cv.has_value();  // podman/nerdctl shims print something else
  e.data["client_version"] = cv ? json(*cv) : json(nullptr);
  e.data["client_raw"] = util::Ellipsize(util::Trim(rc->out), 200);
  auto server = Command({"docker", "version", "--format", "{{.Server.Version}}"}, o, "docker.version");
  e.sources.push_back(Source(server));
  auto rs = h.Run(server);
  std::string sv(util::Trim(rs.out));
  if (rs.status == host::IoStatus::kOk && rs.exit_code == 0 && !sv.empty() &&
      std::isdigit(static_cast<unsigned char>(sv[0]))) {
    e.data["server_version"] = sv;
  } else {
    e.data["server_version"] = nullptr;
    e.data["server_error"] = rs.status != host::IoStatus::kOk ? rs.error : util::Ellipsize(util::Trim(rs.err), 300);
  }
  return e;
}

Evidence PerfBinary(host::Host& h, const CollectOptions& o) {
  return ToolVersion(h, o, "perf.binary", {"perf", "--version"}, ParsePerfVersion, true);
}

Evidence PerfSample(host::Host& h, const CollectOptions& o) {
  Evidence e;
  auto r = RunFor(e, h, {"perf", "stat", "-e", "cycles,instructions", "--", "sleep", "0.1"}, o, "probe.perf-sample");
  if (!r) return e;
  e.status = EvidenceStatus::kOk;
  std::string text = r->err + r->out;  // perf stat reports on stderr
  bool not_supported = util::Contains(text, "<not supported>") || util::Contains(text, "<not counted>");
  bool denied = util::ContainsIgnoreCase(text, "permission") || util::Contains(text, "perf_event_paranoid");
  std::string outcome = r->exit_code == 0 && !not_supported ? "granted"
                        : denied                            ? "denied"
                        : r->exit_code == 0                 ? "partial"
                                                            : "error";
  e.data = {{"outcome", outcome}, {"exit_code", r->exit_code}, {"output", util::Ellipsize(util::Trim(text), 600)}};
  return e;
}

// NVIDIA HPC SDK under /opt/nvidia/hpc_sdk: the newest <arch>/<YY.M> release, what its nvc,
// nvc++ and nvfortran report, and which payload families it carries.
Evidence HpcSdk(host::Host& h, const CollectOptions& o) {
  Evidence e;
  const std::string root = "/opt/nvidia/hpc_sdk";
  e.sources.push_back("dir:" + root);
  auto top = h.ListDir(root);
  if (top.status == host::IoStatus::kNotFound) {
    e.status = EvidenceStatus::kOk;
    e.data = {{"installed", false}};
    return e;
  }
  if (MarkFailed(e, top.status, top.error)) return e;
  std::string arch, release;
  for (const auto& a : top.entries) {
    if (a.name.rfind("Linux_", 0) != 0) continue;
    auto rels = h.ListDir(root + "/" + a.name);
    e.sources.push_back("dir:" + root + "/" + a.name);
    for (const auto& r : rels.entries) {
      if (!IsHpcSdkRelease(r.name)) continue;
      if (release.empty() || *util::ParseNumericVersion(r.name) > *util::ParseNumericVersion(release)) {
        release = r.name;
        arch = a.name;
      }
    }
  }
  e.status = EvidenceStatus::kOk;
  if (release.empty()) {
    e.data = {{"installed", false}, {"note", "no <arch>/<YY.M> release under " + root}};
    return e;
  }
  std::string base = root + "/" + arch + "/" + release;
  json compilers = json::object();
  for (const char* c : {"nvc", "nvc++", "nvfortran"}) {
    auto spec = Command({base + "/compilers/bin/" + c, "--version"}, o, "hpcsdk.install");
    e.sources.push_back(Source(spec));
    auto r = h.Run(spec);
    auto v =
        r.status == host::IoStatus::kOk && r.exit_code == 0 ? ParseHpcSdkCompilerVersion(r.out + r.err) : std::nullopt;
    compilers[c] = v ? json(*v) : json(nullptr);
  }
  // Payload families, looked for two levels down (layouts move between releases).
  json payload = json::object();
  auto find = [&](const std::string& dir, const std::vector<std::string>& keys) {
    std::vector<std::string> names;
    auto l1 = h.ListDir(base + "/" + dir);
    e.sources.push_back("dir:" + base + "/" + dir);
    for (const auto& x : l1.entries) {
      names.push_back(x.name);
      if (x.type == 'd') {
        auto l2 = h.ListDir(base + "/" + dir + "/" + x.name);
        for (const auto& y : l2.entries) names.push_back(y.name);
      }
    }
    for (const auto& k : keys) {
      bool found =
          std::any_of(names.begin(), names.end(), [&](const std::string& n) { return util::ContainsIgnoreCase(n, k); });
      payload[k] = found;
    }
  };
  find("comm_libs", {"nccl", "hpcx", "nvshmem"});
  // math_libs/<cuda>/targets/... holds cuBLAS, cuFFT, cuRAND, cuSOLVER, cuSPARSE: present or not.
  auto math = h.ListDir(base + "/math_libs");
  e.sources.push_back("dir:" + base + "/math_libs");
  payload["math_libs"] = math.status == host::IoStatus::kOk && !math.entries.empty();
  find("profilers", {"Nsight_Compute", "Nsight_Systems"});
  e.data = {{"installed", true},  {"root", root},           {"arch", arch},
            {"release", release}, {"compilers", compilers}, {"payload", payload}};
  return e;
}

// NCCL settings a job inherits: /etc/nccl.conf, the file NCCL_CONF_FILE names, NCCL_ lines of
// /etc/environment, and NCCL_ variables of this process's environment (a Slurm step's on a node).
Evidence NcclConfig(host::Host& h, const CollectOptions&) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  json files = json::array();
  auto read = [&](const std::string& path, bool environment_file) {
    e.sources.push_back("file:" + path);
    auto r = h.ReadFile(path, 1 << 20);
    json f = {{"path", path}, {"found", r.status == host::IoStatus::kOk}, {"vars", json::object()}};
    if (r.status == host::IoStatus::kOk) {
      for (const auto& [k, v] : util::ParseKeyValueLines(r.content)) {
        if (k.rfind("NCCL_", 0) == 0 || (environment_file && k.rfind("export NCCL_", 0) == 0)) {
          f["vars"][k.rfind("export ", 0) == 0 ? k.substr(7) : k] = v;
        }
      }
    } else if (r.status != host::IoStatus::kNotFound) {
      f["error"] = fmt::format("{}: {}", host::ToString(r.status), r.error);
    }
    files.push_back(f);
  };
  read("/etc/nccl.conf", false);
  e.sources.push_back("env:NCCL_CONF_FILE");
  if (auto conf = h.GetEnv("NCCL_CONF_FILE"); conf && !conf->empty()) read(*conf, false);
  read("/etc/environment", true);
  json env = json::object();
  for (const char* k :
       {"NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_PROTO", "NCCL_ALGO", "NCCL_IB_QPS_PER_CONNECTION",
        "NCCL_IB_GID_INDEX", "NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_TOPO_FILE", "NCCL_NET_GDR_LEVEL"}) {
    e.sources.push_back(std::string("env:") + k);
    if (auto v = h.GetEnv(k)) env[k] = *v;
  }
  e.data = {{"files", files}, {"env", env}};
  return e;
}

Evidence NcclLibraries(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  std::set<std::string> libs, plugins;  // plugins: NCCL network plugins (libnccl-net*.so: SHARP/CollNet, EFA, ...)
  auto spec = Command({"ldconfig", "-p"}, o, "nccl.libraries");
  e.sources.push_back(Source(spec));
  auto r = h.Run(spec);
  bool ldconfig_ok = r.status == host::IoStatus::kOk && r.exit_code == 0;
  if (ldconfig_ok) {
    for (const auto& ent : ParseLdconfig(r.out)) {
      if (ent.soname.rfind("libnccl.so", 0) == 0)
        libs.insert(ent.path);
      else if (ent.soname.rfind("libnccl-net", 0) == 0)
        plugins.insert(ent.path);
    }
  }
  std::vector<std::string> dirs = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
                                   "/usr/local/lib"};
  auto local = h.ListDir("/usr/local");
  if (local.status == host::IoStatus::kOk) {
    for (const auto& ent : local.entries) {
      if (ent.name == "cuda" || ent.name.rfind("cuda-", 0) == 0) {
        dirs.push_back("/usr/local/" + ent.name + "/lib64");
        dirs.push_back("/usr/local/" + ent.name + "/targets/x86_64-linux/lib");
      }
    }
  }
  json versions = json::array();
  json found = json::array();
  for (const auto& dir : dirs) {
    e.sources.push_back("dir:" + dir);
    auto d = h.ListDir(dir);
    if (d.status != host::IoStatus::kOk) continue;
    for (const auto& ent : d.entries) {
      if (ent.name.rfind("libnccl-net", 0) == 0) plugins.insert(dir + "/" + ent.name);
      if (ent.name.rfind("libnccl.so", 0) != 0) continue;
      libs.insert(dir + "/" + ent.name);
      if (auto v = VersionFromSoname(ent.name, "libnccl"))
        versions.push_back({{"path", dir + "/" + ent.name}, {"version", *v}});
    }
  }
  // Symbolic links ("libnccl.so.2 -> libnccl.so.2.27.3") name the real file and its version.
  for (const auto& lib : libs) {
    found.push_back(lib);
    auto s = h.Stat(lib);
    if (s.status == host::IoStatus::kOk && s.type == 'l') {
      std::string target = s.link_target.substr(s.link_target.rfind('/') + 1);
      if (auto v = VersionFromSoname(target, "libnccl")) versions.push_back({{"path", lib}, {"version", *v}});
    }
  }
  json header = nullptr;
  for (const char* path : {"/usr/include/nccl.h", "/usr/local/cuda/include/nccl.h", "/usr/local/include/nccl.h"}) {
    e.sources.push_back(std::string("file:") + path);
    auto f = h.ReadFile(path, 1u << 20);
    if (f.status != host::IoStatus::kOk) continue;
    if (auto v = ParseNcclHeaderVersion(f.content)) {
      header = {{"path", path}, {"version", *v}};
      break;
    }
  }
  e.data["libraries"] = found;
  e.data["net_plugins"] = plugins;
  e.data["versions"] = versions;
  e.data["header"] = header;
  e.data["ldconfig_ok"] = ldconfig_ok;
  return e;
}

Evidence Dcgm(host::Host& h, const CollectOptions& o) {
  return ToolVersion(h, o, "dcgm.version", {"dcgmi", "--version"}, ParseToolVersionLine);
}

// Probe enroot-import: pull a small image with enroot into a file of ours under $TMPDIR, then delete
// it. The file name is fixed per user (a replay asks for the same commands); a leftover from an
// interrupted run is removed first, and only that file is ever removed.
// NCCL topology files on the host: NCCL_TOPO_FILE (environment, then /etc/nccl.conf) and the usual
// places providers install them (/etc/nccl/*.xml, /opt/microsoft/*.xml). The first is what NCCL
// reads: the setting when there is one, else the first file found.
struct TopoCandidates {
  std::optional<std::string> setting;  // NCCL_TOPO_FILE
  std::string setting_source;
  std::vector<std::string> paths;
};

TopoCandidates FindTopoFiles(host::Host& h, const CollectOptions& o) {
  TopoCandidates c;
  // NCCL_TOPO_FILE as a job sees it, from the same sources and in the same order as nccl.config
  // (the step's environment, then /etc/nccl.conf, $NCCL_CONF_FILE, /etc/environment).
  Evidence cfg = NcclConfig(h, o);
  if (cfg.data["env"].contains("NCCL_TOPO_FILE") && !cfg.data["env"]["NCCL_TOPO_FILE"].get<std::string>().empty()) {
    c.setting = cfg.data["env"]["NCCL_TOPO_FILE"].get<std::string>();
    c.setting_source = "environment";
  } else {
    for (const auto& f : cfg.data["files"]) {
      const json& vars = f["vars"];
      if (!vars.contains("NCCL_TOPO_FILE") || vars["NCCL_TOPO_FILE"].get<std::string>().empty()) continue;
      c.setting = vars["NCCL_TOPO_FILE"].get<std::string>();
      c.setting_source = f["path"].get<std::string>();
      break;
    }
  }
  if (c.setting) c.paths.push_back(*c.setting);
  for (const char* dir : {"/etc/nccl", "/opt/microsoft"}) {
    auto d = h.ListDir(dir);
    if (d.status != host::IoStatus::kOk) continue;
    std::vector<std::string> names;
    for (const auto& ent : d.entries) {
      if (ent.name.ends_with(".xml") && ent.type != 'd') names.push_back(std::string(dir) + "/" + ent.name);
    }
    std::sort(names.begin(), names.end());
    for (const auto& n : names) {
      if (std::find(c.paths.begin(), c.paths.end(), n) == c.paths.end()) c.paths.push_back(n);
    }
  }
  return c;
}

// The first word of `sha256sum FILE`'s output, when it is a hash.
std::optional<std::string> Sha256Of(const host::CommandResult& r) {
  if (r.status != host::IoStatus::kOk || r.exit_code != 0) return std::nullopt;
  auto words = util::SplitWhitespace(r.out);
  if (words.empty() || words[0].size() != 64) return std::nullopt;
  return words[0];
}

Evidence NcclTopoFile(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.sources = {"env:NCCL_TOPO_FILE", "file:/etc/nccl.conf", "dir:/etc/nccl", "dir:/opt/microsoft",
               "cmd:sha256sum FILE"};
  TopoCandidates c = FindTopoFiles(h, o);
  json files = json::array();
  for (const auto& path : c.paths) {
    auto st = h.Stat(path);
    json f = {{"path", path},
              {"exists", st.status == host::IoStatus::kOk},
              {"size", st.status == host::IoStatus::kOk ? json(st.size) : json(nullptr)}};
    if (st.status == host::IoStatus::kOk) {
      auto content = h.ReadFile(path, 4u << 20);
      if (content.status == host::IoStatus::kOk) {
        pugi::xml_document doc;
        auto parsed = doc.load_buffer(content.content.data(), content.content.size());
        f["xml_ok"] = static_cast<bool>(parsed);
        f["root"] = parsed ? json(doc.document_element().name()) : json(nullptr);
      } else {
        f["xml_ok"] = nullptr;
        f["read_error"] = std::string(ToString(content.status));
      }
      auto sum = h.Run(Command({"sha256sum", path}, o, "nccl.topo-file"));
      auto hash = Sha256Of(sum);
      f["sha256"] = hash ? json(*hash) : json(nullptr);
    }
    files.push_back(f);
  }
  e.status = EvidenceStatus::kOk;
  e.data = {{"setting", c.setting ? json(*c.setting) : json(nullptr)},
            {"setting_source", c.setting_source},
            {"files", files}};
  return e;
}

// Probe (container-launch): the same topology file inside a pyxis container on this node, as a job
// would see it (home not mounted, no entrypoint): its sha256, or its absence.
Evidence NcclTopoInContainer(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.status = EvidenceStatus::kOk;
  TopoCandidates c = FindTopoFiles(h, o);
  std::string path = c.setting ? *c.setting : c.paths.empty() ? "" : c.paths.front();
  if (path.empty()) {
    e.data = {{"launched", false}, {"reason", "no topology file on the host"}};
    return e;
  }
  e.sources.push_back("which:srun");
  if (h.Which("srun").status != host::IoStatus::kOk) {
    e.data = {{"launched", false}, {"path", path}, {"reason", "no srun (pyxis launches through Slurm)"}};
    return e;
  }
  std::vector<std::string> argv = {"srun", "--overlap", "-N1", "-n1"};
  if (auto job = h.GetEnv("SLURM_JOB_ID"); job && !job->empty()) argv.push_back("--jobid=" + *job);
  if (auto node = h.GetEnv("SLURMD_NODENAME"); node && !node->empty()) argv.push_back("--nodelist=" + *node);
  argv.insert(argv.end(), {"--container-image=" + o.probe_image, "--no-container-mount-home", "--container-remap-root",
                           "--no-container-entrypoint", "sha256sum", path});
  auto spec = Command(argv, o, "probe.nccl-topo-container");
  if (!o.timeouts.count("probe.nccl-topo-container")) spec.timeout = std::chrono::seconds(600);
  e.sources.push_back(Source(spec));
  auto r = h.Run(spec);
  std::string err = std::string(util::Trim(r.err));
  bool missing = r.status == host::IoStatus::kOk && r.exit_code == 1 && util::Contains(err, "No such file");
  bool pyxis_absent = util::Contains(err, "unrecognized option") && util::Contains(err, "container-image");
  auto hash = Sha256Of(r);
  e.data = {{"launched", r.status == host::IoStatus::kOk && (hash || missing)},
            {"path", path},
            {"image", o.probe_image},
            {"status", ToString(r.status)},
            {"exit_code", r.exit_code},
            {"sha256", hash ? json(*hash) : json(nullptr)},
            {"missing", missing},
            {"pyxis_absent", pyxis_absent},
            {"stderr", util::Ellipsize(err, 400)}};
  return e;
}

Evidence EnrootImport(host::Host& h, const CollectOptions& o) {
  Evidence e;
  e.sources.push_back("which:enroot");
  if (h.Which("enroot").status != host::IoStatus::kOk) {
    e.status = EvidenceStatus::kOk;
    e.data = {{"installed", false}};
    return e;
  }
  auto tmp = h.GetEnv("TMPDIR");
  auto user = h.GetEnv("USER");
  std::string dir = tmp && !tmp->empty() && (*tmp)[0] == '/' ? *tmp : "/tmp";
  std::string file = dir + "/clustermax-enroot-import-" + (user && !user->empty() ? *user : "user") + ".sqsh";
  auto rm = Command({"rm", "-f", "--", file}, o, "probe.enroot-import");
  rm.timeout = std::chrono::seconds(10);
  h.Run(rm);
  auto spec = Command({"enroot", "import", "-o", file, o.enroot_image}, o, "probe.enroot-import");
  if (!o.timeouts.count("probe.enroot-import")) spec.timeout = std::chrono::seconds(30);
  e.sources.push_back(Source(spec));
  auto started = std::chrono::steady_clock::now();
  auto r = h.Run(spec);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  auto cleanup = h.Run(rm);
  e.status = EvidenceStatus::kOk;
  // enroot prints "[ERROR] ..." lines on failure; keep the last lines of both streams.
  std::string tail = util::Trim(r.err).empty() ? std::string(util::Trim(r.out)) : std::string(util::Trim(r.err));
  if (tail.size() > 600) tail = "..." + tail.substr(tail.size() - 600);
  e.data = {{"installed", true},
            {"image", o.enroot_image},
            {"file", file},
            {"status", ToString(r.status)},
            {"exit_code", r.exit_code},
            {"seconds", r.status == host::IoStatus::kOk ? json(r.duration_ms > 0 ? r.duration_ms / 1000.0 : seconds)
                                                        : json(nullptr)},
            {"timeout_s", std::chrono::duration<double>(spec.timeout).count()},
            {"output_tail", tail},
            {"cleaned_up", cleanup.status == host::IoStatus::kOk && cleanup.exit_code == 0}};
  return e;
}

Evidence ContainerLaunch(host::Host& h, const CollectOptions& o) {
  Evidence e;
  auto w = h.Which("docker");
  e.sources.push_back("which:docker");
  if (w.status != host::IoStatus::kOk) {
    e.status = EvidenceStatus::kOk;
    e.data = {{"engine", nullptr}, {"ran", false}};
    return e;
  }
  auto spec = Command({"docker", "run", "--rm", "--gpus", "all", o.probe_image, "nvidia-smi", "-L"}, o,
                      "probe.container-launch");
  if (!o.timeouts.count("probe.container-launch")) spec.timeout = std::chrono::seconds(600);
  e.sources.push_back(Source(spec));
  auto r = h.Run(spec);
  if (r.status != host::IoStatus::kOk) {
    FailFromCommand(e, r);
    return e;
  }
  e.status = EvidenceStatus::kOk;
  auto gpus = ParseNvidiaSmiList(r.out);
  // Exit codes 125-127 are docker's own failures: the container never ran.
  bool ran = r.exit_code < 125 && r.exit_code >= 0;
  e.data = {{"engine", "docker"},       {"image", o.probe_image}, {"ran", ran},
            {"exit_code", r.exit_code}, {"gpus", gpus},           {"stderr", util::Ellipsize(util::Trim(r.err), 400)}};
  return e;
}

}  // namespace

void RegisterSoftwareCollectors(std::vector<Collector>& out) {
  out.push_back({{"container-toolkit.version",
                  "NVIDIA Container Toolkit version (CLI or runtime)",
                  {"cmd:nvidia-ctk --version", "cmd:nvidia-container-runtime --version",
                   "cmd:nvidia-container-toolkit --version"},
                  ""},
                 ContainerToolkit});
  out.push_back({{"cuda.toolkits",
                  "Every installed CUDA toolkit (nvcc on PATH and /usr/local/cuda*)",
                  {"which:nvcc", "dir:/usr/local", "cmd:<nvcc> --version"},
                  ""},
                 CudaToolkits});
  out.push_back({{"runc.version", "runc version", {"cmd:runc --version"}, ""}, Runc});
  out.push_back({{"enroot.version", "enroot version", {"which:enroot", "cmd:enroot version"}, ""},
                 [](host::Host& h, const CollectOptions& o) {
                   return ToolVersion(h, o, "enroot.version", {"enroot", "version"}, ParseBareVersion);
                 }});
  out.push_back(
      {{"apptainer.version",
        "Apptainer or SingularityCE version",
        {"cmd:apptainer --version", "cmd:singularity --version"},
        ""},
       [](host::Host& h, const CollectOptions& o) {
         Evidence e = ToolVersion(h, o, "apptainer.version", {"apptainer", "--version"}, ParseToolVersionLine);
         if (e.status == EvidenceStatus::kOk && !e.data.value("installed", false)) {
           e = ToolVersion(h, o, "apptainer.version", {"singularity", "--version"}, ParseToolVersionLine);
           e.data["tool"] = "singularity";
         } else {
           e.data["tool"] = "apptainer";
         }
         return e;
       }});
  out.push_back({{"docker.version",
                  "Docker client and daemon (server) versions",
                  {"cmd:docker --version", "cmd:docker version --format {{.Server.Version}}"},
                  ""},
                 Docker});
  out.push_back({{"perf.binary", "perf installed and its version", {"cmd:perf --version"}, ""}, PerfBinary});
  out.push_back({{"probe.perf-sample",
                  "perf stat on cycles and instructions for 0.1 s",
                  {"cmd:perf stat -e cycles,instructions -- sleep 0.1"},
                  "perf-sample"},
                 PerfSample});
  out.push_back({{"hpcsdk.install",
                  "NVIDIA HPC SDK: newest release under /opt/nvidia/hpc_sdk, its compilers and payload",
                  {"dir:/opt/nvidia/hpc_sdk/Linux_*", "cmd:<release>/compilers/bin/{nvc,nvc++,nvfortran} --version",
                   "dir:<release>/{comm_libs,math_libs,profilers}"},
                  ""},
                 HpcSdk});
  out.push_back({{"nccl.config",
                  "NCCL settings: /etc/nccl.conf, NCCL_CONF_FILE, /etc/environment, NCCL_* in the environment",
                  {"file:/etc/nccl.conf", "env:NCCL_CONF_FILE", "file:/etc/environment", "env:NCCL_*"},
                  ""},
                 NcclConfig});
  out.push_back(
      {{"nccl.libraries",
        "NCCL libraries (ldconfig cache, library dirs, link targets) and nccl.h",
        {"cmd:ldconfig -p", "dir:/usr/lib/x86_64-linux-gnu", "dir:/usr/local/cuda*/lib64", "file:/usr/include/nccl.h"},
        ""},
       NcclLibraries});
  out.push_back({{"dcgm.version", "DCGM (dcgmi) version", {"cmd:dcgmi --version"}, ""}, Dcgm});
  out.push_back({{"nccl.topo-file",
                  "NCCL topology files: NCCL_TOPO_FILE, /etc/nccl/*.xml, /opt/microsoft/*.xml; size, sha256, XML parse",
                  {"env:NCCL_TOPO_FILE", "file:/etc/nccl.conf", "dir:/etc/nccl", "cmd:sha256sum FILE"},
                  ""},
                 NcclTopoFile});
  out.push_back(
      {{"probe.nccl-topo-container",
        "srun --overlap --container-image=IMAGE (pyxis) sha256sum FILE: the host's NCCL topology file inside a container",
        {"cmd:srun --overlap -N1 --container-image=IMAGE --no-container-mount-home --container-remap-root --no-container-entrypoint sha256sum FILE"},
        "container-launch"},
       NcclTopoInContainer});
  out.push_back(
      {{"probe.enroot-import",
        "enroot import -o $TMPDIR/clustermax-enroot-import-$USER.sqsh docker://IMAGE, then rm -f of that file",
        {"which:enroot", "cmd:enroot import -o FILE IMAGE", "cmd:rm -f FILE"},
        "enroot-import"},
       EnrootImport});
  out.push_back({{"probe.container-launch",
                  "docker run --rm --gpus all IMAGE nvidia-smi -L",
                  {"cmd:docker run --rm --gpus all IMAGE nvidia-smi -L"},
                  "container-launch"},
                 ContainerLaunch});

  using namespace field;
  // ToolVersion's shape, with what a collector adds.
  auto tool = [](std::vector<core::FieldSpec> extra) {
    std::vector<core::FieldSpec> f = {{"installed", Bool, "", "the tool is on PATH"},
                                      {"path", Str, "", "its path; null when not installed", kNull},
                                      {"version", Str, "", "the version it reports; null when not installed", kNull},
                                      {"raw", Str, "", "its version output, cut at 300 characters"}};
    f.insert(f.end(), extra.begin(), extra.end());
    return f;
  };
  DeclareFields(out, "container-toolkit.version",
                tool({{"tool", Str, "", "the binary that answered (nvidia-ctk, nvidia-container-runtime ...)"}}));
  DeclareFields(out, "cuda.toolkits",
                {{"toolkits[].nvcc", Str, "", "path of an nvcc"},
                 {"toolkits[].default", Bool, "", "the nvcc on PATH (or /usr/local/cuda)"},
                 {"toolkits[].version", Str, "", "its release (\"13.0\"); null when unread", kNull},
                 {"toolkits[].error", Str, "", "why the version is null"},
                 {"default", Str, "", "the default nvcc; null when none", kNull}});
  DeclareFields(out, "runc.version", tool({}));
  DeclareFields(out, "enroot.version", tool({}));
  DeclareFields(out, "apptainer.version", tool({{"tool", Str, "", "apptainer or singularity"}}));
  DeclareFields(out, "docker.version",
                {{"installed", Bool, "", "docker is on PATH"},
                 {"is_docker", Bool, "",
                  "docker --version is Docker's (not a podman/nerdctl shim); null when not installed", kNull},
                 {"client_version", Str, "", "client version; null when unknown", kNull},
                 {"client_raw", Str, "", "docker --version output"},
                 {"server_version", Str, "", "daemon version; null when the daemon did not answer", kNull},
                 {"server_error", Str, "", "why the daemon did not answer"}});
  DeclareFields(out, "perf.binary", tool({}));
  DeclareFields(out, "probe.perf-sample",
                {{"outcome", Str, "", "granted, denied, partial or error"},
                 {"exit_code", Int, "", "perf stat's exit status"},
                 {"output", Str, "", "its output, cut at 600 characters"}});
  DeclareFields(out, "hpcsdk.install",
                {{"installed", Bool, "", "a <arch>/<YY.M> release exists under /opt/nvidia/hpc_sdk"},
                 {"note", Str, "", "why installed is false though the directory exists"},
                 {"root", Str, "", "/opt/nvidia/hpc_sdk"},
                 {"arch", Str, "", "Linux_x86_64, Linux_aarch64"},
                 {"release", Str, "", "newest release (\"25.7\")"},
                 {"compilers{}", Str, "", "nvc, nvc++, nvfortran -> the release each reports; null when unread", kNull},
                 {"payload{}", Bool, "", "nccl, hpcx, nvshmem, math_libs, Nsight_Compute, Nsight_Systems -> present"}});
  DeclareFields(out, "nccl.config",
                {{"files[].path", Str, "", "configuration file read"},
                 {"files[].found", Bool, "", "it was read"},
                 {"files[].vars{}", Str, "", "NCCL_* variable -> value set there"},
                 {"files[].error", Str, "", "why an existing file was not read"},
                 {"env{}", Str, "", "NCCL_* variable -> value in the collecting process's environment"}});
  DeclareFields(out, "nccl.libraries",
                {{"libraries[]", Str, "", "libnccl.so* paths (ldconfig cache and library dirs)"},
                 {"net_plugins[]", Str, "", "libnccl-net* plugin paths"},
                 {"versions[].path", Str, "", "library file or link"},
                 {"versions[].version", Str, "", "NCCL version its name (or link target) carries"},
                 {"header", Obj, "", "nccl.h found; null when none", kNull},
                 {"header.path", Str, "", "path of nccl.h"},
                 {"header.version", Str, "", "NCCL_MAJOR.MINOR.PATCH"},
                 {"ldconfig_ok", Bool, "", "ldconfig -p ran and succeeded"}});
  DeclareFields(out, "dcgm.version", tool({}));
  DeclareFields(out, "nccl.topo-file",
                {{"setting", Str, "", "NCCL_TOPO_FILE; null when unset", kNull},
                 {"setting_source", Str, "", "environment or the file that sets it"},
                 {"files[].path", Str, "", "topology file"},
                 {"files[].exists", Bool, "", "stat succeeded"},
                 {"files[].size", Int, "bytes", "its size; null when absent", kNull},
                 {"files[].xml_ok", Bool, "", "it parses as XML; null when unread", kNull},
                 {"files[].root", Str, "", "root element name; null when not XML", kNull},
                 {"files[].read_error", Str, "", "why it was not read"},
                 {"files[].sha256", Str, "", "sha256sum; null when not computed", kNull}});
  DeclareFields(out, "probe.nccl-topo-container",
                {{"launched", Bool, "", "the container ran and answered"},
                 {"reason", Str, "", "why nothing was launched"},
                 {"path", Str, "", "topology file looked for"},
                 {"image", Str, "", "container image"},
                 {"status", Str, "", "status of the srun command"},
                 {"exit_code", Int, "", "its exit status"},
                 {"sha256", Str, "", "the file's sha256 inside the container", kNull},
                 {"missing", Bool, "", "the file is absent inside the container"},
                 {"pyxis_absent", Bool, "", "srun does not know --container-image"},
                 {"stderr", Str, "", "srun's standard error, cut"}});
  DeclareFields(out, "probe.enroot-import",
                {{"installed", Bool, "", "enroot is on PATH"},
                 {"image", Str, "", "image imported"},
                 {"file", Str, "", "the .sqsh file written then removed"},
                 {"status", Str, "", "status of enroot import"},
                 {"exit_code", Int, "", "its exit status"},
                 {"seconds", Num, "s", "import time; null when it did not run", kNull},
                 {"timeout_s", Num, "s", "its time limit"},
                 {"output_tail", Str, "", "last 600 characters of its output"},
                 {"cleaned_up", Bool, "", "rm -f of the file succeeded"}});
  DeclareFields(out, "probe.container-launch",
                {{"engine", Str, "", "\"docker\"; null when docker is absent", kNull},
                 {"image", Str, "", "container image"},
                 {"ran", Bool, "", "the container ran (exit below 125)"},
                 {"exit_code", Int, "", "docker run's exit status"},
                 {"gpus[]", Str, "", "nvidia-smi -L lines inside the container"},
                 {"stderr", Str, "", "docker's standard error, cut"}});
}

}  // namespace clustermax::collect
