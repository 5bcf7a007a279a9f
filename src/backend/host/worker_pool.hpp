#pragma once
// A fixed set of threads pinned to a CPU set that execute jobs in submission
// order. Every job is run by every worker (worker i takes part i of n), so a
// job that all workers have passed marks the completion of everything before
// it: this is what makes a pool usable as an in-order copy engine queue.
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/timer.hpp"

namespace xb::host {

class WorkerPool {
 public:
  using Part = std::function<void(int worker, int nworkers)>;
  using Done = std::function<void(const std::string& error)>;

  // Starts n >= 1 workers, each bound to `cpus` (OS cpu numbers; empty: no
  // binding). Throws RuntimeError when a thread cannot be created.
  WorkerPool(int n, const std::vector<unsigned>& cpus);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(threads_.size()); }

  // Queues `part` for every worker; `done` runs once, on the worker that
  // finishes last, with the first exception text of any part ("" if none).
  void submit(Part part, Done done = {});

 private:
  struct Job {
    Part part;
    Done done;
    std::atomic<int> remaining{0};
    std::mutex error_mutex;
    std::string error;
  };
  void loop(int index);

  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::deque<std::shared_ptr<Job>>> queues_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

// Releases concurrent work at one instant: every participant checks in, and
// the last one to arrive stamps the start and opens the gate. Workers spin at
// the gate so thread wake-up stays out of the timed region; the issuer only
// checks in and goes to sleep on its events, leaving the cores to the workers.
class Gate {
 public:
  explicit Gate(int participants) : expected_(participants) {}
  void arrive_and_wait();  // workers
  void arrive();           // the issuer, after queuing everything
  // The instant the gate opened; valid once the work behind it completed.
  Clock::time_point start() const { return start_; }

 private:
  bool check_in();  // true for the last participant, which opens the gate
  const int expected_;
  std::atomic<int> arrived_{0};
  std::atomic<bool> open_{false};
  Clock::time_point start_{};
};

}  // namespace xb::host
