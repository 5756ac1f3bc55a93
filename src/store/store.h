// The results store: runs (audit reports, benchmark results) and ratings in one SQLite file
// (~/.clustermax/results.db by default), with a versioned schema migrated on open. Every ingest is
// one transaction (WAL, a busy timeout for concurrent writers): a run is stored whole or not at
// all, and storing the same run twice stores it once.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace SQLite {
class Database;
}

namespace clustermax::store {

// Current schema version; Open() migrates older files up to it and refuses newer ones.
inline constexpr int kSchemaVersion = 1;

struct IngestResult {
  int64_t run_id = 0;
  bool already = false;  // the same content was stored before (run_id is that run)
  std::string what;      // "audit + 2 benchmarks", "rating"
};

class Store {
 public:
  // Opens (creating, mode 0600) the database; throws std::runtime_error with the path and
  // SQLite's message.
  static Store Open(const std::filesystem::path& path);
  // For readers (report, serve, db list/show/diff/export): no write lock, no migration; a missing
  // file, an older or a newer schema is an error that says what to do. A store this process cannot
  // write (read-only mount, snapshot) is opened immutable, creating no -wal or -shm beside it.
  static Store OpenReadOnly(const std::filesystem::path& path);
  ~Store();
  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;

  int SchemaVersion() const;

  // A run directory (validated like `rate` does: a truncated file is refused before anything is
  // written) or a rating JSON file (`rate --out`).
  IngestResult Ingest(const std::filesystem::path& path, const std::string& provider, const std::string& cluster);

  // [{id, provider, cluster, kind, target, collected_at, ingested_at, nodes, summary, tier}], newest first.
  nlohmann::json List(const std::string& provider = "") const;
  bool Contains(int64_t run_id) const;
  // One run with its results, benchmark grades and documents; null when absent.
  nlohmann::json Show(int64_t run_id) const;
  // What changed between two runs: checks whose status moved, metrics whose verdict or value moved.
  nlohmann::json Diff(int64_t a, int64_t b) const;
  // Every run (or the given ones) as stored, documents included.
  nlohmann::json Export(const std::vector<int64_t>& ids = {}) const;
  // The latest rating per provider and cluster, best tier first (the leaderboard).
  nlohmann::json Leaderboard() const;

 private:
  explicit Store(std::unique_ptr<SQLite::Database> db, std::string path);
  std::unique_ptr<SQLite::Database> db_;
  std::string path_;
};

std::filesystem::path DefaultDbPath();

}  // namespace clustermax::store
