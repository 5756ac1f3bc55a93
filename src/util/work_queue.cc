#include "util/work_queue.h"

#include <algorithm>
#include <utility>

namespace clustermax::util {

WorkQueue::WorkQueue(unsigned threads, size_t capacity) : capacity_(std::max<size_t>(1, capacity)) {
  for (unsigned t = 0; t < threads; ++t) threads_.emplace_back([this] { Work(); });
}

WorkQueue::~WorkQueue() { Stop(); }

void WorkQueue::Push(std::function<void()> job) {
  if (threads_.empty()) {
    if (error_) return;
    try {
      job();
    } catch (...) {
      error_ = std::current_exception();
    }
    return;
  }
  std::unique_lock lock(mu_);
  has_room_.wait(lock, [&] { return jobs_.size() < capacity_ || error_; });
  if (error_) return;
  jobs_.push_back(std::move(job));
  has_job_.notify_one();
}

void WorkQueue::Work() {
  std::unique_lock lock(mu_);
  for (;;) {
    has_job_.wait(lock, [&] { return !jobs_.empty() || stopping_; });
    if (jobs_.empty()) return;  // stopping, nothing left
    std::function<void()> job = std::move(jobs_.front());
    jobs_.pop_front();
    has_room_.notify_one();
    if (error_) continue;
    lock.unlock();
    try {
      job();
    } catch (...) {
      lock.lock();
      if (!error_) error_ = std::current_exception();
      has_room_.notify_all();
      continue;
    }
    lock.lock();
  }
}

void WorkQueue::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  has_job_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

void WorkQueue::Finish() {
  Stop();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

}  // namespace clustermax::util
