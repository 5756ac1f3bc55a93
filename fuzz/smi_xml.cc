// `nvidia-smi -q -x` (gpu::ParseNvidiaSmiXml) and the snapshot it makes, dumped as the collector does.
#include <string>

#include "fuzz_common.h"
#include "gpu/smi_xml.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    std::string error;
    auto snapshot = gpu::ParseNvidiaSmiXml(fuzz::AsText(data, size), &error);
    if (snapshot) (void)snapshot->dump();
  } catch (const std::exception&) {
  }
  return 0;
}
