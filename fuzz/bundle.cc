// The evidence bundle reader (host::Bundle::Parse, RapidJSON's SAX reader straight into the bundle),
// as `audit --replay`, `audit review` and the Slurm fan-out use it: the bundle is written back
// (ToJson), replayed through every collector (ReplayHost) and judged, and the report rendered.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "audit/engine.h"
#include "audit/plan.h"
#include "checks/register.h"
#include "core/check.h"
#include "core/minimums.h"
#include "fuzz_common.h"
#include "host/bundle.h"
#include "audit/render.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const audit::Plan plan = [] {
    audit::Selection sel;
    for (const auto& p : core::Probes()) sel.probes.insert(p.name);
    return audit::BuildPlan(checks::DefaultRegistry(), sel);
  }();
  std::string_view text = fuzz::AsText(data, size);
  try {
    host::Bundle b = host::Bundle::Parse(std::string(text));
    // A bundle is JSON: the generic reader accepts whatever the bundle reader accepted.
    try {
      (void)host::ParseJson(text);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "the bundle reader accepted what ParseJson refuses: %s\n", e.what());
      std::abort();
    }
    (void)b.ToJson().dump();
    collect::CollectOptions opts;
    opts.threads = 1;
    audit::NodeEvidence n = audit::ReplayNode(b, plan, opts);
    audit::Report r = audit::Judge(plan, {n}, core::EmbeddedMinimumTable());
    (void)audit::ToJson(r).dump();
    (void)audit::RenderText(r, {.verbosity = 3});
  } catch (const std::exception&) {
  }
  return 0;
}
