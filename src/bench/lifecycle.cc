#include "bench/lifecycle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <cstdlib>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "bench/gpu_bench.h"
#include "bench/gpu_suite.h"
#include "bench/json_read.h"
#include "bench/s3.h"
#include "bench/workspace.h"
#include "host/local_host.h"
#include "util/strings.h"
#include "util/usage_error.h"

namespace clustermax::bench::life {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

double Since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A command's output as a result may keep it: the last bytes, valid UTF-8, safe on a terminal.
std::string Tail(const std::string& text, size_t n = 400) {
  std::string t = text.size() > n ? text.substr(text.size() - n) : text;
  return util::TerminalSafeText(util::SanitizeUtf8(util::Trim(t)));
}

// Items 0..n-1 shared out to `threads` workers, each with its own state (a client, a buffer) from
// `make`; `work` returns "" or why the item failed. The first failure stops every worker and is
// returned; Ctrl-C stops them too ("interrupted").
template <class State>
std::string ForEachParallel(size_t n, int threads, const std::function<State()>& make,
                            const std::function<std::string(State&, size_t)>& work) {
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  std::string failure;
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      auto fail = [&](const std::string& why) {
        std::lock_guard<std::mutex> l(mu);
        if (failure.empty()) failure = why;
        stop = true;
      };
      try {
        State state = make();
        for (size_t i; !stop && (i = next++) < n;) {
          if (Cancelled()) {
            stop = true;
            break;
          }
          if (std::string why = work(state, i); !why.empty()) fail(why);
        }
      } catch (const std::exception& e) {
        fail(e.what());  // never out of the thread
      }
    });
  for (auto& th : pool) th.join();
  if (failure.empty() && Cancelled()) return "interrupted";
  return failure;
}

struct Ran {
  bool ok = false;
  double seconds = 0;
  std::string out, why;  // why: the reason it failed, with the end of its output
};

// Runs argv (no shell) within `timeout_s`, timed.
Ran RunTimed(host::Host& h, std::vector<std::string> argv, double timeout_s) {
  host::CommandSpec spec{std::move(argv), std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000)),
                         1u << 20};
  auto t0 = std::chrono::steady_clock::now();
  auto r = h.Run(spec);
  Ran out;
  out.seconds = Since(t0);
  out.out = r.out;
  out.ok = r.status == host::IoStatus::kOk && r.exit_code == 0 && !r.timed_out;
  if (!out.ok) {
    if (r.timed_out)
      out.why = fmt::format("did not finish within {} s", timeout_s);
    else if (r.status != host::IoStatus::kOk)
      out.why = r.error;
    else
      out.why = fmt::format("exit code {}", r.exit_code);
    if (std::string t = Tail(r.err.empty() ? r.out : r.err); !t.empty()) out.why += ": " + t;
  }
  return out;
}

// argv running `python` with the tier's package directory on PYTHONPATH when it has one.
std::vector<std::string> PythonArgv(const std::string& python, const std::string& pythonpath,
                                    std::vector<std::string> args) {
  std::vector<std::string> argv;
  if (!pythonpath.empty()) argv = {"env", "PYTHONPATH=" + pythonpath};
  argv.push_back(python);
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The module imported by name from argv, never from text a shell or Python would parse.
const char* kImport = "import importlib,sys; importlib.import_module(sys.argv[1])";
// Where the package lives, found without importing it.
const char* kFindSpec =
    "import importlib.util,sys\n"
    "s=importlib.util.find_spec(sys.argv[1])\n"
    "print((s.submodule_search_locations[0] if s.submodule_search_locations else s.origin) if s else '')";

json TimeImport(host::Host& h, const Tier& tier, const std::string& default_python, const std::string& package,
                int warm_runs, double timeout_s) {
  json r = {{"tier", tier.name}, {"package", package}};
  std::string python = default_python, pythonpath;
  if (!tier.dir.empty()) {
    r["dir"] = tier.dir;
    std::error_code ec;
    if (fs::exists(fs::path(tier.dir) / "bin" / "python", ec))
      python = (fs::path(tier.dir) / "bin" / "python").string();
    else
      pythonpath = tier.dir;
  }
  r["python"] = python;
  Ran where = RunTimed(h, PythonArgv(python, pythonpath, {"-c", kFindSpec, package}), timeout_s);
  std::string location = where.ok ? std::string(util::Trim(where.out)) : "";
  if (!where.ok) {
    r["error"] = "cannot run the interpreter: " + where.why;
    return r;
  }
  if (location.empty()) {
    r["error"] = fmt::format("{} cannot find the package {}", python, package);
    return r;
  }
  r["package_path"] = util::SanitizeUtf8(location);
  try {
    r["fs_type"] = QuerySpace(location).fs_type;
  } catch (const std::exception&) {
  }
  // The interpreter alone, warm: what the import adds is the difference.
  std::vector<double> base;
  for (int i = 0; i < 3; ++i) {
    Ran b = RunTimed(h, PythonArgv(python, pythonpath, {"-c", "pass"}), timeout_s);
    if (b.ok) base.push_back(b.seconds);
  }
  if (!base.empty()) r["interpreter_s"] = RoundTo(Median(base), 4);
  r["dropped_files"] = DropFromPageCache(location);
  Ran cold = RunTimed(h, PythonArgv(python, pythonpath, {"-c", kImport, package}), timeout_s);
  if (!cold.ok) {
    r["error"] = fmt::format("import {} failed: {}", package, cold.why);
    return r;
  }
  r["cold_s"] = RoundTo(cold.seconds, 4);
  std::vector<double> warm;
  for (int i = 0; i < warm_runs; ++i) {
    Ran w = RunTimed(h, PythonArgv(python, pythonpath, {"-c", kImport, package}), timeout_s);
    if (w.ok) warm.push_back(RoundTo(w.seconds, 4));
  }
  if (!warm.empty()) {
    r["warm_s"] = RoundTo(Median(warm), 4);
    r["warm_samples"] = warm;
  }
  return r;
}

// A fresh virtual environment in a private directory under `parent`, the package installed into it
// from the site's index (pip's configuration, or --index-url), then imported cold from there.
json TimeInstall(host::Host& h, const json& p, const std::string& python, int warm_runs) {
  std::string installer = p.value("installer", "pip"), spec = p.value("spec", "");
  std::string module = p.value("module", "");
  double timeout_s = p.value("timeout_s", 1800.0);
  json r = {{"spec", spec}, {"installer", installer}};
  std::unique_ptr<Workspace> ws;
  try {
    ws = std::make_unique<Workspace>(p.value("dir", "/tmp"));
  } catch (const std::exception& e) {
    r["error"] = std::string("cannot make the environment's directory: ") + e.what();
    return r;
  }
  fs::path venv = ws->root() / "venv";
  r["dir"] = ws->root().string();
  try {
    r["fs_type"] = QuerySpace(ws->root()).fs_type;
  } catch (const std::exception&) {
  }
  std::vector<std::string> make = installer == "uv"
                                      ? std::vector<std::string>{"uv", "venv", "--python", python, venv.string()}
                                      : std::vector<std::string>{python, "-m", "venv", venv.string()};
  Ran v = RunTimed(h, make, 300);
  if (!v.ok) {
    r["error"] = "cannot make a virtual environment: " + v.why;
    return r;
  }
  r["venv_s"] = RoundTo(v.seconds, 3);
  std::string vpy = (venv / "bin" / "python").string();
  std::vector<std::string> install =
      installer == "uv"
          ? std::vector<std::string>{"uv", "pip", "install", "--no-cache", "--python", vpy}
          : std::vector<std::string>{
                vpy, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check", "--no-input"};
  if (auto u = p.value("index_url", ""); !u.empty()) install.push_back("--index-url=" + u);
  for (const auto& a : p.value("args", std::vector<std::string>{})) install.push_back(a);
  install.push_back(spec);
  Ran i = RunTimed(h, install, timeout_s);
  if (!i.ok) {
    r["error"] = "install failed: " + i.why;
    return r;
  }
  r["install_s"] = RoundTo(i.seconds, 3);
  if (!module.empty()) {
    json imp = TimeImport(h, {"installed", venv.string()}, python, module, warm_runs, 300);
    for (const char* k : {"cold_s", "warm_s", "error"})
      if (imp.contains(k)) r[std::string("import_") + k] = imp[k];
  }
  try {
    fs::remove_all(venv);  // the workspace removes only what it made itself; the venv is ours too
  } catch (const std::exception&) {
  }
  return r;
}

// A count from a helper line: a finite whole number from 0 to 2^53, else -1.
static int64_t WholeOf(const json& j, const char* key) {
  auto v = OptNumOf(j, key);
  if (!v || !std::isfinite(*v) || *v < 0 || *v > 9007199254740992.0 || std::floor(*v) != *v) return -1;
  return static_cast<int64_t>(*v);
}

// The model's files into the first GPU's memory through the GPU helper's "load" item: cold (the
// helper drops them from the page cache first) and warm, every piece checked where it landed.
json LoadToGpu(const std::string& path, int threads, const std::string& helper) {
  if (helper.empty()) return {{"error", "no GPU helper (clustermax-gpu) next to clustermax on this node"}};
  json item = {{"kind", "load"}, {"path", path}, {"threads", threads}};
  json cold = item, warm = item;
  cold["id"] = "cold";
  cold["drop_cache"] = true;
  warm["id"] = "warm";
  json job = {{"device", 0}, {"warmup_s", 0}, {"items", {cold, warm}}};
  GpuJobOutcome run = RunHelperJob(helper, job, {}, 3600);
  json r = json::object();
  for (const auto& l : run.lines) {
    std::string type = StrOf(l, "type"), id = StrOf(l, "id");
    if (type == "device") r["device"] = util::SanitizeUtf8(util::Ellipsize(StrOf(ObjOf(l, "device"), "name"), 120));
    if (type != "result" || (id != "cold" && id != "warm")) continue;
    if (!StrOf(l, "error").empty()) {
      r["error"] = util::SanitizeUtf8(util::Ellipsize(id + ": " + StrOf(l, "error"), 600));
      continue;
    }
    r[id + "_s"] = RoundTo(NumOf(l, "seconds"), 4);
    r[id + "_gbps"] = RoundTo(NumOf(l, "gbps"), 4);
    if (id == "cold") {
      r["bytes"] = WholeOf(l, "bytes");
      r["wrapped"] = TrueOf(l, "wrapped");
      if (TrueOf(l, "wrapped"))
        r["unchecked"] = "the model is larger than the GPU memory free for it: loaded in turns, not checked";
    }
    // Both passes' checks count: a piece that arrives wrong only when warm is still wrong.
    int64_t checked = WholeOf(l, "checked_pieces"), bad = WholeOf(l, "bad_pieces");
    if (checked < 0 || bad < 0) {
      r["error"] = "the helper's piece counts are not whole numbers: the load is not verified";
      continue;
    }
    r["checked_pieces"] = static_cast<int64_t>(NumOf(r, "checked_pieces")) + checked;
    r["bad_pieces"] = static_cast<int64_t>(NumOf(r, "bad_pieces")) + bad;
  }
  if (NumOf(r, "bad_pieces") > 0 && !r.contains("error"))
    r["error"] = fmt::format("{:g} of {:g} piece(s) differed on the GPU from the bytes read: corrupted on the way",
                             NumOf(r, "bad_pieces"), NumOf(r, "checked_pieces"));
  if (!run.failure.empty() && !r.contains("error")) r["error"] = util::SanitizeUtf8(util::Ellipsize(run.failure, 600));
  if (!r.contains("error") && !r.contains("cold_gbps")) r["error"] = "the helper reported no load";
  return r;
}

json TimeModelLoad(const json& m) {
  std::string path = m.value("path", "");
  int threads = m.value("threads", 8);
  json r = {{"path", path}, {"threads", threads}};
  try {
    r["fs_type"] = QuerySpace(path).fs_type;
  } catch (const std::exception& e) {
    r["error"] = e.what();
    return r;
  }
  r["dropped_files"] = DropFromPageCache(path);
  json cold = ReadTree(path, threads);
  if (cold.contains("error")) {
    r["error"] = cold["error"];
    return r;
  }
  r["files"] = cold["files"];
  r["bytes"] = cold["bytes"];
  r["cold_s"] = cold["seconds"];
  r["cold_gbps"] = cold["gbps"];
  json warm = ReadTree(path, threads);
  if (!warm.contains("error")) {
    r["warm_s"] = warm["seconds"];
    r["warm_gbps"] = warm["gbps"];
  }
  if (m.value("to_gpu", false)) r["gpu"] = LoadToGpu(path, threads, FindGpuHelper(m.value("helper", "")));
  return r;
}

// Every object under the prefix fetched with `threads` clients (the bodies counted, as a loader
// streaming safetensors into host memory sees them); credentials from this node's environment or
// ~/.aws, never from the job.
json TimeS3Load(const json& s) {
  S3Config cfg;
  cfg.endpoint = s.value("endpoint", "");
  cfg.bucket = s.value("bucket", "");
  cfg.region = s.value("region", cfg.region);
  cfg.addressing = s.value("addressing", cfg.addressing);
  std::string prefix = s.value("prefix", "");
  int threads = std::clamp(s.value("threads", 8), 1, 64);
  json r = {{"endpoint", cfg.endpoint}, {"bucket", cfg.bucket}, {"prefix", prefix}, {"threads", threads}};
  try {
    cfg.credentials = LoadS3Credentials(s.value("profile", ""), [](const char* k) { return std::getenv(k); });
    S3Client lister(cfg);
    std::vector<std::string> keys;
    std::string token;
    do {
      std::string next;
      auto resp = lister.List(prefix, 1000, token, keys, next);
      if (!resp.ok()) throw std::runtime_error("LIST: " + resp.Describe());
      token = next;
    } while (!token.empty() && keys.size() < 1000000);
    if (keys.empty()) throw std::runtime_error("no object under the prefix");
    std::atomic<uint64_t> bytes{0};
    auto t0 = std::chrono::steady_clock::now();
    std::string failure = ForEachParallel<std::unique_ptr<S3Client>>(
        keys.size(), threads, [&] { return std::make_unique<S3Client>(cfg); },
        [&](std::unique_ptr<S3Client>& c, size_t i) {
          auto g = c->Get(keys[i]);
          if (!g.ok()) return keys[i] + ": " + g.Describe();
          bytes += g.bytes;
          return std::string();
        });
    double sec = Since(t0);
    if (!failure.empty()) throw std::runtime_error("GET " + failure);
    r["objects"] = keys.size();
    r["bytes"] = bytes.load();
    r["seconds"] = RoundTo(sec, 4);
    r["gbps"] = RoundTo(sec > 0 ? bytes.load() / sec / 1e9 : 0.0, 4);
  } catch (const std::exception& e) {
    r["error"] = RedactSecrets(e.what(), cfg);
  }
  RedactSecrets(r, cfg);
  return r;
}

// The image imported and first started with each runtime the node has; what we imported is removed
// afterwards (an image Docker or Podman already held is left, and the pull reported as warm).
json TimeContainers(host::Host& h, const json& c) {
  std::string image = c.value("image", "");
  double timeout_s = c.value("timeout_s", 1800.0);
  json out = json::array();
  std::unique_ptr<Workspace> ws;
  auto scratch = [&]() -> fs::path {
    if (!ws) ws = std::make_unique<Workspace>(c.value("dir", "/tmp"));
    return ws->root();
  };
  auto record = [&](json r, const Ran& imp, const Ran* start) {
    if (!imp.ok) {
      r["error"] = "import: " + imp.why;
    } else {
      r["import_s"] = RoundTo(imp.seconds, 3);
      if (start && !start->ok) r["error"] = "start: " + start->why;
      if (start && start->ok) r["start_s"] = RoundTo(start->seconds, 3);
    }
    out.push_back(std::move(r));
  };
  bool local_file = image.rfind("/", 0) == 0;
  if (h.Which("enroot").status == host::IoStatus::kOk) {
    try {
      fs::path sqsh = local_file ? fs::path(image) : scratch() / "image.sqsh";
      std::string name = fmt::format("clustermax-life-{}", ::getpid());
      // enroot's layer cache and data in our workspace: a cold import, and nothing left behind.
      std::vector<std::string> env = {"env", "ENROOT_CACHE_PATH=" + (scratch() / "enroot-cache").string(),
                                      "ENROOT_DATA_PATH=" + (scratch() / "enroot-data").string()};
      auto enroot = [&](std::vector<std::string> args) {
        args.insert(args.begin(), env.begin(), env.end());
        return args;
      };
      Ran imp = local_file
                    ? Ran{true, 0, "", ""}
                    : RunTimed(h, enroot({"enroot", "import", "-o", sqsh.string(), EnrootUri(image)}), timeout_s);
      Ran start;
      if (imp.ok) {
        auto t0 = std::chrono::steady_clock::now();
        Ran create = RunTimed(h, enroot({"enroot", "create", "--name", name, sqsh.string()}), timeout_s);
        start = create.ok ? RunTimed(h, enroot({"enroot", "start", name, "true"}), 300) : create;
        start.seconds = Since(t0);  // create (unpack) and start: the first start
        RunTimed(h, enroot({"enroot", "remove", "--force", name}), 300);
      }
      if (!local_file) fs::remove(sqsh);
      record({{"runtime", "enroot"}, {"uri", EnrootUri(image)}}, imp, &start);
    } catch (const std::exception& e) {
      out.push_back({{"runtime", "enroot"}, {"error", e.what()}});
    }
  }
  std::string apptainer = h.Which("apptainer").status == host::IoStatus::kOk     ? "apptainer"
                          : h.Which("singularity").status == host::IoStatus::kOk ? "singularity"
                                                                                 : "";
  if (!apptainer.empty()) {
    try {
      fs::path sif = local_file ? fs::path(image) : scratch() / "image.sif";
      std::string cache = (scratch() / "apptainer-cache").string();
      Ran imp = local_file ? Ran{true, 0, "", ""}
                           : RunTimed(h,
                                      {"env", "APPTAINER_CACHEDIR=" + cache, "SINGULARITY_CACHEDIR=" + cache, apptainer,
                                       "pull", sif.string(), "docker://" + image},
                                      timeout_s);
      Ran start = imp.ok ? RunTimed(h, {apptainer, "exec", sif.string(), "true"}, 300) : Ran{};
      if (!local_file) fs::remove(sif);
      record({{"runtime", apptainer}}, imp, &start);
    } catch (const std::exception& e) {
      out.push_back({{"runtime", apptainer}, {"error", e.what()}});
    }
  }
  for (const char* rt : {"docker", "podman"}) {
    if (local_file || h.Which(rt).status != host::IoStatus::kOk) continue;
    bool had = RunTimed(h, {rt, "image", "inspect", image}, 60).ok;
    Ran imp = RunTimed(h, {rt, "pull", image}, timeout_s);
    Ran start = imp.ok ? RunTimed(h, {rt, "run", "--rm", image, "true"}, 300) : Ran{};
    json r = {{"runtime", rt}, {"already_present", had}};
    if (had) {
      // A pull of an image already here is a cache hit, not an import: shown, not graded.
      r["skipped"] = fmt::format("{} already held the image: its pull is warm (remove it to time an import)", rt);
      if (imp.ok) r["pull_s"] = RoundTo(imp.seconds, 3);
      out.push_back(std::move(r));
      continue;
    }
    record(r, imp, &start);
    if (imp.ok && !had) RunTimed(h, {rt, "rmi", image}, 300);
  }
  if (out.empty())
    out.push_back({{"skipped", "no container runtime (enroot, apptainer, singularity, docker, podman)"}});
  // The runtimes' caches we pointed into our fresh workspace go with it.
  for (const char* d : {"enroot-cache", "enroot-data", "apptainer-cache"}) {
    std::error_code ec;
    if (ws) fs::remove_all(ws->root() / d, ec);
  }
  return out;
}

}  // namespace

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

Tier ParseTier(const std::string& spec) {
  Tier t;
  auto eq = spec.find('=');
  if (eq == std::string::npos) {
    t.dir = spec;
    t.name = fs::path(spec).filename().string();
    if (t.name.empty()) t.name = fs::path(spec).parent_path().filename().string();
  } else {
    t.name = spec.substr(0, eq);
    t.dir = spec.substr(eq + 1);
  }
  if (t.name.empty() || t.dir.empty() || t.dir[0] != '/')
    throw UsageError(fmt::format("--tier: '{}' is not NAME=/ABSOLUTE/DIR", spec));
  for (char ch : t.name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.')
      throw UsageError(fmt::format("--tier: the name '{}' may hold letters, digits, '-', '_' and '.' only", t.name));
  return t;
}

bool ValidModuleName(const std::string& name) {
  if (name.empty() || name.size() > 200 || name.front() == '.' || name.back() == '.') return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || (c == '.' && name[i - 1] != '.');
    if (!ok) return false;
  }
  return !std::isdigit(static_cast<unsigned char>(name.front()));
}

size_t DropFromPageCache(const fs::path& path, size_t max_files) {
  // The same files ReadTree reads: links to files followed (a Hugging Face snapshot is all links),
  // each file once however many links lead to it.
  std::set<std::pair<dev_t, ino_t>> seen;
  size_t n = 0;
  auto drop = [&](const fs::path& f) {
    int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return;
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && seen.insert({st.st_dev, st.st_ino}).second &&
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0)
      ++n;
    ::close(fd);
  };
  std::error_code ec;
  if (!fs::is_directory(path, ec)) {
    drop(path);
    return n;
  }
  for (fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end && n < max_files; it.increment(ec)) {
    if (it->is_regular_file(ec)) drop(it->path());  // follows a link to a file, never one to a directory
  }
  return n;
}

json ReadTree(const fs::path& path, int threads) {
  struct Piece {
    fs::path file;
    uint64_t offset, len;
  };
  constexpr uint64_t kPiece = 16u << 20;
  std::vector<Piece> pieces;
  uint64_t total = 0;
  size_t files = 0;
  auto add = [&](const fs::path& f) {
    std::error_code ec;
    uint64_t size = fs::file_size(f, ec);  // follows a link to a file (a Hugging Face snapshot)
    if (ec) return;
    ++files;
    total += size;
    for (uint64_t o = 0; o < size; o += kPiece) pieces.push_back({f, o, std::min(kPiece, size - o)});
  };
  std::error_code ec;
  if (!fs::exists(path, ec)) return {{"error", fmt::format("{} does not exist", path.string())}};
  if (fs::is_regular_file(path, ec)) {
    add(path);
  } else {
    for (fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) add(it->path());
  }
  if (files == 0) return {{"error", fmt::format("no readable file under {}", path.string())}};
  threads = std::clamp(threads, 1, 64);
  std::atomic<uint64_t> got{0};
  auto t0 = std::chrono::steady_clock::now();
  std::string failure = ForEachParallel<std::vector<char>>(
      pieces.size(), threads, [] { return std::vector<char>(kPiece); },
      [&](std::vector<char>& buf, size_t i) {
        const Piece& p = pieces[i];
        int fd = ::open(p.file.c_str(), O_RDONLY | O_CLOEXEC);
        uint64_t done = 0;
        while (fd >= 0 && done < p.len) {
          ssize_t n = ::pread(fd, buf.data(), p.len - done, static_cast<off_t>(p.offset + done));
          if (n <= 0) break;
          done += static_cast<uint64_t>(n);
        }
        if (fd >= 0) ::close(fd);
        if (done < p.len) return fmt::format("{}: short read at {}", p.file.string(), p.offset + done);
        got += done;
        return std::string();
      });
  double sec = Since(t0);
  if (!failure.empty()) return {{"error", util::SanitizeUtf8(failure)}};
  return {{"files", files},
          {"bytes", got.load()},
          {"seconds", RoundTo(sec, 4)},
          {"gbps", RoundTo(sec > 0 ? got.load() / sec / 1e9 : 0.0, 4)}};
}

std::string EnrootUri(const std::string& image) {
  if (image.rfind("docker://", 0) == 0) return image;
  auto slash = image.find('/');
  if (slash != std::string::npos) {
    std::string first = image.substr(0, slash);
    if (util::Contains(first, ".") || util::Contains(first, ":") || first == "localhost")
      return "docker://" + first + "#" + image.substr(slash + 1);
  }
  return "docker://" + image;
}

json RunLifeRankJob(const json& job, const std::string& node, int rank) {
  std::string kind = job.value("kind", "");
  if (kind == "probe") {
    double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    json r = {{"node", node}, {"rank", rank}, {"t_start", now}};
    // The GPUs the step gave this task: Slurm's count, else CUDA_VISIBLE_DEVICES.
    if (const char* g = std::getenv("SLURM_GPUS_ON_NODE"); g && *g) {
      r["gpus_visible"] = std::atoi(g);
    } else if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES"); v && *v) {
      r["gpus_visible"] = static_cast<int>(util::Split(v, ',').size());
    } else {
      r["gpus_visible"] = 0;
    }
    return r;
  }
  if (kind != "node") throw std::runtime_error("unknown lifecycle job kind '" + kind + "'");
  host::LocalHost h;
  json r = {{"node", node}};
  std::string python = job.value("python", "python3");
  int warm_runs = std::clamp(job.value("warm_runs", 3), 0, 20);
  double timeout_s = job.value("timeout_s", 600.0);
  if (job.contains("imports") && job["imports"].is_object()) {
    const json& im = job["imports"];
    std::string package = im.value("package", "torch");
    std::vector<Tier> tiers;
    for (const auto& t : im.value("tiers", json::array())) tiers.push_back({t.value("name", ""), t.value("dir", "")});
    if (tiers.empty()) tiers.push_back({"default", ""});
    r["imports"] = json::array();
    for (const auto& t : tiers) {
      if (Cancelled()) break;
      r["imports"].push_back(TimeImport(h, t, python, package, warm_runs, timeout_s));
    }
  }
  if (job.contains("pip") && job["pip"].is_object() && !Cancelled())
    r["pip"] = TimeInstall(h, job["pip"], python, warm_runs);
  if (job.contains("model") && job["model"].is_object() && !Cancelled()) r["model"] = TimeModelLoad(job["model"]);
  if (job.contains("s3") && job["s3"].is_object() && !Cancelled()) r["s3"] = TimeS3Load(job["s3"]);
  if (job.contains("containers") && job["containers"].is_object() && !Cancelled())
    r["containers"] = TimeContainers(h, job["containers"]);
  return r;
}

std::vector<std::string> NodeStateFlags(const std::string& line) {
  std::vector<std::string> flags;
  std::istringstream in(line);
  for (std::string tok; in >> tok;) {
    if (tok.rfind("State=", 0) != 0) continue;
    for (auto& f : util::Split(tok.substr(6), '+')) {
      std::string v(util::Trim(f));
      if (!v.empty() && v.back() == '*') {
        v.pop_back();
        flags.push_back("NOT_RESPONDING");
      }
      if (!v.empty()) flags.push_back(v);
    }
    break;
  }
  return flags;
}

bool InService(const std::map<std::string, std::string>& record) {
  auto it = record.find("State");
  return it != record.end() && Schedulable(NodeStateFlags("State=" + it->second));
}

bool Schedulable(const std::vector<std::string>& flags) {
  if (flags.empty()) return false;
  const std::string& base = flags.front();
  if (base != "IDLE" && base != "MIXED" && base != "ALLOCATED") return false;
  for (const auto& f : flags) {
    // INVAL (INVALID_REG): registered with less than its configuration (a GPU missing).
    for (const char* bad : {"DOWN", "DRAIN", "FAIL", "REBOOT", "NOT_RESPONDING", "POWER", "INVAL"})
      if (util::Contains(f, bad)) return false;
  }
  return true;
}

namespace {

// The worst value of `key` over every node's items (each node's `section`, an object or an array of
// objects), with where it came from; an item with an error fails the metric unless it is only
// "not applicable" (`skip_if` says which errors are).
struct Worst {
  std::optional<double> value;
  std::string where, error, skip;
  size_t items = 0;
};
Worst WorstOver(const json& nodes, const char* section, const char* key, bool higher_is_better,
                const std::function<bool(const std::string&)>& skip_if = {}) {
  Worst w;
  for (const auto& [node, doc] : nodes.items()) {
    if (!doc.is_object() || !doc.contains(section)) continue;
    json items = doc[section].is_array() ? doc[section] : json::array({doc[section]});
    for (const auto& it : items) {
      if (!it.is_object()) continue;
      std::string label = StrOf(it, "tier").empty() ? StrOf(it, "runtime") : StrOf(it, "tier");
      std::string where = label.empty() ? node : fmt::format("{} on {}", label, node);
      if (!StrOf(it, "skipped").empty()) {
        if (w.skip.empty()) w.skip = fmt::format("{}: {}", node, StrOf(it, "skipped"));
        continue;
      }
      if (std::string e = StrOf(it, "error"); !e.empty()) {
        if (skip_if && skip_if(e)) {
          if (w.skip.empty()) w.skip = fmt::format("{}: {}", where, e);
        } else if (w.error.empty()) {
          w.error = fmt::format("{}: {}", where, e);
        }
        continue;
      }
      auto v = OptNumOf(it, key);
      if (!v) continue;
      ++w.items;
      if (!w.value || (higher_is_better ? *v < *w.value : *v > *w.value)) {
        w.value = *v;
        w.where = where;
      }
    }
  }
  return w;
}

// `lost`: a node whose step returned nothing (it crashed, hung past the step timeout): a node-side
// measurement that was asked for cannot pass on the nodes that did answer.
MetricValue FromWorst(const char* id, const Worst& w, const std::string& not_asked, const std::string& what,
                      const std::string& lost = "", bool asked = false) {
  MetricValue m{id, std::nullopt, "", "", ""};
  if (!lost.empty() && (asked || w.value || !w.error.empty())) {
    m.fail_reason = "no result from " + lost;
    if (w.value) m.value = w.value;
    return m;
  }
  if (!w.error.empty()) {
    m.fail_reason = w.error;
    if (w.value) m.value = w.value;
    return m;
  }
  if (!w.value) {
    m.why_missing = w.skip.empty() ? not_asked : w.skip;
    return m;
  }
  m.value = w.value;
  m.detail = fmt::format("{}: {} ({} measured)", what, w.where, w.items);
  return m;
}

// A login-side measurement ({"seconds" | "median_s", "error" | "skipped"}).
MetricValue FromStep(const char* id, const json& step, const char* key, const std::string& not_asked,
                     const std::string& detail) {
  MetricValue m{id, std::nullopt, "", "", ""};
  if (!step.is_object() || step.empty()) {
    m.why_missing = not_asked;
  } else if (!StrOf(step, "skipped").empty()) {
    m.why_missing = StrOf(step, "skipped");
  } else if (!StrOf(step, "error").empty()) {
    m.fail_reason = StrOf(step, "error");
  } else if (auto v = OptNumOf(step, key)) {
    m.value = *v;
    m.detail = detail;
  } else {
    m.why_missing = not_asked;
  }
  return m;
}

bool NotInstalled(const std::string& e) { return util::Contains(e, "cannot find the package"); }

}  // namespace

std::vector<MetricValue> LifecycleMetrics(const json& r) {
  std::vector<MetricValue> out;
  const json& nodes = ObjOf(r, "nodes");
  out.push_back(
      FromStep("life.job-start", ObjOf(r, "job_start"), "median_s", "not measured",
               fmt::format("sbatch to RUNNING, median of {}", ArrOf(ObjOf(r, "job_start"), "samples").size())));
  const json& alloc = ObjOf(r, "alloc");
  if (NumOf(alloc, "gpus_per_node") > 0 || !StrOf(alloc, "error").empty())
    out.push_back(FromStep("life.alloc-gpus", alloc, "seconds", "not measured",
                           fmt::format("{:g} node(s) with {:g} GPU(s) each, sbatch to RUNNING", NumOf(alloc, "nodes"),
                                       NumOf(alloc, "gpus_per_node"))));
  else
    out.push_back({"life.alloc-gpus", std::nullopt, "no GPU (GRES) on the nodes in scope", "", ""});
  {
    // srun at the largest node count measured; any count that failed fails the metric.
    MetricValue m{"life.srun-launch", std::nullopt, "not measured", "", ""};
    for (const auto& l : ArrOf(r, "launch")) {
      if (!StrOf(l, "error").empty() && m.fail_reason.empty())
        m.fail_reason = fmt::format("{:g} node(s): {}", NumOf(l, "nodes"), StrOf(l, "error"));
      else if (auto v = OptNumOf(l, "median_s")) {
        m.value = *v;
        m.detail =
            fmt::format("srun on {:g} node(s), median of {}{}", NumOf(l, "nodes"), ArrOf(l, "samples").size(),
                        l.contains("includes_allocation") ? ", each step allocating its own job (--no-jobs)" : "");
      }
    }
    out.push_back(m);
  }
  std::string lost;
  for (const auto& [node, why] : ObjOf(r, "node_errors").items())
    if (lost.empty()) lost = fmt::format("{} ({})", node, why.is_string() ? why.get<std::string>() : "no reason");
  const json& opts = ObjOf(r, "options");
  auto asked = [&](const char* k) { return opts.contains(k) && opts[k].is_boolean() && opts[k].get<bool>(); };
  out.push_back(FromWorst("life.import-cold", WorstOver(nodes, "imports", "cold_s", false, NotInstalled),
                          "not measured", "slowest", lost, asked("import")));
  out.push_back(FromWorst("life.pip-install", WorstOver(nodes, "pip", "install_s", false),
                          "not asked (--pip-install SPEC)", "slowest", lost, asked("pip")));
  out.push_back(FromWorst("life.model-load", WorstOver(nodes, "model", "cold_gbps", true),
                          "not asked (--model-path PATH)", "slowest", lost, asked("model")));
  {
    // The same files into GPU memory through the GPU helper (--model-to-gpu).
    json to_gpu = json::object();
    for (const auto& [node, doc] : nodes.items())
      if (const json& g = ObjOf(ObjOf(doc, "model"), "gpu"); !g.empty()) to_gpu[node] = {{"gpu", g}};
    out.push_back(FromWorst("life.model-load-gpu", WorstOver(to_gpu, "gpu", "cold_gbps", true),
                            "not asked (--model-path PATH --model-to-gpu)", "slowest", lost, asked("model_gpu")));
  }
  out.push_back(FromWorst("life.model-load-s3", WorstOver(nodes, "s3", "gbps", true),
                          "not asked (--model-s3 s3://BUCKET/PREFIX)", "slowest", lost, asked("s3")));
  {
    // Containers: each runtime on each node, and pyxis's first start through srun.
    json with_pyxis = nodes;
    if (ObjOf(r, "pyxis").size()) with_pyxis["(pyxis)"] = {{"containers", json::array({ObjOf(r, "pyxis")})}};
    out.push_back(FromWorst("life.container-import", WorstOver(with_pyxis, "containers", "import_s", false),
                            "not asked (--image IMAGE)", "slowest", lost, asked("containers")));
    out.push_back(FromWorst("life.container-start", WorstOver(nodes, "containers", "start_s", false),
                            "not asked (--image IMAGE)", "slowest", lost, asked("containers")));
  }
  {
    MetricValue m{"life.reboot", std::nullopt, "not asked (--reboot NODES)", "", ""};
    for (const auto& b : ArrOf(r, "reboot")) {
      if (!StrOf(b, "error").empty() && m.fail_reason.empty())
        m.fail_reason = fmt::format("{}: {}", StrOf(b, "node"), StrOf(b, "error"));
      auto v = OptNumOf(b, "back_s");
      if (v && (!m.value || *v > *m.value)) {
        m.value = *v;
        m.detail = fmt::format("scontrol reboot to schedulable, slowest: {}", StrOf(b, "node"));
      }
    }
    out.push_back(m);
  }
  return out;
}

std::string RenderLifecycle(const json& r) {
  auto safe = [](const std::string& s) { return util::TerminalSafeText(s); };
  auto sec = [](const json& o, const char* k) {
    auto v = OptNumOf(o, k);
    return v ? fmt::format("{:.2f} s", *v) : std::string("-");
  };
  std::string out = "Lifecycle timings\n";
  auto line = [&](const std::string& what, const json& o, const char* key) {
    std::string v = !StrOf(o, "skipped").empty() ? "skipped: " + safe(StrOf(o, "skipped"))
                    : !StrOf(o, "error").empty() ? "error: " + safe(StrOf(o, "error"))
                                                 : sec(o, key);
    out += fmt::format("  {:<34} {}\n", what, v);
  };
  if (!ObjOf(r, "job_start").empty()) line("job start (sbatch to RUNNING)", ObjOf(r, "job_start"), "median_s");
  if (!ObjOf(r, "alloc").empty()) {
    const json& a = ObjOf(r, "alloc");
    line(fmt::format("allocation, {:g} node(s) x {:g} GPU(s)", NumOf(a, "nodes"), NumOf(a, "gpus_per_node")), a,
         "seconds");
  }
  for (const auto& l : ArrOf(r, "launch"))
    line(fmt::format("srun launch, {:g} node(s)", NumOf(l, "nodes")), l, "median_s");
  if (!ObjOf(r, "pyxis").empty()) line("pyxis first start (srun)", ObjOf(r, "pyxis"), "import_s");
  for (const auto& [node, d] : ObjOf(r, "nodes").items()) {
    out += fmt::format("  {}\n", safe(node));
    for (const auto& i : ArrOf(d, "imports")) {
      std::string what = fmt::format("    import {} ({}, {})", safe(StrOf(i, "package")), safe(StrOf(i, "tier")),
                                     safe(StrOf(i, "fs_type")));
      if (!StrOf(i, "error").empty())
        out += fmt::format("{:<38} error: {}\n", what, safe(StrOf(i, "error")));
      else
        out += fmt::format("{:<38} cold {}, warm {} (interpreter alone {})\n", what, sec(i, "cold_s"), sec(i, "warm_s"),
                           sec(i, "interpreter_s"));
    }
    if (const json& p = ObjOf(d, "pip"); !p.empty()) {
      if (!StrOf(p, "error").empty())
        out += fmt::format("    {:<34} error: {}\n", "install " + safe(StrOf(p, "spec")), safe(StrOf(p, "error")));
      else
        out += fmt::format("    {:<34} {} (venv {}, then import cold {})\n",
                           fmt::format("{} install {}", safe(StrOf(p, "installer")), safe(StrOf(p, "spec"))),
                           sec(p, "install_s"), sec(p, "venv_s"), sec(p, "import_cold_s"));
    }
    for (const char* k : {"model", "s3"}) {
      const json& m = ObjOf(d, k);
      if (m.empty()) continue;
      std::string what =
          std::string(k) == "model" ? "model load (" + safe(StrOf(m, "fs_type")) + ")" : "model load (S3)";
      if (!StrOf(m, "error").empty())
        out += fmt::format("    {:<34} error: {}\n", what, safe(StrOf(m, "error")));
      else
        out += fmt::format(
            "    {:<34} {:.2f} GB/s{} ({:.2f} GB)\n", what, NumOf(m, std::string(k) == "model" ? "cold_gbps" : "gbps"),
            OptNumOf(m, "warm_gbps") ? fmt::format(" cold, {:.2f} GB/s warm", NumOf(m, "warm_gbps")) : "",
            NumOf(m, "bytes") / 1e9);
      if (const json& g = ObjOf(m, "gpu"); !g.empty()) {
        std::string to =
            "  into GPU memory" + (StrOf(g, "device").empty() ? "" : " (" + safe(StrOf(g, "device")) + ")");
        if (!StrOf(g, "error").empty())
          out += fmt::format("    {:<34} error: {}\n", to, safe(StrOf(g, "error")));
        else
          out += fmt::format("    {:<34} {:.2f} GB/s cold, {:.2f} GB/s warm ({:g} pieces checked on the GPU)\n", to,
                             NumOf(g, "cold_gbps"), NumOf(g, "warm_gbps"), NumOf(g, "checked_pieces"));
      }
    }
    for (const auto& c : ArrOf(d, "containers")) {
      if (!StrOf(c, "skipped").empty()) {
        out += fmt::format("    {:<34} skipped: {}\n", "containers", safe(StrOf(c, "skipped")));
        continue;
      }
      std::string what = "container (" + safe(StrOf(c, "runtime")) + ")";
      if (!StrOf(c, "error").empty())
        out += fmt::format("    {:<34} error: {}\n", what, safe(StrOf(c, "error")));
      else
        out += fmt::format("    {:<34} import {}, first start {}\n", what, sec(c, "import_s"), sec(c, "start_s"));
    }
  }
  for (const auto& [node, why] : ObjOf(r, "node_errors").items())
    out += fmt::format("  {}: {}\n", safe(node), why.is_string() ? safe(why.get<std::string>()) : "failed");
  for (const auto& b : ArrOf(r, "reboot")) {
    std::string what = "reboot " + safe(StrOf(b, "node"));
    if (!StrOf(b, "error").empty())
      out += fmt::format("  {:<34} error: {}\n", what, safe(StrOf(b, "error")));
    else
      out +=
          fmt::format("  {:<34} issued after {}, schedulable after {}\n", what, sec(b, "issued_s"), sec(b, "back_s"));
  }
  return out;
}

}  // namespace clustermax::bench::life
