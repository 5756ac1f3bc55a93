// The assessment YAML of `rate --assessment` (rating::ParseAssessment against both embedded
// catalogs), then rated alone and rendered as `rate` does.
#include <string>

#include "fuzz_common.h"
#include "rating/assessment.h"
#include "rating/catalog.h"
#include "rating/rate.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(fuzz::AsText(data, size));
  for (const char* edition : {"3.0", "2.0"}) {
    try {
      const rating::Catalog& cat = rating::EmbeddedCatalog(edition);
      rating::Assessment a = rating::ParseAssessment(text, "fuzz.yaml", cat);
      nlohmann::json r = rating::Rate(cat, {}, a);
      (void)rating::RenderRating(r, 3);
    } catch (const std::exception&) {
    }
  }
  return 0;
}
