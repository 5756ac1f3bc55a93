#include "bench/pmix.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>

#include <fmt/format.h>
#include <pmix.h>

#include "util/dynlib.h"

namespace clustermax::bench::net {

namespace {

constexpr const char* kLibrary = "libpmix.so.2";

// The PMIx client calls we use, bound from the library at run time.
struct PmixApi {
  pmix_status_t (*init)(pmix_proc_t*, pmix_info_t*, size_t) = nullptr;
  pmix_status_t (*finalize)(const pmix_info_t*, size_t) = nullptr;
  pmix_status_t (*put)(pmix_scope_t, const char*, pmix_value_t*) = nullptr;
  pmix_status_t (*commit)() = nullptr;
  pmix_status_t (*fence)(const pmix_proc_t*, size_t, const pmix_info_t*, size_t) = nullptr;
  pmix_status_t (*get)(const pmix_proc_t*, const char*, const pmix_info_t*, size_t, pmix_value_t**) = nullptr;
  const char* (*error_string)(pmix_status_t) = nullptr;
};

using util::BindSymbol;

std::string Load(const char* library, PmixApi* api) {
  void* handle = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = ::dlerror();
    return fmt::format(
        "libpmix is not installed on this node ({}): install libpmix2 (Debian, Ubuntu) or pmix (RHEL, Rocky), or "
        "run without --launch pmix",
        e ? e : library);
  }
  std::string missing;
  BindSymbol(handle, api->init, "PMIx_Init", missing);
  BindSymbol(handle, api->finalize, "PMIx_Finalize", missing);
  BindSymbol(handle, api->put, "PMIx_Put", missing);
  BindSymbol(handle, api->commit, "PMIx_Commit", missing);
  BindSymbol(handle, api->fence, "PMIx_Fence", missing);
  BindSymbol(handle, api->get, "PMIx_Get", missing);
  BindSymbol(handle, api->error_string, "PMIx_Error_string", missing);
  if (!missing.empty()) return fmt::format("{} lacks {}: not a usable libpmix", library, missing);
  return "";  // the handle stays open for the life of the process, as a linked library would
}

// One client per process: PMIx_Init once, PMIx_Finalize when the process ends (slurmstepd notes a
// task that leaves without it).
struct Client {
  PmixApi api;
  std::string error;
  pmix_proc_t me{};
  int exchanges = 0;
  ~Client() {
    if (error.empty() && api.finalize) api.finalize(nullptr, 0);
  }
  std::string Why(pmix_status_t rc) const {
    const char* s = api.error_string ? api.error_string(rc) : nullptr;
    return s ? std::string(s) : fmt::format("status {}", rc);
  }
};

Client& TheClient() {
  static Client c;
  static std::once_flag once;
  std::call_once(once, [] {
    c.error = Load(kLibrary, &c.api);
    if (!c.error.empty()) return;
    if (pmix_status_t rc = c.api.init(&c.me, nullptr, 0); rc != PMIX_SUCCESS)
      c.error = fmt::format("PMIx_Init failed: {} (is this a task of srun --mpi=pmix?)", c.Why(rc));
  });
  return c;
}

void SetInfo(pmix_info_t& info, const char* key) {
  std::memset(&info, 0, sizeof info);
  std::strncpy(info.key, key, PMIX_MAX_KEYLEN);
}

// The value's string (PMIx_Get allocates the value and its string with malloc, as PMIX_VALUE_RELEASE
// frees them).
std::string TakeString(pmix_value_t* v) {
  if (!v) return "";
  std::string s = v->type == PMIX_STRING && v->data.string ? v->data.string : "";
  if (v->type == PMIX_STRING) std::free(v->data.string);
  std::free(v);
  return s;
}

}  // namespace

bool UnderPmix() { return std::getenv("PMIX_RANK") && std::getenv("PMIX_NAMESPACE"); }

std::string PmixLoadError(const char* library) {
  PmixApi api;
  return Load(library, &api);
}

std::vector<std::string> PmixAllGather(const std::string& value, double timeout_s) {
  Client& c = TheClient();
  if (!c.error.empty()) throw std::runtime_error(c.error);
  // A key per exchange, so a second exchange never reads the first one's values.
  std::string key = fmt::format("clustermax.net.{}", c.exchanges++);
  pmix_value_t v{};
  v.type = PMIX_STRING;
  v.data.string = const_cast<char*>(value.c_str());  // PMIx_Put copies it
  if (pmix_status_t rc = c.api.put(PMIX_GLOBAL, key.c_str(), &v); rc != PMIX_SUCCESS)
    throw std::runtime_error("PMIx_Put failed: " + c.Why(rc));
  if (pmix_status_t rc = c.api.commit(); rc != PMIX_SUCCESS)
    throw std::runtime_error("PMIx_Commit failed: " + c.Why(rc));
  // Every task of the step (the whole namespace), the data collected so the gets below are local.
  pmix_info_t info[2];
  SetInfo(info[0], PMIX_COLLECT_DATA);
  info[0].value.type = PMIX_BOOL;
  info[0].value.data.flag = true;
  SetInfo(info[1], PMIX_TIMEOUT);
  info[1].value.type = PMIX_INT;
  info[1].value.data.integer = std::max(1, static_cast<int>(timeout_s));
  pmix_proc_t all{};
  std::memcpy(all.nspace, c.me.nspace, sizeof all.nspace);
  all.rank = PMIX_RANK_WILDCARD;
  if (pmix_status_t rc = c.api.fence(&all, 1, info, 2); rc != PMIX_SUCCESS)
    throw std::runtime_error(
        fmt::format("PMIx_Fence failed after up to {} s: {} (a task of the step never arrived)", timeout_s, c.Why(rc)));
  pmix_value_t* size = nullptr;
  uint32_t world = 0;
  if (c.api.get(&all, PMIX_JOB_SIZE, nullptr, 0, &size) == PMIX_SUCCESS && size) {
    if (size->type == PMIX_UINT32) world = size->data.uint32;
    std::free(size);
  }
  if (world == 0 || world > (1u << 20)) throw std::runtime_error("PMIx gave no usable job size");
  std::vector<std::string> out(world);
  for (uint32_t r = 0; r < world; ++r) {
    pmix_proc_t p{};
    std::memcpy(p.nspace, c.me.nspace, sizeof p.nspace);
    p.rank = r;
    pmix_value_t* got = nullptr;
    if (pmix_status_t rc = c.api.get(&p, key.c_str(), nullptr, 0, &got); rc != PMIX_SUCCESS)
      throw std::runtime_error(fmt::format("PMIx_Get of rank {}'s entry failed: {}", r, c.Why(rc)));
    out[r] = TakeString(got);
  }
  return out;
}

}  // namespace clustermax::bench::net
