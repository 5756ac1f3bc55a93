// A fixed set of worker threads taking jobs from a bounded queue. Push blocks while `capacity` jobs
// wait, so a producer faster than the workers (a stream of node bundles) never piles work, and
// memory, up ahead of them. With no threads, Push runs the job itself.
#pragma once
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace clustermax::util {

class WorkQueue {
 public:
  WorkQueue(unsigned threads, size_t capacity);
  ~WorkQueue();  // waits for the jobs pushed; an exception not yet rethrown is dropped
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;
  // After a job has thrown, further jobs are dropped (Finish rethrows).
  void Push(std::function<void()> job);
  // Waits for every job pushed, stops the workers, and rethrows the first exception a job threw.
  void Finish();

 private:
  void Work();
  void Stop();
  std::mutex mu_;
  std::condition_variable has_job_, has_room_;
  std::deque<std::function<void()>> jobs_;
  size_t capacity_;
  bool stopping_ = false;
  std::exception_ptr error_;
  std::vector<std::thread> threads_;
};

}  // namespace clustermax::util
