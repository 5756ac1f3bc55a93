#include "bench/storage.h"

#include <fcntl.h>
#include <liburing.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <set>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>

#include "bench/grade.h"
#include "bench/histogram.h"
#include "bench/workspace.h"
#include "core/version.h"
#include "util/time.h"
#include "util/files.h"

namespace clustermax::bench {
namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr uint32_t kAlign = 4096;
constexpr uint64_t kMiB = uint64_t{1} << 20;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
uint64_t Nanos(Clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

// Page-aligned buffer (O_DIRECT needs it) filled with pseudo-random bytes: never zeros, which
// compressing or deduplicating storage would make look fast.
struct AlignedBuffer {
  explicit AlignedBuffer(size_t n, uint64_t seed) : size(n) {
    void* p = nullptr;
    if (::posix_memalign(&p, kAlign, std::max<size_t>(n, kAlign)) != 0) throw std::bad_alloc();
    data.reset(static_cast<char*>(p));
    std::mt19937_64 rng(seed);
    auto* w = reinterpret_cast<uint64_t*>(data.get());
    for (size_t i = 0; i < n / 8; ++i) w[i] = rng();
  }
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char, Free> data;
  size_t size;
};

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

std::string Errno(int e) { return std::strerror(e); }

// Drops the page cache of one of our own files (fio's invalidate=1): reads then hit the storage.
void DropCache(const fs::path& p) {
  Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return;
  ::fdatasync(fd.get());
  ::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_DONTNEED);
}

struct Engine {
  std::string name;  // "io_uring" or "psync"
  std::string note;
  unsigned ring_flags = 0;  // io_uring_setup flags every ring of the run uses
  std::string ring_setup;   // the same, named, for the result
};

// Each thread owns its ring and is the only one to submit and reap, so completions need not
// interrupt it: COOP_TASKRUN (no IPI per completion), SINGLE_ISSUER and DEFER_TASKRUN (completion
// work runs when the thread submits or waits with GETEVENTS). fio's io_uring engine sets the same,
// so both tools drive the kernel alike (on this 2-CPU VM the flags alone moved no figure outside
// the noise). Older kernels refuse the newer flags with EINVAL: drop them in the order they were
// added, as fio does.
int InitRing(io_uring& ring, unsigned depth, unsigned flags) {
  io_uring_params p{};
  p.flags = flags;
  return io_uring_queue_init_params(depth, &ring, &p);
}

Engine PickEngine(const std::string& wanted) {
  if (wanted == "psync") return {"psync", "requested with --engine psync: one I/O in flight per thread"};
  const std::pair<unsigned, const char*> setups[] = {
      {IORING_SETUP_COOP_TASKRUN | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
       "coop-taskrun,single-issuer,defer-taskrun"},
      {IORING_SETUP_COOP_TASKRUN, "coop-taskrun"},
      {0, "default"},
  };
  int rc = 0;
  for (const auto& [flags, name] : setups) {
    io_uring ring{};
    rc = InitRing(ring, 4, flags);
    if (rc == 0) {
      io_uring_queue_exit(&ring);
      return {"io_uring", "", flags, name};
    }
  }
  // rc: why even the plain setup was refused.
  if (wanted == "io_uring")
    throw std::runtime_error("--engine io_uring: the kernel refused io_uring (" + Errno(-rc) + ")");
  return {"psync", fmt::format("io_uring unavailable ({}): pread/pwrite, one I/O in flight per thread", Errno(-rc))};
}

struct ThreadStats {
  bool covered = false;  // a sequential writer issued a whole pass over its file
  uint64_t bytes = 0, ops = 0;
  double seconds = 0;
  LatencyHistogram hist;
  std::string error;
};

// What one I/O workload run shares between its threads.
struct IoRun {
  const IoWorkload* w = nullptr;
  const std::vector<fs::path>* files = nullptr;
  uint64_t file_size = 0;
  bool time_based = true;
  Clock::time_point start, ramp_end, deadline;
  std::string engine;
  unsigned ring_flags = 0;
  int iodepth = 1;
};

// A write's tag: the thread in the high bits, its write counter below.
uint64_t Tag(int tid, uint64_t counter) { return (static_cast<uint64_t>(tid) << 48) ^ counter; }

struct OpPicker {
  OpPicker(const IoRun& r, int tid)
      : run(r), rng(0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(tid)), blocks(r.file_size / r.w->block_size) {}
  // Next offset, or nullopt when a size-based thread has done its pass.
  std::optional<uint64_t> Next() {
    if (!run.time_based && issued >= blocks) return std::nullopt;
    ++issued;
    if (run.w->random) return std::uniform_int_distribution<uint64_t>(0, blocks - 1)(rng) * run.w->block_size;
    uint64_t off = next_seq;
    next_seq += run.w->block_size;
    if (next_seq + run.w->block_size > run.file_size) {
      next_seq = 0;  // time-based: wrap around
      wrapped = true;
    }
    return off;
  }
  const IoRun& run;
  std::mt19937_64 rng;
  uint64_t blocks, issued = 0, next_seq = 0;
  bool wrapped = false;
  // A buffered sequential workload that starts another pass over its file drops the file's page
  // cache first (as fio does on every loop with invalidate=1): a read pass reads the storage, not
  // memory, and a write pass starts writeback of the previous one instead of overwriting it in RAM.
  void AfterWrap(int fd) {
    if (wrapped && !run.w->direct) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    wrapped = false;
  }
};

bool StopIssuing(const IoRun& r, Clock::time_point now) { return Cancelled() || (r.time_based && now >= r.deadline); }

// A request counts when it completes inside the measured window [end of ramp, last completion],
// as in fio: the window's time starts at the end of the ramp, so a request in flight across it
// belongs to the window (counting by submission instead dropped up to iodepth x threads
// requests, 64 MiB of 1 MiB reads, about 2% of a 4 s run at 1 GB/s, while keeping their time).
void Account(const IoRun& r, ThreadStats& s, Clock::time_point submitted, Clock::time_point done, uint64_t n) {
  if (r.time_based && done < r.ramp_end) return;  // ramp: not counted
  s.bytes += n;
  ++s.ops;
  s.hist.Record(Nanos(done - submitted));
}

void RunPsync(const IoRun& r, int fd, int tid, ThreadStats& s) {
  AlignedBuffer buf(r.w->block_size, 1000 + tid);
  OpPicker pick(r, tid);
  uint64_t counter = 0;
  while (!StopIssuing(r, Clock::now())) {
    auto off = pick.Next();
    if (!off) break;
    pick.AfterWrap(fd);
    auto t0 = Clock::now();
    ssize_t n;
    if (r.w->write) {
      StampSectors(buf.data.get(), r.w->block_size, Tag(tid, ++counter));  // every sector unique
      n = ::pwrite(fd, buf.data.get(), r.w->block_size, static_cast<off_t>(*off));
    } else {
      n = ::pread(fd, buf.data.get(), r.w->block_size, static_cast<off_t>(*off));
    }
    auto t1 = Clock::now();
    if (n < 0) {
      s.error = fmt::format("{} at offset {}: {}", r.w->write ? "pwrite" : "pread", *off, Errno(errno));
      return;
    }
    if (static_cast<uint32_t>(n) != r.w->block_size) {
      s.error =
          fmt::format("short {} at offset {}: {} of {} bytes", r.w->write ? "write" : "read", *off, n, r.w->block_size);
      return;
    }
    Account(r, s, t0, t1, static_cast<uint64_t>(n));
  }
  s.covered = s.error.empty() && pick.issued >= pick.blocks;
}

void RunUring(const IoRun& r, int fd, int tid, ThreadStats& s) {
  io_uring ring{};
  int rc = InitRing(ring, static_cast<unsigned>(r.iodepth), r.ring_flags);
  if (rc < 0) {
    s.error = "io_uring_queue_init: " + Errno(-rc);
    return;
  }
  struct Slot {
    std::unique_ptr<AlignedBuffer> buf;
    Clock::time_point submitted;
    uint64_t offset = 0;
  };
  std::vector<Slot> slots(static_cast<size_t>(r.iodepth));
  std::vector<int> free_slots;
  for (int i = 0; i < r.iodepth; ++i) {
    slots[static_cast<size_t>(i)].buf = std::make_unique<AlignedBuffer>(r.w->block_size, 1000 + tid * 131 + i);
    free_slots.push_back(i);
  }
  OpPicker pick(r, tid);
  uint64_t counter = 0;
  int inflight = 0;
  bool done_issuing = false;
  while (true) {
    // Every free slot is refilled at once, one request per submission (fio's default,
    // iodepth_batch_submit=1): a page-cache miss reaches the device as soon as it is issued
    // instead of waiting behind the cache hits copied inline in a batch, which on a 2-CPU VM cost
    // about 10% of random 4 KiB buffered IOPS. Each submission also runs the completions
    // DEFER_TASKRUN held back, so finished misses free their slots promptly.
    while (!done_issuing && !free_slots.empty()) {
      auto now = Clock::now();  // deadline check and submission time of this request
      if (StopIssuing(r, now)) {
        done_issuing = true;
        break;
      }
      auto off = pick.Next();
      if (!off) {
        done_issuing = true;
        break;
      }
      pick.AfterWrap(fd);
      int i = free_slots.back();
      Slot& sl = slots[static_cast<size_t>(i)];
      io_uring_sqe* sqe = io_uring_get_sqe(&ring);
      if (r.w->write) {
        StampSectors(sl.buf->data.get(), r.w->block_size, Tag(tid, ++counter));
        io_uring_prep_write(sqe, fd, sl.buf->data.get(), r.w->block_size, *off);
      } else {
        io_uring_prep_read(sqe, fd, sl.buf->data.get(), r.w->block_size, *off);
      }
      io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(i));
      sl.offset = *off;
      sl.submitted = now;
      rc = io_uring_submit_and_get_events(&ring);
      if (rc < 0) {
        s.error = "io_uring_submit: " + Errno(-rc);
        done_issuing = true;
        break;
      }
      free_slots.pop_back();
      ++inflight;
    }
    if (inflight == 0) break;
    io_uring_cqe* cqe = nullptr;
    rc = io_uring_wait_cqe(&ring, &cqe);
    if (rc == -EINTR) continue;
    if (rc < 0) {
      s.error = "io_uring_wait_cqe: " + Errno(-rc);
      break;
    }
    // Reap everything that is ready.
    unsigned head;
    unsigned seen = 0;
    auto now = Clock::now();
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      int i = static_cast<int>(io_uring_cqe_get_data64(cqe));
      Slot& sl = slots[static_cast<size_t>(i)];
      --inflight;
      free_slots.push_back(i);
      if (cqe->res < 0) {
        if (s.error.empty())
          s.error = fmt::format("{} at offset {}: {}", r.w->write ? "write" : "read", sl.offset, Errno(-cqe->res));
        done_issuing = true;
      } else if (static_cast<uint32_t>(cqe->res) != r.w->block_size) {
        if (s.error.empty())
          s.error = fmt::format("short {} at offset {}: {} of {} bytes", r.w->write ? "write" : "read", sl.offset,
                                cqe->res, r.w->block_size);
        done_issuing = true;
      } else {
        Account(r, s, sl.submitted, now, static_cast<uint64_t>(cqe->res));
      }
    }
    io_uring_cq_advance(&ring, seen);
  }
  s.covered = s.error.empty() && pick.issued >= pick.blocks;
  // Drain whatever is still in flight after an error, so no buffer is freed under the kernel.
  while (inflight > 0) {
    io_uring_cqe* cqe = nullptr;
    if (io_uring_wait_cqe(&ring, &cqe) < 0) break;
    io_uring_cqe_seen(&ring, cqe);
    --inflight;
  }
  io_uring_queue_exit(&ring);
}

json RunIoWorkload(const IoWorkload& w, const StorageOptions& o, const std::vector<fs::path>& files, uint64_t file_size,
                   const Engine& engine, std::vector<bool>& written) {
  json out = {{"id", w.id},
              {"rw", w.random ? (w.write ? "randwrite" : "randread") : (w.write ? "write" : "read")},
              {"block_size", w.block_size},
              {"direct", w.direct},
              {"threads", w.threads},
              {"iodepth", engine.name == "io_uring" ? w.iodepth : 1},
              {"engine", engine.name},
              {"fadvise", w.random ? "random" : "sequential"}};
  // Direct I/O may be refused by the filesystem (tmpfs, some FUSE): not applicable, said why.
  std::vector<Fd> fds;
  for (int t = 0; t < w.threads; ++t) {
    const fs::path& f = files[static_cast<size_t>(t) % files.size()];
    int flags = (w.write ? O_WRONLY : O_RDONLY) | O_CLOEXEC | (w.direct ? O_DIRECT : 0);
    Fd fd(::open(f.c_str(), flags));
    if (!fd) {
      int e = errno;
      if (w.direct && e == EINVAL) {
        out["status"] = "not-applicable";
        out["reason"] = "the filesystem refuses O_DIRECT (EINVAL)";
      } else {
        out["status"] = "error";
        out["reason"] = fmt::format("open {}: {}", f.string(), Errno(e));
      }
      return out;
    }
    // The access pattern hint fio gives by default (fadvise_hint=1): no readahead for random
    // reads, whose IOPS would otherwise pay for pages nobody asked for.
    ::posix_fadvise(fd.get(), 0, 0, w.random ? POSIX_FADV_RANDOM : POSIX_FADV_SEQUENTIAL);
    fds.push_back(std::move(fd));
  }
  for (const auto& f : files) DropCache(f);

  IoRun r;
  r.w = &w;
  r.files = &files;
  r.file_size = file_size;
  r.time_based = o.duration_s > 0;
  r.engine = engine.name;
  r.ring_flags = engine.ring_flags;
  r.iodepth = std::max(1, w.iodepth);
  std::vector<ThreadStats> stats(static_cast<size_t>(w.threads));
  std::barrier sync(w.threads + 1);
  std::vector<std::thread> threads;
  std::vector<Clock::time_point> ends(static_cast<size_t>(w.threads));
  for (int t = 0; t < w.threads; ++t) {
    threads.emplace_back([&, t] {
      sync.arrive_and_wait();  // all threads start together, after r.start is set
      int fd = fds[static_cast<size_t>(t)].get();
      if (engine.name == "io_uring") {
        RunUring(r, fd, t, stats[static_cast<size_t>(t)]);
      } else {
        RunPsync(r, fd, t, stats[static_cast<size_t>(t)]);
      }
      // A buffered write is not done until it is on the storage: the flush is part of the time.
      if (w.write && !w.direct && stats[static_cast<size_t>(t)].error.empty() && ::fsync(fd) != 0) {
        stats[static_cast<size_t>(t)].error = "fsync: " + Errno(errno);
      }
      ends[static_cast<size_t>(t)] = Clock::now();
    });
  }
  r.start = Clock::now();
  r.ramp_end = r.time_based
                   ? r.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.ramp_s))
                   : r.start;
  r.deadline = r.ramp_end + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.duration_s));
  sync.arrive_and_wait();
  for (auto& th : threads) th.join();

  LatencyHistogram all;
  uint64_t bytes = 0, ops = 0;
  double longest = 0;
  json per_thread = json::array();
  std::vector<std::string> errors;
  for (int t = 0; t < w.threads; ++t) {
    auto& s = stats[static_cast<size_t>(t)];
    s.seconds = Seconds(ends[static_cast<size_t>(t)] - r.ramp_end);
    longest = std::max(longest, s.seconds);
    bytes += s.bytes;
    ops += s.ops;
    all.Merge(s.hist);
    per_thread.push_back({{"bytes", s.bytes}, {"ops", s.ops}, {"seconds", RoundTo(s.seconds, 4)}});
    if (!s.error.empty()) errors.push_back(fmt::format("thread {}: {}", t, s.error));
    if (w.write && !w.random && s.covered) written[static_cast<size_t>(t) % files.size()] = true;
  }
  out["bytes"] = bytes;
  out["ops"] = ops;
  out["seconds"] = RoundTo(longest, 4);
  out["bw_bytes_per_s"] = longest > 0 ? RoundTo(static_cast<double>(bytes) / longest, 0) : 0.0;
  out["iops"] = longest > 0 ? RoundTo(static_cast<double>(ops) / longest, 1) : 0.0;
  out["latency"] = all.SummaryUs();
  out["per_thread"] = per_thread;
  out["mode"] =
      r.time_based ? fmt::format("time-based: {} s after {} s ramp", o.duration_s, o.ramp_s) : "one pass over the data";
  if (!errors.empty()) {
    out["status"] = "error";
    out["reason"] = errors.front();
    out["errors"] = errors;
  } else if (Cancelled()) {
    out["status"] = "interrupted";
  } else if (ops == 0) {
    // Nothing was measured (a time-based run whose deadline passed before any request counted):
    // an error, never a 0 GB/s figure to grade.
    out["status"] = "error";
    out["reason"] =
        fmt::format("no I/O completed in the measured window ({}): raise --duration", out["mode"].get<std::string>());
  } else {
    out["status"] = "ok";
  }
  return out;
}

// Writes the data files the read workloads use (not measured), except those a sequential write
// workload already covered. (The size of a file says nothing: the files are preallocated.)
void LayOut(const std::vector<fs::path>& files, uint64_t file_size, std::vector<bool>& written) {
  AlignedBuffer buf(kMiB, 7);
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path& f = files[i];
    if (written[i]) continue;
    Fd fd(::open(f.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) throw std::runtime_error(fmt::format("open {}: {}", f.string(), Errno(errno)));
    for (uint64_t off = 0; off < file_size && !Cancelled(); off += kMiB) {
      StampSectors(buf.data.get(), kMiB, (uint64_t{i} << 48) ^ off);
      if (::pwrite(fd.get(), buf.data.get(), kMiB, static_cast<off_t>(off)) != static_cast<ssize_t>(kMiB)) {
        throw std::runtime_error(fmt::format("laying out {}: {}", f.string(), Errno(errno)));
      }
    }
    ::fsync(fd.get());
    written[i] = !Cancelled();
  }
}

// ---- checkpoint ----------------------------------------------------------------------------

struct BlockHeader {
  uint64_t magic, nonce, rank, shard, block;
};
constexpr uint64_t kMagic = 0x636d61782d636b70ull;  // "cmax-ckp"

json RunCheckpoint(const StorageOptions& o, Workspace& ws, int run_index) {
  fs::path dir = ws.MakeDir(fmt::format("checkpoint-{}", run_index));
  const int ranks = o.ckpt_ranks, shards = o.ckpt_shards;
  const uint64_t shard_size = o.ckpt_size / static_cast<uint64_t>(ranks * shards);
  const uint64_t nonce = std::random_device{}();
  auto path = [&](int r, int s) { return dir / fmt::format("rank{:04d}-shard{:03d}.bin", r, s); };
  for (int r = 0; r < ranks; ++r) {
    for (int s = 0; s < shards; ++s) ws.Track(path(r, s));
  }

  struct RankResult {
    double write_s = 0, read_s = 0;
    uint64_t written = 0, read = 0;
    std::string error;
  };
  std::vector<RankResult> res(static_cast<size_t>(ranks));
  auto phase = [&](bool write) {
    std::barrier sync(ranks + 1);
    std::vector<std::thread> th;
    for (int r = 0; r < ranks; ++r) {
      th.emplace_back([&, r] {
        RankResult& rr = res[static_cast<size_t>(r)];
        AlignedBuffer buf(o.ckpt_block, 5000 + r);
        sync.arrive_and_wait();
        auto t0 = Clock::now();
        for (int s = 0; s < shards && rr.error.empty() && !Cancelled(); ++s) {
          fs::path p = path(r, s);
          Fd fd(write ? ::open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600)
                      : ::open(p.c_str(), O_RDONLY | O_CLOEXEC));
          if (!fd) {
            rr.error = fmt::format("open {}: {}", p.string(), Errno(errno));
            break;
          }
          uint64_t block = 0;
          for (uint64_t off = 0; off < shard_size && !Cancelled(); off += o.ckpt_block, ++block) {
            size_t n = static_cast<size_t>(std::min<uint64_t>(o.ckpt_block, shard_size - off));
            if (write) {
              BlockHeader h{kMagic, nonce, static_cast<uint64_t>(r), static_cast<uint64_t>(s), block};
              StampSectors(buf.data.get(), n, nonce ^ (uint64_t(r) << 48) ^ (uint64_t(s) << 32) ^ block);
              std::memcpy(buf.data.get(), &h, std::min(n, sizeof h));
              ssize_t w = ::pwrite(fd.get(), buf.data.get(), n, static_cast<off_t>(off));
              if (w != static_cast<ssize_t>(n)) {
                rr.error = fmt::format("write {}: {}", p.string(), w < 0 ? Errno(errno) : "short write");
                break;
              }
              rr.written += n;
            } else {
              ssize_t got = ::pread(fd.get(), buf.data.get(), n, static_cast<off_t>(off));
              if (got != static_cast<ssize_t>(n)) {
                rr.error = fmt::format("read {}: {}", p.string(), got < 0 ? Errno(errno) : "short read");
                break;
              }
              BlockHeader h{};
              std::memcpy(&h, buf.data.get(), std::min(n, sizeof h));
              if (n >= sizeof h && (h.magic != kMagic || h.nonce != nonce || h.rank != static_cast<uint64_t>(r) ||
                                    h.shard != static_cast<uint64_t>(s) || h.block != block)) {
                rr.error =
                    fmt::format("data read back from {} does not match what was written (block {})", p.string(), block);
                break;
              }
              rr.read += n;
            }
          }
          // A checkpoint is saved when it is durable: fsync every shard, inside the timing.
          if (write && rr.error.empty() && ::fsync(fd.get()) != 0)
            rr.error = fmt::format("fsync {}: {}", p.string(), Errno(errno));
        }
        (write ? rr.write_s : rr.read_s) = Seconds(Clock::now() - t0);
      });
    }
    sync.arrive_and_wait();
    for (auto& t : th) t.join();
  };
  phase(true);
  bool write_ok = std::all_of(res.begin(), res.end(), [](const RankResult& r) { return r.error.empty(); });
  if (write_ok && !Cancelled()) {
    for (int r = 0; r < ranks; ++r) {
      for (int s = 0; s < shards; ++s) DropCache(path(r, s));
    }
    phase(false);
  }
  for (int r = 0; r < ranks; ++r) {
    for (int s = 0; s < shards; ++s) ::unlink(path(r, s).c_str());  // keep at most one run on disk
  }

  auto summarize = [&](bool write) {
    uint64_t bytes = 0;
    double slowest = 0;
    int slowest_rank = 0;
    json per_rank = json::array();
    for (int r = 0; r < ranks; ++r) {
      const auto& rr = res[static_cast<size_t>(r)];
      double s = write ? rr.write_s : rr.read_s;
      uint64_t b = write ? rr.written : rr.read;
      bytes += b;
      if (s > slowest) slowest = s, slowest_rank = r;
      per_rank.push_back(
          {{"rank", r}, {"bytes", b}, {"seconds", RoundTo(s, 4)}, {"gbps", s > 0 ? RoundTo(b / s / 1e9, 3) : 0.0}});
    }
    const auto& sr = res[static_cast<size_t>(slowest_rank)];
    uint64_t sb = write ? sr.written : sr.read;
    return json{{"bytes", bytes},
                {"seconds", RoundTo(slowest, 4)},
                {"aggregate_gbps", slowest > 0 ? RoundTo(bytes / slowest / 1e9, 3) : 0.0},
                {"slowest_rank",
                 {{"rank", slowest_rank},
                  {"seconds", RoundTo(slowest, 4)},
                  {"gbps", slowest > 0 ? RoundTo(sb / slowest / 1e9, 3) : 0.0}}},
                {"per_rank", per_rank}};
  };
  json out = {{"run", run_index}, {"write", summarize(true)}, {"read", summarize(false)}};
  std::vector<std::string> errors;
  for (int r = 0; r < ranks; ++r) {
    if (!res[static_cast<size_t>(r)].error.empty())
      errors.push_back(fmt::format("rank {}: {}", r, res[static_cast<size_t>(r)].error));
  }
  if (!errors.empty()) {
    out["status"] = "error";
    out["reason"] = errors.front();
    out["errors"] = errors;
  } else {
    out["status"] = Cancelled() ? "interrupted" : "ok";
  }
  return out;
}

json Checkpoint(const StorageOptions& o, Workspace& ws) {
  json runs = json::array();
  double wsum = 0, rsum = 0;
  int ok = 0;
  std::string status = "ok", reason;
  for (int i = 0; i < o.ckpt_runs && !Cancelled(); ++i) {
    if (o.progress)
      o.progress(fmt::format("checkpoint run {} of {}: {} ranks x {} shards", i + 1, o.ckpt_runs, o.ckpt_ranks,
                             o.ckpt_shards));
    json r = RunCheckpoint(o, ws, i);
    if (r["status"] == "ok") {
      wsum += r["write"]["aggregate_gbps"].get<double>();
      rsum += r["read"]["aggregate_gbps"].get<double>();
      ++ok;
    } else if (status == "ok") {
      status = r["status"];
      reason = r.value("reason", "");
    }
    runs.push_back(std::move(r));
  }
  if (Cancelled() && status == "ok") status = "interrupted";
  json out = {{"status", status},
              {"ranks", o.ckpt_ranks},
              {"shards_per_rank", o.ckpt_shards},
              {"shard_bytes", o.ckpt_size / static_cast<uint64_t>(o.ckpt_ranks * o.ckpt_shards)},
              {"request_bytes", o.ckpt_block},
              {"fsync", "every shard, inside the write time"},
              {"runs", runs}};
  if (!reason.empty()) out["reason"] = reason;
  if (ok > 0) {
    out["write_gbps_mean"] = RoundTo(wsum / ok, 3);
    out["read_gbps_mean"] = RoundTo(rsum / ok, 3);
  }
  return out;
}

// ---- metadata ------------------------------------------------------------------------------

json Metadata(const StorageOptions& o, Workspace& ws) {
  fs::path top = ws.MakeDir("metadata");
  std::vector<fs::path> dirs;
  for (int d = 0; d < o.meta_dirs; ++d) dirs.push_back(ws.MakeDir(fmt::format("metadata/d{:04d}", d)));
  const int per_dir = o.meta_files / o.meta_dirs;
  const int threads = o.meta_threads;
  // Thread t works on directories t, t+T, ...; paths are built before the timing starts.
  std::vector<std::vector<std::string>> paths(static_cast<size_t>(threads));
  for (int d = 0; d < o.meta_dirs; ++d) {
    for (int f = 0; f < per_dir; ++f) {
      std::string p = (dirs[static_cast<size_t>(d)] / fmt::format("f{:06d}.dat", f)).string();
      ws.Track(p);
      paths[static_cast<size_t>(d % threads)].push_back(std::move(p));
    }
  }
  const uint64_t total_files = static_cast<uint64_t>(per_dir) * static_cast<uint64_t>(o.meta_dirs);

  json phases = json::array();
  std::string status = "ok", reason;
  auto phase = [&](const std::string& id, const std::string& what, auto op) {
    if (Cancelled() || status != "ok") return;
    if (o.progress) o.progress(fmt::format("metadata: {} ({} files)", id, total_files));
    std::vector<ThreadStats> st(static_cast<size_t>(threads));
    std::barrier sync(threads + 1);
    std::vector<std::thread> th;
    std::vector<Clock::time_point> ends(static_cast<size_t>(threads));
    for (int t = 0; t < threads; ++t) {
      th.emplace_back([&, t] {
        AlignedBuffer buf(std::max<uint32_t>(o.meta_file_size, 1), 9000 + t);
        ThreadStats& s = st[static_cast<size_t>(t)];
        sync.arrive_and_wait();
        for (const auto& p : paths[static_cast<size_t>(t)]) {
          if (Cancelled()) break;
          auto t0 = Clock::now();
          std::string err = op(p, buf);
          auto t1 = Clock::now();
          if (!err.empty()) {
            s.error = err;
            break;
          }
          ++s.ops;
          s.hist.Record(Nanos(t1 - t0));
        }
        ends[static_cast<size_t>(t)] = Clock::now();
      });
    }
    auto start = Clock::now();
    sync.arrive_and_wait();
    for (auto& x : th) x.join();
    LatencyHistogram all;
    uint64_t ops = 0;
    double longest = 0;
    for (int t = 0; t < threads; ++t) {
      auto& s = st[static_cast<size_t>(t)];
      all.Merge(s.hist);
      ops += s.ops;
      longest = std::max(longest, Seconds(ends[static_cast<size_t>(t)] - start));
      if (!s.error.empty() && status == "ok") status = "error", reason = fmt::format("{}: {}", id, s.error);
    }
    phases.push_back({{"id", id},
                      {"what", what},
                      {"ops", ops},
                      {"seconds", RoundTo(longest, 4)},
                      {"ops_per_s", longest > 0 ? RoundTo(ops / longest, 1) : 0.0},
                      {"latency", all.SummaryUs()}});
  };
  const uint32_t size = o.meta_file_size;
  phase("create", "open(O_CREAT|O_EXCL) + write + close", [&](const std::string& p, AlignedBuffer& b) -> std::string {
    Fd fd(::open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600));
    if (!fd) return fmt::format("create {}: {}", p, Errno(errno));
    // Every file's content is its own: small files a dedup array folds into one would make the
    // create phase look faster than it is (a file under one sector gets the tag at its start).
    const uint64_t tag = std::hash<std::string>{}(p);
    StampSectors(b.data.get(), size, tag);
    if (size < 512 && size >= sizeof tag) std::memcpy(b.data.get(), &tag, sizeof tag);
    if (size && ::write(fd.get(), b.data.get(), size) != static_cast<ssize_t>(size))
      return fmt::format("write {}: {}", p, Errno(errno));
    return "";
  });
  phase("stat", "stat", [&](const std::string& p, AlignedBuffer&) -> std::string {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) return fmt::format("stat {}: {}", p, Errno(errno));
    if (static_cast<uint64_t>(st.st_size) != size)
      return fmt::format("stat {}: size {} instead of {}", p, st.st_size, size);
    return "";
  });
  phase("open-read", "open + read whole file + close (the small-file open of performance.md 7.3)",
        [&](const std::string& p, AlignedBuffer& b) -> std::string {
          Fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
          if (!fd) return fmt::format("open {}: {}", p, Errno(errno));
          ssize_t n = size ? ::read(fd.get(), b.data.get(), size) : 0;
          if (n != static_cast<ssize_t>(size))
            return fmt::format("read {}: {}", p, n < 0 ? Errno(errno) : "short read");
          return "";
        });
  phase("open-missing", "open of a name that does not exist (ENOENT expected)",
        [&](const std::string& p, AlignedBuffer&) -> std::string {
          std::string missing = p + ".absent";
          int fd = ::open(missing.c_str(), O_RDONLY | O_CLOEXEC);
          if (fd >= 0) {
            ::close(fd);
            return fmt::format("{} exists", missing);
          }
          if (errno != ENOENT) return fmt::format("open {}: {} (ENOENT expected)", missing, Errno(errno));
          return "";
        });
  phase("unlink", "unlink", [&](const std::string& p, AlignedBuffer&) -> std::string {
    if (::unlink(p.c_str()) != 0) return fmt::format("unlink {}: {}", p, Errno(errno));
    return "";
  });
  if (Cancelled() && status == "ok") status = "interrupted";
  json out = {{"status", status},
              {"files", total_files},
              {"directories", o.meta_dirs},
              {"file_bytes", size},
              {"threads", threads},
              {"cache", "warm: the files were just created by this node (a cold-cache figure needs a second node)"},
              {"phases", phases}};
  if (!reason.empty()) out["reason"] = reason;
  return out;
}

bool Selected(const StorageOptions& o, const std::string& id, const std::string& group) {
  if (o.tests.empty()) return true;
  return std::find(o.tests.begin(), o.tests.end(), id) != o.tests.end() ||
         std::find(o.tests.begin(), o.tests.end(), group) != o.tests.end();
}

}  // namespace

std::vector<IoWorkload> DefaultIoWorkloads() {
  // Block sizes and direct flags from the 3.0 fio profiles; queue depths and thread counts are
  // performance.md's "ours" values (seq: 8 jobs x QD64; random: 16 jobs x QD64).
  return {
      {"seq-write-1m-direct", true, false, true, 1u << 20, 8, 64},
      {"seq-write-1m-buffered", true, false, false, 1u << 20, 8, 64},
      {"seq-read-1m-direct", false, false, true, 1u << 20, 8, 64},
      {"seq-read-1m-buffered", false, false, false, 1u << 20, 8, 64},
      {"rand-read-4k-buffered", false, true, false, 4096, 16, 64},
      {"rand-read-64k-direct", false, true, true, 65536, 16, 64},
  };
}

void ValidateStorageOptions(const StorageOptions& o) {
  auto bad = [](const std::string& m) { throw std::invalid_argument(m); };
  if (o.files < 1 || o.files > 1024) bad("--files must be 1 to 1024");
  if (o.size < static_cast<uint64_t>(o.files) * kMiB) bad("--size must give every data file at least 1 MiB");
  if (o.duration_s < 0 || o.ramp_s < 0) bad("--duration and --ramp must not be negative");
  if (o.threads && (*o.threads < 1 || *o.threads > 1024)) bad("--threads must be 1 to 1024");
  if (o.iodepth && (*o.iodepth < 1 || *o.iodepth > 4096)) bad("--iodepth must be 1 to 4096");
  if (o.engine != "auto" && o.engine != "io_uring" && o.engine != "psync")
    bad("--engine must be auto, io_uring or psync");
  if (o.ckpt_ranks < 1 || o.ckpt_shards < 1 || o.ckpt_runs < 1)
    bad("checkpoint ranks, shards and runs must be at least 1");
  if (o.ckpt_block < kAlign || o.ckpt_block % kAlign) bad("the checkpoint request size must be a multiple of 4 KiB");
  if (o.ckpt_size / static_cast<uint64_t>(o.ckpt_ranks * o.ckpt_shards) < kAlign)
    bad("--checkpoint-size is too small for the ranks and shards");
  if (o.meta_threads < 1 || o.meta_dirs < 1 || o.meta_files < o.meta_dirs)
    bad("metadata: threads >= 1, dirs >= 1, files >= dirs");
  std::set<std::string> known = {"io", "checkpoint", "metadata"};
  for (const auto& w : DefaultIoWorkloads()) known.insert(w.id);
  for (const auto& t : o.tests) {
    if (!known.count(t)) bad(fmt::format("unknown storage test '{}' (known: {})", t, fmt::join(known, ", ")));
  }
}

uint64_t StorageFootprint(const StorageOptions& o) {
  uint64_t need = 0;
  bool io = false;
  for (const auto& w : DefaultIoWorkloads()) io = io || Selected(o, w.id, "io");
  if (io) need += o.size;
  if (Selected(o, "checkpoint", "checkpoint")) need += o.ckpt_size;
  if (Selected(o, "metadata", "metadata")) {
    uint64_t per_file = (static_cast<uint64_t>(o.meta_file_size) + kAlign - 1) / kAlign * kAlign + kAlign;
    need += per_file * static_cast<uint64_t>(o.meta_files);
  }
  return need;
}

// Makes every 512-byte sector of a block unique: its last 16 bytes get the write's tag and the
// sector's offset (fio's scramble_buffers does the like). Without it the blocks of a buffer that is
// filled once differ only where a counter is written, and a deduplicating array (VAST, Pure, ZFS
// with dedup) would store one copy and report a speed no checkpoint gets. About 2,000 16-byte
// stores per MiB, nothing next to the copy. The first bytes of a block stay free for headers.
void StampSectors(char* p, size_t n, uint64_t tag) {
  constexpr size_t kSector = 512;
  for (size_t off = 0; off + kSector <= n; off += kSector) {
    const uint64_t v[2] = {tag, off};
    std::memcpy(p + off + kSector - sizeof v, v, sizeof v);
  }
}

json RunStorageBench(const StorageOptions& given) {
  ValidateStorageOptions(given);
  // Steps, for the progress estimate: each I/O workload, each checkpoint run, the five metadata phases.
  int steps = 0;
  for (const auto& w : DefaultIoWorkloads()) steps += Selected(given, w.id, "io");
  if (Selected(given, "checkpoint", "checkpoint")) steps += given.ckpt_runs;
  if (Selected(given, "metadata", "metadata")) steps += 5;
  StorageOptions o = given;
  o.progress = CountingSteps(given.progress, given.fraction, steps);
  fs::path base = fs::absolute(o.path);
  SpaceInfo space = QuerySpace(base);
  uint64_t need = StorageFootprint(o);
  RequireFreeSpace(base, need, "data files + checkpoint + small files");

  auto started = std::chrono::system_clock::now();
  Engine engine = PickEngine(o.engine);
  Workspace ws(base);
  json out = {
      {"kind", "clustermax.bench.storage"},
      {"schema_version", 1},
      {"tool_version", std::string(core::kToolVersion)},
      {"started", util::FormatRfc3339(started)},
      {"path", base.string()},
      {"workspace", ws.root().string()},
      {"filesystem", {{"type", space.fs_type}, {"free_bytes", space.free_bytes}, {"total_bytes", space.total_bytes}}},
      {"engine", engine.name},
      {"options",
       {{"size", o.size},
        {"files", o.files},
        {"duration_s", o.duration_s},
        {"ramp_s", o.duration_s > 0 ? o.ramp_s : 0.0},
        {"footprint_bytes", need}}}};
  if (!engine.note.empty()) out["engine_note"] = engine.note;
  if (engine.name == "io_uring") out["io_uring_setup"] = engine.ring_setup;
  std::string host = util::Hostname();
  out["host"] = host;

  try {
    // I/O workloads over one set of data files.
    json workloads = json::array();
    std::vector<IoWorkload> selected;
    for (auto w : DefaultIoWorkloads()) {
      if (!Selected(o, w.id, "io")) continue;
      if (!w.random) w.threads = o.files;
      if (w.random && o.threads) w.threads = *o.threads;
      if (o.iodepth) w.iodepth = *o.iodepth;
      selected.push_back(w);
    }
    if (!selected.empty()) {
      fs::path dir = ws.MakeDir("data");
      uint64_t file_size = o.size / static_cast<uint64_t>(o.files) / kMiB * kMiB;
      std::vector<fs::path> files;
      for (int i = 0; i < o.files; ++i) {
        fs::path p = dir / fmt::format("data{:03d}.bin", i);
        ws.Track(p);
        Fd fd(::open(p.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600));
        if (!fd) throw std::runtime_error(fmt::format("create {}: {}", p.string(), Errno(errno)));
        // Preallocated, as fio does: write workloads measure writing, not block allocation. Where the
        // filesystem cannot (EOPNOTSUPP on some network filesystems) the file simply grows.
        ::posix_fallocate(fd.get(), 0, static_cast<off_t>(file_size));
        files.push_back(p);
      }
      out["options"]["file_bytes"] = file_size;
      // Buffered figures are memory speed once the data fits in the page cache (after the first
      // pass of a time-based run): say so, and the grades then use the direct workloads only.
      uint64_t ram = static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
      bool fits = file_size * static_cast<uint64_t>(o.files) < 2 * ram;
      out["options"]["memory_bytes"] = ram;
      out["options"]["fits_in_page_cache"] = fits;
      if (fits) {
        out["cache_note"] = fmt::format(
            "the data ({} MiB) is smaller than twice the memory ({} MiB): buffered workloads measure the page cache after "
            "their first pass; graded figures come from the direct workloads (use --size of at least twice the memory "
            "for buffered storage figures)",
            file_size * static_cast<uint64_t>(o.files) / kMiB, 2 * ram / kMiB);
      }
      bool laid_out = false;
      std::vector<bool> written(files.size(), false);
      for (const auto& w : selected) {
        if (Cancelled()) break;
        if (!w.write && !laid_out) {
          // Completes whatever a (time-based or failed) write workload left short; not measured.
          auto pending = std::count(written.begin(), written.end(), false);
          if (o.progress && pending)
            o.progress(fmt::format("laying out {} data files of {} MiB (not measured)", pending, file_size / kMiB));
          LayOut(files, file_size, written);
          laid_out = true;
        }
        if (o.progress)
          o.progress(fmt::format("{}: {} threads, queue depth {}", w.id, w.threads,
                                 engine.name == "io_uring" ? w.iodepth : 1));
        workloads.push_back(RunIoWorkload(w, o, files, file_size, engine, written));
      }
      out["workloads"] = workloads;
    }
    if (Selected(o, "checkpoint", "checkpoint") && !Cancelled()) out["checkpoint"] = Checkpoint(o, ws);
    if (Selected(o, "metadata", "metadata") && !Cancelled()) out["metadata"] = Metadata(o, ws);
  } catch (...) {
    ws.Cleanup();
    throw;
  }
  out["interrupted"] = Cancelled();
  out["seconds"] = RoundTo(std::chrono::duration<double>(std::chrono::system_clock::now() - started).count(), 3);
  out["cleanup"] = ws.Cleanup().ToJson();
  return out;
}

}  // namespace clustermax::bench
