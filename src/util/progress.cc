#include "util/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace clustermax::util {

namespace {
constexpr auto kRedraw = std::chrono::milliseconds(250);  // at most four redraws a second
constexpr size_t kWidth = 100;                            // a line never wraps on a common terminal

bool IsTerminal(std::FILE* f) {
  const char* term = std::getenv("TERM");
  return ::isatty(::fileno(f)) && !(term && std::strcmp(term, "dumb") == 0);
}
}  // namespace

std::string FormatDuration(double seconds) {
  auto s = static_cast<long long>(std::llround(std::max(0.0, seconds)));
  if (s >= 3600) return fmt::format("{}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
  return fmt::format("{}:{:02}", s / 60, s % 60);
}

Progress::Progress(std::FILE* out, std::optional<bool> tty) : out_(out), tty_(tty.value_or(IsTerminal(out))) {}

Progress::~Progress() { Finish(); }

void Progress::Text(const std::string& text) {
  std::lock_guard lock(mu_);
  text_ = text;
  if (!tty_) {
    std::fprintf(out_, "  %s\n", text.c_str());
    std::fflush(out_);
    return;
  }
  Draw(true);
}

void Progress::Fraction(double f) {
  std::lock_guard lock(mu_);
  fraction_ = std::clamp(f, 0.0, 1.0);
  if (tty_) Draw(false);
}

void Progress::Count(size_t done, size_t total, const std::string& what) {
  std::lock_guard lock(mu_);
  count_ = fmt::format("{} of {} {}", done, total, what);
  fraction_ = total ? static_cast<double>(done) / static_cast<double>(total) : -1;
  if (tty_) Draw(done == total);
}

void Progress::Finish() {
  std::lock_guard lock(mu_);
  if (tty_ && drawn_) {
    std::fputs("\r\x1b[K", out_);
    std::fflush(out_);
  }
  drawn_ = false;
}

void Progress::Draw(bool force) {
  auto now = std::chrono::steady_clock::now();
  if (!force && drawn_ && now - last_ < kRedraw) return;
  last_ = now;
  double elapsed = std::chrono::duration<double>(now - start_).count();
  std::string line = text_;
  if (!count_.empty()) line += (line.empty() ? "" : ": ") + count_;
  std::string tail;
  if (fraction_ >= 0) tail += fmt::format("{:.0f} %, ", fraction_ * 100);
  tail += FormatDuration(elapsed) + " elapsed";
  // An estimate only once there is something to estimate from.
  if (fraction_ > 0.02 && fraction_ < 1) tail += ", ETA " + FormatDuration(elapsed * (1 - fraction_) / fraction_);
  line = "  " + line;
  size_t room = kWidth > tail.size() + 4 ? kWidth - tail.size() - 4 : 0;
  if (line.size() > room) line = line.substr(0, room > 3 ? room - 3 : 0) + "...";
  std::fprintf(out_, "\r\x1b[K%s  [%s]", line.c_str(), tail.c_str());
  std::fflush(out_);
  drawn_ = true;
}

}  // namespace clustermax::util
