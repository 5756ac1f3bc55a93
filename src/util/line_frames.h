// Framed text on a shared stdout: a document (ASCII) cut into short lines
// "MARKER key index count chunk" that a job launcher forwards whole and never interleaves, and the
// reassembly of every key's document from any mix of lines (other output and srun's "N: " labels
// are ignored). Used by the Slurm fan-outs: evidence bundles and per-node benchmark results.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace clustermax::util {

inline constexpr size_t kFrameChunk = 800;

// `text` must be ASCII (dump JSON with ensure_ascii); `key` must not contain spaces.
std::vector<std::string> FrameLines(std::string_view marker, const std::string& key, std::string_view text,
                                    size_t chunk = kFrameChunk);

// Reassembles documents from a stream fed in pieces of any size (lines may be cut anywhere between
// two pieces), handing each key's document to `on_document` the moment its last part arrived, so
// the stream is never held whole: what is held is the parts of documents still incomplete, and one
// unfinished line (at most 64 KiB of it; a frame line is under 1 KiB).
// Every part but the last carries exactly `chunk` bytes: a part that arrives shorter was split by
// the launcher, and a following line with the same "N: " label and no marker completes it; a part
// still short at the end is an error that says so, never a silently shortened document.
// A key is delivered once: lines for it after its document was delivered are ignored. A key with a
// malformed line, parts that disagree on their count, or more than `max_pending` bytes held in all
// is refused (its parts dropped) and named in errors().
class FrameReader {
 public:
  using Sink = std::function<void(const std::string& key, std::string document)>;
  FrameReader(std::string marker, Sink on_document, size_t chunk = kFrameChunk, size_t max_pending = size_t{1} << 31);
  void Feed(std::string_view piece);
  // End of the stream: the last line, if unterminated, is read, and every key still incomplete is
  // added to errors() with the reason.
  void Finish();
  // key -> why it was not delivered.
  const std::map<std::string, std::string>& errors() const { return errors_; }
  size_t delivered() const { return done_.size(); }
  size_t pending_bytes() const { return pending_; }

 private:
  struct Parts {
    size_t count = 0;
    size_t short_parts = 0;  // parts before the last holding fewer than `chunk` bytes
    size_t bytes = 0;
    // Parts arriving in order and whole (as a launcher forwards one task's lines) are appended to
    // `joined` (parts 0 .. in_order-1); any other arrival moves everything to `chunks`.
    std::string joined;
    size_t in_order = 0;
    std::map<size_t, std::string> chunks;
  };
  void Scatter(Parts& p);
  void Line(std::string_view raw);
  void Refuse(const std::string& key, std::string why);
  void DeliverIfWhole(const std::string& key);
  void Grew(const std::string& key, Parts& p, size_t before, size_t after, size_t index);
  void Hold(const std::string& key, Parts& p, size_t delta);  // counts held bytes; refuses past max_pending

  std::string marker_;
  Sink sink_;
  size_t chunk_, max_pending_;
  std::string line_;       // the current line, until its newline arrives
  bool line_cut_ = false;  // the current line passed 64 KiB: the rest of it is dropped
  std::map<std::string, Parts> parts_;
  std::set<std::string> done_;
  std::map<std::string, std::string> errors_;
  // The label before the marker (srun --label's "N: ") -> the key and part of that task still short.
  std::map<std::string, std::pair<std::string, size_t>> short_part_;
  size_t pending_ = 0;
};

// The whole of `text` at once: key -> document for every key whose parts all arrived whole;
// `errors` gets key -> reason otherwise.
std::map<std::string, std::string> UnframeLines(std::string_view marker, std::string_view text,
                                                std::map<std::string, std::string>& errors, size_t chunk = kFrameChunk);

}  // namespace clustermax::util
