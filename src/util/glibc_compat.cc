// Two glibc functions newer than the portable binary's floor (glibc 2.34), referenced by the static
// libstdc++ and libgcc of the build machine's GCC (Debian 12: GCC 12 built on glibc 2.36):
//   arc4random        (GLIBC_2.36) std::random_device
//   _dl_find_object   (GLIBC_2.35) libgcc's unwinder, on every thrown exception
// The portable link wraps both (-Wl,--wrap=NAME, cmake clustermax_portable_executable): a reference
// goes to __wrap_NAME below, which calls glibc's own function where this glibc has it (looked up
// once at start-up) and otherwise does the same job with older interfaces: getrandom(2) (2.25) and
// dl_iterate_phdr(3) (2.2.4). So no GLIBC symbol newer than 2.34 is needed, and newer glibc keeps
// its faster paths. CLUSTERMAX_GLIBC_FALLBACK=1 forces the fallbacks (the portability test).
// Linked only into the portable executables, as an object of their own.
#include <dlfcn.h>
#include <link.h>
#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace {

using Arc4randomFn = uint32_t (*)();
using FindObjectFn = int (*)(void*, struct dl_find_object*);

Arc4randomFn g_arc4random = nullptr;
FindObjectFn g_find_object = nullptr;

// Before main and before any exception: dlsym is not called from inside the unwinder.
__attribute__((constructor)) void ResolveGlibcFunctions() {
  const char* force = std::getenv("CLUSTERMAX_GLIBC_FALLBACK");
  if (force && std::strcmp(force, "1") == 0) return;
  g_arc4random = reinterpret_cast<Arc4randomFn>(::dlsym(RTLD_DEFAULT, "arc4random"));
  g_find_object = reinterpret_cast<FindObjectFn>(::dlsym(RTLD_DEFAULT, "_dl_find_object"));
}

struct Search {
  uintptr_t pc;
  struct dl_find_object* out;
  bool found;
};

// The loaded object whose PT_LOAD segments hold pc: its mapping and its PT_GNU_EH_FRAME.
int Visit(struct dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Search*>(data);
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  bool inside = false;
  void* eh_frame = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& p = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + p.p_vaddr;
    if (p.p_type == PT_LOAD) {
      uintptr_t end = start + p.p_memsz;
      if (start < lo) lo = start;
      if (end > hi) hi = end;
      if (s->pc >= start && s->pc < end) inside = true;
    } else if (p.p_type == PT_GNU_EH_FRAME) {
      eh_frame = reinterpret_cast<void*>(start);
    }
  }
  if (!inside) return 0;
  std::memset(s->out, 0, sizeof *s->out);
  s->out->dlfo_map_start = reinterpret_cast<void*>(lo);
  s->out->dlfo_map_end = reinterpret_cast<void*>(hi);
  s->out->dlfo_eh_frame = eh_frame;
  s->found = true;
  return 1;
}

}  // namespace

extern "C" {

uint32_t __wrap_arc4random() {
  if (g_arc4random) return g_arc4random();
  uint32_t v = 0;
  unsigned char* p = reinterpret_cast<unsigned char*>(&v);
  size_t got = 0;
  while (got < sizeof v) {
    ssize_t n = ::getrandom(p + got, sizeof v - got, 0);
    if (n > 0)
      got += static_cast<size_t>(n);
    else if (n < 0 && errno != EINTR)
      std::abort();  // no entropy at all: as arc4random, never a weak value
  }
  return v;
}

int __wrap__dl_find_object(void* pc, struct dl_find_object* result) {
  if (g_find_object) return g_find_object(pc, result);
  Search s{reinterpret_cast<uintptr_t>(pc), result, false};
  ::dl_iterate_phdr(Visit, &s);
  return s.found ? 0 : -1;
}

}  // extern "C"
