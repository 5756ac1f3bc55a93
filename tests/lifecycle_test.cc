// bench lifecycle's node side and grading (bench/lifecycle.h): imports timed for real with Debian's
// python3 on package trees in temporary tiers, a package installed from a local wheel into a fresh
// virtual environment by the real pip, model files read back byte-exact, container runtimes driven
// through a scripted docker CLI (no container runtime runs here), Slurm node states as scontrol
// prints them during a reboot (observed on Slurm 22.05's real slurmctld), and the metrics with
// mutations that flip one fact. The Slurm side runs on the CI cluster (slurm_test.cc).

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "bench/lifecycle.h"
#include "testutil.h"
#include "util/strings.h"
#include "util/usage_error.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace clustermax;
namespace life = clustermax::bench::life;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    char t[] = "/tmp/cm-life-test-XXXXXX";
    path = ::mkdtemp(t);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

void Write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// A package of `modules` small modules (the lots-of-small-files shape of torch's tree).
void MakePackage(const fs::path& dir, const std::string& name, int modules) {
  std::string init;
  for (int i = 0; i < modules; ++i) {
    Write(dir / name / fmt::format("m{}.py", i), fmt::format("VALUE = {}\n", i));
    init += fmt::format("from . import m{}\n", i);
  }
  Write(dir / name / "__init__.py", init);
}

bool HavePython() { return ::access("/usr/bin/python3", X_OK) == 0; }

}  // namespace

TEST(Lifecycle, TiersAndModuleNamesAreChecked) {
  auto t = life::ParseTier("shared=/lustre/venv");
  EXPECT_EQ(t.name, "shared");
  EXPECT_EQ(t.dir, "/lustre/venv");
  EXPECT_EQ(life::ParseTier("/scratch/env").name, "env");
  for (const char* bad : {"shared=relative/dir", "=/x", "na me=/x", "x=", "a;b=/x"})
    EXPECT_THROW(life::ParseTier(bad), UsageError) << bad;
  EXPECT_TRUE(life::ValidModuleName("torch"));
  EXPECT_TRUE(life::ValidModuleName("numpy.linalg"));
  for (const char* bad : {"", "os;rm", "a..b", ".a", "a.", "1abc", "x y", "__import__('os')"})
    EXPECT_FALSE(life::ValidModuleName(bad)) << bad;
}

TEST(Lifecycle, EnrootNamesTheRegistryWithAHash) {
  EXPECT_EQ(life::EnrootUri("nvcr.io/nvidia/pytorch:24.05-py3"), "docker://nvcr.io#nvidia/pytorch:24.05-py3");
  EXPECT_EQ(life::EnrootUri("ubuntu:22.04"), "docker://ubuntu:22.04");
  EXPECT_EQ(life::EnrootUri("library/ubuntu"), "docker://library/ubuntu");
  EXPECT_EQ(life::EnrootUri("localhost:5000/img"), "docker://localhost:5000#img");
  EXPECT_EQ(life::EnrootUri("docker://ghcr.io#x/y"), "docker://ghcr.io#x/y");
}

TEST(Lifecycle, PageCacheDropAndTreeReadCoverEveryFileOnce) {
  TempDir d;
  // One file across two 16 MiB pieces, small files, a link to a file (followed, as a Hugging Face
  // snapshot's are) and a link to a directory (not followed: no loop, no double count).
  std::string big(17u << 20, 'x');
  for (size_t i = 0; i < big.size(); i += 4096) big[i] = static_cast<char>(i / 4096);
  Write(d.path / "model" / "weights.bin", big);
  Write(d.path / "model" / "config.json", "{}");
  Write(d.path / "blobs" / "tok", std::string(1000, 't'));
  fs::create_symlink(d.path / "blobs" / "tok", d.path / "model" / "tokenizer.json");
  fs::create_directory_symlink(d.path / "model", d.path / "model" / "loop");
  // Exactly the files ReadTree reads: the link to the blob is followed, the one to a directory not.
  EXPECT_EQ(life::DropFromPageCache(d.path / "model"), 3u);
  // A link to the same file twice drops it once.
  fs::create_symlink(d.path / "blobs" / "tok", d.path / "model" / "again.json");
  EXPECT_EQ(life::DropFromPageCache(d.path / "model"), 3u);
  fs::remove(d.path / "model" / "again.json");
  json r = life::ReadTree(d.path / "model", 3);
  ASSERT_FALSE(r.contains("error")) << r.dump();
  EXPECT_EQ(r["files"], 3);
  EXPECT_EQ(r["bytes"].get<uint64_t>(), big.size() + 2 + 1000);
  EXPECT_GT(r["gbps"].get<double>(), 0);
  EXPECT_TRUE(life::ReadTree(d.path / "absent", 2).contains("error"));
  fs::create_directory(d.path / "empty");
  EXPECT_TRUE(life::ReadTree(d.path / "empty", 2).contains("error"));
}

// The helper's load lines from a real H200 (scripts/device-check.sh, 2026-12-04: two 512 MiB
// files on ext4, 8 readers, cold 2.05 GB/s and warm 23.3 GB/s, 64 pieces checked each pass),
// replayed through the node side; then one recorded fact flipped (a piece that arrived wrong).
TEST(Lifecycle, ARealH200ModelLoadReplayedAndOneBadPieceFails) {
  TempDir d;
  Write(d.path / "model" / "model-00001-of-00001.safetensors", std::string(1u << 20, 'a'));
  std::string helper = (clustermax::testing::SourceDir() / "tests" / "fake_gpu" / "clustermax-gpu").string();
  json job = {{"kind", "node"},
              {"model", {{"path", (d.path / "model").string()}, {"threads", 8}, {"to_gpu", true}, {"helper", helper}}}};
  setenv("FAKE_GPU_REPLAY", clustermax::testing::Fixture("gpu/h200-load-helper-lines-2026-12-04.jsonl").c_str(), 1);
  json g = life::RunLifeRankJob(job, "n1", 0)["model"]["gpu"];
  setenv("FAKE_GPU_BAD_PIECE", "1", 1);
  json bad = life::RunLifeRankJob(job, "n1", 0)["model"]["gpu"];
  // A count that is no count (too large for a double to hold exactly, or a fraction) is not read
  // as zero bad pieces.
  setenv("FAKE_GPU_BAD_PIECE", "1e19", 1);
  json huge = life::RunLifeRankJob(job, "n1", 0)["model"]["gpu"];
  setenv("FAKE_GPU_BAD_PIECE", "0.5", 1);
  json half = life::RunLifeRankJob(job, "n1", 0)["model"]["gpu"];
  unsetenv("FAKE_GPU_BAD_PIECE");
  unsetenv("FAKE_GPU_REPLAY");
  EXPECT_TRUE(util::Contains(huge.value("error", ""), "not whole numbers")) << huge.dump();
  EXPECT_TRUE(util::Contains(half.value("error", ""), "not whole numbers")) << half.dump();
  ASSERT_FALSE(g.contains("error")) << g.dump();
  EXPECT_EQ(g["device"], "NVIDIA H200");
  EXPECT_EQ(g["bytes"], 1073741824);
  EXPECT_EQ(g["cold_gbps"], 2.0458);
  EXPECT_EQ(g["warm_gbps"], 23.27);
  EXPECT_EQ(g["checked_pieces"], 128);
  EXPECT_EQ(g["bad_pieces"], 0);
  EXPECT_EQ(g["wrapped"], false);
  json result = {{"options", {{"model", true}, {"model_gpu", true}}},
                 {"nodes", {{"n1", {{"model", {{"cold_gbps", 1.7}, {"gpu", g}}}}}}}};
  std::map<std::string, bench::MetricValue> grades;
  for (auto& v : life::LifecycleMetrics(result)) grades[v.id] = v;
  ASSERT_TRUE(grades["life.model-load-gpu"].value.has_value());
  EXPECT_EQ(*grades["life.model-load-gpu"].value, 2.0458);
  EXPECT_TRUE(grades["life.model-load-gpu"].fail_reason.empty());
  EXPECT_TRUE(util::Contains(bad.value("error", ""), "2 of 128 piece(s) differed on the GPU")) << bad.dump();
}

TEST(Lifecycle, ModelToGpuGoesThroughTheHelperColdThenWarmAndABadPieceFails) {
  // The helper's CUDA half (src/gpubench/suites/load.cc) needs a GPU; here the fake helper
  // (tests/fake_gpu) answers its "load" items, so the job, the reading of its lines and the verdict
  // on a piece that arrived wrong are what is tested.
  TempDir d;
  Write(d.path / "model" / "model-00001-of-00002.safetensors", std::string(3u << 20, 'a'));
  Write(d.path / "model" / "model-00002-of-00002.safetensors", std::string(1u << 20, 'b'));
  std::string helper = (clustermax::testing::SourceDir() / "tests" / "fake_gpu" / "clustermax-gpu").string();
  json job = {{"kind", "node"},
              {"model", {{"path", (d.path / "model").string()}, {"threads", 2}, {"to_gpu", true}, {"helper", helper}}}};
  json m = life::RunLifeRankJob(job, "n1", 0)["model"];
  ASSERT_FALSE(m.contains("error")) << m.dump();
  ASSERT_TRUE(m.contains("gpu")) << m.dump();
  const json& g = m["gpu"];
  ASSERT_FALSE(g.contains("error")) << g.dump();
  EXPECT_EQ(g["device"], "NVIDIA H200");
  EXPECT_EQ(g["bytes"].get<double>(), 4u << 20);
  EXPECT_GT(g["cold_gbps"].get<double>(), 0);
  EXPECT_GT(g["warm_gbps"].get<double>(), 0);
  EXPECT_EQ(g["checked_pieces"], 4);  // two pieces, cold and warm: both passes checked
  // A piece that differed on the GPU from the bytes read is an error, never a load rate.
  setenv("FAKE_GPU_BAD_PIECE", "1", 1);
  json bad = life::RunLifeRankJob(job, "n1", 0)["model"]["gpu"];
  unsetenv("FAKE_GPU_BAD_PIECE");
  EXPECT_TRUE(util::Contains(bad.value("error", ""), "differed on the GPU")) << bad.dump();
  // No GPU, no helper: said, not passed.
  setenv("FAKE_GPU_NONE", "1", 1);
  json none = life::RunLifeRankJob(job, "n1", 0)["model"]["gpu"];
  unsetenv("FAKE_GPU_NONE");
  EXPECT_TRUE(util::Contains(none.value("error", ""), "no CUDA device")) << none.dump();
  job["model"]["helper"] = "/nonexistent/clustermax-gpu";
  json missing = life::RunLifeRankJob(job, "n1", 0)["model"]["gpu"];
  EXPECT_TRUE(util::Contains(missing.value("error", ""), "no GPU helper")) << missing.dump();
  // Graded as the slowest node's cold rate into GPU memory; an error fails it.
  json result = {{"options", {{"model", true}, {"model_gpu", true}}},
                 {"nodes",
                  {{"n1", {{"model", {{"cold_gbps", 6.0}, {"gpu", {{"cold_gbps", 12.0}}}}}}},
                   {"n2", {{"model", {{"cold_gbps", 6.0}, {"gpu", {{"cold_gbps", 1.5}, {"warm_gbps", 9.0}}}}}}}}}};
  std::map<std::string, bench::MetricValue> grades;
  for (auto& v : life::LifecycleMetrics(result)) grades[v.id] = v;
  ASSERT_TRUE(grades["life.model-load-gpu"].value.has_value());
  EXPECT_EQ(*grades["life.model-load-gpu"].value, 1.5);
  EXPECT_TRUE(util::Contains(grades["life.model-load-gpu"].detail, "n2"));
  result["nodes"]["n2"]["model"]["gpu"] = bad;
  for (auto& v : life::LifecycleMetrics(result)) grades[v.id] = v;
  EXPECT_TRUE(util::Contains(grades["life.model-load-gpu"].fail_reason, "differed on the GPU"));
  result.erase("nodes");
  result["options"]["model_gpu"] = false;
  for (auto& v : life::LifecycleMetrics(result)) grades[v.id] = v;
  EXPECT_TRUE(util::Contains(grades["life.model-load-gpu"].why_missing, "--model-to-gpu"));
  EXPECT_NE(life::RenderLifecycle({{"nodes", {{"n1", {{"model", {{"cold_gbps", 6.0}, {"gpu", g}}}}}}}})
                .find("into GPU memory (NVIDIA H200)"),
            std::string::npos);
}

TEST(Lifecycle, ImportIsTimedColdThenWarmOnEachTier) {
  if (!HavePython()) GTEST_SKIP() << "no /usr/bin/python3";
  TempDir d;
  MakePackage(d.path / "tier-a", "cmpkg", 200);
  MakePackage(d.path / "tier-b", "cmpkg", 20);
  json job = {{"kind", "node"},
              {"python", "/usr/bin/python3"},
              {"warm_runs", 2},
              {"imports",
               {{"package", "cmpkg"},
                {"tiers",
                 {{{"name", "a"}, {"dir", (d.path / "tier-a").string()}},
                  {{"name", "b"}, {"dir", (d.path / "tier-b").string()}},
                  {{"name", "empty"}, {"dir", d.path.string()}}}}}}};
  json r = life::RunLifeRankJob(job, "n1", 0);
  ASSERT_EQ(r["imports"].size(), 3u) << r.dump();
  for (int i : {0, 1}) {
    const json& t = r["imports"][i];
    ASSERT_FALSE(t.contains("error")) << t.dump();
    EXPECT_GT(t["cold_s"].get<double>(), 0);
    EXPECT_EQ(t["warm_samples"].size(), 2u);
    EXPECT_GT(t["interpreter_s"].get<double>(), 0);
    EXPECT_TRUE(util::Contains(t["package_path"].get<std::string>(), "cmpkg"));
    EXPECT_FALSE(t["fs_type"].get<std::string>().empty());
  }
  // 200 modules plus their __pycache__ after the first import: every file was dropped.
  EXPECT_GE(r["imports"][0]["dropped_files"].get<int>(), 201);
  // Where the package is not, the import says so (and grading treats it as not applicable).
  EXPECT_TRUE(util::Contains(r["imports"][2]["error"].get<std::string>(), "cannot find the package cmpkg"));
  json result = {{"nodes", {{"n1", r}}}};
  auto metrics = life::LifecycleMetrics(result);
  auto cold = std::find_if(metrics.begin(), metrics.end(), [](auto& m) { return m.id == "life.import-cold"; });
  ASSERT_NE(cold, metrics.end());
  ASSERT_TRUE(cold->value.has_value());
  EXPECT_DOUBLE_EQ(*cold->value,
                   std::max(r["imports"][0]["cold_s"].get<double>(), r["imports"][1]["cold_s"].get<double>()));
  EXPECT_TRUE(cold->fail_reason.empty());
}

TEST(Lifecycle, PackageInstallsFromTheSitesIndexIntoAFreshEnvironment) {
  if (!HavePython() || std::system("/usr/bin/python3 -c 'import ensurepip' 2>/dev/null") != 0)
    GTEST_SKIP() << "no python3-venv";
  TempDir d;
  // A wheel made by hand (a zip with METADATA, WHEEL and RECORD), served as a local index.
  std::string make = fmt::format(R"(/usr/bin/python3 - <<'PY'
import zipfile
with zipfile.ZipFile('{}/cmwheel-1.0-py3-none-any.whl', 'w') as z:
    z.writestr('cmwheel/__init__.py', 'X = 1\n')
    z.writestr('cmwheel-1.0.dist-info/METADATA', 'Metadata-Version: 2.1\nName: cmwheel\nVersion: 1.0\n')
    z.writestr('cmwheel-1.0.dist-info/WHEEL', 'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n')
    z.writestr('cmwheel-1.0.dist-info/RECORD', '')
PY)",
                                 d.path.string());
  ASSERT_EQ(std::system(make.c_str()), 0);
  json job = {{"kind", "node"},
              {"python", "/usr/bin/python3"},
              {"warm_runs", 1},
              {"pip",
               {{"spec", "cmwheel"},
                {"installer", "pip"},
                {"args", {"--no-index", "--find-links=" + d.path.string()}},
                {"dir", d.path.string()},
                {"module", "cmwheel"},
                {"timeout_s", 300}}}};
  json r = life::RunLifeRankJob(job, "n1", 0);
  const json& p = r["pip"];
  ASSERT_FALSE(p.contains("error")) << p.dump();
  EXPECT_GT(p["venv_s"].get<double>(), 0);
  EXPECT_GT(p["install_s"].get<double>(), 0);
  EXPECT_GT(p["import_cold_s"].get<double>(), 0);
  // The environment is gone afterwards; only the wheel is left.
  size_t left = 0;
  for (auto& e : fs::directory_iterator(d.path)) left += e.path().extension() != ".whl";
  EXPECT_EQ(left, 0u);
  // A requirement the index does not have fails with pip's own words.
  job["pip"]["spec"] = "cm-no-such-package";
  json bad = life::RunLifeRankJob(job, "n1", 0)["pip"];
  ASSERT_TRUE(bad.contains("error"));
  EXPECT_TRUE(util::Contains(bad["error"].get<std::string>(), "install failed")) << bad.dump();
}

TEST(Lifecycle, ContainerRuntimesAreTimedAndWhatWasPulledIsRemoved) {
  // A scripted docker CLI on PATH: it records its arguments and answers as docker does.
  TempDir d;
  fs::path bin = d.path / "bin", log = d.path / "calls";
  Write(bin / "docker", fmt::format(R"(#!/bin/sh
echo "$*" >> {}
case "$1" in
  image) exit 1 ;;        # not present before
  pull) sleep 0.2 ;;
  run) sleep 0.1 ;;
  rmi) ;;
esac
exit 0
)",
                                    log.string()));
  fs::permissions(bin / "docker", fs::perms::owner_all);
  std::string old_path = ::getenv("PATH") ? ::getenv("PATH") : "";
  ::setenv("PATH", (bin.string() + ":/usr/bin:/bin").c_str(), 1);
  json r =
      life::RunLifeRankJob({{"kind", "node"}, {"containers", {{"image", "ubuntu:22.04"}, {"dir", d.path}}}}, "n1", 0);
  ::setenv("PATH", old_path.c_str(), 1);
  ASSERT_EQ(r["containers"].size(), 1u) << r.dump();
  const json& c = r["containers"][0];
  EXPECT_EQ(c["runtime"], "docker");
  EXPECT_GE(c["import_s"].get<double>(), 0.2);
  EXPECT_GE(c["start_s"].get<double>(), 0.1);
  EXPECT_EQ(c["already_present"], false);
  auto calls = util::SplitLines(*util::ReadLocalFile(log));
  ASSERT_EQ(calls.size(), 4u);
  EXPECT_EQ(calls[0], "image inspect ubuntu:22.04");
  EXPECT_EQ(calls[1], "pull ubuntu:22.04");
  EXPECT_EQ(calls[2], "run --rm ubuntu:22.04 true");
  EXPECT_EQ(calls[3], "rmi ubuntu:22.04");
  // An image docker already held: its pull is a cache hit, shown but not graded, and left in place.
  Write(bin / "docker", fmt::format("#!/bin/sh\necho \"$*\" >> {}\nexit 0\n", log.string()));
  fs::remove(log);
  ::setenv("PATH", (bin.string() + ":/usr/bin:/bin").c_str(), 1);
  json warm =
      life::RunLifeRankJob({{"kind", "node"}, {"containers", {{"image", "ubuntu:22.04"}, {"dir", d.path}}}}, "n1", 0);
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_TRUE(warm["containers"][0].contains("skipped")) << warm.dump();
  EXPECT_FALSE(util::Contains(*util::ReadLocalFile(log), "rmi"));
  // No runtime at all: said so, and graded SKIP rather than passed.
  ::setenv("PATH", (d.path / "nothing").c_str(), 1);
  json none = life::RunLifeRankJob({{"kind", "node"}, {"containers", {{"image", "x"}}}}, "n1", 0);
  ::setenv("PATH", old_path.c_str(), 1);
  EXPECT_TRUE(none["containers"][0].contains("skipped"));
  auto metrics = life::LifecycleMetrics({{"nodes", {{"n1", none}}}});
  for (const auto& m : metrics)
    if (m.id == "life.container-import") EXPECT_TRUE(util::Contains(m.why_missing, "no container runtime"));
}

TEST(Lifecycle, RebootStatesAsScontrolPrintsThem) {
  // The states seen on Slurm 22.05.8's slurmctld during `scontrol reboot ASAP nextstate=RESUME`
  // of an idle node, in order (the CI cluster, RebootProgram restarting the node's slurmd).
  const char* seen[] = {
      "NodeName=n2 Arch=x86_64 CoresPerSocket=1 State=IDLE ThreadsPerCore=1 BootTime=2026-12-03T18:00:01",
      "NodeName=n2 Arch=x86_64 CoresPerSocket=1 State=IDLE+DRAIN+REBOOT_REQUESTED ThreadsPerCore=1 Reason=final",
      "NodeName=n2 Arch=x86_64 CoresPerSocket=1 State=DOWN+DRAIN+REBOOT_ISSUED ThreadsPerCore=1",
      "NodeName=n2 Arch=x86_64 CoresPerSocket=1 State=IDLE ThreadsPerCore=1 BootTime=2026-12-03T18:02:00"};
  std::vector<bool> sched;
  for (const char* l : seen) sched.push_back(life::Schedulable(life::NodeStateFlags(l)));
  EXPECT_EQ(sched, (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(life::NodeStateFlags(seen[2]), (std::vector<std::string>{"DOWN", "DRAIN", "REBOOT_ISSUED"}));
  // Not responding ('*'), a busy node draining for the reboot, powered down, no state at all.
  EXPECT_EQ(life::NodeStateFlags("NodeName=n1 State=IDLE*+REBOOT_ISSUED"),
            (std::vector<std::string>{"NOT_RESPONDING", "IDLE", "REBOOT_ISSUED"}));
  EXPECT_FALSE(life::Schedulable(life::NodeStateFlags("NodeName=n1 State=IDLE*")));
  EXPECT_FALSE(life::Schedulable(life::NodeStateFlags("NodeName=n1 State=MIXED+DRAIN+REBOOT_REQUESTED")));
  EXPECT_FALSE(life::Schedulable(life::NodeStateFlags("NodeName=n1 State=IDLE+POWERED_DOWN")));
  EXPECT_TRUE(life::Schedulable(life::NodeStateFlags("NodeName=n1 State=MIXED")));
  // Registered with one GPU fewer than configured: INVAL (22.05+), or the flag spelled out.
  EXPECT_FALSE(life::Schedulable(life::NodeStateFlags("NodeName=n1 State=INVAL")));
  EXPECT_FALSE(life::Schedulable(life::NodeStateFlags("NodeName=n1 State=MIXED+INVALID_REG")));
  EXPECT_FALSE(life::Schedulable(life::NodeStateFlags("NodeName=n1 Arch=x86_64")));
}

TEST(Lifecycle, MetricsNameTheWorstAndNeverPassWhatFailed) {
  json result = {
      {"job_start", {{"samples", {0.4, 0.5, 0.6}}, {"median_s", 0.5}}},
      {"alloc", {{"seconds", 0.7}, {"nodes", 3}, {"gpus_per_node", 8}}},
      {"launch",
       {{{"nodes", 1}, {"samples", {0.1}}, {"median_s", 0.1}}, {{"nodes", 3}, {"samples", {0.3}}, {"median_s", 0.3}}}},
      {"nodes",
       {{"n1",
         {{"imports", {{{"tier", "home"}, {"cold_s", 1.5}}, {{"tier", "lustre"}, {"cold_s", 14.0}}}},
          {"model", {{"cold_gbps", 6.0}}}}},
        {"n2", {{"imports", {{{"tier", "home"}, {"cold_s", 1.2}}}}, {"model", {{"cold_gbps", 2.5}}}}}}},
      {"reboot", {{{"node", "n2"}, {"back_s", 240.0}}}}};
  auto grade = [](const json& r) {
    std::map<std::string, bench::MetricValue> m;
    for (auto& v : life::LifecycleMetrics(r)) m[v.id] = v;
    return m;
  };
  auto m = grade(result);
  EXPECT_EQ(*m["life.job-start"].value, 0.5);
  EXPECT_EQ(*m["life.alloc-gpus"].value, 0.7);
  EXPECT_EQ(*m["life.srun-launch"].value, 0.3);
  EXPECT_TRUE(util::Contains(m["life.srun-launch"].detail, "3 node(s)"));
  EXPECT_EQ(*m["life.import-cold"].value, 14.0);
  EXPECT_TRUE(util::Contains(m["life.import-cold"].detail, "lustre on n1"));
  EXPECT_EQ(*m["life.model-load"].value, 2.5);
  EXPECT_TRUE(util::Contains(m["life.model-load"].detail, "n2"));
  EXPECT_EQ(*m["life.reboot"].value, 240.0);
  EXPECT_FALSE(m["life.pip-install"].value.has_value());
  EXPECT_TRUE(util::Contains(m["life.pip-install"].why_missing, "--pip-install"));
  // One fact flipped at a time: each becomes a failure with its reason, never a pass.
  json r1 = result;
  r1["launch"][1] = {{"nodes", 3}, {"error", "n3: srun: error: Unable to create step"}};
  EXPECT_TRUE(util::Contains(grade(r1)["life.srun-launch"].fail_reason, "Unable to create step"));
  json r2 = result;
  r2["nodes"]["n2"]["imports"][0] = {{"tier", "home"}, {"error", "import torch failed: exit code 1: ImportError"}};
  EXPECT_TRUE(util::Contains(grade(r2)["life.import-cold"].fail_reason, "ImportError"));
  json r3 = result;
  r3["reboot"][0]["error"] = "not schedulable within 1800 s (now DOWN+REBOOT_ISSUED)";
  EXPECT_FALSE(grade(r3)["life.reboot"].fail_reason.empty());
  json r4 = result;
  r4["job_start"] = {{"error", "job 12 did not start within 300 s (still PENDING)"}};
  EXPECT_TRUE(util::Contains(grade(r4)["life.job-start"].fail_reason, "PENDING"));
  // A node whose step returned nothing fails the node-side grades that were asked for.
  json r6 = result;
  r6["options"] = {{"import", true}, {"model", true}, {"pip", false}};
  r6["node_errors"] = {{"n3", "returned nothing before the step timeout (3600 s)"}};
  auto g6 = grade(r6);
  EXPECT_TRUE(util::Contains(g6["life.import-cold"].fail_reason, "n3 (returned nothing"))
      << g6["life.import-cold"].fail_reason;
  EXPECT_FALSE(g6["life.model-load"].fail_reason.empty());
  EXPECT_TRUE(g6["life.pip-install"].fail_reason.empty());  // not asked: still not asked
  json r5 = result;
  r5["alloc"]["gpus_per_node"] = 0;
  EXPECT_TRUE(util::Contains(grade(r5)["life.alloc-gpus"].why_missing, "no GPU"));
  // Wrong types everywhere render and grade without throwing.
  json junk = {{"job_start", 3},
               {"launch", {{"x", 1}, 5}},
               {"nodes", {{"n1", {{"imports", "x"}}}, {"n2", 7}}},
               {"reboot", {"a"}},
               {"node_errors", {{"n3", 4}}}};
  EXPECT_NO_THROW(life::LifecycleMetrics(junk));
  EXPECT_NO_THROW(life::RenderLifecycle(junk));
  EXPECT_TRUE(util::Contains(life::RenderLifecycle(result), "lustre"));
}
