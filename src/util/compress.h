// Documents sent as text lines through a launcher (a fleet node's evidence bundle through srun's
// stdout): zlib's deflate (Debian's zlib, static in the shipped binary) and base64, which brings a
// bundle's JSON to about a quarter of its size on the wire and in the fan-out's memory.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace clustermax::util {

std::string Deflate(std::string_view data);
// Throws std::runtime_error when `data` is not a whole zlib stream or its content would pass
// `max_bytes` (a small document that inflates without bound is refused, not followed).
std::string Inflate(std::string_view data, size_t max_bytes);

std::string Base64Encode(std::string_view data);
// Standard alphabet, padded; nullopt on any other character or a wrong length.
std::optional<std::string> Base64Decode(std::string_view text);

}  // namespace clustermax::util
