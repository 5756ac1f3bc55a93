// Slurm texts (util/slurm_text.h: scontrol show config / -o records / ping, srun --mpi=list,
// hostlists, GRES) and the framed lines of the Slurm fan-out (util/line_frames.h), which is how a
// node's bundle comes back through srun's stdout (read whole and as a stream in pieces), and the
// bundle's wire form (base64 of deflated JSON).
#include <map>
#include <string>

#include "fuzz_common.h"
#include "util/compress.h"
#include "util/line_frames.h"
#include "util/slurm_text.h"

using namespace clustermax;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view t = fuzz::AsText(data, size);
  try {
    util::ParseScontrolConfig(t);
    for (const auto& rec : util::ParseScontrolRecords(t)) {
      for (const char* key : {"NodeList", "Nodes", "Gres", "CfgTRES"}) {
        auto it = rec.find(key);
        if (it == rec.end()) continue;
        util::ExpandHostlist(it->second);
        util::ParseGres(it->second);
      }
    }
    util::ParseScontrolRecord(t);
    util::ParseScontrolPing(t);
    util::ParseMpiList(t);
    util::ExpandHostlist(t);
    util::ParseGres(t);
    std::map<std::string, std::string> errors;
    auto whole = util::UnframeLines("CLUSTERMAX-BUNDLE", t, errors);
    // Fed in pieces (lines cut anywhere), the stream reader gives what the whole text gives.
    std::map<std::string, std::string> streamed;
    util::FrameReader reader("CLUSTERMAX-BUNDLE",
                             [&](const std::string& k, std::string d) { streamed[k] = std::move(d); });
    for (size_t at = 0; at < t.size(); at += 7) reader.Feed(t.substr(at, 7));
    reader.Finish();
    if (streamed != whole || reader.errors() != errors) __builtin_trap();
    // A bundle's wire form: any text decodes and inflates within the bound, or is refused.
    try {
      if (auto raw = util::Base64Decode(t)) util::Inflate(*raw, 1 << 20);
    } catch (const std::runtime_error&) {
    }
    try {
      if (util::Inflate(t, 1 << 20).size() > (1 << 20)) __builtin_trap();
    } catch (const std::runtime_error&) {
    }
    // Framing is the inverse of unframing: what goes out must come back whole.
    std::string ascii;
    for (char c : t) ascii += (c >= 0x20 && c < 0x7f) ? c : '.';
    auto lines = util::FrameLines("CLUSTERMAX-FUZZ", "k", ascii, 64);
    std::string joined;
    for (const auto& l : lines) joined += l + "\n";
    auto back = util::UnframeLines("CLUSTERMAX-FUZZ", joined, errors, 64);
    if (back.count("k") != 1 || back["k"] != ascii) __builtin_trap();
  } catch (const std::exception&) {
  }
  return 0;
}
