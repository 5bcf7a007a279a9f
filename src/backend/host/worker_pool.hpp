#pragma once
// A fixed set of threads pinned to a CPU set that execute jobs in submission
// order. Every job is run by every worker (worker i takes part i of n), so a
// job that all workers have passed marks the completion of everything before
// it: this is what makes a pool usable as an in-order copy engine queue.
#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/timer.hpp"
#include "core/units.hpp"

namespace xb::host {

// Splits [0, n) into `parts` 64-byte aligned pieces; returns piece `i`.
struct Piece {
  Bytes offset = 0;
  Bytes length = 0;
};
Piece piece_of(Bytes n, int i, int parts);
// Worker w's part of copying n bytes from src to dst over nw workers.
void copy_piece(const std::byte* src, std::byte* dst, Bytes n, int w, int nw);

class WorkerPool {
 public:
  using Part = std::function<void(int worker, int nworkers)>;
  using Done = std::function<void(const std::string& error)>;

  // Starts n >= 1 workers, each bound to `cpus` (OS cpu numbers; empty: no
  // binding), then to a core of its own among them (the one fewest other
  // workers of the process hold), where there are enough cores.
  // A pool has one issuer at a time: hold/release and the batches between
  // them belong to the pool, not to a caller.
  // Throws RuntimeError when a thread cannot be created.
  WorkerPool(int n, const std::vector<unsigned>& cpus);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const { return static_cast<int>(slots_.size()); }

  // Queues `part` for every worker; `done` runs once, on the worker that
  // finishes last, with the first exception text of any part ("" if none).
  void submit(Part part, Done done = {});
  // A plain copy of n bytes, worker i copying piece_of(n, i, size()). What
  // it copies is held in the job itself, which a worker fetches before the
  // batch's gate opens; a Part's captures may live on the heap, one more
  // cache miss inside the timed copy.
  void submit_copy(const std::byte* src, std::byte* dst, Bytes n, Done done = {});

  // Between hold() and release(), submit() keeps its jobs back; release()
  // hands them to the workers in one step and wakes them once, so no worker
  // finds its queue empty halfway through a batch and sleeps inside it.
  // discard() drops what is held instead (the batch failed before release).
  void hold();
  void release();
  void discard();

 private:
  struct Job {
    Part part;
    const std::byte* src = nullptr;  // submit_copy's, when part is empty
    std::byte* dst = nullptr;
    Bytes n = 0;
    Done done;
    std::atomic<int> remaining{0};
    std::mutex error_mutex;
    std::string error;
  };
  // One per worker: its own queue, lock and wake-up, so workers never
  // contend with each other for a lock. A worker takes its whole queue at
  // once, so the jobs of a batch (gate, copies, records) run back to back
  // with no lock between them.
  struct Slot {
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<std::shared_ptr<Job>> queue;
    std::atomic<bool> ready{false};  // queue not empty, read without the lock
    bool stop = false;
  };
  void loop(int index);
  void queue(std::shared_ptr<Job> job);
  void hand_out(const std::vector<std::shared_ptr<Job>>& jobs);  // submit_mutex_ held
  void stop_all();
  void claim_cpu();  // on each worker, once bound to the pool's CPUs

  std::vector<int> claimed_;  // the cores this pool's workers took (under the claims' lock)

  // Serialises submitters, so every worker's queue has the same order.
  std::mutex submit_mutex_;
  bool held_ = false;
  std::vector<std::shared_ptr<Job>> pending_;  // kept back while held_
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<std::thread> threads_;
};

// Releases concurrent work at one instant: every worker checks in, and the
// last one to arrive stamps the start and opens the gate. Workers spin at the
// gate so thread wake-up stays out of the timed region. The issuer is not a
// participant: it queues the gate and the work behind it as one batch
// (WorkerPool::hold/release) and goes to sleep on its events, so when the
// gate opens every worker is on a core and none shares it with the issuer.
class Gate {
 public:
  explicit Gate(int participants) : expected_(participants) {}
  void arrive_and_wait();
  // The instant the gate opened; valid once the work behind it completed.
  Clock::time_point start() const { return start_; }

 private:
  const int expected_;
  std::atomic<int> arrived_{0};
  std::atomic<bool> open_{false};
  Clock::time_point start_{};
};

}  // namespace xb::host
