// The RDMA-per-rail engine of `bench net` (see rdma.h): libibverbs and libcuda bound at run time,
// RDMA ports read from sysfs through the machine seam, and perftest's write bandwidth, read
// bandwidth and write latency between two nodes over one RC queue pair per port.
#include "bench/rdma.h"

#include <dlfcn.h>
#include <infiniband/verbs.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "bench/grade.h"
#include "util/strings.h"
#include "util/dynlib.h"

namespace clustermax::bench::net {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kVerbsLibrary = "libibverbs.so.1";
constexpr const char* kCudaLibrary = "libcuda.so.1";
constexpr const char* kSysInfiniband = "/sys/class/infiniband";
constexpr int kGidsRead = 16;  // gids/0..15: the addresses a host configures come first
constexpr int kMaxRdAtomic = 16;
// The latency buffer: the outgoing message in the first half, the peer's writes land in the second.
constexpr size_t kLatHalf = 4096;
constexpr int kMaxLatencyBytes = 4096;

// ---------------------------------------------------------------------------------------------
// libibverbs, bound at run time.

// The entry points this engine calls. Each is the library's exported default version of the
// function of that name (`nm -D libibverbs.so.1`); verbs.h's macros of the same names
// (ibv_reg_mr, ibv_query_port, ibv_get_device_list) are never expanded here, since nothing below
// calls an ibv_ name directly except the header's ops-dispatching inlines.
struct Verbs {
  ibv_device** (*get_device_list)(int*);
  void (*free_device_list)(ibv_device**);
  const char* (*get_device_name)(ibv_device*);
  ibv_context* (*open_device)(ibv_device*);
  int (*close_device)(ibv_context*);
  int (*query_device)(ibv_context*, ibv_device_attr*);
  // The exported ibv_query_port takes the old, shorter port attribute struct; QueryPort below
  // does what verbs.h's inline does (the provider's extended query first).
  int (*query_port)(ibv_context*, uint8_t, _compat_ibv_port_attr*);
  int (*query_gid)(ibv_context*, uint8_t, int, ibv_gid*);
  ibv_pd* (*alloc_pd)(ibv_context*);
  int (*dealloc_pd)(ibv_pd*);
  ibv_mr* (*reg_mr)(ibv_pd*, void*, size_t, int);
  int (*dereg_mr)(ibv_mr*);
  ibv_cq* (*create_cq)(ibv_context*, int, void*, ibv_comp_channel*, int);
  int (*destroy_cq)(ibv_cq*);
  ibv_qp* (*create_qp)(ibv_pd*, ibv_qp_init_attr*);
  int (*modify_qp)(ibv_qp*, ibv_qp_attr*, int);
  int (*destroy_qp)(ibv_qp*);
  const char* (*wc_status_str)(ibv_wc_status);
  std::string library;
};

using util::BindSymbol;

struct LoadedVerbs {
  Verbs api{};
  std::string error;  // empty: loaded
};

LoadedVerbs LoadVerbs(const char* library) {
  LoadedVerbs l;
  void* handle = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    l.error = fmt::format(
        "libibverbs is not installed on this node ({}): install rdma-core/libibverbs1 (Debian, Ubuntu) or libibverbs (RHEL, Rocky)",
        e ? e : library);
    return l;
  }
  l.api.library = library;
  std::string missing;
  BindSymbol(handle, l.api.get_device_list, "ibv_get_device_list", missing);
  BindSymbol(handle, l.api.free_device_list, "ibv_free_device_list", missing);
  BindSymbol(handle, l.api.get_device_name, "ibv_get_device_name", missing);
  BindSymbol(handle, l.api.open_device, "ibv_open_device", missing);
  BindSymbol(handle, l.api.close_device, "ibv_close_device", missing);
  BindSymbol(handle, l.api.query_device, "ibv_query_device", missing);
  BindSymbol(handle, l.api.query_port, "ibv_query_port", missing);
  BindSymbol(handle, l.api.query_gid, "ibv_query_gid", missing);
  BindSymbol(handle, l.api.alloc_pd, "ibv_alloc_pd", missing);
  BindSymbol(handle, l.api.dealloc_pd, "ibv_dealloc_pd", missing);
  BindSymbol(handle, l.api.reg_mr, "ibv_reg_mr", missing);
  BindSymbol(handle, l.api.dereg_mr, "ibv_dereg_mr", missing);
  BindSymbol(handle, l.api.create_cq, "ibv_create_cq", missing);
  BindSymbol(handle, l.api.destroy_cq, "ibv_destroy_cq", missing);
  BindSymbol(handle, l.api.create_qp, "ibv_create_qp", missing);
  BindSymbol(handle, l.api.modify_qp, "ibv_modify_qp", missing);
  BindSymbol(handle, l.api.destroy_qp, "ibv_destroy_qp", missing);
  BindSymbol(handle, l.api.wc_status_str, "ibv_wc_status_str", missing);
  if (!missing.empty()) l.error = fmt::format("{} lacks {}: not a usable libibverbs", library, missing);
  // The handle stays open for the life of the process, as a linked library would (the provider
  // libraries it loads keep state behind it).
  return l;
}

const Verbs* TheVerbs(std::string& error) {
  static std::once_flag once;
  static LoadedVerbs loaded;
  std::call_once(once, [] { loaded = LoadVerbs(kVerbsLibrary); });
  if (!loaded.error.empty()) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

// verbs.h's ___ibv_query_port, through our pointer: the provider's extended query fills the whole
// ibv_port_attr; the exported function fills the compatible prefix.
int QueryPort(const Verbs& v, ibv_context* ctx, uint8_t port, ibv_port_attr* attr) {
  verbs_context* vctx = verbs_get_ctx(ctx);
  if (vctx && vctx->sz >= sizeof(*vctx) - offsetof(verbs_context, query_port) && vctx->query_port)
    return vctx->query_port(ctx, port, attr, sizeof(*attr));
  std::memset(attr, 0, sizeof(*attr));
  return v.query_port(ctx, port, reinterpret_cast<_compat_ibv_port_attr*>(attr));
}

// ---------------------------------------------------------------------------------------------
// libcuda, bound at run time, for GPUDirect buffers. The types are the driver API's (cuda.h is
// not needed): CUresult int, CUdevice int, CUcontext an opaque pointer, CUdeviceptr 64 bits.

struct Cuda {
  int (*init)(unsigned);
  int (*device_get_count)(int*);
  int (*device_get)(int*, int);
  int (*device_get_pci_bus_id)(char*, int, int);
  int (*primary_ctx_retain)(void**, int);
  int (*primary_ctx_release)(int);
  int (*ctx_set_current)(void*);
  int (*mem_alloc)(unsigned long long*, size_t);
  int (*mem_free)(unsigned long long);
};

struct LoadedCuda {
  Cuda api{};
  std::string error;
};

LoadedCuda LoadCuda() {
  LoadedCuda l;
  void* handle = ::dlopen(kCudaLibrary, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    l.error = fmt::format("no NVIDIA driver on this node ({} cannot be loaded: {})", kCudaLibrary, e ? e : "?");
    return l;
  }
  std::string missing;
  BindSymbol(handle, l.api.init, "cuInit", missing);
  BindSymbol(handle, l.api.device_get_count, "cuDeviceGetCount", missing);
  BindSymbol(handle, l.api.device_get, "cuDeviceGet", missing);
  BindSymbol(handle, l.api.device_get_pci_bus_id, "cuDeviceGetPCIBusId", missing);
  BindSymbol(handle, l.api.primary_ctx_retain, "cuDevicePrimaryCtxRetain", missing);
  // cuda.h maps cuDevicePrimaryCtxRelease to its _v2 since CUDA 11; older drivers have only the first.
  std::string no_v2;
  BindSymbol(handle, l.api.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2", no_v2);
  if (!l.api.primary_ctx_release) BindSymbol(handle, l.api.primary_ctx_release, "cuDevicePrimaryCtxRelease", missing);
  BindSymbol(handle, l.api.ctx_set_current, "cuCtxSetCurrent", missing);
  BindSymbol(handle, l.api.mem_alloc, "cuMemAlloc_v2", missing);
  BindSymbol(handle, l.api.mem_free, "cuMemFree_v2", missing);
  if (!missing.empty()) {
    l.error = fmt::format("{} lacks {}: not a usable NVIDIA driver", kCudaLibrary, missing);
    return l;
  }
  if (int rc = l.api.init(0); rc != 0) l.error = fmt::format("cuInit failed (CUDA error {})", rc);
  return l;
}

const Cuda* TheCuda(std::string& error) {
  static std::once_flag once;
  static LoadedCuda loaded;
  std::call_once(once, [] { loaded = LoadCuda(); });
  if (!loaded.error.empty()) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.api;
}

// ---------------------------------------------------------------------------------------------
// sysfs.

// A value from the machine as text we can print: invalid UTF-8 and control bytes made visible,
// surrounding blanks dropped, at most 200 bytes.
std::string Clean(std::string_view raw) { return util::Ellipsize(util::EscapeControls(util::Trim(raw)), 200); }

struct Read {
  bool ok = false;
  std::string value;  // cleaned
  std::string why;    // when not ok
};

Read ReadValue(host::Host& h, const std::string& path) {
  auto r = h.ReadFile(path, 256);
  Read out;
  if (r.status == host::IoStatus::kOk) {
    out.ok = true;
    out.value = Clean(r.content);
  } else {
    out.why = std::string(host::ToString(r.status));
    if (!r.error.empty()) out.why += ": " + Clean(r.error);
  }
  return out;
}

// Kernel RDMA device names are short identifiers (mlx5_0, rocep1s0f0, ibP16p3s0, efa_0); an entry
// that is not one cannot name a device directory and is ignored.
bool PlausibleName(std::string_view s) {
  if (s.empty() || s.size() > 64 || s == "." || s == "..") return false;
  return std::all_of(s.begin(), s.end(), [](char c) { return c > ' ' && c < 0x7f && c != '/'; });
}

// "4: ACTIVE" (the kernel's "%d: %s"); a bare "ACTIVE" is accepted too.
bool IsActive(std::string_view state) {
  auto colon = state.find(':');
  if (colon == std::string_view::npos) return util::Trim(state) == "ACTIVE";
  auto num = util::ParseInt(util::Trim(state.substr(0, colon)));
  return (num && *num == 4) || util::Trim(state.substr(colon + 1)) == "ACTIVE";
}

bool IsZeroGid(const uint8_t g[16]) {
  return std::all_of(g, g + 16, [](uint8_t b) { return b == 0; });
}
bool IsIpv4Mapped(const uint8_t g[16]) {
  return std::all_of(g, g + 10, [](uint8_t b) { return b == 0; }) && g[10] == 0xff && g[11] == 0xff;
}

// ---------------------------------------------------------------------------------------------
// The two ranks' conversation: full-duplex swaps of small JSON documents.

std::string Swap(Comm& c, const std::string& mine) {
  int peer = 1 - c.rank();
  uint64_t n = mine.size(), m = 0;
  c.SendRecv(peer, &n, sizeof n, peer, &m, sizeof m);
  if (m > (16u << 20)) throw std::runtime_error(fmt::format("rdma: the peer announced a {}-byte message", m));
  std::string theirs(m, '\0');
  c.SendRecv(peer, mine.data(), mine.size(), peer, theirs.data(), m);
  return theirs;
}

json SwapJson(Comm& c, const json& mine) {
  json j = json::parse(Swap(c, mine.dump()), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw std::runtime_error("rdma: the peer sent a message that is not a JSON object");
  return j;
}

std::string Str(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A number from the peer's document, `def` when absent or not a number of that kind.
template <typename T>
T Num(const json& j, const char* key, T def) {
  auto it = j.find(key);
  if (it == j.end()) return def;
  if constexpr (std::is_same_v<T, bool>) {
    return it->is_boolean() ? it->get<bool>() : def;
  } else if constexpr (std::is_integral_v<T>) {
    return it->is_number_integer() ? it->get<T>() : def;
  } else {
    return it->is_number() ? it->get<T>() : def;
  }
}

RdmaPort PortFromJson(const json& j) {
  RdmaPort p;
  p.device = Str(j, "device");
  p.port = Num(j, "port", 0);
  p.link_layer = Str(j, "link_layer");
  p.state = Str(j, "state");
  p.phys_state = Str(j, "phys_state");
  p.rate = Str(j, "rate");
  p.rate_gbps = Num(j, "rate_gbps", 0.0);
  p.gid_index = Num(j, "gid_index", -1);
  p.netdev = Str(j, "netdev");
  p.skip = Str(j, "skip");
  return p;
}

std::string Guarded(const std::function<std::string()>& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return e.what();
  }
}

// ---------------------------------------------------------------------------------------------
// GPUDirect: where each HCA's buffer lives.

struct GpuSupport {
  bool ok = false;
  std::string why;  // when not ok
  const Cuda* cuda = nullptr;
  std::vector<std::string> gpu_paths;  // resolved sysfs paths, by CUDA ordinal
};

GpuSupport ProbeGpu(host::Host& h) {
  GpuSupport g;
  // ibv_reg_mr pins GPU memory through the peer-memory client nvidia_peermem registers; without
  // it the registration of a device pointer fails (the kernel's dma-buf path is not used here).
  auto st = h.Stat("/sys/module/nvidia_peermem");
  if (st.status != host::IoStatus::kOk) {
    g.why = fmt::format("the nvidia_peermem kernel module is not loaded (/sys/module/nvidia_peermem: {})",
                        host::ToString(st.status));
    return g;
  }
  std::string err;
  g.cuda = TheCuda(err);
  if (!g.cuda) {
    g.why = err;
    return g;
  }
  int n = 0;
  if (int rc = g.cuda->device_get_count(&n); rc != 0 || n <= 0) {
    g.why = rc != 0 ? fmt::format("cuDeviceGetCount failed (CUDA error {})", rc) : "CUDA sees no GPU";
    return g;
  }
  for (int i = 0; i < n; ++i) {
    int dev = 0;
    char bus[64] = {};
    std::string path;
    if (g.cuda->device_get(&dev, i) == 0 && g.cuda->device_get_pci_bus_id(bus, sizeof bus - 1, dev) == 0) {
      std::string id = util::ToLower(bus);
      // "0000:19:00.0"; a driver that writes the eight-digit domain NVML uses is cut to sysfs's four.
      if (auto colon = id.find(':'); colon == 8 && id.compare(0, 4, "0000") == 0) id = id.substr(4);
      if (PlausibleName(id)) path = ResolvePath(h, "/sys/bus/pci/devices/" + id);
    }
    g.gpu_paths.push_back(path);
  }
  g.ok = true;
  return g;
}

// GPU memory from the primary context of one GPU, released with it.
class GpuBuffer {
 public:
  GpuBuffer(const Cuda& c, int ordinal) : c_(c) {
    if (int rc = c_.device_get(&dev_, ordinal); rc != 0) throw Fail("cuDeviceGet", rc);
    if (int rc = c_.primary_ctx_retain(&ctx_, dev_); rc != 0) throw Fail("cuDevicePrimaryCtxRetain", rc);
    retained_ = true;
    if (int rc = c_.ctx_set_current(ctx_); rc != 0) throw Fail("cuCtxSetCurrent", rc);
  }
  ~GpuBuffer() {
    if (ptr_) {
      c_.ctx_set_current(ctx_);
      c_.mem_free(ptr_);
    }
    if (retained_) c_.primary_ctx_release(dev_);
  }
  GpuBuffer(const GpuBuffer&) = delete;
  GpuBuffer& operator=(const GpuBuffer&) = delete;
  void* Alloc(size_t bytes) {
    if (int rc = c_.mem_alloc(&ptr_, bytes); rc != 0) throw Fail("cuMemAlloc", rc);
    return reinterpret_cast<void*>(static_cast<uintptr_t>(ptr_));
  }

 private:
  static std::runtime_error Fail(const char* what, int rc) {
    return std::runtime_error(fmt::format("{} failed (CUDA error {})", what, rc));
  }
  const Cuda& c_;
  int dev_ = 0;
  void* ctx_ = nullptr;
  bool retained_ = false;
  unsigned long long ptr_ = 0;
};

// ---------------------------------------------------------------------------------------------
// One port's verbs resources and the tests on them.

struct Remote {
  uint16_t lid = 0;
  uint32_t qpn = 0, psn = 0, rkey = 0, lat_rkey = 0;
  uint64_t addr = 0, lat_addr = 0;
  uint8_t gid[16] = {};
  int mtu = 0, rd_atom = 0, init_rd_atom = 0;
  bool ethernet = false;
};

struct Outcome {
  double gbps = 0, seconds = 0;
  uint64_t iterations = 0;
  std::vector<double> one_way_us;
  std::string error;
};

std::string HexOf(const uint8_t* p, size_t n) {
  return util::HexEncode(std::string_view(reinterpret_cast<const char*>(p), n));
}

// Every resource of one port, released in reverse order of creation whatever happened.
class Session {
 public:
  explicit Session(const Verbs& v) : v_(v) {}
  ~Session() {
    if (qp_) v_.destroy_qp(qp_);
    if (cq_) v_.destroy_cq(cq_);
    if (mr_) v_.dereg_mr(mr_);
    if (lat_mr_) v_.dereg_mr(lat_mr_);
    gpu_.reset();
    std::free(host_buf_);
    std::free(lat_buf_);
    if (pd_) v_.dealloc_pd(pd_);
    if (ctx_) v_.close_device(ctx_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Opens the device and makes the PD, buffers, MRs, CQ and QP. "" on success, else why.
  std::string Open(host::Host& h, const RdmaPort& p, const RdmaOptions& o, const GpuSupport* gpu) {
    int n = 0;
    ibv_device** list = v_.get_device_list(&n);
    if (!list) return fmt::format("ibv_get_device_list failed: {}", std::strerror(errno));
    for (int i = 0; i < n && !ctx_; ++i) {
      const char* name = v_.get_device_name(list[i]);
      if (name && p.device == name) {
        ctx_ = v_.open_device(list[i]);
        if (!ctx_) {
          v_.free_device_list(list);
          return fmt::format("ibv_open_device({}) failed: {}", p.device, std::strerror(errno));
        }
      }
    }
    v_.free_device_list(list);
    if (!ctx_) return fmt::format("libibverbs lists no device {}", p.device);
    if (v_.query_device(ctx_, &dev_)) return fmt::format("ibv_query_device failed: {}", std::strerror(errno));
    port_num_ = static_cast<uint8_t>(p.port);
    if (QueryPort(v_, ctx_, port_num_, &port_)) return fmt::format("ibv_query_port failed: {}", std::strerror(errno));
    if (port_.state != IBV_PORT_ACTIVE)
      return fmt::format("the port is not active to libibverbs (state {})", int(port_.state));
    ethernet_ = port_.link_layer == IBV_LINK_LAYER_ETHERNET;
    if (ethernet_) {
      if (p.gid_index < 0) return "RoCE port without a usable GID";
      gid_index_ = p.gid_index;
      if (v_.query_gid(ctx_, port_num_, gid_index_, &gid_))
        return fmt::format("ibv_query_gid({}) failed: {}", gid_index_, std::strerror(errno));
      if (IsZeroGid(gid_.raw)) return fmt::format("GID {} is empty to libibverbs", gid_index_);
    } else if (port_.lid == 0) {
      return "the InfiniBand port has LID 0 (no subnet manager has configured it)";
    }
    pd_ = v_.alloc_pd(ctx_);
    if (!pd_) return fmt::format("ibv_alloc_pd failed: {}", std::strerror(errno));

    const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    bytes_ = o.bytes;
    if (o.gpu_memory) {
      gpu_skipped_ = gpu && !gpu->ok ? gpu->why : "";
      if (gpu && gpu->ok) {
        std::string hca = ResolvePath(h, std::string(kSysInfiniband) + "/" + p.device + "/device");
        int g = NearestGpu(hca, gpu->gpu_paths);
        if (g < 0) {
          gpu_skipped_ = "the HCA's PCI path could not be resolved";
        } else {
          gpu_skipped_ = Guarded([&] {
            gpu_ = std::make_unique<GpuBuffer>(*gpu->cuda, g);
            void* ptr = gpu_->Alloc(bytes_);
            mr_ = v_.reg_mr(pd_, ptr, bytes_, access);
            if (!mr_) return fmt::format("ibv_reg_mr of GPU {} memory failed: {}", g, std::strerror(errno));
            buf_ = ptr;
            gpu_index_ = g;
            return std::string();
          });
          if (!mr_) gpu_.reset();
        }
      }
    }
    if (!mr_) {
      size_t size = (bytes_ + 4095) / 4096 * 4096;
      host_buf_ = std::aligned_alloc(4096, size);
      if (!host_buf_) return fmt::format("cannot allocate {} bytes", size);
      std::memset(host_buf_, 0, size);
      mr_ = v_.reg_mr(pd_, host_buf_, bytes_, access);
      if (!mr_) return fmt::format("ibv_reg_mr of {} bytes failed: {}", bytes_, std::strerror(errno));
      buf_ = host_buf_;
    }
    lat_buf_ = std::aligned_alloc(4096, 2 * kLatHalf);
    if (!lat_buf_) return "cannot allocate the latency buffer";
    std::memset(lat_buf_, 0, 2 * kLatHalf);
    lat_mr_ = v_.reg_mr(pd_, lat_buf_, 2 * kLatHalf, access);
    if (!lat_mr_) return fmt::format("ibv_reg_mr of the latency buffer failed: {}", std::strerror(errno));

    depth_ = std::clamp(o.tx_depth, 1, std::max(1, dev_.max_qp_wr));
    int cqe = std::min(depth_ + 16, std::max(1, dev_.max_cqe));
    cq_ = v_.create_cq(ctx_, cqe, nullptr, nullptr, 0);
    if (!cq_) return fmt::format("ibv_create_cq({}) failed: {}", cqe, std::strerror(errno));
    // Inline data makes the small latency writes cheaper (ib_write_lat's default); some devices
    // take none, so a refused QP is asked for again without it.
    for (uint32_t inline_bytes : {64u, 0u}) {
      ibv_qp_init_attr init{};
      init.send_cq = cq_;
      init.recv_cq = cq_;
      init.qp_type = IBV_QPT_RC;
      init.sq_sig_all = 0;
      init.cap.max_send_wr = static_cast<uint32_t>(depth_);
      init.cap.max_recv_wr = 1;
      init.cap.max_send_sge = 1;
      init.cap.max_recv_sge = 1;
      init.cap.max_inline_data = inline_bytes;
      qp_ = v_.create_qp(pd_, &init);
      if (qp_) {
        max_inline_ = init.cap.max_inline_data;
        break;
      }
    }
    if (!qp_) return fmt::format("ibv_create_qp failed: {}", std::strerror(errno));
    std::random_device rd;
    psn_ = rd() & 0xffffff;
    return "";
  }

  json LocalInfo() const {
    json j = {{"ok", true},
              {"lid", port_.lid},
              {"qpn", qp_->qp_num},
              {"psn", psn_},
              {"gid", HexOf(gid_.raw, 16)},
              {"rkey", mr_->rkey},
              {"addr", reinterpret_cast<uintptr_t>(buf_)},
              {"lat_rkey", lat_mr_->rkey},
              {"lat_addr", reinterpret_cast<uintptr_t>(lat_buf_)},
              {"mtu", static_cast<int>(port_.active_mtu)},
              {"rd_atom", std::min(dev_.max_qp_rd_atom, kMaxRdAtomic)},
              {"init_rd_atom", std::min(dev_.max_qp_init_rd_atom, kMaxRdAtomic)},
              {"ethernet", ethernet_},
              {"memory", Memory()}};
    if (!gpu_skipped_.empty()) j["gpu_memory_skipped"] = gpu_skipped_;
    if (gpu_index_ >= 0) j["gpu"] = gpu_index_;
    return j;
  }
  std::string Memory() const { return gpu_index_ >= 0 ? "gpu" : "host"; }
  const std::string& GpuSkipped() const { return gpu_skipped_; }
  int Depth() const { return depth_; }

  // INIT -> RTR -> RTS against the peer's queue pair.
  std::string Connect(const Remote& r) {
    if (r.ethernet != ethernet_) return "the two ends disagree on the link layer (one RoCE, one InfiniBand)";
    ibv_qp_attr a{};
    a.qp_state = IBV_QPS_INIT;
    a.pkey_index = 0;
    a.port_num = port_num_;
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
    if (int rc = v_.modify_qp(qp_, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
      return fmt::format("modify QP to INIT failed: {}", std::strerror(rc));

    a = {};
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = static_cast<ibv_mtu>(std::clamp(std::min(static_cast<int>(port_.active_mtu), r.mtu), 1, 5));
    a.dest_qp_num = r.qpn;
    a.rq_psn = r.psn;
    a.max_dest_rd_atomic =
        static_cast<uint8_t>(std::clamp(std::min(dev_.max_qp_rd_atom, kMaxRdAtomic), 0, kMaxRdAtomic));
    a.min_rnr_timer = 12;
    a.ah_attr.port_num = port_num_;
    a.ah_attr.sl = 0;
    a.ah_attr.src_path_bits = 0;
    if (ethernet_) {
      a.ah_attr.is_global = 1;
      std::memcpy(a.ah_attr.grh.dgid.raw, r.gid, 16);
      a.ah_attr.grh.sgid_index = static_cast<uint8_t>(gid_index_);
      a.ah_attr.grh.hop_limit = 64;
      a.ah_attr.grh.traffic_class = 0;
    } else {
      a.ah_attr.is_global = 0;
      a.ah_attr.dlid = r.lid;
    }
    if (int rc = v_.modify_qp(qp_, &a,
                              IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
      return fmt::format("modify QP to RTR failed: {}", std::strerror(rc));

    a = {};
    a.qp_state = IBV_QPS_RTS;
    a.timeout = 14;
    a.retry_cnt = 7;
    a.rnr_retry = 7;
    a.sq_psn = psn_;
    // Our reads in flight may not exceed what the responder accepts.
    rd_atomic_ = std::clamp(std::min({dev_.max_qp_init_rd_atom, r.rd_atom, kMaxRdAtomic}), 0, kMaxRdAtomic);
    a.max_rd_atomic = static_cast<uint8_t>(rd_atomic_);
    if (int rc = v_.modify_qp(qp_, &a,
                              IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                  IBV_QP_MAX_QP_RD_ATOMIC))
      return fmt::format("modify QP to RTS failed: {}", std::strerror(rc));
    return "";
  }

  // ib_write_bw / ib_read_bw: `bytes` per work request into (or from) the peer's buffer, tx_depth
  // in flight, a completion asked for every half depth (selective signalling: an RC completion
  // vouches for every earlier request), until `seconds` have passed and at least 100 requests
  // completed. Time runs from the first post to the last completion.
  Outcome Bandwidth(ibv_wr_opcode op, const Remote& r, const RdmaOptions& o) {
    Outcome out;
    if (op == IBV_WR_RDMA_READ && rd_atomic_ <= 0) {
      out.error = "the device allows no RDMA read in flight";
      return out;
    }
    const uint64_t depth = static_cast<uint64_t>(depth_);
    const uint64_t every = std::max<uint64_t>(1, depth / 2);
    const auto limit = std::chrono::duration<double>(o.seconds);
    const auto timeout = std::chrono::duration<double>(o.timeout_s);
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(buf_);
    sge.length = static_cast<uint32_t>(bytes_);
    sge.lkey = mr_->lkey;
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = op;
    wr.wr.rdma.remote_addr = r.addr;
    wr.wr.rdma.rkey = r.rkey;
    wr.wr_id = every;  // the requests a signalled completion stands for
    uint64_t posted = 0, completed = 0;
    bool stop = false;
    ibv_wc wc[16];
    const auto start = Clock::now();
    auto last = start, progress = start;
    // Posting stops only right after a signalled request, so the last one posted is signalled.
    auto done_posting = [&](Clock::time_point now) {
      return posted % every == 0 && posted >= 100 && now - start >= limit;
    };
    while (true) {
      while (!stop && posted - completed < depth) {
        wr.send_flags = (posted + 1) % every == 0 ? IBV_SEND_SIGNALED : 0;
        ibv_send_wr* bad = nullptr;
        if (int rc = ibv_post_send(qp_, &wr, &bad)) {
          out.error = fmt::format("ibv_post_send failed: {}", std::strerror(rc));
          return out;
        }
        ++posted;
        if (posted % every == 0) stop = done_posting(Clock::now());
      }
      if (stop && completed >= posted) break;
      int n = ibv_poll_cq(cq_, 16, wc);
      auto now = Clock::now();
      if (n < 0) {
        out.error = "ibv_poll_cq failed";
        return out;
      }
      for (int i = 0; i < n; ++i) {
        if (wc[i].status != IBV_WC_SUCCESS) {
          out.error = WcError(wc[i]);
          return out;
        }
        completed += wc[i].wr_id;
      }
      if (n > 0) {
        last = progress = now;
      } else if (now - progress > timeout) {
        out.error =
            fmt::format("no completion for {} s ({} of {} work requests completed)", o.timeout_s, completed, posted);
        return out;
      }
      if (!stop && posted % every == 0) stop = done_posting(now);
    }
    out.iterations = completed;
    out.seconds = std::chrono::duration<double>(last - start).count();
    if (out.seconds > 0)
      out.gbps = 8.0 * static_cast<double>(bytes_) * static_cast<double>(completed) / out.seconds / 1e9;
    return out;
  }

  // ib_write_lat: the leader writes an iteration stamp into the peer's memory and waits for it to
  // come back in its own; the follower waits for the stamp in its memory and writes it back. The
  // stamp is the last byte of the message (an RDMA write lands in order, so the last byte
  // arriving means the whole message did). One-way latency is half the round trip.
  Outcome Latency(const Remote& r, const RdmaOptions& o, bool leader) {
    Outcome out;
    const size_t n = static_cast<size_t>(o.latency_bytes);
    const int warmup = std::max(1, o.latency_iters / 10);
    const int total = o.latency_iters + warmup;
    const auto timeout = std::chrono::duration<double>(o.timeout_s);
    auto* outgoing = static_cast<uint8_t*>(lat_buf_);
    volatile uint8_t* incoming = static_cast<uint8_t*>(lat_buf_) + kLatHalf;
    ibv_sge sge{};
    sge.addr = reinterpret_cast<uintptr_t>(outgoing);
    sge.length = static_cast<uint32_t>(n);
    sge.lkey = lat_mr_->lkey;
    ibv_send_wr wr{};
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED | (n <= max_inline_ ? IBV_SEND_INLINE : 0);
    wr.wr.rdma.remote_addr = r.lat_addr + kLatHalf;
    wr.wr.rdma.rkey = r.lat_rkey;
    uint64_t posted = 0, done = 0;
    ibv_wc wc[16];
    // Completions are reaped while waiting for the peer, and waited for only when the send queue
    // is half full, so reaping costs nothing on the measured path.
    auto reap = [&](bool block) -> std::string {
      auto since = Clock::now();
      do {
        int k = ibv_poll_cq(cq_, 16, wc);
        if (k < 0) return "ibv_poll_cq failed";
        for (int i = 0; i < k; ++i)
          if (wc[i].status != IBV_WC_SUCCESS) return WcError(wc[i]);
        done += static_cast<uint64_t>(k);
        if (k > 0 || !block) return "";
      } while (Clock::now() - since <= timeout);
      return fmt::format("no completion for {} s", o.timeout_s);
    };
    auto post = [&](uint8_t stamp) -> std::string {
      while (posted - done >= static_cast<uint64_t>(std::max(1, depth_ / 2)))
        if (auto e = reap(true); !e.empty()) return e;
      outgoing[n - 1] = stamp;
      ibv_send_wr* bad = nullptr;
      if (int rc = ibv_post_send(qp_, &wr, &bad)) return fmt::format("ibv_post_send failed: {}", std::strerror(rc));
      ++posted;
      return "";
    };
    auto wait_for = [&](uint8_t stamp, int iteration) -> std::string {
      auto since = Clock::now();
      for (uint32_t spin = 1;; ++spin) {
        if (incoming[n - 1] == stamp) return "";
        if (spin % 1024 == 0) {
          if (auto e = reap(false); !e.empty()) return e;
          if (Clock::now() - since > timeout)
            return fmt::format("the peer's write {} did not arrive within {} s", iteration + 1, o.timeout_s);
        }
      }
    };
    out.one_way_us.reserve(static_cast<size_t>(total));
    for (int k = 0; k < total; ++k) {
      const uint8_t stamp = static_cast<uint8_t>(k % 255 + 1);
      if (leader) {
        auto t0 = Clock::now();
        if (out.error = post(stamp); !out.error.empty()) return out;
        if (out.error = wait_for(stamp, k); !out.error.empty()) return out;
        auto t1 = Clock::now();
        out.one_way_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 2);
      } else {
        if (out.error = wait_for(stamp, k); !out.error.empty()) return out;
        if (out.error = post(stamp); !out.error.empty()) return out;
      }
    }
    while (done < posted)
      if (out.error = reap(true); !out.error.empty()) return out;
    out.iterations = static_cast<uint64_t>(o.latency_iters);
    return out;
  }

 private:
  std::string WcError(const ibv_wc& wc) const {
    const char* s = v_.wc_status_str(wc.status);
    return fmt::format("work completion failed: {} (status {}, vendor error 0x{:x})", s ? s : "?", int(wc.status),
                       wc.vendor_err);
  }

  const Verbs& v_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_cq* cq_ = nullptr;
  ibv_qp* qp_ = nullptr;
  ibv_mr* mr_ = nullptr;
  ibv_mr* lat_mr_ = nullptr;
  std::unique_ptr<GpuBuffer> gpu_;
  void* host_buf_ = nullptr;
  void* lat_buf_ = nullptr;
  void* buf_ = nullptr;
  size_t bytes_ = 0;
  ibv_device_attr dev_{};
  ibv_port_attr port_{};
  ibv_gid gid_{};
  uint8_t port_num_ = 1;
  int gid_index_ = -1;
  bool ethernet_ = false;
  uint32_t psn_ = 0;
  int depth_ = 1;
  int rd_atomic_ = 0;
  size_t max_inline_ = 0;
  int gpu_index_ = -1;
  std::string gpu_skipped_;
};

bool ParseRemote(const json& j, Remote& r) {
  auto num = [&](const char* k, uint64_t max, uint64_t& v) {
    auto it = j.find(k);
    if (it == j.end() || !it->is_number_unsigned() || it->get<uint64_t>() > max) return false;
    v = it->get<uint64_t>();
    return true;
  };
  uint64_t lid, qpn, psn, rkey, lat_rkey, addr, lat_addr, mtu, rd, init;
  if (!num("lid", 0xffff, lid) || !num("qpn", 0xffffff, qpn) || !num("psn", 0xffffff, psn) ||
      !num("rkey", 0xffffffff, rkey) || !num("lat_rkey", 0xffffffff, lat_rkey) || !num("addr", UINT64_MAX, addr) ||
      !num("lat_addr", UINT64_MAX, lat_addr) || !num("mtu", 5, mtu) || !num("rd_atom", 255, rd) ||
      !num("init_rd_atom", 255, init))
    return false;
  auto gid = util::HexDecode(Str(j, "gid"));
  if (!gid || gid->size() != 16) return false;
  r.lid = static_cast<uint16_t>(lid);
  r.qpn = static_cast<uint32_t>(qpn);
  r.psn = static_cast<uint32_t>(psn);
  r.rkey = static_cast<uint32_t>(rkey);
  r.lat_rkey = static_cast<uint32_t>(lat_rkey);
  r.addr = addr;
  r.lat_addr = lat_addr;
  r.mtu = static_cast<int>(mtu);
  r.rd_atom = static_cast<int>(rd);
  r.init_rd_atom = static_cast<int>(init);
  std::memcpy(r.gid, gid->data(), 16);
  r.ethernet = Num(j, "ethernet", false);
  return true;
}

json OptionsJson(const RdmaOptions& o) {
  return {{"bytes", o.bytes},
          {"tx_depth", o.tx_depth},
          {"seconds", o.seconds},
          {"latency_iters", o.latency_iters},
          {"latency_bytes", o.latency_bytes},
          {"bidirectional", o.bidirectional},
          {"gpu_memory", o.gpu_memory},
          {"devices", o.devices},
          {"timeout_s", o.timeout_s}};
}

// The options in force, as rank 0 had them, kept in ranges the tests can run with.
RdmaOptions OptionsFromJson(const json& j) {
  RdmaOptions o;
  o.bytes = std::clamp<uint64_t>(Num<uint64_t>(j, "bytes", o.bytes), 1, 1ull << 30);
  o.tx_depth = std::clamp(Num(j, "tx_depth", o.tx_depth), 1, 1 << 14);
  o.seconds = Num(j, "seconds", o.seconds);
  if (!std::isfinite(o.seconds) || o.seconds < 0.01) o.seconds = 0.01;
  o.latency_iters = std::clamp(Num(j, "latency_iters", o.latency_iters), 1, 1 << 24);
  o.latency_bytes = std::clamp(Num(j, "latency_bytes", o.latency_bytes), 1, kMaxLatencyBytes);
  o.bidirectional = Num(j, "bidirectional", false);
  o.gpu_memory = Num(j, "gpu_memory", false);
  o.timeout_s = Num(j, "timeout_s", o.timeout_s);
  if (!std::isfinite(o.timeout_s) || o.timeout_s <= 0) o.timeout_s = 60;
  return o;
}

// This rank's view before anything is measured: its ports, or why nothing can be.
json Probe(host::Host& h, const std::vector<RdmaPort>& ports, const Verbs*& v) {
  json probe = {{"ports", json::array()}};
  for (const auto& p : ports) probe["ports"].push_back(PortJson(p));
  auto dir = h.ListDir(kSysInfiniband);
  if (dir.status != host::IoStatus::kOk) {
    probe["error"] = fmt::format("no RDMA device ({}: {})", kSysInfiniband, host::ToString(dir.status));
    return probe;
  }
  if (ports.empty()) {
    probe["error"] = fmt::format("no RDMA device ({} is empty)", kSysInfiniband);
    return probe;
  }
  std::string err;
  v = TheVerbs(err);
  if (!v) {
    probe["error"] = err;
    return probe;
  }
  int n = 0;
  ibv_device** list = v->get_device_list(&n);
  if (list) v->free_device_list(list);
  if (!list || n <= 0) {
    probe["error"] = fmt::format(
        "no RDMA device: libibverbs lists none though {} names {} (is the provider library, e.g. ibverbs-providers, installed and the kernel driver, e.g. mlx5_ib, loaded?)",
        kSysInfiniband, ports.front().device);
    return probe;
  }
  std::vector<std::string> why;
  for (const auto& p : ports) {
    if (p.skip.empty()) return probe;
    why.push_back(fmt::format("{} port {}: {}", p.device, p.port, p.skip));
  }
  if (why.size() > 8) why.resize(8), why.push_back("...");
  probe["error"] = fmt::format("no active RDMA port ({})", fmt::join(why, "; "));
  return probe;
}

// One port, both ranks in step. Rank 0's return value is the port's result.
json MeasurePort(Comm& c, const Verbs& v, host::Host& h, const RdmaPort& local, const RdmaPort& peer,
                 const RdmaOptions& o, const GpuSupport* gpu) {
  const bool leader = c.rank() == 0;
  const std::string peer_node = c.node_of(1 - c.rank());
  json out = {{"device", local.device},           {"port", local.port},
              {"link_layer", local.link_layer},   {"rate_gbps", local.rate_gbps},
              {"gid_index", local.gid_index},     {"peer_node", peer_node},
              {"peer_gid_index", peer.gid_index}, {"bytes", o.bytes}};
  if (!local.netdev.empty()) out["netdev"] = local.netdev;
  if (peer.rate_gbps > 0 && peer.rate_gbps != local.rate_gbps) out["peer_rate_gbps"] = peer.rate_gbps;
  // A step both ranks take: each says how its side went; the first error (ours, else the peer's)
  // ends the port for both.
  auto step = [&](const std::string& mine, json extra = json::object()) -> std::string {
    extra["error"] = mine;
    json theirs = SwapJson(c, extra);
    if (!mine.empty()) return mine;
    std::string e = Str(theirs, "error");
    return e.empty() ? "" : fmt::format("{}: {}", peer_node, e);
  };

  Session s(v);
  std::string err = Guarded([&] { return s.Open(h, local, o, gpu); });
  json mine = err.empty() ? s.LocalInfo() : json{{"ok", false}, {"error", err}};
  json theirs = SwapJson(c, mine);
  const bool peer_open = Num(theirs, "ok", false);
  Remote r;
  if (err.empty() && peer_open) {
    // Both sides opened (each knows it from the swap), so both take the connect step.
    out["memory"] = s.Memory();
    out["peer_memory"] = Str(theirs, "memory");
    out["tx_depth"] = s.Depth();
    if (!s.GpuSkipped().empty()) out["gpu_memory_skipped"] = s.GpuSkipped();
    if (auto peer_skip = Str(theirs, "gpu_memory_skipped"); !peer_skip.empty())
      out["peer_gpu_memory_skipped"] = peer_skip;
    if (o.gpu_memory) out["latency_memory"] = "host";
    err = ParseRemote(theirs, r) ? Guarded([&] { return s.Connect(r); })
                                 : fmt::format("{} sent an unusable connection record", peer_node);
    // Each side reaches RTS before it speaks, so after this step both can be written to.
    err = step(err);
  } else if (err.empty()) {
    // The peer failed to open; it knows, from our record, that we did not.
    err = fmt::format("{}: {}", peer_node, Str(theirs, "error"));
  }

  if (err.empty()) {
    Outcome w = leader ? s.Bandwidth(IBV_WR_RDMA_WRITE, r, o) : Outcome{};
    err = step(w.error);
    if (err.empty()) {
      out["write_gbps"] = RoundTo(w.gbps, 2);
      out["write_iterations"] = w.iterations;
    }
  }
  if (err.empty()) {
    Outcome rd = leader ? s.Bandwidth(IBV_WR_RDMA_READ, r, o) : Outcome{};
    err = step(rd.error);
    if (err.empty()) {
      out["read_gbps"] = RoundTo(rd.gbps, 2);
      out["read_iterations"] = rd.iterations;
    }
  }
  if (err.empty() && o.bidirectional) {
    // Both sides write at once (ib_write_bw -b); each reports its direction, rank 0 the sum.
    Outcome b = s.Bandwidth(IBV_WR_RDMA_WRITE, r, o);
    json theirs_b = SwapJson(c, {{"error", b.error}, {"gbps", b.gbps}});
    err = !b.error.empty()                 ? b.error
          : Str(theirs_b, "error").empty() ? ""
                                           : fmt::format("{}: {}", peer_node, Str(theirs_b, "error"));
    if (err.empty()) {
      double back = Num(theirs_b, "gbps", 0.0);
      out["bidir_gbps"] = RoundTo(b.gbps + back, 2);
      out["bidir_out_gbps"] = RoundTo(b.gbps, 2);
      out["bidir_in_gbps"] = RoundTo(back, 2);
    }
  }
  if (err.empty()) {
    // Start together: the follower is polling before the first stamp can arrive.
    err = step("");
    if (err.empty()) {
      Outcome l = s.Latency(r, o, leader);
      err = step(l.error);
      if (err.empty() && leader) {
        auto sum = SummarizeLatency(std::move(l.one_way_us), static_cast<size_t>(std::max(1, o.latency_iters / 10)));
        out["lat_bytes"] = o.latency_bytes;
        out["lat_iterations"] = sum.samples;
        out["lat_min_us"] = RoundTo(sum.min_us, 3);
        out["lat_p50_us"] = RoundTo(sum.p50_us, 3);
        out["lat_p99_us"] = RoundTo(sum.p99_us, 3);
        out["lat_max_us"] = RoundTo(sum.max_us, 3);
      }
    }
  }
  double rate = local.rate_gbps;
  if (peer.rate_gbps > 0 && (rate <= 0 || peer.rate_gbps < rate)) rate = peer.rate_gbps;
  if (out.contains("write_gbps") && rate > 0) out["line_ratio"] = RoundTo(out["write_gbps"].get<double>() / rate, 3);
  if (!err.empty()) out["error"] = err;
  return out;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Public: sysfs and the pure parts.

json PortJson(const RdmaPort& p) {
  return {{"device", p.device},         {"port", p.port}, {"link_layer", p.link_layer}, {"state", p.state},
          {"phys_state", p.phys_state}, {"rate", p.rate}, {"rate_gbps", p.rate_gbps},   {"gid_index", p.gid_index},
          {"netdev", p.netdev},         {"skip", p.skip}};
}

double ParseRateGbps(std::string_view rate) {
  rate = util::Trim(rate);
  size_t i = 0;
  while (i < rate.size() && (std::isdigit(static_cast<unsigned char>(rate[i])) || rate[i] == '.')) ++i;
  if (i == 0 || i > 12) return 0;
  std::string num(rate.substr(0, i));
  if (std::count(num.begin(), num.end(), '.') > 1 || num.front() == '.' || num.back() == '.') return 0;
  std::string_view unit = util::Trim(rate.substr(i));
  if (!(unit.rfind("Gb/sec", 0) == 0 || unit.rfind("Gb/s", 0) == 0)) return 0;
  char* end = nullptr;
  double v = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !std::isfinite(v) || v <= 0 || v > 100000) return 0;
  return v;
}

bool ParseGid(std::string_view text, uint8_t out[16]) {
  text = util::Trim(text);
  auto groups = util::Split(text, ':', true);
  if (groups.size() != 8) return false;
  for (size_t g = 0; g < 8; ++g) {
    if (groups[g].size() != 4) return false;
    auto v = util::HexDecode(groups[g]);
    if (!v || v->size() != 2) return false;
    out[2 * g] = static_cast<uint8_t>((*v)[0]);
    out[2 * g + 1] = static_cast<uint8_t>((*v)[1]);
  }
  return true;
}

int ChooseGid(const std::vector<GidEntry>& gids) {
  // Lowest index first whatever order the entries came in.
  std::vector<size_t> order(gids.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return gids[a].index < gids[b].index; });
  int v2_mapped = -1, v2 = -1, any = -1;
  for (size_t i : order) {
    uint8_t g[16];
    if (!ParseGid(gids[i].gid, g) || IsZeroGid(g)) continue;
    bool is_v2 = util::Trim(gids[i].type) == "RoCE v2";
    if (any < 0) any = static_cast<int>(i);
    if (is_v2 && v2 < 0) v2 = static_cast<int>(i);
    if (is_v2 && IsIpv4Mapped(g) && v2_mapped < 0) v2_mapped = static_cast<int>(i);
  }
  return v2_mapped >= 0 ? v2_mapped : v2 >= 0 ? v2 : any;
}

std::vector<RdmaPort> ListRdmaPorts(host::Host& h) {
  std::vector<RdmaPort> out;
  auto dir = h.ListDir(kSysInfiniband);
  if (dir.status != host::IoStatus::kOk) return out;
  std::vector<std::string> devices;
  for (const auto& e : dir.entries)
    if (PlausibleName(e.name)) devices.push_back(e.name);
  std::sort(devices.begin(), devices.end());
  devices.erase(std::unique(devices.begin(), devices.end()), devices.end());
  for (const auto& dev : devices) {
    const std::string base = std::string(kSysInfiniband) + "/" + dev + "/ports";
    auto pl = h.ListDir(base);
    if (pl.status != host::IoStatus::kOk) {
      RdmaPort p;
      p.device = dev;
      p.port = 0;
      p.skip = fmt::format("its ports cannot be listed ({}: {})", base, host::ToString(pl.status));
      out.push_back(p);
      continue;
    }
    std::vector<int> numbers;
    for (const auto& e : pl.entries) {
      auto n = util::ParseInt(e.name);
      if (n && *n >= 1 && *n <= 255 && std::to_string(*n) == e.name) numbers.push_back(static_cast<int>(*n));
    }
    std::sort(numbers.begin(), numbers.end());
    for (int n : numbers) {
      RdmaPort p;
      p.device = dev;
      p.port = n;
      const std::string pb = base + "/" + std::to_string(n);
      Read state = ReadValue(h, pb + "/state");
      Read phys = ReadValue(h, pb + "/phys_state");
      Read rate = ReadValue(h, pb + "/rate");
      Read ll = ReadValue(h, pb + "/link_layer");
      p.state = state.value;
      p.phys_state = phys.value;
      p.rate = rate.value;
      p.rate_gbps = ParseRateGbps(rate.value);
      p.link_layer = ll.value;
      std::vector<std::string> why;
      if (!state.ok)
        why.push_back(fmt::format("state unreadable ({})", state.why));
      else if (!IsActive(state.value))
        why.push_back(fmt::format("port not ACTIVE (state \"{}\", phys_state \"{}\")", state.value, phys.value));
      if (!ll.ok) {
        why.push_back(fmt::format("link layer unreadable ({})", ll.why));
      } else if (ll.value == "Ethernet") {
        std::vector<GidEntry> gids;
        for (int i = 0; i < kGidsRead; ++i) {
          Read gid = ReadValue(h, pb + "/gids/" + std::to_string(i));
          uint8_t raw[16];
          // An empty slot is all zeros, and its type file cannot be read (EINVAL): not asked.
          if (!gid.ok || !ParseGid(gid.value, raw) || IsZeroGid(raw)) continue;
          GidEntry e;
          e.index = i;
          e.gid = gid.value;
          e.type = ReadValue(h, pb + "/gid_attrs/types/" + std::to_string(i)).value;
          e.ndev = ReadValue(h, pb + "/gid_attrs/ndevs/" + std::to_string(i)).value;
          gids.push_back(e);
        }
        int chosen = ChooseGid(gids);
        if (chosen >= 0) {
          p.gid_index = gids[chosen].index;
          p.netdev = gids[chosen].ndev;
        } else {
          why.push_back(
              fmt::format("RoCE port without a usable GID (none of gids/0..{} holds a non-zero GID)", kGidsRead - 1));
        }
      } else if (ll.value != "InfiniBand") {
        why.push_back(fmt::format("link layer \"{}\" is neither InfiniBand nor Ethernet (RoCE)", ll.value));
      }
      if (!why.empty()) p.skip = why.front();
      out.push_back(p);
    }
  }
  return out;
}

PortPlan MatchPorts(const std::vector<RdmaPort>& local, const std::string& local_node,
                    const std::vector<RdmaPort>& peer, const std::string& peer_node,
                    const std::vector<std::string>& devices) {
  PortPlan plan;
  using Key = std::pair<std::string, int>;
  std::map<Key, const RdmaPort*> mine, theirs;
  for (const auto& p : local) mine.emplace(Key{p.device, p.port}, &p);
  for (const auto& p : peer) theirs.emplace(Key{p.device, p.port}, &p);
  std::set<Key> keys;
  for (const auto& [k, _] : mine) keys.insert(k);
  for (const auto& [k, _] : theirs) keys.insert(k);
  std::set<std::string> asked(devices.begin(), devices.end());
  std::set<std::string> seen;
  auto unmatched = [&](const Key& k, const std::string& why) {
    plan.unmatched.push_back({{"device", k.first}, {"port", k.second}, {"why", why}});
  };
  for (const auto& k : keys) {
    seen.insert(k.first);
    auto a = mine.find(k);
    auto b = theirs.find(k);
    if (!asked.empty() && !asked.count(k.first)) {
      unmatched(k, "not among the devices asked for");
    } else if (b == theirs.end()) {
      unmatched(k, fmt::format("{} has no {} port {}", peer_node, k.first, k.second));
    } else if (a == mine.end()) {
      unmatched(k, fmt::format("{} has no {} port {}", local_node, k.first, k.second));
    } else if (!a->second->skip.empty() || !b->second->skip.empty()) {
      std::vector<std::string> why;
      if (!a->second->skip.empty()) why.push_back(fmt::format("{}: {}", local_node, a->second->skip));
      if (!b->second->skip.empty()) why.push_back(fmt::format("{}: {}", peer_node, b->second->skip));
      unmatched(k, fmt::format("{}", fmt::join(why, "; ")));
    } else {
      plan.measure.push_back({*a->second, *b->second});
    }
  }
  for (const auto& d : asked)
    if (!seen.count(d)) unmatched(Key{d, 0}, "asked for, but neither node has this device");
  return plan;
}

LatencySummary SummarizeLatency(std::vector<double> v, size_t warmup) {
  LatencySummary s;
  if (warmup >= v.size()) return s;
  v.erase(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(warmup));
  std::sort(v.begin(), v.end());
  auto at = [&](double q) {
    size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(v.size())));
    return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
  };
  s.samples = static_cast<int>(v.size());
  s.min_us = v.front();
  s.max_us = v.back();
  s.p50_us = at(0.50);
  s.p99_us = at(0.99);
  return s;
}

int NearestGpu(const std::string& hca_path, const std::vector<std::string>& gpu_paths) {
  if (hca_path.empty() || gpu_paths.empty()) return -1;
  auto parts = [](const std::string& p) { return util::Split(p, '/'); };
  auto hca = parts(hca_path);
  int best = -1;
  size_t best_len = 0;
  for (size_t i = 0; i < gpu_paths.size(); ++i) {
    auto g = parts(gpu_paths[i]);
    size_t n = 0;
    while (n < hca.size() && n < g.size() && hca[n] == g[n]) ++n;
    if (best < 0 || n > best_len) best = static_cast<int>(i), best_len = n;
  }
  return best;
}

std::string ResolvePath(host::Host& h, const std::string& path) {
  if (path.empty() || path[0] != '/') return "";
  std::deque<std::string> todo;
  for (auto& c : util::Split(path, '/')) todo.push_back(c);
  std::vector<std::string> done;
  auto joined = [&] {
    std::string s;
    for (const auto& c : done) s += "/" + c;
    return s.empty() ? std::string("/") : s;
  };
  int links = 0;
  while (!todo.empty()) {
    std::string c = todo.front();
    todo.pop_front();
    if (c.empty() || c == ".") continue;
    if (c == "..") {
      if (!done.empty()) done.pop_back();
      continue;
    }
    std::string cur = (done.empty() ? "" : joined()) + "/" + c;
    auto st = h.Stat(cur);
    if (st.status != host::IoStatus::kOk) return "";
    if (st.type == 'l') {
      if (++links > 40 || st.link_target.empty()) return "";
      auto target = util::Split(st.link_target, '/');
      if (st.link_target[0] == '/') done.clear();
      for (auto it = target.rbegin(); it != target.rend(); ++it) todo.push_front(*it);
      continue;
    }
    done.push_back(c);
  }
  return joined();
}

std::string VerbsLoadError(const char* library) { return LoadVerbs(library).error; }

// ---------------------------------------------------------------------------------------------
// The measurement.

json RunRdmaPair(Comm& comm, host::Host& h, const RdmaOptions& o_in) {
  if (comm.size() != 2)
    throw std::invalid_argument(fmt::format("RunRdmaPair needs a two-rank comm, not {}", comm.size()));
  const bool leader = comm.rank() == 0;
  const std::string node = comm.node_of(comm.rank());
  const std::string peer_node = comm.node_of(1 - comm.rank());

  std::vector<RdmaPort> ports = ListRdmaPorts(h);
  const Verbs* v = nullptr;
  json probe = Probe(h, ports, v);
  json peer_probe = SwapJson(comm, probe);

  // Rank 0 decides what is measured, with its options, and tells rank 1.
  json plan;
  if (leader) {
    plan = {{"options", OptionsJson(o_in)}, {"measure", json::array()}};
    if (probe.contains("error")) {
      plan["error"] = fmt::format("{}: {}", node, Str(probe, "error"));
    } else if (peer_probe.contains("error")) {
      plan["error"] = fmt::format("{}: {}", peer_node, Str(peer_probe, "error"));
    } else {
      std::vector<RdmaPort> theirs;
      if (auto it = peer_probe.find("ports"); it != peer_probe.end() && it->is_array())
        for (const auto& p : *it)
          if (p.is_object()) theirs.push_back(PortFromJson(p));
      PortPlan pp = MatchPorts(ports, node, theirs, peer_node, o_in.devices);
      plan["unmatched"] = pp.unmatched;
      for (const auto& m : pp.measure)
        plan["measure"].push_back({{"device", m.local.device}, {"port", m.local.port}, {"peer", PortJson(m.peer)}});
      if (pp.measure.empty()) plan["error"] = "no RDMA port to measure on both nodes (see unmatched)";
    }
  }
  plan = json::parse(comm.BroadcastText(leader ? plan.dump() : std::string()), nullptr, false);
  if (plan.is_discarded() || !plan.is_object()) throw std::runtime_error("rdma: rank 0's plan is not a JSON object");
  auto opts = plan.find("options");
  const RdmaOptions o = OptionsFromJson(opts != plan.end() && opts->is_object() ? *opts : json::object());

  json result = {{"library", kVerbsLibrary}, {"node", node}, {"peer_node", peer_node}};
  if (plan.contains("error")) {
    if (!leader) return nullptr;
    json r = {{"error", plan["error"]}};
    if (plan.contains("unmatched") && !plan["unmatched"].empty()) r["unmatched"] = plan["unmatched"];
    return r;
  }

  std::optional<GpuSupport> gpu;
  if (o.gpu_memory) gpu = ProbeGpu(h);

  if (!v) throw std::runtime_error("rdma: a plan without an error, but libibverbs is not loaded here");
  json measured = json::array();
  auto list = plan.find("measure");
  for (const auto& m : list != plan.end() && list->is_array() ? *list : json::array()) {
    if (!m.is_object()) continue;
    RdmaPort local;
    const std::string dev = Str(m, "device");
    const int port = Num(m, "port", 0);
    for (const auto& p : ports)
      if (p.device == dev && p.port == port) local = p;
    RdmaPort peer = leader && m.contains("peer") && m["peer"].is_object() ? PortFromJson(m["peer"]) : RdmaPort{};
    if (local.device.empty()) {
      // The plan names a port this rank did not list: cannot happen with an honest rank 0, but
      // the conversation must stay in step, so the port still takes its turn and fails.
      local.device = dev;
      local.port = port;
    }
    measured.push_back(MeasurePort(comm, *v, h, local, peer, o, gpu ? &*gpu : nullptr));
  }
  if (!leader) return nullptr;

  bool all_gpu = o.gpu_memory && !measured.empty();
  std::set<std::string> skipped;
  for (const auto& p : measured) {
    if (Str(p, "memory") != "gpu" || Str(p, "peer_memory") != "gpu") all_gpu = false;
    if (auto s = Str(p, "gpu_memory_skipped"); !s.empty()) skipped.insert(fmt::format("{}: {}", node, s));
    if (auto s = Str(p, "peer_gpu_memory_skipped"); !s.empty()) skipped.insert(fmt::format("{}: {}", peer_node, s));
  }
  result["memory"] = all_gpu ? "gpu" : "host";
  if (o.gpu_memory) {
    result["latency_memory"] = "host";
    if (gpu && !gpu->ok) skipped.insert(fmt::format("{}: {}", node, gpu->why));
    if (!skipped.empty()) result["gpu_memory_skipped"] = fmt::format("{}", fmt::join(skipped, "; "));
  }
  result["options"] = plan["options"];
  result["ports"] = measured;
  result["unmatched"] = plan.contains("unmatched") ? plan["unmatched"] : json::array();
  return result;
}

}  // namespace clustermax::bench::net
