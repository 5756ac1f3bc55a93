// The report reader of `rate` and `db ingest`: a run directory (report.json, bench/*.json) read by
// rating::LoadRunDir, rated against both embedded catalogs and rendered, then ingested into a
// results store (store::Store::Ingest, which validates it the same way) and read back as `serve`
// and `report --html` read it (Show, Diff, List, Export, Leaderboard). A rating document
// (`rate --out`, kind clustermax.rating) is ingested as a file and ranked in a cohort.
//
// The input is one JSON document, or several cut at NUL bytes: the first is report.json (or the
// rating), each further one bench/<n>.json. Files live in a private directory under /dev/shm
// (else /tmp); the store is recreated every 256 inputs so it stays small.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <string>

#include "fuzz_common.h"
#include "util/files.h"
#include "rating/catalog.h"
#include "rating/rate.h"
#include "store/store.h"

using namespace clustermax;
namespace fs = std::filesystem;

namespace {

// A private directory per process, "<tmp>/clustermax-fuzz-report-<pid>". libFuzzer ends a run with
// _Exit (no destructors), so each process removes the directories of processes that are gone.
struct Work {
  fs::path dir;
  Work() {
    fs::path tmp = fs::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    const std::string prefix = "clustermax-fuzz-report-";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(tmp, ec)) {
      std::string name = e.path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + prefix.size()));
      if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
    }
    dir = tmp / (prefix + std::to_string(getpid()));
    fs::remove_all(dir, ec);
    fs::create_directories(dir);
  }
};
const fs::path& WorkDir() {
  static const Work work;
  return work.dir;
}

void Write(const fs::path& p, std::string_view text) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static size_t calls = 0;
  std::string_view input = fuzz::AsText(data, size);
  std::vector<std::string_view> parts = fuzz::SplitNul(input);
  fs::path run = WorkDir() / "run", db = WorkDir() / "results.db";
  std::error_code ec;
  fs::remove_all(run, ec);
  fs::create_directories(run / "bench");
  bool is_rating = parts[0].find("clustermax.rating") != std::string_view::npos;
  fs::path rating_file = WorkDir() / "rating.json";
  if (is_rating)
    Write(rating_file, parts[0]);
  else if (!parts[0].empty())
    Write(run / "report.json", parts[0]);
  for (size_t i = 1; i < parts.size() && i < 8; ++i) Write(run / "bench" / (std::to_string(i) + ".json"), parts[i]);
  if (++calls % 256 == 0) {
    fs::remove(db, ec);
    fs::remove(db.string() + "-wal", ec);
    fs::remove(db.string() + "-shm", ec);
  }

  if (!is_rating) {
    try {
      rating::RunInput in = rating::LoadRunDir(run);
      for (const char* edition : {"3.0", "2.0"}) {
        const rating::Catalog& cat = rating::EmbeddedCatalog(edition);
        nlohmann::json r = rating::Rate(cat, {in}, std::nullopt);
        (void)rating::RenderRating(r, 3);
        nlohmann::json cohort = rating::Cohort(cat, {r, r});
        (void)rating::RenderCohort(cohort);
      }
    } catch (const std::exception&) {
    }
  } else {
    try {
      auto j = util::ParseJsonDocument(parts[0], "rating");
      const rating::Catalog& cat = rating::EmbeddedCatalog(j.value("edition", "3.0"));
      (void)rating::RenderRating(j, 3);
      (void)rating::RenderCohort(rating::Cohort(cat, {j, j}));
    } catch (const std::exception&) {
    }
  }
  try {
    store::Store s = store::Store::Open(db);
    store::IngestResult res = s.Ingest(is_rating ? rating_file : run, "", "");
    (void)s.Show(res.run_id).dump();
    (void)s.Diff(res.run_id, 1).dump();
    (void)s.List().dump();
    (void)s.Export({res.run_id}).dump();
    (void)s.Leaderboard().dump();
  } catch (const std::exception&) {
  }
  return 0;
}
