// Progress of long work on stderr. On a terminal: one line rewritten in place with what is being
// done, how far (a fraction or "N of M"), the time spent and an estimate of the time left; cleared
// when the work ends. Not on a terminal (a log, a pipe, CI): each new phase as a plain line, no
// rewriting, no estimates.
#pragma once
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>

namespace clustermax::util {

class Progress {
 public:
  // `tty` unset: whether `out` is a terminal (and TERM is not "dumb").
  explicit Progress(std::FILE* out = stderr, std::optional<bool> tty = std::nullopt);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // A new phase ("PUT 64 MiB objects, 8 streams").
  void Text(const std::string& text);
  // How far the whole command is, 0..1 (an estimate of the time left comes from it).
  void Fraction(double f);
  // How far, counted ("12 of 100 nodes answered"); the fraction is done / total.
  void Count(size_t done, size_t total, const std::string& what);
  // Clears the line (a terminal); nothing otherwise. Also done by the destructor.
  void Finish();
  bool tty() const { return tty_; }

 private:
  void Draw(bool force);
  std::FILE* out_;
  bool tty_;
  std::mutex mu_;
  std::string text_, count_;
  double fraction_ = -1;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now(), last_{};
};

// "1:05", "12:03", "1:02:03".
std::string FormatDuration(double seconds);

}  // namespace clustermax::util
