// The results store against real SQLite files: schema and migration, ingest (once per content,
// whole or not at all), list/show/diff/export, two processes ingesting at once, and an ingest
// killed inside its transaction.
#include <signal.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <fstream>

#include <SQLiteCpp/SQLiteCpp.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "store/store.h"
#include "testutil.h"

namespace clustermax::store {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

fs::path TempDir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("cm-store-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// A run directory from the recorded report, with one result changed so two runs differ.
fs::path MakeRun(const fs::path& root, const std::string& name, const std::string& perf_status = "",
                 bool with_gpu = false) {
  fs::path d = root / name;
  fs::create_directories(d / "bench");
  json r = json::parse(clustermax::testing::ReadFixture("../golden/debian12-container-cpu.json"));
  if (!perf_status.empty()) {
    for (auto& res : r["results"]) {
      if (res["id"] == "perf-access-paranoid") res["status"] = perf_status;
    }
  }
  std::ofstream(d / "report.json") << r.dump(1);
  if (with_gpu)
    std::ofstream(d / "bench" / "gpu.json") << clustermax::testing::ReadFixture("gpu/h200-bench-gpu-2026-11-30.json");
  return d;
}

TEST(Store, SchemaIsCreatedAndVersioned) {
  fs::path d = TempDir("schema");
  {
    Store s = Store::Open(d / "sub" / "results.db");
    EXPECT_EQ(s.SchemaVersion(), kSchemaVersion);
  }
  // A file from a newer clustermax is refused, not damaged.
  {
    SQLite::Database db((d / "sub" / "results.db").string(), SQLite::OPEN_READWRITE);
    db.exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  }
  try {
    Store::Open(d / "sub" / "results.db");
    ADD_FAILURE() << "opened a newer schema";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("newer"), std::string::npos) << e.what();
  }
  fs::remove_all(d);
}

TEST(Store, IngestOnceListShowDiffExport) {
  fs::path d = TempDir("ingest");
  Store s = Store::Open(d / "r.db");
  fs::path a = MakeRun(d, "a", "", true), b = MakeRun(d, "b", "FAIL");
  IngestResult ra = s.Ingest(a, "Example Cloud", "lab");
  EXPECT_FALSE(ra.already);
  EXPECT_EQ(ra.what, "audit + 1 benchmark result(s)");
  IngestResult again = s.Ingest(a, "Example Cloud", "lab");
  EXPECT_TRUE(again.already);
  EXPECT_EQ(again.run_id, ra.run_id);
  IngestResult rb = s.Ingest(b, "Example Cloud", "lab");
  json list = s.List();
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0]["id"], rb.run_id);  // newest first
  EXPECT_EQ(s.List("Nobody").size(), 0u);
  json show = s.Show(ra.run_id);
  EXPECT_EQ(show["provider"], "Example Cloud");
  EXPECT_EQ(show["target"], "standalone");
  EXPECT_GT(show["results"].size(), 80u);
  EXPECT_GT(show["metrics"].size(), 10u);
  EXPECT_TRUE(show["documents"].contains("report.json"));
  EXPECT_TRUE(s.Show(999).is_null());
  json diff = s.Diff(ra.run_id, rb.run_id);
  bool moved = false;
  for (const auto& c : diff["checks"]) moved |= c["check"] == "perf-access-paranoid" && c["to"] == "FAIL";
  EXPECT_TRUE(moved) << diff.dump();
  EXPECT_FALSE(diff["metrics"].empty());  // run b has no GPU metrics: each shows as gone or new
  EXPECT_THROW(s.Diff(ra.run_id, 999), std::runtime_error);
  json exp = s.Export();
  EXPECT_EQ(exp["runs"].size(), 2u);
  fs::remove_all(d);
}

TEST(Store, BadInputWritesNothing) {
  fs::path d = TempDir("bad");
  Store s = Store::Open(d / "r.db");
  fs::create_directories(d / "cut");
  std::ofstream(d / "cut" / "report.json") << R"({"schema_version": 1, "results": [{"id": "x")";
  EXPECT_THROW(s.Ingest(d / "cut", "", ""), std::runtime_error);
  EXPECT_THROW(s.Ingest(d / "nowhere", "", ""), std::runtime_error);
  std::ofstream(d / "note.json") << R"({"kind": "something"})";
  EXPECT_THROW(s.Ingest(d / "note.json", "", ""), std::runtime_error);
  EXPECT_EQ(s.List().size(), 0u);
  fs::remove_all(d);
}

TEST(Store, RatingsMakeTheLeaderboard) {
  fs::path d = TempDir("board");
  Store s = Store::Open(d / "r.db");
  auto rating = [&](const std::string& provider, const std::string& tier, double score, const std::string& file) {
    json r = {{"kind", "clustermax.rating"},
              {"provider", provider},
              {"cluster", "c1"},
              {"tier", tier},
              {"edition", "3.0"},
              {"categories", {{{"id", "security"}, {"score", score}}}}};
    std::ofstream(d / file) << r.dump();
    return s.Ingest(d / file, "", "");
  };
  rating("Beta", "SILVER", 0.7, "1.json");
  rating("Alpha", "SILVER", 0.8, "2.json");
  rating("Gamma", "GOLD", 0.85, "3.json");
  rating("Beta", "GOLD", 0.9, "4.json");  // a newer rating of Beta replaces its older one
  json board = s.Leaderboard();
  ASSERT_EQ(board.size(), 3u);
  EXPECT_EQ(board[0]["provider"], "Beta");  // GOLD, higher score
  EXPECT_EQ(board[1]["provider"], "Gamma");
  EXPECT_EQ(board[2]["provider"], "Alpha");
  fs::remove_all(d);
}

std::string Cli() { return CLUSTERMAX_BINARY; }

// db diff: older first by collection time whatever the order given, each change with its direction,
// regressions counted (the CLI exits 2 on any), and a run is never diffed against a rating.
TEST(Store, DiffIsOlderFirstAndCountsRegressions) {
  fs::path d = TempDir("diff");
  Store s = Store::Open(d / "r.db");
  fs::path late = MakeRun(d, "late", "FAIL"), early = MakeRun(d, "early");
  json r = json::parse(*util::ReadLocalFile(early / "report.json"));
  r["collected_at"] = "2026-01-01T00:00:00Z";
  std::ofstream(early / "report.json") << r.dump();
  int64_t id_late = s.Ingest(late, "P", "c").run_id,
          id_early = s.Ingest(early, "P", "c").run_id;  // ingested newest first
  json diff = s.Diff(id_late, id_early);
  EXPECT_TRUE(diff["swapped"].get<bool>());
  EXPECT_EQ(diff["from"]["id"], id_early);
  EXPECT_EQ(diff["to"]["id"], id_late);
  bool worse = false;
  for (const auto& c : diff["checks"])
    worse |= c["check"] == "perf-access-paranoid" && c["to"] == "FAIL" && c["direction"] == "worse";
  EXPECT_TRUE(worse) << diff.dump();
  EXPECT_EQ(diff["regressions"], 1);
  // The other way round in time the same change is better, not a regression.
  r["collected_at"] = "2027-01-01T00:00:00Z";
  std::ofstream(early / "report.json") << r.dump();
  fs::rename(early, d / "later");
  int64_t id_later = s.Ingest(d / "later", "P", "c").run_id;
  json back = s.Diff(id_late, id_later);
  EXPECT_FALSE(back["swapped"].get<bool>());
  EXPECT_EQ(back["regressions"], 0) << back.dump();
  // Ratings: tier and categories; a rating against a run is refused.
  auto rating = [&](const std::string& tier, json score, const std::string& file) {
    json j = {{"kind", "clustermax.rating"},
              {"provider", "P"},
              {"cluster", "c"},
              {"tier", tier},
              {"edition", "3.0"},
              {"categories", {{{"id", "security"}, {"score", score}}, {{"id", "pricing"}, {"score", 0.5}}}}};
    std::ofstream(d / file) << j.dump();
    return s.Ingest(d / file, "", "").run_id;
  };
  int64_t gold = rating("GOLD", 0.9, "g.json"), silver = rating("SILVER", nullptr, "s.json");
  json rd = s.Diff(gold, silver);
  EXPECT_EQ(rd["tier"]["direction"], "worse");
  ASSERT_EQ(rd["categories"].size(), 1u);
  EXPECT_EQ(rd["categories"][0]["category"], "security");
  EXPECT_TRUE(rd["categories"][0]["to"].is_null());  // no longer rated
  EXPECT_EQ(rd["regressions"], 2);
  try {
    s.Diff(id_late, gold);
    ADD_FAILURE() << "a run diffed against a rating";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("compares two runs, or two ratings"), std::string::npos) << e.what();
  }
  // The command: exit 2 on a regression, 0 without.
  std::string db = " db --db " + (d / "r.db").string() + " diff ";
  auto worse_run =
      clustermax::testing::RunShell(Cli() + db + std::to_string(id_early) + " " + std::to_string(id_late) + " 2>&1");
  EXPECT_EQ(worse_run.code, 2) << worse_run.out;
  EXPECT_NE(worse_run.out.find("worse"), std::string::npos) << worse_run.out;
  EXPECT_NE(worse_run.out.find("1 regression(s)"), std::string::npos) << worse_run.out;
  EXPECT_EQ(clustermax::testing::RunShell(Cli() + db + std::to_string(id_late) + " " + std::to_string(id_later) +
                                          " --json >/dev/null")
                .code,
            0);
  fs::remove_all(d);
}

TEST(Store, TwoProcessesIngestAtOnce) {
  fs::path d = TempDir("concurrent");
  std::vector<fs::path> runs;
  for (int i = 0; i < 6; ++i) runs.push_back(MakeRun(d, "r" + std::to_string(i), i % 2 ? "FAIL" : "WARN", i == 0));
  std::string db = (d / "r.db").string();
  std::string a = Cli() + " db --db " + db + " ingest " + runs[0].string() + " " + runs[1].string() + " " +
                  runs[2].string() + " " + runs[3].string();
  std::string b = Cli() + " db --db " + db + " ingest " + runs[2].string() + " " + runs[3].string() + " " +
                  runs[4].string() + " " + runs[5].string();
  auto r = clustermax::testing::RunShell("(" + a + ") & (" + b + ") & wait");
  EXPECT_EQ(r.out.find("error"), std::string::npos) << r.out;
  Store s = Store::Open(db);
  // Three distinct contents among the six directories (r0 with a GPU result; r1 = r3 = r5;
  // r2 = r4): each stored exactly once, whichever process got there first.
  EXPECT_EQ(s.List().size(), 3u);
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA integrity_check").getString(), "ok");
  fs::remove_all(d);
}

TEST(Store, AnIngestKilledInsideItsTransactionLeavesNothing) {
  fs::path d = TempDir("kill");
  fs::path run = MakeRun(d, "r", "", true);
  std::string db = (d / "r.db").string();
  { Store::Open(db); }
  pid_t pid = fork();
  if (pid == 0) {
    setenv("CLUSTERMAX_TEST_INGEST_PAUSE_MS", "10000", 1);
    execl(CLUSTERMAX_BINARY, "clustermax", "db", "--db", db.c_str(), "ingest", run.c_str(),
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // The child reads and checks the run (well under a second), opens its transaction, writes the
  // run row and stops for 10 s: kill it there.
  usleep(1500000);
  kill(pid, SIGKILL);
  int st = 0;
  waitpid(pid, &st, 0);
  EXPECT_TRUE(WIFSIGNALED(st));
  Store s = Store::Open(db);
  EXPECT_EQ(s.List().size(), 0u);
  SQLite::Database raw(db, SQLite::OPEN_READONLY);
  EXPECT_EQ(raw.execAndGet("PRAGMA integrity_check").getString(), "ok");
  EXPECT_EQ(raw.execAndGet("SELECT COUNT(*) FROM results").getInt(), 0);
  // And the next ingest of the same run works.
  EXPECT_FALSE(s.Ingest(run, "", "").already);
  fs::remove_all(d);
}

fs::perms Mode(const fs::path& p) { return fs::status(p).permissions() & fs::perms::all; }

TEST(Store, ANewStoreAndItsSideFilesAreTheOwners) {
  fs::path d = TempDir("mode");
  mode_t old = ::umask(022);  // the usual umask, which made the store 0644
  {
    Store s = Store::Open(d / "r.db");
    s.Ingest(MakeRun(d, "a"), "p", "c");
    // While it is open the WAL and its index exist; they carry the database's mode.
    for (const char* suffix : {"", "-wal", "-shm"}) {
      fs::path f = d / (std::string("r.db") + suffix);
      ASSERT_TRUE(fs::exists(f)) << f;
      EXPECT_EQ(Mode(f), fs::perms::owner_read | fs::perms::owner_write) << f;
    }
  }
  ::umask(old);
  // An existing file keeps its mode.
  fs::permissions(d / "r.db", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  { Store::Open(d / "r.db"); }
  EXPECT_EQ(Mode(d / "r.db"), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::remove_all(d);
}

// Someone else's store, or one in a directory this user cannot write: read without side files.
// Returns what went wrong, empty when the store was read and nothing was written beside it.
std::string ReadUnwritableStore(const fs::path& d) {
  try {
    { Store::Open(d / "r.db").Ingest(MakeRun(d, "a"), "p", "c"); }
    if (fs::exists(d / "r.db-wal") || fs::exists(d / "r.db-shm")) return "the writable store was left with side files";
    fs::permissions(d / "r.db", fs::perms::owner_read);
    fs::permissions(d, fs::perms::owner_read | fs::perms::owner_exec);
    if (::access(d.c_str(), W_OK) == 0)
      return "the directory is still writable to this user (root?): the test would prove nothing";
    size_t listed = 0;
    {
      Store s = Store::OpenReadOnly(d / "r.db");
      listed = s.List().size();
    }
    bool side = fs::exists(d / "r.db-wal") || fs::exists(d / "r.db-shm");
    fs::permissions(d, fs::perms::owner_all);
    if (listed != 1) return "listed " + std::to_string(listed) + " runs, expected 1";
    if (side) return "side files beside the read-only store";
    return "";
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::permissions(d, fs::perms::owner_all, ec);
    return std::string("threw: ") + e.what();
  }
}

// Root writes through chmod 0555/0444, so under root (how CI runs) the same scenario runs in a
// forked child that has dropped to an unprivileged user (nobody, 65534) and owns the directory.
// (WebServe.ReadOnlyMountedStoreIsListedAndServed covers a read-only mount, which stops root too.)
TEST(Store, AnUnwritableStoreIsReadWithoutSideFiles) {
  fs::path d = TempDir("readonly");
  if (::geteuid() != 0) {
    EXPECT_EQ(ReadUnwritableStore(d), "");
    fs::remove_all(d);
    return;
  }
  const uid_t kNobody = 65534;
  ASSERT_EQ(::chown(d.c_str(), kNobody, kNobody), 0) << d;
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::close(fds[0]);
    std::string why;
    if (::setgroups(0, nullptr) != 0 || ::setresgid(kNobody, kNobody, kNobody) != 0 ||
        ::setresuid(kNobody, kNobody, kNobody) != 0) {
      why = "cannot drop to uid 65534";
    } else if (::geteuid() == 0) {
      why = "still root";
    } else {
      why = ReadUnwritableStore(d);
    }
    ssize_t n = ::write(fds[1], why.data(), why.size());
    ::_exit(n == static_cast<ssize_t>(why.size()) && why.empty() ? 0 : 1);
  }
  ::close(fds[1]);
  std::string why;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) why.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  EXPECT_EQ(why, "") << "as uid 65534";
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "child status " << st;
  fs::remove_all(d);
}

}  // namespace
}  // namespace clustermax::store
