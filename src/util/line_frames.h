// Framed text on a shared stdout: a document (ASCII) cut into short lines
// "MARKER key index count chunk" that a job launcher forwards whole and never interleaves, and the
// reassembly of every key's document from any mix of lines (other output and srun's "N: " labels
// are ignored). Used by the Slurm fan-outs: evidence bundles and per-node benchmark results.
#pragma once
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace clustermax::util {

inline constexpr size_t kFrameChunk = 800;

// `text` must be ASCII (dump JSON with ensure_ascii); `key` must not contain spaces.
std::vector<std::string> FrameLines(std::string_view marker, const std::string& key, std::string_view text, size_t chunk = kFrameChunk);
// key -> document, for every key whose parts all arrived whole; `errors` gets key -> reason
// otherwise. Every part but the last carries exactly `chunk` bytes: a part that arrives shorter was
// split by the launcher, and a following line with the same "N: " label and no marker completes it;
// a part still short is an error that says so, never a silently shortened document.
std::map<std::string, std::string> UnframeLines(std::string_view marker, std::string_view text, std::map<std::string, std::string>& errors,
                                                size_t chunk = kFrameChunk);

}  // namespace clustermax::util
