// Binding the C entry points of a library loaded at run time with dlopen (libcurl, libpmix,
// libibverbs, libcuda): the node binary links none of them, so it starts where they are absent and
// says which library or symbol is missing instead of failing to load.
#pragma once
#include <dlfcn.h>

#include <string>

namespace clustermax::util {

// `slot` = the symbol `name` of `handle`; a name the library lacks is added to `missing` (comma
// separated), so one message can list every missing entry point.
template <typename F>
void BindSymbol(void* handle, F& slot, const char* name, std::string& missing) {
  slot = reinterpret_cast<F>(::dlsym(handle, name));
  if (!slot) {
    if (!missing.empty()) missing += ", ";
    missing += name;
  }
}

}  // namespace clustermax::util
