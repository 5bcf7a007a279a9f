#include "backend/host/worker_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <exception>

#include "core/error.hpp"

namespace xb::host {
namespace {

void bind_current_thread(const std::vector<unsigned>& cpus) {
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  for (unsigned c : cpus)
    if (c < CPU_SETSIZE) CPU_SET(c, &set);
  // Best effort: a container may forbid some CPUs; the copy still runs.
  (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

// Spins politely: pause first, then yield so oversubscribed workers
// (more workers than cores) still make progress.
template <class Pred>
void spin_until(Pred pred) {
  for (unsigned k = 0; !pred(); ++k) {
    if (k < 2000) {
      __builtin_ia32_pause();
    } else {
      std::this_thread::yield();
    }
  }
}

}  // namespace

WorkerPool::WorkerPool(int n, const std::vector<unsigned>& cpus)
    : queues_(static_cast<std::size_t>(n)) {
  try {
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this, i, cpus] {
        bind_current_thread(cpus);
        loop(i);
      });
  } catch (const std::system_error& e) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    throw RuntimeError(std::string("cannot start copy worker thread: ") + e.what());
  }
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::submit(Part part, Done done) {
  auto job = std::make_shared<Job>();
  job->part = std::move(part);
  job->done = std::move(done);
  job->remaining.store(size(), std::memory_order_relaxed);
  {
    std::lock_guard lock(mutex_);
    for (auto& q : queues_) q.push_back(job);
  }
  cv_.notify_all();
}

void WorkerPool::loop(int index) {
  auto& queue = queues_[static_cast<std::size_t>(index)];
  for (;;) {
    std::shared_ptr<Job> job;
    {
      std::unique_lock lock(mutex_);
      cv_.wait(lock, [&] { return stop_ || !queue.empty(); });
      if (queue.empty()) return;  // stop_ and drained
      job = std::move(queue.front());
      queue.pop_front();
    }
    try {
      if (job->part) job->part(index, size());
    } catch (const std::exception& e) {
      std::lock_guard lock(job->error_mutex);
      if (job->error.empty()) job->error = e.what();
    }
    if (job->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1 && job->done) {
      std::string error;
      {
        std::lock_guard lock(job->error_mutex);
        error = job->error;
      }
      job->done(error);
    }
  }
}

bool Gate::check_in() {
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 < expected_) return false;
  start_ = Clock::now();
  open_.store(true, std::memory_order_release);
  return true;
}

void Gate::arrive_and_wait() {
  if (check_in()) return;
  spin_until([&] { return open_.load(std::memory_order_acquire); });
}

void Gate::arrive() { check_in(); }

}  // namespace xb::host
