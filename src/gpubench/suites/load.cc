// Helper suite "load": a model's files read from storage into GPU memory on c.device, as a loader
// does (bench lifecycle --model-to-gpu): `threads` readers take 16 MiB pieces, pread them into
// pinned host buffers (two per reader, so a read overlaps the previous piece's copy) and copy them
// to one device buffer on their own stream. Every piece is checked where it landed: the device's
// checksum of the piece (LaunchWordHash) against the host's of the bytes read.
//
// Item: {"kind": "load", "path" (a file or a directory, every regular file below it; links to
// files followed, to directories not), "threads" (default 8), "drop_cache" (posix_fadvise
// DONTNEED on every file first: a cold read), "max_device_mb" (the device buffer's cap; past it
// the buffer is reused from its start and nothing is checked)}.
// Result: {"files", "bytes", "seconds", "gbps", "device_bytes", "wrapped", "checked_pieces",
// "bad_pieces"} or an error.
#include "gpubench/harness.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

namespace clustermax::gpubench {
namespace {
namespace fs = std::filesystem;

constexpr uint64_t kPiece = 16u << 20;
constexpr uint64_t kAlign = 256;  // each file starts on a 256-byte boundary, as tensors do

// The host's twin of LaunchWordHash: the sum mod 2^64 of Mix64((index << 32) ^ word) over the
// words of `bytes` bytes (the last word padded with zeros).
uint64_t HostWordHash(const unsigned char* p, size_t bytes) {
  auto mix = [](uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  uint64_t acc = 0;
  const size_t whole = bytes / 4;
  for (size_t i = 0; i < whole; ++i) {
    uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);  // the device reads the same little-endian words
    acc += mix((static_cast<uint64_t>(i) << 32) ^ w);
  }
  if (bytes % 4) {
    uint32_t w = 0;
    std::memcpy(&w, p + 4 * whole, bytes % 4);
    acc += mix((static_cast<uint64_t>(whole) << 32) ^ w);
  }
  return acc;
}

struct Piece {
  size_t file;
  uint64_t offset, len, device_at;
};

json RunLoad(Context& c, const json& item) {
  fs::path root = item.at("path").get<std::string>();
  int threads = std::clamp(item.value("threads", 8), 1, 64);
  std::vector<std::pair<fs::path, uint64_t>> files;
  std::error_code ec;
  auto add = [&](const fs::path& f) {
    std::error_code e;
    uint64_t size = fs::file_size(f, e);
    if (!e) files.push_back({f, size});
  };
  if (fs::is_regular_file(root, ec)) {
    add(root);
  } else {
    for (fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec))
      if (it->is_regular_file(ec)) add(it->path());
  }
  if (files.empty()) throw Failure("no readable file under " + root.string(), false);
  std::vector<Piece> pieces;
  uint64_t total = 0, layout = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    layout = (layout + kAlign - 1) / kAlign * kAlign;
    for (uint64_t o = 0; o < files[f].second; o += kPiece)
      pieces.push_back({f, o, std::min(kPiece, files[f].second - o), layout + o});
    layout += files[f].second;
    total += files[f].second;
  }
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  // The whole layout (and the last word's padding) when it fits in the budget; else the budget,
  // reused from its start.
  const uint64_t need = (layout + 4 + kAlign - 1) / kAlign * kAlign;
  uint64_t budget = free_b > (2ull << 30) ? free_b - (2ull << 30) : free_b / 2;
  if (item.contains("max_device_mb")) budget = std::min<uint64_t>(budget, item["max_device_mb"].get<uint64_t>() << 20);
  budget = std::max<uint64_t>(budget / kAlign * kAlign, kPiece + kAlign);
  const uint64_t cap = std::min(need, budget);
  const bool wrapped = need > cap;
  DevPtr dev = Alloc(cap);
  CK(cudaMemsetAsync(dev.get(), 0, cap, c.stream));
  CK(cudaStreamSynchronize(c.stream));
  if (item.value("drop_cache", false)) {
    for (const auto& [f, size] : files) {
      int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        ::close(fd);
      }
    }
  }

  // Every reader's stream, two pinned buffers, their events and checksum slots, made before the
  // clock starts (pinning memory takes milliseconds a loader pays once).
  struct Slot {
    HostPtr buf;
    cudaEvent_t done = nullptr;
    uint64_t expect = 0;
    bool busy = false;
  };
  struct Reader {
    cudaStream_t stream = nullptr;
    Slot slot[2];
    DevPtr dhash;   // the device's checksums of the two pieces in flight
    HostPtr hhash;  // and where they are copied back (pinned)
  };
  std::vector<Reader> readers(threads);
  struct Cleanup {
    std::vector<Reader>& r;
    ~Cleanup() {
      for (auto& x : r) {
        for (auto& sl : x.slot)
          if (sl.done) cudaEventDestroy(sl.done);
        if (x.stream) cudaStreamDestroy(x.stream);
      }
    }
  } cleanup{readers};
  for (auto& r : readers) {
    CK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
    for (auto& sl : r.slot) {
      void* p = nullptr;
      CK(cudaMallocHost(&p, kPiece + 8));
      sl.buf.reset(p);
      CK(cudaEventCreateWithFlags(&sl.done, cudaEventDisableTiming));
    }
    r.dhash = Alloc(2 * sizeof(unsigned long long));
    void* p = nullptr;
    CK(cudaMallocHost(&p, 2 * sizeof(unsigned long long)));
    r.hhash.reset(p);
  }

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::atomic<int> bad{0}, checked{0};
  std::mutex mu;
  std::string failure;
  auto* base = static_cast<unsigned char*>(dev.get());
  auto reader = [&](Reader& r) {
    try {
      CK(cudaSetDevice(c.device));
      auto* hh = static_cast<unsigned long long*>(r.hhash.get());
      auto* dh = static_cast<unsigned long long*>(r.dhash.get());
      auto settle = [&](int k) {
        Slot& sl = r.slot[k];
        if (!sl.busy) return;
        CK(cudaEventSynchronize(sl.done));
        sl.busy = false;
        if (!wrapped) {
          ++checked;
          if (hh[k] != sl.expect) ++bad;
        }
      };
      int k = 0;
      for (size_t i; (i = next++) < pieces.size(); k ^= 1) {
        settle(k);
        Slot& sl = r.slot[k];
        const Piece& p = pieces[i];
        int fd = ::open(files[p.file].first.c_str(), O_RDONLY | O_CLOEXEC);
        uint64_t done = 0;
        auto* buf = static_cast<unsigned char*>(sl.buf.get());
        while (fd >= 0 && done < p.len) {
          ssize_t n = ::pread(fd, buf + done, p.len - done, static_cast<off_t>(p.offset + done));
          if (n <= 0) break;
          done += static_cast<uint64_t>(n);
        }
        if (fd >= 0) ::close(fd);
        if (done < p.len)
          throw Failure(files[p.file].first.string() + ": short read at " + std::to_string(p.offset + done), false);
        // Wrapped: the buffer reused from its start, every piece still whole inside it.
        const uint64_t at = wrapped ? p.device_at % (cap - kPiece) : p.device_at;
        CK(cudaMemcpyAsync(base + at, buf, p.len, cudaMemcpyHostToDevice, r.stream));
        if (!wrapped) {
          // The piece's words where it landed; a tail shorter than a word reads zeros past it (the
          // buffer was zeroed and the next file starts on the next 256-byte boundary).
          CK(LaunchWordHash(reinterpret_cast<const uint32_t*>(base + at), (p.len + 3) / 4, dh + k, r.stream));
          CK(cudaMemcpyAsync(hh + k, dh + k, sizeof *dh, cudaMemcpyDeviceToHost, r.stream));
          sl.expect = HostWordHash(buf, p.len);  // while the copy runs
        }
        CK(cudaEventRecord(sl.done, r.stream));
        sl.busy = true;
        bytes += p.len;
      }
      settle(0);
      settle(1);
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> l(mu);
      if (failure.empty()) failure = e.what();
      next = pieces.size();
    }
  };
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (auto& r : readers) pool.emplace_back(reader, std::ref(r));
  for (auto& t : pool) t.join();
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CK(cudaSetDevice(c.device));
  if (!failure.empty()) throw Failure(failure, false);
  return {{"files", files.size()},
          {"bytes", bytes.load()},
          {"seconds", sec},
          {"gbps", sec > 0 ? static_cast<double>(bytes.load()) / sec / 1e9 : 0.0},
          {"device_bytes", cap},
          {"wrapped", wrapped},
          {"checked_pieces", checked.load()},
          {"bad_pieces", bad.load()},
          {"threads", threads}};
}

}  // namespace

extern const HelperSuite kLoadSuite = {"load", RunLoad};

}  // namespace clustermax::gpubench
