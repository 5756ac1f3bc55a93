// Whole lines from a stream read in pieces of any size (a child's stdout as RunProcess hands it
// on): a line may be cut anywhere between two pieces. An unfinished line longer than `max_line`
// is dropped (no line of a log or a protocol is that long: junk), so memory stays bounded.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace clustermax::util {

class LineAssembler {
 public:
  explicit LineAssembler(size_t max_line = size_t{1} << 20) : max_line_(max_line) {}
  // on_line(line) for every line the piece ends, without its '\n'.
  template <class F>
  void Feed(std::string_view piece, F&& on_line) {
    partial_.append(piece);
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1)
      on_line(std::string_view(partial_).substr(start, nl - start));
    partial_.erase(0, start);
    if (partial_.size() > max_line_) partial_.clear();
  }
  // The end of the stream: the last line when it has no '\n'.
  template <class F>
  void Flush(F&& on_line) {
    if (!partial_.empty()) on_line(std::string_view(partial_));
    partial_.clear();
  }

 private:
  std::string partial_;
  size_t max_line_;
};

}  // namespace clustermax::util
