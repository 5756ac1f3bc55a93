// Helper suite "load": a model's files read from storage into GPU memory on c.device, as a loader
// does (bench lifecycle --model-to-gpu): `threads` readers take 16 MiB pieces, pread them into
// pinned host buffers (two per reader, so a read overlaps the previous piece's copy) and copy them
// to one device buffer on their own stream, where the device checksums each piece
// (LaunchWordHash, a few microseconds a piece). Only that is timed. Afterwards, untimed, the
// pieces are read again and the host's checksums compared with the device's: a piece that
// differs arrived wrong.
//
// Item: {"kind": "load", "path" (a file or a directory, every regular file below it; links to
// files followed, to directories not), "threads" (default 8), "drop_cache" (posix_fadvise
// DONTNEED on every file first: a cold read), "max_device_mb" (the device buffer's cap; past it
// the buffer is reused from its start and nothing is checked)}.
// Result: {"files", "bytes", "seconds", "gbps", "device_bytes", "wrapped", "checked_pieces",
// "bad_pieces", "threads"} or an error.
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

uint64_t Mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The host's twin of LaunchWordHash: the sum mod 2^64 of Mix64(Mix64(index) ^ word) over the
// little-endian 32-bit words of `bytes` bytes (the last word padded with zeros).
uint64_t HostWordHash(const unsigned char* p, size_t bytes) {
  uint64_t acc = 0;
  const size_t whole = bytes / 4;
  for (size_t i = 0; i < whole; ++i) {
    uint32_t w;
    std::memcpy(&w, p + 4 * i, 4);
    acc += Mix64(Mix64(i) ^ w);
  }
  if (bytes % 4) {
    uint32_t w = 0;
    std::memcpy(&w, p + 4 * whole, bytes % 4);
    acc += Mix64(Mix64(whole) ^ w);
  }
  return acc;
}

// Reads a piece whole into buf; false on a short read.
bool ReadPiece(const fs::path& f, uint64_t offset, uint64_t len, unsigned char* buf) {
  int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
  uint64_t done = 0;
  while (fd >= 0 && done < len) {
    ssize_t n = ::pread(fd, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n <= 0) break;
    done += static_cast<uint64_t>(n);
  }
  if (fd >= 0) ::close(fd);
  return done == len;
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
  uint64_t layout = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    layout = (layout + kAlign - 1) / kAlign * kAlign;
    for (uint64_t o = 0; o < files[f].second; o += kPiece)
      pieces.push_back({f, o, std::min(kPiece, files[f].second - o), layout + o});
    layout += files[f].second;
  }
  size_t free_b = 0, total_b = 0;
  CK(cudaMemGetInfo(&free_b, &total_b));
  // The whole layout (and the last word's padding) when it fits in the budget; else the budget,
  // reused from its start.
  const uint64_t need = (layout + 4 + kAlign - 1) / kAlign * kAlign;
  uint64_t budget = free_b > (2ull << 30) ? free_b - (2ull << 30) : free_b / 2;
  if (item.contains("max_device_mb")) {
    int64_t mb = item["max_device_mb"].get<int64_t>();
    if (mb < 1 || mb > (int64_t{1} << 30)) throw Failure("max_device_mb: from 1", false);
    budget = std::min<uint64_t>(budget, static_cast<uint64_t>(mb) << 20);
  }
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

  // Every reader's stream, two pinned buffers and their events, made before the clock starts
  // (pinning memory takes milliseconds a loader pays once); one device checksum per piece.
  struct Slot {
    HostPtr buf;
    cudaEvent_t done = nullptr;
    bool busy = false;
  };
  struct Reader {
    cudaStream_t stream = nullptr;
    Slot slot[2];
  };
  std::vector<Reader> readers(threads);
  struct Cleanup {
    std::vector<Reader>& r;
    ~Cleanup() {
      for (auto& x : r) {
        if (x.stream) cudaStreamSynchronize(x.stream);  // nothing in flight on buffers about to be freed
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
      CK(cudaMallocHost(&p, kPiece));
      sl.buf.reset(p);
      CK(cudaEventCreateWithFlags(&sl.done, cudaEventDisableTiming));
    }
  }
  DevPtr dsums = Alloc(pieces.size() * sizeof(unsigned long long));
  auto* ds = static_cast<unsigned long long*>(dsums.get());

  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes{0};
  std::mutex mu;
  std::string failure;
  auto fail = [&](const std::string& why) {
    std::lock_guard<std::mutex> l(mu);
    if (failure.empty()) failure = why;
    next = pieces.size();
  };
  auto* base = static_cast<unsigned char*>(dev.get());
  auto reader = [&](Reader& r) {
    try {
      CK(cudaSetDevice(c.device));
      int k = 0;
      for (size_t i; (i = next++) < pieces.size(); k ^= 1) {
        Slot& sl = r.slot[k];
        if (sl.busy) CK(cudaEventSynchronize(sl.done));  // its previous copy has left the buffer
        const Piece& p = pieces[i];
        auto* buf = static_cast<unsigned char*>(sl.buf.get());
        if (!ReadPiece(files[p.file].first, p.offset, p.len, buf))
          throw Failure(files[p.file].first.string() + ": short read at " + std::to_string(p.offset), false);
        // Wrapped: the buffer reused from its start, every piece still whole inside it.
        const uint64_t at = wrapped ? p.device_at % (cap - kPiece) : p.device_at;
        CK(cudaMemcpyAsync(base + at, buf, p.len, cudaMemcpyHostToDevice, r.stream));
        // The piece's words where it landed; a tail shorter than a word reads zeros past it (the
        // buffer was zeroed and the next file starts on the next 256-byte boundary).
        if (!wrapped)
          CK(LaunchWordHash(reinterpret_cast<const uint32_t*>(base + at), (p.len + 3) / 4, ds + i, r.stream));
        CK(cudaEventRecord(sl.done, r.stream));
        sl.busy = true;
        bytes += p.len;
      }
      CK(cudaStreamSynchronize(r.stream));
    } catch (const std::exception& e) {
      cudaStreamSynchronize(r.stream);
      fail(e.what());
    }
  };
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (auto& r : readers) pool.emplace_back(reader, std::ref(r));
  for (auto& t : pool) t.join();
  double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CK(cudaSetDevice(c.device));
  if (!failure.empty()) throw Failure(failure, false);

  // Untimed: every piece read again and checksummed on the host, against the device's sum.
  int checked = 0, bad = 0;
  if (!wrapped) {
    std::vector<unsigned long long> got(pieces.size());
    CK(cudaMemcpy(got.data(), ds, got.size() * sizeof got[0], cudaMemcpyDeviceToHost));
    std::atomic<size_t> at{0};
    std::atomic<int> n_checked{0}, n_bad{0};
    auto verify = [&] {
      std::vector<unsigned char> buf(kPiece);
      for (size_t i; (i = at++) < pieces.size();) {
        const Piece& p = pieces[i];
        if (!ReadPiece(files[p.file].first, p.offset, p.len, buf.data())) {
          fail(files[p.file].first.string() + ": short read while checking at " + std::to_string(p.offset));
          at = pieces.size();
          return;
        }
        ++n_checked;
        if (HostWordHash(buf.data(), p.len) != got[i]) ++n_bad;
      }
    };
    std::vector<std::thread> checkers;
    for (int t = 0; t < threads; ++t) checkers.emplace_back(verify);
    for (auto& t : checkers) t.join();
    if (!failure.empty()) throw Failure(failure, false);
    checked = n_checked;
    bad = n_bad;
  }
  return {{"files", files.size()},
          {"bytes", bytes.load()},
          {"seconds", sec},
          {"gbps", sec > 0 ? static_cast<double>(bytes.load()) / sec / 1e9 : 0.0},
          {"device_bytes", cap},
          {"wrapped", wrapped},
          {"checked_pieces", checked},
          {"bad_pieces", bad},
          {"threads", threads}};
}

}  // namespace

extern const HelperSuite kLoadSuite = {"load", RunLoad};

}  // namespace clustermax::gpubench
