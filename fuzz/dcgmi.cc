// `dcgmi diag` output: the JSON of `-j` (collect::ParseDcgmDiagJson) and the table printed without
// it (collect::ParseDcgmDiagTable).
#include <string>

#include "collect/parsers.h"
#include "fuzz_common.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view t = fuzz::AsText(data, size);
  try {
    std::string error;
    auto diag = collect::ParseDcgmDiagJson(t, &error);
    if (diag) {
      for (const auto& r : diag->results) (void)r.status.size();
    }
    auto table = collect::ParseDcgmDiagTable(t, &error);
    if (table) {
      for (const auto& r : table->results) (void)r.status.size();
    }
  } catch (const std::exception&) {
  }
  return 0;
}
