#include "backend/host/worker_pool.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>
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

// The cores taken by the workers of every pool of this process (a core
// once per worker on it).
struct Claims {
  std::mutex mutex;
  std::vector<int> cpus;
};
Claims& claims() {
  static auto* c = new Claims;  // never destroyed: pools may outlive statics
  return *c;
}

}  // namespace

// Two workers on one core copy at one core's speed, and the scheduler may
// put them there when it wakes them (it parts them only milliseconds later):
// measured, a 2-worker copy of 4 MiB ran at one core's speed in 7 of 16
// runs. So the workers of a pool take distinct cores, each the core the
// fewest other workers of the process hold: the one the scheduler started
// it on (it spreads processes too) where that is among them, else the
// lowest-numbered. With more workers than cores, the rest stay on the
// whole set.
void WorkerPool::claim_cpu() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) != 0) return;
  Claims& all = claims();
  std::lock_guard lock(all.mutex);
  const int started = sched_getcpu();
  int cpu = -1;
  long fewest = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &allowed) || std::find(claimed_.begin(), claimed_.end(), c) != claimed_.end())
      continue;  // not ours to take, or a sibling's
    const long held = std::count(all.cpus.begin(), all.cpus.end(), c);
    if (cpu < 0 || held < fewest || (held == fewest && c == started)) {
      cpu = c;
      fewest = held;
    }
  }
  if (cpu < 0) return;
  all.cpus.push_back(cpu);
  claimed_.push_back(cpu);
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  (void)pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

namespace {

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

// A worker that ran out of jobs watches its queue a while before it sleeps:
// in a loop of copies the next batch comes within microseconds, and a worker
// that stays awake keeps its core and its caches warm, as a plain copy loop
// does. It yields often while it watches, so the issuer it waits for runs.
void poll(const std::atomic<bool>& ready) {
  constexpr auto kWatch = std::chrono::microseconds(200);
  const auto until = Clock::now() + kWatch;
  for (unsigned k = 1; !ready.load(std::memory_order_acquire); ++k) {
    __builtin_ia32_pause();
    if (k % 64 == 0) {
      if (Clock::now() > until) return;
      std::this_thread::yield();
    }
  }
}

}  // namespace

WorkerPool::WorkerPool(int n, const std::vector<unsigned>& cpus) {
  for (int i = 0; i < n; ++i) slots_.push_back(std::make_unique<Slot>());
  try {
    for (int i = 0; i < n; ++i)
      threads_.emplace_back([this, i, cpus] {
        bind_current_thread(cpus);
        claim_cpu();
        loop(i);
      });
  } catch (const std::system_error& e) {
    stop_all();
    throw RuntimeError(std::string("cannot start copy worker thread: ") + e.what());
  }
}

WorkerPool::~WorkerPool() { stop_all(); }

void WorkerPool::stop_all() {
  for (auto& slot : slots_) {
    {
      std::lock_guard lock(slot->mutex);
      slot->stop = true;
    }
    slot->cv.notify_one();
  }
  for (auto& t : threads_) t.join();
  Claims& all = claims();
  std::lock_guard lock(all.mutex);
  for (int c : claimed_) all.cpus.erase(std::find(all.cpus.begin(), all.cpus.end(), c));
}

Piece piece_of(Bytes n, int i, int parts) {
  const auto p = static_cast<Bytes>(parts);
  Bytes chunk = (n + p - 1) / p;
  chunk = (chunk + 63) / 64 * 64;
  const Bytes begin = std::min(n, chunk * static_cast<Bytes>(i));
  const Bytes end = std::min(n, begin + chunk);
  return {begin, end - begin};
}

void copy_piece(const std::byte* src, std::byte* dst, Bytes n, int w, int nw) {
  const Piece p = piece_of(n, w, nw);
  if (p.length) std::memcpy(dst + p.offset, src + p.offset, p.length);
}

void WorkerPool::submit(Part part, Done done) {
  auto job = std::make_shared<Job>();
  job->part = std::move(part);
  job->done = std::move(done);
  queue(std::move(job));
}

void WorkerPool::submit_copy(const std::byte* src, std::byte* dst, Bytes n, Done done) {
  auto job = std::make_shared<Job>();
  job->src = src;
  job->dst = dst;
  job->n = n;
  job->done = std::move(done);
  queue(std::move(job));
}

void WorkerPool::queue(std::shared_ptr<Job> job) {
  job->remaining.store(size(), std::memory_order_relaxed);
  std::lock_guard lock(submit_mutex_);
  if (held_) {
    pending_.push_back(std::move(job));
    return;
  }
  hand_out({std::move(job)});
}

void WorkerPool::hand_out(const std::vector<std::shared_ptr<Job>>& jobs) {
  for (auto& slot : slots_) {
    {
      std::lock_guard lock(slot->mutex);
      slot->queue.insert(slot->queue.end(), jobs.begin(), jobs.end());
      slot->ready.store(true, std::memory_order_release);
    }
    slot->cv.notify_one();
  }
}

void WorkerPool::hold() {
  std::lock_guard lock(submit_mutex_);
  held_ = true;
}

void WorkerPool::release() {
  std::lock_guard lock(submit_mutex_);
  held_ = false;
  if (!pending_.empty()) hand_out(pending_);
  pending_.clear();
}

void WorkerPool::discard() {
  std::lock_guard lock(submit_mutex_);
  held_ = false;
  pending_.clear();
}

void WorkerPool::loop(int index) {
  Slot& slot = *slots_[static_cast<std::size_t>(index)];
  std::vector<std::shared_ptr<Job>> mine;
  for (;;) {
    poll(slot.ready);
    {
      std::unique_lock lock(slot.mutex);
      slot.cv.wait(lock, [&] { return slot.stop || !slot.queue.empty(); });
      if (slot.queue.empty()) return;  // stopped and drained
      mine.swap(slot.queue);           // the slot keeps the emptied vector's capacity
      slot.ready.store(false, std::memory_order_relaxed);
    }
    // The issuer wrote these jobs on its core: fetch them now, before the
    // batch's gate opens, not one by one inside the timed copy.
    for (auto& job : mine)
      for (std::size_t line = 0; line < sizeof(Job); line += 64)
        __builtin_prefetch(reinterpret_cast<const char*>(job.get()) + line);
    for (auto& job : mine) {
      try {
        if (job->part) {
          job->part(index, size());
        } else if (job->n) {
          copy_piece(job->src, job->dst, job->n, index, size());
        }
      } catch (const std::exception& e) {
        std::lock_guard lock(job->error_mutex);
        if (job->error.empty()) job->error = e.what();
      }
      // Only a job with a `done` counts its workers: a gate or a copy leaves
      // no shared line for the two cores to pass between them. The last
      // worker's acquire sees every error the others stored before theirs.
      if (job->done && job->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1)
        job->done(job->error);
    }
    mine.clear();  // the jobs are freed here, after the batch's last stamp
  }
}

void Gate::arrive_and_wait() {
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == expected_) {
    start_ = Clock::now();
    open_.store(true, std::memory_order_release);
    return;
  }
  spin_until([&] { return open_.load(std::memory_order_acquire); });
}

}  // namespace xb::host
